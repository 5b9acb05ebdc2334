//! The field names of the exchange documents `cvo edge` reads, as anax's structs name them
//! (anax main 2f3fa5a: `exchange.Device`, `externalpolicy.ExternalPolicy` and the exchange's
//! node policy sections, `businesspolicy.BusinessPolicy` and `ServiceRef`, `exchange.Pattern`
//! and `ServiceReference`, `exchange.ServiceDefinition`, `WorkloadChoice` of both), plus the
//! fields the exchange's GET answers add (`created`, `lastUpdated`, `nodePolicyVersion`) and
//! the seed design's spellings `cvo` reads with a warning. anax ignores unknown fields, so a
//! mistyped `clusterNamespce` silently means no namespace; here a field that is a near miss of
//! a known one is an error with the near miss, and any other unknown field a warning. Pure.

use serde_json::Value;

use crate::suggest;

/// The documents (and their parts) whose fields are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doc {
    Node,
    NodePolicy,
    PolicySection,
    Property,
    DeploymentPolicy,
    PolicyService,
    PolicyWorkload,
    Pattern,
    PatternService,
    PatternWorkload,
    Service,
}

impl Doc {
    /// What the document is called in messages.
    pub fn what(self) -> &'static str {
        match self {
            Doc::Node => "node",
            Doc::NodePolicy => "node policy",
            Doc::PolicySection => "node policy section",
            Doc::Property => "property",
            Doc::DeploymentPolicy => "deployment policy",
            Doc::PolicyService => "deployment policy service",
            Doc::PolicyWorkload => "service version",
            Doc::Pattern => "pattern",
            Doc::PatternService => "pattern service",
            Doc::PatternWorkload => "service version",
            Doc::Service => "service",
        }
    }

    /// The fields anax knows.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            Doc::Node => &[
                "token",
                "name",
                "owner",
                "nodeType",
                "clusterNamespace",
                "isNamespaceScoped",
                "pattern",
                "registeredServices",
                "msgEndPoint",
                "softwareVersions",
                "lastHeartbeat",
                "publicKey",
                "arch",
                "userInput",
                "heartbeatIntervals",
                "ha_group",
                "lastUpdated",
            ],
            Doc::NodePolicy => &[
                "label",
                "description",
                "properties",
                "constraints",
                "deployment",
                "management",
                "nodePolicyVersion",
                "lastUpdated",
            ],
            Doc::PolicySection => &["properties", "constraints"],
            Doc::Property => &["name", "value", "type"],
            Doc::DeploymentPolicy => &[
                "owner",
                "label",
                "description",
                "service",
                "properties",
                "constraints",
                "userInput",
                "secretBinding",
                "created",
                "lastUpdated",
            ],
            Doc::PolicyService => &[
                "name",
                "org",
                "arch",
                "clusterNamespace",
                "serviceVersions",
                "nodeHealth",
                // The seed design's spelling, read with a warning.
                "cluster_namespace",
            ],
            Doc::PolicyWorkload => &["version", "priority", "upgradePolicy"],
            Doc::Pattern => &[
                "owner",
                "label",
                "description",
                "public",
                "services",
                "clusterNamespace",
                "agreementProtocols",
                "userInput",
                "secretBinding",
                "lastUpdated",
                // The seed design's spelling, read with a warning.
                "namespace",
            ],
            Doc::PatternService => &[
                "serviceUrl",
                "serviceOrgid",
                "serviceArch",
                "serviceVersions",
                "dataVerification",
                "nodeHealth",
                "agreementLess",
            ],
            Doc::PatternWorkload => &[
                "version",
                "priority",
                "upgradePolicy",
                "deployment_overrides",
                "deployment_overrides_signature",
            ],
            Doc::Service => &[
                "owner",
                "org",
                "label",
                "description",
                "documentation",
                "public",
                "url",
                "version",
                "arch",
                "sharable",
                "matchHardware",
                "requiredServices",
                "userInput",
                "deployment",
                "deploymentSignature",
                "clusterDeployment",
                "clusterDeploymentSignature",
                // Older exchanges' answers.
                "imageStore",
                "lastUpdated",
            ],
        }
    }

    /// The fields whose value is a document (or a list of them) checked the same way.
    fn parts(self) -> &'static [(&'static str, Doc)] {
        match self {
            Doc::NodePolicy => &[
                ("properties", Doc::Property),
                ("deployment", Doc::PolicySection),
                ("management", Doc::PolicySection),
            ],
            Doc::PolicySection => &[("properties", Doc::Property)],
            Doc::DeploymentPolicy => &[
                ("service", Doc::PolicyService),
                ("properties", Doc::Property),
            ],
            Doc::PolicyService => &[("serviceVersions", Doc::PolicyWorkload)],
            Doc::Pattern => &[("services", Doc::PatternService)],
            Doc::PatternService => &[("serviceVersions", Doc::PatternWorkload)],
            _ => &[],
        }
    }
}

/// A field `doc` does not know, at `path` (`service.clusterNamespce`, `services[0].serviceUrll`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownField {
    pub doc: Doc,
    pub path: String,
    pub field: String,
    /// The known field it is a near miss of: then it is an error.
    pub near: Option<&'static str>,
}

impl UnknownField {
    /// A near miss: a typo, an error.
    pub fn is_typo(&self) -> bool {
        self.near.is_some()
    }
}

