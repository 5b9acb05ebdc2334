//! `operator::apply` against the real kube-apiserver: one apply pass over the bundled payload
//! and over small payloads written to temp dirs (unique names, so tests do not interfere).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use kube::runtime::wait::{Condition, conditions};
use serde_json::json;

use cvo::capability::{CapabilitiesSpec, Registry, set_capabilities};
use cvo::graph::Mode;
use cvo::include::{InclusionConfig, include};
use cvo::manifest::{DELETE_ANNOTATION, Manifest};
use cvo::operator::ClusterVersionOwner;
use cvo::operator::{ApplyOptions, ApplyReport, Effect, apply_payload, apply_payload_with};
use cvo::payload::{LoadOptions, Payload, bundled_input, read_directory};

use super::Ctx;

const PROFILE: &str = "self-managed-high-availability";
const WORKERS: usize = 8;

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// A plain directory of manifests (read as `release-manifests/`), loaded.
fn write_payload(files: &[(&str, String)]) -> anyhow::Result<(tempfile::TempDir, Payload)> {
    let dir = tempfile::tempdir()?;
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text)?;
    }
    let input = read_directory(dir.path())?;
    let payload = Payload::from_input(input, &LoadOptions::default())?;
    Ok((dir, payload))
}

fn small_config() -> InclusionConfig {
    InclusionConfig {
        profile: Some(PROFILE.into()),
        ..Default::default()
    }
}

async fn apply_all(ctx: &Ctx<'_>, payload: &Payload, mode: Mode) -> ApplyReport {
    let config = small_config();
    let manifests = payload.included(&config);
    apply_payload(&ctx.admin, &manifests, &config, mode, WORKERS).await
}

async fn apply_with(
    ctx: &Ctx<'_>,
    payload: &Payload,
    mode: Mode,
    options: &ApplyOptions,
) -> ApplyReport {
    let config = small_config();
    let manifests = payload.included(&config);
    apply_payload_with(&ctx.admin, &manifests, &config, mode, WORKERS, options).await
}

fn namespace(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  annotations:\n    include.release.openshift.io/{PROFILE}: \"true\"\n"
    )
}

fn config_map(ns: &str, name: &str, extra_annotation: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n  annotations:\n    include.release.openshift.io/{PROFILE}: \"true\"\n{extra_annotation}data:\n  key: {value}\n"
    )
}

async fn cm_value(api: &Api<ConfigMap>, name: &str) -> anyhow::Result<Option<String>> {
    Ok(api
        .get_opt(name)
        .await?
        .and_then(|cm| cm.data)
        .and_then(|d| d.get("key").cloned()))
}

