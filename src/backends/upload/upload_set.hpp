#pragma once
// What a task sends to a cluster before it runs: its workdir and the local sources of its file_mounts,
// each a unit named by a hash of its content, so a unit the cluster already holds is not sent again
// (docs/ARCHITECTURE.md, "Code and data"). Backends move the units (Slurm: a tar stream over SSH;
// Kubernetes: a tar stream over exec) and place them; this file only reads the local side.
//
// A workdir leaves out `.git` and what its .gitignore files exclude; a file_mounts folder is sent whole
// (SkyPilot does the same: .gitignore applies to the workdir only). Symbolic links to files are sent as
// files, links to folders are skipped (no loops). Everything together is under one size limit, checked
// before anything is sent.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/upload/tar_stream.hpp"
#include "core/error.hpp"
#include "core/spec.hpp"

namespace tandem::upload {

struct Item {
    std::string relative; // '/'-separated, relative to the unit's root
    bool is_dir = false;
    std::uint64_t size = 0;
    bool executable = false;
    std::int64_t mtime = 0;
};

struct Unit {
    std::string label;        // "workdir" or "file_mounts./data" (for messages)
    std::string local;        // the local folder or file
    bool single_file = false; // one file: its one item is named after it
    std::vector<Item> items;  // folders before their contents
    std::uint64_t bytes = 0;  // file bytes
    std::string hash;         // 32 hex digits: XXH3-128 of every item's name, kind, mode, size and bytes
};

struct Mount {
    std::string destination; // as the task wrote it: absolute, `~/...`, or relative to the home folder
    std::size_t unit = 0;    // into UploadSet::units
};

struct UploadSet {
    std::vector<Unit> units;
    std::optional<std::size_t> workdir; // into units
    std::vector<Mount> mounts;
    std::uint64_t bytes = 0;
    bool empty() const { return units.empty(); }
};

// Reads the workdir and the local file_mounts of `spec` (object-store sources are refused earlier, by
// check_backend_support). An `invalid_spec` error when a source cannot be read or everything adds up to
// more than `limit_bytes` (naming the size, the limit and the file that crossed it).
Result<UploadSet> scan_uploads(const TaskSpec& spec, std::uint64_t limit_bytes);

// The tar entries of one unit, in order, for a TarSource.
std::vector<TarEntry> tar_entries(const Unit& unit);

// The same under the folder `prefix` (made by the first entry), for one archive holding several units;
// a single file is named `file_name` there when given.
std::vector<TarEntry> tar_entries_under(const Unit& unit, const std::string& prefix, const std::string& file_name = {});

// The local source of a file mount, or nullopt for an object store / storage object (`s3://...`,
// `{source: ..., mode: ...}`).
std::optional<std::string> local_mount_source(const nlohmann::json& value);

// "12.3 MiB".
std::string mib(std::uint64_t bytes);

} // namespace tandem::upload
