//! Release images in registries: `registry/repo:tag`, `registry/repo@sha256:…`, `docker://…`.
//!
//! Pulling stores what it fetches (image index, manifest, config, layers; every blob checked
//! against its digest and size) in a small OCI image layout under the cache
//! (`<cache>/registry/sha256-<top digest>/`) and then loads that layout with [`super::load`],
//! so platform choice, extraction and the content-addressed payload cache are the layout code.
//! Layer blobs are dropped once extracted. A pull by digest whose image is already extracted
//! does no network I/O; a pull by tag asks the registry for the tag's manifest first.
//!
//! Blobs are streamed into a temp file beside their final path while they are hashed (never
//! held in memory whole) and renamed into place only when their size and sha256 match the
//! descriptor; the layers' bytes drive one progress bar ([`super::progress`]) when a person is
//! watching.
//!
//! Pushing writes the same one-layer image as [`super::push`] into a temporary layout and
//! uploads its blobs and manifests.
//!
//! Auth: `--registry-username` + `--registry-password-stdin`, else the auth files podman and
//! docker read (`$REGISTRY_AUTH_FILE`, `${XDG_RUNTIME_DIR}/containers/auth.json`,
//! `~/.config/containers/auth.json`, `~/.docker/config.json`): `credHelpers`, `auths.<host>.auth`
//! (base64 `user:pass`) or `credsStore`, else anonymous. Plain
//! HTTP only for loopback registries and `--insecure-registry HOST`; a registry with a
//! `certs.d/<host[:port]>/` folder (`--cert-dir`) is TLS with those CAs, loopback or not.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use futures_util::StreamExt as _;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use super::progress::Download;
use super::reference::{AuthEntry, auth_entry, helper_credentials};
pub use super::reference::{PullSecret, RegistrySettings, is_reference};
use super::{
    Descriptor, Digest, ImageManifest, Index, MEDIA_DOCKER_LIST, MEDIA_DOCKER_MANIFEST,
    MEDIA_OCI_INDEX, MEDIA_OCI_MANIFEST, OciError, Options, Platform, REF_NAME,
};

/// JSON documents (index, manifest, config) larger than this are refused.
const MAX_JSON: usize = 16 << 20;
const MANIFEST_TYPES: &[&str] = &[
    MEDIA_OCI_INDEX,
    MEDIA_OCI_MANIFEST,
    MEDIA_DOCKER_LIST,
    MEDIA_DOCKER_MANIFEST,
];

/// Parses a registry reference (a `docker://` prefix is dropped; no tag means `latest`).
pub fn parse_reference(text: &str) -> Result<Reference, OciError> {
    let bare = text.strip_prefix("docker://").unwrap_or(text);
    if let Some(reference) = parse_canonical(bare) {
        return Ok(reference);
    }
    bare.parse::<Reference>()
        .map_err(|e| OciError::Invalid(format!("invalid registry reference {text:?}: {e}")))
}

/// The common, fully qualified form `host[:port]/path[:tag][@sha256:<64 hex>]` (a host with a
/// `.` or `:`, or `localhost`: no Docker Hub normalisation), parsed without oci-spec's regex,
/// whose compilation costs ~20 ms of CPU in every process that parses a reference. Anything
/// else is `None` and goes to oci-spec; for what it accepts the result is oci-spec's (tests
/// check both agree).
fn parse_canonical(text: &str) -> Option<Reference> {
    let (rest, digest) = match text.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (text, None),
    };
    if let Some(digest) = digest {
        let hex = digest.strip_prefix("sha256:")?;
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
    }
    let (host, path_and_tag) = rest.split_once('/')?;
    let (path, tag) = match path_and_tag.rsplit_once(':') {
        Some((path, tag)) => (path, Some(tag)),
        None => (path_and_tag, None),
    };
    if let Some(tag) = tag {
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let bytes = tag.as_bytes();
        if bytes.is_empty()
            || bytes.len() > 128
            || !word(bytes[0])
            || !bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-')
        {
            return None;
        }
    }
    let (name, port) = match host.split_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    let domain_component = |c: &str| {
        let b = c.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|&x| x.is_ascii_alphanumeric() || x == b'-')
    };
    if !(host.contains('.') || port.is_some() || host == "localhost")
        || port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
        || !name.split('.').all(domain_component)
        || path.len() > 255
        || !path.split('/').all(path_component)
    {
        return None;
    }
    let (registry, repository) = (host.to_string(), path.to_string());
    Some(match (tag, digest) {
        (Some(tag), Some(digest)) => {
            Reference::with_tag_and_digest(registry, repository, tag.into(), digest.into())
        }
        (None, Some(digest)) => Reference::with_digest(registry, repository, digest.into()),
        (tag, None) => Reference::with_tag(registry, repository, tag.unwrap_or("latest").into()),
    })
}

/// `[a-z0-9]+` runs joined by `.`, `_`, `__` or one or more `-` (the distribution grammar).
fn path_component(component: &str) -> bool {
    let b = component.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let separator = &component[start..i];
        if !(separator == "."
            || separator == "_"
            || separator == "__"
            || separator.bytes().all(|x| x == b'-'))
        {
            return false;
        }
    }
    true
}

