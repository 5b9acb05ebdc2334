//! `cvo plan` on the real 4.14 → 4.15 upgrade corpus, checked against an independent Python
//! oracle (tests/oracle/plan.py), and its text output on a small fixture.

mod support;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// A copy of one side of the upgrade corpus with release-metadata added (the corpus has none).
fn side(corpus: &Path, name: &str, version: &str, into: &Path) {
    support::copy_dir(
        &corpus.join("openshift-upgrade").join(name),
        &into.join(name),
    );
    let metadata = format!(r#"{{"kind":"cincinnati-metadata-v0","version":"{version}"}}"#);
    fs::write(
        into.join(name).join("release-manifests/release-metadata"),
        metadata,
    )
    .unwrap();
}

fn cvo_plan(dir: &Path, extra: &[&str]) -> Value {
    let out = assert_cmd::Command::cargo_bin("cvo")
        .unwrap()
        .args(["plan", "-o", "json", "--from"])
        .arg(dir.join("old"))
        .arg("--to")
        .arg(dir.join("new"))
        .args(extra)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

fn ids(plan: &Value, key: &str) -> BTreeSet<String> {
    plan[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}/{}/{}/{}",
                r["group"].as_str().unwrap(),
                r["kind"].as_str().unwrap(),
                r["namespace"].as_str().unwrap(),
                r["name"].as_str().unwrap()
            )
        })
        .collect()
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

const KNOWN: &[&str] = &[
    "baremetal",
    "Console",
    "Insights",
    "marketplace",
    "Storage",
    "openshift-samples",
    "CSISnapshot",
    "NodeTuning",
    "MachineAPI",
    "Build",
    "DeploymentConfig",
    "ImageRegistry",
    "OperatorLifecycleManager",
    "OperatorLifecycleManagerV1",
    "CloudCredential",
    "Ingress",
    "CloudControllerManager",
];
const V4_14: &[&str] = &[
    "baremetal",
    "marketplace",
    "openshift-samples",
    "MachineAPI",
    "Console",
    "Insights",
    "Storage",
    "CSISnapshot",
    "NodeTuning",
    "Build",
    "DeploymentConfig",
    "ImageRegistry",
];

fn oracle(dir: &Path, enabled: &[&str]) -> Option<Value> {
    let config = serde_json::json!({"profile": "self-managed-high-availability", "featureSet": "", "known": KNOWN, "enabled": enabled, "major": 4});
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/plan.py");
    let output = Command::new("python3")
        .arg(script)
        .arg(dir.join("old"))
        .arg(dir.join("new"))
        .arg(config.to_string())
        .output();
    match output {
        Ok(o) if o.status.success() => Some(serde_json::from_slice(&o.stdout).unwrap()),
        other => {
            assert!(
                std::env::var("CVO_REQUIRE_CORPUS").as_deref() != Ok("1"),
                "the plan oracle needs python3 with PyYAML: {other:?}"
            );
            None
        }
    }
}

#[test]
fn upgrade_corpus_for_clusters_on_v4_14_and_none() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    side(&corpus, "old", "4.14.0", tmp.path());
    side(&corpus, "new", "4.15.0", tmp.path());
    // (baseline, enabled capabilities, left behind, create, update, delete, unchanged)
    type Case<'a> = (
        &'a str,
        &'a [&'a str],
        &'a [&'a str],
        usize,
        usize,
        usize,
        usize,
    );
    let cases: [Case; 2] = [
        (
            "v4.14",
            V4_14,
            &[
                "cloudcredential.openshift.io/CredentialsRequest/openshift-cloud-credential-operator/openshift-machine-api-ovirt",
                "rbac.authorization.k8s.io/ClusterRoleBinding//default-account-cluster-network-operator",
            ],
            19,
            168,
            12,
            499,
        ),
        (
            "None",
            &[],
            &[
                "rbac.authorization.k8s.io/ClusterRoleBinding//default-account-cluster-network-operator",
            ],
            16,
            122,
            10,
            251,
        ),
    ];
    for (baseline, enabled, left_behind, create, update, delete, unchanged) in cases {
        let plan = cvo_plan(tmp.path(), &["--capabilities-baseline", baseline]);
        // Both clusters manage OLM's and the cloud-credential operator's resources, which 4.15
        // moves into capabilities (SOURCES.md of the corpus): both get implicitly enabled.
        assert_eq!(
            strings(&plan["implicitlyEnabledCapabilities"]),
            ["CloudCredential", "OperatorLifecycleManager"]
                .map(String::from)
                .into()
        );
        assert_eq!(
            ids(&plan, "leftBehind"),
            left_behind.iter().map(|s| s.to_string()).collect(),
            "{baseline}"
        );
        let counts = (
            ids(&plan, "create").len(),
            plan["update"].as_array().unwrap().len(),
            ids(&plan, "delete").len(),
            plan["unchanged"].as_u64().unwrap() as usize,
        );
        assert_eq!(counts, (create, update, delete, unchanged), "{baseline}");
        assert!(
            plan["reasons"]["CloudCredential"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "cloud-credential-operator" && c["kind"] == "Deployment")
        );
        assert!(
            plan["update"][0]["diff"]
                .as_str()
                .unwrap()
                .starts_with("--- current/")
        );
        if let Some(independent) = oracle(tmp.path(), enabled) {
            assert_eq!(
                strings(&independent["implicit"]),
                strings(&plan["implicitlyEnabledCapabilities"]),
                "{baseline}"
            );
            assert_eq!(
                strings(&independent["update"]),
                ids(&plan, "update"),
                "{baseline}: update"
            );
            for key in ["create", "delete", "leftBehind"] {
                assert_eq!(
                    strings(&independent[key]),
                    ids(&plan, key),
                    "{baseline}: {key}"
                );
            }
            assert_eq!(
                independent["unchanged"], plan["unchanged"],
                "{baseline}: unchanged"
            );
        }
    }
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\n  namespace: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\nEXTRAdata:\n  k: VALUE\n";

