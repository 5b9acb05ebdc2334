#!/usr/bin/env bash
# `cvo payload new` of the bundled payload (payloads/4.18.0) into a release image, and its push
# to a real registry (what BENCHMARKS.md records under "Building release images").
#
#   hack/bench-release.sh [RUNS]      (default 5)
#
# Builds cvo in the release profile (the operator binary the image carries is that cvo; CVO_BIN=PATH
# uses another build), starts
# a throwaway registry (hack/registry/up.sh, Debian docker-registry on 127.0.0.1), then times,
# best and median of RUNS with `date +%s.%N`:
#   layout  `cvo payload new --from-dir payloads/4.18.0 --to oci-layout:DIR` (a fresh DIR each
#           run): the operator layer, the payload layer, configs, manifests, written to disk
#   push    the same with `--to REGISTRY/bench-N/release`: a new repository each run, so every
#           blob is uploaded (the registry already holding them would skip the uploads)
#   again   `--to REGISTRY/bench-1/release` once more: nothing to upload but the manifest
# and prints the image's size: each layer (gzip) and the total of its blobs, with the
# uncompressed binary and payload sizes. The registry and every temporary file are removed at
# the end, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
# CVO_BIN=PATH times that binary instead of a fresh release build.
cvo=${CVO_BIN:-}
if [ -z "$cvo" ]; then
  target=${CARGO_TARGET_DIR:-target}
  cargo build --release --quiet --bin cvo
  cvo=$(cd "$target/release" && pwd)/cvo
fi

tmp=$(mktemp -d)
cleanup() {
  hack/registry/down.sh "$tmp/registry" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
export CVO_CACHE_DIR=$tmp/cache

addr=$(hack/registry/up.sh "$tmp/registry")
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cvo: $(stat -c %s "$cvo") bytes ($cvo); payload: $(find payloads/4.18.0 -type f | wc -l) files, $(du -sb payloads/4.18.0 | cut -f1) bytes"

# best and median of the seconds on standard input, one a line
stats() { sort -n | awk '{a[NR]=$1} END {printf "best %.3f s, median %.3f s", a[1], a[int((NR+1)/2)]}'; }
elapsed() {
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

for i in $(seq 1 "$runs"); do
  elapsed "$cvo" payload new --from-dir payloads/4.18.0 --to "oci-layout:$tmp/layout-$i"
done | stats | sed 's/^/layout: /'
echo
for i in $(seq 1 "$runs"); do
  elapsed "$cvo" payload new --from-dir payloads/4.18.0 --to "$addr/bench-$i/release"
done | stats | sed 's/^/push:   /'
echo
elapsed "$cvo" payload new --from-dir payloads/4.18.0 --to "$addr/bench-1/release" |
  awk '{printf "again:  %.3f s (every blob already there)\n", $1}'

# The image: the same digest every run (reproducible), its blobs.
digests=$(for i in $(seq 1 "$runs"); do jq -r '.manifests[0].digest' "$tmp/layout-$i/index.json"; done | sort -u)
echo "digest: $digests ($(echo "$digests" | wc -l) distinct over $runs builds)"
layout=$tmp/layout-1
manifest=$layout/blobs/sha256/$(jq -r '.manifests[0].digest' "$layout/index.json" | cut -d: -f2)
jq -r '.layers[] | "\(.digest) \(.size)"' "$manifest" | while read -r digest size; do
  echo "layer:  $digest $size bytes (gzip)"
done
echo "image:  $(du -cb "$layout"/blobs/sha256/* | tail -1 | cut -f1) bytes in $(ls "$layout"/blobs/sha256 | wc -l) blobs"
