//! What changed between two releases (`cvo payload info FROM TO`, as `oc adm release info A B`):
//! the images (changed, rebuilt, added, removed, as oc sorts them), the manifest files (added,
//! removed, changed: oc keeps these for its JSON only) and the capabilities the manifests and
//! the release metadata name.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::pullspec::digest_or_ref;
use super::references::{ANNOTATION_SOURCE_COMMIT, ANNOTATION_SOURCE_LOCATION, ImageStream};

/// One release, as the comparison sees it.
#[derive(Debug, Clone, Default)]
pub struct ReleaseView {
    /// The version, else the image-references name, else the source.
    pub name: String,
    pub digest: Option<String>,
    /// `os/arch`, for an image.
    pub platform: Option<String>,
    pub version: Option<String>,
    pub previous: Vec<String>,
    pub images: Option<ImageStream>,
    /// `manifests/FILE` and `release-manifests/FILE` → content.
    pub manifests: BTreeMap<String, Vec<u8>>,
    pub capabilities: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageChange {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The source of the change: a commit or compare URL, `<unknown>` without build labels.
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseDiff {
    pub from: Side,
    pub to: Side,
    pub identical: bool,
    /// Whether TO lists FROM's version among its `previous` (both have metadata).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_from: Option<bool>,
    /// A different image built from a different commit.
    pub images_changed: Vec<ImageChange>,
    /// A different image, same (or unknown) commit.
    pub images_rebuilt: Vec<ImageChange>,
    pub images_added: Vec<ImageChange>,
    pub images_removed: Vec<String>,
    pub manifests_added: Vec<String>,
    pub manifests_removed: Vec<String>,
    pub manifests_changed: Vec<String>,
    pub capabilities_added: Vec<String>,
    pub capabilities_removed: Vec<String>,
}

fn side(view: &ReleaseView) -> Side {
    Side {
        name: view.name.clone(),
        digest: view.digest.clone(),
        version: view.version.clone(),
        platform: view.platform.clone(),
    }
}

fn tag_images(view: &ReleaseView) -> BTreeMap<String, (String, BTreeMap<String, String>)> {
    view.images
        .iter()
        .flat_map(|s| s.spec.tags.iter())
        .filter_map(|t| {
            Some((
                t.name.clone(),
                (t.image()?.to_string(), t.annotations.clone()),
            ))
        })
        .collect()
}

pub fn compare(from: &ReleaseView, to: &ReleaseView) -> ReleaseDiff {
    let old = tag_images(from);
    let new = tag_images(to);
    let (mut changed, mut rebuilt, mut added, mut removed) = (vec![], vec![], vec![], vec![]);
    for (name, (image, annotations)) in &new {
        match old.get(name) {
            None => added.push(ImageChange {
                name: name.clone(),
                from: None,
                to: Some(image.clone()),
                source: repo_and_commit(annotations),
            }),
            Some((old_image, old_annotations)) if old_image != image => {
                let change = ImageChange {
                    name: name.clone(),
                    from: Some(old_image.clone()),
                    to: Some(image.clone()),
                    source: diff_or_commit(old_annotations, annotations),
                };
                if code_changed(old_annotations, annotations) {
                    changed.push(change);
                } else {
                    rebuilt.push(change);
                }
            }
            Some(_) => {}
        }
    }
    for name in old.keys() {
        if !new.contains_key(name) {
            removed.push(name.clone());
        }
    }
    let files = |a: &ReleaseView, b: &ReleaseView| -> Vec<String> {
        a.manifests
            .keys()
            .filter(|k| !b.manifests.contains_key(*k))
            .cloned()
            .collect()
    };
    let manifests_changed = from
        .manifests
        .iter()
        .filter(|(k, v)| to.manifests.get(*k).is_some_and(|w| w != *v))
        .map(|(k, _)| k.clone())
        .collect();
    let identical = match (&from.digest, &to.digest) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    };
    ReleaseDiff {
        from: side(from),
        to: side(to),
        identical,
        upgrade_from: match (&from.version, &to.version) {
            (Some(v), Some(_)) => Some(to.previous.contains(v)),
            _ => None,
        },
        images_changed: changed,
        images_rebuilt: rebuilt,
        images_added: added,
        images_removed: removed,
        manifests_added: files(to, from),
        manifests_removed: files(from, to),
        manifests_changed,
        capabilities_added: to
            .capabilities
            .difference(&from.capabilities)
            .cloned()
            .collect(),
        capabilities_removed: from
            .capabilities
            .difference(&to.capabilities)
            .cloned()
            .collect(),
    }
}

fn code_changed(from: &BTreeMap<String, String>, to: &BTreeMap<String, String>) -> bool {
    let (a, b) = (
        from.get(ANNOTATION_SOURCE_COMMIT)
            .map_or("", String::as_str),
        to.get(ANNOTATION_SOURCE_COMMIT).map_or("", String::as_str),
    );
    !a.is_empty() && !b.is_empty() && a != b
}

/// oc's `repoAndCommit`.
pub fn repo_and_commit(annotations: &BTreeMap<String, String>) -> String {
    let repo = annotations
        .get(ANNOTATION_SOURCE_LOCATION)
        .map_or("", String::as_str);
    let commit = annotations
        .get(ANNOTATION_SOURCE_COMMIT)
        .map_or("", String::as_str);
    if repo.is_empty() || commit.is_empty() {
        return "<unknown>".to_string();
    }
    url_for_commit(repo, commit)
}

/// oc's `gitDiffOrCommit`.
fn diff_or_commit(from: &BTreeMap<String, String>, to: &BTreeMap<String, String>) -> String {
    let get = |m: &BTreeMap<String, String>, k: &str| m.get(k).cloned().unwrap_or_default();
    let (old_repo, new_repo) = (
        get(from, ANNOTATION_SOURCE_LOCATION),
        get(to, ANNOTATION_SOURCE_LOCATION),
    );
    let (old_commit, new_commit) = (
        get(from, ANNOTATION_SOURCE_COMMIT),
        get(to, ANNOTATION_SOURCE_COMMIT),
    );
    if new_repo.is_empty() || new_commit.is_empty() {
        return "<unknown>".to_string();
    }
    if old_repo == new_repo {
        if old_commit == new_commit {
            return url_for_commit(&new_repo, &new_commit);
        }
        return url_for_range(&new_repo, &old_commit, &new_commit);
    }
    if old_commit.is_empty() {
        return format!(
            "{old_repo} <unknown> -> {}",
            url_for_commit(&new_repo, &new_commit)
        );
    }
    if old_commit == new_commit {
        return format!("{old_repo} -> {}", url_for_commit(&new_repo, &new_commit));
    }
    format!(
        "{} -> {}",
        url_for_commit(&old_repo, &old_commit),
        url_for_commit(&new_repo, &new_commit)
    )
}

fn github(repo: &str) -> Option<&str> {
    repo.strip_prefix("https://github.com/")
        .map(|p| p.trim_end_matches('/'))
}

fn url_for_commit(repo: &str, commit: &str) -> String {
    match github(repo) {
        Some(path) => format!("https://github.com/{path}/commit/{commit}"),
        None => format!("{repo} {commit}"),
    }
}

fn url_for_range(repo: &str, from: &str, to: &str) -> String {
    match github(repo) {
        Some(path) => format!("https://github.com/{path}/compare/{from}...{to}"),
        None => format!("{repo} {from} {to}"),
    }
}

/// Left-aligned columns `padding` spaces apart, the last column not padded (a `tabwriter` of
/// one section).
pub fn columns(rows: &[Vec<String>], padding: usize) -> Vec<String> {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; width];
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    let pad = widths[i] + padding - cell.chars().count();
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

/// The comparison as oc prints it, with the manifest and capability sections `cvo` adds.
/// `commits` shows each image's source change instead of its digests.
pub fn text(diff: &ReleaseDiff, commits: bool) -> String {
    if diff.identical {
        return "Releases are identical\n".to_string();
    }
    let mut out = Vec::new();
    let mut head = vec![
        vec![String::new(), "FROM".into(), "TO".into()],
        vec!["Name:".into(), diff.from.name.clone(), diff.to.name.clone()],
    ];
    if let (Some(a), Some(b)) = (&diff.from.platform, &diff.to.platform)
        && a != b
    {
        head.push(vec!["OS/Arch:".into(), a.clone(), b.clone()]);
    }
    out.extend(columns(&head, 2));
    match (&diff.from.version, &diff.to.version) {
        (Some(a), Some(b)) => {
            out.push(String::new());
            let yes = if diff.upgrade_from == Some(true) {
                "Yes"
            } else {
                "No"
            };
            out.extend(columns(
                &[
                    vec!["Version:".into(), a.clone(), b.clone()],
                    vec!["Upgrade From:".into(), String::new(), yes.into()],
                ],
                2,
            ));
        }
        (Some(_), None) => out.push("Has Release Metadata:  Yes".into()),
        (None, Some(_)) => out.push("Has Release Metadata:        Yes".into()),
        (None, None) => {}
    }
    let width = diff
        .images_changed
        .iter()
        .chain(&diff.images_rebuilt)
        .chain(&diff.images_added)
        .map(|c| c.name.len())
        .chain(diff.images_removed.iter().map(String::len))
        .max()
        .unwrap_or(0);
    let name = |n: &str| format!("  {n:<width$}");
    let changes = |title: &str, list: &[ImageChange], out: &mut Vec<String>| {
        if list.is_empty() {
            return;
        }
        out.push(String::new());
        out.push(format!("{title}:"));
        let rows: Vec<Vec<String>> = list
            .iter()
            .map(|c| {
                if commits {
                    vec![name(&c.name), c.source.clone()]
                } else {
                    let mut row = vec![name(&c.name)];
                    row.extend(c.from.as_deref().map(digest_or_ref));
                    row.extend(c.to.as_deref().map(digest_or_ref));
                    row
                }
            })
            .collect();
        out.extend(columns(&rows, 1));
    };
    changes("Images Changed", &diff.images_changed, &mut out);
    changes("Images Rebuilt", &diff.images_rebuilt, &mut out);
    changes("Images Added", &diff.images_added, &mut out);
    if !diff.images_removed.is_empty() {
        out.push(String::new());
        out.push("Images Removed:".into());
        out.extend(
            diff.images_removed
                .iter()
                .map(|n| name(n).trim_end().to_string()),
        );
    }
    let list = |title: &str, items: &[String], out: &mut Vec<String>| {
        if items.is_empty() {
            return;
        }
        out.push(String::new());
        out.push(format!("{title}:"));
        out.extend(items.iter().map(|i| format!("  {i}")));
    };
    list("Manifests Added", &diff.manifests_added, &mut out);
    list("Manifests Removed", &diff.manifests_removed, &mut out);
    list("Manifests Changed", &diff.manifests_changed, &mut out);
    list("Capabilities Added", &diff.capabilities_added, &mut out);
    list("Capabilities Removed", &diff.capabilities_removed, &mut out);
    out.push(String::new());
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(tags: &[(&str, &str, &str)]) -> ImageStream {
        let tags: Vec<String> = tags
            .iter()
            .map(|(name, image, commit)| {
                format!(
                    r#"{{"name":"{name}","annotations":{{"io.openshift.build.commit.id":"{commit}","io.openshift.build.source-location":"https://github.com/openshift/{name}"}},"from":{{"kind":"DockerImage","name":"{image}"}}}}"#
                )
            })
            .collect();
        let text = format!(
            r#"{{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{{"name":"x"}},"spec":{{"tags":[{}]}}}}"#,
            tags.join(",")
        );
        ImageStream::parse(text.as_bytes()).unwrap()
    }

    fn d(c: char) -> String {
        format!("r.io/x@sha256:{}", c.to_string().repeat(64))
    }

    fn view(version: &str, previous: &[&str], tags: &[(&str, &str, &str)]) -> ReleaseView {
        ReleaseView {
            name: version.into(),
            version: Some(version.into()),
            previous: previous.iter().map(|s| s.to_string()).collect(),
            images: Some(stream(tags)),
            ..ReleaseView::default()
        }
    }

    #[test]
    fn images_are_sorted_into_changed_rebuilt_added_removed() {
        let (a, b, c, e) = (d('a'), d('b'), d('c'), d('e'));
        let mut from = view(
            "4.17.0",
            &[],
            &[("etcd", &a, "c1"), ("console", &b, "c2"), ("old", &c, "c3")],
        );
        let mut to = view(
            "4.18.0",
            &["4.17.0"],
            &[("etcd", &e, "c9"), ("console", &c, "c2"), ("new", &a, "c4")],
        );
        from.manifests = [
            ("release-manifests/a.yaml".to_string(), b"a".to_vec()),
            ("release-manifests/b.yaml".to_string(), b"b".to_vec()),
        ]
        .into();
        to.manifests = [
            ("release-manifests/b.yaml".to_string(), b"B".to_vec()),
            ("release-manifests/c.yaml".to_string(), b"c".to_vec()),
        ]
        .into();
        from.capabilities = ["Console".to_string()].into();
        to.capabilities = ["Console".to_string(), "EdgeAgent".to_string()].into();
        let diff = compare(&from, &to);
        assert_eq!(diff.images_changed.len(), 1);
        assert_eq!(diff.images_changed[0].name, "etcd");
        assert_eq!(
            diff.images_changed[0].source,
            "https://github.com/openshift/etcd/compare/c1...c9"
        );
        assert_eq!(diff.images_rebuilt[0].name, "console");
        assert_eq!(
            diff.images_rebuilt[0].source,
            "https://github.com/openshift/console/commit/c2"
        );
        assert_eq!(diff.images_added[0].name, "new");
        assert_eq!(diff.images_removed, ["old"]);
        assert_eq!(diff.manifests_added, ["release-manifests/c.yaml"]);
        assert_eq!(diff.manifests_removed, ["release-manifests/a.yaml"]);
        assert_eq!(diff.manifests_changed, ["release-manifests/b.yaml"]);
        assert_eq!(diff.capabilities_added, ["EdgeAgent"]);
        assert!(diff.capabilities_removed.is_empty());
        assert_eq!(diff.upgrade_from, Some(true));

        let text = text(&diff, false);
        let expected = format!(
            "       FROM    TO
Name:  4.17.0  4.18.0

Version:       4.17.0  4.18.0
Upgrade From:          Yes

Images Changed:
  etcd    sha256:{a} sha256:{e}

Images Rebuilt:
  console sha256:{b} sha256:{c}

Images Added:
  new     sha256:{a}

Images Removed:
  old

Manifests Added:
  release-manifests/c.yaml

Manifests Removed:
  release-manifests/a.yaml

Manifests Changed:
  release-manifests/b.yaml

Capabilities Added:
  EdgeAgent

",
            a = "a".repeat(64),
            b = "b".repeat(64),
            c = "c".repeat(64),
            e = "e".repeat(64)
        );
        assert_eq!(text, expected);
        let with_commits = super::text(&diff, true);
        assert!(
            with_commits.contains("  etcd    https://github.com/openshift/etcd/compare/c1...c9\n"),
            "{with_commits}"
        );
    }

    #[test]
    fn the_same_digest_is_identical() {
        let mut a = view("4.18.0", &[], &[]);
        a.digest = Some("sha256:1".into());
        assert_eq!(text(&compare(&a, &a), false), "Releases are identical\n");
    }

    #[test]
    fn commit_sources() {
        let m = |repo: &str, commit: &str| -> BTreeMap<String, String> {
            [
                (ANNOTATION_SOURCE_LOCATION.to_string(), repo.to_string()),
                (ANNOTATION_SOURCE_COMMIT.to_string(), commit.to_string()),
            ]
            .into()
        };
        assert_eq!(
            diff_or_commit(
                &m("https://git.example/a", "1"),
                &m("https://git.example/b", "2")
            ),
            "https://git.example/a 1 -> https://git.example/b 2"
        );
        assert_eq!(
            diff_or_commit(
                &m("https://git.example/a", ""),
                &m("https://git.example/b", "2")
            ),
            "https://git.example/a <unknown> -> https://git.example/b 2"
        );
        assert_eq!(diff_or_commit(&m("", ""), &m("", "")), "<unknown>");
        assert_eq!(repo_and_commit(&BTreeMap::new()), "<unknown>");
    }
}
