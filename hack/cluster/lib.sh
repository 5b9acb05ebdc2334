# Shared settings and helpers for hack/cluster/*.sh. Sourced, never run.
#
# Versions are read from the pinned go.mod files beside this file, so that go.mod is the one
# place a version is written. Binaries are cached outside the work tree by default (CI runs in
# a fresh clone on the same machine, so an in-tree cache would be rebuilt on every run):
#
#   CVO_CLUSTER_CACHE        where built binaries go   (default ~/.cache/cvo/cluster)
#   CVO_KUBE_APISERVER_BIN   use this kube-apiserver instead of building one
#   CVO_ETCD_BIN             use this etcd instead of building one
#   CVO_KUBE_CONTROLLER_MANAGER_BIN   use this kube-controller-manager instead of building one
# shellcheck shell=bash disable=SC2034

CLUSTER_HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CVO_CLUSTER_CACHE="${CVO_CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cvo/cluster}"

log() { printf '==> [cluster] %s\n' "$*" >&2; }
warn() { printf 'WARNING [cluster]: %s\n' "$*" >&2; }
die() {
  printf 'ERROR [cluster]: %s\n' "$*" >&2
  exit 1
}

# The machine's Go toolchain lives in /usr/local/go on the project's machines.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
# Never let `go` download another toolchain: build with the machine's own.
export GOTOOLCHAIN=local

# gomod_version FILE MODULE: the version MODULE is required at in go.mod FILE.
gomod_version() {
  sed -nE "s#^[[:space:]]*(require[[:space:]]+)?${2//./\\.}[[:space:]]+(v[^[:space:]]+).*#\\2#p" "$1" | head -n1
}

K8S_VERSION="$(gomod_version "$CLUSTER_HACK_DIR/apiserver/go.mod" k8s.io/kubernetes)"
ETCD_VERSION="$(gomod_version "$CLUSTER_HACK_DIR/etcd/go.mod" go.etcd.io/etcd/server/v3)"
[ -n "$K8S_VERSION" ] || die "cannot read the k8s.io/kubernetes version from $CLUSTER_HACK_DIR/apiserver/go.mod"
[ -n "$ETCD_VERSION" ] || die "cannot read the go.etcd.io/etcd/server/v3 version from $CLUSTER_HACK_DIR/etcd/go.mod"

KUBE_APISERVER_BIN="${CVO_KUBE_APISERVER_BIN:-$CVO_CLUSTER_CACHE/kube-apiserver-$K8S_VERSION}"
ETCD_BIN="${CVO_ETCD_BIN:-$CVO_CLUSTER_CACHE/etcd-$ETCD_VERSION}"
# Built from the same module as kube-apiserver (apiserver/go.mod names it as a `tool`), so both
# share go.sum, the module cache and most of the build cache.
KUBE_CONTROLLER_MANAGER_BIN="${CVO_KUBE_CONTROLLER_MANAGER_BIN:-$CVO_CLUSTER_CACHE/kube-controller-manager-$K8S_VERSION}"
KUBE_CONTROLLER_MANAGER_PKG=k8s.io/kubernetes/cmd/kube-controller-manager

# want_controller_manager: true when build.sh should provide kube-controller-manager. It is built
# with kube-apiserver from the pinned module; with CVO_KUBE_APISERVER_BIN pointing at another
# build (e.g. the Debian 1.20 fallback) it is not, unless CVO_KUBE_CONTROLLER_MANAGER_BIN names one.
want_controller_manager() {
  [ -n "${CVO_KUBE_CONTROLLER_MANAGER_BIN:-}" ] || [ -z "${CVO_KUBE_APISERVER_BIN:-}" ]
}

# source_stamp DIR: a hash of what a binary is built from (go.mod, go.sum, main.go). A cached
# binary whose stamp differs (for example after a dependency bump at the same version) is rebuilt.
source_stamp() {
  (cd "$1" && cat go.mod go.sum main.go) | sha256sum | cut -c1-16
}

# pid_is_ours PIDFILE DIR: true when PIDFILE names a live process whose command line mentions
# DIR, so that a PID reused by an unrelated process after ours died is never signalled.
pid_is_ours() {
  local pid
  [ -s "$1" ] || return 1
  pid="$(cat "$1")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  # (the process may end between the test above and this read)
  { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$2"
}

# child_running PID: true while PID, a child this script started, runs. For the seconds a
# start waits, a reuse of the PID after bash reaped the child is not a concern (at worst the
# wait runs to its timeout); what is signalled is still checked with pid_is_ours.
child_running() { kill -0 "$1" 2>/dev/null; }

# ended_how PID: sets `how` to how a child this script started ended ("exited with status 1",
# "was killed by signal 9 (KILL)"), for the error that reports it. (Not a command substitution:
# a subshell cannot wait for its parent's child.)
ended_how() {
  local status=0
  wait "$1" 2>/dev/null || status=$?
  if [ "$status" -gt 128 ]; then
    how="was killed by signal $((status - 128)) ($(kill -l $((status - 128)) 2>/dev/null || echo '?'))"
  else
    how="exited with status $status"
  fi
}

# stop_pidfile PIDFILE DIR NAME: SIGTERM, then SIGKILL after CVO_CLUSTER_STOP_TIMEOUT seconds.
stop_pidfile() {
  local pidfile="$1" dir="$2" name="$3" pid i deadline
  pid_is_ours "$pidfile" "$dir" || return 0
  pid="$(cat "$pidfile")"
  kill -TERM "$pid" 2>/dev/null || return 0
  deadline=$((${CVO_CLUSTER_STOP_TIMEOUT:-10} * 10))
  for ((i = 0; i < deadline; i++)); do
    pid_is_ours "$pidfile" "$dir" || return 0
    # A zombie (our own child, not yet reaped) has stopped: count it as gone.
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && return 0
    sleep 0.1
  done
  warn "$name (pid $pid) did not stop on SIGTERM within ${CVO_CLUSTER_STOP_TIMEOUT:-10}s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    pid_is_ours "$pidfile" "$dir" || return 0
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && return 0
    sleep 0.1
  done
  warn "$name (pid $pid) is still there after SIGKILL"
}

# The cluster directory's apiserver URL, admin token, controllers and /readyz answer (SUFFIX: e.g.
# `?verbose`); they read the global `dir`.
server_url() { sed -nE 's/^CVO_CLUSTER_SERVER=(.*)$/\1/p' "$dir/cluster.env" 2>/dev/null; }
admin_token() { cat "$dir/admin.token" 2>/dev/null; }
# The CVO_CLUSTER_CONTROLLERS the cluster was started with (empty: no kube-controller-manager).
running_controllers() { sed -nE 's/^CVO_CLUSTER_CONTROLLERS=(.*)$/\1/p' "$dir/cluster.env" 2>/dev/null; }
readyz() {
  curl -sS --noproxy '*' --max-time 5 --cacert "$dir/pki/ca.crt" \
    -H "Authorization: Bearer $(admin_token)" "$(server_url)/readyz$1" 2>&1
}

# The marker up.sh leaves in a cluster directory; down.sh deletes only directories that have it.
CLUSTER_MARKER=.cvo-cluster
