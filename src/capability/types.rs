//! The two name types: a capability and a capability set.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A capability name, e.g. `baremetal` or `Console`.
///
/// Any string is accepted: manifests, specs and CI files may name
/// capabilities this binary does not know, and upstream keeps them
/// (they end up in `Enabled` but never in `Known`).
///
/// `Ord` is the derived `String` order, i.e. byte order, which is what Go's
/// `sort.Strings` / `sets.List` produce (`Storage` < `baremetal`). Status
/// lists and condition messages rely on it.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct Capability(String);

impl Capability {
    /// Wraps a name without validation (see the type docs for why).
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// The exact name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Capability {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

impl From<String> for Capability {
    fn from(name: String) -> Self {
        Self(name)
    }
}

/// Lets `BTreeSet<Capability>` be queried with a plain `&str`; sound because
/// `Ord`/`Eq`/`Hash` are exactly those of the inner string.
impl Borrow<str> for Capability {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// `ClusterVersionCapabilitySet`: a named baseline an administrator can pick
/// in `spec.capabilities.baselineCapabilitySet`.
///
/// Variants are in upstream enum order (which is also byte order of the
/// names), so the derived `Ord` gives "older set < newer set".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CapabilitySet {
    /// No optional capability.
    #[serde(rename = "None")]
    None,
    /// `v4.11`.
    #[serde(rename = "v4.11")]
    V4_11,
    /// `v4.12`.
    #[serde(rename = "v4.12")]
    V4_12,
    /// `v4.13`.
    #[serde(rename = "v4.13")]
    V4_13,
    /// `v4.14`.
    #[serde(rename = "v4.14")]
    V4_14,
    /// `v4.15`.
    #[serde(rename = "v4.15")]
    V4_15,
    /// `v4.16`.
    #[serde(rename = "v4.16")]
    V4_16,
    /// `v4.17` (same members as `v4.16`).
    #[serde(rename = "v4.17")]
    V4_17,
    /// `v4.18`.
    #[serde(rename = "v4.18")]
    V4_18,
    /// `vCurrent`: every capability this binary knows; the default baseline.
    #[serde(rename = "vCurrent")]
    VCurrent,
}

/// All sets in enum order.
const ALL_SETS: [CapabilitySet; 10] = [
    CapabilitySet::None,
    CapabilitySet::V4_11,
    CapabilitySet::V4_12,
    CapabilitySet::V4_13,
    CapabilitySet::V4_14,
    CapabilitySet::V4_15,
    CapabilitySet::V4_16,
    CapabilitySet::V4_17,
    CapabilitySet::V4_18,
    CapabilitySet::VCurrent,
];

impl CapabilitySet {
    /// Every set, in upstream enum order (`None` first, `vCurrent` last).
    pub fn all() -> &'static [CapabilitySet] {
        &ALL_SETS
    }

    /// The exact upstream spelling, e.g. `v4.11`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "None",
            Self::V4_11 => "v4.11",
            Self::V4_12 => "v4.12",
            Self::V4_13 => "v4.13",
            Self::V4_14 => "v4.14",
            Self::V4_15 => "v4.15",
            Self::V4_16 => "v4.16",
            Self::V4_17 => "v4.17",
            Self::V4_18 => "v4.18",
            Self::VCurrent => "vCurrent",
        }
    }
}

impl fmt::Display for CapabilitySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A baseline name that is not one of [`CapabilitySet::all`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UnknownCapabilitySet {
    /// The rejected name, verbatim.
    pub name: String,
}

impl fmt::Display for UnknownCapabilitySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = ALL_SETS.iter().map(|s| s.as_str()).collect();
        write!(
            f,
            "unrecognized capability set {:?}{}; valid values are: {}",
            self.name,
            crate::suggest::did_you_mean(&self.name, &names),
            names.join(", ")
        )
    }
}

impl FromStr for CapabilitySet {
    type Err = UnknownCapabilitySet;

    /// Exact, case-sensitive match, like upstream's map lookup.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL_SETS
            .iter()
            .copied()
            .find(|set| set.as_str() == s)
            .ok_or_else(|| UnknownCapabilitySet { name: s.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn capability_orders_bytewise_like_go() {
        let mut caps: Vec<Capability> = ["baremetal", "Storage", "CSISnapshot", "Console"]
            .into_iter()
            .map(Capability::from)
            .collect();
        caps.sort();
        let got: Vec<&str> = caps.iter().map(Capability::as_str).collect();
        assert_eq!(got, ["CSISnapshot", "Console", "Storage", "baremetal"]);
    }

    #[test]
    fn capability_display_serde_and_borrow() {
        let c = Capability::new(String::from("openshift-samples"));
        assert_eq!(c.to_string(), "openshift-samples");
        assert_eq!(
            serde_json::to_string(&c).ok().as_deref(),
            Some("\"openshift-samples\"")
        );
        let back: Option<Capability> = serde_json::from_str("\"openshift-samples\"").ok();
        assert_eq!(back, Some(c.clone()));
        let set: BTreeSet<Capability> = [c].into_iter().collect();
        assert!(set.contains("openshift-samples"));
    }

    #[test]
    fn set_names_round_trip_in_enum_order() {
        let names: Vec<&str> = CapabilitySet::all().iter().map(|s| s.as_str()).collect();
        assert_eq!(
            names,
            [
                "None", "v4.11", "v4.12", "v4.13", "v4.14", "v4.15", "v4.16", "v4.17", "v4.18",
                "vCurrent"
            ]
        );
        for set in CapabilitySet::all() {
            assert_eq!(set.as_str().parse::<CapabilitySet>().ok(), Some(*set));
            assert_eq!(set.to_string(), set.as_str());
            let json = serde_json::to_string(set).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", set.as_str()));
            let back: Option<CapabilitySet> = serde_json::from_str(&json).ok();
            assert_eq!(back, Some(*set));
        }
    }

    #[test]
    fn set_order_is_enum_order_and_byte_order() {
        let all = CapabilitySet::all();
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        assert!(all.windows(2).all(|w| w[0].as_str() < w[1].as_str()));
    }

    #[test]
    fn unknown_set_error_lists_valid_names() {
        let cases = [
            ("vcurrent", " (did you mean vCurrent?)"),
            ("v4.19", " (did you mean v4.11?)"),
            ("", ""),
            ("none", " (did you mean None?)"),
            ("4.11", " (did you mean v4.11?)"),
            ("latest", ""),
        ];
        for (bad, near) in cases {
            let err = bad.parse::<CapabilitySet>().err();
            assert_eq!(
                err.map(|e| e.to_string()),
                Some(format!(
                    "unrecognized capability set {bad:?}{near}; valid values are: None, v4.11, \
                     v4.12, v4.13, v4.14, v4.15, v4.16, v4.17, v4.18, vCurrent"
                ))
            );
        }
    }
}
