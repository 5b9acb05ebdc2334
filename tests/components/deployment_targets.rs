//! DeploymentTarget provisioning on a real cluster: the controller (`cvo controller
//! deployment-targets`, in-process) with the namespace provisioner, real finalizers, deletion
//! timestamps and namespace deletion.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{await_condition, conditions};
use kube::{CustomResourceExt, ResourceExt};
use serde_json::json;
use tokio::sync::watch;

use cvo::components::deployment_targets::controller::{DeploymentTargets, Settings};
use cvo::components::deployment_targets::keys;
use cvo::components::deployment_targets::model::NamespaceProvisionerSettings;
use cvo::components::deployment_targets::types::{
    ClaimPhase, DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, Environment,
    GitOpsDeploymentManagedEnvironment, SpaceRequest, TargetPhase,
};
use cvo::host::controller::{ControllerMetrics, HostOptions, run_component};
use cvo::host::webhook::WebhookOptions;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;

use super::{Ctx, apply_all, eventually, may, namespace, payload_documents};

/// The component's CRDs and the ClusterOperator CRD, established.
pub async fn install(admin: &kube::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    let mut all = vec![
        DeploymentTarget::crd(),
        DeploymentTargetClaim::crd(),
        DeploymentTargetClass::crd(),
        Environment::crd(),
        GitOpsDeploymentManagedEnvironment::crd(),
        // Not shipped (codeready-toolchain owns it): installed so the devsandbox flavour runs.
        SpaceRequest::crd(),
    ];
    all.extend(cvo::cluster::crds());
    for crd in all {
        let name = crd.name_any();
        crds.patch(
            &name,
            &PatchParams::apply("cvo-test").force(),
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

/// Stops the controller when dropped, so a failed test does not leave it running.
pub struct Running(watch::Sender<bool>);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.send(true);
    }
}

/// The controller, running in this process until the returned guard is dropped.
async fn start_controller(ctx: &Ctx<'_>) -> anyhow::Result<Running> {
    start_controller_with(ctx, None).await
}

/// The controller, serving the Environment webhook with `webhook`.
async fn start_controller_with(
    ctx: &Ctx<'_>,
    webhook: Option<WebhookOptions>,
) -> anyhow::Result<Running> {
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(ctx.cluster.kubeconfig())?,
        &KubeConfigOptions::default(),
    )
    .await?;
    let settings = Settings {
        version: "4.18.0".into(),
        namespace_provisioner: NamespaceProvisionerSettings {
            server: config
                .cluster_url
                .to_string()
                .trim_end_matches('/')
                .to_string(),
            certificate_authority_data: config.root_cert.as_ref().map(|c| pem(c)),
        },
        insecure_provisioned_targets: false,
        status_interval: Duration::from_secs(5),
        webhook,
    };
    let (tx, rx) = watch::channel(false);
    let client = controller_client(ctx).await?;
    tokio::spawn(async move {
        let options = HostOptions {
            listen: "127.0.0.1:0".parse().expect("an address"),
            lease: None,
        };
        let component = Arc::new(DeploymentTargets { settings });
        if let Err(e) = run_component(
            client,
            component,
            options,
            Arc::new(ControllerMetrics::new()),
            rx,
        )
        .await
        {
            eprintln!("controller stopped: {e}");
        }
    });
    Ok(Running(tx))
}

/// The payload's manifests that give the controller its identity and its rights: it runs as
/// its own ServiceAccount with only what the payload's RBAC grants, as on a cluster, so that a
/// missing rule (or an admission plugin's check, such as OwnerReferencesPermissionEnforcement's)
/// fails here too.
const CONTROLLER_IDENTITY: [&str; 4] = [
    "payloads/4.18.0/release-manifests/0000_50_deployment-targets_00_namespace.yaml",
    "payloads/4.18.0/release-manifests/0000_50_deployment-targets_02_serviceaccount.yaml",
    "payloads/4.18.0/release-manifests/0000_50_deployment-targets_03_rbac.yaml",
    // The tenants' roles, aggregated into admin, edit and view.
    "payloads/4.18.0/release-manifests/0000_50_deployment-targets_03_tenant-roles.yaml",
];

/// The controller's namespace and ServiceAccount (the payload's).
const CONTROLLER_NAMESPACE: &str = "cvo-deployment-targets";
const CONTROLLER_ACCOUNT: &str = "deployment-targets";

/// A client authenticated as the controller's ServiceAccount, its payload RBAC applied.
async fn controller_client(ctx: &Ctx<'_>) -> anyhow::Result<kube::Client> {
    for path in CONTROLLER_IDENTITY {
        apply_all(&ctx.admin, &payload_documents(path)?).await?;
    }
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.admin.clone(), CONTROLLER_NAMESPACE);
    ctx.cluster
        .service_account_client(&accounts, CONTROLLER_ACCOUNT)
        .await
}

