#!/usr/bin/env bash
# Apply throughput against a real kube-apiserver + etcd (what BENCHMARKS.md records under "Apply
# onto a real kube-apiserver"): the bundled payload and a generated 2,000-object payload with
# cvo's apply (Update and Install mode, first and second pass) against a plain parallel
# server-side-apply loop over the same objects. See benches/apply.rs for what is measured.
#
#   hack/bench-apply.sh [--runs N] [--objects N] [--concurrency 16,32,64]
#
# Starts its own throwaway cluster (hack/cluster/up.sh, binaries cached in ~/.cache/cvo/cluster)
# and stops it at the end, whatever happens. The bench is built with the release profile.
set -euo pipefail
cd "$(dirname "$0")/.."
# Built before the cluster starts, so the cluster's lifetime is the benchmark's.
cargo bench --bench apply --no-run --quiet
dir=$(mktemp -d)
trap 'hack/cluster/down.sh "$dir" >/dev/null 2>&1 || rm -rf "$dir"' EXIT
# Not KUBECONFIG: the bench deletes what it applies, so it only runs on a cluster named for it.
CVO_BENCH_KUBECONFIG=$(hack/cluster/up.sh "$dir")
export CVO_BENCH_KUBECONFIG
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cargo bench --bench apply --quiet -- "$@"
