//! The fleet view of node management (beyond anax, which answers per node only): which nodes
//! each NMP applies to, when each starts within the window, the versions each ends on, and the
//! nodes it skips with the reason; plus the fleet's agent versions before and after. Each node
//! runs its own deterministic [`Worker`] (the same as `cvo edge nmp status`), its start times
//! drawn from a random source seeded by the plan's seed and the node's id, and its jobs taken
//! in scheduled order (the monitor starts each once due), each against the versions the jobs
//! before it left. Downloads and installs are taken to succeed.

use std::collections::BTreeMap;

use rand_chacha::ChaCha8Rng;
use rand08::SeedableRng as _;
use serde::Serialize;

use super::agent_files::FileKind;
use super::exchange::NodePolicy;
use super::nmp::{self, ManagementPolicy};
use super::nmp_worker::{Hub, NodeState, Worker};

/// One node of the fleet: its `org/id`, what the worker knows of it, its node policy.
#[derive(Debug, Clone, Default)]
pub struct FleetNode {
    pub id: String,
    pub state: NodeState,
    pub policy: Option<NodePolicy>,
}

/// A node an NMP applies to: when its job is scheduled (Unix seconds) and the versions the
/// node runs after it (per kind; unchanged kinds as they were).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Scheduled {
    pub node: String,
    pub scheduled: i64,
    /// What the job does: `upgrade`, `no action required`, or `precheck failed: WHY`.
    pub outcome: String,
    pub versions: BTreeMap<&'static str, String>,
}

/// A node an NMP does not apply to, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub node: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PolicyPlan {
    pub nodes: Vec<Scheduled>,
    pub skipped: Vec<Skipped>,
}

/// The plan: per NMP by `org/name`, and the fleet's software versions before and after (node
/// counts; `unknown` for a node that reports none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FleetPlan {
    pub policies: BTreeMap<String, PolicyPlan>,
    pub before: BTreeMap<String, usize>,
    pub after: BTreeMap<String, usize>,
}

/// Why an NMP does not apply to a node (anax `ProcessAllNMPS`' choice, in words).
fn skip_reason(nmp: &ManagementPolicy, node: &FleetNode) -> Option<String> {
    let empty = NodePolicy::default();
    let policy = node.policy.as_ref().unwrap_or(&empty);
    if !nmp::applies(Some(policy), &node.state.pattern, nmp) {
        return Some(
            match (nmp.patterns.is_empty(), node.state.pattern.is_empty()) {
                (false, true) => "a policy node: the NMP names patterns".to_owned(),
                (false, false) => {
                    format!("pattern {} is not one the NMP names", node.state.pattern)
                }
                (true, false) => "a pattern node: the NMP has constraints".to_owned(),
                (true, true) => {
                    "the node policy and the NMP's constraints are not compatible".to_owned()
                }
            },
        );
    }
    (!nmp.enabled).then(|| "the NMP is not enabled".to_owned())
}

