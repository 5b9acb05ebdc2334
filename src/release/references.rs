//! The `image-references` ImageStream of a release and what `cvo payload new` does with it, as
//! `oc adm release new` does: `--mapping NAME=PULLSPEC` overrides, the rewrite of each tag to
//! its new pull spec, and the substitution of the old pull specs (oc's exact mapper) and of
//! `0.0.1-snapshot` versions (oc's component-versions mapper) in the manifests.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::pullspec::Pullspec;

/// Tag annotation: set on a tag a `--mapping` overrides (oc's `annotationReleaseOverride`).
pub const ANNOTATION_OVERRIDE: &str = "io.openshift.release.override";
/// Tag annotation: `key=version,…` component versions (oc's `annotationBuildVersions`).
pub const ANNOTATION_BUILD_VERSIONS: &str = "io.openshift.build.versions";
/// Tag annotation: the source commit an image was built from.
pub const ANNOTATION_SOURCE_COMMIT: &str = "io.openshift.build.commit.id";
/// Tag annotation: the source repository an image was built from.
pub const ANNOTATION_SOURCE_LOCATION: &str = "io.openshift.build.source-location";
/// ImageStream annotation: the release a new one was built from (oc's
/// `annotationReleaseFromRelease`).
pub const ANNOTATION_FROM_RELEASE: &str = "release.openshift.io/from-release";

/// `image-references`: an `image.openshift.io/v1` ImageStream. The fields oc writes are typed,
/// in oc's order; anything else is kept as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageStream {
    pub kind: String,
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub metadata: StreamMeta,
    #[serde(default)]
    pub spec: StreamSpec,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamMeta {
    #[serde(default)]
    pub name: String,
    #[serde(rename = "creationTimestamp", default)]
    pub creation_timestamp: Value,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamSpec {
    #[serde(
        rename = "lookupPolicy",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub lookup_policy: Option<Value>,
    #[serde(default)]
    pub tags: Vec<TagReference>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagReference {
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<ObjectReference>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectReference {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl TagReference {
    /// The pull spec of a `DockerImage` tag.
    pub fn image(&self) -> Option<&str> {
        self.from
            .as_ref()
            .filter(|f| f.kind == "DockerImage" && !f.name.is_empty())
            .map(|f| f.name.as_str())
    }
}

impl ImageStream {
    /// Parses image-references (JSON or YAML).
    pub fn parse(bytes: &[u8]) -> Result<ImageStream, String> {
        let value = crate::payload::metadata::image_references_value(bytes)?;
        serde_json::from_value(value).map_err(|e| format!("unmarshal image-references: {e}"))
    }

    /// As oc writes it: indented JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("an ImageStream serializes")
    }

    pub fn tag(&self, name: &str) -> Option<&TagReference> {
        self.spec.tags.iter().find(|t| t.name == name)
    }

    /// The `DockerImage` tags: (name, pull spec), in file order.
    pub fn images(&self) -> impl Iterator<Item = (&str, &str)> {
        self.spec
            .tags
            .iter()
            .filter_map(|t| Some((t.name.as_str(), t.image()?)))
    }

    fn tag_names(&self) -> Vec<&str> {
        self.spec.tags.iter().map(|t| t.name.as_str()).collect()
    }
}

/// `NAME=PULLSPEC`: the image of tag NAME (oc's `SRC=DST`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub source: String,
    pub destination: String,
}

/// `--mapping` values; `seen` holds the tags mapped so far (each at most once).
pub fn parse_mappings(
    args: &[String],
    seen: &mut BTreeSet<String>,
) -> Result<Vec<Mapping>, String> {
    let mut mappings = Vec::new();
    for arg in args {
        let Some((source, destination)) = arg.split_once('=') else {
            return Err("all arguments must be valid SRC=DST mappings".to_string());
        };
        if source.is_empty() || destination.is_empty() {
            return Err("all arguments must be valid SRC=DST mappings".to_string());
        }
        if !seen.insert(source.to_string()) {
            return Err(format!(
                "each source tag may only be specified once: {source}"
            ));
        }
        mappings.push(Mapping {
            source: source.to_string(),
            destination: destination.to_string(),
        });
    }
    Ok(mappings)
}

/// A `--mapping-file`: lines of space-separated `SRC=DST`, `#` starting a comment.
pub fn parse_mapping_file(
    file: &str,
    text: &str,
    seen: &mut BTreeSet<String>,
) -> Result<Vec<Mapping>, String> {
    let mut mappings = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let args: Vec<String> = line.split(' ').map(str::to_string).collect();
        let parsed = parse_mappings(&args, seen)
            .map_err(|e| format!("file {file}, line {}: {e}", index + 1))?;
        mappings.extend(parsed);
    }
    Ok(mappings)
}

/// The pull spec each mapped tag asks for, checked: the tag exists in the release (a mapping
/// of an unknown tag is a typo here, where oc would add a tag no manifest references), the
/// pull spec parses, and the operator's tag is left to `--operator-image`.
pub fn requested_targets(
    stream: &ImageStream,
    mappings: &[Mapping],
) -> Result<BTreeMap<String, Pullspec>, String> {
    let names = stream.tag_names();
    let mut targets = BTreeMap::new();
    for mapping in mappings {
        if mapping.source == super::OPERATOR_TAG {
            return Err(format!(
                "--mapping {}=…: the operator image is the release's own; choose it with --operator-image or --operator-binary",
                super::OPERATOR_TAG
            ));
        }
        if !names.contains(&mapping.source.as_str()) {
            return Err(format!(
                "--mapping {}={}: the release has no image tag {:?}{}; its tags: {}",
                mapping.source,
                mapping.destination,
                mapping.source,
                crate::suggest::did_you_mean(&mapping.source, &names),
                names.join(", ")
            ));
        }
        let pullspec = Pullspec::parse(&mapping.destination)
            .map_err(|e| format!("--mapping {}: {e}", mapping.source))?;
        targets.insert(mapping.source.clone(), pullspec);
    }
    Ok(targets)
}

/// The tags whose image is named by tag, not digest, after `targets` are applied: their
/// digests are to be looked up (a release references images by digest).
pub fn unresolved(
    stream: &ImageStream,
    targets: &BTreeMap<String, Pullspec>,
) -> Result<Vec<(String, Pullspec)>, String> {
    let mut found = Vec::new();
    for (name, image) in stream.images() {
        let pullspec = match targets.get(name) {
            Some(target) => target.clone(),
            None => {
                Pullspec::parse(image).map_err(|e| format!("image-references tag {name:?}: {e}"))?
            }
        };
        if pullspec.digest.is_none() {
            found.push((name.to_string(), pullspec));
        }
    }
    for (name, target) in targets {
        if target.digest.is_none() && !found.iter().any(|(n, _)| n == name) {
            found.push((name.clone(), target.clone()));
        }
    }
    Ok(found)
}

/// One image reference changed by the rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pub tag: String,
    pub from: String,
    pub to: String,
}

