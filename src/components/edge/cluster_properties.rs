//! The built-in node properties an edge cluster agent computes from its cluster (anax main
//! 2f3fa5a `cutil.GetClusterCountInfo` and `externalpolicy.createClusterNodeBuiltInPolicy`):
//! the Nodes' first architecture, their summed CPU capacity, their summed memory capacity in
//! MB (10^6 bytes, rounded), the server's `gitVersion`, the agent's namespace and scope, and
//! `openhorizon.allowPrivileged` true. Pure: the shell lists the Nodes with the agent's rights.
//!
//! When the Node list is refused anax gives up on all of them at once: cpu and memory 0, an
//! empty arch, no version, an empty namespace and `false` scope, which is what a mistake in the
//! agent's RBAC publishes ([`unreadable`]).

use serde_json::json;

use super::agent_install::Scope;
use super::placement::{NAMESPACE_PROPERTY, NAMESPACE_SCOPED_PROPERTY};
use super::properties::Property;

pub const ARCH_PROPERTY: &str = "openhorizon.arch";
pub const CPU_PROPERTY: &str = "openhorizon.cpu";
pub const MEMORY_PROPERTY: &str = "openhorizon.memory";
pub const PRIVILEGED_PROPERTY: &str = "openhorizon.allowPrivileged";
pub const K8S_VERSION_PROPERTY: &str = "openhorizon.kubernetesVersion";

/// What the agent reads of one Node: `status.nodeInfo.architecture` and the `cpu` and
/// `memory` of `status.capacity` (Kubernetes quantities; absent reads as zero).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    pub architecture: String,
    pub cpu: Option<String>,
    pub memory: Option<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PropertiesError {
    #[error("Node {node}: {field} {value:?} is not a Kubernetes quantity")]
    Quantity {
        node: usize,
        field: &'static str,
        value: String,
    },
}

/// The properties in anax's order: arch, cpu, allowPrivileged, kubernetesVersion (when the
/// server gave one), kubernetesNamespace, kubernetesNamespaceScoped, memory.
pub fn builtin_properties(
    nodes: &[NodeFacts],
    version: Option<&str>,
    namespace: &str,
    scope: Scope,
) -> Result<Vec<Property>, PropertiesError> {
    let mut arch = "";
    let (mut cpu, mut memory) = (0.0, 0.0);
    for (index, node) in nodes.iter().enumerate() {
        if arch.is_empty() {
            arch = &node.architecture;
        }
        let read = |field, value: &Option<String>| match value {
            None => Ok(0.0),
            Some(text) => quantity(text).ok_or_else(|| PropertiesError::Quantity {
                node: index,
                field,
                value: text.clone(),
            }),
        };
        cpu += read("capacity.cpu", &node.cpu)?;
        memory += read("capacity.memory", &node.memory)? / 1_000_000.0;
    }
    let mut properties = vec![
        Property::new(ARCH_PROPERTY, json!(arch)),
        Property::new(CPU_PROPERTY, json!(cpu)),
        Property::new(PRIVILEGED_PROPERTY, json!(true)),
    ];
    if let Some(version) = version.filter(|v| !v.is_empty()) {
        properties.push(Property::new(K8S_VERSION_PROPERTY, json!(version)));
    }
    properties.extend([
        Property::new(NAMESPACE_PROPERTY, json!(namespace)),
        Property::new(NAMESPACE_SCOPED_PROPERTY, json!(scope == Scope::Namespace)),
        Property::new(MEMORY_PROPERTY, json!(memory.round())),
    ]);
    Ok(properties)
}

/// What anax publishes when it cannot list the Nodes.
pub fn unreadable() -> Vec<Property> {
    vec![
        Property::new(ARCH_PROPERTY, json!("")),
        Property::new(CPU_PROPERTY, json!(0.0)),
        Property::new(PRIVILEGED_PROPERTY, json!(true)),
        Property::new(NAMESPACE_PROPERTY, json!("")),
        Property::new(NAMESPACE_SCOPED_PROPERTY, json!(false)),
        Property::new(MEMORY_PROPERTY, json!(0.0)),
    ]
}

