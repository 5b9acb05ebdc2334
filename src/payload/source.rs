//! Where payload files come from: a directory on disk, or the payload bundled into the binary.
//! This is the I/O shell around [`super::Payload::from_input`].

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use rayon::prelude::*;

use super::{
    IMAGE_REFERENCES, InputFile, Layout, PayloadInput, RELEASE_METADATA, is_manifest_file_name,
};

/// The version of the payload embedded in the binary (`payloads/<version>/`).
pub const BUNDLED_VERSION: &str = "4.18.0";
static BUNDLED: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/payloads/4.18.0");

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadSource {
    /// A payload root (`manifests/`, `release-manifests/`) or a plain directory of manifests.
    Directory(PathBuf),
    /// The payload compiled into `cvo`.
    Bundled,
    /// A release image in an OCI image layout (`oci-layout:PATH[:TAG]`), extracted into the
    /// cache ([`crate::oci`]).
    OciLayout { path: PathBuf, tag: Option<String> },
    /// A release image in a registry (`registry/repo:tag`, `registry/repo@sha256:...`,
    /// `docker://...`), pulled into the cache ([`crate::oci::registry`]).
    Registry(String),
}

impl PayloadSource {
    /// `--payload` as a user writes it; absent means the bundled payload.
    pub fn from_arg(arg: Option<&str>) -> PayloadSource {
        match arg {
            None | Some("bundled") => PayloadSource::Bundled,
            Some(arg) if arg.starts_with("oci-layout:") => {
                let (path, tag) = split_layout_ref(&arg["oci-layout:".len()..]);
                PayloadSource::OciLayout {
                    path: PathBuf::from(path),
                    tag: tag.map(str::to_string),
                }
            }
            Some(arg)
                if arg.starts_with("docker://")
                    || arg.contains("@sha256:")
                    || (crate::oci::registry::is_reference(arg) && !Path::new(arg).exists()) =>
            {
                PayloadSource::Registry(arg.to_string())
            }
            Some(path) => PayloadSource::Directory(PathBuf::from(
                path.strip_prefix("file://").unwrap_or(path),
            )),
        }
    }
}

/// `PATH[:TAG]`: the text after the last `:` is a tag when it is one (no `/`, tag characters).
fn split_layout_ref(text: &str) -> (&str, Option<&str>) {
    match text.rsplit_once(':') {
        Some((path, tag))
            if !path.is_empty()
                && !tag.is_empty()
                && tag.len() <= 128
                && !tag.starts_with(['.', '-'])
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) =>
        {
            (path, Some(tag))
        }
        _ => (text, None),
    }
}

impl fmt::Display for PayloadSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadSource::Directory(path) => write!(f, "{}", path.display()),
            PayloadSource::Bundled => write!(f, "bundled:{BUNDLED_VERSION}"),
            PayloadSource::OciLayout { path, tag } => {
                write!(f, "oci-layout:{}", path.display())?;
                match tag {
                    Some(tag) => write!(f, ":{tag}"),
                    None => Ok(()),
                }
            }
            PayloadSource::Registry(reference) => write!(f, "{reference}"),
        }
    }
}

/// The payload cannot be read at all (as opposed to having bad files, which loading reports).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(
        "payload {path}: no such directory; pass --payload DIR with a payload root (manifests/, release-manifests/) or a directory of manifests"
    )]
    NotFound { path: String },
    #[error("payload {path}: not a directory; pass the directory that holds the manifests")]
    NotADirectory { path: String },
    #[error("payload {source_ref}: {error}")]
    Oci {
        source_ref: String,
        error: crate::oci::OciError,
    },
    #[error("payload {path}: cannot list directory: {source}")]
    List {
        path: String,
        source: std::io::Error,
    },
    #[error("payload {path}: {}", no_manifests_message(.layout, .candidates))]
    NoManifests {
        path: String,
        layout: Layout,
        /// Subdirectories that look like payload roots, as `--payload` values.
        candidates: Vec<String>,
    },
}

