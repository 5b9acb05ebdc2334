#!/usr/bin/env bash
# Stops the cluster that up.sh started in DIR (kube-controller-manager if any, kube-apiserver,
# etcd: SIGTERM, then SIGKILL after CVO_CLUSTER_STOP_TIMEOUT=10 seconds) and removes DIR. Safe
# to run twice, and on a DIR whose start failed half-way. Only a directory carrying up.sh's
# marker file is removed.
#
#   hack/cluster/down.sh DIR
#   hack/cluster/down.sh --keep DIR     # stop, but keep DIR (logs, certificates, etcd data)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

keep=""
if [ "${1:-}" = --keep ]; then
  keep=1
  shift
fi
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 [--keep] DIR" >&2
  exit 2
fi
if [ ! -e "$1" ]; then
  log "$1 does not exist: nothing to stop"
  exit 0
fi
dir="$(cd "$1" && pwd)"
if [ ! -e "$dir/$CLUSTER_MARKER" ]; then
  if [ -z "$(ls -A "$dir")" ]; then
    [ -n "$keep" ] || rmdir "$dir"
    exit 0
  fi
  die "$dir is not a cluster directory (no $CLUSTER_MARKER): not touching it"
fi

stop_pidfile "$dir/watchdog.pid" "$dir" watchdog
stop_pidfile "$dir/kube-controller-manager.pid" "$dir" kube-controller-manager
stop_pidfile "$dir/kube-apiserver.pid" "$dir" kube-apiserver
stop_pidfile "$dir/etcd.pid" "$dir" etcd
rm -f "$dir"/*.pid
if [ -n "$keep" ]; then
  log "stopped the cluster in $dir (kept)"
else
  rm -rf "$dir"
  log "stopped the cluster and removed $dir"
fi
