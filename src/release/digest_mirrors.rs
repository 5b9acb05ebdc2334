//! Which repositories a pull by digest tries, after the cluster's ImageDigestMirrorSets
//! (`config.openshift.io/v1`): what the machine-config operator writes into each node's
//! `registries.conf` and the container runtime then does, for the release `cvo start` pulls
//! itself (upstream, a node pulls the release image, so these rules apply to it there).
//!
//! * The `spec.imageDigestMirrors[]` of every set are merged per `source`: an entry without a
//!   mirror other than its source is no rule; the mirrors of one source are ordered consistently
//!   with every set's order (sets `(B, C)` and `(A, B)` give `(A, B, C)`); one entry with
//!   `mirrorSourcePolicy: NeverContactSource` makes the source never contacted.
//! * A pull uses the rule whose source is the longest that matches its repository: the source
//!   itself, a repository under it (`source/...`), or for `*.example.com` any host under
//!   `example.com`. The part the source matched is replaced by each mirror, in order, then the
//!   source is tried, unless NeverContactSource.
//! * Mirrors serve pulls by digest only: a pull by tag goes to the source (or fails, when the
//!   source must not be contacted).
//! * The older ImageContentSourcePolicies (`operator.openshift.io/v1alpha1`,
//!   `spec.repositoryDigestMirrors[]`: `source`, `mirrors`) still in a cluster are the same
//!   rules without a source policy (the source is always contacted last), merged with the
//!   ImageDigestMirrorSets' per source, as the machine-config operator merges them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

/// An ImageDigestMirrorSet's `spec`, as the API defines it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageDigestMirrorSetSpec {
    #[serde(default)]
    pub image_digest_mirrors: Vec<ImageDigestMirrors>,
}

/// One `spec.imageDigestMirrors[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageDigestMirrors {
    pub source: String,
    #[serde(default)]
    pub mirrors: Vec<String>,
    #[serde(default)]
    pub mirror_source_policy: MirrorSourcePolicy,
}

/// An ImageContentSourcePolicy's `spec`, as the API defines it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContentSourcePolicySpec {
    #[serde(default)]
    pub repository_digest_mirrors: Vec<RepositoryDigestMirrors>,
}

/// One `spec.repositoryDigestMirrors[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RepositoryDigestMirrors {
    pub source: String,
    #[serde(default)]
    pub mirrors: Vec<String>,
}

impl From<ImageContentSourcePolicySpec> for ImageDigestMirrorSetSpec {
    /// The same rules as an ImageDigestMirrorSet that lets the source be contacted.
    fn from(policy: ImageContentSourcePolicySpec) -> Self {
        ImageDigestMirrorSetSpec {
            image_digest_mirrors: (policy.repository_digest_mirrors.into_iter())
                .map(|r| ImageDigestMirrors {
                    source: r.source,
                    mirrors: r.mirrors,
                    mirror_source_policy: MirrorSourcePolicy::AllowContactingSource,
                })
                .collect(),
        }
    }
}

/// `mirrorSourcePolicy`: whether the source is tried after the mirrors (the default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum MirrorSourcePolicy {
    #[default]
    #[serde(rename = "AllowContactingSource", alias = "")]
    AllowContactingSource,
    NeverContactSource,
}

/// The merged rules: one per source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DigestMirrors {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    source: String,
    /// Tried in this order (the source itself may be one of them, where the sets put it).
    mirrors: Vec<String>,
    never_contact_source: bool,
}

/// Why a pull has nowhere to go.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MirrorError {
    #[error(
        "{reference}: the ImageDigestMirrorSet for {repository} says NeverContactSource, and its mirrors serve pulls by digest only: name the image by digest (@sha256:...)"
    )]
    SourceNeverContacted {
        reference: String,
        repository: String,
    },
}

