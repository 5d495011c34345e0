// A job identity as a cluster returns it (a Slurm comment, a Kubernetes annotation: anyone who can set one
// can write anything there) through decode_identity (core/identity.hpp). Invariants: it never throws or
// reads past the text, errors are one line, and whatever it decodes encodes to a text that decodes to the
// same identity.

#include "core/identity.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto text = fuzz::text(data, size);
    auto decoded = tandem::decode_identity(text);
    fuzz::check_error_one_line(decoded, "decode_identity: error is one line");
    if (!decoded || !*decoded) {
        return 0;
    }
    const auto& id = **decoded;
    const std::string again = tandem::encode_identity(id);
    fuzz::check(again.size() <= tandem::k_identity_budget, "encode_identity: within k_identity_budget", again);
    fuzz::check(again.find(' ') == std::string::npos && fuzz::one_line(again), "encode_identity: one word", again);
    auto round = tandem::decode_identity(again);
    fuzz::check(round && *round, "encode_identity: decodes again", again);
    // Values the encoder cuts (a long name) come back cut; everything else comes back as it was.
    tandem::JobIdentity expected = id;
    const auto& back = **round;
    auto cut = [&](const std::string& was, const std::string& now, std::string& into, const char* what) {
        if (now.size() < was.size()) {
            fuzz::check(was.starts_with(now), what, again);
            into = now;
        }
    };
    cut(id.member, back.member, expected.member, "a cut member is the member's start");
    cut(id.name, back.name, expected.name, "a cut name is the name's start");
    cut(id.user, back.user, expected.user, "a cut user is the user's start");
    cut(id.host, back.host, expected.host, "a cut host is the host's start");
    cut(id.digest, back.digest, expected.digest, "a cut digest is the digest's start");
    cut(id.version, back.version, expected.version, "a cut version is its start");
    fuzz::check(back == expected, "decode(encode(identity)) is the identity", again);
    return 0;
}
