//! The fuzz targets' seed corpus and their crash regressions, replayed as ordinary tests in the
//! normal (uninstrumented) test build: every input `hack/fuzz.sh` starts from, and every
//! finding kept under `fuzz/regressions/TARGET/`, goes through the same function the fuzzer
//! runs (`fuzz/src/lib.rs`), which panics when the library panics or breaks an invariant.
//! Coverage-guided fuzzing itself runs apart (`hack/fuzz.sh`; figures in BENCHMARKS.md).

#[allow(dead_code)]
#[path = "../fuzz/src/lib.rs"]
mod targets;

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Seed files up to this size, as `hack/fuzz.sh` takes them.
const MAX_SEED_BYTES: u64 = 16384;

/// The regular files of `dirs` (those that exist) up to `max` bytes, not recursing.
fn files(dirs: &[PathBuf], max: u64) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_file() && meta.len() <= max {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("CVO_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared/corpus"));
    dir.is_dir().then_some(dir)
}

fn payload_dirs(sub: &str) -> Vec<PathBuf> {
    ["4.17.0", "4.18.0"]
        .iter()
        .map(|v| repo().join("payloads").join(v).join(sub))
        .collect()
}

/// The regression inputs of `target`: findings fixed, kept so they never come back.
fn regressions(target: &str) -> Vec<PathBuf> {
    files(&[repo().join("fuzz/regressions").join(target)], u64::MAX)
}

/// Runs `fuzz` over every input, naming the one that panics.
fn replay(target: &str, inputs: Vec<PathBuf>, fuzz: fn(&[u8])) {
    assert!(!inputs.is_empty(), "{target}: no seeds found");
    for input in &inputs {
        let data = std::fs::read(input).unwrap();
        let result = std::panic::catch_unwind(|| fuzz(&data));
        assert!(
            result.is_ok(),
            "{target}: {} breaks the target (reproduce: hack/fuzz.sh's binary < FILE)",
            input.display()
        );
    }
    eprintln!("{target}: {} inputs replayed", inputs.len());
}

fn yaml_seeds() -> Vec<PathBuf> {
    let mut dirs = vec![
        repo().join("fuzz/seeds/yaml"),
        repo().join("fuzz/seeds/manifest"),
    ];
    dirs.extend(payload_dirs("release-manifests"));
    if let Some(corpus) = corpus() {
        dirs.push(corpus.join("openshift-payload/release-manifests"));
        dirs.push(corpus.join("openshift-payload/manifests"));
    }
    files(&dirs, MAX_SEED_BYTES)
}

#[test]
fn yaml_seeds_and_regressions() {
    let mut inputs = yaml_seeds();
    inputs.extend(regressions("yaml"));
    replay("yaml", inputs, targets::fuzz_yaml);
}

#[test]
fn manifest_seeds_and_regressions() {
    let mut inputs = yaml_seeds();
    inputs.extend(regressions("manifest"));
    replay("manifest", inputs, targets::fuzz_manifest);
}

#[test]
fn template_seeds_and_regressions() {
    let mut dirs = vec![repo().join("fuzz/seeds/template")];
    dirs.extend(payload_dirs("manifests"));
    if let Some(corpus) = corpus() {
        dirs.push(corpus.join("openshift-payload/manifests"));
    }
    let mut inputs = files(&dirs, MAX_SEED_BYTES);
    inputs.extend(regressions("template"));
    replay("template", inputs, targets::fuzz_template);
}

#[test]
fn json_seeds_and_regressions() {
    let mut dirs = vec![repo().join("fuzz/seeds/json")];
    let mut json_files = payload_dirs("release-manifests");
    if let Some(corpus) = corpus() {
        if let Ok(entries) = std::fs::read_dir(corpus.join("cvo-testdata")) {
            dirs.extend(
                entries
                    .flatten()
                    .map(|e| e.path().join("release-manifests")),
            );
        }
        json_files.push(corpus.join("openshift-payload/release-manifests"));
    }
    let mut inputs = files(&dirs, MAX_SEED_BYTES);
    // JSON documents of the payloads: release-metadata, image-references, JSON manifests.
    inputs.extend(
        files(&json_files, MAX_SEED_BYTES * 4)
            .into_iter()
            .filter(|f| std::fs::read(f).unwrap().first() == Some(&b'{')),
    );
    inputs.extend(regressions("json"));
    replay("json", inputs, targets::fuzz_json);
}

#[test]
fn extract_seeds_and_regressions() {
    // The seed layers are written by a script at run time, as hack/fuzz.sh does.
    let seeds = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("python3")
        .arg(repo().join("fuzz/seeds/extract.py"))
        .arg(seeds.path())
        .arg(repo().join("payloads/4.18.0"))
        .status()
        .expect("python3 writes the extract seeds (hack/install-deps.sh installs it)");
    assert!(status.success(), "fuzz/seeds/extract.py failed");
    let mut inputs = files(&[seeds.path().to_path_buf()], u64::MAX);
    inputs.extend(regressions("extract"));
    replay("extract", inputs, targets::fuzz_extract);
}

#[test]
fn every_regression_folder_names_a_target() {
    let known = ["yaml", "json", "template", "manifest", "extract"];
    let Ok(entries) = std::fs::read_dir(repo().join("fuzz/regressions")) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            known.contains(&name.as_str()),
            "{}: not a fuzz target ({known:?})",
            Path::new("fuzz/regressions").join(name).display()
        );
    }
}
