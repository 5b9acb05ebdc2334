//! Agent packages (seed 001, "Agent package"): the gzipped tar a management hub stores for
//! agents to upgrade themselves from. At its root a manifest, `package.json`
//! (`{"version", "packagesVersion", "sslVersion", "configVersion"}`, only `version` required and
//! the only one the agent compares with its own), and the directories `packages/` (the package
//! manager's packages), `ssl/` (the hub's PEM certificate) and `config/` (the hub settings),
//! each optional. The agent verifies a hash of what it downloaded before it installs it: here a
//! SHA-256 digest, kept beside the package in `sha256sum`'s format.
//!
//! Pure: the manifest, the entries of an archive and the digest are plain data here; reading
//! and writing archives is [`super::package_file`]'s.

use std::cmp::Ordering;

use serde::Serialize;
use serde_json::Value;

use super::version;
use crate::suggest;

/// The manifest's name at the package root.
pub const MANIFEST_FILE: &str = "package.json";
/// The directories a package may hold, in the order the agent visits them.
pub const DIRECTORIES: [&str; 3] = ["packages", "ssl", "config"];
/// The MMS object type of agent packages (seed 001).
pub const OBJECT_TYPE: &str = "openhorizon.agent-package";
/// The manifest's fields.
pub const MANIFEST_FIELDS: [&str; 4] =
    ["version", "packagesVersion", "sslVersion", "configVersion"];
/// The version an agent built locally reports; it counts as `0.0.0` (spec B.2).
pub const LOCAL_BUILD: &str = "local build";

/// `package.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageManifest {
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packages_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssl_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_version: Option<String>,
}

/// What is wrong with a package; each names the file or entry and says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackageError {
    #[error("{MANIFEST_FILE}: not a JSON object ({0}); write {{\"version\": \"X.Y.Z\", ...}}")]
    ManifestNotAnObject(String),
    #[error(
        "{MANIFEST_FILE}: unknown field {field:?}{hint}; the fields are version, packagesVersion, sslVersion, configVersion"
    )]
    UnknownField { field: String, hint: String },
    #[error("{MANIFEST_FILE}: {field} must be a string such as \"2.31.0\", not {found}")]
    NotAString { field: &'static str, found: String },
    #[error(
        "{MANIFEST_FILE}: the version field is missing; it is required (the agent compares it with its own version)"
    )]
    MissingVersion,
    #[error(
        "{MANIFEST_FILE}: {field} {value:?} is not a version: one to three decimal fields and an optional -prerelease, e.g. 2.31.0 or 2.31.0-rc.1"
    )]
    BadVersion { field: &'static str, value: String },
    #[error("{path}: an absolute path; the entries of a package are relative to its root")]
    AbsolutePath { path: String },
    #[error("{path}: a path through `..`; the entries of a package stay under its root")]
    ParentPath { path: String },
    #[error("{path}: a {kind}; a package holds only regular files and directories")]
    NotAFileOrDirectory { path: String, kind: &'static str },
    #[error(
        "{path}: not part of a package{hint}; at its root a package holds package.json and the directories packages/, ssl/ and config/"
    )]
    UnexpectedEntry { path: String, hint: String },
    #[error("{path}: in the archive twice")]
    Duplicate { path: String },
    #[error("{MANIFEST_FILE}: missing at the root of the package; every package has one")]
    NoManifest,
    #[error("{MANIFEST_FILE}: must be a regular file")]
    ManifestNotAFile,
    #[error(
        "{0:?} is not a SHA-256 digest: 64 hexadecimal characters, optionally followed by the file name as sha256sum writes it"
    )]
    BadDigest(String),
    #[error(
        "SHA-256 mismatch: the package's digest is {actual}, the expected one is {expected}; the package is not the one the digest was made for"
    )]
    DigestMismatch { expected: String, actual: String },
    #[error(
        "installed version {0:?} is not a version (nor \"{LOCAL_BUILD}\"): one to three decimal fields and an optional -prerelease"
    )]
    BadInstalledVersion(String),
}

