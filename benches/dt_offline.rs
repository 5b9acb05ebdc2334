//! `cvo dt reconcile`'s fixpoint loop (`components::deployment_targets::offline::run`) on
//! generated worlds, in process: `cargo bench --bench dt_offline`. What BENCHMARKS.md records
//! under "`cvo dt reconcile` on 10,000 objects".
//!
//! A world of `objects` objects spread evenly over `namespaces` namespaces, each namespace
//! holding (in tenths of its share) 4 DeploymentTargets, 4 DeploymentTargetClaims, 1 Environment
//! and 1 Secret, plus its Namespace and two classes:
//!
//! * `byo` (`example.com/manual`, Retain): every target, user-made, with credentials and no
//!   phase; 9 in 10 claims ask for it, so a tenth of the targets stays `Available`;
//! * `provisioned` (`appstudio.redhat.com/namespace`, Delete): the other claims, which no target
//!   matches, so the binder marks them, the namespace provisioner makes a namespace, a
//!   ServiceAccount, a RoleBinding, a kubeconfig Secret and a target for each, and they bind;
//! * Environments on the first claims (`configuration.target.deploymentTargetClaim`), and the
//!   Secrets the targets name as credentials.
//!
//! Before measuring, each world is run once and its rounds, convergence and object count
//! printed; the run must converge without errors.
//!
//! `dt_offline/load`: reading the input alone (`load::load`), on streams of 10,000, 50,000 and
//! 100,000 Namespaces and on worlds of as many objects (500 a namespace), as YAML; then the whole
//! command once on each 100,000.
//!
//! `dt_offline/cli`: the whole command, `cvo dt reconcile -f FILE` (the release binary) on the
//! 10,000-object world written as a YAML stream, output to `/dev/null`: reading, loading, the
//! loop and writing the resulting YAML. One more run under `/usr/bin/time` (when there is one)
//! prints its peak RSS.

use std::process::{Command, Stdio};

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

use cvo::components::deployment_targets::model::{Context, Kind, Object, World};
use cvo::components::deployment_targets::offline;
use cvo::components::deployment_targets::types::ClaimPhase;

/// Far more than any of these worlds needs (5 rounds): a run that does not converge fails.
const MAX_ROUNDS: usize = 100;

fn object(kind: Kind, value: Value) -> Object {
    Object::from_value(kind, value).expect("a generated object")
}

/// A world of about `objects` objects (see the module's documentation) in `namespaces`
/// namespaces.
fn world(objects: usize, namespaces: usize) -> World {
    let mut w = World::new();
    let mut add = |kind: Kind, value: Value| w.insert(object(kind, value));
    let v = "appstudio.redhat.com/v1alpha1";
    for (name, provisioner, policy) in [
        ("byo", "example.com/manual", "Retain"),
        ("provisioned", "appstudio.redhat.com/namespace", "Delete"),
    ] {
        add(
            Kind::DeploymentTargetClass,
            json!({"apiVersion": v, "kind": "DeploymentTargetClass",
                   "metadata": {"name": name, "resourceVersion": "1"},
                   "spec": {"provisioner": provisioner, "reclaimPolicy": policy}}),
        );
    }
    let tenth = objects / namespaces / 10;
    for n in 0..namespaces {
        let ns = format!("team-{n:02}");
        let meta = |name: &str| json!({"name": name, "namespace": ns, "resourceVersion": "1"});
        add(
            Kind::Namespace,
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": ns, "resourceVersion": "1"}}),
        );
        for i in 0..tenth {
            add(
                Kind::Secret,
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta(&format!("creds-{i:05}")),
                       "type": "managed-gitops.redhat.com/managed-environment",
                       "stringData": {"kubeconfig": "apiVersion: v1\nkind: Config\n"}}),
            );
        }
        for i in 0..4 * tenth {
            add(
                Kind::DeploymentTarget,
                json!({"apiVersion": v, "kind": "DeploymentTarget", "metadata": meta(&format!("dt-{i:05}")),
                       "spec": {"deploymentTargetClassName": "byo",
                                "kubernetesCredentials": {"defaultNamespace": "deploy",
                                    "apiURL": format!("https://api.c{i}.example:6443"),
                                    "clusterCredentialsSecret": format!("creds-{:05}", i % tenth),
                                    "allowInsecureSkipTLSVerify": false}}}),
            );
        }
        for i in 0..4 * tenth {
            let class = match i % 10 {
                9 => "provisioned",
                _ => "byo",
            };
            add(
                Kind::DeploymentTargetClaim,
                json!({"apiVersion": v, "kind": "DeploymentTargetClaim",
                       "metadata": meta(&format!("dtc-{i:05}")),
                       "spec": {"deploymentTargetClassName": class}}),
            );
        }
        for i in 0..tenth {
            add(
                Kind::Environment,
                json!({"apiVersion": v, "kind": "Environment", "metadata": meta(&format!("env-{i:05}")),
                       "spec": {"displayName": format!("env {i}"), "deploymentStrategy": "AppStudioAutomated",
                                "configuration": {"target": {"deploymentTargetClaim": {
                                    "claimName": format!("dtc-{i:05}")}}}}}),
            );
        }
    }
    w
}

/// The clock of every run.
const NOW: &str = "2024-05-01T12:00:00Z";

