#pragma once
// The shell function that puts a file mount into place on a node, shared by the Slurm job script and the
// Kubernetes pod program: `tandem_mount SOURCE DESTINATION dir|file` copies an uploaded unit (a folder,
// or one file) to the destination the task wrote (absolute, `~/...`, or relative to the home folder, as
// in SkyPilot). Every file goes through a temporary name and a rename: on a shared filesystem all nodes
// write the same destination at once, and a node reading a file another node is rewriting must see the
// whole file, never a truncated one (a CI run caught a rank reading an empty file that way). The
// temporary name holds the host's name (`hostname`, else $HOSTNAME: minimal images lack the command;
// sbatch exports the login node's $HOSTNAME, so that one comes second). Needs find, cp, mv, mkdir, dirname.

#include <string_view>

namespace tandem::upload {

// Header-only: the pure script renderers (Slurm's sbatch script, Kubernetes manifests) use it without
// linking the upload library.
inline std::string_view mount_copy_function() {
    return R"sh(tandem_mount() {
    case "$2" in "~") d=$HOME ;; "~/"*) d=$HOME/${2#"~/"} ;; /*) d=$2 ;; *) d=$HOME/$2 ;; esac
    h=$(hostname 2>/dev/null) || h=${HOSTNAME:-node}
    t=".tandem-$h-$$"
    if [ "$3" = dir ]; then
        mkdir -p "$d" && (cd "$1" && find . -type d -exec mkdir -p "$d/{}" \; &&
            find . ! -type d -exec sh -c 'd=$1 t=$2; shift 2; for f; do cp -a "$f" "$d/$f$t" && mv -f "$d/$f$t" "$d/$f" || exit 1; done' tandem-mount "$d" "$t" {} +) && return 0
    else
        mkdir -p "$(dirname "$d")" && cp -a "$1" "$d$t" && mv -f "$d$t" "$d" && return 0
    fi
    echo "tandem: file_mounts: cannot copy $2 into place on $h" >&2
    return 1
}
)sh";
}

// Run in an upload cache folder before it is listed: removes the units nobody used for 30 days (every use
// touches a unit's folder) and partial uploads older than a day (a launch killed mid-stream). A job that
// waits in a queue for over 30 days may then find its file_mounts gone; nothing else reads the cache after
// submit. Errors are ignored: pruning is housekeeping, never a reason to fail a launch.
inline std::string_view cache_prune_script() {
    return "find . -mindepth 1 -maxdepth 1 \\( -name '.partial-*' -mmin +1440 -o ! -name '.*' -mtime +30 \\) "
           "-exec rm -rf {} + 2>/dev/null; true; ";
}

} // namespace tandem::upload
