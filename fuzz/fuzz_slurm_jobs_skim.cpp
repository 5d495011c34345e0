// A GET /slurm/VER/jobs answer through the skimmer (backends/slurm/jobs_skim.hpp) and through nlohmann's full
// parse. The skimmer steps over unkept values checking only strings and nesting, so it may accept text the
// full parse refuses; when both succeed, the skim must equal the full parse with every job's unkept members
// removed, and both per-version parsers must read the two alike.

#include "backends/slurm/jobs_skim.hpp"
#include "backends/slurm/rest_json.hpp"
#include "backends/slurm/rest_api.hpp"
#include "fuzz_common.hpp"

namespace {

using nlohmann::json;

// The full parse as the skimmer should see it: in "jobs", each object keeps only is_job_field members.
json skimmed(json full) {
    auto jobs = full.find("jobs");
    if (jobs == full.end() || !jobs->is_array()) {
        return full;
    }
    for (auto& job : *jobs) {
        if (!job.is_object()) {
            continue;
        }
        json kept = json::object();
        for (auto& [key, value] : job.items()) {
            if (tandem::slurm::rest::is_job_field(key)) {
                kept[key] = value;
            }
        }
        job = std::move(kept);
    }
    return full;
}

template <typename R> void check_alike(const R& a, const R& b, const char* what) {
    fuzz::check(a.has_value() == b.has_value(), what);
    if (a && b) {
        fuzz::check(a->size() == b->size(), what);
    } else if (!a && a.error().message != b.error().message) {
        fuzz::broken(what, a.error().message + " | " + b.error().message);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem::slurm;
    const auto text = fuzz::text(data, size);
    const auto skim = rest::skim_jobs(text, rest::is_job_field);
    if (!skim) {
        return 0;
    }
    fuzz::check(skim->is_object(), "skim_jobs: an object");
    (void)rest::latest_job_event(*skim);
    const auto v38 = api::parse_jobs(*skim, ApiVersion::v0_0_38);
    const auto v40 = api::parse_jobs(*skim, ApiVersion::v0_0_40);
    const json full = json::parse(text.begin(), text.end(), nullptr, false);
    if (full.is_discarded()) {
        return 0;
    }
    if (const json expected = skimmed(full); *skim != expected) {
        fuzz::broken("skim_jobs equals the filtered full parse",
                     skim->dump(-1, ' ', false, json::error_handler_t::replace) + "\n" +
                         expected.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    check_alike(v38, api::parse_jobs(full, ApiVersion::v0_0_38), "v0038::parse_jobs reads the skim as the full parse");
    check_alike(v40, api::parse_jobs(full, ApiVersion::v0_0_40), "v0040::parse_jobs reads the skim as the full parse");
    return 0;
}
