// A protobuf status List and a protobuf Status (backends/k8s/job_state_proto.hpp), then the state mapping.
// Invariants (the header's promise): the decoded List has exactly the JSON shape skim_status_list keeps, so
// its dump skims to itself; kept strings are UTF-8, so it dumps at all; errors are one line.

#include <algorithm>

#include "backends/k8s/job_state.hpp"
#include "backends/k8s/job_state_proto.hpp"
#include "backends/k8s/job_state_skim.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem::k8s;
    const auto body = fuzz::text(data, size);
    const auto status = decode_status_object(body);
    fuzz::check_error_one_line(status, "decode_status_object: error is one line");
    if (status) {
        (void)status->dump();
    }
    const auto list = decode_status_list(body);
    fuzz::check_error_one_line(list, "decode_status_list: error is one line");
    if (!list) {
        return 0;
    }
    const std::string json_text = list->dump();
    const auto skim = skim_status_list(json_text);
    if (!skim || *skim != *list) {
        fuzz::broken("decode_status_list gives the shape skim_status_list keeps",
                     json_text + "\n" + (skim ? skim->dump() : skim.error().message));
    }
    const auto groups = group_by_tandem_job(*list, *list, nullptr);
    for (auto [name, view] : groups) {
        // As every caller does (k8s_backend.cpp, k8s_watch.cpp): the ranks are the record's num_nodes, not
        // what the objects claim (a Job's spec.completions may say 2^31).
        view.expected_ranks = std::min(view.expected_ranks, 64);
        (void)to_job_update(view);
        (void)pods_decide(view);
    }
    return 0;
}
