// A kubeconfig file through parse_kubeconfigs (backends/k8s/kubeconfig.hpp), as load_kubeconfig reads one.
// Relative paths in it resolve under a directory that does not exist. Invariants: a whole-file error lists
// its problems one per line, each naming the file (file:line:col); each context's `error` is one line.

#include <string>
#include <utility>
#include <vector>

#include "backends/k8s/kubeconfig.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = "/nonexistent-tandem-fuzz/.kube/config";
    const std::vector<std::pair<std::string, std::string>> files{{path, std::string(fuzz::text(data, size))}};
    const auto config = tandem::k8s::parse_kubeconfigs(files);
    if (!config) {
        fuzz::check_lines_start_with(config.error().message, path + ":",
                                     "every line of a kubeconfig error names the file");
    }
    if (config) {
        for (const auto& context : config->contexts) {
            fuzz::check(fuzz::one_line(context.error), "KubeContext::error is one line", context.error);
            (void)config->find(context.name);
        }
    }
    return 0;
}
