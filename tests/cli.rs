//! The command line as users run it: outputs, exit codes and error messages.

mod support;

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

fn cvo() -> Command {
    let mut cmd = Command::cargo_bin("cvo").unwrap();
    cmd.env_remove("CLUSTER_PROFILE").env_remove("RUST_LOG");
    cmd
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

fn json(cmd: &mut Command) -> Value {
    serde_json::from_str(&stdout(cmd)).unwrap()
}

/// A payload root in a temp dir with the given release-manifests files.
fn payload(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let rm = dir.path().join("release-manifests");
    fs::create_dir_all(&rm).unwrap();
    fs::create_dir_all(dir.path().join("manifests")).unwrap();
    fs::write(
        rm.join("release-metadata"),
        r#"{"kind":"cincinnati-metadata-v0","version":"4.18.0"}"#,
    )
    .unwrap();
    fs::write(
        rm.join("image-references"),
        r#"{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"4.18.0"}}"#,
    )
    .unwrap();
    for (name, text) in files {
        fs::write(rm.join(name), text).unwrap();
    }
    dir
}

const GOOD: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\n  namespace: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n";

fn error_output(dir: &Path) -> String {
    let assert = cvo()
        .args(["explain", "--payload"])
        .arg(dir)
        .assert()
        .code(1);
    String::from_utf8(assert.get_output().stderr.clone()).unwrap()
}

#[test]
fn render_without_arguments_renders_the_bundled_payload() {
    let cwd = tempfile::tempdir().unwrap();
    let out = stdout(cvo().current_dir(cwd.path()).arg("render"));
    assert!(out.contains("bundled:4.18.0"), "{out}");
    let rendered = fs::read_dir(cwd.path().join("_output/manifests"))
        .unwrap()
        .count();
    assert!(rendered > 10, "{rendered} files");
    // Rendering again replaces the directory, it does not add to it.
    stdout(
        cvo()
            .current_dir(cwd.path())
            .args(["render", "--capabilities-baseline", "None"]),
    );
    assert!(
        fs::read_dir(cwd.path().join("_output/manifests"))
            .unwrap()
            .count()
            < rendered
    );
}

#[test]
fn render_keeps_original_text_and_can_write_raw_json() {
    let text = format!(
        "# a comment\n{GOOD}---\n{}",
        GOOD.replace("name: good", "name: other")
            .replace("\"true\"", "\"false\"")
    );
    let dir = payload(&[("0000_10_a_x.yaml", &text)]);
    let out = tempfile::tempdir().unwrap();
    let summary = stdout(
        cvo()
            .args(["render", "--payload"])
            .arg(dir.path())
            .arg("--output-dir")
            .arg(out.path()),
    );
    assert!(summary.contains("documents kept: 1 of 2"), "{summary}");
    assert!(summary.contains("excluded (profile): 1"), "{summary}");
    assert_eq!(
        fs::read_to_string(out.path().join("manifests/0000_10_a_x.yaml")).unwrap(),
        format!("# a comment\n{GOOD}")
    );
    stdout(
        cvo()
            .args(["render", "--format", "json", "--payload"])
            .arg(dir.path())
            .arg("--output-dir")
            .arg(out.path()),
    );
    let raw = fs::read_to_string(out.path().join("manifests/0000_10_a_x.yaml")).unwrap();
    assert!(
        raw.starts_with(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations""#),
        "{raw}"
    );
}

#[test]
fn explain_json_gives_every_document_with_upstream_reasons() {
    let dir = payload(&[
        ("0000_10_a_x.yaml", GOOD),
        (
            "0000_20_b_x.yaml",
            &GOOD.replace("name: good", "name: console").replace(
                "  annotations:\n",
                "  annotations:\n    capability.openshift.io/name: Console\n",
            ),
        ),
    ]);
    let rows = json(
        cvo()
            .args([
                "explain",
                "-o",
                "json",
                "--capabilities-baseline",
                "None",
                "--payload",
            ])
            .arg(dir.path()),
    );
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["included"], true);
    assert_eq!(rows[0]["reason"], Value::Null);
    assert_eq!(rows[1]["reason"], "disabled capabilities: Console");
    assert_eq!(rows[1]["capabilities"], serde_json::json!(["Console"]));
    for key in [
        "file",
        "dir",
        "index",
        "apiVersion",
        "kind",
        "namespace",
        "name",
        "capabilities",
        "included",
        "reason",
    ] {
        assert!(rows[0].get(key).is_some(), "missing {key}");
    }
    let one = json(
        cvo()
            .args(["explain", "-o", "json", "--payload"])
            .arg(dir.path())
            .arg("configmap/console"),
    );
    assert_eq!(one.as_array().unwrap().len(), 1);
}

#[test]
fn inclusion_file_replaces_the_flags() {
    let dir = payload(&[("0000_10_a_x.yaml", GOOD)]);
    let config = dir.path().join("inclusion.json");
    fs::write(&config, r#"{"profile":"single-node-developer"}"#).unwrap();
    let rows = json(
        cvo()
            .args(["explain", "-o", "json", "--inclusion"])
            .arg(&config)
            .arg("--payload")
            .arg(dir.path()),
    );
    assert_eq!(
        rows[0]["reason"],
        "include.release.openshift.io/single-node-developer unset"
    );
    cvo()
        .args(["explain", "--inclusion"])
        .arg(&config)
        .args(["--feature-set", "OKD"])
        .assert()
        .code(2);
}

#[test]
fn install_config_and_cluster_version_inputs() {
    let console = GOOD.replace("name: good", "name: console").replace(
        "  annotations:\n",
        "  annotations:\n    capability.openshift.io/name: Console\n",
    );
    let dir = payload(&[("0000_10_a_x.yaml", &console)]);
    let install = dir.path().join("install-config.yaml");
    fs::write(&install, "apiVersion: v1\nfeatureSet: TechPreviewNoUpgrade\ncapabilities:\n  baselineCapabilitySet: None\n").unwrap();
    let rows = json(
        cvo()
            .args(["explain", "-o", "json", "--install-config"])
            .arg(&install)
            .arg("--payload")
            .arg(dir.path()),
    );
    assert_eq!(rows[0]["reason"], "disabled capabilities: Console");
    let cv = dir.path().join("cv.yaml");
    fs::write(&cv, "apiVersion: config.openshift.io/v1\nkind: ClusterVersion\nmetadata:\n  name: version\nspec:\n  capabilities:\n    baselineCapabilitySet: None\n  overrides:\n  - {kind: ConfigMap, group: '', namespace: ns, name: console, unmanaged: true}\nstatus:\n  capabilities:\n    enabledCapabilities: [Console]\n").unwrap();
    let rows = json(
        cvo()
            .args(["explain", "-o", "json", "--cluster-version"])
            .arg(&cv)
            .arg("--payload")
            .arg(dir.path()),
    );
    // Console stays enabled (it was enabled before), so the override is what excludes it.
    assert_eq!(rows[0]["reason"], "overridden");
    fs::write(&install, "capabilities:\n  baselineCapabilitySet: v9\n").unwrap();
    let err = cvo()
        .args(["explain", "--install-config"])
        .arg(&install)
        .arg("--payload")
        .arg(dir.path())
        .assert()
        .code(1);
    assert!(
        String::from_utf8_lossy(&err.get_output().stderr)
            .contains("install-config.yaml: capabilities.baselineCapabilitySet: unrecognized capability set \"v9\"")
    );
}

/// Like oc: an install-config without `capabilities` filters no capability, and the feature
/// gates come from the payload's FeatureGate manifest.
#[test]
fn install_config_without_capabilities_like_oc() {
    let cwd = tempfile::tempdir().unwrap();
    let install = cwd.path().join("install-config.yaml");
    fs::write(&install, "apiVersion: v1\nmetadata:\n  name: test\n").unwrap();
    let rows = json(
        cvo()
            .args(["explain", "-o", "json", "--install-config"])
            .arg(&install),
    );
    let excluded: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["included"] == false)
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert_eq!(excluded.len(), 3, "{excluded:?}");
    assert!(excluded.contains(&"feature gate GatewayAPIWithoutOLM is required but not enabled"));
    let none = json(
        cvo()
            .args([
                "explain",
                "-o",
                "json",
                "--capabilities-baseline",
                "None",
                "--install-config",
            ])
            .arg(&install),
    );
    assert!(
        none.as_array()
            .unwrap()
            .iter()
            .any(|r| r["reason"] == "disabled capabilities: Console")
    );
}

#[test]
fn hash_matches_the_upstream_fixture() {
    let Some(root) = support::corpus() else {
        return;
    };
    let out = stdout(
        cvo()
            .args(["hash", "--exclude", "exclude-test", "--payload"])
            .arg(root.join("cvo-testdata/payloadtest")),
    );
    assert_eq!(out.trim(), "DL-FFQ2Uem8=");
}

#[test]
fn render_and_explain_run_clean_on_the_real_payload() {
    let Some(root) = support::corpus() else {
        return;
    };
    let corpus = root.join("openshift-payload");
    let rows = json(
        cvo()
            .args(["explain", "-o", "json", "--payload"])
            .arg(&corpus),
    );
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 988);
    let included_files: std::collections::BTreeSet<&str> = rows
        .iter()
        .filter(|r| r["included"] == true)
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    let out = tempfile::tempdir().unwrap();
    let summary = stdout(
        cvo()
            .args(["render", "--payload"])
            .arg(&corpus)
            .arg("--output-dir")
            .arg(out.path()),
    );
    assert!(summary.contains("documents kept: 827 of 988"), "{summary}");
    let rendered: Vec<String> = fs::read_dir(out.path().join("manifests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != ".cvo-render")
        .collect();
    assert_eq!(rendered.len(), included_files.len());
    // A file whose documents are all kept is written byte for byte.
    let name = "0000_50_console-operator_01-oauth.yaml";
    if included_files.contains(name) {
        assert_eq!(
            fs::read(out.path().join("manifests").join(name)).unwrap(),
            fs::read(corpus.join("release-manifests").join(name)).unwrap()
        );
    }
}

#[test]
fn graph_json_and_dot() {
    let files: Vec<(String, String)> = ["0000_10_a_x.yaml", "0000_10_b_x.yaml", "0000_20_a_x.yaml"]
        .iter()
        .enumerate()
        .map(|(i, f)| {
            (
                f.to_string(),
                GOOD.replace("name: good", &format!("name: n{i}")),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let dir = payload(&refs);
    let graph = json(
        cvo()
            .args(["graph", "-o", "json", "--payload"])
            .arg(dir.path()),
    );
    let nodes = graph["nodes"].as_array().unwrap();
    let tasks: usize = nodes
        .iter()
        .map(|n| n["tasks"].as_array().unwrap().len())
        .sum();
    assert_eq!(tasks, 3);
    assert!(
        nodes
            .iter()
            .all(|n| n.get("in").is_some() && n.get("out").is_some())
    );
    let dot = stdout(
        cvo()
            .args(["graph", "-o", "dot", "--payload"])
            .arg(dir.path()),
    );
    assert!(dot.starts_with("digraph"), "{dot}");
}

#[test]
fn capabilities_json_and_sets() {
    let caps = json(cvo().args([
        "capabilities",
        "-o",
        "json",
        "--baseline",
        "None",
        "--prior",
        "Console",
        "--always-enable",
        "Ingress",
    ]));
    assert_eq!(
        caps["enabledCapabilities"],
        serde_json::json!(["Console", "Ingress"])
    );
    assert_eq!(
        caps["implicitlyEnabledCapabilities"],
        serde_json::json!(["Console", "Ingress"])
    );
    assert_eq!(caps["knownCapabilities"].as_array().unwrap().len(), 17);
    let sets = json(cvo().args(["capabilities", "sets", "-o", "json"]));
    assert_eq!(sets.as_object().unwrap().len(), 10);
    assert_eq!(
        sets["v4.11"],
        serde_json::json!([
            "baremetal",
            "marketplace",
            "openshift-samples",
            "MachineAPI"
        ])
    );
    let known = tempfile::NamedTempFile::new().unwrap();
    fs::write(known.path(), "NewThing\n").unwrap();
    let caps = json(
        cvo()
            .args(["capabilities", "-o", "json", "--known-capabilities-file"])
            .arg(known.path()),
    );
    assert!(
        caps["knownCapabilities"]
            .as_array()
            .unwrap()
            .contains(&Value::from("NewThing"))
    );
    cvo()
        .args(["capabilities", "--baseline", "v9"])
        .assert()
        .code(1);
}

#[test]
fn usage_errors_exit_2_and_input_errors_exit_1() {
    cvo().args(["render", "--no-such-flag"]).assert().code(2);
    cvo()
        .args(["explain", "--payload", "/nonexistent/payload"])
        .assert()
        .code(1);
    cvo()
        .args(["explain", "--capabilities-baseline", "v9"])
        .assert()
        .code(1);
}

/// Each kind of bad input gives an error naming the file (and line), what is wrong and the fix.
#[test]
fn bad_payloads_get_clear_errors() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: &[Case] = &[
        (
            &[(
                "0000_10_a_x.yaml",
                "kind: ConfigMap\nmetadata:\n  name: [unclosed\n",
            )],
            &[
                "release-manifests/0000_10_a_x.yaml:4:1 (document 0): while parsing a flow sequence: did not find expected ',' or ']' (it started at line 3 column 9)",
                "help: fix the YAML/JSON syntax",
            ],
        ),
        (
            &[(
                "0000_10_a_x.yaml",
                &format!("{GOOD}---\n- just\n- a list\n"),
            )],
            &[
                "release-manifests/0000_10_a_x.yaml:9:1 (document 1): document is a sequence, not a mapping",
                "help: each document must be a Kubernetes object",
            ],
        ),
        (
            &[(
                "0000_10_a_x.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: ns\n",
            )],
            &[
                "must contain kubernetes required fields kind and name",
                "help: set `kind` and `metadata.name`",
            ],
        ),
        (
            &[("0000_10_a_x.yaml", &format!("{GOOD}---\n{GOOD}"))],
            &[
                "release-manifests/0000_10_a_x.yaml:9:1 (document 1): duplicate resource: (Group: \"\" Kind: \"ConfigMap\" Namespace: \"ns\" Name: \"good\")",
            ],
        ),
        (
            &[("0000_10_a_x.json", "{\"kind\": \"A\",\n \"metadata\": }")],
            &["release-manifests/0000_10_a_x.json:2:"],
        ),
        (
            &[("0000_10_a_x.yaml", "a: 1\n--- b\n")],
            &["invalid Yaml document separator: b"],
        ),
    ];
    for (files, expected) in cases {
        let dir = payload(files);
        let err = error_output(dir.path());
        for e in *expected {
            assert!(err.contains(e), "expected {e:?} in:\n{err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn bad_metadata_and_unreadable_files_get_clear_errors() {
    let dir = payload(&[("0000_10_a_x.yaml", GOOD)]);
    let rm = dir.path().join("release-manifests");
    fs::write(
        rm.join("release-metadata"),
        r#"{"kind":"cincinnati-metadata-v1","version":"4.18.0"}"#,
    )
    .unwrap();
    assert!(error_output(dir.path()).contains("release-manifests/release-metadata: unrecognized Cincinnati metadata kind \"cincinnati-metadata-v1\""));
    fs::write(
        rm.join("release-metadata"),
        r#"{"kind":"cincinnati-metadata-v0","version":"4.18"}"#,
    )
    .unwrap();
    assert!(error_output(dir.path()).contains("invalid Cincinnati metadata version \"4.18\""));
    fs::write(
        rm.join("release-metadata"),
        r#"{"kind":"cincinnati-metadata-v0","version":"4.19.0"}"#,
    )
    .unwrap();
    let err = error_output(dir.path());
    assert!(
        err.contains(
            "version from image-references (4.18.0) differs from release-metadata (4.19.0)"
        ),
        "{err}"
    );
    assert!(err.contains("help: image-references must be"), "{err}");
    fs::write(
        rm.join("release-metadata"),
        r#"{"kind":"cincinnati-metadata-v0","version":"4.18.0"}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink("/nonexistent/target.yaml", rm.join("0000_20_b_x.yaml")).unwrap();
    let err = error_output(dir.path());
    assert!(
        err.contains("release-manifests/0000_20_b_x.yaml: cannot read file"),
        "{err}"
    );
    fs::write(rm.join("0000_30_c_x.yaml"), b"kind: \xff\xfe\n").unwrap();
    let err = error_output(dir.path());
    assert!(
        err.contains("2 problem(s)"),
        "every problem is reported: {err}"
    );
    assert!(
        err.contains("release-manifests/0000_30_c_x.yaml: file is not valid UTF-8"),
        "{err}"
    );
}

#[test]
fn a_plain_directory_of_manifests_is_said_to_be_one() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("0000_10_a_x.yaml"), GOOD).unwrap();
    let assert = cvo()
        .args(["explain", "--payload"])
        .arg(dir.path())
        .assert()
        .success();
    let out = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(out.contains("plain directory of manifests"), "{out}");
    assert!(err.contains("plain directory of manifests"), "{err}");
}

#[test]
fn crds_prints_both_definitions() {
    let out = cvo().args(["crds", "-o", "json"]).assert().success();
    let list: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let names: Vec<_> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|crd| crd["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "clusterversions.config.openshift.io",
            "clusteroperators.config.openshift.io"
        ]
    );
    let out = cvo().arg("crds").assert().success();
    let yaml = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert_eq!(yaml.matches("\n---\n").count(), 1, "{yaml}");
    assert!(yaml.contains("kind: ClusterOperator\n"), "{yaml}");
}

/// `--component deployment-targets` prints the component's five CRDs with its capability; a
/// name that is not a component is an error with the near miss and every valid name.
#[test]
fn crds_of_a_component() {
    let list = json(cvo().args(["crds", "--component", "deployment-targets", "-o", "json"]));
    let items = list["items"].as_array().unwrap();
    let kinds: Vec<&str> = (items.iter())
        .map(|crd| crd["spec"]["names"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "DeploymentTarget",
            "DeploymentTargetClaim",
            "DeploymentTargetClass",
            "Environment",
            "GitOpsDeploymentManagedEnvironment"
        ]
    );
    for crd in items {
        let annotations = &crd["metadata"]["annotations"];
        assert_eq!(
            annotations["capability.openshift.io/name"], "DeploymentTargets",
            "{crd}"
        );
    }
    let default = stdout(cvo().arg("crds"));
    assert_eq!(
        default,
        stdout(cvo().args(["crds", "--component", "cluster-version-operator"]))
    );
    let typo = fails(cvo().args(["crds", "--component", "deployment-target"]));
    assert_eq!(
        typo.trim_end(),
        "error: --component: unknown component \"deployment-target\" (did you mean deployment-targets?); valid values: cluster-version-operator, deployment-targets, agents"
    );
}

/// A kubeconfig for a server on a loopback port where nothing listens.
fn unreachable_kubeconfig() -> (tempfile::TempDir, std::path::PathBuf) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\nusers:\n- name: u\n  user:\n    token: t\n"
        ),
    )
    .unwrap();
    (dir, path)
}

#[test]
fn an_unreachable_server_is_one_error_that_names_it() {
    let (_dir, kubeconfig) = unreachable_kubeconfig();
    let server = fs::read_to_string(&kubeconfig).unwrap();
    let server = server
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .unwrap()
        .to_string();
    let apply = fails(
        cvo()
            .args(["apply", "--connect-timeout", "0", "--kubeconfig"])
            .arg(&kubeconfig),
    );
    let lines: Vec<&str> = apply.lines().collect();
    assert_eq!(lines.len(), 1, "{apply}");
    assert!(
        lines[0].starts_with(&format!(
            "error: cannot reach the Kubernetes API server {server}/: "
        )) && lines[0].contains("Connection refused"),
        "{apply}"
    );

    // `start --once` gives up after --connect-timeout instead of retrying for ever.
    let started = std::time::Instant::now();
    let start = fails(
        cvo()
            .args(["start", "--once", "--connect-timeout", "3", "--listen", ""])
            .arg("--kubeconfig")
            .arg(&kubeconfig),
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    // The retries (one a second) are said once, with how long they go on, then the error.
    let retrying: Vec<&str> = start.lines().filter(|l| l.contains("retrying")).collect();
    assert_eq!(retrying.len(), 1, "{start}");
    assert!(retrying[0].contains("retrying for up to 3s"), "{start}");
    let last = start.lines().last().unwrap_or_default();
    assert!(last.contains("(gave up after "), "{start}");
    assert!(
        last.starts_with(&format!(
            "error: cannot reach the Kubernetes API server {server}/: "
        )),
        "{start}"
    );
}

#[test]
fn a_missing_kubeconfig_is_said_once() {
    let err = fails(cvo().args(["apply", "--kubeconfig", "/nonexistent/kubeconfig"]));
    assert_eq!(
        err.trim_end(),
        "error: cannot read kubeconfig /nonexistent/kubeconfig: No such file or directory (os error 2)"
    );
}

#[test]
fn a_registry_failure_says_why() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cache = tempfile::tempdir().unwrap();
    let err = fails(
        cvo()
            .args([
                "payload",
                "info",
                &format!("127.0.0.1:{port}/cvo/release:4.18.0"),
            ])
            .arg("--cache-dir")
            .arg(cache.path()),
    );
    assert!(err.contains("error sending request for url"), "{err}");
    assert!(
        err.contains("Connection refused"),
        "the cause is named: {err}"
    );
}

/// Runs cvo and returns its standard error, asserting exit code 1.
fn fails(cmd: &mut Command) -> String {
    let out = cmd.assert().code(1).get_output().clone();
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr).unwrap()
}

/// An unknown capability, profile or feature set given on the command line is an error with
/// the near miss and the valid values, for every command that takes one; nothing is written.
#[test]
fn unknown_inclusion_flag_values_are_errors() {
    let cwd = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["explain", "--additional-capabilities", "Consle"],
            &[
                "error: --additional-capabilities: unknown capability \"Consle\" (did you mean Console?); valid values: baremetal, Console,",
                "pass --allow-unknown-capabilities",
            ],
        ),
        (
            &["render", "--additional-capabilities", "Console,Consle,Foo"],
            &["unknown capability \"Consle\" (did you mean Console?), \"Foo\"; valid values"],
        ),
        (
            &["validate", "--additional-capabilities", "Consle"],
            &["--additional-capabilities: unknown capability \"Consle\""],
        ),
        (
            &[
                "plan",
                "--from",
                "bundled",
                "--to",
                "bundled",
                "--additional-capabilities",
                "Consle,MachineAPI",
            ],
            &["--additional-capabilities: unknown capability \"Consle\""],
        ),
        (
            &[
                "plan",
                "--from",
                "bundled",
                "--to",
                "bundled",
                "--implicitly-enabled",
                "consle",
            ],
            &["--implicitly-enabled: unknown capability \"consle\" (did you mean Console?)"],
        ),
        (
            &["capabilities", "--additional", "Consle"],
            &["--additional: unknown capability \"Consle\" (did you mean Console?)"],
        ),
        (
            &["capabilities", "--prior", "Insight"],
            &["--prior: unknown capability \"Insight\" (did you mean Insights?)"],
        ),
        (
            &["render", "--cluster-profile", "self-managed-ha"],
            &[
                "error: --cluster-profile: unknown cluster profile \"self-managed-ha\" (did you mean self-managed-high-availability?): no document of bundled:4.18.0 names it",
                "valid values: self-managed-high-availability, single-node-developer, ibm-cloud-managed, hypershift",
            ],
        ),
        (
            &["validate", "--cluster-profile", "single-node"],
            &["unknown cluster profile \"single-node\" (did you mean single-node-developer?)"],
        ),
        (
            &["explain", "--feature-set", "TechPreview"],
            &[
                "error: --feature-set: unknown feature set \"TechPreview\" (did you mean TechPreviewNoUpgrade?); valid values: CustomNoUpgrade, Default, DevPreviewNoUpgrade, OKD, TechPreviewNoUpgrade",
            ],
        ),
        (
            &["graph", "--feature-set", "techpreviewnoupgrade"],
            &["unknown feature set \"techpreviewnoupgrade\" (did you mean TechPreviewNoUpgrade?)"],
        ),
        (
            &["hash", "--capabilities-baseline", "vcurrent"],
            &[
                "--capabilities-baseline: unrecognized capability set \"vcurrent\" (did you mean vCurrent?)",
            ],
        ),
    ];
    for (args, expected) in cases {
        let err = fails(cvo().current_dir(cwd.path()).args(*args));
        for e in *expected {
            assert!(err.contains(e), "cvo {args:?}: expected {e:?} in:\n{err}");
        }
    }
    let mut env = cvo();
    env.current_dir(cwd.path())
        .env("CLUSTER_PROFILE", "hypershfit")
        .arg("explain");
    assert!(fails(&mut env).contains(
        "$CLUSTER_PROFILE: unknown cluster profile \"hypershfit\" (did you mean hypershift?)"
    ));
    assert!(!cwd.path().join("_output").exists(), "render wrote nothing");
}

