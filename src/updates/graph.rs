//! The update graph document (Cincinnati v1: `nodes`, `edges`, `conditionalEdges`) and the
//! updates it offers from the current version, as upstream's `cincinnati.GetUpdates`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::Failure;
use super::request::{GraphRequest, MULTI, go_url_error};

/// The node metadata key of the channels a release is in, comma-separated.
pub const CHANNELS_KEY: &str = "io.openshift.upgrades.graph.release.channels";

/// A graph document. Missing and `null` lists are empty, as Go reads them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Graph {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub nodes: Vec<Node>,
    /// `[from, to]` indices into `nodes`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub edges: Vec<Vec<i64>>,
    #[serde(
        default,
        rename = "conditionalEdges",
        deserialize_with = "null_as_empty"
    )]
    pub conditional_edges: Vec<ConditionalEdges>,
}

/// A release of the graph.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Node {
    #[serde(deserialize_with = "semantic_version")]
    pub version: semver::Version,
    /// The release image.
    #[serde(default)]
    pub payload: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// Edges that carry risks: `from` and `to` are versions.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ConditionalEdges {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub edges: Vec<ConditionalEdge>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub risks: Vec<ConditionalUpdateRisk>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ConditionalEdge {
    #[serde(default)]
    pub from: String,
    #[serde(default)]
    pub to: String,
}

/// A risk of a conditional update (API `ConditionalUpdateRisk`), as the graph and the
/// ClusterVersion status write it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionalUpdateRisk {
    /// Where the risk is explained.
    #[serde(default)]
    pub url: String,
    /// A CamelCase name, unique within the update.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub message: String,
    /// The first rule of a known type decides whether the risk applies.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub matching_rules: Vec<ClusterCondition>,
}

/// A rule deciding whether a risk applies (API `ClusterCondition`): `Always`, or `PromQL`
/// with its query.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterCondition {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promql: Option<PromQlClusterCondition>,
}

/// API `PromQLClusterCondition`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct PromQlClusterCondition {
    /// A query whose result is 1 when the risk applies, 0 when it does not.
    pub promql: String,
}

impl ClusterCondition {
    /// Upstream `clusterconditions.PruneInvalid`'s test: a known type with what it needs.
    pub fn is_valid(&self) -> bool {
        match self.type_.as_str() {
            "Always" => true,
            "PromQL" => self.promql.as_ref().is_some_and(|p| !p.promql.is_empty()),
            _ => false,
        }
    }
}

/// A release the graph offers (API `Release` without `architecture`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    pub version: String,
    pub image: String,
    /// Metadata `url`.
    pub url: Option<String>,
    /// Metadata `io.openshift.upgrades.graph.release.channels`, split and sorted.
    pub channels: Vec<String>,
}

/// An update offered with risks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConditionalUpdate {
    pub release: Target,
    pub risks: Vec<ConditionalUpdateRisk>,
}

/// What the graph offers from the current version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Updates {
    /// The current version's node.
    pub current: Target,
    /// Recommended updates, newest first.
    pub updates: Vec<Target>,
    /// Conditional updates, newest first.
    pub conditional: Vec<ConditionalUpdate>,
}

/// Reads a graph document (`ResponseInvalid` when it is not one).
pub fn parse(body: &[u8]) -> Result<Graph, Failure> {
    serde_json::from_slice(body).map_err(|e| Failure::ResponseInvalid(e.to_string()))
}

