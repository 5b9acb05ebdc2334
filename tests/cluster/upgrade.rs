//! Updates driven by `spec.desiredUpdate` against the real kube-apiserver, over the bundled
//! upgrade pair `payloads/4.17.0` → `payloads/4.18.0` (see payloads/README.md): 4.18.0 adds a
//! Console ServiceAccount (an enabled capability grows), baremetal RBAC (a disabled capability
//! grows), moves the MachineAPI ConfigMap into the MachineAPI capability, deletes a Service and
//! adds a migration Job. No operators run: the tests mark ClusterOperators themselves.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::sync::watch;

use cvo::cluster::{ClusterOperator, ClusterVersion, ClusterVersionStatus};
use cvo::operator::desired::ReleaseSources;
use cvo::operator::run::{SyncState, sync_once};
use cvo::operator::{Metrics, RunOptions, run};
use cvo::payload::{LoadOptions, Payload, read_directory};

use super::Ctx;
use super::condition;
use super::start_tests::{
    check_condition, clean_pass, condition_of, mark_healthy, options_with, reset_cluster_version,
    spec, status,
};

pub const OLD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/payloads/4.17.0");
pub const NEW: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/payloads/4.18.0");
const MACHINE_API_NS: &str = "openshift-machine-api";
const MACHINE_API_IMAGES: &str = "machine-api-operator-images";
const NEW_MACHINE_API_DIGEST: &str =
    "sha256:0d5ab0b3c1f5e1aa2c4bd4a1ac6ed5e1a9c3d0b6e7f2a8c4d6e1f3a5b7c9d2e4f6";
const OLD_MACHINE_API_DIGEST: &str =
    "sha256:9a1f0c3e5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a";

/// A payload directory loaded as `cvo start --payload DIR --release-image DIR` would.
pub fn load(dir: &str) -> anyhow::Result<Payload> {
    let options = LoadOptions {
        release_image: Some(dir.to_string()),
        cluster_profile: "self-managed-high-availability".into(),
        strict_templates: false,
    };
    Ok(Payload::from_input(
        read_directory(std::path::Path::new(&dir))?,
        &options,
    )?)
}

async fn delete_if_exists<K>(api: &Api<K>, name: &str) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The objects whose creation or deletion the upgrade must show, removed first: earlier tests
/// applied the bundled 4.18.0 payload to this cluster.
async fn forget_upgrade_objects(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let c = &ctx.admin;
    let sa: Api<ServiceAccount> = Api::namespaced(c.clone(), "openshift-console-operator");
    delete_if_exists(&sa, "console-operator").await?;
    let role: Api<ClusterRole> = Api::all(c.clone());
    delete_if_exists(&role, "cluster-baremetal-operator").await?;
    let binding: Api<ClusterRoleBinding> = Api::all(c.clone());
    delete_if_exists(&binding, "cluster-baremetal-operator").await?;
    let cm: Api<ConfigMap> = Api::namespaced(c.clone(), MACHINE_API_NS);
    delete_if_exists(&cm, MACHINE_API_IMAGES).await?;
    let svc: Api<Service> = Api::namespaced(c.clone(), "openshift-etcd-operator");
    delete_if_exists(&svc, "etcd-operator-legacy-metrics").await?;
    Ok(())
}

pub async fn exists<K>(api: &Api<K>, name: &str) -> anyhow::Result<bool>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    Ok(api.get_opt(name).await?.is_some())
}

async fn machine_api_images(ctx: &Ctx<'_>) -> anyhow::Result<String> {
    let cm: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), MACHINE_API_NS);
    Ok(cm
        .get(MACHINE_API_IMAGES)
        .await?
        .data
        .and_then(|d| d.get("images.json").cloned())
        .unwrap_or_default())
}

/// 4.18.0's deletion and update took place.
async fn check_updated_objects(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let legacy: Api<Service> = Api::namespaced(ctx.admin.clone(), "openshift-etcd-operator");
    ensure!(
        !exists(&legacy, "etcd-operator-legacy-metrics").await?,
        "the legacy Service was not deleted"
    );
    let images = machine_api_images(ctx).await?;
    ensure!(images.contains(NEW_MACHINE_API_DIGEST), "{images}");
    Ok(())
}

/// What an operator still running an older release reports: Available, every operand at
/// `version`.
pub async fn mark_at_version(ctx: &Ctx<'_>, name: &str, version: &str) -> anyhow::Result<()> {
    let api: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    let params = PatchParams::apply("cvo-test-operator").force();
    let status = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "status": {"versions": [{"name": "operator", "version": version},
                                {"name": "etcd", "version": version}],
                   "conditions": [condition("Available", "True", "AsExpected", ""),
                                  condition("Degraded", "False", "AsExpected", "")]}});
    api.patch_status(name, &params, &Patch::Apply(&status))
        .await?;
    Ok(())
}

/// What an operator that lost its operand reports.
async fn mark_unavailable(ctx: &Ctx<'_>, name: &str) -> anyhow::Result<()> {
    let api: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    let params = PatchParams::apply("cvo-test-operator").force();
    let status = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "status": {"conditions": [condition("Available", "False", "NoPods", "no etcd pods"),
                                  condition("Degraded", "False", "AsExpected", "")]}});
    api.patch_status(name, &params, &Patch::Apply(&status))
        .await?;
    Ok(())
}

pub async fn request_release(
    api: &Api<ClusterVersion>,
    image: &str,
    version: Option<&str>,
) -> anyhow::Result<()> {
    let patch = json!({"spec": {"desiredUpdate": {"image": image, "version": version}}});
    api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// The history is exactly these (state, version) entries, newest first.
pub fn check_history(s: &ClusterVersionStatus, want: &[(&str, &str)]) -> anyhow::Result<()> {
    let got: Vec<(&str, &str)> = (s.history.iter())
        .map(|h| (h.state.as_str(), h.version.as_deref().unwrap_or_default()))
        .collect();
    ensure!(got == want, "history {:?}", s.history);
    Ok(())
}

/// Installs 4.17.0 with baseline None + Console and healthy operators; returns the loop's
/// options and state after the first complete pass.
pub async fn install_old(
    ctx: &Ctx<'_>,
) -> anyhow::Result<(Api<ClusterVersion>, RunOptions, SyncState)> {
    let api = reset_cluster_version(ctx).await?;
    forget_upgrade_objects(ctx).await?;
    let options = options_with(load(OLD)?);
    for operator in ["etcd", "console"] {
        mark_healthy(ctx, &options.payload, operator).await?;
    }
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec(&["Console"])),
    )
    .await?;
    let mut state = SyncState::default();
    clean_pass(&ctx.admin, &options, &mut state).await?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.17.0")])?;
    Ok((api, options, state))
}