/// Another actor edits `key` (and adds a key of its own).
async fn edit_in_cluster(api: &Api<ConfigMap>, name: &str, value: &str) -> anyhow::Result<()> {
    let patch = json!({"data": {"key": value, "theirs": "kept"}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn cleanup(ctx: &Ctx<'_>, ns: &str) {
    let api: Api<Namespace> = Api::all(ctx.admin.clone());
    let _ = api.delete(ns, &DeleteParams::default()).await;
}

/// The CRDs of other components the bundled payload needs ([`crate::foreign_crds`]).
pub async fn install_foreign_crds(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    crate::foreign_crds::install_foreign_crds(&ctx.admin).await
}

pub async fn exists(ctx: &Ctx<'_>, discovery: &Discovery, m: &Manifest) -> anyhow::Result<bool> {
    let gvk = GroupVersionKind::gvk(&m.gvk.group, &m.gvk.version, &m.gvk.kind);
    let Some((resource, caps)) = discovery.resolve_gvk(&gvk) else {
        return Ok(false);
    };
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Cluster => Api::all_with(ctx.admin.clone(), &resource),
        Scope::Namespaced => Api::namespaced_with(ctx.admin.clone(), &m.id.namespace, &resource),
    };
    Ok(api.get_opt(&m.id.name).await?.is_some())
}

pub async fn apply_bundled_payload(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    install_foreign_crds(ctx).await?;
    let payload = Payload::from_input(bundled_input(), &LoadOptions::default())?;
    let gates = payload.feature_gates_for("", PROFILE).unwrap_or_default();
    let load = InclusionConfig {
        profile: Some(PROFILE.into()),
        required_feature_set: Some(String::new()),
        enabled_feature_gates: Some(gates.clone()),
        major_version: Some(4),
        ..Default::default()
    };
    let spec = CapabilitiesSpec {
        baseline_capability_set: Some("None".into()),
        additional_enabled_capabilities: vec![],
    };
    let caps = set_capabilities(&Registry::standard(), Some(&spec), &[], &gates);
    let config = InclusionConfig {
        capabilities: Some(caps.filter()),
        ..load.clone()
    };
    let manifests = payload.included(&load);
    let t0 = std::time::Instant::now();
    let report = apply_payload(&ctx.admin, &manifests, &config, Mode::Install, WORKERS).await;
    eprintln!(
        "  bundled payload: {} of {} done, {} skipped, {} waiting in {:.2}s",
        report.done,
        report.total,
        report.skipped,
        report.waiting.len(),
        t0.elapsed().as_secs_f64()
    );
    ensure!(report.errors.is_empty(), "errors: {:#?}", report.errors);
    ensure!(report.incomplete == 0, "{report:?}");
    ensure!(
        report.waiting.len() == 1 && report.waiting[0].starts_with("clusteroperator \"etcd\""),
        "{:?}",
        report.waiting
    );
    ensure!(
        report.done + report.skipped + report.waiting.len() == report.total,
        "{report:?}"
    );

    let discovery = Discovery::new(ctx.admin.clone()).run().await?;
    let mut applied = 0;
    for m in &payload.manifests {
        let is_co = m.gvk.is("config.openshift.io", "ClusterOperator");
        let deleted = m.annotation(DELETE_ANNOTATION).is_some();
        let wanted = manifests.iter().any(|w| std::ptr::eq(*w, m))
            && include(m, &config).is_ok()
            && !is_co
            && !deleted;
        let capability = m.annotation("capability.openshift.io/name").unwrap_or("");
        let there = exists(ctx, &discovery, m).await?;
        if wanted {
            ensure!(there, "{} was not applied", m.describe());
            applied += 1;
        }
        if deleted && include(m, &config).is_ok() {
            applied += 1; // a deletion (here: of nothing) is a done task too
        }
        let disabled = [
            "Console",
            "baremetal",
            "MachineAPI",
            "DeploymentTargets",
            "AgentInstall",
        ];
        if disabled.contains(&capability) || deleted || is_co {
            ensure!(!there, "{} exists", m.describe());
        }
    }
    ensure!(applied == report.done, "{applied} tasks vs {report:?}");
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.admin.clone());
    for name in [
        "clusterversions.config.openshift.io",
        "clusteroperators.config.openshift.io",
    ] {
        let crd = crds.get(name).await?;
        ensure!(
            conditions::is_crd_established().matches_object(Some(&crd)),
            "{name} is not Established"
        );
    }
    // A second pass over the same payload changes nothing and still succeeds.
    let again = apply_payload(&ctx.admin, &manifests, &config, Mode::Update, WORKERS).await;
    ensure!(again.errors.is_empty(), "{:#?}", again.errors);
    ensure!(again.done == report.done, "{again:?}");
    Ok(())
}

pub async fn apply_crd_then_custom_resource(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let group = format!("{}.example.com", unique("cvo-test"));
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}"),
                     "annotations": {format!("include.release.openshift.io/{PROFILE}"): "true"}},
        "spec": {"group": group, "scope": "Cluster",
                 "names": {"plural": "widgets", "kind": "Widget", "singular": "widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
    });
    let widget = |name: &str| {
        json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
               "metadata": {"name": name, "annotations": {format!("include.release.openshift.io/{PROFILE}"): "true"}},
               "spec": {"size": 3}})
        .to_string()
    };
    let (_dir, in_order) = write_payload(&[
        ("0000_10_widgets_00_crd.yaml", crd.to_string()),
        ("0000_20_widgets_01_cr.yaml", widget("in-order")),
    ])?;
    let report = apply_all(ctx, &in_order, Mode::Update).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");

    // Install mode runs both nodes at once: the custom resource waits (retries) for its CRD.
    let (_dir2, payload2) = write_payload(&[
        ("0000_10_widgets_00_crd.yaml", crd.to_string()),
        ("0000_20_widgets_01_cr.yaml", widget("flattened")),
    ])?;
    let report = apply_all(ctx, &payload2, Mode::Install).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");

    let discovery = Discovery::new(ctx.admin.clone()).run().await?;
    let gvk = GroupVersionKind::gvk(&group, "v1", "Widget");
    let (resource, _) = discovery.resolve_gvk(&gvk).context("Widget not served")?;
    let api: Api<DynamicObject> = Api::all_with(ctx.admin.clone(), &resource);
    for name in ["in-order", "flattened"] {
        let w = api.get(name).await?;
        ensure!(w.data["spec"]["size"] == 3, "{w:?}");
    }

    // A kind nobody serves is UpdatePayloadResourceTypeMissing.
    let (_dir3, payload3) = write_payload(&[(
        "0000_20_widgets_01_cr.yaml",
        widget("x").replace("\"Widget\"", "\"Gadget\""),
    )])?;
    let config = small_config();
    let once = ApplyOptions {
        attempts: 1,
        ..ApplyOptions::default()
    };
    let manifests = payload3.included(&config);
    let report = apply_payload_with(
        &ctx.admin,
        &manifests,
        &config,
        Mode::Update,
        WORKERS,
        &once,
    )
    .await;
    ensure!(report.errors.len() == 1, "{report:#?}");
    let e = &report.errors[0];
    ensure!(e.reason == "UpdatePayloadResourceTypeMissing", "{e:?}");
    ensure!(
        e.message
            == "Could not update gadget \"x\" (1 of 1): the server does not recognize this resource, check extension API servers",
        "{e:?}"
    );
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.admin.clone());
    crds.delete(&format!("widgets.{group}"), &DeleteParams::default())
        .await?;
    Ok(())
}

