//! Agent late binding on a real cluster: the controller (`cvo controller agents`, in-process,
//! with its webhooks where a test needs them) and the discovery-agent simulator
//! (`cvo agent simulate`'s code, in-process), through the design's user stories.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;
use tokio::sync::watch;

use cvo::cluster::ClusterOperator;
use cvo::components::agents::admission::{AGENT_PATH, INFRAENV_PATH};
use cvo::components::agents::controller::{Agents, Settings};
use cvo::components::agents::discovery::Hardware;
use cvo::components::agents::simulator::{SimulatorOptions, run as simulate};
use cvo::components::agents::types::{Agent, AgentClusterInstall, ClusterDeployment, InfraEnv};
use cvo::host::controller::{ControllerMetrics, HostOptions, run_component};
use cvo::host::webhook::WebhookOptions;

use super::{Ctx, eventually, namespace};

/// The component's CRDs (as the payload ships them), established.
pub async fn install(admin: &kube::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    for crd in cvo::components::agents::crds::crds() {
        let name = crd.name_any();
        // As the CVO applies them (the controller tells its own CRDs by their manager).
        crds.patch(
            &name,
            &PatchParams::apply(cvo::operator::FIELD_MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await
        .with_context(|| format!("apply CRD {name}"))?;
        tokio::time::timeout(
            Duration::from_secs(30),
            await_condition(crds.clone(), &name, conditions::is_crd_established()),
        )
        .await
        .with_context(|| format!("CRD {name} not established"))??;
    }
    Ok(())
}

/// Stops what it guards (the controller, a simulator) when dropped.
pub struct Running(watch::Sender<bool>);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.send(true);
    }
}

async fn start_controller(ctx: &Ctx<'_>, webhook: Option<WebhookOptions>) -> Running {
    start_controller_with(ctx, webhook, false, Duration::from_secs(3600)).await
}

/// The controller, reclaiming installed hosts on unbind or not (`--reclaim`), giving up a
/// reclaim after `reclaim_timeout`.
async fn start_controller_with(
    ctx: &Ctx<'_>,
    webhook: Option<WebhookOptions>,
    reclaim: bool,
    reclaim_timeout: Duration,
) -> Running {
    let settings = Settings {
        version: "4.18.0".into(),
        status_interval: Duration::from_secs(5),
        webhook,
        requirements: Default::default(),
        reclaim,
        reclaim_timeout,
    };
    let (tx, rx) = watch::channel(false);
    let admin = ctx.admin.clone();
    tokio::spawn(async move {
        let options = HostOptions {
            listen: "127.0.0.1:0".parse().expect("an address"),
            lease: None,
        };
        let component = Arc::new(Agents::new(settings));
        let metrics = Arc::new(ControllerMetrics::new());
        if let Err(e) = run_component(admin, component, options, metrics, rx).await {
            eprintln!("controller stopped: {e}");
        }
    });
    Running(tx)
}

const DEFAULT_HW: Hardware = Hardware {
    cpu_cores: 4,
    memory_gib: 16,
    disk_gib: 120,
};

/// `hosts` simulated hosts booting `namespace/infra_env`, registered when this returns.
async fn start_simulator(
    ctx: &Ctx<'_>,
    namespace: &str,
    infra_env: &str,
    prefix: &str,
    hosts: u32,
    hardware: Hardware,
) -> anyhow::Result<Running> {
    let options = SimulatorOptions {
        namespace: namespace.into(),
        infra_env: infra_env.into(),
        hosts,
        hardware,
        prefix: prefix.into(),
        heartbeat: Duration::from_secs(30),
        poll: Duration::from_millis(100),
    };
    let (tx, rx) = watch::channel(false);
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let client = ctx.admin.clone();
    tokio::spawn(async move {
        let registered = move |_| {
            let _ = done_tx.send(());
        };
        if let Err(e) = simulate(client, options, registered, rx).await {
            eprintln!("simulator stopped: {e}");
        }
    });
    tokio::time::timeout(Duration::from_secs(60), done_rx)
        .await
        .context("the simulator did not register its hosts within 60s")?
        .context("the simulator failed (message above)")?;
    Ok(Running(tx))
}

