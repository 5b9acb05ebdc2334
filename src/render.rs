//! Offline rendering: the documents a cluster configuration keeps, file by file, as the files
//! an installer drops into its manifests directory. Pure: the CLI writes the files.

use std::collections::BTreeMap;

use crate::explain::Summary;
use crate::include::InclusionConfig;
use crate::manifest::Manifest;
use crate::payload::Payload;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// The documents as written: comments and formatting kept; a file whose documents are all
    /// kept is copied byte for byte.
    #[default]
    Original,
    /// CVO-style: each document's raw JSON, joined by `\n---\n` (upstream `render`).
    Json,
}

/// One output file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedFile {
    pub name: String,
    pub contents: String,
    pub documents: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendering {
    pub files: Vec<RenderedFile>,
    pub summary: Summary,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "two payload files would both be written as manifests/{name}: {first} and {second}; rename one of them"
)]
pub struct RenderError {
    pub name: String,
    pub first: String,
    pub second: String,
}

/// Groups the kept documents by file, in load order.
pub fn render(
    payload: &Payload,
    config: &InclusionConfig,
    format: Format,
) -> Result<Rendering, RenderError> {
    let verdicts = payload.evaluate(config);
    let summary = Summary::of(verdicts.iter().map(|(_, v)| v));
    let mut by_file: Vec<(String, Vec<&Manifest>, usize)> = Vec::new();
    let mut seen: BTreeMap<&str, String> = BTreeMap::new();
    for (manifest, verdict) in &verdicts {
        let path = manifest.path();
        let new_file = by_file.last().is_none_or(|(p, _, _)| *p != path);
        if new_file {
            if let Some(first) = seen.insert(&manifest.file, path.clone()) {
                return Err(RenderError {
                    name: manifest.file.to_string(),
                    first,
                    second: path,
                });
            }
            by_file.push((path, Vec::new(), 0));
        }
        let entry = by_file.last_mut().expect("pushed above");
        entry.2 += 1;
        if verdict.is_ok() {
            entry.1.push(manifest);
        }
    }
    let files = by_file
        .into_iter()
        .filter(|(_, kept, _)| !kept.is_empty())
        .map(|(_, kept, total)| file_contents(&kept, total, format))
        .collect();
    Ok(Rendering { files, summary })
}

fn file_contents(kept: &[&Manifest], total_in_file: usize, format: Format) -> RenderedFile {
    let name = kept[0].file.to_string();
    let contents = match format {
        Format::Json => {
            let mut out = String::with_capacity(kept.iter().map(|m| m.raw.len() + 5).sum());
            for (i, m) in kept.iter().enumerate() {
                if i > 0 {
                    out.push_str("\n---\n");
                }
                // Raw is always UTF-8 (JSON written by us, or the bytes of a UTF-8 file).
                match std::str::from_utf8(&m.raw) {
                    Ok(text) => out.push_str(text),
                    Err(_) => out.push_str(&String::from_utf8_lossy(&m.raw)),
                }
            }
            out
        }
        Format::Original if kept.len() == total_in_file => kept[0].file_text().to_string(),
        Format::Original => join_documents(kept),
    };
    RenderedFile {
        name,
        contents,
        documents: kept.len(),
    }
}

fn join_documents(kept: &[&Manifest]) -> String {
    let mut out = String::new();
    for (i, manifest) in kept.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(manifest.original_text());
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::{InputFile, Layout, LoadOptions, PayloadInput};

    fn payload(files: &[(&str, &str)]) -> Payload {
        let release_manifests = files
            .iter()
            .map(|(name, text)| InputFile {
                name: name.to_string(),
                contents: Ok(text.as_bytes().to_vec()),
            })
            .collect();
        let input = PayloadInput {
            origin: "t".into(),
            layout: Layout::PlainDirectory,
            manifests: vec![],
            release_manifests,
            release_metadata: None,
            image_references: None,
        };
        Payload::from_input(input, &LoadOptions::default()).unwrap()
    }

    const KEEP: &str = "# keep me\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n";
    const DROP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  annotations: {}\n";

    fn smha() -> InclusionConfig {
        InclusionConfig {
            profile: Some("self-managed-high-availability".into()),
            ..Default::default()
        }
    }

    #[test]
    fn whole_files_are_copied_byte_for_byte() {
        let text = format!("---\n{KEEP}---\n{}", KEEP.replace("name: a", "name: c"));
        let r = render(
            &payload(&[("0000_10_x_a.yaml", &text)]),
            &smha(),
            Format::Original,
        )
        .unwrap();
        assert_eq!(r.files[0].contents, text);
        assert_eq!(r.files[0].documents, 2);
    }

    #[test]
    fn partly_kept_files_keep_their_documents_text() {
        let text = format!("{KEEP}---\n{DROP}");
        let r = render(
            &payload(&[("0000_10_x_a.yaml", &text), ("0000_10_x_b.yaml", DROP)]),
            &smha(),
            Format::Original,
        )
        .unwrap();
        assert_eq!(r.files.len(), 1, "a file with nothing kept is not written");
        assert_eq!(r.files[0].contents, KEEP);
        assert_eq!(r.summary.included, 1);
        assert_eq!(r.summary.excluded_by.get("profile"), Some(&2));
    }

    #[test]
    fn json_format_is_raw_json_joined_like_upstream() {
        let text = format!("{KEEP}---\n{}", KEEP.replace("name: a", "name: c"));
        let r = render(
            &payload(&[("0000_10_x_a.yaml", &text)]),
            &smha(),
            Format::Json,
        )
        .unwrap();
        let docs: Vec<&str> = r.files[0].contents.split("\n---\n").collect();
        assert_eq!(docs.len(), 2);
        assert!(docs[0].starts_with("{\"apiVersion\":\"v1\""));
    }
}