/// The seed's update tests: an enabled capability that grows gets its new objects, a disabled
/// one does not, and a resource that moves into a disabled capability enables it implicitly and
/// stays reconciled. An operator that is not Available holds the update with the upstream
/// Failing/Progressing text until it is; history gains exactly one entry.
pub async fn upgrade_moves_resources_into_capabilities(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let (api, options, mut state) = install_old(ctx).await?;
    let c = &ctx.admin;
    let console_sa: Api<ServiceAccount> = Api::namespaced(c.clone(), "openshift-console-operator");
    let baremetal_role: Api<ClusterRole> = Api::all(c.clone());
    let legacy: Api<Service> = Api::namespaced(c.clone(), "openshift-etcd-operator");
    ensure!(
        !exists(&console_sa, "console-operator").await?,
        "4.17.0 has no console SA"
    );
    ensure!(
        exists(&legacy, "etcd-operator-legacy-metrics").await?,
        "4.17.0 Service"
    );
    ensure!(
        machine_api_images(ctx)
            .await?
            .contains(OLD_MACHINE_API_DIGEST)
    );

    // What a cluster names is a pullspec: a path on the operator's disk is never read.
    request_release(&api, NEW, Some("4.18.0")).await?;
    let registries_only = RunOptions {
        release_sources: ReleaseSources::Registries,
        ..options.clone()
    };
    sync_once(c, &registries_only, &mut state.clone()).await?;
    let s = status(ctx).await?;
    let accepted = condition_of(&s, "ReleaseAccepted");
    let refused = format!(
        "Retrieving payload failed version=\"4.18.0\" image=\"{NEW}\" failure={NEW:?} is not a release image pullspec"
    );
    ensure!(
        accepted.0 == "False" && accepted.1.starts_with(&refused),
        "{accepted:?}"
    );
    check_history(&s, &[("Completed", "4.17.0")])?;

    // etcd still reports an older operator version: the update waits on it without failing.
    mark_at_version(ctx, "etcd", "4.17.0-previous").await?;
    let pass = sync_once(c, &options, &mut state).await?;
    let reasons: Vec<&str> = pass
        .report
        .errors
        .iter()
        .map(|e| e.reason.as_str())
        .collect();
    ensure!(
        reasons == ["ClusterOperatorUpdating"],
        "{:#?}",
        pass.report.errors
    );
    let s = status(ctx).await?;
    check_condition(&s, "Failing", ("False", ""))?;
    let progressing = condition_of(&s, "Progressing");
    ensure!(
        progressing.0 == "True"
            && progressing.1.starts_with("Working towards 4.18.0: ")
            && progressing.1.ends_with("% complete), waiting on etcd"),
        "{progressing:?}"
    );

    mark_unavailable(ctx, "etcd").await?;
    let pass = sync_once(c, &options, &mut state).await?;
    ensure!(!pass.report.is_success(), "etcd is not available");
    let s = status(ctx).await?;
    ensure!(
        s.desired.as_ref().and_then(|d| d.version.as_deref()) == Some("4.18.0"),
        "{:?}",
        s.desired
    );
    check_history(&s, &[("Partial", "4.18.0"), ("Completed", "4.17.0")])?;
    ensure!(s.history[1].completion_time.is_some(), "superseded entry");
    ensure!(
        s.history[0].accepted_risks.as_deref()
            == Some(
                "Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"NoChannel\": Configured channel is unset, so the recommended status of updating from 4.17.0 to 4.18.0 is unknown."
            ),
        "{:?}",
        s.history[0]
    );
    check_condition(
        &s,
        "Failing",
        ("True", "Cluster operator etcd is not available"),
    )?;
    check_condition(
        &s,
        "Progressing",
        (
            "True",
            "Unable to apply 4.18.0: the cluster operator etcd is not available",
        ),
    )?;
    check_condition(
        &s,
        "ImplicitlyEnabledCapabilities",
        (
            "True",
            "The following capabilities could not be disabled: MachineAPI",
        ),
    )?;

    mark_healthy(ctx, &options.payload, "etcd").await?;
    clean_pass(c, &options, &mut state).await?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
    check_condition(&s, "Available", ("True", "Done applying 4.18.0"))?;
    check_condition(&s, "Progressing", ("False", "Cluster version is 4.18.0"))?;
    check_condition(&s, "Failing", ("False", ""))?;
    let caps = s.capabilities.clone().unwrap_or_default();
    let enabled: Vec<&str> = caps
        .enabled_capabilities
        .iter()
        .map(|c| c.as_str())
        .collect();
    ensure!(enabled == ["Console", "MachineAPI"], "{enabled:?}");

    ensure!(
        exists(&console_sa, "console-operator").await?,
        "enabled Console grew"
    );
    ensure!(
        !exists(&baremetal_role, "cluster-baremetal-operator").await?,
        "disabled baremetal grew"
    );
    check_updated_objects(ctx).await?;

    // Still managed: drift in the moved ConfigMap is put back.
    let cm: Api<ConfigMap> = Api::namespaced(c.clone(), MACHINE_API_NS);
    let drift = json!({"data": {"images.json": "{}"}});
    cm.patch(
        MACHINE_API_IMAGES,
        &PatchParams::default(),
        &Patch::Merge(&drift),
    )
    .await?;
    clean_pass(c, &options, &mut state).await?;
    ensure!(
        machine_api_images(ctx)
            .await?
            .contains(NEW_MACHINE_API_DIGEST)
    );

    // A version no payload is known for is invalid: reported and ignored. Without a valid
    // request the operator applies its own release, as upstream does; in a cluster that is the
    // 4.18.0 operator by now (its Deployment was updated), so restart it as that one.
    let patch = json!({"spec": {"desiredUpdate": {"version": "4.99.0", "image": null}}});
    api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let options = options_with(load(NEW)?);
    clean_pass(c, &options, &mut SyncState::default()).await?;
    let s = status(ctx).await?;
    check_condition(
        &s,
        "Invalid",
        (
            "True",
            r#"The cluster version is invalid: spec.desiredUpdate.version: Invalid value: "4.99.0": when image is empty the update must be an available update"#,
        ),
    )?;
    check_condition(
        &s,
        "Progressing",
        ("False", "Stopped at 4.18.0: the cluster version is invalid"),
    )?;
    check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
    Ok(())
}

