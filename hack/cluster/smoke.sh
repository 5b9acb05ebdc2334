#!/usr/bin/env bash
# End-to-end check of the test cluster: builds the binaries if needed, starts a cluster in a
# temporary directory, talks to it with curl using only what the two kubeconfigs hold, and always
# stops it again (trap on EXIT). Exits non-zero if any check fails.
#
#   hack/cluster/smoke.sh
#   CVO_SMOKE_KEEP=1 hack/cluster/smoke.sh    # keep the (stopped) cluster directory for inspection
#   CVO_CLUSTER_CONTROLLERS=namespace,garbagecollector hack/cluster/smoke.sh
#       # also runs kube-controller-manager and checks what those controllers do: a deleted
#       # namespace goes away with its content, an owned object goes away with its owner
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
t0=$SECONDS

"$here/deps.sh"
"$here/build.sh"
t_build=$((SECONDS - t0))

base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base="${TMPDIR:-/tmp}"
dir="$(mktemp -d "$base/cvo-cluster-smoke.XXXXXX")"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$rc" -ne 0 ] && [ -s "$dir/kube-apiserver.log" ]; then
    echo "---- last 30 lines of $dir/kube-apiserver.log ----" >&2
    tail -n 30 "$dir/kube-apiserver.log" >&2 || true
  fi
  if [ "$rc" -ne 0 ] && [ -s "$dir/kube-controller-manager.log" ]; then
    echo "---- last 30 lines of $dir/kube-controller-manager.log ----" >&2
    tail -n 30 "$dir/kube-controller-manager.log" >&2 || true
  fi
  if [ -n "${CVO_SMOKE_KEEP:-}" ]; then
    "$here/down.sh" --keep "$dir" || rc=1
  else
    "$here/down.sh" "$dir" || rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t_up0=$SECONDS
kubeconfig="$("$here/up.sh" "$dir")"
t_up=$((SECONDS - t_up0))
[ "$kubeconfig" = "$dir/kubeconfig" ] || die "up.sh printed '$kubeconfig', expected $dir/kubeconfig"

# Everything below comes from the kubeconfigs, as a client would take it.
kc_field() { sed -nE "s/^[[:space:]]*$2: (.*)$/\\1/p" "$1" | head -n1; }
server="$(kc_field "$dir/kubeconfig" server)"
kc_field "$dir/kubeconfig" certificate-authority-data | base64 -d >"$dir/smoke-ca.crt"
admin="$(kc_field "$dir/kubeconfig" token)"
restricted="$(kc_field "$dir/kubeconfig-restricted" token)"
if [ -z "$server" ] || [ -z "$admin" ] || [ -z "$restricted" ]; then
  die "could not read server/tokens from the kubeconfigs"
fi

body="$dir/smoke-body.json"
# req TOKEN METHOD PATH [CONTENT_TYPE] — request body on stdin for POST/PATCH; prints the status code.
req() {
  local args=(-sS --noproxy '*' --max-time 15 --cacert "$dir/smoke-ca.crt" -o "$body" -w '%{http_code}'
    -H "Authorization: Bearer $1" -H 'Accept: application/json' -X "$2")
  if [ -n "${4:-}" ]; then
    args+=(-H "Content-Type: $4" --data-binary @-)
  fi
  curl "${args[@]}" "$server$3" || true # prints 000 when it could not connect
}
passed=0
failed=0
body_excerpt() { { jq -c . "$body" 2>/dev/null || cat "$body"; } | head -c 600; }
# check NAME GOT WANT [JQ_EXPR JQ_WANT]
check() {
  local name="$1" got="$2" want="$3" val
  if [ "$got" != "$want" ]; then
    echo "FAIL  $name: HTTP $got, want $want: $(body_excerpt)" >&2
    failed=$((failed + 1))
    return 0
  fi
  if [ -n "${4:-}" ]; then
    val="$(jq -r "$4" "$body" 2>/dev/null || true)"
    if [ "$val" != "$5" ]; then
      echo "FAIL  $name: $4 is '$val', want '$5'" >&2
      failed=$((failed + 1))
      return 0
    fi
  fi
  echo "ok    $name" >&2
  passed=$((passed + 1))
}
json() { jq -cn "$@"; }

t_checks0=$SECONDS
if [ -z "${CVO_KUBE_APISERVER_BIN:-}" ]; then
  check "/version is $K8S_VERSION" "$(req "$admin" GET /version)" 200 .gitVersion "$K8S_VERSION"
fi
check "a wrong token is Unauthorized" "$(req "not-a-token" GET /api/v1/namespaces)" 401
check "admin token authenticates as cvo-admin in system:masters" \
  "$(json '{apiVersion:"authentication.k8s.io/v1",kind:"SelfSubjectReview"}' |
    req "$admin" POST /apis/authentication.k8s.io/v1/selfsubjectreviews application/json)" 201 \
  '"\(.status.userInfo.username) \(any(.status.userInfo.groups[]; . == "system:masters"))"' "cvo-admin true"
