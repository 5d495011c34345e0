#!/usr/bin/env bash
# tests/package/test_install.sh BUILD VERSION: a plain `cmake --install BUILD --prefix DIR` (no --strip) gives
# what a user copies or a package ships: bin/tandem and bin/tandem-dashboard stripped and under 15 MB, a
# tandem that runs from there and hands `tandem dashboard` to the helper beside it, the bash, zsh and fish
# completions, and a gzipped man page that man renders. Needs readelf (binutils) and man (man-db).
set -euo pipefail
build=${1:?usage: test_install.sh BUILD VERSION}
version=${2:?usage: test_install.sh BUILD VERSION}
tmp=$(mktemp -d -t tandem-install.XXXXXX)
dashboard=""
cleanup() {
  [[ -z "$dashboard" ]] || kill -TERM "$dashboard" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }
ok() { echo "ok: $*"; }
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log" >&2; exit 1; }

for program in tandem tandem-dashboard; do
  f=$prefix/bin/$program
  if [[ ! -x "$f" ]]; then
    fail "bin/$program is not installed"
    continue
  fi
  left=$(readelf -S -W "$f" | grep -oE '\.(symtab|debug_[a-z_]+)' | sort -u | tr '\n' ' ' || true)
  [[ -z "$left" ]] || fail "bin/$program is not stripped: it has $left"
  size=$(stat -c %s "$f")
  ((size < 15 * 1024 * 1024)) || fail "bin/$program is $size bytes (at most 15 MB)"
  ok "bin/$program: $size bytes, no .symtab or .debug_* sections"
done

env=(env -i PATH=/usr/bin:/bin HOME="$tmp/home" TANDEM_HOME="$tmp/tandem-home")
mkdir -p "$tmp/home"
got=$("${env[@]}" "$prefix/bin/tandem" --version) || fail "bin/tandem --version failed"
[[ "$got" == "tandem $version" ]] || fail "bin/tandem --version printed '$got', not 'tandem $version'"
ok "bin/tandem --version: $got"

# `tandem dashboard` execs the tandem-dashboard beside it, which prints its URL on stdout.
"${env[@]}" "$prefix/bin/tandem" dashboard >"$tmp/url" 2>"$tmp/dashboard.err" &
dashboard=$!
for _ in $(seq 100); do
  [[ -s "$tmp/url" ]] && break
  kill -0 "$dashboard" 2>/dev/null || break
  sleep 0.1
done
if grep -q '^http://127.0.0.1:[0-9]*/?token=' "$tmp/url"; then
  ok "bin/tandem dashboard started the installed helper: $(cut -d'?' -f1 "$tmp/url")"
else
  fail "bin/tandem dashboard printed no URL: $(cat "$tmp/url" "$tmp/dashboard.err")"
fi
# SIGTERM: a background job of a script ignores SIGINT (Ctrl-C), and so does what it execs.
kill -TERM "$dashboard" 2>/dev/null || true
wait "$dashboard" 2>/dev/null || true
dashboard=""

share=$prefix/share
completions=(bash-completion/completions/tandem zsh/vendor-completions/_tandem fish/vendor_completions.d/tandem.fish)
for f in "${completions[@]}"; do
  [[ -s "$share/$f" ]] || fail "share/$f is not installed"
done
if bash -n "$share/${completions[0]}" && grep -q 'complete -F _tandem tandem' "$share/${completions[0]}" &&
  [[ "$(head -1 "$share/${completions[1]}")" == "#compdef tandem" ]] &&
  grep -q '^complete -c tandem' "$share/${completions[2]}"; then
  ok "completions: ${completions[*]}"
else
  fail "a completion script is not what its shell loads"
fi

page=$share/man/man1/tandem.1.gz
if gzip -t "$page" 2>/dev/null; then
  page_text=$(MANWIDTH=80 man --warnings -P cat -l "$page" 2>"$tmp/man.err")
  [[ ! -s "$tmp/man.err" ]] || fail "man warns: $(cat "$tmp/man.err")"
  grep -q '^NAME$' <<<"$page_text" || fail "the man page has no NAME section"
  grep -q '^ *tandem - one task spec' <<<"$page_text" || fail "the man page's NAME line is not tandem's"
  for command in launch status logs cancel "serve up" completion; do
    grep -q "^ *tandem $command\$" <<<"$page_text" || fail "the man page has no section for tandem $command"
  done
  ok "man -l share/man/man1/tandem.1.gz: $(wc -l <<<"$page_text") lines"
else
  fail "share/man/man1/tandem.1.gz is missing or not gzip"
fi
exit "$failed"
