#!/usr/bin/env bash
# Generates hive's CRDs (group hive.openshift.io) from the hive API module pinned in go.mod,
# with controller-gen (sigs.k8s.io/controller-tools, also pinned), into a cache outside the
# work tree, and prints the directory:
#
#   $CVO_HIVE_CRD_CACHE/<stamp>/hive.openshift.io_clusterdeployments.yaml   (and the others)
#
# (default cache ~/.cache/cvo/hive-crd). The cluster tests install hive's real
# ClusterDeployment CRD from it, to show that the CVO leaves another operator's CRD alone. A
# second run only prints the directory. Nothing is generated into the repository. The Go module
# proxy serves hive's API module only at the pseudo-version pinned here (January 2022).
# Cold on 2 cores: ~10 s of module downloads and ~2 min compiling controller-gen.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
die() {
  printf 'ERROR [hive-crd]: %s\n' "$*" >&2
  exit 1
}
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
export GOTOOLCHAIN=local
command -v go >/dev/null 2>&1 || die "no Go toolchain (go) on PATH or in /usr/local/go/bin"

cache="${CVO_HIVE_CRD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cvo/hive-crd}"
stamp="$(cd "$here" && cat go.mod go.sum tools.go gen.sh | sha256sum | cut -c1-16)"
out="$cache/$stamp"
if [ -s "$out/hive.openshift.io_clusterdeployments.yaml" ]; then
  echo "$out"
  exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 1800 9 || die "timed out waiting for $cache/.lock"
if [ -s "$out/hive.openshift.io_clusterdeployments.yaml" ]; then
  echo "$out"
  exit 0
fi
printf '==> [hive-crd] generating hive CRDs into %s\n' "$out" >&2
rm -rf "$out.tmp"
(cd "$here" && GOFLAGS="-mod=readonly -buildvcs=false" timeout "${CVO_HIVE_CRD_TIMEOUT:-1800}" \
  go run sigs.k8s.io/controller-tools/cmd/controller-gen crd \
  paths=github.com/openshift/hive/apis/hive/v1 "output:crd:dir=$out.tmp") >&2 ||
  die "controller-gen failed"
[ -s "$out.tmp/hive.openshift.io_clusterdeployments.yaml" ] || die "no ClusterDeployment CRD generated"
mv "$out.tmp" "$out"
echo "$out"