/// The apiserver goes away in the middle of the update pass and comes back: the loop recovers
/// and completes, and history has one entry per release.
pub async fn upgrade_survives_apiserver_restart(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let (api, mut options, _) = install_old(ctx).await?;
    options.resync_interval = Duration::from_millis(200);
    let metrics = Arc::new(Metrics::new());
    options.metrics = Some(metrics.clone());
    let (stop, stopped) = watch::channel(false);
    let driver = async {
        request_release(&api, NEW, None).await?;
        // The storage-migration namespace is created at run level 50 of the 4.18.0 pass.
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(ctx.admin.clone());
        let mut polls = 0;
        while !exists(&namespaces, "openshift-storage-migration").await? {
            polls += 1;
            ensure!(polls < 3000, "the update pass never reached run level 50");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let cluster = ctx.cluster;
        tokio::task::block_in_place(|| cluster.apiserver("stop"))?;
        // Longer than a task's retries (0.2 + 0.4 + 0.8 + 1.6 s): the pass itself fails.
        tokio::time::sleep(Duration::from_secs(4)).await;
        tokio::task::block_in_place(|| cluster.apiserver("start"))?;
        let mut completed = false;
        for _ in 0..300 {
            let s = status(ctx).await?;
            if s.history
                .first()
                .is_some_and(|h| h.state == "Completed" && h.version.as_deref() == Some("4.18.0"))
            {
                completed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        stop.send(true)?;
        ensure!(completed, "the update did not complete after the restart");
        anyhow::Ok(())
    };
    let (ran, drove) = tokio::join!(run(&ctx.admin, &options, stopped), driver);
    drove?;
    ran?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
    check_condition(&s, "Failing", ("False", ""))?;
    let (errors, incomplete) = (metrics.passes("error"), metrics.passes("incomplete"));
    eprintln!("  passes during the outage: {errors} error, {incomplete} incomplete");
    ensure!(errors + incomplete > 0, "no pass saw the outage");
    Ok(())
}

/// `cvo` as a process, with its own image cache and no docker credentials.
pub fn cvo(ctx: &Ctx<'_>, tmp: &std::path::Path, args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"));
    c.args(args)
        .arg("--kubeconfig")
        .arg(ctx.cluster.kubeconfig())
        .arg("--cache-dir")
        .arg(tmp.join("cache"))
        .env("HOME", tmp.join("home"))
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("DOCKER_CONFIG")
        .env("CLUSTER_PROFILE", "self-managed-high-availability")
        .env_remove("EXCLUDE_MANIFESTS");
    c
}

pub fn run_ok(mut command: std::process::Command) -> anyhow::Result<String> {
    let out = command.output()?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    ensure!(out.status.success(), "{:?}: {stderr}", out.status);
    Ok(stderr)
}

/// The update scenario driven by release images in a real registry: `cvo start --once` installs
/// from `REG/cvo/release:4.17.0`, then follows `spec.desiredUpdate.image` to 4.18.0, pulling it.
/// An image that cannot be pulled is reported as `ReleaseAccepted=False` with reason
/// `RetrievePayload` and the upstream message, and the current payload stays applied.
pub async fn upgrade_from_release_images(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let Some(registry) = super::registry_support::Registry::start_or_skip(tmp.path(), None) else {
        return Ok(());
    };
    let image = |tag: &str| format!("{}/cvo/release:{tag}", registry.addr);
    for (dir, tag) in [(OLD, "4.17.0"), (NEW, "4.18.0")] {
        let mut push = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"));
        push.args(["payload", "push", dir, &image(tag)])
            .arg("--cache-dir")
            .arg(tmp.path().join("cache"))
            .env("HOME", tmp.path().join("home"));
        run_ok(push)?;
    }
    let api = reset_cluster_version(ctx).await?;
    forget_upgrade_objects(ctx).await?;
    mark_healthy(ctx, &load(OLD)?, "etcd").await?;
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec(&[])),
    )
    .await?;
    let once = |payload: &str| {
        cvo(
            ctx,
            tmp.path(),
            &["start", "--once", "--disable-leader-election"],
        )
        .args(["--listen", "", "--payload", payload])
        .output()
    };
    let expect_ok = |out: std::process::Output| {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        ensure!(out.status.success(), "{:?}: {stderr}", out.status);
        anyhow::Ok(stderr)
    };
    expect_ok(once(&image("4.17.0"))?)?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.17.0")])?;
    ensure!(s.history[0].image == image("4.17.0"), "{:?}", s.history);

    request_release(&api, &image("4.18.0"), Some("4.18.0")).await?;
    // A pass that cannot wait for the pull says the release is being retrieved.
    let impatient = cvo(
        ctx,
        tmp.path(),
        &[
            "start",
            "--once",
            "--disable-leader-election",
            "--payload-timeout",
            "0",
        ],
    )
    .args(["--listen", "", "--payload", &image("4.17.0")])
    .output()?;
    expect_ok(impatient)?;
    let s = status(ctx).await?;
    check_condition(
        &s,
        "ReleaseAccepted",
        (
            "Unknown",
            &format!(
                "Retrieving and verifying payload version=\"4.18.0\" image=\"{}\"",
                image("4.18.0")
            ),
        ),
    )?;
    check_history(&s, &[("Completed", "4.17.0")])?;
    expect_ok(once(&image("4.17.0"))?)?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
    ensure!(s.history[0].image == image("4.18.0"), "{:?}", s.history);
    ensure!(
        s.desired.as_ref().and_then(|d| d.image.clone()) == Some(image("4.18.0")),
        "{:?}",
        s.desired
    );
    check_updated_objects(ctx).await?;

    // The new operator runs 4.18.0; an update to an image that is not there is refused.
    let missing = image("4.19.0");
    request_release(&api, &missing, Some("4.19.0")).await?;
    expect_ok(once(&image("4.18.0"))?)?;
    let s = status(ctx).await?;
    let accepted = s
        .conditions
        .iter()
        .find(|c| c.type_ == "ReleaseAccepted")
        .context("no ReleaseAccepted")?;
    let prefix =
        format!("Retrieving payload failed version=\"4.19.0\" image=\"{missing}\" failure=");
    ensure!(
        accepted.status == "False"
            && accepted.reason.as_deref() == Some("RetrievePayload")
            && accepted
                .message
                .as_deref()
                .is_some_and(|m| m.starts_with(&prefix)),
        "{accepted:?}"
    );
    check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
    check_condition(&s, "Failing", ("False", ""))?;
    drop(registry);
    Ok(())
}

/// Preconditions (spec §5.3): with an unmanaged override the cluster is not Upgradeable, so a
/// minor update is refused (`ReleaseAccepted=False`, reason `PreconditionChecks`) and 4.17.0
/// stays applied; `force: true` takes it through, and the history entry records the risks.
pub async fn upgrade_preconditions_block_until_forced(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let (api, options, mut state) = install_old(ctx).await?;
    let c = &ctx.admin;
    let overrides = json!({"spec": {"overrides": [{"kind": "ConfigMap", "group": "",
        "namespace": MACHINE_API_NS, "name": MACHINE_API_IMAGES, "unmanaged": true}]}});
    api.patch(
        "version",
        &PatchParams::default(),
        &Patch::Merge(&overrides),
    )
    .await?;
    clean_pass(c, &options, &mut state).await?;

    request_release(&api, NEW, Some("4.18.0")).await?;
    clean_pass(c, &options, &mut state).await?;
    let s = status(ctx).await?;
    let accepted = condition_of(&s, "ReleaseAccepted");
    let prefix = format!(
        "Preconditions failed for payload loaded version=\"4.18.0\" image=\"{NEW}\": Multiple precondition checks failed:\n"
    );
    let blocked = "* Precondition \"ClusterVersionUpgradeable\" failed because of \"ClusterVersionOverrides\": Disabling ownership via cluster version overrides prevents updates between minor or major versions. Please remove overrides before requesting a minor or major version update.\n";
    ensure!(
        accepted.0 == "False" && accepted.1.starts_with(&prefix) && accepted.1.contains(blocked),
        "{accepted:?}"
    );
    check_history(&s, &[("Completed", "4.17.0")])?;

    let force = json!({"spec": {"desiredUpdate": {"force": true}}});
    api.patch("version", &PatchParams::default(), &Patch::Merge(&force))
        .await?;
    clean_pass(c, &options, &mut state).await?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
    let risks = s.history[0].accepted_risks.clone().unwrap_or_default();
    ensure!(
        risks.starts_with("Forced through blocking failures: "),
        "{risks:?}"
    );
    ensure!(
        condition_of(&s, "ReleaseAccepted").0 == "True",
        "{:?}",
        s.conditions
    );
    Ok(())
}

/// `Upgradeable` from upstream's risk sources (spec §5.3): an admin gate of the current minor
/// that `admin-acks` does not acknowledge and a ClusterOperator with `Upgradeable=False` make
/// the cluster not upgradeable (`MultipleReasons`), so the minor update is refused by the
/// `ClusterVersionUpgradeable` precondition; acknowledged and fixed, it goes through. Its
/// deletion of a Service held by a finalizer is then in progress (`ResourceDeletionInProgress`)
/// until the Service is gone.
pub async fn upgrade_waits_for_upgradeable_risks(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let (api, options, mut state) = install_old(ctx).await?;
    let c = &ctx.admin;
    let s = status(ctx).await?;
    ensure!(
        condition_of(&s, "Upgradeable").1 == "<absent>",
        "a healthy cluster has no Upgradeable condition: {:?}",
        s.conditions
    );
    const GATE: &str = "ack-4.17-test-gate";
    let gates: Api<ConfigMap> = Api::namespaced(c.clone(), "openshift-config-managed");
    let acks: Api<ConfigMap> = Api::namespaced(c.clone(), "openshift-config");
    let merge = |data: serde_json::Value| Patch::Merge(json!({ "data": data }));
    gates
        .patch(
            "admin-gates",
            &PatchParams::default(),
            &merge(json!({ GATE: "Read the test article." })),
        )
        .await?;
    set_console_upgradeable(
        ctx,
        &options.payload,
        Some("Console plugins are incompatible"),
    )
    .await?;
    let services: Api<Service> = Api::namespaced(c.clone(), "openshift-etcd-operator");
    let held = json!({"metadata": {"finalizers": ["cvo.test/hold"]}});
    services
        .patch(
            "etcd-operator-legacy-metrics",
            &PatchParams::default(),
            &Patch::Merge(&held),
        )
        .await?;
    clean_pass(c, &options, &mut state).await?;
    let s = status(ctx).await?;
    let risks = "Cluster should not be upgraded between minor or major versions for multiple reasons:\n* Read the test article.\n* Console plugins are incompatible";
    let upgradeable = s.conditions.iter().find(|c| c.type_ == "Upgradeable");
    ensure!(
        upgradeable.is_some_and(|u| u.status == "False"
            && u.reason.as_deref() == Some("MultipleReasons")
            && u.message.as_deref() == Some(risks)),
        "{upgradeable:?}"
    );

    request_release(&api, NEW, Some("4.18.0")).await?;
    clean_pass(c, &options, &mut state).await?;
    let s = status(ctx).await?;
    let accepted = condition_of(&s, "ReleaseAccepted");
    let blocked = format!(
        "* Precondition \"ClusterVersionUpgradeable\" failed because of \"MultipleReasons\": {risks}\n"
    );
    ensure!(
        accepted.0 == "False" && accepted.1.contains(&blocked),
        "{accepted:?}"
    );
    check_history(&s, &[("Completed", "4.17.0")])?;

    // Acknowledged and fixed: the next pass clears Upgradeable, the one after accepts 4.18.0.
    acks.patch(
        "admin-acks",
        &PatchParams::default(),
        &merge(json!({ GATE: "true" })),
    )
    .await?;
    set_console_upgradeable(ctx, &options.payload, None).await?;
    clean_pass(c, &options, &mut state).await?;
    ensure!(
        condition_of(&status(ctx).await?, "Upgradeable").1 == "<absent>",
        "acknowledged and fixed"
    );
    clean_pass(c, &options, &mut state).await?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
    let deleting = "Cluster minor or major version upgrades are not allowed while resource deletions are in progress; resources=service \"openshift-etcd-operator/etcd-operator-legacy-metrics\"";
    let upgradeable = s.conditions.iter().find(|c| c.type_ == "Upgradeable");
    ensure!(
        upgradeable.is_some_and(
            |u| u.reason.as_deref() == Some("ResourceDeletionInProgress")
                && u.message.as_deref() == Some(deleting)
        ),
        "the Service is held by its finalizer: {upgradeable:?}"
    );

    let released = json!({"metadata": {"finalizers": null}});
    services
        .patch(
            "etcd-operator-legacy-metrics",
            &PatchParams::default(),
            &Patch::Merge(&released),
        )
        .await?;
    clean_pass(c, &options, &mut state).await?;
    ensure!(
        condition_of(&status(ctx).await?, "Upgradeable").1 == "<absent>",
        "the deletion finished"
    );
    gates
        .patch(
            "admin-gates",
            &PatchParams::default(),
            &merge(json!({ GATE: null })),
        )
        .await?;
    Ok(())
}

/// Marks the console operator healthy, and not upgradeable with `message` when given.
pub(super) async fn set_console_upgradeable(
    ctx: &Ctx<'_>,
    payload: &Payload,
    message: Option<&str>,
) -> anyhow::Result<()> {
    mark_healthy(ctx, payload, "console").await?;
    let Some(message) = message else {
        return Ok(());
    };
    let api: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    let mut live = api.get_status("console").await?;
    let status = live.status.get_or_insert_with(Default::default);
    status.conditions.push(condition(
        "Upgradeable",
        "False",
        "PluginsIncompatible",
        message,
    ));
    let patch = json!({"status": {"conditions": status.conditions}});
    api.patch_status("console", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// `cvo upgrade` (`oc adm upgrade`) as a process: the status summary, a `--to` the cluster
/// cannot resolve without an update service, an explicit `--to-image` written to
/// `spec.desiredUpdate`, and `--clear` taking it back.
pub async fn upgrade_command_requests_and_clears(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let (api, _options, _state) = install_old(ctx).await?;
    let cvo = |args: &[&str]| upgrade_cli(ctx, args);
    let (ok, out, err) = cvo(&[])?;
    ensure!(
        ok && out.starts_with("Cluster version is 4.17.0\n\n"),
        "{out}{err}"
    );
    ensure!(
        err.contains("warning: Cannot display available updates:\n  Reason: NoUpstream\n"),
        "{err}"
    );

    let (ok, _, err) = cvo(&["--to", "4.18.0"])?;
    ensure!(
        !ok && err.contains("cannot refresh available updates:\n  Reason: NoUpstream")
            && err.contains("specify --to-image to continue with the update."),
        "{err}"
    );
    ensure!(
        api.get("version").await?.spec.desired_update.is_none(),
        "nothing written"
    );

    let image = "registry.example.com/cvo/release@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let (ok, out, err) = cvo(&["--to-image", image, "--allow-explicit-upgrade"])?;
    ensure!(
        ok && out == format!("Requested update to release image {image}\n"),
        "{out}{err}"
    );
    let update = api.get("version").await?.spec.desired_update;
    ensure!(
        update.as_ref().and_then(|u| u.image.as_deref()) == Some(image),
        "{update:?}"
    );

    let (ok, out, err) = cvo(&["--clear"])?;
    ensure!(
        ok && out == format!("Cancelled requested upgrade to {image}\n"),
        "{out}{err}"
    );
    ensure!(
        api.get("version").await?.spec.desired_update.is_none(),
        "cleared"
    );
    let (ok, _, err) = cvo(&["--clear", "--to-latest"])?;
    ensure!(
        !ok && err.contains("--clear may not be specified with any other flags"),
        "{err}"
    );
    Ok(())
}

/// `cvo upgrade status` and `cvo upgrade` in the middle of a real update (issue 12): 4.17.0 →
/// 4.18.0 with console already at 4.18.0 and etcd still at an older version and Progressing,
/// so the operator waits on etcd. Both commands show the held operator, the counts and the
/// version as the ClusterVersion and ClusterOperators say; `-o json` has the same. Then
/// `cvo upgrade channel` refuses a typo, sets `spec.channel` and clears it.
pub async fn upgrade_status_shows_the_held_operator(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let (api, options, mut state) = install_old(ctx).await?;
    let (ok, out, err) = upgrade_cli(ctx, &["status"])?;
    ensure!(ok && out == "The cluster is not updating.\n", "{out}{err}");

    // 4.18.0 as `oc adm release new` builds it: the operators' versions are the release's.
    let tmp = tempfile::tempdir()?;
    let release = tmp.path().join("4.18.0");
    copy_dir(Path::new(NEW), &release)?;
    for entry in std::fs::read_dir(release.join("release-manifests"))? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        std::fs::write(&path, text.replace("0.0.1-snapshot", "4.18.0"))?;
    }
    let release = release.to_str().context("a UTF-8 path")?;
    request_release(&api, release, Some("4.18.0")).await?;
    mark_healthy(ctx, &load(release)?, "console").await?;
    let operators: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    let held = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "status": {"versions": [{"name": "operator", "version": "4.17.0"}, {"name": "etcd", "version": "4.17.0"}],
                   "conditions": [condition("Available", "True", "AsExpected", ""),
                                  condition("Progressing", "True", "Upgrading", "Working towards 4.18.0"),
                                  condition("Degraded", "False", "AsExpected", "")]}});
    let params = PatchParams::apply("cvo-test-operator").force();
    operators
        .patch_status("etcd", &params, &Patch::Apply(&held))
        .await?;
    // The test's operators created their ClusterOperators before the payload's manifests were
    // applied; a cluster's carry the manifests' include annotations, which mark them as the
    // platform's for `upgrade status`.
    let platform_annotation = json!({"metadata": {"annotations": {
        "include.release.openshift.io/self-managed-high-availability": "true"}}});
    for name in ["etcd", "console"] {
        operators
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&platform_annotation),
            )
            .await?;
    }
    sync_once(&ctx.admin, &options, &mut state).await?;
    let s = status(ctx).await?;
    check_history(&s, &[("Partial", "4.18.0"), ("Completed", "4.17.0")])?;
    let (progressing, message) = condition_of(&s, "Progressing");
    ensure!(
        progressing == "True" && message.ends_with("waiting on etcd"),
        "{message}"
    );

    // What the cluster says: the platform's operators, those at 4.18.0.
    let platform: Vec<ClusterOperator> = (operators.list(&Default::default()).await?.items)
        .into_iter()
        .filter(|o| {
            (o.metadata.annotations.iter().flatten())
                .any(|(k, _)| k.starts_with("include.release.openshift.io/"))
        })
        .collect();
    let version = |o: &ClusterOperator| {
        (o.status.iter().flat_map(|s| &s.versions))
            .find(|v| v.name == "operator")
            .map(|v| v.version.clone())
    };
    let updated = platform
        .iter()
        .filter(|o| version(o).as_deref() == Some("4.18.0"))
        .count();
    ensure!(
        updated >= 1 && updated < platform.len(),
        "{updated} of {}",
        platform.len()
    );

    let (ok, out, err) = upgrade_cli(ctx, &["status"])?;
    ensure!(
        ok && err.is_empty() && !out.contains("Updating Cluster Operators"),
        "{out}{err}"
    );
    let (ok, _, err) = upgrade_cli(ctx, &["status", "--details", "operator"])?;
    ensure!(
        !ok && err.contains("invalid value 'operator' for '--details <DETAILS>'"),
        "{err}"
    );
    let (ok, out, err) = upgrade_cli(ctx, &["status", "--details", "operators"])?;
    ensure!(ok && err.is_empty(), "{out}{err}");
    ensure!(
        out.starts_with("An update is in progress for ")
            && out.contains(&format!(": {message}\n\n= Control Plane =\n")),
        "{out}"
    );
    let completion = format!(
        "Completion:      {:.0}% ({updated} operators updated, ",
        updated as f64 * 100.0 / platform.len() as f64
    );
    for want in [
        "Target Version:  4.18.0 (from 4.17.0)\n",
        completion.as_str(),
        "\nUpdating Cluster Operators\nNAME",
        "= Update Health =\n",
    ] {
        ensure!(out.contains(want), "{want:?} in {out}");
    }
    let updating_line = out
        .lines()
        .find(|l| l.starts_with("Updating:"))
        .unwrap_or_default();
    ensure!(updating_line.contains("etcd"), "{out}");
    let etcd_row = out
        .lines()
        .find(|l| l.starts_with("etcd "))
        .unwrap_or_default();
    ensure!(
        etcd_row.contains("Upgrading") && etcd_row.ends_with("Working towards 4.18.0"),
        "{out}"
    );

    let (ok, json, err) = upgrade_cli(ctx, &["status", "-o", "json"])?;
    ensure!(ok, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&json)?;
    let cp = &doc["controlPlane"];
    ensure!(
        doc["updating"] == true && doc["progressing"]["message"] == message.as_str(),
        "{doc}"
    );
    ensure!(
        cp["targetVersion"] == "4.18.0" && cp["previousVersion"] == "4.17.0",
        "{cp}"
    );
    ensure!(
        cp["operators"]["total"] == platform.len() && cp["operators"]["updated"] == updated,
        "{cp}"
    );
    let etcd = (cp["notUpdated"].as_array().into_iter().flatten())
        .find(|o| o["name"] == "etcd")
        .context("etcd held")?;
    ensure!(
        etcd["version"] == "4.17.0" && etcd["progressing"]["reason"] == "Upgrading",
        "{etcd}"
    );
    ensure!(
        cp["startedTime"] == json!(s.history[0].started_time),
        "{cp}"
    );

    let (ok, out, err) = upgrade_cli(ctx, &[])?;
    ensure!(
        ok && out.contains(&format!("info: An upgrade is in progress. {message}\n")),
        "{out}{err}"
    );
    let (ok, json, err) = upgrade_cli(ctx, &["-o", "json"])?;
    ensure!(ok, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&json)?;
    ensure!(
        doc["version"] == "4.18.0" && doc["progressing"]["message"] == message.as_str(),
        "{doc}"
    );
    let (ok, _, err) = upgrade_cli(ctx, &["-o", "json", "--clear"])?;
    ensure!(
        !ok && err.contains("-o json shows the update status"),
        "{err}"
    );

    // The channel: 4.18.0 lists candidate, fast and stable.
    let channels = s
        .desired
        .as_ref()
        .map(|d| d.channels.clone())
        .unwrap_or_default();
    ensure!(
        channels == ["candidate-4.18", "fast-4.18", "stable-4.18"],
        "{channels:?}"
    );
    let (ok, _, err) = upgrade_cli(ctx, &["channel", "stabel-4.18"])?;
    ensure!(!ok && err.contains("the requested channel \"stabel-4.18\" is not one of the available channels (candidate-4.18, fast-4.18, stable-4.18), you must pass --allow-explicit-channel to continue (did you mean stable-4.18?)"), "{err}");
    let (ok, out, err) = upgrade_cli(ctx, &["channel", "stable-4.18"])?;
    ensure!(ok && out.is_empty() && err.is_empty(), "{out}{err}");
    ensure!(api.get("version").await?.spec.channel.as_deref() == Some("stable-4.18"));
    let (ok, out, _) = upgrade_cli(ctx, &["channel", "stable-4.18"])?;
    ensure!(
        ok && out == "info: Cluster is already in stable-4.18 (no change)\n",
        "{out}"
    );
    let (ok, _, err) = upgrade_cli(ctx, &["channel", ""])?;
    ensure!(!ok && err.contains("The current channel \"stable-4.18\" is one of the available channels, you must pass --allow-explicit-channel"), "{err}");
    let (ok, _, err) = upgrade_cli(ctx, &["channel", "", "--allow-explicit-channel"])?;
    ensure!(
        ok && err
            == "warning: Clearing channel \"stable-4.18\"; cluster will no longer request available update recommendations.\n",
        "{err}"
    );
    ensure!(api.get("version").await?.spec.channel.is_none());
    Ok(())
}

