//! How soon an update finishes once its last ClusterOperator reports the target version (what
//! BENCHMARKS.md records under "Wake-up"). Run it through `hack/bench-wakeup.sh`, which starts a
//! throwaway cluster (`hack/cluster/up.sh`), or directly against one:
//!
//! ```sh
//! CVO_BENCH_KUBECONFIG=/tmp/c/kubeconfig cargo bench --bench wakeup -- [--runs N]
//! ```
//!
//! Each run installs the bundled 4.17.0 (`payloads/4.17.0`, baseline None plus Console), then
//! requests 4.18.0 (`spec.desiredUpdate`, the payload directory) while the operator's loop
//! (`cvo::operator::run`, as `cvo start` runs it: the production resync interval of 180 s, the
//! watches) runs in this process. The bench plays the operators, as the cluster tests do: both
//! report an older version before the update is requested; when
//! the ClusterVersion says the update waits on `etcd`, it reports etcd at 4.18.0; when it says it
//! waits on `console`, the last one, it reports console at 4.18.0 and measures the time until
//! the ClusterVersion it watches shows `Progressing=False` ("Cluster version is 4.18.0"). The
//! operator is asleep each time (its pass ended waiting on that operator), so what is measured
//! is the wake-up by the ClusterOperator watch, the pass that finds everything done, and the
//! status write: without the wake-up the next pass would come after the failure backoff, 11 s
//! and more. The etcd figure (reported until the ClusterVersion waits on console) is given too.
//!
//! `--runs` (default 10) runs; the median, 90th percentile and worst are printed.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use futures_util::StreamExt as _;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use serde_json::json;
use tokio::sync::watch;

#[path = "support/cluster.rs"]
mod cluster_bench;
#[path = "../tests/support/foreign_crds.rs"]
mod foreign_crds;

use cvo::capability::{CapabilitiesSpec, Capability};
use cvo::cluster::{ClusterOperator, ClusterVersion, ClusterVersionSpec, ClusterVersionStatus};
use cvo::operator::desired::ReleaseSources;
use cvo::operator::{OperatorFacts, RunOptions, run};
use cvo::payload::{LoadOptions, Payload, read_directory};

const OLD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/payloads/4.17.0");
const NEW: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/payloads/4.18.0");
const PROFILE: &str = "self-managed-high-availability";
/// How long any one step may take before the run is called stuck.
const STEP_LIMIT: Duration = Duration::from_secs(60);

struct Args {
    runs: usize,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args { runs: 10 };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            // cargo bench passes --bench to harness = false targets.
            "--bench" => {}
            "--runs" => {
                args.runs = (it.next().context("--runs needs a value")?)
                    .parse()
                    .context("--runs")?
            }
            other => bail!("unknown argument {other:?} (expected --runs N)"),
        }
    }
    ensure!(args.runs > 0, "--runs must be positive");
    Ok(args)
}

fn main() -> ExitCode {
    cluster_bench::main(
        "wakeup",
        "hack/bench-wakeup.sh",
        "where it may replace the ClusterVersion and ClusterOperators etcd and console",
        parse_args,
        |args, kubeconfig| async move { bench(args, &kubeconfig).await },
    )
}

fn load(dir: &str) -> anyhow::Result<Payload> {
    let options = LoadOptions {
        release_image: Some(dir.to_string()),
        cluster_profile: PROFILE.into(),
        strict_templates: false,
    };
    Ok(Payload::from_input(
        read_directory(std::path::Path::new(dir))?,
        &options,
    )?)
}

/// An operator version no payload names (the bundled payloads give their operators the same
/// versions, so an update would not wait on an operator reporting the old payload's).
const PREVIOUS: &str = "4.17.0-previous";

