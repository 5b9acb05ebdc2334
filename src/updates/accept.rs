//! `cvo upgrade accept`: which conditional update risks the cluster accepts
//! (`spec.desiredUpdate.acceptRisks`), as `oc adm upgrade accept` manages them
//! (`openshift/oc` `pkg/cli/admin/upgrade/accept`): `A,B` adds, `C-` removes, `--replace`
//! replaces the list, `--clear` empties it. Pure: the ClusterVersion and the request in, the
//! list to write and the texts out; `src/cli/upgrade.rs` reads and patches the cluster.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::cluster::ClusterVersion;

/// What `cvo upgrade accept` was asked, checked (oc's `Complete`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AcceptRequest {
    /// Risks to accept.
    pub add: BTreeSet<String>,
    /// Risks to stop accepting (`NAME-`).
    pub remove: BTreeSet<String>,
    /// Replace the accepted risks with `add`.
    pub replace: bool,
    /// Accept no risk.
    pub clear: bool,
}

/// The longest risk name the API takes.
const MAX_NAME: usize = 256;

/// oc's checks of the arguments: `--clear` alone, else one comma-separated list whose entries
/// are names (accepted) or `NAME-` (removed); not both for one name; no `-` with `--replace`.
/// A name is also checked against the API's limits (1 to 256 characters) and for spaces, which
/// no risk name has.
pub fn parse(risks: Option<&str>, replace: bool, clear: bool) -> Result<AcceptRequest, String> {
    if clear && replace {
        return Err("--clear and --replace are mutually exclusive".into());
    }
    let mut request = AcceptRequest {
        replace,
        clear,
        ..AcceptRequest::default()
    };
    let Some(risks) = risks else {
        return if clear {
            Ok(request)
        } else {
            Err("no positional arguments given: name the risks to accept (RISK[,RISK...]; RISK- stops accepting one), or pass --clear".into())
        };
    };
    if clear {
        return Err(format!(
            "--clear takes no risks (given {risks:?}): it stops accepting every risk"
        ));
    }
    for entry in risks.split(',') {
        let trimmed = entry.trim();
        if trimmed == "-" || trimmed.is_empty() {
            return Err(format!("illegal risk {trimmed:?}"));
        }
        let (name, set) = match trimmed.strip_suffix('-') {
            Some(name) => (name, &mut request.remove),
            None => (trimmed, &mut request.add),
        };
        if name.chars().any(char::is_whitespace) || name.chars().count() > MAX_NAME {
            return Err(format!(
                "illegal risk {trimmed:?}: a risk name is 1 to {MAX_NAME} characters without spaces (e.g. ConsoleBreaks)"
            ));
        }
        set.insert(name.to_string());
    }
    let both: Vec<&str> = (request.add.intersection(&request.remove))
        .map(String::as_str)
        .collect();
    if !both.is_empty() {
        return Err(format!(
            "requested risks with both Risk and Risk-: {}",
            both.join(",")
        ));
    }
    if replace && !request.remove.is_empty() {
        return Err("The suffix '-' on risks is not allowed if --replace is specified".into());
    }
    Ok(request)
}

/// oc's `getAcceptRisks`: the list to write. The existing ones keep their order (those removed
/// left out, none with `--replace` or `--clear`); new ones follow, sorted.
pub fn accept_risks(existing: &[String], request: &AcceptRequest) -> Vec<String> {
    if request.clear {
        return Vec::new();
    }
    let mut accepted: Vec<String> = if request.replace {
        Vec::new()
    } else {
        (existing.iter())
            .filter(|name| !request.remove.contains(*name))
            .cloned()
            .collect()
    };
    for name in &request.add {
        if !accepted.contains(name) {
            accepted.push(name.clone());
        }
    }
    accepted
}

/// What `cvo upgrade accept` does.
#[derive(Debug, Clone, PartialEq)]
pub enum AcceptDecision {
    /// The list is what it was: `info: Accept risks are not changed`.
    Unchanged { out: String, err: String },
    /// Merge-patch `spec.desiredUpdate.acceptRisks` with `accept_risks` (`null`: none), then
    /// print `out`.
    Patch {
        accept_risks: Value,
        out: String,
        err: String,
    },
}

/// The decision for `request` on `cv`. A risk to accept that no conditional update of the
/// cluster has is accepted all the same (the list may name risks of later updates, as the API
/// says), with a warning that names the near miss.
pub fn decide(cv: &ClusterVersion, request: &AcceptRequest) -> AcceptDecision {
    let existing: Vec<String> = (cv.spec.desired_update.iter())
        .flat_map(|u| u.accept_risks.iter().map(|r| r.name.clone()))
        .collect();
    let accepted = accept_risks(&existing, request);
    let err = unknown_risks(cv, &request.add);
    if accepted == existing {
        return AcceptDecision::Unchanged {
            out: "info: Accept risks are not changed\n".into(),
            err,
        };
    }
    let list = if accepted.is_empty() {
        Value::Null
    } else {
        accepted.iter().map(|name| json!({"name": name})).collect()
    };
    AcceptDecision::Patch {
        accept_risks: list,
        out: format!("info: Accept risks are [{}]\n", accepted.join(", ")),
        err,
    }
}