impl std::fmt::Display for UnknownField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = format!("{} field", self.doc.what());
        match self.near {
            Some(_) => {
                let message = suggest::unknown_value(&what, &self.field, self.doc.fields());
                write!(f, "{}: {message}", self.path)
            }
            None => write!(
                f,
                "{}: {:?} is not a {what} anax knows; ignored",
                self.path, self.field
            ),
        }
    }
}

/// Every unknown field of `value` read as `doc`, its parts included, in document order.
pub fn unknown_fields(value: &Value, doc: Doc) -> Vec<UnknownField> {
    let mut out = Vec::new();
    walk(value, doc, "", &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn walk(value: &Value, doc: Doc, prefix: &str, out: &mut Vec<UnknownField>) {
    let Some(object) = value.as_object() else {
        return;
    };
    let known = doc.fields();
    for (key, inner) in object {
        let path = format!("{prefix}{key}");
        if !known.contains(&key.as_str()) {
            out.push(UnknownField {
                doc,
                path,
                field: key.clone(),
                near: suggest::suggest(key, known),
            });
            continue;
        }
        let Some((_, part)) = doc.parts().iter().find(|(name, _)| name == key) else {
            continue;
        };
        match inner {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, *part, &format!("{path}[{i}]."), out);
                }
            }
            other => walk(other, *part, &format!("{path}."), out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(value: Value, doc: Doc) -> Vec<String> {
        unknown_fields(&value, doc)
            .iter()
            .map(|u| format!("{}{}", if u.is_typo() { "error " } else { "" }, u))
            .collect()
    }

    #[test]
    fn near_misses_are_errors_and_the_rest_warnings() {
        let cases: Vec<(Value, Doc, Vec<&str>)> = vec![
            (
                json!({"label": "p", "service": {"name": "s", "clusterNamespce": "team"}}),
                Doc::DeploymentPolicy,
                vec![
                    "error service.clusterNamespce: unknown deployment policy service field \"clusterNamespce\" (did you mean clusterNamespace?); valid values: name, org, arch, clusterNamespace, serviceVersions, nodeHealth, cluster_namespace",
                ],
            ),
            (
                json!({"constraint": ["a == 1"], "color": "red"}),
                Doc::DeploymentPolicy,
                vec![
                    "color: \"color\" is not a deployment policy field anax knows; ignored",
                    "error constraint: unknown deployment policy field \"constraint\" (did you mean constraints?); valid values: owner, label, description, service, properties, constraints, userInput, secretBinding, created, lastUpdated",
                ],
            ),
            (
                json!({"properties": [{"name": "a", "value": 1}, {"name": "b", "vlaue": 2}]}),
                Doc::DeploymentPolicy,
                vec![
                    "error properties[1].vlaue: unknown property field \"vlaue\" (did you mean value?); valid values: name, value, type",
                ],
            ),
            (
                json!({"services": [{"serviceUrl": "s", "serviceVersions": [{"version": "1.0.0", "priorty": {}}]}]}),
                Doc::Pattern,
                vec![
                    "error services[0].serviceVersions[0].priorty: unknown service version field \"priorty\" (did you mean priority?); valid values: version, priority, upgradePolicy, deployment_overrides, deployment_overrides_signature",
                ],
            ),
            (
                json!({"deployment": {"constraints": [], "propertie": []}}),
                Doc::NodePolicy,
                vec![
                    "error deployment.propertie: unknown node policy section field \"propertie\" (did you mean properties?); valid values: properties, constraints",
                ],
            ),
            (
                json!({"nodeType": "cluster", "isNamespaceScope": true, "haGroup": "g"}),
                Doc::Node,
                vec![
                    "error haGroup: unknown node field \"haGroup\" (did you mean ha_group?); valid values: token, name, owner, nodeType, clusterNamespace, isNamespaceScoped, pattern, registeredServices, msgEndPoint, softwareVersions, lastHeartbeat, publicKey, arch, userInput, heartbeatIntervals, ha_group, lastUpdated",
                    "error isNamespaceScope: unknown node field \"isNamespaceScope\" (did you mean isNamespaceScoped?); valid values: token, name, owner, nodeType, clusterNamespace, isNamespaceScoped, pattern, registeredServices, msgEndPoint, softwareVersions, lastHeartbeat, publicKey, arch, userInput, heartbeatIntervals, ha_group, lastUpdated",
                ],
            ),
            (
                json!({"url": "s", "clusterDeploymnet": "{}"}),
                Doc::Service,
                vec![
                    "error clusterDeploymnet: unknown service field \"clusterDeploymnet\" (did you mean clusterDeployment?); valid values: owner, org, label, description, documentation, public, url, version, arch, sharable, matchHardware, requiredServices, userInput, deployment, deploymentSignature, clusterDeployment, clusterDeploymentSignature, imageStore, lastUpdated",
                ],
            ),
            // The seed's spellings and every field of a real export are known.
            (
                json!({"service": {"cluster_namespace": "x", "nodeHealth": {}}, "created": "t"}),
                Doc::DeploymentPolicy,
                vec![],
            ),
            (
                json!({"namespace": "x", "agreementProtocols": [], "services": [{"agreementLess": false}]}),
                Doc::Pattern,
                vec![],
            ),
        ];
        for (value, doc, want) in cases {
            assert_eq!(shown(value.clone(), doc), want, "{value}");
        }
    }
}