fn pem(certs: &[Vec<u8>]) -> String {
    use base64::Engine as _;
    certs
        .iter()
        .map(|der| {
            let b64 = base64::engine::general_purpose::STANDARD.encode(der);
            let lines: Vec<&str> = (b64.as_bytes().chunks(64))
                .map(|c| std::str::from_utf8(c).unwrap_or_default())
                .collect();
            format!(
                "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
                lines.join("\n")
            )
        })
        .collect()
}

async fn class(
    admin: &kube::Client,
    name: &str,
    provisioner: &str,
    reclaim: &str,
) -> anyhow::Result<()> {
    class_with(admin, name, provisioner, reclaim, json!(null)).await
}

/// A class with these `spec.parameters` (none for `null`).
async fn class_with(
    admin: &kube::Client,
    name: &str,
    provisioner: &str,
    reclaim: &str,
    parameters: serde_json::Value,
) -> anyhow::Result<()> {
    let api: Api<DeploymentTargetClass> = Api::all(admin.clone());
    let mut spec = json!({"provisioner": provisioner, "reclaimPolicy": reclaim});
    if !parameters.is_null() {
        spec["parameters"] = parameters;
    }
    let class: DeploymentTargetClass = serde_json::from_value(json!({
        "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "DeploymentTargetClass",
        "metadata": {"name": name},
        "spec": spec}))?;
    api.patch(
        name,
        &PatchParams::apply("cvo-test").force(),
        &Patch::Apply(&class),
    )
    .await?;
    Ok(())
}

async fn claim(
    admin: &kube::Client,
    ns: &str,
    name: &str,
    class: &str,
    target: &str,
) -> anyhow::Result<()> {
    let api: Api<DeploymentTargetClaim> = Api::namespaced(admin.clone(), ns);
    let claim: DeploymentTargetClaim = serde_json::from_value(json!({
        "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "DeploymentTargetClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"deploymentTargetClassName": class, "targetName": target}}))?;
    api.create(&PostParams::default(), &claim).await?;
    Ok(())
}

/// The claim once it is Bound.
async fn bound_claim(
    admin: &kube::Client,
    ns: &str,
    name: &str,
) -> anyhow::Result<DeploymentTargetClaim> {
    let api: Api<DeploymentTargetClaim> = Api::namespaced(admin.clone(), ns);
    eventually(
        &format!("claim {ns}/{name} Bound"),
        Duration::from_secs(30),
        || {
            let api = api.clone();
            async move {
                // Bound, and bind-complete: the binder writes that annotation last.
                let c = api.get(name).await?;
                let phase = c.status.as_ref().and_then(|s| s.phase);
                let complete = c
                    .annotations()
                    .get(keys::ANN_BIND_COMPLETED)
                    .map(String::as_str)
                    == Some("true");
                Ok((phase == Some(ClaimPhase::Bound) && complete).then_some(c))
            }
        },
    )
    .await
}

/// A client that authenticates with the kubeconfig in `secret` (key `kubeconfig`).
async fn client_from_secret(secret: &Secret) -> anyhow::Result<kube::Client> {
    let data = secret.data.clone().unwrap_or_default();
    let text = data
        .get("kubeconfig")
        .ok_or_else(|| anyhow!("secret {} has no kubeconfig key", secret.name_any()))?;
    let kubeconfig = Kubeconfig::from_yaml(std::str::from_utf8(&text.0)?)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

fn config_map(name: &str) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(
        json!({"metadata": {"name": name}, "data": {"k": "v"}}),
    )?)
}

