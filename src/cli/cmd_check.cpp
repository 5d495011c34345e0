// `tandem check`: each configured cluster reachable and authorised, one row each.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/output.hpp"

namespace tandem::cli {

namespace {

Result<int> check(Context& ctx, bool json) {
    int rc = exit_code::ok;
    Table table({"CLUSTER", "TYPE", "STATUS", "DETAIL"});
    auto rows = nlohmann::json::array();
    for (const auto& c : ctx.config().clusters) {
        auto backend = ctx.backend(c.name);
        Result<std::string> result = backend ? (*backend)->check() : tl::unexpected(backend.error());
        const bool ok = result.has_value();
        if (!ok && rc == exit_code::ok) {
            rc = exit_code_for(result.error().kind);
        }
        const std::string detail = ok ? *result : result.error().message;
        table.add({c.name, std::string(to_string(c.kind)), ok ? "ok" : "error", detail});
        rows.push_back({{"cluster", c.name}, {"type", to_string(c.kind)}, {"ok", ok}, {"detail", detail}});
    }
    json ? print_json(nlohmann::json{{"clusters", rows}}) : print_stdout(table.render());
    return rc;
}

} // namespace

void setup_check(CLI::App& command, Action& action) {
    auto json = std::make_shared<bool>(false);
    command.add_flag("--json", *json, "JSON on stdout: {\"clusters\": [{cluster, type, ok, detail}]}");
    command.footer("Exits 0 when every cluster is fine, else the code of the first failure.");
    command.callback([json, &action] { action = [json](Context& ctx) { return check(ctx, *json); }; });
}

} // namespace tandem::cli
