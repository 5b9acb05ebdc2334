#!/usr/bin/env bash
# The project's test command: installs what the tests need if it is missing (idempotent), then
# formatting, lints, docs and every test target. Used by .ci/run and by developers alike. Each
# phase's time is printed at the end, also when a phase fails.
#
#   hack/test.sh            # everything
#   CVO_REQUIRE_CORPUS=1    # fail (instead of skip) when ../shared/corpus is absent
#   CVO_REQUIRE_CLUSTER=1   # fail (instead of skip) when the test cluster cannot start
#   CVO_REQUIRE_REGISTRY=1  # fail (instead of skip) when the test registry cannot start
#   CVO_REQUIRE_UPSTREAM=1  # fail (instead of skip) when the upstream oracle cannot be built
#   CVO_REQUIRE_GPG=1       # fail (instead of skip) when GnuPG is missing (the signature tests)
#   CVO_REQUIRE_PROMETHEUS=1 # fail (instead of skip) when Prometheus is missing (the risk tests)
#   CVO_PRUNE_TARGET=1      # delete what earlier builds left in the target directory (CI's cache)
#
# Coverage-guided fuzzing is not part of it (hack/fuzz.sh); the fuzz seeds and regressions are
# replayed by tests/fuzz_replay.rs in the normal test build.
set -euo pipefail
cd "$(dirname "$0")/.."

phases=()
phase_started=$SECONDS
phase_name=
run_started=$SECONDS
# phase NAME: ends the running phase (recording its time) and starts NAME.
phase() {
  if [ -n "$phase_name" ]; then
    phases+=("$(printf '%6d s  %s' $((SECONDS - phase_started)) "$phase_name")")
  fi
  phase_name=$1
  phase_started=$SECONDS
  [ -z "$1" ] || echo "==> $1"
}
report() {
  local status=$?
  rm -f "${artifacts:-}" "${go_log:-}"
  [ -z "$phase_name" ] || phase "" # records the phase running when the script stopped
  echo "==> phase times"
  printf '%s\n' "${phases[@]}"
  printf '%6d s  total (exit %d)\n' $((SECONDS - run_started)) "$status"
}
trap report EXIT

# A debug build of every target from nothing takes ~6 GB under the target directory, and a warm
# one whose dependencies changed holds the old and the new binaries until the prune below. Say
# so before a link dies of a full disk (SIGBUS, "No space left on device").
target_dir=${CARGO_TARGET_DIR:-target}
df_dir=$target_dir
while [ ! -d "$df_dir" ]; do df_dir=$(dirname "$df_dir"); done
free_gb=$(($(df -Pk "$df_dir" | awk 'NR == 2 { print $4 }') / 1024 / 1024))
if [ "$free_gb" -lt 12 ]; then
  echo "warning: ${free_gb} GB free on the file system of $target_dir; the build may need 12 GB." \
    "Free some space (cargo clean, or delete $target_dir/debug/incremental)" >&2
fi
artifacts=$(mktemp)

# prune_target ARTIFACTS_JSON, with CVO_PRUNE_TARGET=1 (.ci/run sets it): cargo never deletes
# what it built, so every change of a dependency's version or of the profile (a new hash in
# every file name) left the binaries and libraries of the older builds behind, with their
# incremental caches: CI's cached target directory grew by GBs a run until the disk filled.
# This deletes, under debug/deps and debug/examples, the executables and libraries (rlib,
# rmeta, proc-macro .so) that none of this run's builds listed (cargo lists the fresh ones too)
# and that have no second link (cargo's copy of the newest binary under its plain name,
# debug/cvo), and temporary files of links that died (no link runs once the test build is
# done); incremental caches no build has written for a day (a target that stayed fresh does
# not write its cache, which stays valid). Off by default: on a developer's directory it would
# also delete what other builds made (an IDE's cargo check, a build with other features),
# which then only costs rebuilds.
prune_target() {
  local json=$1 keep candidates stale dir
  keep=$(mktemp)
  candidates=$(mktemp)
  stale=$(mktemp)
  # Every path the builds listed is kept (also those of the example's check, under examples/).
  # (grep exits 1 when nothing matches and find when a directory is missing: neither is an
  # error here, under set -e and pipefail.)
  grep -o '"/[^"]*"' "$json" | tr -d '"' | sort -u >"$keep" || true
  while IFS= read -r dir; do
    [ -d "$dir/incremental" ] &&
      find "$dir/incremental" -mindepth 1 -maxdepth 1 -type d -mmin +1440 -exec rm -rf {} + || true
    find "$dir/deps" "$dir/examples" -maxdepth 1 -type f -links 1 \
      \( -name 'lib*.rlib' -o -name 'lib*.rmeta' -o -name 'lib*.so' -o -name '*.tmp*' \
      -o \( ! -name '*.*' -perm -u+x \) \) \
      >>"$candidates" 2>/dev/null || true
  done < <(grep '/deps/' "$keep" | sed 's|/deps/[^/]*$||' | sort -u || true)
  grep -vxF -f "$keep" "$candidates" >"$stale" || true
  if [ -s "$stale" ]; then
    echo "==> pruned what earlier builds left: $(wc -l <"$stale") file(s)," \
      "$(xargs -d '\n' du -m <"$stale" | awk '{ mb += $1 } END { print mb }') MB"
    xargs -d '\n' rm -f <"$stale"
  fi
  rm -f "$keep" "$candidates" "$stale"
}