/// The deliberate ways to name what this cvo does not know: the switch for capabilities, and
/// profiles and feature sets the payload itself uses.
#[test]
fn deliberately_unknown_values_are_allowed() {
    let json_rows = |args: &[&str], dir: &Path| {
        json(
            cvo()
                .args(["explain", "-o", "json"])
                .args(args)
                .arg("--payload")
                .arg(dir),
        )
    };
    let dir = payload(&[
        ("0000_10_a_x.yaml", GOOD),
        (
            "0000_10_b_x.yaml",
            &GOOD.replace("name: good", "name: edge").replace(
                "self-managed-high-availability",
                "single-node-production-edge",
            ),
        ),
    ]);
    let rows = json_rows(
        &[
            "--additional-capabilities",
            "NewThing",
            "--allow-unknown-capabilities",
        ],
        dir.path(),
    );
    assert_eq!(rows.as_array().unwrap().len(), 2);
    // A profile only this payload uses is a profile.
    let rows = json_rows(
        &["--cluster-profile", "single-node-production-edge"],
        dir.path(),
    );
    assert_eq!(rows[1]["included"], true);
    // Default is "" by its name too.
    let rows = json_rows(&["--feature-set", "Default"], dir.path());
    assert_eq!(rows[0]["included"], true);
    let rows = json_rows(&["--feature-set", ""], dir.path());
    assert_eq!(rows[0]["included"], true);
    // An --inclusion file declares new names in knownCapabilities.
    let file = dir.path().join("inclusion.json");
    fs::write(
        &file,
        r#"{"capabilities": {"knownCapabilities": ["NewThing"], "enabledCapabilities": ["NewThing", "Console"]}}"#,
    )
    .unwrap();
    json_rows(&["--inclusion", file.to_str().unwrap()], dir.path());
}

