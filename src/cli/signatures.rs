//! `cvo payload sign|verify`: release signatures for release engineers. `sign` writes an
//! atomic container signature of a digest, signed with an OpenPGP key, into a directory in
//! the signature store layout (serve it over HTTP as a store); `verify` checks a digest as a
//! cluster would, against keyrings (or a verification ConfigMap) and stores.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use clap::ValueEnum;
use serde::Serialize;

use super::CliResult;
use crate::verify::atomic::AtomicSignature;
use crate::verify::config::VerifierConfig;
#[cfg(feature = "registry")]
use crate::verify::config::is_http_url;
use crate::verify::openpgp::{self, Keyring};
use crate::verify::release::{MAX_SIGNATURES, Verification, VerifyError, check_digest};
#[cfg(feature = "registry")]
use crate::verify::store::{Store, offer_signatures};

#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// The release image's manifest digest (sha256:HEX).
    #[arg(long, value_name = "DIGEST")]
    pub digest: String,
    /// The image reference the signature names (`critical.identity.docker-reference`), e.g.
    /// quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64.
    #[arg(long, value_name = "REFERENCE")]
    pub identity: String,
    /// The OpenPGP secret key (armored or binary; unprotected), e.g. `gpg --export-secret-keys`.
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// The store directory: the signature goes to DIR/sha256=HEX/signature-N, N the first free.
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// `optional.creator` in the signature.
    #[arg(long, default_value = concat!("cvo ", env!("CARGO_PKG_VERSION")))]
    pub creator: String,
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The release image's manifest digest (sha256:HEX).
    #[arg(long, value_name = "DIGEST")]
    pub digest: String,
    /// A keyring that must have signed (armored or binary public keys); repeatable, each one
    /// must sign. Named `verifier-public-key-<file name>`.
    #[arg(long, value_name = "FILE")]
    pub keyring: Vec<PathBuf>,
    /// A verification ConfigMap (YAML or JSON; its `verifier-public-key-*` and `store-*` data),
    /// as a payload carries it; instead of, or besides, --keyring and --store.
    #[arg(long, value_name = "FILE")]
    pub config_map: Option<PathBuf>,
    /// A signature store: an http(s) URL, or a directory in the store layout; repeatable,
    /// read in order.
    #[arg(long, value_name = "URL|DIR")]
    pub store: Vec<String>,
    /// PEM CA certificates the https stores are checked against, instead of the system's roots
    /// (as a cluster's `spec.signatureStores[].ca`).
    #[arg(long, value_name = "FILE")]
    pub store_ca: Option<PathBuf>,
    #[arg(short = 'o', long, value_enum, default_value_t = VerifyFormat::Text)]
    pub output: VerifyFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerifyFormat {
    Text,
    Json,
}

