#!/usr/bin/env bash
# The project's test command: installs what the tests need if it is missing (idempotent), then
# formatting, lints and every test target. Used by .ci/run and by developers alike.
#
#   hack/test.sh            # everything
#   CVO_REQUIRE_CORPUS=1    # fail (instead of skip) when ../shared/corpus is absent
#   CVO_REQUIRE_CLUSTER=1   # fail (instead of skip) when the test cluster cannot start
#   CVO_REQUIRE_REGISTRY=1  # fail (instead of skip) when the test registry cannot start
#   CVO_REQUIRE_UPSTREAM=1  # fail (instead of skip) when the upstream oracle cannot be built
#   CVO_REQUIRE_GPG=1       # fail (instead of skip) when GnuPG is missing (the signature tests)
#   CVO_REQUIRE_PROMETHEUS=1 # fail (instead of skip) when Prometheus is missing (the risk tests)
#   CVO_FUZZ_SECONDS=N      # how long each fuzz target runs (default 20; 0 skips fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."

hack/install-deps.sh

echo "==> cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
echo "==> cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
# The fuzz crate resolves the main crate's dependencies as Cargo.lock pins them (as hack/fuzz.sh).
if [ ! -e fuzz/Cargo.lock ] || [ Cargo.lock -nt fuzz/Cargo.lock ]; then
  cp Cargo.lock fuzz/Cargo.lock
fi
cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
# The render-only build (README: no cluster, no registry client) must keep compiling.
echo "==> cargo clippy --no-default-features"
cargo clippy --no-default-features --locked -- -D warnings
echo "==> cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --quiet
# The cluster tests need kube-apiserver and etcd, and kube-controller-manager for those that set
# CVO_CLUSTER_CONTROLLERS (namespace deletion, garbage collection): build.sh builds all three,
# ~5 min cold for kube-apiserver + ~1.5 min for kube-controller-manager, cached in
# ~/.cache/cvo/cluster, so later runs start at once.
echo "==> hack/cluster/build.sh"
if ! hack/cluster/build.sh; then
  [ "${CVO_REQUIRE_CLUSTER:-}" != 1 ] || exit 1
  echo "warning: cannot build the test cluster; the cluster tests will skip" >&2
fi
# tests/upstream.rs compares cvo with the upstream oracle (hack/upstream/, Go): ~1-2 min to
# build cold, cached in ~/.cache/cvo/upstream.
echo "==> hack/upstream/build.sh"
if ! hack/upstream/build.sh >/dev/null; then
  [ "${CVO_REQUIRE_UPSTREAM:-}" != 1 ] || exit 1
  echo "warning: cannot build the upstream oracle; tests/upstream.rs will skip" >&2
fi
# Coverage-guided fuzzing, briefly: each target for CVO_FUZZ_SECONDS (before the tests, whose
# summary ends the output). The instrumented build is cached in ~/.cache/cvo/fuzz-target.
fuzz_seconds=${CVO_FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" != 0 ]; then
  echo "==> hack/fuzz.sh all $fuzz_seconds"
  hack/fuzz.sh all "$fuzz_seconds"
fi
echo "==> cargo test"
cargo test --all-targets --locked
