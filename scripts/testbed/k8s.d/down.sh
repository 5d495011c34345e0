# shellcheck shell=bash
# `down`: stop everything `up` started, by PID file (never by process name),
# then sweep for stragglers (pod processes of the node agent). Succeeds when
# nothing runs. Leaves $RUN (logs, state) for debugging; the next `up` wipes it.
# Sourced by scripts/testbed/k8s after lib.sh.

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

# Everything carrying this testbed's marker: the daemons' children and the
# processes the node agent ran for pods (it puts the marker in their environment).
sweep_leftovers() {
  local f pid live=() st
  while IFS= read -r f; do
    pid=${f#/proc/}
    pid=${pid%/environ}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    st=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    st=${st##*) }
    [[ ${st:0:1} != Z ]] && live+=("$pid")
  done < <(grep -lzx "TANDEM_TESTBED_RUN=$RUN" /proc/[0-9]*/environ 2>/dev/null || true)
  ((${#live[@]})) || return 0
  log "KILL leftover processes: ${live[*]}"
  kill -KILL "${live[@]}" 2>/dev/null || true
}

cmd_down() {
  need_root
  rm -f "$ENV_FILE"
  if [[ ! -d $RUN/pids ]]; then
    log "nothing to stop"
    return 0
  fi
  # The agent first: on TERM it stops the pod processes it runs.
  stop_daemons node-agent
  stop_daemons kube-scheduler kube-controller-manager
  stop_daemons kube-apiserver
  stop_daemons etcd
  sweep_leftovers
  pod_bridge_down
  log "down"
}
