//! `release-manifests/release-metadata` (Cincinnati metadata) and
//! `release-manifests/image-references` (an ImageStream), with the upstream messages.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::capability::{DECLARED_CAPABILITIES_KEY, DeclaredCapability, check_declared};
use serde_json::Value;

pub const METADATA_KIND: &str = "cincinnati-metadata-v0";
const CHANNELS_KEY: &str = "io.openshift.upgrades.graph.release.channels";
const ARCHITECTURE_KEY: &str = "release.openshift.io/architecture";

/// What the payload says about itself (upstream `Release`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub version: String,
    #[serde(skip)]
    pub semver: semver::Version,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `Multi` for a multi-architecture payload, else `None` (the running architecture).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    pub channels: Vec<String>,
    pub previous: Vec<String>,
    /// The capabilities the payload declares for its own components
    /// ([`crate::capability::DECLARED_CAPABILITIES_KEY`]); empty for upstream payloads.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<DeclaredCapability>,
}

impl Release {
    pub fn major(&self) -> u64 {
        self.semver.major
    }
}

#[derive(Deserialize)]
struct RawMetadata {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    previous: Vec<String>,
    #[serde(default)]
    metadata: BTreeMap<String, Value>,
}

/// Parses release-metadata. Problems inside `metadata` are warnings, as upstream logs them.
pub fn parse_release_metadata(bytes: &[u8]) -> Result<(Release, Vec<String>), String> {
    let raw: RawMetadata =
        serde_json::from_slice(bytes).map_err(|e| format!("unmarshal release-metadata: {e}"))?;
    if raw.kind != METADATA_KIND {
        return Err(format!(
            "unrecognized Cincinnati metadata kind {}",
            crate::manifest::go_quote(&raw.kind)
        ));
    }
    if raw.version.is_empty() {
        return Err("missing required Cincinnati metadata version".to_string());
    }
    let semver = semver::Version::parse(&raw.version).map_err(|e| {
        format!(
            "invalid Cincinnati metadata version {}: {e}",
            crate::manifest::go_quote(&raw.version)
        )
    })?;
    let mut warnings = Vec::new();
    let url = raw
        .metadata
        .get("url")
        .and_then(Value::as_str)
        .map(str::to_string);
    let architecture = match raw.metadata.get(ARCHITECTURE_KEY).and_then(Value::as_str) {
        None => None,
        Some("multi") => Some("Multi".to_string()),
        Some(other) => {
            warnings.push(format!(
                "unrecognized {ARCHITECTURE_KEY} value {other:?}: only \"multi\" is recognised"
            ));
            None
        }
    };
    let channels = channels(
        raw.metadata.get(CHANNELS_KEY).and_then(Value::as_str),
        &mut warnings,
    );
    let capabilities =
        declared_capabilities(raw.metadata.get(DECLARED_CAPABILITIES_KEY), &mut warnings);
    Ok((
        Release {
            version: raw.version,
            semver,
            url,
            architecture,
            channels,
            previous: raw.previous,
            capabilities,
        },
        warnings,
    ))
}

