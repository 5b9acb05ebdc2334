//! DeploymentTarget binding at scale against a real kube-apiserver (what BENCHMARKS.md records
//! under "DeploymentTarget binding"). Run it through `hack/bench-dt.sh`, which starts a
//! throwaway cluster (`hack/cluster/up.sh`), or directly against one:
//!
//! ```sh
//! CVO_BENCH_KUBECONFIG=/tmp/c/kubeconfig cargo bench --bench dt_bind -- [--claims 100,250,500] [--bind class,named] [--runs N] [--concurrency 32] [--stall 60] [--timeout 600]
//! ```
//!
//! The kubeconfig comes from `$CVO_BENCH_KUBECONFIG`, never from `$KUBECONFIG`
//! (`benches/support/cluster.rs`): the benchmark installs CRDs and creates and deletes objects.
//!
//! One run, for N claims: the component's CRDs (and the ClusterOperator CRD) installed; a
//! DeploymentTargetClass `dt-bench` (provisioner `example.com/none`, which nothing implements,
//! and `reclaimPolicy: Retain`); a namespace of its own with N user-made DeploymentTargets of
//! that class with credentials and no phase; then the controller as its own process, the
//! release binary `cvo controller deployment-targets --disable-leader-election` on a free
//! metrics port. Once it is ready (its caches synced) and has finished with the targets (its
//! finalizer is on each and it has been idle for a second), the N claims
//! are created at once (`--concurrency` requests in flight) and the claims are listed every
//! 250 ms until every one has `bind-complete` and phase `Bound`. `--bind` says what claims ask
//! for: `class` (the default) a target of the class, so the binder picks one (the first
//! eligible by name, as upstream); `named` each claim its own target by `spec.targetName`, so no
//! two claims ever want the same target. A run that binds no further claim for `--stall`
//! seconds (or has not finished after `--timeout`) is reported as stalled, with what the claims
//! show (phases, shared targets, their `ErrorOccurred` messages), and the bench exits 1 at the
//! end; the controller's log is kept and its path printed. Measured: the time from the first
//! create to the last create, to the last claim bound and until the controller settled (it was
//! last seen busy: reconciling, or using CPU), the controller's CPU time (`/proc/PID/stat`) and
//! its reconciles and writes (its `/metrics`) from the first create until it settled, its RSS
//! before the claims and its peak RSS (`VmHWM`) at the end. Then every claim must have a
//! target of its own, no claim may show `ErrorOccurred=True`, and the controller is stopped
//! with SIGTERM (it must exit 0) and the objects removed (their finalizers stripped: nothing
//! runs to release them).
//!
//! `--claims` takes a list (the curve); `--runs` (default 3) rounds run every size once each,
//! and the median run of each size (by the time to bind) is reported.
//!
//! Without `CVO_BENCH_KUBECONFIG` it prints how to run it and exits 0, so `cargo bench` without
//! a cluster does not fail; `test = false` keeps it out of `cargo test`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use futures_util::StreamExt as _;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;

#[path = "support/cluster.rs"]
mod cluster_bench;

use cvo::components::deployment_targets::crds::crds;
use cvo::components::deployment_targets::keys::{
    ANN_BIND_COMPLETED, CONDITION_ERROR_OCCURRED, FINALIZER_DT,
};
use cvo::components::deployment_targets::types::{
    ClaimPhase, DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, TargetPhase,
};

const MANAGER: &str = "cvo-bench";
const CLASS: &str = "dt-bench";
/// How often the claims are listed while waiting for them to bind.
const POLL: Duration = Duration::from_millis(250);

struct Args {
    claims: Vec<usize>,
    bind: Vec<Bind>,
    runs: usize,
    concurrency: usize,
    /// At most this long for all claims to bind.
    timeout: Duration,
    /// A run that binds no claim for this long has stalled.
    stall: Duration,
}

/// What the claims ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Bind {
    /// A target of the class: the binder picks one.
    Class,
    /// Claim `dtc-i` names target `dt-i` (`spec.targetName`).
    Named,
}