impl DigestMirrors {
    /// The rules of these sets' specs, merged as the machine-config operator merges them.
    pub fn from_specs<'a>(specs: impl IntoIterator<Item = &'a ImageDigestMirrorSetSpec>) -> Self {
        let mut lists: BTreeMap<&str, Vec<&[String]>> = BTreeMap::new();
        let mut never: BTreeSet<&str> = BTreeSet::new();
        for entry in specs.into_iter().flat_map(|s| &s.image_digest_mirrors) {
            let source = entry.source.as_str();
            // No mirror, or only the source again: not a mirror rule.
            if !entry.mirrors.iter().any(|m| m != source) {
                continue;
            }
            if entry.mirror_source_policy == MirrorSourcePolicy::NeverContactSource {
                never.insert(source);
            }
            lists.entry(source).or_default().push(&entry.mirrors);
        }
        let rules = lists
            .into_iter()
            .map(|(source, lists)| Rule {
                source: source.to_string(),
                mirrors: merge_order(source, &lists),
                never_contact_source: never.contains(source),
            })
            .collect();
        DigestMirrors { rules }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The references to try for `reference`, in order: itself alone when no rule applies.
    pub fn pull_sources(&self, reference: &str) -> Result<Vec<String>, MirrorError> {
        let bare = reference.strip_prefix("docker://").unwrap_or(reference);
        let (name, digest) = match bare.split_once('@') {
            Some((name, digest)) => (without_tag(name), Some(digest)),
            None => (without_tag(bare), None),
        };
        let Some((rule, matched)) = self.rule_for(name) else {
            return Ok(vec![reference.to_string()]);
        };
        let Some(digest) = digest else {
            return match rule.never_contact_source {
                true => Err(MirrorError::SourceNeverContacted {
                    reference: reference.to_string(),
                    repository: rule.source.clone(),
                }),
                false => Ok(vec![reference.to_string()]),
            };
        };
        let mut sources: Vec<String> = Vec::new();
        for mirror in &rule.mirrors {
            let candidate = format!("{mirror}{}@{digest}", &name[matched..]);
            if !sources.contains(&candidate) {
                sources.push(candidate);
            }
        }
        let own = format!("{name}@{digest}");
        if !rule.never_contact_source && !sources.contains(&own) {
            sources.push(own);
        }
        Ok(sources)
    }

    /// The rule with the longest source matching repository `name`, and how many bytes of
    /// `name` it matched (the part a mirror replaces).
    fn rule_for(&self, name: &str) -> Option<(&Rule, usize)> {
        let host = name.split('/').next().unwrap_or(name);
        self.rules
            .iter()
            .filter_map(|rule| {
                let matched = match rule.source.strip_prefix('*') {
                    Some(suffix) => host.ends_with(suffix).then_some(host.len()),
                    None => (name == rule.source
                        || name
                            .strip_prefix(rule.source.as_str())
                            .is_some_and(|rest| rest.starts_with('/')))
                    .then_some(rule.source.len()),
                };
                matched.map(|m| (rule, m))
            })
            .max_by_key(|(rule, _)| rule.source.len())
    }
}

/// `repo[:tag]` without its tag (a `:` after the last `/`; a registry port comes before one).
fn without_tag(name: &str) -> &str {
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    match name[last_slash..].rfind(':') {
        Some(i) => &name[..last_slash + i],
        None => name,
    }
}

