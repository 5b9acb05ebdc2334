//! The target-namespace function from the rules of spec B.1, the seed's deployment examples,
//! the agent-side install rule and the clusterNamespace checks.

use super::*;
use crate::components::edge::agent_install::Scope::{Cluster, Namespace};

fn q<'a>(
    node_ns: &'a str,
    scope: Scope,
    deployer: &'a str,
    pattern: Option<&'a str>,
    service: &'a str,
) -> NamespaceQuestion<'a> {
    NamespaceQuestion {
        node_type: NodeType::Cluster,
        node_namespace: node_ns,
        node_scope: scope,
        deployer_namespace: deployer,
        pattern,
        service_namespace: service,
    }
}

#[test]
fn target_namespace_table() {
    let deployer_mismatch = "The namespace 'abc' specified in the deployment policy or pattern does not match the namespace of the agent: 'team'";
    let service_mismatch = "The namespace 'xyz' specified in the service does not match the namespace of the agent: 'team'. Please overwrite it in the deployment policy or pattern.";
    let cases: Vec<(NamespaceQuestion, bool, &str, &str)> = vec![
        // 1. devices have no namespace, whatever is asked.
        (
            NamespaceQuestion {
                node_type: NodeType::Device,
                ..q("team", Namespace, "abc", None, "xyz")
            },
            true,
            "",
            "",
        ),
        // 2. an empty node namespace is openhorizon-agent.
        (q("", Cluster, "", None, ""), true, "openhorizon-agent", ""),
        (
            q("", Namespace, "", None, ""),
            true,
            "openhorizon-agent",
            "",
        ),
        // 4. the deployer's namespace.
        (q("team", Cluster, "abc", None, "xyz"), true, "abc", ""),
        (q("team", Namespace, "team", None, "xyz"), true, "team", ""),
        (
            q("team", Namespace, "abc", None, ""),
            false,
            "",
            deployer_mismatch,
        ),
        // 5. the service's namespace.
        (q("team", Cluster, "", None, "xyz"), true, "xyz", ""),
        (q("team", Cluster, "", None, ""), true, "team", ""),
        (q("team", Namespace, "", None, ""), true, "team", ""),
        (q("team", Namespace, "", None, "team"), true, "team", ""),
        (
            q("team", Namespace, "", None, "xyz"),
            false,
            "",
            service_mismatch,
        ),
        // 3. patterns: named namespace on a namespace-scoped node, none on a cluster-scoped one.
        (
            q("team", Namespace, "team", Some("org/p"), "xyz"),
            true,
            "team",
            "",
        ),
        (
            q("team", Cluster, "", Some("org/p"), "xyz"),
            true,
            "xyz",
            "",
        ),
        (q("team", Cluster, "", Some("org/p"), ""), true, "team", ""),
    ];
    for (question, compatible, namespace, reason) in cases {
        let answer = target_namespace(&question);
        assert_eq!(
            answer,
            NamespaceAnswer {
                compatible,
                namespace: namespace.into(),
                reason: reason.into()
            },
            "{question:?}"
        );
    }
    for (question, reason) in [
        (
            q("team", Namespace, "", Some("org/p"), ""),
            "The namespace '' specified in the pattern 'org/p' is empty or does not match the namespace of the namespace scoped agent: 'team'. Namespace scoped agent is only compatible with pattern that has the same namespace with agent.",
        ),
        (
            q("team", Namespace, "abc", Some("org/p"), ""),
            "The namespace 'abc' specified in the pattern 'org/p' is empty or does not match the namespace of the namespace scoped agent: 'team'. Namespace scoped agent is only compatible with pattern that has the same namespace with agent.",
        ),
        (
            q("team", Cluster, "abc", Some("org/p"), ""),
            "The Cluster namespace specified in the pattern 'org/p' is abc, only pattern with empty cluster namespace can be registered for cluster scoped agent",
        ),
    ] {
        let answer = target_namespace(&question);
        assert!(!answer.compatible);
        assert_eq!(answer.reason, reason);
    }
}

/// A deployment policy, as far as placement is concerned.
struct Policy<'a> {
    cluster_namespace: &'a str,
    constraints: Vec<String>,
}

