# shellcheck shell=bash
# Throw-away PKI and static tokens for the loopback cluster, made fresh on every
# fresh `up` (a few seconds). Everything secret is mode 0600 under $PKI.
# Sourced by scripts/testbed/k8s after lib.sh.

# Users the testbed knows (besides the components):
#   admin                token, group system:masters          -> K8S_KUBECONFIG, K8S_TOKEN
#   tandem-cert-user     client certificate, O=tandem-testers -> K8S_KUBECONFIG_CERT
#   tandem-exec-user     token handed out by an exec plugin   -> K8S_KUBECONFIG_EXEC
#   system:node:<node>   one token per agent node, group system:nodes (Node authorizer + NodeRestriction)
CERT_USER=tandem-cert-user
CERT_GROUP=tandem-testers
EXEC_USER=tandem-exec-user

# sign NAME SUBJECT EXT: key + certificate signed by the CA.
sign() {
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
  printf '%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 3650 \
    -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

new_token() { openssl rand -hex 24; }

gen_pki() {
  local t client server n
  t=$(now_ms)
  mkdir -p "$PKI"
  (
    cd "$PKI"
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=tandem-testbed-ca" 2>/dev/null
    client=$'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
    server=$'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth'
    sign apiserver /CN=kube-apiserver "$server
subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.0.0.1"
    # The apiserver's client certificate towards the kubelet API (pods/log).
    sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
    # The node agent's kubelet API serving certificate.
    sign kubelet /CN=tandem-node-agent "$server
subjectAltName=DNS:localhost,IP:127.0.0.1"
    sign "$CERT_USER" "/O=$CERT_GROUP/CN=$CERT_USER" "$client"
    # The apiserver's client certificate toward aggregated APIs, and the custom metrics API's serving one.
    sign front-proxy-client /CN=front-proxy-client "$client"
    sign metrics /CN=tandem-custom-metrics "$server
subjectAltName=DNS:$METRICS_SERVICE.kube-system.svc,IP:$POD_GATEWAY"
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    rm -f ca.srl
    for n in admin kcm sched exec bad "${NODES[@]}"; do new_token >"$n.token"; done
    # token,user,uid,"groups"
    {
      echo "$(<admin.token),admin,admin-uid,\"system:masters\""
      echo "$(<kcm.token),system:kube-controller-manager,kcm-uid"
      echo "$(<sched.token),system:kube-scheduler,sched-uid"
      echo "$(<exec.token),$EXEC_USER,exec-uid"
      for n in "${NODES[@]}"; do echo "$(<"$n.token"),system:node:$n,node-$n-uid,\"system:nodes\""; done
    } >tokens.csv
    # bad.token is deliberately not in tokens.csv.
    printf 'Authorization: Bearer %s\n' "$(<admin.token)" >admin.header
    # node name -> token, for the agent
    for n in "${NODES[@]}"; do printf '%s %s\n' "$n" "$(<"$n.token")"; done >node-tokens
  ) || die "could not create the PKI in $PKI"
  log "PKI and tokens in $PKI ($(since "$t") s)"
}

# write_kubeconfig FILE USER-NAME USER-YAML: a kubeconfig for the test cluster
# (CA-verified TLS, context namespace $NAMESPACE).
write_kubeconfig() {
  (
    umask 077
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tandem-testbed
  cluster:
    server: $SERVER
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
$3
contexts:
- name: $2@tandem-testbed
  context: {cluster: tandem-testbed, user: $2, namespace: $NAMESPACE}
current-context: $2@tandem-testbed
EOF
  )
}

write_kubeconfigs() {
  local kc=$RUN/kubeconfig
  mkdir -p "$kc"
  write_kubeconfig "$kc/admin" admin "    token: $(<"$PKI/admin.token")"
  write_kubeconfig "$kc/cert" "$CERT_USER" "    client-certificate: $PKI/$CERT_USER.crt
    client-key: $PKI/$CERT_USER.key"
  write_kubeconfig "$kc/badtoken" wrong-token "    token: $(<"$PKI/bad.token")"
  write_kubeconfig "$kc/kcm" system:kube-controller-manager "    token: $(<"$PKI/kcm.token")"
  write_kubeconfig "$kc/scheduler" system:kube-scheduler "    token: $(<"$PKI/sched.token")"
  # The exec credential plugin: prints an ExecCredential with the exec user's
  # token (read from the PKI at run time, so the kubeconfig holds no secret).
  cat >"$RUN/exec-credential" <<EOF
#!/bin/sh
# kubectl/tandem exec credential plugin of the tandem Kubernetes testbed.
set -e
token=\$(cat '$PKI/exec.token')
printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"%s"}}\n' "\$token"
EOF
  chmod 0700 "$RUN/exec-credential"
  write_kubeconfig "$kc/exec" "$EXEC_USER" "    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: $RUN/exec-credential
      args: []
      env: []"
}