/// The mirrors of one source in an order consistent with every list (each list's consecutive
/// entries, and its last entry before the source when the list does not name the source): a
/// topological order, ties broken by first appearance. The source, when it comes last, is
/// left out (it is tried last anyway). Lists that contradict each other (a cycle) keep the
/// order of first appearance.
fn merge_order(source: &str, lists: &[&[String]]) -> Vec<String> {
    let mut nodes: Vec<&str> = Vec::new();
    let mut edges: BTreeSet<(&str, &str)> = BTreeSet::new();
    for list in lists {
        for name in list.iter() {
            if !nodes.contains(&name.as_str()) {
                nodes.push(name);
            }
        }
        for pair in list.windows(2) {
            if pair[0] != pair[1] {
                edges.insert((&pair[0], &pair[1]));
            }
        }
        if let Some(last) = list.last()
            && !list.iter().any(|m| m == source)
        {
            edges.insert((last, source));
        }
    }
    if !nodes.contains(&source) {
        nodes.push(source);
    }
    let mut order: Vec<&str> = Vec::new();
    let mut left = nodes.clone();
    while !left.is_empty() {
        let ready = left.iter().position(|n| {
            !edges
                .iter()
                .any(|(from, to)| to == n && left.contains(from))
        });
        match ready {
            Some(i) => order.push(left.remove(i)),
            None => {
                order = nodes;
                break;
            }
        }
    }
    if order.last() == Some(&source) {
        order.pop();
    }
    order.into_iter().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    fn entry(source: &str, mirrors: &[&str], never: bool) -> ImageDigestMirrors {
        ImageDigestMirrors {
            source: source.into(),
            mirrors: mirrors.iter().map(|m| m.to_string()).collect(),
            mirror_source_policy: match never {
                true => MirrorSourcePolicy::NeverContactSource,
                false => MirrorSourcePolicy::AllowContactingSource,
            },
        }
    }

    fn rules(sets: &[Vec<ImageDigestMirrors>]) -> DigestMirrors {
        let specs: Vec<ImageDigestMirrorSetSpec> = sets
            .iter()
            .map(|s| ImageDigestMirrorSetSpec {
                image_digest_mirrors: s.clone(),
            })
            .collect();
        DigestMirrors::from_specs(&specs)
    }

    #[test]
    fn mirrors_then_source_for_digests_the_source_alone_for_tags() {
        let m = rules(&[vec![entry(
            "quay.io/openshift-release-dev/ocp-release",
            &["mirror.local:5000/ocp/release", "backup.local/release"],
            false,
        )]]);
        let by_digest = format!("quay.io/openshift-release-dev/ocp-release@{D}");
        assert_eq!(
            m.pull_sources(&by_digest).unwrap(),
            [
                format!("mirror.local:5000/ocp/release@{D}"),
                format!("backup.local/release@{D}"),
                by_digest.clone(),
            ]
        );
        // A tag and digest together: the digest is pulled, the tag dropped.
        assert_eq!(
            m.pull_sources(&format!(
                "quay.io/openshift-release-dev/ocp-release:4.18.0@{D}"
            ))
            .unwrap()[0],
            format!("mirror.local:5000/ocp/release@{D}")
        );
        let by_tag = "quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64";
        assert_eq!(m.pull_sources(by_tag).unwrap(), [by_tag]);
        // Another repository, or one whose name only starts like the source: no rule.
        for other in [
            format!("quay.io/openshift-release-dev/ocp-v4.0-art-dev@{D}"),
            format!("quay.io/openshift-release-dev/ocp-release-nightly@{D}"),
        ] {
            assert_eq!(
                m.pull_sources(&other).unwrap(),
                std::slice::from_ref(&other)
            );
        }
    }

    #[test]
    fn the_longest_source_applies_and_the_matched_part_is_replaced() {
        let m = rules(&[vec![
            entry("quay.io", &["mirror.local/quay"], false),
            entry(
                "quay.io/openshift-release-dev",
                &["mirror.local/ocp"],
                false,
            ),
            entry("*.example.com", &["mirror.local/example"], false),
        ]]);
        assert_eq!(
            m.pull_sources(&format!("quay.io/openshift-release-dev/ocp-release@{D}"))
                .unwrap()[0],
            format!("mirror.local/ocp/ocp-release@{D}")
        );
        assert_eq!(
            m.pull_sources(&format!("quay.io/other/thing@{D}")).unwrap()[0],
            format!("mirror.local/quay/other/thing@{D}")
        );
        assert_eq!(
            m.pull_sources(&format!("registry.example.com/ns/repo@{D}"))
                .unwrap()[0],
            format!("mirror.local/example/ns/repo@{D}")
        );
        // The wildcard is for hosts under the domain, not the domain itself.
        let bare = format!("example.com/ns/repo@{D}");
        assert_eq!(m.pull_sources(&bare).unwrap(), std::slice::from_ref(&bare));
    }

    #[test]
    fn never_contact_source_leaves_the_mirrors_only() {
        let m = rules(&[vec![entry(
            "127.0.0.1:5000/openshift/release",
            &["127.0.0.1:6000/mirror"],
            true,
        )]]);
        assert_eq!(
            m.pull_sources(&format!("127.0.0.1:5000/openshift/release@{D}"))
                .unwrap(),
            [format!("127.0.0.1:6000/mirror@{D}")]
        );
        let e = m
            .pull_sources("127.0.0.1:5000/openshift/release:1.0.0")
            .unwrap_err();
        assert!(e.to_string().contains("NeverContactSource"), "{e}");
    }

    #[test]
    fn sets_merge_per_source_in_a_consistent_order() {
        // (B, C) and (A, B) give (A, B, C); one NeverContactSource wins.
        let m = rules(&[
            vec![entry("src.io/r", &["b.io/r", "c.io/r"], false)],
            vec![
                entry("src.io/r", &["a.io/r", "b.io/r"], true),
                // Only the source itself: no rule.
                entry("other.io/r", &["other.io/r"], true),
                entry("empty.io/r", &[], true),
            ],
        ]);
        assert_eq!(
            m.pull_sources(&format!("src.io/r@{D}")).unwrap(),
            [
                format!("a.io/r@{D}"),
                format!("b.io/r@{D}"),
                format!("c.io/r@{D}")
            ]
        );
        for unruled in ["other.io/r:t", "empty.io/r:t"] {
            assert_eq!(m.pull_sources(unruled).unwrap(), [unruled]);
        }
        // The source named before a mirror is tried there.
        let m = rules(&[vec![entry("src.io/r", &["src.io/r", "m.io/r"], false)]]);
        assert_eq!(
            m.pull_sources(&format!("src.io/r@{D}")).unwrap(),
            [format!("src.io/r@{D}"), format!("m.io/r@{D}")]
        );
        // Contradicting sets: first appearance.
        let m = rules(&[
            vec![entry("src.io/r", &["x.io/r", "y.io/r"], false)],
            vec![entry("src.io/r", &["y.io/r", "x.io/r"], false)],
        ]);
        assert_eq!(
            m.pull_sources(&format!("src.io/r@{D}")).unwrap(),
            [
                format!("x.io/r@{D}"),
                format!("y.io/r@{D}"),
                format!("src.io/r@{D}")
            ]
        );
        assert!(rules(&[]).is_empty());
    }

    #[test]
    fn specs_parse_as_the_api_writes_them() {
        let spec: ImageDigestMirrorSetSpec = serde_json::from_value(serde_json::json!({
            "imageDigestMirrors": [
                {"source": "quay.io/a", "mirrors": ["m.io/a"]},
                {"source": "quay.io/b", "mirrors": ["m.io/b"], "mirrorSourcePolicy": "NeverContactSource"},
                {"source": "quay.io/c", "mirrors": ["m.io/c"], "mirrorSourcePolicy": "AllowContactingSource"},
            ]
        }))
        .unwrap();
        assert_eq!(
            spec.image_digest_mirrors[1],
            entry("quay.io/b", &["m.io/b"], true)
        );
        assert_eq!(
            spec.image_digest_mirrors[2].mirror_source_policy,
            MirrorSourcePolicy::AllowContactingSource
        );
        // An ImageContentSourcePolicy: the same rules, the source contacted last; merged with
        // a set's rules for the same source.
        let policy: ImageContentSourcePolicySpec = serde_json::from_value(serde_json::json!({
            "repositoryDigestMirrors": [{"source": "quay.io/b", "mirrors": ["p.io/b", "m.io/b"]},
                                        {"source": "quay.io/d", "mirrors": ["p.io/d"]}]
        }))
        .unwrap();
        let m = DigestMirrors::from_specs(&[spec.clone(), policy.into()]);
        assert_eq!(
            m.pull_sources(&format!("quay.io/b@{D}")).unwrap(),
            [format!("p.io/b@{D}"), format!("m.io/b@{D}")],
            "NeverContactSource from the set still holds"
        );
        assert_eq!(
            m.pull_sources(&format!("quay.io/d/x@{D}")).unwrap(),
            [format!("p.io/d/x@{D}"), format!("quay.io/d/x@{D}")]
        );
        let bad = serde_json::from_value::<ImageDigestMirrorSetSpec>(serde_json::json!({
            "imageDigestMirrors": [{"source": "q", "mirrors": ["m"], "mirrorSourcePolicy": "Never"}]
        }));
        assert!(bad.is_err());
    }
}
