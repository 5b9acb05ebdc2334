//! `operator::run` (the loop of `cvo start`) against the real kube-apiserver, in-process, over
//! the bundled payload. No operator controllers run, so the tests mark the payload's
//! ClusterOperators healthy themselves.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::discovery::Discovery;
use serde_json::json;
use tokio::sync::watch;

use cvo::capability::{CapabilitiesSpec, Capability};
use cvo::cluster::{ClusterOperator, ClusterVersion, ClusterVersionSpec, ClusterVersionStatus};
use cvo::host::serve::{bind, serve};
use cvo::oci::Options;
use cvo::operator::desired::ReleaseSources;
use cvo::operator::run::{PassResult, SyncState, sync_once};
use cvo::operator::{LeaseConfig, Metrics, OperatorFacts, RunOptions, run};
use cvo::payload::{LoadOptions, Payload, bundled_input};

use super::apply_tests::{exists, install_foreign_crds};
use super::{Ctx, condition, install_crds};

const PROFILE: &str = "self-managed-high-availability";
const CAPABILITY: &str = "capability.openshift.io/name";

pub fn options() -> anyhow::Result<RunOptions> {
    let payload = Payload::from_input(bundled_input(), &LoadOptions::default())?;
    Ok(options_with(payload))
}

/// One pass (`sync_once`) that must apply everything.
pub async fn clean_pass(
    client: &kube::Client,
    options: &RunOptions,
    state: &mut SyncState,
) -> anyhow::Result<PassResult> {
    let pass = sync_once(client, options, state).await?;
    ensure!(pass.report.is_success(), "{:#?}", pass.report.errors);
    Ok(pass)
}

/// Fast loop settings for tests over `payload`.
pub fn options_with(payload: Payload) -> RunOptions {
    RunOptions {
        resync_interval: Duration::from_millis(100),
        facts: OperatorFacts {
            profile: PROFILE.into(),
            ..Default::default()
        },
        poll_interval: Duration::from_millis(100),
        // The update tests name payload directories in spec.desiredUpdate.image.
        release_sources: ReleaseSources::RegistriesAndLocalFiles,
        ..RunOptions::new(
            payload,
            Options::new(std::env::temp_dir().join("cvo-test-images")),
        )
    }
}

pub fn spec(additional: &[&str]) -> ClusterVersionSpec {
    spec_on("None", additional)
}

/// A spec with the baseline capability set `baseline` and `additional` capabilities.
pub fn spec_on(baseline: &str, additional: &[&str]) -> ClusterVersionSpec {
    ClusterVersionSpec {
        cluster_id: "0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a61".into(),
        capabilities: Some(CapabilitiesSpec {
            baseline_capability_set: Some(baseline.into()),
            additional_enabled_capabilities: additional
                .iter()
                .map(|c| Capability::new(*c))
                .collect(),
        }),
        ..Default::default()
    }
}

/// What an operator reports once it runs the payload's versions: Available, not Degraded.
pub async fn mark_healthy(ctx: &Ctx<'_>, payload: &Payload, name: &str) -> anyhow::Result<()> {
    let manifest = (payload.manifests.iter())
        .find(|m| m.gvk.is("config.openshift.io", "ClusterOperator") && m.id.name == name)
        .with_context(|| format!("no ClusterOperator {name} in the payload"))?;
    let versions = manifest.object()["status"]["versions"].clone();
    let api: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    let params = PatchParams::apply("cvo-test-operator").force();
    let object = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                        "metadata": {"name": name}, "spec": {}});
    api.patch(name, &params, &Patch::Apply(&object)).await?;
    let status = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "status": {"versions": versions,
                   "conditions": [condition("Available", "True", "AsExpected", ""),
                                  condition("Degraded", "False", "AsExpected", "")]}});
    api.patch_status(name, &params, &Patch::Apply(&status))
        .await?;
    Ok(())
}

pub async fn status(ctx: &Ctx<'_>) -> anyhow::Result<ClusterVersionStatus> {
    let api: Api<ClusterVersion> = Api::all(ctx.admin.clone());
    api.get_status("version")
        .await?
        .status
        .context("no ClusterVersion status")
}

pub fn condition_of(status: &ClusterVersionStatus, type_: &str) -> (String, String) {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map_or((String::new(), "<absent>".into()), |c| {
            (c.status.clone(), c.message.clone().unwrap_or_default())
        })
}

pub fn check_condition(
    status: &ClusterVersionStatus,
    type_: &str,
    want: (&str, &str),
) -> anyhow::Result<()> {
    let got = condition_of(status, type_);
    ensure!(
        (got.0.as_str(), got.1.as_str()) == want,
        "{type_}: {got:?}, want {want:?}"
    );
    Ok(())
}

/// A fresh ClusterVersion `version` with baseline None (status starts empty).
pub async fn reset_cluster_version(ctx: &Ctx<'_>) -> anyhow::Result<Api<ClusterVersion>> {
    install_crds(&ctx.admin).await?;
    install_foreign_crds(ctx).await?;
    let api: Api<ClusterVersion> = Api::all(ctx.admin.clone());
    if api.get_opt("version").await?.is_some() {
        api.delete("version", &DeleteParams::default()).await?;
    }
    Ok(api)
}

