#!/usr/bin/env bash
# Builds the test cluster's binaries with the machine's Go toolchain, from the modules pinned in
# hack/cluster/apiserver/go.mod (k8s.io/kubernetes, every k8s.io staging module replaced by its
# v0.x release) and hack/cluster/etcd/go.mod (go.etcd.io/etcd/server/v3):
#
#   $CVO_CLUSTER_CACHE/kube-apiserver-<version>            (default cache: ~/.cache/cvo/cluster)
#   $CVO_CLUSTER_CACHE/kube-controller-manager-<version>   (same module as kube-apiserver; only
#                                                          run when up.sh gets CVO_CLUSTER_CONTROLLERS)
#   $CVO_CLUSTER_CACHE/etcd-<version>
#
# A binary already in the cache and built from the same go.mod/go.sum/main.go is kept: a second
# run does nothing. Go's own caches stay where Go puts them (GOMODCACHE ~/go/pkg/mod, GOCACHE
# ~/.cache/go-build), so a rebuild after a version bump reuses them.
#
#   hack/cluster/build.sh            # build what is missing, print the paths
#   CVO_CLUSTER_BUILD_TIMEOUT=3600   # per binary, seconds (default 3600)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

fast_path() {
  [ -x "$KUBE_APISERVER_BIN" ] && [ -x "$ETCD_BIN" ] || return 1
  [ -n "${CVO_KUBE_APISERVER_BIN:-}" ] || [ "$(cat "$KUBE_APISERVER_BIN.stamp" 2>/dev/null)" = "$(source_stamp "$here/apiserver")" ] || return 1
  [ -n "${CVO_ETCD_BIN:-}" ] || [ "$(cat "$ETCD_BIN.stamp" 2>/dev/null)" = "$(source_stamp "$here/etcd")" ] || return 1
  if want_controller_manager; then
    [ -x "$KUBE_CONTROLLER_MANAGER_BIN" ] || return 1
    [ -n "${CVO_KUBE_CONTROLLER_MANAGER_BIN:-}" ] ||
      [ "$(cat "$KUBE_CONTROLLER_MANAGER_BIN.stamp" 2>/dev/null)" = "$(source_stamp "$here/apiserver")" ] || return 1
  fi
}
binaries() {
  if want_controller_manager; then
    echo "$KUBE_APISERVER_BIN, $KUBE_CONTROLLER_MANAGER_BIN, $ETCD_BIN"
  else
    echo "$KUBE_APISERVER_BIN, $ETCD_BIN (no kube-controller-manager: CVO_KUBE_APISERVER_BIN is set and CVO_KUBE_CONTROLLER_MANAGER_BIN is not)"
  fi
}
if fast_path; then
  log "cached: $(binaries)"
  exit 0
fi

"$here/deps.sh" --build
mkdir -p "$CVO_CLUSTER_CACHE"
# One build at a time per cache (two concurrent test runs must not race on the same output).
exec 9>"$CVO_CLUSTER_CACHE/.build.lock"
if ! flock -n 9; then
  log "another build holds $CVO_CLUSTER_CACHE/.build.lock; waiting for it (up to 2h)"
  flock -w 7200 9 || die "timed out waiting for $CVO_CLUSTER_CACHE/.build.lock"
fi

fallback_help() {
  cat >&2 <<'EOF'

############################################################################################
#  The Go module proxy could not be reached, so kube-apiserver/etcd cannot be built from
#  the pinned modules. This script does NOT build a fallback by itself. The verified fallback
#  (shared/spec/rust-stack.md section 4.4, "Recipe A") is a MUCH OLDER kube-apiserver:
#    1. apt-get install rsync golang-go etcd-server golang-github-modern-go-reflect2-dev
#       (etcd 3.4.23 from Debian: /usr/bin/etcd)
#    2. add a bookworm deb-src line in a private sources list, then
#       apt-get source --download-only kubernetes   (1.20.5+really1.20.2, full vendored tree)
#    3. replace vendor/github.com/modern-go/reflect2/* with
#       /usr/share/gocode/src/github.com/modern-go/reflect2 (1.0.1 crashes under Go >= 1.18)
#    4. GOPATH build: CGO_ENABLED=0 make WHAT=cmd/kube-apiserver   (~5 min on 2 cores)
#  then point the scripts at the binaries; up.sh adapts its flags to them:
#    export CVO_KUBE_APISERVER_BIN=/path/to/_output/bin/kube-apiserver CVO_ETCD_BIN=/usr/bin/etcd
#  Kubernetes 1.20 lacks much of what 1.34 has (aggregated discovery, CEL rules, VAP, GA SSA
#  semantics): tests that pass there prove less.
############################################################################################
EOF
}