phase "hack/install-deps.sh"
hack/install-deps.sh

phase "cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check

# The cluster tests need kube-apiserver and etcd, and kube-controller-manager for those that set
# CVO_CLUSTER_CONTROLLERS (namespace deletion, garbage collection): build.sh builds all three,
# ~5 min cold for kube-apiserver + ~1.5 min for kube-controller-manager, cached in
# ${XDG_CACHE_HOME:-~/.cache}/cvo/cluster, so later runs start at once. The upstream oracle
# (tests/upstream.rs) is built with them, and hive's CRDs are generated from hive's API module
# with controller-gen (hack/hive-crd/, ~2 min cold, cached in ${XDG_CACHE_HOME:-~/.cache}/cvo/hive-crd)
# for the hub test of tests/cluster.rs. All are Go builds and run beside the Rust build below,
# which they do not share anything with.
phase "hack/cluster/build.sh + hack/upstream/build.sh + hack/hive-crd/gen.sh (in the background)"
go_log=$(mktemp)
(
  status=0
  hack/cluster/build.sh || status=1
  hack/upstream/build.sh >/dev/null || status=$((status + 2))
  hack/hive-crd/gen.sh >/dev/null || status=$((status + 4))
  exit $status
) >"$go_log" 2>&1 &
go_pid=$!

# clippy and doc share the dependencies' metadata builds (check mode); the test build then
# compiles each crate once more into code, which no lint pass can share.
# Every build lists what it used (JSON on stdout; its messages still go to stderr as text), so
# that prune_target keeps exactly those files.
phase "cargo clippy"
cargo clippy --all-targets --locked --message-format=json-render-diagnostics -- -D warnings >>"$artifacts"
# The fuzz crate resolves the main crate's dependencies as Cargo.lock pins them (as hack/fuzz.sh).
if [ ! -e fuzz/Cargo.lock ] || [ Cargo.lock -nt fuzz/Cargo.lock ]; then
  cp Cargo.lock fuzz/Cargo.lock
fi
# The render-only build (no cluster, no registry client) must keep compiling.
phase "cargo clippy --no-default-features"
cargo clippy --no-default-features --locked --message-format=json-render-diagnostics -- -D warnings >>"$artifacts"
phase "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --quiet --message-format=json-render-diagnostics >>"$artifacts"
phase "cargo test --no-run"
cargo test --all-targets --locked --no-run --message-format=json-render-diagnostics >>"$artifacts"
[ "${CVO_PRUNE_TARGET:-}" != 1 ] || prune_target "$artifacts"

phase "wait for the Go builds"
go_status=0
wait "$go_pid" || go_status=$?
cat "$go_log"
rm -f "$go_log"
if [ $((go_status & 1)) != 0 ]; then
  [ "${CVO_REQUIRE_CLUSTER:-}" != 1 ] || exit 1
  echo "warning: cannot build the test cluster; the cluster tests will skip" >&2
fi
if [ $((go_status & 2)) != 0 ]; then
  [ "${CVO_REQUIRE_UPSTREAM:-}" != 1 ] || exit 1
  echo "warning: cannot build the upstream oracle; tests/upstream.rs will skip" >&2
fi
if [ $((go_status & 4)) != 0 ]; then
  [ "${CVO_REQUIRE_CLUSTER:-}" != 1 ] || exit 1
  echo "warning: cannot generate hive's CRDs; the hub test uses a stand-in CRD" >&2
fi

phase "cargo test"
cargo test --all-targets --locked
phase ""