/// Values read from --inclusion, --install-config and --cluster-version files are checked the
/// same way, and the error names the file and the field.
#[test]
fn unknown_values_in_files_name_the_file_and_field() {
    let dir = payload(&[("0000_10_a_x.yaml", GOOD)]);
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        fs::write(&path, text).unwrap();
        path
    };
    const CV: &str =
        "apiVersion: config.openshift.io/v1\nkind: ClusterVersion\nmetadata:\n  name: version\n";
    let cases: Vec<(&str, std::path::PathBuf, String)> = vec![
        (
            "--inclusion",
            file("i1.json", r#"{"profile": "single-node"}"#),
            "i1.json: profile: unknown cluster profile \"single-node\" (did you mean single-node-developer?)".into(),
        ),
        (
            "--inclusion",
            file("i2.json", r#"{"requiredFeatureSet": "TechPreview"}"#),
            "i2.json: requiredFeatureSet: unknown feature set \"TechPreview\" (did you mean TechPreviewNoUpgrade?)".into(),
        ),
        (
            "--inclusion",
            file(
                "i3.json",
                r#"{"capabilities": {"knownCapabilities": ["Console"], "enabledCapabilities": ["Consle"]}}"#,
            ),
            "i3.json: capabilities.enabledCapabilities: unknown capability \"Consle\" (did you mean Console?)".into(),
        ),
        (
            "--install-config",
            file("ic1.yaml", "apiVersion: v1\nfeatureSet: TechPreview\n"),
            "ic1.yaml: featureSet: unknown feature set \"TechPreview\" (did you mean TechPreviewNoUpgrade?)".into(),
        ),
        (
            "--install-config",
            file(
                "ic2.yaml",
                "capabilities:\n  baselineCapabilitySet: None\n  additionalEnabledCapabilities: [Consle]\n",
            ),
            "ic2.yaml: capabilities.additionalEnabledCapabilities: unknown capability \"Consle\" (did you mean Console?)".into(),
        ),
        (
            "--install-config",
            file("ic3.yaml", "capabilities:\n  baselineCapabilitySet: v4.1\n"),
            "ic3.yaml: capabilities.baselineCapabilitySet: unrecognized capability set \"v4.1\"".into(),
        ),
        (
            "--cluster-version",
            file(
                "cv1.yaml",
                &format!("{CV}spec:\n  capabilities:\n    additionalEnabledCapabilities: [MachineApi]\n"),
            ),
            "cv1.yaml: spec.capabilities.additionalEnabledCapabilities: unknown capability \"MachineApi\" (did you mean MachineAPI?)".into(),
        ),
        (
            "--cluster-version",
            file(
                "cv2.yaml",
                &format!("{CV}spec:\n  capabilities:\n    baselineCapabilitySet: v4.99\n"),
            ),
            "cv2.yaml: spec.capabilities.baselineCapabilitySet: unrecognized capability set \"v4.99\"".into(),
        ),
        (
            "--cluster-version",
            file(
                "cv3.yaml",
                &format!("{CV}status:\n  capabilities:\n    enabledCapabilities: [Consle]\n"),
            ),
            "cv3.yaml: status.capabilities.enabledCapabilities: unknown capability \"Consle\"".into(),
        ),
    ];
    for (flag, path, expected) in &cases {
        let err = fails(
            cvo()
                .args(["explain", flag])
                .arg(path)
                .arg("--payload")
                .arg(dir.path()),
        );
        assert!(
            err.contains(expected.as_str()),
            "{flag} {}: expected {expected:?} in:\n{err}",
            path.display()
        );
        assert!(err.contains(&path.display().to_string()), "{err}");
    }
    // The switch lets a newer release's capability through, in files too.
    let cv = dir.path().join("cv3.yaml");
    stdout(
        cvo()
            .args([
                "explain",
                "--allow-unknown-capabilities",
                "--cluster-version",
            ])
            .arg(&cv)
            .arg("--payload")
            .arg(dir.path()),
    );
}

/// A directory with no manifest file is not a payload: every command says what it expected and
/// where payload roots are instead, and fails.
#[test]
fn a_directory_without_manifests_is_not_a_payload() {
    let empty = tempfile::tempdir().unwrap();
    let repo = env!("CARGO_MANIFEST_DIR");
    let err = fails(cvo().args(["validate", "--payload"]).arg(empty.path()));
    assert!(
        err.contains(
            "no manifest file in this directory (*.yaml, *.yml or *.json); expected a payload root"
        ),
        "{err}"
    );
    let err = fails(
        cvo()
            .current_dir(repo)
            .args(["validate", "--payload", "payloads"]),
    );
    assert!(
        err.contains("did you mean --payload payloads/4.17.0 or --payload payloads/4.18.0?"),
        "{err}"
    );
    let err = fails(
        cvo()
            .current_dir(repo)
            .args(["explain", "--payload", "./payloads"]),
    );
    assert!(
        err.contains("did you mean --payload ./payloads/4.17.0"),
        "{err}"
    );
    let err = fails(
        cvo()
            .current_dir(repo)
            .args(["explain", "--payload", "src"]),
    );
    assert!(
        err.starts_with("error: payload src: no manifest file"),
        "{err}"
    );
    assert!(!err.contains("did you mean"), "{err}");
    // Release metadata alone is read, then loading fails for the missing manifests.
    let err =
        fails(
            cvo()
                .current_dir(repo)
                .args(["explain", "--payload", "testdata/validate/empty"]),
        );
    assert!(
        err.contains("  release-manifests: no manifest file (*.yaml, *.yml or *.json) in manifests/ or release-manifests/: the CVO would apply nothing\n    help: put the payload's manifests in release-manifests/"),
        "{err}"
    );
    let out = tempfile::tempdir().unwrap();
    fails(
        cvo()
            .args(["render", "--payload"])
            .arg(empty.path())
            .arg("--output-dir")
            .arg(out.path()),
    );
    assert!(!out.path().join("manifests").exists());
}

/// `render` replaces its own output, never a directory holding files it did not write, unless
/// `--force`.
#[test]
fn render_refuses_to_delete_files_it_did_not_write() {
    let dir = payload(&[("0000_10_a_x.yaml", GOOD)]);
    let out = tempfile::tempdir().unwrap();
    let manifests = out.path().join("manifests");
    let render = |extra: &[&str]| {
        let mut cmd = cvo();
        cmd.args(["render", "--payload"])
            .arg(dir.path())
            .arg("--output-dir")
            .arg(out.path())
            .args(extra);
        cmd
    };
    // An empty directory is fine.
    fs::create_dir_all(&manifests).unwrap();
    stdout(&mut render(&[]));
    assert_eq!(
        fs::read_to_string(manifests.join(".cvo-render")).unwrap(),
        "# Written by `cvo render`, which replaces this directory when it renders again.\n0000_10_a_x.yaml\n"
    );
    // Its own output is replaced.
    stdout(&mut render(&[]));
    // A file the user put there is not deleted.
    fs::write(manifests.join("my-extra.yaml"), "mine").unwrap();
    let err = fails(&mut render(&[]));
    assert!(
        err.contains(&format!(
            "error: {}: cvo render did not write 1 file(s) that rendering would delete: my-extra.yaml; move them away, choose another --output-dir, or pass --force",
            manifests.display()
        )),
        "{err}"
    );
    assert!(manifests.join("my-extra.yaml").exists());
    // A directory cvo did not write at all.
    fs::remove_file(manifests.join(".cvo-render")).unwrap();
    let err = fails(&mut render(&[]));
    assert!(
        err.contains("it was not written by cvo render (it has no .cvo-render marker) and holds 2 file(s) that rendering would delete: 0000_10_a_x.yaml, my-extra.yaml"),
        "{err}"
    );
    // --force replaces it.
    stdout(&mut render(&["--force"]));
    assert!(!manifests.join("my-extra.yaml").exists());
    assert!(manifests.join("0000_10_a_x.yaml").exists());
}

/// The explain table sizes its columns from the content, so long file names do not push the
/// other columns out of line; counts are in English.
#[test]
fn explain_table_fits_its_content() {
    let long = "0000_50_a-component-name-long-enough-to-overflow-seventy-characters_00_config.yaml";
    let dir = payload(&[(long, GOOD)]);
    let out = stdout(cvo().args(["explain", "--payload"]).arg(dir.path()));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    let file = format!("release-manifests/{long}#0");
    assert_eq!(
        lines[1],
        format!(
            "INCLUDED   {:<w$}   KIND        NAMESPACE/NAME   REASON",
            "FILE#DOC",
            w = file.len()
        )
    );
    assert_eq!(lines[2], format!("yes        {file}   ConfigMap   ns/good"));
    assert_eq!(lines[3], "# 1 document: 1 included, 0 excluded");
}

/// Every `-o/--output` says what its formats are.
#[test]
fn every_output_flag_is_described_in_help() {
    for command in [
        &["apply"][..],
        &["explain"],
        &["graph"],
        &["capabilities"],
        &["plan"],
        &["crds"],
        &["validate"],
        &["payload", "info"],
        &["dt", "reconcile"],
        &["agent", "transition"],
        &["agent", "admit"],
    ] {
        let help = stdout(cvo().args(command).arg("--help"));
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with("-o, --output"))
            .unwrap_or_else(|| panic!("{command:?}: no -o in\n{help}"));
        let description = line.split_once('>').map_or("", |(_, d)| d.trim());
        assert!(
            !description.is_empty() && !description.starts_with('['),
            "{command:?}: -o has no description: {line:?}"
        );
    }
}

