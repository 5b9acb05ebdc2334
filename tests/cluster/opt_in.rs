//! The payload's own components are opt-in (issue 28): an update from 4.17.0 to 4.18.0 on the
//! default baseline `vCurrent` installs none of them; an administrator turns one on with
//! `additionalEnabledCapabilities`. The DeploymentTarget controller then runs; the edge agent's
//! operator, without hub settings, runs no agent and says in its ClusterOperator what is
//! missing; with them it creates the agent, and removes it when they go.
//!
//! No kubelet: the components' controllers run in this process as the payload's
//! ServiceAccounts (as `start_installs_component` runs them), and the test writes the agent
//! Deployment's status as the Deployment controller would.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::discovery::Discovery;
use serde_json::json;

use cvo::capability::Capability;
use cvo::cluster::{ClusterOperator, ClusterVersion};
use cvo::components::edge_operator::controller::{EdgeAgentOperator, Settings};
use cvo::operator::RunOptions;
use cvo::operator::run::{SyncState, sync_once};
use cvo::payload::Payload;

use super::Ctx;
use super::apply_tests::exists;
use super::start_tests::{
    ComponentCase, clean_pass, deployment_targets_case, mark_healthy, options_with,
    reset_cluster_version, run_as_service_account, spec_on, status, wait_for_available,
};
use super::upgrade_tests::{NEW, OLD, check_history, load, request_release};

/// The components 4.18.0 brings, each under the capability it declares.
const COMPONENTS: [&str; 3] = ["DeploymentTargets", "AgentInstall", "EdgeAgent"];
const EDGE_NAMESPACE: &str = "openhorizon-agent";
const OPERATORS: [&str; 3] = ["etcd", "console", "baremetal"];

/// How long the edge agent's operator may take to see a change (it watches; the resync is
/// the fallback).
const SEE_CHANGE: Duration = Duration::from_secs(20);

async fn set_additional(api: &Api<ClusterVersion>, additional: &[&str]) -> anyhow::Result<()> {
    let patch = json!({"spec": {"capabilities": {"additionalEnabledCapabilities": additional}}});
    api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// A fresh ClusterVersion on baseline vCurrent with `additional` capabilities, and the
/// operators of the payload in `dir` healthy; the options of a CVO running that payload.
async fn install(
    ctx: &Ctx<'_>,
    dir: &str,
    additional: &[&str],
) -> anyhow::Result<(Api<ClusterVersion>, RunOptions)> {
    let api = reset_cluster_version(ctx).await?;
    let options = options_with(load(dir)?);
    for operator in OPERATORS {
        mark_healthy(ctx, &options.payload, operator).await?;
    }
    let spec = spec_on("vCurrent", additional);
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec),
    )
    .await?;
    Ok((api, options))
}

/// A pass that installs an enabled component up to its ClusterOperator and waits on it: its
/// controller does not run yet.
async fn waits_for_its_operator(
    ctx: &Ctx<'_>,
    options: &RunOptions,
    state: &mut SyncState,
) -> anyhow::Result<()> {
    let pass = sync_once(&ctx.admin, options, state).await?;
    let reasons: Vec<_> = pass.report.errors.iter().map(|e| &e.reason).collect();
    ensure!(
        reasons == ["ClusterOperatorNotAvailable"],
        "{:#?}",
        pass.report.errors
    );
    Ok(())
}

/// The documents of `payload` under `capability`.
fn component<'a>(
    payload: &'a Payload,
    capability: &'a str,
) -> impl Iterator<Item = &'a cvo::manifest::Manifest> + 'a {
    (payload.manifests.iter()).filter(move |m| {
        m.capabilities()
            .unwrap_or_default()
            .iter()
            .any(|c| c.as_str() == capability)
    })
}

/// The objects of `capability`'s documents that exist on the cluster.
async fn existing(
    ctx: &Ctx<'_>,
    payload: &Payload,
    capability: &str,
) -> anyhow::Result<Vec<String>> {
    let discovery = Discovery::new(ctx.admin.clone()).run().await?;
    let mut found = Vec::new();
    for m in component(payload, capability) {
        if exists(ctx, &discovery, m).await? {
            found.push(m.describe());
        }
    }
    Ok(found)
}

