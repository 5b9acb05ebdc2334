//! Agent package archives on disk, the thin shell of [`super::package`]: writing a package
//! (a reproducible tar.gz: sorted entries, no owners, no times) from files and directories,
//! reading one back into its entries and its manifest, and SHA-256 digests of files.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use sha2::{Digest as _, Sha256};

use super::package::{self, Entry, EntryKind, MANIFEST_FILE};

/// `package.json` above this size is refused unread: a manifest has four short fields.
pub const MAX_MANIFEST_BYTES: u64 = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum PackageFileError {
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{}: cannot write: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("{}: not a gzipped tar archive ({source}); an agent package is a .tar.gz", path.display())]
    NotAnArchive { path: PathBuf, source: io::Error },
    #[error("{}: an entry's path is not UTF-8 ({lossy:?})", path.display())]
    NotUtf8 { path: PathBuf, lossy: String },
    #[error("{}: {MANIFEST_FILE} is over {MAX_MANIFEST_BYTES} bytes or not UTF-8 text", path.display())]
    BadManifestText { path: PathBuf },
    #[error("{}: a {kind}; give regular files and directories", path.display())]
    NotAFileOrDirectory { path: PathBuf, kind: &'static str },
    #[error("{}: the file name is not UTF-8; rename it", path.display())]
    NameNotUtf8 { path: PathBuf },
    #[error("{}: would be {entry} in the package, and so would {}", first.display(), second.display())]
    SameEntry {
        entry: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("{}: exists; give --force to replace it", path.display())]
    Exists { path: PathBuf },
}

/// What reading a package found: its entries in archive order, and the text of its manifest
/// when it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPackage {
    pub entries: Vec<Entry>,
    pub manifest: Option<String>,
}

/// The SHA-256 of a file, lower-case hexadecimal.
pub fn sha256_of(path: &Path) -> Result<String, PackageFileError> {
    let read_error = |source| PackageFileError::Read {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(read_error)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let n = file.read(&mut buffer).map_err(read_error)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Reads a package's entries and manifest. File contents are streamed past, never kept.
pub fn read(path: &Path) -> Result<ReadPackage, PackageFileError> {
    let file = File::open(path).map_err(|source| PackageFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    let not_an_archive = |source| PackageFileError::NotAnArchive {
        path: path.to_owned(),
        source,
    };
    let mut archive = tar::Archive::new(GzDecoder::new(BufReader::new(file)));
    let mut entries = Vec::new();
    let mut manifest = None;
    for entry in archive.entries().map_err(not_an_archive)? {
        let mut entry = entry.map_err(not_an_archive)?;
        let raw = entry.path_bytes();
        let Ok(name) = String::from_utf8(raw.to_vec()) else {
            let lossy = String::from_utf8_lossy(&raw).into_owned();
            return Err(PackageFileError::NotUtf8 {
                path: path.to_owned(),
                lossy,
            });
        };
        let kind = kind_of(entry.header());
        if matches!(kind, EntryKind::File { .. })
            && package::package_path(&name).as_deref() == Some(MANIFEST_FILE)
            && !name.starts_with('/')
        {
            manifest = Some(read_manifest(&mut entry, path)?);
        }
        entries.push(Entry { path: name, kind });
    }
    Ok(ReadPackage { entries, manifest })
}

fn kind_of(header: &tar::Header) -> EntryKind {
    use tar::EntryType::*;
    match header.entry_type() {
        Regular | Continuous => EntryKind::File {
            size: header.size().unwrap_or(0),
        },
        Directory => EntryKind::Directory,
        Symlink => EntryKind::Symlink,
        Link => EntryKind::HardLink,
        _ => EntryKind::Other,
    }
}

fn read_manifest(entry: &mut impl Read, path: &Path) -> Result<String, PackageFileError> {
    let mut bytes = Vec::new();
    entry
        .take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| PackageFileError::NotAnArchive {
            path: path.to_owned(),
            source,
        })?;
    match bytes.len() as u64 <= MAX_MANIFEST_BYTES {
        true => String::from_utf8(bytes).map_err(|_| PackageFileError::BadManifestText {
            path: path.to_owned(),
        }),
        false => Err(PackageFileError::BadManifestText {
            path: path.to_owned(),
        }),
    }
}

/// A file or directory to put under one of the package directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `packages`, `ssl` or `config`.
    pub directory: &'static str,
    pub path: PathBuf,
}

/// One file of the package to be: its path in the archive and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Planned {
    entry: String,
    from: PathBuf,
    executable: bool,
}

