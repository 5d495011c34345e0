# shellcheck shell=bash
# Shared by scripts/testbed/k8s: settings, logging, PID-file helpers, API calls.
# Sourced, not executed.
# shellcheck disable=SC2034  # settings used by the other files

# Runtime state lives outside the git tree; $RUN is wiped on every fresh start.
# The built binaries live in $K8S_CACHE (once per machine, see build.sh).
TESTBED_ROOT=${TANDEM_TESTBED_DIR:-/tmp/tandem-testbed}
[[ $TESTBED_ROOT == /* ]] || { echo "testbed/k8s: error: TANDEM_TESTBED_DIR must be an absolute path" >&2; exit 1; }
LAB=$TESTBED_ROOT/k8s
RUN=$LAB/run
PKI=$RUN/pki
ENV_FILE=$LAB/env          # what `env` prints; exists only while the testbed is up
KNOBS_FILE=$RUN/knobs      # the knobs the running testbed was started with
# Which Kubernetes: 1.26 (the default: prebuilt binaries from ../shared/third_party/kubernetes-1.26) or
# 1.20 (the oldest supported: built from Debian 12's source package). Each has its own cache.
K8S_RELEASE=${K8S_RELEASE:-1.26}
K8S_CACHE_GIVEN=${K8S_CACHE:-}
k8s_paths() {
  case $K8S_RELEASE in
    1.26) K8S_CACHE=${K8S_CACHE_GIVEN:-/var/cache/tandem/k8s-1.26.1} ;;
    1.20) K8S_CACHE=${K8S_CACHE_GIVEN:-/var/cache/tandem/k8s-1.20.2} ;;
    *) echo "testbed/k8s: error: K8S_RELEASE must be 1.26 or 1.20, got '$K8S_RELEASE'" >&2; exit 1 ;;
  esac
  K8S_BIN=$K8S_CACHE/bin
}
k8s_paths
AGENT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../tests/k8s_agent" && pwd)
PYTHON=/usr/bin/python3    # Debian's, not a pyenv shim: the agent uses the standard library only

# Node names the agent registers (see tests/k8s_agent/nodes.py).
NODES=(cpu-node gpu-node mig-node)

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

KNOB_NAMES=(K8S_RELEASE API_PORT ETCD_PORT ETCD_PEER_PORT KCM_PORT SCHED_PORT AGENT_PORT NAMESPACE)
knob_defaults() {
  API_PORT=${API_PORT:-6443}
  ETCD_PORT=${ETCD_PORT:-2379}
  ETCD_PEER_PORT=${ETCD_PEER_PORT:-2380}
  KCM_PORT=${KCM_PORT:-10257}
  SCHED_PORT=${SCHED_PORT:-10259}
  AGENT_PORT=${AGENT_PORT:-10250}
  NAMESPACE=${NAMESPACE:-tandem-test}
  K8S_RELEASE=${K8S_RELEASE:-1.26}
  SERVER=https://127.0.0.1:$API_PORT
  k8s_paths
}
knobs_validate() {
  local n
  for n in API_PORT ETCD_PORT ETCD_PEER_PORT KCM_PORT SCHED_PORT AGENT_PORT; do
    [[ ${!n} =~ ^[0-9]+$ ]] || die "$n must be a number, got '${!n}'"
  done
  local ports=("$API_PORT" "$ETCD_PORT" "$ETCD_PEER_PORT" "$KCM_PORT" "$SCHED_PORT" "$AGENT_PORT")
  [[ $(printf '%s\n' "${ports[@]}" | sort -u | wc -l) == "${#ports[@]}" ]] || die "the ports overlap: ${ports[*]}"
  [[ $NAMESPACE =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || die "NAMESPACE must be a DNS label, got '$NAMESPACE'"
  [[ $NAMESPACE != default && $NAMESPACE != kube-* ]] || die "NAMESPACE must be a namespace of its own, not '$NAMESPACE'"
}
knobs_write() {
  local n
  for n in "${KNOB_NAMES[@]}"; do printf '%s=%s\n' "$n" "${!n}"; done >"$KNOBS_FILE"
}
knobs_load() {
  local n v
  unset "${KNOB_NAMES[@]}"
  if [[ -s $KNOBS_FILE ]]; then
    while IFS='=' read -r n v; do
      if [[ " ${KNOB_NAMES[*]} " == *" $n "* ]]; then printf -v "$n" '%s' "$v"; fi
    done <"$KNOBS_FILE"
  fi
  knob_defaults
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }
T0=$(now_ms)
since() { local d=$(($(now_ms) - $1)); printf '%d.%d' $((d / 1000)) $(((d % 1000) / 100)); }
# Progress goes to stderr: stdout of `env` is machine-read.
log() { printf '[testbed/k8s %s +%ss] %s\n' "$(date +%T)" "$(since "$T0")" "$*" >&2; }
die() { printf 'testbed/k8s: error: %s\n' "$*" >&2; exit 1; }

# apt-get, one at a time among the testbeds (the Kubernetes builds and the Slurm testbeds start side by
# side and apt-get update's lock on the lists has no timeout of its own), waiting for dpkg's locks too.
apt_get() {
  DEBIAN_FRONTEND=noninteractive flock -w 900 /var/lock/tandem-testbed-apt.lock \
    apt-get -o DPkg::Lock::Timeout=600 -o Acquire::Retries=3 "$@"
}

need_root() { [[ $(id -u) == 0 ]] || die "must run as root (it installs packages, builds into $K8S_CACHE and starts daemons)"; }

# The daemons, in start order (PID-file names).
DAEMONS=(etcd kube-apiserver kube-controller-manager kube-scheduler node-agent)

# Expected executable per PID-file name, so that a recycled PID is never taken
# for (or signalled as) one of ours.
exe_for() {
  case $1 in
    etcd) echo /usr/bin/etcd ;;
    kube-*) echo "$K8S_BIN/$1" ;;
    node-agent) echo "$PYTHON" ;;
    *) return 1 ;;
  esac
}
pid_of() {
  local f=$RUN/pids/$1.pid pid exe want
  [[ -s $f ]] || return 1
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  want=$(exe_for "$1") || return 1
  [[ ${exe% (deleted)} == "$(readlink -f "$want")" ]] || return 1
  echo "$pid"
}
alive() { pid_of "$1" >/dev/null; }

# start_daemon NAME CMD...: run CMD in its own session, output to $RUN/log/NAME.log.
# TANDEM_TESTBED_RUN marks every process of this testbed (and what the node
# agent runs for pods) for the final sweep in `down`.
start_daemon() {
  local name=$1 i
  shift
  rm -f "$RUN/pids/$name.pid"
  # shellcheck disable=SC2016  # $$ and $@ belong to the inner bash
  TANDEM_TESTBED_RUN=$RUN setsid bash -c 'echo $$ >"$0"; exec "$@"' "$RUN/pids/$name.pid" "$@" \
    </dev/null >>"$RUN/log/$name.log" 2>&1 9>&- &
  for ((i = 0; i < 100; i++)); do [[ -s $RUN/pids/$name.pid ]] && return 0; sleep 0.02; done
  die "$name did not start (see $RUN/log/$name.log)"
}

show_logs() {
  local n f
  for n in "$@"; do
    f=$RUN/log/$n.log
    [[ -s $f ]] || continue
    echo "--- last lines of $f:" >&2
    tail -n 20 "$f" >&2
  done
}

# wait_for SECONDS WHAT "DAEMON..." CMD...: poll CMD until it succeeds; fail at
# once if a DAEMON died, or after SECONDS, showing their logs.
wait_for() {
  local t=$1 what=$2 daemons end n
  read -ra daemons <<<"$3"
  shift 3
  end=$(($(date +%s) + t))
  until "$@" >/dev/null 2>&1; do
    for n in "${daemons[@]}"; do
      alive "$n" || { show_logs "$n"; die "$n exited while waiting for $what"; }
    done
    if (($(date +%s) >= end)); then
      show_logs "${daemons[@]}"
      die "timed out after ${t}s waiting for $what"
    fi
    sleep 0.2
  done
  log "$what: ready"
}

# kapi METHOD PATH [JSON]: one API call as the admin (token read from the PKI,
# passed through a header file so it never shows in the process list). Prints
# the body; fails on HTTP >= 400 (except 409 AlreadyExists for POST).
kapi() {
  local method=$1 path=$2 body=${3:-} code out
  out=$(mktemp)
  code=$(curl -sS --max-time 20 -o "$out" -w '%{http_code}' --cacert "$PKI/ca.crt" \
    -H @"$PKI/admin.header" -H 'Content-Type: application/json' -H 'Accept: application/json' \
    -X "$method" ${body:+--data-binary "$body"} "$SERVER$path") || { rm -f "$out"; return 1; }
  if ((code >= 400)) && ! [[ $method == POST && $code == 409 ]]; then
    printf 'testbed/k8s: %s %s: HTTP %s: %s\n' "$method" "$path" "$code" \
      "$(jq -r '.message // empty' "$out" 2>/dev/null)" >&2
    rm -f "$out"
    return 1
  fi
  cat "$out"
  rm -f "$out"
}

# apt_install PACKAGE...: install the ones that are missing (never with
# SKIP_APT=1). No init system here: a policy-rc.d that exits 101 keeps the
# postinsts (etcd-server's) from starting daemons behind our back.
apt_install() {
  local missing=() p own_policy=0 rc=0
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [[ ${SKIP_APT:-0} == 1 ]] && die "missing packages: ${missing[*]} (SKIP_APT=1)"
  log "installing ${missing[*]}"
  mkdir -p "$LAB"
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  { apt_get update -qq &&
    apt_get install -y -qq \
      --no-install-recommends "${missing[@]}"; } >"$LAB/apt.log" 2>&1 || rc=$?
  ((own_policy)) && rm -f /usr/sbin/policy-rc.d
  if ((rc)); then
    tail -n 25 "$LAB/apt.log" >&2
    die "apt-get failed (full output in $LAB/apt.log)"
  fi
}

api_ready() { [[ $(curl -s --max-time 2 --cacert "$PKI/ca.crt" "$SERVER/readyz" 2>/dev/null) == ok ]]; }
etcd_healthy() { curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }

# All agent nodes Ready=True.
nodes_ready() {
  local n st
  for n in "${NODES[@]}"; do
    st=$(kapi GET "/api/v1/nodes/$n" 2>/dev/null |
      jq -r '.status.conditions[]? | select(.type == "Ready") | .status') || return 1
    [[ $st == True ]] || return 1
  done
}
sa_exists() { kapi GET "/api/v1/namespaces/$1/serviceaccounts/${2:-default}" >/dev/null 2>&1; }