/// `plan` says when it previews a rollback, and an empty section ends without a colon.
#[test]
fn plan_warns_of_a_rollback_and_ends_empty_sections_cleanly() {
    let repo = env!("CARGO_MANIFEST_DIR");
    let out = stdout(cvo().current_dir(repo).args([
        "plan",
        "--from",
        "payloads/4.18.0",
        "--to",
        "payloads/4.17.0",
    ]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "Upgrade 4.18.0 -> 4.17.0");
    assert!(
        lines[1].starts_with(
            "Warning: 4.18.0 -> 4.17.0 is a rollback, not an upgrade: the CVO refuses"
        ),
        "{out}"
    );
    let plan = json(cvo().current_dir(repo).args([
        "plan",
        "-o",
        "json",
        "--from",
        "payloads/4.18.0",
        "--to",
        "payloads/4.17.0",
    ]));
    assert_eq!(plan["warnings"].as_array().unwrap().len(), 1);
    let out = stdout(cvo().args(["plan", "--from", "bundled", "--to", "bundled"]));
    assert!(!out.contains("Warning"), "{out}");
    for line in ["Create (0)", "Update (0)", "Left behind (0)"] {
        assert!(out.lines().any(|l| l == line), "{line:?} in:\n{out}");
    }
}

/// Without release metadata the release image is a placeholder, and render and hash say so.
#[test]
fn a_placeholder_release_image_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("0000_10_a_x.yaml"), GOOD).unwrap();
    let out = tempfile::tempdir().unwrap();
    for extra in [&[][..], &["--release-image", "quay.io/x/release:1"]] {
        let assert = cvo()
            .args(["render", "--payload"])
            .arg(dir.path())
            .arg("--output-dir")
            .arg(out.path())
            .args(extra)
            .assert()
            .success();
        let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        let warned = err.contains("no release-metadata, so the release image ({{.ReleaseImage}}) is the placeholder quay.io/openshift-release-dev/ocp-release:unknown; pass --release-image IMG");
        assert_eq!(warned, extra.is_empty(), "{extra:?}: {err}");
    }
    let assert = cvo()
        .args(["hash", "--payload"])
        .arg(dir.path())
        .assert()
        .success();
    assert!(String::from_utf8_lossy(&assert.get_output().stderr).contains("ocp-release:unknown"));
}

