//! Apply throughput against a real kube-apiserver (what BENCHMARKS.md records under "Apply onto
//! a real kube-apiserver"). Run it through `hack/bench-apply.sh`, which starts a throwaway
//! cluster (`hack/cluster/up.sh`), or directly against one:
//!
//! ```sh
//! CVO_BENCH_KUBECONFIG=/tmp/c/kubeconfig cargo bench --bench apply -- [--runs N] [--objects N] [--concurrency 16,32,64]
//! ```
//!
//! The kubeconfig comes from `$CVO_BENCH_KUBECONFIG`, never from `$KUBECONFIG`: the benchmark
//! deletes everything it applies (OpenShift namespaces and CRDs included) between runs, so a
//! `cargo bench` in a shell pointed at a real cluster must not touch it.
//!
//! It measures, in objects applied per second:
//!
//! * the bundled payload (`payloads/4.18.0`, loaded and filtered as `cvo apply` does: default
//!   profile, Default feature set, vCurrent capabilities), with `apply_payload_with` in Update
//!   mode (run levels serial, components parallel, `workers_for` = 16 workers) and Install mode
//!   (every node at once). ClusterOperator manifests are only reported as waited on
//!   (`check_cluster_operators: false`): no operator runs on this apiserver to ever report.
//!   The CRDs of the two foreign kinds the payload uses (ServiceMonitor, ClusterImagePolicy) are
//!   installed first, as a real cluster has them;
//! * a generated payload of `--objects` (2,000) simple objects: 4 Namespaces, then ConfigMaps,
//!   Secrets, ServiceAccounts, Roles and RoleBindings across those namespaces, 5 run levels of 4
//!   components each, one object per file, in both modes;
//! * the same generated objects with a plain server-side-apply loop and no ordering (the
//!   namespaces first, then everything at once, `--concurrency` requests in flight), same field
//!   manager (`cluster-version-operator`) and force: the throughput limit of this apiserver.
//!
//! Each case is a first apply (creates) and a second apply of the same objects (no-op updates).
//! The bundled payload's objects are all deleted before each first apply (its namespaces
//! included: for 30 s after a namespace's deletion the apiserver's NamespaceLifecycle admission
//! looks it up live, one more GET per namespaced object, which a fresh cluster would not do);
//! every generated case gets namespaces of its own instead, removed after it. `--runs` rounds
//! (default 3) run every case once each, and the median of each case is reported, with the
//! requests per object the apiserver counted (`apiserver_request_total`).
//!
//! Without `CVO_BENCH_KUBECONFIG` it prints how to run it and exits 0, so `cargo bench` without
//! a cluster does not fail; `test = false` keeps it out of `cargo test`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures_util::StreamExt as _;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use serde_json::json;

#[path = "support/cluster.rs"]
mod cluster_bench;
#[path = "../tests/support/foreign_crds.rs"]
mod foreign_crds;
use foreign_crds::install_foreign_crds;

use cvo::capability::{CapabilitiesSpec, Registry, set_capabilities};
use cvo::graph::{Mode, TaskGraph, workers_for};
use cvo::include::{DEFAULT_CLUSTER_PROFILE, InclusionConfig};
use cvo::manifest::Manifest;
use cvo::operator::{ApplyOptions, apply_payload_with};
use cvo::payload::{LoadOptions, Payload, bundled_input, read_directory};

const MANAGER: &str = "cluster-version-operator";
const NAMESPACES: usize = 4;
const RUN_LEVELS: [&str; 5] = ["10", "20", "30", "40", "50"];
const COMPONENTS: [&str; 4] = ["alpha", "bravo", "charlie", "delta"];
const PROFILE_ANNOTATION: &str =
    "  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n";

struct Args {
    runs: usize,
    objects: usize,
    concurrency: Vec<usize>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        runs: 3,
        objects: 2000,
        concurrency: vec![16, 32, 64],
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            // cargo bench passes --bench to harness = false targets.
            "--bench" => {}
            "--runs" => args.runs = value("--runs")?.parse().context("--runs")?,
            "--objects" => args.objects = value("--objects")?.parse().context("--objects")?,
            "--concurrency" => {
                args.concurrency = value("--concurrency")?
                    .split(',')
                    .map(|c| {
                        c.trim()
                            .parse()
                            .context("--concurrency: a list like 16,32,64")
                    })
                    .collect::<anyhow::Result<_>>()?
            }
            other => bail!(
                "unknown argument {other:?} (expected --runs N, --objects N, --concurrency 16,32,64)"
            ),
        }
    }
    if args.runs == 0 || args.objects <= NAMESPACES || args.concurrency.contains(&0) {
        bail!("--runs and --concurrency must be positive, --objects more than {NAMESPACES}");
    }
    Ok(args)
}