/// A new self-signed CA certificate (PEM), as a hub's.
fn ca_pem() -> anyhow::Result<String> {
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(vec!["hub.example.com".into()])?;
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    Ok(params.self_signed(&key)?.pem())
}

/// The edge agent's operator, as the payload runs it (`cvo controller edge-agent`).
fn edge_agent_case() -> ComponentCase {
    ComponentCase {
        capability: "EdgeAgent",
        namespace: EDGE_NAMESPACE,
        crd: "",
        service_account: "edge-agent",
        operator: "edge-agent",
        controller: "edge-agent",
        run: |client, host, metrics, stopped| {
            let settings = Settings {
                version: "0.0.1-snapshot".into(),
                namespace: EDGE_NAMESPACE.into(),
                agent_image: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:5f4adf490e22a7b83f6e3dcf12cf6679da29b0e460574becfd39000fbaa655c4".into(),
                resync: Duration::from_secs(30),
            };
            let component = std::sync::Arc::new(EdgeAgentOperator { settings });
            tokio::spawn(cvo::host::controller::run_component(
                client, component, host, metrics, stopped,
            ))
        },
    }
}

/// The ClusterOperator `name`'s condition `type_` once `check` accepts it.
async fn wait_for_condition(
    api: &Api<ClusterOperator>,
    name: &str,
    type_: &str,
    check: impl Fn(&str, &str, &str) -> bool,
) -> anyhow::Result<(String, String, String)> {
    let deadline = tokio::time::Instant::now() + SEE_CHANGE;
    loop {
        let found = (api.get_opt(name).await?)
            .and_then(|co| co.status)
            .and_then(|s| s.conditions.into_iter().find(|c| c.type_ == type_))
            .map(|c| {
                (
                    c.status,
                    c.reason.unwrap_or_default(),
                    c.message.unwrap_or_default(),
                )
            });
        if let Some((status, reason, message)) = &found
            && check(status, reason, message)
        {
            return Ok(found.unwrap_or_default());
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!("ClusterOperator {name} {type_}: {found:?} after {SEE_CHANGE:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until `api` has (`want`) or has not the object `name`.
async fn wait_for_object<K>(api: &Api<K>, name: &str, want: bool) -> anyhow::Result<Option<K>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let deadline = tokio::time::Instant::now() + SEE_CHANGE;
    loop {
        let found = api.get_opt(name).await?;
        if found.is_some() == want {
            return Ok(found);
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!("{name}: present={} after {SEE_CHANGE:?}", !want);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An update on baseline vCurrent installs none of the three components; enabling
/// DeploymentTargets afterwards installs it, and its controller runs and brings its
/// ClusterOperator up. The component is removed at the end ([`remove_deployment_targets`]).
pub async fn update_installs_no_component_until_enabled(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let (api, old) = install(ctx, OLD, &[]).await?;
    let mut state = SyncState::default();
    clean_pass(&ctx.admin, &old, &mut state).await?;
    check_history(&status(ctx).await?, &[("Completed", "4.17.0")])?;

    request_release(&api, NEW, Some("4.18.0")).await?;
    let new = options_with(load(NEW)?);
    for operator in OPERATORS {
        mark_healthy(ctx, &new.payload, operator).await?;
    }
    clean_pass(&ctx.admin, &old, &mut state).await?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
    let caps = s.capabilities.clone().unwrap_or_default();
    for name in COMPONENTS {
        let capability = Capability::new(name);
        ensure!(
            caps.known_capabilities.contains(&capability),
            "{name} known: {caps:?}"
        );
        ensure!(
            !caps.enabled_capabilities.contains(&capability),
            "{name} enabled: {caps:?}"
        );
        let found = existing(ctx, &new.payload, name).await?;
        ensure!(found.is_empty(), "the update created {name}'s {found:?}");
    }

    // The 4.18.0 operator from now on, as after its own Deployment was updated.
    let mut state = SyncState::default();
    set_additional(&api, &["DeploymentTargets"]).await?;
    waits_for_its_operator(ctx, &new, &mut state).await?;
    let case = deployment_targets_case();
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.admin.clone());
    ensure!(
        crds.get_opt(case.crd).await?.is_some(),
        "DeploymentTargets not installed"
    );
    let controller = run_as_service_account(ctx, &case, None).await?;
    let operators: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    wait_for_available(&operators, case.operator).await?;
    clean_pass(&ctx.admin, &new, &mut state).await?;
    let s = status(ctx).await?;
    let enabled = s.capabilities.unwrap_or_default().enabled_capabilities;
    ensure!(
        enabled.contains(&Capability::new("DeploymentTargets")),
        "{enabled:?}"
    );
    ensure!(
        !enabled.contains(&Capability::new("EdgeAgent")),
        "{enabled:?}"
    );
    controller.stop(case.controller).await?;
    remove_deployment_targets(ctx).await
}

/// Enabling EdgeAgent without hub settings: the CVO installs the agent's lasting objects and
/// its operator, whose ClusterOperator is Available and says what is missing, so the pass
/// completes; no agent Deployment or CronJob exists. The settings then make the operator
/// create the agent (restarted when they change); removing them removes it.
pub async fn enabling_the_edge_agent_waits_for_hub_settings(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let (_, options) = install(ctx, NEW, &["EdgeAgent"]).await?;
    let mut state = SyncState::default();
    waits_for_its_operator(ctx, &options, &mut state).await?;

    let case = edge_agent_case();
    let operator = run_as_service_account(ctx, &case, None).await?;
    let operators: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    let (_, reason, message) =
        wait_for_condition(&operators, "edge-agent", "Available", |s, _, _| s == "True").await?;
    ensure!(reason == "WaitingForHubSettings", "{reason}: {message}");
    ensure!(
        message
            == "The edge agent does not run until it has its hub settings: missing HZN_EXCHANGE_URL, HZN_FSS_CSSURL and HZN_ORG_ID in the horizon key of ConfigMap openhorizon-agent/openhorizon-agent-config; the hub's CA certificate (PEM) in key agent-install.crt of Secret openhorizon-agent/openhorizon-agent-secrets; set them with `oc -n openhorizon-agent edit configmap openhorizon-agent-config` (key horizon) and `oc -n openhorizon-agent create secret generic openhorizon-agent-secrets --from-file=agent-install.crt=HUB-CA.crt`",
        "{message}"
    );
    // Not a failure: the pass completes.
    clean_pass(&ctx.admin, &options, &mut state).await?;
    let deployments: Api<Deployment> = Api::namespaced(ctx.admin.clone(), EDGE_NAMESPACE);
    let cron_jobs: Api<CronJob> = Api::namespaced(ctx.admin.clone(), EDGE_NAMESPACE);
    ensure!(
        deployments.get_opt("agent").await?.is_none(),
        "an agent runs without settings"
    );
    ensure!(cron_jobs.get_opt("auto-upgrade-cronjob").await?.is_none());
    ensure!(
        deployments.get_opt("edge-agent").await?.is_some(),
        "the operator's Deployment"
    );

    // The administrator's settings: the ConfigMap the payload created (create-only), the Secret.
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), EDGE_NAMESPACE);
    let horizon = "HZN_ORG_ID=edge-org\nHZN_EXCHANGE_URL=https://hub.example.com/edge-exchange/v1\nHZN_FSS_CSSURL=https://hub.example.com/edge-css/\nHZN_MGMT_HUB_CERT_PATH=/etc/default/cert/agent-install.crt\nHZN_AGENT_PORT=8510\n";
    let patch = json!({"data": {"horizon": horizon}});
    config_maps
        .patch(
            "openhorizon-agent-config",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    let (_, reason, message) =
        wait_for_condition(&operators, "edge-agent", "Available", |_, r, m| {
            r == "WaitingForHubSettings" && !m.contains("HZN_ORG_ID")
        })
        .await?;
    ensure!(
        message.contains("key agent-install.crt"),
        "{reason}: {message}"
    );
    let secrets: Api<Secret> = Api::namespaced(ctx.admin.clone(), EDGE_NAMESPACE);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "openhorizon-agent-secrets"},
        "stringData": {"agent-install.crt": ca_pem()?}}))?;
    secrets.create(&PostParams::default(), &secret).await?;

    let agent = wait_for_object(&deployments, "agent", true)
        .await?
        .context("agent")?;
    let pod = agent.spec.clone().context("spec")?.template;
    let container = &pod.spec.clone().context("pod spec")?.containers[0];
    let env: Vec<(String, String)> = (container.env.iter().flatten())
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect();
    ensure!(
        env.contains(&("HZN_ORG_ID".into(), "edge-org".into())),
        "{env:?}"
    );
    ensure!(
        container.image.as_deref()
            == Some(
                "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:5f4adf490e22a7b83f6e3dcf12cf6679da29b0e460574becfd39000fbaa655c4"
            )
    );
    wait_for_object(&cron_jobs, "auto-upgrade-cronjob", true).await?;
    let (status, _, message) =
        wait_for_condition(&operators, "edge-agent", "Progressing", |_, r, _| {
            r == "Deploying"
        })
        .await?;
    ensure!(status == "True", "{message}");

    // The Deployment controller's part: one replica, available.
    let generation = agent.metadata.generation;
    let ready = json!({"status": {"observedGeneration": generation, "replicas": 1,
        "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}});
    deployments
        .patch_status("agent", &PatchParams::default(), &Patch::Merge(&ready))
        .await?;
    let (_, _, message) = wait_for_condition(&operators, "edge-agent", "Available", |_, r, _| {
        r == "AsExpected"
    })
    .await?;
    ensure!(
        message
            == "The edge agent at version 0.0.1-snapshot runs for organization edge-org of the exchange https://hub.example.com/edge-exchange/v1",
        "{message}"
    );

    // Another hub certificate restarts the agent: a new pod template.
    let annotation = |d: &Deployment| {
        (d.spec.as_ref())
            .and_then(|s| s.template.metadata.as_ref())
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get("edge-agent.cvo.openshift.io/hub-settings").cloned())
    };
    let before = annotation(&agent).context("settings annotation")?;
    let other = json!({"stringData": {"agent-install.crt": ca_pem()?}});
    secrets
        .patch(
            "openhorizon-agent-secrets",
            &PatchParams::default(),
            &Patch::Merge(&other),
        )
        .await?;
    let deadline = tokio::time::Instant::now() + SEE_CHANGE;
    while annotation(&deployments.get("agent").await?).as_deref() == Some(before.as_str()) {
        ensure!(
            tokio::time::Instant::now() < deadline,
            "the agent kept its old settings"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Settings gone: the agent goes, its lasting objects stay.
    let blank = json!({"data": {"horizon": horizon.replace("edge-org", "")}});
    config_maps
        .patch(
            "openhorizon-agent-config",
            &PatchParams::default(),
            &Patch::Merge(&blank),
        )
        .await?;
    wait_for_object(&deployments, "agent", false).await?;
    wait_for_object(&cron_jobs, "auto-upgrade-cronjob", false).await?;
    let (_, reason, _) = wait_for_condition(&operators, "edge-agent", "Available", |_, r, _| {
        r == "WaitingForHubSettings"
    })
    .await?;
    ensure!(reason == "WaitingForHubSettings");
    ensure!(
        config_maps
            .get_opt("openhorizon-agent-config")
            .await?
            .is_some()
    );
    operator.stop(case.controller).await
}

/// The DeploymentTarget component goes, so that `start_installs_the_deployment_targets_component`
/// finds a cluster without it: its CRDs and ClusterOperator are deleted and its
/// namespace is finalized as the namespace controller (which this cluster does not run) would.
async fn remove_deployment_targets(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let case = deployment_targets_case();
    let payload = load(NEW)?;
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.admin.clone());
    for m in
        component(&payload, case.capability).filter(|m| m.id.kind == "CustomResourceDefinition")
    {
        let _ = crds.delete(&m.id.name, &DeleteParams::default()).await;
        wait_for_object(&crds, &m.id.name, false).await?;
    }
    let operators: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    let _ = operators
        .delete(case.operator, &DeleteParams::default())
        .await;
    let namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    if namespaces.get_opt(case.namespace).await?.is_some() {
        let _ = namespaces
            .delete(case.namespace, &DeleteParams::default())
            .await;
        let finalized = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": case.namespace}, "spec": {"finalizers": []}});
        namespaces
            .replace_subresource(
                "finalize",
                case.namespace,
                &PostParams::default(),
                &finalized,
            )
            .await?;
        wait_for_object(&namespaces, case.namespace, false).await?;
    }
    Ok(())
}
