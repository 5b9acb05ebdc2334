//! The update side's pure work on a large graph: reading a graph of 1,000 nodes with 100
//! conditional edges from the current version, and evaluating the 100 conditional updates'
//! risks (rules, `Recommended`) once their `PromQL` answers are known.
//!
//! `cargo bench --bench updates`. The `PromQL` queries themselves are not measured: upstream's
//! cache lets one through per second, so 100 distinct `PromQL` risks take at least 100 s of
//! wall time whatever the client does (see BENCHMARKS.md).

use std::collections::BTreeSet;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

use cvo::updates::graph::{parse, updates};
use cvo::updates::recommend::recommendation;
use cvo::updates::rules::{Applies, RiskConditions, match_rules, risks_in_order};
use cvo::updates::{Query, graph_request};

/// 1,000 nodes: 4.18.0 (current) to 4.18.999; edges from 4.18.0 to the next 899, conditional
/// edges from 4.18.0 to the last 100, each with its own `PromQL` risk.
fn graph() -> Vec<u8> {
    let nodes: Vec<_> = (0..1000)
        .map(|i| {
            json!({"version": format!("4.18.{i}"), "payload": format!("quay.io/r@sha256:{i:064x}"),
                   "metadata": {"url": format!("https://errata/{i}"),
                                "io.openshift.upgrades.graph.release.channels": "stable-4.18,fast-4.18"}})
        })
        .collect();
    let edges: Vec<_> = (1..900).map(|i| json!([0, i])).collect();
    let conditional: Vec<_> = (900..1000)
        .map(|i| {
            json!({"edges": [{"from": "4.18.0", "to": format!("4.18.{i}")}],
                   "risks": [{"url": format!("https://bug/{i}"), "name": format!("Risk{i}"),
                              "message": "It hurts.",
                              "matchingRules": [{"type": "PromQL", "promql": {"promql":
                                  format!("group(cluster_version_capability{{name=\"C{i}\",enabled=\"true\"}}) or vector(0)")}}]}]})
        })
        .collect();
    json!({"nodes": nodes, "edges": edges, "conditionalEdges": conditional})
        .to_string()
        .into_bytes()
}

fn bench(c: &mut Criterion) {
    let body = graph();
    let request = graph_request(&Query {
        upstream: "https://updates.example/graph".into(),
        cluster_id: "0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a61".into(),
        desired_arch: "amd64".into(),
        current_arch: "amd64".into(),
        channel: "stable-4.18".into(),
        version: "4.18.0".into(),
    })
    .unwrap();
    let found = updates(&parse(&body).unwrap(), &request).unwrap();
    assert_eq!((found.updates.len(), found.conditional.len()), (899, 100));

    let mut group = c.benchmark_group("updates");
    group.bench_function("graph_1000_nodes_100_conditional/parse_and_updates", |b| {
        b.iter(|| updates(&parse(&body).unwrap(), &request).unwrap())
    });
    // Half the risks match: what the evaluation does besides the queries.
    let accepted = BTreeSet::new();
    group.bench_function("risks_100_conditional/rules_and_recommended", |b| {
        b.iter(|| {
            let mut conditions = RiskConditions::new();
            for (n, risk) in risks_in_order(&found.conditional).into_iter().enumerate() {
                let result = match_rules(&risk.matching_rules, |_| Ok(n % 2 == 0));
                conditions.insert(risk.name.clone(), Applies::from_result(risk, result));
            }
            (found.conditional.iter())
                .filter(|u| recommendation(&u.risks, &conditions, &accepted).is_recommended())
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
