#!/usr/bin/env bash
# Starts a real etcd + kube-apiserver on 127.0.0.1 (free ports) with all state under DIR, waits
# for /readyz, and prints the admin kubeconfig's path on stdout (the only thing on stdout):
#
#   export KUBECONFIG="$(hack/cluster/up.sh /tmp/c)"     # ... then hack/cluster/down.sh /tmp/c
#
# DIR afterwards:
#   kubeconfig              admin: token of user cvo-admin in group system:masters
#   kubeconfig-restricted   token of user cvo-restricted, no RBAC bindings (only what every
#                           authenticated user gets: discovery, self reviews)
#   cluster.env             shell-sourceable: CVO_CLUSTER_SERVER, _CA, _ADMIN_TOKEN, _RESTRICTED_TOKEN, ...
#   pki/                    ca.crt/key, apiserver.crt/key (SANs 127.0.0.1, localhost, 10.0.0.1,
#                           kubernetes.default.svc...), admin.crt/key (client cert, O=system:masters),
#                           sa.key/sa.pub (service-account token signing)
#   tokens.csv, etcd-data/, etcd.log, kube-apiserver.log, *.pid
#   kube-apiserver.cmd      its command line, for hack/cluster/apiserver.sh (stop / start it alone)
# and with CVO_CLUSTER_CONTROLLERS set:
#   kubeconfig-controller-manager   token of user system:kube-controller-manager in system:masters
#   kube-controller-manager.{cmd,log,pid}
#
# Idempotent: if DIR already holds a running, ready cluster with the same CVO_CLUSTER_CONTROLLERS,
# it only prints the kubeconfig path (with other controllers it fails: run down.sh first). A DIR
# holding a dead cluster is wiped and started anew. A non-empty DIR that is not a cluster
# directory is refused.
#
# Admission: Kubernetes' default plugins plus those OpenShift turns on (NodeRestriction,
# OwnerReferencesPermissionEnforcement, PodNodeSelector, PodTolerationRestriction), without
# ServiceAccount (below); every cluster test runs under them.
#
# By default no kube-controller-manager runs: nothing creates default ServiceAccounts (so the
# ServiceAccount admission plugin is disabled, as envtest does), nothing finishes namespace
# deletion (namespaces stay Terminating), no garbage collection, Deployments never get ReplicaSets
# or Pods. The `kubernetes` Service gets no endpoints (--endpoint-reconciler-type=none: Endpoints
# may not point at a loopback address, and the default reconciler logs that error every 10s).
#
# CVO_CLUSTER_CONTROLLERS=namespace,garbagecollector (any --controllers list of the upstream
# kube-controller-manager; empty or unset: none) also starts kube-controller-manager with only
# those controllers, and waits until it has started them (its /healthz lists them). Those that
# need no kubelet, scheduler or cloud make sense here: namespace, garbagecollector,
# serviceaccount (default ServiceAccounts), serviceaccount-token (legacy token Secrets, signed
# with pki/sa.key), root-ca-cert-publisher (kube-root-ca.crt ConfigMaps), clusterrole-aggregation.
#
# Environment:
#   CVO_CLUSTER_CONTROLLERS        controllers for kube-controller-manager (default: none, not started)
#   CVO_CLUSTER_START_TIMEOUT=60   seconds to wait for /readyz (and for kube-controller-manager)
#   CVO_CLUSTER_LIFETIME=7200      a watchdog stops the processes after this many seconds (0: never)
#   CVO_KUBE_APISERVER_EXTRA_ARGS, CVO_ETCD_EXTRA_ARGS, CVO_KUBE_CONTROLLER_MANAGER_EXTRA_ARGS
#                                  extra flags (word-split)
#   CVO_KUBE_APISERVER_BIN, CVO_ETCD_BIN, CVO_KUBE_CONTROLLER_MANAGER_BIN, CVO_CLUSTER_CACHE   see lib.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
# The controllers to run, as kube-controller-manager's --controllers takes them (spaces dropped).
controllers="${CVO_CLUSTER_CONTROLLERS:-}"
controllers="${controllers//[[:space:]]/}"
controllers="${controllers#,}"
controllers="${controllers%,}"
[[ "$controllers" =~ ^[a-z0-9*,-]*$ ]] ||
  die "CVO_CLUSTER_CONTROLLERS='$CVO_CLUSTER_CONTROLLERS' is not a list of controller names (e.g. namespace,garbagecollector)"

