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

/// A generated world (the shape of benches/dt_offline.rs, small) prints byte for byte what
/// testdata/dt/generated-world.out.yaml holds: what the command writes does not move when its
/// insides change (the typed API-server writes, the YAML written on every core).
#[test]
fn a_generated_world_prints_what_it_always_printed() {
    let text = yaml_output("generated-world.yaml");
    let expected = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/dt/generated-world.out.yaml"
    ))
    .unwrap();
    if text != expected {
        let (got, want): (Vec<&str>, Vec<&str>) =
            (text.lines().collect(), expected.lines().collect());
        let at = (0..got.len().max(want.len()))
            .find(|&i| got.get(i) != want.get(i))
            .unwrap_or_default();
        panic!(
            "the output differs from generated-world.out.yaml at line {}: {:?}, expected {:?}",
            at + 1,
            got.get(at),
            want.get(at)
        );
    }
    let (code, json) = reconcile("testdata/dt/generated-world.yaml", None, &[]);
    assert_eq!(code, 0);
    assert_eq!(
        (&json["rounds"], &json["converged"]),
        (&4.into(), &true.into())
    );
    assert_eq!(json["objects"].as_array().unwrap().len(), 134);
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

/// A class of user-made targets (no provisioner of cvo's), to start an input with.
const BYO_CLASS: &str = "\
apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTargetClass
metadata: {name: byo}
spec: {provisioner: example.com/manual, reclaimPolicy: Retain}
---
";

/// Runs on standard input (`-o json`, `extra` flags): exit code, standard output and error.
fn on_stdin(text: &str, extra: &[&str]) -> (i32, String, String) {
    on_stdin_with(text, "json", extra)
}

/// [`on_stdin`] in an output format.
fn on_stdin_as(text: &str, format: &str) -> (i32, String, String) {
    on_stdin_with(text, format, &[])
}

fn on_stdin_with(text: &str, format: &str, extra: &[&str]) -> (i32, String, String) {
    let out = cvo()
        .args(["dt", "reconcile", "-o", format, "--now", NOW, "-f", "-"])
        .args(extra)
        .write_stdin(text.to_owned())
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A class's parameters shape what the namespace provisioner makes: quota, LimitRange, role,
/// token lifetime, and a cap on each namespace's claims; names that collided under `NS--C`
/// get a namespace each.
#[test]
fn class_parameters_shape_the_tenants_namespaces() {
    let (code, json) = reconcile("testdata/dt/tenants.yaml", None, &[]);
    assert_eq!(code, 1, "the claim over the cap has an error: {json:#}");
    let of = |kind: &str, ns: &str| -> Vec<&Value> {
        (json["objects"].as_array().unwrap().iter())
            .filter(|o| o["kind"] == kind && o["metadata"]["namespace"] == ns)
            .collect()
    };
    let quota = of("ResourceQuota", "team-a--dev");
    assert_eq!(quota.len(), 1);
    assert_eq!(quota[0]["metadata"]["name"], "deployment-target");
    assert_eq!(quota[0]["spec"]["hard"]["pods"], "20");
    let range = of("LimitRange", "team-a--dev");
    assert_eq!(range[0]["spec"]["limits"][0]["default"]["cpu"], "500m");
    let binding = of("RoleBinding", "team-a--dev");
    assert_eq!(binding[0]["metadata"]["name"], "deployment-target-edit");
    assert_eq!(binding[0]["roleRef"]["name"], "edit");
    let secret = (of("Secret", "team-a").into_iter())
        .find(|s| s["metadata"]["name"] == "dev-dt-kubeconfig")
        .unwrap();
    let annotations = &secret["metadata"]["annotations"];
    assert_eq!(
        annotations["provisioner.appstudio.redhat.com/token-issued-at"],
        NOW
    );
    assert_eq!(
        annotations["provisioner.appstudio.redhat.com/token-expires-at"], "2024-05-02T12:00:00Z",
        "a day, as the class asks"
    );
    // Two claims of team-a bound (the first two by name); the third waits at the cap and
    // says why.
    let phases: Vec<(&str, &Value)> = (of("DeploymentTargetClaim", "team-a").into_iter())
        .map(|c| {
            (
                c["metadata"]["name"].as_str().unwrap(),
                &c["status"]["phase"],
            )
        })
        .collect();
    assert_eq!(
        phases,
        [
            ("dev", &Value::from("Bound")),
            ("prod", &Value::from("Bound")),
            ("stage", &Value::from("Pending"))
        ]
    );
    let errors = json["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["name"], "stage");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("namespace team-a already has 2 DeploymentTargets of DeploymentTargetClass tenant-namespace, its maxClaimsPerNamespace"),
        "{errors:#?}"
    );
    // `a--b` of `team` and `b` of `team--a`: two claims, two namespaces.
    let made: Vec<&str> = (json["objects"].as_array().unwrap().iter())
        .filter(|o| o["kind"] == "Namespace")
        .filter(|o| {
            let claim_ns = &o["metadata"]["labels"]["appstudio.openshift.io/dtc-namespace"];
            claim_ns == "team" || claim_ns == "team--a"
        })
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(made.len(), 2, "{made:?}");
    assert_ne!(made[0], made[1]);
    assert_eq!(phase(&json, "DeploymentTargetClaim", "b"), "Bound");
    assert_eq!(phase(&json, "DeploymentTargetClaim", "a--b"), "Bound");
}

/// `--require-bound`: CI asks whether every claim binds. Without it a Pending claim is no
/// error; with it the run fails and names the claim.
#[test]
fn require_bound_fails_while_a_claim_is_not_bound() {
    let text = [
        BYO_CLASS,
        "\
apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTargetClaim
metadata: {name: waits, namespace: team}
spec: {deploymentTargetClassName: byo}
",
    ]
    .concat();
    let (code, stdout, _) = on_stdin(&text, &[]);
    assert_eq!(code, 0);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        json["unbound"],
        serde_json::json!([{"namespace": "team", "name": "waits", "phase": "Pending"}])
    );
    let (code, _, stderr) = on_stdin(&text, &["--require-bound"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(
            "error: DeploymentTargetClaim team/waits is Pending, not Bound (--require-bound)"
        ),
        "{stderr}"
    );
    let (code, _, _) = on_stdin(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
        &["--require-bound"],
    );
    assert_eq!(code, 0, "no claim, none unbound");
}

/// Nothing to reconcile is an error, not a quiet success.
#[test]
fn an_empty_input_fails() {
    for text in ["", "# nothing\n---\n"] {
        let (code, stdout, stderr) = on_stdin(text, &[]);
        assert_eq!(code, 1, "{text:?}");
        assert!(stdout.is_empty());
        assert!(
            stderr.starts_with("error: standard input: no objects to reconcile"),
            "{stderr}"
        );
    }
}

/// A reader that stops early (`cvo dt reconcile ... | head`) ends the command quietly, as
/// for every other command: exit 0, no error, though the stream was cut short. The output is
/// several times the command's 1 MiB buffer, so the reader goes while it writes, not only at
/// its last flush; the JSON too.
#[test]
fn a_reader_that_stops_early_ends_it_quietly() {
    use std::io::{Read as _, Write as _};
    use std::process::{Command, Stdio};
    let input: String = (0..25_000)
        .map(|i| format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-{i}\n---\n"))
        .collect();
    for (format, start) in [
        ("yaml", &b"apiVersion: v1\nk"[..]),
        ("json", b"{\n  \"converged\""),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cvo"))
            .args(["dt", "reconcile", "--now", NOW, "-f", "-", "-o", format])
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let mut head = vec![0u8; start.len()];
        child.stdout.take().unwrap().read_exact(&mut head).unwrap();
        // The read end is closed here.
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&head),
            String::from_utf8_lossy(start)
        );
        assert_eq!(out.status.code(), Some(0), "{format}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{format}");
    }
}