fn is_loopback(host: &str) -> bool {
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name == "localhost"
        || name == "::1"
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Installs rustls' ring provider (kube and oci-client share rustls); idempotent.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The `certs.d` directories searched when `--cert-dir` is not given (podman's, docker's).
const DEFAULT_CERT_DIRS: [&str; 2] = ["/etc/containers/certs.d", "/etc/docker/certs.d"];

/// The CA certificates (`*.crt`, PEM) of `registry` in the first `certs.d` directory that has a
/// `<registry>/` folder, sorted by file name; `None` when none has.
fn registry_cas(
    registry: &str,
    settings: &RegistrySettings,
) -> Result<Option<Vec<Certificate>>, OciError> {
    let defaults: Vec<PathBuf> = DEFAULT_CERT_DIRS.iter().map(PathBuf::from).collect();
    let dirs = if settings.cert_dirs.is_empty() {
        &defaults
    } else {
        &settings.cert_dirs
    };
    let Some(dir) = dirs.iter().map(|d| d.join(registry)).find(|d| d.is_dir()) else {
        return Ok(None);
    };
    let listing = std::fs::read_dir(&dir).map_err(OciError::io(format!(
        "cannot list the certificates of {registry} in {}",
        dir.display()
    )))?;
    let mut files: Vec<PathBuf> = listing
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "crt"))
        .collect();
    files.sort();
    let mut cas = Vec::with_capacity(files.len());
    for file in files {
        let data = std::fs::read(&file).map_err(OciError::io(format!(
            "cannot read the CA certificate {}",
            file.display()
        )))?;
        if !data.starts_with(b"-----BEGIN") {
            return Err(OciError::Invalid(format!(
                "{}: not a PEM certificate; put the registry's CA in PEM form (-----BEGIN CERTIFICATE-----) in a .crt file",
                file.display()
            )));
        }
        cas.push(Certificate {
            encoding: CertificateEncoding::Pem,
            data,
        });
    }
    Ok(Some(cas))
}

/// The client for `registry`: TLS with the system roots plus its `certs.d` CAs; plain HTTP for
/// `--insecure-registry` and for loopback registries that have no `certs.d` folder (as docker
/// treats `localhost`).
fn client_for(registry: &str, settings: &RegistrySettings) -> Result<Client, OciError> {
    install_crypto_provider();
    let cas = registry_cas(registry, settings)?;
    let plain =
        settings.insecure.iter().any(|h| h == registry) || (cas.is_none() && is_loopback(registry));
    let protocol = if plain {
        ClientProtocol::HttpsExcept(vec![registry.to_string()])
    } else {
        ClientProtocol::Https
    };
    Ok(Client::new(ClientConfig {
        protocol,
        extra_root_certificates: cas.unwrap_or_default(),
        ..Default::default()
    }))
}

/// The credentials for `registry`: the flags', else the cluster's pull secret's, else the
/// first auth file that says something about it (its credential helper's answer, or its
/// `auths` entry), else anonymous.
pub fn auth_for(registry: &str, settings: &RegistrySettings) -> Result<RegistryAuth, OciError> {
    if let Some((user, pass)) = &settings.credentials {
        return Ok(RegistryAuth::Basic(user.clone(), pass.clone()));
    }
    if let Some(secret) = &settings.pull_secret
        && let Some((user, pass)) = secret.credentials(registry).map_err(OciError::Invalid)?
    {
        return Ok(RegistryAuth::Basic(user, pass));
    }
    for file in &settings.auth_files {
        let Ok(bytes) = fs::read(file) else { continue };
        let invalid =
            |e: String| OciError::Invalid(format!("registry auth file {}: {e}", file.display()));
        let config: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
        match auth_entry(&config, registry).map_err(invalid)? {
            None => continue,
            Some(AuthEntry::Basic { user, password }) => {
                return Ok(RegistryAuth::Basic(user, password));
            }
            Some(AuthEntry::Helper(name)) => match run_credential_helper(&name, registry) {
                Ok(Some((user, password))) => return Ok(RegistryAuth::Basic(user, password)),
                // The helper has nothing for this registry: the next file may.
                Ok(None) => continue,
                Err(e) => return Err(invalid(e)),
            },
        }
    }
    Ok(RegistryAuth::Anonymous)
}

/// Runs `docker-credential-<name> get` with `registry` on standard input, as docker and podman
/// do. `None` when the helper has no credentials for it (its "credentials not found" answer).
fn run_credential_helper(name: &str, registry: &str) -> Result<Option<(String, String)>, String> {
    let program = format!("docker-credential-{name}");
    let mut child = std::process::Command::new(&program)
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run the credential helper {program} (is it on PATH?): {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A helper that exits without reading is judged by its answer below.
        let _ = stdin.write_all(registry.as_bytes());
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("credential helper {program}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        if stdout.contains("credentials not found") {
            return Ok(None);
        }
        return Err(format!(
            "credential helper {program} failed for {registry} ({}): {}",
            output.status,
            format!("{stdout}{}", String::from_utf8_lossy(&output.stderr)).trim()
        ));
    }
    helper_credentials(&stdout)
        .map(Some)
        .map_err(|e| format!("credential helper {program} for {registry}: {e}"))
}

