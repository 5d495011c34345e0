# shellcheck shell=bash
# The test namespace, its ServiceAccount and the RBAC rights of the non-admin
# users (client certificate, exec plugin, ServiceAccount). Applied as the
# admin through the REST API (curl), so `up` does not need kubectl.
# Sourced by scripts/testbed/k8s after lib.sh and pki.sh.

# What a tandem user may do in $NAMESPACE: run Jobs, read their pods, logs and
# events, manage the headless Services, Secrets and ConfigMaps a task needs,
# and serve: Deployments (reading their ReplicaSets), HorizontalPodAutoscalers,
# the custom metrics they scale on.
runner_role() {
  jq -n --arg ns "$NAMESPACE" '{
    apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role",
    metadata: {name: "tandem-runner", namespace: $ns},
    rules: [
      {apiGroups: ["batch"], resources: ["jobs"], verbs: ["get", "list", "watch", "create", "delete"]},
      {apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch", "delete"]},
      {apiGroups: [""], resources: ["pods/log"], verbs: ["get"]},
      {apiGroups: [""], resources: ["pods/exec", "pods/attach"], verbs: ["get", "create"]},
      {apiGroups: [""], resources: ["events"], verbs: ["get", "list", "watch"]},
      {apiGroups: [""], resources: ["services", "secrets", "configmaps"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]},
      {apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get", "list", "watch"]},
      {apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]},
      {apiGroups: ["apps"], resources: ["replicasets"], verbs: ["get", "list", "watch"]},
      {apiGroups: ["autoscaling"], resources: ["horizontalpodautoscalers"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]},
      {apiGroups: ["custom.metrics.k8s.io"], resources: ["*"], verbs: ["get", "list"]}
    ]}'
}

# Cluster-wide read of nodes (GPU inventory) and of the API's version.
node_reader_role() {
  jq -n '{
    apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole",
    metadata: {name: "tandem-node-reader"},
    rules: [{apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch"]}]}'
}

subjects() {
  jq -n --arg ns "$NAMESPACE" --arg cert "$CERT_USER" --arg exec "$EXEC_USER" '[
    {kind: "User", apiGroup: "rbac.authorization.k8s.io", name: $cert},
    {kind: "User", apiGroup: "rbac.authorization.k8s.io", name: $exec},
    {kind: "ServiceAccount", name: "tandem", namespace: $ns}]'
}

apply_rbac() {
  local subj
  subj=$(subjects)
  kapi POST /api/v1/namespaces "$(jq -n --arg ns "$NAMESPACE" '{apiVersion: "v1", kind: "Namespace", metadata: {name: $ns}}')" >/dev/null &&
    kapi POST "/api/v1/namespaces/$NAMESPACE/serviceaccounts" \
      "$(jq -n '{apiVersion: "v1", kind: "ServiceAccount", metadata: {name: "tandem"}}')" >/dev/null &&
    kapi POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$NAMESPACE/roles" "$(runner_role)" >/dev/null &&
    kapi POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$NAMESPACE/rolebindings" \
      "$(jq -n --argjson s "$subj" '{apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding",
        metadata: {name: "tandem-runner"}, subjects: $s,
        roleRef: {apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "tandem-runner"}}')" >/dev/null &&
    kapi POST /apis/rbac.authorization.k8s.io/v1/clusterroles "$(node_reader_role)" >/dev/null &&
    kapi POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings \
      "$(jq -n --argjson s "$subj" '{apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding",
        metadata: {name: "tandem-node-reader"}, subjects: $s,
        roleRef: {apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "tandem-node-reader"}}')" >/dev/null ||
    die "could not create the namespace $NAMESPACE and its RBAC objects"
  log "namespace $NAMESPACE, ServiceAccount tandem, RBAC for $CERT_USER, $EXEC_USER and the ServiceAccount"
}