fn cm(name: &str, extra: &str, value: &str) -> String {
    CM.replace("NAME", name)
        .replace("EXTRA", extra)
        .replace("VALUE", value)
}

fn fixture(dir: &Path, version: &str, files: &[(&str, String)]) {
    let rm = dir.join("release-manifests");
    fs::create_dir_all(&rm).unwrap();
    fs::write(
        rm.join("release-metadata"),
        format!(r#"{{"kind":"cincinnati-metadata-v0","version":"{version}"}}"#),
    )
    .unwrap();
    for (name, text) in files {
        fs::write(rm.join(name), text).unwrap();
    }
}

/// The text output, whole.
#[test]
fn text_output_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(
        &tmp.path().join("old"),
        "4.17.0",
        &[
            ("0000_10_a_x.yaml", cm("kept", "", "1")),
            ("0000_10_a_y.yaml", cm("changed", "", "old")),
            ("0000_10_a_z.yaml", cm("dropped", "", "1")),
            ("0000_50_console_x.yaml", cm("console-config", "", "1")),
        ],
    );
    fixture(
        &tmp.path().join("new"),
        "4.18.0",
        &[
            ("0000_10_a_x.yaml", cm("kept", "", "1")),
            ("0000_10_a_y.yaml", cm("changed", "", "new")),
            (
                "0000_10_a_w.yaml",
                cm("added", "    release.openshift.io/delete: \"true\"\n", "1")
                    .replace("name: added", "name: gone"),
            ),
            (
                "0000_50_console_x.yaml",
                cm(
                    "console-config",
                    "    capability.openshift.io/name: Console\n",
                    "1",
                ),
            ),
            ("0000_60_b_x.yaml", cm("fresh", "", "1")),
        ],
    );
    let out = assert_cmd::Command::cargo_bin("cvo")
        .unwrap()
        .args([
            "plan",
            "--diff",
            "--capabilities-baseline",
            "None",
            "--from",
        ])
        .arg(tmp.path().join("old"))
        .arg("--to")
        .arg(tmp.path().join("new"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let expected = "\
Upgrade 4.17.0 -> 4.18.0

Implicitly enabled capabilities: Console
  Console: 1 managed resource(s) move into it:
    ConfigMap ns/console-config (0000_50_console_x.yaml)
ImplicitlyEnabledCapabilities=True CapabilitiesImplicitlyEnabled: The following capabilities could not be disabled: Console
Enabled after the upgrade: Console

Create (1):
  ConfigMap ns/fresh (0000_60_b_x.yaml)

Update (2):
  ConfigMap ns/changed (0000_10_a_y.yaml)
    --- current/release-manifests/0000_10_a_y.yaml
    +++ new/release-manifests/0000_10_a_y.yaml
    @@ -6,4 +6,4 @@
       annotations:
         include.release.openshift.io/self-managed-high-availability: \"true\"
     data:
    -  k: old
    +  k: new
  ConfigMap ns/console-config (0000_50_console_x.yaml)
    --- current/release-manifests/0000_50_console_x.yaml
    +++ new/release-manifests/0000_50_console_x.yaml
    @@ -5,5 +5,6 @@
       namespace: ns
       annotations:
         include.release.openshift.io/self-managed-high-availability: \"true\"
    +    capability.openshift.io/name: Console
     data:
       k: 1

Delete (1):
  ConfigMap ns/gone (0000_10_a_w.yaml)

Left behind (1): managed today, not by the new payload; nothing will delete them:
  ConfigMap ns/dropped (0000_10_a_z.yaml): removed from the payload

Unchanged: 1
";
    assert_eq!(String::from_utf8(out).unwrap(), expected);
}

/// The bundled upgrade pair (payloads/README.md): for a cluster on baseline None with Console,
/// 4.17.0 → 4.18.0 enables MachineAPI implicitly, grows Console but not baremetal, brings the
/// DeploymentTargets capability without enabling it, deletes the legacy Service and leaves
/// nothing behind. Both payloads validate clean.
#[test]
fn bundled_upgrade_pair() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("payloads");
    for version in ["4.17.0", "4.18.0"] {
        assert_cmd::Command::cargo_bin("cvo")
            .unwrap()
            .args(["validate", "--deny-warnings", "--payload"])
            .arg(root.join(version))
            .assert()
            .success();
    }
    let plan = bundled_plan("Console");
    assert_eq!(
        strings(&plan["implicitlyEnabledCapabilities"]),
        BTreeSet::from(["MachineAPI".to_string()])
    );
    let set = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        ids(&plan, "create"),
        set(&[
            "/Namespace//openshift-storage-migration",
            "/ServiceAccount/openshift-storage-migration/storage-migrator",
            "rbac.authorization.k8s.io/ClusterRoleBinding//system:openshift:storage-migrator",
            "batch/Job/openshift-storage-migration/migrate-config-storage-4-18",
            "/ServiceAccount/openshift-console-operator/console-operator",
            // The monitoring stack's access and upstream's alerts (manifests/ of 4.18.0).
            "rbac.authorization.k8s.io/Role/openshift-cluster-version/prometheus-k8s",
            "rbac.authorization.k8s.io/RoleBinding/openshift-cluster-version/prometheus-k8s",
            "monitoring.coreos.com/PrometheusRule/openshift-cluster-version/cluster-version-operator",
            // The CVO reads the cluster's pull secret (manifests/ of 4.18.0).
            "rbac.authorization.k8s.io/Role/openshift-config/cluster-version-operator-pull-secret",
            "rbac.authorization.k8s.io/RoleBinding/openshift-config/cluster-version-operator-pull-secret",
        ])
    );
    assert_eq!(
        ids(&plan, "delete"),
        set(&["/Service/openshift-etcd-operator/etcd-operator-legacy-metrics"])
    );
    // The CVO's ClusterRole grows (validatingwebhookconfigurations), its leader-election Role and
    // ServiceMonitor change (monitoring over TLS), besides the 4.17.0 ones.
    assert_eq!(ids(&plan, "update").len(), 7, "{:#}", plan["update"]);
    assert!(plan["leftBehind"].as_array().unwrap().is_empty());
    // AgentInstall, DeploymentTargets and EdgeAgent arrive with 4.18.0, disabled on this cluster: none of
    // them is created.
    assert_eq!(
        plan["newCapabilities"],
        serde_json::json!(["AgentInstall", "DeploymentTargets", "EdgeAgent"])
    );
    for capability in ["AgentInstall", "DeploymentTargets", "EdgeAgent"] {
        assert!(
            !strings(&plan["enabledCapabilities"]).contains(capability),
            "{}",
            plan["enabledCapabilities"]
        );
    }
}