umask 077
mkdir -p "$1"
dir="$(cd "$1" && pwd)"
[ "$dir" != / ] || die "refusing to use / as the cluster directory"

stop_all() {
  stop_pidfile "$dir/watchdog.pid" "$dir" watchdog
  stop_pidfile "$dir/kube-controller-manager.pid" "$dir" kube-controller-manager
  stop_pidfile "$dir/kube-apiserver.pid" "$dir" kube-apiserver
  stop_pidfile "$dir/etcd.pid" "$dir" etcd
}

# --- idempotence --------------------------------------------------------------------------------
if [ -e "$dir/$CLUSTER_MARKER" ]; then
  if pid_is_ours "$dir/kube-apiserver.pid" "$dir" && pid_is_ours "$dir/etcd.pid" "$dir" &&
    [ "$(readyz "")" = ok ] &&
    { [ -z "$(running_controllers)" ] || pid_is_ours "$dir/kube-controller-manager.pid" "$dir"; }; then
    if [ "$(running_controllers)" != "$controllers" ]; then
      die "$dir already runs a cluster with CVO_CLUSTER_CONTROLLERS='$(running_controllers)', not '$controllers': stop it with hack/cluster/down.sh $dir first"
    fi
    log "already running in $dir ($(server_url))"
    echo "$dir/kubeconfig"
    exit 0
  fi
  log "$dir holds a cluster that is not running or not ready: stopping what is left and starting anew"
  stop_all
  find "$dir" -mindepth 1 -delete
elif [ -n "$(ls -A "$dir")" ]; then
  die "$dir is not empty and is not a cluster directory (no $CLUSTER_MARKER): refusing to use it"
fi

"$here/deps.sh"
"$here/build.sh"
[ -x "$KUBE_APISERVER_BIN" ] || die "no kube-apiserver at $KUBE_APISERVER_BIN"
[ -x "$ETCD_BIN" ] || die "no etcd at $ETCD_BIN"
if [ -n "$controllers" ] && [ ! -x "$KUBE_CONTROLLER_MANAGER_BIN" ]; then
  die "CVO_CLUSTER_CONTROLLERS is set but there is no kube-controller-manager at $KUBE_CONTROLLER_MANAGER_BIN (with CVO_KUBE_APISERVER_BIN, set CVO_KUBE_CONTROLLER_MANAGER_BIN too)"
fi
touch "$dir/$CLUSTER_MARKER"
t0=$EPOCHREALTIME

# The admission plugins an OpenShift kube-apiserver turns on that Kubernetes has but leaves off
# (openshift/kubernetes, openshift-kube-apiserver/admission/admissionenablement/register.go,
# additionalDefaultOnPlugins; the other two there, Priority and StorageObjectInUseProtection, are
# on in Kubernetes already), on top of Kubernetes' defaults. OwnerReferencesPermissionEnforcement
# is the one tests meet: setting ownerReferences needs `delete` on the object, and
# blockOwnerDeletion needs `update` on the owner's `<resource>/finalizers`.
OPENSHIFT_ADMISSION_PLUGINS=NodeRestriction,OwnerReferencesPermissionEnforcement,PodNodeSelector,PodTolerationRestriction

# --- PKI and tokens -----------------------------------------------------------------------------
pki="$dir/pki"
mkdir -p "$pki"
ossl() { openssl "$@" 2>>"$pki/openssl.log" || die "openssl $1 failed; see $pki/openssl.log"; }
cat >"$pki/ca.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = cvo-test-ca
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
EOF
ossl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 3650 -config "$pki/ca.cnf" -extensions v3_ca \
  -keyout "$pki/ca.key" -out "$pki/ca.crt"