/// What was found, what was expected, and where a payload seems to be instead.
fn no_manifests_message(layout: &Layout, candidates: &[String]) -> String {
    let found = match layout {
        Layout::PayloadRoot => "manifests/ and release-manifests/ hold no manifest file",
        Layout::PlainDirectory => "no manifest file in this directory",
    };
    let mut message = format!(
        "{found} (*.yaml, *.yml or *.json); expected a payload root (manifests/ and release-manifests/ with release-metadata and image-references) or a directory of manifests"
    );
    const SHOWN: usize = 5;
    if !candidates.is_empty() {
        let shown: Vec<String> = candidates
            .iter()
            .take(SHOWN)
            .map(|c| format!("--payload {c}"))
            .collect();
        message.push_str(&format!("; did you mean {}", shown.join(" or ")));
        if candidates.len() > SHOWN {
            message.push_str(&format!(" ({} more)", candidates.len() - SHOWN));
        }
        message.push('?');
    }
    message
}

/// An image's payload: pulled or read from a layout, extracted into the cache, then read as a
/// directory.
fn image_input(
    source: &PayloadSource,
    loaded: Result<crate::oci::Loaded, crate::oci::OciError>,
) -> Result<PayloadInput, SourceError> {
    let loaded = loaded.map_err(|error| SourceError::Oci {
        source_ref: source.to_string(),
        error,
    })?;
    let mut input = directory_input(&loaded.dir).map_err(|e| match e {
        SourceError::NoManifests { layout, .. } => SourceError::NoManifests {
            path: source.to_string(),
            layout,
            candidates: Vec::new(),
        },
        e => e,
    })?;
    input.origin = source.to_string();
    Ok(input)
}

/// Reads every file the CVO would read, in parallel; images are pulled or extracted with
/// `images`.
pub fn read_input(
    source: &PayloadSource,
    images: &crate::oci::Options,
) -> Result<PayloadInput, SourceError> {
    match source {
        PayloadSource::Bundled => Ok(bundled_input()),
        PayloadSource::Directory(path) => directory_input(path),
        PayloadSource::Registry(reference) => {
            image_input(source, crate::oci::registry::load(reference, images))
        }
        PayloadSource::OciLayout { path, tag } => {
            image_input(source, crate::oci::load(path, tag.as_deref(), images))
        }
    }
}

/// A payload directory's files: [`read_input`] for sources that never need the image cache.
pub fn read_directory(path: &Path) -> Result<PayloadInput, SourceError> {
    directory_input(path)
}

/// A release image already extracted (pulled into the cache) read as its payload, named after
/// `source`.
pub fn read_image(
    source: &PayloadSource,
    loaded: &crate::oci::Loaded,
) -> Result<PayloadInput, SourceError> {
    image_input(source, Ok(loaded.clone()))
}

fn directory_input(root: &Path) -> Result<PayloadInput, SourceError> {
    let shown = root.display().to_string();
    let metadata = fs::metadata(root).map_err(|_| SourceError::NotFound {
        path: shown.clone(),
    })?;
    if !metadata.is_dir() {
        return Err(SourceError::NotADirectory { path: shown });
    }
    let release_dir = root.join("release-manifests");
    let input = if !release_dir.is_dir() {
        PayloadInput {
            origin: shown,
            layout: Layout::PlainDirectory,
            manifests: vec![],
            release_manifests: read_dir_files(root)?,
            release_metadata: None,
            image_references: None,
        }
    } else {
        let manifests_dir = root.join("manifests");
        let manifests = if manifests_dir.is_dir() {
            read_dir_files(&manifests_dir)?
        } else {
            vec![]
        };
        PayloadInput {
            origin: shown,
            layout: Layout::PayloadRoot,
            manifests,
            release_manifests: read_dir_files(&release_dir)?,
            release_metadata: read_optional(&release_dir, RELEASE_METADATA),
            image_references: read_optional(&release_dir, IMAGE_REFERENCES),
        }
    };
    // A payload root with release metadata but no manifest is loaded, so that what is wrong
    // with its metadata is reported too; loading then fails for the missing manifests.
    let nothing_read = input.manifests.is_empty()
        && input.release_manifests.is_empty()
        && input.release_metadata.is_none()
        && input.image_references.is_none();
    if nothing_read {
        return Err(SourceError::NoManifests {
            path: input.origin,
            layout: input.layout,
            candidates: payload_roots_below(root),
        });
    }
    Ok(input)
}

