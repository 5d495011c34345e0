#pragma once
// Who and what a job is, written into every native object tandem makes (a Slurm job's comment, a
// Kubernetes object's annotation) so that any tandem, on any machine, can find the job again on the
// cluster (issue 31: the clusters are the record).
//
// The encoding is one line of printable ASCII, short and versioned:
//   tandem:1:t=ab12cd34ef;n=train%20run;g=x9y8z7w6v5;m=trainer;e=3;u=alice;h=laptop;d=3fa9c1e2b7d0;v=0.4.0
// `tandem:<version>:` then `key=value` pairs joined by `;`. Values are percent-encoded: every byte outside
// [A-Za-z0-9._~-] becomes %XX, so the text never holds a blank, a comma, a quote or a `|` (squeue and
// sacct print it between separators). Keys: t the submit token (required), n the job name, g the group's
// token, m the member's name, e the sweep element, u and h the launching user and host, d the spec
// digest, v tandem's version. Unknown keys are skipped (a newer tandem may add some); another version
// of the encoding is not read.
//
// Slurm keeps a job's --comment (at most 1,024 bytes, with the submit token and a group's address book)
// while slurmctld holds the job, and in accounting only with AccountingStoreFlags=job_comment; its wckey
// column holds 255 bytes. So the text is at most k_identity_budget bytes: values are cut at whole
// characters (member 48 bytes, name 64, user and host 32, digest and version 16), and when the budget
// runs out the later ones (version first) are cut or left out; the token, the group, the element and
// the member's start always fit.
//
// What a cluster returns is untrusted: anyone who can set a comment or an annotation can write anything
// there. The decoder reads at most k_max_identity bytes, checks every field's form and never throws; a
// decoded identity says what the object claims, not whose it is (the cluster's own user and namespace
// decide that).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace tandem {

// This tandem's version, as `tandem --version` prints it and the identity's v= carries.
inline constexpr std::string_view k_tandem_version = "0.1.0";

struct JobIdentity {
    std::string token;          // the submit token: 6 to 32 of [a-z0-9]
    std::string name;           // the job's name; a member's: its group's name
    std::string group;          // the group's submit token, for a member; empty otherwise
    std::string member;         // the member's name in its group
    std::optional<int> element; // the sweep element (0-based)
    std::string user, host;     // who launched it (the cluster's user), from which machine
    std::string digest;         // the spec's digest, hex
    std::string version;        // the tandem that launched it

    bool operator==(const JobIdentity&) const = default;
};

// The longest identity text tandem writes, and the longest it reads (Slurm's comment limit).
inline constexpr std::size_t k_identity_budget = 255;
inline constexpr std::size_t k_max_identity = 1024;

// The one-line text, at most k_identity_budget bytes; long values are cut as above, never the token.
std::string encode_identity(const JobIdentity& identity);
// The identity in `text` (a whole comment: the identity may follow other words, separated by a blank);
// nullopt when there is none. A malformed one is an error (kind `remote`) saying what is wrong.
Result<std::optional<JobIdentity>> decode_identity(std::string_view text);

} // namespace tandem
