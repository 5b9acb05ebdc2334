//! Disconnected releases: `cvo payload mirror` copies two releases built by `cvo payload new`
//! from one registry to another, and the ImageDigestMirrorSet it prints, applied to the
//! cluster, makes `cvo start` pull through the mirror once the source registry is gone: the
//! release it starts from, and the update `spec.desiredUpdate` asks for.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, ensure};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::Ctx;
use super::registry_support::Registry;
use super::start_tests::{mark_healthy, reset_cluster_version, spec, status};
use super::upgrade_tests::{
    NEW, OLD, check_history, cvo, load, mark_at_version, request_release, run_ok,
};
use cvo::cluster::ClusterVersion;

const IDMS_NAME: &str = "cvo-test-mirror";

/// `cvo` for the release commands: its own image cache, no credentials.
fn release_command(tmp: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cvo"));
    c.args(args)
        .arg("--cache-dir")
        .arg(tmp.join("build-cache"))
        .env("HOME", tmp.join("home"))
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("DOCKER_CONFIG");
    c
}

fn stdout_of(mut command: Command) -> anyhow::Result<String> {
    let out = command.output()?;
    ensure!(
        out.status.success(),
        "{command:?}: {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// An image-references of one component image, `etcd`, under a placeholder pullspec that
/// `--mapping` replaces.
fn image_references(version: &str) -> String {
    json!({"kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
           "metadata": {"name": version},
           "spec": {"tags": [{"name": "etcd", "from": {"kind": "DockerImage",
               "name": format!("quay.io/example/etcd@sha256:{}", "e".repeat(64))}}]}})
    .to_string()
}

fn idms_api(ctx: &Ctx<'_>) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "ImageDigestMirrorSet");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "imagedigestmirrorsets");
    Api::all_with(ctx.admin.clone(), &resource)
}

pub async fn start_pulls_releases_through_the_mirror(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    for dir in ["source", "mirror"] {
        std::fs::create_dir_all(tmp.path().join(dir))?;
    }
    let Some(source) = Registry::start_or_skip(&tmp.path().join("source"), None) else {
        return Ok(());
    };
    let Some(mirror) = Registry::start_or_skip(&tmp.path().join("mirror"), None) else {
        return Ok(());
    };
    // A component image, and two releases referencing it, in the source registry.
    let etcd = format!("{}/images/etcd:v1", source.addr);
    stdout_of(release_command(
        tmp.path(),
        &["payload", "push", OLD, &etcd],
    ))?;
    let release_repo = format!("{}/openshift/release", source.addr);
    let mut releases = Vec::new();
    for (dir, version) in [(OLD, "4.17.0"), (NEW, "4.18.0")] {
        let copy = tmp.path().join(version);
        let cp = Command::new("cp").arg("-r").arg(dir).arg(&copy).status()?;
        ensure!(cp.success(), "cp -r {dir}");
        std::fs::write(
            copy.join("release-manifests/image-references"),
            image_references(version),
        )?;
        let mapping = format!("etcd={etcd}");
        let mut new = release_command(tmp.path(), &["payload", "new"]);
        new.arg("--from-dir").arg(&copy).args([
            "--to",
            &release_repo,
            "--operator-binary",
            "/usr/bin/true",
        ]);
        new.args(["--mapping", &mapping]);
        let built = stdout_of(new)?;
        let digest = built.split_whitespace().next().context("no digest")?;
        releases.push(format!("{release_repo}@{digest}"));
    }
    // Both mirrored; the ImageDigestMirrorSet printed.
    let to = format!("{}/mirror", mirror.addr);
    let mut printed = String::new();
    for release in &releases {
        printed = stdout_of(release_command(
            tmp.path(),
            &["payload", "mirror", "--from", release, "--to", &to],
        ))?;
    }
    let text = (printed.split("use the following to create an ImageDigestMirrorSet:\n\n"))
        .nth(1)
        .with_context(|| format!("no ImageDigestMirrorSet in {printed}"))?;
    let mut idms: Value = serde_saphyr::from_str(text)?;
    idms["metadata"]["name"] = json!(IDMS_NAME);

    // The source registry is gone: without the mirror set, the release cannot be pulled.
    drop(source);
    let api = reset_cluster_version(ctx).await?;
    let idms_api = idms_api(ctx);
    if idms_api.get_opt(IDMS_NAME).await?.is_some() {
        idms_api.delete(IDMS_NAME, &DeleteParams::default()).await?;
    }
    // The etcd operator runs each release once it is applied (`payload new` gave the
    // manifests the release's version).
    let old_copy = tmp.path().join("4.17.0").display().to_string();
    mark_healthy(ctx, &load(&old_copy)?, "etcd").await?;
    mark_at_version(ctx, "etcd", "4.17.0").await?;
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec(&[])),
    )
    .await?;
    let once = |payload: &str| {
        let mut c = cvo(
            ctx,
            tmp.path(),
            &["start", "--once", "--disable-leader-election"],
        );
        c.args(["--listen", "", "--payload", payload]);
        c
    };
    let out = once(&releases[0]).output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains(&releases[0]),
        "{:?}: {stderr}",
        out.status
    );

    // With it, `cvo start` pulls the release it runs from through the mirror...
    let object: DynamicObject = serde_json::from_value(idms)?;
    idms_api.create(&PostParams::default(), &object).await?;
    let stderr = run_ok(once(&releases[0]))?;
    ensure!(
        stderr.contains("pulled through an ImageDigestMirrorSet mirror") && stderr.contains(&to),
        "{stderr}"
    );
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.17.0")])?;
    ensure!(s.history[0].image == releases[0], "{:?}", s.history);

    // ...and the update the cluster asks for, by the source's pullspec.
    request_release(&api, &releases[1], Some("4.18.0")).await?;
    mark_at_version(ctx, "etcd", "4.18.0").await?;
    let stderr = run_ok(once(&releases[0]))?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
    ensure!(
        s.history[0].image == releases[1],
        "{:?} {stderr}",
        s.history
    );

    idms_api.delete(IDMS_NAME, &DeleteParams::default()).await?;
    drop(mirror);
    Ok(())
}