fn main() -> ExitCode {
    cluster_bench::main(
        "apply",
        "hack/bench-apply.sh",
        "whose contents may be deleted",
        parse_args,
        |args, kubeconfig| async move { run(args, &kubeconfig).await },
    )
}

/// One measured pass.
#[derive(Debug, Clone, Copy)]
struct Pass {
    objects: usize,
    failed: usize,
    seconds: f64,
    /// Requests the apiserver served during the pass (its `apiserver_request_total`).
    requests: f64,
}

impl Pass {
    fn rate(&self) -> f64 {
        self.objects as f64 / self.seconds
    }
}

/// A table row: one case and pass, measured once per round; the median (by rate) is shown.
struct Row {
    payload: String,
    method: String,
    pass: &'static str,
    runs: Vec<Pass>,
}

impl Row {
    /// The rows of one case's first (creating) and second (no-op) pass.
    fn pair(label: &str, method: String) -> (Row, Row) {
        let row = |method, pass| Row {
            payload: label.to_string(),
            method,
            pass,
            runs: Vec::new(),
        };
        (
            row(method.clone(), "first (create)"),
            row(method, "second (no-op)"),
        )
    }
}

impl Row {
    fn median(&self) -> Pass {
        let mut runs = self.runs.clone();
        runs.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
        runs[runs.len() / 2]
    }
}

async fn run(args: Args, kubeconfig: &Path) -> anyhow::Result<()> {
    let (client, version) = cluster_bench::connect(kubeconfig).await?;
    println!(
        "apiserver {version}, {} runs each, median reported",
        args.runs
    );
    install_foreign_crds(&client).await?;

    // The bundled payload, as `cvo apply` loads and filters it.
    let bundled = Payload::from_input(bundled_input(), &LoadOptions::default())?;
    let bundled_config = cli_default_config(&bundled);
    let bundled_manifests = bundled.included(&bundled_config.load_time());

    // Runs outermost: every case once per round, so a change of load on the machine (other
    // builds) spreads over all cases instead of skewing one.
    let label = format!("generated {}", args.objects);
    let mut rows: Vec<Row> = Vec::new();
    let mut case_number = 0;
    for round in 1..=args.runs {
        eprintln!("round {round} of {}", args.runs);
        let mut measured = Vec::new();
        for mode in [Mode::Update, Mode::Install] {
            let case = "bundled 4.18.0";
            clean(&client, &bundled_manifests).await?;
            measured
                .extend(cvo_case(&client, case, &bundled_manifests, &bundled_config, mode).await?);
        }
        let generated_cases = [Some(Mode::Update), Some(Mode::Install)]
            .into_iter()
            .map(|mode| (mode, 0))
            .chain(args.concurrency.iter().map(|&c| (None, c)));
        for (mode, concurrency) in generated_cases {
            // Namespaces of their own for every case: the apiserver's NamespaceLifecycle
            // admission looks a namespace up live (one more GET per object) for 30 s after it
            // saw that namespace deleted, which a clean-up between cases would otherwise cause.
            case_number += 1;
            let dir = tempfile::tempdir().context("create a temp dir")?;
            write_generated(
                dir.path(),
                args.objects,
                &format!("cvo-bench-{case_number}"),
            )?;
            let generated =
                Payload::from_input(read_directory(dir.path())?, &LoadOptions::default())?;
            let config = cli_default_config(&generated);
            let manifests = generated.included(&config.load_time());
            if manifests.len() != args.objects {
                bail!(
                    "the generated payload loaded {} of {} objects",
                    manifests.len(),
                    args.objects
                );
            }
            measured.extend(match mode {
                Some(mode) => cvo_case(&client, &label, &manifests, &config, mode).await?,
                None => plain_case(&client, &label, &manifests, concurrency).await?,
            });
            clean(&client, &manifests).await?;
        }
        for row in measured {
            match rows
                .iter_mut()
                .find(|r| (&r.payload, &r.method, r.pass) == (&row.payload, &row.method, row.pass))
            {
                Some(existing) => existing.runs.extend(row.runs),
                None => rows.push(row),
            }
        }
    }
    clean(&client, &bundled_manifests).await?;
    print_table(&rows);
    Ok(())
}

