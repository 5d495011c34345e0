// What squeue (its discovery listing too), sacct, sinfo, sbatch --parsable and --version print, through every parser of
// backends/slurm/slurm_cli.hpp (the SSH backend's), each on the whole input: the seeds hold each tool's
// recorded output, and each parser refuses the others' quickly. Invariant: errors are one line.

#include "backends/slurm/job_array.hpp"
#include "backends/slurm/slurm_cli.hpp"
#include "core/identity.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem::slurm::cli;
    const auto out = fuzz::text(data, size);
    auto squeue = parse_squeue(out);
    fuzz::check_error_one_line(squeue, "parse_squeue: error is one line");
    if (squeue) { // a sweep's elements (issue 33) folded from whatever array lines the listing held
        static const tandem::Sweep sweep = *tandem::sweep_ranks(64);
        std::vector<const tandem::slurm::SlurmJob*> lines;
        for (const auto& j : *squeue) {
            lines.push_back(&j);
        }
        (void)tandem::slurm::array_update(sweep, lines, out.substr(0, 200), "unseen");
    }
    (void)parse_max_array_size(out);
    (void)tandem::parse_element_states(out);
    (void)tandem::slurm::array_indexes(out.substr(0, out.find('\n')), tandem::k_max_sweep_elements);
    fuzz::check_error_one_line(parse_sacct(out), "parse_sacct: error is one line");
    fuzz::check_error_one_line(parse_sinfo(out), "parse_sinfo: error is one line");
    fuzz::check_error_one_line(parse_sbatch_parsable(out), "parse_sbatch_parsable: error is one line");
    fuzz::check_error_one_line(parse_version(out), "parse_version: error is one line");
    (void)find_comment(out, "tandem-fuzz-token");
    // Discovery's listing: every job's comment is anyone's text; each one's identity is decoded too.
    auto listing = parse_discover(out);
    fuzz::check_error_one_line(listing, "parse_discover: error is one line");
    if (listing) {
        for (const auto* jobs : {&listing->mine, &listing->everyone}) {
            for (const auto& j : *jobs) {
                fuzz::check_error_one_line(tandem::decode_identity(j.comment), "decode_identity: error is one line");
            }
        }
    }
    // A time limit is one sinfo field: the first line, up to its first separator.
    const auto field = out.substr(0, std::min(out.find('\n'), out.find(k_sep)));
    fuzz::check_error_one_line(parse_limit_minutes(field), "parse_limit_minutes: error is one line");
    return 0;
}
