//! `cvo edge constraints` and `cvo edge version-range` as users run them: the JSON and text
//! answers, anax's messages, the exit codes, and bad input files.

use assert_cmd::Command;
use serde_json::{Value, json};

fn cvo() -> Command {
    let mut cmd = Command::cargo_bin("cvo").unwrap();
    cmd.env_remove("RUST_LOG")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    // `cvo edge agent-install` reads the hub settings from these, as agent-install.sh does.
    for var in ["HZN_EXCHANGE_URL", "HZN_FSS_CSSURL", "HZN_ORG_ID"] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs `cvo edge ARGS -o json`: the exit code, the JSON and standard error.
fn json_of(args: &[&str]) -> (i32, Value, String) {
    let out = cvo()
        .arg("edge")
        .args(args)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code().unwrap(), json, stderr)
}

/// Runs `cvo edge ARGS` in text: the exit code, standard output and standard error.
fn text_of(args: &[&str]) -> (i32, String, String) {
    let out = cvo().arg("edge").args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const NODE: &str = "testdata/edge/node.json";

#[test]
fn valid_constraints_without_properties() {
    let (code, json, _) = json_of(&["constraints", "purpose == network-testing", "a in \"x,y\""]);
    assert_eq!(code, 0);
    assert_eq!(
        json,
        json!({"valid": true, "error": "", "satisfied": null, "reason": null})
    );
}

#[test]
fn satisfied_or_not_against_a_node() {
    let satisfied = [
        vec![
            "purpose == network-testing",
            "openhorizon.cpu >= 2 && openhorizon.arch in \"amd64,arm64\"",
        ],
        vec!["openhorizon.kubernetesNamespaceScoped == false"],
        vec!["languages in \"es,de\" OR nothing == here"],
        vec!["firmware in [2.0.0,3.0.0)"],
        vec!["(openhorizon.memory > 4096 || openhorizon.cpu == 4) AND purpose != production"],
        vec![],
    ];
    for constraints in satisfied {
        assert_decided(&constraints, true);
    }
    let unsatisfied = [
        // The array is ANDed.
        vec!["purpose == network-testing", "openhorizon.cpu > 8"],
        // A missing property is false even for !=.
        vec!["gpu != nvidia"],
        vec!["firmware in [3.0.0,INFINITY)"],
        vec!["languages != fr"],
    ];
    for constraints in unsatisfied {
        assert_decided(&constraints, false);
    }
}

/// Valid constraints, decided against the node's properties as `satisfied`.
fn assert_decided(constraints: &[&str], satisfied: bool) {
    let mut args = vec!["constraints", "--properties", NODE];
    args.extend(constraints);
    let (code, json, _) = json_of(&args);
    assert_eq!(code, 0, "{constraints:?}");
    assert_eq!(json["valid"], true, "{constraints:?}");
    assert_eq!(json["error"], "", "{constraints:?}");
    assert_eq!(json["satisfied"], satisfied, "{constraints:?}");
    // anax's reason comes with a "not satisfied" only.
    assert_eq!(json["reason"].is_string(), !satisfied, "{constraints:?}");
}

#[test]
fn invalid_constraints_exit_1_with_anax_messages() {
    let cases = [
        (
            vec!["hello > world"],
            "Error finding an expression in hello > world. Error was: Cannot use numerical comparison operator  >  with value world.",
        ),
        (
            vec!["a == 1", "(version == 1.1.1 && USDA == true"],
            "The constraint expression contains unmatched parentheses.",
        ),
        (
            vec!["eggs == truck load && certification == USDA"],
            "Error finding a control operator in eggs == truck load && certification == USDA. Error was: No control operator found. Expecting one of AND,&&,OR,||. Found:  load && certification == USDA",
        ),
        (
            vec!["v in [1.0.0, 2.0.0)"],
            "Error finding an expression in v in [1.0.0, 2.0.0). Error was: Version_Expression: Whitespace is not permitted in [1.0.0, 2.0.0).",
        ),
    ];
    for (constraints, message) in cases {
        for with_properties in [false, true] {
            let mut args = vec!["constraints"];
            if with_properties {
                args.extend(["--properties", NODE]);
            }
            args.extend(&constraints);
            let (code, json, _) = json_of(&args);
            assert_eq!(code, 1, "{constraints:?}");
            // anax's ConstraintExpression.Validate: its plugin registry's words around the
            // text language's.
            let error = format!(
                "constraint language [{}] is not supported.  {message}\n",
                constraints.join(" ")
            );
            assert_eq!(
                json,
                json!({"valid": false, "error": error, "satisfied": null, "reason": null})
            );
        }
    }
}

#[test]
fn text_output() {
    assert_eq!(
        text_of(&["constraints", "a == 1"]),
        (0, "valid\n".into(), String::new())
    );
    assert_eq!(
        text_of(&["constraints", "--properties", NODE, "openhorizon.cpu == 4"]),
        (0, "valid, satisfied\n".into(), String::new())
    );
    assert_eq!(
        text_of(&["constraints", "--properties", NODE, "openhorizon.cpu == 5"]),
        (0, "valid, not satisfied: The required properties openhorizon.cpu==5 were not found in the available properties purpose=network-testing, openhorizon.cpu=4, openhorizon.memory=3918, openhorizon.arch=amd64, openhorizon.kubernetesNamespace=openhorizon-agent, openhorizon.kubernetesNamespaceScoped=false, languages=en,fr,de, firmware=2.4.1\n".into(), String::new())
    );
    let (code, out, _) = text_of(&["constraints", "a =="]);
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "invalid: constraint language [a ==] is not supported.  Error finding an expression in a ==. Error was: Invalid property value. a ==\n"
    );
}

