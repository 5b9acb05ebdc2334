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

fn ctx() -> Context {
    Context::at("2024-05-01T12:00:00Z".parse().expect("a timestamp"))
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
        eprintln!(
            "dt_offline/converge/{objects}x{namespaces}ns: {count} objects in, {} out, {} rounds, converged {}, {bound} of {claims} claims Bound, {} errors",
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
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
