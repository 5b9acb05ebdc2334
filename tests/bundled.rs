//! The payload bundled into the binary (`payloads/4.18.0`): it loads, and each inclusion rule it
//! exercises gives the verdict worked out by hand for it (payloads/README.md lists the files).

use std::collections::BTreeSet;
use std::path::Path;

use cvo::capability::{CapabilitiesSpec, Capability, set_capabilities};
use cvo::include::{DEFAULT_CLUSTER_PROFILE, InclusionConfig};
use cvo::payload::{LoadOptions, Payload, bundled_input};

fn bundled() -> Payload {
    Payload::from_input(bundled_input(), &LoadOptions::default()).unwrap()
}

/// The capabilities 4.18.0 declares, one per component it ships; in no baseline set.
const COMPONENTS: [&str; 3] = ["DeploymentTargets", "AgentInstall", "EdgeAgent"];

/// A cluster on the default baseline (`vCurrent`) with nothing added.
fn config(
    profile: &str,
    feature_set: &str,
    gates: &[&str],
    exclude: Option<&str>,
) -> InclusionConfig {
    config_with(profile, feature_set, gates, exclude, &[])
}

/// A cluster on the default baseline that adds `additional` capabilities.
fn config_with(
    profile: &str,
    feature_set: &str,
    gates: &[&str],
    exclude: Option<&str>,
    additional: &[&str],
) -> InclusionConfig {
    let gates: BTreeSet<String> = gates.iter().map(|g| g.to_string()).collect();
    // The capabilities the payload declares are known, as to `cvo start`.
    let spec = CapabilitiesSpec {
        baseline_capability_set: None,
        additional_enabled_capabilities: additional.iter().map(|c| Capability::new(*c)).collect(),
    };
    let caps = set_capabilities(&bundled().registry(), Some(&spec), &[], &gates);
    InclusionConfig {
        exclude_identifier: exclude.map(str::to_string),
        required_feature_set: Some(feature_set.into()),
        profile: Some(profile.into()),
        capabilities: Some(caps.filter()),
        overrides: None,
        enabled_feature_gates: Some(gates),
        major_version: Some(4),
        allow_unknown_capabilities: false,
    }
}

/// (file, reason) of every excluded document.
fn excluded(payload: &Payload, config: &InclusionConfig) -> Vec<(String, String)> {
    payload
        .evaluate(config)
        .into_iter()
        .filter_map(|(m, v)| v.err().map(|e| (m.file.to_string(), e.to_string())))
        .collect()
}

#[test]
fn metadata_and_documents() {
    let payload = bundled();
    assert_eq!(payload.version(), Some("4.18.0"));
    assert_eq!(payload.manifests.len(), 97);
    assert_eq!(payload.images.len(), 9);
    assert!(payload.warnings.is_empty(), "{:?}", payload.warnings);
    let deployment = payload
        .manifests
        .iter()
        .find(|m| m.file.contains("cluster-version-operator_30_deployment"))
        .unwrap();
    let text = deployment.original_text();
    assert!(
        !text.contains("{{"),
        "templates are rendered at load: {text}"
    );
    assert!(text.contains(&payload.images["cluster-version-operator"]));
}

/// The default install (`vCurrent`) runs none of the components: each of their documents is
/// excluded for its capability, and nothing else is but the three documents of the rules.
#[test]
fn default_install_runs_no_component() {
    let payload = bundled();
    let (components, rules): (Vec<_>, Vec<_>) =
        excluded(&payload, &config(DEFAULT_CLUSTER_PROFILE, "", &[], None))
            .into_iter()
            .partition(|(_, reason)| reason.starts_with("disabled capabilities: "));
    assert_eq!(rules.len(), 3, "{rules:#?}");
    assert_eq!(components.len(), 19 + 14 + 13);
    for (file, reason) in components {
        let capability = reason.trim_start_matches("disabled capabilities: ");
        assert!(COMPONENTS.contains(&capability), "{file}: {reason}");
    }
}

