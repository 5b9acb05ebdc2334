//! Applying image layers to a directory, safely: only the payload paths, with whiteouts, and
//! every hostile entry refused with the layer digest and entry name.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::OciError;

/// The image paths a release payload lives in; everything else in a layer is skipped.
pub const PAYLOAD_DIRS: [&str; 3] = ["manifests", "release-manifests", "bootstrap"];
const WHITEOUT: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..opq";

/// Limits over all layers of one image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Uncompressed archive bytes, all layers together.
    pub max_bytes: u64,
    /// Archive entries, all layers together.
    pub max_entries: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_bytes: 1 << 30,
            max_entries: 100_000,
        }
    }
}

/// What has been used of the limits so far.
#[derive(Debug, Default)]
pub struct Budget {
    pub bytes: u64,
    pub entries: u64,
}

/// How a layer blob is compressed, from its media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
}

pub fn layer_compression(media_type: &str) -> Result<Compression, String> {
    match media_type {
        "application/vnd.oci.image.layer.v1.tar"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar"
        | "application/vnd.docker.image.rootfs.diff.tar" => Ok(Compression::None),
        "application/vnd.oci.image.layer.v1.tar+gzip"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
        | "application/vnd.docker.image.rootfs.diff.tar.gzip"
        | "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip" => Ok(Compression::Gzip),
        other => Err(format!(
            "unsupported layer media type {other:?} (supported: tar and tar+gzip, OCI and Docker)"
        )),
    }
}

/// A normalized archive path: components, no `.`, no leading `./`.
/// Refuses absolute paths and `..`.
pub fn normalize(path: &str) -> Result<Vec<String>, String> {
    if path.starts_with('/') {
        return Err("absolute path".to_string());
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("path contains \"..\"".to_string()),
            other => parts.push(other.to_string()),
        }
    }
    Ok(parts)
}

/// Where a symlink at `entry` pointing at `target` resolves, lexically, relative to the root;
/// `Err` when it leaves the root (or is absolute).
///
/// `..` is allowed only at the start of the target: walking up from the link's parent (always
/// a real directory) cannot leave the root when the count is checked, and descending cannot
/// either when every symlink obeys the same rule. A `..` after a component could step back
/// through another symlink (`up -> ..`, then `up/../x`) and leave the root, so it is refused.
pub fn resolve_link(entry: &[String], target: &str) -> Result<Vec<String>, String> {
    if target.starts_with('/') {
        return Err(format!(
            "symlink to absolute path {target:?} escapes the payload"
        ));
    }
    let mut resolved: Vec<String> = entry[..entry.len().saturating_sub(1)].to_vec();
    let mut descended = false;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." if descended => {
                return Err(format!(
                    "symlink to {target:?}: \"..\" after a path component could leave the payload root through another symlink"
                ));
            }
            ".." => {
                if resolved.pop().is_none() {
                    return Err(format!("symlink to {target:?} escapes the payload root"));
                }
            }
            other => {
                descended = true;
                resolved.push(other.to_string());
            }
        }
    }
    Ok(resolved)
}

fn is_payload_path(parts: &[String], dirs: &[&str]) -> bool {
    parts
        .first()
        .is_some_and(|first| dirs.contains(&first.as_str()))
}

