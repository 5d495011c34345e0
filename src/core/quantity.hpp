#pragma once
// Parsers for the small value languages inside a task spec: accelerator strings, cpus/memory
// quantities, Slurm time limits, ports and infra pins. Each returns a message (no location) on error;
// the spec loader adds file:line:col.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/spec.hpp"

namespace tandem {

// "H100:8", "H100", "A100:0.5", "A100-80GB:8". count_text overrides the ":N" part (mapping form).
tl::expected<Accelerator, std::string> parse_accelerator(std::string_view text);
tl::expected<double, std::string> parse_accelerator_count(std::string_view text);
// "4", "4+", "0.5"
tl::expected<Quantity, std::string> parse_cpus(std::string_view text);
// "64", "64+", "64GB", "512MB", "1TB", "32GiB+": held in GB (binary and decimal units treated alike,
// as SkyPilot does).
tl::expected<Quantity, std::string> parse_memory_gb(std::string_view text);
// "256", "256GB"
tl::expected<double, std::string> parse_disk_gb(std::string_view text);
// Slurm time: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS" -> whole minutes (rounded up).
tl::expected<int, std::string> parse_slurm_time_minutes(std::string_view text);
std::string format_slurm_time(int minutes); // "1-00:00:00"
// "8080" or "10000-10010"
tl::expected<std::string, std::string> parse_port_range(std::string_view text);
// "k8s", "k8s/<context>", "kubernetes/<context>", "slurm[/cluster[/partition]]", "local"
tl::expected<InfraPin, std::string> parse_infra(std::string_view text);
std::string format_infra(const InfraPin& pin);
std::string format_accelerator(const Accelerator& acc); // "H100:8", "A100:0.5"
std::string format_number(double value);                // 8 -> "8", 0.5 -> "0.5"
// A positive integer that fits an int.
tl::expected<int, std::string> parse_positive_int(std::string_view text);
// "90s", "30m", "2h", "1h30m", "1d"; a bare number is seconds. At least one second.
tl::expected<std::int64_t, std::string> parse_duration_seconds(std::string_view text);
// kubectl-style: 45s, 3m12s, 5h3m, 4d2h.
std::string human_duration(std::int64_t seconds);

} // namespace tandem
