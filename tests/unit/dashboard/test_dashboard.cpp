// The dashboard's pure parts: what reaches a page is escaped, the token and CSRF rules, and the pages drawn
// from a board (the server and the browser are tests/integration/test_dashboard.cpp's).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/sweep.hpp"
#include "dashboard/auth.hpp"
#include "dashboard/pages.hpp"

using namespace tandem;
using namespace tandem::dashboard;

namespace {

app::JobView job(std::int64_t id, std::string name, std::string cluster, JobState state, std::string reason = "") {
    app::JobView v;
    v.record.id = id;
    v.record.name = std::move(name);
    v.record.cluster = std::move(cluster);
    v.record.backend = "slurm";
    v.record.state = state;
    v.record.reason = std::move(reason);
    v.record.submitted_at = 1000;
    v.record.remote_id = std::to_string(100 + id);
    return v;
}

std::size_t count(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
        ++n;
    }
    return n;
}

} // namespace

TEST_CASE("escape turns markup into text and drops what would draw over the page") {
    CHECK(escape("<script>alert('x')</script> & \"q\"") ==
          "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
    CHECK(escape("\x1b[31mred\x1b[0m plain") == "red plain");
    CHECK(escape("a\rb\x07" "c\x7f" "\td\ne") == "abc\td\ne");
    CHECK(escape("caf\xc3\xa9") == "caf\xc3\xa9"); // UTF-8 passes
    CHECK(escape("\x1b[") == "");                    // a cut sequence ends the text, no overrun
}

TEST_CASE("the token is compared in full and only a granted one passes") {
    CHECK(constant_time_equal("abc", "abc"));
    CHECK_FALSE(constant_time_equal("abc", "abd"));
    CHECK_FALSE(constant_time_equal("abc", "abcd"));
    CHECK_FALSE(constant_time_equal("", ""));
    CHECK(check_access(std::nullopt, std::nullopt, "t0k") == Access::no_token);
    CHECK(check_access(std::string(), std::nullopt, "t0k") == Access::no_token);
    CHECK(check_access(std::string("t0k"), std::nullopt, "t0k") == Access::granted);
    CHECK(check_access(std::nullopt, std::string("t0k"), "t0k") == Access::granted);
    CHECK(check_access(std::string("bad"), std::string("t0k"), "t0k") == Access::wrong_token); // the URL wins
    CHECK(cookie_value("a=1; tandem_dashboard_80=xyz ; b=2", "tandem_dashboard_80") == "xyz");
    CHECK(cookie_value("tandem_dashboard_8=xyz", "tandem_dashboard_80") == std::nullopt);
    CHECK(cookie_name(8080) == "tandem_dashboard_8080");
}

TEST_CASE("a cancel needs the page's CSRF value and, when sent, this server's Origin") {
    CHECK(post_allowed("c5rf", "c5rf", "", "127.0.0.1:8080"));
    CHECK(post_allowed("c5rf", "c5rf", "http://127.0.0.1:8080", "127.0.0.1:8080"));
    CHECK_FALSE(post_allowed("c5rf", "c5rf", "http://evil.example", "127.0.0.1:8080"));
    CHECK_FALSE(post_allowed("", "c5rf", "", "127.0.0.1:8080"));
    CHECK_FALSE(post_allowed("c5rg", "c5rf", "http://127.0.0.1:8080", "127.0.0.1:8080"));
}

TEST_CASE("a log stream never splits a UTF-8 character between two events") {
    std::string pending;
    CHECK(take_complete_utf8(pending, "ab\xc3") == "ab");
    CHECK(pending == "\xc3");
    CHECK(take_complete_utf8(pending, "\xa9z") == "\xc3\xa9z");
    CHECK(pending.empty());
    CHECK(take_complete_utf8(pending, "\xe2\x82") == "");
    CHECK(take_complete_utf8(pending, "\xac") == "\xe2\x82\xac");
    CHECK(take_complete_utf8(pending, "\x80\x80\x80\x80\x80") == "\x80\x80\x80\x80\x80"); // not UTF-8: passed on
    CHECK(pending.empty());
}

TEST_CASE("the job list shows every row, groups with their members, and filters by state, cluster and name") {
    Board board;
    board.taken_at = 2000;
    board.clusters = {"lab", "k8s"};
    board.jobs.push_back(job(3, "train <x>", "lab", JobState::running));
    board.jobs.push_back(job(2, "eval", "k8s", JobState::failed, "exit code 3"));
    app::GroupView g;
    g.group = job(1, "rl", "", JobState::running);
    g.group.record.backend = JobRecord::k_group_backend;
    auto m1 = job(4, "rl", "lab", JobState::running);
    m1.record.member = "trainer";
    auto m2 = job(5, "rl", "k8s", JobState::pending);
    m2.record.member = "rollout";
    g.members = {m1, m2};
    board.jobs.push_back(g.group);
    board.groups.emplace(1, g);
    PageContext ctx;
    ctx.now = 2060;

    const auto all = render_list(board, {}, ctx);
    CHECK(count(all, "<tr class=\"job\">") == 2);
    CHECK(count(all, "<tr class=\"group\">") == 1);
    CHECK(count(all, "<tr class=\"member\">") == 2);
    CHECK(all.find("train &lt;x&gt;") != std::string::npos);
    CHECK(all.find("train <x>") == std::string::npos);
    CHECK(all.find("href=\"/jobs/4\"") != std::string::npos);
    CHECK(all.find("1 FAILED") != std::string::npos);
    CHECK(all.find("exit code 3") != std::string::npos);
    // No asset from outside.
    CHECK(all.find("http://") == std::string::npos);
    CHECK(all.find("https://") == std::string::npos);

    CHECK(count(render_rows(board, {"FAILED", "", ""}, ctx), "<tr") == 1);
    CHECK(count(render_rows(board, {"active", "", ""}, ctx), "<tr class=\"job\">") == 1);
    // A group is listed (whole) when one of its members matches.
    const auto pending = render_rows(board, {"PENDING", "", ""}, ctx);
    CHECK(count(pending, "<tr class=\"group\">") == 1);
    CHECK(count(pending, "<tr class=\"job\">") == 0);
    CHECK(count(render_rows(board, {"", "k8s", ""}, ctx), "<tr class=\"job\">") == 1);
    CHECK(count(render_rows(board, {"", "", "rollout"}, ctx), "<tr class=\"group\">") == 1);
    CHECK(render_rows(board, {"", "", "nothing-like-it"}, ctx).find("No jobs match.") != std::string::npos);
    CHECK(render_rows(Board{}, {}, ctx).find("Asking the clusters") != std::string::npos);
}

TEST_CASE("a job page shows its facts, its history and its log as text; cancel only when allowed and not ended") {
    JobPage page;
    page.view = job(7, "train", "lab", JobState::running);
    page.view.record.num_nodes = 2;
    page.log = "step 1 <loss=0.5>\n\x1b[32mok\x1b[0m\n";
    store::Attempt a;
    a.number = 1;
    a.cluster = "k8s";
    a.outcome = "pending 5m (Unschedulable): cancelled";
    page.attempts = {a};
    PageContext ctx;
    ctx.now = 1100;
    ctx.csrf = "c5rf";
    auto html = render_job(page, ctx);
    CHECK(html.find("step 1 &lt;loss=0.5&gt;\nok\n") != std::string::npos);
    CHECK(html.find("data-stream=\"/jobs/7/log/stream\"") != std::string::npos);
    CHECK(html.find("pending 5m (Unschedulable): cancelled") != std::string::npos);
    CHECK(html.find("href=\"/jobs/7?node=1\"") != std::string::npos);
    CHECK(html.find("/cancel") == std::string::npos);
    ctx.allow_cancel = true;
    html = render_job(page, ctx);
    CHECK(html.find("action=\"/jobs/7/cancel\"") != std::string::npos);
    CHECK(html.find("name=\"csrf\" value=\"c5rf\"") != std::string::npos);
    CHECK(html.find("<h2>Recoveries</h2>") == std::string::npos);
    page.view.record.recoveries = "x3,n";
    html = render_job(page, ctx);
    CHECK(html.find("<h2>Recoveries</h2>") != std::string::npos);
    CHECK(html.find("<td>exit code 3</td><td>yes</td>") != std::string::npos);
    CHECK(html.find("<td>node failure, requeued</td><td>no</td>") != std::string::npos);
    CHECK(html.find("<h2>Elements</h2>") == std::string::npos);
    page.view.record.spec_json =
        nlohmann::json{{"sweep", sweep_to_json(sweep_grid({{"lr", {"0.1", "<b>"}}}).value())}}.dump();
    page.view.record.elements = "S0,F3";
    html = render_job(page, ctx);
    CHECK(html.find("<h2>Elements</h2>") != std::string::npos);
    CHECK(html.find("<td>lr=0.1</td><td>SUCCEEDED</td><td class=\"num\">0</td>") != std::string::npos);
    CHECK(html.find("<td>lr=&lt;b&gt;</td><td>FAILED</td><td class=\"num\">3</td>") != std::string::npos);
    page.view.record.state = JobState::succeeded;
    html = render_job(page, ctx);
    CHECK(html.find("/cancel") == std::string::npos);
    CHECK(html.find("data-stream") == std::string::npos); // an ended job's log is not followed
}

TEST_CASE("the infra page draws each pool's free GPUs as a bar and an unreachable cluster as its reason") {
    Inventory inv;
    ClusterInventory c;
    c.name = "lab";
    Pool p;
    p.name = "gpu";
    p.accelerator = "H100";
    p.gpus_total = 8;
    p.gpus_free = 6;
    c.pools = {p};
    ClusterInventory down;
    down.name = "k8s";
    down.reachable = false;
    down.error = "connection refused <here>";
    inv.clusters = {c, down};
    auto html = render_infra(inv, PageContext{});
    CHECK(html.find("<meter min=\"0\" max=\"8\" value=\"6\"") != std::string::npos);
    CHECK(html.find("6/8") != std::string::npos);
    CHECK(html.find("unreachable: connection refused &lt;here&gt;") != std::string::npos);
}