/// `cvo upgrade ARGS --kubeconfig ...`: success, standard output, standard error.
pub(super) fn upgrade_cli(ctx: &Ctx<'_>, args: &[&str]) -> anyhow::Result<(bool, String, String)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"))
        .arg("upgrade")
        .args(args)
        .arg("--kubeconfig")
        .arg(ctx.cluster.kubeconfig())
        .output()?;
    Ok((
        out.status.success(),
        String::from_utf8(out.stdout)?,
        String::from_utf8(out.stderr)?,
    ))
}

fn proxy_api(ctx: &Ctx<'_>) -> Api<kube::core::DynamicObject> {
    let gvk = kube::core::GroupVersionKind::gvk("config.openshift.io", "v1", "Proxy");
    Api::all_with(
        ctx.admin.clone(),
        &kube::core::ApiResource::from_gvk_with_plural(&gvk, "proxies"),
    )
}

/// No Proxy `cluster`, and none of the ConfigMaps the signature test makes (the CA, the saved
/// signatures).
async fn remove_proxy(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), "openshift-config");
    for result in [
        proxy_api(ctx)
            .delete("cluster", &DeleteParams::default())
            .await
            .map(|_| ()),
        config_maps
            .delete("signature-store-ca", &DeleteParams::default())
            .await
            .map(|_| ()),
        Api::<ConfigMap>::namespaced(ctx.admin.clone(), "openshift-config-managed")
            .delete("signatures-managed", &DeleteParams::default())
            .await
            .map(|_| ()),
    ] {
        match result {
            Ok(()) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Release signatures (issue 12): the applied payload declares a verifier (a ConfigMap with
/// `release.openshift.io/verification-config-map`: one keyring, one HTTP store on 127.0.0.1).
/// An unsigned release is refused with upstream's message and the current payload stays; once
/// `cvo payload sign` has put its signature in the store it is accepted with `verified: true`;
/// an unsigned one goes through with `force`, unverified, the failure in `acceptedRisks`. The
/// stores are reached through the cluster's Proxy and trusting its CA bundle.
pub async fn upgrade_verifies_release_signatures(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    remove_proxy(ctx).await?;
    let Some(gnupg) = super::gnupg::GnuPg::with_key("Release <release@example.com>")? else {
        return Ok(());
    };
    let Some(registry) = super::registry_support::Registry::start_or_skip(tmp.path(), None) else {
        return Ok(());
    };
    // A signing key (GnuPG's), and a store served by a real HTTP server.
    let gpg = |args: &[&str]| gnupg.run(args);
    let public = String::from_utf8(gpg(&["--armor", "--export"])?)?;
    let secret = tmp.path().join("release.key");
    std::fs::write(&secret, gpg(&["--armor", "--export-secret-keys"])?)?;
    let store = tmp.path().join("store");
    std::fs::create_dir(&store)?;
    let server = super::static_server::StaticServer::start(&store)?;
    let result = async {
        // Both payloads declare the verifier; 4.18.0 is pushed twice (a second, unsigned image).
        let key: String = public.lines().map(|l| format!("    {l}\n")).collect();
        let verifier = format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: openshift-config-managed\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release-verification\n  namespace: openshift-config-managed\n  annotations:\n    release.openshift.io/verification-config-map: \"\"\n    include.release.openshift.io/self-managed-high-availability: \"true\"\ndata:\n  store-local: {}\n  verifier-public-key-test: |\n{key}",
            server.url
        );
        let image = |tag: &str| format!("{}/cvo/release:{tag}", registry.addr);
        let mut digests = std::collections::BTreeMap::new();
        for (src, tag, extra) in [(OLD, "4.17.0", ""), (NEW, "4.18.0", ""), (NEW, "4.18.0-b", "b"), (NEW, "4.18.0-c", "c"), (NEW, "4.18.0-d", "d"), (NEW, "4.18.0-e", "e")] {
            let dir = tmp.path().join(tag);
            copy_dir(Path::new(src), &dir)?;
            std::fs::write(dir.join("manifests/0000_00_verification.yaml"), &verifier)?;
            if !extra.is_empty() {
                std::fs::write(dir.join("manifests/0000_99_extra.yaml"), format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra-{extra}\n  namespace: openshift-config-managed\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n"))?;
            }
            let mut push = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"));
            push.args(["payload", "push", dir.to_str().unwrap(), &image(tag)])
                .arg("--cache-dir")
                .arg(tmp.path().join("cache"))
                .env("HOME", tmp.path().join("home"));
            let out = push.output()?;
            ensure!(out.status.success(), "push: {}", String::from_utf8_lossy(&out.stderr));
            let digest = String::from_utf8(out.stdout)?
                .split_whitespace()
                .find(|w| w.starts_with("sha256:"))
                .context("push prints the digest")?
                .to_string();
            digests.insert(tag, format!("{}/cvo/release@{digest}", registry.addr));
        }
        let api = reset_cluster_version(ctx).await?;
        forget_upgrade_objects(ctx).await?;
        mark_healthy(ctx, &load(OLD)?, "etcd").await?;
        api.create(&PostParams::default(), &ClusterVersion::new("version", spec(&[])))
            .await?;
        let once = |payload: &str| -> anyhow::Result<()> {
            let out = cvo(ctx, tmp.path(), &["start", "--once", "--disable-leader-election"])
                .args(["--listen", "", "--default-update-service", "", "--payload", payload])
                .output()?;
            ensure!(out.status.success(), "{:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
            Ok(())
        };
        let old = &digests["4.17.0"];
        once(old)?;
        check_history(&status(ctx).await?, &[("Completed", "4.17.0")])?;

        // Unsigned: refused, 4.17.0 stays.
        let new = &digests["4.18.0"];
        let digest = new.rsplit_once('@').map(|(_, d)| d).unwrap_or_default().to_string();
        request_release(&api, new, Some("4.18.0")).await?;
        once(old)?;
        let s = status(ctx).await?;
        let accepted = (s.conditions.iter()).find(|c| c.type_ == "ReleaseAccepted").context("no ReleaseAccepted")?;
        let want = format!(
            "Retrieving payload failed version=\"4.18.0\" image=\"{new}\" failure=The update cannot be verified: unable to verify {digest} against keyrings: verifier-public-key-test"
        );
        ensure!(
            accepted.status == "False" && accepted.reason.as_deref() == Some("RetrievePayload")
                && accepted.message.as_deref() == Some(want.as_str()),
            "{accepted:?}"
        );
        check_history(&s, &[("Completed", "4.17.0")])?;

        // Signed in the payload's store, but spec.signatureStores replaces it with another
        // store that has nothing: still refused. Signed there too: accepted, verified.
        let spec_store = tmp.path().join("spec-store");
        std::fs::create_dir(&spec_store)?;
        let spec_server = super::static_server::StaticServer::start(&spec_store)?;
        let sign_into = |digest: &str, tag: &str, to: &Path| -> anyhow::Result<String> {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"))
                .args(["payload", "sign", "--digest", digest, "--identity", &image(tag), "--key"])
                .arg(&secret)
                .arg("--to")
                .arg(to)
                .output()?;
            ensure!(out.status.success(), "sign: {}", String::from_utf8_lossy(&out.stderr));
            Ok(String::from_utf8(out.stdout)?.trim().to_string())
        };
        sign_into(&digest, "4.18.0", &store)?;
        let stores = json!({"spec": {"signatureStores": [{"url": spec_server.url}]}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&stores)).await?;
        once(old)?;
        let s = status(ctx).await?;
        check_history(&s, &[("Completed", "4.17.0")])?;
        let (accepted, message) = condition_of(&s, "ReleaseAccepted");
        ensure!(
            accepted == "False" && message.ends_with(&format!("failure=The update cannot be verified: unable to verify {digest} against keyrings: verifier-public-key-test")),
            "{message}"
        );
        let spec_signature = std::fs::read(sign_into(&digest, "4.18.0", &spec_store)?)?;
        once(old)?;
        let s = status(ctx).await?;
        check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
        ensure!(s.history[0].verified && s.history[0].image == *new, "{:?}", s.history);
        // The signature that verified it is saved where upstream saves it.
        let managed = Api::<ConfigMap>::namespaced(ctx.admin.clone(), "openshift-config-managed")
            .get("signatures-managed")
            .await?;
        let labels = managed.metadata.labels.clone().unwrap_or_default();
        let saved = managed.binary_data.clone().unwrap_or_default();
        let saved_key = format!("{}-0", digest.replacen(':', "-", 1));
        ensure!(
            labels.get("release.openshift.io/verification-signatures").map(String::as_str) == Some("")
                && saved.get(&saved_key).map(|b| &b.0) == Some(&spec_signature)
                && saved.len() == 1,
            "{managed:?}"
        );
        let clear = json!({"spec": {"signatureStores": null}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&clear)).await?;

        // Signed in a signature ConfigMap (as `oc adm release mirror` leaves them for a
        // disconnected cluster) and in no store: accepted, verified.
        let mirrored = &digests["4.18.0-b"];
        let mirrored_digest = mirrored.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
        let written = sign_into(mirrored_digest, "4.18.0-b", &tmp.path().join("mirrored"))?;
        let signature = std::fs::read(written)?;
        let key = format!("{}-1", mirrored_digest.replacen(':', "-", 1));
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": mirrored_digest.replacen(':', "-", 1), "namespace": "openshift-config-managed",
                         "labels": {"release.openshift.io/verification-signatures": ""}},
            "binaryData": {key: base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &signature)}}))?;
        Api::<ConfigMap>::namespaced(ctx.admin.clone(), "openshift-config-managed")
            .create(&PostParams::default(), &cm)
            .await?;
        request_release(&api, mirrored, Some("4.18.0")).await?;
        once(new)?;
        let s = status(ctx).await?;
        ensure!(s.history[0].image == *mirrored && s.history[0].verified, "{:?}", s.history);

        // Forced through unsigned: unverified, and the history says why.
        let unsigned = &digests["4.18.0-c"];
        let patch = json!({"spec": {"desiredUpdate": {"image": unsigned, "version": "4.18.0", "force": true}}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&patch)).await?;
        once(mirrored)?;
        let s = status(ctx).await?;
        ensure!(s.history[0].image == *unsigned && !s.history[0].verified, "{:?}", s.history);
        let risks = s.history[0].accepted_risks.clone().unwrap_or_default();
        ensure!(risks.contains("The update cannot be verified: unable to verify"), "{risks:?}");

        // The stores are reached as the update service is: through the Proxy `cluster`'s
        // status.httpProxy (a store on a host that does not resolve), trusting the CA bundle
        // its spec.trustedCA names (an HTTPS store whose CA is nowhere else).
        // Python's http.server, asked as a proxy for `http://signatures.invalid/store/X`,
        // serves `<dir>/http:/signatures.invalid/store/X`: a real proxy for that one host.
        let proxy_root = tmp.path().join("proxy");
        let hidden = proxy_root.join("http:/signatures.invalid/store");
        std::fs::create_dir_all(&hidden)?;
        let proxy_server = super::static_server::StaticServer::start(&proxy_root)?;
        let proxied = &digests["4.18.0-d"];
        let proxied_digest = proxied.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
        sign_into(proxied_digest, "4.18.0-d", &hidden)?;
        let stores = json!({"spec": {"signatureStores": [{"url": "http://signatures.invalid/store"}]}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&stores)).await?;
        let patch = json!({"spec": {"desiredUpdate": {"image": proxied, "version": "4.18.0", "force": false}}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&patch)).await?;
        once(unsigned)?;
        let s = status(ctx).await?;
        ensure!(s.history[0].image == *unsigned, "no proxy yet: {:?}", s.history);
        let proxies = proxy_api(ctx);
        proxies
            .create(&PostParams::default(), &serde_json::from_value(json!({
                "apiVersion": "config.openshift.io/v1", "kind": "Proxy", "metadata": {"name": "cluster"},
                "status": {"httpProxy": proxy_server.url}}))?)
            .await?;
        once(unsigned)?;
        let s = status(ctx).await?;
        ensure!(s.history[0].image == *proxied && s.history[0].verified, "{:?}", s.history);

        let (cert, _) = cvo::host::webhook::make_certificate(
            &["localhost".to_string()],
            k8s_openapi::jiff::Timestamp::now(),
        )?;
        let tls_store = tmp.path().join("tls-store");
        std::fs::create_dir(&tls_store)?;
        let (leaf, leaf_key) = (tmp.path().join("leaf.crt"), tmp.path().join("leaf.key"));
        std::fs::write(&leaf, &cert.certificate)?;
        std::fs::write(&leaf_key, &cert.key)?;
        let tls_server = super::static_server::StaticServer::start_tls(&tls_store, &leaf, &leaf_key)?;
        let trusted = &digests["4.18.0-e"];
        let trusted_digest = trusted.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
        sign_into(trusted_digest, "4.18.0-e", &tls_store)?;
        let stores = json!({"spec": {"signatureStores": [{"url": tls_server.url}]}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&stores)).await?;
        request_release(&api, trusted, Some("4.18.0")).await?;
        once(proxied)?;
        let s = status(ctx).await?;
        let (_, message) = condition_of(&s, "ReleaseAccepted");
        ensure!(s.history[0].image == *proxied && message.contains("cannot be verified"), "not trusted yet: {message}");
        let ca = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "signature-store-ca", "namespace": "openshift-config"},
                        "data": {"ca-bundle.crt": cert.ca}});
        Api::<ConfigMap>::namespaced(ctx.admin.clone(), "openshift-config")
            .create(&PostParams::default(), &serde_json::from_value(ca)?)
            .await?;
        let trust = json!({"spec": {"trustedCA": {"name": "signature-store-ca"}}});
        proxies.patch("cluster", &PatchParams::default(), &Patch::Merge(&trust)).await?;
        once(proxied)?;
        let s = status(ctx).await?;
        ensure!(s.history[0].image == *trusted && s.history[0].verified, "{:?}", s.history);
        drop((proxy_server, tls_server));
        anyhow::Ok(())
    }
    .await;
    remove_proxy(ctx).await?;
    drop(server);
    drop(registry);
    result
}

