// An exec credential plugin's stdout through parse_exec_credential (backends/k8s/exec_credential.hpp), for
// both API versions a kubeconfig may ask for. Invariant: errors are one line.

#include <string>

#include "backends/k8s/exec_credential.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string output(fuzz::text(data, size));
    for (const char* version : {"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}) {
        const auto result = tandem::k8s::parse_exec_credential(output, version, "k8s/fuzz: exec plugin 'p'");
        fuzz::check_error_one_line(result, "parse_exec_credential: error is one line");
        if (result) {
            fuzz::check(!result->token.empty() || !result->client_cert_pem.empty(),
                        "parse_exec_credential: success carries a token or a certificate");
        }
    }
    return 0;
}
