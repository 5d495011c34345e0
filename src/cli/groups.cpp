// Pipelines and job groups on the command line: their JSON and summary line, the members' output with
// [member/rank] prefixes (one follower thread per member), and `launch` of a group file. The group's
// lifecycle is the app layer's (app/group_runner.hpp).

#include "cli/groups.hpp"

#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/output.hpp"

namespace tandem::cli {

nlohmann::json group_json(const GroupView& view) {
    nlohmann::json j = job_json(view.group.record, view.group.unreachable, view.group.unreachable_reason);
    auto header = group_header_from_json(view.group.record.spec_json);
    j["kind"] = "group";
    if (header) {
        j["execution"] = std::string(to_string(header->kind));
        j["primary_tasks"] = header->primary;
    }
    j["addresses_published"] = addresses_published(view.group.record);
    auto members = nlohmann::json::array();
    const auto hosts = published_hosts(view.group.record);
    for (const auto& m : view.members) {
        auto mj = job_json(m.record, m.unreachable, m.unreachable_reason);
        mj["member"] = m.record.member;
        if (auto it = hosts.find(m.record.member); it != hosts.end()) {
            mj["hosts"] = it->second; // its ranks' addresses, as published
        }
        if (header) {
            mj["primary"] = header->kind == GroupKind::parallel && header->is_primary(m.record.member);
        }
        members.push_back(std::move(mj));
    }
    j["members"] = std::move(members);
    return j;
}

std::string group_summary(const GroupView& view) {
    const auto& r = view.group.record;
    std::string text = fmt::format("job group {} ({}) {}", r.id, r.name,
                                   view.group.unreachable ? "UNKNOWN" : std::string(to_string(r.state)));
    if (!r.reason.empty()) {
        text += ": " + r.reason;
    }
    return text;
}

// ---- logs ------------------------------------------------------------------------------------------

namespace {

std::mutex g_print_mutex; // one stdout for every member's follower

// Turns one member's output into "[member/rank] line": a multi-node member's lines arrive as
// "[rank K] text"; a one-node member's as they are.
class MemberLines {
public:
    MemberLines(std::string member, int num_nodes, std::optional<int> node)
        : m_member(std::move(member)), m_multi(num_nodes > 1), m_node(node) {}

    bool feed(std::string_view chunk) {
        m_partial.append(chunk);
        std::string out;
        std::size_t start = 0;
        for (std::size_t nl; (nl = m_partial.find('\n', start)) != std::string::npos; start = nl + 1) {
            out += line(std::string_view(m_partial).substr(start, nl - start));
        }
        m_partial.erase(0, start);
        if (!out.empty()) {
            std::lock_guard<std::mutex> lock(g_print_mutex);
            print_stdout(out);
        }
        return true;
    }
    void finish() {
        if (!m_partial.empty()) {
            std::string out = line(m_partial);
            m_partial.clear();
            std::lock_guard<std::mutex> lock(g_print_mutex);
            print_stdout(out);
        }
    }

private:
    std::string line(std::string_view text) const {
        if (m_node) {
            return fmt::format("[{}/{}] {}\n", m_member, *m_node, text);
        }
        if (!m_multi) {
            return fmt::format("[{}/0] {}\n", m_member, text);
        }
        constexpr std::string_view rank = "[rank ";
        if (text.substr(0, rank.size()) == rank) {
            const auto close = text.find("] ");
            if (close != std::string_view::npos) {
                return fmt::format("[{}/{}] {}\n", m_member, text.substr(rank.size(), close - rank.size()),
                                   text.substr(close + 2));
            }
        }
        return fmt::format("[{}] {}\n", m_member, text);
    }

    std::string m_member;
    bool m_multi;
    std::optional<int> m_node;
    std::string m_partial;
};

bool selected(const JobRecord& m, const GroupLogOptions& options) {
    return !options.member || m.member == *options.member;
}

// Follows members' output on threads of their own, each with a backend of its own (a backend serves one
// thread); started as members get their remote ids.
class Followers {
public:
    Followers(Context& ctx, GroupLogOptions options) : m_ctx(ctx), m_options(std::move(options)) {}
    ~Followers() {
        for (auto& t : m_threads) {
            t.join();
        }
    }

