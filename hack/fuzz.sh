#!/usr/bin/env bash
# Coverage-guided fuzzing with AFL++ (afl.rs) on the stable toolchain.
#
#   hack/fuzz.sh TARGET SECONDS   # one of: yaml json template manifest extract
#   hack/fuzz.sh all SECONDS      # each target in turn, SECONDS each
#
# Installs what is missing (cargo-afl under $XDG_CACHE_HOME/cvo/tools, the AFL++ runtime it
# builds under $XDG_CACHE_HOME/cvo/afl; ~/.cache when XDG_CACHE_HOME is unset), builds the
# instrumented targets (fuzz/, cached in $XDG_CACHE_HOME/cvo/fuzz-target), builds the seed corpus at run time from fuzz/seeds, the bundled
# payloads and ../shared/corpus ($CVO_CORPUS_DIR) when present (required with
# CVO_REQUIRE_CORPUS=1), and runs afl-fuzz for SECONDS. Exits non-zero when a target crashes
# (a panic, an abort, a broken invariant; over CVO_FUZZ_MEMORY_MB of memory) or hangs (an input
# taking over CVO_FUZZ_TIMEOUT_MS), printing the input and what the target said. Findings stay
# in fuzz/out/TARGET/default/{crashes,hangs} until the next run.
#
#   CVO_FUZZ_TIMEOUT_MS   hang timeout per input (default 1000)
#   CVO_FUZZ_MEMORY_MB    memory limit of the target (default 2048)
#   CVO_FUZZ_TARGET_DIR   cargo target directory of the fuzz build
#   CVO_FUZZ_RESUME=1     continue from fuzz/out/TARGET's queue instead of the seeds
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

