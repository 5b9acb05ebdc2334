//! The real OpenShift manifests in `../shared/corpus`: loading, inclusion counts checked against
//! an independent oracle, and implicit capability enablement across the 4.14 → 4.15 upgrade.
//!
//! Skipped with a message when the corpus is absent, unless `CVO_REQUIRE_CORPUS=1`.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use cvo::capability::implicit::{Side, implicitly_enabled};
use cvo::capability::{CapabilitiesSpec, Capability, Registry, set_capabilities};
use cvo::include::{DEFAULT_CLUSTER_PROFILE, InclusionConfig};
use cvo::manifest::Manifest;
use cvo::payload::{LoadOptions, Payload, read_directory};
use support::{corpus, load};

/// A cluster configuration as the CLI's flags would build it.
fn config(profile: &str, feature_set: &str, baseline: &str, major: Option<u64>) -> InclusionConfig {
    let spec = CapabilitiesSpec {
        baseline_capability_set: Some(baseline.to_string()),
        additional_enabled_capabilities: vec![],
    };
    let caps = set_capabilities(&Registry::standard(), Some(&spec), &[], &BTreeSet::new());
    InclusionConfig {
        exclude_identifier: None,
        required_feature_set: Some(feature_set.to_string()),
        profile: Some(profile.to_string()),
        capabilities: Some(caps.filter()),
        overrides: None,
        enabled_feature_gates: Some(BTreeSet::new()),
        major_version: major,
        allow_unknown_capabilities: false,
    }
}

#[test]
fn every_corpus_document_loads() {
    let Some(root) = corpus() else { return };
    for (dir, documents) in [
        ("openshift-payload", 988),
        ("openshift-upgrade/old", 736),
        ("openshift-upgrade/new", 763),
    ] {
        let payload = load(&root.join(dir));
        // STATS.md / SOURCES.md count 988, 735 and 762 YAML documents; the upgrade corpora also hold
        // the CVO Deployment, a Go template that only parses after rendering (as the CVO does).
        assert_eq!(payload.manifests.len(), documents, "{dir}");
    }
}

/// The hash fixtures of the upstream CVO's own tests (spec §1.7).
#[test]
fn version_hash_matches_upstream_fixtures() {
    let Some(root) = corpus() else { return };
    for (fixture, expected) in [
        ("payloadtest", "DL-FFQ2Uem8="),
        ("payloadtestarch", "fvnVhLw92pE="),
    ] {
        let payload = load(&root.join("cvo-testdata").join(fixture));
        let config = InclusionConfig {
            exclude_identifier: Some("exclude-test".into()),
            profile: Some(DEFAULT_CLUSTER_PROFILE.into()),
            ..Default::default()
        };
        assert_eq!(
            cvo::hash::version_hash(payload.included(&config)),
            expected,
            "{fixture}"
        );
    }
}

/// The included documents of each config, by the Python oracle (one parse for all configs).
fn oracle(payload_dir: &Path, configs: &[&InclusionConfig]) -> Option<Vec<BTreeSet<String>>> {
    let names = |set: &BTreeSet<Capability>| {
        set.iter()
            .map(|c| c.as_str().to_string())
            .collect::<Vec<_>>()
    };
    let arg: Vec<serde_json::Value> = configs
        .iter()
        .map(|config| {
            let caps = config.capabilities.as_ref().unwrap();
            serde_json::json!({
                "profile": config.profile, "featureSet": config.required_feature_set, "gates": [],
                "known": names(&caps.known_capabilities), "enabled": names(&caps.enabled_capabilities),
            })
        })
        .collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/included.py");
    let output = match Command::new("python3")
        .arg(script)
        .arg(payload_dir)
        .arg(serde_json::Value::from(arg).to_string())
        .output()
    {
        Ok(o) if o.status.success() => o,
        other => {
            let why = format!(
                "python3 with PyYAML is needed for the inclusion oracle (hack/install-deps.sh installs it): {other:?}"
            );
            assert!(
                std::env::var("CVO_REQUIRE_CORPUS").as_deref() != Ok("1"),
                "{why}"
            );
            eprintln!("skipping the oracle comparison: {why}");
            return None;
        }
    };
    Some(serde_json::from_slice(&output.stdout).expect("oracle prints JSON lists"))
}

fn key(m: &Manifest) -> String {
    format!("{}#{}", m.path(), m.index)
}