impl Bind {
    fn as_str(self) -> &'static str {
        match self {
            Bind::Class => "class",
            Bind::Named => "named",
        }
    }
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        claims: vec![500],
        bind: vec![Bind::Class],
        runs: 3,
        concurrency: 32,
        timeout: Duration::from_secs(600),
        stall: Duration::from_secs(60),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            // cargo bench passes --bench to harness = false targets.
            "--bench" => {}
            "--runs" => args.runs = value("--runs")?.parse().context("--runs")?,
            "--concurrency" => {
                args.concurrency = value("--concurrency")?.parse().context("--concurrency")?
            }
            "--timeout" => {
                args.timeout =
                    Duration::from_secs(value("--timeout")?.parse().context("--timeout: seconds")?)
            }
            "--stall" => {
                args.stall =
                    Duration::from_secs(value("--stall")?.parse().context("--stall: seconds")?)
            }
            "--bind" => {
                args.bind = value("--bind")?
                    .split(',')
                    .map(|b| match b.trim() {
                        "class" => Ok(Bind::Class),
                        "named" => Ok(Bind::Named),
                        other => {
                            bail!("--bind: class or named (or both: class,named), not {other:?}")
                        }
                    })
                    .collect::<anyhow::Result<_>>()?
            }
            "--claims" => {
                args.claims = value("--claims")?
                    .split(',')
                    .map(|c| {
                        c.trim()
                            .parse()
                            .context("--claims: a number or a list like 100,250,500")
                    })
                    .collect::<anyhow::Result<_>>()?
            }
            other => bail!(
                "unknown argument {other:?} (expected --claims N[,N...], --bind class,named, --runs N, --concurrency N, --stall SECONDS, --timeout SECONDS)"
            ),
        }
    }
    ensure!(
        args.runs > 0
            && args.concurrency > 0
            && !args.claims.is_empty()
            && !args.claims.contains(&0),
        "--runs, --concurrency and every --claims must be positive"
    );
    Ok(args)
}

fn main() -> ExitCode {
    cluster_bench::main(
        "dt_bind",
        "hack/bench-dt.sh",
        "the benchmark may install CRDs into and create objects in",
        parse_args,
        |args, kubeconfig| async move { run(args, &kubeconfig).await },
    )
}

/// What one run measured.
#[derive(Clone, Debug)]
struct Run {
    /// From the first create to the last.
    created: f64,
    /// From the first create until every claim was seen bound (until the run stalled, if it did).
    bound: f64,
    /// From the first create until the controller was last seen busy (to half a second): it
    /// works on after the last claim is bound.
    settled: f64,
    /// Claims seen bound at the end.
    bound_claims: usize,
    /// What the claims showed when the run stalled.
    stalled: Option<String>,
    /// The controller's user + system CPU time from the first create until it stood still.
    cpu: f64,
    /// The controller's VmRSS before the claims, and its VmHWM at the end, in KiB.
    rss_before: u64,
    peak_rss: u64,
    /// Counter increases over the claims: writes by (controller, kind, verb), reconciles by
    /// (controller, result), reconcile seconds by controller.
    writes: BTreeMap<String, f64>,
    reconciles: BTreeMap<String, f64>,
    reconcile_seconds: BTreeMap<String, f64>,
}

impl Run {
    fn total(map: &BTreeMap<String, f64>) -> f64 {
        // Not `sum`: an empty f64 sum is -0.0.
        map.values().fold(0.0, |sum, v| sum + v)
    }
}

async fn run(args: Args, kubeconfig: &Path) -> anyhow::Result<()> {
    let (client, version) = cluster_bench::connect(kubeconfig).await?;
    println!(
        "apiserver {version}, claims {:?}, bind {:?}, {} runs each, {} creates in flight, median reported",
        args.claims, args.bind, args.runs, args.concurrency
    );
    install(&client).await?;
    let mut runs: BTreeMap<(Bind, usize), Vec<Run>> = BTreeMap::new();
    // Runs outermost: every case once per round, so a change of load on the machine spreads
    // over all cases instead of skewing one.
    for round in 1..=args.runs {
        for &bind in &args.bind {
            for &n in &args.claims {
                let namespace = format!(
                    "dt-bench-{}-{}-{n}-{round}",
                    std::process::id(),
                    bind.as_str()
                );
                eprintln!(
                    "round {round} of {}: {n} claims ({}) in {namespace}",
                    args.runs,
                    bind.as_str()
                );
                let measured = one_run(&client, kubeconfig, &namespace, n, bind, &args).await;
                clean(&client, &namespace).await?;
                let m = measured?;
                eprintln!(
                    "  created in {:.2}s, {} of {n} bound after {:.2}s ({:.0} claims/s), settled after {:.1}s, controller CPU {:.2}s, RSS {} -> peak {} MiB, {} writes, {} reconciles",
                    m.created,
                    m.bound_claims,
                    m.bound,
                    m.bound_claims as f64 / m.bound,
                    m.settled,
                    m.cpu,
                    m.rss_before / 1024,
                    m.peak_rss / 1024,
                    Run::total(&m.writes),
                    Run::total(&m.reconciles),
                );
                if let Some(stalled) = &m.stalled {
                    eprintln!("  STALLED: {stalled}");
                }
                runs.entry((bind, n)).or_default().push(m);
            }
        }
    }
    print_table(&runs);
    let stalled = (runs.values().flatten())
        .filter(|r| r.stalled.is_some())
        .count();
    ensure!(stalled == 0, "{stalled} runs stalled (see above)");
    Ok(())
}

