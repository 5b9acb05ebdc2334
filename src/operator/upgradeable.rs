//! Why the cluster should not move to another minor or major version: upstream's update-risk
//! sources behind the `Upgradeable` condition (`pkg/risk/*`, current main; spec §5.3), in
//! upstream's aggregation order: `ClusterVersionUpdating`, `ClusterVersionOverrides`,
//! `ResourceDeletionInProgress`, `AdminAck` and `ClusterOperatorUpgradeable`. As upstream's
//! `Aggregate(Alert, Upgradeable)`, these risks also join the conditional updates to another
//! minor or major version, and the `Alert` source's join every update
//! ([`super::update_risks`]); `Upgradeable` itself is these sources' alone. Pure: the cluster
//! facts a pass observed in, the risks and evaluation errors out.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use semver::Version;

use super::precondition::parse_version;
use crate::cluster::ClusterOperatorStatusCondition;
use crate::include::ComponentOverride;

/// An update risk that makes the cluster not upgradeable between minor or major versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeRisk {
    pub name: String,
    pub message: String,
    /// Where it is explained (upstream's documentation links).
    pub url: String,
    /// Whether it joins the conditional updates to other minor or major versions as a risk
    /// (upstream's version map); `ResourceDeletionInProgressUnknown` does not.
    pub joins_updates: bool,
}

/// The risks' URL when upstream has no better one.
pub const DOCS: &str = "https://docs.redhat.com/en/documentation/openshift_container_platform/";

/// A page of the documentation of `version`'s minor (upstream's links), else [`DOCS`].
fn docs(version: &str, page: &str) -> String {
    match parse_version(version) {
        Ok(v) => format!("{DOCS}{}.{}/html/{page}", v.major, v.minor),
        Err(_) => DOCS.to_string(),
    }
}

const UPDATES_PAGE: &str = "updating_clusters/understanding-openshift-updates-1#understanding_clusteroperator_conditiontypes_understanding-openshift-updates";

impl UpgradeRisk {
    fn at(self, url: String) -> Self {
        UpgradeRisk { url, ..self }
    }
}

/// The risks that apply, and what could not be evaluated (upstream's joined source errors).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Upgradeability {
    pub risks: Vec<UpgradeRisk>,
    pub errors: Vec<String>,
}

/// A ConfigMap the risk sources read: its `data`, or why it could not be read (upstream's
/// lister error text, e.g. `configmap "admin-gates" not found`).
pub type ConfigMapData = Result<BTreeMap<String, String>, String>;

/// What the cluster holds that the risk sources read, observed once per pass.
#[derive(Debug, Clone, PartialEq)]
pub struct RiskFacts {
    /// `admin-gates` in `openshift-config-managed`.
    pub admin_gates: ConfigMapData,
    /// `admin-acks` in `openshift-config`.
    pub admin_acks: ConfigMapData,
    /// Every ClusterOperator's name and `Upgradeable` condition, or why they could not be
    /// listed.
    pub cluster_operators: Result<Vec<(String, Option<ClusterOperatorStatusCondition>)>, String>,
    /// Deletions requested and not finished ([`super::deletions::Deletions::in_progress`]).
    pub deletes_in_progress: Vec<String>,
}

impl RiskFacts {
    /// A healthy cluster: both admin ConfigMaps there and empty, no ClusterOperator, no
    /// deletion.
    pub const HEALTHY: RiskFacts = RiskFacts {
        admin_gates: Ok(BTreeMap::new()),
        admin_acks: Ok(BTreeMap::new()),
        cluster_operators: Ok(Vec::new()),
        deletes_in_progress: Vec::new(),
    };
}

impl Default for RiskFacts {
    fn default() -> RiskFacts {
        RiskFacts::HEALTHY
    }
}

/// What the risk sources read besides [`RiskFacts`].
#[derive(Debug, Clone, Copy)]
pub struct RiskInput<'a> {
    /// Whether the ClusterVersion is `Progressing=True`: an update (or the install) is
    /// running. Upstream reads the condition last written; this is the one being written.
    pub progressing: bool,
    /// The version being reconciled (upstream's `currentVersion()` and `status.desired`).
    pub version: &'a str,
    /// `spec.overrides`.
    pub overrides: &'a [ComponentOverride],
    pub facts: &'a RiskFacts,
}

pub const ADMIN_GATES: &str = "admin-gates";
pub const ADMIN_GATES_NAMESPACE: &str = "openshift-config-managed";
pub const ADMIN_ACKS: &str = "admin-acks";
pub const ADMIN_ACKS_NAMESPACE: &str = "openshift-config";