/// A seed per node: the plan's seed and the node's id (FNV-1a), so that a node's start times
/// do not depend on the other nodes.
fn node_seed(seed: u64, id: &str) -> u64 {
    (id.bytes()).fold(0xcbf2_9ce4_8422_2325 ^ seed, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn software(state: &NodeState) -> String {
    state
        .versions
        .get(&FileKind::Software)
        .cloned()
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Plans every NMP over every node at `now`.
pub fn plan(
    nodes: &[FleetNode],
    nmps: &BTreeMap<String, ManagementPolicy>,
    hub: &Hub,
    now: i64,
    seed: u64,
) -> FleetPlan {
    let mut out = FleetPlan {
        policies: nmps
            .keys()
            .map(|n| (n.clone(), PolicyPlan::default()))
            .collect(),
        ..FleetPlan::default()
    };
    for node in nodes {
        *out.before.entry(software(&node.state)).or_default() += 1;
        for (name, nmp) in nmps {
            if let Some(reason) = skip_reason(nmp, node) {
                let skipped = Skipped {
                    node: node.id.clone(),
                    reason,
                };
                if let Some(p) = out.policies.get_mut(name) {
                    p.skipped.push(skipped);
                }
            }
        }
        let mut worker = Worker::new(node.state.clone(), "");
        let mut rng = ChaCha8Rng::seed_from_u64(node_seed(seed, &node.id));
        worker.sync(nmps, node.policy.as_ref(), now, &mut rng);
        let mut order: Vec<(i64, String)> = (worker.statuses.iter())
            .map(|(name, s)| (s.internal.scheduled_unix_time, name.clone()))
            .collect();
        order.sort();
        for (scheduled, name) in order {
            let outcome = match worker.plan(&name, hub) {
                Ok(plan) if plan.kinds.is_empty() => "no action required".to_owned(),
                Ok(plan) if !plan.missing.is_empty() => format!(
                    "precheck failed: The following package or file names are not listed in the manifest {}: {}",
                    plan.manifest,
                    plan.missing.join(", ")
                ),
                Ok(plan) => {
                    for (kind, version) in plan.kinds {
                        worker.node.versions.insert(kind, version);
                    }
                    "upgrade".to_owned()
                }
                Err(e) => format!("precheck failed: {e}"),
            };
            let versions = (worker.node.versions.iter())
                .map(|(k, v)| (k.node_key(), v.clone()))
                .collect();
            if let Some(p) = out.policies.get_mut(&name) {
                p.nodes.push(Scheduled {
                    node: node.id.clone(),
                    scheduled,
                    outcome,
                    versions,
                });
            }
        }
        *out.after.entry(software(&worker.node)).or_default() += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::edge::agent_files::{AgentFileVersions, UpgradeManifest};

    fn node(id: &str, pattern: &str, software: &str) -> FleetNode {
        let mut state = NodeState {
            pattern: pattern.into(),
            cluster: true,
            software_files: vec!["horizon-agent-edge-cluster-files.tar.gz".into()],
            ..NodeState::default()
        };
        if !software.is_empty() {
            state.versions.insert(FileKind::Software, software.into());
        }
        FleetNode {
            id: id.into(),
            state,
            policy: None,
        }
    }

    #[test]
    fn who_when_and_what() {
        let nmps: BTreeMap<String, ManagementPolicy> = [
            (
                "org/up",
                r#"{"patterns": ["web"], "enabled": true, "start": "2026-03-01T00:00:00Z", "startWindow": 600,
                    "agentUpgradePolicy": {"manifest": "m"}}"#,
            ),
            ("org/off", r#"{"patterns": ["web"], "enabled": false}"#),
        ]
        .into_iter()
        .map(|(n, j)| (n.to_owned(), nmp::validate(serde_json::from_str(j).unwrap()).unwrap().policy))
        .collect();
        let manifests: BTreeMap<String, UpgradeManifest> = [(
            "m".to_owned(),
            serde_json::from_str(r#"{"softwareUpgrade": {"files": ["*"], "version": "latest"}}"#)
                .unwrap(),
        )]
        .into_iter()
        .collect();
        let versions = AgentFileVersions {
            agent_software_versions: vec!["2.30.0-1400".into(), "2.31.0-1498".into()],
            ..AgentFileVersions::default()
        };
        let hub = Hub {
            org: "org",
            versions: &versions,
            manifests: &manifests,
        };
        let nodes = [
            node("org/a", "org/web", "2.30.0-1400"),
            node("org/b", "org/web", "2.31.0-1498"),
            node("org/c", "org/db", "2.30.0-1400"),
        ];
        let now = 1_772_323_200 - 3600;
        let fleet = plan(&nodes, &nmps, &hub, now, 7);
        let up = &fleet.policies["org/up"];
        let outcomes: Vec<(&str, &str, &str)> = (up.nodes.iter())
            .map(|s| {
                (
                    s.node.as_str(),
                    s.outcome.as_str(),
                    s.versions["horizon"].as_str(),
                )
            })
            .collect();
        assert_eq!(
            outcomes,
            [
                ("org/a", "upgrade", "2.31.0-1498"),
                ("org/b", "no action required", "2.31.0-1498")
            ]
        );
        assert!(
            up.nodes
                .iter()
                .all(|s| (1_772_323_200..1_772_323_800).contains(&s.scheduled))
        );
        assert_eq!(
            up.skipped[0].reason,
            "pattern org/db is not one the NMP names"
        );
        assert_eq!(fleet.policies["org/off"].skipped.len(), 3);
        assert_eq!(
            fleet.policies["org/off"].skipped[0].reason,
            "the NMP is not enabled"
        );
        assert_eq!(
            fleet.before,
            [("2.30.0-1400".into(), 2), ("2.31.0-1498".into(), 1)].into()
        );
        assert_eq!(
            fleet.after,
            [("2.30.0-1400".into(), 1), ("2.31.0-1498".into(), 2)].into()
        );
        // The same seed, the same plan; a node's times do not depend on the others.
        assert_eq!(plan(&nodes, &nmps, &hub, now, 7), fleet);
        let alone = plan(&nodes[..1], &nmps, &hub, now, 7);
        assert_eq!(alone.policies["org/up"].nodes[0], up.nodes[0]);
    }
}
