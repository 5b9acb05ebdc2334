//! `cvo upgrade --preflight`: which `spec.desiredUpdate` a preflight request becomes
//! (`mode: Preflight`, openshift/api #2684), and how its result, read back from the
//! ClusterVersion status (the `Preflight` condition, the target's conditional update and its
//! risks), is shown. Pure: the ClusterVersion in, the update to write and the text out.

use serde::Serialize;
use serde_json::{Value, json};

use super::admin::{UpgradeRequest, accept_list, accepted_risks};
use crate::cluster::{
    ClusterOperatorStatusCondition, ClusterVersion, ConditionalUpdate, UPDATE_MODE_PREFLIGHT,
};

/// The preflight to ask for: the merge patch of `spec.desiredUpdate` and what to say.
#[derive(Debug, Clone, PartialEq)]
pub struct PreflightPatch {
    pub update: Value,
    pub version: String,
    pub image: String,
    pub out: String,
}

/// The flags a preflight cannot go with, checked before anything is read.
pub fn check_preflight_request(request: &UpgradeRequest) -> Result<(), String> {
    if request.clear || request.to_multi_arch || request.to_latest {
        return Err("--preflight goes with --to VERSION or --to-image IMAGE, not --clear, --to-multi-arch or --to-latest".into());
    }
    if request.force {
        return Err("--preflight checks a release without applying it: --force has nothing to waive (the preflight reports failed signatures and preconditions as its findings)".into());
    }
    if request.to.is_none() && request.to_image.is_none() {
        return Err("--preflight needs the release to check: --to VERSION (an available or conditional update) or --to-image IMAGE".into());
    }
    Ok(())
}

/// The `spec.desiredUpdate` of a preflight of `--to VERSION` (the image of that version among
/// the available and conditional updates, or the history) or `--to-image IMAGE`. Unlike an
/// update, a release that is not recommended is no reason to refuse: finding out why is what
/// a preflight is for.
pub fn decide_preflight(
    cv: &ClusterVersion,
    request: &UpgradeRequest,
) -> Result<PreflightPatch, String> {
    check_preflight_request(request)?;
    let accepted = accepted_risks(cv, request)?;
    let (version, image) = match (&request.to, &request.to_image) {
        (_, Some(image)) => (request.to.clone().unwrap_or_default(), image.clone()),
        (Some(version), None) => (version.clone(), image_of(cv, version)?),
        (None, None) => unreachable!("checked by check_preflight_request"),
    };
    let current = cv.status.as_ref().and_then(|s| s.desired.as_ref());
    let running = current.and_then(|d| d.image.as_deref());
    if running == Some(image.as_str()) {
        return Err(format!(
            "the cluster already runs {image}: there is nothing to preflight"
        ));
    }
    // An update asked for and not yet applied would be replaced without a word.
    if let Some(pending) = cv
        .spec
        .desired_update
        .as_ref()
        .filter(|u| !u.is_preflight())
        && let Some(target) = pending.image.as_deref().filter(|i| !i.is_empty())
        && Some(target) != running
    {
        return Err(format!(
            "an update to {target} is requested and not applied yet; a preflight would replace it: cancel it with `cvo upgrade --clear` first"
        ));
    }
    let mut update = json!({
        "architecture": "",
        "version": version,
        "image": image,
        "force": false,
        "mode": UPDATE_MODE_PREFLIGHT,
    });
    if !request.accept.is_empty() {
        update["acceptRisks"] = accept_list(&accepted);
    }
    let name = if version.is_empty() { &image } else { &version };
    Ok(PreflightPatch {
        update,
        out: format!("Requested a preflight of {name} ({image}); nothing is applied\n"),
        version,
        image,
    })
}

/// The image of `version` among the available and conditional updates and the history.
fn image_of(cv: &ClusterVersion, version: &str) -> Result<String, String> {
    let status = cv.status.clone().unwrap_or_default();
    let offered = (status.available_updates.iter().flatten())
        .chain(status.conditional_updates.iter().map(|u| &u.release))
        .filter(|r| r.version.as_deref() == Some(version))
        .filter_map(|r| r.image.clone());
    let history = (status.history.iter())
        .filter(|h| h.version.as_deref() == Some(version))
        .map(|h| h.image.clone());
    let mut images: Vec<String> = offered.chain(history).collect();
    images.dedup();
    match images.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "--to {version}: no available or conditional update of this cluster has version {version}; pass --to-image IMAGE to preflight a release the update service does not offer"
        )),
        many => Err(format!(
            "--to {version}: several images have version {version} ({}); pass --to-image IMAGE",
            many.join(", ")
        )),
    }
}