# sign NAME SUBJECT EXTENSIONS: a key and an X.509 v3 certificate signed by the CA (rustls rejects v1).
sign() {
  printf '%s\n' "basicConstraints = critical,CA:FALSE" "keyUsage = critical,digitalSignature,keyEncipherment" \
    "subjectKeyIdentifier = hash" "authorityKeyIdentifier = keyid" "$3" >"$pki/$1.ext"
  ossl req -new -nodes -newkey rsa:2048 -sha256 -subj "$2" -keyout "$pki/$1.key" -out "$pki/$1.csr"
  ossl x509 -req -sha256 -days 3650 -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -set_serial "0x$(openssl rand -hex 15)" -extfile "$pki/$1.ext" -out "$pki/$1.crt"
  rm -f "$pki/$1.csr"
}
sign apiserver /CN=kube-apiserver "extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
sign admin "/O=system:masters/CN=cvo-admin" "extendedKeyUsage = clientAuth"
ossl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key"
ossl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"

openssl rand -hex 24 >"$dir/admin.token"
openssl rand -hex 24 >"$dir/restricted.token"
[ -z "$controllers" ] || openssl rand -hex 24 >"$dir/controller-manager.token"
# token,user,uid,"groups"
{
  echo "$(cat "$dir/admin.token"),cvo-admin,cvo-admin,\"system:masters\""
  echo "$(cat "$dir/restricted.token"),cvo-restricted,cvo-restricted"
  if [ -n "$controllers" ]; then
    echo "$(cat "$dir/controller-manager.token"),system:kube-controller-manager,system:kube-controller-manager,\"system:masters\""
  fi
} >"$dir/tokens.csv"

# Flags that only some versions have (for CVO_*_BIN pointing at other builds; e.g. 1.20 / etcd 3.4).
etcd_flags=()
if [ -z "${CVO_ETCD_BIN:-}" ] || "$ETCD_BIN" --help 2>&1 | grep -q -- --unsafe-no-fsync; then
  etcd_flags+=(--unsafe-no-fsync)
fi
apiserver_flags=()
if [ -n "${CVO_KUBE_APISERVER_BIN:-}" ] && "$KUBE_APISERVER_BIN" --help 2>&1 | grep -q -- --insecure-port; then
  apiserver_flags+=(--insecure-port=0)
fi
# kube-controller-manager holds watches open; without a grace period for them the apiserver waits
# for them until its 60 s shutdown timeout when stopped alone (apiserver.sh stop: SIGKILL at 10 s).
if [ -n "$controllers" ] && { [ -z "${CVO_KUBE_APISERVER_BIN:-}" ] ||
  "$KUBE_APISERVER_BIN" --help 2>&1 | grep -q -- --shutdown-watch-termination-grace-period; }; then
  apiserver_flags+=(--shutdown-watch-termination-grace-period=2s)
fi

# free_ports [N]: N (default 3) free TCP ports on 127.0.0.1.
free_ports() {
  python3 - "${1:-3}" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}
# port_clash LOG: did the process die because its port was taken meanwhile?
port_clash() { grep -qiE 'address already in use' "$1" 2>/dev/null; }

# retry_after_death NAME LOG PID WHEN: NAME, started as PID writing LOG, died WHEN (before it
# was ready): true, having said why, when the start is to be tried again (attempts 1 and 2 of
# the loop below), false on the last; sets `how`. A lost port race is the known cause; a
# kube-apiserver also died once within a second with nothing in its log, on a loaded CI
# machine, and started at the next try.
retry_after_death() {
  local name="$1" log="$2" pid="$3" when="$4"
  ended_how "$pid"
  [ "$attempt" -lt 3 ] || return 1
  if port_clash "$log"; then
    log "$name lost a port race; retrying with other ports"
  else
    log "$name $how $when; retrying (its log: $(tail -n 3 "$log" | tr '\n' ' '))"
  fi
}