/// 4.17.0 → 4.18.0 with `AgentInstall` enabled applies the agents component's CRDs, which stand
/// in for hive's and assisted-service's: the plan says so, one warning each.
#[test]
fn plan_flags_the_crds_of_other_operators() {
    let plan = bundled_plan("AgentInstall");
    let warnings: Vec<&str> = (plan["warnings"].as_array().unwrap().iter())
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 4, "{warnings:#?}");
    assert!(
        warnings.iter().any(|w| w.starts_with(
            "4.18.0 applies CustomResourceDefinition clusterdeployments.hive.openshift.io (0000_50_agents_01_clusterdeployments.crd.yaml) of hive.openshift.io, hive's API group: where hive runs, the CVO leaves hive's CRD alone rather than replace it"
        )),
        "{warnings:#?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("agents.agent-install.openshift.io")
                && w.contains("assisted-service's API group")),
        "{warnings:#?}"
    );
}

/// `cvo plan -o json` of the bundled pair, 4.17.0 → 4.18.0, for a cluster on baseline None
/// with `capability` enabled.
fn bundled_plan(capability: &str) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("payloads");
    let out = assert_cmd::Command::cargo_bin("cvo")
        .unwrap()
        .args(["plan", "-o", "json", "--from"])
        .arg(root.join("4.17.0"))
        .arg("--to")
        .arg(root.join("4.18.0"))
        .args(["--capabilities-baseline", "None"])
        .args(["--additional-capabilities", capability])
        // AgentInstall is the new payload's own capability (4.17.0 does not know it).
        .arg("--allow-unknown-capabilities")
        .env_remove("CLUSTER_PROFILE")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}
