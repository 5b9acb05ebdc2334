//! `cvo dt reconcile` as users run it: the fixtures under testdata/dt/, what the objects end up
//! as, the errors and the exit codes.

use assert_cmd::Command;
use serde_json::Value;

const NOW: &str = "2024-05-01T12:00:00Z";

fn cvo() -> Command {
    let mut cmd = Command::cargo_bin("cvo").unwrap();
    cmd.env_remove("RUST_LOG")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// Runs on a fixture (`-` with `stdin`) with `-o json`; the exit code and the JSON.
fn reconcile(file: &str, stdin: Option<String>, extra: &[&str]) -> (i32, Value) {
    let mut cmd = cvo();
    cmd.args(["dt", "reconcile", "-o", "json", "--now", NOW, "-f", file])
        .args(extra);
    if let Some(text) = stdin {
        cmd.write_stdin(text);
    }
    let out = cmd.output().unwrap();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), json)
}

fn settled(fixture: &str) -> Value {
    let (code, json) = reconcile(&format!("testdata/dt/{fixture}"), None, &[]);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(json["converged"], true);
    assert_eq!(json["errors"], serde_json::json!([]));
    json
}

/// The object of this kind and name (namespace `team-a` for namespaced kinds, unless told).
fn object<'a>(json: &'a Value, kind: &str, name: &str) -> Option<&'a Value> {
    (json["objects"].as_array().unwrap().iter())
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}

fn get<'a>(json: &'a Value, kind: &str, name: &str) -> &'a Value {
    object(json, kind, name).unwrap_or_else(|| panic!("no {kind} {name} in {json:#}"))
}

/// A target `provisioner` made for `claim`, bound to it, with these credentials (default
/// namespace, API URL, secret).
fn assert_provisioned(
    target: &Value,
    claim: &str,
    provisioner: &str,
    credentials: (&str, &str, &str),
) {
    assert_eq!(target["status"]["phase"], "Bound");
    assert_eq!(target["spec"]["claimRef"], claim);
    let (namespace, url, secret) = credentials;
    let want = serde_json::json!({
        "defaultNamespace": namespace,
        "apiURL": url,
        "clusterCredentialsSecret": secret,
        "allowInsecureSkipTLSVerify": false,
    });
    assert_eq!(target["spec"]["kubernetesCredentials"], want);
    let made_by =
        &target["metadata"]["annotations"]["provisioner.appstudio.redhat.com/provisioned-by"];
    assert_eq!(made_by, provisioner);
}

fn phase<'a>(json: &'a Value, kind: &str, name: &str) -> &'a Value {
    &get(json, kind, name)["status"]["phase"]
}

fn condition(o: &Value) -> (&str, &str, &str) {
    let c = &o["status"]["conditions"][0];
    assert_eq!(c["type"], "ErrorOccurred");
    (
        c["status"].as_str().unwrap(),
        c["reason"].as_str().unwrap(),
        c["message"].as_str().unwrap(),
    )
}

#[test]
fn a_claim_binds_the_first_eligible_target_of_its_class_by_name() {
    let json = settled("bind-by-class.yaml");
    let claim = get(&json, "DeploymentTargetClaim", "prod");
    assert_eq!(claim["status"]["phase"], "Bound");
    assert_eq!(claim["spec"]["targetName"], "c-first");
    assert_eq!(
        claim["metadata"]["annotations"]["dt.appstudio.redhat.com/bind-complete"],
        "true"
    );
    assert_eq!(
        claim["metadata"]["annotations"]["dt.appstudio.redhat.com/bound-by-controller"],
        "true"
    );
    assert_eq!(
        claim["metadata"]["finalizers"][0],
        "binder.appstudio.redhat.com/finalizer"
    );
    assert_eq!(condition(claim), ("False", "Success", ""));
    let target = get(&json, "DeploymentTarget", "c-first");
    assert_eq!(target["status"]["phase"], "Bound");
    assert_eq!(
        target["spec"].get("claimRef"),
        None,
        "the binder never writes claimRef"
    );
    assert_eq!(
        target["metadata"]["finalizers"][0],
        "dt.appstudio.redhat.com/finalizer"
    );
    assert_eq!(phase(&json, "DeploymentTarget", "d-second"), "Available");
    assert_eq!(phase(&json, "DeploymentTarget", "a-released"), "Released");
}

