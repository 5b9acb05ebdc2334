//! Exchange documents in the exchange's own JSON, so that real exports (`hzn exchange ... list`,
//! the REST API) can be fed as they are: a node, a node policy, a deployment policy, a pattern,
//! a service. Each may be the bare object or the exchange's GET answer that wraps one object by
//! id (`{"nodes": {"org/id": {...}}}`). anax ignores unknown fields; here a near miss of a known
//! one (`clusterNamespce`) is an error and any other unknown field a warning ([`fields`]).
//! Pure: parsing text, no files.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::fields::{self, Doc};
use super::operator_archive::{self, ArchiveError};
use super::properties::Property;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExchangeError {
    #[error("not JSON: {0}")]
    Json(String),
    #[error("not a {what}: {cause}")]
    Shape { what: &'static str, cause: String },
    #[error("holds {count} {what}s under \"{key}\"; give one")]
    Several {
        what: &'static str,
        key: &'static str,
        count: usize,
    },
    #[error("nodeType {0:?} is not one of device, cluster")]
    NodeType(String),
    /// Fields that are near misses of known ones, one message each.
    #[error("{}", .0.join("; "))]
    Fields(Vec<String>),
}

/// A document read: its id when the exchange's answer wrapped it, the object, and the warnings
/// about fields anax does not know.
#[derive(Debug, Clone, PartialEq)]
pub struct Read<T> {
    pub id: Option<String>,
    pub value: T,
    pub warnings: Vec<String>,
}

/// `value` read as `doc`: a near-miss field is an error, other unknown fields are warnings.
pub fn checked<T: DeserializeOwned>(
    value: Value,
    doc: Doc,
) -> Result<(T, Vec<String>), ExchangeError> {
    let (typos, others): (Vec<_>, Vec<_>) =
        (fields::unknown_fields(&value, doc).into_iter()).partition(fields::UnknownField::is_typo);
    if !typos.is_empty() {
        return Err(ExchangeError::Fields(
            typos.iter().map(ToString::to_string).collect(),
        ));
    }
    let parsed = serde_json::from_value(value).map_err(|e| ExchangeError::Shape {
        what: doc.what(),
        cause: e.to_string(),
    })?;
    Ok((parsed, others.iter().map(ToString::to_string).collect()))
}

/// A node (`/orgs/{org}/nodes/{id}`), the fields placement needs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Node {
    pub name: String,
    pub arch: String,
    /// `device` (also when empty, the exchange's default) or `cluster`.
    pub node_type: String,
    pub cluster_namespace: String,
    pub is_namespace_scoped: bool,
    /// `org/name` of the pattern the node runs; empty for a policy node.
    pub pattern: String,
    /// The agent's versions by kind (`horizon`, `config`, `cert`), for node management.
    pub software_versions: BTreeMap<String, String>,
    /// The HA group the node belongs to; empty for none (the exchange spells it `ha_group`).
    #[serde(alias = "ha_group")]
    pub ha_group: String,
}

/// A section of a node policy (`deployment`, `management`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PolicySection {
    pub properties: Vec<Property>,
    pub constraints: Vec<String>,
}

/// A node policy (`/orgs/{org}/nodes/{id}/policy`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct NodePolicy {
    pub properties: Vec<Property>,
    pub constraints: Vec<String>,
    pub deployment: PolicySection,
    pub management: PolicySection,
}

impl NodePolicy {
    /// The policy a section sees: top-level properties overlaid by the section's (the
    /// section wins on a name), the section's constraints if it has any, else the top level's.
    pub fn section(&self, section: &PolicySection) -> PolicySection {
        let mut properties: Vec<Property> = (self.properties.iter())
            .filter(|p| !section.properties.iter().any(|s| s.name == p.name))
            .cloned()
            .collect();
        properties.extend(section.properties.iter().cloned());
        let constraints = match section.constraints.is_empty() {
            true => self.constraints.clone(),
            false => section.constraints.clone(),
        };
        PolicySection {
            properties,
            constraints,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ServiceVersion {
    pub version: String,
}

/// `service` of a deployment policy.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyService {
    pub name: String,
    pub org: String,
    pub arch: String,
    pub service_versions: Vec<ServiceVersion>,
    pub cluster_namespace: String,
    /// The seed design's first spelling; accepted with a warning.
    #[serde(rename = "cluster_namespace")]
    pub seed_cluster_namespace: Option<String>,
}

/// A deployment ("business") policy (`/orgs/{org}/business/policies/{name}`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct DeploymentPolicy {
    pub label: String,
    pub service: PolicyService,
    pub properties: Vec<Property>,
    pub constraints: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PatternService {
    pub service_url: String,
    pub service_orgid: String,
    pub service_arch: String,
    pub service_versions: Vec<ServiceVersion>,
}

/// A pattern (`/orgs/{org}/patterns/{name}`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pattern {
    pub label: String,
    pub services: Vec<PatternService>,
    pub cluster_namespace: String,
    /// The seed design's first spelling (a top-level `namespace`); accepted with a warning.
    #[serde(rename = "namespace")]
    pub seed_namespace: Option<String>,
}

/// A service definition (`/orgs/{org}/services/{id}`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Service {
    pub org: String,
    pub url: String,
    pub version: String,
    pub arch: String,
    /// The device deployment: a JSON string in the exchange (or an object in a file).
    pub deployment: Value,
    /// The cluster deployment: a JSON string or object with `metadata.namespace`.
    pub cluster_deployment: Value,
}

