//! Where an edge cluster service lands (spec B.1): the built-in node properties of a cluster
//! agent, the target-namespace function every caller uses (anax
//! `compcheck.CheckClusterNamespaceCompatibility`: agbot, agent and deploycheck alike), the
//! agent-side install rule (`kube_operator.Install`: the final namespace, the refusal of a
//! namespace-scoped agent, the NetworkPolicy of a cluster-scoped one), and the `clusterNamespace`
//! versus `openhorizon.kubernetesNamespace` checks of deploycheck and publishing. Pure.

use serde_json::{Value, json};

use super::agent_install::{DEFAULT_AGENT_NAMESPACE, Scope};
use super::constraints::{self, Node, eval};
use super::properties::{BOOLEAN_TYPE, Property, STRING_TYPE};

pub const NAMESPACE_PROPERTY: &str = "openhorizon.kubernetesNamespace";
pub const NAMESPACE_SCOPED_PROPERTY: &str = "openhorizon.kubernetesNamespaceScoped";

/// A node is a device or an edge cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeType {
    Device,
    Cluster,
}

/// The read-only built-in properties an edge cluster node has for its namespace and scope
/// (anax 2.31.0 and later); a device has neither.
pub fn builtin_properties(node_type: NodeType, namespace: &str, scope: Scope) -> Vec<Property> {
    match node_type {
        NodeType::Device => vec![],
        NodeType::Cluster => vec![
            Property::typed(NAMESPACE_PROPERTY, json!(namespace), STRING_TYPE),
            Property::typed(
                NAMESPACE_SCOPED_PROPERTY,
                json!(scope == Scope::Namespace),
                BOOLEAN_TYPE,
            ),
        ],
    }
}

/// What the target-namespace function is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceQuestion<'a> {
    pub node_type: NodeType,
    /// The agent's namespace; empty means `openhorizon-agent`.
    pub node_namespace: &'a str,
    pub node_scope: Scope,
    /// `service.clusterNamespace` of the deployment policy, or the pattern's `clusterNamespace`.
    pub deployer_namespace: &'a str,
    /// `org/name` of the pattern when the node runs one.
    pub pattern: Option<&'a str>,
    /// The namespace the service's operator YAML declares (`clusterDeployment.metadata.namespace`).
    pub service_namespace: &'a str,
}

/// Its answer: `{"compatible", "namespace", "reason"}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NamespaceAnswer {
    pub compatible: bool,
    pub namespace: String,
    pub reason: String,
}

impl NamespaceAnswer {
    fn ok(namespace: &str) -> Self {
        NamespaceAnswer {
            compatible: true,
            namespace: namespace.to_owned(),
            reason: String::new(),
        }
    }

    fn refused(reason: String) -> Self {
        NamespaceAnswer {
            compatible: false,
            namespace: String::new(),
            reason,
        }
    }
}

/// The namespace a service deploys into on a node, or why it cannot run there. Devices have no
/// namespace. A pattern must name the namespace of a namespace-scoped node and must name none
/// for a cluster-scoped one; then the deployer's namespace wins if the node may use it, else the
/// service's own if the node may use it, else the agent's.
pub fn target_namespace(q: &NamespaceQuestion<'_>) -> NamespaceAnswer {
    if q.node_type == NodeType::Device {
        return NamespaceAnswer::ok("");
    }
    let node_ns = match q.node_namespace {
        "" => DEFAULT_AGENT_NAMESPACE,
        ns => ns,
    };
    let scoped = q.node_scope == Scope::Namespace;
    if let Some(reason) =
        (q.pattern).and_then(|p| pattern_refusal(p, q.deployer_namespace, node_ns, scoped))
    {
        return NamespaceAnswer::refused(reason);
    }
    let deployer = q.deployer_namespace;
    if !deployer.is_empty() {
        return match !scoped || deployer == node_ns {
            true => NamespaceAnswer::ok(deployer),
            false => NamespaceAnswer::refused(format!(
                "The namespace '{deployer}' specified in the deployment policy or pattern does not match the namespace of the agent: '{node_ns}'"
            )),
        };
    }
    let service = q.service_namespace;
    match (scoped, service) {
        (false, "") => NamespaceAnswer::ok(node_ns),
        (false, service) => NamespaceAnswer::ok(service),
        (true, "") => NamespaceAnswer::ok(node_ns),
        (true, service) if service == node_ns => NamespaceAnswer::ok(node_ns),
        (true, service) => NamespaceAnswer::refused(format!(
            "The namespace '{service}' specified in the service does not match the namespace of the agent: '{node_ns}'. Please overwrite it in the deployment policy or pattern."
        )),
    }
}