pub async fn apply_create_only_and_delete(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let ns = unique("cvo-test-ops");
    let api: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), &ns);
    let create_only = "    release.openshift.io/create-only: \"True\"\n";
    let files = |value: &str| {
        [
            ("0000_10_test_00_ns.yaml", namespace(&ns)),
            (
                "0000_10_test_01_cm.yaml",
                config_map(&ns, "once", create_only, value),
            ),
        ]
    };
    let (_d, first) = write_payload(&files("from-payload"))?;
    let report = apply_all(ctx, &first, Mode::Update).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");
    ensure!(cm_value(&api, "once").await?.as_deref() == Some("from-payload"));

    edit_in_cluster(&api, "once", "from-cluster").await?;
    let (_d, second) = write_payload(&files("changed-payload"))?;
    let report = apply_all(ctx, &second, Mode::Update).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");
    ensure!(
        cm_value(&api, "once").await?.as_deref() == Some("from-cluster"),
        "create-only objects are never updated"
    );

    // delete: "true".
    let doomed = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("doomed".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("key".to_string(), "v".to_string())])),
        ..Default::default()
    };
    api.create(&PostParams::default(), &doomed).await?;
    let delete = "    release.openshift.io/delete: \"true\"\n";
    let (_d, deleting) = write_payload(&[
        ("0000_10_test_00_ns.yaml", namespace(&ns)),
        (
            "0000_10_test_01_cm.yaml",
            config_map(&ns, "doomed", delete, "v"),
        ),
    ])?;
    // Installing only observes deletions (upstream requests them when updating).
    let report = apply_all(ctx, &deleting, Mode::Install).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");
    ensure!(
        api.get_opt("doomed").await?.is_some(),
        "deleted while installing"
    );
    let report = apply_all(ctx, &deleting, Mode::Update).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");
    ensure!(api.get_opt("doomed").await?.is_none(), "not deleted");
    // Already gone counts as deleted.
    let report = apply_all(ctx, &deleting, Mode::Update).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");

    // A delete annotation that is not exactly "true".
    let bad = "    release.openshift.io/delete: \"yes\"\n";
    let (_d, invalid) = write_payload(&[
        ("0000_10_test_00_ns.yaml", namespace(&ns)),
        ("0000_10_test_01_cm.yaml", config_map(&ns, "bad", bad, "v")),
    ])?;
    let report = apply_all(ctx, &invalid, Mode::Update).await;
    ensure!(report.done == 1 && report.errors.len() == 1, "{report:#?}");
    let e = &report.errors[0];
    ensure!(e.reason == "UpdatePayloadFailed", "{e:?}");
    ensure!(
        e.message == format!("Could not update configmap \"{ns}/bad\" (2 of 2)"),
        "{e:?}"
    );
    ensure!(
        e.error == r#"invalid delete annotation "release.openshift.io/delete" value: "yes""#,
        "{e:?}"
    );
    ensure!(api.get_opt("bad").await?.is_none(), "created anyway");
    cleanup(ctx, &ns).await;
    Ok(())
}