/// What `cvo apply` uses with no inclusion flags: default profile, Default feature set, no
/// feature gates, vCurrent capabilities, the payload's major version.
fn cli_default_config(payload: &Payload) -> InclusionConfig {
    let gates = BTreeSet::new();
    let caps = set_capabilities(
        &Registry::standard(),
        Some(&CapabilitiesSpec::default()),
        &[],
        &gates,
    );
    InclusionConfig {
        required_feature_set: Some(String::new()),
        profile: Some(DEFAULT_CLUSTER_PROFILE.to_string()),
        capabilities: Some(caps.filter()),
        enabled_feature_gates: Some(gates),
        major_version: payload.major_version(),
        ..Default::default()
    }
}

async fn cvo_case(
    client: &kube::Client,
    label: &str,
    manifests: &[&Manifest],
    config: &InclusionConfig,
    mode: Mode,
) -> anyhow::Result<Vec<Row>> {
    let workers = workers_for(mode, &TaskGraph::build(manifests, mode));
    let method = format!(
        "cvo {} ({workers} workers)",
        if mode == Mode::Update {
            "Update"
        } else {
            "Install"
        }
    );
    let options = ApplyOptions {
        check_cluster_operators: false,
        ..Default::default()
    };
    let (mut first, mut second) = Row::pair(label, method);
    for row in [&mut first, &mut second] {
        let before = request_count(client).await?;
        let t0 = Instant::now();
        let report = apply_payload_with(client, manifests, config, mode, workers, &options).await;
        let seconds = t0.elapsed().as_secs_f64();
        let requests = request_count(client).await? - before;
        eprintln!(
            "  {label}, {}, {}: {} done, {} skipped, {} waiting, {} failed, {} not attempted of {} in {seconds:.2}s",
            row.method,
            row.pass,
            report.done,
            report.skipped,
            report.waiting.len(),
            report.errors.len(),
            report.incomplete,
            report.total
        );
        for e in &report.errors {
            eprintln!("    error: {}: {}", e.reason, e.message);
        }
        row.runs.push(Pass {
            objects: report.done,
            failed: report.errors.len() + report.incomplete,
            seconds,
            requests,
        });
    }
    Ok(vec![first, second])
}

async fn plain_case(
    client: &kube::Client,
    label: &str,
    manifests: &[&Manifest],
    concurrency: usize,
) -> anyhow::Result<Vec<Row>> {
    let discovery = Discovery::new(client.clone()).run().await?;
    // Resolved once, outside the timing, as the CVO's resolver caches its discovery.
    let mut objects = Vec::new();
    for m in manifests {
        let api = api_for(client, &discovery, m)
            .with_context(|| format!("{}: not served by this apiserver", m.describe()))?;
        objects.push((
            api,
            m.id.name.clone(),
            m.object(),
            m.gvk.is("", "Namespace"),
        ));
    }
    let (namespaces, rest): (Vec<_>, Vec<_>) = objects.into_iter().partition(|o| o.3);
    let method = format!("plain SSA loop, {concurrency} in flight");
    let (mut first, mut second) = Row::pair(label, method);
    let params = PatchParams::apply(MANAGER).force();
    for row in [&mut first, &mut second] {
        let before = request_count(client).await?;
        let t0 = Instant::now();
        let mut failed = 0;
        // Namespaces first: nothing can be created in a namespace that does not exist.
        for (api, name, body, _) in &namespaces {
            if let Err(e) = api.patch(name, &params, &Patch::Apply(body)).await {
                eprintln!("    error: namespace {name}: {e}");
                failed += 1;
            }
        }
        let results: Vec<_> = futures_util::stream::iter(rest.iter())
            .map(|(api, name, body, _)| {
                let params = &params;
                async move {
                    api.patch(name, params, &Patch::Apply(body))
                        .await
                        .map_err(|e| format!("{name}: {e}"))
                }
            })
            .buffer_unordered(concurrency)
            .collect()
            .await;
        let seconds = t0.elapsed().as_secs_f64();
        let requests = request_count(client).await? - before;
        for e in results.iter().filter_map(|r| r.as_ref().err()) {
            eprintln!("    error: {e}");
            failed += 1;
        }
        let total = namespaces.len() + rest.len();
        eprintln!(
            "  {label}, {}, {}: {} applied, {failed} failed in {seconds:.2}s",
            row.method,
            row.pass,
            total - failed
        );
        row.runs.push(Pass {
            objects: total - failed,
            failed,
            seconds,
            requests,
        });
    }
    Ok(vec![first, second])
}