/// What an operator reports once it runs `payload`'s versions (each at `PREVIOUS` when
/// `previous`): Available, not Degraded.
async fn report(
    client: &kube::Client,
    payload: &Payload,
    name: &str,
    previous: bool,
) -> anyhow::Result<()> {
    let manifest = (payload.manifests.iter())
        .find(|m| m.gvk.is("config.openshift.io", "ClusterOperator") && m.id.name == name)
        .with_context(|| format!("no ClusterOperator {name} in the payload"))?;
    let mut versions = manifest.object()["status"]["versions"].clone();
    if previous {
        for version in versions.as_array_mut().into_iter().flatten() {
            version["version"] = json!(PREVIOUS);
        }
    }
    let api: Api<ClusterOperator> = Api::all(client.clone());
    let params = PatchParams::apply("cvo-bench-operator").force();
    let object = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                        "metadata": {"name": name}, "spec": {}});
    api.patch(name, &params, &Patch::Apply(&object)).await?;
    let at = k8s_openapi::jiff::Timestamp::now().to_string();
    let condition = |type_: &str, status: &str| json!({"type": type_, "status": status, "lastTransitionTime": at, "reason": "AsExpected"});
    let status = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "status": {"versions": versions,
                   "conditions": [condition("Available", "True"), condition("Degraded", "False")]}});
    api.patch_status(name, &params, &Patch::Apply(&status))
        .await?;
    Ok(())
}

fn progressing(status: &ClusterVersionStatus) -> (&str, &str) {
    (status.conditions.iter())
        .find(|c| c.type_ == "Progressing")
        .map_or(("", ""), |c| {
            (c.status.as_str(), c.message.as_deref().unwrap_or_default())
        })
}

/// The ClusterVersion's status as a watch sees it, with when it was seen.
type Seen = Option<(Instant, ClusterVersionStatus)>;

fn watch_status(client: &kube::Client) -> (watch::Receiver<Seen>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = watch::channel(None);
    let api: Api<ClusterVersion> = Api::all(client.clone());
    let config = watcher::Config::default().fields("metadata.name=version");
    let task = tokio::spawn(async move {
        let mut stream = watcher(api, config).default_backoff().boxed();
        while let Some(event) = stream.next().await {
            if let Ok(watcher::Event::Apply(cv) | watcher::Event::InitApply(cv)) = event
                && tx
                    .send(Some((Instant::now(), cv.status.unwrap_or_default())))
                    .is_err()
            {
                return;
            }
        }
    });
    (rx, task)
}

/// When the watch first showed a status that satisfies `done`.
async fn seen_when(
    rx: &mut watch::Receiver<Seen>,
    what: &str,
    done: impl Fn(&ClusterVersionStatus) -> bool,
) -> anyhow::Result<Instant> {
    let seen = tokio::time::timeout(
        STEP_LIMIT,
        rx.wait_for(|s| s.as_ref().is_some_and(|(_, status)| done(status))),
    )
    .await
    .with_context(|| format!("not {what} within {STEP_LIMIT:?}"))?
    .context("the watch ended")?;
    Ok(seen
        .as_ref()
        .map(|(at, _)| *at)
        .unwrap_or_else(Instant::now))
}

fn spec() -> ClusterVersionSpec {
    ClusterVersionSpec {
        cluster_id: "0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a61".into(),
        capabilities: Some(CapabilitiesSpec {
            baseline_capability_set: Some("None".into()),
            additional_enabled_capabilities: vec![Capability::new("Console")],
        }),
        ..Default::default()
    }
}

