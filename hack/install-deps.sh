#!/usr/bin/env bash
# Installs what building and testing cvo needs, if it is missing. Idempotent and quiet when
# everything is there. The Rust toolchain comes from rustup (preinstalled on the project's
# machines); its rustfmt and clippy components are required.
set -euo pipefail

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "hack/install-deps.sh: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi
for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    echo "==> installing the $component component"
    rustup component add "$component"
  fi
done
# The C compiler is needed by build scripts of some dependencies.
if ! command -v cc >/dev/null 2>&1; then
  echo "==> installing a C compiler"
  apt-get update -qq && apt-get install -y -qq build-essential
fi
# The registry tests run a real registry (Debian's CNCF distribution build; hack/registry/up.sh).
if ! command -v docker-registry >/dev/null 2>&1; then
  echo "==> installing docker-registry for the registry tests"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends docker-registry; } ||
    echo "warning: cannot install docker-registry; the registry tests will skip" >&2
fi
# The signature tests check cvo against GnuPG itself: signatures gpg made, verified by cvo, and
# the reverse.
if ! command -v gpg >/dev/null 2>&1; then
  echo "==> installing GnuPG for the signature tests"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends gnupg; } ||
    echo "warning: cannot install GnuPG; the signature tests will skip" >&2
fi
# The conditional update risk tests evaluate PromQL risks against a real Prometheus scraping
# cvo's own /metrics.
if ! command -v prometheus >/dev/null 2>&1; then
  echo "==> installing Prometheus for the conditional update risk tests"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus; } ||
    echo "warning: cannot install Prometheus; the conditional update risk tests will skip" >&2
fi
# The corpus tests check inclusion counts against an independent Python oracle (PyYAML).
if ! python3 -c 'import yaml' >/dev/null 2>&1; then
  echo "==> installing PyYAML for the inclusion oracle"
  python3 -m pip install --quiet pyyaml || { apt-get update -qq && apt-get install -y -qq python3-yaml; }
fi
