//! The reclaimer: the DeploymentTarget reconciler (spec A.7, target side). Every target gets
//! its finalizer; a target whose class says `Retain` forgets a claim that no longer exists; a
//! target being deleted is freed by its provisioner when its class says `Delete` (and becomes
//! `Failed` when that does not finish in time) before its finalizer goes. Every reconcile of an
//! existing target ends with its `ErrorOccurred` condition.

use super::conditions::{GENERIC_TARGET_ERROR, Verdict, Warning, conclude};
use super::keys::FINALIZER_DT;
use super::meta::{add_finalizer, is_deleting, name, remove_finalizer};
use super::model::{Context, EventType, Kind, Next, Object, ObjectRef, Outcome, World, Write};
use super::provisioner::{self, Deprovisioned};
use super::types::{DeploymentTarget, DeploymentTargetClass, ReclaimPolicy, TargetPhase};

/// Reconciles one DeploymentTarget.
pub fn reconcile_target(target: &ObjectRef, world: &World, ctx: &Context) -> Outcome {
    let Some(found) = world.target(&target.namespace, &target.name) else {
        return Outcome::done();
    };
    let mut reclaimer = Reclaimer {
        out: Outcome::done(),
        target: found.clone(),
        world,
        ctx,
    };
    let verdict = reclaimer.run();
    let Reclaimer {
        mut out, target, ..
    } = reclaimer;
    let gone = is_deleting(&target.metadata) && target.metadata.finalizers.is_none();
    conclude(
        &mut out,
        (!gone).then_some(target),
        verdict,
        GENERIC_TARGET_ERROR,
        ctx.now,
    );
    out
}

struct Reclaimer<'w> {
    out: Outcome,
    target: DeploymentTarget,
    world: &'w World,
    ctx: &'w Context,
}

impl Reclaimer<'_> {
    fn run(&mut self) -> Verdict {
        let deleting = is_deleting(&self.target.metadata);
        // The API server refuses a new finalizer on an object being deleted.
        if !deleting && add_finalizer(&mut self.target.metadata, FINALIZER_DT) {
            self.update();
        }
        // A target whose class does not exist is left alone, as upstream leaves it.
        let Some(class) = self
            .world
            .class(&self.target.spec.deployment_target_class_name)
        else {
            return Verdict::Ok(Next::Done);
        };
        let Some(policy) = class.reclaim_policy() else {
            return invalid_policy(class);
        };
        match (deleting, policy) {
            (false, ReclaimPolicy::Retain) => {
                self.forget_deleted_claim();
                self.maintain(class)
            }
            (false, ReclaimPolicy::Delete) => self.maintain(class),
            (true, ReclaimPolicy::Retain) => self.finish(),
            (true, ReclaimPolicy::Delete) => self.deprovision(),
        }
    }

    /// A live target: its provisioner keeps what it holds as the class says.
    fn maintain(&mut self, class: &DeploymentTargetClass) -> Verdict {
        let provisioner = provisioner::for_target(&self.target);
        match provisioner.maintain(&self.target, class, self.world, self.ctx) {
            Ok((changes, next)) => {
                self.out.writes.extend(changes.writes);
                self.out.events.extend(changes.events);
                Verdict::Ok(next)
            }
            Err(why) => Verdict::Problem {
                message: why.clone(),
                error: None,
                warning: Warning {
                    reason: "MaintenanceFailed",
                    message: why,
                },
            },
        }
    }

    fn update(&mut self) {
        self.out
            .writes
            .push(Write::Update(Object::Target(self.target.clone())));
    }

    fn reference(&self) -> ObjectRef {
        ObjectRef::of(Kind::DeploymentTarget, &self.target.metadata)
    }

    /// `Retain`: a `claimRef` naming a claim that no longer exists, on a target that was bound
    /// to it, is cleared, so the target can be claimed again. (With `Delete` it is left
    /// dangling, as upstream leaves it.) A target that was never bound keeps its `claimRef`:
    /// it is reserved for a claim to come, as a PersistentVolume pre-bound to a claim that does
    /// not exist yet is (upstream clears it, and the first claim without a target takes it).
    fn forget_deleted_claim(&mut self) {
        let claim = self.target.spec.claim_ref.clone();
        let ns = self.target.metadata.namespace.clone().unwrap_or_default();
        let was_bound = matches!(
            self.target.phase(),
            Some(TargetPhase::Bound | TargetPhase::Released | TargetPhase::Failed)
        );
        if was_bound && !claim.is_empty() && self.world.claim(&ns, &claim).is_none() {
            self.target.spec.claim_ref.clear();
            self.update();
            let message = format!(
                "its DeploymentTargetClaim {claim} no longer exists; claimRef cleared (reclaim policy Retain)"
            );
            self.out
                .event(self.reference(), EventType::Normal, "Released", message);
        }
    }

    /// Removes the finalizer: the target goes.
    fn finish(&mut self) -> Verdict {
        if remove_finalizer(&mut self.target.metadata, FINALIZER_DT) {
            self.update();
        }
        Verdict::Ok(Next::Done)
    }

    /// `Delete`: the target's provisioner frees what it holds, then the finalizer goes.
    fn deprovision(&mut self) -> Verdict {
        let provisioner = provisioner::for_target(&self.target);
        let done = provisioner.deprovision(&self.target, self.world, self.ctx);
        self.out.writes.extend(done.changes.writes);
        self.out.events.extend(done.changes.events);
        match done.state {
            Deprovisioned::Finished => self.finish(),
            Deprovisioned::Pending(next) => Verdict::Ok(next),
            Deprovisioned::Failed(why) => {
                if self.target.set_phase(TargetPhase::Failed) {
                    self.out
                        .writes
                        .push(Write::UpdateStatus(Object::Target(self.target.clone())));
                    self.out.event(
                        self.reference(),
                        EventType::Warning,
                        "DeprovisioningFailed",
                        why,
                    );
                }
                Verdict::Ok(Next::Done)
            }
            Deprovisioned::Blocked(why) => Verdict::Problem {
                message: why.clone(),
                error: None,
                warning: Warning {
                    reason: "DeprovisioningBlocked",
                    message: why,
                },
            },
        }
    }
}

