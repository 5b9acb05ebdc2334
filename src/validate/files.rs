//! Checks on the directory listing and on file names: what the CVO never reads, and names the
//! task graph cannot place.

use super::{Code, Finding, Listed, ListedIn, relative_path};
use crate::graph::parse_run_level;
use crate::manifest::ManifestDir;
use crate::payload::{IMAGE_REFERENCES, Layout, RELEASE_METADATA, is_manifest_file_name};

/// Entries of the listing that the CVO skips.
pub(crate) fn check_listing(layout: Layout, listing: &[Listed]) -> Vec<Finding> {
    listing
        .iter()
        .filter_map(|entry| match entry.location {
            ListedIn::Dir(dir) => in_manifest_dir(layout, dir, entry),
            ListedIn::Root => at_payload_root(entry),
        })
        .collect()
}

fn in_manifest_dir(layout: Layout, dir: ManifestDir, entry: &Listed) -> Option<Finding> {
    let path = relative_path(layout, dir, &entry.name);
    let shown_dir = match layout {
        Layout::PlainDirectory => "the payload directory".to_string(),
        Layout::PayloadRoot => format!("{dir}/"),
    };
    if entry.is_dir {
        return Some(
            Finding::new(
                Code::IgnoredDirectory,
                path,
                format!(
                    "the CVO does not read subdirectories of {shown_dir}: nothing in {}/ is part of the payload",
                    entry.name
                ),
            )
            .help(format!(
                "move the manifests it holds up into {shown_dir}, or remove the directory"
            )),
        );
    }
    if is_manifest_file_name(&entry.name) || is_metadata_file(layout, dir, &entry.name) {
        return None;
    }
    Some(
        Finding::new(
            Code::IgnoredFile,
            path,
            "the CVO never reads this file: it reads only names ending in .yaml, .yml or .json (case-sensitive)",
        )
        .help(rename_help(&entry.name)),
    )
}

/// `release-metadata` and `image-references` belong in `release-manifests/`; `manifests/`
/// carries its own `image-references` too (spec §1.1), which the CVO also skips.
fn is_metadata_file(layout: Layout, dir: ManifestDir, name: &str) -> bool {
    layout == Layout::PayloadRoot
        && (name == IMAGE_REFERENCES
            || (name == RELEASE_METADATA && dir == ManifestDir::ReleaseManifests))
}

fn rename_help(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    match [".yaml", ".yml", ".json"]
        .iter()
        .find(|ext| lower.ends_with(*ext))
    {
        Some(ext) => format!(
            "rename it to {}{ext} if it is a manifest",
            &name[..name.len() - ext.len()]
        ),
        None => "give it a .yaml, .yml or .json extension if it is a manifest, or remove it from the payload".to_string(),
    }
}

/// A manifest file left at the root of a payload (beside `manifests/` and
/// `release-manifests/`) is a likely mistake; other root files (READMEs) are not.
fn at_payload_root(entry: &Listed) -> Option<Finding> {
    (!entry.is_dir && is_manifest_file_name(&entry.name)).then(|| {
        Finding::new(
            Code::IgnoredFile,
            entry.name.clone(),
            "the CVO never reads files at the payload root: it reads only manifests/ and release-manifests/",
        )
        .help("move it into release-manifests/ (or manifests/ for the CVO's own manifests)")
    })
}

/// `0000_<runlevel>_<component>_<name>.<ext>`, or the task graph cannot place the file.
pub(crate) fn check_name(name: &str, path: &str) -> Option<Finding> {
    if parse_run_level(name).is_some() {
        return None;
    }
    Some(
        Finding::new(
            Code::FileName,
            path,
            format!(
                "Unable to parse run level and component for {}: the file does not follow 0000_<runlevel>_<component>_<name>.<ext>, so the task graph runs it as a serial barrier",
                crate::manifest::go_quote(name)
            ),
        )
        .help("rename it like 0000_50_my-operator_01_deployment.yaml: a run level, then a dash-separated component, each followed by `_`"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(location: ListedIn, name: &str, is_dir: bool) -> Listed {
        Listed {
            location,
            name: name.into(),
            is_dir,
        }
    }

    const RM: ListedIn = ListedIn::Dir(ManifestDir::ReleaseManifests);
    const M: ListedIn = ListedIn::Dir(ManifestDir::Manifests);

    #[test]
    fn unread_entries_of_a_payload_root() {
        let listing = [
            listed(RM, "0000_10_a_x.yaml", false),
            listed(RM, "0000_10_a_y.YAML", false),
            listed(RM, "notes.txt", false),
            listed(RM, "old", true),
            listed(RM, RELEASE_METADATA, false),
            listed(RM, IMAGE_REFERENCES, false),
            listed(M, IMAGE_REFERENCES, false),
            listed(M, RELEASE_METADATA, false),
            listed(ListedIn::Root, "README.md", false),
            listed(ListedIn::Root, "0000_10_a_z.yaml", false),
            listed(ListedIn::Root, "docs", true),
        ];
        let found: Vec<(Code, String)> = check_listing(Layout::PayloadRoot, &listing)
            .into_iter()
            .map(|f| (f.code, f.file))
            .collect();
        assert_eq!(
            found,
            vec![
                (
                    Code::IgnoredFile,
                    "release-manifests/0000_10_a_y.YAML".into()
                ),
                (Code::IgnoredFile, "release-manifests/notes.txt".into()),
                (Code::IgnoredDirectory, "release-manifests/old".into()),
                (Code::IgnoredFile, "manifests/release-metadata".into()),
                (Code::IgnoredFile, "0000_10_a_z.yaml".into()),
            ]
        );
        let upper = &check_listing(Layout::PayloadRoot, &listing[1..2])[0];
        assert_eq!(
            upper.help.as_deref(),
            Some("rename it to 0000_10_a_y.yaml if it is a manifest")
        );
    }

    #[test]
    fn a_plain_directory_has_no_metadata_files() {
        let listing = [listed(RM, IMAGE_REFERENCES, false), listed(RM, "sub", true)];
        let found = check_listing(Layout::PlainDirectory, &listing);
        assert_eq!(found[0].file, IMAGE_REFERENCES);
        assert_eq!(found[0].code, Code::IgnoredFile);
        assert!(
            found[1]
                .message
                .contains("subdirectories of the payload directory")
        );
    }

    #[test]
    fn file_names() {
        assert_eq!(check_name("0000_50_olm_00-namespace.yaml", "p"), None);
        let f = check_name(
            "50_olm_namespace.yaml",
            "release-manifests/50_olm_namespace.yaml",
        )
        .unwrap();
        assert_eq!(f.code, Code::FileName);
        assert!(
            f.message.starts_with(
                r#"Unable to parse run level and component for "50_olm_namespace.yaml""#
            ),
            "{}",
            f.message
        );
        assert!(check_name("0000_50_olm.yaml", "p").is_some());
        assert!(check_name("0000_50__x.yaml", "p").is_some());
    }
}
