//! The pure decisions about one task of an apply pass (spec §7.2, §7.3): which action a
//! manifest asks for, which upstream reason an API error maps to, the owner references an
//! applied object gets, and how the tasks' outcomes make the pass's [`ApplyReport`]. The
//! executor ([`super::apply`]) does the I/O around them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::core::Status;

use super::outcome::{ApplyReport, Effect, TaskError};
use crate::cluster::ClusterVersion;
use crate::manifest::{CREATE_ONLY_ANNOTATION, DELETE_ANNOTATION, Manifest, go_quote};

/// The field manager of every write, as the CVO's user agent names it.
pub const FIELD_MANAGER: &str = "cluster-version-operator";

/// What applying a manifest means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Server-side apply the object (create or update).
    Apply,
    /// `release.openshift.io/create-only`: create when absent, never update.
    CreateOnly,
    /// `release.openshift.io/delete: "true"`: delete (in Updating mode), never create.
    Delete,
    /// A ClusterOperator: not desired state, the CVO waits on the operator to report it
    /// (spec §5.4): pre-created when absent, then done once it reports what the manifest
    /// expects.
    WaitClusterOperator,
}

/// Upstream `ValidDeleteAnnotation`: the delete annotation's value is not exactly `true`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid delete annotation {} value: {}", go_quote(DELETE_ANNOTATION), go_quote(.0))]
pub struct InvalidDeleteAnnotation(pub String);

/// What the manifest asks the CVO to do (spec §2.1, §5.4). Pure.
pub fn action(manifest: &Manifest) -> Result<Action, InvalidDeleteAnnotation> {
    if manifest.gvk.is("config.openshift.io", "ClusterOperator") {
        return Ok(Action::WaitClusterOperator);
    }
    if let Some(value) = manifest.annotation(DELETE_ANNOTATION) {
        return if value == "true" {
            Ok(Action::Delete)
        } else {
            Err(InvalidDeleteAnnotation(value.to_string()))
        };
    }
    match manifest.annotation(CREATE_ONLY_ANNOTATION) {
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(Action::CreateOnly),
        _ => Ok(Action::Apply),
    }
}

/// Upstream `reasonForPayloadSyncError` over the apimachinery `Is*` predicates (spec §7.2):
/// a predicate matches on the status reason, or on the HTTP code when the reason is not one
/// apimachinery knows. Pure.
pub fn reason_for_status(status: &Status) -> (&'static str, &'static str) {
    let reason = status.reason.as_str();
    let code = status.code;
    let known = KNOWN_REASONS.contains(&reason);
    let is = |r: &str, c: Option<u16>| reason == r || (!known && c.is_some_and(|c| c == code));
    let unexpected_server_error = status.details.as_ref().is_some_and(|d| {
        d.causes
            .iter()
            .any(|c| c.reason == "UnexpectedServerResponse")
    });
    if is("NotFound", Some(404)) || is("AlreadyExists", None) {
        (
            "UpdatePayloadResourceNotFound",
            "resource may have been deleted",
        )
    } else if is("Conflict", Some(409)) {
        (
            "UpdatePayloadResourceConflict",
            "someone else is updating this resource",
        )
    } else if is("Timeout", Some(504))
        || is("ServiceUnavailable", Some(503))
        || unexpected_server_error
    {
        (
            "UpdatePayloadClusterDown",
            "the server is down or not responding",
        )
    } else if is("InternalError", Some(500)) {
        (
            "UpdatePayloadClusterError",
            "the server is reporting an internal error",
        )
    } else if is("Invalid", Some(422)) {
        (
            "UpdatePayloadResourceInvalid",
            "the object is invalid, possibly due to local cluster configuration",
        )
    } else if is("Unauthorized", Some(401)) {
        (
            "UpdatePayloadClusterUnauthorized",
            "could not authenticate to the server",
        )
    } else if is("Forbidden", Some(403)) {
        (
            "UpdatePayloadResourceForbidden",
            "the server has forbidden updates to this resource",
        )
    } else if is("ServerTimeout", None) || is("TooManyRequests", Some(429)) {
        (
            "UpdatePayloadClusterOverloaded",
            "the server is overloaded and is not accepting updates",
        )
    } else {
        ("UpdatePayloadFailed", "")
    }
}

