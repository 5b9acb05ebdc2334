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
/// node it must name none (anax `ValidatePatternClusterNamespace`, with its messages).
fn pattern_refusal(pattern: &str, pattern_ns: &str, node_ns: &str, scoped: bool) -> Option<String> {
    match scoped {
        true if pattern_ns != node_ns => Some(format!(
            "The namespace '{pattern_ns}' specified in the pattern '{pattern}' is empty or does not match the namespace of the namespace scoped agent: '{node_ns}'. Namespace scoped agent is only compatible with pattern that has the same namespace with agent."
        )),
        false if !pattern_ns.is_empty() => Some(format!(
            "The Cluster namespace specified in the pattern '{pattern}' is {pattern_ns}, only pattern with empty cluster namespace can be registered for cluster scoped agent"
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

/// The check of a deployment policy's `clusterNamespace` against its constraints (anax
/// `businesspolicy.ValidateClusterNSWithConstraint`): the constraints that mention
/// `openhorizon.kubernetesNamespace`, kept with their structure (AND, OR, parentheses) but
/// with every term on another property dropped, must hold for that property set to the
/// `clusterNamespace`; so `a == x || a == y` conflicts only when the namespace is neither, and
/// an OR with a branch on other properties never does. `Some(anax's message)` on a conflict
/// (it prints the constraints it kept as Go prints the pointer to them, `&[A B]`); `None` when
/// they hold, or there is no clusterNamespace. deploycheck makes a conflict on a
/// namespace-scoped cluster node incompatible, publishing warns.
pub fn cluster_namespace_conflict(
    constraints: &[String],
    cluster_namespace: &str,
) -> Option<String> {
    if cluster_namespace.is_empty() {
        return None;
    }
    // Untyped, as anax's Property_Factory makes it.
    let property = [Property::new(NAMESPACE_PROPERTY, json!(cluster_namespace))];
    let kept: Vec<&String> = (constraints.iter())
        .filter(|c| c.contains(NAMESPACE_PROPERTY))
        .collect();
    // A constraint that does not parse decides nothing here (validation reports it).
    let holds = (kept.iter())
        .filter_map(|c| constraints::parse(c).ok())
        .all(|tree| holds_on_the_namespace(&tree, &property));
    (!holds).then(|| {
        let shown: Vec<&str> = kept.iter().map(|c| c.as_str()).collect();
        format!(
            "kubernetesNamespace defined in the constraint &[{}] is different from the clusterNamespace '{cluster_namespace}' specified in the deployment policy, the policy might result in no service deployments",
            shown.join(" ")
        )
    })
}

/// The constraint with only its namespace terms (others hold), as anax's
/// `getConstraintExpressionWithName` prunes it: an AND group holds when each of its namespace
/// terms and groups holds (an empty one holds), an OR when one of its groups does.
fn holds_on_the_namespace(tree: &constraints::Disjunction, property: &[Property]) -> bool {
    tree.0.is_empty()
        || tree.0.iter().any(|group| {
            group.iter().all(|node| match node {
                // A namespace that is a lone quote decides nothing (anax panics there).
                Node::Term(term) if term.name == NAMESPACE_PROPERTY => {
                    eval::term_holds(term, property).unwrap_or(true)
                }
                Node::Term(_) => true,
                Node::Group(inner) => holds_on_the_namespace(inner, property),
            })
        })
}

/// The warning `hzn exchange deployment addpolicy` prints (anax `ValidateClusterNS`): the
/// conflict above.
pub fn policy_publish_warning(constraints: &[String], cluster_namespace: &str) -> Option<String> {
    cluster_namespace_conflict(constraints, cluster_namespace)
}

/// The warning `hzn exchange service publish` prints when the operator declares a namespace
/// (anax `kube_deployment` `Sign`), with the service it is about.
pub fn service_publish_warning(service: &str, service_namespace: &str) -> Option<String> {
    (!service_namespace.is_empty()).then(|| format!(
        "service {service}: Namespace is detected in operator file. Service namespace should be set in deployment policy or pattern"
    ))
}

#[cfg(test)]
mod tests;
