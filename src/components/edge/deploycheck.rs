//! `hzn deploycheck` for one node: per service, the checks in the order anax runs them (for a
//! deployment policy on a namespace-scoped cluster node, its `clusterNamespace` against its
//! `openhorizon.kubernetesNamespace` constraints first; then arch, service type against node
//! type, namespace, policy), the first failure deciding; and the publish-time warnings of the
//! policy or pattern and services given. Pure.

use serde::Serialize;

use super::agent_install::Scope;
use super::constraints::eval::{self, PolicySide};
use super::exchange::{DeploymentPolicy, Node, NodePolicy, Pattern, Service};
use super::placement::{self, NamespaceQuestion, NodeType};

/// What the services are deployed by.
#[derive(Debug, Clone, PartialEq)]
pub enum Deployer {
    Policy(DeploymentPolicy),
    /// The pattern and its `org/name`.
    Pattern(Pattern, String),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceVerdict {
    pub service: String,
    pub compatible: bool,
    /// The namespace the service lands in (empty for a device or when incompatible).
    pub namespace: String,
    /// The check that failed: `arch`, `type`, `namespace` or `policy`; empty when compatible.
    #[serde(rename = "failedCheck")]
    pub failed_check: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Every service is compatible.
    pub compatible: bool,
    pub services: Vec<ServiceVerdict>,
    /// Publish-time warnings and warnings about the seed's spellings.
    pub warnings: Vec<String>,
}

/// The architectures anax treats as one (`cutil.ArchString`).
fn normal_arch(arch: &str) -> &str {
    match arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "armhf" | "armv7l" => "arm",
        other => other,
    }
}

fn node_type(node: &Node) -> NodeType {
    match node.node_type.as_str() {
        "cluster" => NodeType::Cluster,
        _ => NodeType::Device,
    }
}

/// The report for `services` deployed by `deployer` to `node`.
pub fn deploycheck(
    node: &Node,
    node_policy: &NodePolicy,
    deployer: &Deployer,
    services: &[Service],
) -> Report {
    let mut warnings = publish_warnings(deployer, services);
    if let Deployer::Pattern(_, id) = deployer
        && node.pattern.is_empty()
    {
        warnings.push(format!(
            "the node runs no pattern (a policy node): pattern {id} is checked as if it did"
        ));
    }
    let services: Vec<ServiceVerdict> = (services.iter())
        .map(|s| check_service(node, node_policy, deployer, s))
        .collect();
    Report {
        compatible: services.iter().all(|s| s.compatible),
        services,
        warnings,
    }
}

fn publish_warnings(deployer: &Deployer, services: &[Service]) -> Vec<String> {
    let mut warnings = Vec::new();
    match deployer {
        Deployer::Policy(policy) => {
            if let Some(seed) = &policy.service.seed_cluster_namespace {
                warnings.push(format!(
                    "service.cluster_namespace {seed:?} is the seed design's spelling: the shipped field is service.clusterNamespace{}",
                    match policy.service.cluster_namespace.is_empty() {
                        true => " (used as such)",
                        false => " (which is set and wins)",
                    }
                ));
            }
            let ns = deployer_namespace(deployer);
            warnings.extend(placement::policy_publish_warning(&policy.constraints, &ns));
        }
        Deployer::Pattern(pattern, _) => {
            if let Some(seed) = &pattern.seed_namespace {
                warnings.push(format!(
                    "namespace {seed:?} is the seed design's spelling: the shipped pattern field is clusterNamespace{}",
                    match pattern.cluster_namespace.is_empty() {
                        true => " (used as such)",
                        false => " (which is set and wins)",
                    }
                ));
            }
        }
    }
    for service in services {
        // A namespace that cannot be read fails the service's namespace check.
        if let Ok(ns) = service.cluster_namespace() {
            warnings.extend(placement::service_publish_warning(&service.id(), &ns));
        }
    }
    warnings
}