/// (a) Install with baseline None: the loop waits for the ClusterVersion, applies the payload
/// without any capability, and reports the complete status; then stops on request.
pub async fn start_installs_with_baseline_none(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let api = reset_cluster_version(ctx).await?;
    let options = options()?;
    mark_healthy(ctx, &options.payload, "etcd").await?;
    let (tx, rx) = watch::channel(false);
    let t0 = std::time::Instant::now();
    let driver = async {
        // The loop is already waiting: the ClusterVersion appears later.
        tokio::time::sleep(Duration::from_millis(300)).await;
        api.create(
            &PostParams::default(),
            &ClusterVersion::new("version", spec(&[])),
        )
        .await?;
        loop {
            let done = api
                .get_status("version")
                .await?
                .status
                .is_some_and(|s| s.history.first().is_some_and(|h| h.state == "Completed"));
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tx.send(true)?;
        anyhow::Ok(())
    };
    let (ran, drove) = tokio::join!(run(&ctx.admin, &options, rx), driver);
    drove?;
    ran?;
    eprintln!(
        "  install to Completed and shutdown in {:.2}s",
        t0.elapsed().as_secs_f64()
    );

    let s = status(ctx).await?;
    check_condition(&s, "Available", ("True", "Done applying 4.18.0"))?;
    check_condition(&s, "Progressing", ("False", "Cluster version is 4.18.0"))?;
    check_condition(&s, "Failing", ("False", ""))?;
    check_condition(
        &s,
        "ImplicitlyEnabledCapabilities",
        ("False", "Capabilities match configured spec"),
    )?;
    // No spec.upstream and no default update service: upstream checks the upstream first.
    check_condition(
        &s,
        "RetrievedUpdates",
        (
            "False",
            "No updateService server has been set to retrieve updates.",
        ),
    )?;
    let accepted = condition_of(&s, "ReleaseAccepted");
    ensure!(
        accepted.0 == "True"
            && accepted
                .1
                .starts_with("Payload loaded version=\"4.18.0\" image=\""),
        "{accepted:?}"
    );
    ensure!(
        s.history[0].state == "Completed" && s.history[0].version.as_deref() == Some("4.18.0"),
        "{:?}",
        s.history
    );
    ensure!(s.history[0].completion_time.is_some(), "{:?}", s.history);
    ensure!(
        s.version_hash.as_deref().is_some_and(|h| !h.is_empty()),
        "versionHash"
    );
    let caps = s.capabilities.clone().context("no status.capabilities")?;
    ensure!(caps.enabled_capabilities.is_empty(), "{caps:?}");
    // openshift/api's 17, and the DeploymentTargets, AgentInstall and EdgeAgent capabilities the bundled
    // payload declares.
    ensure!(caps.known_capabilities.len() == 20, "{caps:?}");
    ensure!(
        caps.known_capabilities
            .contains(&Capability::new("DeploymentTargets")),
        "{caps:?}"
    );
    let mut sorted = caps.known_capabilities.clone();
    sorted.sort();
    ensure!(sorted == caps.known_capabilities, "not byte-sorted");

    let discovery = Discovery::new(ctx.admin.clone()).run().await?;
    for m in &options.payload.manifests {
        if m.annotation(CAPABILITY).is_some() {
            ensure!(
                !exists(ctx, &discovery, m).await?,
                "{} exists",
                m.describe()
            );
        }
    }

    // A reconcile pass changes nothing, so the status is not written.
    let mut state = SyncState::default();
    let pass = clean_pass(&ctx.admin, &options, &mut state).await?;
    ensure!(!pass.status_written, "an unchanged status was written");
    ensure!(status(ctx).await? == s, "status changed");
    Ok(())
}

/// (b) Enabling Console after install creates its objects; removing it again keeps them and
/// reports it as implicitly enabled.
pub async fn start_enables_then_keeps_a_capability(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let api = reset_cluster_version(ctx).await?;
    let mut options = options()?;
    options.once = true;
    mark_healthy(ctx, &options.payload, "etcd").await?;
    let co: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    if co.get_opt("console").await?.is_some() {
        co.delete("console", &DeleteParams::default()).await?;
    }
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec(&[])),
    )
    .await?;
    let mut state = SyncState::default();
    clean_pass(&ctx.admin, &options, &mut state).await?;

    let set_spec = |additional: &'static [&'static str]| {
        let api = api.clone();
        async move {
            let patch = json!({"spec": {"capabilities": {"baselineCapabilitySet": "None",
                                        "additionalEnabledCapabilities": additional}}});
            api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }
    };
    set_spec(&["Console"]).await?;
    // The console operator does not run: the pass pre-creates its ClusterOperator and fails
    // waiting on it.
    let pass = sync_once(&ctx.admin, &options, &mut state).await?;
    let reasons: Vec<_> = pass.report.errors.iter().map(|e| &e.reason).collect();
    ensure!(
        reasons == ["ClusterOperatorNotAvailable"],
        "{:#?}",
        pass.report.errors
    );
    ensure!(co.get_opt("console").await?.is_some(), "not pre-created");
    let s = status(ctx).await?;
    check_condition(
        &s,
        "Failing",
        ("True", "Cluster operator console is not available"),
    )?;
    check_condition(
        &s,
        "Progressing",
        (
            "False",
            "Error while reconciling 4.18.0: the cluster operator console is not available",
        ),
    )?;

    mark_healthy(ctx, &options.payload, "console").await?;
    clean_pass(&ctx.admin, &options, &mut state).await?;
    let discovery = Discovery::new(ctx.admin.clone()).run().await?;
    let console: Vec<_> = (options.payload.manifests.iter())
        .filter(|m| m.annotation(CAPABILITY) == Some("Console"))
        .filter(|m| {
            m.annotation(&format!("include.release.openshift.io/{PROFILE}")) == Some("true")
        })
        .collect();
    ensure!(!console.is_empty(), "no Console manifests in the payload");
    for m in &console {
        ensure!(
            exists(ctx, &discovery, m).await?,
            "{} was not created",
            m.describe()
        );
    }
    let s = status(ctx).await?;
    check_condition(&s, "Failing", ("False", ""))?;
    let enabled = s
        .capabilities
        .clone()
        .unwrap_or_default()
        .enabled_capabilities;
    ensure!(enabled == [Capability::new("Console")], "{enabled:?}");

    // Disabling is impossible: a fresh operator (prior capabilities read from the status, as
    // after a restart) keeps Console.
    set_spec(&[]).await?;
    run(&ctx.admin, &options, watch::channel(false).1).await?;
    for m in &console {
        ensure!(
            exists(ctx, &discovery, m).await?,
            "{} was deleted",
            m.describe()
        );
    }
    let s = status(ctx).await?;
    let enabled = s
        .capabilities
        .clone()
        .unwrap_or_default()
        .enabled_capabilities;
    ensure!(enabled == [Capability::new("Console")], "{enabled:?}");
    check_condition(
        &s,
        "ImplicitlyEnabledCapabilities",
        (
            "True",
            "The following capabilities could not be disabled: Console",
        ),
    )?;
    check_condition(&s, "Failing", ("False", ""))?;
    // The long-running operator's in-memory state agrees.
    let pass = clean_pass(&ctx.admin, &options, &mut state).await?;
    ensure!(!pass.status_written, "status changed: {:?}", pass.status);
    Ok(())
}