/// The names of the cluster's conditional update risks (`status.conditionalUpdateRisks`, and
/// those of each conditional update).
pub fn known_risks(cv: &ClusterVersion) -> Vec<&str> {
    let Some(status) = cv.status.as_ref() else {
        return Vec::new();
    };
    let mut names: Vec<&str> = (status.conditional_update_risks.iter())
        .map(|r| r.name.as_str())
        .chain(
            (status.conditional_updates.iter())
                .flat_map(|u| u.risks.iter().map(|r| r.name.as_str())),
        )
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// A warning for each name no conditional update of the cluster has.
fn unknown_risks(cv: &ClusterVersion, names: &BTreeSet<String>) -> String {
    let known = known_risks(cv);
    let mut err = String::new();
    for name in names.iter().filter(|n| !known.contains(&n.as_str())) {
        let hint = crate::suggest::did_you_mean(name, &known);
        err.push_str(&format!(
            "warning: no conditional update of this cluster has a risk named {name}{hint}; it is accepted for the updates that will have it\n"
        ));
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{
        AcceptRisk, ClusterVersionSpec, ClusterVersionStatus, ConditionalUpdateRisk, Update,
    };

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_are_checked_as_oc_checks_them() {
        let err = |risks: Option<&str>, replace, clear| parse(risks, replace, clear).unwrap_err();
        assert_eq!(
            err(None, true, true),
            "--clear and --replace are mutually exclusive"
        );
        assert!(err(None, false, false).starts_with("no positional arguments given"));
        assert!(err(Some("A"), false, true).starts_with("--clear takes no risks"));
        assert_eq!(err(Some("A,,B"), false, false), "illegal risk \"\"");
        assert_eq!(err(Some("A, - "), false, false), "illegal risk \"-\"");
        assert_eq!(
            err(Some("A,B,A-"), false, false),
            "requested risks with both Risk and Risk-: A"
        );
        assert_eq!(
            err(Some("A,B-"), true, false),
            "The suffix '-' on risks is not allowed if --replace is specified"
        );
        assert!(err(Some("Two words"), false, false).contains("without spaces"));
        let ok = parse(Some("RiskA, RiskB,RiskC-"), false, false).unwrap();
        assert_eq!(ok.add, ["RiskA", "RiskB"].map(String::from).into());
        assert_eq!(ok.remove, ["RiskC"].map(String::from).into());
        assert!(parse(None, false, true).unwrap().clear);
    }

    #[test]
    fn the_list_follows_ocs_rules() {
        let existing = names(&["B", "C", "A"]);
        let request = |risks: &str, replace| parse(Some(risks), replace, false).unwrap();
        assert_eq!(
            accept_risks(&existing, &request("D,C-,A", false)),
            names(&["B", "A", "D"])
        );
        assert_eq!(
            accept_risks(&existing, &request("E,D", true)),
            names(&["D", "E"])
        );
        assert!(accept_risks(&existing, &parse(None, false, true).unwrap()).is_empty());
        assert_eq!(
            accept_risks(&existing, &request("Z-", false)),
            names(&["B", "C", "A"])
        );
    }

    fn cluster(accepted: &[&str], known: &[&str]) -> ClusterVersion {
        let mut cv = ClusterVersion::new(
            "version",
            ClusterVersionSpec {
                desired_update: (!accepted.is_empty()).then(|| Update {
                    version: Some("4.18.1".into()),
                    accept_risks: (accepted.iter())
                        .map(|n| AcceptRisk {
                            name: n.to_string(),
                        })
                        .collect(),
                    ..Update::default()
                }),
                ..ClusterVersionSpec::default()
            },
        );
        cv.status = Some(ClusterVersionStatus {
            conditional_update_risks: (known.iter())
                .map(|n| ConditionalUpdateRisk {
                    name: n.to_string(),
                    ..ConditionalUpdateRisk::default()
                })
                .collect(),
            ..ClusterVersionStatus::default()
        });
        cv
    }

    #[test]
    fn decisions_print_ocs_lines_and_warn_about_unknown_names() {
        let cv = cluster(&["A"], &["A", "ConsoleBreaks"]);
        let accept = |risks: &str| decide(&cv, &parse(Some(risks), false, false).unwrap());
        assert_eq!(
            accept("A"),
            AcceptDecision::Unchanged {
                out: "info: Accept risks are not changed\n".into(),
                err: String::new()
            }
        );
        assert_eq!(
            accept("ConsoleBreak"),
            AcceptDecision::Patch {
                accept_risks: json!([{"name": "A"}, {"name": "ConsoleBreak"}]),
                out: "info: Accept risks are [A, ConsoleBreak]\n".into(),
                err: "warning: no conditional update of this cluster has a risk named ConsoleBreak (did you mean ConsoleBreaks?); it is accepted for the updates that will have it\n".into(),
            }
        );
        assert_eq!(
            accept("A-"),
            AcceptDecision::Patch {
                accept_risks: Value::Null,
                out: "info: Accept risks are []\n".into(),
                err: String::new(),
            }
        );
        let none = cluster(&[], &["A"]);
        assert!(matches!(
            decide(&none, &parse(None, false, true).unwrap()),
            AcceptDecision::Unchanged { .. }
        ));
    }
}