/// apimachinery `knownReasons` (`StatusReasonUnknown`, `""`, is not one of them).
const KNOWN_REASONS: &[&str] = &[
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "StoreReadError",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

/// The ClusterVersion the CVO runs for, as the owner of what it applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterVersionOwner {
    pub name: String,
    pub uid: String,
}

impl ClusterVersionOwner {
    /// The owner a live ClusterVersion makes; `None` before the server gave it a uid.
    pub fn of(cv: &ClusterVersion) -> Option<Self> {
        Some(ClusterVersionOwner {
            name: cv.metadata.name.clone()?,
            uid: cv.metadata.uid.clone()?,
        })
    }
}

/// Upstream `ownerReferenceModifier`: the owner references an applied object gets, from those
/// its manifest has. Owner references other than to a ClusterVersion are the manifest author's
/// choice and win, alone; otherwise the only owner is the CVO's ClusterVersion, its controller
/// unless the manifest is create-only (upstream compares the annotation to exactly `true`
/// here, unlike the case-insensitive create-only check). Pure.
pub fn owner_references(
    manifest_refs: &[OwnerReference],
    create_only: Option<&str>,
    owner: &ClusterVersionOwner,
) -> Vec<OwnerReference> {
    let foreign: Vec<OwnerReference> = (manifest_refs.iter())
        .filter(|r| r.kind != "ClusterVersion")
        .cloned()
        .collect();
    if !foreign.is_empty() {
        return foreign;
    }
    vec![OwnerReference {
        api_version: "config.openshift.io/v1".into(),
        kind: "ClusterVersion".into(),
        name: owner.name.clone(),
        uid: owner.uid.clone(),
        controller: (create_only != Some("true")).then_some(true),
        block_owner_deletion: None,
    }]
}

/// The object the CVO server-side applies for `manifest`: the manifest's, with the CVO's owner
/// reference when the ClusterVersion has one (the update's apply and the preflight's dry run).
pub(crate) fn applied_object(
    manifest: &Manifest,
    owner: Option<&ClusterVersionOwner>,
) -> serde_json::Value {
    let mut object = manifest.object();
    if let Some(owner) = owner {
        set_owner(&mut object, manifest, owner);
    }
    object
}

/// Sets `metadata.ownerReferences` of `object` per [`owner_references`]. An object whose owner
/// references do not read is left alone: the server rejects it with the precise complaint.
pub(crate) fn set_owner(
    object: &mut serde_json::Value,
    manifest: &Manifest,
    owner: &ClusterVersionOwner,
) {
    let Some(metadata) = object.get_mut("metadata").and_then(|m| m.as_object_mut()) else {
        return;
    };
    let existing = match metadata.get("ownerReferences") {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(refs) => serde_json::from_value::<Vec<OwnerReference>>(refs.clone()),
    };
    let Ok(existing) = existing else {
        return;
    };
    let refs = owner_references(
        &existing,
        manifest.annotation(CREATE_ONLY_ANNOTATION),
        owner,
    );
    if let Ok(refs) = serde_json::to_value(refs) {
        metadata.insert("ownerReferences".into(), refs);
    }
}

pub(crate) fn report(manifests: &[&Manifest], outcomes: Vec<Option<Outcome>>) -> ApplyReport {
    let total = manifests.len();
    let mut report = ApplyReport {
        total,
        ..Default::default()
    };
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let task = || manifests[i].task_string(i + 1, total);
        match outcome {
            None => report.incomplete += 1,
            Some(Outcome::Done) => {
                report.done += 1;
                if manifests[i]
                    .gvk
                    .is("config.openshift.io", "ClusterOperator")
                {
                    report.operators_done.push(manifests[i].id.name.clone());
                }
            }
            Some(Outcome::Skipped) => report.skipped += 1,
            Some(Outcome::StoodDown(why)) => {
                report.done += 1;
                report.stood_down.push(format!("{}: {why}", task()));
            }
            Some(Outcome::Waiting) => report.waiting.push(task()),
            Some(Outcome::Failed(e)) => {
                let task = task();
                let message = if let Some(message) = e.message {
                    message
                } else if e.cause.is_empty() {
                    format!("Could not update {task}")
                } else {
                    format!("Could not update {task}: {}", e.cause)
                };
                report.errors.push(TaskError {
                    task,
                    reason: e.reason.to_string(),
                    message,
                    error: e.error,
                    effect: e.effect,
                    name: e.name,
                });
            }
        }
    }
    report
}