/// `cvo start` as a process: `--once` runs one pass and exits 0; without it the loop stops
/// cleanly on SIGTERM.
pub async fn start_command(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    // Self-contained: the ClusterVersion and the Lease's namespace exist, as in a cluster.
    fresh_install(ctx, &options()?).await?;
    cvo_namespace(ctx).await?;
    let command = |extra: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"));
        c.arg("start")
            .args(extra)
            .arg("--kubeconfig")
            .arg(ctx.cluster.kubeconfig())
            .args(["--listen", ""])
            .env("CLUSTER_PROFILE", PROFILE)
            .env_remove("EXCLUDE_MANIFESTS");
        c
    };
    let out = command(&["--once", "--log-format", "json"]).output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(out.status.success(), "{:?}: {stderr}", out.status);
    // Structured logs: one JSON object per line, the pass summary among them.
    let lines: Vec<serde_json::Value> = (stderr.lines())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .with_context(|| format!("not JSON lines: {stderr}"))?;
    ensure!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "pass finished" && l["fields"]["done"].is_number()),
        "no pass summary: {stderr}"
    );
    let s = status(ctx).await?;
    check_condition(&s, "Available", ("True", "Done applying 4.18.0"))?;

    let mut child = command(&["--resync-interval", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    ensure!(killed.success(), "kill failed");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(code) = child.try_wait()? {
            break code;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            anyhow::bail!("cvo start did not stop on SIGTERM");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    ensure!(code.success(), "exit status after SIGTERM: {code:?}");
    Ok(())
}

/// GETs `path` over HTTP/1.0; (status code, body).
async fn http_get(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let code = (response.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("not an HTTP response: {response:?}"))?;
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((code, body))
}

/// A fresh ClusterVersion (baseline None) with etcd healthy.
pub async fn fresh_install(ctx: &Ctx<'_>, options: &RunOptions) -> anyhow::Result<()> {
    let api = reset_cluster_version(ctx).await?;
    mark_healthy(ctx, &options.payload, "etcd").await?;
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec(&[])),
    )
    .await?;
    Ok(())
}