async fn infra_env(admin: &kube::Client, ns: &str, name: &str) -> anyhow::Result<()> {
    let api: Api<InfraEnv> = Api::namespaced(admin.clone(), ns);
    let ie: InfraEnv = serde_json::from_value(json!({
        "apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"pullSecretRef": {"name": "pull-secret"}}}))?;
    api.create(&PostParams::default(), &ie).await?;
    Ok(())
}

/// A ClusterDeployment and its AgentClusterInstall, its machine network the simulated hosts'.
async fn cluster(
    admin: &kube::Client,
    ns: &str,
    name: &str,
    preserve_on_delete: bool,
) -> anyhow::Result<()> {
    cluster_on(admin, ns, name, preserve_on_delete, "192.168.0.0/16").await
}

/// A ClusterDeployment and its AgentClusterInstall with this machine network.
async fn cluster_on(
    admin: &kube::Client,
    ns: &str,
    name: &str,
    preserve_on_delete: bool,
    machine_network: &str,
) -> anyhow::Result<()> {
    let cds: Api<ClusterDeployment> = Api::namespaced(admin.clone(), ns);
    let cd: ClusterDeployment = serde_json::from_value(json!({
        "apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterName": name, "baseDomain": "example.com",
                 "preserveOnDelete": preserve_on_delete,
                 "clusterInstallRef": {"group": "extensions.hive.openshift.io", "version": "v1beta1",
                                       "kind": "AgentClusterInstall", "name": name}}}))?;
    cds.create(&PostParams::default(), &cd).await?;
    let acis: Api<AgentClusterInstall> = Api::namespaced(admin.clone(), ns);
    let aci: AgentClusterInstall = serde_json::from_value(json!({
        "apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterDeploymentRef": {"name": name},
                 "networking": {"machineNetwork": [{"cidr": machine_network}]}}}))?;
    acis.create(&PostParams::default(), &aci).await?;
    Ok(())
}

fn state_of(agent: &Agent) -> String {
    (agent.status.as_ref())
        .map(|s| s.debug_info.state.clone())
        .unwrap_or_default()
}

/// Waits until the Agent is in `state` (and, with `bound_to`, bound to that
/// ClusterDeployment; with `Some(None)`, bound to none).
async fn wait_state(
    agents: &Api<Agent>,
    name: &str,
    state: &str,
    bound_to: Option<Option<&str>>,
) -> anyhow::Result<Agent> {
    eventually(
        &format!("Agent {name} in {state}"),
        Duration::from_secs(60),
        || async {
            let agent = agents.get(name).await?;
            let bound = (agent.status.as_ref())
                .and_then(|s| s.bound_cluster_deployment.as_ref())
                .map(|c| c.name.clone());
            let bound_ok = bound_to.is_none_or(|want| bound.as_deref() == want);
            Ok((state_of(&agent) == state && bound_ok).then_some(agent))
        },
    )
    .await
}

async fn set_cluster(agents: &Api<Agent>, name: &str, cd: Option<&str>) -> kube::Result<Agent> {
    let namespace = agents.get(name).await?.namespace().unwrap_or_default();
    let reference = cd.map(|n| json!({"name": n, "namespace": namespace}));
    let patch = json!({"spec": {"clusterDeploymentName": reference}});
    agents
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}

/// The Events recorded with `reason` on objects of `kind` in `ns`.
async fn events(
    admin: &kube::Client,
    ns: &str,
    reason: &str,
    kind: &str,
) -> anyhow::Result<Vec<Event>> {
    let api: Api<Event> = Api::namespaced(admin.clone(), ns);
    let all = api.list(&ListParams::default()).await?;
    Ok(all
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter(|e| (e.regarding.as_ref()).and_then(|r| r.kind.as_deref()) == Some(kind))
        .collect())
}

/// The test plays the installer: the host's state as an installation would set it. The
/// controller writes the Agent too (labels, conditions): a write that lost the race (409) is
/// tried again on the latest version, as an installer would.
async fn install_state(agents: &Api<Agent>, name: &str, state: &str) -> anyhow::Result<()> {
    for _ in 0..20 {
        let mut agent = agents.get(name).await?;
        if let Some(status) = agent.status.as_mut() {
            status.debug_info.state = state.into();
            status.debug_info.state_info = String::new();
        }
        match agents
            .replace_status(name, &PostParams::default(), &agent)
            .await
        {
            Err(kube::Error::Api(e)) if e.code == 409 => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => {
                other?;
                return Ok(());
            }
        }
    }
    bail!("{name}: status write conflicted 20 times in a row")
}

/// Stories 1 and 3: an InfraEnv without a cluster; hosts boot its image and land in its pool,
/// `known-unbound` or, below the minimums, `insufficient-unbound`; they show only
/// cluster-independent validations; their Events are on the InfraEnv; the InfraEnv gets its
/// agent selector; the ClusterOperator is Available.
pub async fn pool_registration(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let ns = "agents-pool";
    namespace(admin, ns).await?;
    infra_env(admin, ns, "datacenter").await?;
    let _controller = start_controller(ctx, None).await;
    let _big = start_simulator(ctx, ns, "datacenter", "big", 3, DEFAULT_HW).await?;
    let small = Hardware {
        cpu_cores: 1,
        ..DEFAULT_HW
    };
    let _small = start_simulator(ctx, ns, "datacenter", "small", 1, small).await?;
    let agents: Api<Agent> = Api::namespaced(admin.clone(), ns);
    for i in 0..3 {
        let agent = wait_state(&agents, &format!("big-{i}"), "known-unbound", Some(None)).await?;
        let status = agent.status.clone().unwrap_or_default();
        assert_eq!(
            status.debug_info.state_info,
            "Host is ready to be bound to a cluster"
        );
        let bound = status.conditions.iter().find(|c| c.type_ == "Bound");
        assert_eq!(bound.map(|c| c.reason.as_str()), Some("Unbound"));
        assert_eq!(
            agent
                .labels()
                .get("agent-install.openshift.io/clusterdeployment-namespace"),
            Some(&String::new())
        );
        assert!(
            agent
                .finalizers()
                .contains(&"agent.agent-install.openshift.io/ai-deprovision".to_string())
        );
        let ids: Vec<&str> = (status.validations_info.values().flatten())
            .map(|v| v.id.as_str())
            .collect();
        assert!(ids.contains(&"has-min-cpu-cores"), "{ids:?}");
        for cluster_dependent in [
            "belongs-to-majority-group",
            "api-domain-name-resolved-correctly",
            "ignition-downloadable",
        ] {
            assert!(
                !ids.contains(&cluster_dependent),
                "{cluster_dependent} on an unbound host: {ids:?}"
            );
        }
    }
    let small = wait_state(&agents, "small-0", "insufficient-unbound", Some(None)).await?;
    let info = small.status.unwrap_or_default().debug_info.state_info;
    assert!(
        info.starts_with("Host does not meet the minimum hardware requirements:"),
        "{info}"
    );
    // Events are recorded after the status write: looked for until they are there.
    eventually(
        "4 host_status_updated Events on the InfraEnv",
        Duration::from_secs(10),
        || async {
            let updates = events(admin, ns, "host_status_updated", "InfraEnv").await?;
            Ok((updates.len() >= 4).then_some(()))
        },
    )
    .await?;
    assert!(
        events(admin, ns, "host_status_updated", "ClusterDeployment")
            .await?
            .is_empty()
    );
    let ies: Api<InfraEnv> = Api::namespaced(admin.clone(), ns);
    eventually("the InfraEnv's status", Duration::from_secs(30), || async {
        let ie = ies.get("datacenter").await?;
        let status = ie.status.unwrap_or_default();
        let selector = status.agent_label_selector.unwrap_or_default();
        let image = status
            .conditions
            .iter()
            .find(|c| c.type_ == "ImageCreated")
            .map(|c| (c.reason.clone(), c.message.clone()));
        let available = (
            "InfraEnvAvailable".to_owned(),
            "InfraEnv is available".to_owned(),
        );
        Ok((selector
            .match_labels
            .get("infraenvs.agent-install.openshift.io")
            == Some(&"datacenter".to_owned())
            && image == Some(available))
        .then_some(()))
    })
    .await?;
    let operators: Api<ClusterOperator> = Api::all(admin.clone());
    eventually(
        "ClusterOperator agent-install Available",
        Duration::from_secs(30),
        || async {
            let co = operators.get("agent-install").await?;
            let status = co.status.unwrap_or_default();
            let available = status
                .conditions
                .iter()
                .any(|c| c.type_ == "Available" && c.status == "True");
            let version = status
                .versions
                .iter()
                .any(|v| v.name == "operator" && v.version == "4.18.0");
            Ok((available && version).then_some(()))
        },
    )
    .await?;
    Ok(())
}

/// The ValidatingWebhookConfiguration the webhook tests register (one at a time: the tests
/// run one after another).
const WEBHOOKS: &str = "agent-install.openshift.io";

/// The controller with its Agent and InfraEnv webhooks registered for the namespace `ns`,
/// once the API server trusts them. Delete [`WEBHOOKS`] at the end.
async fn start_with_webhooks(
    ctx: &Ctx<'_>,
    ns: &str,
) -> anyhow::Result<(Running, Api<ValidatingWebhookConfiguration>)> {
    start_with_webhooks_in(ctx, &[ns]).await
}

/// [`start_with_webhooks`] for the objects of several namespaces.
async fn start_with_webhooks_in(
    ctx: &Ctx<'_>,
    namespaces: &[&str],
) -> anyhow::Result<(Running, Api<ValidatingWebhookConfiguration>)> {
    let admin = &ctx.admin;
    namespace(admin, "cvo-agents").await?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let configuration = WEBHOOKS;
    let webhooks: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    // A failed earlier test may have left it behind.
    match webhooks
        .delete(configuration, &DeleteParams::default())
        .await
    {
        Ok(_) | Err(kube::Error::Api(_)) => {}
        Err(e) => return Err(e.into()),
    }
    let webhook = |name: &str, path: &str, resource: &str| {
        json!({"name": name,
            "clientConfig": {"url": format!("https://127.0.0.1:{port}{path}")},
            "rules": [{"apiGroups": ["agent-install.openshift.io"], "apiVersions": ["v1beta1"],
                       "operations": ["CREATE", "UPDATE"], "resources": [resource]}],
            "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                                        "operator": "In", "values": namespaces}]},
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"]})
    };
    let vwc: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": configuration},
        "webhooks": [webhook("agentvalidators.admission.agentinstall.openshift.io", AGENT_PATH, "agents"),
                     webhook("infraenvvalidators.admission.agentinstall.openshift.io", INFRAENV_PATH, "infraenvs")]}))?;
    webhooks.create(&PostParams::default(), &vwc).await?;
    let options = WebhookOptions {
        listen: format!("127.0.0.1:{port}").parse()?,
        namespace: "cvo-agents".into(),
        secret: "agents-webhook-serving-cert".into(),
        names: vec!["127.0.0.1".into()],
        configuration: configuration.into(),
    };
    let controller = start_controller(ctx, Some(options)).await;
    eventually(
        "the CA bundle injected",
        Duration::from_secs(30),
        || async {
            let v = webhooks.get(configuration).await?;
            let injected = (v.webhooks.iter().flatten()).all(|w| {
                w.client_config
                    .ca_bundle
                    .as_ref()
                    .is_some_and(|b| !b.0.is_empty())
            });
            Ok(injected.then_some(()))
        },
    )
    .await?;
    Ok((controller, webhooks))
}

