//! `cvo edge package new|inspect|verify`: agent packages (seed 001) on the command line, over
//! `components::edge::package` (the rules) and `components::edge::package_file` (the files).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::CliResult;
use super::edge::EdgeFormat;
use crate::components::edge::package::{self, Contents, PackageError, PackageManifest};
use crate::components::edge::package_file::{self, Source};

#[derive(Debug, Args)]
pub struct PackageGroup {
    #[command(subcommand)]
    pub command: PackageCommand,
}

#[derive(Debug, Subcommand)]
pub enum PackageCommand {
    /// Write an agent package (a .tar.gz with package.json, packages/, ssl/, config/) and its
    /// SHA-256 digest file (FILE.sha256, as sha256sum writes it).
    #[command(after_help = NEW_HELP)]
    New(NewArgs),
    /// Show a package's manifest, files and digest, and what is wrong with it.
    Inspect(InspectArgs),
    /// Check a package against its digest, its manifest and the package layout; with
    /// --installed, how its version stands against an agent's.
    #[command(after_help = VERIFY_HELP)]
    Verify(VerifyArgs),
}

const NEW_HELP: &str = "Example:
  cvo edge package new -f agent-2.31.0.tar.gz --version 2.31.0 \\
      --packages debs/ --ssl agent-install.crt --config agent-install.cfg

Versions: one to three decimal fields and an optional -prerelease
(2.31.0, 2.31, 2.31.0-rc.1). A directory given to --packages, --ssl or --config has its files
put under that package directory (subdirectories kept); a file is put there by its name.";

const VERIFY_HELP: &str = "Exit codes:
  0  the package matches its digest and is a valid package
  1  it does not (each problem is listed), or it cannot be read
  2  usage error";

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The package to write (a .tar.gz); the digest goes to FILE.sha256.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: PathBuf,
    /// The package's version, the one agents compare with theirs.
    #[arg(long = "version", value_name = "VERSION")]
    pub version: String,
    /// The version of the packages/ contents (documentation only).
    #[arg(long, value_name = "VERSION")]
    pub packages_version: Option<String>,
    /// The version of the ssl/ contents (documentation only).
    #[arg(long, value_name = "VERSION")]
    pub ssl_version: Option<String>,
    /// The version of the config/ contents (documentation only).
    #[arg(long, value_name = "VERSION")]
    pub config_version: Option<String>,
    /// A file or directory for packages/ (the package manager's packages); repeatable.
    #[arg(long, value_name = "PATH")]
    pub packages: Vec<PathBuf>,
    /// A file or directory for ssl/ (the hub's PEM certificate); repeatable.
    #[arg(long, value_name = "PATH")]
    pub ssl: Vec<PathBuf>,
    /// A file or directory for config/ (the hub settings); repeatable.
    #[arg(long, value_name = "PATH")]
    pub config: Vec<PathBuf>,
    /// Replace FILE when it exists.
    #[arg(long)]
    pub force: bool,
    /// text: a line; json: {"file", "sha256", "digestFile", "manifest", "contents"}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = EdgeFormat::Text)]
    pub output: EdgeFormat,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The package (.tar.gz).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// text: a summary; json: {"file", "sha256", "manifest", "contents", "problems"}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = EdgeFormat::Text)]
    pub output: EdgeFormat,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The package (.tar.gz).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The expected SHA-256 (64 hexadecimal characters) instead of a digest file.
    #[arg(long, value_name = "HEX", conflicts_with = "digest_file")]
    pub sha256: Option<String>,
    /// The digest file (sha256sum's format); default FILE.sha256.
    #[arg(long, value_name = "FILE")]
    pub digest_file: Option<PathBuf>,
    /// The agent version to compare the package with (`local build` counts as 0.0.0).
    #[arg(long, value_name = "VERSION")]
    pub installed: Option<String>,
    /// text: a verdict and the problems; json: {"file", "valid", "sha256", "expectedSha256",
    /// "version", "installed", "standing", "problems"}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = EdgeFormat::Text)]
    pub output: EdgeFormat,
}

pub fn package(group: PackageGroup) -> CliResult {
    match group.command {
        PackageCommand::New(args) => new(args),
        PackageCommand::Inspect(args) => inspect(args),
        PackageCommand::Verify(args) => verify(args),
    }
}

