//! Load, include and render throughput on the real corpus and on generated payloads.
//!
//! `cargo bench --bench load`. The corpus comes from `../shared/corpus` (skipped when absent);
//! generated payloads are written by `hack/gen-payload.rs` (included here) into a temp dir.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "../hack/gen-payload.rs"]
mod gen_payload;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;

use cvo::capability::{Registry, set_capabilities};
use cvo::include::{DEFAULT_CLUSTER_PROFILE, InclusionConfig};
use cvo::payload::{LoadOptions, Payload, PayloadInput, read_directory};
use cvo::render::{Format, render};

fn default_install() -> InclusionConfig {
    let caps = set_capabilities(&Registry::standard(), None, &[], &BTreeSet::new());
    InclusionConfig {
        required_feature_set: Some(String::new()),
        profile: Some(DEFAULT_CLUSTER_PROFILE.into()),
        capabilities: Some(caps.filter()),
        enabled_feature_gates: Some(BTreeSet::new()),
        ..Default::default()
    }
}

fn load(dir: &Path) -> Payload {
    let input = read_directory(std::path::Path::new(&dir)).unwrap();
    Payload::from_input(input, &LoadOptions::default()).unwrap()
}

/// The baseline: only split and parse every document with the chosen parser, on all cores.
fn parse_only(input: &PayloadInput) -> usize {
    input
        .manifests
        .iter()
        .chain(&input.release_manifests)
        .collect::<Vec<_>>()
        .par_iter()
        .map(|file| {
            let text = std::str::from_utf8(file.contents.as_ref().unwrap()).unwrap();
            let chunks = cvo::yaml::split_stream(text).unwrap();
            chunks
                .iter()
                .filter(|c| {
                    c.json.is_some() || !cvo::yaml::parse_document(c.text).unwrap().is_null()
                })
                .count()
        })
        .sum()
}

fn bench_payload(c: &mut Criterion, name: &str, dir: &Path) {
    let config = default_install();
    let documents = load(dir).manifests.len() as u64;
    let input = read_directory(std::path::Path::new(&dir)).unwrap();
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(documents));
    group.sample_size(if documents > 5_000 { 10 } else { 30 });
    group.bench_function("parse_only", |b| b.iter(|| parse_only(&input)));
    group.bench_function("read_and_parse_only", |b| {
        b.iter(|| parse_only(&read_directory(std::path::Path::new(&dir)).unwrap()))
    });
    group.bench_function("load", |b| b.iter(|| load(dir).manifests.len()));
    group.bench_function("load_include", |b| {
        b.iter(|| load(dir).included(&config).len())
    });
    group.bench_function("load_include_render", |b| {
        b.iter(|| {
            render(&load(dir), &config, Format::Original)
                .unwrap()
                .files
                .len()
        })
    });
    group.finish();
}

fn corpus(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/openshift-payload");
    if !dir.is_dir() {
        eprintln!(
            "skipping the corpus benchmarks: {} is absent",
            dir.display()
        );
        return;
    }
    bench_payload(c, "corpus", &dir);
}

fn generate(documents: usize) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("payload");
    gen_payload::run(&gen_payload::Args {
        out: dir.clone(),
        documents,
        seed: 1,
        forms: false,
    })
    .unwrap();
    (tmp, dir)
}

/// Cost per document should not grow with the payload: same docs/s at 2k, 5k and 20k.
fn generated(c: &mut Criterion) {
    let config = default_install();
    let mut group = c.benchmark_group("generated");
    group.sample_size(10);
    // Under `cargo test` (no --bench) criterion runs each function once: keep that cheap.
    let sizes: &[usize] = if std::env::args().any(|a| a == "--bench") {
        &[2_000, 5_000, 20_000]
    } else {
        &[200]
    };
    for &documents in sizes {
        let (_tmp, dir) = generate(documents);
        group.throughput(Throughput::Elements(documents as u64));
        group.bench_with_input(
            BenchmarkId::new("load_include", documents),
            &dir,
            |b, dir| b.iter(|| load(dir).included(&config).len()),
        );
    }
    group.finish();
}

criterion_group!(benches, corpus, generated, corpus_validate);
criterion_main!(benches);

/// `cvo validate` on the corpus: reading the files and every check (`corpus/validate`).
fn corpus_validate(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/openshift-payload");
    if !dir.is_dir() {
        return;
    }
    let options = cvo::validate::Options::default();
    let mut group = c.benchmark_group("corpus");
    group.sample_size(30);
    group.bench_function("validate", |b| {
        b.iter(|| {
            let input = cvo::validate::ValidateInput {
                payload: read_directory(&dir).unwrap(),
                listing: Vec::new(),
            };
            cvo::validate::validate(&input, &options).findings.len()
        })
    });
    group.finish();
}