/// The new image-references and the pull specs it changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    pub stream: ImageStream,
    pub replacements: Vec<Replacement>,
}

/// Points every tag of `targets` at its pull spec (each by digest), as oc does: a tag a
/// `--mapping` overrides (`overridden`) loses its annotations and gets
/// `io.openshift.release.override: "true"`; a missing `cluster-version-operator` tag is added;
/// the tags are sorted by name; the stream is named `name` and created at `created`.
pub fn rewrite(
    input: &ImageStream,
    name: &str,
    created: &str,
    targets: &BTreeMap<String, Pullspec>,
    overridden: &BTreeSet<String>,
) -> Result<Rewrite, String> {
    let mut stream = input.clone();
    stream.metadata.name = name.to_string();
    stream.metadata.creation_timestamp = Value::String(created.to_string());
    for (tag, target) in targets {
        if target.digest.is_none() {
            return Err(format!(
                "image-references tag {tag:?}: {target} does not point to an image digest"
            ));
        }
        if stream.tag(tag).is_none() {
            stream.spec.tags.push(TagReference {
                name: tag.clone(),
                annotations: BTreeMap::new(),
                from: None,
                extra: BTreeMap::new(),
            });
        }
    }
    let mut replacements = Vec::new();
    for tag in &mut stream.spec.tags {
        let Some(target) = targets.get(&tag.name) else {
            continue;
        };
        let to = target.to_string();
        let from = tag.image().map(str::to_string);
        if overridden.contains(&tag.name) {
            tag.annotations = [(ANNOTATION_OVERRIDE.to_string(), "true".to_string())].into();
        }
        tag.from = Some(ObjectReference {
            kind: "DockerImage".to_string(),
            name: to.clone(),
            extra: tag.from.take().map(|f| f.extra).unwrap_or_default(),
        });
        if let Some(from) = from
            && from != to
        {
            replacements.push(Replacement {
                tag: tag.name.clone(),
                from,
                to,
            });
        }
    }
    stream.spec.tags.sort_by(|a, b| a.name.cmp(&b.name));
    let mut by_source: BTreeMap<&str, &Replacement> = BTreeMap::new();
    for replacement in &replacements {
        if let Some(other) = by_source.insert(&replacement.from, replacement)
            && other.to != replacement.to
        {
            return Err(format!(
                "image-references tags {:?} and {:?} both reference {} but are given different images ({} and {}): a manifest's reference cannot be told apart",
                other.tag, replacement.tag, replacement.from, other.to, replacement.to
            ));
        }
    }
    Ok(Rewrite {
        stream,
        replacements,
    })
}

