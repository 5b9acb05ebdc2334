//! `cvo payload new`: a release image from a payload directory or an existing release, as
//! `oc adm release new` assembles one: the operator image (this `cvo`, a given binary per
//! architecture, or an existing image) under a layer with the payload, its image references
//! rewritten to digests, and the release's own Deployments pointing at its operator image.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use serde::Serialize;
use serde_json::Value;

use super::payload_image::{image_source, load_image, options};
use super::{CliResult, ImageArgs, Settings};
use crate::oci::build::{self, BuiltImage, PlatformImage};
use crate::oci::copy::{self, ImageSource};
use crate::oci::{OciLayout, Platform};
use crate::payload::PayloadSource;
use crate::release::pullspec::Pullspec;
use crate::release::references::{
    ANNOTATION_FROM_RELEASE, ImageStream, ImageSubstitution, VersionSubstitution,
    parse_mapping_file, parse_mappings, requested_targets, rewrite, unresolved,
};
use crate::release::{OPERATOR_TAG, elf};

#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// A payload root to build from (manifests/, release-manifests/ with image-references and
    /// release-metadata).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "from_release",
        required_unless_present = "from_release"
    )]
    pub from_dir: Option<PathBuf>,
    /// A release image to build from (oci-layout:PATH[:TAG] or a registry reference): its
    /// payload, image references and metadata.
    #[arg(long, value_name = "IMAGE")]
    pub from_release: Option<String>,
    /// Where to write: oci-layout:PATH[:TAG] or registry/repo[:TAG] (tag default: the name).
    #[arg(long, value_name = "DEST")]
    pub to: String,
    /// The release's name, a semantic version [default: the input's version].
    #[arg(long, value_name = "VERSION")]
    pub name: Option<String>,
    /// The versions this release updates from (release-metadata `previous`), comma-separated.
    #[arg(long, value_name = "VERSION", value_delimiter = ',')]
    pub previous: Option<Vec<String>>,
    /// The release metadata's `metadata` object (JSON) instead of the input's.
    #[arg(long, value_name = "JSON")]
    pub metadata: Option<String>,
    /// NAME=PULLSPEC: the image of image-references tag NAME (a tag is replaced by its digest,
    /// looked up in its registry); repeatable.
    #[arg(long, value_name = "NAME=PULLSPEC")]
    pub mapping: Vec<String>,
    /// A file of NAME=PULLSPEC mappings (space-separated, `#` comments); repeatable.
    #[arg(long, value_name = "FILE")]
    pub mapping_file: Vec<PathBuf>,
    /// The operator binary the image runs [default: this cvo].
    #[arg(long, value_name = "PATH", conflicts_with = "operator_image")]
    pub operator_binary: Option<PathBuf>,
    /// An existing operator image to build on (its layers; image-references'
    /// cluster-version-operator names it).
    #[arg(long, value_name = "IMAGE")]
    pub operator_image: Option<String>,
    /// An architecture to build, ARCH or ARCH=PATH (the operator binary for it); repeatable:
    /// several make a multi-architecture image index [default: the binary's].
    #[arg(long = "arch", value_name = "ARCH[=PATH]")]
    pub arches: Vec<String>,
    /// The creation time written into the image (RFC 3339) [default: $SOURCE_DATE_EPOCH, else
    /// the input release's, else 1970-01-01T00:00:00Z]: the same inputs give the same digest.
    #[arg(long, value_name = "TIME")]
    pub created: Option<String>,
    #[arg(long, env = "SOURCE_DATE_EPOCH", hide = true)]
    pub source_date_epoch: Option<String>,
    #[command(flatten)]
    pub images: ImageArgs,
}

/// The Go architectures OpenShift builds for.
const ARCHITECTURES: [&str; 4] = ["amd64", "arm64", "ppc64le", "s390x"];

/// Where the release goes.
enum Destination {
    Layout { path: PathBuf, tag: String },
    Registry { repository: Pullspec, tag: String },
}

