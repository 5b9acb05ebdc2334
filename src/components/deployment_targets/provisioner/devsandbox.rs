//! `appstudio.redhat.com/devsandbox`: upstream's provisioner, which asks codeready-toolchain
//! for a namespace through a SpaceRequest (spec A.6, A.7). This is its claim side (create the
//! SpaceRequest) and its deprovisioning (delete the SpaceRequest, mark the target `Failed` when
//! the toolchain cannot terminate it); [`space_request`](super::super::space_request) makes
//! the target once the toolchain reports the SpaceRequest ready.
//!
//! The SpaceRequest is created with `generateName: <claim>-`, as upstream does; the API server
//! (or, offline, [`World::apply`](super::super::apiserver)) picks the rest of its name.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{Changes, Deprovisioned, Deprovisioning, Provisioner};
use crate::components::deployment_targets::keys::{
    FINALIZER_SPACE_REQUEST, LABEL_CLAIM, LABEL_TARGET, PROVISIONER_DEVSANDBOX, SPACE_REQUEST_TIER,
    SPACE_TERMINATING_FAILED_REASON,
};
use crate::components::deployment_targets::meta::{add_finalizer, label, name, namespace};
use crate::components::deployment_targets::model::{
    Context, Event, EventType, Next, Object, World, Write,
};
use crate::components::deployment_targets::types::{
    DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, SpaceRequest, SpaceRequestSpec,
    TargetPhase, ToolchainCondition,
};

/// How long after its deletion a SpaceRequest the toolchain reports `UnableToTerminate` is
/// waited for before the target is `Failed` (upstream's value).
pub const TERMINATION_TIMEOUT: Duration = Duration::from_secs(2 * 60);
/// How often to look at a SpaceRequest being deleted (upstream's value).
pub const TERMINATION_POLL: Duration = Duration::from_secs(30);

pub struct Devsandbox;

impl Provisioner for Devsandbox {
    fn name(&self) -> &'static str {
        PROVISIONER_DEVSANDBOX
    }

    fn provisions(&self) -> &'static str {
        "SpaceRequest"
    }

    fn provision(
        &self,
        claim: &DeploymentTargetClaim,
        _class: &DeploymentTargetClass,
        world: &World,
        _ctx: &Context,
    ) -> Result<Changes, String> {
        let (ns, c) = (namespace(&claim.metadata), name(&claim.metadata));
        let mut changes = Changes::default();
        if space_request_for_claim(world, ns, c).is_some() {
            return Ok(changes);
        }
        changes
            .writes
            .push(Write::Create(Object::SpaceRequest(new_space_request(
                ns, c,
            ))));
        changes.events.push(Event {
            regarding: Object::Claim(claim.clone()).reference(),
            type_: EventType::Normal,
            reason: "Provisioning".into(),
            message: format!("requested a namespace from the dev sandbox (SpaceRequest {c}-*, tier {SPACE_REQUEST_TIER})"),
        });
        Ok(changes)
    }

    fn deprovision(
        &self,
        target: &DeploymentTarget,
        world: &World,
        ctx: &Context,
    ) -> Deprovisioning {
        let mut changes = Changes::default();
        let Some(found) = space_request_for_target(world, target) else {
            return Deprovisioning {
                changes,
                state: Deprovisioned::Finished,
            };
        };
        let mut request = found.clone();
        if add_finalizer(&mut request.metadata, FINALIZER_SPACE_REQUEST) {
            changes
                .writes
                .push(Write::Update(Object::SpaceRequest(request.clone())));
        }
        let state = terminate(&mut changes, target, &request, ctx);
        Deprovisioning { changes, state }
    }
}

/// Deletes the SpaceRequest, then waits for the toolchain to terminate it.
fn terminate(
    changes: &mut Changes,
    target: &DeploymentTarget,
    request: &SpaceRequest,
    ctx: &Context,
) -> Deprovisioned {
    let request_name = name(&request.metadata);
    let Some(ready) = ready_condition(request) else {
        return Deprovisioned::Blocked(format!(
            "failed to find ConditionReady for SpaceRequest: {request_name}"
        ));
    };
    let Some(deleted_at) = request.metadata.deletion_timestamp.as_ref().map(|t| t.0) else {
        changes.writes.push(Write::Delete(
            Object::SpaceRequest(request.clone()).reference(),
        ));
        changes.events.push(Event {
            regarding: Object::Target(target.clone()).reference(),
            type_: EventType::Normal,
            reason: "Deprovisioning".into(),
            message: format!("deleting SpaceRequest {request_name}"),
        });
        return Deprovisioned::Pending(Next::Requeue);
    };
    let failed = || {
        let why = ready
            .message
            .clone()
            .or_else(|| ready.reason.clone())
            .unwrap_or_default();
        Deprovisioned::Failed(format!(
            "SpaceRequest {request_name} could not be terminated: {why}"
        ))
    };
    if target.phase() == Some(TargetPhase::Failed) {
        return failed();
    }
    let timeout =
        k8s_openapi::jiff::SignedDuration::try_from(TERMINATION_TIMEOUT).unwrap_or_default();
    let unable = ready.reason.as_deref() == Some(SPACE_TERMINATING_FAILED_REASON);
    if ctx.now > deleted_at + timeout && unable {
        return failed();
    }
    Deprovisioned::Pending(Next::RequeueAfter(TERMINATION_POLL))
}

