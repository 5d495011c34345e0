#!/usr/bin/env bash
# tests/package/test_deb.sh BUILD VERSION: the .deb that `cpack -G DEB` makes from BUILD installs on a fresh
# Debian 12 with apt-get (which fetches its Depends from the mirror, as on a login node), and runs there:
# --version, a local job, https through the libcurl it loads at run time, the dashboard helper's libraries;
# then it is purged cleanly. The Debian 12 root is built once per machine (debian12_root.sh, ~2 min) and
# each run installs into an overlay of it (or a copy), so the cached root stays fresh. Needs root.
set -euo pipefail
build=${1:?usage: test_deb.sh BUILD VERSION}
version=${2:?usage: test_deb.sh BUILD VERSION}
here=$(cd "$(dirname "$0")" && pwd)
[[ $(id -u) -eq 0 ]] || { echo "test_deb.sh: error: needs root (chroot, mount)" >&2; exit 1; }

cached=$("$here/debian12_root.sh")
# Shared: debian12_root.sh (exclusive) does not refresh the cached root while an overlay of it is in use.
exec 9>"$cached.lock"
flock -s 9

tmp=$(mktemp -d -t tandem-deb.XXXXXX)
root=$tmp/root
cleanup() {
  mountpoint -q "$root/proc" && umount "$root/proc"
  mountpoint -q "$root" && umount "$root"
  rm -rf "$tmp"
}
trap cleanup EXIT
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }
ok() { echo "ok: $*"; }
in_root() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive chroot "$root" "$@"; }

# The package, from BUILD's install rules (the stripped programs, completions and man page).
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log" >&2; exit 1; }
deb=$(echo "$tmp"/pkg/tandem_*.deb)
[[ -f "$deb" ]] || { cat "$tmp/cpack.log" >&2; echo "FAIL: cpack made no tandem_*.deb" >&2; exit 1; }
ok "$(basename "$deb"): $(stat -c %s "$deb") bytes"
[[ "$(dpkg-deb -f "$deb" Package)" == tandem ]] || fail "Package: is not tandem"
[[ "$(dpkg-deb -f "$deb" Version)" == "$version" ]] || fail "Version: is not $version"
depends=$(dpkg-deb -f "$deb" Depends)
# libcurl4 and libssh2-1 are loaded with dlopen (listed by hand); the others come from dpkg-shlibdeps.
depends_names=$(sed 's/ *([^)]*)//g; s/, */\n/g' <<<"$depends")
for dep in libc6 libstdc++6 libfmt9 libcpp-httplib0.11 libcurl4 libssh2-1; do
  grep -qxF "$dep" <<<"$depends_names" || fail "Depends: lacks $dep: $depends"
done
ok "Depends: $depends"

# A fresh root: an overlay on the cached one (a copy where overlayfs is missing).
mkdir -p "$root" "$tmp/upper" "$tmp/work"
if ! mount -t overlay overlay -o "lowerdir=$cached,upperdir=$tmp/upper,workdir=$tmp/work" "$root" 2>/dev/null; then
  cp -a "$cached/." "$root/"
fi
mount -t proc proc "$root/proc"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
cp "$deb" "$root/tmp/"

if in_root apt-get install -y --no-install-recommends "/tmp/$(basename "$deb")" >"$tmp/apt.log" 2>&1; then
  ok "apt-get install ./$(basename "$deb"): $(grep -A3 'NEW packages' "$tmp/apt.log" | tail -n +2 | xargs)"
else
  cat "$tmp/apt.log" >&2
  fail "apt-get install of the .deb failed in a fresh Debian 12"
  exit 1
fi
[[ "$(in_root dpkg-query -W -f='${Status}' tandem)" == "install ok installed" ]] || fail "dpkg: tandem not installed"
got=$(in_root tandem --version 2>&1) || fail "tandem --version failed: $got"
[[ "$got" == "tandem $version" ]] || fail "tandem --version printed '$got'"
ok "tandem --version in Debian 12: $got"

files=$(in_root dpkg -L tandem)
for f in /usr/bin/tandem /usr/bin/tandem-dashboard /usr/share/man/man1/tandem.1.gz \
  /usr/share/bash-completion/completions/tandem /usr/share/zsh/vendor-completions/_tandem \
  /usr/share/fish/vendor_completions.d/tandem.fish; do
  grep -qx "$f" <<<"$files" || fail "the package has no $f"
done
missing=$(in_root ldd /usr/bin/tandem /usr/bin/tandem-dashboard | grep 'not found' || true)
[[ -z "$missing" ]] || fail "libraries not found: $missing"
# Read whole before grep: `grep -q` stops at the first match, and under pipefail the SIGPIPE that then
# ends ldconfig would fail the check now and then.
cache=$(in_root ldconfig -p)
for so in libcurl.so.4 libssh2.so.1; do
  grep -q "^[[:space:]]*$so " <<<"$cache" || fail "$so (loaded at run time) is not installed"
done
ok "both programs' libraries and libcurl.so.4, libssh2.so.1 are installed"

# A local job, and https through libcurl (nothing listens on port 1: curl's own error, not a load error).
mkdir -p "$root/tmp/th"
cat >"$root/tmp/th/config.yaml" <<'EOF'
clusters:
  - name: here
    type: local
  - name: over-https
    type: slurm
    rest: {url: "https://127.0.0.1:1", user: nobody, token_env: T}
EOF
printf 'name: hello\nrun: echo "hello from $TANDEM_JOB_ID"\n' >"$root/tmp/hello.yaml"
tandem_env=(env TANDEM_HOME=/tmp/th T=x)
if out=$(in_root "${tandem_env[@]}" tandem launch --wait --infra local /tmp/hello.yaml 2>&1) &&
  log=$(in_root "${tandem_env[@]}" tandem logs 1 2>&1) && grep -q '^hello from 1$' <<<"$log"; then
  ok "a local job ran: $log"
else
  fail "a local job failed: $out $log"
fi
check=$(in_root "${tandem_env[@]}" tandem check 2>&1 || true)
if grep -q 'over-https.*Failed to connect' <<<"$check" && ! grep -q 'cannot load' <<<"$check"; then
  ok "https went through libcurl: $(grep -o 'Failed to connect[^(]*' <<<"$check")"
else
  fail "tandem check over https: $check"
fi

in_root apt-get purge -y tandem >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log" >&2; fail "apt-get purge tandem failed"; }
[[ ! -e "$root/usr/bin/tandem" ]] || fail "purge left /usr/bin/tandem"
ok "apt-get purge tandem"
exit "$failed"