pub fn new(args: NewArgs, settings: &Settings) -> CliResult {
    run(args, settings)?;
    Ok(ExitCode::SUCCESS)
}

fn run(args: NewArgs, settings: &Settings) -> anyhow::Result<()> {
    let options = options(settings, None)?;
    // The input payload.
    let (input_dir, from_release) = match (&args.from_dir, &args.from_release) {
        (Some(dir), None) => {
            eprintln!("info: Using {} as the input to the release", dir.display());
            (dir.clone(), None)
        }
        (None, Some(image)) => {
            let source = image_source(image)?;
            let loaded = load_image(&source, &options)?;
            (loaded.dir, Some(image.clone()))
        }
        _ => bail!("give one of --from-dir DIR and --from-release IMAGE"),
    };
    let read = |name: &str| -> anyhow::Result<Vec<u8>> {
        let path = input_dir.join("release-manifests").join(name);
        fs::read(&path).map_err(|e| {
            anyhow!(
                "{}: cannot read release-manifests/{name} ({e}): a release is built from a payload root with release-manifests/image-references and release-metadata",
                input_dir.display()
            )
        })
    };
    let references_bytes = read("image-references")?;
    let stream = ImageStream::parse(&references_bytes).map_err(|e| {
        anyhow!(
            "{}: release-manifests/image-references: {e}",
            input_dir.display()
        )
    })?;
    let metadata_bytes = read("release-metadata")?;
    let (release, _) = crate::payload::parse_release_metadata(&metadata_bytes).map_err(|e| {
        anyhow!(
            "{}: release-manifests/release-metadata: {e}",
            input_dir.display()
        )
    })?;
    if let Some(image) = &from_release {
        eprintln!(
            "info: Found {} images in release {image}",
            stream.images().count()
        );
    }
    let name = match &args.name {
        Some(name) => {
            semver::Version::parse(name)
                .map_err(|e| anyhow!("--name must be a semantic version: {e}"))?;
            name.clone()
        }
        None => release.version.clone(),
    };
    let created = created(&args, &stream)?;

    // The image mappings.
    let mut seen = BTreeSet::new();
    let mut mappings = Vec::new();
    for file in &args.mapping_file {
        let text = fs::read_to_string(file)
            .with_context(|| format!("--mapping-file {}: cannot read", file.display()))?;
        mappings.extend(
            parse_mapping_file(&file.display().to_string(), &text, &mut seen)
                .map_err(|e| anyhow!(e))?,
        );
    }
    mappings.extend(parse_mappings(&args.mapping, &mut seen).map_err(|e| anyhow!(e))?);
    let mut targets = requested_targets(&stream, &mappings).map_err(|e| anyhow!(e))?;
    let overridden: BTreeSet<String> = targets.keys().cloned().collect();

    let destination = destination(&args.to, &name)?;

    // Tags become digests (the operator image's is known once it is built).
    for (tag, pullspec) in unresolved(&stream, &targets).map_err(|e| anyhow!(e))? {
        if tag == OPERATOR_TAG {
            continue;
        }
        let found = crate::oci::registry::resolve(&pullspec.to_string(), &options.registry)
            .with_context(|| {
                format!("image-references tag {tag:?}: cannot find the digest of {pullspec}")
            })?;
        let resolved = pullspec.with_digest(&found.digest);
        eprintln!("info: {tag}: {pullspec} is {resolved}");
        targets.insert(tag, resolved);
    }
    let binaries = match &args.operator_image {
        Some(_) => Vec::new(),
        None => binaries(&args)?,
    };

    let staging = TempDir::new("cvo-payload-new")?;
    let (work, mut created_layout) = match &destination {
        Destination::Layout { path, .. } => (path.clone(), CreatedDir::new(path)),
        Destination::Registry { .. } => (staging.path().join("layout"), CreatedDir::none()),
    };
    build::create_layout(&work)
        .with_context(|| format!("cannot create the image layout {}", work.display()))?;

    // The operator image, and the pull spec the release names it by.
    let (operator, operator_ref) = match &args.operator_image {
        Some(image) => {
            let operator = fetch_operator(image, &args.arches, &work, &options)?;
            let repository = match image_source(image)? {
                PayloadSource::Registry(reference) => {
                    Pullspec::parse(&reference).map_err(|e| anyhow!("--operator-image: {e}"))?
                }
                _ => operator_repository(&stream, &destination)?,
            };
            let reference = repository.with_digest(operator.digest());
            (operator, reference)
        }
        None => {
            let comment = format!("cvo {}", env!("CARGO_PKG_VERSION"));
            let mut platforms = Vec::new();
            for (platform, binary) in &binaries {
                platforms.push(
                    build::operator_image(&work, binary, platform, &created, &comment)
                        .with_context(|| format!("build the operator image for {platform}"))?,
                );
            }
            let operator = build::gather(&work, platforms, BTreeMap::new())?;
            let reference =
                operator_repository(&stream, &destination)?.with_digest(operator.digest());
            (operator, reference)
        }
    };
    targets.insert(OPERATOR_TAG.to_string(), operator_ref.clone());
    let mut rewritten =
        rewrite(&stream, &name, &created, &targets, &overridden).map_err(|e| anyhow!(e))?;
    let overrides = args.name.is_some()
        || args.previous.is_some()
        || args.metadata.is_some()
        || !mappings.is_empty();
    if let Some(image) = &from_release
        && overrides
    {
        rewritten
            .stream
            .metadata
            .annotations
            .insert(ANNOTATION_FROM_RELEASE.to_string(), image.clone());
    }
    for r in &rewritten.replacements {
        eprintln!("info: {}: {} -> {}", r.tag, r.from, r.to);
    }

    // The payload, rewritten.
    let architectures: Vec<String> = operator.architectures();
    let metadata = release_metadata(
        &args,
        &metadata_bytes,
        &release,
        &name,
        architectures.len() > 1,
    )?;
    let payload_dir = staging.path().join("payload");
    stage_payload(
        &input_dir,
        &payload_dir,
        &rewritten.stream,
        &rewritten.replacements,
        metadata.as_deref(),
        &name,
    )?;
    let payload = build::payload_layer(&payload_dir, &work)?;

    // One release image per platform of the operator image.
    let mut platforms = Vec::new();
    for base in &operator.platforms {
        platforms.push(build::release_image(
            &work, base, &payload, &name, &created,
        )?);
    }
    let release_image = build::gather(&work, platforms, build::release_annotations(&name))?;

    let pushed = match &destination {
        Destination::Layout { path, tag } => {
            build::tag(path, &release_image.top, tag)?;
            format!("oci-layout:{}:{tag}", path.display())
        }
        Destination::Registry { repository, tag } => {
            if operator_ref.repository == repository.repository {
                crate::oci::registry::push_image(
                    &work,
                    &operator.top,
                    &operator_ref.to_string(),
                    &options.registry,
                )
                .with_context(|| format!("push the operator image to {operator_ref}"))?;
            }
            let target = repository.with_tag(tag).to_string();
            crate::oci::registry::push_image(&work, &release_image.top, &target, &options.registry)
                .with_context(|| format!("push the release image to {target}"))?;
            target
        }
    };
    created_layout.keep();
    eprintln!("info: Pushed to {pushed}");
    outln!("{} {} {}", release_image.digest(), name, created);
    Ok(())
}

