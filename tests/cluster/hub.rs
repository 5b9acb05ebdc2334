//! The CVO on a hub where hive and assisted-service already run (ACM/MCE): enabling the
//! `AgentInstall` capability must replace neither hive's ClusterDeployment CRD (generated from
//! hive's API module) nor assisted-service's agent CRDs, nor touch their stored objects, and
//! the agents component stands down and says why on its ClusterOperator.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kube::runtime::wait::{await_condition, conditions};
use serde_json::{Value, json};
use tokio::sync::watch;

use cvo::cluster::{ClusterOperator, ClusterVersion};
use cvo::components::agents::controller::{Agents, Settings};
use cvo::host::controller::{ControllerMetrics, HostOptions, run_component};
use cvo::operator::run::{SyncState, sync_once};

use super::Ctx;
use super::hive_crd::hive_cluster_deployment_crd;
use super::start_tests::{mark_healthy, options, reset_cluster_version, spec};

const AGENT_CRDS: [&str; 4] = [
    "agents.agent-install.openshift.io",
    "infraenvs.agent-install.openshift.io",
    "clusterdeployments.hive.openshift.io",
    "agentclusterinstalls.extensions.hive.openshift.io",
];
const NS: &str = "hub-clusters";

pub async fn start_leaves_another_operators_crds_alone(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.admin.clone());
    // The component's own CRDs of an earlier test go: the hub had hive and assisted-service
    // before it ever had this component.
    for name in AGENT_CRDS {
        delete_and_wait(&crds, name).await?;
    }
    // hive's ClusterDeployment CRD, as hive's operator applies it, and assisted-service's
    // Agent, InfraEnv and AgentClusterInstall CRDs as OLM installs them: labelled with their
    // package, with fields cvo's schema lacks.
    let (hive, origin) = hive_cluster_deployment_crd()?;
    eprintln!("hive's ClusterDeployment CRD: {origin}");
    install(&crds, &hive, "hive-operator").await?;
    for crd in assisted_service_crds()? {
        install(&crds, &crd, "catalog").await?;
    }
    // Stored objects with those fields.
    namespace(ctx, NS).await?;
    let cd = create(ctx, "hive.openshift.io/v1", "ClusterDeployment", "clusterdeployments", json!({
        "metadata": {"name": "hc1", "namespace": NS},
        "spec": {"clusterName": "hc1", "baseDomain": "example.com", "installAttemptsLimit": 1,
                 "pullSecretRef": {"name": "pull-secret"},
                 "platform": {"agentBareMetal": {"agentSelector": {"matchLabels": {"rack": "r1"}}}},
                 "clusterInstallRef": {"group": "extensions.hive.openshift.io", "version": "v1beta1",
                                       "kind": "AgentClusterInstall", "name": "hc1"}}})).await?;
    let aci = create(
        ctx,
        "extensions.hive.openshift.io/v1beta1",
        "AgentClusterInstall",
        "agentclusterinstalls",
        json!({
        "metadata": {"name": "hc1", "namespace": NS},
        "spec": {"clusterDeploymentRef": {"name": "hc1"}, "sshPublicKey": "ssh-ed25519 AAAA",
                 "imageSetRef": {"name": "openshift-v4.19.0"},
                 "provisionRequirements": {"controlPlaneAgents": 3}}}),
    )
    .await?;
    let before: Vec<(String, Value)> = crd_snapshots(&crds).await?;

    // The capability enabled: one pass of the CVO.
    let api = reset_cluster_version(ctx).await?;
    let options = options()?;
    mark_healthy(ctx, &options.payload, "etcd").await?;
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec(&["AgentInstall"])),
    )
    .await?;
    let mut state = SyncState::default();
    let pass = sync_once(&ctx.admin, &options, &mut state).await?;
    let stood_down = &pass.report.stood_down;
    for name in AGENT_CRDS {
        ensure!(
            stood_down.iter().any(
                |s| s.contains(&format!("CustomResourceDefinition {name} is "))
                    && s.contains(
                        "the CVO does not replace another operator's CustomResourceDefinition"
                    )
            ),
            "{name} not stood down: {stood_down:#?}"
        );
    }
    let cd_line = stood_down
        .iter()
        .find(|s| s.contains("clusterdeployments.hive.openshift.io is"))
        .context("the ClusterDeployment CRD")?;
    ensure!(
        cd_line.contains("hive-operator's")
            && cd_line.contains("schema fields this payload's lacks"),
        "{cd_line}"
    );
    ensure!(
        stood_down
            .iter()
            .any(|s| s.contains("validatingwebhookconfiguration")
                && s.contains(
                    "it would put a second admission webhook on agents.agent-install.openshift.io"
                )),
        "the webhook configuration: {stood_down:#?}"
    );
    // Nothing of theirs changed: the CRDs (schema, labels, managers) and the stored objects.
    ensure!(crd_snapshots(&crds).await? == before, "a CRD changed");
    for (live, created) in [
        (hive_cd(ctx).await?, &cd),
        (
            get(
                ctx,
                "extensions.hive.openshift.io/v1beta1",
                "AgentClusterInstall",
                "agentclusterinstalls",
                "hc1",
            )
            .await?,
            &aci,
        ),
    ] {
        ensure!(
            live.resource_version() == created.resource_version(),
            "{} changed",
            live.name_any()
        );
    }
    let live_cd = hive_cd(ctx).await?;
    ensure!(
        live_cd.data["spec"]["platform"]["agentBareMetal"]["agentSelector"]["matchLabels"]["rack"]
            == "r1"
    );
    ensure!(live_cd.data["spec"]["installAttemptsLimit"] == 1);
    // No second webhook on assisted-service's Agents (one an earlier pass applied is gone):
    // assisted-service's Agents are written as before.
    let webhooks: Api<ValidatingWebhookConfiguration> = Api::all(ctx.admin.clone());
    ensure!(
        webhooks
            .get_opt("agent-install.openshift.io")
            .await?
            .is_none(),
        "a second webhook on assisted-service's Agents"
    );
    let agent = create(ctx, "agent-install.openshift.io/v1beta1", "Agent", "agents", json!({
        "metadata": {"name": "host-0", "namespace": NS},
        "spec": {"role": "worker", "approved": true, "clusterDeploymentName": {"name": "hc1", "namespace": NS}}})).await?;

    // The controller, as the payload's ServiceAccount, stands down and says why.
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.admin.clone(), "cvo-agents");
    let client = ctx
        .cluster
        .service_account_client(&accounts, "agents")
        .await?;
    let settings = Settings {
        version: "0.0.1-snapshot".into(),
        status_interval: Duration::from_secs(1),
        webhook: None,
        requirements: Default::default(),
        reclaim: false,
        reclaim_timeout: Duration::from_secs(3600),
    };
    let (stop, stopped) = watch::channel(false);
    let host = HostOptions {
        listen: "127.0.0.1:0".parse()?,
        lease: None,
    };
    let controller = tokio::spawn(run_component(
        client,
        Arc::new(Agents::new(settings)),
        host,
        Arc::new(ControllerMetrics::new()),
        stopped,
    ));
    let operators: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    let mut said = None;
    for _ in 0..100 {
        let co = operators.get("agent-install").await?;
        let available = (co.status.iter().flat_map(|s| s.conditions.iter())).find(|c| {
            c.type_ == "Available"
                && c.status == "True"
                && c.reason.as_deref() == Some("ServedByAnotherOperator")
        });
        if let Some(c) = available {
            said = c.message.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let said = said.context("ClusterOperator agent-install never said it stands down")?;
    ensure!(
        said.starts_with("another operator serves agent-install.openshift.io: CustomResourceDefinition agents.agent-install.openshift.io is assisted-service-operator's")
            && said.contains("The Agent controllers and webhooks do not run"),
        "{said}"
    );
    // It touches nothing: no finalizer on hive's ClusterDeployment, no status on the Agent.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let agent_now = get(
        ctx,
        "agent-install.openshift.io/v1beta1",
        "Agent",
        "agents",
        "host-0",
    )
    .await?;
    ensure!(
        agent_now.resource_version() == agent.resource_version(),
        "the Agent was written"
    );
    let cd_now = hive_cd(ctx).await?;
    ensure!(cd_now.finalizers().is_empty(), "{:?}", cd_now.finalizers());
    let _ = stop.send(true);
    tokio::time::timeout(Duration::from_secs(10), controller).await???;

    // Leave no other operator's CRD to the later tests.
    for name in AGENT_CRDS {
        delete_and_wait(&crds, name).await?;
    }
    Ok(())
}