/// The component's CRDs and the ClusterOperator CRD, established, and the class.
async fn install(client: &kube::Client) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(MANAGER).force();
    for crd in crds().into_iter().chain(cvo::cluster::crds()) {
        let name = crd.name_any();
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .with_context(|| format!("apply CRD {name}"))?;
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(Duration::from_secs(30), established)
            .await
            .with_context(|| format!("CRD {name} not Established"))??;
    }
    let class: DeploymentTargetClass = serde_json::from_value(json!({
        "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "DeploymentTargetClass",
        "metadata": {"name": CLASS},
        "spec": {"provisioner": "example.com/none", "reclaimPolicy": "Retain"}}))?;
    let classes: Api<DeploymentTargetClass> = Api::all(client.clone());
    classes
        .patch(CLASS, &params, &Patch::Apply(&class))
        .await
        .context("apply the DeploymentTargetClass")?;
    Ok(())
}

async fn one_run(
    client: &kube::Client,
    kubeconfig: &Path,
    namespace: &str,
    n: usize,
    bind: Bind,
    args: &Args,
) -> anyhow::Result<Run> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    let targets: Api<DeploymentTarget> = Api::namespaced(client.clone(), namespace);
    let claims: Api<DeploymentTargetClaim> = Api::namespaced(client.clone(), namespace);
    let failures = create_all(&targets, (0..n).map(target), args.concurrency).await;
    ensure!(failures.is_empty(), "creating targets: {failures:?}");

    let mut controller = Controller::start(kubeconfig, namespace)?;
    let result = async {
        controller.wait_ready(Duration::from_secs(60)).await?;
        // The controller's own start: a finalizer on every target (its reconciles may begin
        // a while after /readyz), then nothing more to do.
        let started = Instant::now();
        loop {
            let list = targets.list(&ListParams::default()).await?;
            let done = (list.items.iter())
                .filter(|t| t.finalizers().iter().any(|f| f == FINALIZER_DT))
                .count();
            if done == n {
                break;
            }
            ensure!(
                started.elapsed() < Duration::from_secs(300),
                "the controller put its finalizer on {done} of {n} targets in 300 s"
            );
            tokio::time::sleep(POLL).await;
        }
        let (before, _) = controller.wait_quiet(Duration::from_secs(120)).await?;
        let cpu_before = controller.cpu_seconds()?;
        let rss_before = controller.status_kib("VmRSS")?;

        let t0 = Instant::now();
        let failures = create_all(&claims, (0..n).map(|i| claim(i, bind)), args.concurrency).await;
        let created = t0.elapsed().as_secs_f64();
        ensure!(failures.is_empty(), "creating claims: {failures:?}");
        let (mut progress, mut progressed) = (0, Instant::now());
        let (bound, bound_claims, stalled) = loop {
            let list = claims.list(&ListParams::default()).await?;
            let done = (list.items.iter()).filter(|c| is_bound(c)).count();
            if done == n {
                break (t0.elapsed().as_secs_f64(), done, None);
            }
            if done > progress {
                (progress, progressed) = (done, Instant::now());
            }
            if progressed.elapsed() > args.stall || t0.elapsed() > args.timeout {
                let why = format!(
                    "{done} of {n} claims bound after {:.0} s, none more in the last {:.0} s; {}",
                    t0.elapsed().as_secs_f64(),
                    progressed.elapsed().as_secs_f64(),
                    describe_claims(&list.items)
                );
                break (t0.elapsed().as_secs_f64(), done, Some(why));
            }
            tokio::time::sleep(POLL).await;
        };
        let (after, settled) = match stalled {
            // A stalled controller keeps retrying (every 5 s): take the counters as they are.
            Some(_) => (
                Metrics::parse(&controller.get("/metrics")?.1),
                Instant::now(),
            ),
            None => controller.wait_quiet(Duration::from_secs(120)).await?,
        };
        let settled = settled.duration_since(t0).as_secs_f64();
        let cpu = controller.cpu_seconds()? - cpu_before;
        let peak_rss = controller.status_kib("VmHWM")?;
        if stalled.is_none() {
            check_bindings(&claims, &targets, n).await?;
        }
        Ok(Run {
            created,
            bound,
            settled,
            bound_claims,
            stalled,
            cpu,
            rss_before,
            peak_rss,
            writes: delta(&before, &after, "cvo_controller_writes_total"),
            reconciles: delta(&before, &after, "cvo_controller_reconciles_total"),
            reconcile_seconds: delta(
                &before,
                &after,
                "cvo_controller_reconcile_duration_seconds_sum",
            ),
        })
    }
    .await;
    let failed = !matches!(&result, Ok(run) if run.stalled.is_none());
    if failed {
        eprintln!(
            "  the controller's log is kept: {}",
            controller.keep_log().display()
        );
    }
    let stopped = controller.stop();
    let run = result?;
    stopped?;
    Ok(run)
}