fail() {
  local log="$1" msg="$2"
  {
    echo "ERROR [cluster]: $msg"
    echo "---- last 40 lines of $log ----"
    tail -n 40 "$log" 2>/dev/null || true
    echo "---- end of $log; the state is kept in $dir (remove it with hack/cluster/down.sh $dir) ----"
  } >&2
  stop_all
  exit 1
}

# --- etcd and kube-apiserver, retried on a port clash -------------------------------------------
started=""
t1=$EPOCHREALTIME
for attempt in 1 2 3; do
  read -r etcd_port peer_port api_port < <(free_ports)
  server="https://127.0.0.1:$api_port"
  etcd_url="http://127.0.0.1:$etcd_port"
  rm -rf "$dir/etcd-data"
  # shellcheck disable=SC2086
  "$ETCD_BIN" --name=cvo-test --data-dir="$dir/etcd-data" \
    --listen-client-urls="$etcd_url" --advertise-client-urls="$etcd_url" \
    --listen-peer-urls="http://127.0.0.1:$peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
    --initial-cluster="cvo-test=http://127.0.0.1:$peer_port" --initial-cluster-state=new \
    "${etcd_flags[@]}" ${CVO_ETCD_EXTRA_ARGS:-} </dev/null >"$dir/etcd.log" 2>&1 &
  etcd_pid=$!
  echo "$etcd_pid" >"$dir/etcd.pid"
  ok=""
  for ((i = 0; i < 200; i++)); do
    if curl -sS --noproxy '*' --max-time 2 "$etcd_url/health" 2>/dev/null | grep -q '"health":"true"'; then
      ok=1
      break
    fi
    child_running "$etcd_pid" || break
    sleep 0.1
  done
  if [ -z "$ok" ]; then
    if ! child_running "$etcd_pid"; then
      retry_after_death etcd "$dir/etcd.log" "$etcd_pid" "before it was healthy" && continue
      fail "$dir/etcd.log" "etcd $how before it was healthy at $etcd_url (attempt $attempt of 3)"
    fi
    fail "$dir/etcd.log" "etcd did not become healthy at $etcd_url within 20s"
  fi

  cat >"$dir/cluster.env" <<EOF
KUBECONFIG=$dir/kubeconfig
CVO_CLUSTER_DIR=$dir
CVO_CLUSTER_SERVER=$server
CVO_CLUSTER_CA=$pki/ca.crt
CVO_CLUSTER_ADMIN_TOKEN=$(cat "$dir/admin.token")
CVO_CLUSTER_RESTRICTED_TOKEN=$(cat "$dir/restricted.token")
CVO_CLUSTER_ADMIN_CERT=$pki/admin.crt
CVO_CLUSTER_ADMIN_KEY=$pki/admin.key
CVO_CLUSTER_ETCD=$etcd_url
CVO_CLUSTER_KUBE_APISERVER=$KUBE_APISERVER_BIN
CVO_CLUSTER_ETCD_BIN=$ETCD_BIN
EOF
  # Every write request is audited (metadata only) to $dir/audit.log, so tests can prove what
  # the operator did not write (a preflight's writes are dry runs and its status only).
  cat >"$dir/audit-policy.yaml" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