/// Replaces every old pull spec by its new one, where it stands as a whole word (oc's exact
/// mapper, `\b<old>\b`), in one pass: a new pull spec is never rewritten again.
pub struct ImageSubstitution {
    pattern: Option<Regex>,
    to: BTreeMap<String, String>,
}

impl ImageSubstitution {
    pub fn new(replacements: &[Replacement]) -> ImageSubstitution {
        let mut sources: Vec<&str> = replacements.iter().map(|r| r.from.as_str()).collect();
        sources.sort_by_key(|s| std::cmp::Reverse(s.len()));
        sources.dedup();
        let pattern = (!sources.is_empty()).then(|| {
            let alternatives: Vec<String> = sources.iter().map(|s| regex::escape(s)).collect();
            Regex::new(&format!(r"\b(?:{})\b", alternatives.join("|")))
                .expect("escaped alternatives compile")
        });
        ImageSubstitution {
            pattern,
            to: replacements
                .iter()
                .map(|r| (r.from.clone(), r.to.clone()))
                .collect(),
        }
    }

    pub fn apply(&self, text: &str) -> String {
        match &self.pattern {
            None => text.to_string(),
            Some(pattern) => pattern
                .replace_all(text, |caps: &regex::Captures| self.to[&caps[0]].clone())
                .into_owned(),
        }
    }
}

/// The `0.0.1-snapshot` placeholders of a release's manifests and their values (oc's
/// component-versions mapper): `0.0.1-snapshot` is the release version (without build
/// metadata), `0.0.1-snapshot-KEY` the version of component KEY from the tags'
/// `io.openshift.build.versions` annotations.
pub struct VersionSubstitution {
    release: Option<String>,
    versions: BTreeMap<String, String>,
    tags_by_key: BTreeMap<String, Vec<String>>,
    pattern: Regex,
}

impl VersionSubstitution {
    pub fn new(release_name: &str, stream: &ImageStream) -> Result<VersionSubstitution, String> {
        let release = semver::Version::parse(release_name).ok().map(|mut v| {
            v.build = semver::BuildMetadata::EMPTY;
            v.to_string()
        });
        let mut versions: BTreeMap<String, String> = BTreeMap::new();
        let mut tags_by_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for tag in &stream.spec.tags {
            let Some(label) = tag.annotations.get(ANNOTATION_BUILD_VERSIONS) else {
                continue;
            };
            let items = parse_component_versions(label).map_err(|_| {
                format!(
                    "input image stream has an invalid version annotation for tag {:?}: {label}",
                    tag.name
                )
            })?;
            for (key, version) in items {
                if key == "kubectl" && tag.name != "cli" && tag.name != "cli-artifacts" {
                    continue;
                }
                match versions.get(&key) {
                    Some(existing) if *existing != version && key != "machine-os" => {
                        return Err(format!(
                            "input image stream has multiple versions defined for version {key}: {} defines {version} but was already set to {existing} on {}",
                            tag.name,
                            tags_by_key[&key].join(", ")
                        ));
                    }
                    Some(_) => {}
                    None => {
                        versions.insert(key.clone(), version);
                    }
                }
                tags_by_key.entry(key).or_default().push(tag.name.clone());
            }
        }
        Ok(VersionSubstitution {
            release,
            versions,
            tags_by_key,
            // Go's `\W` is ASCII: any character but [0-9A-Za-z_].
            pattern: Regex::new(r"([^0-9A-Za-z_]|^)0\.0\.1-snapshot([a-z0-9\-]*)")
                .expect("the pattern compiles"),
        })
    }

