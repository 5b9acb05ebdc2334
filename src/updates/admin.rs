//! The cluster admin's view of updates, as `oc adm upgrade` gives it (`openshift/oc`
//! `pkg/cli/admin/upgrade/upgrade.go`): the status summary, the client-side guards, and which
//! `spec.desiredUpdate` a `--to`/`--to-image`/`--to-latest`/`--to-multi-arch`/`--clear` request
//! becomes, with oc's messages. Pure: the ClusterVersion in, text and the update to write out;
//! `cvo upgrade` (`src/cli/upgrade.rs`) reads and patches the cluster.

use std::cmp::Ordering;

use serde_json::{Value, json};

use crate::cluster::{ClusterOperatorStatusCondition, ClusterVersion, ConditionalUpdate, Release};

/// What the admin asked for (`cvo upgrade`'s flags).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpgradeRequest {
    pub to: Option<String>,
    pub to_image: Option<String>,
    pub to_latest: bool,
    pub to_multi_arch: bool,
    pub clear: bool,
    pub force: bool,
    pub allow_explicit_upgrade: bool,
    pub allow_upgrade_with_warnings: bool,
    pub allow_not_recommended: bool,
    /// Conditional update risks to accept (`--accept`): added to
    /// `spec.desiredUpdate.acceptRisks`.
    pub accept: Vec<String>,
}

/// Text for standard output and standard error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub out: String,
    pub err: String,
}

/// What a request comes to.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Nothing to write (`info: Cluster is already at version 4.18.0`).
    Nothing { report: Report },
    /// Merge-patch `spec.desiredUpdate` with `update` (`null` clears it), then print
    /// `report.out`.
    Patch { update: Value, report: Report },
}

const FORCE_WARNING: &str = "warning: --force overrides cluster verification of your supplied release image and waives any update precondition failures. Only use this if you are testing unsigned release images or you are working around a known bug in the cluster-version operator and you have verified the authenticity of the provided image yourself.\n";

/// oc's `Complete` checks: which flags go together, `--to` a semantic version, `--to-image` a
/// pullspec with a repository and, unless `--force`, a digest. Returns the warnings to print.
pub fn check_request(request: &UpgradeRequest) -> Result<String, String> {
    let targets = request.to.is_some() || request.to_image.is_some() || request.to_latest;
    if request.clear && (targets || request.to_multi_arch) {
        return Err("--clear may not be specified with any other flags".into());
    }
    if request.to_multi_arch && targets {
        return Err("--to-multi-arch may not be used with --to, --to-image, or --to-latest".into());
    }
    if request.to.is_some() && request.to_image.is_some() {
        return Err("only one of --to or --to-image may be provided".into());
    }
    if !request.accept.is_empty() && (request.clear || request.to_multi_arch) {
        return Err("--accept may not be used with --clear or --to-multi-arch".into());
    }
    if let Some(bad) = request.accept.iter().find(|r| !valid_risk_name(r)) {
        return Err(format!(
            "--accept {bad:?}: a risk name is one or more letters and digits, as the update service names risks (e.g. ConsoleBreaks); separate several with commas"
        ));
    }
    if let Some(to) = &request.to {
        crate::operator::precondition::parse_version(to).map_err(|e| {
            format!("--to must be a semantic version (e.g. 4.0.1 or 4.1.0-nightly-20181104): {e}")
        })?;
    }
    let Some(image) = &request.to_image else {
        return Ok(String::new());
    };
    let (name, tag, digest) = split_pullspec(image);
    if !name.contains('/') {
        return Err(
            "--to-image must be a valid image pull spec: no registry or repository specified"
                .into(),
        );
    }
    if tag.is_none() && digest.is_none() {
        return Err(
            "--to-image must be a valid image pull spec: no tag or digest specified".into(),
        );
    }
    if digest.is_none() {
        if !request.force {
            return Err("--to-image must be a by-digest pull spec, unless --force is also set, because release images that are not accessed via digest cannot be verified by the cluster.  Even when --force is set, using tags is not recommended, although we continue to allow it for backwards compatibility".into());
        }
        return Ok("warning: Using by-tag pull specs is dangerous, and while we still allow it in combination with --force for backward compatibility, it would be much safer to pass a by-digest pull spec instead\n".into());
    }
    Ok(String::new())
}

/// A risk name as the update service gives them (CamelCase, `^[A-Za-z0-9]+$`); anything else
/// is a typo, a stray space or a separator.
fn valid_risk_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric())
}

/// `name[:tag][@digest]`, the tag's colon told from a registry port's by coming after the last
/// `/`.
fn split_pullspec(image: &str) -> (&str, Option<&str>, Option<&str>) {
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    match rest[last_slash..].rfind(':') {
        Some(colon) => {
            let at = last_slash + colon;
            (&rest[..at], Some(&rest[at + 1..]), digest)
        }
        None => (rest, None, digest),
    }
}

/// oc's `checkForUpgrade`: an invalid ClusterVersion, a failing cluster or an update in
/// progress.
pub fn check_for_upgrade(cv: &ClusterVersion) -> Option<String> {
    let mut results = vec![];
    if let Some(c) = condition(cv, "Invalid").filter(|c| c.status == "True") {
        results.push(format!(
            "the cluster version object is invalid, you must correct the invalid state first:\n\n{}",
            reason_and_message(c)
        ));
    }
    if let Some(c) = condition(cv, "Failing").filter(|c| c.status == "True") {
        let desired = desired(cv);
        let target = non_empty(&desired.version)
            .or(non_empty(&desired.image))
            .unwrap_or(
                "ClusterVersion status.desired has neither a version nor image; please open a bug",
            );
        results.push(format!(
            "the cluster is experiencing an error reconciling {target:?}:\n\n{}",
            reason_and_message(c)
        ));
    }
    if let Some(c) = condition(cv, "Progressing").filter(|c| c.status == "True") {
        results.push(format!(
            "the cluster is already upgrading:\n\n{}",
            reason_and_message(c)
        ));
    }
    (!results.is_empty()).then(|| results.join("\n\n"))
}

