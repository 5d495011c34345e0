// What squeue, sacct, sinfo, sbatch --parsable and --version print, through every parser of
// backends/slurm/slurm_cli.hpp (the SSH backend's), each on the whole input: the seeds hold each tool's
// recorded output, and each parser refuses the others' quickly. Invariant: errors are one line.

#include "backends/slurm/slurm_cli.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem::slurm::cli;
    const auto out = fuzz::text(data, size);
    fuzz::check_error_one_line(parse_squeue(out), "parse_squeue: error is one line");
    fuzz::check_error_one_line(parse_sacct(out), "parse_sacct: error is one line");
    fuzz::check_error_one_line(parse_sinfo(out), "parse_sinfo: error is one line");
    fuzz::check_error_one_line(parse_sbatch_parsable(out), "parse_sbatch_parsable: error is one line");
    fuzz::check_error_one_line(parse_version(out), "parse_version: error is one line");
    (void)find_comment(out, "tandem-fuzz-token");
    // A time limit is one sinfo field: the first line, up to its first separator.
    const auto field = out.substr(0, std::min(out.find('\n'), out.find(k_sep)));
    fuzz::check_error_one_line(parse_limit_minutes(field), "parse_limit_minutes: error is one line");
    return 0;
}