/// Reads `package.json`: every problem at once, so that one run lists all there is to fix.
pub fn parse_manifest(text: &str) -> Result<PackageManifest, Vec<PackageError>> {
    let object = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => object,
        Ok(other) => {
            return Err(vec![PackageError::ManifestNotAnObject(format!(
                "found {}",
                json_kind(&other)
            ))]);
        }
        Err(e) => return Err(vec![PackageError::ManifestNotAnObject(e.to_string())]),
    };
    let mut errors = Vec::new();
    for field in object.keys() {
        if !MANIFEST_FIELDS.contains(&field.as_str()) {
            errors.push(PackageError::UnknownField {
                field: field.clone(),
                hint: suggest::did_you_mean(field, &MANIFEST_FIELDS),
            });
        }
    }
    let mut field = |name: &'static str| match object.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(other) => {
            errors.push(PackageError::NotAString {
                field: name,
                found: json_kind(other).to_owned(),
            });
            None
        }
    };
    let version = field("version");
    let manifest = PackageManifest {
        version: version.clone().unwrap_or_default(),
        packages_version: field("packagesVersion"),
        ssl_version: field("sslVersion"),
        config_version: field("configVersion"),
    };
    if matches!(object.get("version"), None | Some(Value::Null)) {
        errors.push(PackageError::MissingVersion);
    }
    errors.extend(version_errors(&manifest, version.is_some()));
    match errors.is_empty() {
        true => Ok(manifest),
        false => Err(errors),
    }
}

/// The versions of a manifest that are not versions (anax's `IsVersionString`: prereleases and
/// leading zeros allowed).
pub fn version_errors(manifest: &PackageManifest, has_version: bool) -> Vec<PackageError> {
    let fields = [
        ("version", has_version.then_some(&manifest.version)),
        ("packagesVersion", manifest.packages_version.as_ref()),
        ("sslVersion", manifest.ssl_version.as_ref()),
        ("configVersion", manifest.config_version.as_ref()),
    ];
    fields
        .into_iter()
        .filter_map(|(field, value)| {
            let value = value?;
            // INFINITY orders versions; no package is that version.
            let valid = value != version::INFINITY && version::is_version_string(value);
            (!valid).then(|| PackageError::BadVersion {
                field,
                value: value.clone(),
            })
        })
        .collect()
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What an archive entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File {
        size: u64,
    },
    Directory,
    Symlink,
    HardLink,
    /// Devices, FIFOs and the like.
    Other,
}

impl EntryKind {
    fn name(self) -> &'static str {
        match self {
            EntryKind::File { .. } => "regular file",
            EntryKind::Directory => "directory",
            EntryKind::Symlink => "symbolic link",
            EntryKind::HardLink => "hard link",
            EntryKind::Other => "special file",
        }
    }
}

/// One entry of the archive, its path as the archive writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub kind: EntryKind,
}

/// The files of a package by directory, their paths relative to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Contents {
    pub packages: Vec<String>,
    pub ssl: Vec<String>,
    pub config: Vec<String>,
}

impl Contents {
    fn directory(&mut self, name: &str) -> Option<&mut Vec<String>> {
        match name {
            "packages" => Some(&mut self.packages),
            "ssl" => Some(&mut self.ssl),
            "config" => Some(&mut self.config),
            _ => None,
        }
    }
}

/// A path as the package sees it: `./` prefixes and trailing `/` dropped (`tar -C dir .`
/// writes both); `None` for the root itself.
pub fn package_path(path: &str) -> Option<String> {
    let mut rest = path;
    while let Some(stripped) = rest.strip_prefix("./") {
        rest = stripped;
    }
    let rest = rest.trim_end_matches('/');
    (!rest.is_empty() && rest != ".").then(|| rest.to_owned())
}