check "the admin client certificate (pki/admin.crt) authenticates in system:masters" \
  "$(json '{apiVersion:"authentication.k8s.io/v1",kind:"SelfSubjectReview"}' |
    curl -sS --noproxy '*' --max-time 15 --cacert "$dir/smoke-ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" \
      -o "$body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @- \
      "$server/apis/authentication.k8s.io/v1/selfsubjectreviews" || true)" 201 \
  '"\(.status.userInfo.username) \(any(.status.userInfo.groups[]; . == "system:masters"))"' "cvo-admin true"
check "admin creates a Namespace" \
  "$(json '{apiVersion:"v1",kind:"Namespace",metadata:{name:"cvo-smoke"}}' |
    req "$admin" POST /api/v1/namespaces application/json)" 201 .metadata.name cvo-smoke
check "admin creates a ConfigMap" \
  "$(json '{apiVersion:"v1",kind:"ConfigMap",metadata:{name:"smoke"},data:{greeting:"hello"}}' |
    req "$admin" POST /api/v1/namespaces/cvo-smoke/configmaps application/json)" 201
check "admin reads the ConfigMap back" "$(req "$admin" GET /api/v1/namespaces/cvo-smoke/configmaps/smoke)" 200 \
  .data.greeting hello
check "admin server-side-applies a ConfigMap" \
  "$(printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: v\n' |
    req "$admin" PATCH '/api/v1/namespaces/cvo-smoke/configmaps/applied?fieldManager=cvo-smoke' application/apply-patch+yaml)" \
  201 '.metadata.managedFields[0] | "\(.manager) \(.operation)"' "cvo-smoke Apply"

crd='{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.smoke.cvo.test"},
  "spec": {"group": "smoke.cvo.test", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
    "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}}'
check "admin creates a CustomResourceDefinition" \
  "$(printf '%s' "$crd" | req "$admin" POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions application/json)" 201
established=""
for ((i = 0; i < 120; i++)); do
  if [ "$(req "$admin" GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.smoke.cvo.test)" = 200 ] &&
    [ "$(jq -r '.status.conditions[]? | select(.type=="Established") | .status' "$body")" = True ]; then
    established=1
    break
  fi
  sleep 0.25
done
if [ -n "$established" ]; then
  echo "ok    the CustomResourceDefinition becomes Established ($((i / 4))s)" >&2
  passed=$((passed + 1))
else
  echo "FAIL  the CustomResourceDefinition is not Established after 30s: $(body_excerpt)" >&2
  failed=$((failed + 1))
fi
# The new resource can take a moment to be served after Established: retry 404/503 briefly.
for ((i = 0; i < 40; i++)); do
  code="$(json '{apiVersion:"smoke.cvo.test/v1",kind:"Widget",metadata:{name:"w"},spec:{size:3}}' |
    req "$admin" POST /apis/smoke.cvo.test/v1/namespaces/cvo-smoke/widgets application/json)"
  case "$code" in 404 | 503) sleep 0.25 ;; *) break ;; esac
done
check "admin creates a custom resource" "$code" 201 .spec.size 3
check "the CRD's schema is enforced (size: 0 is Invalid)" \
  "$(json '{apiVersion:"smoke.cvo.test/v1",kind:"Widget",metadata:{name:"bad"},spec:{size:0}}' |
    req "$admin" POST /apis/smoke.cvo.test/v1/namespaces/cvo-smoke/widgets application/json)" 422 .reason Invalid

check "restricted token authenticates as cvo-restricted" \
  "$(json '{apiVersion:"authentication.k8s.io/v1",kind:"SelfSubjectReview"}' |
    req "$restricted" POST /apis/authentication.k8s.io/v1/selfsubjectreviews application/json)" 201 \
  .status.userInfo.username cvo-restricted
check "restricted cannot list Namespaces (Forbidden)" "$(req "$restricted" GET /api/v1/namespaces)" 403 .reason Forbidden
check "restricted cannot read the ConfigMap (Forbidden)" \
  "$(req "$restricted" GET /api/v1/namespaces/cvo-smoke/configmaps/smoke)" 403 .reason Forbidden
check "restricted cannot create a ConfigMap (Forbidden)" \
  "$(json '{apiVersion:"v1",kind:"ConfigMap",metadata:{name:"nope"}}' |
    req "$restricted" POST /api/v1/namespaces/cvo-smoke/configmaps application/json)" 403 .reason Forbidden
check "restricted cannot read CRDs (Forbidden)" \
  "$(req "$restricted" GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions)" 403 .reason Forbidden