#[test]
fn every_component_enabled_excludes_exactly_three() {
    let payload = bundled();
    assert_eq!(
        excluded(
            &payload,
            &config_with(DEFAULT_CLUSTER_PROFILE, "", &[], None, &COMPONENTS)
        ),
        vec![
            ("0000_10_config-operator_01_nodes-TechPreviewNoUpgrade.crd.yaml".into(), "\"Default\" is required, and release.openshift.io/feature-set=CustomNoUpgrade,DevPreviewNoUpgrade,TechPreviewNoUpgrade".into()),
            ("0000_50_cluster-config-api_featureGate-SelfManagedHA-Default.yaml".into(), "unrecognized value include.release.openshift.io/self-managed-high-availability=false-except-for-the-config-operator".into()),
            ("0000_50_cluster-ingress-operator_00-cluster-role-gateway-api.yaml".into(), "feature gate GatewayAPIWithoutOLM is required but not enabled".into()),
        ]
    );
}

#[test]
fn other_configurations() {
    let payload = bundled();
    let count = |c: &InclusionConfig| payload.included(c).len();
    let all = &COMPONENTS;
    assert_eq!(
        count(&config_with("single-node-developer", "", &[], None, all)),
        93
    );
    assert_eq!(
        count(&config_with(
            DEFAULT_CLUSTER_PROFILE,
            "",
            &[],
            Some("internal-openshift-hosted"),
            all
        )),
        89
    );
    let tech_preview = excluded(
        &payload,
        &config_with(
            DEFAULT_CLUSTER_PROFILE,
            "TechPreviewNoUpgrade",
            &[],
            None,
            all,
        ),
    );
    assert_eq!(tech_preview.len(), 3);
    assert_eq!(
        tech_preview[0].1,
        "\"TechPreviewNoUpgrade\" is required, and release.openshift.io/feature-set=Default"
    );
    let gated = excluded(
        &payload,
        &config(DEFAULT_CLUSTER_PROFILE, "", &["GatewayAPIWithoutOLM"], None),
    );
    assert!(gated.iter().any(|(_, r)| r
        == "feature gate GatewayAPIWithoutOLM is enabled but manifest requires it to be disabled"));
}

/// `oc adm release extract --included --install-config` takes the enabled gates from the
/// payload's FeatureGate manifest for the profile and feature set.
#[test]
fn feature_gates_come_from_the_payload_feature_gate_manifest() {
    let payload = bundled();
    let gates = payload
        .feature_gates_for("", DEFAULT_CLUSTER_PROFILE)
        .unwrap();
    assert_eq!(gates.len(), 19);
    assert!(gates.contains("AdminNetworkPolicy"));
    assert!(!gates.contains("GatewayAPIWithoutOLM"));
    assert_eq!(
        payload.feature_gates_for("TechPreviewNoUpgrade", DEFAULT_CLUSTER_PROFILE),
        Some(BTreeSet::new())
    );
    assert_eq!(
        payload.feature_gates_for("", "single-node-developer"),
        Some(BTreeSet::new())
    );
}