targets=(yaml json template manifest extract)
if [ $# -ne 2 ] || ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt 1 ]; then
  echo "usage: hack/fuzz.sh TARGET|all SECONDS (targets: ${targets[*]})" >&2
  exit 2
fi
target=$1
seconds=$2
if [ "$target" = all ]; then
  failed=()
  for t in "${targets[@]}"; do
    "$0" "$t" "$seconds" || failed+=("$t")
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "hack/fuzz.sh: findings in: ${failed[*]}" >&2
    exit 1
  fi
  exit 0
fi
if ! printf '%s\n' "${targets[@]}" | grep -qx -- "$target"; then
  echo "hack/fuzz.sh: unknown target $target (targets: ${targets[*]} or all)" >&2
  exit 2
fi

# ---- install what is missing -------------------------------------------------------------
afl_version=0.18.2
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cvo
tools=$cache/tools
export PATH="$tools/bin:$HOME/.cargo/bin:$PATH"
# cargo-afl keeps the AFL++ it builds in the XDG data directory: keep it in the cache.
export XDG_DATA_HOME=$cache/afl
if ! command -v make >/dev/null || ! command -v cc >/dev/null; then
  echo "==> installing make and a C compiler (cargo-afl builds AFL++ from source)"
  apt-get update -qq && apt-get install -y -qq build-essential >/dev/null
fi
if ! command -v python3 >/dev/null; then
  echo "==> installing python3 (writes the extract seeds)"
  apt-get update -qq && apt-get install -y -qq python3 >/dev/null
fi
if ! cargo-afl afl --version 2>/dev/null | grep -q "^cargo-afl $afl_version "; then
  echo "==> installing cargo-afl $afl_version into $tools"
  cargo install --quiet --locked --force --root "$tools" cargo-afl --version "$afl_version"
fi
# Installing cargo-afl builds AFL++ for the current rustc; another rustc needs its own build.
afl_dir=$XDG_DATA_HOME/afl.rs/rustc-$(rustc -vV | awk '/^release:/ {r = $2} /^commit-hash:/ {h = substr($2, 1, 7)} END {print r "-" h}')/afl.rs-$afl_version/afl
if [ ! -x "$afl_dir/bin/afl-fuzz" ]; then
  echo "==> building AFL++ (cargo afl config --build)"
  cargo afl config --build --force
fi

# ---- build -------------------------------------------------------------------------------
# The fuzz crate resolves the main crate's dependencies as Cargo.lock pins them.
if [ ! -e fuzz/Cargo.lock ] || [ Cargo.lock -nt fuzz/Cargo.lock ]; then
  cp Cargo.lock fuzz/Cargo.lock
fi
export CARGO_TARGET_DIR=${CVO_FUZZ_TARGET_DIR:-$cache/fuzz-target}
# Instruments only the crates the targets exercise (see the wrapper).
export RUSTC_WRAPPER=$repo/fuzz/rustc-wrapper.sh
started=$SECONDS
echo "==> cargo afl build (fuzz/, $CARGO_TARGET_DIR)"
cargo afl build --quiet --release --manifest-path fuzz/Cargo.toml --bins
echo "    built in $((SECONDS - started)) s"
binary=$CARGO_TARGET_DIR/release/$target

# ---- seed corpus -------------------------------------------------------------------------
out=$repo/fuzz/out/$target
seeds=$out/seeds
rm -rf "$seeds"
mkdir -p "$seeds"
corpus=${CVO_CORPUS_DIR:-$repo/../shared/corpus}
if [ ! -d "$corpus" ]; then
  [ "${CVO_REQUIRE_CORPUS:-}" != 1 ] || { echo "hack/fuzz.sh: no corpus at $corpus" >&2; exit 1; }
  echo "    (no corpus at $corpus: seeds from fuzz/seeds and payloads/ only)"
fi
# Files up to this size: larger ones slow every execution for little new coverage.
max_seed_bytes=16384
add_seeds() { # DIR... : copies the regular files of the directories given (those that exist)
  local dir
  for dir in "$@"; do
    [ -d "$dir" ] || continue
    find "$dir" -maxdepth 1 -type f -size -"$((max_seed_bytes + 1))"c -print0 |
      while IFS= read -r -d '' f; do
        cp "$f" "$seeds/$(sha1sum <"$f" | cut -c1-16)"
      done
  done
}
case $target in
  yaml | manifest)
    add_seeds fuzz/seeds/yaml fuzz/seeds/manifest payloads/*/release-manifests \
      "$corpus"/openshift-payload/release-manifests "$corpus"/openshift-payload/manifests ;;
  template)
    add_seeds fuzz/seeds/template payloads/*/manifests "$corpus"/openshift-payload/manifests ;;
  json)
    add_seeds fuzz/seeds/json "$corpus"/cvo-testdata/*/release-manifests
    for f in payloads/*/release-manifests/* "$corpus"/openshift-payload/release-manifests/*; do
      # JSON documents: release-metadata, image-references and the JSON manifests.
      if [ -f "$f" ] && [ "$(head -c1 "$f")" = "{" ] && [ "$(wc -c <"$f")" -le $((max_seed_bytes * 4)) ]; then
        cp "$f" "$seeds/$(sha1sum <"$f" | cut -c1-16)"
      fi
    done ;;
  extract)
    python3 fuzz/seeds/extract.py "$seeds" payloads/4.18.0 ;;
esac
dict=
case $target in
  yaml | manifest | template) dict=fuzz/dict/yaml.dict ;;
  json) dict=fuzz/dict/json.dict ;;
  extract) dict=fuzz/dict/tar.dict ;;
esac

# ---- fuzz --------------------------------------------------------------------------------
input=(-i "$seeds")
if [ "${CVO_FUZZ_RESUME:-}" = 1 ] && [ -d "$out/default/queue" ]; then
  input=(-i -)
else
  rm -rf "$out/default"
fi
# The extract target makes a directory per input: on a RAM disk, removed after the run.
scratch=$(mktemp -d "$( [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/cvo-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
timeout_ms=${CVO_FUZZ_TIMEOUT_MS:-1000}
echo "==> afl-fuzz $target for ${seconds}s ($(ls "$seeds" | wc -l) seeds, hang timeout ${timeout_ms} ms)"
status=0
TMPDIR=$scratch \
  AFL_NO_UI=1 AFL_QUIET=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_FAST_CAL=1 \
  AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
  "$afl_dir/bin/afl-fuzz" "${input[@]}" -o "$out" -V "$seconds" -t "$timeout_ms" \
  -m "${CVO_FUZZ_MEMORY_MB:-2048}" -x "$dict" -- "$binary" >"$out/afl.log" 2>&1 || status=$?

stats=$out/default/fuzzer_stats
if [ ! -f "$stats" ]; then
  tail -n 30 "$out/afl.log" >&2
  echo "hack/fuzz.sh: afl-fuzz did not run (status $status)" >&2
  exit 1
fi
stat() { awk -F' *: *' -v k="$1" '$1 == k {print $2}' "$stats"; }
crashes=$(stat saved_crashes)
hangs=$(stat saved_hangs)
echo "    $target: $(stat execs_done) executions in $(stat run_time) s ($(stat execs_per_sec) exec/s)," \
  "$(stat edges_found) of $(stat total_edges) edges ($(stat bitmap_cvg)), $(stat corpus_count) inputs in the queue," \
  "stability $(stat stability): $crashes crashes, $hangs hangs"
if [ "$status" -ne 0 ]; then
  tail -n 30 "$out/afl.log" >&2
  echo "hack/fuzz.sh: afl-fuzz exited with status $status" >&2
  exit 1
fi
# afl-fuzz skips a seed that crashes or hangs with a warning: a finding too.
bad_seeds=()
while IFS= read -r name; do
  bad_seeds+=("$seeds/$name")
done < <(grep -aoE "Test case '[^']*orig:[^']+' results in a (crash|timeout)" "$out/afl.log" |
  sed -E "s/.*orig:([^']+)'.*/\1/")
if [ ${#bad_seeds[@]} -gt 0 ]; then
  echo "    $target: ${#bad_seeds[@]} seeds crash or hang" >&2
fi
if [ "$crashes" != 0 ] || [ "$hangs" != 0 ] || [ ${#bad_seeds[@]} -gt 0 ]; then
  for f in "${bad_seeds[@]}" "$out"/default/crashes/id:* "$out"/default/hangs/id:*; do
    [ -f "$f" ] || continue
    echo "--- $f" >&2
    # What the target says (the panic message), or a note that it ran out of time.
    RUST_BACKTRACE=0 timeout 10 sh -c '"$0" <"$1" 2>&1 || echo "(exit status $?)"' "$binary" "$f" |
      head -n 6 >&2 || true
  done
  echo "hack/fuzz.sh: $target: reproduce with: $binary < FILE" >&2
  echo "hack/fuzz.sh: once fixed, keep the input in fuzz/regressions/$target/ (tests/fuzz_replay.rs replays it)" >&2
  exit 1
fi