/// Objects all deleted by the end (a claim being deleted whose finalizer the binder takes off)
/// leave an empty stream: an empty line, exit 0.
#[test]
fn a_world_left_empty_prints_an_empty_line() {
    let claim = "apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTargetClaim
metadata: {name: c, namespace: ns, deletionTimestamp: \"2024-05-01T12:00:00Z\", finalizers: [binder.appstudio.redhat.com/finalizer]}
spec: {deploymentTargetClassName: cls}
";
    let (code, stdout, stderr) = on_stdin_as(claim, "yaml");
    assert_eq!((code, stdout.as_str()), (0, "\n"), "{stderr}");
}

/// What is wrong with the input says where: the field of a type error, the line of a YAML
/// syntax error, the near miss of a field the API server would drop; a Secret's stringData is
/// folded into data; JSON documents separated by `---` are read.
#[test]
fn input_problems_say_where_and_what() {
    let target = |spec: &str| {
        format!(
            "apiVersion: appstudio.redhat.com/v1alpha1\nkind: DeploymentTarget\nmetadata: {{name: x, namespace: team}}\nspec: {spec}\n"
        )
    };
    let (code, _, stderr) = on_stdin(&target("{claimRef: {name: c}}"), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        stderr.trim(),
        "error: standard input: document 1 (line 1): DeploymentTarget: spec.claimRef: invalid type: map, expected a string"
    );
    let broken = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: a}}\n---\n{}",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n   labels: {}\n"
    );
    let (code, _, stderr) = on_stdin(&broken, &[]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: standard input: document 2 (line 9): "),
        "the bad line, not the document's first: {stderr}"
    );
    let claim = [BYO_CLASS, "apiVersion: appstudio.redhat.com/v1alpha1\nkind: DeploymentTargetClaim\nmetadata: {name: c, namespace: team}\nspec: {deploymentTargetClassName: byo, targetname: x, resources: {requests: {cpu: 1}}}\n"].concat();
    let (code, _, stderr) = on_stdin(&claim, &[]);
    assert_eq!(code, 0);
    for warning in [
        "DeploymentTargetClaim team/c: unknown field spec.targetname (did you mean targetName?); the API server would drop it",
        "DeploymentTargetClaim team/c: unknown field spec.resources (known fields there: deploymentTargetClassName, targetName); the API server would drop it",
    ] {
        assert!(stderr.contains(warning), "{warning}\n{stderr}");
    }
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: team}\nstringData: {kubeconfig: hello}\n";
    let (code, stdout, _) = on_stdin(secret, &[]);
    assert_eq!(code, 0);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let out = get(&json, "Secret", "s");
    assert_eq!(out["data"]["kubeconfig"], "aGVsbG8=");
    assert_eq!(out.get("stringData"), None);
    let json_docs = "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"a\"}}\n---\n{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"b\"}}\n";
    let (code, stdout, stderr) = on_stdin(json_docs, &[]);
    assert_eq!(code, 0, "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["objects"].as_array().unwrap().len(), 2);
}

