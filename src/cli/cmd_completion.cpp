// `tandem completion bash|zsh|fish`: a completion script for commands, flags, job ids (with their names,
// where the shell shows descriptions), `serve` subcommands and service names, cluster names (for --cluster and --infra) and task files. The
// commands and flags are read from the command table when the script is made, so it never goes stale
// against the binary that printed it; job ids and clusters come from `tandem __complete` at completion
// time, which reads the local job store and config only (no network, no backend).

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <set>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/backend_traits.hpp"

namespace tandem::cli {

namespace {

struct CommandInfo {
    std::string name;
    std::string summary;
    std::vector<std::pair<std::string, std::string>> flags; // "--node" / "-f", description
};

std::vector<CommandInfo> command_table(const CLI::App& app) {
    std::vector<CommandInfo> out;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); })) {
        CommandInfo info{sub->get_name(), sub->get_description(), {}};
        for (const CLI::Option* opt : sub->get_options()) {
            for (const auto& l : opt->get_lnames()) {
                info.flags.emplace_back("--" + l, opt->get_description());
            }
            for (const auto& s : opt->get_snames()) {
                info.flags.emplace_back("-" + s, opt->get_description());
            }
        }
        out.push_back(std::move(info));
    }
    return out;
}

// Flags whose value is a cluster, and commands whose words are job ids or task files.
const std::set<std::string> k_job_commands{"status", "logs", "cancel", "exec", "shell"};
const std::set<std::string> k_file_commands{"launch", "plan"};

std::string single_quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

std::string bash_script(const std::vector<CommandInfo>& table) {
    std::string names, cases;
    for (const auto& c : table) {
        names += (names.empty() ? "" : " ") + c.name;
        std::string flags;
        for (const auto& [f, d] : c.flags) {
            flags += (flags.empty() ? "" : " ") + f;
        }
        cases += fmt::format("        {}) opts={} ;;\n", c.name, single_quoted(flags));
    }
    std::string jobs, files;
    for (const auto& c : k_job_commands) {
        jobs += (jobs.empty() ? "" : "|") + c;
    }
    for (const auto& c : k_file_commands) {
        files += (files.empty() ? "" : "|") + c;
    }
    return fmt::format(R"sh(# tandem completion for bash: eval "$(tandem completion bash)" (e.g. in ~/.bashrc)
_tandem() {{
    local cur prev cmd opts
    cur=${{COMP_WORDS[COMP_CWORD]}}
    prev=${{COMP_WORDS[COMP_CWORD-1]}}
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W '{0} --help --version' -- "$cur"))
        return
    fi
    cmd=${{COMP_WORDS[1]}}
    case "$prev" in
        --cluster) COMPREPLY=($(compgen -W "$(tandem __complete clusters 2>/dev/null)" -- "$cur")); return ;;
        --infra) COMPREPLY=($(compgen -W "$(tandem __complete infra 2>/dev/null)" -- "$cur")); return ;;
    esac
    if [[ "$cur" == -* ]]; then
        case "$cmd" in
{1}        esac
        COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
        return
    fi
    case "$cmd" in
        {2}) COMPREPLY=($(compgen -W "$(tandem __complete jobs 2>/dev/null)" -- "$cur")) ;;
        {3}) compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -X '!*.yaml' -- "$cur") $(compgen -f -X '!*.yml' -- "$cur") $(compgen -d -- "$cur")) ;;
        completion) COMPREPLY=($(compgen -W 'bash zsh fish' -- "$cur")) ;;
        serve)
            if [ "$COMP_CWORD" -eq 2 ]; then
                COMPREPLY=($(compgen -W 'up status logs update down' -- "$cur"))
            elif [ "${{COMP_WORDS[2]}}" = up ] || {{ [ "${{COMP_WORDS[2]}}" = update ] && [ "$COMP_CWORD" -ge 4 ]; }}; then
                compopt -o filenames 2>/dev/null
                COMPREPLY=($(compgen -f -X '!*.yaml' -- "$cur") $(compgen -f -X '!*.yml' -- "$cur") $(compgen -d -- "$cur"))
            elif [ "$COMP_CWORD" -eq 3 ]; then
                COMPREPLY=($(compgen -W "$(tandem __complete services 2>/dev/null)" -- "$cur"))
            fi ;;
    esac
}}
complete -F _tandem tandem
)sh",
                       names, cases, jobs, files);
}

