//! The layout docs/architecture.md describes, checked: the pure core imports no I/O module and does no
//! I/O, and the operator's modules import each other without cycles.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Plain functions over plain data: no file system, network, clock-reading runtime, kube
/// client or environment.
const PURE: &[&str] = &[
    "src/yaml/resolve.rs",
    "src/yaml/build.rs",
    "src/yaml/duplicates.rs",
    "src/yaml/gojson.rs",
    "src/yaml/node.rs",
    "src/manifest.rs",
    "src/include.rs",
    "src/capability/implicit.rs",
    "src/capability/names.rs",
    "src/capability/registry.rs",
    "src/capability/status.rs",
    "src/capability/types.rs",
    "src/capability/validate.rs",
    "src/graph/build.rs",
    "src/graph/breakers.rs",
    "src/graph/runlevel.rs",
    "src/graph/schedule.rs",
    "src/hash.rs",
    "src/payload/template.rs",
    "src/payload/metadata.rs",
    "src/release/mod.rs",
    "src/release/pullspec.rs",
    "src/release/references.rs",
    "src/release/elf.rs",
    "src/release/diff.rs",
    "src/release/mirror.rs",
    "src/release/digest_mirrors.rs",
    "src/plan.rs",
    "src/crd_schema.rs",
    "src/preflight/mod.rs",
    "src/preflight/checks.rs",
    "src/preflight/schema.rs",
    "src/operator/preflight_status.rs",
    "src/updates/preflight_request.rs",
    "src/ownership.rs",
    "src/suggest.rs",
    "src/retry.rs",
    "src/cluster/validation.rs",
    "src/updates/mod.rs",
    "src/updates/graph.rs",
    "src/updates/request.rs",
    "src/updates/recommend.rs",
    "src/updates/retrieval.rs",
    "src/updates/alerts.rs",
    "src/verify/mod.rs",
    "src/verify/atomic.rs",
    "src/verify/config.rs",
    "src/verify/openpgp.rs",
    "src/verify/release.rs",
    "src/operator/outcome.rs",
    "src/operator/cluster_metrics.rs",
    "src/operator/pass.rs",
    "src/operator/task.rs",
    "src/operator/desired.rs",
    "src/operator/precondition.rs",
    "src/operator/health.rs",
    "src/operator/summary.rs",
    "src/operator/status.rs",
    "src/operator/update_risks.rs",
    "src/components/deployment_targets/types.rs",
    "src/components/deployment_targets/keys.rs",
    "src/components/deployment_targets/model.rs",
    "src/components/deployment_targets/meta.rs",
    "src/components/deployment_targets/phase.rs",
    "src/components/deployment_targets/conditions.rs",
    "src/components/deployment_targets/matching.rs",
    "src/components/deployment_targets/binder.rs",
    "src/components/deployment_targets/reclaim.rs",
    "src/components/deployment_targets/provisioner/mod.rs",
    "src/components/deployment_targets/provisioner/namespace.rs",
    "src/components/deployment_targets/provisioner/devsandbox.rs",
    "src/components/deployment_targets/space_request.rs",
    "src/components/deployment_targets/apiserver.rs",
    "src/components/deployment_targets/offline.rs",
    "src/components/deployment_targets/load.rs",
    "src/components/deployment_targets/class.rs",
    "src/components/deployment_targets/fields.rs",
    "src/components/deployment_targets/parameters.rs",
    "src/components/agents/keys.rs",
    "src/components/agents/types.rs",
    "src/components/agents/state.rs",
    "src/components/agents/validation.rs",
    "src/components/agents/conditions.rs",
    "src/components/agents/binding.rs",
    "src/components/agents/webhook.rs",
    "src/components/agents/reconcile.rs",
    "src/components/agents/discovery.rs",
    "src/components/agents/hub.rs",
    "src/host/operator_status.rs",
    "src/host/tls_settings.rs",
    "src/host/tls_profile.rs",
    "src/host/backoff.rs",
    "src/components/edge/version.rs",
    "src/components/edge/properties.rs",
    "src/components/edge/constraints/mod.rs",
    "src/components/edge/constraints/lexer.rs",
    "src/components/edge/constraints/eval.rs",
    "src/components/edge/nmp.rs",
    "src/components/edge/nmp_status.rs",
    "src/components/edge/agent_files.rs",
    "src/components/edge/nmp_worker.rs",
];

/// What a pure file may not name outside its tests.
const IO: &[&str] = &[
    "std::fs",
    "std::env::var",
    "std::net",
    "std::process",
    "tokio",
    "kube::Client",
    "kube::api::Api",
    "Api<",
    "hyper::",
    "oci_client",
    "reqwest",
    "verify::store",
    "super::store",
    "payload::source",
    "read_input",
    "read_directory",
    "crate::oci",
    "crate::cli",
    "operator::apply",
    "operator::run",
    "operator::retrieve",
    "operator::lease",
    "crate::host",
    "operator::metrics",
    "super::apply",
    "super::run",
    "super::retrieve",
    "super::lease",
    "super::metrics",
];

/// A file's code before its `#[cfg(test)]` module, without comments.
fn code(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    let body = text.split("#[cfg(test)]").next().unwrap_or_default();
    body.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_pure_core_does_no_io() {
    let mut found = Vec::new();
    for path in PURE {
        let code = code(path);
        for needle in IO {
            if code.contains(needle) {
                found.push(format!("{path}: {needle}"));
            }
        }
    }
    assert!(found.is_empty(), "pure files naming I/O: {found:#?}");
}

#[test]
fn operator_modules_import_each_other_without_cycles() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/operator");
    let modules: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some(name.strip_suffix(".rs")?.to_string()).filter(|n| n != "mod")
        })
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for module in &modules {
        let code = code(&format!("src/operator/{module}.rs"));
        let uses = modules.iter().filter(|other| {
            *other != module
                && (code.contains(&format!("super::{other}::"))
                    || code.contains(&format!("super::{other}::{{"))
                    || code.contains(&format!("operator::{other}::")))
        });
        edges.insert(module.clone(), uses.cloned().collect());
    }
    // Depth-first search for a back edge.
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for module in &modules {
        let cycle = visit(module, &edges, &mut Vec::new(), &mut done);
        assert_eq!(cycle, None, "an import cycle; edges: {edges:#?}");
    }
    // The executor and the loop use the pure modules, never the other way around.
    assert!(edges["apply"].contains("task"), "{edges:#?}");
    assert!(!edges["status"].contains("summary") || !edges["summary"].contains("status"));
}