    pub fn apply(&self, text: &str) -> Result<String, String> {
        let mut missing: Vec<String> = Vec::new();
        let mut conflicts: Vec<String> = Vec::new();
        let out = self
            .pattern
            .replace_all(text, |caps: &regex::Captures| {
                let (prefix, key) = (&caps[1], &caps[2]);
                if key.is_empty() {
                    if let Some(release) = &self.release {
                        return format!("{prefix}{release}");
                    }
                    return caps[0].to_string();
                }
                let Some(key) = key.strip_prefix('-') else {
                    return caps[0].to_string();
                };
                let Some(value) = self.versions.get(key) else {
                    missing.push(key.to_string());
                    return caps[0].to_string();
                };
                if self.tags_by_key.get(key).is_some_and(|t| t.len() > 1) {
                    conflicts.push(key.to_string());
                    return caps[0].to_string();
                }
                format!("{prefix}{value}")
            })
            .into_owned();
        match missing.as_slice() {
            [] => {}
            [one] if one.is_empty() => {
                return Err("empty version references are not allowed".to_string());
            }
            [one] => return Err(format!("unknown version reference {one:?}")),
            many => return Err(format!("unknown version references: {}", many.join(", "))),
        }
        if let Some(key) = conflicts.first() {
            let mut tags = self.tags_by_key[key].clone();
            tags.sort();
            return Err(format!(
                "the version for {key:?} is inconsistent across the referenced images: {}",
                tags.join(", ")
            ));
        }
        Ok(out)
    }
}