fn destination(to: &str, name: &str) -> anyhow::Result<Destination> {
    match PayloadSource::from_arg(Some(to)) {
        PayloadSource::OciLayout { path, tag } => Ok(Destination::Layout {
            path,
            tag: tag.unwrap_or_else(|| name.to_string()),
        }),
        PayloadSource::Registry(reference) => {
            let parsed = Pullspec::parse(&reference).map_err(|e| anyhow!("--to: {e}"))?;
            if parsed.digest.is_some() {
                bail!("--to may only point to a repository or tag, not a digest");
            }
            Ok(Destination::Registry {
                tag: parsed.tag.clone().unwrap_or_else(|| name.to_string()),
                repository: Pullspec {
                    tag: None,
                    ..parsed
                },
            })
        }
        _ => bail!(
            "--to {to}: expected oci-layout:PATH[:TAG] or a registry repository (registry/repo[:tag])"
        ),
    }
}

/// The repository the release names its operator image by: the destination's, or for an image
/// layout (which has none) the repository the input's cluster-version-operator image is in,
/// where `cvo payload mirror` or a push will put it.
fn operator_repository(
    stream: &ImageStream,
    destination: &Destination,
) -> anyhow::Result<Pullspec> {
    match destination {
        Destination::Registry { repository, .. } => Ok(repository.clone()),
        Destination::Layout { .. } => {
            let image = stream.tag(OPERATOR_TAG).and_then(|t| t.image()).ok_or_else(|| {
                anyhow!(
                    "the input's image-references has no {OPERATOR_TAG} image whose repository the operator image could be named after; push to a registry (--to registry/repo) instead"
                )
            })?;
            let parsed = Pullspec::parse(image).map_err(|e| anyhow!("image-references: {e}"))?;
            Ok(Pullspec {
                tag: None,
                digest: None,
                ..parsed
            })
        }
    }
}