/// Stories 3 and 4: bind (through `binding`, re-registered bound: `known`), move to another
/// cluster (unbind, re-register, bind), the webhook's refusal of a move during installation,
/// and the unbind of an installed host (`unbinding-pending-user-action`).
pub async fn bind_move_and_unbind(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let ns = "agents-bind";
    namespace(admin, ns).await?;
    infra_env(admin, ns, "pool").await?;
    cluster(admin, ns, "alpha", false).await?;
    cluster(admin, ns, "beta", false).await?;
    let (_controller, webhooks) = start_with_webhooks(ctx, ns).await?;
    let _hosts = start_simulator(ctx, ns, "pool", "host", 2, DEFAULT_HW).await?;
    let agents: Api<Agent> = Api::namespaced(admin.clone(), ns);
    for host in ["host-0", "host-1"] {
        wait_state(&agents, host, "known-unbound", Some(None)).await?;
    }
    // Bind: binding, then (the agent exits and registers again) known, bound.
    set_cluster(&agents, "host-0", Some("alpha")).await?;
    let bound = wait_state(&agents, "host-0", "known", Some(Some("alpha"))).await?;
    let status = bound.status.clone().unwrap_or_default();
    let condition = status.conditions.iter().find(|c| c.type_ == "Bound");
    assert_eq!(
        condition.map(|c| c.message.as_str()),
        Some("The agent is bound to a cluster deployment")
    );
    // Bound, the cluster-dependent validations run, against alpha's AgentClusterInstall.
    let shown: Vec<(&str, &str)> = (status.validations_info.values().flatten())
        .map(|v| (v.id.as_str(), v.message.as_str()))
        .collect();
    for want in [
        ("machine-cidr-defined", "Machine Network CIDR is defined"),
        (
            "belongs-to-machine-cidr",
            "Host belongs to all machine network CIDRs",
        ),
        ("hostname-unique", "Hostname host-0 is unique in cluster"),
        (
            "has-cpu-cores-for-role",
            "Sufficient CPU cores for role auto-assign",
        ),
    ] {
        assert!(shown.contains(&want), "{want:?} not in {shown:?}");
    }
    let validated = status.conditions.iter().find(|c| c.type_ == "Validated");
    assert_eq!(
        validated.map(|c| c.reason.as_str()),
        Some("ValidationsPassing")
    );
    assert_eq!(
        bound
            .labels()
            .get("agent-install.openshift.io/clusterdeployment-namespace"),
        Some(&ns.to_owned())
    );
    // Events are recorded after the status write: looked for until they are there.
    let notes_on_cd = || async {
        let on_cd = events(admin, ns, "host_status_updated", "ClusterDeployment").await?;
        let notes: Vec<String> = on_cd.iter().filter_map(|e| e.note.clone()).collect();
        let both = notes
            .iter()
            .any(|n| n.contains("from known-unbound to binding"))
            && notes
                .iter()
                .any(|n| n.contains("from discovering to known"));
        Ok(both.then_some(()))
    };
    eventually(
        "host_status_updated Events on the ClusterDeployment",
        Duration::from_secs(10),
        notes_on_cd,
    )
    .await?;
    let binds = eventually(
        "host_bind_succeeded on alpha",
        Duration::from_secs(10),
        || async {
            let binds = events(admin, ns, "host_bind_succeeded", "ClusterDeployment").await?;
            Ok((!binds.is_empty()).then_some(binds))
        },
    )
    .await?;
    assert_eq!(binds.len(), 1);
    assert_eq!(
        binds[0].regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("alpha")
    );
    // Move: unbound (Events on the InfraEnv), re-registered into the pool, then bound to beta.
    set_cluster(&agents, "host-0", Some("beta")).await?;
    wait_state(&agents, "host-0", "known", Some(Some("beta"))).await?;
    eventually(
        "host_unbind_succeeded on the InfraEnv",
        Duration::from_secs(10),
        || async {
            let unbinds = events(admin, ns, "host_unbind_succeeded", "InfraEnv").await?;
            Ok((unbinds.len() == 1).then_some(()))
        },
    )
    .await?;
    let moved = agents.get("host-0").await?.status.unwrap_or_default();
    let info = moved.deprovision_info.unwrap_or_default();
    assert_eq!(
        (info.cluster_name.as_str(), info.message.as_str()),
        ("alpha", "Waiting for host to unbind to do spoke cleanup")
    );
    // During installation the webhook refuses a move.
    set_cluster(&agents, "host-1", Some("alpha")).await?;
    wait_state(&agents, "host-1", "known", Some(Some("alpha"))).await?;
    install_state(&agents, "host-1", "installing-in-progress").await?;
    match set_cluster(&agents, "host-1", Some("beta")).await {
        Err(kube::Error::Api(s))
            if s.message.contains(
                "Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation.",
            ) => {}
        other => bail!("the webhook must refuse a move during installation: {other:?}"),
    }
    // Installed, it may be unbound: it waits for a reboot into the discovery image.
    install_state(&agents, "host-1", "installed").await?;
    set_cluster(&agents, "host-1", None).await?;
    let pending = wait_state(
        &agents,
        "host-1",
        "unbinding-pending-user-action",
        Some(None),
    )
    .await?;
    let status = pending.status.unwrap_or_default();
    let condition = status.conditions.iter().find(|c| c.type_ == "Bound");
    assert_eq!(
        condition.map(|c| c.reason.as_str()),
        Some("UnbindingPendingUserAction")
    );
    // The InfraEnv's clusterRef is immutable.
    let ies: Api<InfraEnv> = Api::namespaced(admin.clone(), ns);
    let patch = json!({"spec": {"clusterRef": {"name": "alpha", "namespace": ns}}});
    match ies
        .patch("pool", &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Err(kube::Error::Api(s))
            if s.message.contains(
                "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation.",
            ) => {}
        other => bail!("the webhook must refuse setting clusterRef: {other:?}"),
    }
    webhooks.delete(WEBHOOKS, &DeleteParams::default()).await?;
    Ok(())
}

