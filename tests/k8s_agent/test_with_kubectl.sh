#!/usr/bin/env bash
# shellcheck disable=SC2016  # the manifests hold shell code for the pods, expanded there
# The node agent checked by a client nobody here wrote: kubectl, against the
# Kubernetes testbed (scripts/testbed/k8s up). One scenario per run:
#   tests/k8s_agent/test_with_kubectl.sh SCENARIO
# Scenarios: job-completes gpu-job gpu-insufficient mig-job exit-code
#            service-endpoints hpa-custom-metric exec attach init-empty-dir init-fails logs-follow delete-kills delete-stubborn evict restart-on-failure cannot-run
#            secret-missing secret-env configmap-volume configmap-volume-missing
#            auth apiserver-restart (stops the apiserver for a while: run it alone)
# A testbed that is not up is a failure, not a skip.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SCENARIO=${1:-}

fail() { printf 'k8s-agent %s: FAIL: %s\n' "$SCENARIO" "$*" >&2; exit 1; }
note() { printf 'k8s-agent %s: %s\n' "$SCENARIO" "$*" >&2; }

envtxt=$("$ROOT/scripts/testbed/k8s" env 2>&1) ||
  fail "no Kubernetes testbed: $envtxt"
while IFS='=' read -r key value; do
  [[ $key == K8S_* ]] && export "$key=$value"
done <<<"$envtxt"
# autoscaling/v2 is GA from 1.23 (and v2beta2 gone in 1.26); 1.20 has only v2beta2.
K8S_MINOR=$(sed -E 's/^v?1\.([0-9]+).*/\1/' <<<"${K8S_VERSION:-v1.20}")
HPA_API=autoscaling/v2
((K8S_MINOR < 23)) && HPA_API=autoscaling/v2beta2
KUBECTL=${KUBECTL:-kubectl}
command -v "$KUBECTL" >/dev/null || fail "kubectl not found (set KUBECTL)"

k() { "$KUBECTL" --kubeconfig "$K8S_KUBECONFIG" -n "$K8S_NAMESPACE" --request-timeout=30s "$@"; }