/// Every command lays its help out alike (each description beside its flag), and the release
/// image flags are offered, under their own heading, only by the commands that read images.
#[test]
fn help_is_laid_out_alike_and_image_flags_only_where_images_are_read() {
    let commands: &[&[&str]] = &[
        &["render"],
        &["explain"],
        &["graph"],
        &["hash"],
        &["capabilities"],
        &["validate"],
        &["plan"],
        &["crds"],
        &["apply"],
        &["start"],
        &["payload", "pull"],
        &["payload", "push"],
        &["payload", "info"],
        &["dt", "reconcile"],
        &["agent", "transition"],
        &["agent", "admit"],
    ];
    for command in commands {
        let help = stdout(cvo().args(*command).arg("--help"));
        let bare = help.lines().find(|l| {
            let t = l.trim_start();
            t.starts_with("--") && !t.contains("  ")
        });
        assert_eq!(
            bare, None,
            "{command:?}: a flag without its description beside it"
        );
        let reads_images = !matches!(command[0], "capabilities" | "crds" | "dt" | "agent");
        assert_eq!(
            help.contains("Release images and registries:\n      --cache-dir"),
            reads_images,
            "{command:?}\n{help}"
        );
    }
}

#[test]
fn log_format_is_accepted_after_the_command() {
    let out = cvo()
        .args(["capabilities", "sets", "--log-format", "json", "-o", "json"])
        .assert()
        .success();
    assert!(!out.get_output().stdout.is_empty());
}

