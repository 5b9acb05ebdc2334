//! What an edge cluster agent applies to install a service's operator YAML (anax
//! `kube_operator.Install`, spec B.1), as plain data: the final namespace and the refusal of a
//! namespace-scoped agent ([`placement::install_plan`]), the target Namespace and the
//! NetworkPolicy a cluster-scoped agent adds for a service in another namespace, and the
//! operator's objects with their ClusterRoleBinding subjects normalised. Pure: `cvo edge
//! deploy` (`cli/edge_deploy.rs`) applies the result.
//!
//! The NetworkPolicy is named `<agreementId>-networkpolicy`
//! ([`placement::network_policy_name`]): anax's `-networkPolicy` is refused by the apiserver.

use serde_json::{Value, json};

use super::agent_install::Scope;
use super::placement::{self, Agent, InstallRefusal};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeployError {
    #[error(transparent)]
    Refused(#[from] InstallRefusal),
    #[error(
        "agreement id {0:?}: the objects named after it need lower-case letters, digits and '-', starting and ending with a letter or digit, at most 200 characters (anax's ids are 64 hexadecimal digits)"
    )]
    BadAgreement(String),
    #[error(
        "document {index}: no {field}; every object of the operator YAML needs apiVersion, kind and metadata.name"
    )]
    Incomplete { index: usize, field: &'static str },
    #[error(
        "the operator YAML declares two Namespaces, {first} and {second}; an operator installs into one namespace"
    )]
    TwoNamespaces { first: String, second: String },
    #[error("the operator YAML holds no object to install")]
    Empty,
}

/// What the agent applies, in order: the Namespace, the NetworkPolicy, then the objects (whose
/// namespace the shell sets to `namespace` where the kind is namespaced).
#[derive(Debug, Clone, PartialEq)]
pub struct Deployment {
    pub namespace: String,
    pub namespace_object: Option<Value>,
    pub network_policy: Option<Value>,
    pub objects: Vec<Value>,
}

/// Plans the install of `documents` (the operator YAML's objects) for agreement `agreement`,
/// whose namespace (`clusterNamespace` carried by the agreement) is `agreement_ns` (empty:
/// none), by `agent`.
pub fn plan(
    agreement: &str,
    agreement_ns: &str,
    documents: &[Value],
    agent: &Agent<'_>,
) -> Result<Deployment, DeployError> {
    check_agreement(agreement)?;
    let declared = declared_namespace(documents)?;
    let install = placement::install_plan(
        agreement,
        agreement_ns,
        declared.as_deref().unwrap_or_default(),
        agent,
    )?;
    let mut objects = Vec::new();
    for document in documents.iter().filter(|d| kind(d) != Some("Namespace")) {
        objects.push(normalise_subjects(
            document,
            &install.namespace,
            agent.scope,
        ));
    }
    if objects.is_empty() {
        return Err(DeployError::Empty);
    }
    // The agent namespace exists (the agent runs there): only another one is created, under the
    // final name whatever the YAML called its Namespace.
    let namespace_object = install.create_namespace.then(|| {
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": install.namespace}})
    });
    Ok(Deployment {
        namespace: install.namespace,
        namespace_object,
        network_policy: install.network_policy,
        objects,
    })
}

fn check_agreement(agreement: &str) -> Result<(), DeployError> {
    let bytes = agreement.as_bytes();
    let edge_ok = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let valid = !agreement.is_empty()
        && agreement.len() <= 200
        && (bytes.iter()).all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && edge_ok(bytes.first())
        && edge_ok(bytes.last());
    match valid {
        true => Ok(()),
        false => Err(DeployError::BadAgreement(agreement.to_owned())),
    }
}

fn kind(document: &Value) -> Option<&str> {
    document["kind"].as_str()
}

/// The Namespace the operator YAML declares, if any; every document is checked for the fields
/// an apply needs on the way.
pub fn declared_namespace(documents: &[Value]) -> Result<Option<String>, DeployError> {
    let mut declared: Option<String> = None;
    for (index, document) in documents.iter().enumerate() {
        let index = index + 1;
        for (field, value) in [
            ("apiVersion", &document["apiVersion"]),
            ("kind", &document["kind"]),
            ("metadata.name", &document["metadata"]["name"]),
        ] {
            if value.as_str().is_none_or(str::is_empty) {
                return Err(DeployError::Incomplete { index, field });
            }
        }
        if kind(document) != Some("Namespace") {
            continue;
        }
        let name = document["metadata"]["name"].as_str().unwrap_or_default();
        match &declared {
            Some(first) if first != name => {
                return Err(DeployError::TwoNamespaces {
                    first: first.clone(),
                    second: name.to_owned(),
                });
            }
            _ => declared = Some(name.to_owned()),
        }
    }
    Ok(declared)
}