#[test]
fn a_claim_binds_the_target_it_names() {
    let json = settled("target-name.yaml");
    let claim = get(&json, "DeploymentTargetClaim", "staging");
    assert_eq!(claim["status"]["phase"], "Bound");
    let annotations = &claim["metadata"]["annotations"];
    assert_eq!(annotations["dt.appstudio.redhat.com/bind-complete"], "true");
    assert_eq!(
        annotations.get("dt.appstudio.redhat.com/bound-by-controller"),
        None
    );
    assert_eq!(phase(&json, "DeploymentTarget", "mine"), "Bound");
    assert_eq!(
        get(&json, "DeploymentTarget", "a-first")["status"].get("phase"),
        None
    );
}

#[test]
fn conflicts_are_shown_on_the_claims_and_fail_the_run() {
    let out = cvo()
        .args([
            "dt",
            "reconcile",
            "--now",
            NOW,
            "-f",
            "testdata/dt/conflicts.yaml",
        ])
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    let mismatch = "DeploymentTarget gold-target does not match DeploymentTargetClaim wrong-class in namespace team-a: deploymentTargetClassName does not match";
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            "error: DeploymentTargetClaim team-a/wants-claimed: DeploymentTargetClaim wants to claim a DeploymentTarget that is already claimed",
            &format!("error: DeploymentTargetClaim team-a/wrong-class: {mismatch}"),
        ]
    );
    let (code, json) = reconcile("testdata/dt/conflicts.yaml", None, &[]);
    assert_eq!(code, 1);
    assert_eq!(json["converged"], true);
    let errors = json["errors"].as_array().unwrap();
    assert_eq!(
        errors[1],
        serde_json::json!({
            "kind": "DeploymentTargetClaim", "namespace": "team-a", "name": "wrong-class", "message": mismatch
        })
    );
    let wants = get(&json, "DeploymentTargetClaim", "wants-claimed");
    assert_eq!(wants["status"]["phase"], "Pending");
    assert_eq!(
        condition(wants),
        (
            "True",
            "ErrorOccurred",
            "DeploymentTargetClaim wants to claim a DeploymentTarget that is already claimed"
        )
    );
    let wrong = get(&json, "DeploymentTargetClaim", "wrong-class");
    let shown =
        format!("DeploymentTarget does not match the specified DeploymentTargetClaim: {mismatch}");
    assert_eq!(condition(wrong), ("True", "ErrorOccurred", shown.as_str()));
    assert_eq!(
        get(&json, "DeploymentTargetClaim", "someone-else")["spec"]["targetName"],
        "taken"
    );
}

#[test]
fn a_target_without_credentials_is_never_bound() {
    let json = settled("no-credentials.yaml");
    let claim = get(&json, "DeploymentTargetClaim", "prod");
    assert_eq!(claim["metadata"]["namespace"], "default");
    assert_eq!(claim["status"]["phase"], "Pending");
    assert_eq!(claim["spec"].get("targetName"), None);
    assert_eq!(
        claim["metadata"]["annotations"]["provisioner.appstudio.redhat.com/dt-provisioner"],
        "manual"
    );
}

#[test]
fn the_namespace_provisioner_makes_a_target_and_the_claim_binds_it() {
    let json = settled("namespace-provisioner.yaml");
    let ns = get(&json, "Namespace", "team-a--prod-dtc");
    assert_eq!(
        ns["metadata"]["labels"]["appstudio.openshift.io/dtc"],
        "prod-dtc"
    );
    assert_eq!(
        ns["metadata"]["labels"]["appstudio.openshift.io/dtc-namespace"],
        "team-a"
    );
    let account = get(&json, "ServiceAccount", "deployment-target");
    assert_eq!(account["metadata"]["namespace"], "team-a--prod-dtc");
    let binding = get(&json, "RoleBinding", "deployment-target-admin");
    assert_eq!(binding["roleRef"]["name"], "admin");
    assert_eq!(binding["subjects"][0]["name"], "deployment-target");
    let secret = get(&json, "Secret", "prod-dtc-dt-kubeconfig");
    assert_eq!(secret["metadata"]["namespace"], "team-a");
    let kubeconfig = secret["data"]["kubeconfig"].as_str().unwrap();
    use base64::Engine as _;
    let kubeconfig = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(kubeconfig)
            .unwrap(),
    )
    .unwrap();
    assert!(
        kubeconfig.contains("token: OFFLINE-PLACEHOLDER"),
        "{kubeconfig}"
    );
    let target = get(&json, "DeploymentTarget", "prod-dtc-dt");
    let credentials = (
        "team-a--prod-dtc",
        "https://kubernetes.default.svc",
        "prod-dtc-dt-kubeconfig",
    );
    assert_provisioned(
        target,
        "prod-dtc",
        "appstudio.redhat.com/namespace",
        credentials,
    );
    let class_label =
        &target["metadata"]["labels"]["provisioner.appstudio.redhat.com/dt-provisioner"];
    assert_eq!(class_label, "isolation-level-namespace");
    let claim = get(&json, "DeploymentTargetClaim", "prod-dtc");
    assert_eq!(claim["status"]["phase"], "Bound");
    assert_eq!(claim["spec"]["targetName"], "prod-dtc-dt");
}