fn ctx() -> Context {
    Context::at(NOW.parse().expect("a timestamp"))
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("dt_offline");
    group.sample_size(10);
    for (objects, namespaces) in [(2_500, 20), (5_000, 20), (10_000, 20), (10_000, 1)] {
        let start = world(objects, namespaces);
        let count = start.objects().count();
        let report = offline::run(start.clone(), &ctx(), MAX_ROUNDS);
        let claims = report.world.of_kind(Kind::DeploymentTargetClaim).count();
        let bound = (report.world.of_kind(Kind::DeploymentTargetClaim))
            .filter(|o| matches!(o, Object::Claim(c) if c.phase() == Some(ClaimPhase::Bound)))
            .count();
        let managed = (report.world)
            .of_kind(Kind::GitOpsDeploymentManagedEnvironment)
            .count();
        eprintln!(
            "dt_offline/converge/{objects}x{namespaces}ns: {count} objects in, {} out, {} rounds, converged {}, {bound} of {claims} claims Bound, {managed} managed environments, {} errors",
            report.world.objects().count(),
            report.rounds,
            report.converged,
            report.errors.len()
        );
        assert!(report.converged, "did not converge in {MAX_ROUNDS} rounds");
        assert_eq!(report.errors, vec![], "errors");
        assert_eq!(bound, claims, "every claim binds");
        group.throughput(Throughput::Elements(count as u64));
        group.bench_with_input(
            BenchmarkId::new("converge", format!("{objects}x{namespaces}ns")),
            &start,
            |b, start| {
                b.iter_batched(
                    || start.clone(),
                    |w| offline::run(w, &ctx(), MAX_ROUNDS),
                    BatchSize::LargeInput,
                )
            },
        );
    }
    bench_cli(&mut group);
    bench_load(&mut group);
    group.finish();
}

/// `cvo dt reconcile`'s input, read (`load::load`): YAML streams of 10,000, 50,000 and 100,000
/// Namespaces (a linear scan for duplicates made this quadratic: 20,000 took 38 s), and worlds of
/// as many objects (targets, claims, Environments, Secrets; 500 objects a namespace), to show
/// that it is linear. The whole command on the 100,000 Namespaces and on the 100,000-object
/// world, once each, under `/usr/bin/time`: reading, loading, the loop, writing the YAML.
fn bench_load(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    use cvo::components::deployment_targets::load::load;
    let namespaces = |n: usize| -> String {
        (0..n)
            .map(|i| format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-{i:06}\n"))
            .collect::<Vec<_>>()
            .join("---\n")
    };
    let mixed = |n: usize| -> String {
        let values: Vec<Value> = world(n, n / 500).objects().map(Object::to_value).collect();
        serde_saphyr::to_string_multiple(&values).expect("YAML of the objects")
    };
    let mut inputs: Vec<(String, String)> = Vec::new();
    for n in [10_000, 50_000, 100_000] {
        inputs.push((format!("{n}-namespaces"), namespaces(n)));
    }
    for n in [10_000, 50_000, 100_000] {
        inputs.push((format!("{n}-in-{}ns", n / 500), mixed(n)));
    }
    for (name, text) in &inputs {
        let started = std::time::Instant::now();
        let loaded = load(text).expect("the stream loads");
        let objects = loaded.world.objects().count();
        eprintln!(
            "dt_offline/load/{name}: {objects} objects, {:.1} MB of YAML, {:.2?} (one run)",
            text.len() as f64 / 1e6,
            started.elapsed()
        );
        group.throughput(Throughput::Elements(objects as u64));
        group.bench_with_input(BenchmarkId::new("load", name), text, |b, text| {
            b.iter(|| load(text).expect("the stream loads"))
        });
    }
    if !std::path::Path::new("/usr/bin/time").exists() {
        return;
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    for (name, text) in [&inputs[2], &inputs[5]] {
        let file = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&file, text).expect("write the objects");
        let file = file.to_str().expect("a UTF-8 temp path");
        let output = Command::new("/usr/bin/time")
            .args(["-f", "%e s wall, %U s user, %S s system, %M KiB peak RSS"])
            .args([
                env!("CARGO_BIN_EXE_cvo"),
                "dt",
                "reconcile",
                "-f",
                file,
                "--now",
                NOW,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("run cvo dt reconcile");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "cvo dt reconcile: {stderr}");
        eprintln!(
            "dt_offline/cli/{name}: cvo dt reconcile -f FILE: {}",
            stderr.lines().last().unwrap_or_default()
        );
    }
}

fn bench_cli(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let (objects, namespaces) = (10_000, 20);
    let start = world(objects, namespaces);
    let values: Vec<Value> = start.objects().map(Object::to_value).collect();
    let yaml = serde_saphyr::to_string_multiple(&values).expect("YAML of the objects");
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("objects.yaml");
    std::fs::write(&file, &yaml).expect("write the objects");
    let file = file.to_str().expect("a UTF-8 temp path");
    let args = ["dt", "reconcile", "-f", file, "--now", NOW];
    let cvo = env!("CARGO_BIN_EXE_cvo");
    let run = |command: &mut Command| {
        let output = (command.stdout(Stdio::null()).stderr(Stdio::piped()))
            .output()
            .expect("run cvo dt reconcile");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "cvo dt reconcile: {stderr}");
        stderr
    };
    if std::path::Path::new("/usr/bin/time").exists() {
        let format = "%e s wall, %U s user, %S s system, %M KiB peak RSS";
        let measured = run(Command::new("/usr/bin/time")
            .args(["-f", format, cvo])
            .args(args));
        eprintln!(
            "dt_offline/cli/{objects}x{namespaces}ns: cvo dt reconcile -f FILE ({} objects, {:.1} MB of YAML): {}",
            values.len(),
            yaml.len() as f64 / 1e6,
            measured.lines().last().unwrap_or_default()
        );
    }
    group.throughput(Throughput::Elements(values.len() as u64));
    group.bench_function(
        BenchmarkId::new("cli", format!("{objects}x{namespaces}ns")),
        |b| b.iter(|| run(Command::new(cvo).args(args))),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