/// Deleting a ClusterDeployment returns its late-binding agents to the pool, or deletes them
/// when the ClusterDeployment has `preserveOnDelete`.
pub async fn cluster_deletion_returns_or_deletes_agents(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let ns = "agents-teardown";
    namespace(admin, ns).await?;
    infra_env(admin, ns, "pool").await?;
    cluster(admin, ns, "gone", false).await?;
    cluster(admin, ns, "kept", true).await?;
    let _controller = start_controller(ctx, None).await;
    let _hosts = start_simulator(ctx, ns, "pool", "host", 2, DEFAULT_HW).await?;
    let agents: Api<Agent> = Api::namespaced(admin.clone(), ns);
    for host in ["host-0", "host-1"] {
        wait_state(&agents, host, "known-unbound", Some(None)).await?;
    }
    set_cluster(&agents, "host-0", Some("gone")).await?;
    set_cluster(&agents, "host-1", Some("kept")).await?;
    wait_state(&agents, "host-0", "known", Some(Some("gone"))).await?;
    wait_state(&agents, "host-1", "known", Some(Some("kept"))).await?;
    let cds: Api<ClusterDeployment> = Api::namespaced(admin.clone(), ns);
    let finalizer = "clusterdeployments.agent-install.openshift.io/ai-deprovision".to_string();
    assert!(cds.get("gone").await?.finalizers().contains(&finalizer));
    cds.delete("gone", &DeleteParams::default()).await?;
    let back = wait_state(&agents, "host-0", "known-unbound", Some(None)).await?;
    assert!(back.spec.cluster_deployment_name.is_none());
    eventually(
        "ClusterDeployment gone deleted",
        Duration::from_secs(30),
        || async { Ok(cds.get_opt("gone").await?.is_none().then_some(())) },
    )
    .await?;
    cds.delete("kept", &DeleteParams::default()).await?;
    eventually("Agent host-1 deleted", Duration::from_secs(30), || async {
        Ok(agents.get_opt("host-1").await?.is_none().then_some(()))
    })
    .await?;
    Ok(())
}