/// `/healthz` serves at once, `/readyz` turns 200 after the first pass, `/metrics` has one
/// `cluster_version_capability` per known capability and the pass's counts and duration.
pub async fn start_serves_metrics_and_readyz(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let mut options = options()?;
    fresh_install(ctx, &options).await?;
    let metrics = Arc::new(Metrics::new());
    options.metrics = Some(metrics.clone());
    let (listener, addr) = bind("127.0.0.1:0".parse()?).await?;
    let (tx, rx) = watch::channel(false);
    let server = tokio::spawn(serve(listener, metrics.clone(), rx.clone()));
    ensure!(http_get(addr, "/healthz").await?.0 == 200, "healthz");
    ensure!(
        http_get(addr, "/readyz").await?.0 == 503,
        "ready before a pass"
    );
    let driver = async {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while http_get(addr, "/readyz").await?.0 != 200 {
            ensure!(std::time::Instant::now() < deadline, "not ready after 30s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (code, text) = http_get(addr, "/metrics").await?;
        tx.send(true)?;
        anyhow::Ok((code, text))
    };
    let (ran, scraped) = tokio::join!(run(&ctx.admin, &options, rx), driver);
    ran?;
    let (code, text) = scraped?;
    server.await?;
    ensure!(code == 200, "/metrics: {code}");
    let capabilities: Vec<_> = (text.lines())
        .filter(|l| l.starts_with("cluster_version_capability{"))
        .collect();
    // openshift/api's 17 and the payload's DeploymentTargets, AgentInstall and EdgeAgent.
    ensure!(capabilities.len() == 20, "{capabilities:#?}");
    ensure!(
        capabilities.iter().all(|l| l.ends_with(" 0")),
        "baseline None enables nothing: {capabilities:#?}"
    );
    ensure!(
        text.contains(r#"cluster_version_capability{name="Console"} 0"#),
        "{text}"
    );
    ensure!(
        text.contains(r#"cvo_apply_tasks_total{result="done"}"#),
        "{text}"
    );
    ensure!(text.contains("cvo_apply_duration_seconds_count"), "{text}");
    // Upstream's cluster series: the version being applied, and the cluster's creation.
    let current = (text.lines())
        .find(|l| l.starts_with(r#"cluster_version{type="current",version="4.18.0""#));
    ensure!(current.is_some(), "{text}");
    ensure!(
        text.contains(r#"cluster_version{type="cluster",version="4.18.0""#),
        "{text}"
    );
    ensure!(
        text.contains(r#"cluster_version{type="initial",version="4.18.0""#),
        "{text}"
    );
    Ok(())
}

async fn lease_holder(ctx: &Ctx<'_>) -> anyhow::Result<Option<String>> {
    use k8s_openapi::api::coordination::v1::Lease;
    let api: Api<Lease> = Api::namespaced(ctx.admin.clone(), "openshift-cluster-version");
    Ok(api
        .get_opt("version")
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty()))
}

async fn wait_until(what: &str, secs: u64, mut check: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while !check() {
        ensure!(
            std::time::Instant::now() < deadline,
            "{what}: not within {secs}s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Namespace `openshift-cluster-version`, where the Lease lives.
pub async fn cvo_namespace(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Namespace;
    let api: Api<Namespace> = Api::all(ctx.admin.clone());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "openshift-cluster-version"}});
    api.patch(
        "openshift-cluster-version",
        &PatchParams::apply("cvo-test").force(),
        &Patch::Apply(&ns),
    )
    .await?;
    Ok(())
}

/// Two replicas: A takes an expired Lease over and applies, B waits; when A stops (and
/// releases), B takes over within seconds.
pub async fn start_leader_election_hands_over(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::coordination::v1::Lease;
    let base = options()?;
    fresh_install(ctx, &base).await?;
    cvo_namespace(ctx).await?;
    // A dead holder's lease, renewed a minute ago with a 3 s duration: expired.
    let leases: Api<Lease> = Api::namespaced(ctx.admin.clone(), "openshift-cluster-version");
    if leases.get_opt("version").await?.is_some() {
        leases.delete("version", &DeleteParams::default()).await?;
    }
    let stale =
        k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_secs(60);
    leases
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "version"},
                "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 3,
                         "renewTime": stale.to_string(), "acquireTime": stale.to_string()}}))?,
        )
        .await?;
    let replica = |identity: &str| {
        let metrics = Arc::new(Metrics::new());
        let options = RunOptions {
            lease: Some(LeaseConfig {
                lease_duration: Duration::from_secs(3),
                renew_interval: Duration::from_millis(500),
                ..LeaseConfig::new(identity)
            }),
            metrics: Some(metrics.clone()),
            resync_interval: Duration::from_millis(500),
            ..base.clone()
        };
        let (tx, rx) = watch::channel(false);
        let client = ctx.admin.clone();
        let task = tokio::spawn(async move { run(&client, &options, rx).await });
        (metrics, tx, task)
    };
    let (a_metrics, a_stop, a_task) = replica("cvo-a");
    wait_until("A applies", 30, || a_metrics.is_ready()).await?;
    ensure!(
        lease_holder(ctx).await?.as_deref() == Some("cvo-a"),
        "holder"
    );
    let (b_metrics, b_stop, b_task) = replica("cvo-b");
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(!b_metrics.is_ready(), "B applied while A holds the lease");
    ensure!(
        lease_holder(ctx).await?.as_deref() == Some("cvo-a"),
        "holder"
    );

    a_stop.send(true)?;
    a_task.await??;
    let stopped = std::time::Instant::now();
    wait_until("B takes over", 10, || b_metrics.is_ready()).await?;
    eprintln!(
        "  B took over {:.2}s after A stopped",
        stopped.elapsed().as_secs_f64()
    );
    ensure!(
        lease_holder(ctx).await?.as_deref() == Some("cvo-b"),
        "holder"
    );
    b_stop.send(true)?;
    b_task.await??;
    ensure!(lease_holder(ctx).await?.is_none(), "B did not release");
    Ok(())
}

/// The operator runs as its own ServiceAccount `openshift-cluster-version/cluster-version-operator`
/// with a token from the TokenRequest API, authorized only by the payload's own RBAC
/// (`0000_00_cluster-version-operator_03_roles.yaml`, applied by an admin's install pass, as the
/// installer's bootstrap does): a full pass, then the loop with leader election.
pub async fn start_as_restricted_user(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::ServiceAccount;
    let mut options = options()?;
    fresh_install(ctx, &options).await?;
    let install = sync_once(&ctx.admin, &options, &mut SyncState::default()).await?;
    ensure!(install.report.is_success(), "{:#?}", install.report.errors);

    let accounts: Api<ServiceAccount> =
        Api::namespaced(ctx.admin.clone(), "openshift-cluster-version");
    let restricted = ctx
        .cluster
        .service_account_client(&accounts, "cluster-version-operator")
        .await?;
    // Not an admin: the token only has what the payload's roles grant.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(restricted.clone(), "kube-system");
    ensure!(
        matches!(secrets.list(&Default::default()).await, Err(kube::Error::Api(s)) if s.code == 403),
        "the ServiceAccount can list kube-system secrets"
    );
    // What a node pulls a release with: the pull secret (that Secret alone) and the mirror sets.
    let config_secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(restricted.clone(), "openshift-config");
    config_secrets.get_opt("pull-secret").await?;
    ensure!(
        matches!(config_secrets.list(&Default::default()).await, Err(kube::Error::Api(s)) if s.code == 403),
        "the ServiceAccount can list openshift-config secrets"
    );
    cvo::cluster::mirror_sets::digest_mirrors(&restricted).await?;

    let mut state = SyncState::default();
    let pass = sync_once(&restricted, &options, &mut state).await?;
    ensure!(
        pass.report.is_success() && pass.report.errors.is_empty(),
        "{:#?}",
        pass.report.errors
    );
    ensure!(pass.report.done > 0, "{:?}", pass.report);

    // The whole loop too: leader election, one pass, release.
    let metrics = Arc::new(Metrics::new());
    options.once = true;
    options.metrics = Some(metrics.clone());
    options.lease = Some(LeaseConfig {
        renew_interval: Duration::from_millis(500),
        ..LeaseConfig::new("cvo-restricted")
    });
    run(&restricted, &options, watch::channel(false).1).await?;
    ensure!(metrics.is_ready(), "the restricted pass did not complete");
    let text = metrics.encode();
    ensure!(
        text.contains(r#"cvo_apply_tasks_total{result="error"} 0"#),
        "{text}"
    );
    let s = status(ctx).await?;
    check_condition(&s, "Available", ("True", "Done applying 4.18.0"))?;
    check_condition(&s, "Failing", ("False", ""))?;
    Ok(())
}

/// Overrides (spec §6): an `unmanaged` Deployment is left as someone else set it and the
/// cluster reports `Upgradeable=False` with upstream's reason and message; once the override is
/// removed, the next pass takes the Deployment back and the condition goes away.
pub async fn start_honours_overrides(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::apps::v1::Deployment;
    let options = options()?;
    fresh_install(ctx, &options).await?;
    let mut state = SyncState::default();
    clean_pass(&ctx.admin, &options, &mut state).await?;

    let cv: Api<ClusterVersion> = Api::all(ctx.admin.clone());
    let set_overrides = |unmanaged: bool| {
        let cv = cv.clone();
        async move {
            let overrides = if unmanaged {
                json!([{"kind": "Deployment", "group": "apps", "namespace": "openshift-etcd-operator",
                        "name": "etcd-operator", "unmanaged": true}])
            } else {
                json!(null)
            };
            let patch = json!({"spec": {"overrides": overrides}});
            cv.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }
    };
    let deployments: Api<Deployment> =
        Api::namespaced(ctx.admin.clone(), "openshift-etcd-operator");
    let replicas = || async {
        anyhow::Ok(
            deployments
                .get("etcd-operator")
                .await?
                .spec
                .and_then(|s| s.replicas),
        )
    };
    let scale = json!({"spec": {"replicas": 3}});

    set_overrides(true).await?;
    deployments
        .patch(
            "etcd-operator",
            &PatchParams::default(),
            &Patch::Merge(&scale),
        )
        .await?;
    clean_pass(&ctx.admin, &options, &mut state).await?;
    ensure!(
        replicas().await? == Some(3),
        "the unmanaged Deployment was applied"
    );
    let s = status(ctx).await?;
    let upgradeable = s
        .conditions
        .iter()
        .find(|c| c.type_ == "Upgradeable")
        .context("no Upgradeable condition")?;
    ensure!(
        upgradeable.status == "False"
            && upgradeable.reason.as_deref() == Some("ClusterVersionOverrides")
            && upgradeable.message.as_deref()
                == Some(
                    "Disabling ownership via cluster version overrides prevents updates between minor or major versions. Please remove overrides before requesting a minor or major version update."
                ),
        "{upgradeable:?}"
    );

    set_overrides(false).await?;
    clean_pass(&ctx.admin, &options, &mut state).await?;
    ensure!(
        replicas().await? == Some(1),
        "the Deployment was not taken back"
    );
    let s = status(ctx).await?;
    ensure!(
        !s.conditions.iter().any(|c| c.type_ == "Upgradeable"),
        "{:?}",
        s.conditions
    );
    Ok(())
}

/// The loop acts on a spec change at once (a watch), not at the next resync; and a pass that
/// outlives `pass_timeout` is cancelled and counted as an error, the loop going on.
pub async fn start_wakes_on_spec_change_and_bounds_passes(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let mut options = options()?;
    fresh_install(ctx, &options).await?;
    options.resync_interval = Duration::from_secs(60);
    let api: Api<ClusterVersion> = Api::all(ctx.admin.clone());
    let (tx, rx) = watch::channel(false);
    let driver = async {
        wait_for_status(ctx, "the install", |s| {
            s.history.first().is_some_and(|h| h.state == "Completed")
        })
        .await?;
        let patch = json!({"spec": {"channel": "stable-4.18"}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let t0 = std::time::Instant::now();
        wait_for_status(ctx, "the channel change", |s| {
            condition_of(s, "RetrievedUpdates").1
                == "No updateService server has been set to retrieve updates."
        })
        .await?;
        eprintln!(
            "  spec change acted on after {:.2}s (resync 60 s)",
            t0.elapsed().as_secs_f64()
        );
        tx.send(true)?;
        anyhow::Ok(())
    };
    let (ran, drove) = tokio::join!(run(&ctx.admin, &options, rx), driver);
    drove?;
    ran?;

    let metrics = Arc::new(Metrics::new());
    options.once = true;
    options.pass_timeout = Duration::from_millis(1);
    options.metrics = Some(metrics.clone());
    // With --once a pass that did not finish is the run's failure (exit 1).
    let error = run(&ctx.admin, &options, watch::channel(false).1)
        .await
        .err()
        .context("a cancelled --once pass succeeded")?;
    ensure!(
        format!("{error:#}")
            == "the pass failed: the pass did not finish within 0.001s; its remaining tasks were cancelled",
        "{error:#}"
    );
    ensure!(metrics.passes("error") == 1, "{}", metrics.encode());
    Ok(())
}

/// Polls the ClusterVersion status (every 50 ms, at most 10 s) until `done` holds.
async fn wait_for_status(
    ctx: &Ctx<'_>,
    what: &str,
    mut done: impl FnMut(&ClusterVersionStatus) -> bool,
) -> anyhow::Result<()> {
    let api: Api<ClusterVersion> = Api::all(ctx.admin.clone());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let status = api.get_status("version").await?.status.unwrap_or_default();
        if done(&status) {
            return Ok(());
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "{what} did not show in the status within 10 s: {:?}",
            status.conditions
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A token for a new ServiceAccount `default/NAME` bound to a ClusterRole of `rules`.
async fn service_account_token(
    ctx: &Ctx<'_>,
    name: &str,
    rules: serde_json::Value,
) -> anyhow::Result<kube::Client> {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let params = PatchParams::apply("cvo-test").force();
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.admin.clone(), "default");
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                         "metadata": {"name": name, "namespace": "default"}});
    accounts
        .patch(name, &params, &Patch::Apply(&account))
        .await?;
    let roles: Api<ClusterRole> = Api::all(ctx.admin.clone());
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": name}, "rules": rules});
    roles.patch(name, &params, &Patch::Apply(&role)).await?;
    let bindings: Api<ClusterRoleBinding> = Api::all(ctx.admin.clone());
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]});
    bindings
        .patch(name, &params, &Patch::Apply(&binding))
        .await?;
    ctx.cluster.service_account_client(&accounts, name).await
}