/// The payload's capability declarations. Like every problem inside `metadata`, a malformed
/// one is a warning (no capability is declared then); `cvo validate` reports it as an error.
fn declared_capabilities(
    value: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Vec<DeclaredCapability> {
    let Some(value) = value else {
        return Vec::new();
    };
    match serde_json::from_value::<Vec<DeclaredCapability>>(value.clone()) {
        Ok(declared) => {
            warnings.extend(
                check_declared(&declared)
                    .into_iter()
                    .map(|p| format!("{DECLARED_CAPABILITIES_KEY}: {p}")),
            );
            declared
        }
        Err(e) => {
            warnings.push(format!(
                "{DECLARED_CAPABILITIES_KEY}: {e} (expected a list of {{\"name\", \"description\", \"sets\"}}); no capability is declared"
            ));
            Vec::new()
        }
    }
}

fn channels(value: Option<&str>, warnings: &mut Vec<String>) -> Vec<String> {
    let Some(value) = value else {
        return Vec::new();
    };
    let mut channels: Vec<String> = Vec::new();
    for (i, channel) in value.split(',').enumerate() {
        if channel.is_empty() {
            warnings.push(format!("{CHANNELS_KEY} entry {i} is empty; ignoring"));
        } else {
            channels.push(channel.to_string());
        }
    }
    channels.sort();
    channels
}

/// Parses image-references and checks it against the release version. Returns the images
/// map used for templating: tag name → pullspec, for tags whose `from.kind` is `DockerImage`.
/// image-references' `metadata.creationTimestamp` (RFC 3339) in seconds since the epoch; `None`
/// when it is null, missing or not a time (a payload made by hand).
pub fn image_references_created(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let value: Value = if crate::yaml::is_json_stream(text) {
        serde_json::from_str(text.trim()).ok()?
    } else {
        crate::yaml::parse_value(text).ok()?
    };
    let created = value.pointer("/metadata/creationTimestamp")?.as_str()?;
    created
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_second())
}

pub fn parse_image_references(
    bytes: &[u8],
    version: Option<&str>,
) -> Result<BTreeMap<String, String>, String> {
    let value = image_references_value(bytes)?;
    let name = value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if let Some(version) = version
        && name != version
    {
        return Err(format!(
            "version from image-references ({name}) differs from release-metadata ({version})"
        ));
    }
    Ok(images(&value))
}

/// image-references (JSON or YAML) as a JSON value, checked to be a v1 ImageStream.
pub fn image_references_value(bytes: &[u8]) -> Result<Value, String> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| format!("unmarshal image-references: {e}"))?;
    let value = if crate::yaml::is_json_stream(text) {
        serde_json::from_str::<Value>(text.trim())
            .map_err(|e| format!("unmarshal image-references: {e}"))?
    } else {
        crate::yaml::parse_value(text).map_err(|e| format!("unmarshal image-references: {e}"))?
    };
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "image.openshift.io/v1" || kind != "ImageStream" {
        let found = if kind.is_empty() {
            "document without a kind".to_string()
        } else {
            format!("{api_version} {kind}")
        };
        return Err(format!(
            "image-references is a {found}, not a v1 ImageStream"
        ));
    }
    Ok(value)
}

fn images(stream: &Value) -> BTreeMap<String, String> {
    let tags = stream.pointer("/spec/tags").and_then(Value::as_array);
    tags.into_iter()
        .flatten()
        .filter(|tag| tag.pointer("/from/kind").and_then(Value::as_str) == Some("DockerImage"))
        .filter_map(|tag| {
            let name = tag.get("name")?.as_str()?;
            let pullspec = tag.pointer("/from/name")?.as_str()?;
            Some((name.to_string(), pullspec.to_string()))
        })
        .collect()
}

