#include "core/job_group.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tandem {

bool GroupHeader::is_primary(const std::string& member) const {
    return is_primary_member(primary, member);
}

std::int64_t GroupHeader::termination_delay_of(const std::string& member) const {
    return termination_delay_for(termination_delay, member);
}

std::string GroupHeader::channel(std::size_t index) const {
    return fmt::format("tandem-{}-{}", token, index);
}

GroupHeader header_of(const TaskGroup& group, std::string token) {
    GroupHeader h;
    h.name = group.name;
    h.kind = group.kind;
    for (const auto& m : group.members) {
        h.members.push_back(m.name);
    }
    h.primary = group.primary;
    h.termination_delay = group.termination_delay;
    h.token = std::move(token);
    return h;
}

nlohmann::json to_json(const GroupHeader& h) {
    nlohmann::json delays = nlohmann::json::object();
    for (const auto& [member, seconds] : h.termination_delay) {
        delays[member] = seconds;
    }
    nlohmann::json j = {{"group", h.name},
                        {"execution", std::string(to_string(h.kind))},
                        {"members", h.members},
                        {"primary_tasks", h.primary},
                        {"termination_delay_seconds", delays},
                        {"token", h.token}};
    if (h.adopted) {
        j["adopted"] = true;
    }
    return j;
}

Result<GroupHeader> group_header_from_json(const std::string& text) {
    auto bad = [](const std::string& why) {
        return fail(ErrorKind::internal, "the stored job group is unreadable: " + why);
    };
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        return bad("not a JSON object");
    }
    GroupHeader h;
    try {
        h.name = j.at("group").get<std::string>();
        h.kind =
            j.at("execution").get<std::string>() == "parallel" ? GroupKind::parallel : GroupKind::pipeline;
        h.members = j.at("members").get<std::vector<std::string>>();
        h.primary = j.value("primary_tasks", std::vector<std::string>{});
        if (auto it = j.find("termination_delay_seconds"); it != j.end() && it->is_object()) {
            for (auto d = it->begin(); d != it->end(); ++d) {
                h.termination_delay[d.key()] = d.value().get<std::int64_t>();
            }
        }
        h.token = j.at("token").get<std::string>();
        h.adopted = j.value("adopted", false);
    } catch (const nlohmann::json::exception& e) {
        return bad(e.what());
    }
    return h;
}

std::string hosts_variable(const std::string& member) {
    std::string out = "TANDEM_GROUP_";
    for (char c : member) {
        if (c >= 'a' && c <= 'z') {
            out += static_cast<char>(c - 'a' + 'A');
        } else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            out += c;
        } else {
            out += '_';
        }
    }
    return out + "_HOSTS";
}

bool valid_address(const std::string& address) {
    if (address.empty() || address.size() > 253) {
        return false;
    }
    return std::all_of(address.begin(), address.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '-' || c == '_' || c == ':';
    });
}

std::string address_book(const GroupHeader& header,
                         const std::map<std::string, std::vector<std::string>>& hosts) {
    // Values are single-quoted; names and addresses hold no quote (members are [A-Za-z0-9_-], addresses
    // pass valid_address), so nothing in them can end the quoting.
    auto joined = [](const std::vector<std::string>& lines) {
        std::string out;
        for (const auto& l : lines) {
            out += (out.empty() ? "" : "\n") + l;
        }
        return out;
    };
    std::string book = fmt::format("TANDEM_GROUP_MEMBERS='{}'\n", joined(header.members));
    for (const auto& member : header.members) {
        auto it = hosts.find(member);
        book += fmt::format("{}='{}'\n", hosts_variable(member),
                            it == hosts.end() ? std::string() : joined(it->second));
    }
    return book;
}