#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    Done,
    Skipped,
    Waiting,
    /// Not applied: another operator owns what it would replace; why.
    StoodDown(String),
    Failed(ApplyErrorText),
}

#[derive(Debug, Clone)]
pub(crate) struct ApplyErrorText {
    pub(crate) reason: &'static str,
    pub(crate) cause: &'static str,
    pub(crate) error: String,
    /// Replaces `Could not update <task>[: <cause>]` (ClusterOperator health errors).
    pub(crate) message: Option<String>,
    pub(crate) effect: Effect,
    pub(crate) name: Option<String>,
}

impl Outcome {
    /// A failure that ends its node (a `Report` error lets the node go on, spec §7.2).
    pub(crate) fn blocks(&self) -> bool {
        matches!(self, Outcome::Failed(e) if e.effect != Effect::Report)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::payload::{LoadOptions, Payload, PayloadInput};

    pub(crate) fn manifest(annotations: &str, kind: &str, api_version: &str) -> Manifest {
        let text = format!(
            "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: x\n  namespace: ns\n  annotations: {{{annotations}}}\n"
        );
        let input = PayloadInput {
            origin: "test".into(),
            layout: crate::payload::Layout::PlainDirectory,
            manifests: vec![],
            release_manifests: vec![crate::payload::InputFile {
                name: "0000_10_a_b.yaml".into(),
                contents: Ok(text.into_bytes()),
            }],
            release_metadata: None,
            image_references: None,
        };
        let payload = Payload::from_input(input, &LoadOptions::default()).expect("loads");
        payload.manifests.into_iter().next().expect("one manifest")
    }

    pub(crate) fn cm(annotations: &str) -> Manifest {
        manifest(annotations, "ConfigMap", "v1")
    }

    #[test]
    fn actions_follow_the_annotations() {
        assert_eq!(action(&cm("")).unwrap(), Action::Apply);
        let create_only =
            |v: &str| action(&cm(&format!("release.openshift.io/create-only: {v:?}")));
        assert_eq!(create_only("true").unwrap(), Action::CreateOnly);
        assert_eq!(create_only("TRUE").unwrap(), Action::CreateOnly);
        assert_eq!(create_only("True").unwrap(), Action::CreateOnly);
        assert_eq!(create_only("false").unwrap(), Action::Apply);
        assert_eq!(create_only("yes").unwrap(), Action::Apply);
        let delete = |v: &str| action(&cm(&format!("release.openshift.io/delete: {v:?}")));
        assert_eq!(delete("true").unwrap(), Action::Delete);
        for bad in ["True", "false", "", "yes"] {
            let e = delete(bad).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    r#"invalid delete annotation "release.openshift.io/delete" value: "{bad}""#
                )
            );
        }
        let both =
            cm(r#"release.openshift.io/delete: "true", release.openshift.io/create-only: "true""#);
        assert_eq!(action(&both).unwrap(), Action::Delete);
        let co = manifest("", "ClusterOperator", "config.openshift.io/v1");
        assert_eq!(action(&co).unwrap(), Action::WaitClusterOperator);
        let other_group = manifest("", "ClusterOperator", "example.com/v1");
        assert_eq!(action(&other_group).unwrap(), Action::Apply);
    }