# --- kube-controller-manager, with CVO_CLUSTER_CONTROLLERS --------------------------------------
controllers="$(sed -nE 's/^CVO_CLUSTER_CONTROLLERS=(.*)$/\1/p' "$dir/cluster.env")"
# has_controller ALIAS CANONICAL: is that controller in the list ('*' = the default ones)?
has_controller() {
  case ",$controllers," in *",-$1,"* | *",-$2,"*) return 1 ;; esac
  case ",$controllers," in *",$1,"* | *",$2,"* | *",\*,"*) return 0 ;; *) return 1 ;; esac
}
# wait_gone NAME PATH SECONDS: passes when GET PATH answers 404 within SECONDS.
wait_gone() {
  local t=$EPOCHREALTIME code="" i
  for ((i = 0; i < $3 * 4; i++)); do
    code="$(req "$admin" GET "$2")"
    [ "$code" = 404 ] && break
    sleep 0.25
  done
  if [ "$code" = 404 ]; then
    echo "ok    $1 ($(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s)" >&2
    passed=$((passed + 1))
  else
    echo "FAIL  $1: still there after $3s (HTTP $code): $(body_excerpt)" >&2
    failed=$((failed + 1))
  fi
}
if [ -n "$controllers" ]; then
  kcm_url="$(sed -nE 's/^CVO_CLUSTER_CONTROLLER_MANAGER_URL=(.*)$/\1/p' "$dir/cluster.env")"
  code="$(curl -sS --noproxy '*' --max-time 15 --cacert "$dir/smoke-ca.crt" -o "$body" -w '%{http_code}' \
    "$kcm_url/healthz" || true)"
  check "kube-controller-manager (--controllers=$controllers) /healthz at $kcm_url" "$code" 200
  if has_controller namespace namespace-controller; then
    check "admin creates a Namespace to delete" \
      "$(json '{apiVersion:"v1",kind:"Namespace",metadata:{name:"cvo-smoke-doomed"}}' |
        req "$admin" POST /api/v1/namespaces application/json)" 201
    check "admin creates a ConfigMap in it" \
      "$(json '{apiVersion:"v1",kind:"ConfigMap",metadata:{name:"content"}}' |
        req "$admin" POST /api/v1/namespaces/cvo-smoke-doomed/configmaps application/json)" 201
    check "admin deletes the Namespace" "$(req "$admin" DELETE /api/v1/namespaces/cvo-smoke-doomed)" 200 \
      .status.phase Terminating
    # The namespace controller waits 5 s (namespaceDeletionGracePeriod) before it acts.
    wait_gone "the namespace controller removes the Namespace with its content" /api/v1/namespaces/cvo-smoke-doomed 30
  fi
  if has_controller garbagecollector garbage-collector-controller; then
    check "admin creates an owner ConfigMap" \
      "$(json '{apiVersion:"v1",kind:"ConfigMap",metadata:{name:"owner"}}' |
        req "$admin" POST /api/v1/namespaces/cvo-smoke/configmaps application/json)" 201
    owner_uid="$(jq -r .metadata.uid "$body")"
    # shellcheck disable=SC2016 # ($uid is jq's)
    check "admin creates a ConfigMap owned by it" \
      "$(json --arg uid "$owner_uid" '{apiVersion:"v1",kind:"ConfigMap",metadata:{name:"dependent",
        ownerReferences:[{apiVersion:"v1",kind:"ConfigMap",name:"owner",uid:$uid}]}}' |
        req "$admin" POST /api/v1/namespaces/cvo-smoke/configmaps application/json)" 201
    check "admin deletes the owner" "$(req "$admin" DELETE /api/v1/namespaces/cvo-smoke/configmaps/owner)" 200
    wait_gone "the garbage collector deletes the dependent" /api/v1/namespaces/cvo-smoke/configmaps/dependent 30
  fi
fi
t_checks=$((SECONDS - t_checks0))

t_down0=$SECONDS
trap - EXIT
rc=0
pids=""
for f in "$dir"/*.pid; do
  [ -s "$f" ] && pids+=" $(cat "$f")"
done
if [ -n "${CVO_SMOKE_KEEP:-}" ]; then
  "$here/down.sh" --keep "$dir" || rc=1
else
  "$here/down.sh" "$dir" || rc=1
fi
t_down=$((SECONDS - t_down0))
left=""
for pid in $pids; do
  # (a zombie is gone: its parent has not reaped it yet)
  if [ -e "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; then
    left+=" $pid"
  fi
done
if [ -z "$left" ]; then
  echo "ok    down.sh leaves no process behind (pids$pids)" >&2
  passed=$((passed + 1))
else
  echo "FAIL  down.sh left processes behind:$left" >&2
  failed=$((failed + 1))
fi
log "times: build ${t_build}s, up ${t_up}s, checks ${t_checks}s, down ${t_down}s, total $((SECONDS - t0))s"
[ "$rc" -eq 0 ] || failed=$((failed + 1))
echo "smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