/// A cluster without the Lease's namespace: an operator allowed to creates it and runs; one
/// that is not stops at once with one error that says what to do, instead of waiting forever.
pub async fn start_creates_or_explains_the_lease_namespace(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::Namespace;
    let mut options = options()?;
    fresh_install(ctx, &options).await?;
    options.once = true;
    let created = "cvo-test-lease-created";
    options.lease = Some(LeaseConfig {
        namespace: created.into(),
        renew_interval: Duration::from_millis(200),
        ..LeaseConfig::new("cvo-admin")
    });
    run(&ctx.admin, &options, watch::channel(false).1).await?;
    let namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    ensure!(
        namespaces.get_opt(created).await?.is_some(),
        "namespace not created"
    );
    let leases: Api<Lease> = Api::namespaced(ctx.admin.clone(), created);
    ensure!(leases.get_opt("version").await?.is_some(), "no lease");

    // May write leases anywhere, but not create namespaces.
    let lease_only = service_account_token(
        ctx,
        "cvo-lease-only",
        json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                "verbs": ["get", "create", "update"]}]),
    )
    .await?;
    let missing = "cvo-test-lease-missing";
    options.lease = Some(LeaseConfig {
        namespace: missing.into(),
        renew_interval: Duration::from_millis(200),
        ..LeaseConfig::new("cvo-lease-only")
    });
    let started = std::time::Instant::now();
    let ended = tokio::time::timeout(
        Duration::from_secs(20),
        run(&lease_only, &options, watch::channel(false).1),
    )
    .await
    .context("still waiting for the lease after 20 s")?;
    let error = format!(
        "{:#}",
        ended.err().context("run succeeded without a lease")?
    );
    ensure!(
        error.starts_with(&format!(
            "the Lease {missing}/version cannot be created: namespace {missing} does not exist and this user may not create it ("
        )) && error.contains(&format!("kubectl create namespace {missing}"))
            && error.contains("--disable-leader-election"),
        "{error}"
    );
    ensure!(
        namespaces.get_opt(missing).await?.is_none(),
        "created anyway"
    );
    println!(
        "  missing lease namespace reported after {:.2?}",
        started.elapsed()
    );
    Ok(())
}

/// A payload component as `cvo start` installs it: its capability, namespace, one of its CRDs,
/// its ServiceAccount (the controller runs as it), Lease, ClusterOperator, and how to run it.
pub struct ComponentCase {
    pub capability: &'static str,
    pub namespace: &'static str,
    pub crd: &'static str,
    pub service_account: &'static str,
    pub operator: &'static str,
    /// A controller whose reconciles must not have failed.
    pub controller: &'static str,
    pub run: RunController,
}

