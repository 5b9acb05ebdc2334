#!/usr/bin/env bash
# Builds the upstream oracle (hack/upstream/main.go: openshift/library-go's pkg/manifest at the
# version pinned in go.mod, with the CVO's payload-loading glue) with the machine's Go toolchain
# into a cache outside the work tree, and prints the binary's path:
#
#   $CVO_UPSTREAM_CACHE/upstream-<library-go version>   (default ~/.cache/cvo/upstream)
#
# A binary already there built from the same go.mod/go.sum/main.go is kept: a second run does
# nothing but print the path. CVO_UPSTREAM_BIN=PATH uses that binary instead of building.
# Cold on 2 cores: ~10 s of module downloads and ~70 s of compilation.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
log() { printf '==> [upstream] %s\n' "$*" >&2; }
die() {
  printf 'ERROR [upstream]: %s\n' "$*" >&2
  exit 1
}

if [ -n "${CVO_UPSTREAM_BIN:-}" ]; then
  [ -x "$CVO_UPSTREAM_BIN" ] || die "CVO_UPSTREAM_BIN=$CVO_UPSTREAM_BIN is not an executable"
  echo "$CVO_UPSTREAM_BIN"
  exit 0
fi
# The machine's Go toolchain lives in /usr/local/go on the project's machines; never let `go`
# download another toolchain.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
export GOTOOLCHAIN=local
command -v go >/dev/null 2>&1 || die "no Go toolchain (go) on PATH or in /usr/local/go/bin"

version="$(sed -nE 's#^[[:space:]]*(require[[:space:]]+)?github\.com/openshift/library-go[[:space:]]+(v[^[:space:]]+).*#\2#p' "$here/go.mod" | head -n1)"
[ -n "$version" ] || die "cannot read the github.com/openshift/library-go version from $here/go.mod"
cache="${CVO_UPSTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cvo/upstream}"
bin="$cache/upstream-$version"
stamp="$(cd "$here" && cat go.mod go.sum main.go | sha256sum | cut -c1-16)"
if [ -x "$bin" ] && [ "$(cat "$bin.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
# One build at a time per cache: concurrent test runs must not race on the same output.
exec 9>"$cache/.build.lock"
flock -w 1800 9 || die "timed out waiting for $cache/.build.lock"
if [ -x "$bin" ] && [ "$(cat "$bin.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$bin"
  exit 0
fi
log "building $bin with $(go version | cut -d' ' -f3) (library-go $version)"
start=$SECONDS
rm -f "$bin.tmp"
set +e
(cd "$here" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" timeout "${CVO_UPSTREAM_BUILD_TIMEOUT:-1800}" \
  go build -trimpath -ldflags "-s -w" -o "$bin.tmp" .) 2>&1 | tee "$bin.build.log" >&2
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  rm -f "$bin.tmp"
  die "building the upstream oracle failed (exit $rc); see $bin.build.log"
fi
mv -f "$bin.tmp" "$bin"
echo "$stamp" >"$bin.stamp"
log "built in $((SECONDS - start))s"
echo "$bin"
