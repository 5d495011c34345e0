# shellcheck shell=bash
# `down`: stop everything `up` started, by PID file (never by process name),
# then sweep for stragglers. Succeeds when nothing runs. Leaves $RUN (logs,
# state) for debugging; the next `up` wipes it.
# Sourced by scripts/testbed/slurm after lib.sh.

# sweep_leftovers: SIGKILL what is left once the daemons are gone:
#  - processes carrying this testbed's marker (set by start_daemon, inherited
#    by slurmstepd and anything else the daemons fork);
#  - job processes of this cluster: jobs get a fresh environment, but Slurm
#    puts SLURM_CLUSTER_NAME in it;
#  - processes of the test user and the other user (ssh sessions, jobs): the
#    accounts exist only for this testbed. sshd session processes overwrite
#    their environment (proctitle), so the marker does not find them.
# One grep over /proc/*/environ: a loop of readlink/tr over /proc took seconds
# on a loaded machine.
sweep_leftovers() {
  local f pid pids=()
  while IFS= read -r f; do
    pid=${f#/proc/}
    pid=${pid%/environ}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    pids+=("$pid")
  done < <(grep -lzxE "TANDEM_TESTBED_RUN=$RUN|SLURM_CLUSTER_NAME=$CLUSTER" /proc/[0-9]*/environ 2>/dev/null || true)
  local u
  for u in "$TEST_USER" "$OTHER_USER"; do
    if id -u "$u" >/dev/null 2>&1; then
      mapfile -t -O "${#pids[@]}" pids < <(pgrep -u "$u" || true)
    fi
  done
  # Zombies are already dead (init reaps them); do not report them.
  local live=() st
  for pid in "${pids[@]}"; do
    st=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    st=${st##*) }  # the state follows "(comm) ", and comm may contain spaces
    [[ ${st:0:1} != Z ]] && live+=("$pid")
  done
  ((${#live[@]})) || return 0
  log "KILL leftover processes: ${live[*]}"
  kill -KILL "${live[@]}" 2>/dev/null || true
}

cmd_down() {
  local jobs n slurmds=() i pid
  need_root
  rm -f "$ENV_FILE"
  if [[ ! -d $RUN/pids ]]; then
    log "nothing to stop"
    return 0
  fi
  # 1. Cancel all jobs while slurmctld is up, so that slurmstepd and the job
  #    processes end the normal way (and are recorded as CANCELLED).
  if alive slurmctld && ctld_up; then
    jobs=$(squeue -h -o %A 2>/dev/null | tr '\n' ' ' || true)
    if [[ -n ${jobs// /} ]]; then
      log "cancelling jobs: $jobs"
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        [[ -z $(squeue -h -t R,CG -o %A 2>/dev/null) ]] && break
        sleep 0.2
      done
    fi
  fi
  # 2. Front ends, nodes and controller together (each takes 1-3 s to exit),
  #    then slurmdbd (after slurmctld has flushed to it), then DB and munge.
  for n in "${NODES[@]}"; do slurmds+=("slurmd-$n"); done
  # Open ssh sessions outlive the sshd that accepted them: end them first
  # (each connection is a child of the listening sshd).
  if pid=$(pid_of sshd); then pkill -TERM -P "$pid" 2>/dev/null || true; fi
  stop_daemons sshd slurmrestd slurmctld "${slurmds[@]}"
  stop_daemons slurmdbd
  stop_daemons mariadbd munged
  # 3. Anything left: slurmstepd whose slurmd is gone, job processes, ssh sessions.
  sweep_leftovers
  log "down"
}