/// The updates from `request.version`, as upstream: the current node (`VersionNotFound`
/// without it); on a single-to-multi architecture migration only the current version (its
/// multi-architecture release); else the targets of its edges and of the conditional edges
/// from it. An update also offered conditionally is only conditional; a risk whose rules are
/// all invalid drops its conditional update; targets offered conditionally more than once
/// are dropped.
pub fn updates(graph: &Graph, request: &GraphRequest) -> Result<Updates, Failure> {
    let invalid = |what: &str, e: String| Failure::ResponseInvalid(format!("{what}: {e}"));
    let Some(current_idx) = graph
        .nodes
        .iter()
        .position(|n| n.version.cmp_precedence(&request.version) == Ordering::Equal)
    else {
        return Err(Failure::VersionNotFound {
            version: request.version.to_string(),
            channel: request.channel.clone(),
        });
    };
    let current =
        target(&graph.nodes[current_idx]).map_err(|e| invalid("invalid current node", e))?;
    if request.desired_arch == MULTI && request.current_arch != request.desired_arch {
        return Ok(Updates {
            updates: vec![current.clone()],
            current,
            conditional: vec![],
        });
    }

    let mut updates = Vec::new();
    for edge in &graph.edges {
        let [from, to] = edge[..] else {
            return Err(invalid(
                "invalid edge",
                format!("expected 2 fields, found {}", edge.len()),
            ));
        };
        if from != current_idx as i64 {
            continue;
        }
        let node = usize::try_from(to)
            .ok()
            .and_then(|i| graph.nodes.get(i))
            .ok_or_else(|| invalid("invalid edge", format!("no node {to}")))?;
        updates.push(target(node).map_err(|e| invalid("invalid recommended update node", e))?);
    }

    let from = request.version.to_string();
    let mut conditional = Vec::new();
    for edges in &graph.conditional_edges {
        for edge in edges.edges.iter().filter(|e| e.from == from) {
            let node = (graph.nodes.iter())
                .find(|n| n.version.to_string() == edge.to)
                .ok_or_else(|| {
                    Failure::ResponseInvalid(format!("no node for conditional update {}", edge.to))
                })?;
            let release =
                target(node).map_err(|e| invalid("invalid conditional update node", e))?;
            conditional.push(ConditionalUpdate {
                release,
                risks: edges.risks.clone(),
            });
        }
    }

    updates.retain(|u| !conditional.iter().any(|c| c.release.image == u.image));
    // Invalid rules are pruned; a risk left without rules drops its update.
    conditional.retain_mut(|c| {
        c.risks.iter_mut().all(|risk| {
            risk.matching_rules.retain(ClusterCondition::is_valid);
            !risk.matching_rules.is_empty()
        })
    });
    let mut offers: HashMap<String, usize> = HashMap::new();
    for c in &conditional {
        *offers.entry(c.release.image.clone()).or_default() += 1;
    }
    conditional.retain(|c| offers[&c.release.image] == 1);

    sort_newest_first(&mut updates, |t| &t.version);
    sort_newest_first(&mut conditional, |c| &c.release.version);
    Ok(Updates {
        current,
        updates,
        conditional,
    })
}

/// Sorts by version, newest first (upstream's order of `availableUpdates` and
/// `conditionalUpdates`); versions that do not parse go last.
pub fn sort_newest_first<T>(items: &mut [T], version: impl Fn(&T) -> &str) {
    items.sort_by(|a, b| {
        let a = semver::Version::parse(version(a)).ok();
        let b = semver::Version::parse(version(b)).ok();
        match (a, b) {
            (Some(a), Some(b)) => b.cmp_precedence(&a),
            (a, b) => b.is_some().cmp(&a.is_some()),
        }
    });
}