/// The bundled CRD manifests are `cvo crds` (`--component deployment-targets` and
/// `--component agents` for the components'), one file each: regenerate them when the types change.
#[test]
fn bundled_crds_match_the_types() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("payloads/4.18.0");
    let cvo_files = [
        "manifests/0000_00_cluster-version-operator_01_clusterversions.crd.yaml",
        "manifests/0000_00_cluster-version-operator_01_clusteroperators.crd.yaml",
    ];
    let component_files = [
        "release-manifests/0000_50_deployment-targets_01_deploymenttargets.crd.yaml",
        "release-manifests/0000_50_deployment-targets_01_deploymenttargetclaims.crd.yaml",
        "release-manifests/0000_50_deployment-targets_01_deploymenttargetclasses.crd.yaml",
        "release-manifests/0000_50_deployment-targets_01_environments.crd.yaml",
        "release-manifests/0000_50_deployment-targets_01_gitopsdeploymentmanagedenvironments.crd.yaml",
    ];
    let agent_files = [
        "release-manifests/0000_50_agents_01_agents.crd.yaml",
        "release-manifests/0000_50_agents_01_infraenvs.crd.yaml",
        "release-manifests/0000_50_agents_01_clusterdeployments.crd.yaml",
        "release-manifests/0000_50_agents_01_agentclusterinstalls.crd.yaml",
    ];
    let cases = [
        (cvo::cluster::crds(), &cvo_files[..], "cvo crds"),
        (
            cvo::components::agents::crds::crds(),
            &agent_files[..],
            "cvo crds --component agents",
        ),
        (
            cvo::components::deployment_targets::crds::crds(),
            &component_files[..],
            "cvo crds --component deployment-targets",
        ),
    ];
    for (crds, files, command) in cases {
        assert_eq!(crds.len(), files.len(), "{command}");
        for (crd, file) in crds.iter().zip(files) {
            let on_disk = std::fs::read_to_string(root.join(file)).unwrap();
            let generated = serde_saphyr::to_string(crd).unwrap();
            assert_eq!(
                on_disk, generated,
                "{file} is stale: regenerate it from `{command}`"
            );
        }
    }
}

/// The DeploymentTarget component: 19 documents in `0000_50_deployment-targets_*` files, each
/// under the DeploymentTargets capability the payload declares (in no baseline set: a cluster
/// asks for it in `additionalEnabledCapabilities`) and included by the profiles that run a
/// CVO; a cluster without the capability gets none of them, with upstream's reason.
#[test]
fn the_deployment_targets_component_is_one_capability() {
    component_is_one_capability("0000_50_deployment-targets_", "DeploymentTargets", 19);
}

/// The agent late-binding component: 14 documents in `0000_50_agents_*` files, under the
/// AgentInstall capability, as the DeploymentTarget component.
#[test]
fn the_agents_component_is_one_capability() {
    component_is_one_capability("0000_50_agents_", "AgentInstall", 14);
}

/// The payload declares `capability` (it is known) in no baseline set.
fn is_opt_in(payload: &Payload, capability: &str) {
    use cvo::capability::CapabilitySet;
    let registry = payload.registry();
    let name = Capability::from(capability);
    assert!(registry.is_known(&name));
    for &set in CapabilitySet::all() {
        assert!(!registry.set_members(set).contains(&name), "{set}");
    }
}

fn component_is_one_capability(prefix: &str, capability: &str, documents: usize) {
    let payload = bundled();
    let component: Vec<_> = (payload.manifests.iter())
        .filter(|m| m.file.starts_with(prefix))
        .collect();
    assert_eq!(component.len(), documents);
    for m in &component {
        for (key, value) in [
            ("capability.openshift.io/name", capability),
            (
                "include.release.openshift.io/self-managed-high-availability",
                "true",
            ),
            ("include.release.openshift.io/single-node-developer", "true"),
        ] {
            assert_eq!(m.annotation(key), Some(value), "{}: {key}", m.describe());
        }
    }
    is_opt_in(&payload, capability);

    let spec = CapabilitiesSpec {
        baseline_capability_set: Some("None".into()),
        additional_enabled_capabilities: vec![],
    };
    let none = InclusionConfig {
        capabilities: Some(
            set_capabilities(&payload.registry(), Some(&spec), &[], &BTreeSet::new()).filter(),
        ),
        ..config(DEFAULT_CLUSTER_PROFILE, "", &[], None)
    };
    let excluded = excluded(&payload, &none);
    for m in &component {
        assert!(
            excluded.contains(&(
                m.file.to_string(),
                format!("disabled capabilities: {capability}")
            )),
            "{}",
            m.describe()
        );
    }
}