/// `key=version,…` (oc's `parseComponentVersionsLabel`, without display names): keys of
/// lowercase letters, digits and inner dashes, semantic versions without build metadata.
pub fn parse_component_versions(label: &str) -> Result<BTreeMap<String, String>, String> {
    let mut versions = BTreeMap::new();
    let label = label.trim();
    if label.is_empty() {
        return Ok(versions);
    }
    let key_ok = |k: &str| {
        let b = k.as_bytes();
        b.len() >= 2
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    };
    for pair in label.split(',') {
        let pair = pair.trim();
        let Some((key, version)) = pair.split_once('=') else {
            return Err(format!("the version pair {pair:?} must be NAME=VERSION"));
        };
        if key.len() < 2 {
            return Err(format!(
                "the version name {key:?} must be at least 2 characters"
            ));
        }
        if !key_ok(key) {
            return Err(format!(
                "the version name {key:?} must only be ASCII alphanumerics and internal hyphens"
            ));
        }
        let mut parsed = semver::Version::parse(version).map_err(|e| {
            format!("the version pair {pair:?} must have a valid semantic version: {e}")
        })?;
        parsed.build = semver::BuildMetadata::EMPTY;
        versions.insert(key.to_string(), parsed.to_string());
    }
    Ok(versions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(c: char) -> String {
        format!("sha256:{}", c.to_string().repeat(64))
    }

    fn stream() -> ImageStream {
        let text = format!(
            r#"{{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{{"name":"4.18.0","creationTimestamp":null}},"spec":{{"lookupPolicy":{{"local":false}},"tags":[
              {{"name":"etcd","annotations":{{"io.openshift.build.commit.id":"c1","io.openshift.build.versions":"etcd-server=3.5.1"}},"from":{{"kind":"DockerImage","name":"quay.io/art/dev@{a}"}},"generation":null,"importPolicy":{{}},"referencePolicy":{{"type":""}}}},
              {{"name":"cluster-version-operator","from":{{"kind":"DockerImage","name":"quay.io/art/dev@{b}"}}}},
              {{"name":"console","from":{{"kind":"DockerImage","name":"quay.io/art/dev@{c}"}}}}]}},"status":{{"dockerImageRepository":""}}}}"#,
            a = digest('a'),
            b = digest('b'),
            c = digest('c')
        );
        ImageStream::parse(text.as_bytes()).unwrap()
    }

    #[test]
    fn the_stream_round_trips_in_ocs_field_order() {
        let s = stream();
        let json = s.to_json();
        let again = ImageStream::parse(json.as_bytes()).unwrap();
        assert_eq!(again, s);
        let order: Vec<usize> = [
            "\"kind\"",
            "\"apiVersion\"",
            "\"metadata\"",
            "\"creationTimestamp\"",
            "\"spec\"",
            "\"lookupPolicy\"",
            "\"tags\"",
            "\"status\"",
        ]
        .iter()
        .map(|k| json.find(k).unwrap())
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{json}");
        let tag = &json[json.find("\"name\": \"etcd\"").unwrap()..];
        let at = |k: &str| tag.find(k).unwrap();
        assert!(at("annotations") < at("\"from\"") && at("\"from\"") < at("generation"));
        assert!(ImageStream::parse(b"kind: ConfigMap\napiVersion: v1\n").is_err());
    }

    #[test]
    fn mappings_parse_as_oc_reads_them() {
        let mut seen = BTreeSet::new();
        let m = parse_mappings(&["etcd=quay.io/x/etcd:v1".into()], &mut seen).unwrap();
        assert_eq!(m[0].source, "etcd");
        assert_eq!(m[0].destination, "quay.io/x/etcd:v1");
        for bad in ["etcd", "=x", "etcd="] {
            assert_eq!(
                parse_mappings(&[bad.into()], &mut BTreeSet::new()).unwrap_err(),
                "all arguments must be valid SRC=DST mappings"
            );
        }
        assert_eq!(
            parse_mappings(&["etcd=y".into()], &mut seen).unwrap_err(),
            "each source tag may only be specified once: etcd"
        );
        let mut seen = BTreeSet::new();
        let file = "# images\nconsole=r.io/c:1 etcd=r.io/e:2  # two\n\nbad\n";
        assert_eq!(
            parse_mapping_file("m.txt", file, &mut seen).unwrap_err(),
            "file m.txt, line 4: all arguments must be valid SRC=DST mappings"
        );
        let ok = parse_mapping_file("m.txt", &file[..file.len() - 4], &mut BTreeSet::new());
        assert_eq!(ok.unwrap().len(), 2);
    }

    #[test]
    fn targets_name_known_tags_and_leave_the_operator_alone() {
        let s = stream();
        let map = |src: &str, dst: &str| {
            vec![Mapping {
                source: src.into(),
                destination: dst.into(),
            }]
        };
        let t = requested_targets(&s, &map("etcd", "r.io/etcd:v2")).unwrap();
        assert_eq!(t["etcd"].tag.as_deref(), Some("v2"));
        let err = requested_targets(&s, &map("ectd", "r.io/etcd:v2")).unwrap_err();
        assert!(
            err.contains("no image tag \"ectd\" (did you mean etcd?)"),
            "{err}"
        );
        assert!(err.contains("its tags: etcd, cluster-version-operator, console"));
        let err = requested_targets(&s, &map("cluster-version-operator", "r.io/c:1")).unwrap_err();
        assert!(err.contains("--operator-image"), "{err}");
        assert!(requested_targets(&s, &map("etcd", "r.io/etcd:")).is_err());
        let unresolved = unresolved(&s, &t).unwrap();
        assert_eq!(unresolved.len(), 1);
        assert_eq!(unresolved[0].0, "etcd");
    }

    #[test]
    fn the_rewrite_points_tags_at_digests_and_lists_what_changed() {
        let s = stream();
        let new_etcd = Pullspec::parse(&format!("r.io/etcd@{}", digest('e'))).unwrap();
        let operator = Pullspec::parse(&format!("r.io/release@{}", digest('f'))).unwrap();
        let targets: BTreeMap<String, Pullspec> = [
            ("etcd".to_string(), new_etcd.clone()),
            ("cluster-version-operator".to_string(), operator.clone()),
        ]
        .into();
        let overridden: BTreeSet<String> = ["etcd".to_string()].into();
        let r = rewrite(&s, "4.18.1", "2025-01-01T00:00:00Z", &targets, &overridden).unwrap();
        assert_eq!(r.stream.metadata.name, "4.18.1");
        assert_eq!(
            r.stream.metadata.creation_timestamp,
            Value::String("2025-01-01T00:00:00Z".into())
        );
        let names: Vec<&str> = r.stream.spec.tags.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["cluster-version-operator", "console", "etcd"]);
        let etcd = r.stream.tag("etcd").unwrap();
        assert_eq!(etcd.image(), Some(new_etcd.to_string().as_str()));
        assert_eq!(
            etcd.annotations,
            [(ANNOTATION_OVERRIDE.to_string(), "true".to_string())].into()
        );
        assert!(etcd.extra.contains_key("importPolicy"), "other fields kept");
        assert_eq!(r.replacements.len(), 2);
        assert_eq!(r.replacements[0].tag, "etcd");
        assert_eq!(
            r.replacements[0].from,
            format!("quay.io/art/dev@{}", digest('a'))
        );

        let by_tag: BTreeMap<String, Pullspec> =
            [("etcd".to_string(), Pullspec::parse("r.io/etcd:v2").unwrap())].into();
        let err = rewrite(&s, "4.18.1", "x", &by_tag, &overridden).unwrap_err();
        assert!(err.contains("does not point to an image digest"), "{err}");
    }

    #[test]
    fn two_tags_of_one_image_given_different_images_is_refused() {
        let mut s = stream();
        let same = s.spec.tags[0].from.clone();
        s.spec.tags[2].from = same;
        let targets: BTreeMap<String, Pullspec> = [
            (
                "etcd".to_string(),
                Pullspec::parse(&format!("r.io/a@{}", digest('1'))).unwrap(),
            ),
            (
                "console".to_string(),
                Pullspec::parse(&format!("r.io/b@{}", digest('2'))).unwrap(),
            ),
        ]
        .into();
        let err = rewrite(&s, "4.18.0", "x", &targets, &BTreeSet::new()).unwrap_err();
        assert!(err.contains("cannot be told apart"), "{err}");
    }

    #[test]
    fn images_are_substituted_as_whole_words_in_one_pass() {
        let a = format!("quay.io/art/dev@{}", digest('a'));
        let b = format!("quay.io/art/dev@{}", digest('b'));
        let subst = ImageSubstitution::new(&[
            Replacement {
                tag: "x".into(),
                from: a.clone(),
                to: b.clone(),
            },
            Replacement {
                tag: "y".into(),
                from: b.clone(),
                to: "r.io/y@sha256:1".into(),
            },
        ]);
        let text = format!("image: {a}\n  value: \"{b}\"\nother: {a}x\n");
        assert_eq!(
            subst.apply(&text),
            format!("image: {b}\n  value: \"r.io/y@sha256:1\"\nother: {a}x\n")
        );
        assert_eq!(ImageSubstitution::new(&[]).apply("same"), "same");
    }

    #[test]
    fn versions_are_substituted_as_oc_does() {
        let s = stream();
        let v = VersionSubstitution::new("4.18.0+build.1", &s).unwrap();
        assert_eq!(
            v.apply(
                "version: \"0.0.1-snapshot\"\nv: 0.0.1-snapshot-etcd-server\nx0.0.1-snapshot\n"
            )
            .unwrap(),
            "version: \"4.18.0\"\nv: 3.5.1\nx0.0.1-snapshot\n"
        );
        assert_eq!(
            v.apply("a: 0.0.1-snapshot-kernel").unwrap_err(),
            "unknown version reference \"kernel\""
        );
        assert_eq!(
            v.apply("a: 0.0.1-snapshot-kernel 0.0.1-snapshot-crio")
                .unwrap_err(),
            "unknown version references: kernel, crio"
        );
        assert_eq!(
            v.apply("a: 0.0.1-snapshot-").unwrap_err(),
            "empty version references are not allowed"
        );
        let not_semver = VersionSubstitution::new("latest", &s).unwrap();
        assert_eq!(
            not_semver.apply("0.0.1-snapshot").unwrap(),
            "0.0.1-snapshot"
        );

        let mut two = stream();
        two.spec.tags[2]
            .annotations
            .insert(ANNOTATION_BUILD_VERSIONS.into(), "etcd-server=3.5.1".into());
        let v = VersionSubstitution::new("4.18.0", &two).unwrap();
        assert_eq!(
            v.apply("0.0.1-snapshot-etcd-server").unwrap_err(),
            "the version for \"etcd-server\" is inconsistent across the referenced images: console, etcd"
        );
        two.spec.tags[2]
            .annotations
            .insert(ANNOTATION_BUILD_VERSIONS.into(), "etcd-server=3.5.2".into());
        let err = VersionSubstitution::new("4.18.0", &two).err().unwrap();
        assert!(
            err.contains("multiple versions defined for version etcd-server"),
            "{err}"
        );
    }

    #[test]
    fn component_version_labels() {
        let v = parse_component_versions(" kubernetes=1.31.0+abc , machine-os=418.94.1").unwrap();
        assert_eq!(v["kubernetes"], "1.31.0");
        assert_eq!(v["machine-os"], "418.94.1");
        assert!(parse_component_versions("k=1.0.0").is_err());
        assert!(parse_component_versions("-k8=1.0.0").is_err());
        assert!(parse_component_versions("kube=x").is_err());
        assert!(parse_component_versions("kube").is_err());
        assert!(parse_component_versions("").unwrap().is_empty());
    }
}