/// The YAML output of a fixture that settles.
fn yaml_output(fixture: &str) -> String {
    let path = format!("testdata/dt/{fixture}");
    let out = cvo()
        .args(["dt", "reconcile", "--now", NOW, "-f", &path])
        .assert()
        .success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

/// The provisioned objects of namespace-provisioner.yaml (printed as YAML: the output is input
/// again), the claim deleted and the class given `policy`.
fn deleted_claim(policy: &str) -> String {
    let text = yaml_output("namespace-provisioner.yaml");
    let edited = text
        .replace("reclaimPolicy: Delete", &format!("reclaimPolicy: {policy}"))
        .replace("  name: prod-dtc\n  namespace: team-a\n", "  name: prod-dtc\n  namespace: team-a\n  deletionTimestamp: \"2024-05-01T12:00:00Z\"\n");
    assert_ne!(text, edited);
    edited
}

#[test]
fn a_deleted_claim_with_delete_takes_its_target_and_namespace() {
    let (code, json) = reconcile("-", Some(deleted_claim("Delete")), &[]);
    assert_eq!(code, 0, "{json:#}");
    let kinds: Vec<&str> = json["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["DeploymentTargetClass"],
        "claim, target, namespace and secret are gone"
    );
}

#[test]
fn a_deleted_claim_with_retain_releases_its_target() {
    let (code, json) = reconcile("-", Some(deleted_claim("Retain")), &[]);
    assert_eq!(code, 0, "{json:#}");
    assert!(object(&json, "DeploymentTargetClaim", "prod-dtc").is_none());
    let target = get(&json, "DeploymentTarget", "prod-dtc-dt");
    assert_eq!(target["status"]["phase"], "Released");
    assert_eq!(target["spec"].get("claimRef"), None);
    assert!(object(&json, "Namespace", "team-a--prod-dtc").is_some());
    assert!(object(&json, "Secret", "prod-dtc-dt-kubeconfig").is_some());
}

#[test]
fn a_ready_space_request_becomes_a_bound_target() {
    let json = settled("devsandbox.yaml");
    let target = get(&json, "DeploymentTarget", "dev-dt");
    let credentials = (
        "team-a-dev-env",
        "https://api.member.example:6443",
        "team-a-dev-env-secret",
    );
    assert_provisioned(
        target,
        "dev",
        "appstudio.redhat.com/devsandbox",
        credentials,
    );
    assert_eq!(
        get(&json, "SpaceRequest", "dev-x7k2p")["metadata"]["labels"]["appstudio.openshift.io/dt"],
        "dev-dt"
    );
    let claim = get(&json, "DeploymentTargetClaim", "dev");
    assert_eq!(claim["status"]["phase"], "Bound");
    assert_eq!(claim["spec"]["targetName"], "dev-dt");
}

#[test]
fn a_claim_of_a_sandbox_class_asks_for_a_space_request() {
    let text = std::fs::read_to_string(format!(
        "{}/testdata/dt/devsandbox.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let without_request = text
        .split("\n---\n")
        .take(2)
        .collect::<Vec<_>>()
        .join("\n---\n");
    let (code, json) = reconcile("-", Some(without_request), &[]);
    assert_eq!(code, 0, "{json:#}");
    let requests: Vec<&Value> = json["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "SpaceRequest")
        .collect();
    let [request] = requests[..] else {
        panic!("{json:#}")
    };
    assert_eq!(request["metadata"]["generateName"], "dev-");
    assert!(
        request["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("dev-")
    );
    assert_eq!(
        request["metadata"]["labels"]["appstudio.openshift.io/dtc"],
        "dev"
    );
    assert_eq!(request["spec"]["tierName"], "appstudio-env");
    assert_eq!(phase(&json, "DeploymentTargetClaim", "dev"), "Pending");
}

#[test]
fn a_bound_claim_whose_target_is_gone_is_lost() {
    let (code, json) = reconcile("testdata/dt/lost.yaml", None, &[]);
    assert_eq!(code, 1);
    let claim = get(&json, "DeploymentTargetClaim", "prod");
    assert_eq!(claim["status"]["phase"], "Lost");
    let error =
        "DeploymentTarget not found for a bounded DeploymentTargetClaim prod in namespace team-a";
    assert_eq!(json["errors"][0]["message"], error);
    let shown = format!("failed to process bound DeploymentTargetClaim: {error}");
    assert_eq!(condition(claim), ("True", "ErrorOccurred", shown.as_str()));
}

#[test]
fn running_out_of_rounds_fails_and_says_so() {
    let out = cvo()
        .args([
            "dt",
            "reconcile",
            "--now",
            NOW,
            "--max-rounds",
            "2",
            "-o",
            "json",
            "-f",
            "testdata/dt/namespace-provisioner.yaml",
        ])
        .assert()
        .code(1);
    let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(
        (json["rounds"].as_u64(), &json["converged"]),
        (Some(2), &Value::Bool(false))
    );
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("error: the objects did not settle in 2 rounds (--max-rounds)"),
        "{stderr}"
    );
}

#[test]
fn bad_input_names_the_file_and_document() {
    let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: appstudio.redhat.com/v1alpha1\nkind: DeploymentTargetClaimm\nmetadata: {name: x}\n";
    let out = cvo()
        .args(["dt", "reconcile", "-f", "-"])
        .write_stdin(text)
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.starts_with("error: standard input: document 2 (line 5): unknown kind appstudio.redhat.com/v1alpha1 DeploymentTargetClaimm (did you mean DeploymentTargetClaim?); valid kinds: appstudio.redhat.com/v1alpha1 DeploymentTargetClass, "),
        "{stderr}"
    );
    assert!(out.get_output().stdout.is_empty());
    let out = cvo()
        .args(["dt", "reconcile", "-f", "testdata/dt/nope.yaml"])
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.starts_with("error: testdata/dt/nope.yaml: cannot read"),
        "{stderr}"
    );
    cvo()
        .args(["dt", "reconcile", "-f", "-", "--now", "yesterday"])
        .assert()
        .code(2);
    cvo()
        .args(["dt", "reconcile", "-f", "-", "--max-rounds", "0"])
        .assert()
        .code(2);
}

#[test]
fn yaml_output_is_a_stream_of_the_objects() {
    let text = yaml_output("target-name.yaml");
    let kinds: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("kind: "))
        .collect();
    assert_eq!(
        kinds,
        [
            "DeploymentTargetClass",
            "DeploymentTarget",
            "DeploymentTarget",
            "DeploymentTargetClaim"
        ]
    );
    assert_eq!(text.matches("\n---\n").count(), 3);
}

/// Environments run offline too: one on a bound claim gets its managed environment and a copy
/// of the credentials; one on a missing claim fails the run with upstream's reason and message.
#[test]
fn an_environment_on_a_provisioned_claim_gets_its_managed_environment() {
    let (code, json) = reconcile("testdata/dt/environment.yaml", None, &[]);
    assert_eq!(code, 1, "the orphan Environment has an error: {json:#}");
    assert_eq!(json["converged"], true);
    let managed = get(
        &json,
        "GitOpsDeploymentManagedEnvironment",
        "managed-environment-development",
    );
    assert_eq!(
        managed["spec"]["namespaces"],
        serde_json::json!(["team-a--dev"])
    );
    assert_eq!(
        managed["spec"]["credentialsSecret"],
        "managed-environment-secret-development"
    );
    let copy = get(&json, "Secret", "managed-environment-secret-development");
    assert_eq!(
        copy["type"],
        "managed-gitops.redhat.com/managed-environment"
    );
    let reconciled = (get(&json, "Environment", "development")["status"]["conditions"].as_array())
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Reconciled").cloned());
    // No error was ever set, so there is nothing to resolve: upstream writes no condition.
    assert!(
        reconciled.as_ref().is_none_or(|c| c["status"] == "True"),
        "{reconciled:?}"
    );
    let errors = json["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["kind"], "Environment");
    assert_eq!(errors[0]["name"], "orphan");
    assert_eq!(
        errors[0]["message"],
        "DeploymentTargetClaim not found while generating the desired Environment resource"
    );
}
