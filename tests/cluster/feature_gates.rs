//! Feature gates as upstream reads them: from the FeatureGate `cluster`'s
//! `status.featureGates` entry for the payload's version, which wins over the payload's own
//! FeatureGate manifest for the feature set; and a change of the FeatureGate wakes
//! the sleeping loop at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::ensure;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::json;
use tokio::sync::watch;

use cvo::cluster::ClusterVersion;
use cvo::operator::{Metrics, SyncState, run};

use super::Ctx;
use super::start_tests::{clean_pass, mark_healthy, options, reset_cluster_version, spec};

/// Gated on `GatewayAPIWithoutOLM` (capability Ingress), which the payload's `Default`
/// FeatureGate manifest lists as disabled.
const GATED: &str = "openshift-ingress-operator-gateway-api";
/// Gated on `-GatewayAPIWithoutOLM`: included while the gate is off.
const NEGATED: &str = "openshift-ingress-operator-gateway-api-olm";

async fn delete_opt<K>(api: &Api<K>, name: &str) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Whether the FeatureGate API is served (its CRD is the payload's).
async fn gates_api_exists(client: &kube::Client) -> anyhow::Result<bool> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    Ok(crds
        .get_opt("featuregates.config.openshift.io")
        .await?
        .is_some())
}

/// Waits until `done` holds, for at most `limit`; how long that took.
async fn within<F, Fut>(limit: Duration, what: &str, mut done: F) -> anyhow::Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let start = Instant::now();
    loop {
        if done().await? {
            return Ok(start.elapsed());
        }
        ensure!(start.elapsed() < limit, "not {what} within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The FeatureGate `cluster` as the payload creates it (`spec: {}`, the Default set) and no
/// status: the payload's `Default` set decides (the negated manifest is applied, the gated one
/// not). Then the config operator's status arrives, enabling `GatewayAPIWithoutOLM` for
/// 4.18.0 although the spec still names the Default set: the loop, asleep for an hour-long
/// resync, is woken by the watch and applies the gated manifest within seconds.
pub async fn feature_gates_come_from_the_cluster_feature_gate(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "FeatureGate");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "featuregates");
    let gates: Api<DynamicObject> = Api::all_with(ctx.admin.clone(), &resource);
    let roles: Api<ClusterRole> = Api::all(ctx.admin.clone());
    let cv: Api<ClusterVersion> = reset_cluster_version(ctx).await?;
    let mut options = options()?;
    mark_healthy(ctx, &options.payload, "etcd").await?;
    cv.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec(&["Ingress"])),
    )
    .await?;
    for name in [GATED, NEGATED] {
        delete_opt(&roles, name).await?;
    }
    // One pass first: it creates the FeatureGate CRD and, create-only, the FeatureGate
    // `cluster` (`spec: {}`, no status: no config operator runs here).
    if gates_api_exists(&ctx.admin).await? {
        delete_opt(&gates, "cluster").await?;
    }
    clean_pass(&ctx.admin, &options, &mut SyncState::default()).await?;
    ensure!(
        gates.get_opt("cluster").await?.is_some(),
        "the payload's FeatureGate cluster was not created"
    );

    let metrics = Arc::new(Metrics::new());
    options.metrics = Some(metrics.clone());
    options.resync_interval = Duration::from_secs(3600);
    let (stop, stopped) = watch::channel(false);
    let operator = {
        let (client, options) = (ctx.admin.clone(), options.clone());
        tokio::spawn(async move { run(&client, &options, stopped).await })
    };
    let checks = async {
        let completed = |n: u64| {
            let metrics = metrics.clone();
            move || {
                let passes = metrics.passes("completed");
                async move { Ok(passes >= n) }
            }
        };
        within(Duration::from_secs(60), "one complete pass", completed(1)).await?;
        let exists = |name: &'static str| {
            let roles = roles.clone();
            async move { anyhow::Ok(roles.get_opt(name).await?.is_some()) }
        };
        ensure!(
            exists(NEGATED).await? && !exists(GATED).await?,
            "without a FeatureGate: {NEGATED} applied, {GATED} not"
        );
        // Asleep now (its watches have listed), for an hour.
        tokio::time::sleep(Duration::from_millis(500)).await;
        ensure!(metrics.passes("completed") == 1, "a pass without a change");

        // What the config operator writes.
        let status = json!({"apiVersion": "config.openshift.io/v1", "kind": "FeatureGate",
            "metadata": {"name": "cluster"},
            "status": {"featureGates": [{"version": "4.18.0",
                                         "enabled": [{"name": "GatewayAPIWithoutOLM"}],
                                         "disabled": [{"name": "GatewayAPI"}]}]}});
        gates
            .patch_status(
                "cluster",
                &PatchParams::apply("cvo-test-config-operator").force(),
                &Patch::Apply(&status),
            )
            .await?;
        let took = within(
            Duration::from_secs(20),
            "the gated manifest applied",
            || exists(GATED),
        )
        .await?;
        eprintln!("the FeatureGate's status applied {GATED} after {took:?}");
        within(
            Duration::from_secs(20),
            "a second complete pass",
            completed(2),
        )
        .await?;
        anyhow::Ok(())
    };
    let result = checks.await;
    stop.send(true)?;
    operator.await??;
    delete_opt(&gates, "cluster").await?;
    for name in [GATED, NEGATED] {
        delete_opt(&roles, name).await?;
    }
    result
}