fn print_table(rows: &[Row]) {
    // The apiserver's limit for a pass: the best plain-loop median of that pass.
    let limit = |pass: &str| {
        rows.iter()
            .filter(|r| r.pass == pass && r.method.starts_with("plain"))
            .map(|r| r.median().rate())
            .fold(0.0, f64::max)
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n| payload | method | pass | objects | failed | time (median) | objects/s | vs plain loop | requests/object |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for row in rows {
        let m = row.median();
        let ratio = if row.payload.starts_with("generated") && limit(row.pass) > 0.0 {
            format!("{:.2}", m.rate() / limit(row.pass))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.2} s | {:.0} | {ratio} | {:.2} |",
            row.payload,
            row.method,
            row.pass,
            m.objects,
            m.failed,
            m.seconds,
            m.rate(),
            m.requests / m.objects.max(1) as f64
        );
    }
    println!("{out}");
}

/// Every request the apiserver has served so far (the sum of `apiserver_request_total` in its
/// `/metrics`), to count the requests a pass makes per object. Read before and after a pass,
/// outside its timing; the read itself adds one request.
async fn request_count(client: &kube::Client) -> anyhow::Result<f64> {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .context("build the /metrics request")?;
    let text = client
        .request_text(request)
        .await
        .context("read the apiserver's /metrics")?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

fn api_for(
    client: &kube::Client,
    discovery: &Discovery,
    m: &Manifest,
) -> Option<Api<DynamicObject>> {
    let gvk = GroupVersionKind::gvk(&m.gvk.group, &m.gvk.version, &m.gvk.kind);
    let (resource, caps) = discovery.resolve_gvk(&gvk)?;
    Some(match caps.scope {
        Scope::Cluster => Api::all_with(client.clone(), &resource),
        Scope::Namespaced => Api::namespaced_with(client.clone(), &m.id.namespace, &resource),
    })
}

/// Removes every object of `manifests` and waits until they are gone. No
/// kube-controller-manager runs on the benchmark apiserver, so nothing would finish a namespace
/// deletion: the namespaces are emptied first (their objects are all in the payload), then
/// deleted and finalized here, as the namespace controller would.
async fn clean(client: &kube::Client, manifests: &[&Manifest]) -> anyhow::Result<()> {
    let discovery = Discovery::new(client.clone()).run().await?;
    let (namespaces, objects): (Vec<_>, Vec<_>) = manifests
        .iter()
        .filter_map(|m| api_for(client, &discovery, m).map(|api| (api, m.id.name.clone(), m)))
        .partition(|(_, _, m)| m.gvk.is("", "Namespace"));
    // Custom resources before their definitions: a CRD deleted while its instances are being
    // deleted too leaves the apiserver's CRD finalizer retrying with a growing back-off.
    let (crds, objects): (Vec<_>, Vec<_>) = objects
        .into_iter()
        .partition(|(_, _, m)| m.gvk.is("apiextensions.k8s.io", "CustomResourceDefinition"));
    for batch in [objects, crds] {
        let deletions: Vec<anyhow::Result<()>> = futures_util::stream::iter(batch.iter())
            .map(|(api, name, _)| delete_and_wait(api, name))
            .buffer_unordered(32)
            .collect()
            .await;
        deletions.into_iter().collect::<anyhow::Result<()>>()?;
    }
    let ns_api: Api<Namespace> = Api::all(client.clone());
    for (_, name, _) in &namespaces {
        let Some(mut ns) = ns_api.get_opt(name).await? else {
            continue;
        };
        if ns.metadata.deletion_timestamp.is_none() {
            ns_api.delete(name, &DeleteParams::default()).await?;
            match ns_api.get_opt(name).await? {
                Some(deleting) => ns = deleting,
                None => continue,
            }
        }
        if let Some(spec) = ns.spec.as_mut() {
            spec.finalizers = Some(Vec::new());
        }
        let namespaces_resource = ApiResource::erase::<Namespace>(&());
        let raw: Api<DynamicObject> = Api::all_with(client.clone(), &namespaces_resource);
        raw.replace_subresource("finalize", name, &PostParams::default(), &ns)
            .await
            .with_context(|| format!("finalize namespace {name}"))?;
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &namespaces_resource);
        delete_and_wait(&api, name).await?;
    }
    Ok(())
}