/// Directories up to three levels below `root` that look like payload roots (they hold a
/// `release-manifests/` directory), as paths to pass to `--payload`; hidden directories and
/// build output are not searched, and the search gives up after a few thousand directories.
fn payload_roots_below(root: &Path) -> Vec<String> {
    const MAX_DEPTH: usize = 3;
    const MAX_VISITED: usize = 5000;
    let mut found = Vec::new();
    let mut queue = std::collections::VecDeque::from([(root.to_path_buf(), 0)]);
    let mut visited = 0;
    while let Some((dir, depth)) = queue.pop_front() {
        visited += 1;
        if visited > MAX_VISITED {
            break;
        }
        let Ok(entries) = list_entries(&dir) else {
            continue;
        };
        for entry in entries.into_iter().filter(|e| e.is_dir) {
            if entry.name.starts_with('.') || entry.name == "target" || entry.name == "node_modules"
            {
                continue;
            }
            let path = dir.join(&entry.name);
            if path.join("release-manifests").is_dir() {
                found.push(path.display().to_string());
            } else if depth + 1 < MAX_DEPTH {
                queue.push_back((path, depth + 1));
            }
        }
    }
    found
}

/// Non-recursive, byte-sorted like Go's `os.ReadDir`, manifest extensions only.
fn read_dir_files(dir: &Path) -> Result<Vec<InputFile>, SourceError> {
    let listing = fs::read_dir(dir).map_err(|source| SourceError::List {
        path: dir.display().to_string(),
        source,
    })?;
    let mut names: Vec<String> = listing
        .filter_map(Result::ok)
        .filter(|entry| !entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| is_manifest_file_name(name))
        .collect();
    names.sort_unstable();
    Ok(names
        .into_par_iter()
        .map(|name| read_file(dir, name))
        .collect())
}

/// One entry of a directory listing, whatever the CVO would make of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub is_dir: bool,
}