/// Upstream `convertRetrievedUpdateToRelease`.
fn target(node: &Node) -> Result<Target, String> {
    let version = node.version.to_string();
    let url = match node.metadata.get("url") {
        Some(url) => match go_url_error(url) {
            Some(e) => return Err(format!("invalid URL for {version}: {e}")),
            None => Some(url.clone()),
        },
        None => None,
    };
    let mut channels: Vec<String> = node
        .metadata
        .get(CHANNELS_KEY)
        .map(|c| c.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    channels.sort();
    Ok(Target {
        version,
        image: node.payload.clone(),
        url,
        channels,
    })
}

fn null_as_empty<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn semantic_version<'de, D: Deserializer<'de>>(d: D) -> Result<semver::Version, D::Error> {
    let text = String::deserialize(d)?;
    semver::Version::parse(&text)
        .map_err(|e| serde::de::Error::custom(format!("invalid semantic version {text:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::updates::request::{Query, graph_request};

    fn request(version: &str, desired: &str, current: &str) -> GraphRequest {
        graph_request(&Query {
            upstream: "http://127.0.0.1/graph".into(),
            cluster_id: "0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a61".into(),
            desired_arch: desired.into(),
            current_arch: current.into(),
            channel: "stable-4.18".into(),
            version: version.into(),
        })
        .unwrap()
    }

    const GRAPH: &str = r#"{
      "nodes": [
        {"version": "4.18.0", "payload": "quay.io/r@sha256:0", "metadata": {
          "url": "https://access.redhat.com/errata/0",
          "io.openshift.upgrades.graph.release.channels": "stable-4.18,candidate-4.18,fast-4.18"}},
        {"version": "4.18.1", "payload": "quay.io/r@sha256:1", "metadata": {}},
        {"version": "4.18.2", "payload": "quay.io/r@sha256:2"},
        {"version": "4.18.3", "payload": "quay.io/r@sha256:3", "metadata": null},
        {"version": "4.18.4", "payload": "quay.io/r@sha256:4"}
      ],
      "edges": [[0, 1], [0, 2], [1, 2], [0, 3]],
      "conditionalEdges": [
        {"edges": [{"from": "4.18.0", "to": "4.18.3"}, {"from": "4.18.1", "to": "4.18.4"}],
         "risks": [{"url": "https://bug/1", "name": "DiskPressure", "message": "Nodes may fill up.",
                    "matchingRules": [{"type": "Unknown"}, {"type": "PromQL", "promql": {"promql": "group(up)"}}]}]},
        {"edges": [{"from": "4.18.0", "to": "4.18.4"}],
         "risks": [{"url": "https://bug/2", "name": "Everyone", "message": "All clusters.",
                    "matchingRules": [{"type": "Always"}]}]}
      ]
    }"#;

    fn target(version: &str, image: &str) -> Target {
        Target {
            version: version.into(),
            image: image.into(),
            ..Target::default()
        }
    }

    #[test]
    fn updates_from_the_current_version() {
        let graph = parse(GRAPH.as_bytes()).unwrap();
        let u = updates(&graph, &request("4.18.0", "amd64", "amd64")).unwrap();
        assert_eq!(
            u.current,
            Target {
                version: "4.18.0".into(),
                image: "quay.io/r@sha256:0".into(),
                url: Some("https://access.redhat.com/errata/0".into()),
                channels: vec![
                    "candidate-4.18".into(),
                    "fast-4.18".into(),
                    "stable-4.18".into()
                ],
            }
        );
        // 4.18.3 is offered both ways: only conditionally. Newest first.
        assert_eq!(
            u.updates,
            vec![
                target("4.18.2", "quay.io/r@sha256:2"),
                target("4.18.1", "quay.io/r@sha256:1")
            ]
        );
        let versions: Vec<_> = u
            .conditional
            .iter()
            .map(|c| &c.release.version[..])
            .collect();
        assert_eq!(versions, ["4.18.4", "4.18.3"]);
        // The unknown rule is pruned.
        assert_eq!(
            u.conditional[1].risks[0].matching_rules,
            vec![ClusterCondition {
                type_: "PromQL".into(),
                promql: Some(PromQlClusterCondition {
                    promql: "group(up)".into()
                }),
            }]
        );
        // From 4.18.1: one edge, one conditional edge.
        let u = updates(&graph, &request("4.18.1", "amd64", "amd64")).unwrap();
        assert_eq!(u.updates, vec![target("4.18.2", "quay.io/r@sha256:2")]);
        assert_eq!(u.conditional.len(), 1);
        // The newest has no updates.
        let u = updates(&graph, &request("4.18.4", "amd64", "amd64")).unwrap();
        assert!(u.updates.is_empty() && u.conditional.is_empty());
    }

    #[test]
    fn conditional_updates_upstream_drops() {
        // A risk with no valid rule drops its update; a target offered twice is dropped.
        let graph = r#"{"nodes": [{"version": "1.0.0", "payload": "a"}, {"version": "1.0.1", "payload": "b"},
            {"version": "1.0.2", "payload": "c"}],
          "edges": [],
          "conditionalEdges": [
            {"edges": [{"from": "1.0.0", "to": "1.0.1"}], "risks": [{"name": "R", "matchingRules": [{"type": "PromQL"}]}]},
            {"edges": [{"from": "1.0.0", "to": "1.0.2"}], "risks": [{"name": "A", "matchingRules": [{"type": "Always"}]}]},
            {"edges": [{"from": "1.0.0", "to": "1.0.2"}], "risks": [{"name": "B", "matchingRules": [{"type": "Always"}]}]}
          ]}"#;
        let u = updates(
            &parse(graph.as_bytes()).unwrap(),
            &request("1.0.0", "amd64", "amd64"),
        )
        .unwrap();
        assert!(u.conditional.is_empty(), "{u:?}");
    }

    #[test]
    fn a_multi_architecture_graph() {
        // The multi graph lists the multi-architecture releases; a single-architecture
        // cluster asking for Multi is offered only its own version's multi release.
        let graph = r#"{"nodes": [
            {"version": "4.18.0", "payload": "quay.io/multi@sha256:0", "metadata": {"release.openshift.io/architecture": "multi"}},
            {"version": "4.18.1", "payload": "quay.io/multi@sha256:1", "metadata": {"release.openshift.io/architecture": "multi"}}],
          "edges": [[0, 1]]}"#;
        let graph = parse(graph.as_bytes()).unwrap();
        let migrating = updates(&graph, &request("4.18.0", MULTI, "amd64")).unwrap();
        assert_eq!(
            migrating.updates,
            vec![target("4.18.0", "quay.io/multi@sha256:0")]
        );
        let multi = updates(&graph, &request("4.18.0", MULTI, MULTI)).unwrap();
        assert_eq!(
            multi.updates,
            vec![target("4.18.1", "quay.io/multi@sha256:1")]
        );
    }

    #[test]
    fn failures_by_reason() {
        let graph = parse(GRAPH.as_bytes()).unwrap();
        assert_eq!(
            updates(&graph, &request("4.17.0", "amd64", "amd64")),
            Err(Failure::VersionNotFound {
                version: "4.17.0".into(),
                channel: "stable-4.18".into()
            })
        );
        let bad = [
            ("{", "ResponseInvalid"),
            (
                r#"{"nodes": [{"version": "4.18", "payload": "a"}]}"#,
                "ResponseInvalid",
            ),
            (r#"{"nodes": 3}"#, "ResponseInvalid"),
        ];
        for (body, reason) in bad {
            assert_eq!(
                parse(body.as_bytes()).unwrap_err().reason(),
                reason,
                "{body}"
            );
        }
        let cases = [
            (
                r#"{"nodes": [{"version": "4.18.0", "payload": "a"}], "edges": [[0]]}"#,
                "Unable to retrieve available updates: invalid edge: expected 2 fields, found 1",
            ),
            (
                r#"{"nodes": [{"version": "4.18.0", "payload": "a"}], "edges": [[0, 7]]}"#,
                "Unable to retrieve available updates: invalid edge: no node 7",
            ),
            (
                r#"{"nodes": [{"version": "4.18.0", "payload": "a", "metadata": {"url": "%zz"}}]}"#,
                r#"Unable to retrieve available updates: invalid current node: invalid URL for 4.18.0: parse "%zz": invalid URL escape "%zz""#,
            ),
            (
                r#"{"nodes": [{"version": "4.18.0", "payload": "a"}],
                    "conditionalEdges": [{"edges": [{"from": "4.18.0", "to": "4.18.9"}], "risks": []}]}"#,
                "Unable to retrieve available updates: no node for conditional update 4.18.9",
            ),
        ];
        for (body, message) in cases {
            let graph = parse(body.as_bytes()).unwrap();
            let err = updates(&graph, &request("4.18.0", "amd64", "amd64")).unwrap_err();
            assert_eq!(
                (err.reason(), err.message().as_str()),
                ("ResponseInvalid", message)
            );
        }
    }
}
