//! `cvo agent transition` and `cvo agent admit` as users run them: the fixtures under
//! testdata/agents/, the verdicts with upstream's messages, the usage errors and exit codes;
//! and `cvo crds --component agents`.

use assert_cmd::Command;
use serde_json::{Value, json};

fn cvo() -> Command {
    let mut cmd = Command::cargo_bin("cvo").unwrap();
    cmd.env_remove("RUST_LOG")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// Exit code, standard output, standard error.
fn run(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let mut cmd = cvo();
    cmd.args(args);
    if let Some(text) = stdin {
        cmd.write_stdin(text);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn json_of(args: &[&str]) -> Value {
    let (code, stdout, stderr) = run(args, None);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// `cvo agent transition --state STATE --event EVENT EXTRA...`.
fn run_transition(state: &str, event: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["agent", "transition", "--state", state, "--event", event];
    args.extend(extra);
    run(&args, None)
}

fn transition(state: &str, event: &str) -> Value {
    json_of(&[
        "agent",
        "transition",
        "--state",
        state,
        "--event",
        event,
        "-o",
        "json",
    ])
}

#[test]
fn transitions_allowed_and_refused() {
    assert_eq!(
        transition("known-unbound", "bind"),
        json!({"from": "known-unbound", "event": "bind", "allowed": true, "to": "binding",
               "statusInfo": "Host is waiting to be bound to the cluster", "error": null})
    );
    assert_eq!(
        transition("installed", "unbind"),
        json!({"from": "installed", "event": "unbind", "allowed": true,
               "to": "unbinding-pending-user-action",
               "statusInfo": "Host is waiting to be unbound from the cluster", "error": null})
    );
    assert_eq!(transition("installed", "reclaim")["to"], "reclaiming");
    assert_eq!(transition("known", "reclaim")["to"], "unbinding");
    assert_eq!(
        transition("cancelled", "reclaim")["to"],
        "unbinding-pending-user-action"
    );
    for (state, event) in [
        ("insufficient-unbound", "bind"),
        ("known", "bind"),
        ("known-unbound", "unbind"),
        ("resetting", "unbind"),
        ("resetting-pending-user-action", "reclaim"),
        ("installing", "reclaim"),
        ("", "bind"),
    ] {
        assert_eq!(
            transition(state, event),
            json!({"from": state, "event": event, "allowed": false, "to": state,
                   "statusInfo": null, "error": "no condition found to run transition"}),
            "{state} {event}"
        );
    }
}

#[test]
fn transition_text_and_yaml() {
    let (code, stdout, _) = run_transition("known-unbound", "bind", &[]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "known-unbound --bind--> binding\nstatusInfo: Host is waiting to be bound to the cluster\n"
    );
    let (code, stdout, _) = run_transition("installed", "bind", &[]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "installed --bind--> refused: no condition found to run transition\n"
    );
    let (code, stdout, _) = run_transition("known", "unbind", &["-o", "yaml"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("to: unbinding\n"), "{stdout}");
}

#[test]
fn unknown_states_and_events_are_usage_errors() {
    let (code, stdout, stderr) = run_transition("known-unbond", "bind", &[]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains(
            "unknown host state \"known-unbond\" (did you mean known-unbound?); valid values: \"\", discovering-unbound, known-unbound,"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("resetting-pending-user-action"), "{stderr}");
    let (code, _, stderr) = run_transition("known", "unbnd", &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains(
            "unknown event \"unbnd\" (did you mean unbind?); valid values: bind, unbind, reclaim"
        ),
        "{stderr}"
    );
}

/// `cvo agent admit --kind KIND --operation OPERATION --new testdata/agents/NEW EXTRA...`.
fn run_admit(kind: &str, operation: &str, new: &str, extra: &[&str]) -> (i32, String, String) {
    let new = format!("testdata/agents/{new}");
    let mut args = vec![
        "agent",
        "admit",
        "--kind",
        kind,
        "--operation",
        operation,
        "--new",
        &new,
    ];
    args.extend(extra);
    run(&args, None)
}

/// The JSON verdict on `new` (and `old`, fixtures both).
fn admit(kind: &str, operation: &str, old: Option<&str>, new: &str, extra: &[&str]) -> Value {
    let old = old.map(|o| format!("testdata/agents/{o}"));
    let mut args = vec!["-o", "json"];
    if let Some(old) = &old {
        args.extend(["--old", old]);
    }
    args.extend(extra);
    let (code, stdout, stderr) = run_admit(kind, operation, new, &args);
    assert_eq!(code, 0, "{kind} {operation} {new}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Each (old file, new file, verdict) judged as an UPDATE of `kind`.
fn updates(kind: &str, rows: &[(&str, &str, Value)]) {
    for (old, new, want) in rows {
        let got = admit(kind, "UPDATE", Some(old), new, &[]);
        assert_eq!(&got, want, "{old} -> {new}");
    }
}

/// Each (file, verdict) judged as a CREATE of `kind`.
fn creates(kind: &str, rows: &[(&str, Value)]) {
    for (new, want) in rows {
        assert_eq!(&admit(kind, "CREATE", None, new, &[]), want, "{new}");
    }
}

fn allowed() -> Value {
    json!({"allowed": true, "message": ""})
}

fn denied(message: &str) -> Value {
    json!({"allowed": false, "message": message})
}

const IMMUTABLE_DURING_INSTALL: &str =
    "Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation.";

#[test]
fn agent_updates() {
    let rows = [
        // Binding a pool agent (the old one is JSON).
        ("agent-unbound.json", "agent-bound.yaml", allowed()),
        // Unbinding before installation.
        ("agent-bound.yaml", "agent-unbound.json", allowed()),
        // A move during installation.
        (
            "agent-installing.yaml",
            "agent-installing-moved.yaml",
            denied(IMMUTABLE_DURING_INSTALL),
        ),
        // An unbind during installation, day 1.
        (
            "agent-installing.yaml",
            "agent-installing-unset.yaml",
            denied(IMMUTABLE_DURING_INSTALL),
        ),
        // The day-2 exception: unset while installing.
        (
            "agent-day2-installing.yaml",
            "agent-day2-unset.yaml",
            allowed(),
        ),
        // Nothing changed.
        ("agent-installing.yaml", "agent-installing.yaml", allowed()),
        (
            "agent-unbound.json",
            "agent-both-disks.yaml",
            denied("Either InstallationDiskID or InstallationDiskPath can be set, not both."),
        ),
    ];
    updates("Agent", &rows);
}

#[test]
fn agent_creates() {
    creates(
        "Agent",
        &[
            ("agent-bound.yaml", allowed()),
            (
                "agent-both-disks.yaml",
                denied("Either InstallationDiskID or InstallationDiskPath can be set, not both."),
            ),
        ],
    );
    // Case does not matter for --kind and --operation.
    assert_eq!(
        admit("agent", "create", None, "agent-unbound.json", &[]),
        allowed()
    );
}

#[test]
fn infraenv_rules() {
    let immutable_ref =
        "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation.";
    let rows = [
        (
            "infraenv-late.yaml",
            "infraenv-bound.yaml",
            denied(immutable_ref),
        ),
        (
            "infraenv-bound.yaml",
            "infraenv-late.yaml",
            denied(immutable_ref),
        ),
        ("infraenv-late.yaml", "infraenv-x86.yaml", allowed()),
        ("infraenv-x86.yaml", "infraenv-late.yaml", allowed()),
        (
            "infraenv-late.yaml",
            "infraenv-arm.yaml",
            denied(
                "Attempted to change Spec.CpuArchitecture which is immutable after InfraEnv creation.",
            ),
        ),
        (
            "infraenv-bound.yaml",
            "infraenv-ref-os.yaml",
            denied(
                "spec.OSImageVersion is not valid. It can't be added alongside with a clusterRef when the cluster is not installed yet.",
            ),
        ),
    ];
    updates("InfraEnv", &rows);
    assert_eq!(
        admit(
            "InfraEnv",
            "UPDATE",
            Some("infraenv-bound.yaml"),
            "infraenv-ref-os.yaml",
            &["--cluster-installed"]
        ),
        allowed()
    );
    creates(
        "InfraEnv",
        &[
            (
                "infraenv-ref-os.yaml",
                denied(
                    "Either Spec.ClusterRef or Spec.OSImageVersion should be specified (not both).",
                ),
            ),
            ("infraenv-late.yaml", allowed()),
        ],
    );
}

#[test]
fn admit_text_and_standard_input() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/agents/agent-installing-moved.yaml"),
    )
    .unwrap();
    let (code, stdout, stderr) = run(
        &[
            "agent",
            "admit",
            "--kind",
            "Agent",
            "--operation",
            "UPDATE",
            "--old",
            "testdata/agents/agent-installing.yaml",
            "--new",
            "-",
        ],
        Some(&text),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, format!("denied: {IMMUTABLE_DURING_INSTALL}\n"));
    let (code, stdout, _) = run_admit("Agent", "CREATE", "agent-bound.yaml", &[]);
    assert_eq!((code, stdout.as_str()), (0, "allowed\n"));
}

#[test]
fn admit_usage_and_file_errors() {
    // Exit code and standard error of judging a fixture.
    let judge = |kind: &str, operation: &str, file: &str| {
        let (code, _, stderr) = run_admit(kind, operation, file, &[]);
        (code, stderr)
    };
    let (code, stderr) = judge("Agent", "UPDATE", "agent-bound.yaml");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--operation UPDATE needs --old FILE"),
        "{stderr}"
    );
    assert!(stderr.contains("Usage: cvo agent admit"), "{stderr}");
    let (code, stderr) = judge("Agent", "DELETE", "agent-bound.yaml");
    assert_eq!(code, 2, "{stderr}");

    assert_eq!(
        judge("InfraEnv", "CREATE", "agent-unbound.json"),
        (
            1,
            "error: testdata/agents/agent-unbound.json: kind is \"Agent\", not \"InfraEnv\" (--kind)\n"
                .to_owned()
        )
    );
    let (code, stderr) = judge("Agent", "CREATE", "broken.yaml");
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: testdata/agents/broken.yaml: line 5: ")
            && stderr.contains("(it started at line 4 column 9)"),
        "{stderr}"
    );
    let (code, stderr) = judge("Agent", "CREATE", "none.yaml");
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: testdata/agents/none.yaml: cannot read: "),
        "{stderr}"
    );
    let (code, stderr) = judge("Agent", "CREATE", "infraenv-late.yaml");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("kind is \"InfraEnv\", not \"Agent\""),
        "{stderr}"
    );
    // An Agent without its required fields names the input and the field.
    let (code, _, stderr) = run(
        &[
            "agent",
            "admit",
            "--kind",
            "Agent",
            "--operation",
            "CREATE",
            "--new",
            "-",
        ],
        Some("kind: Agent\nmetadata: {name: a}\nspec: {role: worker}\n"),
    );
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: standard input: not a valid Agent: ")
            && stderr.contains("approved"),
        "{stderr}"
    );
}

#[test]
fn crds_of_the_agents_component() {
    // The CRDs themselves are checked where they are made (components::agents::crds).
    let list = json_of(&["crds", "--component", "agents", "-o", "json"]);
    let kinds: Vec<&str> = (list["items"].as_array().unwrap().iter())
        .map(|c| c["spec"]["names"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "Agent",
            "InfraEnv",
            "ClusterDeployment",
            "AgentClusterInstall"
        ]
    );
    for crd in list["items"].as_array().unwrap() {
        assert_eq!(
            crd["metadata"]["annotations"]["capability.openshift.io/name"],
            "AgentInstall"
        );
    }
}

#[test]
fn simulate_usage_errors() {
    let (code, _, stderr) = run(
        &["agent", "simulate", "--infraenv", "pool", "--hosts", "2"],
        None,
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("\"pool\" is not NAMESPACE/NAME"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["agent", "simulate", "--infraenv", "ns/pool"], None);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--hosts"), "{stderr}");
    // No cluster: an error naming the kubeconfig, exit 1.
    let (code, _, stderr) = run(
        &[
            "agent",
            "simulate",
            "--infraenv",
            "ns/pool",
            "--hosts",
            "1",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ],
        None,
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
}