pub async fn apply_reverts_drift(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let ns = unique("cvo-test-drift");
    let api: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), &ns);
    let (_d, managed) = write_payload(&[
        ("0000_10_test_00_ns.yaml", namespace(&ns)),
        (
            "0000_10_test_01_cm.yaml",
            config_map(&ns, "managed", "", "desired"),
        ),
    ])?;
    let report = apply_all(ctx, &managed, Mode::Install).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");
    edit_in_cluster(&api, "managed", "drifted").await?;
    ensure!(cm_value(&api, "managed").await?.as_deref() == Some("drifted"));
    let report = apply_all(ctx, &managed, Mode::Update).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");
    let live = api.get("managed").await?;
    let data = live.data.unwrap_or_default();
    ensure!(
        data.get("key").map(String::as_str) == Some("desired"),
        "{data:?}"
    );
    ensure!(
        data.get("theirs").map(String::as_str) == Some("kept"),
        "fields the manifest does not set are left alone: {data:?}"
    );
    cleanup(ctx, &ns).await;
    Ok(())
}

pub async fn apply_command(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let ns = unique("cvo-test-cli");
    let bad = "    release.openshift.io/delete: \"no\"\n";
    let (dir, _) = write_payload(&[
        ("0000_10_test_00_ns.yaml", namespace(&ns)),
        ("0000_10_test_01_cm.yaml", config_map(&ns, "cli", "", "v")),
        ("0000_20_test_02_cm.yaml", config_map(&ns, "bad", bad, "v")),
    ])?;
    let run = |mode: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_cvo"))
            .args(["apply", "--mode", mode, "-o", "json", "--payload"])
            .arg(dir.path())
            .arg("--kubeconfig")
            .arg(ctx.cluster.kubeconfig())
            .output()
    };
    let out = run("update")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(out.status.code() == Some(1), "{:?}: {stdout}", out.status);
    let report: serde_json::Value = serde_json::from_str(&stdout)?;
    ensure!(report["done"] == 2 && report["total"] == 3, "{report}");
    ensure!(
        report["errors"][0]["reason"] == "UpdatePayloadFailed",
        "{report}"
    );
    let api: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), &ns);
    ensure!(cm_value(&api, "cli").await?.as_deref() == Some("v"));
    cleanup(ctx, &ns).await;
    Ok(())
}

fn deployment(ns: &str, name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {ns}\n  annotations:\n    include.release.openshift.io/{PROFILE}: \"true\"\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n      - name: main\n        image: quay.io/example/{name}:1\n"
    )
}

fn job(ns: &str, name: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: {ns}\n  annotations:\n    include.release.openshift.io/{PROFILE}: \"true\"\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: quay.io/example/{name}:1\n"
    )
}

/// Plays the controller: writes `status` through the status subresource.
async fn set_status<K>(api: &Api<K>, name: &str, status: serde_json::Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({ "status": status })),
    )
    .await?;
    Ok(())
}

fn installing() -> ApplyOptions {
    ApplyOptions {
        initializing: true,
        ..ApplyOptions::default()
    }
}