/// Deletes an object (already gone is fine) and polls until the apiserver no longer has it
/// (CRDs and finalized namespaces disappear asynchronously), at most 90 s. Background
/// propagation: the default for Jobs is to orphan their pods, which puts a finalizer on the Job
/// that only the garbage collector (not running here) removes; such garbage-collector finalizers
/// left by an earlier run are removed too.
async fn delete_and_wait(api: &Api<DynamicObject>, name: &str) -> anyhow::Result<()> {
    const GC_FINALIZERS: [&str; 2] = ["orphan", "foregroundDeletion"];
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("delete {name}")),
    }
    const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";
    let started = Instant::now();
    while let Some(object) = api.get_opt(name).await? {
        let finalizers = object.metadata.finalizers.unwrap_or_default();
        if finalizers
            .iter()
            .any(|f| GC_FINALIZERS.contains(&f.as_str()))
        {
            let kept: Vec<_> = finalizers
                .iter()
                .filter(|f| !GC_FINALIZERS.contains(&f.as_str()))
                .collect();
            let patch = json!({"metadata": {"finalizers": kept}});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("remove the garbage collector's finalizers of {name}"))?;
            continue;
        }
        // The apiserver's CRD finalizer deletes a CRD's instances, then itself; after an error
        // it retries with an exponential back-off that once outlasted a minute here. The
        // instances the benchmark made are already deleted (custom resources go first), so
        // after 30 s the finalizer is removed as `kubectl patch` would.
        if started.elapsed() > Duration::from_secs(30) && finalizers == [CRD_CLEANUP] {
            eprintln!("  {name}: still finalizing 30 s after its deletion; removing {CRD_CLEANUP}");
            let patch = json!({"metadata": {"finalizers": []}});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("remove the finalizer of {name}"))?;
            continue;
        }
        if started.elapsed() > Duration::from_secs(90) {
            bail!("{name} still exists 90 s after its deletion (finalizers {finalizers:?})");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// A payload root of `objects` documents: `release-manifests/` with the namespaces at run
/// level 05 and the rest spread round-robin over 5 run levels x 4 components, one object per
/// file (`0000_<level>_<component>_<nnnn>_<kind>.yaml`), plus a release-metadata.
fn write_generated(root: &Path, objects: usize, namespace_prefix: &str) -> anyhow::Result<()> {
    let dir = root.join("release-manifests");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("release-metadata"),
        r#"{"kind":"cincinnati-metadata-v0","version":"4.18.0"}"#,
    )?;
    for n in 0..NAMESPACES {
        std::fs::write(
            dir.join(format!("0000_05_bench-namespaces_{n:04}_namespace.yaml")),
            format!(
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace_prefix}-{n}\n{PROFILE_ANNOTATION}"
            ),
        )?;
    }
    let components = RUN_LEVELS.len() * COMPONENTS.len();
    for i in 0..objects - NAMESPACES {
        let c = i % components;
        let level = RUN_LEVELS[c / COMPONENTS.len()];
        let component = COMPONENTS[c % COMPONENTS.len()];
        let namespace = format!("{namespace_prefix}-{}", i % NAMESPACES);
        let name = format!("{component}-{level}-{i:05}");
        // The CVO applies only what the cluster's profile includes.
        let annotations = PROFILE_ANNOTATION;
        // Mostly ConfigMaps, as in a real payload's simple objects; every kind is a plain
        // object the apiserver stores without any controller.
        let (kind, body) = match i % 20 {
            0..=11 => (
                "configmap",
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\n{annotations}data:\n  config.yaml: |\n    component: {component}\n    level: \"{level}\"\n    index: {i}\n    note: {note}\n",
                    note = "x".repeat(200)
                ),
            ),
            12..=14 => (
                "secret",
                format!(
                    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\n{annotations}type: Opaque\nstringData:\n  token: {name}-token\n"
                ),
            ),
            15..=16 => (
                "serviceaccount",
                format!(
                    "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {name}\n  namespace: {namespace}\n{annotations}"
                ),
            ),
            17..=18 => (
                "role",
                format!(
                    "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {name}\n  namespace: {namespace}\n{annotations}rules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get, list, watch]\n"
                ),
            ),
            _ => (
                "rolebinding",
                format!(
                    "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {name}\n  namespace: {namespace}\n{annotations}roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {name}\nsubjects:\n- kind: ServiceAccount\n  name: default\n  namespace: {namespace}\n"
                ),
            ),
        };
        std::fs::write(
            dir.join(format!("0000_{level}_{component}_{i:04}_{kind}.yaml")),
            body,
        )?;
    }
    Ok(())
}