/// Writes the package: `package.json` with `manifest_json`, then each directory given (also
/// when empty) with its files, in sorted order. Written beside `out` and renamed over it, so
/// that a failure leaves no half package.
pub fn write(
    out: &Path,
    manifest_json: &str,
    sources: &[Source],
    force: bool,
) -> Result<(), PackageFileError> {
    if !force && out.exists() {
        return Err(PackageFileError::Exists {
            path: out.to_owned(),
        });
    }
    let files = plan(sources)?;
    let mut directories: Vec<String> = sources.iter().map(|s| s.directory.to_owned()).collect();
    for file in &files {
        let mut parent = file.entry.as_str();
        while let Some((dir, _)) = parent.rsplit_once('/') {
            directories.push(dir.to_owned());
            parent = dir;
        }
    }
    directories.sort();
    directories.dedup();
    let partial = out.with_extension("partial");
    let write_error = |source| PackageFileError::Write {
        path: out.to_owned(),
        source,
    };
    let result = write_archive(&partial, manifest_json, &directories, &files)
        .and_then(|()| fs::rename(&partial, out).map_err(write_error));
    if result.is_err() {
        let _ = fs::remove_file(&partial);
    }
    result
}

fn write_archive(
    partial: &Path,
    manifest_json: &str,
    directories: &[String],
    files: &[Planned],
) -> Result<(), PackageFileError> {
    let write_error = |source| PackageFileError::Write {
        path: partial.to_owned(),
        source,
    };
    let file = File::create(partial).map_err(write_error)?;
    let mut tar = tar::Builder::new(GzEncoder::new(BufWriter::new(file), Compression::default()));
    tar.mode(tar::HeaderMode::Deterministic);
    let manifest = manifest_json.as_bytes();
    tar.append_data(
        &mut header(manifest.len() as u64, 0o644),
        MANIFEST_FILE,
        manifest,
    )
    .map_err(write_error)?;
    for dir in directories {
        let mut dir_header = header(0, 0o755);
        dir_header.set_entry_type(tar::EntryType::Directory);
        tar.append_data(&mut dir_header, format!("{dir}/"), io::empty())
            .map_err(write_error)?;
    }
    for planned in files {
        let source = File::open(&planned.from).map_err(|source| PackageFileError::Read {
            path: planned.from.clone(),
            source,
        })?;
        let size = source
            .metadata()
            .map_err(|source| PackageFileError::Read {
                path: planned.from.clone(),
                source,
            })?
            .len();
        let mode = if planned.executable { 0o755 } else { 0o644 };
        tar.append_data(&mut header(size, mode), &planned.entry, source)
            .map_err(write_error)?;
    }
    let mut out = tar
        .into_inner()
        .and_then(|gz| gz.finish())
        .map_err(write_error)?;
    out.flush().map_err(write_error)?;
    out.into_inner()
        .map_err(|e| write_error(e.into_error()))?
        .sync_all()
        .map_err(write_error)
}

fn header(size: u64, mode: u32) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(mode);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header
}

/// The files the sources name, sorted by their path in the package; two sources landing on
/// the same path are refused.
fn plan(sources: &[Source]) -> Result<Vec<Planned>, PackageFileError> {
    let mut files: Vec<Planned> = Vec::new();
    for source in sources {
        collect(source.directory, &source.path, true, &mut files)?;
    }
    files.sort_by(|a, b| a.entry.cmp(&b.entry));
    for pair in files.windows(2) {
        if pair[0].entry == pair[1].entry {
            return Err(PackageFileError::SameEntry {
                entry: pair[0].entry.clone(),
                first: pair[0].from.clone(),
                second: pair[1].from.clone(),
            });
        }
    }
    Ok(files)
}