/// A capability the payload declares is known to every command: accepted in flags, and its
/// manifests are kept or excluded by the baseline like any other.
#[test]
fn a_payload_declared_capability_is_known() {
    let repo = env!("CARGO_MANIFEST_DIR");
    let explain = |extra: &[&str]| {
        json(
            cvo()
                .current_dir(repo)
                .args([
                    "explain",
                    "--payload",
                    "testdata/validate/declared",
                    "-o",
                    "json",
                ])
                .args(extra),
        )
    };
    let none = explain(&["--capabilities-baseline", "None"]);
    assert_eq!(
        none[0]["reason"], "disabled capabilities: Widgets",
        "{none}"
    );
    let added = explain(&[
        "--capabilities-baseline",
        "None",
        "--additional-capabilities",
        "Widgets",
    ]);
    assert_eq!(added[0]["included"], true, "{added}");
    let current = explain(&[]);
    assert_eq!(current[0]["included"], true, "vCurrent has it: {current}");
    let typo = fails(cvo().current_dir(repo).args([
        "explain",
        "--payload",
        "testdata/validate/declared",
        "--additional-capabilities",
        "Widgts",
    ]));
    assert!(typo.contains("did you mean Widgets"), "{typo}");
}

/// The bundled upgrade pair brings three capabilities 4.18.0 declares in no baseline set:
/// `plan` names them new and not enabled on a `vCurrent` cluster (which gets none of their
/// objects), with the command that enables one; a name only the new release knows is accepted
/// (`--additional-capabilities EdgeAgent`: enabled, its objects created). `explain` of 4.18.0
/// with baseline None excludes every document of a component for its capability.
#[test]
fn the_upgrade_pair_brings_opt_in_capabilities() {
    let repo = env!("CARGO_MANIFEST_DIR");
    let plan = |extra: &[&str]| {
        let out = stdout(
            cvo()
                .current_dir(repo)
                .args([
                    "plan",
                    "--from",
                    "payloads/4.17.0",
                    "--to",
                    "payloads/4.18.0",
                ])
                .args(extra),
        );
        let new = (out.lines())
            .find(|l| l.starts_with("Capabilities new in"))
            .map(str::to_string);
        (new, out)
    };
    for baseline in [
        &[][..],
        &["--capabilities-baseline", "vCurrent"],
        &["--capabilities-baseline", "v4.17"],
    ] {
        let (new, out) = plan(baseline);
        assert_eq!(
            new.as_deref(),
            Some(
                "Capabilities new in 4.18.0: AgentInstall (not enabled), DeploymentTargets (not enabled), EdgeAgent (not enabled)"
            ),
            "{baseline:?}"
        );
        for component in ["deployment-targets", "agents", "openhorizon-agent"] {
            assert!(
                !out.contains(&format!("0000_50_{component}_")),
                "{baseline:?}: {out}"
            );
        }
    }
    let (_, out) = plan(&[]);
    assert!(
        out.contains("\n  To enable AgentInstall: oc patch clusterversion version --type merge -p '{\"spec\":{\"capabilities\":{\"additionalEnabledCapabilities\":[\"AgentInstall\"]}}}'\n"),
        "{out}"
    );
    assert!(
        out.contains("\n  EdgeAgent: The Open Horizon edge cluster agent: "),
        "{out}"
    );
    let (new, edge) = plan(&["--additional-capabilities", "Console,EdgeAgent"]);
    assert_eq!(
        new.as_deref(),
        Some(
            "Capabilities new in 4.18.0: AgentInstall (not enabled), DeploymentTargets (not enabled), EdgeAgent (enabled)"
        )
    );
    assert!(
        edge.contains("\n  Deployment.apps openhorizon-agent/edge-agent (0000_50_openhorizon-agent_12_operator-deployment.yaml)\n"),
        "{edge}"
    );
    assert!(!edge.contains("0000_50_deployment-targets_"), "{edge}");
    // The command keeps what the cluster lists already.
    assert!(
        edge.contains(
            "\"additionalEnabledCapabilities\":[\"Console\",\"EdgeAgent\",\"AgentInstall\"]"
        ),
        "{edge}"
    );
    let typo = fails(cvo().current_dir(repo).args([
        "plan",
        "--from",
        "payloads/4.17.0",
        "--to",
        "payloads/4.18.0",
        "--additional-capabilities",
        "EdgeAgnet",
    ]));
    assert!(typo.contains("did you mean EdgeAgent?"), "{typo}");
    let same = stdout(cvo().current_dir(repo).args([
        "plan",
        "--from",
        "payloads/4.18.0",
        "--to",
        "payloads/4.18.0",
    ]));
    assert!(!same.contains("Capabilities new in"), "{same}");

    let rows = json(cvo().current_dir(repo).args([
        "explain",
        "--output=json",
        "--capabilities-baseline=None",
        "--payload=payloads/4.18.0",
    ]));
    let component: Vec<&Value> = (rows.as_array().unwrap().iter())
        .filter(|r| {
            r["file"]
                .as_str()
                .unwrap()
                .starts_with("0000_50_deployment-targets_")
        })
        .collect();
    assert_eq!(component.len(), 19);
    for row in component {
        assert_eq!(row["included"], false, "{row}");
        assert_eq!(
            row["reason"], "disabled capabilities: DeploymentTargets",
            "{row}"
        );
    }
}