std::string group_wait_function() {
    // A member that recovered (issue 32) may run elsewhere than the book it finds says: a replaced pod has
    // a new IP, a requeued Slurm job may have other nodes. So the book must list this node (its pod IP,
    // else its Slurm node name) under this member before it is read; tandem publishes it again once the
    // member runs. A node's own copy of the job's comment is removed to be fetched again.
    return R"SH(tandem_group_lists_me() {
  local self var listed
  if [ -n "${TANDEM_POD_IP:-}" ]; then self=$TANDEM_POD_IP; else self=${SLURMD_NODENAME:-}; fi
  [ -n "$self" ] && [ -n "${TANDEM_GROUP_MEMBER:-}" ] || return 0
  var=TANDEM_GROUP_$(printf '%s' "$TANDEM_GROUP_MEMBER" | tr 'a-z' 'A-Z' | tr -c 'A-Z0-9' '_')_HOSTS
  listed=$(set -a; . "$1" >/dev/null 2>&1; printf '%s' "${!var}")
  case "
$listed
" in *"
$self
"*) return 0 ;; esac
  return 1
}
tandem_group_wait() {
  local book="$1" limit="${TANDEM_GROUP_WAIT:-600}" waited=0 stale=""
  while :; do
    if [ -s "$book" ]; then
      tandem_group_lists_me "$book" && break
      if [ -z "$stale" ]; then
        echo "tandem: the addresses of job group '$TANDEM_GROUP' do not list this node yet (member $TANDEM_GROUP_MEMBER recovered elsewhere): waiting for them to be published again" >&2
        stale=1
      fi
      if declare -F tandem_group_fetch >/dev/null; then
        rm -f "$book"
      fi
    fi
    if declare -F tandem_group_fetch >/dev/null && tandem_group_fetch "$book"; then
      continue
    fi
    if [ "$waited" -ge "$limit" ]; then
      echo "tandem: the addresses of job group '$TANDEM_GROUP' did not arrive within ${limit}s: they are published while 'tandem launch' follows the group, or by 'tandem status $TANDEM_GROUP_ID' after --detach" >&2
      return 124
    fi
    if [ "$waited" -eq 0 ] && [ -z "$stale" ]; then
      echo "tandem: waiting for the addresses of job group '$TANDEM_GROUP'" >&2
    fi
    sleep 1
    waited=$((waited + 1))
  done
  set -a
  . "$book"
  set +a
  if declare -F tandem_group_fetch >/dev/null; then
    rm -f "$book" # the node's own copy of the job's comment
  fi
}
)SH";
}

std::string group_fetch_from_slurm_comment_function() {
    // Every 3 s at most (scontrol asks slurmctld): the wait loop calls this once a second.
    return R"SH(tandem_group_fetch() {
  local book="$1" now b64
  now=$(date +%s)
  if [ -n "${tandem_group_fetched:-}" ] && [ $((now - tandem_group_fetched)) -lt 3 ]; then
    return 1
  fi
  tandem_group_fetched=$now
  b64=$(scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.*[ ;]tandem-hosts=\([A-Za-z0-9+\/=]*\).*/\1/p')
  [ -n "$b64" ] || return 1
  mkdir -p "$(dirname "$book")" &&
    printf '%s' "$b64" | base64 -d > "$book.tmp.$$" 2>/dev/null &&
    mv -f "$book.tmp.$$" "$book"
}
)SH";
}

std::vector<std::pair<std::string, std::string>> group_environment(const GroupHeader& header,
                                                                   std::int64_t group_id,
                                                                   const std::string& member,
                                                                   std::int64_t wait_seconds) {
    std::vector<std::pair<std::string, std::string>> env{
        {"SKYPILOT_JOBGROUP_NAME", header.name},
        {"TANDEM_GROUP", header.name},
        {"TANDEM_GROUP_ID", std::to_string(group_id)},
        {"TANDEM_GROUP_MEMBER", member},
    };
    if (header.kind == GroupKind::parallel) {
        env.emplace_back("TANDEM_GROUP_WAIT", std::to_string(wait_seconds));
    }
    return env;
}