/// Included/excluded counts for the scenarios release engineers ask about, pinned, and each
/// checked document by document against the independent Python oracle.
#[test]
fn inclusion_counts_on_the_real_payload() {
    let Some(root) = corpus() else { return };
    let dir = root.join("openshift-payload");
    let payload = load(&dir);
    let smha = DEFAULT_CLUSTER_PROFILE;
    let scenarios = [
        (
            "default install (SMHA, Default, vCurrent)",
            config(smha, "", "vCurrent", None),
            827,
        ),
        ("baseline None", config(smha, "", "None", None), 339),
        ("baseline v4.11", config(smha, "", "v4.11", None), 442),
        (
            "single-node-developer",
            config("single-node-developer", "", "vCurrent", None),
            584,
        ),
        (
            "TechPreviewNoUpgrade",
            config(smha, "TechPreviewNoUpgrade", "vCurrent", None),
            834,
        ),
    ];
    let independent = oracle(&dir, &scenarios.iter().map(|s| &s.1).collect::<Vec<_>>());
    for (i, (name, config, expected)) in scenarios.iter().enumerate() {
        let included: BTreeSet<String> = payload.included(config).into_iter().map(key).collect();
        assert_eq!(included.len(), *expected, "{name}: included count");
        assert_eq!(
            payload.manifests.len() - included.len(),
            988 - expected,
            "{name}: excluded count"
        );
        if let Some(independent) = independent.as_ref().map(|all| &all[i]) {
            let only_cvo: Vec<_> = included.difference(independent).collect();
            let only_oracle: Vec<_> = independent.difference(&included).collect();
            assert_eq!(independent.len(), *expected, "{name}: oracle count");
            assert!(
                only_cvo.is_empty() && only_oracle.is_empty(),
                "{name}: cvo-only {only_cvo:?}, oracle-only {only_oracle:?}"
            );
        }
    }
}

/// A copy of an upgrade corpus side with release-metadata added (the corpus has none).
fn with_metadata(src: &Path, version: &str) -> (tempfile::TempDir, Payload) {
    let tmp = tempfile::tempdir().unwrap();
    support::copy_dir(src, tmp.path());
    let rm = tmp.path().join("release-manifests");
    std::fs::write(
        rm.join("release-metadata"),
        format!(r#"{{"kind":"cincinnati-metadata-v0","version":"{version}"}}"#),
    )
    .unwrap();
    let input = read_directory(tmp.path()).unwrap();
    let payload = Payload::from_input(input, &LoadOptions::default()).unwrap();
    (tmp, payload)
}

/// What spec §4.2 says must happen to the resources SOURCES.md lists: for each resource, every
/// new variant that is not included under `enabled` gains the capabilities it names that an
/// included old variant did not name and that are not enabled. Variants whose file the load-time
/// filter (profile, feature set) drops are not in the payload the CVO works with.
fn expected_from_sources(
    sources: &str,
    enabled: &BTreeSet<String>,
    loaded_files: &BTreeSet<String>,
) -> BTreeSet<String> {
    let caps = |cell: &str| -> Vec<Vec<String>> {
        cell.split("<br>")
            .filter_map(|variant| {
                let value = variant.split('`').nth(1)?;
                let file = variant
                    .split('`')
                    .nth(2)?
                    .trim()
                    .strip_prefix('(')?
                    .split([',', ')'])
                    .next()?;
                loaded_files.contains(file).then_some(value)
            })
            .map(|v| {
                if v == "(none)" {
                    vec![]
                } else {
                    v.split('+').map(str::to_string).collect()
                }
            })
            .collect()
    };
    let included = |c: &Vec<String>| c.iter().all(|cap| enabled.contains(cap));
    let mut expected = BTreeSet::new();
    for line in sources
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("` ("))
    {
        let cells: Vec<&str> = line.split(" | ").collect();
        let (old, new) = (caps(cells[4]), caps(cells[5]));
        for u in new.iter().filter(|u| !included(u)) {
            for c in old.iter().filter(|c| included(c)) {
                expected.extend(
                    u.iter()
                        .filter(|cap| !c.contains(cap) && !enabled.contains(*cap))
                        .cloned(),
                );
            }
        }
    }
    expected
}

