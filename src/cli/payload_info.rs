//! `cvo payload info [SRC [SRC2]]`: what a release is (as `oc adm release info`), its images
//! (`--pullspecs`, `--commits`, `--size`, `--image-for NAME`), or what changed between two.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use clap::ValueEnum;
use serde::Serialize;

use super::payload_image::{load_image, options};
use super::{CliResult, ImageArgs, Settings};
use crate::oci::copy::{self, ImageSource};
use crate::payload::{LoadOptions, Payload, PayloadInput, PayloadSource, read_image, read_input};
use crate::release::diff::{self, ReleaseView, columns};
use crate::release::pullspec::Pullspec;
use crate::release::references::{
    ANNOTATION_SOURCE_COMMIT, ANNOTATION_SOURCE_LOCATION, ImageStream,
};

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// oci-layout:PATH[:TAG], a registry reference, a payload directory, or `bundled` (the
    /// default); a second one compares the two (FROM TO).
    #[arg(value_name = "SRC", num_args = 0..=2)]
    pub sources: Vec<String>,
    /// The platform to choose in a multi-platform image (os/arch); default: the running one.
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// text: one field per line; json: the same fields as an object.
    #[arg(short = 'o', long, value_enum, default_value_t = InfoFormat::Text)]
    pub output: InfoFormat,
    /// Show each image's pull spec instead of its digest.
    #[arg(long)]
    pub pullspecs: bool,
    /// Show the source repository and commit each image was built from (with two releases:
    /// the commit range of each changed image).
    #[arg(long)]
    pub commits: bool,
    /// Show each image's layers and size, read from its registry (or the image layout).
    #[arg(long)]
    pub size: bool,
    /// Print the pull spec of the image of this image-references tag.
    #[arg(long, value_name = "NAME")]
    pub image_for: Option<String>,
    #[command(flatten)]
    pub images: ImageArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InfoFormat {
    Text,
    Json,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Info {
    source: String,
    version: Option<String>,
    /// The image manifest digest (`None` for a directory or the bundled payload).
    digest: Option<String>,
    /// The image index the manifest was chosen from.
    #[serde(skip_serializing_if = "Option::is_none")]
    list_digest: Option<String>,
    /// The platform the image was chosen for.
    platform: Option<String>,
    /// Every platform the image offers.
    architectures: Vec<String>,
    manifests: usize,
    channels: Vec<String>,
    url: Option<String>,
    previous: Vec<String>,
    /// The image config's labels (`io.openshift.release`, `io.openshift.release.base-image-digest`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
    /// image-references.
    #[serde(skip_serializing_if = "Option::is_none")]
    references: Option<ImageStream>,
}

/// One release, read.
struct Described {
    info: Info,
    source: PayloadSource,
    input: PayloadInput,
    payload: Payload,
    stream: Option<ImageStream>,
}

pub fn info(args: InfoArgs, settings: &Settings) -> CliResult {
    run(args, settings)?;
    Ok(ExitCode::SUCCESS)
}

fn run(args: InfoArgs, settings: &Settings) -> anyhow::Result<()> {
    let shown = [
        (args.pullspecs, "--pullspecs"),
        (args.commits, "--commits"),
        (args.size, "--size"),
    ];
    if shown.iter().filter(|(on, _)| *on).count() > 1 {
        bail!("only one of --commits, --pullspecs, --size may be specified");
    }
    if args.image_for.is_some() && args.output == InfoFormat::Json {
        bail!("--output and --image-for may not both be specified");
    }
    let options = options(settings, args.platform.as_deref())?;
    if let [from, to] = args.sources.as_slice() {
        if args.image_for.is_some() || args.size || args.pullspecs {
            bail!("--image-for, --size and --pullspecs show one release; compare two without them");
        }
        return compare(from, to, &args, &options);
    }
    let described = describe(args.sources.first().map(String::as_str), &options)?;
    if let Some(name) = &args.image_for {
        let stream = described.stream.as_ref().ok_or_else(|| {
            anyhow!(
                "{}: has no release-manifests/image-references",
                described.source
            )
        })?;
        let tags: Vec<&str> = stream.images().map(|(n, _)| n).collect();
        match stream.images().find(|(n, _)| n == name) {
            Some((_, image)) => outln!("{image}"),
            None => bail!(
                "no image tag {name:?} exists in the release image {}{}; its tags: {}",
                described.source,
                crate::suggest::did_you_mean(name, &tags),
                tags.join(", ")
            ),
        }
        return Ok(());
    }
    match args.output {
        InfoFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&described.info).map_err(anyhow::Error::from)?
        ),
        InfoFormat::Text => {
            print_text(&described.info, &described.source);
            if let Some(stream) = &described.stream {
                let mode = if args.size {
                    ImagesShown::Size
                } else if args.commits {
                    ImagesShown::Commits
                } else if args.pullspecs {
                    ImagesShown::Pullspecs
                } else {
                    ImagesShown::Digests
                };
                for line in images_section(stream, mode, &described.source, &options) {
                    outln!("{line}");
                }
            }
        }
    }
    Ok(())
}