/// What the claims of a stalled run show: how many are in each state (untouched: the binder
/// never wrote to it), how many targets they name and how many share one, and their `ErrorOccurred` messages (the claim's own name
/// replaced by `<claim>`) by count.
fn describe_claims(claims: &[DeploymentTargetClaim]) -> String {
    let mut states: BTreeMap<String, usize> = BTreeMap::new();
    let mut named: BTreeMap<&str, usize> = BTreeMap::new();
    let mut messages: BTreeMap<String, usize> = BTreeMap::new();
    for c in claims {
        let complete = c.annotations().contains_key(ANN_BIND_COMPLETED);
        let phase = c.phase().map_or("none".to_string(), |p| format!("{p:?}"));
        // No finalizer: no write of the binder's ever reached it.
        let state = match c.finalizers().is_empty() {
            true => "untouched (no finalizer)".to_string(),
            false => format!(
                "phase {phase}{}",
                if complete { ", bind-complete" } else { "" }
            ),
        };
        *states.entry(state).or_default() += 1;
        if !c.spec.target_name.is_empty() {
            *named.entry(c.spec.target_name.as_str()).or_default() += 1;
        }
        for k in c.status.iter().flat_map(|s| &s.conditions) {
            if k.type_ == CONDITION_ERROR_OCCURRED && k.status == "True" {
                let message = k.message.replace(&c.name_any(), "<claim>");
                *messages.entry(message).or_default() += 1;
            }
        }
    }
    let shared: Vec<String> = (named.iter())
        .filter(|(_, count)| **count > 1)
        .map(|(t, count)| format!("{t} by {count}"))
        .collect();
    let mut out = format!(
        "claims by state: {states:?}; {} claims name {} distinct targets; named by more than one claim: {}",
        named.values().sum::<usize>(),
        named.len(),
        match shared.is_empty() {
            true => "none".to_string(),
            false => shared.join(", "),
        }
    );
    for (message, count) in messages {
        let _ = write!(out, "; ErrorOccurred on {count} claims: {message:?}");
    }
    out
}

/// A claim the binder finished with: `bind-complete` and phase `Bound`.
fn is_bound(claim: &DeploymentTargetClaim) -> bool {
    claim.phase() == Some(ClaimPhase::Bound)
        && claim
            .annotations()
            .get(ANN_BIND_COMPLETED)
            .map(String::as_str)
            == Some("true")
}

/// Every claim bound to a target of its own, every target `Bound`, no `ErrorOccurred=True`.
async fn check_bindings(
    claims: &Api<DeploymentTargetClaim>,
    targets: &Api<DeploymentTarget>,
    n: usize,
) -> anyhow::Result<()> {
    let claims = claims.list(&ListParams::default()).await?.items;
    let wanted: BTreeSet<&str> = (claims.iter())
        .map(|c| c.spec.target_name.as_str())
        .collect();
    ensure!(
        wanted.len() == n && !wanted.contains(""),
        "{n} claims name {} distinct targets",
        wanted.len()
    );
    let erring: Vec<String> = (claims.iter())
        .filter(|c| {
            (c.status.iter().flat_map(|s| &s.conditions))
                .any(|k| k.type_ == CONDITION_ERROR_OCCURRED && k.status == "True")
        })
        .map(|c| c.name_any())
        .collect();
    ensure!(
        erring.is_empty(),
        "claims with ErrorOccurred=True: {erring:?}"
    );
    let targets = targets.list(&ListParams::default()).await?.items;
    let unbound: Vec<String> = (targets.iter())
        .filter(|t| t.phase() != Some(TargetPhase::Bound))
        .map(|t| t.name_any())
        .collect();
    ensure!(unbound.is_empty(), "targets not Bound: {unbound:?}");
    Ok(())
}

