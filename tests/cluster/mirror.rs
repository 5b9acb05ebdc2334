//! Disconnected releases: `cvo payload mirror` copies two releases built by `cvo payload new`
//! from one registry to another, and the ImageDigestMirrorSet it prints, applied to the
//! cluster (or the same rules as an older ImageContentSourcePolicy), makes `cvo start` pull
//! through the mirror once the source registry is gone: the release it starts from, and the
//! update `spec.desiredUpdate` asks for. And a registry with basic auth serves `cvo start`
//! only with the cluster's pull secret in place.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, ensure};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::Ctx;
use super::registry_support::Registry;
use super::start_tests::{condition_of, mark_healthy, reset_cluster_version, spec, status};
use super::upgrade_tests::{
    NEW, OLD, check_history, cvo, load, mark_at_version, request_release, run_ok,
};
use cvo::cluster::ClusterVersion;

const IDMS_NAME: &str = "cvo-test-mirror";

/// Which kind of object carries the mirror rules.
#[derive(Clone, Copy)]
enum MirrorKind {
    ImageDigestMirrorSet,
    ImageContentSourcePolicy,
}

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

/// `cvo start --once` from release image `payload`.
fn start_once(ctx: &Ctx<'_>, tmp: &Path, payload: &str) -> Command {
    let mut c = cvo(ctx, tmp, &["start", "--once", "--disable-leader-election"]);
    c.args(["--listen", "", "--payload", payload]);
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

fn mirror_api(ctx: &Ctx<'_>, kind: MirrorKind) -> Api<DynamicObject> {
    let (gvk, plural) = match kind {
        MirrorKind::ImageDigestMirrorSet => (
            GroupVersionKind::gvk("config.openshift.io", "v1", "ImageDigestMirrorSet"),
            "imagedigestmirrorsets",
        ),
        MirrorKind::ImageContentSourcePolicy => (
            GroupVersionKind::gvk(
                "operator.openshift.io",
                "v1alpha1",
                "ImageContentSourcePolicy",
            ),
            "imagecontentsourcepolicies",
        ),
    };
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    Api::all_with(ctx.admin.clone(), &resource)
}

/// The printed ImageDigestMirrorSet as an object of `kind`: an ImageContentSourcePolicy has
/// the same `source` and `mirrors` under `spec.repositoryDigestMirrors`.
fn mirror_object(idms: &Value, kind: MirrorKind) -> anyhow::Result<DynamicObject> {
    let mut object = idms.clone();
    object["metadata"]["name"] = json!(IDMS_NAME);
    if let MirrorKind::ImageContentSourcePolicy = kind {
        let entries = (idms["spec"]["imageDigestMirrors"].as_array())
            .context("no spec.imageDigestMirrors")?
            .iter()
            .map(|e| json!({"source": e["source"], "mirrors": e["mirrors"]}))
            .collect::<Vec<_>>();
        object = json!({"apiVersion": "operator.openshift.io/v1alpha1",
                        "kind": "ImageContentSourcePolicy",
                        "metadata": {"name": IDMS_NAME},
                        "spec": {"repositoryDigestMirrors": entries}});
    }
    Ok(serde_json::from_value(object)?)
}

pub async fn start_pulls_releases_through_the_mirror(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    pulls_through_the_mirror(ctx, MirrorKind::ImageDigestMirrorSet).await
}

pub async fn start_pulls_releases_through_a_content_source_policy(
    ctx: &Ctx<'_>,
) -> anyhow::Result<()> {
    pulls_through_the_mirror(ctx, MirrorKind::ImageContentSourcePolicy).await
}

async fn pulls_through_the_mirror(ctx: &Ctx<'_>, kind: MirrorKind) -> anyhow::Result<()> {
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
    let idms: Value = serde_saphyr::from_str(text)?;
    let object = mirror_object(&idms, kind)?;

    // The source registry is gone: without the mirror set, the release cannot be pulled.
    drop(source);
    let api = reset_cluster_version(ctx).await?;
    for kind in [
        MirrorKind::ImageDigestMirrorSet,
        MirrorKind::ImageContentSourcePolicy,
    ] {
        let api = mirror_api(ctx, kind);
        if api.get_opt(IDMS_NAME).await?.is_some() {
            api.delete(IDMS_NAME, &DeleteParams::default()).await?;
        }
    }
    let rules_api = mirror_api(ctx, kind);
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
    let once = |payload: &str| start_once(ctx, tmp.path(), payload);
    let out = once(&releases[0]).output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains(&releases[0]),
        "{:?}: {stderr}",
        out.status
    );

    // With it, `cvo start` pulls the release it runs from through the mirror...
    rules_api.create(&PostParams::default(), &object).await?;
    let stderr = run_ok(once(&releases[0]))?;
    ensure!(
        stderr.contains("pulled through a mirror") && stderr.contains(&to),
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

    rules_api
        .delete(IDMS_NAME, &DeleteParams::default())
        .await?;
    drop(mirror);
    Ok(())
}

/// Writes the Secret `openshift-config/pull-secret` with this `.dockerconfigjson` (`None`:
/// deletes it), as the installer leaves it (of type `kubernetes.io/dockerconfigjson`, whose
/// JSON the apiserver checks; one that is not JSON can only be `Opaque`).
async fn set_pull_secret(ctx: &Ctx<'_>, config: Option<&str>) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::{Namespace, Secret};
    use kube::api::{Patch, PatchParams};
    let namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "openshift-config"}});
    let params = PatchParams::apply("cvo-test").force();
    namespaces
        .patch("openshift-config", &params, &Patch::Apply(&ns))
        .await?;
    let secrets: Api<Secret> = Api::namespaced(ctx.admin.clone(), "openshift-config");
    if secrets.get_opt("pull-secret").await?.is_some() {
        secrets
            .delete("pull-secret", &DeleteParams::default())
            .await?;
    }
    if let Some(config) = config {
        let type_ = match serde_json::from_str::<Value>(config) {
            Ok(_) => "kubernetes.io/dockerconfigjson",
            Err(_) => "Opaque",
        };
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "pull-secret", "namespace": "openshift-config"},
            "type": type_,
            "stringData": {".dockerconfigjson": config}});
        secrets
            .create(&PostParams::default(), &serde_json::from_value(secret)?)
            .await?;
    }
    Ok(())
}