NAME=ka-${SCENARIO//[^a-z0-9]/-}-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
WORK=$(mktemp -d)
cleanup() {
  k delete job "$NAME" "$NAME-after" --cascade=background --ignore-not-found --wait=false >/dev/null 2>&1 || true
  k delete deployment,service,hpa "$NAME" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  k delete secret "$NAME" --ignore-not-found >/dev/null 2>&1 || true
  k delete configmap "$NAME" --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# job NAME CONTAINER-YAML [POD-SPEC-EXTRA-YAML] [BACKOFF]: create a Job (restartPolicy $POLICY, default Never).
job() {
  k create -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $1}
spec:
  backoffLimit: ${4:-0}
  template:
    spec:
      restartPolicy: ${POLICY:-Never}
      terminationGracePeriodSeconds: 5
${3:-}
      containers:
$2
EOF
}

# pod_of JOB: the (first) pod's name, waiting up to 20 s for it to exist.
pod_of() {
  local i p
  for ((i = 0; i < 100; i++)); do
    p=$(k get pods -l "job-name=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)
    [[ -n $p ]] && { echo "$p"; return 0; }
    sleep 0.2
  done
  fail "no pod for job $1 after 20 s"
}

# wait_job JOB complete|failed
wait_job() {
  k wait --for="condition=$2" "job/$1" --timeout=60s >/dev/null ||
    fail "job $1 not $2 within 60 s: $(k get pods -l "job-name=$1" -o wide 2>&1 | tail -n +2)"
}

jp() { k get "$1" -o jsonpath="$2"; }

expect_eq() { [[ $2 == "$3" ]] || fail "$1: expected '$3', got '$2'"; }

# wait_until SECONDS WHAT CMD...: poll CMD until it succeeds.
wait_until() {
  local secs=$1 end=$(($(date +%s) + $1)) what=$2
  shift 2
  until "$@"; do
    (($(date +%s) < end)) || fail "timed out after ${secs}s waiting for $what"
    sleep 0.2
  done
}

GPU_TOLERATION='      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]'

case $SCENARIO in
  job-completes)
    job "$NAME" '      - name: main
        image: busybox
        command: [sh, -c, "echo hello from $HOSTNAME; echo pod=$(POD_NAME) in=$(POD_NS); echo cwd-is-writable > out.txt && cat out.txt"]
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: POD_NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}'
    wait_job "$NAME" complete
    pod=$(pod_of "$NAME")
    logs=$(k logs "job/$NAME")
    [[ $logs == *"hello from $pod"* ]] || fail "logs lack 'hello from $pod': $logs"
    [[ $logs == *"pod=$pod in=$K8S_NAMESPACE"* ]] || fail "fieldRef env not resolved: $logs"
    [[ $logs == *cwd-is-writable* ]] || fail "the working directory is not writable: $logs"
    expect_eq "node" "$(jp "pod/$pod" '{.spec.nodeName}')" cpu-node
    expect_eq "phase" "$(jp "pod/$pod" '{.status.phase}')" Succeeded
    expect_eq "terminated" "$(jp "pod/$pod" '{.status.containerStatuses[0].state.terminated.exitCode}/{.status.containerStatuses[0].state.terminated.reason}')" 0/Completed
    expect_eq "job succeeded" "$(jp "job/$NAME" '{.status.succeeded}')" 1
    started=$(k get events --field-selector "involvedObject.name=$pod,reason=Started" -o jsonpath='{.items[*].source.component}/{.items[*].message}')
    expect_eq "the kubelet's Started event" "$started" "kubelet/Started container main"
    ;;
  gpu-job)
    job "$NAME" '      - name: main
        image: cuda
        command: [sh, -c, "echo gpu job on $(NODE)"]
        env:
        - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        resources: {limits: {nvidia.com/gpu: 2}}' "$GPU_TOLERATION
      nodeSelector: {nvidia.com/gpu.product: $K8S_GPU_PRODUCT}"
    wait_job "$NAME" complete
    pod=$(pod_of "$NAME")
    expect_eq "node" "$(jp "pod/$pod" '{.spec.nodeName}')" gpu-node
    logs=$(k logs "$pod")
    [[ $logs == *"gpu job on gpu-node"* ]] || fail "unexpected logs: $logs"
    ;;
  gpu-insufficient)
    job "$NAME" '      - name: main
        image: cuda
        command: [sh, -c, "echo should never run"]
        resources: {limits: {nvidia.com/gpu: 16}}' "$GPU_TOLERATION"
    pod=$(pod_of "$NAME")
    events() { k get events --field-selector "involvedObject.name=$pod,reason=FailedScheduling" -o jsonpath='{.items[*].message}'; }
    has_insufficient() { [[ $(events) == *"Insufficient nvidia.com/gpu"* ]]; }
    wait_until 30 "a FailedScheduling event 'Insufficient nvidia.com/gpu'" has_insufficient
    sleep 2
    expect_eq "phase" "$(jp "pod/$pod" '{.status.phase}')" Pending
    expect_eq "node" "$(jp "pod/$pod" '{.spec.nodeName}')" ""
    note "events: $(events)"
    ;;
  mig-job)
    job "$NAME" '      - name: main
        image: cuda
        command: [sh, -c, "echo mig slice on $(NODE)"]
        env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
        resources: {limits: {nvidia.com/mig-1g.10gb: 1}}' "$GPU_TOLERATION
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}"
    wait_job "$NAME" complete
    pod=$(pod_of "$NAME")
    expect_eq "node" "$(jp "pod/$pod" '{.spec.nodeName}')" mig-node
    [[ $(k logs "$pod") == *"mig slice on mig-node"* ]] || fail "unexpected logs: $(k logs "$pod")"
    ;;
  service-endpoints)
    # Two replicas of a Deployment, each in a network namespace of its own listening on the same port,
    # ready only once their readiness probe passes; the real endpoints controller puts both addresses
    # into the Service's Endpoints, and each answers on its own address.
    k create -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $NAME}
spec:
  replicas: 2
  selector: {matchLabels: {app: $NAME}}
  template:
    metadata: {labels: {app: $NAME}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: server
        image: python
        command: [python3, -c, "import http.server,os,time\nstart=time.time()\nclass H(http.server.BaseHTTPRequestHandler):\n def do_GET(self):\n  ok=self.path!='/health' or time.time()-start>3\n  b=os.environ['HOSTNAME'].encode()\n  self.send_response(200 if ok else 503);self.end_headers();self.wfile.write(b)\n def log_message(self,*a): pass\nhttp.server.HTTPServer(('0.0.0.0',8080),H).serve_forever()"]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /health, port: http}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: $NAME}
spec:
  selector: {app: $NAME}
  ports: [{port: 80, targetPort: http}]
