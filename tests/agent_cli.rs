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
               "statusInfo": "Host is waiting to be bound to the cluster", "error": null,
               "code": null, "allowedFrom": ["known-unbound"]})
    );
    assert_eq!(
        transition("installed", "unbind")
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k != "allowedFrom")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<serde_json::Map<_, _>>(),
        json!({"from": "installed", "event": "unbind", "allowed": true,
               "to": "unbinding-pending-user-action",
               "statusInfo": "Host is waiting to be unbound from the cluster", "error": null,
               "code": null})
        .as_object()
        .unwrap()
        .clone()
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
        let got = transition(state, event);
        assert_eq!(
            (
                &got["from"],
                &got["allowed"],
                &got["to"],
                &got["statusInfo"],
                &got["error"],
                &got["code"]
            ),
            (
                &json!(state),
                &json!(false),
                &json!(state),
                &Value::Null,
                &json!("no condition found to run transition"),
                &json!(500)
            ),
            "{state} {event}"
        );
    }
    assert_eq!(
        transition("", "bind")["allowedFrom"],
        json!(["known-unbound"])
    );
}

/// Register, refresh and cancel, with the flags that say what the host monitor saw.
#[test]
fn register_refresh_and_cancel() {
    let json = |state: &str, event: &str, extra: &[&str]| {
        let mut args = vec![
            "agent",
            "transition",
            "--state",
            state,
            "--event",
            event,
            "-o",
            "json",
        ];
        args.extend(extra);
        json_of(&args)
    };
    assert_eq!(json("", "register", &[])["to"], "discovering-unbound");
    assert_eq!(json("", "register", &["--bound"])["to"], "discovering");
    let preparing = json("preparing-successful", "register", &[]);
    assert_eq!(
        (&preparing["to"], &preparing["statusInfo"]),
        (&json!("known"), &json!("Host is ready to be installed"))
    );
    let restarted = json("installing-in-progress", "register", &[]);
    assert_eq!(
        (&restarted["to"], &restarted["statusInfo"]),
        (
            &json!("error"),
            &json!("The host unexpectedly restarted during the installation")
        )
    );
    let rebooting = json(
        "installing-in-progress",
        "register",
        &["--stage", "Rebooting"],
    );
    assert_eq!(rebooting["to"], "installing-pending-user-action");
    let installed = json("installed", "register", &[]);
    assert_eq!(
        (&installed["allowed"], &installed["code"]),
        (&json!(false), &json!(409))
    );
    assert!(
        installed["error"].as_str().unwrap().starts_with(
            "Host is trying to register after the cluster has already been installed."
        )
    );
    let (code, stdout, _) = run_transition("installed", "register", &[]);
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with("installed --register--> refused (409): Host is trying to register"),
        "{stdout}"
    );

    assert_eq!(json("known", "refresh", &[])["to"], "known");
    assert_eq!(
        json("known", "refresh", &["--media-disconnected"])["to"],
        "disconnected"
    );
    assert_eq!(
        json("known-unbound", "refresh", &["--disconnected"])["to"],
        "disconnected-unbound"
    );
    let small = json(
        "known-unbound",
        "refresh",
        &["--failing", "has-min-cpu-cores"],
    );
    assert_eq!(
        (&small["to"], &small["statusInfo"]),
        (
            &json!("insufficient-unbound"),
            &json!("Host does not meet the minimum hardware requirements: has-min-cpu-cores")
        )
    );
    assert_eq!(
        json("known", "refresh", &["--failing", "machine-cidr-defined"])["to"],
        "pending-for-input"
    );
    assert_eq!(
        json("reclaiming", "refresh", &["--reclaim-timed-out"])["to"],
        "unbinding-pending-user-action"
    );
    assert_eq!(json("installing", "cancel", &[])["to"], "cancelled");
    assert_eq!(json("preparing-successful", "cancel", &[])["to"], "known");

    // A refusal in text says where the event runs from.
    let (code, stdout, _) = run_transition("insufficient-unbound", "bind", &[]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "insufficient-unbound --bind--> refused: no condition found to run transition\nbind runs from: known-unbound\n"
    );
}