#[test]
fn prometheus_options_are_checked_before_connecting() {
    let err = fails(cvo().args(["start", "--prometheus-url", "ftp://prometheus:9090"]));
    assert_eq!(
        err.trim_end(),
        "error: --prometheus-url \"ftp://prometheus:9090\" must be an http:// or https:// URL with a host, e.g. https://thanos-querier.openshift-monitoring.svc:9091"
    );
    let err = fails(cvo().args(["start", "--prometheus-url", "prometheus:9090/x y"]));
    assert!(
        err.starts_with("error: --prometheus-url \"prometheus:9090/x y\" must be an http")
            || err.starts_with("error: --prometheus-url \"prometheus:9090/x y\" is not a URL"),
        "{err}"
    );
    let err = fails(cvo().args([
        "start",
        "--prometheus-url",
        "https://thanos:9091",
        "--prometheus-ca",
        "/nonexistent/ca.crt",
    ]));
    assert_eq!(
        err.trim_end(),
        "error: cannot read --prometheus-ca /nonexistent/ca.crt: No such file or directory (os error 2)"
    );
    // The CA and token options need the URL (a usage error).
    let out = cvo()
        .args(["start", "--prometheus-token-file", "/tmp/token"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("--prometheus-url"), "{err}");
}

#[test]
fn the_payload_may_be_the_commands_argument() {
    let bundled = concat!(env!("CARGO_MANIFEST_DIR"), "/payloads/4.17.0");
    // As an argument and as --payload, the same answer.
    let by_flag = stdout(cvo().args(["hash", "--payload", bundled]));
    assert_eq!(stdout(cvo().args(["hash", bundled])), by_flag);
    assert_eq!(
        json(cvo().args(["validate", bundled, "-o", "json"])),
        serde_json::json!([])
    );
    // Both at once is a usage error.
    cvo()
        .args(["hash", bundled, "--payload", bundled])
        .assert()
        .code(2);
    // explain: a first argument that is a directory is the payload, the rest are names.
    let rows = json(cvo().args(["explain", bundled, "-o", "json", "etcd-operator"]));
    assert!(
        rows.as_array()
            .is_some_and(|r| !r.is_empty() && r.iter().all(|d| d["name"] == "etcd-operator")),
        "{rows}"
    );
    let by_flag = json(cvo().args([
        "explain",
        "--payload",
        bundled,
        "-o",
        "json",
        "etcd-operator",
    ]));
    assert_eq!(rows, by_flag);
    // Without a payload argument the names select from the bundled payload.
    let rows = json(cvo().args(["explain", "-o", "json", "etcd-operator"]));
    assert!(rows.as_array().is_some_and(|r| !r.is_empty()), "{rows}");
}

#[test]
fn completion_scripts_are_valid_shell() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = stdout(cvo().args(["completion", shell]));
        assert!(script.contains("render"), "{shell}: {script}");
        let path = dir.path().join(format!("cvo.{shell}"));
        fs::write(&path, &script).unwrap();
        // Each shell that is installed checks its own script's syntax.
        let check = match shell {
            "bash" => Some(("bash", vec!["-n"])),
            "zsh" => Some(("zsh", vec!["-n"])),
            "fish" => Some(("fish", vec!["--no-execute"])),
            _ => None,
        };
        let Some((program, args)) = check else {
            continue;
        };
        match std::process::Command::new(program)
            .args(&args)
            .arg(&path)
            .output()
        {
            Ok(out) => assert!(
                out.status.success(),
                "{program} -n rejects the {shell} completion: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(_) if shell != "bash" => eprintln!("{program} is not installed: not checked"),
            Err(e) => panic!("bash: {e}"),
        }
    }
    // bash completes a command's flags.
    let bash = dir.path().join("cvo.bash");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(cvo validate --deny); COMP_CWORD=2; _cvo cvo --deny validate; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            bash.display()
        ))
        .output()
        .unwrap();
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(words.contains("--deny-warnings"), "{words}");
    // A shell clap does not know is a usage error naming the valid ones.
    let err = cvo().args(["completion", "tcsh"]).assert().code(2);
    let err = String::from_utf8_lossy(&err.get_output().stderr).to_string();
    assert!(err.contains("bash") && err.contains("zsh"), "{err}");
}

