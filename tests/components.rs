//! The payload components against a real kube-apiserver with kube-controller-manager's
//! namespace, garbage-collector and ClusterRole-aggregation controllers (the last fills the
//! `admin` role provisioned namespaces bind) (`hack/cluster`, `CVO_CLUSTER_CONTROLLERS`), so
//! that deletion timestamps, finalizers and namespace deletion are the real thing; its
//! ServiceAccount tokens live at most an hour (`--service-account-max-token-expiration`). One cluster
//! for the binary; without Go the binary skips, unless `CVO_REQUIRE_CLUSTER=1`.

#[path = "support/cluster.rs"]
mod cluster_support;
#[path = "support/runner.rs"]
mod runner;

#[path = "components/agents.rs"]
mod agents;
#[path = "components/deployment_targets.rs"]
mod deployment_targets;
#[path = "components/edge_agent.rs"]
mod edge_agent;

use std::process::ExitCode;
use std::time::Duration;

use cluster_support::Cluster;
pub use runner::Ctx;
use runner::{Suite, TestFn};

/// kube-apiserver's `--service-account-max-token-expiration` for the component tests.
pub const MAX_TOKEN_EXPIRATION: &str = "1h";

/// Bounds every test (namespace deletion alone takes the namespace controller ~5 s).
const TEST_TIMEOUT: Duration = Duration::from_secs(180);

const TESTS: &[(&str, TestFn)] = &[
    ("dt_namespace_provisioner_lifecycle", |c| {
        Box::pin(deployment_targets::namespace_provisioner_lifecycle(c))
    }),
    ("dt_retain_keeps_a_released_target", |c| {
        Box::pin(deployment_targets::retain_keeps_a_released_target(c))
    }),
    (
        "dt_pre_bound_target_is_reserved_and_a_conflict_gets_the_message",
        |c| {
            Box::pin(
                deployment_targets::pre_bound_target_is_reserved_and_a_conflict_gets_the_message(c),
            )
        },
    ),
    ("dt_tenant_admin_claims_and_is_bound", |c| {
        Box::pin(deployment_targets::tenant_admin_claims_and_is_bound(c))
    }),
    ("dt_class_parameters_and_token_renewal", |c| {
        Box::pin(deployment_targets::class_parameters_and_token_renewal(c))
    }),
    ("dt_devsandbox_space_request_becomes_a_bound_target", |c| {
        Box::pin(deployment_targets::devsandbox_space_request_becomes_a_bound_target(c))
    }),
    ("dt_claims_created_together_bind_distinct_targets", |c| {
        Box::pin(deployment_targets::claims_created_together_bind_distinct_targets(c))
    }),
    ("dt_environment_webhook_refuses_and_admits", |c| {
        Box::pin(deployment_targets::environment_webhook_refuses_and_admits(
            c,
        ))
    }),
    ("edge_agent_scopes_on_a_real_cluster", |c| {
        Box::pin(edge_agent::agent_scopes_on_a_real_cluster(c))
    }),
    ("edge_deploy_as_the_agent_would", |c| {
        Box::pin(edge_agent::deploy_as_the_agent_would(c))
    }),
    ("edge_least_privilege_agent_reads_its_properties", |c| {
        Box::pin(edge_agent::least_privilege_agent_reads_its_properties(c))
    }),
    ("agents_pool_registration", |c| {
        Box::pin(agents::pool_registration(c))
    }),
    ("agents_bind_move_and_unbind", |c| {
        Box::pin(agents::bind_move_and_unbind(c))
    }),
    ("agents_cluster_deletion_returns_or_deletes_agents", |c| {
        Box::pin(agents::cluster_deletion_returns_or_deletes_agents(c))
    }),
    ("agents_infraenv_deletion_waits_for_bound_hosts", |c| {
        Box::pin(agents::infraenv_deletion_waits_for_bound_hosts(c))
    }),
    (
        "agents_reclaim_reboots_an_installed_host_into_the_pool",
        |c| Box::pin(agents::reclaim_reboots_an_installed_host_into_the_pool(c)),
    ),
    ("agents_bind_across_namespaces", |c| {
        Box::pin(agents::bind_across_namespaces(c))
    }),
    ("agents_labels_and_auto_approval", |c| {
        Box::pin(agents::labels_and_auto_approval(c))
    }),
    ("agents_reclaim_times_out_without_a_reclaim_agent", |c| {
        Box::pin(agents::reclaim_times_out_without_a_reclaim_agent(c))
    }),
    (
        "agents_bound_validations_and_teardown_during_installation",
        |c| {
            Box::pin(agents::bound_validations_and_teardown_during_installation(
                c,
            ))
        },
    ),
];

