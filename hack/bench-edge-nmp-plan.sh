#!/usr/bin/env bash
# `cvo edge nmp plan` over a generated fleet: N cluster nodes (default 10,000) on three
# build-numbered agent versions and three patterns, two NMPs (an IBM-org manifest at latest
# with a 24 h window, a seed atLeastVersion minimum), timed with the release build.
# Usage: hack/bench-edge-nmp-plan.sh [N]   (CVO=path/to/cvo to time another binary)
set -euo pipefail
n=${1:-10000}
cvo=${CVO:-${CARGO_TARGET_DIR:-target}/release/cvo}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir" "$n" <<'PY'
import json, os, random, sys
out, n = sys.argv[1], int(sys.argv[2])
r = random.Random(1)
os.makedirs(f"{out}/policies"); os.makedirs(f"{out}/manifests/IBM")
nodes = {f"myorg/node{i:05d}": {"name": f"node{i:05d}", "nodeType": "cluster",
         "arch": r.choice(["amd64", "arm64"]), "pattern": r.choice(["myorg/web", "myorg/db", ""]),
         "softwareVersions": {"horizon": r.choice(["2.30.0-1400", "2.31.0-1001", "2.31.0-1498"])}}
         for i in range(n)}
json.dump({"nodes": nodes, "lastIndex": 0}, open(f"{out}/nodes.json", "w"))
json.dump({"softwareUpgrade": {"files": ["*"], "version": "latest"}},
          open(f"{out}/manifests/IBM/edgeNodeFiles_manifest_2.31.0.json", "w"))
json.dump({"owner": "myorg/admin", "label": "web", "patterns": ["web"], "enabled": True,
           "start": "2026-03-01T00:00:00Z", "startWindow": 86400,
           "agentUpgradePolicy": {"manifest": "IBM/edgeNodeFiles_manifest_2.31.0"}},
          open(f"{out}/policies/web.json", "w"))
json.dump({"owner": "myorg/admin", "label": "db", "patterns": ["db"], "enabled": True,
           "start": "2026-03-02T00:00:00Z", "startWindow": 3600,
           "agentUpgradePolicy": {"atLeastVersion": "2.31.0-1001"}}, open(f"{out}/policies/db.json", "w"))
json.dump({"agentSoftwareVersions": ["2.30.0-1400", "2.31.0-1001", "2.31.0-1498"]},
          open(f"{out}/versions.json", "w"))
PY
for format in json table; do
  /usr/bin/time -f "$n nodes, -o $format: %e s wall, %U s user, %M KiB peak" \
    "$cvo" edge nmp plan --nodes "$dir/nodes.json" --policies "$dir/policies" \
      --versions "$dir/versions.json" --manifests "$dir/manifests" \
      --now 2026-02-28T00:00:00Z -o "$format" 2>&1 >/dev/null | grep -v '^warning:'
done