/// Upstream's aggregate over its sources: every source's risks, the first of a name kept, and
/// every source's error.
pub fn upgradeability(input: &RiskInput<'_>) -> Upgradeability {
    let mut out = Upgradeability::default();
    let sources: [fn(&RiskInput<'_>) -> SourceResult; 5] = [
        updating,
        overrides,
        deletion,
        admin_ack,
        cluster_operators_upgradeable,
    ];
    for source in sources {
        let (risks, error) = source(input);
        for risk in risks {
            if !out.risks.iter().any(|r| r.name == risk.name) {
                out.risks.push(risk);
            }
        }
        out.errors.extend(error);
    }
    out
}

type SourceResult = (Vec<UpgradeRisk>, Option<String>);

fn risk(name: impl Into<String>, message: impl Into<String>) -> UpgradeRisk {
    UpgradeRisk {
        name: name.into(),
        message: message.into(),
        url: DOCS.into(),
        joins_updates: true,
    }
}

/// `ClusterVersionUpdating`: `Progressing=True` means an update is running.
fn updating(input: &RiskInput<'_>) -> SourceResult {
    if !input.progressing {
        return (vec![], None);
    }
    if let Err(e) = parse_version(input.version) {
        return (
            vec![],
            Some(format!(
                "failed to parse current target {:?} to SemVer: {e}",
                input.version
            )),
        );
    }
    (
        vec![
            risk(
                "ClusterVersionUpdating",
                "An update is already in progress and the details are in the Progressing condition.",
            )
            .at(docs(input.version, UPDATES_PAGE)),
        ],
        None,
    )
}

/// `ClusterVersionOverrides`: any unmanaged override.
fn overrides(input: &RiskInput<'_>) -> SourceResult {
    let risks = input.overrides.iter().any(|o| o.unmanaged).then(|| risk(
        "ClusterVersionOverrides",
        "Disabling ownership via cluster version overrides prevents updates between minor or major versions. Please remove overrides before requesting a minor or major version update.",
    ).at(docs(input.version, "config_apis/clusterversion-config-openshift-io-v1#spec-8")));
    (risks.into_iter().collect(), None)
}

/// The source's `<name>Unknown` risk when the current version does not parse; it is also the
/// source's error.
fn unparsable_version(input: &RiskInput<'_>, source: &str, what: &str) -> Option<SourceResult> {
    let error = parse_version(input.version).err()?;
    Some((
        vec![risk(
            format!("{source}Unknown"),
            format!("Failed to parse cluster version to check {what}: {error}"),
        )],
        Some(error),
    ))
}

/// `ResourceDeletionInProgress`: deletions the payload requested that have not finished.
fn deletion(input: &RiskInput<'_>) -> SourceResult {
    const NAME: &str = "ResourceDeletionInProgress";
    if let Some((mut risks, error)) = unparsable_version(input, NAME, "resource deletion") {
        // Upstream gives this one no versions to join.
        risks.iter_mut().for_each(|r| r.joins_updates = false);
        return (risks, error);
    }
    let deletes = &input.facts.deletes_in_progress;
    if deletes.is_empty() {
        return (vec![], None);
    }
    let mut sorted = deletes.clone();
    sorted.sort();
    let page = "updating_clusters/understanding-openshift-updates-1#update-manifest-application_how-updates-work";
    (
        vec![
            risk(
                NAME,
                format!(
                    "Cluster minor or major version upgrades are not allowed while resource deletions are in progress; resources={}",
                    sorted.join(",")
                ),
            )
            .at(docs(input.version, page)),
        ],
        None,
    )
}

/// Upstream's `adminAckGateFmt`.
const ADMIN_ACK_GATE_FORMAT: &str = "^ack-([4-5][.][0-9]{1,})-[^-]";

static ADMIN_ACK_GATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(ADMIN_ACK_GATE_FORMAT).expect("a valid regular expression"));