/// Checks the entries of an archive against the package layout and sorts its files by
/// directory; every problem at once.
pub fn check_entries(entries: &[Entry]) -> (Contents, Vec<PackageError>) {
    let mut contents = Contents::default();
    let mut errors = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut manifest = false;
    for entry in entries {
        if entry.path.starts_with('/') {
            errors.push(PackageError::AbsolutePath {
                path: entry.path.clone(),
            });
            continue;
        }
        let Some(path) = package_path(&entry.path) else {
            continue;
        };
        if path.split('/').any(|part| part == "..") {
            errors.push(PackageError::ParentPath { path });
            continue;
        }
        if !seen.insert(path.clone()) && entry.kind != EntryKind::Directory {
            errors.push(PackageError::Duplicate { path });
            continue;
        }
        if !matches!(entry.kind, EntryKind::File { .. } | EntryKind::Directory) {
            errors.push(PackageError::NotAFileOrDirectory {
                path,
                kind: entry.kind.name(),
            });
            continue;
        }
        let (top, inside) = match path.split_once('/') {
            Some((top, inside)) => (top, Some(inside)),
            None => (path.as_str(), None),
        };
        if top == MANIFEST_FILE && inside.is_none() {
            match entry.kind {
                EntryKind::File { .. } => manifest = true,
                _ => errors.push(PackageError::ManifestNotAFile),
            }
            continue;
        }
        let Some(files) = contents.directory(top) else {
            let valid = [MANIFEST_FILE, "packages", "ssl", "config"];
            errors.push(PackageError::UnexpectedEntry {
                hint: suggest::did_you_mean(top, &valid),
                path,
            });
            continue;
        };
        match (inside, entry.kind) {
            (Some(inside), EntryKind::File { .. }) => files.push(inside.to_owned()),
            (_, EntryKind::Directory) => {}
            // A file where a directory belongs.
            (None, _) => errors.push(PackageError::UnexpectedEntry {
                hint: format!(" ({top} must be a directory)"),
                path,
            }),
            (Some(_), _) => {}
        }
    }
    if !manifest && !errors.contains(&PackageError::ManifestNotAFile) {
        errors.push(PackageError::NoManifest);
    }
    for files in [
        &mut contents.packages,
        &mut contents.ssl,
        &mut contents.config,
    ] {
        files.sort();
    }
    (contents, errors)
}

/// A digest as given: 64 hexadecimal characters, alone or as the first field of a `sha256sum`
/// line (`HEX  NAME`); lower case.
pub fn parse_digest(text: &str) -> Result<String, PackageError> {
    let first = text.split_whitespace().next().unwrap_or("");
    match first.len() == 64 && first.bytes().all(|b| b.is_ascii_hexdigit()) {
        true => Ok(first.to_ascii_lowercase()),
        false => Err(PackageError::BadDigest(text.trim().to_owned())),
    }
}

/// The digest file's line for a package, as `sha256sum` writes it (so `sha256sum -c` reads it).
pub fn digest_line(digest: &str, file_name: &str) -> String {
    format!("{digest}  {file_name}\n")
}

/// Whether the package is the one the digest was made for.
pub fn check_digest(expected: &str, actual: &str) -> Result<(), PackageError> {
    match expected.eq_ignore_ascii_case(actual) {
        true => Ok(()),
        false => Err(PackageError::DigestMismatch {
            expected: expected.to_owned(),
            actual: actual.to_owned(),
        }),
    }
}

/// How the package's version stands against the version an agent runs: the agent only acts
/// on a package whose version differs, and an older one is a downgrade (spec B.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Standing {
    Newer,
    Same,
    Older,
}

/// The package version against the installed one (`local build` counts as `0.0.0`).
pub fn standing(package_version: &str, installed: &str) -> Result<Standing, PackageError> {
    let installed_version = match installed {
        LOCAL_BUILD => "0.0.0",
        other => other,
    };
    let bad_installed = || PackageError::BadInstalledVersion(installed.to_owned());
    if !version::is_version_string(installed_version) || installed_version == version::INFINITY {
        return Err(bad_installed());
    }
    let order = version::compare_versions(package_version, installed_version).map_err(|_| {
        PackageError::BadVersion {
            field: "version",
            value: package_version.to_owned(),
        }
    })?;
    Ok(match order {
        Ordering::Greater => Standing::Newer,
        Ordering::Equal => Standing::Same,
        Ordering::Less => Standing::Older,
    })
}

#[cfg(test)]
mod tests;