    #[test]
    fn report_counts_and_messages() {
        let a = cm("");
        let manifests = [&a, &a, &a, &a, &a];
        let outcomes = vec![
            Some(Outcome::Done),
            Some(Outcome::Skipped),
            Some(Outcome::Waiting),
            Some(Outcome::Failed(ApplyErrorText {
                reason: "UpdatePayloadResourceInvalid",
                cause: "the object is invalid, possibly due to local cluster configuration",
                error: "boom".into(),
                message: None,
                effect: Effect::Fail,
                name: None,
            })),
            None,
        ];
        let r = report(&manifests, outcomes);
        assert_eq!((r.done, r.total, r.skipped, r.incomplete), (1, 5, 1, 1));
        assert_eq!(r.waiting, [r#"configmap "ns/x" (3 of 5)"#]);
        assert_eq!(
            r.errors[0].message,
            r#"Could not update configmap "ns/x" (4 of 5): the object is invalid, possibly due to local cluster configuration"#
        );
        let r = report(
            &manifests[..1],
            vec![Some(Outcome::Failed(ApplyErrorText {
                reason: "UpdatePayloadFailed",
                cause: "",
                error: "x".into(),
                message: None,
                effect: Effect::Fail,
                name: None,
            }))],
        );
        assert_eq!(
            r.errors[0].message,
            r#"Could not update configmap "ns/x" (1 of 1)"#
        );
        assert!(!r.is_success());
        let reported = report(
            &manifests[..1],
            vec![Some(Outcome::Failed(ApplyErrorText {
                reason: "ClusterOperatorDegraded",
                cause: "",
                error: "x".into(),
                message: Some("Cluster operator x is degraded".into()),
                effect: Effect::Report,
                name: Some("x".into()),
            }))],
        );
        assert!(
            reported.is_success(),
            "a Report error does not fail the pass"
        );
    }

    fn owner() -> ClusterVersionOwner {
        ClusterVersionOwner {
            name: "version".into(),
            uid: "cv-uid".into(),
        }
    }

    fn reference(kind: &str, uid: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: kind.into(),
            name: "n".into(),
            uid: uid.into(),
            controller,
            block_owner_deletion: None,
        }
    }

    #[test]
    fn owner_references_follow_the_upstream_modifier() {
        let ours = |controller| OwnerReference {
            api_version: "config.openshift.io/v1".into(),
            kind: "ClusterVersion".into(),
            name: "version".into(),
            uid: "cv-uid".into(),
            controller,
            block_owner_deletion: None,
        };
        assert_eq!(owner_references(&[], None, &owner()), [ours(Some(true))]);
        assert_eq!(owner_references(&[], Some("true"), &owner()), [ours(None)]);
        // Only exactly "true" drops the controller flag.
        for value in ["True", "TRUE", "false", ""] {
            assert_eq!(
                owner_references(&[], Some(value), &owner()),
                [ours(Some(true))],
                "{value:?}"
            );
        }
        // A stale ClusterVersion reference is replaced.
        let stale = reference("ClusterVersion", "old", Some(true));
        assert_eq!(
            owner_references(std::slice::from_ref(&stale), None, &owner()),
            [ours(Some(true))]
        );
        // Foreign references win, alone: ClusterVersion ones are dropped.
        let foreign = reference("ConfigMap", "cm", None);
        let other = reference("Deployment", "d", Some(true));
        assert_eq!(
            owner_references(&[stale, foreign.clone(), other.clone()], None, &owner()),
            [foreign, other]
        );
    }

    #[test]
    fn set_owner_edits_only_readable_metadata() {
        let m = cm("");
        let mut object = m.object();
        set_owner(&mut object, &m, &owner());
        assert_eq!(
            object["metadata"]["ownerReferences"],
            serde_json::json!([{"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
                                "name": "version", "uid": "cv-uid", "controller": true}])
        );
        let create_only = cm(r#"release.openshift.io/create-only: "true""#);
        let mut object = create_only.object();
        set_owner(&mut object, &create_only, &owner());
        assert_eq!(
            object["metadata"]["ownerReferences"][0].get("controller"),
            None
        );
        let mut foreign = m.object();
        let refs =
            serde_json::json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "u"}]);
        foreign["metadata"]["ownerReferences"] = refs.clone();
        set_owner(&mut foreign, &m, &owner());
        assert_eq!(foreign["metadata"]["ownerReferences"], refs);
        for bad in [serde_json::json!("x"), serde_json::json!([{"kind": 3}])] {
            let mut object = m.object();
            object["metadata"]["ownerReferences"] = bad.clone();
            set_owner(&mut object, &m, &owner());
            assert_eq!(object["metadata"]["ownerReferences"], bad);
        }
        let mut no_metadata = serde_json::json!({"kind": "ConfigMap"});
        set_owner(&mut no_metadata, &m, &owner());
        assert_eq!(no_metadata, serde_json::json!({"kind": "ConfigMap"}));
    }
}