#[test]
fn properties_from_standard_input() {
    let out = cvo()
        .args([
            "edge",
            "constraints",
            "--properties",
            "-",
            "-o",
            "json",
            "cpu < 8",
        ])
        .write_stdin(r#"[{"name": "cpu", "value": 4}]"#)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["satisfied"], true);
}

#[test]
fn bad_properties_files_are_errors_naming_the_file() {
    let cases = [
        (
            "testdata/edge/bad-type.json",
            "error: testdata/edge/bad-type.json: invalid property: Property value is of type string, expected type int",
        ),
        (
            "testdata/edge/not-a-list.json",
            "error: testdata/edge/not-a-list.json: not a JSON list of properties {\"name\", \"value\", \"type\"}: invalid type: map, expected a sequence at line 1 column 0",
        ),
        (
            "testdata/edge/missing.json",
            "error: testdata/edge/missing.json: cannot read: No such file or directory (os error 2)",
        ),
    ];
    for (file, want) in cases {
        let (code, out, err) = text_of(&["constraints", "--properties", file, "a == 1"]);
        assert_eq!(code, 1, "{file}");
        assert_eq!(out, "", "{file}");
        assert_eq!(err.trim_end(), want, "{file}");
    }
}

#[test]
fn version_ranges() {
    let (code, json, err) = json_of(&[
        "version-range",
        "[1.0.0,2.0.0)",
        "1",
        "1.9.9",
        "2.0.0",
        "0.9",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        json,
        json!({"valid": true, "error": "", "contains": {"1": true, "1.9.9": true, "2.0.0": false, "0.9": false}})
    );
    // A bare version is [x,INFINITY).
    let (code, json, _) = json_of(&["version-range", "1.2", "1.2.0", "1.1.99", "INFINITY"]);
    assert_eq!(code, 0);
    assert_eq!(
        json["contains"],
        json!({"1.2.0": true, "1.1.99": false, "INFINITY": false})
    );
    let (code, json, _) = json_of(&["version-range", "(1,INFINITY]", "INFINITY"]);
    assert_eq!(code, 0);
    assert_eq!(json["contains"], json!({"INFINITY": true}));
}

#[test]
fn invalid_ranges_and_versions() {
    for (range, message) in [
        (
            "[1.0.0, 2.0.0)",
            "Version_Expression: Whitespace is not permitted in [1.0.0, 2.0.0).",
        ),
        (
            "1.02.x",
            "Version_Expression: 1.02.x is not a valid version string.",
        ),
        (
            "",
            "Version_Expression: Empty string is not a valid version.",
        ),
        // anax panics on a lone bracket; cvo says what is missing.
        (
            "(",
            "Version_Expression: ( does not end with an inclusion or exclusion directive.",
        ),
        (
            "[1.0.0,2.0.0",
            "Version_Expression: [1.0.0,2.0.0 does not end with an inclusion or exclusion directive.",
        ),
        (
            "1.0.0,2.0.0]",
            "Version_Expression: 1.0.0,2.0.0] does not begin with an inclusion or exclusion directive.",
        ),
        (
            "[1,2,3]",
            "Version_Expression: Incorrect number of versions in expression: [1,2,3].",
        ),
    ] {
        let (code, json, _) = json_of(&["version-range", range, "1.0.0"]);
        assert_eq!(code, 1, "{range}");
        assert_eq!(
            json,
            json!({"valid": false, "error": message, "contains": {}}),
            "{range}"
        );
    }
    // A VERSION that is not one is reported, not false.
    let (code, json, err) = json_of(&["version-range", "[1,2]", "1.5", "1.x"]);
    assert_eq!(code, 1);
    assert_eq!(json["contains"], json!({"1.5": true, "1.x": null}));
    assert_eq!(
        err.trim_end(),
        "error: Version_Expression: 1.x is not a valid version string."
    );
    let (code, out, _) = text_of(&["version-range", "[1,2]", "1.5", "3", "1.x"]);
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "valid: [1.0.0,2.0.0]\n1.5: in\n3: not in\n1.x: not a version\n"
    );
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, err) = text_of(&["version-range"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = text_of(&["constraints", "-o", "yaml", "a == 1"]);
    assert_eq!(code, 2, "{err}");
}

/// The hub settings `agent-install` requires.
const HUB: [&str; 6] = [
    "--exchange-url",
    "https://hub.example.com/edge-exchange/v1",
    "--css-url",
    "https://hub.example.com/edge-css/",
    "--org",
    "org1",
];

/// Runs `cvo edge agent-install ARGS -o json` with [`HUB`]: the exit code, the List's items
/// and stderr.
fn agent_objects(args: &[&str]) -> (i32, Vec<Value>, String) {
    let out = cvo()
        .args(["edge", "agent-install"])
        .args(HUB)
        .args(args)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let list: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let items = list["items"].as_array().cloned().unwrap_or_default();
    (out.status.code().unwrap(), items, stderr)
}

fn agent_env(items: &[Value], name: &str) -> Value {
    let deployment = items.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap();
    env.iter().find(|e| e["name"] == name).unwrap()["value"].clone()
}

#[test]
fn agent_install_namespace_scoped_gets_a_role_binding_to_admin() {
    let (code, items, stderr) = agent_objects(&["--namespace", "team-a", "--namespace-scoped"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    let kinds: Vec<&str> = items.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "ServiceAccount",
            "RoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "PersistentVolumeClaim",
            "Deployment",
            "Service",
            "CronJob"
        ]
    );
    assert_eq!(items[2]["roleRef"]["name"], "admin");
    assert_eq!(
        items[3]["rules"],
        json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}])
    );
    assert_eq!(items[2]["metadata"]["namespace"], "team-a");
    assert_eq!(agent_env(&items, "AGENT_NAMESPACE"), "team-a");
    assert_eq!(agent_env(&items, "HZN_NAMESPACE_SCOPED"), "true");
}

#[test]
fn agent_install_default_is_cluster_scoped_in_openhorizon_agent() {
    let (code, items, _) = agent_objects(&[]);
    assert_eq!(code, 0);
    assert_eq!(items[0]["metadata"]["name"], "openhorizon-agent");
    assert_eq!(items[2]["kind"], "ClusterRoleBinding");
    assert_eq!(
        items[2]["metadata"]["name"],
        "openhorizon-agent-openhorizon-agent-cluster-rule"
    );
    assert_eq!(items[2]["roleRef"]["name"], "cluster-admin");
    assert_eq!(agent_env(&items, "HZN_NAMESPACE_SCOPED"), "false");
}

#[test]
fn agent_install_rbac_upstream_binds_cluster_admin_and_says_so() {
    let (code, items, stderr) = agent_objects(&[
        "--namespace",
        "team-a",
        "--namespace-scoped",
        "--rbac",
        "upstream",
    ]);
    assert_eq!(code, 0);
    assert_eq!(items[2]["kind"], "ClusterRoleBinding");
    assert_eq!(items[2]["roleRef"]["name"], "cluster-admin");
    assert!(
        stderr.contains("warning: --rbac upstream: the agent's ServiceAccount is bound to cluster-admin whatever its scope, as anax's agent-install.sh does; this namespace-scoped agent can manage every namespace"),
        "{stderr}"
    );
}

/// The settings of an agent as `agent-install.sh` takes them: the hub from the flags or the
/// script's variables, the template's switches from the flags.
#[test]
fn agent_install_takes_the_hub_and_the_template_switches() {
    let pem = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(pem.path(), "PEM").unwrap();
    let (code, items, stderr) = agent_objects(&[
        "--image",
        "quay.io/edge/arm64_anax_k8s:2.31.0-1498",
        "--cert",
        pem.path().to_str().unwrap(),
        "--storage-class",
        "rook-cephfs",
        "--pvc-size",
        "20Gi",
        "--image-pull-secret",
        "registry-creds",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let of = |kind: &str| items.iter().find(|d| d["kind"] == kind).unwrap().clone();
    let horizon = of("ConfigMap")["data"]["horizon"].clone();
    assert_eq!(
        horizon,
        "HZN_EXCHANGE_URL=https://hub.example.com/edge-exchange/v1\nHZN_FSS_CSSURL=https://hub.example.com/edge-css/\nHZN_MGMT_HUB_CERT_PATH=/etc/default/cert/agent-install.crt\nHZN_AGENT_PORT=8510\n"
    );
    assert_eq!(agent_env(&items, "HZN_ORG_ID"), "org1");
    assert_eq!(
        agent_env(&items, "AGENT_CLUSTER_IMAGE_REGISTRY_HOST"),
        "quay.io/edge"
    );
    assert_eq!(of("Secret")["data"]["agent-install.crt"], "UEVN");
    let pvc = of("PersistentVolumeClaim");
    assert_eq!(pvc["spec"]["storageClassName"], "rook-cephfs");
    assert_eq!(pvc["spec"]["accessModes"], json!(["ReadWriteMany"]));
    assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "20Gi");
    let pod = of("Deployment")["spec"]["template"]["spec"].clone();
    assert_eq!(pod["imagePullSecrets"], json!([{"name": "registry-creds"}]));
    assert_eq!(pod["initContainers"][0]["name"], "initcontainer");
    let job = of("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"].clone();
    assert_eq!(
        job["containers"][0]["image"],
        "quay.io/edge/arm64_auto-upgrade-cronjob_k8s:2.31.0-1498"
    );
    assert_eq!(job["imagePullSecrets"], json!([{"name": "registry-creds"}]));

    // The script's variables instead of the flags.
    let out = cvo()
        .args(["edge", "agent-install", "-o", "json"])
        .env("HZN_EXCHANGE_URL", "https://env.example.com/v1")
        .env("HZN_FSS_CSSURL", "https://env.example.com/css/")
        .env("HZN_ORG_ID", "env-org")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(agent_env(items, "HZN_ORG_ID"), "env-org");
    // A digest-pinned image: no auto-upgrade image to derive.
    let (code, _, stderr) = text_of(&{
        let mut args = vec!["agent-install", "--image", "quay.io/x/anax@sha256:00"];
        args.extend(HUB);
        args
    });
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--image quay.io/x/anax@sha256:00: cannot derive the auto-upgrade CronJob's image from it") && stderr.contains("give it with --cronjob-image"),
        "{stderr}"
    );
}