/// Claim → provisioned namespace and target → Bound → Environment → managed environment
/// whose kubeconfig works in the new namespace only → claim deleted → target and namespace
/// gone (reclaim policy Delete).
pub async fn namespace_provisioner_lifecycle(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let _controller = start_controller(ctx).await?;
    namespace(admin, "team-a").await?;
    class(
        admin,
        "isolation-level-namespace",
        keys::PROVISIONER_NAMESPACE,
        "Delete",
    )
    .await?;
    claim(admin, "team-a", "dev", "isolation-level-namespace", "").await?;
    let dtc = bound_claim(admin, "team-a", "dev").await?;
    let annotations = dtc.annotations();
    ensure!(
        annotations
            .get(keys::ANN_BIND_COMPLETED)
            .map(String::as_str)
            == Some("true"),
        "{annotations:?}"
    );
    ensure!(
        annotations
            .get(keys::ANN_BOUND_BY_CONTROLLER)
            .map(String::as_str)
            == Some("true"),
        "{annotations:?}"
    );
    ensure!(
        dtc.finalizers()
            .contains(&keys::FINALIZER_BINDER.to_string()),
        "{:?}",
        dtc.finalizers()
    );
    let targets: Api<DeploymentTarget> = Api::namespaced(admin.clone(), "team-a");
    // The target's own finalizer comes from its controller's next reconcile, which may follow
    // the claim's Bound: wait for it (up to 30 s) rather than race it.
    let mut dt = targets
        .get(&dtc.spec.target_name)
        .await
        .context("the bound target")?;
    for _ in 0..60 {
        if dt.finalizers().contains(&keys::FINALIZER_DT.to_string()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        dt = targets.get(&dtc.spec.target_name).await?;
    }
    ensure!(
        dt.spec.claim_ref == "dev",
        "claimRef {:?}",
        dt.spec.claim_ref
    );
    ensure!(dt.phase() == Some(TargetPhase::Bound));
    ensure!(
        dt.annotations()
            .get(keys::ANN_DYNAMICALLY_PROVISIONED)
            .map(String::as_str)
            == Some(keys::PROVISIONER_NAMESPACE)
    );
    ensure!(
        dt.finalizers().contains(&keys::FINALIZER_DT.to_string()),
        "{:?}",
        dt.finalizers()
    );
    let provisioned = dt.spec.kubernetes_credentials.default_namespace.clone();
    // The binder's Events reach the claim (events.k8s.io/v1, reporting controller cvo-...).
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(admin.clone(), "team-a");
    let reasons = eventually("Events on the claim", Duration::from_secs(10), || {
        let events = events.clone();
        async move {
            let reasons: Vec<String> = (events.list(&Default::default()).await?.items.into_iter())
                .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("dev"))
                .filter(|e| e.reporting_controller.as_deref() == Some("cvo-deployment-targets"))
                .filter_map(|e| e.reason)
                .collect();
            Ok(reasons.iter().any(|r| r == "Bound").then_some(reasons))
        }
    })
    .await?;
    ensure!(
        reasons.iter().any(|r| r == "ProvisioningRequested"),
        "{reasons:?}"
    );
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    namespaces
        .get(&provisioned)
        .await
        .context("the provisioned namespace")?;

    // An Environment on the claim gets a managed environment with working credentials.
    let environments: Api<Environment> = Api::namespaced(admin.clone(), "team-a");
    let env: Environment = serde_json::from_value(json!({
        "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "Environment",
        "metadata": {"name": "development", "namespace": "team-a"},
        "spec": {"displayName": "Development", "deploymentStrategy": "AppStudioAutomated",
                 "configuration": {"env": [], "target": {"deploymentTargetClaim": {"claimName": "dev"}}}}}))?;
    environments.create(&PostParams::default(), &env).await?;
    let managed: Api<GitOpsDeploymentManagedEnvironment> = Api::namespaced(admin.clone(), "team-a");
    let me = eventually("managed environment", Duration::from_secs(30), || {
        let managed = managed.clone();
        async move { Ok(managed.get_opt("managed-environment-development").await?) }
    })
    .await?;
    ensure!(
        me.spec.namespaces == vec![provisioned.clone()],
        "{:?}",
        me.spec
    );
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "team-a");
    let secret = secrets
        .get(&me.spec.credentials_secret)
        .await
        .context("the managed environment's secret")?;
    let deployer = client_from_secret(&secret).await?;
    let cm = config_map("deployed")?;
    Api::<ConfigMap>::namespaced(deployer.clone(), &provisioned)
        .create(&PostParams::default(), &cm)
        .await
        .context("the target's credentials create a ConfigMap in the provisioned namespace")?;
    match Api::<ConfigMap>::namespaced(deployer, "team-a")
        .create(&PostParams::default(), &cm)
        .await
    {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => {
            bail!("the target's credentials must be refused outside their namespace: {other:?}")
        }
    }

    // Deleting the Environment deletes its managed environment, on the deletion itself (well
    // before the controller's 60 s look at managed environments).
    environments
        .delete("development", &DeleteParams::default())
        .await?;
    eventually("managed environment gone", Duration::from_secs(10), || {
        let managed = managed.clone();
        async move {
            let gone = managed
                .get_opt("managed-environment-development")
                .await?
                .is_none();
            Ok(gone.then_some(()))
        }
    })
    .await?;

    // Deleting the claim deletes the target and the namespace (reclaim policy Delete).
    let claims: Api<DeploymentTargetClaim> = Api::namespaced(admin.clone(), "team-a");
    claims.delete("dev", &DeleteParams::default()).await?;
    let dt_name = dt.name_any();
    eventually("namespace gone", Duration::from_secs(60), || {
        let (namespaces, ns) = (namespaces.clone(), provisioned.clone());
        async move { Ok(namespaces.get_opt(&ns).await?.is_none().then_some(())) }
    })
    .await?;
    // The target hears its namespace go (not the 30 s deprovisioning poll).
    eventually("claim and target gone", Duration::from_secs(10), || {
        let (claims, targets, dt_name) = (claims.clone(), targets.clone(), dt_name.clone());
        async move {
            let gone = claims.get_opt("dev").await?.is_none()
                && targets.get_opt(&dt_name).await?.is_none();
            Ok(gone.then_some(()))
        }
    })
    .await?;
    Ok(())
}