    void start_new(const GroupView& view) {
        for (const auto& m : view.members) {
            const auto& r = m.record;
            // Keyed by the remote id too: a member that moved (failover) is followed where it went.
            if (r.remote_id.empty() || m_started.count({r.id, r.remote_id}) || !selected(r, m_options) ||
                (m_options.node && *m_options.node >= r.num_nodes)) {
                continue;
            }
            auto backend = m_ctx.backend(r.cluster);
            if (!backend) {
                continue;
            }
            m_ctx.abandon(r.cluster); // this thread keeps it; the next backend(cluster) makes another
            m_started.insert({r.id, r.remote_id});
            LogOptions o{true, m_options.tail, m_options.node};
            m_threads.emplace_back([b = *backend, r, o] {
                MemberLines lines(r.member, r.num_nodes, o.node);
                auto ok = b->logs(r, o, [&](std::string_view chunk) { return lines.feed(chunk); });
                lines.finish();
                if (!ok) {
                    note(fmt::format("tandem: cannot follow the output of member {}: {}", r.member,
                                     ok.error().message));
                }
            });
        }
    }

private:
    Context& m_ctx;
    GroupLogOptions m_options;
    std::set<std::pair<std::int64_t, std::string>> m_started;
    std::vector<std::thread> m_threads;
};

} // namespace

Result<GroupView> group_logs(Context& ctx, std::int64_t group_id, const GroupLogOptions& options,
                             const StageSubmitter& submit_stage) {
    if (options.follow) {
        std::optional<Followers> followers(std::in_place, ctx, options);
        auto view =
            follow_group(ctx, group_id, submit_stage, [&](const GroupView& v) { followers->start_new(v); });
        followers.reset(); // every member has ended: their followers finish their output
        return view;
    }
    auto view = refresh_group(ctx, group_id, submit_stage);
    if (!view) {
        return view;
    }
    for (const auto& m : view->members) {
        const auto& r = m.record;
        if (r.remote_id.empty() || !selected(r, options) || (options.node && *options.node >= r.num_nodes)) {
            continue;
        }
        auto backend = ctx.backend(r.cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        MemberLines lines(r.member, r.num_nodes, options.node);
        auto ok = (*backend)->logs(r, LogOptions{false, options.tail, options.node},
                                   [&](std::string_view chunk) { return lines.feed(chunk); });
        lines.finish();
        if (!ok) {
            note(fmt::format("tandem: error: member {} on {}: {}", r.member, r.cluster, ok.error().message));
        }
    }
    return view;
}

// ---- launch ----------------------------------------------------------------------------------------

Result<int> launch_group(Context& ctx, TaskGroup group, const GroupLaunchOptions& options) {
    const bool pipeline = group.kind == GroupKind::pipeline;
    if (pipeline && options.detach && group.members.size() > 1) {
        return fail(
            ErrorKind::usage,
            fmt::format("{}: a pipeline's later stages are submitted by `launch` as it follows the "
                        "pipeline, and --detach would leave nothing to submit them",
                        group.source_file),
            "drop --detach (--wait follows without the output); secrets are never stored, so no later "
            "command could submit a stage that needs them");
    }
    auto launch = app::start_group(ctx, std::move(group), options.pending_timeout);
    if (!launch) {
        return tl::unexpected(launch.error());
    }
    const JobRecord& row = (*launch)->group;
    if (options.detach) {
        if (!pipeline) {
            note(fmt::format(
                "tandem: the members wait up to {} for each other's addresses; with --detach they "
                "are published by `tandem status {}` or `tandem logs {}` once every member has "
                "started",
                human_duration(app::k_default_group_wait), row.id, row.id));
        }
        auto view = refresh_with_groups(ctx, {row}, false);
        options.json ? print_json(group_json(view.groups.front()))
                     : print_stdout(fmt::format("{}\n", row.id));
        return exit_code::ok;
    }
    // Follow: refresh and advance the group (publishing, stopping, pending timeouts, next stages).
    std::optional<Followers> followers;
    if (!options.wait && !options.json) {
        note("tandem: following its output; Ctrl-C stops following, the group keeps running");
        followers.emplace(ctx, GroupLogOptions{true, std::nullopt, std::nullopt, {}});
    }
    auto done = app::follow_launch(ctx, **launch, [&](const GroupView& view) {
        if (followers) {
            followers->start_new(view);
        }
    });
    followers.reset(); // every member has ended: their followers finish their output
    if (!done) {
        return tl::unexpected(done.error());
    }
    note("tandem: " + group_summary(*done));
    if (options.json) {
        print_json(group_json(*done));
    }
    return job_exit_code(done->group);
}

} // namespace tandem::cli