POLICY
  # shellcheck disable=SC2206
  apiserver_cmd=("$KUBE_APISERVER_BIN"
    --etcd-servers="$etcd_url"
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port"
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key"
    --client-ca-file="$pki/ca.crt"
    --token-auth-file="$dir/tokens.csv"
    --authorization-mode=RBAC
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key"
    --service-account-issuer="$server"
    --service-cluster-ip-range=10.0.0.0/24
    --allow-privileged=true
    --enable-admission-plugins="$OPENSHIFT_ADMISSION_PLUGINS"
    --disable-admission-plugins=ServiceAccount
    --endpoint-reconciler-type=none
    --audit-policy-file="$dir/audit-policy.yaml" --audit-log-path="$dir/audit.log"
    "${apiserver_flags[@]}" ${CVO_KUBE_APISERVER_EXTRA_ARGS:-})
  # apiserver.sh restarts it with the same command line (same port, certificates and etcd).
  printf '%q ' "${apiserver_cmd[@]}" >"$dir/kube-apiserver.cmd"
  "${apiserver_cmd[@]}" </dev/null >"$dir/kube-apiserver.log" 2>&1 &
  apiserver_pid=$!
  echo "$apiserver_pid" >"$dir/kube-apiserver.pid"

  timeout_s="${CVO_CLUSTER_START_TIMEOUT:-60}"
  deadline=$((SECONDS + timeout_s))
  ok=""
  while [ "$SECONDS" -lt "$deadline" ]; do
    if [ "$(readyz "")" = ok ]; then
      ok=1
      break
    fi
    child_running "$apiserver_pid" || break
    sleep 0.25
  done
  if [ -n "$ok" ]; then
    started=1
    break
  fi
  if ! child_running "$apiserver_pid"; then
    if retry_after_death kube-apiserver "$dir/kube-apiserver.log" "$apiserver_pid" "before /readyz was ok"; then
      stop_all
      continue
    fi
    fail "$dir/kube-apiserver.log" "kube-apiserver $how before /readyz was ok (attempt $attempt of 3)"
  fi
  echo "---- $server/readyz?verbose ----" >>"$dir/kube-apiserver.log"
  readyz "?verbose" >>"$dir/kube-apiserver.log" || true
  fail "$dir/kube-apiserver.log" "kube-apiserver /readyz not ok after ${timeout_s}s (checks that failed are at the end of the log)"
done
[ -n "$started" ] || die "could not start the cluster"

# --- kubeconfigs --------------------------------------------------------------------------------
ca_data="$(base64 -w0 <"$pki/ca.crt")"
kubeconfig() {
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: cvo-test
  cluster:
    server: $server
    certificate-authority-data: $ca_data
users:
- name: $1
  user:
    token: $2
contexts:
- name: cvo-test
  context:
    cluster: cvo-test
    user: $1
current-context: cvo-test
EOF
}
kubeconfig cvo-admin "$(cat "$dir/admin.token")" >"$dir/kubeconfig"
kubeconfig cvo-restricted "$(cat "$dir/restricted.token")" >"$dir/kubeconfig-restricted"