fn describe(source: Option<&str>, options: &crate::oci::Options) -> anyhow::Result<Described> {
    let source = PayloadSource::from_arg(source);
    let (input, image) = match &source {
        PayloadSource::OciLayout { .. } | PayloadSource::Registry(_) => {
            let loaded = load_image(&source, options)?;
            let input = read_image(&source, &loaded).map_err(anyhow::Error::from)?;
            (input, Some(loaded.image))
        }
        other => (
            read_input(other, options).map_err(anyhow::Error::from)?,
            None,
        ),
    };
    let payload = Payload::from_input(input.clone(), &LoadOptions::default())?;
    let stream = input
        .image_references
        .as_ref()
        .and_then(|f| f.contents.as_ref().ok())
        .and_then(|bytes| ImageStream::parse(bytes).ok());
    let release = payload.release.as_ref();
    let info = Info {
        source: source.to_string(),
        version: release
            .map(|r| r.version.clone())
            .or_else(|| image.as_ref().and_then(|i| i.version().map(str::to_string))),
        digest: image.as_ref().map(|i| i.manifest_desc.digest.clone()),
        list_digest: image.as_ref().and_then(|i| i.list_digest.clone()),
        platform: image.as_ref().map(|i| i.platform.to_string()),
        architectures: match &image {
            Some(image) => image
                .platforms
                .iter()
                .map(|p| p.architecture.clone())
                .collect(),
            None => release
                .and_then(|r| r.architecture.clone())
                .into_iter()
                .collect(),
        },
        manifests: payload.manifests.len(),
        channels: release.map(|r| r.channels.clone()).unwrap_or_default(),
        url: release.and_then(|r| r.url.clone()),
        previous: release.map(|r| r.previous.clone()).unwrap_or_default(),
        labels: image
            .as_ref()
            .and_then(|i| i.config.config.labels.clone())
            .unwrap_or_default(),
        references: stream.clone(),
    };
    Ok(Described {
        info,
        source,
        input,
        payload,
        stream,
    })
}