fn target(i: usize) -> DeploymentTarget {
    let name = format!("dt-{i:05}");
    serde_json::from_value(json!({
        "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "DeploymentTarget",
        "metadata": {"name": name},
        "spec": {"deploymentTargetClassName": CLASS,
                 "kubernetesCredentials": {"defaultNamespace": "deploy",
                     "apiURL": format!("https://api.{name}.example:6443"),
                     "clusterCredentialsSecret": format!("{name}-creds"),
                     "allowInsecureSkipTLSVerify": false}}}))
    .expect("a DeploymentTarget")
}

/// Claim `dtc-i` of the class; with [`Bind::Named`], naming target `dt-i`.
fn claim(i: usize, bind: Bind) -> DeploymentTargetClaim {
    let mut spec = json!({"deploymentTargetClassName": CLASS});
    if bind == Bind::Named {
        spec["targetName"] = format!("dt-{i:05}").into();
    }
    serde_json::from_value(json!({
        "apiVersion": "appstudio.redhat.com/v1alpha1", "kind": "DeploymentTargetClaim",
        "metadata": {"name": format!("dtc-{i:05}")},
        "spec": spec}))
    .expect("a DeploymentTargetClaim")
}

/// Creates every object, `concurrency` at a time; the failures.
async fn create_all<K>(
    api: &Api<K>,
    objects: impl Iterator<Item = K>,
    concurrency: usize,
) -> Vec<String>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    futures_util::stream::iter(objects)
        .map(|o| async move {
            let name = o.meta().name.clone().unwrap_or_default();
            (api.create(&PostParams::default(), &o).await).map_err(|e| format!("{name}: {e}"))
        })
        .buffer_unordered(concurrency)
        .filter_map(|r| async move { r.err() })
        .collect()
        .await
}