/// C.5 once bound: a host bound to a cluster on another machine network fails
/// `belongs-to-machine-cidr` and is `insufficient` (its conditions say so), while the pool
/// shows none of it; deleting a ClusterDeployment whose host is installing cancels that
/// host's installation first, so that the unbind passes the Agent webhook (no retry loop):
/// the host waits for a reboot into the discovery image, unbound, and the ClusterDeployment
/// goes.
pub async fn bound_validations_and_teardown_during_installation(
    ctx: &Ctx<'_>,
) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let ns = "agents-bound";
    namespace(admin, ns).await?;
    infra_env(admin, ns, "pool").await?;
    cluster_on(admin, ns, "elsewhere", false, "10.0.0.0/24").await?;
    cluster(admin, ns, "prod", false).await?;
    let (_controller, webhooks) = start_with_webhooks(ctx, ns).await?;
    let _hosts = start_simulator(ctx, ns, "pool", "host", 2, DEFAULT_HW).await?;
    let agents: Api<Agent> = Api::namespaced(admin.clone(), ns);
    for host in ["host-0", "host-1"] {
        let pooled = wait_state(&agents, host, "known-unbound", Some(None)).await?;
        let status = pooled.status.unwrap_or_default();
        assert!(
            !(status.validations_info.values().flatten())
                .any(|v| v.id == "belongs-to-machine-cidr"),
            "an unbound host shows no cluster-dependent validation"
        );
    }
    set_cluster(&agents, "host-0", Some("elsewhere")).await?;
    let insufficient =
        wait_state(&agents, "host-0", "insufficient", Some(Some("elsewhere"))).await?;
    let status = insufficient.status.unwrap_or_default();
    let failure = "Host does not belong to machine network CIDRs. Verify that the host belongs to every CIDR listed under machine networks";
    assert_eq!(
        status.debug_info.state_info,
        format!("Host cannot be installed due to following failing validation(s): {failure}")
    );
    let result = (status.validations_info.values().flatten())
        .find(|v| v.id == "belongs-to-machine-cidr")
        .context("belongs-to-machine-cidr shown")?;
    assert_eq!(result.status, "failure");
    let condition = |type_: &str| {
        (status.conditions.iter())
            .find(|c| c.type_ == type_)
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
            .unwrap_or_default()
    };
    let (validated, reason, message) = condition("Validated");
    assert_eq!(
        (validated.as_str(), reason.as_str()),
        ("False", "ValidationsFailing")
    );
    assert!(message.contains(failure), "{message}");
    assert_eq!(condition("RequirementsMet").1, "AgentNotReady");

    // Teardown of a cluster whose host is installing.
    set_cluster(&agents, "host-1", Some("prod")).await?;
    wait_state(&agents, "host-1", "known", Some(Some("prod"))).await?;
    install_state(&agents, "host-1", "installing-in-progress").await?;
    match set_cluster(&agents, "host-1", None).await {
        Err(kube::Error::Api(s))
            if s.message.contains("Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation.") => {}
        other => bail!("the webhook must refuse an unbind during installation: {other:?}"),
    }
    let cds: Api<ClusterDeployment> = Api::namespaced(admin.clone(), ns);
    cds.delete("prod", &DeleteParams::default()).await?;
    let pending = wait_state(
        &agents,
        "host-1",
        "unbinding-pending-user-action",
        Some(None),
    )
    .await?;
    assert!(pending.spec.cluster_deployment_name.is_none());
    eventually(
        "ClusterDeployment prod deleted",
        Duration::from_secs(30),
        || async { Ok(cds.get_opt("prod").await?.is_none().then_some(())) },
    )
    .await?;
    let cancelled = events(admin, ns, "host_status_updated", "ClusterDeployment").await?;
    assert!(
        cancelled
            .iter()
            .any(|e| e.note.as_deref().is_some_and(|n| n.contains(
                "from installing-in-progress to cancelled (installation was canceled by user)"
            ))),
        "the cancel's Event on the ClusterDeployment"
    );
    webhooks.delete(WEBHOOKS, &DeleteParams::default()).await?;
    Ok(())
}