/// Every component's CRDs.
async fn install(admin: &kube::Client) -> anyhow::Result<()> {
    deployment_targets::install(admin).await?;
    agents::install(admin).await
}

fn main() -> ExitCode {
    let suite = Suite {
        what: "component",
        tests: TESTS,
        timeout: TEST_TIMEOUT,
        setup: Some(|admin| Box::pin(install(admin))),
    };
    suite.main(|| {
        Cluster::start_with(
            "namespace,garbagecollector,clusterrole-aggregation",
            // Tokens live an hour at most (the shortest the flag allows), as a cluster that caps
            // them: the DeploymentTarget provisioner's tokens are renewed from what it gave.
            &format!("--service-account-max-token-expiration={MAX_TOKEN_EXPIRATION}"),
        )
    })
}

/// Polls `check` every 200 ms until it gives `Some`, for at most `within` (the component tests'
/// shared wait).
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let started = std::time::Instant::now();
    let mut last = None;
    loop {
        match check().await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => {}
            Err(e) => last = Some(e),
        }
        if started.elapsed() > within {
            anyhow::bail!("{what}: not within {within:?} (last error: {last:?})");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates the namespace `name` unless it exists.
pub async fn namespace(admin: &kube::Client, name: &str) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, PostParams};
    let api: Api<Namespace> = Api::all(admin.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?;
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Server-side applies each document (a Kubernetes object as JSON) as the test's field manager.
pub async fn apply_all(
    client: &kube::Client,
    documents: &[serde_json::Value],
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
    use kube::discovery::{Scope, pinned_kind};
    for document in documents {
        let object: DynamicObject = serde_json::from_value(document.clone())?;
        let types = object
            .types
            .clone()
            .context("a document without apiVersion/kind")?;
        let gvk = GroupVersionKind::try_from(&types)?;
        let (resource, caps) = pinned_kind(client, &gvk).await?;
        let api: Api<DynamicObject> = match caps.scope {
            Scope::Cluster => Api::all_with(client.clone(), &resource),
            Scope::Namespaced => Api::namespaced_with(
                client.clone(),
                object.metadata.namespace.as_deref().unwrap_or_default(),
                &resource,
            ),
        };
        let name = object.metadata.name.clone().unwrap_or_default();
        api.patch(
            &name,
            &PatchParams::apply("cvo-test").force(),
            &Patch::Apply(&object),
        )
        .await
        .with_context(|| format!("apply {} {name}", types.kind))?;
    }
    Ok(())
}

/// The documents of a manifest file of the repository's payload (`payloads/4.18.0/...`).
pub fn payload_documents(path: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    use anyhow::Context as _;
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&full).with_context(|| full.display().to_string())?;
    let mut documents = Vec::new();
    for chunk in cvo::yaml::split_stream(&text)? {
        let value = match chunk.json {
            Some(json) => json,
            None => cvo::yaml::parse_document(&chunk.reader_text())?.into_value(),
        };
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

/// Whether the API server lets `client` do `(group, resource, verb)` in `namespace` (a
/// SelfSubjectAccessReview).
pub async fn may(
    client: &kube::Client,
    namespace: &str,
    (group, resource, verb): (&str, &str, &str),
) -> anyhow::Result<bool> {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    use kube::api::{Api, PostParams};
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(group.into()),
                resource: Some(resource.into()),
                verb: Some(verb.into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let answer = api.create(&PostParams::default(), &review).await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}