/// With reclaim policy Retain, deleting the claim leaves the target `Released`, its claimRef
/// cleared, and its namespace in place.
pub async fn retain_keeps_a_released_target(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let _controller = start_controller(ctx).await?;
    namespace(admin, "team-b").await?;
    class(
        admin,
        "namespace-retained",
        keys::PROVISIONER_NAMESPACE,
        "Retain",
    )
    .await?;
    claim(admin, "team-b", "keep", "namespace-retained", "").await?;
    let dtc = bound_claim(admin, "team-b", "keep").await?;
    let targets: Api<DeploymentTarget> = Api::namespaced(admin.clone(), "team-b");
    let dt_name = dtc.spec.target_name.clone();
    let provisioned = targets
        .get(&dt_name)
        .await?
        .spec
        .kubernetes_credentials
        .default_namespace;
    let claims: Api<DeploymentTargetClaim> = Api::namespaced(admin.clone(), "team-b");
    claims.delete("keep", &DeleteParams::default()).await?;
    let dt = eventually("target Released", Duration::from_secs(30), || {
        let (targets, dt_name) = (targets.clone(), dt_name.clone());
        async move {
            let dt = targets.get(&dt_name).await?;
            match dt.phase() == Some(TargetPhase::Released) {
                true => Ok(Some(dt)),
                false => Err(anyhow!("{:?} {:?}", dt.spec, dt.status)),
            }
        }
    })
    .await?;
    ensure!(
        dt.spec.claim_ref.is_empty(),
        "claimRef {:?}",
        dt.spec.claim_ref
    );
    ensure!(claims.get_opt("keep").await?.is_none(), "the claim is gone");
    Api::<Namespace>::all(admin.clone())
        .get(&provisioned)
        .await
        .context("the retained namespace")?;
    Ok(())
}

/// A target pre-bound to a claim that does not exist yet stays reserved for it (upstream
/// clears its claimRef, and the first claim without a target takes it); the claim it names
/// binds it once created, and a claim naming it afterwards stays Pending with upstream's
/// message.
pub async fn pre_bound_target_is_reserved_and_a_conflict_gets_the_message(
    ctx: &Ctx<'_>,
) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let _controller = start_controller(ctx).await?;
    namespace(admin, "team-c").await?;
    class(admin, "byo", "example.com/none", "Retain").await?;
    let targets: Api<DeploymentTarget> = Api::namespaced(admin.clone(), "team-c");
    let dt: DeploymentTarget = serde_json::from_value(json!({
        "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "DeploymentTarget",
        "metadata": {"name": "prod", "namespace": "team-c"},
        "spec": {"deploymentTargetClassName": "byo", "claimRef": "owner",
                 "kubernetesCredentials": {"defaultNamespace": "prod", "apiURL": "https://example.com:6443",
                                           "clusterCredentialsSecret": "prod-kubeconfig",
                                           "allowInsecureSkipTLSVerify": false}}}))?;
    targets.create(&PostParams::default(), &dt).await?;
    claim(admin, "team-c", "first", "byo", "").await?;
    let claims: Api<DeploymentTargetClaim> = Api::namespaced(admin.clone(), "team-c");
    // The claim without a target is looked at (marked for a provisioner, Pending) and does
    // not get the reserved one.
    eventually("the first claim Pending", Duration::from_secs(30), || {
        let claims = claims.clone();
        async move {
            let c = claims.get("first").await?;
            Ok((c.phase() == Some(ClaimPhase::Pending)).then_some(()))
        }
    })
    .await?;
    let reserved = targets.get("prod").await?;
    ensure!(
        reserved.spec.claim_ref == "owner" && reserved.phase() != Some(TargetPhase::Bound),
        "{:?} {:?}",
        reserved.spec,
        reserved.status
    );
    claim(admin, "team-c", "owner", "byo", "").await?;
    let owner = bound_claim(admin, "team-c", "owner").await?;
    ensure!(owner.spec.target_name == "prod", "{:?}", owner.spec);
    claim(admin, "team-c", "thief", "byo", "prod").await?;
    let thief = eventually("the conflict condition", Duration::from_secs(30), || {
        let claims = claims.clone();
        async move {
            let c = claims.get("thief").await?;
            let has = (c.status.iter().flat_map(|s| s.conditions.iter())).any(|c| {
                c.type_ == keys::CONDITION_ERROR_OCCURRED
                    && c.message == "DeploymentTargetClaim wants to claim a DeploymentTarget that is already claimed"
            });
            match has {
                true => Ok(Some(c)),
                false => Err(anyhow!("status {:?}", c.status)),
            }
        }
    })
    .await?;
    ensure!(thief.phase() == Some(ClaimPhase::Pending));
    ensure!(claims.get("first").await?.phase() == Some(ClaimPhase::Pending));
    Ok(())
}