/// Counts uncompressed bytes and stops the stream past the limit.
struct Counted<R> {
    inner: R,
    remaining: u64,
    exceeded: Rc<Cell<bool>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.remaining {
            self.exceeded.set(true);
            return Err(io::Error::other("uncompressed size limit exceeded"));
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// Applies one layer (an uncompressed tar stream) on top of `root`.
pub fn apply_layer<R: Read>(
    reader: R,
    layer: &str,
    root: &Path,
    limits: &Limits,
    budget: &mut Budget,
) -> Result<(), OciError> {
    apply_layer_under(reader, layer, root, limits, budget, &PAYLOAD_DIRS)
}

/// [`apply_layer`] for the entries under the top-level directories `dirs` (the payload's, or
/// `usr` for the operator binary); executable files stay executable.
pub fn apply_layer_under<R: Read>(
    reader: R,
    layer: &str,
    root: &Path,
    limits: &Limits,
    budget: &mut Budget,
    dirs: &[&str],
) -> Result<(), OciError> {
    let exceeded = Rc::new(Cell::new(false));
    let counted = Counted {
        inner: reader,
        remaining: limits.max_bytes.saturating_sub(budget.bytes),
        exceeded: exceeded.clone(),
    };
    let too_big = || OciError::Limit {
        layer: layer.to_string(),
        reason: format!(
            "the image is larger than the limit of {} bytes uncompressed",
            limits.max_bytes
        ),
    };
    let read_err = |e: io::Error, exceeded: &Rc<Cell<bool>>| {
        if exceeded.get() {
            too_big()
        } else {
            OciError::Limit {
                layer: layer.to_string(),
                reason: format!("cannot read the archive: {e}"),
            }
        }
    };
    let mut archive = tar::Archive::new(counted);
    let mut written: BTreeSet<String> = BTreeSet::new();
    let entries = archive.entries().map_err(|e| read_err(e, &exceeded))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| read_err(e, &exceeded))?;
        budget.entries += 1;
        if budget.entries > limits.max_entries {
            return Err(OciError::Limit {
                layer: layer.to_string(),
                reason: format!("the image has more than {} entries", limits.max_entries),
            });
        }
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let refuse = |reason: String| OciError::Entry {
            layer: layer.to_string(),
            entry: raw.clone(),
            reason,
        };
        // The entry's real size: a PAX `size` record overrides the header's field, which may
        // then hold anything, up to u64::MAX (found by fuzzing: adding it overflowed).
        budget.bytes = budget.bytes.saturating_add(entry.size());
        if budget.bytes > limits.max_bytes {
            return Err(too_big());
        }
        let parts = normalize(&raw).map_err(&refuse)?;
        let Some(name) = parts.last().cloned() else {
            continue;
        };
        if name == OPAQUE || name.starts_with(WHITEOUT) {
            apply_whiteout(root, &parts, &name, &written, dirs).map_err(&refuse)?;
            continue;
        }
        if !is_payload_path(&parts, dirs) {
            continue;
        }
        let kind = entry.header().entry_type();
        let target = prepare(root, &parts, kind == tar::EntryType::Directory).map_err(&refuse)?;
        match kind {
            tar::EntryType::Directory => {
                if !target.is_dir() {
                    fs::create_dir(&target).map_err(|e| refuse(e.to_string()))?;
                }
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let mut file = fs::File::create_new(&target).map_err(|e| refuse(e.to_string()))?;
                io::copy(&mut entry, &mut file).map_err(|e| {
                    if exceeded.get() {
                        too_big()
                    } else {
                        refuse(e.to_string())
                    }
                })?;
                if entry.header().mode().is_ok_and(|m| m & 0o111 != 0) {
                    use std::os::unix::fs::PermissionsExt as _;
                    fs::set_permissions(&target, fs::Permissions::from_mode(0o755))
                        .map_err(|e| refuse(e.to_string()))?;
                }
            }
            tar::EntryType::Symlink => {
                let link = entry
                    .link_name_bytes()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                resolve_link(&parts, &link).map_err(&refuse)?;
                std::os::unix::fs::symlink(&link, &target).map_err(|e| refuse(e.to_string()))?;
            }
            tar::EntryType::Link => {
                let link = entry
                    .link_name_bytes()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                let source = normalize(&link)
                    .map_err(|e| refuse(format!("hardlink target {link:?}: {e}")))?;
                if !is_payload_path(&source, dirs) {
                    return Err(refuse(format!(
                        "hardlink to {link:?} outside the payload directories"
                    )));
                }
                check_parents(root, &source).map_err(&refuse)?;
                let source_path = join(root, &source);
                let meta = fs::symlink_metadata(&source_path);
                if !meta.is_ok_and(|m| m.is_file()) {
                    return Err(refuse(format!(
                        "hardlink to {link:?}, which is not a regular file extracted before it"
                    )));
                }
                fs::copy(&source_path, &target).map_err(|e| refuse(e.to_string()))?;
            }
            tar::EntryType::Char | tar::EntryType::Block => {
                return Err(refuse("device files are not allowed".to_string()));
            }
            tar::EntryType::Fifo => {
                return Err(refuse("named pipes are not allowed".to_string()));
            }
            other => {
                return Err(refuse(format!("unsupported entry type {other:?}")));
            }
        }
        written.insert(parts.join("/"));
    }
    Ok(())
}

