//! Exchange documents in the exchange's own JSON, so that real exports (`hzn exchange ... list`,
//! the REST API) can be fed as they are: a node, a node policy, a deployment policy, a pattern,
//! a service. Each may be the bare object or the exchange's GET answer that wraps one object by
//! id (`{"nodes": {"org/id": {...}}}`). Unknown fields are ignored, as the exchange's clients do.
//! Pure: parsing text, no files.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

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

    /// The namespace of the operator (`clusterDeployment.metadata.namespace`), or empty.
    pub fn cluster_namespace(&self) -> String {
        let object = match &self.cluster_deployment {
            Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            other => other.clone(),
        };
        (object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned()
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

/// One document: the bare object, or the single object of the exchange's `{KEY: {id: obj}}`
/// answer (then with its id).
pub fn one<T: DeserializeOwned>(
    text: &str,
    what: &'static str,
    key: &'static str,
) -> Result<(Option<String>, T), ExchangeError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| ExchangeError::Json(e.to_string()))?;
    let shape = |e: serde_json::Error| ExchangeError::Shape {
        what,
        cause: e.to_string(),
    };
    if let Some(Value::Object(wrapped)) = value.get(key) {
        let map: BTreeMap<String, Value> = wrapped.clone().into_iter().collect();
        if map.len() != 1 {
            return Err(ExchangeError::Several {
                what,
                key,
                count: map.len(),
            });
        }
        let (id, object) = map.into_iter().next().unwrap_or_default();
        return Ok((Some(id), serde_json::from_value(object).map_err(shape)?));
    }
    Ok((None, serde_json::from_value(value).map_err(shape)?))
}

pub fn node(text: &str) -> Result<(Option<String>, Node), ExchangeError> {
    let (id, node) = one::<Node>(text, "node", "nodes")?;
    match node.node_type.as_str() {
        "" | "device" | "cluster" => Ok((id, node)),
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
        let (id, n) = node(wrapped).unwrap();
        assert_eq!(id.as_deref(), Some("org/n1"));
        assert_eq!(
            (n.node_type.as_str(), n.is_namespace_scoped),
            ("cluster", true)
        );
        let (id, n) = node(r#"{"arch": "arm64"}"#).unwrap();
        assert_eq!((id, n.node_type.as_str()), (None, ""));
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
        assert_eq!(svc.cluster_namespace(), "xyz");
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