/// `--created`, else `$SOURCE_DATE_EPOCH`, else the input release's creation time, else the
/// epoch.
fn created(args: &NewArgs, stream: &ImageStream) -> anyhow::Result<String> {
    if let Some(text) = &args.created {
        let time: jiff::Timestamp = text
            .parse()
            .map_err(|e| anyhow!("--created {text:?}: not an RFC 3339 time: {e}"))?;
        return Ok(format_time(time));
    }
    if let Some(epoch) = args.source_date_epoch.as_deref().filter(|e| !e.is_empty()) {
        let seconds: i64 = epoch
            .parse()
            .map_err(|_| anyhow!("SOURCE_DATE_EPOCH={epoch:?}: not a number of seconds"))?;
        let time = jiff::Timestamp::from_second(seconds)
            .map_err(|e| anyhow!("SOURCE_DATE_EPOCH={epoch:?}: {e}"))?;
        return Ok(format_time(time));
    }
    if args.from_release.is_some()
        && let Some(time) = stream
            .metadata
            .creation_timestamp
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    {
        return Ok(format_time(time));
    }
    Ok("1970-01-01T00:00:00Z".to_string())
}

fn format_time(time: jiff::Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The operator binary of each platform to build.
fn binaries(args: &NewArgs) -> anyhow::Result<Vec<(Platform, PathBuf)>> {
    let running = std::env::current_exe().context("cannot find the running cvo binary")?;
    let default = args.operator_binary.clone().unwrap_or(running);
    let mut chosen: Vec<(Platform, PathBuf)> = Vec::new();
    if args.arches.is_empty() {
        let arch = binary_architecture(&default)?;
        chosen.push((platform(arch), default));
        return Ok(chosen);
    }
    for value in &args.arches {
        let (arch, path) = match value.split_once('=') {
            Some((arch, path)) => (arch, PathBuf::from(path)),
            None => (value.as_str(), default.clone()),
        };
        if !ARCHITECTURES.contains(&arch) {
            bail!(
                "--arch {value}: {}",
                crate::suggest::unknown_value("architecture", arch, &ARCHITECTURES)
            );
        }
        if chosen.iter().any(|(p, _)| p.architecture == arch) {
            bail!("--arch {arch} is given twice");
        }
        let found = binary_architecture(&path)?;
        if found != arch {
            let hint = if value.contains('=') {
                String::new()
            } else {
                format!(
                    "; build one (cargo build --release --target {}) and pass --arch {arch}=PATH",
                    rust_target(arch)
                )
            };
            bail!(
                "--arch {value}: {} is a binary for {found}, not {arch}{hint}",
                path.display()
            );
        }
        chosen.push((platform(arch), path));
    }
    Ok(chosen)
}

fn rust_target(arch: &str) -> &'static str {
    match arch {
        "arm64" => "aarch64-unknown-linux-gnu",
        "ppc64le" => "powerpc64le-unknown-linux-gnu",
        "s390x" => "s390x-unknown-linux-gnu",
        _ => "x86_64-unknown-linux-gnu",
    }
}