fn join(root: &Path, parts: &[String]) -> PathBuf {
    let mut path = root.to_path_buf();
    path.extend(parts);
    path
}

/// Every parent of `parts` must be a real directory (never a symlink) when it exists.
fn check_parents(root: &Path, parts: &[String]) -> Result<(), String> {
    let mut path = root.to_path_buf();
    for part in &parts[..parts.len().saturating_sub(1)] {
        path.push(part);
        if let Ok(meta) = fs::symlink_metadata(&path)
            && !meta.is_dir()
        {
            return Err(format!(
                "parent {part:?} is not a directory (a symlink or a file)"
            ));
        }
    }
    Ok(())
}

/// Creates the parents of an entry (refusing to go through symlinks) and removes what the entry
/// replaces; returns the entry's path.
fn prepare(root: &Path, parts: &[String], is_dir: bool) -> Result<PathBuf, String> {
    let mut path = root.to_path_buf();
    for part in &parts[..parts.len() - 1] {
        path.push(part);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {}
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "parent {part:?} is a symlink: writing through it is refused"
                ));
            }
            Ok(_) => {
                fs::remove_file(&path).map_err(|e| e.to_string())?;
                fs::create_dir(&path).map_err(|e| e.to_string())?;
            }
            Err(_) => fs::create_dir(&path).map_err(|e| e.to_string())?,
        }
    }
    path.push(&parts[parts.len() - 1]);
    // A directory over a directory merges; anything else replaces what is there.
    remove_existing(&path, is_dir)?;
    Ok(path)
}

/// Removes whatever is at `path`; a directory is kept when `keep_dir` (a directory entry over
/// a directory merges).
fn remove_existing(path: &Path, keep_dir: bool) -> Result<(), String> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            if !keep_dir {
                fs::remove_dir_all(path).map_err(|e| e.to_string())?;
            }
            Ok(())
        }
        Ok(_) => fs::remove_file(path).map_err(|e| e.to_string()),
        Err(_) => Ok(()),
    }
}

fn apply_whiteout(
    root: &Path,
    parts: &[String],
    name: &str,
    written: &BTreeSet<String>,
    allowed: &[&str],
) -> Result<(), String> {
    let parent = &parts[..parts.len() - 1];
    if name == OPAQUE {
        // Hide everything lower layers put in the directory.
        let dirs: Vec<Vec<String>> = if parent.is_empty() {
            allowed.iter().map(|d| vec![d.to_string()]).collect()
        } else if is_payload_path(parent, allowed) {
            vec![parent.to_vec()]
        } else {
            return Ok(());
        };
        for dir in dirs {
            check_parents(root, &dir)?;
            let path = join(root, &dir);
            if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                continue;
            }
            if parent.is_empty() {
                if !written
                    .iter()
                    .any(|w| w == &dir[0] || w.starts_with(&format!("{}/", dir[0])))
                {
                    fs::remove_dir_all(&path).map_err(|e| e.to_string())?;
                }
                continue;
            }
            let listing = fs::read_dir(&path).map_err(|e| e.to_string())?;
            for child in listing.filter_map(Result::ok) {
                let rel = format!("{}/{}", dir.join("/"), child.file_name().to_string_lossy());
                let kept = written.contains(&rel)
                    || written.iter().any(|w| w.starts_with(&format!("{rel}/")));
                if !kept {
                    remove_existing(&child.path(), false)?;
                }
            }
        }
        return Ok(());
    }
    let hidden = &name[WHITEOUT.len()..];
    if hidden.is_empty() || hidden == "." || hidden == ".." {
        return Err("invalid whiteout".to_string());
    }
    let mut target = parent.to_vec();
    target.push(hidden.to_string());
    if !is_payload_path(&target, allowed) {
        return Ok(());
    }
    check_parents(root, &target)?;
    remove_existing(&join(root, &target), false)
}