fn net_err(
    reference: &Reference,
    what: &str,
    auth: &RegistryAuth,
    settings: &RegistrySettings,
) -> impl Fn(oci_client::errors::OciDistributionError) -> OciError {
    let registry = reference.registry().to_string();
    let what = format!("{what} {reference}");
    let anonymous = matches!(auth, RegistryAuth::Anonymous);
    let pull_secret_hint = (settings.pull_secret.as_ref()).map(|s| s.hint(&registry));
    move |e| {
        let text = crate::causes::with_causes(&e);
        let refused =
            text.contains("authorized") || text.contains("401") || text.contains("denied");
        let hint = if anonymous
            && refused
            && let Some(hint) = &pull_secret_hint
        {
            format!(" ({hint})")
        } else if anonymous && refused {
            format!(
                " (no credentials for {registry}: pass --registry-username with \
                 --registry-password-stdin, or log in with podman or docker, which write \
                 $REGISTRY_AUTH_FILE, ${{XDG_RUNTIME_DIR}}/containers/auth.json or \
                 ~/.docker/config.json)"
            )
        } else if text.contains("HTTP request to an HTTPS server") {
            format!(
                " ({registry} speaks TLS: put its CA certificate in <certs.d>/{registry}/ca.crt and \
                 pass --cert-dir <certs.d>, or install it in /etc/containers/certs.d/{registry}/)"
            )
        } else {
            String::new()
        };
        OciError::Invalid(format!("{what}: {text}{hint}"))
    }
}

/// Runs a future on a fresh runtime on its own thread (callers may already be inside one).
fn block_on<T: Send>(future: impl std::future::Future<Output = T> + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime")
                .block_on(future)
        })
        .join()
        .expect("registry thread")
    })
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OciError> {
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    fs::write(&temp, bytes).map_err(OciError::io(format!("write {}", temp.display())))?;
    fs::rename(&temp, path).map_err(OciError::io(format!("write {}", path.display())))
}

fn check(desc: &Descriptor, bytes: &[u8]) -> Result<(), OciError> {
    let blob_err = |reason: String| OciError::Blob {
        digest: desc.digest.clone(),
        reason,
    };
    if bytes.len() as u64 != desc.size {
        return Err(blob_err(format!(
            "size mismatch: the descriptor says {} bytes, the registry sent {}",
            desc.size,
            bytes.len()
        )));
    }
    let actual = Digest::of(bytes);
    if actual != Digest::parse(&desc.digest)? {
        return Err(blob_err(format!(
            "digest mismatch: the content hashes to {actual}"
        )));
    }
    Ok(())
}

/// Compares a finished hash with the descriptor's digest.
fn check_hash(desc: &Descriptor, hasher: sha2::Sha256) -> Result<(), OciError> {
    let actual = Digest::from_hasher(hasher);
    if actual != Digest::parse(&desc.digest)? {
        return Err(OciError::Blob {
            digest: desc.digest.clone(),
            reason: format!("digest mismatch: the content hashes to {actual}"),
        });
    }
    Ok(())
}