/// `AdminAck`: every gate of `admin-gates` for the current minor version that `admin-acks`
/// does not acknowledge with `"true"`, by name.
fn admin_ack(input: &RiskInput<'_>) -> SourceResult {
    const NAME: &str = "AdminAck";
    if let Some(unknown) = unparsable_version(input, NAME, "admin-acks") {
        return unknown;
    }
    let version = parse_version(input.version).expect("checked above");
    let unreadable = |name: &str, namespace: &str, error: &str| {
        (
            vec![risk(
                format!("{NAME}Unknown"),
                format!("Failed to retrieve ConfigMap {name} from namespace {namespace}: {error}"),
            )],
            Some(error.to_string()),
        )
    };
    let gates = match &input.facts.admin_gates {
        Ok(gates) => gates,
        Err(e) => return unreadable(ADMIN_GATES, ADMIN_GATES_NAMESPACE, e),
    };
    let acks = match &input.facts.admin_acks {
        Ok(acks) => acks,
        Err(e) => return unreadable(ADMIN_ACKS, ADMIN_ACKS_NAMESPACE, e),
    };
    // A BTreeMap iterates by gate name, so the risks come out sorted as upstream sorts them.
    let risks = gates
        .iter()
        .filter_map(|(gate, value)| admin_gate_risk(gate, value, &version, acks))
        .collect();
    (risks, None)
}

/// Upstream `checkAdminGate`.
fn admin_gate_risk(
    gate: &str,
    value: &str,
    current: &Version,
    acks: &BTreeMap<String, String>,
) -> Option<UpgradeRisk> {
    let name = format!("AdminAck-{gate}");
    match gate_applies(gate, current) {
        Ok(false) => return None,
        Ok(true) => {}
        Err(e) => {
            return Some(risk(
                name,
                format!("{ADMIN_GATES} configmap gate {gate:?} is invalid: {e}"),
            ));
        }
    }
    if value.is_empty() {
        return Some(risk(
            name,
            format!("{ADMIN_GATES} configmap gate {gate} must contain a non-empty value."),
        ));
    }
    // The first https:// link of the gate's text, as upstream's `uriRegexp`.
    let url = (value.split_whitespace())
        .find_map(|w| w.find("https://").map(|at| &w[at..]))
        .map_or_else(|| DOCS.to_string(), str::to_string);
    (acks.get(gate).map(String::as_str) != Some("true")).then(|| risk(name, value).at(url))
}

/// Upstream `gateApplicableToCurrentVersion`: `ack-<major>.<minor>-…` applies to that minor.
fn gate_applies(gate: &str, current: &Version) -> Result<bool, String> {
    let Some(captures) = ADMIN_ACK_GATE.captures(gate) else {
        return Err(format!(
            "{ADMIN_GATES} configmap gate name {gate} has invalid format; must comply with {ADMIN_ACK_GATE_FORMAT:?}"
        ));
    };
    let version = format!("{}.0", &captures[1]);
    let ack = parse_version(&version)
        .map_err(|e| format!("failed to parse SemVer ack version from admin-gate {gate:?}: {e}"))?;
    Ok(ack.major == current.major && ack.minor == current.minor)
}