/// What a request writes, or why it cannot (oc's `Run`).
pub fn decide(cv: &ClusterVersion, request: &UpgradeRequest) -> Result<Decision, String> {
    let desired = desired(cv);
    let current = cv.spec.desired_update.as_ref();
    if request.clear {
        let Some(original) = current else {
            return Ok(nothing("info: No update in progress\n"));
        };
        let what = non_empty(&original.version)
            .or(non_empty(&original.image))
            .unwrap_or("<unknown>");
        let equivalent = match (non_empty(&original.image), non_empty(&desired.image)) {
            (Some(a), Some(b)) => a == b,
            _ => {
                matches!((non_empty(&original.version), non_empty(&desired.version)), (Some(a), Some(b)) if a == b)
            }
        };
        let out = if equivalent {
            let still = non_empty(&desired.version)
                .or(non_empty(&desired.image))
                .unwrap_or("<unknown>");
            format!("Cleared the update field, still at {still}\n")
        } else {
            format!("Cancelled requested upgrade to {what}\n")
        };
        // The accepted risks stay (they may be for later updates too), as oc keeps them.
        let update = if original.accept_risks.is_empty() {
            Value::Null
        } else {
            let mut kept = json!({"architecture": "", "version": "", "image": "", "force": false,
                   "acceptRisks": original.accept_risks});
            if original.mode.is_some() {
                kept["mode"] = Value::Null;
            }
            kept
        };
        return Ok(Decision::Patch {
            update,
            report: Report {
                out,
                err: String::new(),
            },
        });
    }
    let mut err = String::new();
    if request.to_multi_arch {
        if current.is_some_and(|u| u.architecture.as_deref() == Some("Multi")) {
            return Err(
                "info: Update to multi cluster architecture has already been requested".into(),
            );
        }
        err.push_str(&guard(cv, request)?);
        if request.force {
            err.push_str(FORCE_WARNING);
        }
        let update = json!({
            "architecture": "Multi",
            "version": desired.version.clone().unwrap_or_default(),
            "image": "",
            "force": request.force,
        });
        return Ok(Decision::Patch {
            update,
            report: Report {
                out: "Requested update to multi cluster architecture\n".into(),
                err,
            },
        });
    }
    let accepted = accepted_risks(cv, request)?;
    let targets = request.to.is_some() || request.to_image.is_some() || request.to_latest;
    if !targets && !request.accept.is_empty() {
        return Ok(accept_only(&accepted, &request.accept));
    }
    if request.to.is_none() && request.to_image.is_none() && !request.to_latest {
        return Err("nothing requested: pass --to, --to-image, --to-latest, --to-multi-arch or --clear, or nothing to see the status".into());
    }
    if let Some(to) = request
        .to
        .as_deref()
        .filter(|to| non_empty(&desired.version) == Some(*to))
    {
        return Ok(nothing(&format!(
            "info: Cluster is already at version {to}\n"
        )));
    }
    if let Some(image) = request
        .to_image
        .as_deref()
        .filter(|i| non_empty(&desired.image) == Some(*i))
    {
        return Ok(nothing(&format!("info: Cluster is already at {image}\n")));
    }
    let (target, warning) = choose_target(cv, request, &accepted)?;
    err.push_str(&warning);
    if request.force {
        err.push_str(FORCE_WARNING);
    }
    err.push_str(&guard(cv, request)?);
    let out = match non_empty(&target.version) {
        Some(version) => format!("Requested update to {version}\n"),
        None => format!(
            "Requested update to release image {}\n",
            target.image.as_deref().unwrap_or("")
        ),
    };
    let mut update = json!({
        "version": target.version.clone().unwrap_or_default(),
        "image": target.image.clone().unwrap_or_default(),
        "force": request.force,
    });
    // An update after a preflight is an update, not another preflight (oc, knowing no mode,
    // would leave it in place and the cluster would only check the release again).
    if current.is_some_and(|u| u.mode.is_some()) {
        update["mode"] = Value::Null;
    }
    if !request.accept.is_empty() {
        update["acceptRisks"] = accept_list(&accepted);
    }
    Ok(Decision::Patch {
        update,
        report: Report { out, err },
    })
}

/// The risks `spec.desiredUpdate.acceptRisks` will hold: those already accepted, then the
/// `--accept` ones, each once. An `--accept` name no conditional update of this cluster carries
/// is refused as a typo, with the names there are.
pub(crate) fn accepted_risks(
    cv: &ClusterVersion,
    request: &UpgradeRequest,
) -> Result<Vec<String>, String> {
    let status = cv.status.clone().unwrap_or_default();
    let mut known: Vec<&str> = (status.conditional_updates.iter())
        .flat_map(|u| u.risks.iter().map(|r| r.name.as_str()))
        .collect();
    known.sort_unstable();
    known.dedup();
    let mut accepted: Vec<String> = (cv.spec.desired_update.iter())
        .flat_map(|u| u.accept_risks.iter().map(|r| r.name.clone()))
        .collect();
    for name in &request.accept {
        if !known.contains(&name.as_str()) {
            return Err(if known.is_empty() {
                format!(
                    "--accept {name}: no conditional update of this cluster has risks to accept; `cvo upgrade --include-not-recommended` lists them"
                )
            } else {
                format!(
                    "--accept {name}: no conditional update of this cluster has a risk named {name}{}; the risks are: {}",
                    crate::suggest::did_you_mean(name, &known),
                    known.join(", ")
                )
            });
        }
        if !accepted.contains(name) {
            accepted.push(name.clone());
        }
    }
    Ok(accepted)
}

pub(crate) fn accept_list(accepted: &[String]) -> Value {
    accepted.iter().map(|name| json!({"name": name})).collect()
}

