//! Preflight (`spec.desiredUpdate.mode: Preflight`, issue 26) on the real kube-apiserver: a
//! cluster on 4.17.0 (baseline None + Console) checks a 4.18.0 that also ships a CRD dropping a
//! version the live CRD still stores, a schema a stored widget fails (and a field it would
//! prune), and a check of its own that matches the cluster. The
//! preflight names the risks, counts what `cvo plan` counts, names the live objects the dry run
//! would change (each one the plan creates or updates), and writes nothing but the
//! ClusterVersion status (resourceVersions of everything else, and the API server's audit log
//! of write requests). Then the admin fixes two findings, the preflight follows (continuous
//! mode), they accept the last one and update, and the update creates and deletes what the
//! preflight said.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::Discovery;
use serde_json::{Value, json};

use cvo::cluster::ClusterVersionStatus;

use super::Ctx;
use super::start_tests::{clean_pass, condition_of, mark_healthy, status};
use super::upgrade_tests::{NEW, OLD, check_history, copy_dir, install_old, load, upgrade_cli};

const WIDGETS_CRD: &str = "widgets.preflight.example.com";
const CHECK_NAMESPACE: &str = "preflight-test";

/// 4.18.0 plus a CRD that serves only v1 and a check that applies while a ConfigMap in
/// preflight-test says `mode: legacy`.
fn target_release(dir: &Path) -> anyhow::Result<()> {
    copy_dir(Path::new(NEW), dir)?;
    let include = "    include.release.openshift.io/self-managed-high-availability: \"true\"\n";
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {WIDGETS_CRD}\n  annotations:\n{include}spec:\n  group: preflight.example.com\n  names:\n    kind: Widget\n    plural: widgets\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size:\n                type: integer\n"
    );
    let check = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: preflight-legacy-widgets\n  namespace: openshift-cluster-version\n  annotations:\n{include}    release.openshift.io/preflight-check: \"true\"\ndata:\n  risk: LegacyWidgets\n  message: Widgets in legacy mode stop working in 4.18.\n  url: https://example.com/legacy-widgets\n  objects: |\n    apiVersion: v1\n    kind: ConfigMap\n    namespace: {CHECK_NAMESPACE}\n    path: /data/mode\n    equals: legacy\n"
    );
    let manifests = dir.join("release-manifests");
    std::fs::write(manifests.join("0000_90_widgets_00_crd.yaml"), crd)?;
    std::fs::write(manifests.join("0000_90_widgets_01_preflight.yaml"), check)?;
    Ok(())
}

/// The live state the findings come from: the widgets CRD storing v1alpha1, a legacy widget
/// configuration.
async fn live_findings(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.admin.clone());
    if crds.get_opt(WIDGETS_CRD).await?.is_some() {
        crds.delete(WIDGETS_CRD, &DeleteParams::default()).await?;
        for _ in 0..100 {
            if crds.get_opt(WIDGETS_CRD).await?.is_none() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": WIDGETS_CRD},
        "spec": {"group": "preflight.example.com", "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets"},
                 "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                          "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))?;
    crds.create(&PostParams::default(), &crd).await?;
    let namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": CHECK_NAMESPACE}}))?;
    if namespaces.get_opt(CHECK_NAMESPACE).await?.is_none() {
        namespaces.create(&PostParams::default(), &ns).await?;
    }
    // A widget the target's schema refuses (size is a word) and prunes (colour).
    let resource = kube::api::ApiResource {
        group: "preflight.example.com".into(),
        version: "v1alpha1".into(),
        api_version: "preflight.example.com/v1alpha1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(ctx.admin.clone(), CHECK_NAMESPACE, &resource);
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "preflight.example.com/v1alpha1", "kind": "Widget",
        "metadata": {"name": "big"}, "spec": {"size": "big", "colour": "red"}
    }))?;
    for attempt in 0.. {
        match widgets.create(&PostParams::default(), &widget).await {
            // The CRD is served a moment after it is created.
            Err(kube::Error::Api(s)) if s.code == 404 && attempt < 50 => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            other => {
                other?;
                break;
            }
        }
    }
    set_widget_mode(ctx, "legacy").await
}