/// Where the preflight of `image` is, as the status says.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreflightResult {
    pub version: String,
    pub image: String,
    /// `Preflight` condition: `Unknown` (running), `True` (completed), `False` (failed).
    pub status: String,
    pub reason: String,
    pub message: String,
    /// The target's `Recommended` condition, when it is a conditional update.
    pub recommended: Option<String>,
    pub risks: Vec<RiskShown>,
}

/// A risk of the update to the target, as the status holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RiskShown {
    pub name: String,
    pub message: String,
    pub url: String,
    /// Its `Applies` status (`True`, `False`, `Unknown`).
    pub applies: String,
    /// Named in `spec.desiredUpdate.acceptRisks`.
    pub accepted: bool,
}

impl PreflightResult {
    /// Whether it is still running.
    pub fn running(&self) -> bool {
        self.status != "True" && self.status != "False"
    }

    /// The risks that apply and are not accepted.
    pub fn unaccepted(&self) -> Vec<&RiskShown> {
        (self.risks.iter())
            .filter(|r| r.applies != "False" && !r.accepted)
            .collect()
    }
}

/// The preflight result in `cv`'s status for `image`, once the status observed `generation`
/// (the spec that asked for it); `None` before.
pub fn preflight_result(
    cv: &ClusterVersion,
    image: &str,
    version: Option<&str>,
    generation: Option<i64>,
) -> Option<PreflightResult> {
    let status = cv.status.as_ref()?;
    if let (Some(want), Some(seen)) = (generation, status.observed_generation)
        && seen < want
    {
        return None;
    }
    let condition: &ClusterOperatorStatusCondition =
        status.conditions.iter().find(|c| c.type_ == "Preflight")?;
    let accepted: Vec<&str> = (cv.spec.desired_update.iter())
        .flat_map(|u| u.accept_risks.iter().map(|r| r.name.as_str()))
        .collect();
    // By image, else by version: the update service may offer the version under another
    // pullspec, and the findings join that entry.
    let update: Option<&ConditionalUpdate> = (status.conditional_updates.iter())
        .find(|u| u.release.image.as_deref() == Some(image))
        .or_else(|| {
            let version = version.filter(|v| !v.is_empty())?;
            (status.conditional_updates.iter())
                .find(|u| u.release.version.as_deref() == Some(version))
        });
    let risks = (update.iter().flat_map(|u| &u.risks))
        .map(|r| RiskShown {
            name: r.name.clone(),
            message: r.message.clone(),
            url: r.url.clone(),
            applies: (r.conditions.iter())
                .find(|c| c.type_ == "Applies")
                .map_or("Unknown".to_string(), |c| c.status.clone()),
            accepted: accepted.contains(&r.name.as_str()),
        })
        .collect();
    Some(PreflightResult {
        version: update
            .and_then(|u| u.release.version.clone())
            .unwrap_or_default(),
        image: image.to_string(),
        status: condition.status.clone(),
        reason: condition.reason.clone().unwrap_or_default(),
        message: condition.message.clone().unwrap_or_default(),
        recommended: (update.iter().flat_map(|u| &u.conditions))
            .find(|c| c.type_ == "Recommended")
            .map(|c| c.status.clone()),
        risks,
    })
}

