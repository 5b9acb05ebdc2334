#!/usr/bin/env bash
# The project's test command: installs what the tests need if it is missing (idempotent), then
# formatting, lints and every test target. Used by .ci/run and by developers alike.
#
#   hack/test.sh            # everything
#   CVO_REQUIRE_CORPUS=1    # fail (instead of skip) when ../shared/corpus is absent
set -euo pipefail
cd "$(dirname "$0")/.."

hack/install-deps.sh

echo "==> cargo fmt --check"
cargo fmt --all -- --check
echo "==> cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
echo "==> cargo test"
cargo test --all-targets --locked
