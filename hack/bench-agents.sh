#!/usr/bin/env bash
# Agent late binding at scale against a real kube-apiserver + etcd (what BENCHMARKS.md records
# under "Agent late binding"): `cvo controller agents` (release build, its own process, no
# leader election), `cvo agent simulate --hosts N` registering N hosts from one InfraEnv, timed
# until all are known-unbound; then B of them bound to one ClusterDeployment at once (kubectl
# patches, 16 in flight), timed until all B are `known` and bound (each went through
# `binding`, the simulated agent's exit and a new registration). Reports the controller's CPU
# time and its peak RSS (VmHWM).
#
#   hack/bench-agents.sh [HOSTS] [BIND]     (default 1000 500)
#
# Starts its own throwaway cluster (hack/cluster/up.sh) and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-1000}
bind=${2:-500}
# CVO_BIN: a cvo binary to use instead of building the release one (e.g. to try the script).
if [ -z "${CVO_BIN:-}" ]; then
  cargo build --release --bin cvo --quiet
fi
cvo=${CVO_BIN:-${CARGO_TARGET_DIR:-target}/release/cvo}
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  hack/cluster/down.sh "$dir" >/dev/null 2>&1 || rm -rf "$dir"
}
trap cleanup EXIT
KUBECONFIG=$(hack/cluster/up.sh "$dir")
export KUBECONFIG
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
{ "$cvo" crds; "$cvo" crds --component agents; } | kubectl apply --server-side -f - >/dev/null
kubectl wait --for condition=established --timeout=60s crd --all >/dev/null
kubectl create namespace bench >/dev/null
kubectl create namespace cvo-agents >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata: {name: pool, namespace: bench}
spec: {pullSecretRef: {name: pull-secret}}
---
apiVersion: hive.openshift.io/v1
kind: ClusterDeployment
metadata: {name: alpha, namespace: bench}
spec:
  clusterName: alpha
  baseDomain: example.com
  clusterInstallRef: {group: extensions.hive.openshift.io, version: v1beta1, kind: AgentClusterInstall, name: alpha}
---
apiVersion: extensions.hive.openshift.io/v1beta1
kind: AgentClusterInstall
metadata: {name: alpha, namespace: bench}
spec:
  clusterDeploymentRef: {name: alpha}
  # The simulated hosts' network: bound, they pass belongs-to-machine-cidr and become known.
  networking: {machineNetwork: [{cidr: 192.168.0.0/16}]}
EOF
"$cvo" controller agents --namespace cvo-agents --disable-leader-election \
  --metrics-address 127.0.0.1:0 --kubeconfig "$KUBECONFIG" >"$dir/controller.log" 2>&1 &
controller=$!
pids+=("$controller")
sleep 2
cpu() { awk '{print ($14 + $15) / 100}' "/proc/$controller/stat"; }
count() { # agents in state $1 (and bound when $2 is set)
  kubectl -n bench get agents -o json | python3 -c '
import json, sys
state, bound = sys.argv[1], sys.argv[2] == "bound"
items = json.load(sys.stdin)["items"]
print(sum(1 for a in items
          if a.get("status", {}).get("debugInfo", {}).get("state") == state
          and (not bound or a.get("status", {}).get("boundClusterDeployment"))))' "$1" "${2:-}"
}
t0=$(date +%s.%N)
"$cvo" agent simulate --infraenv bench/pool --hosts "$hosts" --kubeconfig "$KUBECONFIG" >"$dir/simulator.log" 2>&1 &
pids+=("$!")
until grep -q registered "$dir/simulator.log"; do sleep 0.2; done
t_registered=$(date +%s.%N)
until [ "$(count known-unbound)" -ge "$hosts" ]; do sleep 1; done
t_pool=$(date +%s.%N)
cpu_pool=$(cpu)
rss_pool=$(awk '/VmHWM/ {print $2}' "/proc/$controller/status")
seq 0 $((bind - 1)) | xargs -P 16 -I{} kubectl -n bench patch agent "pool-{}" --type merge \
  -p '{"spec":{"clusterDeploymentName":{"name":"alpha","namespace":"bench"}}}' >/dev/null
t_patched=$(date +%s.%N)
until [ "$(count known bound)" -ge "$bind" ]; do sleep 1; done
t_bound=$(date +%s.%N)
rss=$(awk '/VmHWM/ {print $2}' "/proc/$controller/status")
echo "hosts registered (simulator): $(echo "$t_registered - $t0" | bc) s"
echo "all $hosts known-unbound: $(echo "$t_pool - $t0" | bc) s; controller CPU $cpu_pool s; peak RSS $((rss_pool / 1024)) MiB"
echo "$bind patches sent: $(echo "$t_patched - $t_pool" | bc) s"
echo "all $bind bound and known: $(echo "$t_bound - $t_pool" | bc) s after the first patch; controller CPU $(cpu) s in all; peak RSS $((rss / 1024)) MiB"
