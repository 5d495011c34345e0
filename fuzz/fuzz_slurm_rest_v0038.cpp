// A Slurm 22.05's slurmrestd v0.0.38 answer, parsed as slurm_rest_backend.cpp does (nlohmann, no
// exceptions), through every parser of backends/slurm/rest_api.hpp in the v0.0.38 dialect, plus the
// shared error reader and API version choice. Invariant: errors are one line.

#include "backends/slurm/api_version.hpp"
#include "backends/slurm/jobs_skim.hpp"
#include "backends/slurm/rest_json.hpp"
#include "backends/slurm/rest_api.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem::slurm;
    const auto text = fuzz::text(data, size);
    const auto body = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (body.is_discarded()) {
        return 0;
    }
    fuzz::check_error_one_line(api::parse_jobs(body, ApiVersion::v0_0_38), "parse_jobs: error is one line");
    fuzz::check_error_one_line(api::parse_db_jobs(body, ApiVersion::v0_0_38), "parse_db_jobs: error is one line");
    fuzz::check_error_one_line(api::parse_partitions(body, ApiVersion::v0_0_38), "parse_partitions: error is one line");
    fuzz::check_error_one_line(api::parse_nodes(body, ApiVersion::v0_0_38), "parse_nodes: error is one line");
    fuzz::check_error_one_line(api::parse_submit_response(body, ApiVersion::v0_0_38),
                               "parse_submit_response: error is one line");
    if (const auto error = rest::response_error(body)) {
        fuzz::check(fuzz::one_line(error->message), "response_error: one line", error->message);
    }
    fuzz::check_error_one_line(choose_api_version(body), "choose_api_version: error is one line");
    (void)rest::latest_job_event(body);
    return 0;
}