# build NAME SRC_DIR OUT LDFLAGS [PACKAGE]: PACKAGE (default: the main package in SRC_DIR) is
# built inside SRC_DIR's module.
build() {
  local name="$1" src="$2" out="$3" ldflags="$4" pkg="${5:-.}" stamp start rc
  stamp="$(source_stamp "$src")"
  if [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
    log "cached: $out"
    return 0
  fi
  log "building $name with $(go version | cut -d' ' -f3) (GOMODCACHE=$(go env GOMODCACHE), GOCACHE=$(go env GOCACHE)); cold on 2 cores: ~5 min for kube-apiserver, ~1.5 min more for kube-controller-manager (~5 min alone), ~30 s for etcd"
  start=$SECONDS
  rm -f "$out.tmp"
  set +e
  (cd "$src" && CGO_ENABLED=0 timeout "${CVO_CLUSTER_BUILD_TIMEOUT:-3600}" \
    go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg") 2>&1 | tee "$out.build.log" >&2
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -ne 0 ]; then
    rm -f "$out.tmp"
    if [ "$rc" -eq 124 ]; then
      die "building $name timed out after ${CVO_CLUSTER_BUILD_TIMEOUT:-3600}s (raise CVO_CLUSTER_BUILD_TIMEOUT)"
    fi
    if grep -qE 'dial tcp|no such host|i/o timeout|connection refused|TLS handshake|proxy\.golang\.org|Forbidden|403|404 Not Found|network is unreachable|module lookup disabled' "$out.build.log"; then
      fallback_help
      die "building $name failed: could not download Go modules (GOPROXY=$(go env GOPROXY)); see $out.build.log"
    fi
    die "building $name failed (exit $rc); see $out.build.log"
  fi
  mv -f "$out.tmp" "$out"
  echo "$stamp" >"$out.stamp"
  log "built $out in $((SECONDS - start))s ($(du -h "$out" | cut -f1))"
}

minor="${K8S_VERSION#v1.}"
minor="${minor%%.*}"
kv=""
# What Kubernetes's own build stamps (hack/lib/version.sh): /version and --version report it.
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kv+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  kv+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
done
if [ -z "${CVO_KUBE_APISERVER_BIN:-}" ]; then
  build "kube-apiserver $K8S_VERSION" "$here/apiserver" "$KUBE_APISERVER_BIN" "-s -w$kv"
else
  [ -x "$KUBE_APISERVER_BIN" ] || die "CVO_KUBE_APISERVER_BIN=$KUBE_APISERVER_BIN is not an executable"
fi
if [ -n "${CVO_KUBE_CONTROLLER_MANAGER_BIN:-}" ]; then
  [ -x "$KUBE_CONTROLLER_MANAGER_BIN" ] ||
    die "CVO_KUBE_CONTROLLER_MANAGER_BIN=$KUBE_CONTROLLER_MANAGER_BIN is not an executable"
elif want_controller_manager; then
  # The second main package of apiserver/'s module: only what kube-apiserver does not already
  # share with it is compiled.
  build "kube-controller-manager $K8S_VERSION" "$here/apiserver" "$KUBE_CONTROLLER_MANAGER_BIN" "-s -w$kv" \
    "$KUBE_CONTROLLER_MANAGER_PKG"
fi
if [ -z "${CVO_ETCD_BIN:-}" ]; then
  build "etcd $ETCD_VERSION" "$here/etcd" "$ETCD_BIN" "-s -w"
else
  [ -x "$ETCD_BIN" ] || die "CVO_ETCD_BIN=$ETCD_BIN is not an executable"
fi
log "ready: $(binaries)"