/// A SpaceRequest as upstream creates it for a claim: `generateName: <claim>-`, labelled with
/// the claim, tier `appstudio-env`, no cluster roles.
fn new_space_request(ns: &str, claim: &str) -> SpaceRequest {
    let spec = SpaceRequestSpec {
        tier_name: SPACE_REQUEST_TIER.into(),
        target_cluster_roles: Vec::new(),
    };
    let mut request = SpaceRequest::new("", spec);
    request.metadata = ObjectMeta {
        generate_name: Some(format!("{claim}-")),
        namespace: Some(ns.to_owned()),
        labels: Some([(LABEL_CLAIM.to_owned(), claim.to_owned())].into()),
        ..ObjectMeta::default()
    };
    request
}

/// The toolchain's `Ready` condition.
pub fn ready_condition(request: &SpaceRequest) -> Option<&ToolchainCondition> {
    (request.status.as_ref()?.conditions.iter()).find(|c| c.type_ == "Ready")
}

/// The first SpaceRequest (by name) of the environment tier labelled with the claim.
pub fn space_request_for_claim<'a>(
    world: &'a World,
    ns: &str,
    claim: &str,
) -> Option<&'a SpaceRequest> {
    (world.space_requests(ns)).find(|r| {
        label(&r.metadata, LABEL_CLAIM) == Some(claim) && r.spec.tier_name == SPACE_REQUEST_TIER
    })
}

/// `findMatchingSpaceRequestForDT`: the SpaceRequests labelled with the target decide if there
/// are any (the first of the environment tier, if one is); else those labelled with its claim.
pub fn space_request_for_target<'a>(
    world: &'a World,
    target: &DeploymentTarget,
) -> Option<&'a SpaceRequest> {
    let ns = namespace(&target.metadata);
    let t = name(&target.metadata);
    let mut labelled = (world.space_requests(ns))
        .filter(|r| label(&r.metadata, LABEL_TARGET) == Some(t))
        .peekable();
    if labelled.peek().is_some() {
        return labelled.find(|r| r.spec.tier_name == SPACE_REQUEST_TIER);
    }
    if target.spec.claim_ref.is_empty() {
        return None;
    }
    space_request_for_claim(world, ns, &target.spec.claim_ref)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::testing::{claim, ctx, space_request, world};

    fn provision(w: &World) -> Changes {
        let class = DeploymentTargetClass::new("cls", Default::default());
        Devsandbox
            .provision(&claim("c", "cls").build(), &class, w, &ctx())
            .unwrap()
    }

    #[test]
    fn asks_for_a_space_request_once() {
        let changes = provision(&World::new());
        let [Write::Create(Object::SpaceRequest(sr))] = &changes.writes[..] else {
            panic!("{changes:?}");
        };
        assert_eq!(sr.metadata.name, None);
        assert_eq!(sr.metadata.generate_name.as_deref(), Some("c-"));
        assert_eq!(sr.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(label(&sr.metadata, LABEL_CLAIM), Some("c"));
        assert_eq!(
            sr.spec,
            SpaceRequestSpec {
                tier_name: "appstudio-env".into(),
                target_cluster_roles: vec![]
            }
        );
        assert_eq!(changes.events[0].reason, "Provisioning");
        let existing = world([Object::SpaceRequest(space_request(
            "c-abcde",
            &[(LABEL_CLAIM, "c")],
            None,
            &[],
        ))]);
        assert_eq!(provision(&existing), Changes::default());
        let mut other_tier = space_request("c-abcde", &[(LABEL_CLAIM, "c")], None, &[]);
        other_tier.spec.tier_name = "base".into();
        assert_eq!(
            provision(&world([Object::SpaceRequest(other_tier)]))
                .writes
                .len(),
            1
        );
    }
}