# --- kube-controller-manager, only with CVO_CLUSTER_CONTROLLERS ---------------------------------
# Only the listed controllers; each runs with the manager's own credentials (a token in
# system:masters) instead of per-controller ServiceAccounts, without leader election, serving
# /healthz on a free port of 127.0.0.1 with the apiserver's certificate (SAN 127.0.0.1, signed by
# pki/ca.crt). No --authentication/authorization-kubeconfig: its clients are anonymous, allowed
# only /healthz, /readyz and /livez (with them it would also look up the requestheader CA this
# apiserver does not have, and log that error with backoff forever). It is ready when its
# /healthz lists the controllers it started: they are all registered at once, after every one
# of them has started.
kcm_ready() {
  curl -sS --noproxy '*' --max-time 5 --cacert "$pki/ca.crt" "https://127.0.0.1:$kcm_port/healthz?verbose" 2>/dev/null |
    grep -qE '^\[\+\][a-z0-9-]+-controller ok$'
}
if [ -n "$controllers" ]; then
  t2=$EPOCHREALTIME
  kubeconfig system:kube-controller-manager "$(cat "$dir/controller-manager.token")" >"$dir/kubeconfig-controller-manager"
  echo "CVO_CLUSTER_CONTROLLERS=$controllers" >>"$dir/cluster.env"
  echo "CVO_CLUSTER_KUBE_CONTROLLER_MANAGER=$KUBE_CONTROLLER_MANAGER_BIN" >>"$dir/cluster.env"
  started=""
  for attempt in 1 2 3; do
    read -r kcm_port < <(free_ports 1)
    # shellcheck disable=SC2206
    kcm_cmd=("$KUBE_CONTROLLER_MANAGER_BIN"
      --kubeconfig="$dir/kubeconfig-controller-manager"
      --controllers="$controllers"
      --use-service-account-credentials=false
      --leader-elect=false
      --bind-address=127.0.0.1 --secure-port="$kcm_port"
      --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key"
      --root-ca-file="$pki/ca.crt"
      --service-account-private-key-file="$pki/sa.key"
      ${CVO_KUBE_CONTROLLER_MANAGER_EXTRA_ARGS:-})
    printf '%q ' "${kcm_cmd[@]}" >"$dir/kube-controller-manager.cmd"
    "${kcm_cmd[@]}" </dev/null >"$dir/kube-controller-manager.log" 2>&1 &
    kcm_pid=$!
    echo "$kcm_pid" >"$dir/kube-controller-manager.pid"
    deadline=$((SECONDS + ${CVO_CLUSTER_START_TIMEOUT:-60}))
    while [ "$SECONDS" -lt "$deadline" ]; do
      if kcm_ready; then
        started=1
        break
      fi
      child_running "$kcm_pid" || break
      sleep 0.25
    done
    [ -z "$started" ] || break
    if ! child_running "$kcm_pid"; then
      ended_how "$kcm_pid"
      if port_clash "$dir/kube-controller-manager.log" && [ "$attempt" -lt 3 ]; then
        log "kube-controller-manager lost a port race; retrying with another port"
        continue
      fi
      fail "$dir/kube-controller-manager.log" "kube-controller-manager (--controllers=$controllers) $how before it started its controllers"
    fi
    {
      echo "---- https://127.0.0.1:$kcm_port/healthz?verbose ----"
      curl -sS --noproxy '*' --max-time 5 --cacert "$pki/ca.crt" "https://127.0.0.1:$kcm_port/healthz?verbose" 2>&1 || true
    } >>"$dir/kube-controller-manager.log"
    fail "$dir/kube-controller-manager.log" "kube-controller-manager (--controllers=$controllers) started no controller within ${CVO_CLUSTER_START_TIMEOUT:-60}s (is the list right? see its --help)"
  done
  [ -n "$started" ] || die "could not start kube-controller-manager"
  echo "CVO_CLUSTER_CONTROLLER_MANAGER_URL=https://127.0.0.1:$kcm_port" >>"$dir/cluster.env"
fi

# --- watchdog: bounds the cluster's life even if nobody runs down.sh ----------------------------
lifetime="${CVO_CLUSTER_LIFETIME:-7200}"
if [ "$lifetime" -gt 0 ]; then
  # shellcheck disable=SC2016
  nohup bash -c '
    source "$1/lib.sh"; dir="$2"; end=$((SECONDS + $3))
    while [ "$SECONDS" -lt "$end" ]; do
      pid_is_ours "$dir/kube-apiserver.pid" "$dir" || pid_is_ours "$dir/etcd.pid" "$dir" ||
        pid_is_ours "$dir/kube-controller-manager.pid" "$dir" || exit 0
      sleep 2
    done
    echo "watchdog: lifetime of $3s is over (CVO_CLUSTER_LIFETIME); stopping the cluster in $dir" >&2
    stop_pidfile "$dir/kube-controller-manager.pid" "$dir" kube-controller-manager
    stop_pidfile "$dir/kube-apiserver.pid" "$dir" kube-apiserver
    stop_pidfile "$dir/etcd.pid" "$dir" etcd
  ' cvo-cluster-watchdog "$here" "$dir" "$lifetime" </dev/null >>"$dir/watchdog.log" 2>&1 &
  echo $! >"$dir/watchdog.pid"
fi

since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
if [ -n "$controllers" ]; then
  kcm_note=", kube-controller-manager (--controllers=$controllers) $(since "$t2")s more"
else
  kcm_note=""
fi
log "kube-apiserver $("$KUBE_APISERVER_BIN" --version 2>/dev/null | awk '{print $2}') ready at $server: $(since "$t1")s from process start to /readyz$kcm_note, $(since "$t0")s with certificates (state in $dir; stop with hack/cluster/down.sh $dir)"
echo "$dir/kubeconfig"