fn print_text(info: &Info, source: &PayloadSource) {
    let none = || "-".to_string();
    outln!(
        "Name:          {}",
        info.version.clone().unwrap_or_else(none)
    );
    outln!("Source:        {}", info.source);
    outln!(
        "Digest:        {}",
        info.digest.clone().unwrap_or_else(none)
    );
    if let Some(list) = &info.list_digest {
        outln!("List Digest:   {list}");
    }
    if let Some(platform) = &info.platform {
        outln!("OS/Arch:       {platform}");
    }
    outln!(
        "Architectures: {}",
        if info.architectures.is_empty() {
            none()
        } else {
            info.architectures.join(", ")
        }
    );
    outln!("Manifests:     {}", info.manifests);
    if let PayloadSource::Registry(reference) = source
        && let Ok(parsed) = Pullspec::parse(reference)
        && let Some(digest) = info.list_digest.as_ref().or(info.digest.as_ref())
    {
        outln!("");
        outln!("Pull From:     {}", parsed.with_digest(digest));
    }
    outln!("");
    outln!("Release Metadata:");
    outln!("  Version:  {}", info.version.clone().unwrap_or_else(none));
    outln!(
        "  Upgrades: {}",
        if info.previous.is_empty() {
            "<none>".to_string()
        } else {
            info.previous.join(", ")
        }
    );
    if let Some(url) = &info.url {
        outln!("  Metadata:");
        outln!("    url: {url}");
    }
    outln!(
        "  Channels: {}",
        if info.channels.is_empty() {
            "<none>".to_string()
        } else {
            info.channels.join(", ")
        }
    );
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ImagesShown {
    Digests,
    Pullspecs,
    Commits,
    Size,
}

/// The `Images:` section, as oc prints it.
fn images_section(
    stream: &ImageStream,
    mode: ImagesShown,
    source: &PayloadSource,
    options: &crate::oci::Options,
) -> Vec<String> {
    let mut out = vec![String::new(), "Images:".to_string()];
    let tags: Vec<(&str, &str)> = stream.images().collect();
    let annotation = |name: &str, key: &str| -> String {
        stream
            .tag(name)
            .and_then(|t| t.annotations.get(key).cloned())
            .unwrap_or_default()
    };
    let rows: Vec<Vec<String>> = match mode {
        ImagesShown::Digests => std::iter::once(vec!["  NAME".into(), "DIGEST".into()])
            .chain(tags.iter().map(|(name, image)| {
                vec![
                    format!("  {name}"),
                    crate::release::pullspec::digest_or_ref(image),
                ]
            }))
            .collect(),
        ImagesShown::Pullspecs => std::iter::once(vec!["  NAME".into(), "PULL SPEC".into()])
            .chain(
                tags.iter()
                    .map(|(name, image)| vec![format!("  {name}"), image.to_string()]),
            )
            .collect(),
        ImagesShown::Commits => {
            std::iter::once(vec!["  NAME".into(), "REPO".into(), "COMMIT".into()])
                .chain(tags.iter().map(|(name, _)| {
                    vec![
                        format!("  {name}"),
                        annotation(name, ANNOTATION_SOURCE_LOCATION),
                        annotation(name, ANNOTATION_SOURCE_COMMIT),
                    ]
                }))
                .collect()
        }
        ImagesShown::Size => {
            return [out, size_section(&tags, source, options)].concat();
        }
    };
    out.extend(columns(&rows, 1));
    out
}

/// Where to read an image of the release from: a layout that holds it (a release built or
/// mirrored into one), else its registry.
fn image_location(image: &str, source: &PayloadSource) -> ImageSource {
    if let PayloadSource::OciLayout { path, .. } = source
        && let Ok(Pullspec {
            digest: Some(digest),
            ..
        }) = Pullspec::parse(image)
        && copy::has_blob(path, &digest)
    {
        return ImageSource::LayoutBlob {
            path: path.clone(),
            digest,
        };
    }
    ImageSource::Registry(image.to_string())
}

/// oc's `--size` table: each image's age, layers, size and the part of it no other image
/// shares, then the total.
fn size_section(
    tags: &[(&str, &str)],
    source: &PayloadSource,
    options: &crate::oci::Options,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut images: BTreeMap<&str, (Vec<crate::oci::Descriptor>, Option<String>)> = BTreeMap::new();
    for (name, image) in tags {
        match copy::image_layers(&image_location(image, source), options) {
            Ok(found) if !found.0.is_empty() => {
                images.insert(name, found);
            }
            Ok(_) => warnings.push(format!("tag {name:?}: the image has no layers")),
            Err(e) => warnings.push(format!("tag {name:?}: {e}")),
        }
    }
    let now = jiff::Timestamp::now();
    let sizes = image_sizes(tags, &images, now);
    let mut out = columns(&sizes.rows, 1);
    out.push(String::new());
    out.push(sizes.total);
    if !warnings.is_empty() {
        warnings.sort();
        out.push(String::new());
        out.push("Warnings:".to_string());
        out.extend(warnings.into_iter().map(|w| format!("* {w}")));
    }
    out
}

struct SizeTable {
    rows: Vec<Vec<String>>,
    total: String,
}

/// The size table of the images found (tags without one get an empty row).
fn image_sizes(
    tags: &[(&str, &str)],
    images: &BTreeMap<&str, (Vec<crate::oci::Descriptor>, Option<String>)>,
    now: jiff::Timestamp,
) -> SizeTable {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    let mut bases: Vec<&str> = Vec::new();
    let mut total: u64 = 0;
    for (name, _) in tags {
        let Some((layers, _)) = images.get(name) else {
            continue;
        };
        for (i, layer) in layers.iter().enumerate() {
            if i == 0 && !bases.contains(&layer.digest.as_str()) {
                bases.push(&layer.digest);
            }
            let seen = count.entry(&layer.digest).or_default();
            if *seen == 0 {
                total += layer.size;
            }
            *seen += 1;
        }
    }
    let base_column = bases.len() > 1;
    let mut rows = vec![
        [
            "  NAME",
            "AGE",
            "LAYERS",
            "SIZE MB",
            "UNIQUE MB",
            if base_column { "BASE" } else { "" },
        ]
        .map(String::from)
        .to_vec(),
    ];
    let mut covered: BTreeSet<&str> = BTreeSet::new();
    let mb = |bytes: u64| format!("{:.1}", bytes as f64 / 1024.0 / 1024.0);
    for (name, _) in tags {
        let Some((layers, created)) = images.get(name) else {
            rows.push(vec![format!("  {name}")]);
            continue;
        };
        let size: u64 = layers.iter().map(|l| l.size).sum();
        let mut unique: u64 = layers
            .iter()
            .filter(|l| count[l.digest.as_str()] == 1)
            .map(|l| l.size)
            .sum();
        if unique == 0 {
            let top = layers.last().expect("images have layers");
            if covered.insert(&top.digest) {
                unique = top.size;
            }
        }
        let age = created
            .as_deref()
            .and_then(|c| c.parse::<jiff::Timestamp>().ok())
            .map(|c| short_duration((now.as_second() - c.as_second()).max(0)))
            .unwrap_or_default();
        let base = if base_column {
            let index = bases
                .iter()
                .position(|b| *b == layers[0].digest)
                .expect("every first layer is a base");
            if bases.len() <= 5 {
                format!("{}{}", " ".repeat(index), (b'A' + index as u8) as char)
            } else {
                (index + 1).to_string()
            }
        } else {
            String::new()
        };
        rows.push(vec![
            format!("  {name}"),
            age,
            layers.len().to_string(),
            mb(size),
            mb(unique),
            base,
        ]);
    }
    let total = if base_column {
        format!(
            "  {} across {} layers, {} different base images",
            human_size(total),
            count.len(),
            bases.len()
        )
    } else {
        format!("  {} across {} layers", human_size(total), count.len())
    };
    SizeTable { rows, total }
}

/// Kubernetes' short human duration (`45s`, `10m`, `5h`, `3d`, `2y`).
fn short_duration(seconds: i64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s if s < 86_400 * 365 => format!("{}d", s / 86_400),
        s => format!("{}y", s / (86_400 * 365)),
    }
}

