#pragma once
// .gitignore rules, for choosing what of a task's workdir is uploaded to the cluster (gitignore(5)):
// blank lines and `#` comments are skipped; `!` re-includes; a trailing `/` matches folders only; a
// pattern with a `/` elsewhere is anchored to the folder of its .gitignore, one without matches a name
// at any depth; `*` and `?` do not cross `/`, `**` does (`**/x`, `x/**`, `a/**/b`); `[a-z]`, `[!a]`
// classes; `\` escapes. The last matching rule wins. As in git, a file inside an ignored folder stays
// ignored whatever a later `!` says: the walker does not descend into ignored folders.

#include <string>
#include <string_view>
#include <vector>

namespace tandem::upload {

class GitIgnore {
public:
    // The rules of the .gitignore in folder `base` ("" for the workdir itself, else "a/b").
    void add(std::string_view text, const std::string& base = "");
    // Whether `path` (relative to the workdir, '/'-separated) is ignored.
    bool ignored(std::string_view path, bool is_dir) const;

private:
    struct Rule {
        std::string base;    // "" or "a/b"
        std::string pattern; // without the leading '!' or '/', or the trailing '/'
        bool negate = false;
        bool dir_only = false;
        bool anchored = false;
    };
    std::vector<Rule> m_rules;
};

// Whether `text` matches the glob `pattern` whole (`*`, `?`, `[...]`, `**`, `\` as in gitignore).
bool glob_match(std::string_view pattern, std::string_view text);

} // namespace tandem::upload