/// A pattern on a namespace-scoped node must name that node's namespace; on a cluster-scoped
/// node it must name none. (anax `ValidatePatternClusterNamespace`; the wording is cvo's.)
fn pattern_refusal(pattern: &str, pattern_ns: &str, node_ns: &str, scoped: bool) -> Option<String> {
    match (scoped, pattern_ns) {
        (true, "") => Some(format!(
            "The pattern {pattern} has no clusterNamespace: a namespace-scoped node in namespace '{node_ns}' only runs a pattern whose clusterNamespace is '{node_ns}'"
        )),
        (true, ns) if ns != node_ns => Some(format!(
            "The clusterNamespace '{ns}' of the pattern {pattern} does not match the namespace of the namespace-scoped agent: '{node_ns}'"
        )),
        (false, ns) if !ns.is_empty() => Some(format!(
            "The pattern {pattern} has clusterNamespace '{ns}': a cluster-scoped node only runs patterns without a clusterNamespace"
        )),
        _ => None,
    }
}

/// The agent that installs a service: its namespace and scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent<'a> {
    pub namespace: &'a str,
    pub scope: Scope,
}

/// What the agent does to install an operator: the namespace, and for a cluster-scoped agent
/// deploying elsewhere, the namespace to create and the NetworkPolicy to let the two talk.
#[derive(Debug, Clone, PartialEq)]
pub struct InstallPlan {
    pub namespace: String,
    pub create_namespace: bool,
    pub network_policy: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallRefusal {
    #[error(
        "Service failed to start for agreement {agreement}. Could not deploy service into namespace {namespace} because the agent's namespace is namespace scoped, and it restricts all services to the agent namespace {agent_namespace}"
    )]
    NamespaceScoped {
        agreement: String,
        namespace: String,
        agent_namespace: String,
    },
}

/// The final namespace: the agreement's, else the operator YAML's, else the agent's.
pub fn final_namespace<'a>(
    agreement_ns: &'a str,
    operator_ns: &'a str,
    agent_ns: &'a str,
) -> &'a str {
    [agreement_ns, operator_ns]
        .into_iter()
        .find(|ns| !ns.is_empty())
        .unwrap_or(agent_ns)
}

/// The agent-side install rule for agreement `agreement`.
pub fn install_plan(
    agreement: &str,
    agreement_ns: &str,
    operator_ns: &str,
    agent: &Agent<'_>,
) -> Result<InstallPlan, InstallRefusal> {
    let namespace = final_namespace(agreement_ns, operator_ns, agent.namespace);
    if namespace == agent.namespace {
        return Ok(InstallPlan {
            namespace: namespace.to_owned(),
            create_namespace: false,
            network_policy: None,
        });
    }
    match agent.scope {
        Scope::Namespace => Err(InstallRefusal::NamespaceScoped {
            agreement: agreement.to_owned(),
            namespace: namespace.to_owned(),
            agent_namespace: agent.namespace.to_owned(),
        }),
        Scope::Cluster => Ok(InstallPlan {
            namespace: namespace.to_owned(),
            create_namespace: true,
            network_policy: Some(network_policy(agreement, agent.namespace, namespace)),
        }),
    }
}