#[test]
fn transition_flags_are_checked() {
    let (code, _, stderr) = run_transition("known", "bind", &["--failing", "has-min-cpu-cores"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("for --event refresh only"), "{stderr}");
    let (code, _, stderr) = run_transition("known", "refresh", &["--bound"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("for --event register only"), "{stderr}");
    let (code, _, stderr) = run_transition("known", "refresh", &["--failing", "has-min-cpu-core"]);
    assert_eq!(code, 2);
    assert!(
        stderr
            .contains("unknown validation \"has-min-cpu-core\" (did you mean has-min-cpu-cores?)"),
        "{stderr}"
    );
    let (code, _, stderr) = run_transition("installing", "register", &["--stage", "rebooting"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("(did you mean Rebooting?)"), "{stderr}");
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
        "installed --bind--> refused: no condition found to run transition\nbind runs from: known-unbound\n"
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
            "unknown event \"unbnd\" (did you mean unbind?); valid values: bind, unbind, reclaim, register, refresh, cancel"
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
        // HyperShift's agent provider binds a pool Agent to a ClusterDeployment (and an
        // ignition token) in another namespace: upstream allows it.
        ("agent-pool.yaml", "agent-cross-namespace.yaml", allowed()),
        ("agent-cross-namespace.yaml", "agent-pool.yaml", allowed()),
    ];
    updates("Agent", &rows);
}

/// The cases of upstream's `agent_admission_hook_test.go` (the Agent webhook's table), as
/// UPDATEs of one Agent in namespace `team`: (old reference, new reference, state, kind,
/// allowed).
#[test]
fn upstreams_agent_webhook_cases() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, cd: Option<(&str, &str)>, state: &str, kind: &str| {
        let agent = json!({
            "apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": {"name": "a", "namespace": "team"},
            "spec": {"role": "", "approved": false,
                     "clusterDeploymentName": cd.map(|(n, ns)| json!({"name": n, "namespace": ns}))},
            "status": {"kind": kind, "debugInfo": {"state": state}},
        });
        let path = dir.path().join(name);
        std::fs::write(&path, agent.to_string()).unwrap();
        path.to_str().unwrap().to_owned()
    };
    type Case = (
        &'static str,
        Option<(&'static str, &'static str)>,
        Option<(&'static str, &'static str)>,
        &'static str,
        &'static str,
        bool,
    );
    let cases: &[Case] = &[
        (
            "mutable, no state",
            Some(("oldName", "oldNamespace")),
            Some(("newName", "oldNamespace")),
            "",
            "",
            true,
        ),
        (
            "namespace immutable day 1 installing",
            Some(("name", "oldNamespace")),
            Some(("name", "newNamespace")),
            "installing",
            "",
            false,
        ),
        (
            "namespace immutable day 2 installing",
            Some(("name", "oldNamespace")),
            Some(("name", "newNamespace")),
            "installing",
            "AddToExistingClusterHost",
            false,
        ),
        (
            "name immutable day 2 installing",
            Some(("oldName", "oldNamespace")),
            Some(("newName", "oldNamespace")),
            "installing",
            "AddToExistingClusterHost",
            false,
        ),
        (
            "unset day 2 installing",
            Some(("name", "oldNamespace")),
            None,
            "installing",
            "AddToExistingClusterHost",
            true,
        ),
        (
            "namespace mutable, known",
            Some(("name", "oldNamespace")),
            Some(("name", "newNamespace")),
            "known",
            "",
            true,
        ),
        (
            "same reference",
            Some(("name", "oldNamespace")),
            Some(("name", "oldNamespace")),
            "installing",
            "",
            true,
        ),
        ("nil stays nil", None, None, "installing", "", true),
    ];
    for (i, (name, old, new, state, kind, want)) in cases.iter().enumerate() {
        let old = file(&format!("old-{i}.json"), *old, "", "");
        let new = file(&format!("new-{i}.json"), *new, state, kind);
        let args = [
            "agent",
            "admit",
            "--kind",
            "Agent",
            "--operation",
            "UPDATE",
            "--old",
            &old,
            "--new",
            &new,
            "-o",
            "json",
        ];
        let got = json_of(&args);
        assert_eq!(got["allowed"], json!(want), "{name}: {got}");
    }
}

#[test]
fn agent_creates() {
    creates(
        "Agent",
        &[
            ("agent-bound.yaml", allowed()),
            ("agent-cross-namespace.yaml", allowed()),
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
