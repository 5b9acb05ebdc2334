#!/usr/bin/env bash
# Loading the real OpenShift corpus through a local registry, against loading it from its
# directory (what BENCHMARKS.md records under "Through a local registry").
#
#   hack/bench-registry.sh [RUNS]      (default 10)
#
# Starts a throwaway registry (hack/registry/up.sh, Debian docker-registry on 127.0.0.1), packs
# a temporary copy of the corpus (with the release-metadata it lacks) and pushes it with
# `cvo payload push`, then times, with the release build:
#   cold      `cvo payload info REF` with a fresh --cache-dir each run: manifest, config and
#             layer download, digest checks, extraction, load
#   cached    the same with one cache dir: by tag (one manifest request to the registry, no
#             extraction) and by digest (no network at all)
#   directory `cvo payload info DIR` on the directory that was pushed
# and the same four for `cvo render` (into /dev/shm when there is one). hyperfine when
# installed (apt-get install hyperfine), else best and median of RUNS with `date +%s.%N`.
# The registry and every temporary file are removed at the end, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
corpus=${CVO_CORPUS_DIR:-../shared/corpus}/openshift-payload
[ -d "$corpus/release-manifests" ] || {
  echo "hack/bench-registry.sh: no corpus at $corpus (set CVO_CORPUS_DIR)" >&2
  exit 1
}
cargo build --release --quiet
cvo=$PWD/target/release/cvo

tmp=$(mktemp -d)
shm=$( [ -d /dev/shm ] && mktemp -d /dev/shm/cvo-bench-registry.XXXXXX || mktemp -d )
cleanup() {
  hack/registry/down.sh "$tmp/registry" >/dev/null 2>&1 || true
  rm -rf "$tmp" "$shm"
}
trap cleanup EXIT

# The corpus is read-only and has no release-metadata (push takes the version from it).
payload=$tmp/payload
mkdir -p "$payload"
cp -r "$corpus/manifests" "$corpus/release-manifests" "$payload/"
chmod -R u+w "$payload"
printf '{"kind":"cincinnati-metadata-v0","version":"4.18.0"}' > "$payload/release-manifests/release-metadata"

addr=$(hack/registry/up.sh "$tmp/registry")
ref=$addr/openshift/release:corpus
start=$(date +%s.%N)
pushed=$("$cvo" payload push --cache-dir "$tmp/push-cache" "$payload" "$ref")
push_s=$(printf '%.2f' "$(echo "$(date +%s.%N) - $start" | bc)")
digest=${pushed##* }
by_digest=$addr/openshift/release@$digest
layer=$(ls -S "$tmp"/registry/data/docker/registry/v2/blobs/sha256/*/*/data | head -1)

files=$(find "$payload/manifests" "$payload/release-manifests" -type f | wc -l)
size=$(du -sb "$payload/manifests" "$payload/release-manifests" | awk '{s+=$1} END {print s}')
echo "corpus: $files files, $size bytes; layer $(stat -c %s "$layer") bytes (gzip)"
echo "push:   ${push_s}s ($ref, $digest)"
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# Warm the caches the cached runs use (and check every variant works before timing it).
"$cvo" payload info --cache-dir "$tmp/cache" "$ref" >/dev/null
"$cvo" payload info --cache-dir "$tmp/cache" "$by_digest" >/dev/null
"$cvo" payload info "$payload" >/dev/null

# name, prepare command (run before each timing, untimed), command
bench_loop() {
  local name=$1 prepare=$2 cmd=$3 times=()
  for _ in $(seq "$runs"); do
    bash -c "$prepare"
    local t0 t1
    t0=$(date +%s.%N)
    # The corpus has no image-references: render warns about it on every run.
    bash -c "$cmd" >/dev/null 2>&1 || { echo "failed: $cmd" >&2; exit 1; }
    t1=$(date +%s.%N)
    times+=("$(echo "$t1 - $t0" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v n="$name" '
    { t[NR] = $1 }
    END { printf "%-34s best %.3f s  median %.3f s  (%d runs)\n", n, t[1], t[int((NR + 1) / 2)], NR }'
}

info="$cvo payload info --quiet"
render="$cvo render --quiet --force --output-dir $shm/out"
if command -v hyperfine >/dev/null 2>&1; then
  for what in info render; do
    cmd=${!what}
    src_flag=""
    [ "$what" = render ] && src_flag="--payload"
    hyperfine -N --warmup 2 --runs "$runs" --style basic \
      --export-markdown "$tmp/$what.md" \
      --prepare "rm -rf $tmp/cold" --prepare true --prepare true --prepare true \
      -n "$what: registry, cold (new cache)" "$cmd --cache-dir $tmp/cold $src_flag $ref" \
      -n "$what: registry by tag, cached" "$cmd --cache-dir $tmp/cache $src_flag $ref" \
      -n "$what: registry by digest, cached" "$cmd --cache-dir $tmp/cache $src_flag $by_digest" \
      -n "$what: directory" "$cmd $src_flag $payload" >&2
    cat "$tmp/$what.md"
  done
else
  for what in info render; do
    cmd=${!what}
    src_flag=""
    [ "$what" = render ] && src_flag="--payload"
    bench_loop "$what: registry, cold (new cache)" "rm -rf $tmp/cold" "$cmd --cache-dir $tmp/cold $src_flag $ref"
    bench_loop "$what: registry by tag, cached" true "$cmd --cache-dir $tmp/cache $src_flag $ref"
    bench_loop "$what: registry by digest, cached" true "$cmd --cache-dir $tmp/cache $src_flag $by_digest"
    bench_loop "$what: directory" true "$cmd $src_flag $payload"
  done
fi