/// go-units' `HumanSize`: decimal units, four significant digits.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 9] = ["B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    let digits = if value < 1.0 {
        1
    } else {
        value.log10().floor() as usize + 1
    };
    let text = format!("{:.*}", 4usize.saturating_sub(digits), value);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}{}", UNITS[unit])
}

fn view(described: &Described) -> ReleaseView {
    let files = |dir: &str, list: &[crate::payload::InputFile]| {
        list.iter()
            .filter_map(|f| {
                Some((
                    format!("{dir}/{}", f.name),
                    f.contents.as_ref().ok()?.clone(),
                ))
            })
            .collect::<Vec<_>>()
    };
    let mut capabilities: BTreeSet<String> = described
        .payload
        .manifests
        .iter()
        .filter_map(|m| m.capabilities())
        .flatten()
        .map(|c| c.as_str().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    if let Some(release) = &described.payload.release {
        capabilities.extend(release.capabilities.iter().map(|c| c.name.to_string()));
    }
    let info = &described.info;
    ReleaseView {
        name: info
            .version
            .clone()
            .or_else(|| described.stream.as_ref().map(|s| s.metadata.name.clone()))
            .unwrap_or_else(|| info.source.clone()),
        digest: info.list_digest.clone().or_else(|| info.digest.clone()),
        platform: info.platform.clone(),
        version: info.version.clone(),
        previous: info.previous.clone(),
        images: described.stream.clone(),
        manifests: files("manifests", &described.input.manifests)
            .into_iter()
            .chain(files(
                "release-manifests",
                &described.input.release_manifests,
            ))
            .collect(),
        capabilities,
    }
}

fn compare(
    from: &str,
    to: &str,
    args: &InfoArgs,
    options: &crate::oci::Options,
) -> anyhow::Result<()> {
    let from = view(&describe(Some(from), options)?);
    let to = view(&describe(Some(to), options)?);
    let diff = diff::compare(&from, &to);
    match args.output {
        InfoFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&diff).map_err(anyhow::Error::from)?
        ),
        InfoFormat::Text => {
            let text = diff::text(&diff, args.commits);
            for line in text.strip_suffix('\n').unwrap_or(&text).split('\n') {
                outln!("{line}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_go_units_writes_them() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(512), "512B");
        assert_eq!(human_size(1234), "1.234kB");
        assert_eq!(human_size(40_451_200), "40.45MB");
        assert_eq!(human_size(1_000_000), "1MB");
        assert_eq!(short_duration(59), "59s");
        assert_eq!(short_duration(7200), "2h");
        assert_eq!(short_duration(86_400 * 3), "3d");
    }

    #[test]
    fn the_size_table_counts_shared_layers_once() {
        let layer = |c: char, size: u64| crate::oci::Descriptor {
            media_type: crate::oci::MEDIA_OCI_LAYER_GZIP.into(),
            digest: format!("sha256:{}", c.to_string().repeat(64)),
            size,
            platform: None,
            annotations: Default::default(),
        };
        let mib = 1024 * 1024;
        let images: BTreeMap<&str, _> = [
            (
                "a",
                (
                    vec![layer('1', 10 * mib), layer('2', mib)],
                    Some("2025-01-01T00:00:00Z".to_string()),
                ),
            ),
            ("b", (vec![layer('1', 10 * mib), layer('3', 2 * mib)], None)),
        ]
        .into();
        let tags = [("a", "x"), ("b", "y"), ("c", "z")];
        let now: jiff::Timestamp = "2025-01-03T00:00:00Z".parse().unwrap();
        let table = image_sizes(&tags, &images, now);
        assert_eq!(
            columns(&table.rows, 1),
            [
                "  NAME AGE LAYERS SIZE MB UNIQUE MB",
                "  a    2d  2      11.0    1.0",
                "  b        2      12.0    2.0",
                "  c",
            ]
        );
        assert_eq!(table.total, "  13.63MB across 3 layers");
    }
}
