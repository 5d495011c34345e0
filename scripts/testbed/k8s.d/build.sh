# shellcheck shell=bash
# Build kube-apiserver, kube-controller-manager and kube-scheduler v1.20.2 from
# Debian 12's own `kubernetes` source package (offline, Debian's Go 1.19), once
# per machine. The binaries are cached in $K8S_CACHE/bin; the source tree is
# removed after a successful build.

K8S_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler)

k8s_cached() {
  local b
  for b in "${K8S_BINARIES[@]}"; do [[ -x $K8S_CACHE/bin/$b ]] || return 1; done
  [[ -f $K8S_CACHE/bin/.complete ]]
}

enable_deb_src() {
  local f=/etc/apt/sources.list.d/debian.sources
  if [[ -f $f ]] && grep -q '^Types: deb$' "$f"; then
    sed -i 's/^Types: deb$/Types: deb deb-src/' "$f"
    apt_get update -qq
  elif [[ -f /etc/apt/sources.list ]] && ! grep -q '^deb-src' /etc/apt/sources.list &&
    grep -q '^deb ' /etc/apt/sources.list; then
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/tandem-src.list
    apt_get update -qq
  fi
}

# 1.26: the prebuilt binaries of ../shared/third_party/kubernetes-1.26 (Debian 12 has no Go to build
# it), unpacked and checked against their published sums. Looked for in $TANDEM_THIRD_PARTY, beside the
# repository (../shared/third_party), then /work/shared/third_party.
declare -A K8S_126_SHA256=(
  [kube-apiserver]=4052207058c4f82e597210b2051c48f261e0a8277798771dfad0233ab4fac684
  [kube-controller-manager]=ed298e4ed7b7581ea7a2ea9c7038df7d2d0cb9959224b3bdd424c9200c8ef70e
  [kube-scheduler]=818f41d4a4ff7fa2d7be8289097d7b2ca3dad3345255bddd2a581f365814c1cb
)
third_party_dir() {
  local repo d
  repo=$(cd "$K8S_D/../../.." && pwd)
  for d in "${TANDEM_THIRD_PARTY:-}" "$repo/../shared/third_party" /work/shared/third_party; do
    [[ -n $d && -f $d/kubernetes-1.26/kube-apiserver.xz ]] && { echo "$d"; return 0; }
  done
  return 1
}
unpack_126() {
  local tp b tmp
  tp=$(third_party_dir) || die "no kubernetes-1.26/ archives (looked in \$TANDEM_THIRD_PARTY, ../shared/third_party beside the repository and /work/shared/third_party)"
  apt_install etcd-server etcd-client openssl curl xz-utils
  mkdir -p "$K8S_CACHE/bin"
  for b in "${K8S_BINARIES[@]}"; do
    tmp=$K8S_CACHE/bin/.$b.tmp
    xz -dc "$tp/kubernetes-1.26/$b.xz" >"$tmp"
    [[ $(sha256sum "$tmp" | awk '{print $1}') == "${K8S_126_SHA256[$b]}" ]] ||
      { rm -f "$tmp"; die "$tp/kubernetes-1.26/$b.xz does not unpack to the published binary (sha256)"; }
    chmod 0755 "$tmp"
    mv "$tmp" "$K8S_CACHE/bin/$b"
  done
  touch "$K8S_CACHE/bin/.complete"
  log "unpacked: $("$K8S_CACHE/bin/kube-apiserver" --version) from $tp/kubernetes-1.26"
}

cmd_build() {
  need_root
  mkdir -p "$K8S_CACHE"
  # One build per cache at a time (two testbed dirs may share the cache).
  exec 8>"$K8S_CACHE/.build-lock"
  flock -w 3600 8 || die "timed out waiting for another build in $K8S_CACHE"
  if k8s_cached; then
    log "kubernetes binaries already built in $K8S_CACHE/bin"
    return 0
  fi
  if [[ $K8S_RELEASE == 1.26 ]]; then
    unpack_126
    exec 8>&-
    return 0
  fi
  local pkgs=(golang-1.19 etcd-server etcd-client rsync openssl curl dpkg-dev
    golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev)
  apt_install "${pkgs[@]}"
  local work=$K8S_CACHE/src
  rm -rf "$work" && mkdir -p "$work"
  enable_deb_src
  log "downloading the kubernetes source package"
  (cd "$work" && apt_get source --download-only -qq kubernetes >/dev/null)
  local tarball
  tarball=$(ls "$work"/kubernetes_*.orig.tar.gz 2>/dev/null | head -1)
  [[ -n $tarball ]] || die "apt-get source kubernetes gave no orig tarball in $work"
  tar xzf "$tarball" -C "$work"
  local tree
  tree=$(find "$work" -maxdepth 1 -type d -name 'kubernetes-*' | head -1)
  [[ -n $tree ]] || die "no kubernetes-* tree in $work"
  # Go >= 1.18 crashes the vendored reflect2 1.0.1 (SIGSEGV in mapiterinit on
  # the first Pod with resource limits): use Debian's newer reflect2 and
  # json-iterator instead.
  local d
  for d in github.com/modern-go/reflect2 github.com/json-iterator/go; do
    rm -f "$tree/vendor/$d"/*.go
    cp /usr/share/gocode/src/$d/*.go "$tree/vendor/$d/"
    rm -f "$tree/vendor/$d"/*_test.go
  done
  grep -q 'mapiterinit\|unsafeMapIterator' "$tree/vendor/github.com/modern-go/reflect2/"*.go ||
    die "reflect2 patch did not take"
  log "building kube-apiserver, kube-controller-manager, kube-scheduler (8-20 min)"
  (
    cd "$tree"
    export PATH=/usr/lib/go-1.19/bin:$PATH CGO_ENABLED=0 GOPROXY=off GOFLAGS=-mod=vendor
    export GOCACHE=$K8S_CACHE/gocache
    unset GOFLAGS
    make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler"
  ) >"$K8S_CACHE/build.log" 2>&1 || die "kubernetes build failed; see $K8S_CACHE/build.log"
  mkdir -p "$K8S_CACHE/bin"
  local b
  for b in "${K8S_BINARIES[@]}"; do
    install -m 0755 "$tree/_output/bin/$b" "$K8S_CACHE/bin/$b"
  done
  touch "$K8S_CACHE/bin/.complete"
  rm -rf "$work" "$K8S_CACHE/gocache"
  log "built: $("$K8S_CACHE/bin/kube-apiserver" --version)"
  exec 8>&-
}