/// Removes the run's claims and targets (their finalizers stripped: the controller is stopped)
/// and waits until they are gone. The namespace stays (no namespace controller runs to
/// finish its deletion); it is empty.
async fn clean(client: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let claims: Api<DeploymentTargetClaim> = Api::namespaced(client.clone(), namespace);
    let targets: Api<DeploymentTarget> = Api::namespaced(client.clone(), namespace);
    let strip = json!({"metadata": {"finalizers": null}});
    let dp = DeleteParams::default();
    let lp = ListParams::default();
    let started = Instant::now();
    loop {
        let names_c: Vec<String> = (claims.list(&lp).await?.items.iter())
            .map(|o| o.name_any())
            .collect();
        let names_t: Vec<String> = (targets.list(&lp).await?.items.iter())
            .map(|o| o.name_any())
            .collect();
        if names_c.is_empty() && names_t.is_empty() {
            return Ok(());
        }
        ensure!(
            started.elapsed() < Duration::from_secs(120),
            "{namespace}: {} claims and {} targets still there after 120 s",
            names_c.len(),
            names_t.len()
        );
        let _ = claims.delete_collection(&dp, &lp).await?;
        let _ = targets.delete_collection(&dp, &lp).await?;
        let strip = &strip;
        let stripped: Vec<()> = futures_util::stream::iter(
            (names_c.iter().map(|n| (true, n))).chain(names_t.iter().map(|n| (false, n))),
        )
        .map(|(is_claim, name)| {
            let (claims, targets) = (&claims, &targets);
            async move {
                let params = PatchParams::default();
                // Already gone is fine.
                let _ = match is_claim {
                    true => claims
                        .patch(name, &params, &Patch::Merge(strip))
                        .await
                        .map(|_| ()),
                    false => targets
                        .patch(name, &params, &Patch::Merge(strip))
                        .await
                        .map(|_| ()),
                };
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
        drop(stripped);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The controller process.
struct Controller {
    child: Child,
    metrics: std::net::SocketAddr,
    log_path: std::path::PathBuf,
    /// Removed with the controller unless [`Controller::keep_log`] was called.
    log_dir: Option<tempfile::TempDir>,
}

impl Controller {
    fn start(kubeconfig: &Path, namespace: &str) -> anyhow::Result<Controller> {
        // A free port: bound, read and released (another process could take it meanwhile;
        // the controller then fails to start and says so).
        let metrics = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let log_dir = tempfile::tempdir()?;
        let log_path = log_dir.path().join("controller.log");
        let log = std::fs::File::create(&log_path)?;
        let child = Command::new(env!("CARGO_BIN_EXE_cvo"))
            .args([
                "controller",
                "deployment-targets",
                "--disable-leader-election",
            ])
            .arg("--namespace")
            .arg(namespace)
            .arg("--metrics-address")
            .arg(metrics.to_string())
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("start cvo controller deployment-targets")?;
        Ok(Controller {
            child,
            metrics,
            log_path,
            log_dir: Some(log_dir),
        })
    }

    /// Keeps the log when the controller goes; its path.
    fn keep_log(&mut self) -> &Path {
        if let Some(dir) = self.log_dir.take() {
            let _ = dir.keep();
        }
        &self.log_path
    }

    /// A GET of `path` on the metrics server: the status line's code and the body.
    fn get(&self, path: &str) -> anyhow::Result<(u16, String)> {
        let mut stream =
            std::net::TcpStream::connect_timeout(&self.metrics, Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.metrics
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let (head, body) = response
            .split_once("\r\n\r\n")
            .context("an HTTP response")?;
        let code = (head.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .context("an HTTP status line")?;
        Ok((code, body.to_string()))
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Until `/readyz` answers 200 (the caches have synced).
    async fn wait_ready(&mut self, within: Duration) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("the controller exited ({status}):\n{}", self.log_tail());
            }
            if matches!(self.get("/readyz"), Ok((200, _))) {
                return Ok(());
            }
            ensure!(
                started.elapsed() < within,
                "the controller is not ready after {within:?}:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The metrics once the controller is idle, and when it was last seen busy (to half a
    /// second). Idle: for a second (two polls 500 ms apart) its reconcile counters have not
    /// moved and it has used under 2% of a core (event handling and the World copies its watch
    /// mappings make show as CPU before they lead to a reconcile).
    async fn wait_quiet(&self, within: Duration) -> anyhow::Result<(Metrics, Instant)> {
        const POLL: Duration = Duration::from_millis(500);
        let started = Instant::now();
        let counts = |m: &Metrics| m.family("cvo_controller_reconciles_total");
        let mut last = Metrics::parse(&self.get("/metrics")?.1);
        let mut cpu = self.cpu_seconds()?;
        let mut busy = Instant::now();
        let mut still = 0;
        while still < 2 {
            ensure!(
                started.elapsed() < within,
                "the controller is still busy after {within:?}"
            );
            tokio::time::sleep(POLL).await;
            let now = Metrics::parse(&self.get("/metrics")?.1);
            let cpu_now = self.cpu_seconds()?;
            let idle = counts(&now) == counts(&last) && cpu_now - cpu < 0.02 * POLL.as_secs_f64();
            still = match idle {
                true => still + 1,
                false => {
                    busy = Instant::now();
                    0
                }
            };
            (last, cpu) = (now, cpu_now);
        }
        Ok((last, busy))
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// User + system CPU seconds so far (`/proc/PID/stat`, in clock ticks of 1/100 s: Linux's
    /// USER_HZ).
    fn cpu_seconds(&self) -> anyhow::Result<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))?;
        // After the command name in parentheses: state is field 3; utime, stime are 14, 15.
        let rest = stat.rsplit_once(')').context("a /proc stat line")?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
        Ok(ticks as f64 / 100.0)
    }

    /// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`).
    fn status_kib(&self, field: &str) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        let line = (status.lines())
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .with_context(|| format!("{field} in /proc/PID/status"))?;
        Ok(line.trim().trim_end_matches("kB").trim().parse()?)
    }

    /// SIGTERM, and the exit: it must stop cleanly within 30 s.
    fn stop(&mut self) -> anyhow::Result<()> {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()?;
        ensure!(sent.success(), "kill -TERM {} failed", self.pid());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                ensure!(
                    status.success(),
                    "the controller exited with {status} on SIGTERM:\n{}",
                    self.log_tail()
                );
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                bail!("the controller did not stop within 30 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Samples of a Prometheus text exposition: `name{labels}` → value.
struct Metrics(BTreeMap<String, f64>);

impl Metrics {
    fn parse(text: &str) -> Metrics {
        Metrics(
            (text.lines())
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| {
                    let (series, value) = l.rsplit_once(' ')?;
                    Some((series.to_string(), value.parse().ok()?))
                })
                .collect(),
        )
    }

    /// The samples of one metric, by their labels (`{...}`, or `""`).
    fn family(&self, name: &str) -> BTreeMap<String, f64> {
        (self.0.iter())
            .filter_map(|(series, v)| {
                let labels = series.strip_prefix(name)?;
                (labels.is_empty() || labels.starts_with('{')).then(|| (labels.to_string(), *v))
            })
            .collect()
    }
}

/// How much each sample of `name` grew from `before` to `after` (those that grew).
fn delta(before: &Metrics, after: &Metrics, name: &str) -> BTreeMap<String, f64> {
    let old = before.family(name);
    (after.family(name).into_iter())
        .map(|(labels, v)| {
            let grown = v - old.get(&labels).copied().unwrap_or(0.0);
            (labels, grown)
        })
        .filter(|(_, grown)| *grown > 0.0)
        .collect()
}

fn median(runs: &[Run]) -> &Run {
    let mut sorted: Vec<&Run> = runs.iter().collect();
    sorted.sort_by(|a, b| a.bound.total_cmp(&b.bound));
    sorted[sorted.len() / 2]
}

fn print_table(runs: &BTreeMap<(Bind, usize), Vec<Run>>) {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n| claims ask for | claims | runs | all created | all bound (median; min-max) | claims/s | controller settled | controller CPU | CPU per claim | peak RSS (before claims) | writes | reconciles (claims / targets / environments) |"
    );
    let _ = writeln!(
        out,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let by_controller = |m: &Run, controller: &str| -> f64 {
        (m.reconciles.iter())
            .filter(|(labels, _)| labels.contains(&format!("controller=\"{controller}\"")))
            .fold(0.0, |sum, (_, v)| sum + v)
    };
    for ((bind, n), all) in runs {
        let m = median(all);
        let min = all.iter().map(|r| r.bound).fold(f64::INFINITY, f64::min);
        let max = all.iter().map(|r| r.bound).fold(0.0, f64::max);
        let bound = match (
            all.iter().filter(|r| r.stalled.is_some()).count(),
            &m.stalled,
        ) {
            (0, _) => format!("{:.2} s; {min:.2}-{max:.2} s", m.bound),
            (stalled, Some(_)) => format!(
                "stalled in {stalled} of {} runs: median {} of {n} bound by {:.0} s",
                all.len(),
                m.bound_claims,
                m.bound
            ),
            (stalled, None) => format!(
                "{:.2} s; stalled in {stalled} of {} runs",
                m.bound,
                all.len()
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {n} | {} | {:.2} s | {bound} | {:.0} | {:.1} s | {:.2} s | {:.1} ms | {:.1} MiB ({:.1} MiB) | {:.0} | {:.0} ({:.0} / {:.0} / {:.0}) |",
            bind.as_str(),
            all.len(),
            m.created,
            m.bound_claims as f64 / m.bound,
            m.settled,
            m.cpu,
            m.cpu * 1000.0 / *n as f64,
            m.peak_rss as f64 / 1024.0,
            m.rss_before as f64 / 1024.0,
            Run::total(&m.writes),
            Run::total(&m.reconciles),
            by_controller(m, "claims"),
            by_controller(m, "targets"),
            by_controller(m, "environments"),
        );
    }
    for ((bind, n), all) in runs {
        let m = median(all);
        let _ = writeln!(
            out,
            "\n{n} claims ({}), the median run ({:.2} s):",
            bind.as_str(),
            m.bound
        );
        if let Some(stalled) = &m.stalled {
            let _ = writeln!(out, "  stalled: {stalled}");
        }
        for (title, map) in [
            ("writes", &m.writes),
            ("reconciles", &m.reconciles),
            (
                "reconcile seconds (wall, summed over concurrent reconciles)",
                &m.reconcile_seconds,
            ),
        ] {
            let _ = writeln!(out, "  {title}:");
            for (labels, v) in map {
                let _ = writeln!(out, "    {labels} {v:.3}");
            }
        }
    }
    println!("{out}");
}
