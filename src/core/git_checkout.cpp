#include "core/git_checkout.hpp"

namespace tandem {

namespace {

// A ref that looks like a commit is first tried as a branch or tag (as SkyPilot resolves it), then
// fetched in full and checked out. git's own messages reach the job's output unchanged.
constexpr const char* k_function = R"SH(tandem_git_checkout() {
    local dir="$1" url="${TANDEM_GIT_URL:?}" ref="${TANDEM_GIT_REF:-}" key="" rc=0
    if ! command -v git >/dev/null 2>&1; then
        echo "tandem: git is not installed where the job runs; a git workdir needs it" >&2
        return 127
    fi
    mkdir -p "$(dirname "$dir")" || return 1
    if [ -n "${GIT_SSH_KEY:-}" ]; then
        key=$(mktemp) && chmod 600 "$key" && printf '%s\n' "$GIT_SSH_KEY" > "$key" || return 1
        export GIT_SSH_COMMAND="ssh -i $key -o IdentitiesOnly=yes -o StrictHostKeyChecking=accept-new"
    fi
    if [ -n "${GIT_TOKEN:-}" ] && [ "${url#https://}" != "$url" ]; then
        export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.extraHeader
        GIT_CONFIG_VALUE_0="Authorization: Basic $(printf 'x-access-token:%s' "$GIT_TOKEN" | base64 | tr -d '\n')"
        export GIT_CONFIG_VALUE_0
    fi
    echo "tandem: cloning $url${ref:+ at $ref} into $dir" >&2
    if [ -z "$ref" ]; then
        git clone --quiet --depth 1 -- "$url" "$dir" || rc=$?
    elif git clone --quiet --depth 1 --branch "$ref" -- "$url" "$dir" 2>"$dir.err"; then
        rc=0
    elif printf '%s' "$ref" | grep -Eq '^[0-9a-fA-F]{4,40}$'; then
        rm -rf -- "$dir"
        { git clone --quiet --no-checkout -- "$url" "$dir" &&
            git -C "$dir" checkout --quiet --detach "$ref"; } || rc=$?
    else
        rc=128
        cat "$dir.err" >&2
    fi
    rm -f -- "$dir.err"
    [ -n "$key" ] && rm -f -- "$key"
    unset GIT_SSH_COMMAND GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0
    if [ "$rc" -ne 0 ]; then
        echo "tandem: the git workdir $url${ref:+ ($ref)} could not be cloned (git exit $rc); setup and run did not start" >&2
        return "$rc"
    fi
    echo "tandem: workdir at $(git -C "$dir" rev-parse HEAD)" >&2
}
)SH";

} // namespace

std::string git_checkout_function() {
    return k_function;
}

std::vector<std::pair<std::string, std::string>> git_checkout_environment(const GitWorkdir& git) {
    return {{"TANDEM_GIT_URL", git.url}, {"TANDEM_GIT_REF", git.ref}, {"GIT_URL", git.url}};
}

} // namespace tandem
