#pragma once
// Checks of task values that end up in a shell command or an #SBATCH line on the cluster: a git URL and
// ref (`workdir: {url, ref}`) and sbatch option names (`config.slurm.sbatch_options`). Pure: the quoting
// happens where the script is written; these keep out what no quoting makes safe or meaningful.

#include <string>
#include <string_view>

#include <tl/expected.hpp>

namespace tandem {

// https://, http://, ssh://, git://, file:// URLs and scp-style user@host:path, as git takes them; no
// whitespace, control characters or a leading '-' (git would read an option).
tl::expected<void, std::string> check_git_url(std::string_view url);

// A cloud SkyPilot knows (aws, gcp, azure, lambda, ...; its SSH node pools too): a task pinned to one
// cannot run on tandem's backends. Case-insensitive.
bool is_cloud_name(std::string_view name);

// A branch, tag or commit name as `git check-ref-format` allows it (no spaces, control characters,
// "..", ~^:?*[\, leading '-' or '/', trailing '/' or ".lock").
bool valid_git_ref(std::string_view ref);

// What an sbatch option in sbatch_options stands for.
enum class SbatchOption {
    extra,      // written as its own #SBATCH line
    partition,  // folded into config.slurm.partition
    account,    // ... config.slurm.account
    qos,        // ... config.slurm.qos
    constraint, // ... config.slurm.constraint
    time,       // ... config.slurm.time
};

struct SbatchOptionName {
    std::string name; // long form without dashes: "exclusive", "mail-type"
    SbatchOption kind = SbatchOption::extra;
};

// "--mail-type", "mail-type", "t" -> the long name and its kind; an error for a malformed name and for the
// options tandem sets itself from the task (it names the field to use instead).
tl::expected<SbatchOptionName, std::string> sbatch_option_name(std::string_view written);

} // namespace tandem