/// The controller Deployment runs the cvo binary (the `cluster-version-operator` image) as
/// `cvo controller deployment-targets`, restricted, with its probes on the metrics port, and
/// tells it the version its ClusterOperator must report.
#[test]
fn the_shipped_controller_deployment_runs_cvo_controller() {
    shipped_controller(
        &bundled(),
        ("cvo-deployment-targets", "deployment-targets"),
        "deployment-targets",
        &[
            "controller",
            "deployment-targets",
            "--namespace=cvo-deployment-targets",
            "--metrics-address=0.0.0.0:9099",
            "--webhook-address=0.0.0.0:8443",
            "--log-format=json",
        ],
    );
}

/// The Deployment `namespace/name` runs the cvo image with `args` as its ServiceAccount `name`,
/// restricted, probed on its metrics port, and reports the version its ClusterOperator
/// `operator` is waited for at.
fn shipped_controller(
    payload: &Payload,
    (namespace, name): (&str, &str),
    operator: &str,
    args: &[&str],
) {
    let deployment = (payload.manifests.iter())
        .find(|m| m.id.kind == "Deployment" && m.id.name == name)
        .unwrap_or_else(|| panic!("the bundled payload ships the Deployment {name}"));
    assert_eq!(deployment.id.namespace, namespace);
    let pod = &deployment.object()["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], name);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let container = &pod["containers"][0];
    assert_eq!(
        container["image"].as_str(),
        Some(payload.images["cluster-version-operator"].as_str())
    );
    let got: Vec<&str> = (container["args"].as_array().unwrap().iter())
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(got, args);
    // The controller reports $RELEASE_VERSION in its ClusterOperator, which the CVO waits for
    // at the payload's version.
    let operator = (payload.manifests.iter())
        .find(|m| m.id.kind == "ClusterOperator" && m.id.name == operator)
        .unwrap_or_else(|| panic!("the bundled payload ships the ClusterOperator {operator}"))
        .object();
    let release_version = (container["env"].as_array().unwrap().iter())
        .find(|e| e["name"] == "RELEASE_VERSION")
        .map(|e| e["value"].clone());
    assert_eq!(
        release_version.as_ref(),
        Some(&operator["status"]["versions"][0]["version"])
    );
    assert_eq!(operator["status"]["versions"][0]["name"], "operator");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
}

/// The Deployments the payload ships that run `cvo` must start: their arguments are `cvo`'s
/// own (the operator's `start`, the component's `controller deployment-targets`).
#[test]
fn the_shipped_deployments_run_cvo_commands() {
    use clap::Parser as _;
    let payload = bundled();
    for (name, command) in [
        ("cluster-version-operator", "start"),
        ("deployment-targets", "controller"),
        ("agents", "controller"),
        ("edge-agent", "controller"),
    ] {
        let deployment = (payload.manifests.iter())
            .find(|m| m.id.kind == "Deployment" && m.id.name == name)
            .unwrap_or_else(|| panic!("the bundled payload ships the Deployment {name}"));
        let object = deployment.object();
        let args: Vec<String> = object
            .pointer("/spec/template/spec/containers/0/args")
            .and_then(|a| a.as_array())
            .expect("container args")
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        assert_eq!(args[0], command);
        let parsed = cvo::cli::Cli::try_parse_from(std::iter::once("cvo".to_string()).chain(args));
        assert!(
            parsed.is_ok(),
            "{name}: {}",
            parsed.err().map(|e| e.to_string()).unwrap_or_default()
        );
    }
}

/// payloads/README.md describes the bundled payload: its table lists every file with its number
/// of documents, and its counts are the payload's. It refers to nothing by an absolute path.
#[test]
fn the_payloads_readme_matches_the_payload() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("payloads/README.md"))
            .unwrap();
    let payload = bundled();
    let mut actual: std::collections::BTreeMap<String, usize> = Default::default();
    for m in &payload.manifests {
        *actual.entry(m.path()).or_insert(0) += 1;
    }
    let table: std::collections::BTreeMap<String, usize> = readme
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let file = cells.first()?.strip_prefix("| `")?.strip_suffix('`')?;
            Some((file.to_string(), cells.get(1)?.parse().ok()?))
        })
        .filter(|(file, _)| {
            file.starts_with("manifests/") || file.starts_with("release-manifests/")
        })
        .collect();
    assert_eq!(table, actual);
    let count = |dir: &str| {
        payload
            .manifests
            .iter()
            .filter(|m| m.path().starts_with(dir))
            .count()
    };
    let included = payload
        .included(&config(DEFAULT_CLUSTER_PROFILE, "", &[], None))
        .len();
    let files: BTreeSet<String> = payload
        .included(&config(DEFAULT_CLUSTER_PROFILE, "", &[], None))
        .iter()
        .map(|m| m.path())
        .collect();
    for claim in [
        format!("`manifests/` ({} documents)", count("manifests/")),
        format!("{} hand-written documents", count("release-manifests/")),
        format!("**{included} of {}** documents", payload.manifests.len()),
        format!("writes the {included} into {} files", files.len()),
    ] {
        assert!(
            readme.contains(&claim),
            "payloads/README.md should say {claim:?}"
        );
    }
    assert!(
        !readme.contains("/work/"),
        "an absolute path outside the repository"
    );
}