/// assisted-service's CRDs for the names cvo's component ships: `cvo`'s own schemas with
/// fields assisted-service has and `cvo` lacks, OLM's package label, controller-gen's
/// annotation.
fn assisted_service_crds() -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    for crd in cvo::components::agents::crds::crds() {
        let name = crd.name_any();
        if name == "clusterdeployments.hive.openshift.io" {
            continue;
        }
        let mut v = serde_json::to_value(&crd)?;
        v["metadata"]["annotations"] = json!({"controller-gen.kubebuilder.io/version": "v0.17.3"});
        v["metadata"]["labels"] =
            json!({"operators.coreos.com/assisted-service-operator.multicluster-engine": ""});
        let spec = &mut v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"];
        match name.as_str() {
            "agentclusterinstalls.extensions.hive.openshift.io" => {
                spec["sshPublicKey"] = json!({"type": "string"});
                spec["imageSetRef"] =
                    json!({"type": "object", "properties": {"name": {"type": "string"}}});
                spec["provisionRequirements"] = json!({"type": "object", "properties": {
                    "controlPlaneAgents": {"type": "integer"}, "workerAgents": {"type": "integer"}}});
            }
            _ => {
                spec["nmStateConfigLabelSelector"] =
                    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
            }
        }
        out.push(v);
    }
    Ok(out)
}

