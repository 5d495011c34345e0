# shellcheck shell=bash
# `up`: build if needed, start etcd, the control plane and the node agent; wait
# until usable. Sourced by scripts/testbed/k8s after lib.sh, pki.sh, rbac.sh,
# build.sh and down.sh.

PACKAGES=(etcd-server curl jq openssl)

install_packages() {
  apt_install "${PACKAGES[@]}"
  [[ -x $PYTHON ]] || apt_install python3
}

all_alive() {
  local n
  for n in "${DAEMONS[@]}"; do alive "$n" || return 1; done
}

same_knobs() {
  local want have n
  want=$(for n in "${KNOB_NAMES[@]}"; do printf '%s=%s\n' "$n" "${!n}"; done)
  have=$(cat "$KNOBS_FILE" 2>/dev/null) || return 1
  [[ $want == "$have" ]]
}

check_ports_free() {
  local p
  for p in "$API_PORT" "$ETCD_PORT" "$ETCD_PEER_PORT" "$KCM_PORT" "$SCHED_PORT" "$AGENT_PORT"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      die "port $p on 127.0.0.1 is in use by something that is not this testbed; stop it or move the testbed (API_PORT ETCD_PORT ETCD_PEER_PORT KCM_PORT SCHED_PORT AGENT_PORT)"
    fi
  done
}

start_etcd() {
  start_daemon etcd /usr/bin/etcd --name tandem-testbed --data-dir "$RUN/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "tandem-testbed=http://127.0.0.1:$ETCD_PEER_PORT" \
    --listen-metrics-urls "" --log-level warn
  wait_for 30 etcd etcd etcd_healthy
}

start_apiserver() {
  start_daemon kube-apiserver "$K8S_BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --token-auth-file="$PKI/tokens.csv" \
    --authorization-mode=Node,RBAC \
    --service-account-key-file="$PKI/sa.pub" \
    --service-account-signing-key-file="$PKI/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --api-audiences=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range=10.0.0.0/24 \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" \
    --kubelet-preferred-address-types=InternalIP \
    --enable-admission-plugins=NodeRestriction \
    --endpoint-reconciler-type=none \
    --requestheader-client-ca-file="$PKI/ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
    --enable-aggregator-routing=true \
    --cert-dir="$RUN/apiserver-certs"
  wait_for 90 "kube-apiserver /readyz" "etcd kube-apiserver" api_ready
}

# The Go >= 1.18 / vendored reflect2 1.0.1 pitfall (see README.md): such an
# apiserver dies with SIGSEGV the first time it encodes a Pod with resource
# limits. A server-side dry run encodes one without storing it.
check_reflect2() {
  local pod
  pod=$(jq -n '{apiVersion: "v1", kind: "Pod", metadata: {name: "reflect2-check"},
    spec: {containers: [{name: "c", image: "none", command: ["true"],
      resources: {limits: {cpu: "1", memory: "1Gi", "nvidia.com/gpu": "1"}}}]}}')
  if ! kapi POST "/api/v1/namespaces/default/pods?dryRun=All" "$pod" >/dev/null || ! alive kube-apiserver; then
    show_logs kube-apiserver
    die "kube-apiserver failed to encode a Pod with resource limits: the binaries in $K8S_BIN were built without the reflect2 fix (scripts/testbed/k8s.d/README.md); rebuild: rm -rf $K8S_BIN && $K8S_MAIN build"
  fi
}

start_controllers() {
  # --port=0: no insecure serving (the flag exists up to v1.23; 1.24 removed it with the insecure port).
  local insecure=()
  [[ $K8S_RELEASE == 1.20 ]] && insecure=(--port=0)
  start_daemon kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig="$RUN/kubeconfig/kcm" \
    --authentication-kubeconfig="$RUN/kubeconfig/kcm" --authorization-kubeconfig="$RUN/kubeconfig/kcm" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" "${insecure[@]}" --cert-dir="$RUN/kcm-certs" \
    --leader-elect=false \
    --use-service-account-credentials=true \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --controllers='*,-nodeipam,-service,-route,-cloud-node-lifecycle' \
    --horizontal-pod-autoscaler-sync-period=3s
  start_daemon kube-scheduler "$K8S_BIN/kube-scheduler" \
    --kubeconfig="$RUN/kubeconfig/scheduler" \
    --authentication-kubeconfig="$RUN/kubeconfig/scheduler" --authorization-kubeconfig="$RUN/kubeconfig/scheduler" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" "${insecure[@]}" --cert-dir="$RUN/sched-certs" \
    --leader-elect=false
}