/// A unique temp name beside `path` (same directory: the rename stays on one file system).
fn temp_path(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    path.with_extension(format!(
        "tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ))
}

struct Puller<'a> {
    client: Client,
    auth: RegistryAuth,
    reference: Reference,
    layout: PathBuf,
    options: &'a Options,
    /// Whether to draw a progress bar for the layers.
    progress: bool,
}

impl Puller<'_> {
    fn blob_path(&self, digest: &str) -> Result<PathBuf, OciError> {
        Ok(self
            .layout
            .join("blobs/sha256")
            .join(Digest::parse(digest)?.hex()))
    }

    async fn manifest(&self, desc: &Descriptor) -> Result<Vec<u8>, OciError> {
        let path = self.blob_path(&desc.digest)?;
        if let Ok(bytes) = fs::read(&path)
            && check(desc, &bytes).is_ok()
        {
            return Ok(bytes);
        }
        let by_digest = self.reference.clone_with_digest(desc.digest.clone());
        let (bytes, _) = self
            .client
            .pull_manifest_raw(&by_digest, &self.auth, MANIFEST_TYPES)
            .await
            .map_err(net_err(
                &by_digest,
                "pull manifest",
                &self.auth,
                &self.options.registry,
            ))?;
        check(desc, &bytes)?;
        write_atomic(&path, &bytes)?;
        Ok(bytes.to_vec())
    }

    /// Fetches a blob unless the layout already holds it. The bytes go to a temp file beside
    /// the blob's path as they arrive, hashed on the way, and are renamed into place only when
    /// size and sha256 match `desc`: memory stays flat whatever the layer size, and a failed
    /// or interrupted download leaves nothing a later load could mistake for the blob.
    async fn blob(&self, desc: &Descriptor, progress: &Download) -> Result<(), OciError> {
        let path = self.blob_path(&desc.digest)?;
        if fs::metadata(&path).is_ok_and(|m| m.len() == desc.size) {
            return Ok(());
        }
        if desc.size > self.options.limits.max_bytes.max(MAX_JSON as u64) {
            return Err(OciError::Blob {
                digest: desc.digest.clone(),
                reason: format!(
                    "larger than the {} byte limit",
                    self.options.limits.max_bytes
                ),
            });
        }
        let temp = temp_path(&path);
        let result = self.download(desc, &temp, progress).await;
        let result = result.and_then(|()| {
            fs::rename(&temp, &path).map_err(OciError::io(format!("write {}", path.display())))
        });
        if result.is_err() {
            let _ = fs::remove_file(&temp);
        }
        result
    }

    async fn download(
        &self,
        desc: &Descriptor,
        temp: &Path,
        progress: &Download,
    ) -> Result<(), OciError> {
        use sha2::Digest as _;
        let blob_err = |reason: String| OciError::Blob {
            digest: desc.digest.clone(),
            reason,
        };
        let mut stream = self
            .client
            .pull_blob_stream(&self.reference, desc.digest.as_str())
            .await
            .map_err(net_err(
                &self.reference,
                "pull blob",
                &self.auth,
                &self.options.registry,
            ))?;
        // A registry announcing another length is refused before anything is written.
        if let Some(length) = stream.content_length
            && length != desc.size
        {
            return Err(blob_err(format!(
                "size mismatch: the descriptor says {} bytes, the registry announces {length}",
                desc.size
            )));
        }
        let file =
            fs::File::create(temp).map_err(OciError::io(format!("create {}", temp.display())))?;
        let mut out = std::io::BufWriter::with_capacity(256 << 10, file);
        let mut hasher = sha2::Sha256::new();
        let mut received: u64 = 0;
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                // oci-client checks the digest itself at the end of the stream; when every
                // byte arrived, our own hash names what the content hashes to instead.
                Err(e) => {
                    if received == desc.size {
                        check_hash(desc, hasher.clone())?;
                    }
                    return Err(OciError::Invalid(format!(
                        "pull blob {}: {e} (after {received} of {} bytes)",
                        desc.digest, desc.size
                    )));
                }
            };
            received += chunk.len() as u64;
            if received > desc.size {
                return Err(blob_err(format!(
                    "size mismatch: the descriptor says {} bytes, the registry sent more",
                    desc.size
                )));
            }
            hasher.update(&chunk);
            out.write_all(&chunk)
                .map_err(OciError::io(format!("write {}", temp.display())))?;
            progress.advance(chunk.len() as u64);
        }
        if received != desc.size {
            return Err(blob_err(format!(
                "size mismatch: the descriptor says {} bytes, the registry sent {received}",
                desc.size
            )));
        }
        check_hash(desc, hasher)?;
        let file = out.into_inner().map_err(|e| OciError::Io {
            context: format!("write {}", temp.display()),
            source: e.into_error(),
        })?;
        // Durable before the rename makes it the blob.
        file.sync_all()
            .map_err(OciError::io(format!("write {}", temp.display())))
    }

    /// Fetches everything `desc` refers to: an index's every manifest, a manifest's config
    /// and layers.
    async fn fetch_all(&self, desc: &Descriptor, depth: usize) -> Result<(), OciError> {
        if depth > 4 {
            return Err(OciError::Invalid("image indexes nested too deep".into()));
        }
        let bytes = self.manifest(desc).await?;
        if desc.is_index() {
            let index: Index = serde_json::from_slice(&bytes)
                .map_err(|e| OciError::Invalid(format!("image index {}: {e}", desc.digest)))?;
            for child in &index.manifests {
                Box::pin(self.fetch_all(child, depth + 1)).await?;
            }
            return Ok(());
        }
        let manifest: ImageManifest = serde_json::from_slice(&bytes)
            .map_err(|e| OciError::Invalid(format!("manifest {}: {e}", desc.digest)))?;
        self.blob(&manifest.config, &Download::none()).await?;
        let total = manifest.layers.iter().map(|l| l.size).sum();
        let progress = Download::new(self.progress, total, manifest.layers.len());
        for layer in &manifest.layers {
            self.blob(layer, &progress).await?;
        }
        Ok(())
    }

    /// Fetches what loading the chosen image needs (index, manifest, config; layers unless
    /// the payload is already extracted).
    async fn fetch(&self, top: &Descriptor) -> Result<(), OciError> {
        let mut desc = top.clone();
        let mut depth = 0;
        loop {
            let bytes = self.manifest(&desc).await?;
            if !desc.is_index() {
                let manifest: ImageManifest = serde_json::from_slice(&bytes)
                    .map_err(|e| OciError::Invalid(format!("manifest {}: {e}", desc.digest)))?;
                self.blob(&manifest.config, &Download::none()).await?;
                let extracted = self
                    .options
                    .cache_dir
                    .join(Digest::parse(&desc.digest)?.dir_name())
                    .is_dir();
                if !extracted {
                    // One bar over the bytes still to fetch (layers already in the layout,
                    // from an interrupted pull, are not fetched again).
                    let mut missing = Vec::new();
                    for layer in &manifest.layers {
                        let path = self.blob_path(&layer.digest)?;
                        if !fs::metadata(&path).is_ok_and(|m| m.len() == layer.size) {
                            missing.push(layer);
                        }
                    }
                    let total = missing.iter().map(|l| l.size).sum();
                    let progress = Download::new(self.progress, total, missing.len());
                    for layer in missing {
                        self.blob(layer, &progress).await?;
                    }
                }
                return Ok(());
            }
            depth += 1;
            if depth > 4 {
                return Err(OciError::Invalid("image indexes nested too deep".into()));
            }
            let index: Index = serde_json::from_slice(&bytes)
                .map_err(|e| OciError::Invalid(format!("image index {}: {e}", desc.digest)))?;
            desc = super::layout::select_platform(index.manifests.iter(), &self.options.platform)
                .map_err(|e| OciError::Invalid(format!("image index {}: {e}", desc.digest)))?
                .clone();
        }
    }
}

