# shellcheck shell=bash
# Shared by scripts/testbed/slurm: settings, logging, PID-file helpers.
# Sourced, not executed.
# shellcheck disable=SC2034  # settings used by the other files

# Runtime state lives outside the git tree. $LAB/run is wiped on every fresh
# start; $LAB/cache (the initialised MariaDB datadir) survives.
TESTBED_ROOT=${TANDEM_TESTBED_DIR:-/tmp/tandem-testbed}
# Absolute, because the paths end up in config files read by daemons.
[[ $TESTBED_ROOT == /* ]] || { echo "testbed/slurm: error: TANDEM_TESTBED_DIR must be an absolute path" >&2; exit 1; }
LAB=$TESTBED_ROOT/slurm
RUN=$LAB/run
CACHE=$LAB/cache
ENV_FILE=$LAB/env          # what `env` prints; exists only while the testbed is up
KNOBS_FILE=$RUN/knobs      # the knobs the running testbed was started with

REST_API=v0.0.38
REST_DB_API=dbv0.0.38
REST_USER=slurmrestd       # slurmrestd refuses to run as root
ACCOUNT=testbed
NODES=(cpu1 cpu2 gpu1 gpu2)
PARTITIONS=cpu,gpu,batch
DEFAULT_PARTITION=cpu
GPU_PARTITION=gpu
GPU_GRES=gpu:h100:8        # per gpu node
DB_PASS=tandemtestbed      # loopback-only MariaDB, throwaway data

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The knobs that shape the running cluster. `up` takes them from the caller's
# environment; every other subcommand reads them back from $KNOBS_FILE, so that
# e.g. `env` and `down` agree with what is actually running.
KNOB_NAMES=(WITH_DB MIN_JOB_AGE CLUSTER TEST_USER OTHER_USER REST_PORT SSH_PORT CTLD_PORT DBD_PORT DB_PORT SLURMD_BASE_PORT)
knob_defaults() {
  WITH_DB=${WITH_DB:-1}
  MIN_JOB_AGE=${MIN_JOB_AGE:-300}
  CLUSTER=${CLUSTER:-tandem}
  TEST_USER=${TEST_USER:-slurmtest}
  OTHER_USER=${OTHER_USER:-slurmtest2}  # a second ordinary user (jobs of someone else)
  REST_PORT=${REST_PORT:-6820}
  SSH_PORT=${SSH_PORT:-2222}
  CTLD_PORT=${CTLD_PORT:-6817}
  DBD_PORT=${DBD_PORT:-6819}
  DB_PORT=${DB_PORT:-3307}
  SLURMD_BASE_PORT=${SLURMD_BASE_PORT:-17001}
}
knobs_validate() {
  local n
  for n in REST_PORT SSH_PORT CTLD_PORT DBD_PORT DB_PORT SLURMD_BASE_PORT MIN_JOB_AGE; do
    [[ ${!n} =~ ^[0-9]+$ ]] || die "$n must be a number, got '${!n}'"
  done
  local ports=("$REST_PORT" "$SSH_PORT" "$CTLD_PORT" "$DBD_PORT" "$DB_PORT")
  for ((n = 0; n < ${#NODES[@]}; n++)); do ports+=($((SLURMD_BASE_PORT + n))); done
  [[ $(printf '%s\n' "${ports[@]}" | sort -u | wc -l) == "${#ports[@]}" ]] ||
    die "the ports overlap: ${ports[*]} (slurmd use SLURMD_BASE_PORT.. +${#NODES[@]})"
  [[ $WITH_DB == [01] ]] || die "WITH_DB must be 0 or 1"
  # slurmctld 22.05.8 clamps MinJobAge below 2 to 2 ("MinJobAge must be at least
  # 2"); 0 does NOT mean "keep forever" despite the man page. Refuse instead of
  # silently running with another value.
  ((MIN_JOB_AGE >= 2)) || die "MIN_JOB_AGE must be >= 2 (slurmctld clamps smaller values to 2)"
  [[ $CLUSTER =~ ^[a-z][a-z0-9_]*$ ]] || die "CLUSTER must be lower case [a-z0-9_]"
  [[ $TEST_USER =~ ^[a-z_][a-z0-9_-]*$ ]] || die "TEST_USER is not a valid user name"
  [[ $OTHER_USER =~ ^[a-z_][a-z0-9_-]*$ ]] || die "OTHER_USER is not a valid user name"
  [[ $OTHER_USER != "$TEST_USER" ]] || die "OTHER_USER must differ from TEST_USER ($TEST_USER)"
}
knobs_write() {
  local n
  for n in "${KNOB_NAMES[@]}"; do printf '%s=%s\n' "$n" "${!n}"; done >"$KNOBS_FILE"
}
# Load the running testbed's knobs (values are validated, plain words).
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
# Progress goes to stderr: stdout of `env` and `token` is machine-read.
log() { printf '[testbed/slurm %s +%ss] %s\n' "$(date +%T)" "$(since "$T0")" "$*" >&2; }
die() { printf 'testbed/slurm: error: %s\n' "$*" >&2; exit 1; }

# apt-get, one at a time among the testbeds (the Kubernetes builds and the Slurm testbeds start side by
# side and apt-get update's lock on the lists has no timeout of its own), waiting for dpkg's locks too.
apt_get() {
  DEBIAN_FRONTEND=noninteractive flock -w 900 /var/lock/tandem-testbed-apt.lock \
    apt-get -o DPkg::Lock::Timeout=600 -o Acquire::Retries=3 "$@"
}

need_root() { [[ $(id -u) == 0 ]] || die "must run as root (it installs packages, writes /etc/slurm and starts daemons)"; }

# Expected executable per PID-file name, so that a recycled PID is never taken
# for (or signalled as) one of ours.
exe_for() {
  case $1 in
    munged) echo /usr/sbin/munged ;;
    mariadbd) echo /usr/sbin/mariadbd ;;
    slurmdbd) echo /usr/sbin/slurmdbd ;;
    slurmctld) echo /usr/sbin/slurmctld ;;
    slurmd-*) echo /usr/sbin/slurmd ;;
    slurmrestd) echo /usr/sbin/slurmrestd ;;
    sshd) echo /usr/sbin/sshd ;;
    *) return 1 ;;
  esac
}
# pid_of NAME: print the PID if $RUN/pids/NAME.pid names a live process of the
# right binary. Debian's /usr/sbin/slurmd and slurmctld are alternatives
# symlinks (-> slurmd-wlm, slurmctld-wlm), hence readlink -f on the expected path.
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

# The daemons of the running testbed, in start order.
daemon_names() {
  local n
  echo munged
  if [[ $WITH_DB == 1 ]]; then echo mariadbd; echo slurmdbd; fi
  echo slurmctld
  for n in "${NODES[@]}"; do echo "slurmd-$n"; done
  echo slurmrestd
  echo sshd
}

# stop_daemons NAME...: SIGTERM all of them at once, wait up to 10 s, then SIGKILL.
stop_daemons() {
  local n pid pids=() i alive_any
  for n in "$@"; do
    if pid=$(pid_of "$n"); then
      kill -TERM "$pid" 2>/dev/null && pids+=("$pid") && log "TERM $n ($pid)"
    fi
  done
  if ((${#pids[@]})); then
    for ((i = 0; i < 100; i++)); do
      alive_any=0
      for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive_any=1; done
      ((alive_any)) || break
      sleep 0.1
    done
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null && { log "KILL $pid (did not stop within 10 s)"; kill -KILL "$pid" 2>/dev/null; }
    done
  fi
  for n in "$@"; do rm -f "$RUN/pids/$n.pid"; done
}

# start_daemon NAME LOGFILE CMD...: run CMD in the foreground of its own
# session (no systemd here). `exec` keeps the PID, so the PID file holds the
# daemon's own PID. TANDEM_TESTBED_RUN marks every process of this testbed
# (daemons and everything they fork, e.g. slurmstepd and sshd sessions) for
# the final sweep in `down`; the calling shell itself is not marked.
start_daemon() {
  local name=$1 logf=$2 i
  shift 2
  rm -f "$RUN/pids/$name.pid"
  # shellcheck disable=SC2016  # $$ and $@ belong to the inner bash
  # 9>&-: the daemons must not inherit the lock taken by the main script.
  TANDEM_TESTBED_RUN=$RUN setsid bash -c 'echo $$ >"$0"; exec "$@"' "$RUN/pids/$name.pid" "$@" \
    </dev/null >>"$logf" 2>&1 9>&- &
  for ((i = 0; i < 100; i++)); do [[ -s $RUN/pids/$name.pid ]] && return 0; sleep 0.02; done
  die "$name did not start (see $logf)"
}

# show_logs NAME...: the end of each daemon's log files ($RUN/log/NAME.out holds
# what the daemon printed before its own log file was open, e.g. config errors).
show_logs() {
  local n f
  for n in "$@"; do
    for f in "$RUN/log/$n.out" "$RUN/log/$n.log"; do
      [[ -s $f ]] || continue
      echo "--- last lines of $f:" >&2
      tail -n 20 "$f" >&2
    done
  done
}

# wait_for SECONDS WHAT "DAEMON..." CMD...: poll CMD until it succeeds. Fail at
# once if one of the DAEMONs (PID-file names) has died, or after SECONDS, and
# show their logs, which is nearly always where the reason is.
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

ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }

# mint_token LIFESPAN [USER]: a JWT for USER (default $TEST_USER). Only root or
# SlurmUser may mint a token for another user.
mint_token() {
  local jwt
  jwt=$(scontrol token username="${2:-$TEST_USER}" lifespan="$1" 2>/dev/null | sed -n 's/^SLURM_JWT=//p')
  [[ -n $jwt ]] || return 1
  echo "$jwt"
}

rest_ping() {  # rest_ping JWT
  curl -sf --max-time 5 -H "X-SLURM-USER-NAME: $TEST_USER" -H "X-SLURM-USER-TOKEN: $1" \
    "http://127.0.0.1:$REST_PORT/slurm/$REST_API/ping" | jq -e '.pings[0].ping == "UP"'
}

ssh_opts() {
  echo "-p $SSH_PORT -i $RUN/ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes -o UserKnownHostsFile=$RUN/ssh/known_hosts -o StrictHostKeyChecking=yes"
}
