//! Shared helpers for the integration tests.
#![allow(dead_code)]

pub mod forms;
pub mod raw_tar;
pub mod registry;

use std::path::{Path, PathBuf};

use cvo::payload::{LoadOptions, Payload, read_directory};

/// `../shared/corpus` (or `$CVO_CORPUS_DIR`). `None`, with a message, when it is absent and not
/// required; a failure when `CVO_REQUIRE_CORPUS=1`.
pub fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("CVO_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if dir.is_dir() {
        return Some(dir);
    }
    let message = format!("the real-manifest corpus is not at {}", dir.display());
    assert!(
        std::env::var("CVO_REQUIRE_CORPUS").as_deref() != Ok("1"),
        "{message} and CVO_REQUIRE_CORPUS=1"
    );
    eprintln!("skipping: {message} (set CVO_CORPUS_DIR to run these tests)");
    None
}

pub fn load(dir: &Path) -> Payload {
    let input = read_directory(std::path::Path::new(&dir)).unwrap();
    Payload::from_input(input, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Recursive copy (the corpus is read-only; tests that add files work on a copy).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            let mut perms = std::fs::metadata(&target).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&target, perms).unwrap();
        }
    }
}

/// Every file under `root`, relative path → bytes, sorted: compares two trees byte for byte.
pub fn tree_files(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push((
                    path.strip_prefix(root).unwrap().into(),
                    std::fs::read(&path).unwrap(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}
