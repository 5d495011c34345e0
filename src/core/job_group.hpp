#pragma once
// A launched pipeline or job group (core/task_group.hpp is the file format): what the group row keeps,
// the address book its members read, and what the group does next given its members' states. Pure
// logic; the CLI (cli/groups.cpp) carries the decisions out against the store and the backends.
//
// Address book: one small document of KEY='value' lines, sourced by each member's wrapper before setup:
//   TANDEM_GROUP_<MEMBER>_HOSTS   the member's ranks' addresses, newline-separated, in rank order
//   TANDEM_GROUP_MEMBERS          the members' names, one per line
// <MEMBER> is the member's name upper-cased, with '-' (and anything else outside [A-Z0-9_]) as '_'.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/job.hpp"
#include "core/task_group.hpp"

namespace tandem {

// What the group's row keeps (as its spec_json): enough to run the group on without the file.
struct GroupHeader {
    std::string name;
    GroupKind kind = GroupKind::pipeline;
    std::vector<std::string> members;                 // in file order
    std::vector<std::string> primary;                 // empty: every member is primary
    std::map<std::string, std::int64_t> termination_delay; // by member ("" for the default)
    std::string token; // drawn at launch; names the members' channels (unique across users)
    // Found on the clusters by another job store (issue 31): this store only watches it. Its launch
    // publishes the addresses, submits later stages and stops members; the header here is what the
    // members' identities tell (no primary tasks, no delays).
    bool adopted = false;

    bool is_primary(const std::string& member) const;
    std::int64_t termination_delay_of(const std::string& member) const;
    // The channel of member `index` ("tandem-<token>-<index>": a valid file and Kubernetes object name).
    std::string channel(std::size_t index) const;
};

GroupHeader header_of(const TaskGroup& group, std::string token);
nlohmann::json to_json(const GroupHeader& header);
Result<GroupHeader> group_header_from_json(const std::string& text);

// TANDEM_GROUP_<NAME>_HOSTS for member `member`.
std::string hosts_variable(const std::string& member);
// Whether a backend's answer is usable as an address (a host name or an IP address, nothing a shell
// would read otherwise).
bool valid_address(const std::string& address);
// The address book for `hosts` (member name -> its ranks' addresses, every member present).
std::string address_book(const GroupHeader& header, const std::map<std::string, std::vector<std::string>>& hosts);

// The bash function `tandem_group_wait BOOK` every member's wrapper runs before setup: waits (at most
// $TANDEM_GROUP_WAIT seconds, 600 by default) until the file BOOK exists and is not empty, then exports
// everything in it. On time-out it says why on stderr and returns 124. Fixed text: no user input in it.
std::string group_wait_function();
// For a Slurm job tandem reaches only through slurmrestd: `tandem_group_fetch BOOK`, which
// tandem_group_wait calls while the book is absent, reads the book from the job's comment (after the
// word `tandem-hosts=`, base64) with scontrol and writes it to BOOK. Fixed text.
std::string group_fetch_from_slurm_comment_function();
inline constexpr std::string_view k_comment_book_marker = " tandem-hosts=";
inline constexpr std::string_view k_old_comment_book_marker = ";tandem-hosts="; // before issue 31

// The environment every member gets (besides the book): SKYPILOT_JOBGROUP_NAME, TANDEM_GROUP,
// TANDEM_GROUP_ID, TANDEM_GROUP_MEMBER and, for a job group, TANDEM_GROUP_WAIT.
std::vector<std::pair<std::string, std::string>> group_environment(const GroupHeader& header,
                                                                    std::int64_t group_id,
                                                                    const std::string& member,
                                                                    std::int64_t wait_seconds);

// What the group does next. `members` in header order (the group's member rows).
struct GroupStep {
    JobUpdate group;                 // the group's state now (reason: which member decided it)
    std::vector<std::size_t> submit; // pipeline: the stage to submit now
    // Members to stop now, with the reason their row gets (CANCELLED): after a member failed, or
    // termination_delay after the primaries ended. Pipeline stages that will never run are here too.
    std::vector<std::pair<std::size_t, std::string>> stop;
    std::optional<std::int64_t> next_deadline; // when a termination delay will expire (for the caller's
                                               // sleep), if one is pending
};

GroupStep next_step(const GroupHeader& header, const std::vector<JobRecord>& members, std::int64_t now);

} // namespace tandem