/// Deleting an InfraEnv (its finalizer `infraenv.agent-install.openshift.io/ai-deprovision`):
/// its pool hosts are deregistered (their Agents deleted) at once; a bound host that is not
/// installed keeps the InfraEnv until it is installed, then it goes too, and the InfraEnv.
pub async fn infraenv_deletion_waits_for_bound_hosts(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let ns = "agents-infraenv";
    namespace(admin, ns).await?;
    infra_env(admin, ns, "doomed").await?;
    cluster(admin, ns, "prod", false).await?;
    let _controller = start_controller(ctx, None).await;
    let ies: Api<InfraEnv> = Api::namespaced(admin.clone(), ns);
    let finalizer = "infraenv.agent-install.openshift.io/ai-deprovision".to_string();
    eventually(
        "the InfraEnv's finalizer",
        Duration::from_secs(30),
        || async {
            Ok(ies
                .get("doomed")
                .await?
                .finalizers()
                .contains(&finalizer)
                .then_some(()))
        },
    )
    .await?;
    let _hosts = start_simulator(ctx, ns, "doomed", "host", 2, DEFAULT_HW).await?;
    let agents: Api<Agent> = Api::namespaced(admin.clone(), ns);
    for host in ["host-0", "host-1"] {
        wait_state(&agents, host, "known-unbound", Some(None)).await?;
    }
    set_cluster(&agents, "host-1", Some("prod")).await?;
    wait_state(&agents, "host-1", "known", Some(Some("prod"))).await?;
    ies.delete("doomed", &DeleteParams::default()).await?;
    eventually("Agent host-0 deleted", Duration::from_secs(30), || async {
        Ok(agents.get_opt("host-0").await?.is_none().then_some(()))
    })
    .await?;
    // The bound host keeps it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let waiting = ies.get("doomed").await?;
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert!(waiting.finalizers().contains(&finalizer));
    assert!(agents.get_opt("host-1").await?.is_some());
    // Installed, it is deregistered, and the InfraEnv goes.
    install_state(&agents, "host-1", "installed").await?;
    eventually("Agent host-1 deleted", Duration::from_secs(30), || async {
        Ok(agents.get_opt("host-1").await?.is_none().then_some(()))
    })
    .await?;
    eventually(
        "InfraEnv doomed deleted",
        Duration::from_secs(30),
        || async { Ok(ies.get_opt("doomed").await?.is_none().then_some(())) },
    )
    .await?;
    Ok(())
}