/// `--accept` without a target: write the accepted risks, keeping the requested update (a
/// `desiredUpdate` of accepted risks alone is valid, as `cvo upgrade accept` writes it).
fn accept_only(accepted: &[String], new: &[String]) -> Decision {
    let update = json!({"acceptRisks": accept_list(accepted)});
    Decision::Patch {
        update,
        report: Report {
            out: format!(
                "Accepted the conditional update risks: {}\n",
                new.join(", ")
            ),
            err: String::new(),
        },
    }
}

fn nothing(out: &str) -> Decision {
    Decision::Nothing {
        report: Report {
            out: out.into(),
            err: String::new(),
        },
    }
}

/// The client-side guards, bypassed (with a warning) by `--allow-upgrade-with-warnings`.
fn guard(cv: &ClusterVersion, request: &UpgradeRequest) -> Result<String, String> {
    match check_for_upgrade(cv) {
        None => Ok(String::new()),
        Some(problem) if request.allow_upgrade_with_warnings => Ok(format!(
            "warning: --allow-upgrade-with-warnings is bypassing: {problem}\n"
        )),
        Some(problem) => Err(format!(
            "{problem}\n\nIf you want to upgrade anyway, use --allow-upgrade-with-warnings."
        )),
    }
}

/// The release a `--to`, `--to-image` or `--to-latest` request names: a recommended update, a
/// not-recommended one with `--allow-not-recommended`, or any image with
/// `--allow-explicit-upgrade`. Returns it and the warnings to print.
fn choose_target(
    cv: &ClusterVersion,
    request: &UpgradeRequest,
    accepted: &[String],
) -> Result<(Release, String), String> {
    let status = cv.status.clone().unwrap_or_default();
    let to = request.to.as_deref().unwrap_or("");
    let to_image = request.to_image.as_deref().unwrap_or("");
    let mut warnings = String::new();
    let mut possible: Vec<Release> = vec![];
    let mut not_recommended: Vec<(Release, String)> = vec![];
    let available = status.available_updates.clone().unwrap_or_default();
    let mut chosen = None;
    for update in &available {
        if target_matches(update, to, to_image) {
            let mut release = update.clone();
            if !to_image.is_empty() {
                release.image = Some(to_image.to_string());
            }
            chosen = Some(release);
            break;
        }
        possible.push(update.clone());
    }
    if chosen.is_none() {
        for update in &status.conditional_updates {
            let Some(c) = recommended(update).filter(|c| c.status != "True") else {
                continue;
            };
            let bypassed = format!(
                "warning: with --allow-not-recommended you have accepted the risks with {} and bypassed {}={} {}: {}\n",
                update.release.version.as_deref().unwrap_or(""),
                c.type_,
                c.status,
                c.reason,
                c.message
            );
            if target_matches(&update.release, to, to_image) {
                let all_accepted = !update.risks.is_empty()
                    && (update.risks.iter()).all(|r| accepted.contains(&r.name));
                if all_accepted && !request.allow_not_recommended {
                    // The cluster recommends it once its risks are accepted
                    // (`AllExposedRisksAccepted`); say which were.
                    warnings.push_str(&format!(
                        "warning: you have accepted the risks of {}: {}\n",
                        update.release.version.as_deref().unwrap_or(""),
                        (update.risks.iter().map(|r| r.name.as_str()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                    chosen = Some(update.release.clone());
                    break;
                }
                if !request.allow_not_recommended {
                    let mut refusal = format!(
                        "the update {} is not one of the recommended updates, but is available as a conditional update. To accept the {}={} risk and to proceed with update use --allow-not-recommended.\n  Reason: {}\n  Message: {}\n",
                        update.release.version.as_deref().unwrap_or(""),
                        c.type_,
                        c.status,
                        c.reason,
                        c.message.replace('\n', "\n  ")
                    );
                    if !update.risks.is_empty() {
                        // Beyond oc: the way that keeps the cluster's own check.
                        refusal.push_str(&format!(
                            "Or accept its risks, which the cluster then checks again: --accept {}\n",
                            (update.risks.iter().map(|r| r.name.as_str()))
                                .collect::<Vec<_>>()
                                .join(",")
                        ));
                    }
                    return Err(refusal);
                }
                warnings.push_str(&bypassed);
                chosen = Some(update.release.clone());
                break;
            }
            if request.allow_not_recommended {
                possible.push(update.release.clone());
                not_recommended.push((update.release.clone(), bypassed));
            }
        }
    }
    if chosen.is_none() && !to_image.is_empty() && request.allow_explicit_upgrade {
        chosen = Some(Release {
            image: Some(to_image.to_string()),
            ..Default::default()
        });
        warnings.push_str("warning: The requested upgrade image is not one of the available updates. You have used --allow-explicit-upgrade for the update to proceed anyway\n");
    }
    possible.sort_by(newest_first);
    if request.to_latest
        && let Some(latest) = possible.first()
    {
        if let Some((_, bypassed)) = not_recommended
            .iter()
            .find(|(r, _)| r.image == latest.image)
        {
            warnings.push_str(bypassed);
        }
        chosen = Some(latest.clone());
    }
    match chosen {
        Some(release) => Ok((release, warnings)),
        None => Err(no_target(cv, request, &possible)),
    }
}

/// Why no update could be chosen, with oc's next step.
fn no_target(cv: &ClusterVersion, request: &UpgradeRequest, possible: &[Release]) -> String {
    let option = if request.to_image.is_some() {
        "--allow-explicit-upgrade"
    } else {
        "--to-image"
    };
    let article = if request.to_latest { "an" } else { "the" };
    let next = format!("{option} to continue with {article} update");
    if let Some(c) = condition(cv, "RetrievedUpdates").filter(|c| c.status != "True") {
        return format!(
            "cannot refresh available updates:\n{}\n\nspecify {next}.",
            reason_and_message(c)
        );
    }
    match possible {
        [] if request.allow_not_recommended => format!(
            "no recommended or conditional updates, specify {next} or wait for new updates to be available."
        ),
        [] if request.to_latest => format!(
            "info: Cluster is already at the latest available version {}",
            desired(cv).version.unwrap_or_default()
        ),
        [] => format!(
            "no recommended updates, specify {next} or wait for new updates to be available."
        ),
        _ => format!(
            "the update is not one of the possible targets: {}. specify {next}.",
            possible
                .iter()
                .map(|r| r.version.as_deref().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// oc's `targetMatch`: the version, the exact image, or the same digest.
fn target_matches(target: &Release, to: &str, to_image: &str) -> bool {
    if !to.is_empty() && target.version.as_deref() == Some(to) {
        return true;
    }
    if to_image.is_empty() {
        return false;
    }
    let image = target.image.as_deref().unwrap_or("");
    if image == to_image {
        return true;
    }
    let (_, _, wanted) = split_pullspec(to_image);
    wanted.is_some() && split_pullspec(image).2 == wanted
}

/// oc's `sortReleasesBySemanticVersions`: newest first, unparsable versions last.
fn newest_first(a: &Release, b: &Release) -> Ordering {
    let parse = |r: &Release| semver::Version::parse(r.version.as_deref().unwrap_or("")).ok();
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => y.cmp_precedence(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => b.version.cmp(&a.version),
    }
}

/// `cvo upgrade` with no target: oc's status summary.
pub fn summary(cv: &ClusterVersion, include_not_recommended: bool) -> Report {
    let mut r = Report::default();
    let status = cv.status.clone().unwrap_or_default();
    match condition(cv, "Failing") {
        Some(c) if c.status != "False" => r.out.push_str(&format!(
            "{}={}:\n\n{}\n\n",
            c.type_,
            c.status,
            reason_and_message(c)
        )),
        Some(_) => {}
        None => r.err.push_str("warning: No current Failing info, see `oc describe clusterversion` for more details.\n"),
    }
    match condition(cv, "Progressing").filter(|c| c.message.as_deref().is_some_and(|m| !m.is_empty())) {
        Some(c) if c.status == "True" => r.out.push_str(&format!(
            "info: An upgrade is in progress. {}\n",
            c.message.as_deref().unwrap_or("")
        )),
        Some(c) => r.out.push_str(&format!("{}\n", c.message.as_deref().unwrap_or(""))),
        None => r.err.push_str("warning: No current Progressing info, see `oc describe clusterversion` for more details.\n"),
    }
    r.out.push('\n');
    if let Some(c) = condition(cv, "Upgradeable").filter(|c| c.status == "False") {
        r.out.push_str(&format!(
            "Upgradeable=False\n\n{}\n\n",
            reason_and_message(c)
        ));
    }
    if let Some(c) = condition(cv, "ReleaseAccepted").filter(|c| c.status != "True") {
        r.out.push_str(&format!(
            "ReleaseAccepted={}\n\n{}\n\n",
            c.status,
            reason_and_message(c)
        ));
    }
    if let Some(channel) = non_empty(&cv.spec.channel) {
        match non_empty(&cv.spec.upstream) {
            None => r
                .out
                .push_str("Upstream is unset, so the cluster will use an appropriate default.\n"),
            Some(upstream) => r.out.push_str(&format!("Upstream: {upstream}\n")),
        }
        let channels = desired(cv).channels;
        if channels.is_empty() {
            r.out.push_str(&format!("Channel: {channel}\n"));
        } else {
            r.out.push_str(&format!(
                "Channel: {channel} (available channels: {})\n",
                channels.join(", ")
            ));
        }
    }
    let retrieval_failed = condition(cv, "RetrievedUpdates").filter(|c| c.status == "False");
    let mut available = status.available_updates.clone().unwrap_or_default();
    if available.is_empty() {
        match retrieval_failed {
            Some(c) => r.err.push_str(&format!(
                "warning: Cannot display available updates:\n{}\n\n",
                reason_and_message(c)
            )),
            None => r.out.push_str("No updates available. You may still upgrade to a specific release image with --to-image or wait for new updates to be available.\n"),
        }
    } else {
        r.out.push_str("\nRecommended updates:\n\n");
        available.sort_by(newest_first);
        let rows: Vec<[String; 2]> = std::iter::once(["  VERSION".into(), "IMAGE".into()])
            .chain(available.iter().map(|u| {
                [
                    format!("  {}", u.version.as_deref().unwrap_or("")),
                    u.image.clone().unwrap_or_default(),
                ]
            }))
            .collect();
        r.out.push_str(&two_columns(&rows, 14));
        if let Some(c) = retrieval_failed {
            r.err.push_str(&format!(
                "warning: Cannot refresh available updates:\n{}\n\n",
                reason_and_message(c)
            ));
        }
    }
    let mut not_recommended: Vec<&ConditionalUpdate> = status
        .conditional_updates
        .iter()
        .filter(|u| recommended(u).is_some_and(|c| c.status != "True"))
        .collect();
    if include_not_recommended {
        if not_recommended.is_empty() {
            r.out.push_str("\nNo updates which are not recommended based on your cluster configuration are available.\n");
        } else {
            not_recommended.sort_by(|a, b| newest_first(&a.release, &b.release));
            r.out.push_str("\nUpdates with known issues:\n");
            for update in not_recommended {
                let c = recommended(update).expect("filtered on it");
                r.out.push_str(&format!(
                    "\n  Version: {}\n  Image: {}\n  Reason: {}\n  Message: {}\n",
                    update.release.version.as_deref().unwrap_or(""),
                    update.release.image.as_deref().unwrap_or(""),
                    c.reason,
                    c.message.trim().replace('\n', "\n  ")
                ));
            }
        }
    } else if !not_recommended.is_empty() {
        let qualifier = not_recommended
            .iter()
            .filter_map(|u| recommended(u))
            .find(|c| c.status != "False")
            .map(|c| format!(", or where the recommended status is {:?},", c.status))
            .unwrap_or_default();
        r.out.push_str(&format!("\nAdditional updates which are not recommended{qualifier} for your cluster configuration are available, to view those re-run the command with --include-not-recommended.\n"));
    }
    r
}

/// `cvo upgrade -o json`: what [`summary`] shows, as data. Conditions are the ClusterVersion's
/// (`null` when absent); updates newest first; `notRecommendedUpdates` are the conditional
/// updates whose `Recommended` condition is not `True`, with it and their risks.
pub fn summary_json(cv: &ClusterVersion) -> Value {
    let status = cv.status.clone().unwrap_or_default();
    let current = desired(cv);
    let mut available = status.available_updates.clone().unwrap_or_default();
    available.sort_by(newest_first);
    let mut not_recommended: Vec<&ConditionalUpdate> = (status.conditional_updates.iter())
        .filter(|u| recommended(u).is_some_and(|c| c.status != "True"))
        .collect();
    not_recommended.sort_by(|a, b| newest_first(&a.release, &b.release));
    json!({
        "version": current.version,
        "image": current.image,
        "channel": non_empty(&cv.spec.channel),
        "availableChannels": current.channels,
        "upstream": non_empty(&cv.spec.upstream),
        "failing": condition(cv, "Failing"),
        "progressing": condition(cv, "Progressing"),
        "upgradeable": condition(cv, "Upgradeable"),
        "releaseAccepted": condition(cv, "ReleaseAccepted"),
        "retrievedUpdates": condition(cv, "RetrievedUpdates"),
        "recommendedUpdates": available.iter()
            .map(|u| json!({"version": u.version, "image": u.image}))
            .collect::<Vec<_>>(),
        "notRecommendedUpdates": not_recommended.iter()
            .map(|u| json!({"version": u.release.version, "image": u.release.image,
                            "recommended": recommended(u), "risks": u.risks}))
            .collect::<Vec<_>>(),
    })
}

/// Go's `tabwriter.NewWriter(w, minwidth, 2, 1, ' ', 0)` over two columns: the first padded
/// to its widest cell plus one, at least `min_width`.
pub(super) fn two_columns(rows: &[[String; 2]], min_width: usize) -> String {
    let width = rows
        .iter()
        .map(|[first, _]| first.chars().count() + 1)
        .max()
        .unwrap_or(0)
        .max(min_width);
    rows.iter()
        .map(|[first, second]| format!("{first:<width$}{second}\n"))
        .collect()
}

fn condition<'a>(
    cv: &'a ClusterVersion,
    type_: &str,
) -> Option<&'a ClusterOperatorStatusCondition> {
    cv.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

fn recommended(
    update: &ConditionalUpdate,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    update.conditions.iter().find(|c| c.type_ == "Recommended")
}

/// `  Reason: R\n  Message: M` with the message's lines indented.
fn reason_and_message(c: &ClusterOperatorStatusCondition) -> String {
    format!(
        "  Reason: {}\n  Message: {}",
        c.reason.as_deref().unwrap_or(""),
        c.message.as_deref().unwrap_or("").replace('\n', "\n  ")
    )
}

fn desired(cv: &ClusterVersion) -> Release {
    cv.status
        .as_ref()
        .and_then(|s| s.desired.clone())
        .unwrap_or_default()
}

fn non_empty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::cluster::{ClusterVersionSpec, ClusterVersionStatus, Update};

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn time() -> Time {
        Time(Timestamp::UNIX_EPOCH)
    }

    fn cv_condition(
        type_: &str,
        status: &str,
        reason: &str,
        message: &str,
    ) -> ClusterOperatorStatusCondition {
        ClusterOperatorStatusCondition::new(type_, status, time()).because(reason, message)
    }

    fn release(version: &str) -> Release {
        Release {
            version: Some(version.into()),
            image: Some(format!(
                "quay.io/openshift-release-dev/ocp-release@sha256:{}",
                version
                    .replace('.', "")
                    .repeat(13)
                    .chars()
                    .take(64)
                    .collect::<String>()
            )),
            ..Default::default()
        }
    }

    fn risky(version: &str, status: &str, reason: &str, message: &str) -> ConditionalUpdate {
        ConditionalUpdate {
            release: release(version),
            risk_names: vec![],
            risks: vec![],
            conditions: vec![Condition {
                type_: "Recommended".into(),
                status: status.into(),
                reason: reason.into(),
                message: message.into(),
                last_transition_time: time(),
                observed_generation: None,
            }],
        }
    }

    /// A cluster at 4.17.0, reconciled, with 4.17.1 and 4.18.0 recommended and 4.17.2 risky.
    fn cluster() -> ClusterVersion {
        let mut cv = ClusterVersion::new(
            "version",
            ClusterVersionSpec {
                channel: Some("stable-4.18".into()),
                ..Default::default()
            },
        );
        cv.status = Some(ClusterVersionStatus {
            desired: Some(Release {
                channels: vec!["stable-4.17".into(), "stable-4.18".into()],
                ..release("4.17.0")
            }),
            conditions: vec![
                cv_condition("Failing", "False", "", ""),
                cv_condition("Progressing", "False", "", "Cluster version is 4.17.0"),
                cv_condition("RetrievedUpdates", "True", "", ""),
            ],
            available_updates: Some(vec![release("4.17.1"), release("4.18.0")]),
            conditional_updates: vec![risky(
                "4.17.2",
                "False",
                "ARisk",
                "Breaks things.\nSee the bug.",
            )],
            ..Default::default()
        });
        cv
    }

    fn request() -> UpgradeRequest {
        UpgradeRequest::default()
    }

    #[test]
    fn the_summary_is_ocs() {
        let cv = cluster();
        let r = summary(&cv, false);
        let image = |v: &str| release(v).image.unwrap();
        assert_eq!(
            r.out,
            format!(
                "Cluster version is 4.17.0\n\nUpstream is unset, so the cluster will use an appropriate default.\nChannel: stable-4.18 (available channels: stable-4.17, stable-4.18)\n\nRecommended updates:\n\n  VERSION     IMAGE\n  4.18.0      {}\n  4.17.1      {}\n\nAdditional updates which are not recommended for your cluster configuration are available, to view those re-run the command with --include-not-recommended.\n",
                image("4.18.0"),
                image("4.17.1")
            )
        );
        assert_eq!(r.err, "");
        let r = summary(&cv, true);
        assert!(
            r.out.ends_with(&format!(
                "\nUpdates with known issues:\n\n  Version: 4.17.2\n  Image: {}\n  Reason: ARisk\n  Message: Breaks things.\n  See the bug.\n",
                image("4.17.2")
            )),
            "{}",
            r.out
        );
    }

    #[test]
    fn the_summary_as_json() {
        let doc = summary_json(&cluster());
        let image = |v: &str| release(v).image.unwrap();
        assert_eq!(
            (&doc["version"], &doc["channel"], &doc["upstream"]),
            (&json!("4.17.0"), &json!("stable-4.18"), &Value::Null)
        );
        assert_eq!(
            doc["availableChannels"],
            json!(["stable-4.17", "stable-4.18"])
        );
        assert_eq!(
            doc["recommendedUpdates"],
            json!([{"version": "4.18.0", "image": image("4.18.0")},
                   {"version": "4.17.1", "image": image("4.17.1")}])
        );
        let risky = &doc["notRecommendedUpdates"];
        assert_eq!(risky.as_array().map(Vec::len), Some(1));
        assert_eq!(
            (&risky[0]["version"], &risky[0]["recommended"]["reason"]),
            (&json!("4.17.2"), &json!("ARisk"))
        );
        assert_eq!(doc["progressing"]["message"], "Cluster version is 4.17.0");
        assert_eq!(
            (&doc["upgradeable"], &doc["releaseAccepted"]),
            (&Value::Null, &Value::Null)
        );
    }

    #[test]
    fn the_summary_shows_what_blocks() {
        let mut cv = cluster();
        let status = cv.status.as_mut().unwrap();
        status.available_updates = None;
        status.conditional_updates.clear();
        status.conditions = vec![
            cv_condition(
                "Failing",
                "True",
                "ClusterOperatorDegraded",
                "the cluster operator etcd is degraded",
            ),
            cv_condition(
                "Progressing",
                "True",
                "",
                "Working towards 4.17.1: 3 of 7 done (42% complete)",
            ),
            cv_condition(
                "Upgradeable",
                "False",
                "AdminAck-ack-4.17-x",
                "Read this.\nAnd this.",
            ),
            cv_condition(
                "ReleaseAccepted",
                "False",
                "PreconditionChecks",
                "Preconditions failed",
            ),
            cv_condition(
                "RetrievedUpdates",
                "False",
                "NoChannel",
                "The update channel has not been configured.",
            ),
        ];
        cv.spec.channel = None;
        let r = summary(&cv, false);
        assert_eq!(
            r.out,
            "Failing=True:\n\n  Reason: ClusterOperatorDegraded\n  Message: the cluster operator etcd is degraded\n\ninfo: An upgrade is in progress. Working towards 4.17.1: 3 of 7 done (42% complete)\n\nUpgradeable=False\n\n  Reason: AdminAck-ack-4.17-x\n  Message: Read this.\n  And this.\n\nReleaseAccepted=False\n\n  Reason: PreconditionChecks\n  Message: Preconditions failed\n\n"
        );
        assert_eq!(
            r.err,
            "warning: Cannot display available updates:\n  Reason: NoChannel\n  Message: The update channel has not been configured.\n\n"
        );
    }

    #[test]
    fn flags_are_checked_as_oc_checks_them() {
        let check = |r: UpgradeRequest| check_request(&r);
        assert_eq!(
            check(UpgradeRequest {
                clear: true,
                to_latest: true,
                ..request()
            })
            .unwrap_err(),
            "--clear may not be specified with any other flags"
        );
        assert_eq!(
            check(UpgradeRequest {
                to_multi_arch: true,
                to: Some("4.18.0".into()),
                ..request()
            })
            .unwrap_err(),
            "--to-multi-arch may not be used with --to, --to-image, or --to-latest"
        );
        assert_eq!(
            check(UpgradeRequest {
                to: Some("4.18".into()),
                ..request()
            })
            .unwrap_err(),
            "--to must be a semantic version (e.g. 4.0.1 or 4.1.0-nightly-20181104): No Major.Minor.Patch elements found"
        );
        assert_eq!(
            check(UpgradeRequest {
                to_image: Some("4.0.1".into()),
                ..request()
            })
            .unwrap_err(),
            "--to-image must be a valid image pull spec: no registry or repository specified"
        );
        assert_eq!(
            check(UpgradeRequest {
                to_image: Some("localhost:5000/release".into()),
                ..request()
            })
            .unwrap_err(),
            "--to-image must be a valid image pull spec: no tag or digest specified"
        );
        let tagged = UpgradeRequest {
            to_image: Some("localhost:5000/release:4.18.0".into()),
            ..request()
        };
        assert!(
            check(tagged.clone())
                .unwrap_err()
                .starts_with("--to-image must be a by-digest pull spec, unless --force")
        );
        assert!(
            check(UpgradeRequest {
                force: true,
                ..tagged
            })
            .unwrap()
            .starts_with("warning: Using by-tag pull specs is dangerous")
        );
        let digest = format!("localhost:5000/release@{DIGEST}");
        assert_eq!(
            check(UpgradeRequest {
                to_image: Some(digest),
                ..request()
            })
            .unwrap(),
            ""
        );
    }

    fn patched(decision: Decision) -> (Value, Report) {
        match decision {
            Decision::Patch { update, report } => (update, report),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_recommended_update_is_requested() {
        let cv = cluster();
        let (update, report) = patched(
            decide(
                &cv,
                &UpgradeRequest {
                    to: Some("4.17.1".into()),
                    ..request()
                },
            )
            .unwrap(),
        );
        assert_eq!(
            update,
            json!({"version": "4.17.1", "image": release("4.17.1").image, "force": false})
        );
        assert_eq!(report.out, "Requested update to 4.17.1\n");
        // After a preflight of it, the update turns the preflight mode off.
        let mut after_preflight = cv.clone();
        after_preflight.spec.desired_update = Some(crate::cluster::Update {
            version: Some("4.17.1".into()),
            mode: Some("Preflight".into()),
            ..Default::default()
        });
        let request_to = UpgradeRequest {
            to: Some("4.17.1".into()),
            ..request()
        };
        let (update, _) = patched(decide(&after_preflight, &request_to).unwrap());
        assert_eq!(update["mode"], Value::Null);
        assert!(update.as_object().unwrap().contains_key("mode"));
        let (update, _) = patched(
            decide(
                &cv,
                &UpgradeRequest {
                    to_latest: true,
                    ..request()
                },
            )
            .unwrap(),
        );
        assert_eq!(update["version"], "4.18.0", "newest first");
        let same = decide(
            &cv,
            &UpgradeRequest {
                to: Some("4.17.0".into()),
                ..request()
            },
        )
        .unwrap();
        assert_eq!(
            same,
            nothing("info: Cluster is already at version 4.17.0\n")
        );
    }

    #[test]
    fn a_not_recommended_update_needs_allow_not_recommended() {
        let cv = cluster();
        let to = UpgradeRequest {
            to: Some("4.17.2".into()),
            ..request()
        };
        assert_eq!(
            decide(&cv, &to).unwrap_err(),
            "the update 4.17.2 is not one of the recommended updates, but is available as a conditional update. To accept the Recommended=False risk and to proceed with update use --allow-not-recommended.\n  Reason: ARisk\n  Message: Breaks things.\n  See the bug.\n"
        );
        let (update, report) = patched(
            decide(
                &cv,
                &UpgradeRequest {
                    allow_not_recommended: true,
                    ..to
                },
            )
            .unwrap(),
        );
        assert_eq!(update["version"], "4.17.2");
        assert_eq!(
            report.err,
            "warning: with --allow-not-recommended you have accepted the risks with 4.17.2 and bypassed Recommended=False ARisk: Breaks things.\nSee the bug.\n"
        );
    }

    /// `cluster()` with 4.17.2's risks named.
    fn cluster_with_risks(names: &[&str]) -> ClusterVersion {
        let mut cv = cluster();
        let status = cv.status.as_mut().unwrap();
        status.conditional_updates[0].risks = (names.iter())
            .map(|name| crate::cluster::ConditionalUpdateRisk {
                name: name.to_string(),
                ..Default::default()
            })
            .collect();
        cv
    }

    #[test]
    fn accepting_every_risk_of_an_update_requests_it_with_accept_risks() {
        let cv = cluster_with_risks(&["ARisk", "BRisk"]);
        let to = |accept: &[&str]| UpgradeRequest {
            to: Some("4.17.2".into()),
            accept: accept.iter().map(|a| a.to_string()).collect(),
            ..request()
        };
        // One risk of two accepted: still refused, and the refusal says how to accept them.
        let refused = decide(&cv, &to(&["ARisk"])).unwrap_err();
        assert!(
            refused.ends_with(
                "Or accept its risks, which the cluster then checks again: --accept ARisk,BRisk\n"
            ),
            "{refused}"
        );
        let (update, report) = patched(decide(&cv, &to(&["ARisk", "BRisk"])).unwrap());
        assert_eq!(update["version"], "4.17.2");
        assert_eq!(
            update["acceptRisks"],
            json!([{"name": "ARisk"}, {"name": "BRisk"}])
        );
        assert_eq!(
            report.err,
            "warning: you have accepted the risks of 4.17.2: ARisk, BRisk\n"
        );
        // Risks accepted before are kept (a merge patch replaces the whole list).
        let mut before = cv.clone();
        before.spec.desired_update = Some(Update {
            accept_risks: vec![crate::cluster::AcceptRisk {
                name: "ARisk".into(),
            }],
            ..Default::default()
        });
        let (update, _) = patched(decide(&before, &to(&["BRisk"])).unwrap());
        assert_eq!(
            update["acceptRisks"],
            json!([{"name": "ARisk"}, {"name": "BRisk"}])
        );
    }

    #[test]
    fn accept_alone_writes_the_risks_and_keeps_the_release() {
        let cv = cluster_with_risks(&["ARisk"]);
        let accept = UpgradeRequest {
            accept: vec!["ARisk".into()],
            ..request()
        };
        let (update, report) = patched(decide(&cv, &accept).unwrap());
        assert_eq!(update, json!({"acceptRisks": [{"name": "ARisk"}]}));
        assert_eq!(report.out, "Accepted the conditional update risks: ARisk\n");
        // With an update already requested, only the list is written.
        let mut requested = cv.clone();
        requested.spec.desired_update = Some(Update {
            version: Some("4.17.2".into()),
            ..Default::default()
        });
        let (update, _) = patched(decide(&requested, &accept).unwrap());
        assert_eq!(update, json!({"acceptRisks": [{"name": "ARisk"}]}));
    }

    #[test]
    fn accept_refuses_typos_and_bad_names() {
        let cv = cluster_with_risks(&["ConsoleBreaks"]);
        let accept = |name: &str| UpgradeRequest {
            accept: vec![name.into()],
            ..request()
        };
        assert_eq!(
            decide(&cv, &accept("ConsoleBreak")).unwrap_err(),
            "--accept ConsoleBreak: no conditional update of this cluster has a risk named ConsoleBreak (did you mean ConsoleBreaks?); the risks are: ConsoleBreaks"
        );
        assert!(
            decide(&cluster(), &accept("ARisk"))
                .unwrap_err()
                .contains("has risks to accept")
        );
        let err = check_request(&accept("A Risk")).unwrap_err();
        assert!(
            err.starts_with("--accept \"A Risk\": a risk name is"),
            "{err}"
        );
        let clear = UpgradeRequest {
            clear: true,
            ..accept("ARisk")
        };
        assert_eq!(
            check_request(&clear).unwrap_err(),
            "--accept may not be used with --clear or --to-multi-arch"
        );
    }

    #[test]
    fn an_unknown_target_names_the_possible_ones() {
        let cv = cluster();
        assert_eq!(
            decide(
                &cv,
                &UpgradeRequest {
                    to: Some("4.19.0".into()),
                    ..request()
                }
            )
            .unwrap_err(),
            "the update is not one of the possible targets: 4.18.0, 4.17.1. specify --to-image to continue with the update."
        );
        let image = format!("quay.io/x/y@{DIGEST}");
        let explicit = UpgradeRequest {
            to_image: Some(image.clone()),
            ..request()
        };
        assert!(
            decide(&cv, &explicit)
                .unwrap_err()
                .ends_with("specify --allow-explicit-upgrade to continue with the update.")
        );
        let (update, report) = patched(
            decide(
                &cv,
                &UpgradeRequest {
                    allow_explicit_upgrade: true,
                    force: true,
                    ..explicit
                },
            )
            .unwrap(),
        );
        assert_eq!(
            update,
            json!({"version": "", "image": image, "force": true})
        );
        assert_eq!(
            report.out,
            format!("Requested update to release image {image}\n")
        );
        assert!(
            report
                .err
                .contains("--allow-explicit-upgrade for the update to proceed anyway")
                && report.err.contains("warning: --force overrides")
        );
        let mut failed = cluster();
        failed.status.as_mut().unwrap().conditions[2] = cv_condition(
            "RetrievedUpdates",
            "False",
            "NoUpstream",
            "No updateService server has been set to retrieve updates.",
        );
        failed.status.as_mut().unwrap().available_updates = None;
        assert_eq!(
            decide(
                &failed,
                &UpgradeRequest {
                    to: Some("4.18.0".into()),
                    ..request()
                }
            )
            .unwrap_err(),
            "cannot refresh available updates:\n  Reason: NoUpstream\n  Message: No updateService server has been set to retrieve updates.\n\nspecify --to-image to continue with the update."
        );
    }

    #[test]
    fn an_update_in_progress_is_a_client_side_guard() {
        let mut cv = cluster();
        cv.status.as_mut().unwrap().conditions[1] =
            cv_condition("Progressing", "True", "", "Working towards 4.17.1");
        let to = UpgradeRequest {
            to: Some("4.18.0".into()),
            ..request()
        };
        assert_eq!(
            decide(&cv, &to).unwrap_err(),
            "the cluster is already upgrading:\n\n  Reason: \n  Message: Working towards 4.17.1\n\nIf you want to upgrade anyway, use --allow-upgrade-with-warnings."
        );
        let (_, report) = patched(
            decide(
                &cv,
                &UpgradeRequest {
                    allow_upgrade_with_warnings: true,
                    ..to
                },
            )
            .unwrap(),
        );
        assert!(report.err.starts_with(
            "warning: --allow-upgrade-with-warnings is bypassing: the cluster is already upgrading"
        ));
    }

    #[test]
    fn clear_cancels_or_clears() {
        let mut cv = cluster();
        assert_eq!(
            decide(
                &cv,
                &UpgradeRequest {
                    clear: true,
                    ..request()
                }
            )
            .unwrap(),
            nothing("info: No update in progress\n")
        );
        cv.spec.desired_update = Some(Update {
            version: Some("4.18.0".into()),
            ..Default::default()
        });
        let (update, report) = patched(
            decide(
                &cv,
                &UpgradeRequest {
                    clear: true,
                    ..request()
                },
            )
            .unwrap(),
        );
        assert_eq!(update, Value::Null);
        assert_eq!(report.out, "Cancelled requested upgrade to 4.18.0\n");
        cv.spec.desired_update = Some(Update {
            version: Some("4.17.0".into()),
            ..Default::default()
        });
        let (_, report) = patched(
            decide(
                &cv,
                &UpgradeRequest {
                    clear: true,
                    ..request()
                },
            )
            .unwrap(),
        );
        assert_eq!(report.out, "Cleared the update field, still at 4.17.0\n");
        // Accepted risks outlive the request.
        cv.spec.desired_update = Some(Update {
            version: Some("4.18.0".into()),
            accept_risks: vec![crate::cluster::AcceptRisk { name: "R".into() }],
            ..Default::default()
        });
        let clear = UpgradeRequest {
            clear: true,
            ..request()
        };
        let (update, _) = patched(decide(&cv, &clear).unwrap());
        assert_eq!(
            update,
            json!({"architecture": "", "version": "", "image": "", "force": false,
                   "acceptRisks": [{"name": "R"}]})
        );
    }

    #[test]
    fn pullspecs_split_at_the_right_colon() {
        assert_eq!(
            split_pullspec("localhost:5000/a/b:1"),
            ("localhost:5000/a/b", Some("1"), None)
        );
        assert_eq!(
            split_pullspec("localhost:5000/a/b"),
            ("localhost:5000/a/b", None, None)
        );
        assert_eq!(
            split_pullspec("r/a@sha256:x"),
            ("r/a", None, Some("sha256:x"))
        );
        assert!(target_matches(
            &Release {
                image: Some("other.io/a@sha256:x".into()),
                ..Default::default()
            },
            "",
            "r/a@sha256:x"
        ));
    }
}
