#!/usr/bin/env bash
# Installs the Debian packages that building and running the test cluster needs, if any is
# missing (idempotent; prints nothing when everything is there). Called by build.sh.
# The Go toolchain is not a Debian package here (bookworm's golang-go is 1.19, too old for
# Kubernetes 1.34 and etcd 3.6): it is expected at /usr/local/go, as on the project's machines.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

# command:package pairs.
missing=()
for pair in curl:curl openssl:openssl jq:jq python3:python3 flock:util-linux setsid:util-linux \
  timeout:coreutils sha256sum:coreutils; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ -e /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)

if [ "${#missing[@]}" -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  log "installing missing Debian packages: ${missing[*]}"
  [ "$(id -u)" -eq 0 ] || die "not root: run 'sudo apt-get install -y ${missing[*]}' first"
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install ${missing[*]} by hand"
  # apt's output goes to stderr: up.sh's stdout carries only the kubeconfig path.
  timeout 300 apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
    die "apt-get install ${missing[*]} failed"
fi

# Go is needed only to build; up.sh can run on cached binaries without it.
if [ "${1:-}" = --build ] && ! command -v go >/dev/null 2>&1; then
  die "no Go toolchain: install Go >= 1.26 at /usr/local/go (Debian bookworm's golang-go 1.19 is too old for Kubernetes 1.34 / etcd 3.6), or set CVO_KUBE_APISERVER_BIN and CVO_ETCD_BIN to prebuilt binaries"
fi
exit 0