/// The architecture this binary runs on, named as Go's `runtime.GOARCH` (what upstream
/// reports when a release names none, and what image indexes call platforms).
pub fn running_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        "x86" => "386",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_upstream_fixture() {
        let text = br#"{"kind":"cincinnati-metadata-v0","version":"1.0.0-abc","previous":["1.1.1","1.2.2"],"metadata":{"url":"https://example.com/v1.0.0-abc","io.openshift.upgrades.graph.release.channels":"channel-c,channel-a,channel-b"}}"#;
        let (release, warnings) = parse_release_metadata(text).unwrap();
        assert_eq!(release.version, "1.0.0-abc");
        assert_eq!(
            release.url.as_deref(),
            Some("https://example.com/v1.0.0-abc")
        );
        assert_eq!(
            release.channels,
            vec!["channel-a", "channel-b", "channel-c"]
        );
        assert_eq!(release.major(), 1);
        assert!(warnings.is_empty());
    }

    #[test]
    fn upstream_metadata_errors() {
        assert_eq!(
            parse_release_metadata(br#"{"kind":"other","version":"1.0.0"}"#).unwrap_err(),
            r#"unrecognized Cincinnati metadata kind "other""#
        );
        assert_eq!(
            parse_release_metadata(br#"{"kind":"cincinnati-metadata-v0"}"#).unwrap_err(),
            "missing required Cincinnati metadata version"
        );
        assert!(
            parse_release_metadata(br#"{"kind":"cincinnati-metadata-v0","version":"4.18"}"#)
                .unwrap_err()
                .starts_with(r#"invalid Cincinnati metadata version "4.18": "#)
        );
        assert!(
            parse_release_metadata(b"{")
                .unwrap_err()
                .starts_with("unmarshal release-metadata")
        );
    }

    #[test]
    fn multi_architecture_and_empty_channels() {
        let text = br#"{"kind":"cincinnati-metadata-v0","version":"4.18.0","metadata":{"release.openshift.io/architecture":"multi","io.openshift.upgrades.graph.release.channels":"b,,a"}}"#;
        let (release, warnings) = parse_release_metadata(text).unwrap();
        assert_eq!(release.architecture.as_deref(), Some("Multi"));
        assert_eq!(release.channels, vec!["a", "b"]);
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn image_references_must_match_the_version() {
        let yaml = b"kind: ImageStream\napiVersion: image.openshift.io/v1\nmetadata:\n  name: 1.0.0-abc\nspec:\n  tags:\n  - name: cvo\n    from: {kind: DockerImage, name: quay.io/x@sha256:1}\n  - name: other\n    from: {kind: ImageStreamTag, name: x:y}\n";
        let images = parse_image_references(yaml, Some("1.0.0-abc")).unwrap();
        assert_eq!(
            images.into_iter().collect::<Vec<_>>(),
            vec![("cvo".to_string(), "quay.io/x@sha256:1".to_string())]
        );
        assert_eq!(
            parse_image_references(yaml, Some("2.0.0")).unwrap_err(),
            "version from image-references (1.0.0-abc) differs from release-metadata (2.0.0)"
        );
        assert_eq!(
            parse_image_references(b"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}", None)
                .unwrap_err(),
            "image-references is a v1 ConfigMap, not a v1 ImageStream"
        );
    }

    #[test]
    fn a_payload_declares_capabilities_and_a_bad_declaration_is_a_warning() {
        let meta = |declared: &str| {
            format!(
                r#"{{"kind":"cincinnati-metadata-v0","version":"4.19.0","metadata":{{"capabilities.cvo.openshift.io/declared":{declared}}}}}"#
            )
        };
        let (release, warnings) = parse_release_metadata(
            meta(r#"[{"name":"Widgets","description":"The widget API.","sets":["v4.18"]}]"#)
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(release.capabilities.len(), 1);
        assert_eq!(release.capabilities[0].name.as_str(), "Widgets");
        assert_eq!(
            release.capabilities[0].sets,
            [crate::capability::CapabilitySet::V4_18]
        );
        let (release, warnings) =
            parse_release_metadata(meta(r#"[{"name":"Widgets","sets":["v9"]}]"#).as_bytes())
                .unwrap();
        assert!(release.capabilities.is_empty());
        assert!(
            warnings[0].starts_with("capabilities.cvo.openshift.io/declared: ")
                && warnings[0].ends_with("no capability is declared"),
            "{warnings:?}"
        );
        let (none, warnings) =
            parse_release_metadata(br#"{"kind":"cincinnati-metadata-v0","version":"4.18.0"}"#)
                .unwrap();
        assert!(none.capabilities.is_empty() && warnings.is_empty());
    }
}

#[cfg(test)]
mod created_tests {
    use super::image_references_created;

    #[test]
    fn the_release_creation_time_from_image_references() {
        let made = br#"{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"4.18.0","creationTimestamp":"2025-01-01T00:00:00Z"}}"#;
        assert_eq!(image_references_created(made), Some(1_735_689_600));
        let by_hand = br#"{"kind":"ImageStream","metadata":{"creationTimestamp":null}}"#;
        assert_eq!(image_references_created(by_hand), None);
        assert_eq!(image_references_created(b"kind: ImageStream\n"), None);
    }
}
