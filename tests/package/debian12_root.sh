#!/usr/bin/env bash
# tests/package/debian12_root.sh: makes, if missing, a minimal Debian 12 (bookworm) root for installing
# tandem's .deb the way a fresh login node would, and prints its path. Built once per machine with
# debootstrap from the mirror the host's apt already uses (about 2 minutes), cached in
# $TANDEM_DEBIAN12_ROOT (default /var/cache/tandem/debian12-root); its apt lists are refreshed when older
# than a day. Tests work on an overlay or a copy of it (test_deb.sh), never on the root itself.
set -euo pipefail

R=${TANDEM_DEBIAN12_ROOT:-/var/cache/tandem/debian12-root}
say() { printf '[debian12-root %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'debian12-root: error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || die "debootstrap is missing (scripts/install-deps installs it)"
mkdir -p "$(dirname "$R")"
# Two test runs at once build it once.
exec 9>"$R.lock"
flock 9

in_root() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive chroot "$R" "$@"; }

if [[ ! -x "$R/usr/bin/apt-get" ]]; then
  # The mirror the host's apt already uses; the host's own sources are never touched.
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1 || true)
  [[ -n "$mirror" ]] || mirror=$(awk '$1=="deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [[ -n "$mirror" ]] || mirror=http://deb.debian.org/debian
  say "debootstrap bookworm from $mirror into $R (about 2 minutes, once)"
  rm -rf "$R.partial"
  debootstrap --variant=minbase bookworm "$R.partial" "$mirror" >"$R.build.log" 2>&1 ||
    die "debootstrap failed (log: $R.build.log)"
  # The suites of a real Debian 12: point-release updates and security updates too.
  security=$(sed -n 's/^URIs: *\([^ ]*security[^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 || true)
  {
    echo "deb $mirror bookworm main"
    echo "deb $mirror bookworm-updates main"
    [[ -z "$security" ]] || echo "deb $security bookworm-security main"
  } >"$R.partial/etc/apt/sources.list"
  mv "$R.partial" "$R"
  rm -f "$R.updated" # debootstrap's lists have bookworm main only: fetch them all below
fi
# Packages the mirror dropped since the lists were fetched would 404: refresh lists older than a day.
if [[ -z "$(find "$R.updated" -mmin -1440 2>/dev/null)" ]]; then
  say "apt-get update in $R"
  cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
  in_root apt-get update -qq >>"$R.build.log" 2>&1 || die "apt-get update in $R failed (log: $R.build.log)"
  touch "$R.updated"
fi
echo "$R"