pub fn sign(args: SignArgs) -> CliResult {
    check_digest(&args.digest).map_err(|e| anyhow!("--digest: {e}"))?;
    if args.identity.trim().is_empty() {
        return Err(anyhow!(
            "--identity: the signature must have an identity (an image reference)"
        )
        .into());
    }
    let key_bytes =
        fs::read(&args.key).with_context(|| format!("cannot read {}", args.key.display()))?;
    let key = openpgp::parse_secret_key(&key_bytes)
        .map_err(|e| anyhow!("{}: {e}", args.key.display()))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let document = AtomicSignature::new(&args.digest, &args.identity, &args.creator, now);
    let content = serde_json::to_vec(&document).context("cannot write the signature")?;
    let signature =
        openpgp::sign(&content, &key).map_err(|e| anyhow!("{}: {e}", args.key.display()))?;
    let dir = args.to.join(args.digest.replacen(':', "=", 1));
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let free = (1..=MAX_SIGNATURES)
        .map(|n| dir.join(format!("signature-{n}")))
        .find(|p| !p.exists());
    let Some(path) = free else {
        return Err(anyhow!(
            "{} already holds {MAX_SIGNATURES} signatures, the most a cluster reads; remove one first",
            dir.display()
        )
        .into());
    };
    fs::write(&path, signature).with_context(|| format!("cannot write {}", path.display()))?;
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// What `verify -o json` prints.
#[derive(Debug, Serialize)]
struct Report {
    digest: String,
    verified: bool,
    /// The keyrings that must sign, by name.
    keyrings: Vec<String>,
    stores: Vec<String>,
    /// Upstream's message when not verified.
    error: String,
    /// What went wrong with each signature tried.
    details: Vec<String>,
}

pub fn verify(args: VerifyArgs) -> CliResult {
    let (keyrings, stores) = verifier(&args)?;
    let store_ca = match &args.store_ca {
        Some(path) => {
            let pem = std::fs::read(path)
                .with_context(|| format!("--store-ca {}: cannot read", path.display()))?;
            let valid = std::str::from_utf8(&pem)
                .is_ok_and(|text| text.contains("-----BEGIN CERTIFICATE-----"));
            if !valid {
                return Err(anyhow!(
                    "--store-ca {}: no PEM certificate (-----BEGIN CERTIFICATE-----) in the file",
                    path.display()
                )
                .into());
            }
            Some(pem)
        }
        None => None,
    };
    let report = run(&args.digest, &keyrings, &stores, store_ca.as_deref())?;
    match args.output {
        VerifyFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&report).context("JSON")?)
        }
        VerifyFormat::Text if report.verified => println!(
            "{} is signed by {}",
            report.digest,
            report.keyrings.join(", ")
        ),
        VerifyFormat::Text => {
            println!("{} is not verified: {}", report.digest, report.error);
            for detail in &report.details {
                println!("  {detail}");
            }
        }
    }
    Ok(match report.verified {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}

/// The keyrings and stores the flags and the ConfigMap name.
fn verifier(args: &VerifyArgs) -> anyhow::Result<(BTreeMap<String, Keyring>, Vec<String>)> {
    let mut keyrings = BTreeMap::new();
    let mut stores = Vec::new();
    if let Some(file) = &args.config_map {
        let config = read_config_map(file)?;
        keyrings.extend(config.keyrings);
        stores.extend(config.stores);
    }
    for file in &args.keyring {
        let bytes = fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let keyring = Keyring::parse(&bytes).map_err(|e| anyhow!("{}: {e}", file.display()))?;
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        keyrings.insert(format!("verifier-public-key-{stem}"), keyring);
    }
    stores.extend(args.store.iter().cloned());
    if keyrings.is_empty() {
        bail!("no keyring: give --keyring FILE or --config-map FILE");
    }
    if stores.is_empty() {
        bail!("no signature store: give --store URL|DIR or --config-map FILE");
    }
    Ok((keyrings, stores))
}

/// A verification ConfigMap's data, checked as a cluster checks it.
fn read_config_map(file: &PathBuf) -> anyhow::Result<VerifierConfig> {
    let text =
        fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let value: serde_json::Value = serde_saphyr::from_str(&text)
        .map_err(|e| anyhow!("{}: not a ConfigMap in YAML or JSON: {e}", file.display()))?;
    if value.get("kind").and_then(|k| k.as_str()) != Some("ConfigMap") {
        bail!("{}: expected kind ConfigMap", file.display());
    }
    let data: BTreeMap<String, String> = match value.get("data") {
        Some(d) => serde_json::from_value(d.clone())
            .map_err(|e| anyhow!("{}: data: {e}", file.display()))?,
        None => BTreeMap::new(),
    };
    let meta = value.get("metadata");
    let field = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(|v| v.as_str())
            .unwrap_or("")
    };
    let source = format!("configmap {}/{}", field("namespace"), field("name"));
    VerifierConfig::from_data(&source, &data).map_err(|e| anyhow!("{}: {e}", file.display()))
}

fn run(
    digest: &str,
    keyrings: &BTreeMap<String, Keyring>,
    stores: &[String],
    store_ca: Option<&[u8]>,
) -> anyhow::Result<Report> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let names: Vec<String> = keyrings.keys().cloned().collect();
    let mut report = Report {
        digest: digest.into(),
        verified: false,
        keyrings: names,
        stores: stores.to_vec(),
        error: String::new(),
        details: Vec::new(),
    };
    let mut verification = match Verification::start(digest, keyrings, now) {
        Ok(v) => v,
        Err(e) => bail!("--digest: {e}"),
    };
    read_stores(stores, store_ca, digest, &mut verification)?;
    match verification.finish() {
        Ok(_) => report.verified = true,
        Err(e) => {
            report.error = e.to_string();
            if let VerifyError::Unverified { errors, .. } = e {
                report.details = errors;
            }
        }
    }
    Ok(report)
}

#[cfg(feature = "registry")]
fn read_stores(
    stores: &[String],
    store_ca: Option<&[u8]>,
    digest: &str,
    verification: &mut Verification<'_>,
) -> anyhow::Result<()> {
    let stores: Vec<Store> = stores
        .iter()
        .map(|s| match is_http_url(s) {
            true => Ok(match store_ca {
                Some(ca_pem) => Store::HttpWithCa {
                    url: s.clone(),
                    ca_pem: ca_pem.to_vec(),
                },
                None => Store::Http(s.clone()),
            }),
            false if s.contains("://") => Err(anyhow!(
                "--store {s}: must be a valid URL with scheme http:// or https://, or a directory"
            )),
            false if std::path::Path::new(s).is_dir() => Ok(Store::Directory(s.into())),
            false => Err(anyhow!(
                "--store {s}: no such directory (and not an http(s) URL)"
            )),
        })
        .collect::<anyhow::Result<_>>()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start an async runtime")?;
    runtime.block_on(offer_signatures(
        &stores,
        digest,
        verification,
        &Default::default(),
    ));
    Ok(())
}

#[cfg(not(feature = "registry"))]
fn read_stores(
    _: &[String],
    _: Option<&[u8]>,
    _: &str,
    _: &mut Verification<'_>,
) -> anyhow::Result<()> {
    bail!("this cvo was built without the registry feature: it cannot read signature stores")
}
