//! Why each document of a payload is or is not managed under a cluster configuration.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::include::{Exclusion, InclusionConfig};
use crate::manifest::{Manifest, ManifestDir};
use crate::payload::Payload;

/// One document and its verdict; the `-o json` row of `cvo explain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub file: String,
    pub dir: ManifestDir,
    pub index: usize,
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub capabilities: Vec<String>,
    pub included: bool,
    /// The exact upstream exclusion message.
    pub reason: Option<String>,
}

impl Explanation {
    fn new(manifest: &Manifest, verdict: &Result<(), Exclusion>) -> Self {
        Explanation {
            file: manifest.file.to_string(),
            dir: manifest.dir,
            index: manifest.index,
            api_version: manifest.gvk.api_version(),
            kind: manifest.id.kind.clone(),
            namespace: manifest.id.namespace.clone(),
            name: manifest.id.name.clone(),
            capabilities: manifest
                .capabilities()
                .unwrap_or_default()
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            included: verdict.is_ok(),
            reason: verdict.as_ref().err().map(ToString::to_string),
        }
    }

    /// Whether the user asked about this document: by name, file name or `kind/name`.
    pub fn matches(&self, query: &str) -> bool {
        query == self.name
            || query == self.file
            || query.eq_ignore_ascii_case(&format!("{}/{}", self.kind, self.name))
    }
}

/// Counts of a verdict list: how many are kept and why the others are not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub documents: usize,
    pub included: usize,
    pub excluded_by: BTreeMap<&'static str, usize>,
}

impl Summary {
    pub fn of<'a>(verdicts: impl IntoIterator<Item = &'a Result<(), Exclusion>>) -> Self {
        let mut summary = Summary::default();
        for verdict in verdicts {
            summary.documents += 1;
            match verdict {
                Ok(()) => summary.included += 1,
                Err(e) => *summary.excluded_by.entry(e.category()).or_default() += 1,
            }
        }
        summary
    }

    pub fn excluded(&self) -> usize {
        self.documents - self.included
    }
}

/// Every document of the payload with its verdict, in load order.
pub fn explain(payload: &Payload, config: &InclusionConfig) -> Vec<Explanation> {
    payload
        .evaluate(config)
        .iter()
        .map(|(m, v)| Explanation::new(m, v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_counts_by_category() {
        let verdicts = [
            Ok(()),
            Err(Exclusion::NoAnnotations),
            Err(Exclusion::Overridden),
            Err(Exclusion::NoAnnotations),
        ];
        let summary = Summary::of(&verdicts);
        assert_eq!(summary.documents, 4);
        assert_eq!(summary.included, 1);
        assert_eq!(summary.excluded(), 3);
        assert_eq!(summary.excluded_by.get("no-annotations"), Some(&2));
    }
}