/// `service.clusterNamespace` of the policy or `clusterNamespace` of the pattern (the seed's
/// spellings when the shipped one is empty).
fn deployer_namespace(deployer: &Deployer) -> String {
    let (shipped, seed) = match deployer {
        Deployer::Policy(p) => (
            &p.service.cluster_namespace,
            &p.service.seed_cluster_namespace,
        ),
        Deployer::Pattern(p, _) => (&p.cluster_namespace, &p.seed_namespace),
    };
    match shipped.is_empty() {
        true => seed.clone().unwrap_or_default(),
        false => shipped.clone(),
    }
}

fn check_service(
    node: &Node,
    node_policy: &NodePolicy,
    deployer: &Deployer,
    service: &Service,
) -> ServiceVerdict {
    let fail = |check: &str, reason: String| ServiceVerdict {
        service: service.id(),
        compatible: false,
        namespace: String::new(),
        failed_check: check.to_owned(),
        reason,
    };
    let kind = node_type(node);
    let scope = Scope::from_scoped(node.is_namespace_scoped);
    let deployer_ns = deployer_namespace(deployer);
    // 0. a deployment policy's clusterNamespace against its namespace constraints, on a
    // namespace-scoped cluster node (anax's policy check, before any service: incompatible).
    if let Deployer::Policy(policy) = deployer
        && kind == NodeType::Cluster
        && scope == Scope::Namespace
        && let Some(conflict) =
            placement::cluster_namespace_conflict(&policy.constraints, &deployer_ns)
    {
        return fail("namespace", format!("Policy Incompatible: {conflict}"));
    }
    // 1. arch
    if !node.arch.is_empty()
        && !service.arch.is_empty()
        && service.arch != "*"
        && normal_arch(&service.arch) != normal_arch(&node.arch)
    {
        let reason = format!(
            "Service with 'arch' {} cannot be deployed to the node with 'arch' {}.",
            service.arch, node.arch
        );
        return fail("arch", reason);
    }
    // 2. service type against node type
    match kind {
        NodeType::Device if !service.has_device_deployment() => {
            let reason =
                "Service does not have deployment configuration for node type 'device'.".into();
            return fail("type", reason);
        }
        NodeType::Cluster if !service.has_cluster_deployment() => {
            let reason =
                "Service does not have cluster deployment configuration for node type 'cluster'."
                    .into();
            return fail("type", reason);
        }
        _ => {}
    }
    // 3. namespace
    let pattern_id = match deployer {
        Deployer::Pattern(_, id) => Some(id.as_str()),
        Deployer::Policy(_) => None,
    };
    let service_ns = match service.cluster_namespace() {
        Ok(ns) => ns,
        Err(e) => {
            let reason = format!("Failed to get cluster deployment from the service. {e}");
            return fail("namespace", reason);
        }
    };
    let answer = placement::target_namespace(&NamespaceQuestion {
        node_type: kind,
        node_namespace: &node.cluster_namespace,
        node_scope: scope,
        deployer_namespace: &deployer_ns,
        pattern: pattern_id,
        service_namespace: &service_ns,
    });
    if !answer.compatible {
        // anax's wording per caller: the policy check's prefix; the pattern check's, which
        // names the pattern's namespace for a cluster-scoped node.
        let reason = match deployer {
            Deployer::Policy(_) => format!("Policy Incompatible: {}", answer.reason),
            Deployer::Pattern(..) if scope == Scope::Cluster => format!(
                "Cluster namespace {deployer_ns} in this pattern is incompatible: {}",
                answer.reason
            ),
            Deployer::Pattern(..) => {
                format!(
                    "Cluster namespace is incompatible, reason: {}",
                    answer.reason
                )
            }
        };
        return fail("namespace", reason);
    }
    // 4. policy (deployment policies only: a pattern node does not match by policy)
    if let Deployer::Policy(policy) = deployer {
        let node_side = node_policy.section(&node_policy.deployment);
        let node_ns = match node.cluster_namespace.as_str() {
            "" => super::agent_install::DEFAULT_AGENT_NAMESPACE,
            ns => ns,
        };
        let mut properties = placement::builtin_properties(kind, node_ns, scope);
        // Built-ins first: they are read-only, a node owner's property of the name loses.
        properties.extend(node_side.properties);
        let producer = PolicySide {
            properties,
            constraints: node_side.constraints,
        };
        let consumer = PolicySide {
            properties: policy.properties.clone(),
            constraints: policy.constraints.clone(),
        };
        if let Err(e) = eval::are_compatible(&producer, &consumer) {
            return fail("policy", format!("Policy Incompatible: {e}"));
        }
    }
    ServiceVerdict {
        service: service.id(),
        compatible: true,
        namespace: answer.namespace,
        failed_check: String::new(),
        reason: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(arch: &str, kind: &str, ns: &str, scoped: bool) -> Node {
        Node {
            arch: arch.into(),
            node_type: kind.into(),
            cluster_namespace: ns.into(),
            is_namespace_scoped: scoped,
            ..Node::default()
        }
    }

    fn service(arch: &str, device: bool, cluster_ns: Option<&str>) -> Service {
        Service {
            org: "org".into(),
            url: "svc".into(),
            version: "1.0.0".into(),
            arch: arch.into(),
            deployment: match device {
                true => json!("{\"services\": {}}"),
                false => json!(""),
            },
            cluster_deployment: match cluster_ns {
                // Publishing writes metadata.namespace, empty when the operator names none.
                Some("") => json!({"operatorYamlArchive": "x", "metadata": {"namespace": ""}}),
                Some(ns) => json!({"operatorYamlArchive": "x", "metadata": {"namespace": ns}}),
                None => json!(null),
            },
        }
    }

    fn policy(cluster_ns: &str, constraints: &[&str]) -> Deployer {
        let mut p = DeploymentPolicy::default();
        p.service.cluster_namespace = cluster_ns.into();
        p.constraints = constraints.iter().map(|c| c.to_string()).collect();
        Deployer::Policy(p)
    }

    fn one(node: &Node, deployer: &Deployer, svc: Service) -> ServiceVerdict {
        deploycheck(node, &NodePolicy::default(), deployer, &[svc])
            .services
            .remove(0)
    }

    #[test]
    fn the_checks_in_order() {
        let cluster = node("amd64", "cluster", "team", true);
        // arch first: everything else is wrong too.
        let v = one(
            &cluster,
            &policy("other", &["nope == 1"]),
            service("arm64", true, None),
        );
        assert_eq!(
            (v.failed_check.as_str(), v.reason.as_str()),
            (
                "arch",
                "Service with 'arch' arm64 cannot be deployed to the node with 'arch' amd64."
            )
        );
        // arch synonyms and `*`.
        assert_eq!(
            one(
                &node("x86_64", "cluster", "", false),
                &policy("", &[]),
                service("amd64", false, Some(""))
            )
            .failed_check,
            ""
        );
        // then the type.
        let v = one(
            &cluster,
            &policy("other", &["nope == 1"]),
            service("amd64", true, None),
        );
        assert_eq!(v.failed_check, "type");
        assert_eq!(
            v.reason,
            "Service does not have cluster deployment configuration for node type 'cluster'."
        );
        let v = one(
            &node("amd64", "device", "", false),
            &policy("", &[]),
            service("amd64", false, Some("")),
        );
        assert_eq!(
            v.reason,
            "Service does not have deployment configuration for node type 'device'."
        );
        // then the namespace.
        let v = one(
            &cluster,
            &policy("other", &["nope == 1"]),
            service("amd64", false, Some("")),
        );
        assert_eq!(v.failed_check, "namespace");
        assert_eq!(
            v.reason,
            "Policy Incompatible: The namespace 'other' specified in the deployment policy or pattern does not match the namespace of the agent: 'team'"
        );
        // then the policy.
        let v = one(
            &cluster,
            &policy("", &["nope == 1"]),
            service("amd64", false, Some("")),
        );
        assert_eq!(v.failed_check, "policy");
        // all good.
        let v = one(
            &cluster,
            &policy("", &["openhorizon.kubernetesNamespace == team"]),
            service("amd64", false, Some("")),
        );
        assert!(v.compatible, "{v:?}");
        assert_eq!(v.namespace, "team");
    }

    /// anax's policy check: on a namespace-scoped cluster node, a deployment policy whose
    /// clusterNamespace its own namespace constraints exclude is incompatible before any other
    /// check; the structure of the constraints is kept (an OR of namespaces is no conflict).
    #[test]
    fn the_cluster_namespace_constraint_conflict() {
        let conflict = |constraints: &str| {
            format!(
                "Policy Incompatible: kubernetesNamespace defined in the constraint &[{constraints}] is different from the clusterNamespace 'abc' specified in the deployment policy, the policy might result in no service deployments"
            )
        };
        let scoped = node("amd64", "cluster", "abc", true);
        let cases: Vec<(&str, &[&str], &str, String)> = vec![
            // A real conflict: incompatible, even before the arch check.
            (
                "arm64",
                &["openhorizon.kubernetesNamespace == xyz"],
                "namespace",
                conflict("openhorizon.kubernetesNamespace == xyz"),
            ),
            (
                "amd64",
                &[
                    "openhorizon.kubernetesNamespace == x || openhorizon.kubernetesNamespace == y",
                    "purpose == test",
                ],
                "namespace",
                conflict(
                    "openhorizon.kubernetesNamespace == x || openhorizon.kubernetesNamespace == y",
                ),
            ),
            // One namespace of an OR matches: no conflict (the policy check then decides).
            (
                "amd64",
                &["openhorizon.kubernetesNamespace == x || openhorizon.kubernetesNamespace == abc"],
                "",
                String::new(),
            ),
            (
                "amd64",
                &["openhorizon.kubernetesNamespace in \"x,abc\""],
                "",
                String::new(),
            ),
            // A branch on another property may hold: no conflict, the policy check fails.
            (
                "amd64",
                &["purpose == x || openhorizon.kubernetesNamespace == def"],
                "policy",
                String::new(),
            ),
        ];
        for (arch, constraints, check, reason) in cases {
            let v = one(
                &scoped,
                &policy("abc", constraints),
                service(arch, false, Some("")),
            );
            assert_eq!(v.failed_check, check, "{constraints:?}: {v:?}");
            if !reason.is_empty() {
                assert_eq!(v.reason, reason, "{constraints:?}");
            }
        }
        // A cluster-scoped node is not checked so.
        let v = one(
            &node("amd64", "cluster", "abc", false),
            &policy("abc", &["openhorizon.kubernetesNamespace == xyz"]),
            service("amd64", false, Some("")),
        );
        assert_eq!(v.failed_check, "policy");
        // Publishing warns with the same words, without the prefix; and about the operator's
        // namespace.
        let r = deploycheck(
            &scoped,
            &NodePolicy::default(),
            &policy("abc", &["openhorizon.kubernetesNamespace == xyz"]),
            &[service("amd64", false, Some("emb"))],
        );
        assert_eq!(
            r.warnings,
            [
                conflict("openhorizon.kubernetesNamespace == xyz")
                    .trim_start_matches("Policy Incompatible: ")
                    .to_owned(),
                "service org/svc_1.0.0_amd64: Namespace is detected in operator file. Service namespace should be set in deployment policy or pattern".into(),
            ]
        );
    }

    /// The service's namespace read from its operator archive when the deployment has no
    /// metadata: a namespace-scoped node in another namespace refuses it; an archive that
    /// cannot be read fails the namespace check with anax's words.
    #[test]
    fn the_namespace_inside_the_operator_archive() {
        let archive = crate::components::edge::operator_archive::tests::archive(&[(
            "operator/namespace.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: xyz\n",
        )]);
        let mut svc = service("amd64", false, Some(""));
        svc.cluster_deployment = json!({"operatorYamlArchive": archive});
        let scoped = node("amd64", "cluster", "abc", true);
        let r = deploycheck(
            &scoped,
            &NodePolicy::default(),
            &policy("", &[]),
            &[svc.clone()],
        );
        assert_eq!(
            r.services[0].reason,
            "Policy Incompatible: The namespace 'xyz' specified in the service does not match the namespace of the agent: 'abc'. Please overwrite it in the deployment policy or pattern."
        );
        assert_eq!(
            r.warnings,
            [
                "service org/svc_1.0.0_amd64: Namespace is detected in operator file. Service namespace should be set in deployment policy or pattern"
            ]
        );
        svc.cluster_deployment = json!({"operatorYamlArchive": "@@"});
        let v = one(&scoped, &policy("", &[]), svc);
        assert_eq!(v.failed_check, "namespace");
        assert!(
            v.reason.starts_with("Failed to get cluster deployment from the service. Failed to get the namespace from the Kube operator. "),
            "{}",
            v.reason
        );
    }

    #[test]
    fn node_policy_constraints_against_the_deployment_policy() {
        let cluster = node("amd64", "cluster", "", false);
        let mut node_policy = NodePolicy::default();
        node_policy.deployment.constraints = vec!["purpose == test".into()];
        let deployer = policy("", &[]);
        let v = deploycheck(
            &cluster,
            &node_policy,
            &deployer,
            &[service("amd64", false, Some(""))],
        )
        .services
        .remove(0);
        assert_eq!(v.failed_check, "policy");
        let Deployer::Policy(mut p) = deployer else {
            unreachable!()
        };
        p.properties = vec![crate::components::edge::properties::Property::new(
            "purpose",
            json!("test"),
        )];
        let v = deploycheck(
            &cluster,
            &node_policy,
            &Deployer::Policy(p),
            &[service("amd64", false, Some("xyz"))],
        )
        .services
        .remove(0);
        assert!(v.compatible);
        assert_eq!(v.namespace, "xyz");
    }

    #[test]
    fn patterns_and_seed_spellings() {
        let scoped = node("amd64", "cluster", "team", true);
        let pattern = |ns: &str| {
            Deployer::Pattern(
                Pattern {
                    cluster_namespace: ns.into(),
                    ..Pattern::default()
                },
                "org/p".into(),
            )
        };
        let v = one(&scoped, &pattern(""), service("amd64", false, Some("")));
        assert_eq!(v.failed_check, "namespace");
        assert_eq!(
            v.reason,
            "Cluster namespace is incompatible, reason: The namespace '' specified in the pattern 'org/p' is empty or does not match the namespace of the namespace scoped agent: 'team'. Namespace scoped agent is only compatible with pattern that has the same namespace with agent."
        );
        let v = one(
            &node("amd64", "cluster", "", false),
            &pattern("team"),
            service("amd64", false, Some("")),
        );
        assert_eq!(
            v.reason,
            "Cluster namespace team in this pattern is incompatible: The Cluster namespace specified in the pattern 'org/p' is team, only pattern with empty cluster namespace can be registered for cluster scoped agent"
        );
        assert!(one(&scoped, &pattern("team"), service("amd64", false, Some(""))).compatible);
        let seed = Deployer::Pattern(
            Pattern {
                seed_namespace: Some("team".into()),
                ..Pattern::default()
            },
            "org/p".into(),
        );
        let r = deploycheck(
            &scoped,
            &NodePolicy::default(),
            &seed,
            &[service("amd64", false, Some(""))],
        );
        assert!(r.compatible);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("seed design's spelling")),
            "{:?}",
            r.warnings
        );
    }
}