EOF
    eps() { k get endpoints "$NAME" -o jsonpath='{.subsets[*].addresses[*].ip}' 2>/dev/null; }
    not_ready() { k get endpoints "$NAME" -o jsonpath='{.subsets[*].notReadyAddresses[*].ip}' 2>/dev/null; }
    seen_not_ready() { [[ -n $(not_ready) ]]; }
    wait_until 30 "addresses not ready while the probe fails" seen_not_ready
    two_ready() { [[ $(eps | wc -w) == 2 ]]; }
    wait_until 40 "two ready addresses in the Endpoints" two_ready
    ips=$(eps)
    [[ $(echo "$ips" | tr ' ' '\n' | sort -u | wc -l) == 2 ]] || fail "the replicas share an address: $ips"
    for ip in $ips; do
      out=$(curl -s --max-time 5 "http://$ip:8080/") || fail "no answer from $ip:8080"
      [[ $out == "$NAME"-* ]] || fail "$ip:8080 answered '$out'"
    done
    events=$(k get events --field-selector reason=Unhealthy -o jsonpath='{.items[*].message}')
    [[ $events == *"Readiness probe failed: HTTP probe failed with statuscode: 503"* ]] || fail "no Unhealthy event: $events"
    ;;
  hpa-custom-metric)
    # The real HPA controller scales a Deployment on a per-pod metric of the custom metrics API (an
    # aggregated API the node agent serves): up to maxReplicas when the value rises, back down after the
    # scale-down stabilization window when it falls.
    metric="load-${NAME##*-}"
    set_metric() {  # VALUE: every pod of the namespace reports it for $metric
      python3 - "$K8S_CUSTOM_METRICS_FILE" "$K8S_NAMESPACE" "$metric" "$1" <<'PY'
import fcntl, json, os, sys
path, ns, metric, value = sys.argv[1:]
with open(path + ".lock", "a") as lock:  # other tests write their own metrics into the same file
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        data = json.load(open(path))
    except (OSError, ValueError):
        data = {}
    data.setdefault(ns, {})[metric] = {"*": float(value)}
    with open(path + ".tmp", "w") as out:
        json.dump(data, out)
    os.replace(path + ".tmp", path)
PY
    }
    set_metric 2
    k create -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $NAME}
spec:
  replicas: 1
  selector: {matchLabels: {app: $NAME}}
  template:
    metadata: {labels: {app: $NAME}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: main, image: busybox, command: [sleep, "600"]}
---
apiVersion: $HPA_API
kind: HorizontalPodAutoscaler
metadata: {name: $NAME}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: $NAME}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Pods
    pods: {metric: {name: $metric}, target: {type: AverageValue, averageValue: "10"}}
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0}
    scaleDown: {stabilizationWindowSeconds: 5}