/// `ClusterOperatorUpgradeable`: each ClusterOperator with `Upgradeable=False`, its message.
fn cluster_operators_upgradeable(input: &RiskInput<'_>) -> SourceResult {
    const NAME: &str = "ClusterOperatorUpgradeable";
    if let Some(unknown) = unparsable_version(input, NAME, "Upgradeable conditions") {
        return unknown;
    }
    let operators = match &input.facts.cluster_operators {
        Ok(operators) => operators,
        Err(e) => {
            return (
                vec![
                    risk(
                        format!("{NAME}Unknown"),
                        format!(
                            "Failed to retrieve ClusterOperators to check Upgradeable conditions: {e}"
                        ),
                    )
                    .at(docs(input.version, UPDATES_PAGE)),
                ],
                Some(e.clone()),
            );
        }
    };
    let mut risks: Vec<UpgradeRisk> = operators
        .iter()
        .filter_map(|(name, upgradeable)| {
            let condition = upgradeable.as_ref().filter(|c| c.status == "False")?;
            Some(
                risk(
                    format!("{NAME}-{name}"),
                    condition.message.clone().unwrap_or_default(),
                )
                .at(docs(input.version, UPDATES_PAGE)),
            )
        })
        .collect();
    risks.sort_by(|a, b| a.name.cmp(&b.name));
    (risks, None)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn condition(type_: &str, status: &str, message: &str) -> ClusterOperatorStatusCondition {
        ClusterOperatorStatusCondition::new(type_, status, Time(Timestamp::UNIX_EPOCH))
            .because("R", message)
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn evaluate(version: &str, facts: &RiskFacts) -> Upgradeability {
        upgradeability(&RiskInput {
            progressing: false,
            version,
            overrides: &[],
            facts,
        })
    }

    fn names(u: &Upgradeability) -> Vec<&str> {
        u.risks.iter().map(|r| r.name.as_str()).collect()
    }

    /// The risks' names and messages (their URLs are checked on their own).
    fn pairs(u: &Upgradeability) -> Vec<(String, String)> {
        (u.risks.iter())
            .map(|r| (r.name.clone(), r.message.clone()))
            .collect()
    }

    fn risk(name: &str, message: &str) -> (String, String) {
        (name.into(), message.into())
    }

    #[test]
    fn a_healthy_cluster_has_no_risk() {
        assert_eq!(
            evaluate("4.18.0", &RiskFacts::default()),
            Upgradeability::default()
        );
    }

    #[test]
    fn progressing_is_the_updating_risk() {
        let facts = RiskFacts::default();
        let input = RiskInput {
            progressing: true,
            version: "4.18.0",
            overrides: &[],
            facts: &facts,
        };
        let u = upgradeability(&input);
        assert_eq!(names(&u), ["ClusterVersionUpdating"]);
        assert_eq!(
            u.risks[0].message,
            "An update is already in progress and the details are in the Progressing condition."
        );
        let u = upgradeability(&RiskInput {
            version: "",
            ..input
        });
        assert_eq!(
            names(&u),
            [
                "ResourceDeletionInProgressUnknown",
                "AdminAckUnknown",
                "ClusterOperatorUpgradeableUnknown"
            ]
        );
        assert_eq!(
            u.risks[1].message,
            "Failed to parse cluster version to check admin-acks: Version string empty"
        );
        assert_eq!(
            u.errors,
            [
                "failed to parse current target \"\" to SemVer: Version string empty",
                "Version string empty",
                "Version string empty",
                "Version string empty"
            ]
        );
        assert!(
            upgradeability(&RiskInput {
                progressing: false,
                ..input
            })
            .risks
            .is_empty()
        );
    }

    #[test]
    fn unmanaged_overrides_are_a_risk() {
        let facts = RiskFacts::default();
        let mut overrides = [ComponentOverride {
            kind: "Deployment".into(),
            group: "apps".into(),
            namespace: "ns".into(),
            name: "n".into(),
            unmanaged: false,
        }];
        let evaluate = |overrides: &[ComponentOverride]| {
            upgradeability(&RiskInput {
                progressing: false,
                version: "4.18.0",
                overrides,
                facts: &facts,
            })
        };
        assert!(evaluate(&overrides).risks.is_empty());
        overrides[0].unmanaged = true;
        assert_eq!(names(&evaluate(&overrides)), ["ClusterVersionOverrides"]);
    }

    #[test]
    fn deletions_in_progress_are_listed_sorted() {
        let facts = RiskFacts {
            deletes_in_progress: vec![r#"service "b/x""#.into(), r#"configmap "a/y""#.into()],
            ..RiskFacts::default()
        };
        let u = evaluate("4.18.0", &facts);
        assert_eq!(
            pairs(&u),
            [risk(
                "ResourceDeletionInProgress",
                r#"Cluster minor or major version upgrades are not allowed while resource deletions are in progress; resources=configmap "a/y",service "b/x""#
            )]
        );
    }

    #[test]
    fn admin_gates_of_the_current_minor_need_an_ack() {
        let gates = map(&[
            (
                "ack-4.18-kube-1.31-api-removals-in-4.19",
                "Read the article.",
            ),
            ("ack-4.17-old", "Not this minor."),
            ("ack-4.18-empty", ""),
            ("not-a-gate", "x"),
            ("ack-4.18-acked", "Acked."),
        ]);
        let acks = map(&[
            ("ack-4.18-acked", "true"),
            ("ack-4.18-kube-1.31-api-removals-in-4.19", "yes"),
        ]);
        let facts = RiskFacts {
            admin_gates: Ok(gates),
            admin_acks: Ok(acks),
            ..RiskFacts::default()
        };
        let u = evaluate("4.18.3", &facts);
        assert_eq!(
            pairs(&u),
            [
                risk(
                    "AdminAck-ack-4.18-empty",
                    "admin-gates configmap gate ack-4.18-empty must contain a non-empty value."
                ),
                risk(
                    "AdminAck-ack-4.18-kube-1.31-api-removals-in-4.19",
                    "Read the article."
                ),
                risk(
                    "AdminAck-not-a-gate",
                    r#"admin-gates configmap gate "not-a-gate" is invalid: admin-gates configmap gate name not-a-gate has invalid format; must comply with "^ack-([4-5][.][0-9]{1,})-[^-]""#
                ),
            ]
        );
        assert!(u.errors.is_empty());
    }

    #[test]
    fn unreadable_admin_config_maps_are_unknown() {
        let facts = RiskFacts {
            admin_gates: Err(r#"configmap "admin-gates" not found"#.into()),
            ..RiskFacts::default()
        };
        let u = evaluate("4.18.0", &facts);
        assert_eq!(
            pairs(&u),
            [risk(
                "AdminAckUnknown",
                r#"Failed to retrieve ConfigMap admin-gates from namespace openshift-config-managed: configmap "admin-gates" not found"#
            )]
        );
        assert_eq!(u.errors, [r#"configmap "admin-gates" not found"#]);
        let facts = RiskFacts {
            admin_acks: Err("forbidden".into()),
            ..RiskFacts::default()
        };
        assert_eq!(
            evaluate("4.18.0", &facts).risks[0].message,
            "Failed to retrieve ConfigMap admin-acks from namespace openshift-config: forbidden"
        );
    }

    #[test]
    fn not_upgradeable_operators_are_risks_by_name() {
        let facts = RiskFacts {
            cluster_operators: Ok(vec![
                (
                    "storage".into(),
                    Some(condition("Upgradeable", "False", "CSI driver too old")),
                ),
                ("etcd".into(), Some(condition("Upgradeable", "True", ""))),
                ("console".into(), None),
                (
                    "authentication".into(),
                    Some(condition("Upgradeable", "False", "Pods out of date")),
                ),
            ]),
            ..RiskFacts::default()
        };
        let u = evaluate("4.18.0", &facts);
        assert_eq!(
            pairs(&u),
            [
                risk(
                    "ClusterOperatorUpgradeable-authentication",
                    "Pods out of date"
                ),
                risk("ClusterOperatorUpgradeable-storage", "CSI driver too old"),
            ]
        );
        let facts = RiskFacts {
            cluster_operators: Err("the server is down".into()),
            ..RiskFacts::default()
        };
        let u = evaluate("4.18.0", &facts);
        assert_eq!(names(&u), ["ClusterOperatorUpgradeableUnknown"]);
        assert_eq!(
            u.risks[0].message,
            "Failed to retrieve ClusterOperators to check Upgradeable conditions: the server is down"
        );
    }

    #[test]
    fn sources_come_in_upstreams_order() {
        let overrides = [ComponentOverride {
            kind: "Deployment".into(),
            group: "apps".into(),
            namespace: "ns".into(),
            name: "n".into(),
            unmanaged: true,
        }];
        let facts = RiskFacts {
            admin_gates: Ok(map(&[("ack-4.18-a", "Ack it.")])),
            cluster_operators: Ok(vec![(
                "etcd".into(),
                Some(condition("Upgradeable", "False", "No.")),
            )]),
            deletes_in_progress: vec![r#"namespace "old""#.into()],
            ..RiskFacts::default()
        };
        let u = upgradeability(&RiskInput {
            progressing: true,
            version: "4.18.0",
            overrides: &overrides,
            facts: &facts,
        });
        assert_eq!(
            names(&u),
            [
                "ClusterVersionUpdating",
                "ClusterVersionOverrides",
                "ResourceDeletionInProgress",
                "AdminAck-ack-4.18-a",
                "ClusterOperatorUpgradeable-etcd"
            ]
        );
    }

    #[test]
    fn risks_link_upstreams_documentation() {
        let facts = RiskFacts {
            admin_gates: Ok(map(&[(
                "ack-4.18-x",
                "See https://access.redhat.com/articles/1 first.",
            )])),
            deletes_in_progress: vec![r#"configmap "a/y""#.into()],
            ..RiskFacts::default()
        };
        let u = upgradeability(&RiskInput {
            progressing: true,
            version: "4.18.3",
            overrides: &[],
            facts: &facts,
        });
        let page = |p: &str| format!("{DOCS}4.18/html/{p}");
        let urls: Vec<_> = (u.risks.iter())
            .map(|r| (r.name.as_str(), r.url.clone()))
            .collect();
        assert_eq!(
            urls,
            [
                ("ClusterVersionUpdating", page(UPDATES_PAGE)),
                (
                    "ResourceDeletionInProgress",
                    page(
                        "updating_clusters/understanding-openshift-updates-1#update-manifest-application_how-updates-work"
                    )
                ),
                (
                    "AdminAck-ack-4.18-x",
                    "https://access.redhat.com/articles/1".into()
                ),
            ]
        );
        assert!(u.risks.iter().all(|r| r.joins_updates));
        // Upstream gives the deletion source's own failure no updates to join.
        let u = evaluate("4.18", &RiskFacts::default());
        let deletion = (u.risks.iter())
            .find(|r| r.name == "ResourceDeletionInProgressUnknown")
            .unwrap();
        assert!(!deletion.joins_updates && deletion.url == DOCS);
    }
}