impl Service {
    /// `org/url_version_arch`, the exchange's id.
    pub fn id(&self) -> String {
        format!("{}/{}_{}_{}", self.org, self.url, self.version, self.arch)
    }

    pub fn has_device_deployment(&self) -> bool {
        !is_empty_deployment(&self.deployment)
    }

    pub fn has_cluster_deployment(&self) -> bool {
        !is_empty_deployment(&self.cluster_deployment)
    }

    /// The namespace of the operator (`clusterDeployment.metadata.namespace`, else the one its
    /// operator archive declares), or empty.
    pub fn cluster_namespace(&self) -> Result<String, ArchiveError> {
        operator_archive::cluster_deployment_namespace(&self.cluster_deployment)
    }
}

fn is_empty_deployment(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty() || s.trim() == "{}",
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// One document read as `doc`: the bare object, or the single object of the exchange's
/// `{KEY: {id: obj}}` answer (then with its id).
pub fn one<T: DeserializeOwned>(
    text: &str,
    doc: Doc,
    key: &'static str,
) -> Result<Read<T>, ExchangeError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| ExchangeError::Json(e.to_string()))?;
    let (id, object) = match value.get(key) {
        Some(Value::Object(wrapped)) => {
            let map: BTreeMap<String, Value> = wrapped.clone().into_iter().collect();
            if map.len() != 1 {
                return Err(ExchangeError::Several {
                    what: doc.what(),
                    key,
                    count: map.len(),
                });
            }
            let (id, object) = map.into_iter().next().unwrap_or_default();
            (Some(id), object)
        }
        _ => (None, value),
    };
    let (value, warnings) = checked(object, doc)?;
    Ok(Read {
        id,
        value,
        warnings,
    })
}

pub fn node(text: &str) -> Result<Read<Node>, ExchangeError> {
    let read = one::<Node>(text, Doc::Node, "nodes")?;
    match read.value.node_type.as_str() {
        "" | "device" | "cluster" => Ok(read),
        other => Err(ExchangeError::NodeType(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_and_bare_documents() {
        let wrapped = r#"{"nodes": {"org/n1": {"arch": "amd64", "nodeType": "cluster",
            "clusterNamespace": "team", "isNamespaceScoped": true, "publicKey": "x"}}, "lastIndex": 0}"#;
        let Read { id, value: n, .. } = node(wrapped).unwrap();
        assert_eq!(id.as_deref(), Some("org/n1"));
        assert_eq!(
            (n.node_type.as_str(), n.is_namespace_scoped),
            ("cluster", true)
        );
        let Read { id, value: n, .. } = node(r#"{"arch": "arm64"}"#).unwrap();
        assert_eq!((id, n.node_type.as_str()), (None, ""));
        let read = node(r#"{"arch": "arm64", "colour": "red"}"#).unwrap();
        assert_eq!(
            read.warnings,
            ["colour: \"colour\" is not a node field anax knows; ignored"]
        );
        assert_eq!(
            node(r#"{"nodes": {"org/n": {"clusterNamespce": "x"}}}"#)
                .unwrap_err()
                .to_string(),
            "clusterNamespce: unknown node field \"clusterNamespce\" (did you mean clusterNamespace?); valid values: token, name, owner, nodeType, clusterNamespace, isNamespaceScoped, pattern, registeredServices, msgEndPoint, softwareVersions, lastHeartbeat, publicKey, arch, userInput, heartbeatIntervals, ha_group, lastUpdated"
        );
        assert_eq!(
            node(r#"{"nodes": {"a": {}, "b": {}}}"#)
                .unwrap_err()
                .to_string(),
            "holds 2 nodes under \"nodes\"; give one"
        );
        assert!(matches!(
            node(r#"{"nodeType": "edge"}"#),
            Err(ExchangeError::NodeType(_))
        ));
    }

    #[test]
    fn service_namespace_from_the_cluster_deployment() {
        let svc: Service = serde_json::from_str(
            r#"{"url": "s", "clusterDeployment": "{\"operatorYamlArchive\": \"x\", \"metadata\": {\"namespace\": \"xyz\"}}"}"#,
        )
        .unwrap();
        assert_eq!(svc.cluster_namespace().unwrap(), "xyz");
        assert!(svc.has_cluster_deployment());
        assert!(!svc.has_device_deployment());
        let svc: Service =
            serde_json::from_str(r#"{"deployment": "{}", "clusterDeployment": ""}"#).unwrap();
        assert!(!svc.has_cluster_deployment() && !svc.has_device_deployment());
    }

    #[test]
    fn node_policy_sections_overlay() {
        let p: NodePolicy = serde_json::from_str(
            r#"{"properties": [{"name": "a", "value": 1}, {"name": "b", "value": 1}],
                "constraints": ["x == 1"],
                "deployment": {"properties": [{"name": "b", "value": 2}]},
                "management": {"constraints": ["y == 2"]}}"#,
        )
        .unwrap();
        let d = p.section(&p.deployment);
        assert_eq!(d.properties.len(), 2);
        assert_eq!(d.properties[1].value, Some(serde_json::json!(2)));
        assert_eq!(d.constraints, ["x == 1"]);
        assert_eq!(p.section(&p.management).constraints, ["y == 2"]);
    }
}
