# shellcheck shell=bash
# `smoke`: prove the running testbed works end to end, the way tandem's tests
# use it: REST ping, a CPU, a GPU (gres, CUDA_VISIBLE_DEVICES) and a 2-node job
# over REST, sacct, and sbatch over ssh. Jobs run as the test user.
# Sourced by scripts/testbed/slurm after lib.sh.

smoke_rest() {  # smoke_rest METHOD PATH [JSON]
  local args=(-sS --max-time 10 -X "$1" -H "X-SLURM-USER-NAME: $SLURM_JWT_USER" -H "X-SLURM-USER-TOKEN: $SLURM_JWT")
  [[ -n ${3:-} ]] && args+=(-H 'Content-Type: application/json' -d "$3")
  curl "${args[@]}" "$SLURM_REST_URL$2"
}

# smoke_submit NAME JOB_JSON_FIELDS SCRIPT: submit over REST, print the job id
smoke_submit() {
  local body id
  body=$(jq -nc --arg name "$1" --argjson extra "$2" --arg script "$3" --arg home "$SLURM_USER_HOME" \
    '{job: ({name: $name, time_limit: 2, current_working_directory: $home,
             standard_output: ($home + "/smoke-" + $name + "-%j.out"),
             environment: {PATH: "/usr/bin:/bin"}} + $extra), script: $script}')
  id=$(smoke_rest POST "/slurm/$SLURM_REST_API/job/submit" "$body" | jq -er '.job_id') ||
    die "smoke: REST submit of $1 failed"
  echo "$id"
}

# smoke_wait ID: poll REST until the job ends; it must be COMPLETED
smoke_wait() {
  local state i
  for ((i = 0; i < 150; i++)); do
    state=$(smoke_rest GET "/slurm/$SLURM_REST_API/job/$1" | jq -r '.jobs[0].job_state')
    case $state in
      COMPLETED) return 0 ;;
      PENDING | RUNNING | CONFIGURING | COMPLETING) sleep 0.2 ;;
      *) die "smoke: job $1 ended $state" ;;
    esac
  done
  die "smoke: job $1 still $state after 30 s"
}

smoke_expect() {  # smoke_expect WHAT FILE PATTERN
  grep -qE "$3" "$2" || die "smoke: $1: expected /$3/ in $2, got: $(cat "$2" 2>/dev/null)"
  log "smoke: $1: $(tr '\n' ' ' <"$2")"
}

cmd_smoke() {
  local cpu gpu two ssh_id ssh_opts i
  need_root
  # shellcheck disable=SC1090
  . <(cmd_env)
  smoke_rest GET "/slurm/$SLURM_REST_API/ping" | jq -e '.pings[0].ping == "UP"' >/dev/null ||
    die "smoke: REST ping failed"
  log "smoke: REST ping UP"
  cpu=$(smoke_submit cpu '{"partition":"cpu","tasks":1}' $'#!/bin/bash\necho "job=$SLURM_JOB_ID node=$SLURMD_NODENAME"')
  gpu=$(smoke_submit gpu '{"partition":"gpu","gres":"gpu:h100:2","tasks":1}' \
    $'#!/bin/bash\necho "node=$SLURMD_NODENAME CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"')
  two=$(smoke_submit two-node '{"partition":"cpu","nodes":[2,2],"tasks":2,"tasks_per_node":1}' \
    $'#!/bin/bash\nsrun bash -c \'echo "rank $SLURM_PROCID on $SLURMD_NODENAME"\' | sort')
  log "smoke: submitted jobs $cpu (cpu), $gpu (gpu), $two (2 nodes) over REST"
  for i in "$cpu" "$gpu" "$two"; do smoke_wait "$i"; done
  smoke_expect "cpu job $cpu" "$SLURM_USER_HOME/smoke-cpu-$cpu.out" "^job=$cpu node=cpu[12]$"
  smoke_expect "gpu job $gpu" "$SLURM_USER_HOME/smoke-gpu-$gpu.out" '^node=gpu[12] CUDA_VISIBLE_DEVICES=0,1$'
  smoke_expect "2-node job $two" "$SLURM_USER_HOME/smoke-two-node-$two.out" 'rank 0 on cpu1.*' 
  grep -q 'rank 1 on cpu2' "$SLURM_USER_HOME/smoke-two-node-$two.out" || die "smoke: 2-node job did not use cpu2"

  read -ra ssh_opts <<<"$SLURM_SSH_OPTS"
  # shellcheck disable=SC2016  # $SLURM_JOB_ID is for the job script
  ssh_id=$(printf '#!/bin/bash\n#SBATCH -J smoke-ssh -o smoke-ssh-%%j.out\necho "ssh job=$SLURM_JOB_ID"\n' |
    ssh "${ssh_opts[@]}" "$SLURM_SSH_USER@$SLURM_SSH_HOST" 'sbatch --parsable') || die "smoke: sbatch over ssh failed"
  [[ $ssh_id =~ ^[0-9]+$ ]] || die "smoke: sbatch --parsable over ssh printed '$ssh_id'"
  log "smoke: sbatch --parsable over ssh -> $ssh_id"
  smoke_wait "$ssh_id"
  smoke_expect "ssh job $ssh_id" "$SLURM_USER_HOME/smoke-ssh-$ssh_id.out" "^ssh job=$ssh_id$"

  if [[ $SLURM_ACCOUNTING == 1 ]]; then
    # Right after a job ends, sacct can lag 1-2 s (JobName shows "allocation").
    for ((i = 0; i < 25; i++)); do
      [[ $(sacct -n -X -P -j "$cpu,$gpu,$two,$ssh_id" -o State | grep -c '^COMPLETED$') == 4 ]] && break
      sleep 0.2
    done
    sacct -X -j "$cpu,$gpu,$two,$ssh_id" -o JobID,JobName,Partition,State,ExitCode,NodeList >&2
    ((i < 25)) || die "smoke: sacct does not show the 4 jobs COMPLETED"
  fi
  log "smoke: OK"
}
