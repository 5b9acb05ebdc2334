#!/usr/bin/env bash
# The wake-up figure BENCHMARKS.md records under "Wake-up": how long after the last
# ClusterOperator reports the target version an update shows Progressing=False. See
# benches/wakeup.rs for what is measured and how the operators are played.
#
#   hack/bench-wakeup.sh [--dev] [--runs N]   (default 10 runs; prints median, p90, worst)
#
# Starts its own throwaway cluster (hack/cluster/up.sh, binaries cached in ~/.cache/cvo/cluster)
# and stops it at the end, whatever happens. The bench is built with the release profile;
# --dev builds it with the dev profile instead (minutes instead of most of an hour where the
# test build is warm; the operator's pass is slower, so the figures are upper bounds).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=()
if [ "${1:-}" = --dev ]; then
  profile=(--profile dev)
  shift
fi
# Built before the cluster starts, so the cluster's lifetime is the benchmark's.
cargo bench "${profile[@]}" --bench wakeup --no-run --quiet
dir=$(mktemp -d)
trap 'hack/cluster/down.sh "$dir" >/dev/null 2>&1 || rm -rf "$dir"' EXIT
# Not KUBECONFIG: the bench replaces the ClusterVersion, so it only runs on a cluster named for it.
CVO_BENCH_KUBECONFIG=$(hack/cluster/up.sh "$dir")
export CVO_BENCH_KUBECONFIG
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cargo bench "${profile[@]}" --bench wakeup --quiet -- "$@"