async fn set_widget_mode(ctx: &Ctx<'_>, mode: &str) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), CHECK_NAMESPACE);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "widget-config"}, "data": {"mode": mode}});
    cms.patch(
        "widget-config",
        &PatchParams::apply("cvo-test").force(),
        &Patch::Apply(&cm),
    )
    .await?;
    Ok(())
}

/// Every object the admin can list, by resource and name, with its resourceVersion; Events and
/// Leases (the API server renews its own) and the ClusterVersion (whose status a preflight
/// writes) left out.
async fn resource_versions(ctx: &Ctx<'_>) -> anyhow::Result<BTreeMap<String, String>> {
    let discovery = Discovery::new(ctx.admin.clone()).run().await?;
    let mut versions = BTreeMap::new();
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            let skipped = ["events", "leases", "clusterversions"];
            if !caps.supports_operation(kube::discovery::verbs::LIST)
                || skipped.contains(&resource.plural.as_str())
            {
                continue;
            }
            let api: Api<DynamicObject> = Api::all_with(ctx.admin.clone(), &resource);
            let list = api.list(&ListParams::default()).await?;
            for o in list.items {
                let key = format!(
                    "{}/{} {}/{}",
                    resource.group,
                    resource.plural,
                    o.metadata.namespace.unwrap_or_default(),
                    o.metadata.name.unwrap_or_default()
                );
                versions.insert(key, o.metadata.resource_version.unwrap_or_default());
            }
        }
    }
    Ok(versions)
}

/// The audited write requests after `offset` bytes of the audit log.
fn audited_writes(ctx: &Ctx<'_>, offset: usize) -> anyhow::Result<Vec<Value>> {
    let log = std::fs::read_to_string(ctx.cluster.dir().join("audit.log"))
        .context("the test cluster's audit log (hack/cluster/up.sh writes it)")?;
    (log.get(offset..).unwrap_or_default().lines())
        .map(|line| Ok(serde_json::from_str(line)?))
        .collect()
}

fn audit_len(ctx: &Ctx<'_>) -> usize {
    std::fs::metadata(ctx.cluster.dir().join("audit.log")).map_or(0, |m| m.len() as usize)
}

/// The 4.17.0 objects the reconcile pass re-applies (no change, but a write request each), as
/// the audit names them: resource (plural), namespace, name.
async fn current_objects(ctx: &Ctx<'_>) -> anyhow::Result<BTreeSet<(String, String, String)>> {
    let payload = load(OLD)?;
    let discovery = Discovery::new(ctx.admin.clone()).run().await?;
    let mut objects = BTreeSet::new();
    for m in &payload.manifests {
        let gvk = kube::core::GroupVersionKind::gvk(&m.gvk.group, &m.gvk.version, &m.gvk.kind);
        if let Some((resource, _)) = discovery.resolve_gvk(&gvk) {
            objects.insert((resource.plural, m.id.namespace.clone(), m.id.name.clone()));
        }
    }
    Ok(objects)
}

