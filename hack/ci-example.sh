#!/usr/bin/env bash
# How a payload repository wires `cvo validate` into its CI: a JUnit report for the CI's test
# view, the human report in the log, GitHub annotations on the pull request when running in
# GitHub Actions, and the exit status that fails the job.
#
#   hack/ci-example.sh [PAYLOAD_DIR] [JUNIT_FILE]
#
# PAYLOAD_DIR defaults to the payload bundled into cvo (payloads/4.18.0); JUNIT_FILE to
# validate-junit.xml in the current directory. Set DENY_WARNINGS=1 to fail on warnings too.
# Exit status: 0 when the payload passes, 1 when it has errors (or denied warnings), 2 when
# PAYLOAD_DIR is not a directory or on a usage error.
#
# A CI job would run, for example (Prow, GitHub Actions and GitLab all read JUnit):
#   hack/ci-example.sh release-payload "${ARTIFACT_DIR:-.}/junit_cvo_validate.xml"
set -euo pipefail
# Paths are taken from where the script is run; cvo is built from its own checkout.
root="$(cd "$(dirname "$0")/.." && pwd)"

payload="${1:-$root/payloads/4.18.0}"
junit="${2:-validate-junit.xml}"
if [ ! -d "$payload" ]; then
  echo "hack/ci-example.sh: $payload is not a directory" >&2
  exit 2
fi
flags=()
if [ "${DENY_WARNINGS:-0}" = 1 ]; then
  flags+=(--deny-warnings)
fi

cargo build --release --quiet --manifest-path "$root/Cargo.toml"
cvo=("${CARGO_TARGET_DIR:-$root/target}/release/cvo" validate --payload "$payload" "${flags[@]}")

# The report the CI shows as test results: one test case per file.
status=0
"${cvo[@]}" -o junit > "$junit" || status=$?
if [ "$status" -gt 1 ]; then
  exit "$status"
fi

# The same findings for people reading the log, with source snippets and fixes.
"${cvo[@]}" -o text || true

# On GitHub, annotate the pull request's diff as well.
if [ "${GITHUB_ACTIONS:-}" = true ]; then
  "${cvo[@]}" -o github || true
fi

echo "JUnit report: $junit"
exit "$status"