#[test]
fn man_pages_are_written_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("man1");
    let out = stdout(cvo().args(["man", "--to"]).arg(&to));
    assert!(out.starts_with("wrote "), "{out}");
    for page in [
        "cvo.1",
        "cvo-render.1",
        "cvo-validate.1",
        "cvo-payload-push.1",
    ] {
        let text = fs::read_to_string(to.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH"), "{page} is not a man page");
    }
    let render = fs::read_to_string(to.join("cvo-render.1")).unwrap();
    assert!(
        render.contains("cvo render"),
        "the synopsis names the command as typed"
    );
    assert!(render.contains("output\\-dir"), "the flags are documented");
    assert!(!to.join("cvo-help.1").exists());
    // man itself reads them, where it is installed.
    if let Ok(out) = std::process::Command::new("man")
        .args(["-l", "-P", "cat"])
        .arg(to.join("cvo-render.1"))
        .env("MANWIDTH", "100")
        .output()
        && out.status.success()
    {
        assert!(String::from_utf8_lossy(&out.stdout).contains("render"));
    }
}

#[test]
fn start_needs_a_serving_certificate_for_metrics() {
    let err = fails(cvo().args(["start"]));
    assert_eq!(
        err.trim_end(),
        "error: cvo start serves /metrics over HTTPS: give --serving-cert-file and --serving-key-file (the metrics Service's serving certificate), or --listen \"\" for no metrics server (--metrics-plain-http serves plain HTTP, for development only)"
    );
    let err = fails(cvo().args([
        "start",
        "--metrics-plain-http",
        "--tls-min-version",
        "VersionTLS2",
    ]));
    assert!(err.contains("(did you mean VersionTLS12?)"), "{err}");
}
