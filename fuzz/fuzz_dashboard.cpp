// What the dashboard puts on a page or reads from a request, from bytes anyone could write (a job's name,
// a log line, a cluster's reason, a Cookie header). Invariants: escaping leaves no markup and no terminal
// escape; a log stream cut anywhere into chunks loses no byte and never ends an event inside a UTF-8
// character; a cookie value is a part of the header; a job page with these bytes everywhere renders.

#include "dashboard/auth.hpp"
#include "dashboard/pages.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto text = fuzz::text(data, size);
    const std::string escaped = tandem::dashboard::escape(text);
    fuzz::check(escaped.find_first_of("<>\"'\x1b\r") == std::string::npos, "escape: no markup, no escape left",
                escaped);

    // The same bytes as a stream cut into chunks of 1..7 bytes (the sizes from the input itself).
    std::string pending, joined;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t n = 1 + static_cast<unsigned char>(text[at]) % 7;
        const auto chunk = text.substr(at, n);
        at += chunk.size();
        const std::string out = tandem::dashboard::take_complete_utf8(pending, chunk);
        fuzz::check(pending.size() < 4, "take_complete_utf8: keeps at most 3 bytes back", pending);
        joined += out;
    }
    joined += pending;
    fuzz::check(joined == text, "take_complete_utf8: every byte passed on, in order", joined);

    if (auto v = tandem::dashboard::cookie_value(text, "tandem_dashboard_8080")) {
        fuzz::check(text.find(*v) != std::string_view::npos, "cookie_value: a part of the header", *v);
    }

    tandem::dashboard::JobPage page;
    page.view.record.id = 1;
    page.view.record.name = std::string(text);
    page.view.record.reason = std::string(text);
    page.view.record.spec_json = std::string(text);
    page.view.record.placement_json = std::string(text);
    page.view.record.remote_id = "1";
    page.log = std::string(text);
    tandem::dashboard::PageContext ctx;
    ctx.allow_cancel = true;
    ctx.csrf = "c";
    const std::string html = tandem::dashboard::render_job(page, ctx);
    fuzz::check(html.find("<script>") == std::string::npos, "render_job: no inline script", html);
    return 0;
}