fn new(args: NewArgs) -> CliResult {
    let manifest = PackageManifest {
        version: args.version.clone(),
        packages_version: args.packages_version.clone(),
        ssl_version: args.ssl_version.clone(),
        config_version: args.config_version.clone(),
    };
    let errors = package::version_errors(&manifest, true);
    if !errors.is_empty() {
        return Err(anyhow!("cannot write the package: {}", lines(&errors)).into());
    }
    let sources: Vec<Source> = [
        ("packages", &args.packages),
        ("ssl", &args.ssl),
        ("config", &args.config),
    ]
    .into_iter()
    .flat_map(|(directory, paths)| {
        paths.iter().map(move |path| Source {
            directory,
            path: path.clone(),
        })
    })
    .collect();
    let manifest_json = serde_json::to_string_pretty(&manifest).map_err(anyhow::Error::from)?;
    package_file::write(
        &args.file,
        &format!("{manifest_json}\n"),
        &sources,
        args.force,
    )
    .map_err(anyhow::Error::from)?;
    let sha256 = package_file::sha256_of(&args.file).map_err(anyhow::Error::from)?;
    let digest_file = digest_path(&args.file);
    let name = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    std::fs::write(&digest_file, package::digest_line(&sha256, &name))
        .with_context(|| format!("{}: cannot write", digest_file.display()))?;
    let read_back = package_file::read(&args.file).map_err(anyhow::Error::from)?;
    let (contents, _) = package::check_entries(&read_back.entries);
    match args.output {
        EdgeFormat::Json => print(&json!({
            "file": args.file.display().to_string(),
            "sha256": sha256,
            "digestFile": digest_file.display().to_string(),
            "manifest": manifest,
            "contents": contents,
        }))?,
        EdgeFormat::Text => outln!(
            "wrote {} (version {}, {} files; sha256 {sha256} in {})",
            args.file.display(),
            manifest.version,
            contents.packages.len() + contents.ssl.len() + contents.config.len(),
            digest_file.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// `FILE.sha256` beside the package.
fn digest_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// What a package holds and what is wrong with it.
struct Examined {
    sha256: String,
    manifest: Option<PackageManifest>,
    contents: Contents,
    problems: Vec<PackageError>,
}

fn examine(file: &Path) -> anyhow::Result<Examined> {
    let sha256 = package_file::sha256_of(file)?;
    let read = package_file::read(file)?;
    let (contents, mut problems) = package::check_entries(&read.entries);
    let manifest = match read.manifest.as_deref().map(package::parse_manifest) {
        Some(Ok(manifest)) => Some(manifest),
        Some(Err(errors)) => {
            problems.extend(errors);
            None
        }
        None => None,
    };
    Ok(Examined {
        sha256,
        manifest,
        contents,
        problems,
    })
}

fn inspect(args: InspectArgs) -> CliResult {
    let found = examine(&args.file)?;
    match args.output {
        EdgeFormat::Json => print(&json!({
            "file": args.file.display().to_string(),
            "sha256": found.sha256,
            "manifest": found.manifest,
            "contents": found.contents,
            "problems": strings(&found.problems),
        }))?,
        EdgeFormat::Text => {
            outln!("{}: sha256 {}", args.file.display(), found.sha256);
            match &found.manifest {
                Some(m) => outln!(
                    "version {} (packages {}, ssl {}, config {})",
                    m.version,
                    m.packages_version.as_deref().unwrap_or("-"),
                    m.ssl_version.as_deref().unwrap_or("-"),
                    m.config_version.as_deref().unwrap_or("-")
                ),
                None => outln!("no valid {}", package::MANIFEST_FILE),
            }
            for (dir, files) in [
                ("packages", &found.contents.packages),
                ("ssl", &found.contents.ssl),
                ("config", &found.contents.config),
            ] {
                for file in files {
                    outln!("{dir}/{file}");
                }
            }
            for problem in &found.problems {
                outln!("problem: {problem}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn verify(args: VerifyArgs) -> CliResult {
    let expected = expected_digest(&args)?;
    let found = examine(&args.file)?;
    let mut problems = Vec::new();
    if let Err(mismatch) = package::check_digest(&expected, &found.sha256) {
        problems.push(mismatch);
    }
    problems.extend(found.problems);
    let version = found.manifest.as_ref().map(|m| m.version.clone());
    let standing = match (&args.installed, &version) {
        (Some(installed), Some(version)) => {
            Some(package::standing(version, installed).map_err(anyhow::Error::from)?)
        }
        (Some(installed), None) => {
            // Refuse a bad --installed even when the package has no version to compare.
            package::standing("0.0.0", installed).map_err(anyhow::Error::from)?;
            None
        }
        (None, _) => None,
    };
    let valid = problems.is_empty();
    match args.output {
        EdgeFormat::Json => print(&json!({
            "file": args.file.display().to_string(),
            "valid": valid,
            "sha256": found.sha256,
            "expectedSha256": expected,
            "version": version,
            "installed": args.installed,
            "standing": standing,
            "problems": strings(&problems),
        }))?,
        EdgeFormat::Text => {
            match valid {
                true => outln!(
                    "valid: {} (version {}, sha256 {})",
                    args.file.display(),
                    version.as_deref().unwrap_or_default(),
                    found.sha256
                ),
                false => outln!("invalid: {}", args.file.display()),
            }
            for problem in &problems {
                outln!("problem: {problem}");
            }
            if let (Some(standing), Some(installed)) = (standing, &args.installed) {
                let word = match standing {
                    package::Standing::Newer => "newer than",
                    package::Standing::Same => "the same as",
                    package::Standing::Older => "older than",
                };
                outln!("the package is {word} the installed version {installed}");
            }
        }
    }
    Ok(match valid {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}

/// The digest to check against: --sha256, else the digest file (default FILE.sha256).
fn expected_digest(args: &VerifyArgs) -> anyhow::Result<String> {
    if let Some(hex) = &args.sha256 {
        return package::parse_digest(hex).map_err(|e| anyhow!("--sha256: {e}"));
    }
    let path = args
        .digest_file
        .clone()
        .unwrap_or_else(|| digest_path(&args.file));
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{}: cannot read the digest; give it with --sha256 HEX or --digest-file FILE",
            path.display()
        )
    })?;
    package::parse_digest(&text).map_err(|e| anyhow!("{}: {e}", path.display()))
}

fn strings(errors: &[PackageError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

fn lines(errors: &[PackageError]) -> String {
    strings(errors).join("\n")
}

fn print(value: &Value) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