# A shared volume the admin gives the team, as a cluster with a ReadWriteMany storage class would: a
# hostPath PersistentVolume (the node agent bind-mounts its folder into the pods that claim it) bound
# ahead to the claim $UPLOAD_CACHE_CLAIM in $NAMESPACE. tandem's upload cache (upload_cache_claim) uses it.
UPLOAD_CACHE_CLAIM=tandem-upload-cache
apply_storage() {
  local pv=tandem-upload-cache-$NAMESPACE
  mkdir -p "$RUN/volumes/upload-cache"
  kapi POST /api/v1/persistentvolumes "$(jq -n --arg pv "$pv" --arg ns "$NAMESPACE" --arg claim "$UPLOAD_CACHE_CLAIM" \
    --arg path "$RUN/volumes/upload-cache" '{apiVersion: "v1", kind: "PersistentVolume", metadata: {name: $pv},
      spec: {capacity: {storage: "5Gi"}, accessModes: ["ReadWriteMany"], storageClassName: "tandem-manual",
        persistentVolumeReclaimPolicy: "Retain", hostPath: {path: $path, type: "DirectoryOrCreate"},
        claimRef: {namespace: $ns, name: $claim}}}')" >/dev/null &&
    kapi POST "/api/v1/namespaces/$NAMESPACE/persistentvolumeclaims" "$(jq -n --arg pv "$pv" --arg claim "$UPLOAD_CACHE_CLAIM" \
      '{apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: {name: $claim},
        spec: {accessModes: ["ReadWriteMany"], storageClassName: "tandem-manual", volumeName: $pv,
          resources: {requests: {storage: "5Gi"}}}}')" >/dev/null ||
    die "could not create the PersistentVolume $pv and its claim $NAMESPACE/$UPLOAD_CACHE_CLAIM"
  log "PersistentVolume $pv (hostPath $RUN/volumes/upload-cache) for the claim $NAMESPACE/$UPLOAD_CACHE_CLAIM"
}

# The pod network (tests/k8s_agent/podnet.py sets up each pod on it): a bridge with the gateway address,
# made here so that test servers can listen on the gateway before the first pod exists. Pods reach the
# host at $POD_GATEWAY; the host reaches every pod at its address.
POD_BRIDGE=tandem0
POD_NETWORK=10.244.0.0/24
POD_GATEWAY=10.244.0.1
pod_bridge_up() {
  ip link show "$POD_BRIDGE" >/dev/null 2>&1 || ip link add "$POD_BRIDGE" type bridge || die "cannot create the bridge $POD_BRIDGE"
  ip -o addr show dev "$POD_BRIDGE" | grep -q " $POD_GATEWAY/" || ip addr add "$POD_GATEWAY/24" dev "$POD_BRIDGE" ||
    die "cannot give $POD_BRIDGE the address $POD_GATEWAY"
  ip link set "$POD_BRIDGE" up
  log "pod network $POD_NETWORK on bridge $POD_BRIDGE (gateway $POD_GATEWAY)"
}
pod_bridge_down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^tp-/ {print $1}'); do ip netns del "$ns" 2>/dev/null || true; done
  ip link del "$POD_BRIDGE" 2>/dev/null || true
}

# The custom metrics API (custom.metrics.k8s.io/v1beta1), served by the node agent on the pod gateway
# (tests/k8s_agent/custom_metrics.py) and registered as an aggregated API: a Service without selector
# whose Endpoints name the gateway (the apiserver routes to endpoints: --enable-aggregator-routing), and
# the APIService with the testbed CA to verify the agent's certificate.
METRICS_SERVICE=tandem-custom-metrics
METRICS_PORT=10260
apply_aggregation() {
  local ca
  ca=$(base64 -w0 <"$PKI/ca.crt")
  kapi POST /api/v1/namespaces/kube-system/services "$(jq -n --arg n "$METRICS_SERVICE" --argjson p "$METRICS_PORT" \
    '{apiVersion: "v1", kind: "Service", metadata: {name: $n}, spec: {ports: [{port: 443, targetPort: $p}]}}')" >/dev/null &&
    kapi POST /api/v1/namespaces/kube-system/endpoints "$(jq -n --arg n "$METRICS_SERVICE" --arg ip "$POD_GATEWAY" \
      --argjson p "$METRICS_PORT" '{apiVersion: "v1", kind: "Endpoints", metadata: {name: $n},
        subsets: [{addresses: [{ip: $ip}], ports: [{port: $p}]}]}')" >/dev/null &&
    kapi POST /apis/apiregistration.k8s.io/v1/apiservices "$(jq -n --arg n "$METRICS_SERVICE" --arg ca "$ca" \
      '{apiVersion: "apiregistration.k8s.io/v1", kind: "APIService", metadata: {name: "v1beta1.custom.metrics.k8s.io"},
        spec: {group: "custom.metrics.k8s.io", version: "v1beta1", groupPriorityMinimum: 100, versionPriority: 100,
          caBundle: $ca, service: {namespace: "kube-system", name: $n, port: 443}}}')" >/dev/null ||
    die "could not register the custom metrics API"
  log "custom metrics API: APIService v1beta1.custom.metrics.k8s.io -> $POD_GATEWAY:$METRICS_PORT (node agent)"
}