/// Without the hub settings there is no agent to render: a usage error naming each missing
/// flag and the variable agent-install.sh reads it from.
#[test]
fn agent_install_without_the_hub_is_a_usage_error() {
    let (code, stdout, stderr) = text_of(&["agent-install"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.starts_with("error: the agent cannot reach its management hub without --exchange-url, --css-url, --org: give them (or set HZN_EXCHANGE_URL, HZN_FSS_CSSURL, HZN_ORG_ID in the environment, the variables anax's agent-install.sh reads, also from its agent-install.cfg), e.g. --exchange-url https://HUB/edge-exchange/v1 --css-url https://HUB/edge-css/ --org ORG"),
        "{stderr}"
    );
    assert!(stderr.contains("Usage: cvo edge agent-install"), "{stderr}");
    let (code, _, stderr) = text_of(&[
        "agent-install",
        "--exchange-url",
        "https://hub/v1",
        "--css-url",
        "https://hub/css/",
        "--org",
        " ",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("without --org: give it (or set HZN_ORG_ID in the environment"),
        "{stderr}"
    );
    let (code, _, stderr) = text_of(&["agent-install", "--org", "o", "--css-url", "https://c/"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("without --exchange-url: give it (or set HZN_EXCHANGE_URL"),
        "{stderr}"
    );
}

#[test]
fn agent_install_refuses_bad_values() {
    let (code, _, stderr) = text_of(&[
        "agent-install",
        "--namespace",
        "Team_A",
        "--exchange-url",
        "https://hub/v1",
        "--css-url",
        "https://hub/css/",
        "--org",
        "o",
    ]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--namespace \"Team_A\" is not a valid namespace name"),
        "{stderr}"
    );
    let (code, _, stderr) = text_of(&["agent-install", "--rbac", "least"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("least-privilege"), "{stderr}");
    let (code, _, stderr) = text_of(&["agent-install", "--kubeconfig", "x"]);
    assert_eq!(code, 2, "--kubeconfig needs --check: {stderr}");
}

#[test]
fn namespace_answers_with_the_shipped_messages() {
    let cases: &[(&[&str], Value)] = &[
        (
            &["--node-type", "device", "--deployer-namespace", "abc"],
            json!({"compatible": true, "namespace": "", "reason": ""}),
        ),
        (
            &["--node-type", "cluster"],
            json!({"compatible": true, "namespace": "openhorizon-agent", "reason": ""}),
        ),
        (
            &[
                "--node-type",
                "cluster",
                "--node-namespace",
                "team",
                "--service-namespace",
                "xyz",
            ],
            json!({"compatible": true, "namespace": "xyz", "reason": ""}),
        ),
        (
            &[
                "--node-type",
                "cluster",
                "--node-namespace",
                "team",
                "--namespace-scoped",
                "--deployer-namespace",
                "abc",
            ],
            json!({"compatible": false, "namespace": "",
                   "reason": "The namespace 'abc' specified in the deployment policy or pattern does not match the namespace of the agent: 'team'"}),
        ),
        (
            &[
                "--node-type",
                "cluster",
                "--node-namespace",
                "team",
                "--namespace-scoped",
                "--service-namespace",
                "xyz",
            ],
            json!({"compatible": false, "namespace": "",
                   "reason": "The namespace 'xyz' specified in the service does not match the namespace of the agent: 'team'. Please overwrite it in the deployment policy or pattern."}),
        ),
        (
            &[
                "--node-type",
                "cluster",
                "--node-namespace",
                "team",
                "--namespace-scoped",
                "--pattern",
                "org/p",
                "--deployer-namespace",
                "team",
            ],
            json!({"compatible": true, "namespace": "team", "reason": ""}),
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["namespace"];
        all.extend_from_slice(args);
        let (code, got, stderr) = json_of(&all);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert_eq!(&got, want, "{args:?}");
    }
}

#[test]
fn namespace_refuses_bad_flags() {
    let (code, _, stderr) = text_of(&["namespace", "--node-type", "clustr"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("cluster"), "{stderr}");
    let (code, _, stderr) = text_of(&[
        "namespace",
        "--node-type",
        "cluster",
        "--pattern",
        "nopattern",
    ]);
    assert_eq!(code, 1);
    assert!(stderr.contains("a pattern is ORG/NAME"), "{stderr}");
    let (code, stdout, _) = text_of(&[
        "namespace",
        "--node-type",
        "cluster",
        "--node-namespace",
        "ns1",
    ]);
    assert_eq!(code, 0);
    assert_eq!(stdout, "compatible: namespace ns1\n");
    for flag in [
        "--node-namespace",
        "--deployer-namespace",
        "--service-namespace",
    ] {
        let (code, stdout, stderr) =
            text_of(&["namespace", "--node-type", "cluster", flag, "Bad NS!"]);
        assert_eq!((code, stdout.as_str()), (1, ""), "{flag}");
        assert!(
            stderr.contains(&format!("{flag} \"Bad NS!\" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'")),
            "{stderr}"
        );
    }
    let (code, _, stderr) = text_of(&[
        "namespace",
        "--node-type",
        "cluster",
        "--deployer-namespace",
        "a.b",
    ]);
    assert_eq!(code, 1);
    assert!(stderr.contains("must not contain dots"), "{stderr}");
}

const DC: &str = "testdata/edge/deploycheck";

fn deploycheck(args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["deploycheck".to_string()];
    all.extend(args.iter().map(|a| a.replace("DC/", &format!("{DC}/"))));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    json_of(&all)
}

/// Seed 000's namespace example 4 in real exchange exports: a node in namespace abc, a policy
/// with clusterNamespace abc and a constraint on openhorizon.kubernetesNamespace == xyz: as
/// anax's policy check, incompatible before any service is looked at (the device-only service
/// too), with `hzn`'s publish-time warnings (the conflict, the operator's namespace).
#[test]
fn deploycheck_reports_the_checks_and_warnings() {
    let (code, report, stderr) = deploycheck(&[
        "--node",
        "DC/node-abc.json",
        "--node-policy",
        "DC/node-policy.json",
        "--policy",
        "DC/policy-xyz.json",
        "--service",
        "DC/service-nginx.json",
        "DC/service-device.json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["compatible"], false);
    let conflict = "kubernetesNamespace defined in the constraint &[openhorizon.kubernetesNamespace == xyz] is different from the clusterNamespace 'abc' specified in the deployment policy, the policy might result in no service deployments";
    for (i, service) in [
        "myorg/nginx-operator_1.0.1_amd64",
        "myorg/helloworld_1.0.0_amd64",
    ]
    .into_iter()
    .enumerate()
    {
        let verdict = &report["services"][i];
        assert_eq!(verdict["service"], service);
        assert_eq!(verdict["failedCheck"], "namespace");
        assert_eq!(
            verdict["reason"],
            format!("Policy Incompatible: {conflict}")
        );
    }
    assert_eq!(
        report["warnings"],
        json!([
            conflict,
            "service myorg/nginx-operator_1.0.1_amd64: Namespace is detected in operator file. Service namespace should be set in deployment policy or pattern"
        ])
    );
}

/// `a == x || a == y`: the clusterNamespace is one of the namespaces the constraint allows, so
/// there is no conflict and no warning; a field the exchange does not know is named on
/// standard error.
#[test]
fn deploycheck_keeps_the_constraint_structure() {
    let (code, report, stderr) = deploycheck(&[
        "--node",
        "DC/node-abc.json",
        "--node-policy",
        "DC/node-policy.json",
        "--policy",
        "DC/policy-or.json",
        "--service",
        "DC/service-nginx.json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["compatible"], true, "{report}");
    assert_eq!(report["services"][0]["namespace"], "abc");
    assert_eq!(
        stderr,
        "warning: testdata/edge/deploycheck/policy-or.json: comment: \"comment\" is not a deployment policy field anax knows; ignored\n"
    );
}

/// A service published before anax wrote `metadata` into the cluster deployment: the
/// namespace comes from the operator archive (its Namespace `xyz`), as anax reads it.
#[test]
fn deploycheck_reads_the_namespace_inside_the_operator_archive() {
    let (code, report, stderr) = deploycheck(&[
        "--node",
        "DC/node-abc.json",
        "--node-policy",
        "DC/node-policy.json",
        "--policy",
        "DC/policy-abc.json",
        "--service",
        "DC/service-archive.json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    // The policy's clusterNamespace wins over the operator's...
    assert_eq!(report["services"][0]["namespace"], "abc");
    // ...and publishing it warned.
    assert_eq!(
        report["warnings"],
        json!([
            "service myorg/web-operator_1.0.0_amd64: Namespace is detected in operator file. Service namespace should be set in deployment policy or pattern"
        ])
    );
    // Without a clusterNamespace, the namespace-scoped node in abc refuses xyz.
    let (_, report, _) = deploycheck(&[
        "--node",
        "DC/node-abc.json",
        "--node-policy",
        "DC/node-policy.json",
        "--policy",
        "DC/policy-plain.json",
        "--service",
        "DC/service-archive.json",
    ]);
    assert_eq!(report["services"][0]["failedCheck"], "namespace");
    assert_eq!(
        report["services"][0]["reason"],
        "Policy Incompatible: The namespace 'xyz' specified in the service does not match the namespace of the agent: 'abc'. Please overwrite it in the deployment policy or pattern."
    );
}

/// Every exchange file's fields are checked: a near miss is an error naming the file, the
/// field's place and the field it misses.
#[test]
fn deploycheck_refuses_a_mistyped_field() {
    let (code, stdout, stderr) = text_of(&[
        "deploycheck",
        "--node",
        "testdata/edge/deploycheck/node-abc.json",
        "--policy",
        "testdata/edge/deploycheck/policy-typo.json",
        "--service",
        "testdata/edge/deploycheck/service-nginx.json",
    ]);
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.contains("testdata/edge/deploycheck/policy-typo.json: service.clusterNamespce: unknown deployment policy service field \"clusterNamespce\" (did you mean clusterNamespace?); valid values: name, org, arch, clusterNamespace, serviceVersions, nodeHealth, cluster_namespace"),
        "{stderr}"
    );
}

/// Seed example 1 for namespace-scoped nodes: clusterNamespace abc on a node in abc deploys
/// there, overriding the service's embedded xyz; the node policy's deployment constraint
/// (`team == a`) is met by the policy's property.
#[test]
fn deploycheck_compatible_with_the_namespace() {
    let (code, report, _) = deploycheck(&[
        "--node",
        "DC/node-abc.json",
        "--node-policy",
        "DC/node-policy.json",
        "--policy",
        "DC/policy-abc.json",
        "--service",
        "DC/service-nginx.json",
    ]);
    assert_eq!(code, 0);
    assert_eq!(report["compatible"], true);
    assert_eq!(report["services"][0]["namespace"], "abc");
}

/// The seed's pattern `namespace` is read as `clusterNamespace`, with a warning.
#[test]
fn deploycheck_accepts_the_seed_pattern_namespace_with_a_warning() {
    let (_, report, _) = deploycheck(&[
        "--node",
        "DC/node-abc.json",
        "--pattern",
        "DC/pattern-seed.json",
        "--service",
        "DC/service-nginx.json",
    ]);
    assert_eq!(report["compatible"], true);
    assert!(report["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap()
            .starts_with("namespace \"abc\" is the seed design's spelling")
    }));
}

#[test]
fn deploycheck_refuses_bad_input() {
    let (code, _, stderr) = text_of(&[
        "deploycheck",
        "--node",
        "x",
        "--polcy",
        "y",
        "--service",
        "z",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("a similar argument exists: '--policy'"),
        "{stderr}"
    );
    let node = format!("{DC}/node-abc.json");
    let (code, _, stderr) = text_of(&[
        "deploycheck",
        "--node",
        &node,
        "--policy",
        "x.json",
        "--service",
        "y.json",
    ]);
    assert_eq!(code, 1);
    assert!(stderr.contains("x.json: cannot read"), "{stderr}");
    // A properties list is not a node: the file and the problem are named.
    let (code, _, stderr) = text_of(&[
        "deploycheck",
        "--node",
        "testdata/edge/node.json",
        "--policy",
        "x.json",
        "--service",
        "y.json",
    ]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("testdata/edge/node.json: not a node"),
        "{stderr}"
    );
    let (code, _, stderr) = text_of(&[
        "deploycheck",
        "--node",
        &format!("{DC}/node-abc.json"),
        "--service",
        "y",
    ]);
    assert_eq!(code, 2, "--policy or --pattern is required: {stderr}");
}

const NMP: &str = "testdata/edge/nmp";

/// `cvo edge nmp status` over the NMP test data, at NOW for STEPS monitor periods.
fn nmp_args(now: &str, steps: &str, seed: &str) -> Vec<String> {
    [
        "nmp",
        "status",
        "--node",
        &format!("{NMP}/node.json"),
        "--policies",
        &format!("{NMP}/policies"),
        "--versions",
        &format!("{NMP}/versions.json"),
        "--manifests",
        &format!("{NMP}/manifests"),
        "--now",
        now,
        "--steps",
        steps,
        "--seed",
        seed,
    ]
    .map(str::to_owned)
    .to_vec()
}

fn nmp_json(now: &str, steps: &str, seed: &str) -> Value {
    let args = nmp_args(now, steps, seed);
    let (code, json, stderr) = json_of(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{stderr}");
    json
}

#[test]
fn nmp_status_creates_the_statuses_in_the_exchange_form() {
    let json = nmp_json("2026-02-28T23:00:00Z", "0", "7");
    let statuses = json["managementStatus"].as_object().unwrap();
    // myorg/other names a pattern the node does not run.
    assert_eq!(
        statuses.keys().collect::<Vec<_>>(),
        ["myorg/pin", "myorg/upgrade"]
    );
    let pin = &statuses["myorg/pin"];
    assert_eq!(
        pin["agentUpgradePolicyStatus"],
        json!({
            "scheduledTime": "2026-03-01T02:00:00Z",
            "upgradedVersions": {"softwareVersion": "", "certVersion": "", "configVersion": ""},
            "status": "waiting",
            "workingDirectory": "/var/horizon/nmp"
        })
    );
    assert_eq!(pin["agentUpgradeInternal"]["manifest"], "myorg/pin");
    assert_eq!(pin["agentUpgradeInternal"]["downloadAttempts"], 0);
    assert_eq!(json["lastIndex"], 0);
    // The upgrade's start is drawn in [start, start+600s), the same for the same seed.
    let scheduled = |json: &Value| {
        json["managementStatus"]["myorg/upgrade"]["agentUpgradePolicyStatus"]["scheduledTime"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let at = scheduled(&json);
    assert!(at.starts_with("2026-03-01T00:0"), "{at}");
    assert_eq!(scheduled(&nmp_json("2026-02-28T23:00:00Z", "0", "7")), at);
    let seeds: std::collections::BTreeSet<String> = (0..6)
        .map(|seed| scheduled(&nmp_json("2026-02-28T23:00:00Z", "0", &seed.to_string())))
        .collect();
    assert!(seeds.len() > 1, "{seeds:?}");
}

#[test]
fn nmp_status_runs_the_jobs() {
    // After the window: the upgrade runs (software and config to latest); the pin is not due.
    let json = nmp_json("2026-03-01T00:20:00Z", "10", "7");
    let upgrade = &json["managementStatus"]["myorg/upgrade"]["agentUpgradePolicyStatus"];
    assert_eq!(upgrade["status"], "successful");
    assert_eq!(
        upgrade["upgradedVersions"],
        json!({"softwareVersion": "2.31.0", "certVersion": "", "configVersion": "1.1.0"})
    );
    assert_eq!(upgrade["startTime"], "2026-03-01T00:22:00Z");
    assert_eq!(upgrade["endTime"], "2026-03-01T00:23:00Z");
    let pin = &json["managementStatus"]["myorg/pin"]["agentUpgradePolicyStatus"];
    assert_eq!(pin["status"], "waiting");
    // Both due: the latest-scheduled (the pin) runs first and finds the node on 2.30.0.
    let json = nmp_json("2026-03-01T03:00:00Z", "10", "7");
    let pin = &json["managementStatus"]["myorg/pin"]["agentUpgradePolicyStatus"];
    assert_eq!(pin["status"], "no action required");
    let upgrade = &json["managementStatus"]["myorg/upgrade"]["agentUpgradePolicyStatus"];
    assert_eq!(upgrade["status"], "successful");
    assert_eq!(upgrade["startTime"], "2026-03-01T03:03:00Z");
}

#[test]
fn nmp_status_in_text() {
    let args = nmp_args("2026-03-01T00:20:00Z", "2", "7");
    let (code, out, stderr) = text_of(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "myorg/pin: waiting, scheduled 2026-03-01T02:00:00Z"
    );
    assert!(
        lines[1].starts_with("myorg/upgrade: downloaded, scheduled 2026-03-01T00:0")
            && lines[1].ends_with(", software 2.31.0, config 1.1.0"),
        "{out}"
    );
}

#[test]
fn nmp_status_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let node = format!("{NMP}/node.json");
    let versions = format!("{NMP}/versions.json");
    let run = |policies: &str, manifests: &str, now: &str| {
        text_of(&[
            "nmp",
            "status",
            "--node",
            &node,
            "--policies",
            policies,
            "--versions",
            &versions,
            "--manifests",
            manifests,
            "--now",
            now,
        ])
    };
    let manifests = format!("{NMP}/manifests");
    // A typo in a policy's field.
    write("typo/a.json", r#"{"patterns": ["web"], "startWindw": 60}"#);
    let typo = dir.path().join("typo").display().to_string();
    let (code, _, stderr) = run(&typo, &manifests, "2026-03-01T00:00:00Z");
    assert_eq!(code, 1);
    assert!(stderr.contains("a.json: myorg/a"), "{stderr}");
    assert!(stderr.contains("did you mean startWindow?"), "{stderr}");
    // The exchange's and anax's refusals.
    write(
        "both/b.json",
        r#"{"patterns": ["web"], "constraints": ["a == b"]}"#,
    );
    let both = dir.path().join("both").display().to_string();
    let (code, _, stderr) = run(&both, &manifests, "2026-03-01T00:00:00Z");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("you can not specify both constraints and patterns"),
        "{stderr}"
    );
    write(
        "start/c.json",
        r#"{"patterns": ["web"], "start": "tomorrow"}"#,
    );
    let start = dir.path().join("start").display().to_string();
    let (code, _, stderr) = run(&start, &manifests, "2026-03-01T00:00:00Z");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("The start time must be in RFC3339 format or set to \"now\"."),
        "{stderr}"
    );
    // Typos inside agentUpgradePolicy and a property.
    write(
        "inner/d.json",
        r#"{"patterns": ["web"], "enabled": true, "agentUpgradePolicy": {"manifest": "up", "alowDowngrade": true}}"#,
    );
    let inner = dir.path().join("inner").display().to_string();
    let (code, _, stderr) = run(&inner, &manifests, "2026-03-01T00:00:00Z");
    assert_eq!(code, 1);
    assert!(stderr.contains("d.json: myorg/d"), "{stderr}");
    assert!(stderr.contains("did you mean allowDowngrade?"), "{stderr}");
    write(
        "prop/e.json",
        r#"{"enabled": true, "properties": [{"name": "ring", "valu": 1}]}"#,
    );
    let prop = dir.path().join("prop").display().to_string();
    let (code, _, stderr) = run(&prop, &manifests, "2026-03-01T00:00:00Z");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("e.json: myorg/e") && stderr.contains("did you mean value?"),
        "{stderr}"
    );
    // No enabled: a warning, the policy is ignored.
    write("noenabled/f.json", r#"{"patterns": ["web"]}"#);
    let noenabled = dir.path().join("noenabled").display().to_string();
    let (code, _, stderr) = run(&noenabled, &manifests, "2026-03-01T00:00:00Z");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("f.json: myorg/f: no enabled field"),
        "{stderr}"
    );
    // The seed's manifest may not replace a manifest file of the same id.
    write(
        "seedpol/g.json",
        r#"{"patterns": ["web"], "enabled": true, "agentUpgradePolicy": {"atLeastVersion": "2.30.0"}}"#,
    );
    write(
        "seedman/seed-g.json",
        r#"{"softwareUpgrade": {"files": ["*"], "version": "latest"}}"#,
    );
    let seedpol = dir.path().join("seedpol").display().to_string();
    let seedman = dir.path().join("seedman").display().to_string();
    let (code, _, stderr) = run(&seedpol, &seedman, "2026-03-01T00:00:00Z");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("g.json: myorg/g: the seed's atLeastVersion stands for a manifest seed-g"),
        "{stderr}"
    );
    write(
        "seedbad/h.json",
        r#"{"patterns": ["web"], "enabled": true, "agentUpgradePolicy": {"atLeastVersion": "2.x"}}"#,
    );
    let seedbad = dir.path().join("seedbad").display().to_string();
    let (code, _, stderr) = run(&seedbad, &manifests, "2026-03-01T00:00:00Z");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("h.json: myorg/h: agentUpgradePolicy.atLeastVersion:"),
        "{stderr}"
    );
    // Times a status cannot show.
    write(
        "late/i.json",
        r#"{"patterns": ["web"], "enabled": true, "start": "9999-12-30T21:00:00Z", "startWindow": 7200}"#,
    );
    let late = dir.path().join("late").display().to_string();
    let (code, _, stderr) = run(&late, &manifests, "2026-03-01T00:00:00Z");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("myorg/i: its start plus startWindow pass"),
        "{stderr}"
    );
    let (code, _, stderr) = run(
        &format!("{NMP}/policies"),
        &manifests,
        "9999-12-30T21:59:30Z",
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains("runs past 9999-12-30T22:00:00Z"),
        "{stderr}"
    );
    // A manifest version that is no version.
    write(
        "m/up.json",
        r#"{"softwareUpgrade": {"files": ["*"], "version": "latset"}}"#,
    );
    let bad_manifests = dir.path().join("m").display().to_string();
    let (code, _, stderr) = run(
        &format!("{NMP}/policies"),
        &bad_manifests,
        "2026-03-01T00:00:00Z",
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains("up.json: Unrecognized version expression string latset."),
        "{stderr}"
    );
    // No such directory; a clock that is not RFC 3339.
    let (code, _, stderr) = run("/nonexistent/nmps", &manifests, "2026-03-01T00:00:00Z");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("/nonexistent/nmps: cannot read the directory"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&format!("{NMP}/policies"), &manifests, "2026-03-01 00:00");
    assert_eq!(code, 2);
    assert!(stderr.contains("not an RFC 3339 time"), "{stderr}");
}

#[test]
fn nmp_status_accepts_the_seed_upgrade_policy_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("policies")).unwrap();
    std::fs::write(
        dir.path().join("policies/seed.json"),
        r#"{"patterns": ["web"], "enabled": true,
            "agentUpgradePolicy": {"atLeastVersion": "current", "start": "2026-03-01T00:00:00Z", "duration": 60}}"#,
    )
    .unwrap();
    // The seed's manifest asks for the software only (config and certificate untouched), even
    // when the hub offers them.
    let versions = dir.path().join("versions.json");
    std::fs::write(
        &versions,
        r#"{"agentSoftwareVersions": ["2.31.0"], "agentConfigVersions": ["1.1.0"], "agentCertVersions": ["1.0.0"]}"#,
    )
    .unwrap();
    let policies = dir.path().join("policies").display().to_string();
    let node = format!("{NMP}/node.json");
    let versions = versions.display().to_string();
    let args = [
        "nmp",
        "status",
        "--node",
        &node,
        "--policies",
        &policies,
        "--versions",
        &versions,
        "--now",
        "2026-03-01T00:05:00Z",
        "--steps",
        "5",
    ];
    let (code, json, stderr) = json_of(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("warning:") && stderr.contains("atLeastVersion (seed)"),
        "{stderr}"
    );
    let status = &json["managementStatus"]["myorg/seed"];
    assert_eq!(status["agentUpgradeInternal"]["manifest"], "seed-seed");
    assert_eq!(status["agentUpgradePolicyStatus"]["status"], "successful");
    assert_eq!(
        status["agentUpgradePolicyStatus"]["upgradedVersions"],
        json!({"softwareVersion": "2.31.0", "certVersion": "", "configVersion": ""})
    );
}

#[test]
fn nmp_status_starts_from_kept_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("statuses.json");
    let again = |json: &Value, now: &str, steps: &str| {
        std::fs::write(&kept, serde_json::to_string(json).unwrap()).unwrap();
        let mut args = nmp_args(now, steps, "7");
        args.extend(["--statuses".to_owned(), kept.display().to_string()]);
        let (code, json, stderr) = json_of(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(code, 0, "{stderr}");
        json
    };
    let status = |json: &Value, name: &str| {
        json["managementStatus"][name]["agentUpgradePolicyStatus"]["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // A download cut short by a restart is tried again, then runs to the end.
    let first = nmp_json("2026-03-01T00:20:00Z", "1", "7");
    assert_eq!(status(&first, "myorg/upgrade"), "download started");
    assert_eq!(
        status(&again(&first, "2026-03-01T00:30:00Z", "0"), "myorg/upgrade"),
        "waiting"
    );
    let done = again(&first, "2026-03-01T00:30:00Z", "4");
    assert_eq!(status(&done, "myorg/upgrade"), "successful");
    // The same scheduled time is kept.
    assert_eq!(
        done["managementStatus"]["myorg/upgrade"]["agentUpgradePolicyStatus"]["scheduledTime"],
        first["managementStatus"]["myorg/upgrade"]["agentUpgradePolicyStatus"]["scheduledTime"]
    );
    // The exchange says reset: waiting again.
    let mut reset = nmp_json("2026-03-01T03:00:00Z", "10", "7");
    assert_eq!(status(&reset, "myorg/pin"), "no action required");
    reset["managementStatus"]["myorg/pin"]["agentUpgradePolicyStatus"]["status"] = json!("reset");
    assert_eq!(
        status(&again(&reset, "2026-03-01T04:00:00Z", "0"), "myorg/pin"),
        "waiting"
    );
    // Not statuses.
    std::fs::write(&kept, r#"{"managementStatuses": {}}"#).unwrap();
    let mut args = nmp_args("2026-03-01T00:00:00Z", "0", "7");
    args.extend(["--statuses".to_owned(), kept.display().to_string()]);
    let (code, _, stderr) = text_of(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1);
    assert!(
        stderr.contains("statuses.json") && stderr.contains("did you mean managementStatus?"),
        "{stderr}"
    );
}

#[test]
fn nmp_status_refuses_a_kept_status_that_is_no_status() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept.json");
    std::fs::write(
        &kept,
        r#"{"managementStatus": {"myorg/upgrade": {"agentUpgradePolicyStatus": {"status": "downloadd"}}}}"#,
    )
    .unwrap();
    let kept = kept.display().to_string();
    let (code, _, stderr) = text_of(&[
        "nmp",
        "status",
        "--node",
        &format!("{NMP}/node.json"),
        "--policies",
        &format!("{NMP}/policies"),
        "--versions",
        &format!("{NMP}/versions.json"),
        "--manifests",
        &format!("{NMP}/manifests"),
        "--statuses",
        &kept,
        "--now",
        "2026-03-01T00:00:00Z",
    ]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("kept.json: myorg/upgrade:") && stderr.contains("did you mean downloaded?"),
        "{stderr}"
    );
}

/// Runs `cvo edge package ARGS` (with `-o json` when `json`): exit code, stdout, stderr.
fn package_cmd(args: &[&str], json: bool) -> (i32, String, String) {
    let mut cmd = cvo();
    cmd.args(["edge", "package"]).args(args);
    if json {
        cmd.args(["-o", "json"]);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn package_json(args: &[&str]) -> (i32, Value) {
    let (code, stdout, stderr) = package_cmd(args, true);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (code, json)
}

/// A package from a deb directory, a certificate and a config file, in a temporary directory.
fn new_package(dir: &std::path::Path, version: &str) -> std::path::PathBuf {
    let debs = dir.join("debs");
    std::fs::create_dir_all(&debs).unwrap();
    std::fs::write(debs.join("horizon_2.31.0_amd64.deb"), b"deb").unwrap();
    std::fs::write(debs.join("horizon-cli_2.31.0_amd64.deb"), b"cli").unwrap();
    std::fs::write(
        dir.join("agent-install.crt"),
        b"-----BEGIN CERTIFICATE-----\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("agent-install.cfg"),
        b"HZN_EXCHANGE_URL=https://hub/\n",
    )
    .unwrap();
    let file = dir.join("agent.tar.gz");
    let (code, json) = package_json(&[
        "new",
        "-f",
        file.to_str().unwrap(),
        "--version",
        version,
        "--ssl-version",
        "1.0",
        "--packages",
        debs.to_str().unwrap(),
        "--ssl",
        dir.join("agent-install.crt").to_str().unwrap(),
        "--config",
        dir.join("agent-install.cfg").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(
        json["manifest"],
        json!({"version": version, "sslVersion": "1.0"})
    );
    assert_eq!(
        json["contents"],
        json!({
            "packages": ["horizon-cli_2.31.0_amd64.deb", "horizon_2.31.0_amd64.deb"],
            "ssl": ["agent-install.crt"],
            "config": ["agent-install.cfg"],
        })
    );
    let digest = std::fs::read_to_string(dir.join("agent.tar.gz.sha256")).unwrap();
    assert_eq!(
        digest,
        format!("{}  agent.tar.gz\n", json["sha256"].as_str().unwrap())
    );
    file
}

#[test]
fn package_new_inspect_verify() {
    let dir = tempfile::tempdir().unwrap();
    let file = new_package(dir.path(), "2.31.0-rc.1");
    let file = file.to_str().unwrap();
    let (code, inspected) = package_json(&["inspect", file]);
    assert_eq!(code, 0);
    assert_eq!(
        inspected["manifest"],
        json!({"version": "2.31.0-rc.1", "sslVersion": "1.0"})
    );
    assert_eq!(inspected["problems"], json!([]));
    assert_eq!(inspected["contents"]["ssl"], json!(["agent-install.crt"]));

    // The digest file beside the package; a prerelease is below its release (spec B.2).
    let sha = inspected["sha256"].as_str().unwrap().to_owned();
    let standings = [
        ("2.30.4", "newer"),
        ("2.31.0-rc.1", "same"),
        ("2.31.0", "older"),
        ("local build", "newer"),
    ];
    for (installed, standing) in standings {
        let (code, json) = package_json(&["verify", file, "--installed", installed]);
        assert_eq!(code, 0, "{json}");
        assert_eq!(
            json,
            json!({
                "file": file, "valid": true, "sha256": sha, "expectedSha256": sha,
                "version": "2.31.0-rc.1", "installed": installed, "standing": standing,
                "problems": [],
            })
        );
    }
    let (code, stdout, _) = package_cmd(&["verify", file, "--installed", "2.31.0"], false);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        format!(
            "valid: {file} (version 2.31.0-rc.1, sha256 {sha})\nthe package is older than the installed version 2.31.0\n"
        )
    );
    // --sha256 instead of the file, in capitals too.
    let (code, _) = package_json(&["verify", file, "--sha256", &sha.to_uppercase()]);
    assert_eq!(code, 0);
}

#[test]
fn package_verify_refuses_a_changed_package() {
    let dir = tempfile::tempdir().unwrap();
    let file = new_package(dir.path(), "2.31.0");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(b"tampered");
    std::fs::write(&file, &bytes).unwrap();
    let file = file.to_str().unwrap();
    let (code, json) = package_json(&["verify", file]);
    assert_eq!(code, 1);
    assert_eq!(json["valid"], json!(false));
    let problems = json["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{json}");
    assert!(
        problems[0]
            .as_str()
            .unwrap()
            .starts_with("SHA-256 mismatch: the package's digest is "),
        "{json}"
    );
    let (code, stdout, _) = package_cmd(&["verify", file], false);
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with(&format!("invalid: {file}\nproblem: SHA-256 mismatch")),
        "{stdout}"
    );
}

/// A package written by hand (tar + gzip), as users build them with any tool.
fn hand_made(dir: &std::path::Path, entries: &[(&str, &[u8])]) -> String {
    let file = dir.join("hand.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&file).unwrap(),
        flate2::Compression::default(),
    );
    let mut tar = tar::Builder::new(gz);
    for (path, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        tar.append_data(&mut header, path, *data).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
    file.to_str().unwrap().to_owned()
}

#[test]
fn package_inspect_and_verify_list_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let file = hand_made(
        dir.path(),
        &[
            (
                "./package.json",
                br#"{"version": "2.31", "sslversion": "1"}"#,
            ),
            ("./pakages/horizon.deb", b"deb"),
            ("./ssl/agent-install.crt", b"pem"),
        ],
    );
    let (code, json) = package_json(&["inspect", &file]);
    assert_eq!(code, 0);
    assert_eq!(json["manifest"], Value::Null);
    assert_eq!(
        json["problems"],
        json!([
            "pakages/horizon.deb: not part of a package (did you mean packages?); at its root a package holds package.json and the directories packages/, ssl/ and config/",
            "package.json: unknown field \"sslversion\" (did you mean sslVersion?); the fields are version, packagesVersion, sslVersion, configVersion",
        ])
    );
    // Made by hand, with its digest given on the command line: the problems, and exit 1.
    let sha = json["sha256"].as_str().unwrap();
    let (code, verified) = package_json(&["verify", &file, "--sha256", sha]);
    assert_eq!(code, 1);
    assert_eq!(verified["problems"], json["problems"]);
    assert_eq!(verified["version"], Value::Null);

    let no_manifest = hand_made(dir.path(), &[("config/agent-install.cfg", b"X=1")]);
    let (_, json) = package_json(&["inspect", &no_manifest]);
    assert_eq!(
        json["problems"],
        json!(["package.json: missing at the root of the package; every package has one"])
    );
}

#[test]
fn package_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.tar.gz");
    let out = out.to_str().unwrap();
    let (code, _, stderr) = package_cmd(
        &[
            "new",
            "-f",
            out,
            "--version",
            "2.31.0.1",
            "--config-version",
            "1.x",
        ],
        false,
    );
    assert_eq!(code, 1);
    assert!(stderr.contains("cannot write the package: package.json: version \"2.31.0.1\" is not a version: one to three decimal fields and an optional -prerelease, e.g. 2.31.0 or 2.31.0-rc.1\npackage.json: configVersion \"1.x\" is not a version"), "{stderr}");
    assert!(!dir.path().join("p.tar.gz").exists());

    let (code, _, stderr) = package_cmd(
        &[
            "new",
            "-f",
            out,
            "--version",
            "1",
            "--packages",
            "/no/such/dir",
        ],
        false,
    );
    assert_eq!(code, 1);
    assert!(stderr.contains("/no/such/dir: cannot read"), "{stderr}");

    let (code, _, _) = package_cmd(&["new", "-f", out, "--version", "1"], false);
    assert_eq!(code, 0);
    let (code, _, stderr) = package_cmd(&["new", "-f", out, "--version", "1"], false);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!("{out}: exists; give --force to replace it")),
        "{stderr}"
    );

    let (code, _, stderr) = package_cmd(&["verify", out, "--installed", "latest"], false);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("installed version \"latest\" is not a version (nor \"local build\")"),
        "{stderr}"
    );

    let (code, _, stderr) = package_cmd(&["verify", out, "--sha256", "abc"], false);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--sha256: \"abc\" is not a SHA-256 digest"),
        "{stderr}"
    );

    std::fs::remove_file(format!("{out}.sha256")).unwrap();
    let (code, _, stderr) = package_cmd(&["verify", out], false);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!(
            "{out}.sha256: cannot read the digest; give it with --sha256 HEX or --digest-file FILE"
        )),
        "{stderr}"
    );

    let not_gzip = dir.path().join("x.tar.gz");
    std::fs::write(&not_gzip, b"plain text").unwrap();
    let (code, _, stderr) = package_cmd(&["inspect", not_gzip.to_str().unwrap()], false);
    assert_eq!(code, 1);
    assert!(stderr.contains("not a gzipped tar archive"), "{stderr}");
}