/// Claims of one class created together each bind a target of their own: the binder reads
/// its own writes, so the second claim never picks the target the first one just bound (the
/// race the first controller lost: BENCHMARKS.md, "DeploymentTarget binding").
pub async fn claims_created_together_bind_distinct_targets(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    const N: usize = 40;
    let admin = &ctx.admin;
    namespace(admin, "team-e").await?;
    class(admin, "pool", "example.com/none", "Retain").await?;
    let targets: Api<DeploymentTarget> = Api::namespaced(admin.clone(), "team-e");
    for i in 0..N {
        let dt: DeploymentTarget = serde_json::from_value(json!({
            "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "DeploymentTarget",
            "metadata": {"name": format!("dt-{i:02}"), "namespace": "team-e"},
            "spec": {"deploymentTargetClassName": "pool",
                     "kubernetesCredentials": {"defaultNamespace": "app", "apiURL": "https://example.com:6443",
                                               "clusterCredentialsSecret": "pool-kubeconfig",
                                               "allowInsecureSkipTLSVerify": false}}}))?;
        targets.create(&PostParams::default(), &dt).await?;
    }
    let _controller = start_controller(ctx).await?;
    // Once the reclaimer has put its finalizer on every target, nothing but the binder writes
    // them: a claim can then only lose its target to another claim, never to a conflict.
    eventually("finalizers on the targets", Duration::from_secs(30), || {
        let targets = targets.clone();
        async move {
            let list = targets.list(&Default::default()).await?.items;
            let all = list.len() == N
                && (list.iter()).all(|t| t.finalizers().iter().any(|f| f == keys::FINALIZER_DT));
            Ok(all.then_some(()))
        }
    })
    .await?;
    let names: Vec<String> = (0..N).map(|i| format!("c-{i:02}")).collect();
    let creates = names
        .iter()
        .map(|name| claim(admin, "team-e", name, "pool", ""));
    futures_util::future::try_join_all(creates).await?;
    let mut taken = std::collections::BTreeSet::new();
    for name in &names {
        let c = bound_claim(admin, "team-e", name).await?;
        let errors = (c.status.iter().flat_map(|s| s.conditions.iter()))
            .filter(|c| c.type_ == keys::CONDITION_ERROR_OCCURRED && c.status == "True")
            .count();
        ensure!(errors == 0, "claim {name}: {:?}", c.status);
        ensure!(
            taken.insert(c.spec.target_name.clone()),
            "two claims bound {}",
            c.spec.target_name
        );
    }
    // No claim had to give up a target another one took: each read the binds before it.
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(admin.clone(), "team-e");
    let rematched = (events.list(&Default::default()).await?.items.into_iter())
        .filter(|e| e.reason.as_deref() == Some("Rematching"))
        .count();
    ensure!(rematched == 0, "{rematched} claims rematched");
    Ok(())
}

