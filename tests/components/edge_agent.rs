//! The Open Horizon edge cluster agent's install on a real cluster: the objects
//! `cvo edge agent-install` renders, applied; what the apiserver lets the agent's
//! ServiceAccount do in each scope; and `--check`'s coexistence rules against the agents found.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::discovery::{Scope as ApiScope, pinned_kind};
use serde_json::Value;

use cvo::components::edge::agent_install::{
    InstallSettings, Rbac, SERVICE_ACCOUNT, Scope, cluster_role_binding_name, render,
};

use super::Ctx;

/// Server-side applies each rendered document as the test's field manager.
async fn apply_all(client: &kube::Client, documents: &[Value]) -> anyhow::Result<()> {
    for document in documents {
        let object: DynamicObject = serde_json::from_value(document.clone())?;
        let types = object
            .types
            .clone()
            .context("a document without apiVersion/kind")?;
        let gvk = GroupVersionKind::try_from(&types)?;
        let (resource, caps) = pinned_kind(client, &gvk).await?;
        let api: Api<DynamicObject> = match caps.scope {
            ApiScope::Cluster => Api::all_with(client.clone(), &resource),
            ApiScope::Namespaced => Api::namespaced_with(
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

/// Renders and applies an agent; a client authenticated as its ServiceAccount.
async fn install(ctx: &Ctx<'_>, settings: &InstallSettings) -> anyhow::Result<kube::Client> {
    apply_all(&ctx.admin, &render(settings)?).await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.admin.clone(), &settings.namespace);
    ctx.cluster
        .service_account_client(&accounts, SERVICE_ACCOUNT)
        .await
}

/// Whether the apiserver allows `client` to create Deployments in `namespace`.
async fn may_create_deployments(client: &kube::Client, namespace: &str) -> anyhow::Result<bool> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some("apps".into()),
                resource: Some("deployments".into()),
                verb: Some("create".into()),
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

/// The access review's answer once RBAC has caught up with the bindings just applied.
async fn eventually_may(client: &kube::Client, namespace: &str, want: bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = may_create_deployments(client, namespace).await?;
        if got == want {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("create deployments in {namespace}: allowed={got}, want {want}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A real create of a ConfigMap in `namespace` as `client`: Ok(true) created, Ok(false)
/// refused with 403.
async fn creates_config_map(client: &kube::Client, namespace: &str) -> anyhow::Result<bool> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let map: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"generateName": "agent-probe-"}, "data": {"a": "b"}}))?;
    match api.create(&PostParams::default(), &map).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 403 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn cvo_check(ctx: &Ctx<'_>, extra: &[&str]) -> anyhow::Result<(i32, String, String)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"))
        .args(["edge", "agent-install", "--check", "--kubeconfig"])
        .arg(ctx.cluster.kubeconfig())
        .args(extra)
        .output()?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// A namespace-scoped agent manages its namespace and is refused elsewhere; the cluster-scoped
/// one (and, with `--rbac upstream`, a namespace-scoped one) manages every namespace; `--check`
/// refuses a second cluster-scoped agent and a change of scope, and lets a namespace-scoped one
/// join.
pub async fn agent_scopes_on_a_real_cluster(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let scoped = InstallSettings::new("edge-team-a", Scope::Namespace, Rbac::LeastPrivilege);
    let client = install(ctx, &scoped).await?;
    eventually_may(&client, "edge-team-a", true).await?;
    ensure!(
        creates_config_map(&client, "edge-team-a").await?,
        "own namespace refused"
    );
    ensure!(!may_create_deployments(&client, "default").await?);
    ensure!(
        !creates_config_map(&client, "default").await?,
        "default allowed"
    );
    ensure!(!may_create_deployments(&client, "kube-system").await?);

    let cluster = InstallSettings::new("edge-cluster", Scope::Cluster, Rbac::LeastPrivilege);
    let client = install(ctx, &cluster).await?;
    eventually_may(&client, "kube-system", true).await?;
    ensure!(
        creates_config_map(&client, "default").await?,
        "cluster-scoped refused"
    );

    let upstream = InstallSettings::new("edge-team-b", Scope::Namespace, Rbac::Upstream);
    let client = install(ctx, &upstream).await?;
    eventually_may(&client, "default", true).await?;

    // Agents now: edge-team-a (scoped), edge-cluster (cluster), edge-team-b (scoped).
    let (code, _, stderr) = cvo_check(ctx, &["--namespace", "edge-other"])?;
    ensure!(
        code == 1,
        "second cluster-scoped agent: exit {code}, {stderr}"
    );
    ensure!(
        stderr.contains(
            "a cluster-scoped agent is already installed in namespace edge-cluster: a cluster has at most one cluster-scoped agent, so another one cannot go into namespace edge-other"
        ),
        "{stderr}"
    );
    let (code, stdout, stderr) =
        cvo_check(ctx, &["--namespace", "edge-other", "--namespace-scoped"])?;
    ensure!(code == 0, "{stderr}");
    ensure!(stdout.contains("3 agent(s) on the cluster"), "{stdout}");
    let (code, _, stderr) = cvo_check(ctx, &["--namespace", "edge-team-a"])?;
    ensure!(
        code == 1 && stderr.contains("a reinstall must keep its scope"),
        "{stderr}"
    );
    let (code, _, stderr) = cvo_check(ctx, &["--namespace", "edge-cluster"])?;
    ensure!(code == 0, "reinstalling the cluster-scoped agent: {stderr}");

    // Leave the cluster as found: the bindings are cluster-scoped.
    let namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(ctx.admin.clone());
    for ns in ["edge-team-a", "edge-cluster", "edge-team-b"] {
        namespaces.delete(ns, &DeleteParams::default()).await?;
        let _ = bindings
            .delete(&cluster_role_binding_name(ns), &DeleteParams::default())
            .await;
    }
    Ok(())
}
