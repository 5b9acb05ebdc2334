#!/usr/bin/env bash
# Stops or starts only the kube-apiserver of a cluster that hack/cluster/up.sh started in DIR,
# with the same command line (port, certificates, etcd): etcd and its data stay. For fault tests
# (an apiserver that goes away in the middle of a pass) and by hand:
#
#   hack/cluster/apiserver.sh DIR stop     # SIGTERM (SIGKILL after CVO_CLUSTER_STOP_TIMEOUT)
#   hack/cluster/apiserver.sh DIR start    # start again, wait for /readyz (CVO_CLUSTER_START_TIMEOUT)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

if [ $# -ne 2 ] || [ -z "$1" ]; then
  echo "usage: $0 DIR stop|start" >&2
  exit 2
fi
dir="$(cd "$1" && pwd)"
[ -e "$dir/$CLUSTER_MARKER" ] || die "$dir is not a cluster directory (no $CLUSTER_MARKER)"
[ -s "$dir/kube-apiserver.cmd" ] || die "$dir has no kube-apiserver.cmd: start the cluster with hack/cluster/up.sh"

case "$2" in
stop)
  stop_pidfile "$dir/kube-apiserver.pid" "$dir" kube-apiserver
  log "kube-apiserver in $dir stopped"
  ;;
start)
  if pid_is_ours "$dir/kube-apiserver.pid" "$dir"; then
    die "kube-apiserver in $dir is already running"
  fi
  # The command line was written with printf %q by up.sh.
  eval "cmd=($(cat "$dir/kube-apiserver.cmd"))"
  # shellcheck disable=SC2154
  "${cmd[@]}" </dev/null >>"$dir/kube-apiserver.log" 2>&1 &
  apiserver_pid=$!
  echo "$apiserver_pid" >"$dir/kube-apiserver.pid"
  deadline=$((SECONDS + ${CVO_CLUSTER_START_TIMEOUT:-60}))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if [ "$(readyz "")" = ok ]; then
      log "kube-apiserver in $dir ready again at $(server_url)"
      exit 0
    fi
    if ! child_running "$apiserver_pid"; then
      ended_how "$apiserver_pid"
      die "kube-apiserver $how; see $dir/kube-apiserver.log"
    fi
    sleep 0.25
  done
  die "kube-apiserver /readyz not ok after ${CVO_CLUSTER_START_TIMEOUT:-60}s; see $dir/kube-apiserver.log"
  ;;
*)
  echo "usage: $0 DIR stop|start" >&2
  exit 2
  ;;
esac