std::string fish_script(const std::vector<CommandInfo>& table) {
    std::string s = "# tandem completion for fish: tandem completion fish > ~/.config/fish/completions/tandem.fish\n"
                    "complete -c tandem -f\n";
    for (const auto& c : table) {
        s += fmt::format("complete -c tandem -n __fish_use_subcommand -a {} -d {}\n", c.name, single_quoted(c.summary));
        for (const auto& [f, d] : c.flags) {
            const std::string kind = f.rfind("--", 0) == 0 ? "-l " + f.substr(2) : "-s " + f.substr(1);
            std::string extra;
            if (f == "--cluster") {
                extra = " -r -a '(tandem __complete clusters 2>/dev/null)'";
            } else if (f == "--infra") {
                extra = " -r -a '(tandem __complete infra 2>/dev/null)'";
            }
            s += fmt::format("complete -c tandem -n '__fish_seen_subcommand_from {}' {}{} -d {}\n", c.name, kind,
                             extra, single_quoted(d));
        }
        if (k_job_commands.count(c.name)) {
            s += fmt::format("complete -c tandem -n '__fish_seen_subcommand_from {}' -a '(tandem __complete jobs "
                             "--described 2>/dev/null)'\n",
                             c.name);
        }
        if (k_file_commands.count(c.name)) {
            s += fmt::format("complete -c tandem -n '__fish_seen_subcommand_from {}' -F -a '(__fish_complete_suffix "
                             ".yaml; __fish_complete_suffix .yml)'\n",
                             c.name);
        }
    }
    s += "complete -c tandem -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n";
    s += "complete -c tandem -n '__fish_seen_subcommand_from serve; and not __fish_seen_subcommand_from up status "
         "logs update down' -a 'up status logs update down'\n";
    s += "complete -c tandem -n '__fish_seen_subcommand_from serve; and __fish_seen_subcommand_from status logs "
         "update down' -a '(tandem __complete services 2>/dev/null)'\n";
    s += "complete -c tandem -n '__fish_seen_subcommand_from serve; and __fish_seen_subcommand_from up update' -F "
         "-a '(__fish_complete_suffix .yaml; __fish_complete_suffix .yml)'\n";
    return s;
}

std::string zsh_script(const std::vector<CommandInfo>& table) {
    // zsh runs the bash function through its bashcompinit layer (part of zsh): one script to keep true. The
    // same text is also a completion file (the installed vendor-completions/_tandem): zsh's compinit finds
    // it in $fpath by its #compdef line and loads it as the function _tandem at the first completion, when
    // it must also complete that first word.
    return "#compdef tandem\n"
           "# tandem completion for zsh: eval \"$(tandem completion zsh)\" (e.g. in ~/.zshrc), or this saved as\n"
           "# _tandem in a folder of $fpath\n"
           "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit; }\n"
           "autoload -U +X bashcompinit && bashcompinit\n" +
           bash_script(table).substr(bash_script(table).find('\n') + 1) +
           "if [[ ${funcstack[1]-} == _tandem ]]; then _bash_complete -F _tandem; fi\n";
}

} // namespace

void setup_completion(CLI::App& command, Action& action) {
    auto shell = std::make_shared<std::string>();
    command.add_option("SHELL", *shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
    command.footer("bash: eval \"$(tandem completion bash)\" in ~/.bashrc\n"
                   "zsh:  eval \"$(tandem completion zsh)\" in ~/.zshrc\n"
                   "fish: tandem completion fish > ~/.config/fish/completions/tandem.fish");
    command.callback([shell, &action, &command] {
        const auto table = command_table(*command.get_parent());
        std::string script = *shell == "bash" ? bash_script(table) : *shell == "zsh" ? zsh_script(table) : fish_script(table);
        action = [script](Context&) -> Result<int> {
            print_stdout(script);
            return exit_code::ok;
        };
    });
}

// `tandem __complete jobs|services|clusters|infra`: candidates, one per line, from the store and config only.
void setup_complete_helper(CLI::App& command, Action& action) {
    auto what = std::make_shared<std::string>();
    auto described = std::make_shared<bool>(false);
    command.group(""); // not listed by --help
    command.add_option("WHAT", *what)->required();
    command.add_flag("--described", *described);
    command.callback([what, described, &action] {
        action = [what, described](Context& ctx) -> Result<int> {
            std::string out;
            if (*what == "jobs") {
                auto store = ctx.store();
                if (!store) {
                    return exit_code::ok; // nothing to offer; never an error in the middle of a prompt
                }
                store::JobFilter filter;
                filter.top_level_only = false;
                auto jobs = (*store)->list(filter);
                if (jobs) {
                    for (auto it = jobs->rbegin(); it != jobs->rend(); ++it) { // newest first
                        out += std::to_string(it->id);
                        if (*described) {
                            out += "\t" + it->name + " (" + std::string(to_string(it->state)) + ")";
                        }
                        out += "\n";
                    }
                }
            } else if (*what == "services") {
                auto store = ctx.store();
                if (!store) {
                    return exit_code::ok;
                }
                if (auto services = (*store)->list_services()) {
                    for (const auto& sv : *services) {
                        out += sv.name + "\n";
                    }
                }
            } else if (*what == "clusters" || *what == "infra") {
                if (*what == "infra") {
                    for (const auto& kind : all_backend_traits()) {
                        out += std::string(kind.name) + "\n";
                    }
                }
                for (const auto& c : ctx.config().clusters) {
                    const auto& kind = traits_of(c.kind);
                    if (*what == "clusters") {
                        out += c.name + "\n";
                    } else if (kind.pins_cluster) { // infra <kind>/<cluster>, without the kind's name prefix
                        std::string_view name = c.name;
                        if (!kind.cluster_prefix.empty() && name.starts_with(kind.cluster_prefix)) {
                            name.remove_prefix(kind.cluster_prefix.size());
                        }
                        out += fmt::format("{}/{}\n", kind.name, name);
                    }
                }
            }
            print_stdout(out);
            return exit_code::ok;
        };
    });
}

} // namespace tandem::cli
