#!/usr/bin/env bash
# Wall time and peak memory of the cvo binary on the real corpus (what BENCHMARKS.md records).
# Usage: hack/bench.sh [RUNS]   (default 10; prints the best run of each command)
# The rendering goes to /dev/shm when it exists, so the file system of the machine does not
# dominate (see BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
corpus=${CVO_CORPUS_DIR:-../shared/corpus}/openshift-payload
[ -d "$corpus" ] || { echo "hack/bench.sh: no corpus at $corpus" >&2; exit 1; }
cargo build --release --quiet
out=$( [ -d /dev/shm ] && echo /dev/shm/cvo-bench || echo _output/bench )
size=$(du -sb "$corpus/manifests" "$corpus/release-manifests" | awk '{s+=$1} END {print s}')
echo "corpus: $corpus ($size bytes), best of $runs runs"
best() {
  local label=$1; shift
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %U %S %M" "$@" 2>&1 >/dev/null | tail -1
  done | sort -n | head -1 | awk -v l="$label" -v size="$size" \
    '{printf "%-8s wall %.2f s  user %.2f s  sys %.2f s  peak RSS %d KB (%.1fx the payload)\n", l, $1, $2, $3, $4, $4*1024/size}'
}
best hash ./target/release/cvo hash --payload "$corpus"
best explain ./target/release/cvo explain -o json --payload "$corpus"
best render ./target/release/cvo render --payload "$corpus" --output-dir "$out"
best validate ./target/release/cvo validate -o json --payload "$corpus"
rm -rf "$out"

# The upgrade corpus, with the release-metadata it lacks added in a temporary copy.
upgrade=$(mktemp -d)
trap 'rm -rf "$upgrade"' EXIT
for side in old:4.14.0 new:4.15.0; do
  cp -r "${corpus%/openshift-payload}/openshift-upgrade/${side%%:*}" "$upgrade/"
  chmod -R u+w "$upgrade/${side%%:*}"
  printf '{"kind":"cincinnati-metadata-v0","version":"%s"}' "${side#*:}" > "$upgrade/${side%%:*}/release-manifests/release-metadata"
done
best plan ./target/release/cvo plan -o json --capabilities-baseline v4.14 --from "$upgrade/old" --to "$upgrade/new"