/// One update; the seconds from etcd's report to the wait on console, and from console's
/// report to `Progressing=False`.
async fn one_update(
    client: &kube::Client,
    old: &Payload,
    new: &Payload,
    images: &std::path::Path,
) -> anyhow::Result<(Duration, Duration)> {
    let api: Api<ClusterVersion> = Api::all(client.clone());
    if api.get_opt("version").await?.is_some() {
        api.delete("version", &DeleteParams::default()).await?;
    }
    for operator in ["etcd", "console"] {
        report(client, old, operator, false).await?;
    }
    api.create(
        &PostParams::default(),
        &ClusterVersion::new("version", spec()),
    )
    .await?;
    let options = RunOptions {
        facts: OperatorFacts {
            profile: PROFILE.into(),
            ..Default::default()
        },
        // The update names a payload directory.
        release_sources: ReleaseSources::RegistriesAndLocalFiles,
        ..RunOptions::new(old.clone(), cvo::oci::Options::new(images.to_path_buf()))
    };
    let (mut seen, watching) = watch_status(client);
    let (stop, stopped) = watch::channel(false);
    let operator = {
        let (client, options) = (client.clone(), options.clone());
        tokio::spawn(async move { run(&client, &options, stopped).await })
    };
    let result = async {
        seen_when(&mut seen, "installed", |s| {
            progressing(s) == ("False", "Cluster version is 4.17.0")
        })
        .await?;
        // Both operators still run what came before (a change the loop, not updating, sleeps
        // through).
        for operator in ["etcd", "console"] {
            report(client, old, operator, true).await?;
        }
        let patch = json!({"spec": {"desiredUpdate": {"image": NEW, "version": "4.18.0"}}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let waits_on = |name: &'static str| {
            move |s: &ClusterVersionStatus| {
                let (status, message) = progressing(s);
                status == "True" && message.ends_with(&format!("waiting on {name}"))
            }
        };
        seen_when(&mut seen, "waiting on etcd", waits_on("etcd")).await?;
        let etcd = Instant::now();
        report(client, new, "etcd", false).await?;
        let waiting = seen_when(&mut seen, "waiting on console", waits_on("console")).await?;
        let console = Instant::now();
        report(client, new, "console", false).await?;
        let done = seen_when(&mut seen, "updated", |s| {
            progressing(s) == ("False", "Cluster version is 4.18.0")
        })
        .await?;
        anyhow::Ok((waiting - etcd, done - console))
    }
    .await;
    let _ = stop.send(true);
    watching.abort();
    operator.await??;
    result
}

/// The `q` quantile of sorted `values` (nearest rank).
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn summary(name: &str, mut values: Vec<Duration>) {
    values.sort();
    let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1000.0);
    println!(
        "{name}: median {}, p90 {}, worst {}, best {} ({} runs)",
        ms(quantile(&values, 0.5)),
        ms(quantile(&values, 0.9)),
        ms(values[values.len() - 1]),
        ms(values[0]),
        values.len()
    );
}

async fn bench(args: Args, kubeconfig: &std::path::Path) -> anyhow::Result<()> {
    let (client, version) = cluster_bench::connect(kubeconfig).await?;
    println!("apiserver {version}; {} runs", args.runs);
    let api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    let params = PatchParams::apply("cluster-version-operator").force();
    for crd in cvo::cluster::crds() {
        let name = crd.metadata.name.clone().context("a CRD without a name")?;
        api.patch(&name, &params, &Patch::Apply(&crd)).await?;
        let established = kube::runtime::wait::await_condition(
            api.clone(),
            &name,
            kube::runtime::wait::conditions::is_crd_established(),
        );
        tokio::time::timeout(STEP_LIMIT, established)
            .await
            .with_context(|| format!("{name} not Established"))??;
    }
    foreign_crds::install_foreign_crds(&client).await?;
    let (old, new) = (load(OLD)?, load(NEW)?);
    let images = tempfile::tempdir()?;
    let (mut first, mut last) = (Vec::new(), Vec::new());
    for run in 1..=args.runs {
        let (etcd, console) = one_update(&client, &old, &new, images.path()).await?;
        println!(
            "run {run}: etcd reported -> waiting on console {:.0} ms; console (last) reported -> Progressing=False {:.0} ms",
            etcd.as_secs_f64() * 1000.0,
            console.as_secs_f64() * 1000.0
        );
        first.push(etcd);
        last.push(console);
    }
    summary("etcd reported -> waiting on console", first);
    summary(
        "last ClusterOperator at the target version -> Progressing=False",
        last,
    );
    Ok(())
}