/// ServiceAccount subjects of a ClusterRoleBinding: a namespace-scoped agent binds them in the
/// target namespace whatever the YAML says; a cluster-scoped one fills a missing namespace.
fn normalise_subjects(document: &Value, namespace: &str, scope: Scope) -> Value {
    let mut document = document.clone();
    if kind(&document) != Some("ClusterRoleBinding") {
        return document;
    }
    if let Some(subjects) = document["subjects"].as_array_mut() {
        for subject in subjects
            .iter_mut()
            .filter(|s| s["kind"].as_str() == Some("ServiceAccount"))
        {
            let empty = subject["namespace"].as_str().is_none_or(str::is_empty);
            if scope == Scope::Namespace || empty {
                subject["namespace"] = json!(namespace);
            }
        }
    }
    document
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(namespace: Option<&str>) -> Vec<Value> {
        let mut docs = vec![
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "op"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                   "subjects": [{"kind": "ServiceAccount", "name": "op"},
                                {"kind": "ServiceAccount", "name": "other", "namespace": "elsewhere"},
                                {"kind": "User", "name": "u"}]}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "op"}}),
        ];
        if let Some(ns) = namespace {
            docs.insert(
                0,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            );
        }
        docs
    }

    const CLUSTER: Agent<'static> = Agent {
        namespace: "openhorizon-agent",
        scope: Scope::Cluster,
    };
    const SCOPED: Agent<'static> = Agent {
        namespace: "team-a",
        scope: Scope::Namespace,
    };

    fn subjects(deployment: &Deployment) -> Vec<Value> {
        deployment.objects[1]["subjects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["namespace"].clone())
            .collect()
    }

    #[test]
    fn cluster_scoped_agent_deploying_elsewhere() {
        // The agreement's namespace wins over the YAML's Namespace, which is replaced.
        let deployment = plan("ag1", "abc", &docs(Some("xyz")), &CLUSTER).unwrap();
        assert_eq!(deployment.namespace, "abc");
        assert_eq!(
            deployment.namespace_object,
            Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "abc"}}))
        );
        let policy = deployment.network_policy.clone().unwrap();
        assert_eq!(policy["metadata"]["name"], "ag1-networkpolicy");
        assert_eq!(policy["metadata"]["namespace"], "openhorizon-agent");
        assert_eq!(deployment.objects.len(), 3);
        assert_eq!(
            subjects(&deployment),
            vec![json!("abc"), json!("elsewhere"), Value::Null]
        );
        // The YAML's namespace when the agreement has none.
        let deployment = plan("ag1", "", &docs(Some("xyz")), &CLUSTER).unwrap();
        assert_eq!(deployment.namespace, "xyz");
        assert!(deployment.network_policy.is_some());
    }

    #[test]
    fn cluster_scoped_agent_at_home() {
        let deployment = plan("ag1", "", &docs(None), &CLUSTER).unwrap();
        assert_eq!(deployment.namespace, "openhorizon-agent");
        assert_eq!(deployment.namespace_object, None);
        assert_eq!(deployment.network_policy, None);
        assert_eq!(
            subjects(&deployment),
            vec![json!("openhorizon-agent"), json!("elsewhere"), Value::Null]
        );
    }

    #[test]
    fn namespace_scoped_agent() {
        let deployment = plan("ag1", "", &docs(None), &SCOPED).unwrap();
        assert_eq!(deployment.namespace, "team-a");
        assert_eq!(
            (
                deployment.namespace_object.clone(),
                deployment.network_policy.clone()
            ),
            (None, None)
        );
        // Forced into its own namespace, the YAML's "elsewhere" included.
        assert_eq!(
            subjects(&deployment),
            vec![json!("team-a"), json!("team-a"), Value::Null]
        );
        // Its own namespace named in the YAML or the agreement is fine.
        assert!(plan("ag1", "team-a", &docs(Some("team-a")), &SCOPED).is_ok());
        for (agreement_ns, yaml_ns, target) in [("abc", None, "abc"), ("", Some("xyz"), "xyz")] {
            assert_eq!(
                plan("ag1", agreement_ns, &docs(yaml_ns), &SCOPED)
                    .unwrap_err()
                    .to_string(),
                format!(
                    "Service failed to start for agreement ag1. Could not deploy service into namespace {target} because the agent's namespace is namespace scoped, and it restricts all services to the agent namespace team-a"
                )
            );
        }
    }

    #[test]
    fn refusals() {
        let cases = [
            (
                "Ag1",
                docs(None),
                "agreement id \"Ag1\": the objects named after it need lower-case letters, digits and '-', starting and ending with a letter or digit, at most 200 characters (anax's ids are 64 hexadecimal digits)",
            ),
            (
                "-a",
                docs(None),
                "agreement id \"-a\": the objects named after it need lower-case letters, digits and '-', starting and ending with a letter or digit, at most 200 characters (anax's ids are 64 hexadecimal digits)",
            ),
            (
                "ag1",
                vec![json!({"apiVersion": "v1", "metadata": {"name": "x"}})],
                "document 1: no kind; every object of the operator YAML needs apiVersion, kind and metadata.name",
            ),
            (
                "ag1",
                vec![
                    docs(None)[0].clone(),
                    json!({"apiVersion": "v1", "kind": "Service", "metadata": {}}),
                ],
                "document 2: no metadata.name; every object of the operator YAML needs apiVersion, kind and metadata.name",
            ),
            (
                "ag1",
                [docs(Some("a")), docs(Some("b"))].concat(),
                "the operator YAML declares two Namespaces, a and b; an operator installs into one namespace",
            ),
            (
                "ag1",
                vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}})],
                "the operator YAML holds no object to install",
            ),
        ];
        for (agreement, documents, want) in cases {
            assert_eq!(
                plan(agreement, "", &documents, &CLUSTER)
                    .unwrap_err()
                    .to_string(),
                want,
                "{agreement} {documents:?}"
            );
        }
        assert!(check_agreement(&"a".repeat(64)).is_ok());
    }
}