EOF
    # The API has a value for a pod once it runs (as an adapter has one once the pod reports).
    metric_served() {
      raw=$(k get --raw "/apis/custom.metrics.k8s.io/v1beta1/namespaces/$K8S_NAMESPACE/pods/*/$metric?labelSelector=app%3D$NAME")
      [[ $raw == *'"metricName": "'$metric'"'* ]]
    }
    wait_until 30 "the custom metrics API serving $metric for the running pod" metric_served
    replicas() { k get deployment "$NAME" -o jsonpath='{.status.readyReplicas}'; }
    set_metric 25
    at_three() { [[ $(replicas) == 3 ]]; }
    wait_until 60 "the HPA scaling the Deployment up to 3 replicas" at_three
    set_metric 1
    at_one() { [[ $(k get deployment "$NAME" -o jsonpath='{.spec.replicas}') == 1 ]]; }
    wait_until 60 "the HPA scaling the Deployment back down to 1" at_one
    k delete hpa "$NAME" --ignore-not-found >/dev/null
    ;;
  exec)
    # kubectl exec through the real apiserver's proxy to the agent's kubelet endpoint (WebSocket, v5 or v4).
    job "$NAME" '      - name: main
        image: busybox
        command: [sh, -c, "echo ready > here.txt; sleep 120"]
        env: [{name: FROM_POD, value: pod-env}]'
    pod=$(pod_of "$NAME")
    running() { [[ $(jp "pod/$pod" '{.status.phase}') == Running ]]; }
    wait_until 20 "pod $pod Running" running
    k exec "$pod" -- sh -c 'echo out; echo err >&2; cat here.txt; echo "$FROM_POD"; exit 7' >"$WORK/out" 2>"$WORK/err" && rc=0 || rc=$?
    expect_eq "exec exit code" "$rc" 7
    expect_eq "exec stdout" "$(cat "$WORK/out")" "$(printf 'out\nready\npod-env')"
    grep -qx err "$WORK/err" || fail "exec stderr: $(cat "$WORK/err")"
    expect_eq "exec stdin" "$(printf 'a\nb\nc\n' | k exec -i "$pod" -- wc -l | tr -d ' ')" 3
    tty=$(script -qec "$KUBECTL --kubeconfig $K8S_KUBECONFIG -n $K8S_NAMESPACE exec -it $pod -- sh -c 'tty >/dev/null && echo on-a-tty; exit 4'" /dev/null </dev/null) && trc=0 || trc=$?
    [[ $tty == *on-a-tty* ]] || fail "exec -t gave no terminal: $tty"
    expect_eq "exec -t exit code" "$trc" 4
    ;;
  attach)
    # kubectl attach through the apiserver's proxy: the output from now on, and stdin for a container
    # made with stdin: true; the stream ends when the container does.
    job "$NAME" '      - name: main
        image: busybox
        stdin: true
        command: [sh, -c, "sleep 4; echo before-input; read line; echo got-$line; for i in 1 2 3; do echo tick-$i; sleep 0.3; done"]'
    pod=$(pod_of "$NAME")
    running() { [[ $(jp "pod/$pod" '{.status.phase}') == Running ]]; }
    wait_until 20 "pod $pod Running" running
    out=$( (sleep 6; echo hello-attach; sleep 5) | k attach -i "$pod" -c main 2>"$WORK/err") ||
      fail "kubectl attach failed: $(cat "$WORK/err")"
    [[ $out == *before-input* && $out == *got-hello-attach* && $out == *tick-3* ]] || fail "attach output: $out"
    wait_job "$NAME" complete
    ;;
  init-empty-dir)
    # An init container waits for a file that kubectl puts into the pod's emptyDir over exec (as tandem
    # sends a workdir); the main container starts only after it and sees the file, which never
    # appears on the host's /shared (the volume is the pod's own).
    job "$NAME" '      - name: main
        image: busybox
        command: [sh, -c, "cat /shared/sent.txt; ls /shared"]
        volumeMounts: [{name: scratch, mountPath: /shared}]' '      volumes: [{name: scratch, emptyDir: {}}]
      initContainers:
      - name: wait-upload
        image: busybox
        command: [sh, -c, "while [ ! -e /shared/.done ]; do sleep 0.2; done; echo init saw $(cat /shared/sent.txt)"]
        volumeMounts: [{name: scratch, mountPath: /shared}]'
    pod=$(pod_of "$NAME")
    init_running() { [[ $(jp "pod/$pod" '{.status.initContainerStatuses[0].state.running.startedAt}') != "" ]]; }
    wait_until 20 "init container of $pod running" init_running
    expect_eq "phase while initializing" "$(jp "pod/$pod" '{.status.phase}')" Pending
    expect_eq "main container waits" "$(jp "pod/$pod" '{.status.containerStatuses[0].state.waiting.reason}')" PodInitializing
    k get pod "$pod" >"$WORK/get"
    grep -q "Init:0/1" "$WORK/get" || fail "kubectl get pod does not show Init:0/1: $(cat "$WORK/get")"
    echo "sent-by-$NAME" >"$WORK/sent.txt"
    tar -C "$WORK" -cf - sent.txt | k exec -i "$pod" -c wait-upload -- sh -c 'tar -x -f - -C /shared && touch /shared/.done' ||
      fail "kubectl exec into the init container failed"
    wait_job "$NAME" complete
    expect_eq "init terminated" "$(jp "pod/$pod" '{.status.initContainerStatuses[0].state.terminated.exitCode}')" 0
    expect_eq "main sees the file" "$(k logs "$pod" | head -1)" "sent-by-$NAME"
    [[ $(k logs "$pod" -c wait-upload) == "init saw sent-by-$NAME" ]] || fail "init container log: $(k logs "$pod" -c wait-upload)"
    [[ ! -e /shared/sent.txt ]] || fail "the emptyDir leaked onto the host's /shared"
    ;;
  init-fails)
    job "$NAME" '      - name: main
        image: busybox
        command: [sh, -c, "echo main must not run"]' '      initContainers:
      - name: prepare
        image: busybox
        command: [sh, -c, "echo preparing failed >&2; exit 5"]'
    wait_job "$NAME" failed
    pod=$(pod_of "$NAME")
    expect_eq "phase" "$(jp "pod/$pod" '{.status.phase}')" Failed
    expect_eq "init terminated" "$(jp "pod/$pod" '{.status.initContainerStatuses[0].state.terminated.exitCode}')" 5
    expect_eq "main never started" "$(jp "pod/$pod" '{.status.containerStatuses[0].state.waiting.reason}')" PodInitializing
    [[ $(k logs "$pod" -c prepare) == *"preparing failed"* ]] || fail "init container log: $(k logs "$pod" -c prepare)"
    ;;
  exit-code)
    job "$NAME" '      - name: main
        image: busybox
        command: [sh, -c, "echo failing on purpose >&2; exit 3"]'
    wait_job "$NAME" failed
    expect_eq "job condition" "$(jp "job/$NAME" '{.status.conditions[?(@.type=="Failed")].reason}')" BackoffLimitExceeded
    pod=$(pod_of "$NAME")
    expect_eq "phase" "$(jp "pod/$pod" '{.status.phase}')" Failed
    expect_eq "terminated" "$(jp "pod/$pod" '{.status.containerStatuses[0].state.terminated.exitCode}/{.status.containerStatuses[0].state.terminated.reason}')" 3/Error
    [[ $(k logs "$pod") == *"failing on purpose"* ]] || fail "stderr is not in the log"
    ;;
  logs-follow)
    job "$NAME" '      - name: main
        image: busybox
        command: [sh, -c, "for i in 1 2 3 4 5; do echo line-$i; sleep 1; done"]'
    pod=$(pod_of "$NAME")
    running() { [[ $(jp "pod/$pod" '{.status.phase}') == Running ]]; }
    wait_until 20 "pod $pod Running" running
    # Each line stamped on arrival: streaming shows them about a second apart.
    (k logs -f "$pod" | while IFS= read -r line; do echo "$(date +%s%N) $line"; done >"$WORK/out") &
    follower=$!
    for ((i = 0; i < 300; i++)); do kill -0 "$follower" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$follower" 2>/dev/null && { kill "$follower"; fail "kubectl logs -f did not end within 30 s after the process"; }
    wait "$follower" || fail "kubectl logs -f failed"
    got=$(awk '{print $2}' "$WORK/out" | grep '^line-' | tr '\n' ' ')
    [[ $got == *"line-3 line-4 line-5 " ]] || fail "lines missing or out of order: $got"
    first=$(awk '$2 ~ /^line-/ {print $1; exit}' "$WORK/out")
    last=$(awk '$2 == "line-5" {print $1}' "$WORK/out")
    spread=$(((last - first) / 1000000))
    ((spread >= 1500)) || fail "lines came all at once (${spread} ms between first and line-5): not streamed"
    wait_job "$NAME" complete
    note "streamed: $got(${spread} ms from first to last)"
    ;;
  delete-kills)
    mark=$WORK/marker
    job "$NAME" "      - name: main
        image: busybox
        command: [sh, -c, 'echo \$\$\$\$ > $WORK/pid; while true; do date +%s%N >> $mark; sleep 0.2; done']"
    has_marker() { [[ -s $mark && -s $WORK/pid ]]; }
    wait_until 30 "the job's process to write $mark" has_marker
    pid=$(<"$WORK/pid")
    kill -0 "$pid" 2>/dev/null || fail "the job's process $pid is not running"
    k delete job "$NAME" --cascade=background >/dev/null
    no_pods() { [[ -z $(k get pods -l "job-name=$NAME" -o name 2>/dev/null) ]]; }
    wait_until 30 "the job's pods to be gone" no_pods
    ! kill -0 "$pid" 2>/dev/null || fail "process $pid still runs after its pod is gone"
    size=$(stat -c %s "$mark")
    sleep 1
    expect_eq "marker size (still written?)" "$(stat -c %s "$mark")" "$size"
    [[ -z $(k get job "$NAME" -o name --ignore-not-found) ]] || fail "job still exists"
    ;;
  delete-stubborn)
    # A process that ignores SIGTERM is killed once the grace period (5 s) is over.
    mark=$WORK/marker
    job "$NAME" "      - name: main
        image: busybox
        command: [sh, -c, 'trap \"\" TERM; echo \$\$\$\$ > $WORK/pid; while true; do date +%s%N >> $mark; sleep 0.2; done']"
    has_marker() { [[ -s $mark && -s $WORK/pid ]]; }
    wait_until 30 "the job's process to write $mark" has_marker
    pid=$(<"$WORK/pid")
    t0=$(date +%s%N)
    k delete job "$NAME" --cascade=background >/dev/null
    pid_gone() { ! kill -0 "$pid" 2>/dev/null; }
    wait_until 30 "process $pid to end" pid_gone
    waited=$((($(date +%s%N) - t0) / 1000000))
    ((waited >= 4000)) || fail "process $pid ended after ${waited} ms: SIGTERM should not have stopped it before the 5 s grace period"
    no_pods() { [[ -z $(k get pods -l "job-name=$NAME" -o name 2>/dev/null) ]]; }
    wait_until 30 "the job's pods to be gone" no_pods
    note "killed after ${waited} ms"
    ;;
  restart-on-failure)
    # restartPolicy OnFailure: the agent restarts the container in place; the first run's log stays readable.
    POLICY=OnFailure job "$NAME" "      - name: main
        image: busybox
        command: [sh, -c, 'n=\$(cat $WORK/count 2>/dev/null || echo 0); n=\$((n+1)); echo \$n > $WORK/count; echo run-\$n; test \$n -ge 2']" "" 3
    wait_job "$NAME" complete
    pod=$(pod_of "$NAME")
    expect_eq "restartCount" "$(jp "pod/$pod" '{.status.containerStatuses[0].restartCount}')" 1
    expect_eq "lastState" "$(jp "pod/$pod" '{.status.containerStatuses[0].lastState.terminated.exitCode}')" 1
    expect_eq "logs" "$(k logs "$pod")" run-2
    expect_eq "previous logs" "$(k logs --previous "$pod")" run-1
    ;;
  evict)
    # The Eviction API (a drain's call): the pod is stopped within its grace period and, as a kubelet
    # reports it under restartPolicy Never, ends Failed; from 1.26 the apiserver marks it DisruptionTarget
    # first, and a Job whose podFailurePolicy ignores that condition replaces the pod without counting it
    # (backoffLimit 0 here). Before 1.26 there is neither the condition nor the policy.
    policy=""
    ((K8S_MINOR >= 26)) && policy='  podFailurePolicy: {rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}'
    k create -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $NAME}