fn preflight_status(s: &ClusterVersionStatus) -> (String, String, String) {
    (s.conditions.iter())
        .find(|c| c.type_ == "Preflight")
        .map_or_else(Default::default, |c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

fn risk_names(s: &ClusterVersionStatus, image: &str) -> Vec<String> {
    (s.conditional_updates.iter())
        .find(|u| u.release.image.as_deref() == Some(image))
        .map(|u| u.risk_names.clone())
        .unwrap_or_default()
}

/// A resource of `cvo plan -o json` as the condition names it: `Kind[.group] [namespace/]name`.
fn plan_name(r: &Value) -> String {
    let field = |k: &str| r[k].as_str().unwrap_or_default();
    let kind = match field("group") {
        "" => field("kind").to_string(),
        group => format!("{}.{group}", field("kind")),
    };
    match field("namespace") {
        "" => format!("{kind} {}", field("name")),
        ns => format!("{kind} {ns}/{}", field("name")),
    }
}

/// `cvo plan -o json` of the same pair and cluster.
fn plan(target: &Path) -> anyhow::Result<Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"))
        .args(["plan", "-o", "json", "--from", OLD, "--to"])
        .arg(target)
        .args([
            "--capabilities-baseline",
            "None",
            "--additional-capabilities",
            "Console",
        ])
        .output()?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(serde_json::from_slice(&out.stdout)?)
}

pub async fn preflight_reports_without_writing(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let (api, options, mut state) = install_old(ctx).await?;
    let tmp = tempfile::tempdir()?;
    let target = tmp.path().join("4.18.0");
    target_release(&target)?;
    let image = target.to_str().context("a UTF-8 path")?.to_string();
    live_findings(ctx).await?;

    // A target that cannot be retrieved: the preflight fails with the step, nothing moves.
    let missing = tmp.path().join("missing").to_string_lossy().into_owned();
    let patch = json!({"spec": {"desiredUpdate": {"image": missing, "version": "4.18.0", "mode": "Preflight"}}});
    api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    clean_pass(&ctx.admin, &options, &mut state).await?;
    let s = status(ctx).await?;
    let (condition, reason, message) = preflight_status(&s);
    ensure!(
        condition == "False"
            && reason == "RetrievePayload"
            && message.starts_with("The preflight of 4.18.0 failed: "),
        "{condition} {reason} {message}"
    );
    check_history(&s, &[("Completed", "4.17.0")])?;
    ensure!(
        risk_names(&s, &missing).is_empty(),
        "{:?}",
        s.conditional_updates
    );

    let patch = json!({"spec": {"desiredUpdate": {"image": image, "version": "4.18.0", "mode": "Preflight"}}});
    api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let before = resource_versions(ctx).await?;
    let offset = audit_len(ctx);
    clean_pass(&ctx.admin, &options, &mut state).await?;
    let after = resource_versions(ctx).await?;
    let changed: Vec<&String> = (after.iter())
        .filter(|(k, v)| before.get(*k) != Some(v))
        .map(|(k, _)| k)
        .collect();
    ensure!(changed.is_empty(), "the preflight pass changed {changed:?}");

    // Its writes: dry runs, the ClusterVersion status, and the reconcile of 4.17.0's objects.
    let current = current_objects(ctx).await?;
    let writes = audited_writes(ctx, offset)?;
    let mut dry_runs = 0;
    // The operator's (the test runs it as the admin user); the API server renews its Lease.
    let operator = writes
        .iter()
        .filter(|e| e["user"]["username"] == "cvo-admin");
    for event in operator {
        let uri = event["requestURI"].as_str().unwrap_or_default();
        let object = &event["objectRef"];
        let name = object["name"].as_str().unwrap_or_default().to_string();
        // The audit names a Namespace as its own namespace.
        let namespace = match object["resource"].as_str() {
            Some("namespaces") => String::new(),
            _ => object["namespace"].as_str().unwrap_or_default().to_string(),
        };
        if uri.contains("dryRun=All") {
            dry_runs += 1;
        } else if object["resource"] == "clusterversions" {
            ensure!(object["subresource"] == "status", "{event}");
        } else {
            let resource = object["resource"].as_str().unwrap_or_default().to_string();
            ensure!(
                current.contains(&(resource, namespace, name)),
                "a write to an object 4.17.0 does not have: {event}"
            );
        }
    }
    ensure!(dry_runs > 0, "no dry run in {writes:#?}");

    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.17.0")])?;
    ensure!(
        s.desired.as_ref().and_then(|d| d.version.as_deref()) == Some("4.17.0"),
        "{:?}",
        s.desired
    );
    let (condition, reason, message) = preflight_status(&s);
    ensure!(
        condition == "True" && reason == "Completed",
        "Preflight {condition:?} {reason:?} {message:?}; conditions {:#?}",
        s.conditions
    );
    let plan = plan(&target)?;
    let count = |key: &str| plan[key].as_array().map_or(0, Vec::len);
    let counts = format!(
        "it would create {}, update {}, delete {} and leave behind {} resources",
        count("create"),
        count("update"),
        count("delete"),
        count("leftBehind")
    );
    ensure!(message.contains(&counts), "{message}\nplan: {counts}");
    // The dry run against the live objects: each one that would change is one the plan
    // updates (or creates over an object that exists), named with the fields that change.
    let changed_live = (message.lines())
        .find_map(|l| l.strip_prefix("Changed live: "))
        .with_context(|| format!("no live changes in {message}"))?;
    // Each live change is a resource the update creates or updates (one created over an
    // object an earlier test left differs too; one an earlier test already moved does not).
    let planned: BTreeSet<String> = (["update", "create"].iter())
        .flat_map(|k| plan[k].as_array().into_iter().flatten())
        .map(plan_name)
        .collect();
    for entry in changed_live.split("), ") {
        let name = entry.split(" (").next().unwrap_or_default();
        ensure!(
            planned.contains(name),
            "{name} changes live but the plan does not touch it: {changed_live}"
        );
    }
    ensure!(
        changed_live.contains("Deployment.apps openshift-cluster-version/cluster-version-operator (spec.template.spec.containers"),
        "{changed_live}"
    );
    let names = risk_names(&s, &image);
    for want in [
        "PreflightImplicitlyEnabledCapabilities",
        "PreflightCRDStoredVersionRemoved",
        "PreflightStoredObjectsInvalid",
        "PreflightStoredFieldsPruned",
        "LegacyWidgets",
    ] {
        ensure!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    let risk = |name: &str| {
        (s.conditional_update_risks.iter())
            .find(|r| r.name == name)
            .map(|r| r.message.clone())
            .unwrap_or_default()
    };
    ensure!(
        risk("PreflightImplicitlyEnabledCapabilities")
            .contains("* MachineAPI: ConfigMap openshift-machine-api/machine-api-operator-images"),
        "{}",
        risk("PreflightImplicitlyEnabledCapabilities")
    );
    ensure!(
        risk("PreflightCRDStoredVersionRemoved").contains(&format!(
            "CustomResourceDefinition {WIDGETS_CRD} (0000_90_widgets_00_crd.yaml): 4.18.0 no longer serves v1alpha1"
        )),
        "{}",
        risk("PreflightCRDStoredVersionRemoved")
    );
    let widget =
        format!("* Widget {CHECK_NAMESPACE}/big ({WIDGETS_CRD} v1, 0000_90_widgets_00_crd.yaml): ");
    ensure!(
        risk("PreflightStoredObjectsInvalid").contains(&format!(
            "{widget}spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
        )),
        "{}",
        risk("PreflightStoredObjectsInvalid")
    );
    ensure!(
        risk("PreflightStoredFieldsPruned").ends_with(&format!("{widget}spec.colour")),
        "{}",
        risk("PreflightStoredFieldsPruned")
    );
    ensure!(
        risk("LegacyWidgets").starts_with("Widgets in legacy mode stop working in 4.18.\n(found: 1 ConfigMap: preflight-test/widget-config)"),
        "{}",
        risk("LegacyWidgets")
    );
    let update = (s.conditional_updates.iter())
        .find(|u| u.release.image.as_deref() == Some(image.as_str()))
        .context("the target is a conditional update")?;
    ensure!(
        update
            .conditions
            .iter()
            .any(|c| c.type_ == "Recommended" && c.status == "False"),
        "{:?}",
        update.conditions
    );

    // The admin asks with the CLI (the test is the operator: it requests without waiting,
    // runs a pass, then asks again): the findings, and exit 1 while risks are not accepted.
    let (ok, _, err) = upgrade_cli(ctx, &["--preflight", "--to", "4.18.0", "--timeout", "0"])?;
    ensure!(
        ok && err.starts_with("Requested a preflight of 4.18.0 ("),
        "{err}"
    );
    clean_pass(&ctx.admin, &options, &mut state).await?;
    let (ok, out, err) = upgrade_cli(ctx, &["--preflight", "--to", "4.18.0", "--timeout", "20"])?;
    ensure!(!ok, "cvo upgrade --preflight passed: {out:?} {err:?}");
    ensure!(
        out.contains("\n  LegacyWidgets (applies, not accepted)\n    Widgets in legacy mode stop working in 4.18.\n"),
        "{out}"
    );
    ensure!(
        out.contains("To update anyway, accept them: `cvo upgrade --to 4.18.0 --accept "),
        "{out}"
    );
    let (_, json_out, err) = upgrade_cli(
        ctx,
        &[
            "--preflight",
            "--to",
            "4.18.0",
            "--timeout",
            "20",
            "-o",
            "json",
        ],
    )?;
    let result: Value = serde_json::from_str(&json_out)
        .with_context(|| format!("cvo upgrade --preflight -o json: {json_out:?} {err:?}"))?;
    ensure!(
        result["status"] == "True" && result["risks"].as_array().is_some_and(|r| r.len() >= 5),
        "{result}"
    );

    // They fix two findings; the preflight follows the cluster on its next evaluation.
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.admin.clone());
    crds.delete(WIDGETS_CRD, &DeleteParams::default()).await?;
    set_widget_mode(ctx, "current").await?;
    for _ in 0..50 {
        if crds.get_opt(WIDGETS_CRD).await?.is_none() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    clean_pass(&ctx.admin, &options, &mut state).await?;
    let s = status(ctx).await?;
    let names = risk_names(&s, &image);
    ensure!(
        names == ["PreflightImplicitlyEnabledCapabilities"],
        "{names:?}"
    );
    let (_, _, message) = preflight_status(&s);
    let created: Vec<String> = (plan["create"].as_array().into_iter().flatten())
        .map(plan_name)
        .collect();

    // They accept the last risk and update: the update creates and deletes what was said.
    let (ok, out, err) = upgrade_cli(
        ctx,
        &[
            "--to",
            "4.18.0",
            "--accept",
            "PreflightImplicitlyEnabledCapabilities",
        ],
    )?;
    ensure!(
        ok,
        "cvo upgrade --to 4.18.0 --accept failed: {out:?} {err:?}"
    );
    let spec = api.get("version").await?.spec;
    let desired = spec.desired_update.context("an update")?;
    ensure!(
        desired.mode.is_none() && desired.image.as_deref() == Some(image.as_str()),
        "{desired:?}"
    );
    let next = load(target.to_str().unwrap_or_default())?;
    for operator in ["etcd", "console"] {
        mark_healthy(ctx, &next, operator).await?;
    }
    let mut completed = false;
    for _ in 0..5 {
        clean_pass(&ctx.admin, &options, &mut state).await?;
        let s = status(ctx).await?;
        if s.history
            .first()
            .is_some_and(|h| h.state == "Completed" && h.version.as_deref() == Some("4.18.0"))
        {
            completed = true;
            break;
        }
    }
    let s = status(ctx).await?;
    ensure!(completed, "{:?}", s.history);
    ensure!(
        condition_of(&s, "Preflight").1 == "<absent>",
        "the preflight is over"
    );
    ensure!(
        risk_names(&s, &image).is_empty(),
        "{:?}",
        s.conditional_updates
    );
    let discovery = Discovery::new(ctx.admin.clone()).run().await?;
    for r in plan["create"].as_array().into_iter().flatten() {
        let found = live(ctx, &discovery, r).await?;
        ensure!(found, "created by the update: {r}");
    }
    for r in plan["delete"].as_array().into_iter().flatten() {
        ensure!(
            !live(ctx, &discovery, r).await?,
            "deleted by the update: {r}"
        );
    }
    // What the condition named as created is what the plan creates.
    for name in created.iter().take(20) {
        ensure!(message.contains(name.as_str()), "{name} not in {message}");
    }
    let deleted = plan["delete"].as_array().map_or(0, Vec::len);
    ensure!(
        deleted == 0 || message.contains("\nDeleted: "),
        "the deletions are named: {message}"
    );
    Ok(())
}

/// Whether the plan's resource `r` exists.
async fn live(ctx: &Ctx<'_>, discovery: &Discovery, r: &Value) -> anyhow::Result<bool> {
    let field = |k: &str| r[k].as_str().unwrap_or_default().to_string();
    let (group, kind, namespace, name) = (
        field("group"),
        field("kind"),
        field("namespace"),
        field("name"),
    );
    let (resource, caps) = discovery
        .groups()
        .filter(|g| g.name() == group)
        .flat_map(|g| g.recommended_resources())
        .find(|(ar, _)| ar.kind == kind)
        .with_context(|| format!("{group} {kind} is not served"))?;
    let api: Api<DynamicObject> = match caps.scope {
        kube::discovery::Scope::Namespaced => {
            Api::namespaced_with(ctx.admin.clone(), &namespace, &resource)
        }
        kube::discovery::Scope::Cluster => Api::all_with(ctx.admin.clone(), &resource),
    };
    Ok(api.get_opt(&name).await?.is_some())
}