start_agent() {
  start_daemon node-agent "$PYTHON" -B -u "$AGENT_DIR/node_agent.py" \
    --server "$SERVER" --ca "$PKI/ca.crt" --node-tokens "$PKI/node-tokens" \
    --cert "$PKI/kubelet.crt" --key "$PKI/kubelet.key" --client-ca "$PKI/ca.crt" \
    --port "$AGENT_PORT" --state-dir "$RUN/agent" \
    --metrics-address "$POD_GATEWAY" --metrics-port "$METRICS_PORT" \
    --metrics-cert "$PKI/metrics.crt" --metrics-key "$PKI/metrics.key"
}

write_env() {
  local tmp=$ENV_FILE.tmp
  (
    umask 077
    cat >"$tmp" <<EOF
K8S_KUBECONFIG=$RUN/kubeconfig/admin
K8S_KUBECONFIG_CERT=$RUN/kubeconfig/cert
K8S_KUBECONFIG_EXEC=$RUN/kubeconfig/exec
K8S_KUBECONFIG_BADTOKEN=$RUN/kubeconfig/badtoken
K8S_SERVER=$SERVER
K8S_CA=$PKI/ca.crt
K8S_TOKEN=$(<"$PKI/admin.token")
K8S_BAD_TOKEN=$(<"$PKI/bad.token")
K8S_CLIENT_CERT=$PKI/$CERT_USER.crt
K8S_CLIENT_KEY=$PKI/$CERT_USER.key
K8S_CERT_USER=$CERT_USER
K8S_EXEC_USER=$EXEC_USER
K8S_EXEC_PLUGIN=$RUN/exec-credential
K8S_NAMESPACE=$NAMESPACE
K8S_UPLOAD_CACHE_CLAIM=$UPLOAD_CACHE_CLAIM
K8S_POD_NETWORK=$POD_NETWORK
K8S_POD_GATEWAY=$POD_GATEWAY
K8S_CUSTOM_METRICS_FILE=$RUN/agent/custom-metrics.json
K8S_UPLOAD_CACHE_DIR=$RUN/volumes/upload-cache
K8S_SERVICE_ACCOUNT=tandem
K8S_VERSION=$("$K8S_BIN/kube-apiserver" --version | awk '{print $2}')
K8S_NODES=$(IFS=,; echo "${NODES[*]}")
K8S_GPU_NODE=gpu-node
K8S_GPU_PRODUCT=NVIDIA-H100-80GB-HBM3
K8S_MIG_NODE=mig-node
K8S_MIG_RESOURCE=nvidia.com/mig-1g.10gb
K8S_NODE_AGENT_LOG=$RUN/log/node-agent.log
K8S_NODE_AGENT_DIR=$RUN/agent
K8S_APISERVER_LOG=$RUN/log/kube-apiserver.log
EOF
  )
  mv "$tmp" "$ENV_FILE"
}

wait_ready() {
  wait_for 60 "nodes ${NODES[*]} Ready" "kube-apiserver kube-controller-manager kube-scheduler node-agent" nodes_ready
  wait_for 30 "ServiceAccount $NAMESPACE/default" "kube-apiserver kube-controller-manager" sa_exists "$NAMESPACE"
}

cmd_up() {
  local t
  need_root
  knob_defaults
  knobs_validate
  if [[ ${FORCE:-0} != 1 ]] && all_alive && same_knobs && api_ready && nodes_ready; then
    write_env
    log "already up ($SERVER); env refreshed"
    return 0
  fi
  if [[ -d $RUN/pids ]]; then
    log "stopping the previous testbed first"
    (knobs_load && cmd_down)
    knob_defaults
  fi
  install_packages
  k8s_cached || cmd_build
  check_ports_free
  t=$(now_ms)
  rm -rf "$RUN"
  mkdir -p "$RUN"/{pids,log,agent}
  knobs_write
  gen_pki
  write_kubeconfigs
  start_etcd
  start_apiserver
  start_controllers
  # Pods (the dry run's too) are refused until the namespace's default ServiceAccount exists.
  wait_for 60 "ServiceAccount default/default" "kube-apiserver kube-controller-manager" sa_exists default
  check_reflect2
  apply_rbac
  apply_storage
  pod_bridge_up
  apply_aggregation
  start_agent
  wait_ready
  write_env
  log "up in $(since "$t") s: $SERVER ($(awk -F= '$1 == "K8S_VERSION" {print $2}' "$ENV_FILE")), namespace $NAMESPACE, nodes ${NODES[*]}"
}