/// The result for people.
pub fn render(result: &PreflightResult) -> String {
    let mut out = format!("{}\n", result.message);
    if result.running() || result.status == "False" {
        return out;
    }
    let target = if result.version.is_empty() {
        &result.image
    } else {
        &result.version
    };
    let flag = if result.version.is_empty() {
        format!("--to-image {}", result.image)
    } else {
        format!("--to {}", result.version)
    };
    if result.risks.is_empty() {
        out.push_str(&format!("\nNo risks: `cvo upgrade {flag}` updates.\n"));
        return out;
    }
    out.push_str(&format!("\nRisks of updating to {target}:\n"));
    for risk in &result.risks {
        let state = match (risk.applies.as_str(), risk.accepted) {
            ("False", _) => "does not apply",
            (_, true) => "accepted",
            ("True", false) => "applies, not accepted",
            _ => "could not be evaluated, not accepted",
        };
        out.push_str(&format!("\n  {} ({state})\n", risk.name));
        for line in risk.message.lines() {
            out.push_str(&format!("    {line}\n"));
        }
        out.push_str(&format!("    {}\n", risk.url));
    }
    let open: Vec<&str> = result
        .unaccepted()
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    if open.is_empty() {
        out.push_str(&format!(
            "\nEvery risk is accepted: `cvo upgrade {flag}` updates.\n"
        ));
    } else {
        out.push_str(&format!(
            "\nTo update anyway, accept them: `cvo upgrade {flag} --accept {}`.\n",
            open.join(",")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{
        AcceptRisk, ClusterVersionSpec, ClusterVersionStatus, ConditionalUpdateRisk, Release,
        Update,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use k8s_openapi::jiff::Timestamp;

    const IMAGE: &str = "quay.io/r@sha256:18";

    fn cv(conditional: Vec<ConditionalUpdate>, accepted: &[&str]) -> ClusterVersion {
        let mut cv = ClusterVersion::new(
            "version",
            ClusterVersionSpec {
                cluster_id: "x".into(),
                desired_update: Some(Update {
                    image: Some(IMAGE.into()),
                    mode: Some("Preflight".into()),
                    accept_risks: (accepted.iter())
                        .map(|n| AcceptRisk {
                            name: n.to_string(),
                        })
                        .collect(),
                    ..Default::default()
                }),
                ..Default::default()
            },
        );
        cv.status = Some(ClusterVersionStatus {
            desired: Some(Release {
                version: Some("4.17.0".into()),
                image: Some("quay.io/r@sha256:17".into()),
                ..Default::default()
            }),
            observed_generation: Some(3),
            conditional_updates: conditional,
            conditions: vec![ClusterOperatorStatusCondition {
                type_: "Preflight".into(),
                status: "True".into(),
                reason: Some("Completed".into()),
                message: Some(
                    "Preflight of 4.18.0: 1 risk (PreflightObjectsLeftBehind); ...".into(),
                ),
                last_transition_time: Time(Timestamp::UNIX_EPOCH),
            }],
            ..Default::default()
        });
        cv
    }

    fn condition(type_: &str, status: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: "R".into(),
            message: "m".into(),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
            observed_generation: None,
        }
    }

    fn update() -> ConditionalUpdate {
        ConditionalUpdate {
            release: Release {
                version: Some("4.18.0".into()),
                image: Some(IMAGE.into()),
                ..Default::default()
            },
            risk_names: vec!["PreflightObjectsLeftBehind".into()],
            risks: vec![ConditionalUpdateRisk {
                conditions: vec![condition("Applies", "True")],
                url: "https://x".into(),
                name: "PreflightObjectsLeftBehind".into(),
                message: "1 resources ...\n* ConfigMap ns/x".into(),
                matching_rules: vec![],
            }],
            conditions: vec![condition("Recommended", "False")],
        }
    }

    #[test]
    fn a_request_becomes_a_preflight_update() {
        let request = |to: Option<&str>, image: Option<&str>| UpgradeRequest {
            to: to.map(str::to_string),
            to_image: image.map(str::to_string),
            ..Default::default()
        };
        let c = cv(vec![update()], &[]);
        let patch = decide_preflight(&c, &request(Some("4.18.0"), None)).unwrap();
        assert_eq!(
            patch.update,
            json!({"architecture": "", "version": "4.18.0", "image": IMAGE, "force": false, "mode": "Preflight"})
        );
        assert_eq!(
            patch.out,
            format!("Requested a preflight of 4.18.0 ({IMAGE}); nothing is applied\n")
        );
        let unknown = decide_preflight(&c, &request(Some("4.19.0"), None)).unwrap_err();
        assert!(unknown.contains("pass --to-image IMAGE"), "{unknown}");
        let current =
            decide_preflight(&c, &request(None, Some("quay.io/r@sha256:17"))).unwrap_err();
        assert!(current.contains("nothing to preflight"), "{current}");
        let forced = UpgradeRequest {
            force: true,
            ..request(Some("4.18.0"), None)
        };
        assert!(
            decide_preflight(&c, &forced)
                .unwrap_err()
                .contains("--force")
        );
        assert!(check_preflight_request(&request(None, None)).is_err());
    }

    #[test]
    fn results_are_read_from_the_status() {
        let c = cv(vec![update()], &[]);
        assert_eq!(
            preflight_result(&c, IMAGE, None, Some(4)),
            None,
            "not observed yet"
        );
        let result = preflight_result(&c, IMAGE, None, Some(3)).unwrap();
        assert!(!result.running());
        assert_eq!(result.recommended.as_deref(), Some("False"));
        assert_eq!(result.unaccepted().len(), 1);
        let text = render(&result);
        assert!(text.contains("\n  PreflightObjectsLeftBehind (applies, not accepted)\n    1 resources ...\n    * ConfigMap ns/x\n    https://x\n"), "{text}");
        assert!(
            text.ends_with("`cvo upgrade --to 4.18.0 --accept PreflightObjectsLeftBehind`.\n"),
            "{text}"
        );
        let accepted = cv(vec![update()], &["PreflightObjectsLeftBehind"]);
        let result = preflight_result(&accepted, "other@sha256:1", Some("4.18.0"), None).unwrap();
        assert!(result.unaccepted().is_empty());
        assert!(render(&result).contains("Every risk is accepted"));
    }
}