/// anax's NetworkPolicy name suffix (`<agreementId>-networkPolicy`): the apiserver refuses the
/// name (a name is a lowercase RFC 1123 subdomain), and anax logs the error and installs the
/// service without the policy.
pub const UPSTREAM_NETWORK_POLICY_SUFFIX: &str = "-networkPolicy";

/// `<agreement>-networkpolicy`: anax's name in lower case, so that the policy exists.
pub fn network_policy_name(agreement: &str) -> String {
    format!(
        "{agreement}{}",
        UPSTREAM_NETWORK_POLICY_SUFFIX.to_ascii_lowercase()
    )
}

/// The NetworkPolicy in the agent namespace ([`network_policy_name`]): ingress from and egress
/// to the service's namespace, selected by its `kubernetes.io/metadata.name` label.
pub fn network_policy(agreement: &str, agent_ns: &str, service_ns: &str) -> Value {
    let peer = json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": service_ns}}}]);
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": network_policy_name(agreement), "namespace": agent_ns},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": peer}],
            "egress": [{"to": peer}],
        },
    })
}

/// deploycheck's check for a namespace-scoped node (anax
/// `businesspolicy.ValidateClusterNSWithConstraint`): the sub-expressions of the constraints
/// that test `openhorizon.kubernetesNamespace`, against that property set to the policy's
/// `clusterNamespace`. `None` when they hold (or there are none, or no clusterNamespace).
pub fn cluster_namespace_conflict(
    constraints: &[String],
    cluster_namespace: &str,
) -> Option<String> {
    if cluster_namespace.is_empty() {
        return None;
    }
    let property = [Property::typed(
        NAMESPACE_PROPERTY,
        json!(cluster_namespace),
        STRING_TYPE,
    )];
    for constraint in constraints {
        let Ok(tree) = constraints::parse(constraint) else {
            continue;
        };
        let terms = namespace_terms(&tree);
        if terms.is_empty() {
            continue;
        }
        // A namespace that is a lone quote decides nothing (anax panics there): not a conflict.
        let holds = (terms.iter()).all(|t| eval::term_holds(t, &property).unwrap_or(true));
        if !holds {
            return Some(format!(
                "Policy Incompatible: kubernetesNamespace defined in the constraint {constraint} is different from the clusterNamespace '{cluster_namespace}' specified in the deployment policy, the policy might result in no service deployments"
            ));
        }
    }
    None
}

/// The terms of a constraint that test the namespace property, wherever they sit.
fn namespace_terms(tree: &constraints::Disjunction) -> Vec<&constraints::Term> {
    let mut out = Vec::new();
    for group in &tree.0 {
        for node in group {
            match node {
                Node::Term(term) if term.name == NAMESPACE_PROPERTY => out.push(term),
                Node::Term(_) => {}
                Node::Group(inner) => out.extend(namespace_terms(inner)),
            }
        }
    }
    out
}

/// Warnings at publish time: a deployment policy with a `clusterNamespace` and a constraint on
/// `openhorizon.kubernetesNamespace`; a service whose operator YAML embeds a namespace.
pub fn policy_publish_warning(constraints: &[String], cluster_namespace: &str) -> Option<String> {
    let tests_namespace = constraints
        .iter()
        .any(|c| constraints::parse(c).is_ok_and(|tree| !namespace_terms(&tree).is_empty()));
    (tests_namespace && !cluster_namespace.is_empty()).then(|| format!(
        "the deployment policy specifies clusterNamespace '{cluster_namespace}' and its constraints test {NAMESPACE_PROPERTY}: it may result in no service deployment. Run `cvo edge deploycheck` to check it against a node."
    ))
}

pub fn service_publish_warning(service: &str, service_namespace: &str) -> Option<String> {
    (!service_namespace.is_empty()).then(|| format!(
        "the operator of service {service} embeds namespace '{service_namespace}': the namespace is a deployment concern, set clusterNamespace in the deployment policy or pattern instead; the service might not be deployable to namespace-scoped nodes in other namespaces. Run `cvo edge deploycheck` before deploying it."
    ))
}

#[cfg(test)]
mod tests;