namespace {

bool started(const JobRecord& m) {
    return m.started_at.has_value() || m.state == JobState::running || m.state == JobState::starting ||
           (is_terminal(m.state) && !m.remote_id.empty());
}

std::string member_reason(const JobRecord& m) {
    return m.reason.empty() ? std::string(to_string(m.state)) : m.reason;
}

// The group's state while none of its outcome is decided, or while its members are being stopped.
JobUpdate in_progress(const std::vector<JobRecord>& members, std::string reason) {
    JobUpdate u;
    u.state = JobState::pending;
    for (const auto& m : members) {
        if (started(m)) {
            u.state = JobState::running;
            if (m.started_at && (!u.started_at || *m.started_at < *u.started_at)) {
                u.started_at = m.started_at;
            }
        }
    }
    u.reason = std::move(reason);
    return u;
}

// The decided outcome, once every member has ended; until then the group is still running.
JobUpdate settle(const std::vector<JobRecord>& members, JobState state, std::string reason,
                 std::optional<int> exit_code) {
    const bool all_ended =
        std::all_of(members.begin(), members.end(), [](const JobRecord& m) { return is_terminal(m.state); });
    if (!all_ended) {
        auto u = in_progress(members, "stopping the other members: " + reason);
        if (u.state == JobState::pending) {
            u.state = JobState::running; // something has ended, so the group has begun
        }
        return u;
    }
    JobUpdate u = in_progress(members, std::move(reason));
    u.state = state;
    u.exit_code = state == JobState::succeeded ? std::optional<int>(0) : exit_code;
    for (const auto& m : members) {
        if (m.ended_at && (!u.ended_at || *m.ended_at > *u.ended_at)) {
            u.ended_at = m.ended_at;
        }
    }
    return u;
}

GroupStep pipeline_step(const GroupHeader& header, const std::vector<JobRecord>& members) {
    GroupStep step;
    const std::size_t n = members.size();
    for (std::size_t i = 0; i < n; ++i) {
        const auto& m = members[i];
        if (m.state == JobState::succeeded) {
            continue;
        }
        const std::string stage = fmt::format("stage {}/{} ({})", i + 1, n, m.member);
        if (is_terminal(m.state)) {
            const std::string why = fmt::format("{} {}: {}", stage, to_string(m.state), member_reason(m));
            for (std::size_t later = i + 1; later < n; ++later) {
                if (!is_terminal(members[later].state)) {
                    step.stop.emplace_back(later, fmt::format("not run: {} {}", stage, to_string(m.state)));
                }
            }
            step.group = settle(members, m.state, why, m.exit_code);
            return step;
        }
        if (m.remote_id.empty() && m.state == JobState::pending &&
            m.reason.rfind(k_submit_unsure_reason, 0) != 0) { // (an unsure submit waits for status)
            step.submit.push_back(i);
        }
        step.group = in_progress(members, stage + ": " + member_reason(m));
        return step;
    }
    (void)header;
    step.group = settle(members, JobState::succeeded, fmt::format("all {} stages succeeded", n), 0);
    return step;
}

constexpr std::string_view k_stopped_by_member = "stopped: member ";

GroupStep parallel_step(const GroupHeader& header, const std::vector<JobRecord>& members, std::int64_t now) {
    GroupStep step;
    const std::size_t n = members.size();
    bool primaries_done = true;
    bool primary_stopped = false; // by the group itself, after a member failed
    std::int64_t primaries_end = 0;
    for (const auto& m : members) {
        if (header.is_primary(m.member)) {
            primaries_done = primaries_done && is_terminal(m.state);
            primaries_end = std::max(primaries_end, m.ended_at.value_or(0));
            primary_stopped = primary_stopped ||
                              (m.state == JobState::cancelled && m.reason.rfind(k_stopped_by_member, 0) == 0);
        }
    }
    // A failure decides the group: a primary's, or an auxiliary's before the primaries were done (one
    // that fails while being stopped afterwards changes nothing).
    std::optional<std::size_t> decider;
    for (std::size_t i = 0; i < n; ++i) {
        const auto& m = members[i];
        bool counts = m.state == JobState::failed;
        if (counts && !header.is_primary(m.member) && primaries_done && !primary_stopped) {
            // (A primary the group stopped ended because of a failure; when that failure and the stop
            // fall in the same second, the times cannot tell which came first, the reason can.)
            counts = m.ended_at.value_or(0) < primaries_end;
        }
        // A primary cancelled (by hand) ends the group too: it can no longer reach its outcome.
        counts = counts || (m.state == JobState::cancelled && header.is_primary(m.member) && !primaries_done);
        if (counts && (!decider || m.ended_at.value_or(0) < members[*decider].ended_at.value_or(0))) {
            decider = i;
        }
    }
    if (decider) {
        const auto& d = members[*decider];
        const std::string why =
            fmt::format("member {} {}: {}", d.member, to_string(d.state), member_reason(d));
        for (std::size_t i = 0; i < n; ++i) {
            if (!is_terminal(members[i].state)) {
                step.stop.emplace_back(
                    i, fmt::format("{}{} {}", k_stopped_by_member, d.member, to_string(d.state)));
            }
        }
        step.group = settle(members, d.state, why, d.exit_code);
        return step;
    }
    if (primaries_done) {
        std::optional<std::size_t> cancelled;
        for (std::size_t i = 0; i < n; ++i) {
            if (header.is_primary(members[i].member) && members[i].state == JobState::cancelled &&
                !cancelled) {
                cancelled = i;
            }
            if (is_terminal(members[i].state)) {
                continue;
            }
            const std::int64_t deadline = primaries_end + header.termination_delay_of(members[i].member);
            if (now >= deadline) {
                step.stop.emplace_back(i, "stopped: the primary tasks ended");
            } else if (!step.next_deadline || deadline < *step.next_deadline) {
                step.next_deadline = deadline;
            }
        }
        if (cancelled) {
            const auto& c = members[*cancelled];
            step.group =
                settle(members, JobState::cancelled,
                       fmt::format("member {} CANCELLED: {}", c.member, member_reason(c)), std::nullopt);
        } else {
            step.group = settle(members, JobState::succeeded, "the primary tasks succeeded", 0);
        }
        return step;
    }
    std::size_t running = 0;
    for (const auto& m : members) {
        running += m.state == JobState::running ? 1 : 0;
    }
    step.group = in_progress(members, fmt::format("{}/{} members running", running, n));
    return step;
}

} // namespace

GroupStep next_step(const GroupHeader& header, const std::vector<JobRecord>& members, std::int64_t now) {
    return header.kind == GroupKind::pipeline ? pipeline_step(header, members)
                                              : parallel_step(header, members, now);
}

} // namespace tandem