/// The Open Horizon edge cluster agent: the `0000_50_openhorizon-agent_0N_*` files are what
/// `cvo edge agent-install --write-payload` renders for the default install (cluster-scoped, in
/// `openhorizon-agent`) with the image the payload's `image-references` pins under
/// `openhorizon-agent`, without what runs the agent; the `1N` files are its operator
/// (hand-written), which runs that image once the hub settings are there. Every document is
/// under the EdgeAgent capability, in no baseline set.
#[test]
fn the_edge_agent_files_are_the_renderers_and_its_operator() {
    use cvo::components::edge::agent_install::{CAPABILITY, payload_files, payload_settings};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("payloads/4.18.0/release-manifests");
    let payload = bundled();
    let image = payload.images["openhorizon-agent"].clone();
    let files = payload_files(&payload_settings(&image)).unwrap();
    let on_disk: BTreeSet<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("0000_50_openhorizon-agent_0"))
        .collect();
    let rendered: BTreeSet<String> = files.iter().map(|f| f.name.clone()).collect();
    assert_eq!(on_disk, rendered);
    for file in &files {
        let text = std::fs::read_to_string(root.join(&file.name)).unwrap();
        assert_eq!(
            text, file.text,
            "{} is stale: regenerate it with `cvo edge agent-install --write-payload payloads/4.18.0/release-manifests --image {image}`",
            file.name
        );
    }

    let component: Vec<_> = (payload.manifests.iter())
        .filter(|m| m.file.starts_with("0000_50_openhorizon-agent_"))
        .collect();
    assert_eq!(component.len(), 13);
    for m in &component {
        assert_eq!(
            m.annotation("capability.openshift.io/name"),
            Some(CAPABILITY)
        );
    }
    let kinds: Vec<&str> = component.iter().map(|m| m.gvk.kind.as_str()).collect();
    assert!(kinds.contains(&"ClusterRoleBinding"), "{kinds:?}");
    // Nothing that runs the agent: the operator makes it.
    let workloads: Vec<String> = (component.iter())
        .filter(|m| ["Deployment", "CronJob", "Pod", "Job"].contains(&m.gvk.kind.as_str()))
        .map(|m| m.describe())
        .collect();
    assert_eq!(workloads.len(), 1, "{workloads:?}");
    is_opt_in(&payload, CAPABILITY);

    // The operator: `cvo controller edge-agent` from the cvo image, running the payload's agent
    // image, reporting the version its ClusterOperator is waited for at.
    shipped_controller(
        &payload,
        ("openhorizon-agent", "edge-agent"),
        "edge-agent",
        &[
            "controller",
            "edge-agent",
            "--namespace=openhorizon-agent",
            "--metrics-address=0.0.0.0:9099",
            &format!("--agent-image={image}"),
            "--log-format=json",
        ],
    );
}
