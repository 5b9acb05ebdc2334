#!/usr/bin/env bash
# cvo against the upstream oracle (hack/upstream/) on the real corpus, as whole processes, side
# by side in one run: `cvo render --format json` vs `upstream render`, `cvo explain -o json` vs
# `upstream explain`. Checks first that both write the same rendering and the same decisions.
# Usage: hack/bench-upstream.sh [RUNS]   (default 20; hyperfine when installed, else best of RUNS)
# What BENCHMARKS.md records. The corpus is copied with a release-metadata (4.18.0) added, as
# upstream needs one to know the version; renderings go to /dev/shm when it exists.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
corpus=${CVO_CORPUS_DIR:-../shared/corpus}/openshift-payload
[ -d "$corpus" ] || { echo "hack/bench-upstream.sh: no corpus at $corpus" >&2; exit 1; }
cargo build --release --quiet --bin cvo
cvo=${CARGO_TARGET_DIR:-target}/release/cvo
upstream=$(hack/upstream/build.sh)
work=$(mktemp -d "$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp )/cvo-bench-upstream.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/payload"
cp -r "$corpus/manifests" "$corpus/release-manifests" "$work/payload/"
chmod -R u+w "$work/payload"
printf '{"kind":"cincinnati-metadata-v0","version":"4.18.0"}' >"$work/payload/release-manifests/release-metadata"
p="$work/payload"
image=quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64
# Both with the same cluster: cvo's default capabilities (vCurrent), as known/enabled lists.
caps=$("$cvo" capabilities -o json | python3 -c 'import json,sys; c=json.load(sys.stdin); print(",".join(c["knownCapabilities"]), ",".join(c["enabledCapabilities"]))')
known=${caps% *} enabled=${caps#* }
cvo_render=("$cvo" render --format json --payload "$p" --release-image "$image" --output-dir "$work/cvo")
up_render=("$upstream" render --payload "$p" --release-image "$image" --known-capabilities "$known" --enabled-capabilities "$enabled" --output-dir "$work/upstream")
cvo_explain=("$cvo" explain -o json --payload "$p" --release-image "$image")
up_explain=("$upstream" explain --payload "$p" --release-image "$image" --known-capabilities "$known" --enabled-capabilities "$enabled")

"${cvo_render[@]}" >/dev/null 2>&1
"${up_render[@]}" >/dev/null
diff -r -x .cvo-render "$work/cvo/manifests" "$work/upstream/manifests" >/dev/null || { echo "render outputs differ" >&2; exit 1; }
python3 - "$work" <(RUST_LOG=error "${cvo_explain[@]}") <("${up_explain[@]}") <<'PY' || exit 1
import json, sys
c, u = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))["documents"]
pick = lambda d: [(x["dir"], x["file"], x["index"], x["included"], x["reason"]) for x in d]
if pick(c) != pick(u):
    sys.exit("explain decisions differ")
print(f"identical output: {len(c)} documents, {sum(x['included'] for x in c)} included")
PY
size=$(du -sb "$p/manifests" "$p/release-manifests" | awk '{s+=$1} END {print s}')
echo "corpus: $corpus ($size bytes), $(nproc) cores"

q() { printf '%q ' "$@"; }
if command -v hyperfine >/dev/null 2>&1; then
  hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/times.json" \
    -n "cvo render" "$(q "${cvo_render[@]}")" -n "upstream render" "$(q "${up_render[@]}")" \
    -n "cvo explain" "$(q "${cvo_explain[@]}")" -n "upstream explain" "$(q "${up_explain[@]}")" >&2
  python3 - "$work/times.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for what in ("render", "explain"):
    c, u = r[f"cvo {what}"], r[f"upstream {what}"]
    print(f"{what:8} cvo {c['mean']*1000:6.1f} ± {c['stddev']*1000:4.1f} ms (user {c['user']*1000:5.1f}, sys {c['system']*1000:4.1f})"
          f"   upstream {u['mean']*1000:6.1f} ± {u['stddev']*1000:4.1f} ms (user {u['user']*1000:5.1f}, sys {u['system']*1000:4.1f})"
          f"   ratio {c['mean']/u['mean']:.2f}x")
PY
else
  best() {
    for _ in $(seq "$runs"); do
      /usr/bin/time -f "%e" "$@" 2>&1 >/dev/null | tail -1
    done | sort -n | head -1
  }
  for what in render explain; do
    eval "c=(\"\${cvo_$what[@]}\")" "u=(\"\${up_$what[@]}\")"
    tc=$(best "${c[@]}") tu=$(best "${u[@]}")
    echo "$what: cvo ${tc}s, upstream ${tu}s, ratio $(echo "$tc / $tu" | bc -l | cut -c1-4)x (best of $runs; install hyperfine for mean ± σ)"
  done
fi