/// The Environment admission webhook over TLS: the controller makes its certificate, injects
/// the CA into the ValidatingWebhookConfiguration, and the API server then refuses an
/// Environment that breaks upstream's rules with upstream's message and admits a valid one.
pub async fn environment_webhook_refuses_and_admits(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let configuration = "deployment-targets.appstudio.redhat.com";
    let webhooks: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    // Only in the test's namespace, so that other tests' Environments never meet it.
    let vwc: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": configuration},
        "webhooks": [{
            "name": "venvironment.kb.io",
            "clientConfig": {"url": format!("https://127.0.0.1:{port}{}",
                cvo::components::deployment_targets::controller::ENVIRONMENT_WEBHOOK_PATH)},
            "rules": [{"apiGroups": ["appstudio.redhat.com"], "apiVersions": ["v1alpha1"],
                       "operations": ["CREATE", "UPDATE"], "resources": ["environments"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-w"}},
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}))?;
    webhooks.create(&PostParams::default(), &vwc).await?;
    namespace(admin, "team-w").await?;
    let options = WebhookOptions {
        listen: format!("127.0.0.1:{port}").parse()?,
        namespace: "cvo-deployment-targets".into(),
        secret: "deployment-targets-webhook-serving-cert".into(),
        names: vec!["127.0.0.1".into()],
        configuration: configuration.into(),
    };
    let _controller = start_controller_with(ctx, Some(options)).await?;
    eventually("the CA bundle injected", Duration::from_secs(30), || {
        let webhooks = webhooks.clone();
        async move {
            let v = webhooks.get(configuration).await?;
            let injected = (v.webhooks.iter().flatten()).all(|w| {
                w.client_config
                    .ca_bundle
                    .as_ref()
                    .is_some_and(|b| !b.0.is_empty())
            });
            Ok(injected.then_some(()))
        }
    })
    .await?;
    let environments: Api<Environment> = Api::namespaced(admin.clone(), "team-w");
    let environment = |name: &str, ingress: &str| -> anyhow::Result<Environment> {
        Ok(serde_json::from_value(json!({
            "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "Environment",
            "metadata": {"name": name, "namespace": "team-w"},
            "spec": {"displayName": name, "deploymentStrategy": "Manual",
                     "unstableConfigurationFields": {"clusterType": "Kubernetes",
                         "kubernetesCredentials": {"targetNamespace": "apps", "apiURL": "https://api.example.com:6443",
                             "ingressDomain": ingress, "clusterCredentialsSecret": "creds",
                             "allowInsecureSkipTLSVerify": false}}}}))?)
    };
    let refused = environments
        .create(&PostParams::default(), &environment("no-ingress", "")?)
        .await;
    match refused {
        Err(kube::Error::Api(s))
            if s.message
                .contains("ingress domain cannot be empty if cluster is of type Kubernetes") => {}
        other => bail!("the webhook must refuse an Environment without ingressDomain: {other:?}"),
    }
    environments
        .create(
            &PostParams::default(),
            &environment("good", "apps.example.com")?,
        )
        .await
        .context("a valid Environment is admitted")?;
    webhooks
        .delete(configuration, &DeleteParams::default())
        .await?;
    Ok(())
}

/// The devsandbox flavour: a claim of a devsandbox class gets a SpaceRequest; once the test
/// (playing codeready-toolchain) makes it Ready with a namespace and a secret, the controller
/// makes the target `<claim>-dt` from it and the claim binds.
pub async fn devsandbox_space_request_becomes_a_bound_target(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let admin = &ctx.admin;
    let _controller = start_controller(ctx).await?;
    namespace(admin, "team-s").await?;
    class(admin, "sandbox", keys::PROVISIONER_DEVSANDBOX, "Delete").await?;
    claim(admin, "team-s", "stage", "sandbox", "").await?;
    let requests: Api<SpaceRequest> = Api::namespaced(admin.clone(), "team-s");
    let request = eventually(
        "a SpaceRequest for the claim",
        Duration::from_secs(30),
        || {
            let requests = requests.clone();
            async move {
                let list = requests.list(&Default::default()).await?;
                Ok(list.items.into_iter().find(|r| {
                    r.labels().get(keys::LABEL_CLAIM).map(String::as_str) == Some("stage")
                }))
            }
        },
    )
    .await?;
    ensure!(
        request.spec.tier_name == keys::SPACE_REQUEST_TIER,
        "{:?}",
        request.spec
    );
    ensure!(
        request.name_any().starts_with("stage-"),
        "generateName: {}",
        request.name_any()
    );
    let status = json!({"status": {
        "targetClusterURL": "https://api.member.example.com:6443",
        "namespaceAccess": [{"name": "stage-tenant", "secretRef": "stage-tenant-kubeconfig"}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "Provisioned"}]}});
    requests
        .patch_status(
            &request.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    let dtc = bound_claim(admin, "team-s", "stage").await?;
    ensure!(dtc.spec.target_name == "stage-dt", "{:?}", dtc.spec);
    let dt = Api::<DeploymentTarget>::namespaced(admin.clone(), "team-s")
        .get("stage-dt")
        .await?;
    let credentials = &dt.spec.kubernetes_credentials;
    ensure!(
        credentials.default_namespace == "stage-tenant",
        "{credentials:?}"
    );
    ensure!(
        credentials.api_url == "https://api.member.example.com:6443",
        "{credentials:?}"
    );
    ensure!(credentials.cluster_credentials_secret == "stage-tenant-kubeconfig");
    ensure!(
        dt.annotations()
            .get(keys::ANN_DYNAMICALLY_PROVISIONED)
            .map(String::as_str)
            == Some(keys::PROVISIONER_DEVSANDBOX)
    );
    let name = request.name_any();
    eventually(
        "the SpaceRequest labelled with its target",
        Duration::from_secs(30),
        || {
            let (requests, name) = (requests.clone(), name.clone());
            async move {
                let r = requests.get(&name).await?;
                let labelled =
                    r.labels().get(keys::LABEL_TARGET).map(String::as_str) == Some("stage-dt");
                Ok(labelled.then_some(()))
            }
        },
    )
    .await
}

/// A tenant: a ServiceAccount with only the `admin` role in its namespace (which the payload's
/// aggregated roles extend to the component's APIs) creates a claim and an Environment there
/// and sees them bound and projected; it reads the classes, and can touch nothing of the
/// component's in another namespace, nor the classes.
pub async fn tenant_admin_claims_and_is_bound(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::rbac::v1::RoleBinding;
    let admin = &ctx.admin;
    let _controller = start_controller(ctx).await?;
    namespace(admin, "tenant-t").await?;
    namespace(admin, "tenant-u").await?;
    class(
        admin,
        "tenant-namespace",
        keys::PROVISIONER_NAMESPACE,
        "Delete",
    )
    .await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "tenant-t");
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "alice"}}))?;
    accounts.create(&PostParams::default(), &account).await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "alice-admin", "namespace": "tenant-t"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": "tenant-t"}]}))?;
    Api::<RoleBinding>::namespaced(admin.clone(), "tenant-t")
        .create(&PostParams::default(), &binding)
        .await?;
    let alice = ctx
        .cluster
        .service_account_client(&accounts, "alice")
        .await?;
    // kube-controller-manager's aggregation adds the component's rules to `admin`.
    let claims_rule = ("appstudio.redhat.com", "deploymenttargetclaims", "create");
    eventually(
        "admin aggregates the tenant roles",
        Duration::from_secs(30),
        || {
            let alice = alice.clone();
            async move { Ok(may(&alice, "tenant-t", claims_rule).await?.then_some(())) }
        },
    )
    .await?;

    Api::<DeploymentTargetClass>::all(alice.clone())
        .get("tenant-namespace")
        .await
        .context("every authenticated user reads the classes")?;
    claim(&alice, "tenant-t", "dev", "tenant-namespace", "").await?;
    let environments: Api<Environment> = Api::namespaced(alice.clone(), "tenant-t");
    let env: Environment = serde_json::from_value(json!({
        "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "Environment",
        "metadata": {"name": "dev", "namespace": "tenant-t"},
        "spec": {"displayName": "Dev", "deploymentStrategy": "AppStudioAutomated",
                 "configuration": {"target": {"deploymentTargetClaim": {"claimName": "dev"}}}}}))?;
    environments.create(&PostParams::default(), &env).await?;
    let dtc = bound_claim(&alice, "tenant-t", "dev").await?;
    Api::<DeploymentTarget>::namespaced(alice.clone(), "tenant-t")
        .get(&dtc.spec.target_name)
        .await
        .context("the tenant reads its target")?;
    let managed: Api<GitOpsDeploymentManagedEnvironment> =
        Api::namespaced(alice.clone(), "tenant-t");
    eventually(
        "the tenant sees its managed environment",
        Duration::from_secs(30),
        || {
            let managed = managed.clone();
            async move { Ok(managed.get_opt("managed-environment-dev").await?) }
        },
    )
    .await?;

    // Nothing of the component's in another namespace, nor the classes.
    let forbidden = |result: anyhow::Result<()>, what: &str| match result {
        Err(e) if matches!(e.downcast_ref::<kube::Error>(), Some(kube::Error::Api(s)) if s.code == 403) => {
            Ok(())
        }
        other => Err(anyhow!("{what} must be forbidden: {other:?}")),
    };
    forbidden(
        claim(&alice, "tenant-u", "squat", "tenant-namespace", "").await,
        "a claim in another namespace",
    )?;
    let listed = Api::<DeploymentTarget>::namespaced(alice.clone(), "tenant-u")
        .list(&Default::default())
        .await;
    forbidden(
        listed.map(|_| ()).map_err(anyhow::Error::from),
        "listing another namespace's targets",
    )?;
    forbidden(
        class(&alice, "alices-own", keys::PROVISIONER_NAMESPACE, "Delete").await,
        "writing a class",
    )?;
    ensure!(
        !may(
            &alice,
            "tenant-t",
            (
                "appstudio.redhat.com",
                "deploymenttargetclaims/status",
                "update"
            )
        )
        .await?,
        "the status is the controller's"
    );
    environments.delete("dev", &DeleteParams::default()).await?;
    Api::<DeploymentTargetClaim>::namespaced(alice.clone(), "tenant-t")
        .delete("dev", &DeleteParams::default())
        .await?;
    Ok(())
}