// The tar builder the integration tests use too (hostile entry names).
#[cfg(test)]
#[path = "../../tests/support/raw_tar.rs"]
mod raw_tar;

#[cfg(test)]
mod tests {
    use super::*;

    use super::raw_tar::raw_tar as layer;

    fn apply(root: &Path, bytes: &[u8], limits: &Limits) -> Result<(), OciError> {
        apply_layer(bytes, "sha256:test", root, limits, &mut Budget::default())
    }

    use tar::EntryType::{Directory as D, Regular as F, Symlink as L};

    #[test]
    fn applies_layers_with_whiteouts() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let limits = Limits::default();
        apply(
            root,
            &layer(&[
                ("./release-manifests/", D, b"", None),
                ("./release-manifests/a.yaml", F, b"a", None),
                ("./release-manifests/b.yaml", F, b"b", None),
                ("manifests/c.yaml", F, b"c", None),
                ("usr/bin/sh", F, b"not extracted", None),
                ("bootstrap/link.yaml", L, b"", Some("../manifests/c.yaml")),
            ]),
            &limits,
        )
        .unwrap();
        assert!(!root.join("usr").exists());
        assert_eq!(fs::read(root.join("bootstrap/link.yaml")).unwrap(), b"c");
        apply(
            root,
            &layer(&[
                ("release-manifests/.wh.a.yaml", F, b"", None),
                ("manifests/d.yaml", F, b"d", None),
                ("manifests/.wh..wh..opq", F, b"", None),
                ("release-manifests/b.yaml", F, b"B", None),
            ]),
            &limits,
        )
        .unwrap();
        assert!(!root.join("release-manifests/a.yaml").exists());
        assert_eq!(
            fs::read(root.join("release-manifests/b.yaml")).unwrap(),
            b"B"
        );
        assert!(!root.join("manifests/c.yaml").exists());
        // A file replaces a directory; a directory over a directory merges.
        apply(
            root,
            &layer(&[
                ("manifests/", D, b"", None),
                ("bootstrap", F, b"file now", None),
            ]),
            &limits,
        )
        .unwrap();
        assert_eq!(fs::read(root.join("bootstrap")).unwrap(), b"file now");
        assert!(root.join("manifests/d.yaml").exists());
        assert_eq!(fs::read(root.join("manifests/d.yaml")).unwrap(), b"d");
    }

    #[test]
    fn refuses_hostile_entries() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (layer(&[("manifests/../../x", F, b"x", None)]), "\"..\""),
            (layer(&[("/manifests/x", F, b"x", None)]), "absolute path"),
            (
                layer(&[("manifests/l", L, b"", Some("../../etc"))]),
                "escapes the payload root",
            ),
            (
                layer(&[("manifests/l", L, b"", Some("/etc/passwd"))]),
                "absolute path",
            ),
            (
                layer(&[
                    ("manifests/l", L, b"", Some("../release-manifests")),
                    ("manifests/l/x.yaml", F, b"x", None),
                ]),
                "is a symlink",
            ),
            (
                layer(&[("manifests/h", tar::EntryType::Link, b"", Some("etc/passwd"))]),
                "outside the payload",
            ),
            (
                layer(&[("manifests/dev", tar::EntryType::Char, b"", None)]),
                "device files",
            ),
            (
                layer(&[
                    ("manifests/up", L, b"", Some("..")),
                    ("manifests/x.yaml", L, b"", Some("up/../../etc/passwd")),
                ]),
                "could leave the payload root",
            ),
        ];
        for (bytes, expected) in cases {
            let dir = tempfile::tempdir().unwrap();
            let err = apply(dir.path(), &bytes, &Limits::default())
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{err} should contain {expected}");
            assert!(err.starts_with("layer sha256:test: entry "), "{err}");
        }
    }

    #[test]
    fn enforces_limits() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = layer(&[("manifests/a", F, &[b'x'; 5000], None)]);
        let small = Limits {
            max_bytes: 1000,
            max_entries: 10,
        };
        let err = apply(dir.path(), &bytes, &small).unwrap_err().to_string();
        assert!(err.contains("larger than the limit of 1000 bytes"), "{err}");
        let few = Limits {
            max_bytes: 1 << 20,
            max_entries: 1,
        };
        let two = layer(&[
            ("manifests/a", F, b"a", None),
            ("manifests/b", F, b"b", None),
        ]);
        let err = apply(tempfile::tempdir().unwrap().path(), &two, &few)
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 1 entries"), "{err}");
    }

    /// Fuzzing found this: the header's size field is ignored when a PAX record gives the
    /// size, and a huge one overflowed the byte budget.
    #[test]
    fn a_pax_size_record_is_the_size_counted() {
        // Tars without their two end-of-archive blocks, to be concatenated.
        let open = |mut bytes: Vec<u8>| {
            bytes.truncate(bytes.len() - 1024);
            bytes
        };
        let pax_size = |size: &str| {
            let mut pax = tar::Builder::new(Vec::new());
            pax.append_pax_extensions([("size", size.as_bytes())])
                .unwrap();
            open(pax.into_inner().unwrap())
        };
        let file = |header_size: u64, data: &[u8]| {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(F);
            header.set_path("manifests/b").unwrap();
            header.set_size(header_size);
            header.set_cksum();
            let mut bytes = header.as_bytes().to_vec();
            bytes.extend(data);
            bytes.resize(bytes.len().next_multiple_of(512) + 1024, 0);
            bytes
        };

        let mut bytes = open(layer(&[("manifests/a", F, b"a", None)]));
        bytes.extend(pax_size("5"));
        bytes.extend(file(u64::MAX, b"bbbbb"));
        let dir = tempfile::tempdir().unwrap();
        apply(dir.path(), &bytes, &Limits::default()).unwrap();
        assert_eq!(fs::read(dir.path().join("manifests/b")).unwrap(), b"bbbbb");

        // A PAX size over the limit is refused though the header says 0.
        let mut big = pax_size("5000");
        big.extend(file(0, &[b'x'; 5000]));
        let small = Limits {
            max_bytes: 1000,
            max_entries: 10,
        };
        let err = apply(tempfile::tempdir().unwrap().path(), &big, &small)
            .unwrap_err()
            .to_string();
        assert!(err.contains("larger than the limit of 1000 bytes"), "{err}");
    }

    #[test]
    fn pure_path_rules() {
        assert_eq!(normalize("./a//b/.").unwrap(), vec!["a", "b"]);
        let at = |p: &str| normalize(p).unwrap();
        assert_eq!(resolve_link(&at("a/b/c"), "../d").unwrap(), vec!["a", "d"]);
        assert!(resolve_link(&at("a/c"), "../../d").is_err());
        assert!(resolve_link(&at("a/b/c"), "up/../../x").is_err());
        assert!(resolve_link(&at("a/b/c"), "./x/./y").is_ok());
        assert_eq!(
            layer_compression("application/vnd.docker.image.rootfs.diff.tar.gzip"),
            Ok(Compression::Gzip)
        );
        assert!(layer_compression("application/vnd.oci.image.layer.v1.tar+zstd").is_err());
    }
}
