#!/usr/bin/env bash
# Starts a throwaway CNCF distribution registry (Debian `docker-registry`) on 127.0.0.1 with a
# free port and its storage under DIR; prints its address (127.0.0.1:PORT) on stdout.
#
#   hack/registry/up.sh DIR [--auth USER:PASS] [--tls]
#
# --auth turns on htpasswd basic auth (bcrypt line from `htpasswd -B`, else python3 `crypt`).
# --tls serves HTTPS with a certificate for 127.0.0.1 from a throwaway CA, written as
# DIR/certs.d/127.0.0.1:PORT/ca.crt (pass `--cert-dir DIR/certs.d` to cvo).
# Stop it with hack/registry/down.sh DIR. Installs docker-registry with apt-get when missing.
set -euo pipefail
dir="${1:?usage: up.sh DIR [--auth USER:PASS] [--tls]}"
shift
auth=""
tls=""
while [ $# -gt 0 ]; do
  case "$1" in
    --auth) auth="${2:?--auth USER:PASS}"; shift 2 ;;
    --tls) tls=1; shift ;;
    *) echo "up.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

bin="$(command -v docker-registry || true)"
if [ -z "$bin" ] && [ -x /usr/bin/docker-registry ]; then bin=/usr/bin/docker-registry; fi
if [ -z "$bin" ]; then
  "$(dirname "$0")/../install-deps.sh" >&2 || true
  bin="$(command -v docker-registry || true)"
fi
if [ -z "$bin" ]; then
  echo "up.sh: docker-registry is not installed and could not be installed (apt-get install docker-registry)" >&2
  exit 3
fi

mkdir -p "$dir/data"
dir="$(cd "$dir" && pwd)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
{
  echo "version: 0.1"
  echo "log: {level: warn}"
  echo "storage: {filesystem: {rootdirectory: $dir/data}, delete: {enabled: true}}"
  if [ -n "$tls" ]; then
    echo "http: {addr: 127.0.0.1:$port, tls: {certificate: $dir/tls/server.crt, key: $dir/tls/server.key}}"
  else
    echo "http: {addr: 127.0.0.1:$port}"
  fi
} > "$dir/config.yml"
scheme=http
curl_tls=()
if [ -n "$tls" ]; then
  scheme=https
  mkdir -p "$dir/tls" "$dir/certs.d/127.0.0.1:$port"
  (
    cd "$dir/tls"
    openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 30 -subj /CN=cvo-test-registry-ca \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
      -keyout ca.key -out ca.crt
    openssl req -new -nodes -newkey rsa:2048 -sha256 -subj /CN=127.0.0.1 -keyout server.key -out server.csr
    printf '%s\n' basicConstraints=critical,CA:FALSE keyUsage=critical,digitalSignature,keyEncipherment \
      extendedKeyUsage=serverAuth subjectAltName=IP:127.0.0.1 > server.ext
    openssl x509 -req -sha256 -days 30 -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
      -extfile server.ext -out server.crt
  ) > "$dir/tls/openssl.log" 2>&1 || { echo "up.sh: openssl failed; see $dir/tls/openssl.log" >&2; exit 3; }
  cp "$dir/tls/ca.crt" "$dir/certs.d/127.0.0.1:$port/ca.crt"
  curl_tls=(--cacert "$dir/tls/ca.crt")
fi
if [ -n "$auth" ]; then
  user="${auth%%:*}"
  pass="${auth#*:}"
  if command -v htpasswd >/dev/null 2>&1; then
    htpasswd -Bbn "$user" "$pass" | head -n1 > "$dir/htpasswd"
  else
    python3 - "$user" "$pass" > "$dir/htpasswd" 2>/dev/null <<'PY'
import sys, warnings
warnings.simplefilter("ignore")
import crypt
print(f"{sys.argv[1]}:{crypt.crypt(sys.argv[2], crypt.mksalt(crypt.METHOD_BLOWFISH))}")
PY
  fi
  grep -q ':\$2' "$dir/htpasswd" || { echo "up.sh: cannot make a bcrypt htpasswd line (install apache2-utils)" >&2; exit 3; }
  echo "auth: {htpasswd: {realm: cvo-test, path: $dir/htpasswd}}" >> "$dir/config.yml"
fi

# setsid: its own process group, so down.sh stops exactly it.
setsid "$bin" serve "$dir/config.yml" > "$dir/registry.log" 2>&1 < /dev/null &
echo $! > "$dir/pid"
for _ in $(seq 1 100); do
  code="$(curl -s "${curl_tls[@]}" -o /dev/null -w '%{http_code}' "$scheme://127.0.0.1:$port/v2/" || true)"
  if [ "$code" = 200 ] || [ "$code" = 401 ]; then
    echo "127.0.0.1:$port"
    exit 0
  fi
  if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then break; fi
  sleep 0.1
done
echo "up.sh: the registry did not come up on 127.0.0.1:$port; log:" >&2
cat "$dir/registry.log" >&2 || true
kill "$(cat "$dir/pid")" 2>/dev/null || true
exit 1