/// Reclaim (spec C.3, `--reclaim`): unbinding an installed host whose cluster is there
/// reclaims it: `reclaiming`; the reclaim agent (the simulator) reports `reclaiming-rebooting`
/// and reboots it into the discovery image, whose agent registers it into the pool.
pub async fn reclaim_reboots_an_installed_host_into_the_pool(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let ns = "agents-reclaim";
    namespace(admin, ns).await?;
    infra_env(admin, ns, "pool").await?;
    cluster(admin, ns, "prod", false).await?;
    let _controller = start_controller_with(ctx, None, true, Duration::from_secs(3600)).await;
    let _hosts = start_simulator(ctx, ns, "pool", "host", 1, DEFAULT_HW).await?;
    let agents: Api<Agent> = Api::namespaced(admin.clone(), ns);
    wait_state(&agents, "host-0", "known-unbound", Some(None)).await?;
    set_cluster(&agents, "host-0", Some("prod")).await?;
    wait_state(&agents, "host-0", "known", Some(Some("prod"))).await?;
    install_state(&agents, "host-0", "installed").await?;
    set_cluster(&agents, "host-0", None).await?;
    // Every state on the way is recorded on the InfraEnv (the host is unbound from the start).
    let back = wait_state(&agents, "host-0", "known-unbound", Some(None)).await?;
    assert!(back.spec.cluster_deployment_name.is_none());
    let notes = eventually(
        "the reclaim's Events on the InfraEnv",
        Duration::from_secs(10),
        || async {
            let on_ie = events(admin, ns, "host_status_updated", "InfraEnv").await?;
            let notes: Vec<String> = on_ie.iter().filter_map(|e| e.note.clone()).collect();
            let seen = |s: &str| notes.iter().any(|n| n.contains(s));
            Ok((seen("from installed to reclaiming") && seen("to known-unbound")).then_some(notes))
        },
    )
    .await?;
    assert!(
        !notes
            .iter()
            .any(|n| n.contains("unbinding-pending-user-action")),
        "{notes:?}"
    );
    let status = back.status.unwrap_or_default();
    assert_eq!(
        status.deprovision_info.map(|d| d.message),
        Some("Waiting for host to unbind to do spoke cleanup".to_owned())
    );
    Ok(())
}