/// A Kubernetes quantity (`4`, `500m`, `16Gi`, `1.5e3`, `129M`) as a number, as anax's
/// `FloatFromQuantity` reads it. By hand: no crate the project has parses quantities, and the
/// grammar is one line (apimachinery `resource.ParseQuantity`).
pub fn quantity(text: &str) -> Option<f64> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(end);
    let sign_free = number.strip_prefix(['+', '-']).unwrap_or(number);
    if sign_free.is_empty()
        || sign_free.contains(['+', '-'])
        || sign_free.matches('.').count() > 1
        || sign_free == "."
    {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let multiplier = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exponent => {
            let digits = exponent.strip_prefix(['e', 'E'])?;
            let unsigned = digits.strip_prefix(['+', '-']).unwrap_or(digits);
            if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            10f64.powi(digits.parse().ok()?)
        }
    };
    Some(value * multiplier)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        for (text, want) in [
            ("4", Some(4.0)),
            ("500m", Some(0.5)),
            ("1.5", Some(1.5)),
            ("16Gi", Some(17_179_869_184.0)),
            ("16393100Ki", Some(16_786_534_400.0)),
            ("129M", Some(129e6)),
            ("1e3", Some(1000.0)),
            ("1E-3", Some(0.001)),
            ("+2k", Some(2000.0)),
            ("", None),
            ("Gi", None),
            ("1.2.3", None),
            ("4 Gi", None),
            ("4GB", None),
            ("1e", None),
            ("--1", None),
        ] {
            assert_eq!(quantity(text), want, "{text:?}");
        }
    }

    fn node(arch: &str, cpu: &str, memory: &str) -> NodeFacts {
        NodeFacts {
            architecture: arch.into(),
            cpu: Some(cpu.into()),
            memory: Some(memory.into()),
        }
    }

    fn names_and_values(properties: &[Property]) -> Vec<(String, serde_json::Value)> {
        properties
            .iter()
            .map(|p| (p.name.clone(), p.value.clone().unwrap()))
            .collect()
    }

    #[test]
    fn summed_over_the_nodes_in_anaxs_order() {
        let nodes = [
            node("arm64", "4", "16393100Ki"),
            node("amd64", "500m", "8Gi"),
            NodeFacts::default(),
        ];
        let properties =
            builtin_properties(&nodes, Some("v1.34.4"), "team-a", Scope::Namespace).unwrap();
        assert_eq!(
            names_and_values(&properties),
            [
                ("openhorizon.arch".into(), json!("arm64")),
                ("openhorizon.cpu".into(), json!(4.5)),
                ("openhorizon.allowPrivileged".into(), json!(true)),
                ("openhorizon.kubernetesVersion".into(), json!("v1.34.4")),
                ("openhorizon.kubernetesNamespace".into(), json!("team-a")),
                ("openhorizon.kubernetesNamespaceScoped".into(), json!(true)),
                // 16786.5344 + 8589.934592 MB
                ("openhorizon.memory".into(), json!(25376.0)),
            ]
        );
        // No version: no property; no nodes: zeros and an empty arch.
        let properties = builtin_properties(&[], None, "ns", Scope::Cluster).unwrap();
        assert!(properties.iter().all(|p| p.name != K8S_VERSION_PROPERTY));
        assert_eq!(properties[0].value, Some(json!("")));
        assert_eq!(
            builtin_properties(&[node("amd64", "four", "1")], None, "ns", Scope::Cluster)
                .unwrap_err()
                .to_string(),
            "Node 0: capacity.cpu \"four\" is not a Kubernetes quantity"
        );
        let lost = names_and_values(&unreadable());
        assert!(lost.contains(&("openhorizon.kubernetesNamespace".into(), json!(""))));
    }
}
