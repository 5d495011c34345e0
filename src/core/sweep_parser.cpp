#include "core/sweep_parser.hpp"

#include <fmt/format.h>

namespace tandem::detail {

namespace {

// A value as an element's environment sees it: the scalar as written (YAML's 0.10 stays "0.10").
std::optional<std::string> sweep_value(YamlWalker& w, const YAML::Node& node, const std::string& path) {
    if (node.IsNull()) {
        w.error(node, path, "a sweep value must not be empty (write '' for an empty string)");
        return std::nullopt;
    }
    return w.scalar(node, path);
}

void grid(YamlWalker& w, const YAML::Node& node, TaskSpec& spec) {
    std::vector<SweepAxis> axes;
    for (const auto& [key, values] : w.entries(node, "sweep")) {
        const std::string field = join_path("sweep", key.Scalar());
        spec.locations[field] = w.loc(key);
        SweepAxis axis{key.Scalar(), {}};
        if (values.IsSequence()) {
            if (values.size() > k_max_sweep_elements) {
                w.error(values, field,
                        fmt::format("{} values (at most {})", values.size(), k_max_sweep_elements));
                continue;
            }
            bool ok = true;
            for (const auto& v : values) {
                auto text = sweep_value(w, v, field);
                ok = ok && text.has_value();
                if (text) {
                    axis.second.push_back(std::move(*text));
                }
            }
            if (!ok) {
                continue;
            }
        } else if (values.IsMap()) {
            w.error(values, field, "must be a list of values ([0.1, 0.01]) or one value");
            continue;
        } else if (auto text = sweep_value(w, values, field)) {
            axis.second.push_back(std::move(*text));
        } else {
            continue;
        }
        // The axis alone: its key and values, reported where it was written.
        if (auto alone = sweep_grid({axis}); !alone) {
            w.error(key, field, alone.error());
            continue;
        }
        axes.push_back(std::move(axis));
    }
    if (axes.empty()) {
        if (node.size() == 0) {
            w.error(node, "sweep", "sets no keys to sweep over");
        }
        return;
    }
    if (auto s = sweep_grid(axes)) {
        spec.sweep = std::move(*s);
    } else {
        w.error(node, "sweep", s.error());
    }
}

void listed(YamlWalker& w, const YAML::Node& node, TaskSpec& spec) {
    if (node.size() > k_max_sweep_elements) {
        w.error(node, "sweep", fmt::format("{} elements (at most {})", node.size(), k_max_sweep_elements));
        return;
    }
    std::vector<std::vector<std::pair<std::string, std::string>>> elements;
    std::vector<YAML::Node> nodes;
    bool ok = true;
    for (std::size_t i = 0; i < node.size(); ++i) {
        const YAML::Node item = node[i];
        const std::string path = fmt::format("sweep[{}]", i);
        if (!item.IsMap()) {
            w.error(item, path,
                    fmt::format("must be a mapping of KEY: value, not a {}", YamlWalker::kind_name(item)));
            ok = false;
            continue;
        }
        std::vector<std::pair<std::string, std::string>> element;
        for (const auto& [key, value] : w.entries(item, path)) {
            auto text = sweep_value(w, value, join_path(path, key.Scalar()));
            ok = ok && text.has_value();
            if (text) {
                element.emplace_back(key.Scalar(), std::move(*text));
            }
        }
        elements.push_back(std::move(element));
        nodes.push_back(item);
    }
    if (!ok) {
        return;
    }
    if (elements.empty()) {
        w.error(node, "sweep", "lists no elements");
        return;
    }
    auto s = sweep_elements(elements);
    if (!s) {
        // "element N: ..." names the element; point at it.
        std::size_t at = 0;
        if (s.error().rfind("element ", 0) == 0) {
            at = std::strtoul(s.error().c_str() + 8, nullptr, 10);
        }
        w.error(at < nodes.size() ? nodes[at] : node, fmt::format("sweep[{}]", at), s.error());
        return;
    }
    spec.sweep = std::move(*s);
}

} // namespace

void parse_sweep_section(YamlWalker& w, const YAML::Node& node, TaskSpec& spec) {
    if (node.IsMap()) {
        grid(w, node, spec);
    } else if (node.IsSequence()) {
        listed(w, node, spec);
    } else {
        w.error(node, "sweep",
                "must be a mapping of KEY: [values] (a grid) or a list of mappings (the elements), not a " +
                    YamlWalker::kind_name(node));
    }
}

} // namespace tandem::detail