fn platform(arch: &str) -> Platform {
    Platform {
        os: "linux".to_string(),
        architecture: arch.to_string(),
        variant: None,
    }
}

/// The architecture of an executable, checked to be one.
fn binary_architecture(path: &Path) -> anyhow::Result<&'static str> {
    use std::io::Read as _;
    use std::os::unix::fs::PermissionsExt as _;
    let mut file = fs::File::open(path)
        .with_context(|| format!("operator binary {}: cannot open", path.display()))?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        bail!(
            "operator binary {}: not an executable file (chmod +x it, or give the cvo binary cargo built)",
            path.display()
        );
    }
    let mut header = [0u8; 64];
    let n = file.read(&mut header)?;
    elf::architecture(&header[..n]).map_err(|e| anyhow!("operator binary {}: {e}", path.display()))
}

/// Copies `--operator-image` into the work layout; with `--arch`, only those architectures.
fn fetch_operator(
    image: &str,
    arches: &[String],
    work: &Path,
    options: &crate::oci::Options,
) -> anyhow::Result<BuiltImage> {
    let source = match image_source(image)? {
        PayloadSource::Registry(reference) => ImageSource::Registry(reference),
        PayloadSource::OciLayout { path, tag } => ImageSource::Layout { path, tag },
        _ => unreachable!("image_source gives images only"),
    };
    let top =
        copy::fetch(&source, work, options).with_context(|| format!("--operator-image {image}"))?;
    let layout = OciLayout::open(work)?;
    let mut operator = build::read_image(&layout, &top)?;
    if !arches.is_empty() {
        if let Some(bad) = arches.iter().find(|a| a.contains('=')) {
            bail!(
                "--arch {bad}: with --operator-image, --arch chooses among the image's architectures and takes no binary"
            );
        }
        let offered: Vec<String> = operator.architectures();
        for arch in arches {
            if !offered.contains(arch) {
                bail!(
                    "--arch {arch}: the operator image {image} offers {}",
                    offered.join(", ")
                );
            }
        }
        let kept: Vec<PlatformImage> = operator
            .platforms
            .into_iter()
            .filter(|p| {
                p.descriptor
                    .platform
                    .as_ref()
                    .is_some_and(|p| arches.contains(&p.architecture))
            })
            .collect();
        operator = if kept.len() == 1 {
            BuiltImage {
                top: kept[0].descriptor.clone(),
                platforms: kept,
            }
        } else {
            build::gather(work, kept, BTreeMap::new())?
        };
    }
    Ok(operator)
}

