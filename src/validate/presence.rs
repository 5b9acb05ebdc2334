//! In which cluster configurations each document is applied: the basis of every check about
//! documents that meet (the same resource twice, a namespace and its objects, a component and
//! its capability).
//!
//! A configuration is a (profile, feature set) pair, judged with the engine's own
//! [`include`] at load time. Feature gates are open-ended, so unless the user fixes them, two
//! documents meet when their `release.openshift.io/feature-gate` requirements can hold at once.

use std::collections::BTreeSet;

use rayon::prelude::*;

use super::{Doc, KNOWN_PROFILES, all_feature_sets};
use crate::include::{FEATURE_GATE_ANNOTATION, InclusionConfig, include};
use crate::manifest::Manifest;

/// The cluster configurations checks consider. [`Scope::all`] by default; the inclusion flags
/// narrow it (`--cluster-profile`, `--feature-set`, `--feature-gates`, `--exclude`...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub profiles: Vec<String>,
    /// `""` is the Default feature set.
    pub feature_sets: Vec<String>,
    pub exclude: Option<String>,
    /// `None`: any gates (documents meet when their gate requirements are compatible).
    pub feature_gates: Option<BTreeSet<String>>,
    /// `None`: the payload's own major version (none without release metadata).
    pub major_version: Option<u64>,
}

impl Scope {
    /// Every known profile and feature set, any feature gates, nothing excluded.
    pub fn all() -> Scope {
        Scope {
            profiles: KNOWN_PROFILES.iter().map(|p| p.to_string()).collect(),
            feature_sets: all_feature_sets(),
            exclude: None,
            feature_gates: None,
            major_version: None,
        }
    }
}

/// One configuration of the scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Config {
    pub profile: String,
    pub feature_set: String,
}

impl Config {
    pub fn describe(&self) -> String {
        let fs = if self.feature_set.is_empty() {
            "Default"
        } else {
            &self.feature_set
        };
        format!("profile {}, feature set {fs}", self.profile)
    }
}

/// A bit per configuration (at most 64, far more than profiles × feature sets).
pub(crate) type Mask = u64;

/// A gate requirement: the gate and whether it must be enabled.
type GateRequirement = (String, bool);

pub(crate) struct Presence {
    pub configs: Vec<Config>,
    /// Per document (same order as the docs), the configurations that apply it.
    pub masks: Vec<Mask>,
    /// Per document, its feature-gate requirements when gates are open.
    gates: Vec<Vec<GateRequirement>>,
}

impl Presence {
    pub fn compute(docs: &[Doc], scope: &Scope, major: Option<u64>) -> Presence {
        let configs: Vec<Config> = scope
            .profiles
            .iter()
            .flat_map(|p| {
                scope.feature_sets.iter().map(move |fs| Config {
                    profile: p.clone(),
                    feature_set: fs.clone(),
                })
            })
            .take(Mask::BITS as usize)
            .collect();
        let inclusion: Vec<InclusionConfig> = configs
            .iter()
            .map(|c| InclusionConfig {
                exclude_identifier: scope.exclude.clone(),
                required_feature_set: Some(c.feature_set.clone()),
                profile: Some(c.profile.clone()),
                enabled_feature_gates: scope.feature_gates.clone(),
                major_version: major,
                ..Default::default()
            })
            .collect();
        let masks = docs
            .par_iter()
            .map(|d| mask_of(&d.manifest, &inclusion))
            .collect();
        let gates = docs
            .iter()
            .map(|d| match scope.feature_gates {
                Some(_) => Vec::new(),
                None => gate_requirements(&d.manifest),
            })
            .collect();
        Presence {
            configs,
            masks,
            gates,
        }
    }

    /// The configurations that apply both documents (none when their gates conflict).
    pub fn together(&self, a: usize, b: usize) -> Mask {
        if gates_conflict(&self.gates[a], &self.gates[b]) {
            return 0;
        }
        self.masks[a] & self.masks[b]
    }

    pub fn is_present(&self, doc: usize, config: usize) -> bool {
        self.masks[doc] & (1 << config) != 0
    }

    /// The first configuration of a mask, for messages.
    pub fn first(&self, mask: Mask) -> Option<&Config> {
        (mask != 0).then(|| &self.configs[mask.trailing_zeros() as usize])
    }

    /// The distinct profiles of a mask, in scope order.
    pub fn profiles(&self, mask: Mask) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for (i, config) in self.configs.iter().enumerate() {
            if mask & (1 << i) != 0 && !out.contains(&config.profile.as_str()) {
                out.push(&config.profile);
            }
        }
        out
    }
}

fn mask_of(manifest: &Manifest, configs: &[InclusionConfig]) -> Mask {
    configs
        .iter()
        .enumerate()
        .filter(|(_, c)| include(manifest, c).is_ok())
        .fold(0, |mask, (i, _)| mask | (1 << i))
}

/// `release.openshift.io/feature-gate` as upstream reads it: trimmed, empty entries skipped,
/// `-Gate` means the gate must be off.
fn gate_requirements(manifest: &Manifest) -> Vec<GateRequirement> {
    let Some(value) = manifest.annotation(FEATURE_GATE_ANNOTATION) else {
        return Vec::new();
    };
    value
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| match r.strip_prefix('-') {
            Some(gate) => (gate.to_string(), false),
            None => (r.to_string(), true),
        })
        .collect()
}

fn gates_conflict(a: &[GateRequirement], b: &[GateRequirement]) -> bool {
    a.iter().any(|(gate, on)| {
        b.iter()
            .any(|(other, other_on)| gate == other && on != other_on)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::documents::tests::docs_of;

    const PROFILES: &str =
        "    include.release.openshift.io/self-managed-high-availability: \"true\"\n";

    fn doc(extra: &str) -> String {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n{PROFILES}{extra}"
        )
    }

    #[test]
    fn profiles_feature_sets_and_gates_decide_who_meets() {
        let docs = docs_of(&[
            ("0000_10_a_x.yaml", &doc("")),
            (
                "0000_10_a_y.yaml",
                &doc("    release.openshift.io/feature-set: TechPreviewNoUpgrade\n"),
            ),
            (
                "0000_10_a_z.yaml",
                &doc("    release.openshift.io/feature-gate: G\n"),
            ),
            (
                "0000_10_a_w.yaml",
                &doc("    release.openshift.io/feature-gate: -G\n"),
            ),
        ]);
        let presence = Presence::compute(&docs, &Scope::all(), Some(4));
        assert_eq!(presence.configs.len(), 20);
        // One profile, every feature set.
        assert_eq!(presence.masks[0].count_ones(), 5);
        assert_eq!(
            presence.profiles(presence.masks[0]),
            vec!["self-managed-high-availability"]
        );
        let both = presence.together(0, 1);
        assert_eq!(
            presence.first(both).unwrap().describe(),
            "profile self-managed-high-availability, feature set TechPreviewNoUpgrade"
        );
        assert_ne!(presence.together(0, 2), 0);
        assert_eq!(presence.together(2, 3), 0, "G and -G never meet");
        // With gates fixed, the engine decides.
        let fixed = Scope {
            feature_gates: Some(BTreeSet::new()),
            ..Scope::all()
        };
        let presence = Presence::compute(&docs, &fixed, Some(4));
        assert_eq!(presence.masks[2], 0);
        assert_ne!(presence.masks[3], 0);
    }
}