/// A file lands at `prefix/<name>`; a directory's files below `prefix/` (the directory given
/// on the command line) or `prefix/<name>/` (one inside it).
fn collect(
    prefix: &str,
    path: &Path,
    top: bool,
    files: &mut Vec<Planned>,
) -> Result<(), PackageFileError> {
    let read_error = |source| PackageFileError::Read {
        path: path.to_owned(),
        source,
    };
    let meta = fs::symlink_metadata(path).map_err(read_error)?;
    let name = || {
        path.file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned)
            .ok_or_else(|| PackageFileError::NameNotUtf8 {
                path: path.to_owned(),
            })
    };
    if meta.is_file() {
        use std::os::unix::fs::PermissionsExt as _;
        files.push(Planned {
            entry: format!("{prefix}/{}", name()?),
            from: path.to_owned(),
            executable: meta.permissions().mode() & 0o111 != 0,
        });
        return Ok(());
    }
    if !meta.is_dir() {
        let kind = if meta.is_symlink() {
            "symbolic link"
        } else {
            "special file"
        };
        return Err(PackageFileError::NotAFileOrDirectory {
            path: path.to_owned(),
            kind,
        });
    }
    let inner = match top {
        true => prefix.to_owned(),
        false => format!("{prefix}/{}", name()?),
    };
    let mut children: Vec<PathBuf> = fs::read_dir(path)
        .map_err(read_error)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(read_error)?;
    children.sort();
    for child in children {
        collect(&inner, &child, false, files)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::edge::package::{Contents, check_entries};

    #[test]
    fn written_packages_read_back_the_same_and_reproducibly() {
        let dir = tempfile::tempdir().unwrap();
        let debs = dir.path().join("debs");
        fs::create_dir_all(debs.join("extra")).unwrap();
        fs::write(debs.join("horizon_2.31.0_amd64.deb"), b"deb").unwrap();
        fs::write(debs.join("extra/horizon-cli.deb"), b"cli").unwrap();
        let cert = dir.path().join("agent-install.crt");
        fs::write(&cert, b"-----BEGIN CERTIFICATE-----\n").unwrap();
        let sources = [
            Source {
                directory: "packages",
                path: debs.clone(),
            },
            Source {
                directory: "ssl",
                path: cert.clone(),
            },
        ];
        let manifest = r#"{"version":"2.31.0"}"#;
        let (a, b) = (dir.path().join("a.tar.gz"), dir.path().join("b.tar.gz"));
        write(&a, manifest, &sources, false).unwrap();
        write(&b, manifest, &sources, false).unwrap();
        assert_eq!(sha256_of(&a).unwrap(), sha256_of(&b).unwrap());
        let read_back = read(&a).unwrap();
        assert_eq!(read_back.manifest.as_deref(), Some(manifest));
        let (contents, errors) = check_entries(&read_back.entries);
        assert_eq!(errors, vec![]);
        assert_eq!(
            contents,
            Contents {
                packages: vec![
                    "extra/horizon-cli.deb".into(),
                    "horizon_2.31.0_amd64.deb".into()
                ],
                ssl: vec!["agent-install.crt".into()],
                config: vec![],
            }
        );
        assert!(matches!(
            write(&a, manifest, &sources, false),
            Err(PackageFileError::Exists { .. })
        ));
        write(&a, manifest, &sources, true).unwrap();
        assert!(!a.with_extension("partial").exists());
    }

    #[test]
    fn refusals() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two) = (dir.path().join("one"), dir.path().join("two"));
        for d in [&one, &two] {
            fs::create_dir(d).unwrap();
            fs::write(d.join("same.deb"), b"x").unwrap();
        }
        let sources = [&one, &two].map(|p| Source {
            directory: "packages",
            path: p.clone(),
        });
        let out = dir.path().join("p.tar.gz");
        let err = write(&out, "{}", &sources, false).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}: would be packages/same.deb in the package, and so would {}",
                one.join("same.deb").display(),
                two.join("same.deb").display()
            )
        );
        std::os::unix::fs::symlink(&one, dir.path().join("link")).unwrap();
        let link = [Source {
            directory: "config",
            path: dir.path().join("link"),
        }];
        assert_eq!(
            write(&out, "{}", &link, false).unwrap_err().to_string(),
            format!(
                "{}: a symbolic link; give regular files and directories",
                dir.path().join("link").display()
            )
        );
        assert!(!out.exists());
        fs::write(&out, b"not gzip").unwrap();
        assert!(matches!(
            read(&out),
            Err(PackageFileError::NotAnArchive { .. })
        ));
    }
}