fn layout_dir(options: &Options, top: &Digest) -> PathBuf {
    options.cache_dir.join("registry").join(top.dir_name())
}

fn write_layout(dir: &Path, top: &Descriptor) -> Result<(), OciError> {
    fs::create_dir_all(dir.join("blobs/sha256"))
        .map_err(OciError::io(format!("create {}", dir.display())))?;
    write_atomic(
        &dir.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    let index = Index {
        schema_version: 2,
        media_type: Some(MEDIA_OCI_INDEX.to_string()),
        manifests: vec![top.clone()],
        annotations: Default::default(),
    };
    let json = serde_json::to_vec(&index).map_err(|e| OciError::Invalid(e.to_string()))?;
    write_atomic(&dir.join("index.json"), &json)
}

/// Drops the layer blobs of a loaded image: the extracted payload is what is kept.
fn drop_layers(dir: &Path, loaded: &super::Loaded) {
    for layer in &loaded.image.manifest.layers {
        if let Ok(digest) = Digest::parse(&layer.digest) {
            let _ = fs::remove_file(dir.join("blobs/sha256").join(digest.hex()));
        }
    }
}

/// Pulls a release image from a registry into the payload cache (or finds it there), on a
/// runtime of its own: for callers that are not async.
pub fn load(reference_text: &str, options: &Options) -> Result<super::Loaded, OciError> {
    block_on(pull(reference_text, options))
}

/// The image `reference_text` names by digest, when a pull already put it in the cache (its
/// layer blobs, extracted, are dropped).
fn cached_by_digest(reference_text: &str, options: &Options) -> Option<super::Loaded> {
    let (_, digest) = reference_text.rsplit_once('@')?;
    let dir = layout_dir(options, &Digest::parse(digest).ok()?);
    if !dir.join("index.json").is_file() {
        return None;
    }
    let loaded = super::load(&dir, None, options).ok()?;
    tracing::debug!(
        reference = reference_text,
        "registry image served from the cache"
    );
    drop_layers(&dir, &loaded);
    Some(loaded)
}

/// Pulls a release image from a registry into the payload cache (or finds it there). The
/// requests run on the caller's runtime; reading the cache and extracting the layers run on its
/// blocking pool (blobs are still streamed to disk from the async task).
pub async fn pull(reference_text: &str, options: &Options) -> Result<super::Loaded, OciError> {
    // By digest and already pulled: no network at all, and no full parse of the reference
    // either (oci-spec compiles its reference regex on first use: ~20 ms of CPU, which would
    // make a cached load measurably slower than loading the same directory). The digest alone
    // names the content; a malformed reference text still fails below when not cached.
    let (text, cache) = (reference_text.to_string(), options.clone());
    let cached = tokio::task::spawn_blocking(move || cached_by_digest(&text, &cache)).await;
    if let Ok(Some(loaded)) = cached {
        return Ok(loaded);
    }
    let sources = (options.mirrors.pull_sources(reference_text))
        .map_err(|e| OciError::Invalid(e.to_string()))?;
    if let [only] = sources.as_slice()
        && only == reference_text
    {
        return pull_from(reference_text, options).await;
    }
    // The mirror sets' order, as a node's container runtime tries it: the first
    // that serves the digest wins (the digest is checked, so a mirror cannot change content).
    let mut failures = Vec::new();
    for source in &sources {
        match pull_from(source, options).await {
            Ok(loaded) => {
                if source != reference_text {
                    tracing::info!(image = reference_text, mirror = %source, "pulled through a mirror (ImageDigestMirrorSet or ImageContentSourcePolicy)");
                }
                return Ok(loaded);
            }
            Err(error) => {
                tracing::warn!(image = reference_text, from = %source, %error, "cannot pull; trying the next source");
                failures.push(format!("{source}: {error}"));
            }
        }
    }
    Err(OciError::Invalid(format!(
        "{reference_text}: no source the ImageDigestMirrorSets and ImageContentSourcePolicies give serves it: {}",
        failures.join("; ")
    )))
}

/// [`pull`] from `reference_text` itself.
async fn pull_from(reference_text: &str, options: &Options) -> Result<super::Loaded, OciError> {
    let reference = parse_reference(reference_text)?;
    let settings = &options.registry;
    let client = client_for(reference.registry(), settings)?;
    let auth = auth_for(reference.registry(), settings)?;
    let (bytes, _) = client
        .pull_manifest_raw(&reference, &auth, MANIFEST_TYPES)
        .await
        .map_err(net_err(&reference, "pull", &auth, settings))?;
    let mut top = top_descriptor(&reference, &bytes)?;
    top.annotations
        .insert(REF_NAME.to_string(), "latest".to_string());
    let digest = Digest::parse(&top.digest)?;
    let dir = layout_dir(options, &digest);
    write_layout(&dir, &top)?;
    write_atomic(&dir.join("blobs/sha256").join(digest.hex()), &bytes)?;
    let puller = Puller {
        client,
        auth,
        reference: reference.clone(),
        layout: dir.clone(),
        options,
        progress: settings.progress,
    };
    puller.fetch(&top).await?;
    let options = options.clone();
    tokio::task::spawn_blocking(move || {
        let loaded = super::load(&dir, None, &options)?;
        drop_layers(&dir, &loaded);
        Ok(loaded)
    })
    .await
    .map_err(|e| OciError::Invalid(format!("{reference}: extraction task failed: {e}")))?
}

/// What [`push`] uploaded.
#[derive(Debug, Clone)]
pub struct RegistryPush {
    pub reference: String,
    /// The digest of the pushed manifest or image index.
    pub digest: String,
    pub version: String,
}

/// Packs `payload_dir` like [`super::push`] and uploads it to `reference_text` (its tag, or
/// the payload's version when it names none).
pub fn push(
    payload_dir: &Path,
    reference_text: &str,
    default_tag: &str,
    platforms: &[Platform],
    settings: &RegistrySettings,
) -> Result<RegistryPush, OciError> {
    let bare = reference_text
        .strip_prefix("docker://")
        .unwrap_or(reference_text);
    let last = bare.rsplit('/').next().unwrap_or(bare);
    let with_tag = if last.contains(':') || last.contains('@') {
        bare.to_string()
    } else {
        format!("{bare}:{default_tag}")
    };
    let reference = parse_reference(&with_tag)?;
    let tag = reference
        .tag()
        .ok_or_else(|| OciError::Invalid(format!("{reference_text}: push needs a tag")))?
        .to_string();
    let temp = tempdir()?;
    let result = (|| {
        let layout_path = temp.join("layout");
        let pushed = super::push(payload_dir, &layout_path, &tag, platforms)?;
        let pushed_to = push_image(&layout_path, &pushed.descriptor, &with_tag, settings)?;
        Ok(RegistryPush {
            reference: pushed_to,
            digest: pushed.descriptor.digest.clone(),
            version: pushed.version,
        })
    })();
    let _ = fs::remove_dir_all(&temp);
    result
}

/// Uploads the image `top` of the layout (an image index with every manifest it lists, or one
/// manifest; their configs and layers) to `reference_text`, by its tag or digest. Blobs and
/// manifests keep their bytes, so their digests. Returns the reference pushed to.
pub fn push_image(
    layout_path: &Path,
    top: &Descriptor,
    reference_text: &str,
    settings: &RegistrySettings,
) -> Result<String, OciError> {
    let reference = parse_reference(reference_text)?;
    let layout = super::OciLayout::open(layout_path)?;
    let client = client_for(reference.registry(), settings)?;
    let auth = auth_for(reference.registry(), settings)?;
    block_on(async {
        client
            .auth(&reference, &auth, oci_client::RegistryOperation::Push)
            .await
            .map_err(net_err(&reference, "push to", &auth, settings))?;
        push_tree(&client, &reference, &layout, top, &auth, 0).await?;
        push_manifest(&client, &layout, &reference, top, &auth).await?;
        Ok(reference.to_string())
    })
}

/// Uploads what `desc` refers to (an index's manifests, by digest; a manifest's blobs), not
/// `desc` itself.
async fn push_tree(
    client: &Client,
    reference: &Reference,
    layout: &super::OciLayout,
    desc: &Descriptor,
    auth: &RegistryAuth,
    depth: usize,
) -> Result<(), OciError> {
    if depth > 4 {
        return Err(OciError::Invalid("image indexes nested too deep".into()));
    }
    if desc.is_index() {
        let index: Index = layout.read_json(desc, "image index")?;
        for child in &index.manifests {
            Box::pin(push_tree(client, reference, layout, child, auth, depth + 1)).await?;
            let by_digest = reference.clone_with_digest(child.digest.clone());
            push_manifest(client, layout, &by_digest, child, auth).await?;
        }
        return Ok(());
    }
    let manifest: ImageManifest = layout.read_json(desc, "image manifest")?;
    for blob in manifest.layers.iter().chain([&manifest.config]) {
        push_blob(client, reference, layout, blob, auth).await?;
    }
    Ok(())
}

/// The descriptor (media type, digest, size) of the manifest or index `reference_text` names:
/// a tag's current digest, or a digest checked to exist.
pub fn resolve(reference_text: &str, settings: &RegistrySettings) -> Result<Descriptor, OciError> {
    let reference = parse_reference(reference_text)?;
    let client = client_for(reference.registry(), settings)?;
    let auth = auth_for(reference.registry(), settings)?;
    block_on(async {
        let (bytes, _) = client
            .pull_manifest_raw(&reference, &auth, MANIFEST_TYPES)
            .await
            .map_err(net_err(&reference, "look up", &auth, settings))?;
        top_descriptor(&reference, &bytes)
    })
}

/// The descriptor of the manifest bytes a registry sent for `reference`, checked against the
/// reference's digest when it has one.
fn top_descriptor(reference: &Reference, bytes: &[u8]) -> Result<Descriptor, OciError> {
    if bytes.len() > MAX_JSON {
        return Err(OciError::Invalid(format!(
            "{reference}: manifest larger than {MAX_JSON} bytes"
        )));
    }
    let digest = Digest::of(bytes);
    if let Some(expected) = reference.digest()
        && Digest::parse(expected)? != digest
    {
        return Err(OciError::Blob {
            digest: expected.to_string(),
            reason: format!("digest mismatch: the registry sent content hashing to {digest}"),
        });
    }
    Ok(Descriptor {
        media_type: super::media_type_of(bytes)?,
        digest: digest.to_string(),
        size: bytes.len() as u64,
        platform: None,
        annotations: Default::default(),
    })
}

/// The layers of the image `reference_text` names (for an index, of its `options.platform`
/// manifest) and its config's `created`: what `cvo payload info --size` shows.
pub fn image_layers(
    reference_text: &str,
    options: &Options,
) -> Result<(Vec<Descriptor>, Option<String>), OciError> {
    let reference = parse_reference(reference_text)?;
    let settings = &options.registry;
    let client = client_for(reference.registry(), settings)?;
    let auth = auth_for(reference.registry(), settings)?;
    block_on(async {
        let mut target = reference.clone();
        let mut bytes = Vec::new();
        for depth in 0..=4 {
            let (raw, _) = client
                .pull_manifest_raw(&target, &auth, MANIFEST_TYPES)
                .await
                .map_err(net_err(&target, "pull", &auth, settings))?;
            let desc = top_descriptor(&target, &raw)?;
            if !desc.is_index() {
                bytes = raw.to_vec();
                break;
            }
            if depth == 4 {
                return Err(OciError::Invalid("image indexes nested too deep".into()));
            }
            let index: Index = serde_json::from_slice(&raw)
                .map_err(|e| OciError::Invalid(format!("image index {}: {e}", desc.digest)))?;
            let chosen = super::layout::select_platform(index.manifests.iter(), &options.platform)
                .map_err(|e| OciError::Invalid(format!("image index {}: {e}", desc.digest)))?;
            target = reference.clone_with_digest(chosen.digest.clone());
        }
        let manifest: ImageManifest = serde_json::from_slice(&bytes)
            .map_err(|e| OciError::Invalid(format!("manifest of {target}: {e}")))?;
        if manifest.config.size > MAX_JSON as u64 {
            return Err(OciError::Invalid(format!(
                "{target}: config larger than {MAX_JSON} bytes"
            )));
        }
        let mut config = Vec::new();
        client
            .pull_blob(&target, manifest.config.digest.as_str(), &mut config)
            .await
            .map_err(net_err(&target, "pull config of", &auth, settings))?;
        check(&manifest.config, &config)?;
        let created = serde_json::from_slice::<serde_json::Value>(&config)
            .ok()
            .and_then(|c| c.get("created")?.as_str().map(str::to_string));
        Ok((manifest.layers, created))
    })
}

/// Copies the whole image `reference_text` names (an index with every platform's manifest,
/// or one manifest; configs and layers, each checked against its digest) into the blobs of the
/// layout at `into`; returns its top descriptor.
pub fn fetch_image(
    reference_text: &str,
    into: &Path,
    options: &Options,
) -> Result<Descriptor, OciError> {
    let reference = parse_reference(reference_text)?;
    let settings = &options.registry;
    let client = client_for(reference.registry(), settings)?;
    let auth = auth_for(reference.registry(), settings)?;
    fs::create_dir_all(into.join("blobs/sha256"))
        .map_err(OciError::io(format!("create {}", into.display())))?;
    block_on(async {
        let (bytes, _) = client
            .pull_manifest_raw(&reference, &auth, MANIFEST_TYPES)
            .await
            .map_err(net_err(&reference, "pull", &auth, settings))?;
        let top = top_descriptor(&reference, &bytes)?;
        write_atomic(
            &into
                .join("blobs/sha256")
                .join(Digest::parse(&top.digest)?.hex()),
            &bytes,
        )?;
        let puller = Puller {
            client,
            auth,
            reference: reference.clone(),
            layout: into.to_path_buf(),
            options,
            progress: settings.progress,
        };
        puller.fetch_all(&top, 0).await?;
        Ok(top)
    })
}

/// Uploads one blob of the layout unless the registry already has it, streamed from disk in
/// chunks so memory does not grow with the layer.
async fn push_blob(
    client: &Client,
    reference: &Reference,
    layout: &super::OciLayout,
    blob: &Descriptor,
    auth: &RegistryAuth,
) -> Result<(), OciError> {
    let exists = client
        .blob_exists(reference, &blob.digest)
        .await
        .map_err(net_err(
            reference,
            "check blob in",
            auth,
            &RegistrySettings::default(),
        ))?;
    if exists {
        tracing::debug!(digest = %blob.digest, "the registry has the blob already");
        return Ok(());
    }
    let path = layout.verify_blob(blob)?;
    let file = tokio::fs::File::open(&path)
        .await
        .map_err(OciError::io(format!("read {}", path.display())))?;
    let chunks = futures_util::stream::try_unfold(file, |mut file| async move {
        use tokio::io::AsyncReadExt as _;
        let mut chunk = vec![0u8; PUSH_CHUNK];
        let n = file.read(&mut chunk).await.map_err(|e| {
            oci_client::errors::OciDistributionError::GenericError(Some(format!("read blob: {e}")))
        })?;
        if n == 0 {
            return Ok(None);
        }
        chunk.truncate(n);
        Ok(Some((bytes::Bytes::from(chunk), file)))
    });
    client
        .push_blob_stream(reference, chunks, &blob.digest, Some(blob.size))
        .await
        .map_err(net_err(
            reference,
            "push blob to",
            auth,
            &RegistrySettings::default(),
        ))?;
    Ok(())
}

/// The size of each upload request of a blob.
const PUSH_CHUNK: usize = 4 << 20;

async fn push_manifest(
    client: &Client,
    layout: &super::OciLayout,
    target: &Reference,
    desc: &Descriptor,
    auth: &RegistryAuth,
) -> Result<(), OciError> {
    let bytes = fs::read(layout.verify_blob(desc)?).map_err(OciError::io("read manifest"))?;
    let content_type = desc
        .media_type
        .parse()
        .map_err(|_| OciError::Invalid(format!("bad media type {:?}", desc.media_type)))?;
    client
        .push_manifest_raw(target, bytes, content_type)
        .await
        .map_err(net_err(
            target,
            "push manifest to",
            auth,
            &RegistrySettings::default(),
        ))?;
    Ok(())
}

fn tempdir() -> Result<PathBuf, OciError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "cvo-push-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    fs::create_dir_all(&dir).map_err(OciError::io(format!("create {}", dir.display())))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_loopback() {
        assert!(is_reference("docker://quay.io/a/b:1"));
        assert!(is_reference("127.0.0.1:5000/openshift/release:4.18.0"));
        assert!(is_reference("quay.io/a/b@sha256:abc"));
        assert!(!is_reference("payloads/4.18.0"));
        assert!(!is_reference("./x.y/z"));
        assert!(!is_reference("file:///x"));
        let r = parse_reference("docker://127.0.0.1:5000/o/r:t").unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "o/r");
        assert_eq!(r.tag(), Some("t"));
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(is_loopback("localhost"));
        assert!(is_loopback("[::1]:5000"));
        assert!(!is_loopback("quay.io"));
    }

    /// Whether the regex-free parser takes `text`; when it does, its result is oci-spec's.
    fn agrees(text: &str) -> bool {
        match parse_canonical(text) {
            None => false,
            Some(fast) => {
                assert_eq!(Ok(&fast), text.parse::<Reference>().as_ref(), "{text}");
                true
            }
        }
    }

    #[test]
    fn canonical_references_parse_like_oci_spec() {
        let hex = "a".repeat(64);
        for text in [
            "127.0.0.1:5000/openshift/release:4.18.0".to_string(),
            "quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64".into(),
            format!("quay.io/openshift-release-dev/ocp-release@sha256:{hex}"),
            format!("quay.io/a/b:tag@sha256:{hex}"),
            "localhost/repo".into(),
            "localhost:5000/a__b/c.d/e---f/g_h".into(),
            "registry.example.com/x:_tag.with-dots".into(),
            "my-host.example.com:443/a/b/c/d".into(),
            "Reg.Example.COM/lower:UPPER".into(),
        ] {
            assert!(agrees(&text), "{text} should take the fast path");
        }
        // Left to oci-spec: Docker Hub names, uppercase or odd paths, other digests, bad tags.
        for text in [
            "ubuntu",
            "library/ubuntu:22.04",
            "myhost/repo",
            "quay.io/Upper/case",
            "quay.io/a..b",
            "quay.io/a___b",
            "quay.io/-a",
            "quay.io/a:",
            "quay.io/a:-tag",
            "quay.io/a@sha512:abc",
            "quay.io/a@sha256:ABC",
            "quay.io:/a",
            "quay.io:50x0/a",
            "-quay.io/a",
            "quay..io/a",
            "quay.io/",
            "quay.io//a",
            "quay.io/a:t\u{e9}g",
        ] {
            assert!(parse_canonical(text).is_none(), "{text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn the_fast_parser_never_disagrees(text in "[a-zA-Z0-9._:/@-]{1,40}") {
            agrees(&text);
        }

        #[test]
        fn the_fast_parser_never_disagrees_on_hosts(
            host in "(localhost|[a-z0-9-]{1,6}(\\.[a-zA-Z0-9-]{1,4}){0,2})(:[0-9]{1,5})?",
            path in "[a-z0-9._-]{1,12}(/[a-z0-9._-]{1,8}){0,2}",
            tag in "(:[a-zA-Z0-9._-]{0,10})?",
        ) {
            agrees(&format!("{host}/{path}{tag}"));
        }
    }
}