/// HyperShift's agent provider: an Agent of the `hardware-inventory` pool binds to a
/// ClusterDeployment (and its AgentClusterInstall) in `clusters-hc1`, through the webhooks
/// (upstream allows the cross-namespace reference); the binding Events are on that
/// ClusterDeployment, and the Agent's label names its namespace. Unbound, it returns to its pool.
pub async fn bind_across_namespaces(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let (pool, clusters) = ("hardware-inventory", "clusters-hc1");
    namespace(admin, pool).await?;
    namespace(admin, clusters).await?;
    infra_env(admin, pool, "datacenter").await?;
    cluster(admin, clusters, "hc1", false).await?;
    let (_controller, webhooks) = start_with_webhooks_in(ctx, &[pool, clusters]).await?;
    let _hosts = start_simulator(ctx, pool, "datacenter", "host", 1, DEFAULT_HW).await?;
    let agents: Api<Agent> = Api::namespaced(admin.clone(), pool);
    wait_state(&agents, "host-0", "known-unbound", Some(None)).await?;
    let patch = json!({"spec": {"clusterDeploymentName": {"name": "hc1", "namespace": clusters}}});
    agents
        .patch("host-0", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .context("the webhook must allow a ClusterDeployment in another namespace")?;
    let bound = wait_state(&agents, "host-0", "known", Some(Some("hc1"))).await?;
    let status = bound.status.clone().unwrap_or_default();
    assert_eq!(
        status.bound_cluster_deployment.map(|c| c.namespace),
        Some(clusters.to_owned())
    );
    assert_eq!(
        bound
            .labels()
            .get("agent-install.openshift.io/clusterdeployment-namespace"),
        Some(&clusters.to_owned())
    );
    eventually(
        "host_bind_succeeded on hc1 in clusters-hc1",
        Duration::from_secs(10),
        || async {
            let binds = events(admin, clusters, "host_bind_succeeded", "ClusterDeployment").await?;
            Ok((!binds.is_empty()).then_some(()))
        },
    )
    .await?;
    // The ClusterDeployment holds its agents: its finalizer.
    let cds: Api<ClusterDeployment> = Api::namespaced(admin.clone(), clusters);
    let finalizer = "clusterdeployments.agent-install.openshift.io/ai-deprovision".to_string();
    assert!(cds.get("hc1").await?.finalizers().contains(&finalizer));
    set_cluster(&agents, "host-0", None).await?;
    wait_state(&agents, "host-0", "known-unbound", Some(None)).await?;
    webhooks.delete(WEBHOOKS, &DeleteParams::default()).await?;
    Ok(())
}

/// What users select agents by: the InfraEnv's `agentLabels` on every Agent it creates, the
/// inventory labels the controller derives from the hardware, and auto-approval.
pub async fn labels_and_auto_approval(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let ns = "agents-labels";
    namespace(admin, ns).await?;
    let ies: Api<InfraEnv> = Api::namespaced(admin.clone(), ns);
    let ie: InfraEnv = serde_json::from_value(json!({
        "apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
        "metadata": {"name": "rack1", "namespace": ns},
        "spec": {"pullSecretRef": {"name": "pull-secret"}, "agentLabels": {"rack": "r1"},
                 "agentApproval": {"autoApprove": true}}}))?;
    ies.create(&PostParams::default(), &ie).await?;
    let _controller = start_controller(ctx, None).await;
    let _hosts = start_simulator(ctx, ns, "rack1", "host", 2, DEFAULT_HW).await?;
    let agents: Api<Agent> = Api::namespaced(admin.clone(), ns);
    for host in ["host-0", "host-1"] {
        wait_state(&agents, host, "known-unbound", Some(None)).await?;
    }
    let agent = eventually("labelled and approved", Duration::from_secs(30), || async {
        let a = agents.get("host-0").await?;
        let labelled = a
            .labels()
            .contains_key("inventory.agent-install.openshift.io/cpu-architecture");
        Ok((labelled && a.spec.approved).then_some(a))
    })
    .await?;
    let labels = agent.labels();
    for (key, value) in [
        ("rack", "r1"),
        ("infraenvs.agent-install.openshift.io", "rack1"),
        (
            "inventory.agent-install.openshift.io/cpu-architecture",
            "x86_64",
        ),
        (
            "inventory.agent-install.openshift.io/cpu-virtenabled",
            "true",
        ),
        (
            "inventory.agent-install.openshift.io/storage-hasnonrotationaldisk",
            "true",
        ),
        (
            "inventory.agent-install.openshift.io/host-manufacturer",
            "cvo",
        ),
        (
            "inventory.agent-install.openshift.io/host-productname",
            "simulatedhost",
        ),
        (
            "inventory.agent-install.openshift.io/host-isvirtual",
            "true",
        ),
    ] {
        assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
    }
    assert_eq!(
        agent
            .annotations()
            .get("inventory.agent-install.openshift.io/version")
            .map(String::as_str),
        Some("0.1")
    );
    // Agents are selected by hardware.
    let list = agents
        .list(
            &ListParams::default()
                .labels("rack=r1,inventory.agent-install.openshift.io/cpu-virtenabled=true"),
        )
        .await?;
    assert_eq!(list.items.len(), 2);
    let owners = agent.owner_references();
    assert_eq!(
        owners
            .iter()
            .map(|o| (o.kind.as_str(), o.name.as_str()))
            .collect::<Vec<_>>(),
        [("InfraEnv", "rack1")]
    );
    Ok(())
}

/// `--reclaim` with no reclaim agent (no simulator to play it): the reclaim times out after
/// the configured timeout and the host waits for a person (`unbinding-pending-user-action`),
/// a Warning Event on its InfraEnv saying so.
pub async fn reclaim_times_out_without_a_reclaim_agent(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let ns = "agents-reclaim-timeout";
    namespace(admin, ns).await?;
    infra_env(admin, ns, "pool").await?;
    cluster(admin, ns, "prod", false).await?;
    let _controller = start_controller_with(ctx, None, true, Duration::from_secs(3)).await;
    let hosts = start_simulator(ctx, ns, "pool", "host", 1, DEFAULT_HW).await?;
    let agents: Api<Agent> = Api::namespaced(admin.clone(), ns);
    wait_state(&agents, "host-0", "known-unbound", Some(None)).await?;
    set_cluster(&agents, "host-0", Some("prod")).await?;
    wait_state(&agents, "host-0", "known", Some(Some("prod"))).await?;
    // The simulator stops: nothing reboots the host.
    drop(hosts);
    install_state(&agents, "host-0", "installed").await?;
    set_cluster(&agents, "host-0", None).await?;
    wait_state(&agents, "host-0", "reclaiming", Some(None)).await?;
    let started = std::time::Instant::now();
    let pending = wait_state(
        &agents,
        "host-0",
        "unbinding-pending-user-action",
        Some(None),
    )
    .await?;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        pending.status.unwrap_or_default().debug_info.state_info,
        "Host is waiting to be unbound from the cluster"
    );
    let warning = eventually("the Warning Event", Duration::from_secs(10), || async {
        let updates = events(admin, ns, "host_status_updated", "InfraEnv").await?;
        Ok(updates.into_iter().find(|e| {
            e.type_.as_deref() == Some("Warning")
                && e.note
                    .as_deref()
                    .is_some_and(|n| n.contains("from reclaiming to unbinding-pending-user-action"))
        }))
    })
    .await?;
    assert!(warning.note.is_some());
    Ok(())
}