#[test]
fn deploy_dry_run_plans_and_refuses_as_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("op.yaml");
    std::fs::write(
        &yaml,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: xyz}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    )
    .unwrap();
    let yaml = yaml.to_str().unwrap();
    let out = cvo()
        .args([
            "edge",
            "deploy",
            "--dry-run",
            "-f",
            yaml,
            "--agreement",
            "ag1",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json,
        json!({"agreement": "ag1", "namespace": "xyz", "applied": false, "objects": [
            {"kind": "Namespace", "name": "xyz", "namespace": ""},
            {"kind": "NetworkPolicy", "name": "ag1-networkpolicy", "namespace": "openhorizon-agent"},
            {"kind": "ConfigMap", "name": "c", "namespace": ""},
        ]})
    );
    let out = cvo()
        .args([
            "edge",
            "deploy",
            "--dry-run",
            "-f",
            yaml,
            "--agreement",
            "ag1",
        ])
        .args(["--agent-namespace", "team", "--namespace-scoped"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: Service failed to start for agreement ag1. Could not deploy service into namespace xyz because the agent's namespace is namespace scoped, and it restricts all services to the agent namespace team\n"
    );
    let out = cvo()
        .args([
            "edge",
            "deploy",
            "--dry-run",
            "-f",
            yaml,
            "--agreement",
            "AG1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--agreement: agreement id \"AG1\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The cases of issue 21, each as anax main (2f3fa5a) answers it (printed by its own code).
#[test]
fn anax_main_answers() {
    let ranges: [(&str, &[&str], Value); 4] = [
        (
            "[1.0.0-rc.1,2.0.0)",
            &["1.0.0", "1.0.0-rc.0", "1.02"],
            json!({"1.0.0": true, "1.0.0-rc.0": false, "1.02": true}),
        ),
        ("INFINITY", &["1.5.0"], json!({"1.5.0": false})),
        ("(INFINITY,2.0.0)", &["1.5.0"], json!({"1.5.0": false})),
        (
            "1.05.0",
            &["1.5.0", "1.4"],
            json!({"1.5.0": true, "1.4": false}),
        ),
    ];
    for (range, versions, contains) in ranges {
        let mut args = vec!["version-range", range];
        args.extend(versions);
        let (code, json, _) = json_of(&args);
        assert_eq!((code, &json["contains"]), (0, &contains), "{range}");
    }
    let (code, json, _) = json_of(&["version-range", ""]);
    assert_eq!(code, 1);
    assert_eq!(
        json["error"],
        "Version_Expression: Empty string is not a valid version."
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("props.json");
    let props = file.to_str().unwrap();
    let decide = |properties: &str, constraints: &[&str]| {
        std::fs::write(&file, properties).unwrap();
        let mut args = vec!["constraints", "--properties", props];
        args.extend(constraints);
        json_of(&args)
    };
    let hub = r#"[{"name":"agent","value":"2.31.0-1498"},{"name":"cur","value":"£"},{"name":"µ","value":1},{"name":"n","value":16}]"#;
    for constraints in [
        &["agent in [2.30.0,3.0.0)"][..],
        &["cur == £", "µ == 1"],
        &["n == +0x1p4", "n < +1_000"],
    ] {
        let (code, json, err) = decide(hub, constraints);
        assert_eq!(
            (code, &json["satisfied"]),
            (0, &json!(true)),
            "{constraints:?} {json} {err}"
        );
    }
    // Validation lets `()a != 1` through; the evaluation answers with the parse's error.
    let (code, json, _) = decide(hub, &["()a != 1"]);
    assert_eq!(code, 0);
    assert_eq!(
        json,
        json!({"valid": true, "error": "", "satisfied": false,
               "reason": "No control operator found. Expecting one of AND,&&,OR,||. Found: a != 1"})
    );
    // Properties anax refuses, in its message printer's number format.
    for (properties, message) in [
        (
            r#"[{"name":"a","value":1e20,"type":"int"}]"#,
            "invalid property: Value 1×10²⁰ of property a is not an integer type",
        ),
        (
            r#"[{"name":"a","value":2048.5,"type":"int"}]"#,
            "invalid property: Value 2,048.5 of property a is not an integer type",
        ),
    ] {
        std::fs::write(&file, properties).unwrap();
        let (code, out, err) = text_of(&["constraints", "--properties", props, "a == 1"]);
        assert_eq!((code, out.as_str()), (1, ""), "{properties}");
        assert!(err.contains(message), "{err}");
    }
    // Where anax panics (a lone quote reached by a term), a clear error.
    std::fs::write(&file, r#"[{"name":"b","value":"\""}]"#).unwrap();
    let (code, out, err) = text_of(&["constraints", "--properties", props, "b == x"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("lone double quote"), "{err}");
}

/// Issue 21, hub-shaped: build-numbered versions, a manifest in IBM's org (DIR/IBM/ID.json),
/// an arm64 cluster; the job ends downloading IBM's arm64 image at the highest build.
#[test]
fn nmp_status_on_hub_shaped_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = |p: &str| dir.path().join(p).display().to_string();
    std::fs::create_dir_all(dir.path().join("manifests/IBM")).unwrap();
    std::fs::create_dir_all(dir.path().join("policies")).unwrap();
    std::fs::write(
        path("manifests/IBM/edgeNodeFiles_manifest_2.31.0.json"),
        r#"{"softwareUpgrade": {"files": ["horizon-agent-edge-cluster-files.tar.gz", "arm64_anax_k8s.tar.gz"], "version": "latest"}}"#,
    )
    .unwrap();
    std::fs::write(
        path("policies/up.json"),
        r#"{"owner": "myorg/admin", "label": "up", "patterns": ["web"], "enabled": true,
            "start": "2026-03-01T00:00:00Z", "startWindow": 0,
            "agentUpgradePolicy": {"manifest": "IBM/edgeNodeFiles_manifest_2.31.0"}}"#,
    )
    .unwrap();
    std::fs::write(
        path("versions.json"),
        r#"{"agentSoftwareVersions": ["2.30.0-1400", "2.31.0-1498", "2.31.0-1001"]}"#,
    )
    .unwrap();
    let node = std::fs::read_to_string(format!("{NMP}/node.json"))
        .unwrap()
        .replace("\"arch\": \"amd64\"", "\"arch\": \"arm64\"")
        .replace("\"horizon\": \"2.30.0\"", "\"horizon\": \"2.30.0-1400\"");
    std::fs::write(path("node.json"), node).unwrap();
    let args = [
        "nmp",
        "status",
        "--node",
        &path("node.json"),
        "--policies",
        &path("policies"),
        "--versions",
        &path("versions.json"),
        "--manifests",
        &path("manifests"),
        "--now",
        "2026-03-01T00:05:00Z",
        "--steps",
        "5",
    ];
    let (code, json, stderr) = json_of(&args);
    assert_eq!(code, 0, "{stderr}");
    let status = &json["managementStatus"]["myorg/up"]["agentUpgradePolicyStatus"];
    assert_eq!(status["status"], "successful", "{json}");
    assert_eq!(status["upgradedVersions"]["softwareVersion"], "2.31.0-1498");
}

/// `cvo edge nmp plan`: the fleet view over hub-shaped nodes (an IBM manifest, build numbers,
/// a seed's minimum): who, when, what each ends on, who is skipped and why.
#[test]
fn nmp_plan_over_a_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let path = |p: &str| dir.path().join(p).display().to_string();
    std::fs::create_dir_all(dir.path().join("manifests/IBM")).unwrap();
    std::fs::create_dir_all(dir.path().join("policies")).unwrap();
    std::fs::write(
        path("manifests/IBM/m.json"),
        r#"{"softwareUpgrade": {"files": ["*"], "version": "latest"}}"#,
    )
    .unwrap();
    std::fs::write(
        path("policies/web.json"),
        r#"{"owner": "o/admin", "label": "web", "patterns": ["web"], "enabled": true,
            "start": "2026-03-01T00:00:00Z", "startWindow": 3600, "agentUpgradePolicy": {"manifest": "IBM/m"}}"#,
    )
    .unwrap();
    std::fs::write(
        path("versions.json"),
        r#"{"agentSoftwareVersions": ["2.30.0-1400", "2.31.0-1498"]}"#,
    )
    .unwrap();
    std::fs::write(
        path("nodes.json"),
        r#"{"nodes": {
            "o/a": {"nodeType": "cluster", "arch": "arm64", "pattern": "o/web", "softwareVersions": {"horizon": "2.30.0-1400"}},
            "o/b": {"nodeType": "cluster", "arch": "amd64", "pattern": "o/web", "softwareVersions": {"horizon": "2.31.0-1498"}},
            "o/c": {"nodeType": "cluster", "arch": "amd64", "pattern": "o/db", "softwareVersions": {"horizon": "2.30.0-1400"}}
        }, "lastIndex": 0}"#,
    )
    .unwrap();
    let args = [
        "nmp",
        "plan",
        "--nodes",
        &path("nodes.json"),
        "--policies",
        &path("policies"),
        "--versions",
        &path("versions.json"),
        "--manifests",
        &path("manifests"),
        "--now",
        "2026-02-28T00:00:00Z",
    ];
    let (code, json, stderr) = json_of(&args);
    assert_eq!(code, 0, "{stderr}");
    let web = &json["policies"]["o/web"];
    assert_eq!(web["nodes"][0]["node"], "o/a");
    assert_eq!(web["nodes"][0]["outcome"], "upgrade");
    assert_eq!(web["nodes"][0]["versions"]["horizon"], "2.31.0-1498");
    assert!(
        web["nodes"][0]["scheduled"]
            .as_str()
            .unwrap()
            .starts_with("2026-03-01T00:"),
        "{web}"
    );
    assert_eq!(web["nodes"][1]["outcome"], "no action required");
    assert_eq!(
        web["skipped"],
        json!([{"node": "o/c", "reason": "pattern o/db is not one the NMP names"}])
    );
    assert_eq!(json["before"], json!({"2.30.0-1400": 2, "2.31.0-1498": 1}));
    assert_eq!(json["after"], json!({"2.30.0-1400": 1, "2.31.0-1498": 2}));
    let (code, out, _) = text_of(&args);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("o/web: 2 nodes, 1 skipped\n  o/a  2026-03-01T00:"),
        "{out}"
    );
    assert!(out.ends_with("  2.31.0-1498: 1 -> 2\n"), "{out}");
}