/// Spec §7.3: an applied Deployment is checked on the object the apply returned; a replica
/// failure fails the task at once with upstream's `UpdateError`; a deletion in progress is a
/// plain error (retried, then `Could not update`); Initializing checks nothing.
pub async fn apply_checks_deployment_health(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let ns = unique("cvo-test-deploy");
    let (_d, payload) = write_payload(&[
        ("0000_10_test_00_ns.yaml", namespace(&ns)),
        ("0000_10_test_01_deploy.yaml", deployment(&ns, "web")),
    ])?;
    let report = apply_all(ctx, &payload, Mode::Update).await;
    ensure!(
        report.is_success() && report.done == 2,
        "a Deployment without conditions is not waited on: {report:#?}"
    );

    let api: Api<Deployment> = Api::namespaced(ctx.admin.clone(), &ns);
    let failure = json!({"unavailableReplicas": 1, "conditions": [{"type": "ReplicaFailure", "status": "True",
        "reason": "FailedCreate", "message": "pods \"web-1\" is forbidden: exceeded quota"}]});
    set_status(&api, "web", failure).await?;
    // Retries 2 s apart would show: an UpdateError fails fast.
    let slow_retries = ApplyOptions {
        attempts: 3,
        retry_interval: Duration::from_secs(2),
        ..ApplyOptions::default()
    };
    let t0 = std::time::Instant::now();
    let report = apply_with(ctx, &payload, Mode::Update, &slow_retries).await;
    ensure!(
        t0.elapsed() < Duration::from_secs(2),
        "retried: {:?}",
        t0.elapsed()
    );
    ensure!(report.done == 1 && report.errors.len() == 1, "{report:#?}");
    let e = &report.errors[0];
    ensure!(e.reason == "WorkloadNotProgressing", "{e:?}");
    ensure!(
        e.message
            == format!(
                "deployment {ns}/web has a replica failure FailedCreate: pods \"web-1\" is forbidden: exceeded quota"
            ),
        "{e:?}"
    );
    ensure!(
        e.error == format!("deployment {ns}/web has some pods failing; unavailable replicas=1"),
        "{e:?}"
    );
    ensure!(e.name == Some(format!("{ns}/web")), "{e:?}");
    ensure!(e.effect == Effect::Fail, "{e:?}");
    ensure!(
        e.task == format!("deployment \"{ns}/web\" (2 of 2)"),
        "{e:?}"
    );

    let report = apply_with(ctx, &payload, Mode::Install, &installing()).await;
    ensure!(
        report.is_success() && report.done == 2,
        "Initializing checks no workload: {report:#?}"
    );

    // Being deleted (held by a finalizer): a plain error.
    let hold = json!({"metadata": {"finalizers": ["cvo-test/hold"]}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&hold))
        .await?;
    api.delete("web", &DeleteParams::default()).await?;
    let once = ApplyOptions {
        attempts: 1,
        ..ApplyOptions::default()
    };
    let report = apply_with(ctx, &payload, Mode::Update, &once).await;
    let release = json!({"metadata": {"finalizers": null}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&release))
        .await?;
    ensure!(report.errors.len() == 1, "{report:#?}");
    let e = &report.errors[0];
    ensure!(e.reason == "UpdatePayloadFailed", "{e:?}");
    ensure!(
        e.message == format!("Could not update deployment \"{ns}/web\" (2 of 2)"),
        "{e:?}"
    );
    ensure!(
        e.error == format!("deployment {ns}/web is being deleted"),
        "{e:?}"
    );
    ensure!(e.name.is_none(), "{e:?}");
    cleanup(ctx, &ns).await;
    Ok(())
}