spec:
  backoffLimit: 0
$policy
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 5
      containers:
      - name: main
        image: busybox
        command: [sh, -c, 'if [ -e $WORK/first ]; then echo second run; exit 0; fi; touch $WORK/first; echo first run; sleep 300']
EOF
    first=$(pod_of "$NAME")
    running() { [[ $(jp "pod/$first" '{.status.phase}') == Running ]]; }
    wait_until 30 "pod $first to run" running
    # Watch the pod from now on: its last states pass quickly once the Job controller lets go of it.
    k get pod "$first" --watch -o jsonpath='{.status.phase}{" "}{.status.conditions[?(@.type=="DisruptionTarget")].reason}{"\n"}' \
      >"$WORK/watch" 2>/dev/null &
    watcher=$!
    sleep 0.5
    api=policy/v1
    ((K8S_MINOR < 22)) && api=policy/v1beta1 # policy/v1 Eviction is there from 1.22
    printf '{"apiVersion":"%s","kind":"Eviction","metadata":{"name":"%s","namespace":"%s"}}' \
      "$api" "$first" "$K8S_NAMESPACE" >"$WORK/eviction.json"
    k create --raw "/api/v1/namespaces/$K8S_NAMESPACE/pods/$first/eviction" -f "$WORK/eviction.json" >/dev/null ||
      fail "the eviction ($api) was refused"
    gone() { [[ -z $(k get pod "$first" -o name --ignore-not-found) ]]; }
    wait_until 40 "the evicted pod $first to be gone" gone
    sleep 0.5
    kill "$watcher" 2>/dev/null || true
    wait "$watcher" 2>/dev/null || true
    seen=$(tr '\n' '|' <"$WORK/watch")
    grep -q '^Failed' "$WORK/watch" || fail "the evicted pod never showed phase Failed: $seen"
    if ((K8S_MINOR >= 26)); then
      grep -q '^Failed EvictionByEvictionAPI' "$WORK/watch" ||
        fail "no DisruptionTarget (EvictionByEvictionAPI) on the Failed pod: $seen"
      wait_job "$NAME" complete
      expect_eq "failed pods counted" "$(jp "job/$NAME" '{.status.failed}')" ""
      [[ $(k logs "job/$NAME") == *"second run"* ]] || fail "the replacement pod did not run: $(k logs "job/$NAME")"
    fi
    ;;
  cannot-run)
    job "$NAME" '      - name: main
        image: busybox
        command: [/nonexistent/tandem-binary]'
    wait_job "$NAME" failed
    pod=$(pod_of "$NAME")
    expect_eq "terminated" "$(jp "pod/$pod" '{.status.containerStatuses[0].state.terminated.exitCode}/{.status.containerStatuses[0].state.terminated.reason}')" 127/ContainerCannotRun
    [[ $(k logs "$pod") == *"cannot start '/nonexistent/tandem-binary'"* ]] || fail "no start error in the log: $(k logs "$pod")"
    ;;
  secret-missing)
    # A missing Secret: the pod waits in CreateContainerConfigError (with a warning event) until it exists.
    job "$NAME" "      - name: main
        image: busybox
        command: [sh, -c, 'echo got=\$TOKEN']
        env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: $NAME, key: token}}}]"
    pod=$(pod_of "$NAME")
    waiting() { [[ $(jp "pod/$pod" '{.status.containerStatuses[0].state.waiting.reason}') == CreateContainerConfigError ]]; }
    wait_until 30 "pod $pod in CreateContainerConfigError" waiting
    expect_eq "phase" "$(jp "pod/$pod" '{.status.phase}')" Pending
    msg=$(k get events --field-selector "involvedObject.name=$pod,reason=Failed" -o jsonpath='{.items[*].type}: {.items[*].message}')
    [[ $msg == *"Warning: Error: secret '$NAME' not found"* ]] || fail "no Failed warning event naming the secret: $msg"
    k create secret generic "$NAME" --from-literal=token=late >/dev/null
    wait_job "$NAME" complete
    expect_eq "logs" "$(k logs "$pod")" got=late
    ;;
  secret-env)
    value=v-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
    k create secret generic "$NAME" --from-literal=API_KEY="$value" >/dev/null
    job "$NAME" "      - name: main
        image: busybox
        command: [sh, -c, 'echo key=\$API_KEY; echo all=\$S_API_KEY']
        env: [{name: API_KEY, valueFrom: {secretKeyRef: {name: $NAME, key: API_KEY}}}]
        envFrom: [{secretRef: {name: $NAME}, prefix: S_}]"
    wait_job "$NAME" complete
    logs=$(k logs "job/$NAME")
    [[ $logs == *"key=$value"* && $logs == *"all=$value"* ]] || fail "the secret did not reach the process: $logs"
    ;;
  configmap-volume)
    # An optional configMap volume whose ConfigMap is created after the pod runs: the agent projects it at
    # mountPath on the host (pods are host processes), like a kubelet's AtomicWriter, then follows an update.
    # A second pod mounting the same path (as the members of a job group do on this one-host cluster) keeps
    # the files after the first one ended; the directory goes with the last of them.
    dir=/var/run/tandem/$NAME
    v1=one-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
    v2=two-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
    volume="      volumes:
      - name: config
        configMap: {name: $NAME, optional: true}"
    job "$NAME" "      - name: main
        image: busybox
        command: [sh, -c, 'f=$dir/greeting; i=0; until [ -f \$f ]; do i=\$((i+1)); [ \$i -lt 300 ] || exit 7; sleep 0.2; done;
          a=\$(cat \$f); echo first=\$a link=\$(readlink \$f);
          until [ \"\$(cat \$f)\" != \"\$a\" ]; do i=\$((i+1)); [ \$i -lt 600 ] || exit 8; sleep 0.2; done; echo second=\$(cat \$f)']
        volumeMounts: [{name: config, mountPath: $dir}]" "$volume"
    job "$NAME-after" "      - name: main
        image: busybox
        command: [sh, -c, 'i=0; until [ -e $WORK/go ]; do i=\$((i+1)); [ \$i -lt 600 ] || exit 7; sleep 0.2; done; cat $dir/greeting']
        volumeMounts: [{name: config, mountPath: $dir, readOnly: true}]" "$volume"
    pod=$(pod_of "$NAME")
    running() { [[ $(jp "pod/$pod" '{.status.phase}') == Running ]]; }
    wait_until 20 "pod $pod Running" running
    [[ -d $dir ]] || fail "the optional volume's directory $dir was not created before the ConfigMap exists"
    expect_eq "files in $dir before the ConfigMap exists" "$(ls "$dir")" ""
    k create configmap "$NAME" --from-literal=greeting="$v1" >/dev/null
    has_first() { [[ $(k logs "$pod" 2>/dev/null) == *"first=$v1"* ]]; }
    wait_until 30 "the pod to read the ConfigMap's file" has_first
    k create configmap "$NAME" --from-literal=greeting="$v2" --dry-run=client -o yaml | k replace -f - >/dev/null
    wait_job "$NAME" complete
    expect_eq "logs" "$(k logs "$pod")" "first=$v1 link=..data/greeting
second=$v2"
    expect_eq "phase" "$(jp "pod/$pod" '{.status.phase}')" Succeeded
    sleep 1
    [[ -f $dir/greeting ]] || fail "$dir/greeting was removed while pod $(pod_of "$NAME-after") still mounts it"
    touch "$WORK/go"
    wait_job "$NAME-after" complete
    expect_eq "logs of the second pod" "$(k logs "job/$NAME-after")" "$v2"
    removed() { [[ ! -e $dir ]]; }
    wait_until 10 "the agent to remove $dir after the last pod ended" removed
    ;;
  configmap-volume-missing)
    # A missing non-optional ConfigMap: the pod waits in ContainerCreating with FailedMount warnings until
    # it exists; items and defaultMode shape the files.
    dir=/var/run/tandem/$NAME
    value=v-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
    job "$NAME" "      - name: main
        image: busybox
        command: [sh, -c, 'cat $dir/conf/app.ini; echo; echo mode=\$(stat -L -c %a $dir/conf/app.ini) entries=\$(ls $dir)']
        volumeMounts: [{name: config, mountPath: $dir, readOnly: true}]" "      volumes:
      - name: config
        configMap:
          name: $NAME
          defaultMode: 0400
          items: [{key: app.ini, path: conf/app.ini}]"
    pod=$(pod_of "$NAME")
    creating() { [[ $(jp "pod/$pod" '{.status.containerStatuses[0].state.waiting.reason}') == ContainerCreating ]]; }
    wait_until 30 "pod $pod in ContainerCreating" creating
    expect_eq "phase" "$(jp "pod/$pod" '{.status.phase}')" Pending
    mounts() { k get events --field-selector "involvedObject.name=$pod,reason=FailedMount" -o jsonpath='{.items[*].type}: {.items[*].message}'; }
    failed_mount() { [[ $(mounts) == *"Warning: MountVolume.SetUp failed for volume \"config\" : configmap \"$NAME\" not found"* ]]; }
    wait_until 10 "a FailedMount warning naming the ConfigMap" failed_mount
    [[ ! -e $dir ]] || fail "$dir exists before the volume could be set up"
    sleep 2
    expect_eq "phase (still)" "$(jp "pod/$pod" '{.status.phase}')" Pending
    k create configmap "$NAME" --from-literal=app.ini="$value" --from-literal=other=not-selected >/dev/null
    wait_job "$NAME" complete
    expect_eq "logs" "$(k logs "$pod")" "$value
mode=400 entries=conf"
    removed() { [[ ! -e $dir ]]; }
    wait_until 10 "the agent to remove $dir after the pod ended" removed
    note "events: $(mounts)"
    ;;
  apiserver-restart)
    # The process ends while the apiserver is down: the agent must re-watch and still report the end.
    job "$NAME" '      - name: main
        image: busybox
        command: [sh, -c, "for i in 1 2 3 4 5; do echo tick-$i; sleep 1; done"]'
    pod=$(pod_of "$NAME")
    running() { [[ $(jp "pod/$pod" '{.status.phase}') == Running ]]; }
    wait_until 20 "pod $pod Running" running
    "$ROOT/scripts/testbed/k8s" stop-api 2>/dev/null || fail "scripts/testbed/k8s stop-api failed"
    sleep 6
    "$ROOT/scripts/testbed/k8s" start-api 2>/dev/null || fail "scripts/testbed/k8s start-api failed"
    wait_job "$NAME" complete
    expect_eq "terminated" "$(jp "pod/$pod" '{.status.containerStatuses[0].state.terminated.exitCode}')" 0
    [[ $(k logs "$pod") == *tick-5* ]] || fail "log incomplete after the restart: $(k logs "$pod")"
    # A pod created after the restart runs too (the agent watches again).
    job "$NAME-after" '      - name: main
        image: busybox
        command: [echo, after the restart]'
    wait_job "$NAME-after" complete
    k delete job "$NAME-after" --cascade=background >/dev/null
    ;;
  auth)
    kc() { "$KUBECTL" --kubeconfig "$1" --request-timeout=30s "${@:2}"; }
    for user in "$K8S_KUBECONFIG_CERT" "$K8S_KUBECONFIG_EXEC"; do
      out=$(kc "$user" get pods 2>&1) || fail "$(basename "$user") user cannot list pods in $K8S_NAMESPACE: $out"
      out=$(kc "$user" get nodes 2>&1) || fail "$(basename "$user") user cannot list nodes: $out"
      out=$(kc "$user" -n kube-system get secrets 2>&1) && fail "$(basename "$user") user may read kube-system secrets"
      [[ $out == *Forbidden* || $out == *forbidden* ]] || fail "expected Forbidden, got: $out"
    done
    out=$(kc "$K8S_KUBECONFIG_BADTOKEN" get pods 2>&1) && fail "a wrong token was accepted"
    [[ $out == *Unauthorized* || $out == *"provide credentials"* ]] || fail "expected Unauthorized, got: $out"
    gpus=$(kc "$K8S_KUBECONFIG" get node gpu-node -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')
    expect_eq "gpu-node allocatable nvidia.com/gpu" "$gpus" 8
    ;;
  *)
    echo "usage: $0 job-completes|gpu-job|gpu-insufficient|mig-job|exit-code|logs-follow|delete-kills|delete-stubborn|restart-on-failure|cannot-run|secret-missing|secret-env|configmap-volume|configmap-volume-missing|auth|apiserver-restart" >&2
    exit 2
    ;;
esac
note "ok"
