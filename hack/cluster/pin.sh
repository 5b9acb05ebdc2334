#!/usr/bin/env bash
# Re-pins the committed go.mod/go.sum under hack/cluster/{apiserver,etcd} (apiserver/ builds
# kube-apiserver and kube-controller-manager). Only needed to move to another version; build.sh
# never changes them. Needs the Go module proxy.
#
#   hack/cluster/pin.sh                       # re-tidy at the versions already pinned
#   hack/cluster/pin.sh v1.34.4 v3.6.16       # kube-apiserver (k8s.io/kubernetes) and etcd versions
#
# k8s.io/kubernetes's own go.mod requires its staging modules (k8s.io/api, k8s.io/apiserver, ...)
# at v0.0.0 with `=> ./staging/...` replaces, which a consumer cannot use; so every staging module
# named there is replaced by its published release v0.MINOR.PATCH (v1.34.4 -> v0.34.4).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=mod

current() { sed -nE "s#^[[:space:]]*(require[[:space:]]+)?${2//./\\.}[[:space:]]+(v[^[:space:]]+).*#\\2#p" "$1" 2>/dev/null | head -n1; }
k8s="${1:-$(current "$here/apiserver/go.mod" k8s.io/kubernetes)}"
etcd="${2:-$(current "$here/etcd/go.mod" go.etcd.io/etcd/server/v3)}"
[[ "$k8s" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "pin.sh: kube version must look like v1.34.4, got '$k8s'" >&2; exit 2; }
staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
[[ "$etcd" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || { echo "pin.sh: etcd version must look like v3.6.16, got '$etcd'" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "==> pinning kube-apiserver: k8s.io/kubernetes $k8s, staging modules $staging"
kmod="$(go mod download -json "k8s.io/kubernetes@$k8s" | sed -nE 's/^[[:space:]]*"GoMod": "(.*)",?$/\1/p')"
[ -f "$kmod" ] || { echo "pin.sh: could not download k8s.io/kubernetes@$k8s" >&2; exit 1; }
mkdir "$work/apiserver"
cp "$here/apiserver/main.go" "$work/apiserver/"
(
  cd "$work/apiserver"
  go mod init cvo/hack/cluster/apiserver 2>/dev/null
  # Same language version and GODEBUG defaults as upstream's go.mod.
  go mod edit -go="$(sed -nE 's/^go (.*)$/\1/p' "$kmod")"
  sed -nE 's/^godebug (.*)$/\1/p' "$kmod" | while read -r kv; do go mod edit -godebug="$kv"; done
  go mod edit -require="k8s.io/kubernetes@$k8s"
  # kube-controller-manager is built from this module too (build.sh): as a tool, go mod tidy
  # keeps what it imports in go.sum.
  go mod edit -tool=k8s.io/kubernetes/cmd/kube-controller-manager
  n=0
  # shellcheck disable=SC2013
  for m in $(sed -nE 's#^[[:space:]]*(k8s\.io/[^[:space:]]+)[[:space:]]+=>[[:space:]]+\./staging/.*#\1#p' "$kmod"); do
    go mod edit -replace="$m=$m@$staging"
    n=$((n + 1))
  done
  echo "    replaced $n staging modules"
  go mod tidy
)
cp "$work/apiserver/go.mod" "$work/apiserver/go.sum" "$here/apiserver/"

echo "==> pinning etcd: go.etcd.io/etcd/server/v3 $etcd"
emod="$(go mod download -json "go.etcd.io/etcd/server/v3@$etcd" | sed -nE 's/^[[:space:]]*"GoMod": "(.*)",?$/\1/p')"
[ -f "$emod" ] || { echo "pin.sh: could not download go.etcd.io/etcd/server/v3@$etcd" >&2; exit 1; }
mkdir "$work/etcd"
cp "$here/etcd/main.go" "$work/etcd/"
(
  cd "$work/etcd"
  go mod init cvo/hack/cluster/etcd 2>/dev/null
  go mod edit -go="$(sed -nE 's/^go (.*)$/\1/p' "$emod")"
  go mod edit -require="go.etcd.io/etcd/server/v3@$etcd"
  go mod tidy
)
cp "$work/etcd/go.mod" "$work/etcd/go.sum" "$here/etcd/"
echo "==> done: review and commit hack/cluster/{apiserver,etcd}/go.{mod,sum}"