/// Spec §7.3: a Job without active pods and with failed ones fails its task with upstream's
/// plain error; a running or fresh Job does not; Initializing checks nothing.
pub async fn apply_checks_job_health(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let ns = unique("cvo-test-job");
    let (_d, payload) = write_payload(&[
        ("0000_10_test_00_ns.yaml", namespace(&ns)),
        ("0000_10_test_01_job.yaml", job(&ns, "migrate")),
    ])?;
    let report = apply_all(ctx, &payload, Mode::Update).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");

    let api: Api<Job> = Api::namespaced(ctx.admin.clone(), &ns);
    set_status(&api, "migrate", json!({"active": 1})).await?;
    let report = apply_all(ctx, &payload, Mode::Update).await;
    ensure!(report.is_success(), "a running Job: {report:#?}");

    set_status(&api, "migrate", json!({"active": 0, "failed": 1})).await?;
    let once = ApplyOptions {
        attempts: 1,
        ..ApplyOptions::default()
    };
    let report = apply_with(ctx, &payload, Mode::Update, &once).await;
    ensure!(report.done == 1 && report.errors.len() == 1, "{report:#?}");
    let e = &report.errors[0];
    ensure!(e.reason == "UpdatePayloadFailed", "{e:?}");
    ensure!(
        e.message == format!("Could not update job \"{ns}/migrate\" (2 of 2)"),
        "{e:?}"
    );
    ensure!(
        e.error
            == r#"deadline exceeded, reason: "DeadlineExceeded", message: "Job was active longer than specified deadline""#,
        "{e:?}"
    );
    ensure!(e.name.is_none() && e.effect == Effect::Fail, "{e:?}");

    let report = apply_with(ctx, &payload, Mode::Install, &installing()).await;
    ensure!(
        report.is_success() && report.done == 2,
        "Initializing checks no workload: {report:#?}"
    );
    cleanup(ctx, &ns).await;
    Ok(())
}

fn owner_refs(meta: &kube::api::ObjectMeta) -> serde_json::Value {
    serde_json::to_value(meta.owner_references.clone().unwrap_or_default())
        .unwrap_or(serde_json::Value::Null)
}

/// Spec §7.3 apply modifier: with an owner, applied objects are owned by the ClusterVersion
/// (its controller unless create-only), and a manifest's own, foreign, owner references win.
pub async fn apply_sets_owner_references(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let ns = unique("cvo-test-owner");
    // No garbage collector runs in the test cluster, so a made-up uid owns safely.
    let owner = ClusterVersionOwner {
        name: "version".into(),
        uid: "6f2e8c1a-0b7d-4c1e-9a55-3d2f1e0c9b8a".into(),
    };
    let options = ApplyOptions {
        owner: Some(owner.clone()),
        ..ApplyOptions::default()
    };
    let create_only = "    release.openshift.io/create-only: \"true\"\n";
    let foreign = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "plain",
                          "uid": "0c1d2e3f-4a5b-4c6d-8e7f-901234567890"}]);
    let owned_by = |refs: &serde_json::Value| {
        config_map(&ns, "shared", "", "v").replace(
            "metadata:\n",
            &format!("metadata:\n  ownerReferences: {refs}\n"),
        )
    };
    let (_d, first) = write_payload(&[
        ("0000_10_test_00_ns.yaml", namespace(&ns)),
        ("0000_10_test_01_cm.yaml", config_map(&ns, "plain", "", "v")),
        (
            "0000_10_test_02_cm.yaml",
            config_map(&ns, "once", create_only, "v"),
        ),
        (
            "0000_10_test_03_cm.yaml",
            config_map(&ns, "shared", "", "v"),
        ),
    ])?;
    let report = apply_with(ctx, &first, Mode::Update, &options).await;
    ensure!(report.is_success() && report.done == 4, "{report:#?}");

    let ours = |controller: bool| {
        let mut r = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
                           "name": owner.name, "uid": owner.uid});
        if controller {
            r["controller"] = json!(true);
        }
        json!([r])
    };
    let namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    let got = owner_refs(&namespaces.get(&ns).await?.metadata);
    ensure!(got == ours(true), "namespace: {got}");
    let cms: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), &ns);
    for (name, want) in [
        ("plain", ours(true)),
        ("once", ours(false)),
        ("shared", ours(true)),
    ] {
        let got = owner_refs(&cms.get(name).await?.metadata);
        ensure!(got == want, "{name}: {got}, want {want}");
    }

    // The manifest names an owner of its own: it replaces the ClusterVersion.
    let (_d, second) = write_payload(&[
        ("0000_10_test_00_ns.yaml", namespace(&ns)),
        ("0000_10_test_03_cm.yaml", owned_by(&foreign)),
    ])?;
    let report = apply_with(ctx, &second, Mode::Update, &options).await;
    ensure!(report.is_success() && report.done == 2, "{report:#?}");
    let got = owner_refs(&cms.get("shared").await?.metadata);
    ensure!(got == foreign, "shared: {got}");
    cleanup(ctx, &ns).await;
    Ok(())
}