/// Server-side applies `crd` as `manager` and waits until it is Established.
async fn install(
    crds: &Api<CustomResourceDefinition>,
    crd: &Value,
    manager: &str,
) -> anyhow::Result<()> {
    let name = crd["metadata"]["name"]
        .as_str()
        .context("a CRD without a name")?
        .to_owned();
    crds.patch(
        &name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(crd),
    )
    .await
    .with_context(|| format!("apply {name}"))?;
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(crds.clone(), &name, conditions::is_crd_established()),
    )
    .await
    .with_context(|| format!("{name} not Established"))??;
    Ok(())
}

async fn delete_and_wait(crds: &Api<CustomResourceDefinition>, name: &str) -> anyhow::Result<()> {
    match crds.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    for _ in 0..150 {
        if crds.get_opt(name).await?.is_none() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    anyhow::bail!("CRD {name} not deleted within 30s")
}

/// Each of the four CRDs: its name and what another operator would notice changing (spec,
/// labels, annotations, managers).
async fn crd_snapshots(
    crds: &Api<CustomResourceDefinition>,
) -> anyhow::Result<Vec<(String, Value)>> {
    let mut out = Vec::new();
    for name in AGENT_CRDS {
        let crd = crds.get(name).await?;
        let managers: Vec<Option<String>> = (crd.metadata.managed_fields.iter().flatten())
            .filter(|f| f.subresource.is_none())
            .map(|f| f.manager.clone())
            .collect();
        let snapshot = json!({"spec": crd.spec, "labels": crd.metadata.labels,
                              "annotations": crd.metadata.annotations, "managers": managers,
                              "resourceVersion": crd.metadata.resource_version});
        out.push((name.to_owned(), snapshot));
    }
    Ok(out)
}

fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

async fn create(
    ctx: &Ctx<'_>,
    api_version: &str,
    kind: &str,
    plural: &str,
    mut object: Value,
) -> anyhow::Result<DynamicObject> {
    object["apiVersion"] = json!(api_version);
    object["kind"] = json!(kind);
    let api: Api<DynamicObject> =
        Api::namespaced_with(ctx.admin.clone(), NS, &resource(api_version, kind, plural));
    let object: DynamicObject = serde_json::from_value(object)?;
    api.create(&PostParams::default(), &object)
        .await
        .with_context(|| format!("create {kind}"))
}

async fn get(
    ctx: &Ctx<'_>,
    api_version: &str,
    kind: &str,
    plural: &str,
    name: &str,
) -> anyhow::Result<DynamicObject> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(ctx.admin.clone(), NS, &resource(api_version, kind, plural));
    Ok(api.get(name).await?)
}

async fn namespace(ctx: &Ctx<'_>, name: &str) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Namespace;
    let api: Api<Namespace> = Api::all(ctx.admin.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// hive's ClusterDeployment `hc1` as stored.
async fn hive_cd(ctx: &Ctx<'_>) -> anyhow::Result<DynamicObject> {
    get(
        ctx,
        "hive.openshift.io/v1",
        "ClusterDeployment",
        "clusterdeployments",
        "hc1",
    )
    .await
}