/// Starts a component's controller (`run_component` on a task).
pub type RunController =
    fn(
        kube::Client,
        cvo::host::controller::HostOptions,
        Arc<cvo::host::controller::ControllerMetrics>,
        watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<Result<(), cvo::host::controller::HostError>>;

/// The DeploymentTarget component of the bundled payload through `cvo start`: absent while its
/// capability is off; enabling it installs it, and its controller, run as the component's own
/// ServiceAccount with the payload's RBAC, brings its ClusterOperator up so the pass completes;
/// disabling it afterwards keeps it, with upstream's condition.
pub async fn start_installs_the_deployment_targets_component(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    start_installs_component(ctx, deployment_targets_case()).await
}

/// The DeploymentTarget component's case.
pub fn deployment_targets_case() -> ComponentCase {
    use cvo::components::deployment_targets::controller::{DeploymentTargets, Settings};
    use cvo::components::deployment_targets::model::NamespaceProvisionerSettings;
    ComponentCase {
        capability: "DeploymentTargets",
        namespace: "cvo-deployment-targets",
        crd: "deploymenttargets.appstudio.redhat.com",
        service_account: "deployment-targets",
        operator: "deployment-targets",
        controller: "claims",
        run: |client, host, metrics, stopped| {
            let settings = Settings {
                version: "0.0.1-snapshot".into(),
                namespace_provisioner: NamespaceProvisionerSettings {
                    server: "https://kubernetes.default.svc".into(),
                    certificate_authority_data: None,
                },
                insecure_provisioned_targets: false,
                status_interval: Duration::from_secs(2),
                webhook: None,
            };
            let component = Arc::new(DeploymentTargets { settings });
            tokio::spawn(cvo::host::controller::run_component(
                client, component, host, metrics, stopped,
            ))
        },
    }
}

/// The agent late-binding component, the same way (its controller as the payload's
/// ServiceAccount `agents`, with the payload's least-privilege RBAC).
pub async fn start_installs_the_agents_component(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use cvo::components::agents::controller::{Agents, Settings};
    let case = ComponentCase {
        capability: "AgentInstall",
        namespace: "cvo-agents",
        crd: "agents.agent-install.openshift.io",
        service_account: "agents",
        operator: "agent-install",
        controller: "agents",
        run: |client, host, metrics, stopped| {
            let settings = Settings {
                version: "0.0.1-snapshot".into(),
                status_interval: Duration::from_secs(2),
                webhook: None,
                requirements: Default::default(),
                reclaim: false,
                reclaim_timeout: Duration::from_secs(3600),
            };
            let component = Arc::new(Agents::new(settings));
            tokio::spawn(cvo::host::controller::run_component(
                client, component, host, metrics, stopped,
            ))
        },
    };
    start_installs_component(ctx, case).await
}

async fn start_installs_component(ctx: &Ctx<'_>, case: ComponentCase) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let api = reset_cluster_version(ctx).await?;
    let mut options = options()?;
    options.once = true;
    mark_healthy(ctx, &options.payload, "etcd").await?;
    let co: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec(&[])),
    )
    .await?;
    let mut state = SyncState::default();
    clean_pass(&ctx.admin, &options, &mut state).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.admin.clone());
    let namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    ensure!(crds.get_opt(case.crd).await?.is_none());
    ensure!(namespaces.get_opt(case.namespace).await?.is_none());
    ensure!(co.get_opt(case.operator).await?.is_none());

    let set_spec = |additional: Vec<&'static str>| {
        let api = api.clone();
        async move {
            let patch = json!({"spec": {"capabilities": {"baselineCapabilitySet": "None",
                                        "additionalEnabledCapabilities": additional}}});
            api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }
    };
    set_spec(vec![case.capability]).await?;
    // Its controller does not run yet: the pass installs everything up to the ClusterOperator,
    // then waits on it.
    let pass = sync_once(&ctx.admin, &options, &mut state).await?;
    let reasons: Vec<_> = pass.report.errors.iter().map(|e| &e.reason).collect();
    ensure!(
        reasons == ["ClusterOperatorNotAvailable"],
        "{:#?}",
        pass.report.errors
    );
    ensure!(crds.get_opt(case.crd).await?.is_some());

    let lease = Some(LeaseConfig::named(
        case.namespace,
        case.service_account,
        "test-replica",
    ));
    let running = run_as_service_account(ctx, &case, lease).await?;
    wait_for_available(&co, case.operator).await?;
    clean_pass(&ctx.admin, &options, &mut state).await?;
    let s = status(ctx).await?;
    let enabled = s
        .capabilities
        .clone()
        .unwrap_or_default()
        .enabled_capabilities;
    ensure!(
        enabled.contains(&Capability::new(case.capability)),
        "{enabled:?}"
    );

    // Disabling keeps it (a fresh operator reads the prior capabilities from the status).
    set_spec(vec![]).await?;
    run(&ctx.admin, &options, watch::channel(false).1).await?;
    ensure!(crds.get_opt(case.crd).await?.is_some());
    let s = status(ctx).await?;
    let message = format!(
        "The following capabilities could not be disabled: {}",
        case.capability
    );
    check_condition(&s, "ImplicitlyEnabledCapabilities", ("True", &message))?;
    running.stop(case.controller).await
}

/// A component's controller running in this process as the payload's ServiceAccount: the
/// payload's RBAC is all it has.
pub struct RunningController {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<(), cvo::host::controller::HostError>>,
    pub metrics: Arc<cvo::host::controller::ControllerMetrics>,
}

impl RunningController {
    /// Stops it; it must stop cleanly, none of `controller`'s reconciles having failed.
    pub async fn stop(self, controller: &'static str) -> anyhow::Result<()> {
        let _ = self.stop.send(true);
        match tokio::time::timeout(Duration::from_secs(30), self.task).await {
            Ok(Ok(Ok(()))) => {}
            other => anyhow::bail!("the controller did not stop cleanly: {other:?}"),
        }
        let errors = self.metrics.reconciles(controller, "error");
        ensure!(errors == 0, "{errors} reconcile(s) of {controller} failed");
        Ok(())
    }
}

/// Starts `case`'s controller as its ServiceAccount (with leader election on `lease`).
pub async fn run_as_service_account(
    ctx: &Ctx<'_>,
    case: &ComponentCase,
    lease: Option<LeaseConfig>,
) -> anyhow::Result<RunningController> {
    use cvo::host::controller::{ControllerMetrics, HostOptions};
    use k8s_openapi::api::core::v1::ServiceAccount;
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.admin.clone(), case.namespace);
    let client = ctx
        .cluster
        .service_account_client(&accounts, case.service_account)
        .await?;
    let host = HostOptions {
        listen: "127.0.0.1:0".parse()?,
        lease,
    };
    let metrics = Arc::new(ControllerMetrics::new());
    let (stop, stopped) = watch::channel(false);
    let task = (case.run)(client, host, metrics.clone(), stopped);
    Ok(RunningController {
        stop,
        task,
        metrics,
    })
}