/// release-metadata as oc writes it, when anything changes: `None` keeps the input's bytes.
fn release_metadata(
    args: &NewArgs,
    input: &[u8],
    release: &crate::payload::Release,
    name: &str,
    multi: bool,
) -> anyhow::Result<Option<Vec<u8>>> {
    #[derive(Serialize)]
    struct CincinnatiMetadata {
        kind: &'static str,
        version: String,
        previous: Vec<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        next: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    }
    const ARCHITECTURE_KEY: &str = "release.openshift.io/architecture";
    let raw: Value = serde_json::from_slice(input)?;
    let mut metadata = match &args.metadata {
        Some(text) => {
            let value: Value =
                serde_json::from_str(text).map_err(|e| anyhow!("invalid --metadata: {e}"))?;
            if !value.is_object() {
                bail!("invalid --metadata: a JSON object is expected");
            }
            Some(value)
        }
        None => raw.get("metadata").cloned(),
    };
    let marked_multi = metadata
        .as_ref()
        .and_then(|m| m.get(ARCHITECTURE_KEY))
        .and_then(Value::as_str)
        == Some("multi");
    let changed = args.metadata.is_some()
        || args.previous.is_some()
        || name != release.version
        || (multi && !marked_multi);
    if !changed {
        return Ok(None);
    }
    if multi && !marked_multi {
        metadata
            .get_or_insert_with(|| Value::Object(Default::default()))
            .as_object_mut()
            .expect("an object")
            .insert(ARCHITECTURE_KEY.to_string(), "multi".into());
    }
    let mut previous = Vec::new();
    for version in args.previous.as_ref().unwrap_or(&release.previous) {
        if version.is_empty() {
            continue;
        }
        let parsed = semver::Version::parse(version)
            .map_err(|e| anyhow!("{version:?} is not a valid semantic version: {e}"))?;
        previous.push(parsed.to_string());
    }
    previous.sort();
    let next = raw
        .get("next")
        .and_then(Value::as_array)
        .map(|n| {
            n.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let cm = CincinnatiMetadata {
        kind: crate::payload::metadata::METADATA_KIND,
        version: semver::Version::parse(name)?.to_string(),
        previous,
        next,
        metadata,
    };
    Ok(Some(serde_json::to_vec_pretty(&cm)?))
}

/// Copies the input payload to `to` with the new image-references and release-metadata, and
/// the image and version substitutions applied to the other files of release-manifests/.
fn stage_payload(
    input: &Path,
    to: &Path,
    stream: &ImageStream,
    replacements: &[crate::release::references::Replacement],
    metadata: Option<&[u8]>,
    name: &str,
) -> anyhow::Result<()> {
    let images = ImageSubstitution::new(replacements);
    let versions = VersionSubstitution::new(name, stream).map_err(|e| anyhow!(e))?;
    for dir in crate::oci::extract::PAYLOAD_DIRS {
        let from = input.join(dir);
        if !from.is_dir() {
            continue;
        }
        let target = to.join(dir);
        fs::create_dir_all(&target).with_context(|| format!("create {}", target.display()))?;
        let mut entries: Vec<_> = fs::read_dir(&from)
            .with_context(|| format!("list {}", from.display()))?
            .collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if !entry.file_type()?.is_file() {
                bail!(
                    "{}: only files are allowed in a payload directory (a release layer holds {dir}/FILE)",
                    path.display()
                );
            }
            let out = target.join(&file_name);
            let bytes = fs::read(&path).with_context(|| format!("read {}", path.display()))?;
            let written: Vec<u8> = match (dir, file_name.as_str()) {
                ("release-manifests", "image-references") => stream.to_json().into_bytes(),
                ("release-manifests", "release-metadata") => metadata.map_or(bytes, <[u8]>::to_vec),
                ("release-manifests", _) => {
                    let text = String::from_utf8(bytes)
                        .map_err(|_| anyhow!("{}: not UTF-8 text", path.display()))?;
                    versions
                        .apply(&images.apply(&text))
                        .map_err(|e| anyhow!("{}: {e}", path.display()))?
                        .into_bytes()
                }
                _ => bytes,
            };
            fs::write(&out, written).with_context(|| format!("write {}", out.display()))?;
        }
    }
    Ok(())
}

/// A directory under the temp dir, removed on drop.
pub(super) struct TempDir(PathBuf);

impl TempDir {
    pub(super) fn new(prefix: &str) -> anyhow::Result<TempDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "{prefix}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        Ok(TempDir(dir))
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A directory `payload new` creates for an image layout: removed again when the command
/// fails, so a failed build leaves nothing behind.
struct CreatedDir(Option<PathBuf>);

impl CreatedDir {
    fn new(path: &Path) -> CreatedDir {
        CreatedDir((!path.exists()).then(|| path.to_path_buf()))
    }

    fn none() -> CreatedDir {
        CreatedDir(None)
    }

    fn keep(&mut self) {
        self.0 = None;
    }
}

impl Drop for CreatedDir {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = fs::remove_dir_all(path);
        }
    }
}