/// Whether the service is deployed to the node, and where: the policy's constraints against
/// the node's built-in properties, then the namespace function.
fn deployment(node_ns: &str, scope: Scope, policy: &Policy, service_ns: &str) -> Option<String> {
    let properties = builtin_properties(NodeType::Cluster, node_ns, scope);
    if !eval::satisfied(&policy.constraints, &properties).unwrap() {
        return None;
    }
    let answer = target_namespace(&q(
        node_ns,
        scope,
        policy.cluster_namespace,
        None,
        service_ns,
    ));
    answer.compatible.then_some(answer.namespace)
}

fn policy(cluster_namespace: &str, constraints: &[&str]) -> Policy<'static> {
    Policy {
        cluster_namespace: Box::leak(cluster_namespace.to_owned().into_boxed_str()),
        constraints: constraints.iter().map(|c| c.to_string()).collect(),
    }
}

/// Seed 000, "Deployment Examples", nodes with cluster privileges (1-4).
#[test]
fn seed_examples_cluster_scoped_nodes() {
    let node = "openhorizon-agent";
    // 1. no clusterNamespace, no embedded namespace: openhorizon-agent.
    assert_eq!(
        deployment(node, Cluster, &policy("", &[]), "").as_deref(),
        Some("openhorizon-agent")
    );
    // 2. clusterNamespace ABC: ABC.
    assert_eq!(
        deployment(node, Cluster, &policy("abc", &[]), "").as_deref(),
        Some("abc")
    );
    // 3. embedded namespace XYZ: XYZ.
    assert_eq!(
        deployment(node, Cluster, &policy("", &[]), "xyz").as_deref(),
        Some("xyz")
    );
    // 4. clusterNamespace ABC overrides the embedded XYZ.
    assert_eq!(
        deployment(node, Cluster, &policy("abc", &[]), "xyz").as_deref(),
        Some("abc")
    );
}

/// Seed 000, "Deployment Examples", namespace-scoped nodes (1-4).
#[test]
fn seed_examples_namespace_scoped_nodes() {
    let node = "abc";
    // 1. clusterNamespace ABC: deployed.
    assert_eq!(
        deployment(node, Namespace, &policy("abc", &[]), "").as_deref(),
        Some("abc")
    );
    // 2. no clusterNamespace: deployed (in the node's namespace).
    assert_eq!(
        deployment(node, Namespace, &policy("", &[]), "").as_deref(),
        Some("abc")
    );
    // 3. no clusterNamespace, constraint openhorizon.kubernetesNamespace=XYZ: not deployed.
    let xyz = ["openhorizon.kubernetesNamespace == xyz"];
    assert_eq!(deployment(node, Namespace, &policy("", &xyz), ""), None);
    assert_eq!(
        policy_publish_warning(&policy("", &xyz).constraints, ""),
        None
    );
    // 4. clusterNamespace ABC and the constraint: not deployed, and a warning at publish time
    //    (and deploycheck finds the policy incompatible).
    let p = policy("abc", &xyz);
    assert_eq!(deployment(node, Namespace, &p, ""), None);
    assert!(policy_publish_warning(&p.constraints, "abc").is_some());
    assert_eq!(
        cluster_namespace_conflict(&p.constraints, "abc").as_deref(),
        Some(
            "kubernetesNamespace defined in the constraint &[openhorizon.kubernetesNamespace == xyz] is different from the clusterNamespace 'abc' specified in the deployment policy, the policy might result in no service deployments"
        )
    );
}

#[test]
fn builtin_properties_of_a_cluster_node() {
    assert_eq!(builtin_properties(NodeType::Device, "x", Cluster), vec![]);
    let props = builtin_properties(NodeType::Cluster, "team", Namespace);
    assert!(eval::satisfied(&["openhorizon.kubernetesNamespace == team && openhorizon.kubernetesNamespaceScoped == true"], &props).unwrap());
    assert!(!eval::satisfied(&["openhorizon.kubernetesNamespaceScoped == false"], &props).unwrap());
}

