#!/usr/bin/env bash
# DeploymentTarget binding at scale against a real kube-apiserver + etcd (what BENCHMARKS.md
# records under "DeploymentTarget binding"): N user-made targets, the controller started as its
# own process (`cvo controller deployment-targets`, release build), N claims created at once,
# timed until every claim is Bound, with the controller's CPU time, peak RSS, writes and
# reconciles. See benches/dt_bind.rs for what is measured.
#
#   hack/bench-dt.sh [--claims N[,N...]] [--bind class,named] [--runs R] [--concurrency C]
#                    [--stall SECONDS] [--timeout SECONDS]   (default 500, class, 3, 32, 60, 600)
#
# --bind class: the claims name only the class (the binder picks their targets); named: claim
# i names target i. It exits 1 when a run stalled (no claim bound for --stall seconds), after
# printing what the stalled claims show.
#
# Starts its own throwaway cluster (hack/cluster/up.sh, binaries cached in ~/.cache/cvo/cluster;
# no kube-controller-manager: binding needs none) and stops it at the end, whatever happens.
# The bench and the cvo binary it starts are built with the release profile.
set -euo pipefail
cd "$(dirname "$0")/.."
# Built before the cluster starts, so the cluster's lifetime is the benchmark's.
cargo bench --bench dt_bind --no-run --quiet
dir=$(mktemp -d)
trap 'hack/cluster/down.sh "$dir" >/dev/null 2>&1 || rm -rf "$dir"' EXIT
# Not KUBECONFIG: the bench installs CRDs and creates objects, so it only runs on a cluster
# named for it.
CVO_BENCH_KUBECONFIG=$(hack/cluster/up.sh "$dir")
export CVO_BENCH_KUBECONFIG
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cargo bench --bench dt_bind --quiet -- "$@"