/// Waits until the ClusterOperator `name` is Available=True.
pub async fn wait_for_available(co: &Api<ClusterOperator>, name: &str) -> anyhow::Result<()> {
    for _ in 0..150 {
        if let Some(op) = co.get_opt(name).await? {
            let available = (op.status.iter().flat_map(|s| s.conditions.iter()))
                .any(|c| c.type_ == "Available" && c.status == "True");
            if available {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    anyhow::bail!("ClusterOperator {name} did not become Available")
}

/// One pass, a moment after the last (the update service is asked at most once per resync
/// interval): `RetrievedUpdates` (status, message) and the available versions.
async fn updates_pass(
    ctx: &Ctx<'_>,
    options: &RunOptions,
    state: &mut SyncState,
) -> anyhow::Result<((String, String), Vec<String>)> {
    tokio::time::sleep(Duration::from_millis(150)).await;
    sync_once(&ctx.admin, options, state).await?;
    let s = status(ctx).await?;
    let versions = (s.available_updates.iter().flatten())
        .filter_map(|r| r.version.clone())
        .collect();
    Ok((condition_of(&s, "RetrievedUpdates"), versions))
}

/// The update service reached as upstream's CVO reaches it (issue 12): an HTTPS service on
/// 127.0.0.1 whose CA is only in the ConfigMap the Proxy `cluster`'s `spec.trustedCA` names is
/// refused until that Proxy exists, then trusted; an upstream on a host that does not resolve
/// is reached through the Proxy's `status.httpProxy`, unless `status.noProxy` names it.
pub async fn start_reaches_the_update_service_through_the_cluster_proxy(
    ctx: &Ctx<'_>,
) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

    use super::update_service_support::{Reply, UpdateService, graph};

    let body = graph(
        &[
            ("4.18.0", "quay.io/r@sha256:00"),
            ("4.18.1", "quay.io/r@sha256:01"),
        ],
        &[(0, 1)],
        json!([]),
    );
    let (cert, _) = cvo::host::webhook::make_certificate(
        &["localhost".to_string()],
        k8s_openapi::jiff::Timestamp::now(),
    )?;
    let graph_body = body.clone();
    let secure = UpdateService::start_tls(move |_| Reply::Graph(graph_body.clone()), &cert).await;
    let relay = UpdateService::start(move |_| Reply::Graph(body.clone())).await;
    let secure_url = secure.url.replace("127.0.0.1", "localhost");
    let relay_addr = relay
        .url
        .split('/')
        .nth(2)
        .context("the relay's address")?
        .to_string();

    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "Proxy");
    let proxies: Api<DynamicObject> = Api::all_with(
        ctx.admin.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, "proxies"),
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), "openshift-config");
    let cleanup = || async {
        for result in [
            proxies
                .delete("cluster", &DeleteParams::default())
                .await
                .map(|_| ()),
            config_maps
                .delete("update-service-ca", &DeleteParams::default())
                .await
                .map(|_| ()),
        ] {
            match result {
                Ok(()) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(anyhow::Error::from(e)),
            }
        }
        anyhow::Ok(())
    };
    cleanup().await?;
    let result = async {
        let options = options()?;
        let api = reset_cluster_version(ctx).await?;
        mark_healthy(ctx, &options.payload, "etcd").await?;
        let spec = ClusterVersionSpec {
            channel: Some("stable-4.18".into()),
            upstream: Some(secure_url.clone()),
            ..spec(&[])
        };
        api.create(
            &PostParams::default(),
            &ClusterVersion::new("version", spec),
        )
        .await?;
        let mut state = SyncState::default();

        // The CA is nowhere the operator looks: the service is not trusted.
        let ((retrieved, message), _) = updates_pass(ctx, &options, &mut state).await?;
        ensure!(
            retrieved == "False"
                && message.starts_with(&format!(
                    "Unable to retrieve available updates: Get \"{secure_url}?"
                )),
            "{retrieved} {message}"
        );

        // The Proxy names the ConfigMap with the CA: trusted.
        let ca = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "update-service-ca", "namespace": "openshift-config"},
                        "data": {"ca-bundle.crt": cert.ca}});
        config_maps
            .create(&PostParams::default(), &serde_json::from_value(ca)?)
            .await?;
        let proxy = json!({"apiVersion": "config.openshift.io/v1", "kind": "Proxy",
                           "metadata": {"name": "cluster"},
                           "spec": {"trustedCA": {"name": "update-service-ca"}}});
        proxies
            .create(&PostParams::default(), &serde_json::from_value(proxy)?)
            .await?;
        let ((retrieved, message), versions) = updates_pass(ctx, &options, &mut state).await?;
        ensure!(
            retrieved == "True" && versions == ["4.18.1"],
            "{retrieved} {message} {versions:?}"
        );

        // An upstream only the proxy can reach.
        let hidden = "http://update-service.invalid/api/upgrades_info/v1/graph";
        let patch = json!({"spec": {"upstream": hidden}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let ((retrieved, _), _) = updates_pass(ctx, &options, &mut state).await?;
        ensure!(retrieved == "False", "no proxy yet");
        let status = json!({"status": {"httpProxy": format!("http://{relay_addr}")}});
        proxies
            .patch("cluster", &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        let ((retrieved, message), versions) = updates_pass(ctx, &options, &mut state).await?;
        ensure!(
            retrieved == "True" && versions == ["4.18.1"],
            "{retrieved} {message} {versions:?}"
        );
        let seen = relay.seen();
        ensure!(
            seen.iter()
                .any(|r| r.host.as_deref() == Some("update-service.invalid")
                    && r.query.contains("channel=stable-4.18")),
            "{seen:?}"
        );

        // noProxy: asked directly, which cannot resolve.
        let status = json!({"status": {"noProxy": "localhost,.invalid"}});
        proxies
            .patch("cluster", &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        let before = relay.seen().len();
        let ((retrieved, message), _) = updates_pass(ctx, &options, &mut state).await?;
        ensure!(
            retrieved == "False" && relay.seen().len() == before,
            "{retrieved} {message}"
        );
        anyhow::Ok(())
    }
    .await;
    cleanup().await?;
    result
}

/// With `spec.channel` and `spec.upstream` naming a real update service on 127.0.0.1, a pass
/// writes the graph's updates: `availableUpdates`, `conditionalUpdates` with their risks and
/// `Recommended` condition, `RetrievedUpdates=True`. A failing service gives upstream's reason
/// and message and keeps the updates retrieved before; a channel without the current version
/// gives `VersionNotFound` and none.
pub async fn start_shows_available_updates(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::update_service_support::{Reply, UpdateService, graph};

    let failing = Arc::new(AtomicBool::new(false));
    let service = {
        let failing = failing.clone();
        UpdateService::start(move |query| {
            if failing.load(Ordering::SeqCst) {
                return Reply::Status(500);
            }
            if query.contains("channel=stable-4.17") {
                return Reply::Graph(graph(&[("4.17.0", "quay.io/r@sha256:17")], &[], json!([])));
            }
            Reply::Graph(graph(
                &[
                    ("4.18.0", "quay.io/r@sha256:00"),
                    ("4.18.1", "quay.io/r@sha256:01"),
                    ("4.18.2", "quay.io/r@sha256:02"),
                    ("4.18.3", "quay.io/r@sha256:03"),
                    ("4.18.4", "quay.io/r@sha256:04"),
                ],
                &[(0, 1), (0, 2)],
                json!([
                    {"edges": [{"from": "4.18.0", "to": "4.18.3"}],
                     "risks": [{"url": "https://bug/1", "name": "EveryCluster", "message": "Breaks every cluster.",
                                "matchingRules": [{"type": "Always"}]}]},
                    {"edges": [{"from": "4.18.0", "to": "4.18.4"}],
                     "risks": [{"url": "https://bug/2", "name": "ConsoleBreaks", "message": "The console may break.",
                                "matchingRules": [{"type": "PromQL", "promql": {"promql": "group(cluster_version_capability{name=\"Console\"} == 1)"}}]}]}
                ]),
            ))
        })
        .await
    };
    let options = options()?;
    let api = reset_cluster_version(ctx).await?;
    mark_healthy(ctx, &options.payload, "etcd").await?;
    let spec = ClusterVersionSpec {
        channel: Some("stable-4.18".into()),
        upstream: Some(service.url.clone()),
        ..spec(&[])
    };
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec),
    )
    .await?;
    let retrieved = |s: &ClusterVersionStatus| {
        s.conditions
            .iter()
            .find(|c| c.type_ == "RetrievedUpdates")
            .map(|c| {
                (
                    c.status.clone(),
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            })
    };
    let versions = |s: &ClusterVersionStatus| -> Vec<String> {
        (s.available_updates.iter().flatten())
            .filter_map(|r| r.version.clone())
            .collect()
    };

    let mut state = SyncState::default();
    sync_once(&ctx.admin, &options, &mut state).await?;
    let s = status(ctx).await?;
    ensure!(
        retrieved(&s) == Some(("True".into(), String::new(), String::new())),
        "{:?}",
        retrieved(&s)
    );
    ensure!(versions(&s) == ["4.18.2", "4.18.1"], "{:?}", versions(&s));
    let first = &s
        .available_updates
        .as_ref()
        .context("no availableUpdates")?[0];
    ensure!(
        first.image.as_deref() == Some("quay.io/r@sha256:02")
            && first.url.as_deref() == Some("https://access.redhat.com/errata/4.18.2")
            && first.channels == ["candidate-4.18", "fast-4.18", "stable-4.18"],
        "{first:?}"
    );
    let conditional: Vec<_> = (s.conditional_updates.iter())
        .map(|c| {
            let r = &c.conditions[0];
            (
                c.release.version.clone().unwrap_or_default(),
                c.risks[0].name.clone(),
                c.risks[0].matching_rules[0].type_.clone(),
                r.type_.clone(),
                r.status.clone(),
                r.reason.clone(),
            )
        })
        .collect();
    let want = [
        (
            "4.18.4",
            "ConsoleBreaks",
            "PromQL",
            "Recommended",
            "Unknown",
            "EvaluationFailed",
        ),
        (
            "4.18.3",
            "EveryCluster",
            "Always",
            "Recommended",
            "False",
            "EveryCluster",
        ),
    ]
    .map(|(a, b, c, d, e, f)| {
        (
            a.to_string(),
            b.to_string(),
            c.to_string(),
            d.to_string(),
            e.to_string(),
            f.to_string(),
        )
    });
    ensure!(conditional == want, "{conditional:#?}");
    ensure!(
        s.conditional_updates[1].conditions[0].message == "Breaks every cluster. https://bug/1",
        "{:?}",
        s.conditional_updates[1].conditions[0]
    );
    let seen = service.seen();
    ensure!(
        seen.len() == 1
            && seen[0].accept.as_deref() == Some("application/json")
            && seen[0].query.starts_with("arch=")
            && seen[0].query.contains(
                "&channel=stable-4.18&id=0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a61&version=4.18.0"
            ),
        "{seen:?}"
    );

    // The service fails: upstream's reason and message; the updates retrieved before stay.
    failing.store(true, Ordering::SeqCst);
    tokio::time::sleep(options.resync_interval).await;
    let s = pass_then_failed(
        ctx,
        &options,
        &mut state,
        "ResponseFailed",
        "Unable to retrieve available updates: unexpected HTTP status: 500 Internal Server Error",
    )
    .await?;
    ensure!(versions(&s) == ["4.18.2", "4.18.1"], "{:?}", versions(&s));
    ensure!(s.conditional_updates.len() == 2);

    // Another channel, without the current version: asked at once, and nothing offered.
    failing.store(false, Ordering::SeqCst);
    let patch = json!({"spec": {"channel": "stable-4.17"}});
    api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let s = pass_then_failed(
        ctx,
        &options,
        &mut state,
        "VersionNotFound",
        "Unable to retrieve available updates: currently reconciling cluster version 4.18.0 not found in the \"stable-4.17\" channel",
    )
    .await?;
    ensure!(s.available_updates.is_none(), "{:?}", s.available_updates);
    ensure!(s.conditional_updates.is_empty());
    Ok(())
}

/// One pass, then the status, whose `RetrievedUpdates` must be `False` with `reason` and
/// `message`.
async fn pass_then_failed(
    ctx: &Ctx<'_>,
    options: &RunOptions,
    state: &mut SyncState,
    reason: &str,
    message: &str,
) -> anyhow::Result<ClusterVersionStatus> {
    sync_once(&ctx.admin, options, state).await?;
    let s = status(ctx).await?;
    let c = (s.conditions.iter())
        .find(|c| c.type_ == "RetrievedUpdates")
        .context("no RetrievedUpdates")?;
    ensure!(
        (c.status.as_str(), c.reason.as_deref(), c.message.as_deref())
            == ("False", Some(reason), Some(message)),
        "{c:?}"
    );
    Ok(s)
}