/// anax's `ValidateClusterNSWithConstraint` (answers taken from anax main 2f3fa5a's own code):
/// the namespace terms keep their place in the constraint; other terms hold.
#[test]
fn cluster_namespace_conflict_keeps_the_structure() {
    let ns = "openhorizon.kubernetesNamespace";
    let cases: Vec<(Vec<String>, &str, Option<&str>)> = vec![
        (vec![format!("{ns} == abc")], "abc", None),
        (vec![format!("{ns} in \"abc,def\"")], "abc", None),
        (vec![format!("{ns} == x || {ns} == abc")], "abc", None),
        (
            vec![format!("{ns} == x || {ns} == y")],
            "abc",
            Some("openhorizon.kubernetesNamespace == x || openhorizon.kubernetesNamespace == y"),
        ),
        // Other terms are dropped: `purpose` is absent, and holds.
        (vec![format!("purpose == x && {ns} == abc")], "abc", None),
        // A branch without a namespace term holds.
        (vec![format!("purpose == x || {ns} == def")], "abc", None),
        (
            vec![format!("({ns} == x) || (purpose == 1 && {ns} == abc)")],
            "abc",
            None,
        ),
        (
            vec![format!("{ns} != abc")],
            "abc",
            Some("openhorizon.kubernetesNamespace != abc"),
        ),
        (
            vec![format!("{ns} == \"x\"")],
            "abc",
            Some("openhorizon.kubernetesNamespace == \"x\""),
        ),
        // Every constraint that mentions the property is shown, in order; others are not.
        (
            vec![
                format!("purpose == x && {ns} == def"),
                "a == 1".into(),
                format!("{ns} in \"abc,d\""),
            ],
            "abc",
            Some(
                "purpose == x && openhorizon.kubernetesNamespace == def openhorizon.kubernetesNamespace in \"abc,d\"",
            ),
        ),
        // The value is untyped, as anax's: a comma list equals one of its items.
        (vec![format!("{ns} == b")], "a,b", None),
        (vec![format!("{ns} == def")], "", None),
        (vec!["purpose == x".into()], "abc", None),
    ];
    for (constraints, cluster_ns, shown) in cases {
        let want = shown.map(|shown| format!(
            "kubernetesNamespace defined in the constraint &[{shown}] is different from the clusterNamespace '{cluster_ns}' specified in the deployment policy, the policy might result in no service deployments"
        ));
        assert_eq!(
            cluster_namespace_conflict(&constraints, cluster_ns),
            want,
            "{constraints:?} {cluster_ns}"
        );
        assert_eq!(
            policy_publish_warning(&constraints, cluster_ns),
            cluster_namespace_conflict(&constraints, cluster_ns)
        );
    }
}

#[test]
fn the_agent_side_install_rule() {
    assert_eq!(final_namespace("a", "o", "agent"), "a");
    assert_eq!(final_namespace("", "o", "agent"), "o");
    assert_eq!(final_namespace("", "", "agent"), "agent");

    let scoped = Agent {
        namespace: "team",
        scope: Namespace,
    };
    let cluster = Agent {
        namespace: "openhorizon-agent",
        scope: Cluster,
    };
    let same = install_plan("ag1", "", "", &scoped).unwrap();
    assert_eq!(
        same,
        InstallPlan {
            namespace: "team".into(),
            create_namespace: false,
            network_policy: None
        }
    );
    assert_eq!(
        install_plan("ag1", "other", "", &scoped)
            .unwrap_err()
            .to_string(),
        "Service failed to start for agreement ag1. Could not deploy service into namespace other because the agent's namespace is namespace scoped, and it restricts all services to the agent namespace team"
    );
    assert!(install_plan("ag1", "", "team", &scoped).is_ok());
    let plan = install_plan("ag1", "", "xyz", &cluster).unwrap();
    assert_eq!(plan.namespace, "xyz");
    assert!(plan.create_namespace);
    let policy = plan.network_policy.unwrap();
    assert_eq!(policy["metadata"]["name"], "ag1-networkpolicy");
    assert_eq!(policy["metadata"]["namespace"], "openhorizon-agent");
    let selector = json!({"kubernetes.io/metadata.name": "xyz"});
    assert_eq!(
        policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"],
        selector
    );
    assert_eq!(
        policy["spec"]["egress"][0]["to"][0]["namespaceSelector"]["matchLabels"],
        selector
    );
    serde_json::from_value::<k8s_openapi::api::networking::v1::NetworkPolicy>(policy).unwrap();
    let home = install_plan("ag1", "openhorizon-agent", "", &cluster).unwrap();
    assert_eq!(home.network_policy, None);
}

#[test]
fn service_publish_warning_only_for_an_embedded_namespace() {
    assert_eq!(service_publish_warning("org/s", ""), None);
    assert_eq!(
        service_publish_warning("org/s", "xyz").as_deref(),
        Some(
            "service org/s: Namespace is detected in operator file. Service namespace should be set in deployment policy or pattern"
        )
    );
}
