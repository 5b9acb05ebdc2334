//! The Open Horizon constraint language (`components::edge::constraints`), in process:
//! `cargo bench --bench edge_constraints`. What BENCHMARKS.md records under "Edge constraint
//! evaluations".
//!
//! One node's eight properties (`testdata/edge/node.json`: strings, ints, a boolean, a list, a
//! version) against a deployment policy's three constraints, which test each kind of property
//! (`==`, `>=`, `in` a list, `in` a version range, `!=`, `||`, parentheses):
//!
//! * `eval_parsed`: the three constraints parsed once, then decided (`eval::holds`): the cost
//!   of one decision when a policy's parse is kept;
//! * `validate_parse_eval`: `eval::satisfied`, which validates, parses and decides each time,
//!   as `cvo edge constraints` and the compatibility check do;
//! * `compatible`: both directions of `eval::are_compatible` (the node's own constraint
//!   against the policy's properties too).
//!
//! Throughput is in constraint arrays decided per second.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

use cvo::components::edge::constraints::{self, eval};
use cvo::components::edge::properties::Property;

const CONSTRAINTS: [&str; 3] = [
    "purpose == network-testing && openhorizon.cpu >= 2",
    "(openhorizon.arch in \"amd64,arm64\" || openhorizon.memory > 8192) AND languages in \"es,de\"",
    "firmware in [2.0.0,3.0.0) && openhorizon.kubernetesNamespaceScoped != true",
];

fn node() -> Vec<Property> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/edge/node.json"
    ))
    .expect("testdata/edge/node.json");
    serde_json::from_str(&text).expect("node properties")
}

fn bench(c: &mut Criterion) {
    let node = node();
    // The constraints must hold, so that every term is evaluated.
    assert_eq!(eval::satisfied(&CONSTRAINTS, &node), Ok(true));
    let trees: Vec<_> = CONSTRAINTS
        .iter()
        .map(|c| constraints::parse(c).expect("valid"))
        .collect();
    let mut group = c.benchmark_group("edge_constraints");
    group.throughput(Throughput::Elements(1));
    group.bench_function("eval_parsed", |b| {
        b.iter(|| {
            trees
                .iter()
                .all(|tree| eval::holds(std::hint::black_box(tree), &node) == Ok(true))
        })
    });
    group.bench_function("validate_parse_eval", |b| {
        b.iter(|| eval::satisfied(std::hint::black_box(&CONSTRAINTS), &node))
    });
    let producer = eval::PolicySide {
        properties: node.clone(),
        constraints: vec!["tier == gold || tier == silver".to_owned()],
    };
    let consumer = eval::PolicySide {
        properties: vec![Property::new("tier", json!("gold"))],
        constraints: CONSTRAINTS.iter().map(|c| c.to_string()).collect(),
    };
    group.bench_function("compatible", |b| {
        b.iter(|| eval::are_compatible(std::hint::black_box(&producer), &consumer))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