/// A target whose phase is none a controller writes is not bound (upstream's `doesDTMatchDTC`
/// refuses any phase but `""` and `Available`), and its phase stays as written.
#[test]
fn a_target_in_an_unknown_phase_is_not_bound() {
    let text = [BYO_CLASS, "\
apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTarget
metadata: {name: odd, namespace: team}
spec:
  deploymentTargetClassName: byo
  kubernetesCredentials: {defaultNamespace: d, apiURL: 'https://api.example:6443', clusterCredentialsSecret: s, allowInsecureSkipTLSVerify: false}
status: {phase: Bogus}
---
apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTargetClaim
metadata: {name: c, namespace: team}
spec: {deploymentTargetClassName: byo}
"].concat();
    let (code, stdout, _) = on_stdin(&text, &["--require-bound"]);
    assert_eq!(code, 1);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(phase(&json, "DeploymentTarget", "odd"), "Bogus");
    assert_eq!(phase(&json, "DeploymentTargetClaim", "c"), "Pending");
}

/// A target pre-bound to a claim that does not exist yet (the bring-your-own-cluster flow)
/// stays reserved for it, as a PersistentVolume does: a claim without a target does not take
/// it (upstream clears its claimRef and the first such claim does), the named claim does.
#[test]
fn a_pre_bound_target_is_kept_for_its_claim() {
    let base = [BYO_CLASS, "\
apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTarget
metadata: {name: my-cluster, namespace: team}
spec:
  deploymentTargetClassName: byo
  claimRef: prod
  kubernetesCredentials: {defaultNamespace: d, apiURL: 'https://api.example:6443', clusterCredentialsSecret: s, allowInsecureSkipTLSVerify: false}
---
apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTargetClaim
metadata: {name: first, namespace: team}
spec: {deploymentTargetClassName: byo}
"].concat();
    let (code, stdout, _) = on_stdin(&base, &[]);
    assert_eq!(code, 0);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(phase(&json, "DeploymentTargetClaim", "first"), "Pending");
    assert_eq!(
        get(&json, "DeploymentTarget", "my-cluster")["spec"]["claimRef"],
        "prod"
    );
    let with_owner = format!(
        "{base}---\napiVersion: appstudio.redhat.com/v1alpha1\nkind: DeploymentTargetClaim\nmetadata: {{name: prod, namespace: team}}\nspec: {{deploymentTargetClassName: byo}}\n"
    );
    let (code, stdout, _) = on_stdin(&with_owner, &[]);
    assert_eq!(code, 0);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(phase(&json, "DeploymentTargetClaim", "prod"), "Bound");
    assert_eq!(phase(&json, "DeploymentTargetClaim", "first"), "Pending");
}

/// A class with a parameter its provisioner does not know says so in its status, and fails
/// the run.
#[test]
fn an_unknown_class_parameter_is_an_error_on_the_class() {
    let text = "\
apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTargetClass
metadata: {name: tenants}
spec:
  provisioner: appstudio.redhat.com/namespace
  reclaimPolicy: Delete
  parameters: {maxClaimPerNamespace: 3}
";
    let (code, stdout, stderr) = on_stdin(text, &[]);
    assert_eq!(code, 1);
    let message = "DeploymentTargetClass tenants: spec.parameters.maxClaimPerNamespace: the appstudio.redhat.com/namespace provisioner has no such parameter (did you mean maxClaimsPerNamespace?); its parameters: limitRange, maxClaimsPerNamespace, resourceQuota, role, tokenExpirationSeconds";
    assert!(
        stderr.contains(&format!("error: DeploymentTargetClass tenants: {message}")),
        "{stderr}"
    );
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let condition = &get(&json, "DeploymentTargetClass", "tenants")["status"]["conditions"][0];
    assert_eq!(condition["type"], "ErrorOccurred");
    assert_eq!(condition["message"], message);
}