/// A `.dockerconfigjson` with `user:password` for `registry`.
fn docker_config(registry: &str, user_password: &str) -> String {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(user_password);
    json!({"auths": {registry: {"auth": auth, "email": "cvo@example.com"}}}).to_string()
}

/// The release images live in a registry that wants basic auth. `cvo start` pulls the release
/// it starts from, and the update the cluster asks for, with the cluster's pull secret, as a
/// node would: without the Secret, with one that is not JSON or that has no entry for the
/// registry, the pull is refused and the message says what is wrong with the Secret (the
/// start fails; an update is `ReleaseAccepted=False` with the reason in its message).
pub async fn start_pulls_releases_with_the_pull_secret(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let Some(registry) = Registry::start_or_skip(tmp.path(), Some("cvo:s3cret")) else {
        return Ok(());
    };
    // By digest: a pull from the cache then needs no registry.
    let mut digests = std::collections::BTreeMap::new();
    for (dir, tag) in [(OLD, "4.17.0"), (NEW, "4.18.0")] {
        let to = format!("{}/cvo/release:{tag}", registry.addr);
        let mut push = release_command(tmp.path(), &["payload", "push", dir, &to]);
        push.args(["--registry-username", "cvo", "--registry-password-stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = push.spawn()?;
        std::io::Write::write_all(&mut child.stdin.take().context("stdin")?, b"s3cret\n")?;
        let out = child.wait_with_output()?;
        let printed = String::from_utf8(out.stdout)?;
        ensure!(out.status.success(), "payload push {tag}: {printed}");
        let digest = printed.split_whitespace().last().context("no digest")?;
        digests.insert(tag, format!("{}/cvo/release@{digest}", registry.addr));
    }
    let image = |tag: &str| digests[tag].clone();
    let api = reset_cluster_version(ctx).await?;
    mark_healthy(ctx, &load(OLD)?, "etcd").await?;
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec(&[])),
    )
    .await?;
    let once = |payload: &str| start_once(ctx, tmp.path(), payload);
    let addr = &registry.addr;
    for (config, reason) in [
        (None, "it does not exist".to_string()),
        (
            Some("{not json"),
            "its .dockerconfigjson is not JSON".to_string(),
        ),
    ] {
        set_pull_secret(ctx, config).await?;
        let out = once(&image("4.17.0")).output()?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want = format!(
            "no credentials for {addr}: the pull secret openshift-config/pull-secret cannot be used: {reason}"
        );
        ensure!(
            !out.status.success() && stderr.contains(&want),
            "{:?}, want {want}: {stderr}",
            out.status
        );
    }
    set_pull_secret(ctx, Some(&docker_config(addr, "cvo:s3cret"))).await?;
    run_ok(once(&image("4.17.0")))?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.17.0")])?;

    // An update from the same registry, while the Secret has no entry for it: refused, and
    // the status says why.
    set_pull_secret(ctx, Some(&docker_config("quay.io", "someone:else"))).await?;
    request_release(&api, &image("4.18.0"), Some("4.18.0")).await?;
    run_ok(once(&image("4.17.0")))?;
    let s = status(ctx).await?;
    let (accepted, message) = condition_of(&s, "ReleaseAccepted");
    let want = format!(
        "no credentials for {addr} in the pull secret openshift-config/pull-secret: add an auths entry for {addr} to its .dockerconfigjson"
    );
    ensure!(
        accepted == "False" && message.contains(&want),
        "{accepted} {message}, want {want}"
    );
    check_history(&s, &[("Completed", "4.17.0")])?;

    // With the registry's credentials in the Secret, the update is pulled and applied.
    set_pull_secret(ctx, Some(&docker_config(addr, "cvo:s3cret"))).await?;
    run_ok(once(&image("4.17.0")))?;
    let s = status(ctx).await?;
    check_history(&s, &[("Completed", "4.18.0"), ("Completed", "4.17.0")])?;
    ensure!(s.history[0].image == image("4.18.0"), "{:?}", s.history);
    set_pull_secret(ctx, None).await?;
    drop(registry);
    Ok(())
}