fn invalid_policy(class: &DeploymentTargetClass) -> Verdict {
    Verdict::Problem {
        message: "unexpected reclaim policy value on DeploymentTargetClass".into(),
        error: None,
        warning: Warning {
            reason: "InvalidReclaimPolicy",
            message: format!(
                "DeploymentTargetClass {} has reclaimPolicy {:?}: it must be Delete or Retain",
                name(&class.metadata),
                class.spec.reclaim_policy
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::conditions::WithConditions as _;
    use crate::components::deployment_targets::keys::{
        ANN_DYNAMICALLY_PROVISIONED, FINALIZER_SPACE_REQUEST, LABEL_CLAIM, LABEL_TARGET,
        PROVISIONER_DEVSANDBOX, PROVISIONER_NAMESPACE,
    };
    use crate::components::deployment_targets::meta::has_finalizer;
    use crate::components::deployment_targets::model::{EventType, Kind};
    use crate::components::deployment_targets::provisioner::namespace::LABEL_CLAIM_NAMESPACE;
    use crate::components::deployment_targets::testing::{
        MetaBuilder, TargetBuilder, applied, at, claim, class, ctx, first_condition, namespace,
        space_request, target, world,
    };
    use std::time::Duration;

    fn reconcile_at(w: World, now: k8s_openapi::jiff::Timestamp) -> (Outcome, World) {
        let out = reconcile_target(
            &ObjectRef::new(Kind::DeploymentTarget, "ns", "dt"),
            &w,
            &Context::at(now),
        );
        let after = applied(w, &out);
        (out, after)
    }

    fn reconcile(w: World) -> (Outcome, World) {
        reconcile_at(w, ctx().now)
    }

    fn held() -> TargetBuilder {
        target("dt", "cls").finalizer(FINALIZER_DT)
    }

    fn condition(w: &World) -> (String, String, String, String) {
        first_condition(w.target("ns", "dt").unwrap().conditions())
    }

    fn error_condition(message: &str) -> (String, String, String, String) {
        let shown = ["ErrorOccurred", "True", "ErrorOccurred", message].map(String::from);
        shown.into()
    }

    fn success() -> (String, String, String, String) {
        (
            "ErrorOccurred".into(),
            "False".into(),
            "Success".into(),
            String::new(),
        )
    }

    #[test]
    fn every_target_gets_the_finalizer_and_a_success_condition_once() {
        for objects in [
            vec![target("dt", "cls").object()],
            vec![target("dt", "cls").object(), class("cls", "x", "Delete")],
        ] {
            let (out, w) = reconcile(world(objects));
            assert_eq!(out.writes.len(), 2, "finalizer and condition");
            assert!(has_finalizer(
                &w.target("ns", "dt").unwrap().metadata,
                FINALIZER_DT
            ));
            assert_eq!(condition(&w), success());
            let (again, _) = reconcile(w);
            assert_eq!(again.writes, vec![]);
        }
    }

    #[test]
    fn an_unknown_reclaim_policy_is_shown_on_the_target() {
        let (out, w) = reconcile(world([held().object(), class("cls", "x", "Recycle")]));
        let message = "unexpected reclaim policy value on DeploymentTargetClass";
        assert_eq!(condition(&w), error_condition(message));
        assert_eq!(out.error, None);
        assert_eq!(out.events[0].type_, EventType::Warning);
    }

    #[test]
    fn retain_clears_a_claim_ref_to_a_claim_that_is_gone() {
        use TargetPhase::{Available, Bound, Failed, Other, Released};
        // (policy, the target's phase, its claim exists, the claimRef left)
        let cases = [
            ("Retain", Some(Bound), false, ""),
            ("Retain", Some(Released), false, ""),
            ("Retain", Some(Failed), false, ""),
            ("Retain", Some(Bound), true, "c"),
            ("Delete", Some(Bound), false, "c"),
            // Never bound: reserved for a claim to come, as a pre-bound PersistentVolume.
            ("Retain", None, false, "c"),
            ("Retain", Some(Available), false, "c"),
            ("Retain", Some(Other("Bogus".into())), false, "c"),
        ];
        for (policy, phase, claim_exists, want) in cases {
            let mut dt = held().claim_ref("c");
            if let Some(phase) = phase.clone() {
                dt = dt.phase(phase);
            }
            let mut objects = vec![dt.object(), class("cls", "x", policy)];
            if claim_exists {
                objects.push(claim("c", "cls").object());
            }
            let (_, w) = reconcile(world(objects));
            assert_eq!(
                w.target("ns", "dt").unwrap().spec.claim_ref,
                want,
                "{policy}, {phase:?}, claim exists: {claim_exists}"
            );
        }
    }

    #[test]
    fn a_deleted_target_goes_at_once_under_retain_or_without_a_space_request() {
        let ours = || {
            held()
                .deleting(0)
                .annotation(ANN_DYNAMICALLY_PROVISIONED, PROVISIONER_NAMESPACE)
                .claim_ref("c")
        };
        let made = || {
            Object::Namespace(namespace(
                "deploy",
                &[(LABEL_TARGET, "dt"), (LABEL_CLAIM_NAMESPACE, "ns")],
            ))
        };
        let (_, w) = reconcile(world([
            ours().object(),
            made(),
            class("cls", PROVISIONER_NAMESPACE, "Retain"),
        ]));
        assert!(w.target("ns", "dt").is_none());
        assert!(w.namespace("deploy").is_some(), "Retain deletes nothing");
        let (_, w) = reconcile(world([
            held().deleting(0).object(),
            class("cls", PROVISIONER_DEVSANDBOX, "Delete"),
        ]));
        assert!(
            w.target("ns", "dt").is_none(),
            "a user-made target has no SpaceRequest"
        );
    }

    #[test]
    fn a_deleted_target_of_a_class_without_class_object_keeps_its_finalizer() {
        let (_, w) = reconcile(world([held().deleting(0).object()]));
        assert!(w.target("ns", "dt").is_some());
    }

    fn sandbox(sr: crate::components::deployment_targets::types::SpaceRequest) -> World {
        world([
            held().claim_ref("c").deleting(0).object(),
            class("cls", PROVISIONER_DEVSANDBOX, "Delete"),
            Object::SpaceRequest(sr),
        ])
    }

    #[test]
    fn devsandbox_deletes_the_space_request_and_waits_for_the_toolchain() {
        let labels = [(LABEL_CLAIM, "c")];
        let (out, w) = reconcile(sandbox(space_request(
            "sr",
            &labels,
            Some(("True", "Provisioned")),
            &[],
        )));
        assert_eq!(out.next, Next::Requeue);
        let sr = w.space_request("ns", "sr").unwrap();
        assert!(has_finalizer(&sr.metadata, FINALIZER_SPACE_REQUEST));
        assert!(sr.metadata.deletion_timestamp.is_some());
        assert!(w.target("ns", "dt").is_some());
        let (out, _) = reconcile_at(w.clone(), at(60));
        assert_eq!(out.next, Next::RequeueAfter(Duration::from_secs(30)));
    }

    #[test]
    fn devsandbox_fails_a_target_whose_space_request_cannot_terminate() {
        let labels = [(LABEL_TARGET, "dt")];
        let terminating = |reason: &str| {
            let sr = deleting_since(
                space_request("sr", &labels, Some(("False", reason)), &[]),
                0,
            );
            sandbox(sr)
        };
        let cases = [
            ("UnableToTerminate", 120, None),
            ("UnableToTerminate", 121, Some(TargetPhase::Failed)),
            ("Terminating", 600, None),
        ];
        for (reason, seconds, want) in cases {
            let (out, w) = reconcile_at(terminating(reason), at(seconds));
            let phase = w.target("ns", "dt").unwrap().phase();
            assert_eq!(phase, want, "{reason} after {seconds}s");
            match want {
                Some(_) => {
                    assert_eq!(out.next, Next::Done);
                    assert!(
                        out.events
                            .iter()
                            .any(|e| e.reason == "DeprovisioningFailed")
                    );
                    let (again, _) = reconcile_at(w, at(seconds + 60));
                    assert_eq!(again.writes, vec![], "a Failed target is left as it is");
                }
                None => assert_eq!(out.next, Next::RequeueAfter(Duration::from_secs(30))),
            }
        }
    }

    #[test]
    fn devsandbox_needs_the_ready_condition() {
        let (out, w) = reconcile(sandbox(space_request(
            "sr",
            &[(LABEL_CLAIM, "c")],
            None,
            &[],
        )));
        let message = "failed to find ConditionReady for SpaceRequest: sr";
        assert_eq!(condition(&w), error_condition(message));
        assert_eq!(out.error, None);
    }

    fn provisioned(namespace_labels: &[(&str, &str)]) -> World {
        world([
            held()
                .claim_ref("c")
                .deleting(0)
                .annotation(ANN_DYNAMICALLY_PROVISIONED, PROVISIONER_NAMESPACE)
                .object(),
            class("cls", PROVISIONER_NAMESPACE, "Delete"),
            Object::Namespace(namespace("deploy", namespace_labels)),
            Object::Secret(k8s_openapi::api::core::v1::Secret {
                metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    name: Some("creds".into()),
                    namespace: Some("ns".into()),
                    labels: Some(
                        namespace_labels
                            .iter()
                            .map(|(k, v)| ((*k).into(), (*v).into()))
                            .collect(),
                    ),
                    ..Default::default()
                },
                ..Default::default()
            }),
        ])
    }

    #[test]
    fn the_namespace_provisioner_deletes_only_what_it_made_for_the_target() {
        let ours = [(LABEL_TARGET, "dt"), (LABEL_CLAIM_NAMESPACE, "ns")];
        let (out, w) = reconcile(provisioned(&ours));
        assert_eq!(out.next, Next::RequeueAfter(Duration::from_secs(30)));
        assert!(w.namespace("deploy").is_none() && w.secret("ns", "creds").is_none());
        assert!(
            w.target("ns", "dt").is_some(),
            "until it sees the namespace gone"
        );
        let (_, w) = reconcile(w);
        assert!(w.target("ns", "dt").is_none());

        for labels in [
            &[][..],
            &[(LABEL_TARGET, "dt"), (LABEL_CLAIM_NAMESPACE, "elsewhere")],
            &[(LABEL_TARGET, "other"), (LABEL_CLAIM_NAMESPACE, "ns")],
        ] {
            let (_, w) = reconcile(provisioned(labels));
            assert!(
                w.namespace("deploy").is_some() && w.secret("ns", "creds").is_some(),
                "{labels:?}"
            );
            assert!(w.target("ns", "dt").is_none(), "{labels:?}");
        }
    }

    #[test]
    fn the_namespace_provisioner_fails_a_target_whose_namespace_does_not_go() {
        let ours = [(LABEL_TARGET, "dt"), (LABEL_CLAIM_NAMESPACE, "ns")];
        let mut w = provisioned(&ours);
        // Something in the namespace holds it Terminating.
        w.insert(
            claim("stuck", "cls")
                .in_namespace("deploy")
                .finalizer("x/y")
                .object(),
        );
        let (_, w) = reconcile(w);
        assert!(
            w.namespace("deploy")
                .unwrap()
                .metadata
                .deletion_timestamp
                .is_some()
        );
        let (out, w) = reconcile_at(w, at(300));
        assert_eq!(out.next, Next::RequeueAfter(Duration::from_secs(30)));
        assert_eq!(w.target("ns", "dt").unwrap().phase(), None);
        let (out, w) = reconcile_at(w, at(301));
        assert_eq!(
            w.target("ns", "dt").unwrap().phase(),
            Some(TargetPhase::Failed)
        );
        let warning = out
            .events
            .iter()
            .find(|e| e.reason == "DeprovisioningFailed")
            .unwrap();
        assert_eq!(
            warning.message,
            "namespace deploy is still being deleted 5 minutes after the DeploymentTarget's deletion"
        );
    }

    /// Being deleted since `now` moved by `seconds`, held by the toolchain's finalizer.
    fn deleting_since(
        mut sr: crate::components::deployment_targets::types::SpaceRequest,
        seconds: i64,
    ) -> crate::components::deployment_targets::types::SpaceRequest {
        sr.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(seconds)),
        );
        sr.metadata.finalizers = Some(vec![FINALIZER_SPACE_REQUEST.into()]);
        sr
    }
}