#[test]
fn implicit_capabilities_across_the_4_14_to_4_15_upgrade() {
    let Some(root) = corpus() else { return };
    let upgrade = root.join("openshift-upgrade");
    let (_old_dir, old) = with_metadata(&upgrade.join("old"), "4.14.0");
    let (_new_dir, new) = with_metadata(&upgrade.join("new"), "4.15.0");
    for baseline in ["v4.14", "None"] {
        let load_filter = |major| InclusionConfig {
            capabilities: None,
            ..config(DEFAULT_CLUSTER_PROFILE, "", baseline, Some(major))
        };
        let old_loaded: Vec<&Manifest> = old.included(&load_filter(4));
        let new_loaded: Vec<&Manifest> = new.included(&load_filter(4));
        let cluster = config(DEFAULT_CLUSTER_PROFILE, "", baseline, Some(4));
        let apply = InclusionConfig {
            exclude_identifier: None,
            required_feature_set: None,
            profile: None,
            ..cluster.clone()
        };
        let result = implicitly_enabled(
            Side {
                manifests: &new_loaded,
                config: &apply,
            },
            Side {
                manifests: &old_loaded,
                config: &apply,
            },
            &BTreeSet::new(),
        );
        let got: BTreeSet<String> = result
            .capabilities
            .iter()
            .map(|c| c.as_str().to_string())
            .collect();
        let enabled: BTreeSet<String> = cluster
            .capabilities
            .unwrap()
            .enabled_capabilities
            .iter()
            .map(|c| c.as_str().to_string())
            .collect();
        let sources = std::fs::read_to_string(upgrade.join("SOURCES.md")).unwrap();
        let loaded_files: BTreeSet<String> = old_loaded
            .iter()
            .chain(&new_loaded)
            .map(|m| m.file.to_string())
            .collect();
        assert_eq!(
            got,
            expected_from_sources(&sources, &enabled, &loaded_files),
            "baseline {baseline}"
        );
        // Both clusters manage OLM's and the cloud-credential operator's resources, which 4.14
        // ships without a capability and 4.15 moves into one: the documented pitfall.
        let want: BTreeSet<String> = ["CloudCredential", "OperatorLifecycleManager"]
            .map(String::from)
            .into();
        assert_eq!(got, want, "baseline {baseline}");
    }
}

#[test]
fn registry_knows_every_capability_the_corpus_uses() {
    let Some(root) = corpus() else { return };
    let payload = load(&root.join("openshift-payload"));
    let registry = Registry::standard();
    let unknown: BTreeSet<String> = payload
        .manifests
        .iter()
        .flat_map(|m| m.capabilities().unwrap_or_default())
        .filter(|c| !registry.is_known(c))
        .map(|c| c.as_str().to_string())
        .collect();
    assert!(unknown.is_empty(), "{unknown:?}");
}

/// Every version schema of the real payload's CRDs compiles for the preflight's check of stored
/// objects (`cvo::crd_schema`), and cel-rust compiles their validation rules.
#[test]
fn every_corpus_crd_schema_compiles() {
    let Some(root) = corpus() else { return };
    let payload = load(&root.join("openshift-payload"));
    let (mut schemas, mut failed) = (0, Vec::new());
    let (mut rules, mut unevaluated) = (0, 0);
    for m in &payload.manifests {
        if !m.gvk.is("apiextensions.k8s.io", "CustomResourceDefinition") {
            continue;
        }
        let object = m.object();
        let versions = object.pointer("/spec/versions").and_then(|v| v.as_array());
        for version in versions.into_iter().flatten() {
            let Some(schema) = version.pointer("/schema/openAPIV3Schema") else {
                continue;
            };
            schemas += 1;
            rules += schema.to_string().matches("\"rule\":").count();
            match cvo::crd_schema::Schema::new(schema) {
                Ok(s) => unevaluated += s.unevaluated_rules(),
                Err(e) => failed.push(format!("{} ({}): {e}", m.id.name, m.file)),
            }
        }
    }
    eprintln!("{schemas} schemas, {rules} validation rules, {unevaluated} not evaluated");
    assert!(schemas > 200, "{schemas}");
    assert!(failed.is_empty(), "{failed:#?}");
    // Every rule compiles (transition rules, a quarter of them, do not apply to a create);
    // those needing Kubernetes' own CEL libraries fail when run and are counted then.
    assert!(rules > 3000 && unevaluated == 0, "{unevaluated} of {rules}");
}