/// A class's parameters on a cluster: the provisioned namespace gets the class's quota and
/// LimitRange and its role; a second claim of the namespace waits at the class's cap (and its
/// Environment says the claim is not bound); a class with an unknown parameter says so in its
/// status. The API server caps tokens at an hour (`MAX_TOKEN_EXPIRATION`): the kubeconfig
/// Secret records the expiry the server gave, not the year asked, and a token due for renewal
/// (the test moves its recorded times back, as time passing would) is renewed, and works.
pub async fn class_parameters_and_token_renewal(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota};
    use k8s_openapi::api::rbac::v1::RoleBinding;
    use k8s_openapi::jiff::{SignedDuration, Timestamp};
    let admin = &ctx.admin;
    let _controller = start_controller(ctx).await?;
    namespace(admin, "team-q").await?;
    class_with(
        admin,
        "limited",
        keys::PROVISIONER_NAMESPACE,
        "Delete",
        json!({"role": "edit", "maxClaimsPerNamespace": 1,
               "resourceQuota": {"hard": {"pods": "3", "configmaps": "5"}},
               "limitRange": {"limits": [{"type": "Container", "default": {"cpu": "200m"}}]}}),
    )
    .await?;
    claim(admin, "team-q", "one", "limited", "").await?;
    let dtc = bound_claim(admin, "team-q", "one").await?;
    let targets: Api<DeploymentTarget> = Api::namespaced(admin.clone(), "team-q");
    let dt = targets.get(&dtc.spec.target_name).await?;
    let made = dt.spec.kubernetes_credentials.default_namespace.clone();
    let quota = Api::<ResourceQuota>::namespaced(admin.clone(), &made)
        .get("deployment-target")
        .await
        .context("the class's quota")?;
    let hard = quota.spec.and_then(|s| s.hard).unwrap_or_default();
    ensure!(
        hard.get("pods").map(|q| q.0.as_str()) == Some("3"),
        "{hard:?}"
    );
    let range = Api::<LimitRange>::namespaced(admin.clone(), &made)
        .get("deployment-target")
        .await
        .context("the class's LimitRange")?;
    ensure!(range.spec.is_some_and(|s| s.limits[0].type_ == "Container"));
    let binding = Api::<RoleBinding>::namespaced(admin.clone(), &made)
        .get("deployment-target-edit")
        .await
        .context("the class's role")?;
    ensure!(binding.role_ref.name == "edit", "{:?}", binding.role_ref);

    // The cap: the second claim waits, says why, and its Environment tells the truth.
    claim(admin, "team-q", "two", "limited", "").await?;
    let environments: Api<Environment> = Api::namespaced(admin.clone(), "team-q");
    let env: Environment = serde_json::from_value(json!({
        "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "Environment",
        "metadata": {"name": "on-two", "namespace": "team-q"},
        "spec": {"displayName": "Two", "deploymentStrategy": "Manual",
                 "configuration": {"target": {"deploymentTargetClaim": {"claimName": "two"}}}}}))?;
    environments.create(&PostParams::default(), &env).await?;
    let claims: Api<DeploymentTargetClaim> = Api::namespaced(admin.clone(), "team-q");
    eventually(
        "the second claim at the cap",
        Duration::from_secs(30),
        || {
            let claims = claims.clone();
            async move {
                let c = claims.get("two").await?;
                let capped = (c.status.iter().flat_map(|s| s.conditions.iter()))
                    .any(|c| c.status == "True" && c.message.contains("its maxClaimsPerNamespace"));
                Ok((capped && c.phase() == Some(ClaimPhase::Pending)).then_some(()))
            }
        },
    )
    .await?;
    eventually(
        "the Environment on it not reconciled",
        Duration::from_secs(30),
        || {
            let environments = environments.clone();
            async move {
                let e = environments.get("on-two").await?;
                let reason = (e.status.iter().flat_map(|s| s.conditions.iter()))
                    .find(|c| c.type_ == keys::CONDITION_RECONCILED && c.status == "False")
                    .map(|c| c.reason.clone());
                Ok((reason.as_deref() == Some("DeploymentTargetClaimNotBound")).then_some(()))
            }
        },
    )
    .await?;

    // An unknown parameter is an error on the class.
    class_with(
        admin,
        "typo",
        keys::PROVISIONER_NAMESPACE,
        "Delete",
        json!({"maxClaimPerNamespace": 1}),
    )
    .await?;
    let classes: Api<DeploymentTargetClass> = Api::all(admin.clone());
    eventually(
        "the class's error condition",
        Duration::from_secs(30),
        || {
            let classes = classes.clone();
            async move {
                let c = classes.get("typo").await?;
                let shown = (c.status.iter().flat_map(|s| s.conditions.iter())).any(|c| {
                    c.type_ == keys::CONDITION_ERROR_OCCURRED
                        && c.status == "True"
                        && c.message.contains("(did you mean maxClaimsPerNamespace?)")
                });
                Ok(shown.then_some(()))
            }
        },
    )
    .await?;

    // The token: asked for a year, given an hour by this API server, and recorded so.
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "team-q");
    let secret_name = dt
        .spec
        .kubernetes_credentials
        .cluster_credentials_secret
        .clone();
    let secret = secrets.get(&secret_name).await?;
    let annotation = |s: &Secret, key: &str| -> anyhow::Result<Timestamp> {
        let text = s.annotations().get(key).context(key.to_owned())?;
        Ok(text.parse()?)
    };
    let issued = annotation(&secret, keys::ANN_TOKEN_ISSUED_AT)?;
    let expires = annotation(&secret, keys::ANN_TOKEN_EXPIRES_AT)?;
    let lifetime = expires.duration_since(issued);
    ensure!(
        lifetime <= SignedDuration::from_hours(1) + SignedDuration::from_mins(1)
            && lifetime >= SignedDuration::from_mins(55),
        "the recorded lifetime is the server's hour, not a year: {lifetime}"
    );
    // Time passes (the recorded times move back past 80% of the lifetime): renewed.
    let now = Timestamp::now();
    let back = json!({"metadata": {"annotations": {
        keys::ANN_TOKEN_ISSUED_AT: (now - SignedDuration::from_hours(2)).to_string(),
        keys::ANN_TOKEN_EXPIRES_AT: (now - SignedDuration::from_hours(1)).to_string()}}});
    secrets
        .patch(&secret_name, &PatchParams::default(), &Patch::Merge(&back))
        .await?;
    let renewed = eventually("the token renewed", Duration::from_secs(30), || {
        let secrets = secrets.clone();
        let secret_name = secret_name.clone();
        async move {
            let s = secrets.get(&secret_name).await?;
            let expires = annotation(&s, keys::ANN_TOKEN_EXPIRES_AT)?;
            Ok((expires > Timestamp::now()).then_some(s))
        }
    })
    .await?;
    ensure!(
        renewed.data.as_ref().map(|d| &d["kubeconfig"])
            != secret.data.as_ref().map(|d| &d["kubeconfig"]),
        "a new token in the kubeconfig"
    );
    let deployer = client_from_secret(&renewed).await?;
    Api::<ConfigMap>::namespaced(deployer, &made)
        .create(&PostParams::default(), &config_map("after-renewal")?)
        .await
        .context("the renewed token works in its namespace")?;
    environments
        .delete("on-two", &DeleteParams::default())
        .await?;
    claims.delete("two", &DeleteParams::default()).await?;
    claims.delete("one", &DeleteParams::default()).await?;
    classes.delete("typo", &DeleteParams::default()).await?;
    Ok(())
}
