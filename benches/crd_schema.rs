//! What the preflight's check of stored objects costs (`cvo::crd_schema`), in process:
//! `cargo bench --bench crd_schema`. What BENCHMARKS.md records under "Preflight: stored
//! objects against a CRD schema". The schemas come from the real payload in
//! `../shared/corpus` (skipped when absent):
//!
//! * `compile_corpus`: every version schema of the payload's CRDs compiled (their validation
//!   rules compiled by cel-rust), as a preflight does for the CRDs an update changes;
//! * `check_ingresscontroller`: 1,000 IngressControllers (a spec of 9 fields, nested objects and
//!   lists) checked against the operator.openshift.io/v1 schema, one of the payload's largest
//!   (pruning, defaulting, validation and its CEL rules). Throughput is in objects per second.

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

use cvo::crd_schema::Schema;
use cvo::payload::{LoadOptions, Payload, read_directory};

const CORPUS: &str = "../shared/corpus/openshift-payload";

fn schemas(payload: &Payload) -> Vec<(String, Value)> {
    let crds = (payload.manifests.iter())
        .filter(|m| m.gvk.is("apiextensions.k8s.io", "CustomResourceDefinition"));
    let mut out = Vec::new();
    for crd in crds {
        let object = crd.object();
        let versions = object.pointer("/spec/versions").and_then(Value::as_array);
        for v in versions.into_iter().flatten() {
            if let Some(schema) = v.pointer("/schema/openAPIV3Schema") {
                out.push((format!("{} {}", crd.file, crd.id.name), schema.clone()));
            }
        }
    }
    out
}

fn ingress_controller(i: usize) -> Value {
    json!({
        "apiVersion": "operator.openshift.io/v1", "kind": "IngressController",
        "metadata": {"name": format!("ingress-{i}"), "namespace": "openshift-ingress-operator",
                     "uid": "0b7c1f9e-4a57-4d2b-9a5e-1f6f2b3c4d5e", "resourceVersion": "12345",
                     "labels": {"team": "a"}},
        "spec": {
            "replicas": 2,
            "domain": format!("apps-{i}.example.com"),
            "endpointPublishingStrategy": {"type": "LoadBalancerService",
                "loadBalancer": {"scope": "External", "dnsManagementPolicy": "Managed"}},
            "nodePlacement": {"nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
                "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}]},
            "tlsSecurityProfile": {"type": "Intermediate", "intermediate": {}},
            "httpHeaders": {"forwardedHeaderPolicy": "Append",
                "actions": {"response": [{"name": "X-Frame-Options",
                    "action": {"type": "Set", "set": {"value": "DENY"}}}]}},
            "routeAdmission": {"namespaceOwnership": "Strict", "wildcardPolicy": "WildcardsDisallowed"},
            "logging": {"access": {"destination": {"type": "Container"}}},
            "tuningOptions": {"maxConnections": 20000, "headerBufferBytes": 32768}
        }
    })
}

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS);
    if !dir.is_dir() {
        eprintln!(
            "skipping the crd_schema benchmarks: {} is absent",
            dir.display()
        );
        return;
    }
    let payload = Payload::from_input(
        read_directory(&dir).expect("the corpus payload"),
        &LoadOptions::default(),
    )
    .expect("the corpus payload loads");
    let all = schemas(&payload);
    let mut group = c.benchmark_group("crd_schema");
    group.sample_size(10);
    group.throughput(Throughput::Elements(all.len() as u64));
    group.bench_function("compile_corpus", |b| {
        b.iter(|| {
            (all.iter())
                .filter_map(|(_, s)| Schema::new(s).ok())
                .count()
        })
    });
    let (_, ingress) = (all.iter())
        .find(|(name, _)| {
            name.starts_with("0000_50_cluster-ingress-operator_00-custom-resource-definition.yaml ")
        })
        .expect("the IngressController CRD in the corpus");
    let schema = Schema::new(ingress).expect("the IngressController schema compiles");
    let objects: Vec<Value> = (0..1000).map(ingress_controller).collect();
    let outcome = schema.check(&objects[0]);
    assert!(
        outcome.violations.is_empty() && outcome.pruned.is_empty(),
        "the bench's IngressController is valid: {outcome:?}"
    );
    group.throughput(Throughput::Elements(objects.len() as u64));
    group.bench_function("check_ingresscontroller", |b| {
        b.iter(|| {
            objects
                .iter()
                .map(|o| schema.check(o).violations.len())
                .sum::<usize>()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