/// Every entry of `dir` (files of any name and subdirectories), byte-sorted: what
/// `cvo validate` needs to point out files the CVO never reads. Reading is unchanged.
pub fn list_entries(dir: &Path) -> Result<Vec<DirEntry>, SourceError> {
    let listing = fs::read_dir(dir).map_err(|source| SourceError::List {
        path: dir.display().to_string(),
        source,
    })?;
    let mut entries: Vec<DirEntry> = listing
        .filter_map(Result::ok)
        .map(|entry| DirEntry {
            name: entry.file_name().to_string_lossy().into_owned(),
            is_dir: entry.path().is_dir(),
        })
        .collect();
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

fn read_file(dir: &Path, name: String) -> InputFile {
    let contents = fs::read(dir.join(&name)).map_err(|e| e.to_string());
    InputFile { name, contents }
}

fn read_optional(dir: &Path, name: &str) -> Option<InputFile> {
    dir.join(name)
        .exists()
        .then(|| read_file(dir, name.to_string()))
}

pub fn bundled_input() -> PayloadInput {
    let files = |sub: &str| -> Vec<InputFile> {
        let mut files: Vec<InputFile> = BUNDLED
            .get_dir(sub)
            .map(|d| d.files().collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|f| {
                let name = f.path().file_name()?.to_string_lossy().into_owned();
                is_manifest_file_name(&name).then(|| InputFile {
                    name,
                    contents: Ok(f.contents().to_vec()),
                })
            })
            .collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        files
    };
    let metadata_file = |name: &str| {
        BUNDLED
            .get_file(format!("release-manifests/{name}"))
            .map(|f| InputFile {
                name: name.to_string(),
                contents: Ok(f.contents().to_vec()),
            })
    };
    PayloadInput {
        origin: PayloadSource::Bundled.to_string(),
        layout: Layout::PayloadRoot,
        manifests: files("manifests"),
        release_manifests: files("release-manifests"),
        release_metadata: metadata_file(RELEASE_METADATA),
        image_references: metadata_file(IMAGE_REFERENCES),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_payload_root_sorted_and_filtered() {
        let dir = tempfile::tempdir().unwrap();
        let rm = dir.path().join("release-manifests");
        fs::create_dir_all(rm.join("sub")).unwrap();
        fs::create_dir_all(dir.path().join("manifests")).unwrap();
        for name in [
            "b.yaml",
            "a.yml",
            "B.json",
            "0000_10_a_file",
            "notes.txt",
            "sub/x.yaml",
        ] {
            fs::write(rm.join(name), "x").unwrap();
        }
        fs::write(rm.join(RELEASE_METADATA), "{}").unwrap();
        let input = read_directory(dir.path()).unwrap();
        assert_eq!(input.layout, Layout::PayloadRoot);
        let names: Vec<&str> = input
            .release_manifests
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, vec!["B.json", "a.yml", "b.yaml"]);
        assert!(input.release_metadata.is_some());
        assert!(input.image_references.is_none());
    }

    #[test]
    fn list_entries_shows_everything_sorted() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        for name in ["b.yaml", "notes.txt", "A"] {
            fs::write(dir.path().join(name), "x").unwrap();
        }
        let entries = list_entries(dir.path()).unwrap();
        let names: Vec<(&str, bool)> = entries
            .iter()
            .map(|e| (e.name.as_str(), e.is_dir))
            .collect();
        assert_eq!(
            names,
            vec![
                ("A", false),
                ("b.yaml", false),
                ("notes.txt", false),
                ("sub", true)
            ]
        );
        assert!(list_entries(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn a_plain_directory_is_read_as_release_manifests() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.yaml"), "x").unwrap();
        let input = read_directory(dir.path()).unwrap();
        assert_eq!(input.layout, Layout::PlainDirectory);
        assert_eq!(input.release_manifests.len(), 1);
    }

    #[test]
    fn a_directory_without_manifests_is_an_error_pointing_at_payload_roots() {
        let dir = tempfile::tempdir().unwrap();
        let err = |path: &Path| read_directory(path).unwrap_err().to_string();
        // Empty.
        assert_eq!(
            err(dir.path()),
            format!(
                "payload {}: no manifest file in this directory (*.yaml, *.yml or *.json); expected a payload root (manifests/ and release-manifests/ with release-metadata and image-references) or a directory of manifests",
                dir.path().display()
            )
        );
        // The parent of payloads, and a grandparent.
        for version in ["4.17.0", "4.18.0"] {
            let rm = dir
                .path()
                .join("payloads")
                .join(version)
                .join("release-manifests");
            fs::create_dir_all(&rm).unwrap();
            fs::write(rm.join("a.yaml"), "x").unwrap();
        }
        fs::create_dir_all(dir.path().join(".git/x/release-manifests")).unwrap();
        fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let parent = dir.path().join("payloads");
        assert!(
            err(&parent).ends_with(&format!(
                "; did you mean --payload {p}/4.17.0 or --payload {p}/4.18.0?",
                p = parent.display()
            )),
            "{}",
            err(&parent)
        );
        assert!(err(dir.path()).ends_with(&format!(
            "; did you mean --payload {p}/4.17.0 or --payload {p}/4.18.0?",
            p = parent.display()
        )));
        // A payload root whose directories hold nothing the CVO reads.
        let empty_root = dir.path().join("payloads/4.17.0");
        fs::remove_file(empty_root.join("release-manifests/a.yaml")).unwrap();
        fs::write(empty_root.join("release-manifests/a.YAML"), "x").unwrap();
        assert!(err(&empty_root).contains(
            ": manifests/ and release-manifests/ hold no manifest file (*.yaml, *.yml or *.json)"
        ));
    }

    #[test]
    fn a_missing_directory_is_a_clear_error() {
        let err = read_directory(std::path::Path::new("/nonexistent/payload")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("payload /nonexistent/payload: no such directory"),
            "{err}"
        );
    }

    #[test]
    fn payload_argument() {
        assert_eq!(PayloadSource::from_arg(None), PayloadSource::Bundled);
        assert_eq!(
            PayloadSource::from_arg(Some("file:///x")),
            PayloadSource::Directory("/x".into())
        );
        assert_eq!(
            PayloadSource::from_arg(Some("oci-layout:/a:b/c:4.18.0")),
            PayloadSource::OciLayout {
                path: "/a:b/c".into(),
                tag: Some("4.18.0".into())
            }
        );
        assert_eq!(
            PayloadSource::from_arg(Some("oci-layout:./img")),
            PayloadSource::OciLayout {
                path: "./img".into(),
                tag: None
            }
        );
        assert_eq!(
            PayloadSource::from_arg(Some("oci-layout:./img")).to_string(),
            "oci-layout:./img"
        );
        for reference in [
            "docker://quay.io/x/y:1",
            "quay.io/x/y@sha256:0123",
            "quay.io/openshift/release:4.18",
            "127.0.0.1:5000/openshift/release",
        ] {
            let source = PayloadSource::from_arg(Some(reference));
            assert_eq!(source, PayloadSource::Registry(reference.into()));
        }
        // An existing path stays a directory.
        assert_eq!(
            PayloadSource::from_arg(Some("payloads/4.18.0")),
            PayloadSource::Directory("payloads/4.18.0".into())
        );
    }
}