pub fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// The graph the risk tests serve: 4.17.0 to 4.18.0 with the risk ConsoleBreaks (a `PromQL`
/// rule that matches while the Console capability is enabled), to 4.17.1 with InsightsBreaks
/// (Insights).
pub fn risky_graph() -> String {
    use super::update_service_support::graph;
    let risk = |name: &str, capability: &str| {
        json!({"url": format!("https://bug/{name}"), "name": name,
               "message": format!("{name} may happen."),
               "matchingRules": [{"type": "PromQL", "promql": {"promql": format!(
                   "group(cluster_version_capability{{name=\"{capability}\"}} == 1) or vector(0)")}}]})
    };
    let conditional = json!([
        {"edges": [{"from": "4.17.0", "to": "4.18.0"}], "risks": [risk("ConsoleBreaks", "Console")]},
        {"edges": [{"from": "4.17.0", "to": "4.17.1"}], "risks": [risk("InsightsBreaks", "Insights")]},
    ]);
    graph(
        &[
            ("4.17.0", OLD),
            ("4.17.1", "quay.io/r@sha256:171"),
            ("4.18.0", NEW),
        ],
        &[],
        conditional,
    )
}

/// The `Recommended` condition of the conditional update to `version`: status, reason, message.
pub fn recommended(s: &ClusterVersionStatus, version: &str) -> (String, String, String) {
    (s.conditional_updates.iter())
        .find(|u| u.release.version.as_deref() == Some(version))
        .and_then(|u| u.conditions.iter().find(|c| c.type_ == "Recommended"))
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

/// 4.18.0 is not recommended: ConsoleBreaks applies (this cluster has the Console).
pub fn ensure_console_breaks(s: &ClusterVersionStatus) -> anyhow::Result<()> {
    ensure!(
        recommended(s, "4.18.0")
            == (
                "False".into(),
                "ConsoleBreaks".into(),
                "ConsoleBreaks may happen. https://bug/ConsoleBreaks".into()
            ),
        "{:?}",
        recommended(s, "4.18.0")
    );
    Ok(())
}

/// Conditional update risks evaluated against a real Prometheus scraping this operator's own
/// `/metrics` (issue 12). The graph offers 4.17.0 → 4.18.0 with a `PromQL` risk that matches
/// this cluster (Console is enabled) and 4.17.0 → 4.17.1 with one that does not (Insights is
/// not). With Prometheus unreachable both are `Unknown`/`EvaluationFailed`; once reachable,
/// 4.18.0 is `Recommended=False` (until `cvo upgrade accept` accepts the risk) and 4.17.1 is
/// recommended, as `cvo upgrade recommend` shows; a desiredUpdate naming 4.18.0 goes ahead with
/// `ClusterVersionRecommendedUpdate`'s warning, as upstream.
pub async fn upgrade_recommends_and_accepts_risky_updates(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use cvo::host::serve::{bind, serve};

    use super::prometheus_support::Prometheus;
    use super::update_service_support::{Reply, UpdateService};

    let metrics = Arc::new(Metrics::new());
    let (listener, addr) = bind("127.0.0.1:0".parse()?).await?;
    let (stop, stopped) = watch::channel(false);
    let server = tokio::spawn(serve(listener, metrics.clone(), stopped));
    let Some(prometheus) = Prometheus::start(addr).await? else {
        return Ok(());
    };
    let body = risky_graph();
    let service = UpdateService::start(move |_| Reply::Graph(body.clone())).await;

    let result = async {
        let (api, mut options, mut state) = install_old(ctx).await?;
        let c = &ctx.admin;
        options.metrics = Some(metrics.clone());
        // Unreachable: nothing listens on the port a dropped listener had.
        let closed = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        options.prometheus.url = Some(format!("http://{closed}"));
        clean_pass(c, &options, &mut state).await?;
        let upstream = json!({"spec": {"channel": "stable-4.18", "upstream": service.url}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&upstream))
            .await?;
        clean_pass(c, &options, &mut state).await?;
        let s = status(ctx).await?;
        let (status_, reason, message) = recommended(&s, "4.18.0");
        let unreachable = format!(
            "Could not evaluate exposure to update risk ConsoleBreaks (executing PromQL query: Get \"http://{closed}/api/v1/query?query="
        );
        ensure!(
            status_ == "Unknown"
                && reason == "EvaluationFailed"
                && message.starts_with(&unreachable)
                && message.ends_with(
                    ")\n  ConsoleBreaks description: ConsoleBreaks may happen.\n  ConsoleBreaks URL: https://bug/ConsoleBreaks"
                ),
            "{:#?}",
            s.conditional_updates
        );
        ensure!(recommended(&s, "4.17.1").0 == "Unknown", "{:?}", recommended(&s, "4.17.1"));

        // Reachable, once Prometheus has scraped the capabilities this cluster has.
        prometheus
            .wait_for(r#"cluster_version_capability{name="Console"} == 1"#)
            .await?;
        options.prometheus.url = Some(prometheus.url.clone());
        // As a restart with the new --prometheus-url would: upstream's cache keeps a failed
        // answer up to an hour once a throttled request has marked the rule as waiting.
        if let Some(updates) = state.updates.as_mut() {
            updates.cache = Default::default();
        }
        clean_pass(c, &options, &mut state).await?;
        let s = status(ctx).await?;
        ensure!(
            recommended(&s, "4.18.0")
                == (
                    "False".into(),
                    "ConsoleBreaks".into(),
                    "ConsoleBreaks may happen. https://bug/ConsoleBreaks".into()
                ),
            "{:?}",
            recommended(&s, "4.18.0")
        );
        ensure!(
            recommended(&s, "4.17.1")
                == (
                    "True".into(),
                    "NotExposedToRisks".into(),
                    "The update is recommended, because none of the conditional update risks apply to this cluster.".into()
                ),
            "{:?}",
            recommended(&s, "4.17.1")
        );
        let available: Vec<_> = (s.available_updates.iter().flatten())
            .filter_map(|r| r.version.clone())
            .collect();
        ensure!(available == ["4.17.1"], "{available:?}");
        // Each risk once, with whether it applies; each update names its risks.
        let applies: Vec<_> = (s.conditional_update_risks.iter())
            .map(|r| {
                let c = r.conditions.iter().find(|c| c.type_ == "Applies");
                (r.name.as_str(), c.map(|c| (c.status.as_str(), c.reason.as_str())))
            })
            .collect();
        ensure!(
            applies
                == [
                    ("ConsoleBreaks", Some(("True", "Match"))),
                    ("InsightsBreaks", Some(("False", "NotMatch")))
                ],
            "{applies:?}"
        );
        let names: Vec<_> = (s.conditional_updates.iter())
            .map(|u| (u.release.version.as_deref(), u.risk_names.clone()))
            .collect();
        ensure!(
            names
                == [
                    (Some("4.18.0"), vec!["ConsoleBreaks".to_string()]),
                    (Some("4.17.1"), vec!["InsightsBreaks".to_string()])
                ],
            "{names:?}"
        );
        let scraped = metrics.encode();
        ensure!(
            scraped.contains(
                r#"cluster_version_conditional_update_condition_seconds{version="4.18.0",condition="Recommended",status="False",reason="ConsoleBreaks"}"#
            ),
            "{scraped}"
        );

        // `cvo upgrade recommend` (the precheck reading this Prometheus' alerts, none firing)
        // lists the risky update in long form; asked about it alone it fails until the risk
        // is accepted.
        let prom = ["--prometheus-url", prometheus.url.as_str()];
        let (ok, out, err) = upgrade_cli(ctx, &[&["recommend"][..], &prom].concat())?;
        ensure!(
            ok && out.contains("  Version: 4.18.0\n")
                && out.contains("  Reason: ConsoleBreaks\n  Message: ConsoleBreaks may happen. https://bug/ConsoleBreaks\n")
                && out.contains("  4.17.1      no known issues relevant to this cluster\n"),
            "{out}{err}"
        );
        let version = [&["recommend", "--version", "4.18.0"][..], &prom].concat();
        let (ok, out, err) = upgrade_cli(ctx, &version)?;
        ensure!(
            !ok && out.contains("Update to 4.18.0 Recommended=False:\n")
                && err.contains("issues that apply to this cluster but which were not included in --accept: ConditionalUpdateRisk"),
            "{out}{err}"
        );
        let accepted = [&version[..], &["--accept", "ConditionalUpdateRisk"]].concat();
        let (ok, out, err) = upgrade_cli(ctx, &accepted)?;
        ensure!(
            ok && out.ends_with("Update to 4.18.0 has no known issues relevant to this cluster other than the accepted ConditionalUpdateRisk.\n"),
            "{out}{err}"
        );

        // `cvo upgrade accept` warns about a name no update has, adds, removes (`NAME-`) and
        // clears; accepting the risk makes the update recommended.
        let (ok, out, err) = upgrade_cli(ctx, &["accept", "ConsoleBreak,Other"])?;
        ensure!(
            ok && out == "info: Accept risks are [ConsoleBreak, Other]\n"
                && err.contains("warning: no conditional update of this cluster has a risk named ConsoleBreak (did you mean ConsoleBreaks?)"),
            "{out}{err}"
        );
        let (ok, out, err) = upgrade_cli(ctx, &["accept", "ConsoleBreaks,ConsoleBreak-"])?;
        ensure!(ok && out == "info: Accept risks are [Other, ConsoleBreaks]\n", "{out}{err}");
        let (ok, out, err) = upgrade_cli(ctx, &["accept", "--replace", "ConsoleBreaks"])?;
        ensure!(ok && out == "info: Accept risks are [ConsoleBreaks]\n", "{out}{err}");
        let spec = api.get("version").await?.spec;
        let names: Vec<_> = (spec.desired_update.iter())
            .flat_map(|u| u.accept_risks.iter().map(|r| r.name.as_str()))
            .collect();
        ensure!(names == ["ConsoleBreaks"], "{:?}", spec.desired_update);
        clean_pass(c, &options, &mut state).await?;
        let s = status(ctx).await?;
        let (status_, reason, _) = recommended(&s, "4.18.0");
        ensure!(
            (status_.as_str(), reason.as_str()) == ("True", "AllExposedRisksAccepted"),
            "{:?}",
            recommended(&s, "4.18.0")
        );
        check_history(&s, &[("Completed", "4.17.0")])?;
        let (ok, out, err) = upgrade_cli(ctx, &["accept", "--clear"])?;
        ensure!(ok && out == "info: Accept risks are []\n", "{out}{err}");
        clean_pass(c, &options, &mut state).await?;
        let s = status(ctx).await?;
        ensure!(recommended(&s, "4.18.0").0 == "False", "{:?}", recommended(&s, "4.18.0"));

        // A desiredUpdate naming the not-recommended release, without force and without the
        // risk accepted, goes ahead as upstream: ClusterVersionRecommendedUpdate only warns,
        // and the warning is the history entry's acceptedRisks.
        request_release(&api, NEW, Some("4.18.0")).await?;
        clean_pass(c, &options, &mut state).await?;
        clean_pass(c, &options, &mut state).await?;
        let s = status(ctx).await?;
        check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
        ensure!(
            s.history[0].accepted_risks.as_deref()
                == Some("Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"ConsoleBreaks\": Update from 4.17.0 to 4.18.0 is not recommended:\n\nConsoleBreaks may happen. https://bug/ConsoleBreaks"),
            "{:?}",
            s.history[0]
        );
        ensure!(
            condition_of(&s, "ReleaseAccepted").0 == "True",
            "{:?}",
            condition_of(&s, "ReleaseAccepted")
        );
        anyhow::Ok(())
    }
    .await;
    stop.send(true)?;
    server.await?;
    drop(prometheus);
    result
}
