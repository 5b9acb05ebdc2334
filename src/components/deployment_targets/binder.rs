//! The binder: the DeploymentTargetClaim reconciler (spec A.5, and the claim side of A.6 and
//! A.7). In order: its finalizer; a claim being deleted releases its target; a claim marked
//! for dynamic provisioning asks its class's provisioner; a bound claim keeps its binding (or
//! is `Lost`); an unbound one binds the first matching target, or is marked for provisioning,
//! or binds the target it names. Every reconcile of an existing claim ends with its
//! `ErrorOccurred` condition ([`conclude`]).
//!
//! It never writes `spec.claimRef` of a target it binds: a user-made target bound through
//! `spec.targetName` keeps an empty `claimRef`, as upstream's does.

use super::conditions::{GENERIC_CLAIM_ERROR, Verdict, Warning, conclude};
use super::keys::{
    ANN_BIND_COMPLETED, ANN_BINDER_VALUE_TRUE, ANN_BOUND_BY_CONTROLLER, ANN_TARGET_PROVISIONER,
    FINALIZER_BINDER, FINALIZER_DT,
};
use super::matching::{
    BoundTargetError, bound_target, find_matching_target, is_marked_for_provisioning,
    target_matches_claim,
};
use super::meta::{
    add_finalizer, annotation, is_deleting, name, remove_annotation, remove_finalizer,
    set_annotation,
};
use super::model::{Context, EventType, Kind, Next, Object, ObjectRef, Outcome, World, Write};
use super::provisioner;
use super::types::{
    ClaimPhase, DeploymentTarget, DeploymentTargetClaim, ReclaimPolicy, TargetPhase,
};

/// Reconciles one DeploymentTargetClaim.
pub fn reconcile_claim(claim: &ObjectRef, world: &World, ctx: &Context) -> Outcome {
    let Some(found) = world.claim(&claim.namespace, &claim.name) else {
        return Outcome::done();
    };
    let mut binder = Binder {
        out: Outcome::done(),
        claim: found.clone(),
        world,
        ctx,
    };
    let verdict = binder.run();
    let Binder { mut out, claim, .. } = binder;
    // A claim being deleted whose last finalizer went is gone: nothing to write the condition on.
    let gone = is_deleting(&claim.metadata) && claim.metadata.finalizers.is_none();
    conclude(
        &mut out,
        (!gone).then_some(claim),
        verdict,
        GENERIC_CLAIM_ERROR,
        ctx.now,
    );
    out
}

/// The DeploymentTarget watch of the binder: the claims a change to `target` concerns, those of
/// its namespace that name it (`spec.targetName`) or that it names (`spec.claimRef`), and those
/// of its class waiting for a provisioner (a target that goes may leave room under the class's
/// `maxClaimsPerNamespace`). (Upstream only passes target events that change
/// `metadata.generation`.)
pub fn claims_for_target(target: &DeploymentTarget, world: &World) -> Vec<ObjectRef> {
    let ns = target.metadata.namespace.as_deref().unwrap_or("");
    let target_name = name(&target.metadata);
    let class = target.spec.deployment_target_class_name.as_str();
    (world.claims(ns))
        .filter(|c| {
            c.spec.target_name == target_name
                || target.spec.claim_ref == name(&c.metadata)
                || (c.spec.deployment_target_class_name == class
                    && c.phase() == Some(ClaimPhase::Pending)
                    && is_marked_for_provisioning(c))
        })
        .map(|c| ObjectRef::of(Kind::DeploymentTargetClaim, &c.metadata))
        .collect()
}

/// One reconcile: the claim as the writes so far leave it, and the writes.
struct Binder<'w> {
    out: Outcome,
    claim: DeploymentTargetClaim,
    world: &'w World,
    ctx: &'w Context,
}

/// The upstream condition prefix of a problem with a bound claim.
const BOUND_PREFIX: &str = "failed to process bound DeploymentTargetClaim: ";

impl Binder<'_> {
    fn run(&mut self) -> Verdict {
        let deleting = is_deleting(&self.claim.metadata);
        // The API server refuses a new finalizer on an object being deleted.
        if !deleting && add_finalizer(&mut self.claim.metadata, FINALIZER_BINDER) {
            self.update_claim();
        }
        if deleting {
            return self.delete();
        }
        let provisioning = self.claim.phase() == Some(ClaimPhase::Pending)
            && is_marked_for_provisioning(&self.claim);
        if let Some(problem) = provisioning.then(|| self.provision()).flatten() {
            return problem;
        }
        if annotation(&self.claim.metadata, ANN_BIND_COMPLETED).is_some() {
            return self.keep_bound();
        }
        if self.claim.spec.target_name.is_empty() {
            return self.match_or_mark();
        }
        self.bind_named()
    }

    fn name(&self) -> &str {
        name(&self.claim.metadata)
    }

    fn namespace(&self) -> &str {
        self.claim.metadata.namespace.as_deref().unwrap_or("")
    }

    fn update_claim(&mut self) {
        self.out
            .writes
            .push(Write::Update(Object::Claim(self.claim.clone())));
    }

    /// Sets the claim's phase, writing it if it changed; true when it did.
    fn set_claim_phase(&mut self, phase: ClaimPhase) -> bool {
        let changed = self.claim.set_phase(phase);
        if changed {
            self.out
                .writes
                .push(Write::UpdateStatus(Object::Claim(self.claim.clone())));
        }
        changed
    }

    fn claim_event(&mut self, type_: EventType, reason: &str, message: String) {
        let regarding = ObjectRef::of(Kind::DeploymentTargetClaim, &self.claim.metadata);
        self.out.event(regarding, type_, reason, message);
    }

    /// A claim being deleted: a bound one releases its target (which its class's reclaim policy
    /// may delete), then the finalizer goes. Targets that name an unbound claim are left.
    fn delete(&mut self) -> Verdict {
        let bound = annotation(&self.claim.metadata, ANN_BIND_COMPLETED).is_some()
            && self.claim.phase() == Some(ClaimPhase::Bound);
        if bound {
            match bound_target(&self.claim, self.world) {
                Err(BoundTargetError::Other(e)) => {
                    return problem(e.clone(), Some(e), "BindingConflict");
                }
                Ok(Some(target)) => {
                    if let Some(problem) = self.release(target) {
                        return problem;
                    }
                }
                Ok(None) | Err(BoundTargetError::NotFound) => {}
            }
        }
        if remove_finalizer(&mut self.claim.metadata, FINALIZER_BINDER) {
            self.update_claim();
        }
        Verdict::Ok(Next::Done)
    }

    /// Releases the target of a deleted claim: it keeps the reclaimer's finalizer, is deleted
    /// if its class says `Delete`, and is left `Released` without a `claimRef` either way.
    fn release(&mut self, found: &DeploymentTarget) -> Option<Verdict> {
        let class_name = found.spec.deployment_target_class_name.as_str();
        let Some(class) = self.world.class(class_name) else {
            let error = format!(
                "unable to retrieve DeploymentTargetClass '{class_name}' referenced by DeploymentTarget: deploymenttargetclasses.appstudio.redhat.com \"{class_name}\" not found"
            );
            return Some(problem(
                "unable to locate matching DTClass for DT".into(),
                Some(error),
                "ClassNotFound",
            ));
        };
        let mut target = found.clone();
        let reference = ObjectRef::of(Kind::DeploymentTarget, &target.metadata);
        if !is_deleting(&target.metadata) && add_finalizer(&mut target.metadata, FINALIZER_DT) {
            self.out
                .writes
                .push(Write::Update(Object::Target(target.clone())));
        }
        let policy = class.reclaim_policy();
        if policy == Some(ReclaimPolicy::Delete) && !is_deleting(&target.metadata) {
            self.out.writes.push(Write::Delete(reference.clone()));
        }
        if !target.spec.claim_ref.is_empty() {
            target.spec.claim_ref.clear();
            self.out
                .writes
                .push(Write::Update(Object::Target(target.clone())));
        }
        if target.set_phase(TargetPhase::Released) {
            self.out
                .writes
                .push(Write::UpdateStatus(Object::Target(target)));
            let message = format!(
                "released by the deleted DeploymentTargetClaim {} (reclaim policy {:?})",
                self.name(),
                class.spec.reclaim_policy
            );
            self.out
                .event(reference, EventType::Normal, "Released", message);
        }
        None
    }

    /// A claim marked for dynamic provisioning asks its class's provisioner (none for a claim
    /// without a class or a class naming an unknown provisioner, as upstream).
    fn provision(&mut self) -> Option<Verdict> {
        let class_name = self.claim.spec.deployment_target_class_name.clone();
        if class_name.is_empty() {
            return None;
        }
        let Some(class) = self.world.class(&class_name) else {
            let error = format!(
                "DeploymentTargetClaim {} does not have a matching DeploymentTargetClass {class_name}: the resource could not be found on the cluster",
                self.name()
            );
            let message = format!("unable to handle provisioning of SpaceRequest: {error}");
            return Some(problem(message, Some(error), "ProvisioningFailed"));
        };
        let provisioner = provisioner::by_name(&class.spec.provisioner)?;
        match provisioner.provision(&self.claim, class, self.world, self.ctx) {
            Ok(changes) => {
                self.out.writes.extend(changes.writes);
                self.out.events.extend(changes.events);
                None
            }
            Err(error) => {
                let message = format!(
                    "unable to handle provisioning of {}: {error}",
                    provisioner.provisions()
                );
                Some(problem(message, Some(error), "ProvisioningFailed"))
            }
        }
    }

    /// A claim whose binding completed: its `dt-provisioner` annotation follows its class, and
    /// it stays `Bound` while its target exists, else it is `Lost`.
    fn keep_bound(&mut self) -> Verdict {
        let class = self.claim.spec.deployment_target_class_name.clone();
        if annotation(&self.claim.metadata, ANN_TARGET_PROVISIONER).is_some() {
            let changed = match class.is_empty() {
                true => remove_annotation(&mut self.claim.metadata, ANN_TARGET_PROVISIONER),
                false => set_annotation(&mut self.claim.metadata, ANN_TARGET_PROVISIONER, &class),
            };
            if changed {
                self.update_claim();
            }
        }
        match bound_target(&self.claim, self.world) {
            Ok(Some(target)) => {
                let mut target = target.clone();
                if target.set_phase(TargetPhase::Bound) {
                    self.out
                        .writes
                        .push(Write::UpdateStatus(Object::Target(target.clone())));
                }
                if self.set_claim_phase(ClaimPhase::Bound) {
                    let message =
                        format!("bound to DeploymentTarget {} again", name(&target.metadata));
                    self.claim_event(EventType::Normal, "Bound", message);
                }
                Verdict::Ok(Next::Done)
            }
            Err(BoundTargetError::Other(detail)) => {
                let error = format!(
                    "failed to get a DeploymentTarget for the given DeploymentTargetClaim {}",
                    self.name()
                );
                Verdict::Problem {
                    message: format!("{BOUND_PREFIX}{error}"),
                    error: Some(error),
                    warning: Warning {
                        reason: "BindingConflict",
                        message: detail,
                    },
                }
            }
            Ok(None) | Err(BoundTargetError::NotFound) => {
                self.set_claim_phase(ClaimPhase::Lost);
                let error = format!(
                    "DeploymentTarget not found for a bounded DeploymentTargetClaim {} in namespace {}",
                    self.name(),
                    self.namespace()
                );
                problem_with_prefix(BOUND_PREFIX, error, "Lost")
            }
        }
    }

    /// No `spec.targetName`: bind the first matching target, else wait for one, marking the
    /// claim for dynamic provisioning when it has a class.
    fn match_or_mark(&mut self) -> Verdict {
        if let Some(target) = find_matching_target(&self.claim, self.world) {
            self.bind(target, true);
            return Verdict::Ok(Next::Done);
        }
        let class = self.claim.spec.deployment_target_class_name.clone();
        if !class.is_empty()
            && set_annotation(&mut self.claim.metadata, ANN_TARGET_PROVISIONER, &class)
        {
            self.update_claim();
            let message = format!(
                "no DeploymentTarget matches; waiting for the provisioner of DeploymentTargetClass {class}"
            );
            self.claim_event(EventType::Normal, "ProvisioningRequested", message);
        }
        self.set_claim_phase(ClaimPhase::Pending);
        Verdict::Ok(Next::Done)
    }

    /// `spec.targetName` names the target: bind it if it exists, names this claim or nobody,
    /// and matches. A name the binder itself chose for a target another claim took first is
    /// given up, and the claim matched again.
    fn bind_named(&mut self) -> Verdict {
        let wanted = self.claim.spec.target_name.clone();
        if let Some(holder) = self.taken_from_us(&wanted) {
            self.claim.spec.target_name.clear();
            remove_annotation(&mut self.claim.metadata, ANN_BOUND_BY_CONTROLLER);
            self.update_claim();
            let message = format!(
                "DeploymentTarget {wanted} was bound to DeploymentTargetClaim {holder} first; matching again"
            );
            self.claim_event(EventType::Normal, "Rematching", message);
            return self.match_or_mark();
        }
        let Some(target) = self.world.target(self.namespace(), &wanted) else {
            self.set_claim_phase(ClaimPhase::Pending);
            return Verdict::Ok(Next::Done);
        };
        let claim_ref = target.spec.claim_ref.as_str();
        if claim_ref == self.name() {
            self.bind(target, false);
            return Verdict::Ok(Next::Done);
        }
        if !claim_ref.is_empty() {
            self.set_claim_phase(ClaimPhase::Pending);
            return Verdict::Problem {
                message: "DeploymentTargetClaim wants to claim a DeploymentTarget that is already claimed".into(),
                error: None,
                warning: Warning {
                    reason: "BindingConflict",
                    message: format!("DeploymentTarget {wanted} is claimed by DeploymentTargetClaim {claim_ref}"),
                },
            };
        }
        if let Err(error) = target_matches_claim(target, &self.claim) {
            return problem_with_prefix(
                "DeploymentTarget does not match the specified DeploymentTargetClaim: ",
                error,
                "BindingConflict",
            );
        }
        self.bind(target, false);
        Verdict::Ok(Next::Done)
    }

    /// The claim that holds the target this claim's binder-chosen `targetName` names, when the
    /// binding never completed: another claim bound it first. (Upstream leaves such a claim
    /// retrying forever: its target is no longer `Available`.)
    fn taken_from_us(&self, wanted: &str) -> Option<String> {
        annotation(&self.claim.metadata, ANN_BOUND_BY_CONTROLLER)?;
        let target = self.world.target(self.namespace(), wanted)?;
        if target.phase() != Some(TargetPhase::Bound) {
            return None;
        }
        let claim_ref = target.spec.claim_ref.as_str();
        if !claim_ref.is_empty() && claim_ref != self.name() {
            return Some(claim_ref.to_owned());
        }
        let holder = (self.world.claims(self.namespace())).find(|c| {
            name(&c.metadata) != self.name()
                && c.spec.target_name == wanted
                && annotation(&c.metadata, ANN_BIND_COMPLETED).is_some()
        })?;
        Some(name(&holder.metadata).to_owned())
    }

    /// `bindDeploymentTargetClaimToTarget`: (when the binder chose the target) `targetName` and
    /// `bound-by-controller`, then both phases `Bound`, then `bind-complete`.
    fn bind(&mut self, found: &DeploymentTarget, by_controller: bool) {
        let target_name = name(&found.metadata).to_owned();
        if by_controller {
            let mut changed = self.claim.spec.target_name != target_name;
            self.claim.spec.target_name = target_name.clone();
            if annotation(&self.claim.metadata, ANN_BOUND_BY_CONTROLLER).is_none() {
                changed |= set_annotation(
                    &mut self.claim.metadata,
                    ANN_BOUND_BY_CONTROLLER,
                    ANN_BINDER_VALUE_TRUE,
                );
            }
            if changed {
                self.update_claim();
            }
        }
        let newly_bound = self.set_claim_phase(ClaimPhase::Bound);
        let mut target = found.clone();
        if target.set_phase(TargetPhase::Bound) {
            self.out
                .writes
                .push(Write::UpdateStatus(Object::Target(target.clone())));
        }
        let completed = annotation(&self.claim.metadata, ANN_BIND_COMPLETED).is_none()
            && set_annotation(
                &mut self.claim.metadata,
                ANN_BIND_COMPLETED,
                ANN_BINDER_VALUE_TRUE,
            );
        if completed {
            self.update_claim();
        }
        if newly_bound || completed {
            self.claim_event(
                EventType::Normal,
                "Bound",
                format!("bound to DeploymentTarget {target_name}"),
            );
            let message = format!("bound to DeploymentTargetClaim {}", self.name());
            self.out.event(
                Object::Target(target).reference(),
                EventType::Normal,
                "Bound",
                message,
            );
        }
    }
}

/// A problem whose condition message is the error itself.
fn problem(message: String, error: Option<String>, reason: &'static str) -> Verdict {
    let warning = Warning {
        reason,
        message: error.clone().unwrap_or_else(|| message.clone()),
    };
    Verdict::Problem {
        message,
        error,
        warning,
    }
}

/// A problem whose condition message is `prefix` and the error.
fn problem_with_prefix(prefix: &str, error: String, reason: &'static str) -> Verdict {
    problem(format!("{prefix}{error}"), Some(error), reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::conditions::WithConditions as _;
    use crate::components::deployment_targets::keys::{
        PROVISIONER_DEVSANDBOX, PROVISIONER_NAMESPACE,
    };
    use crate::components::deployment_targets::model::{EventType, Kind};
    use crate::components::deployment_targets::testing::{
        MetaBuilder, applied, claim, class, ctx, first_condition, target, world,
    };

    /// Reconciles claim `c` of namespace `ns`: the outcome, and the world after it.
    fn reconcile(w: World) -> (Outcome, World) {
        let out = reconcile_claim(
            &ObjectRef::new(Kind::DeploymentTargetClaim, "ns", "c"),
            &w,
            &ctx(),
        );
        let after = applied(w, &out);
        (out, after)
    }

    fn the_claim(w: &World) -> &DeploymentTargetClaim {
        w.claim("ns", "c").expect("claim c")
    }

    fn the_target<'a>(w: &'a World, name: &str) -> &'a DeploymentTarget {
        w.target("ns", name).expect("target")
    }

    /// A condition's type, status, reason and message.
    type Shown = (String, String, String, String);

    fn success() -> Shown {
        (
            "ErrorOccurred".into(),
            "False".into(),
            "Success".into(),
            String::new(),
        )
    }

    fn error(message: &str) -> Shown {
        (
            "ErrorOccurred".into(),
            "True".into(),
            "ErrorOccurred".into(),
            message.into(),
        )
    }

    fn kinds(out: &Outcome) -> Vec<String> {
        (out.writes.iter())
            .map(|w| {
                let verb = match w {
                    Write::Create(_) => "Create",
                    Write::Update(_) => "Update",
                    Write::UpdateStatus(_) => "UpdateStatus",
                    Write::Delete(_) => "Delete",
                    Write::CreateKubeconfigSecret { .. } => "CreateKubeconfigSecret",
                    Write::RenewKubeconfigSecret { .. } => "RenewKubeconfigSecret",
                };
                format!("{verb} {}", w.target())
            })
            .collect()
    }

    fn annotations(c: &DeploymentTargetClaim) -> Vec<(&str, &str)> {
        (c.metadata.annotations.iter().flatten())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn a_missing_claim_is_left_alone() {
        let out = reconcile_claim(
            &ObjectRef::new(Kind::DeploymentTargetClaim, "ns", "c"),
            &World::new(),
            &ctx(),
        );
        assert_eq!(out, Outcome::done());
    }

    #[test]
    fn binds_the_first_eligible_target_by_name_as_upstream_orders_its_writes() {
        let (out, w) = reconcile(world([
            claim("c", "cls").object(),
            target("a-released", "cls")
                .phase(TargetPhase::Released)
                .object(),
            target("b-no-credentials", "cls").no_credentials().object(),
            target("c-other-class", "gold").object(),
            target("d-claimed", "cls").claim_ref("x").object(),
            target("e-match", "cls").object(),
            target("f-match", "cls")
                .phase(TargetPhase::Available)
                .object(),
        ]));
        assert_eq!(
            kinds(&out),
            [
                "Update DeploymentTargetClaim ns/c",
                "Update DeploymentTargetClaim ns/c",
                "UpdateStatus DeploymentTargetClaim ns/c",
                "UpdateStatus DeploymentTarget ns/e-match",
                "Update DeploymentTargetClaim ns/c",
                "UpdateStatus DeploymentTargetClaim ns/c",
            ]
        );
        let c = the_claim(&w);
        assert_eq!(c.spec.target_name, "e-match");
        assert_eq!(c.phase(), Some(ClaimPhase::Bound));
        assert_eq!(c.metadata.finalizers, Some(vec![FINALIZER_BINDER.into()]));
        assert_eq!(
            annotations(c),
            [
                (ANN_BIND_COMPLETED, "true"),
                (ANN_BOUND_BY_CONTROLLER, "true")
            ]
        );
        assert_eq!(first_condition(c.conditions()), success());
        let t = the_target(&w, "e-match");
        assert_eq!(t.phase(), Some(TargetPhase::Bound));
        assert_eq!(t.spec.claim_ref, "", "the binder never writes claimRef");
        let reasons: Vec<_> = out
            .events
            .iter()
            .map(|e| (e.reason.as_str(), e.regarding.name.as_str()))
            .collect();
        assert_eq!(reasons, [("Bound", "c"), ("Bound", "e-match")]);
    }

    #[test]
    fn a_bound_claim_reconciled_again_writes_nothing() {
        let (_, w) = reconcile(world([
            claim("c", "cls").object(),
            target("dt", "cls").object(),
        ]));
        let (out, _) = reconcile(w);
        assert_eq!(out.writes, vec![]);
        assert_eq!(out.events, vec![]);
    }

    #[test]
    fn without_a_match_a_claim_with_a_class_is_marked_for_provisioning() {
        let cases = [
            ("cls", vec![(ANN_TARGET_PROVISIONER, "cls")], 1),
            ("", vec![], 0),
        ];
        for (class_name, want, events) in cases {
            let (out, w) = reconcile(world([
                claim("c", class_name).object(),
                target("dt", "other").object(),
            ]));
            let c = the_claim(&w);
            assert_eq!(c.phase(), Some(ClaimPhase::Pending), "class {class_name:?}");
            assert_eq!(annotations(c), want, "class {class_name:?}");
            assert_eq!(out.events.len(), events);
            assert_eq!(first_condition(c.conditions()), success());
        }
    }

    #[test]
    fn a_marked_claim_binds_only_a_target_that_names_it() {
        let marked = || {
            claim("c", "cls")
                .annotation(ANN_TARGET_PROVISIONER, "cls")
                .phase(ClaimPhase::Pending)
        };
        let other = || class("cls", "example.com/other", "Delete");
        let (_, w) = reconcile(world([
            marked().object(),
            other(),
            target("a-free", "cls").object(),
        ]));
        assert_eq!(the_claim(&w).phase(), Some(ClaimPhase::Pending));
        let (_, w) = reconcile(world([
            marked().object(),
            other(),
            target("a-free", "cls").object(),
            target("c-dt", "cls")
                .claim_ref("c")
                .phase(TargetPhase::Available)
                .object(),
        ]));
        assert_eq!(the_claim(&w).spec.target_name, "c-dt");
        assert_eq!(the_claim(&w).phase(), Some(ClaimPhase::Bound));
    }

    #[test]
    fn a_named_target_is_bound_or_waited_for_or_refused_with_upstream_messages() {
        let not_match = "DeploymentTarget dt does not match DeploymentTargetClaim c in namespace ns: deploymentTargetClassName does not match";
        // The target, the claim's phase and condition, the error returned.
        type Case = (&'static str, Vec<Object>, ClaimPhase, Shown, Option<String>);
        let cases: Vec<Case> = vec![
            (
                "missing target: wait",
                vec![],
                ClaimPhase::Pending,
                success(),
                None,
            ),
            (
                "target names the claim: bound without a match check",
                vec![
                    target("dt", "gold")
                        .claim_ref("c")
                        .phase(TargetPhase::Released)
                        .object(),
                ],
                ClaimPhase::Bound,
                success(),
                None,
            ),
            (
                "target names another claim",
                vec![target("dt", "cls").claim_ref("x").object()],
                ClaimPhase::Pending,
                error(
                    "DeploymentTargetClaim wants to claim a DeploymentTarget that is already claimed",
                ),
                None,
            ),
            (
                "free target of another class",
                vec![target("dt", "gold").object()],
                ClaimPhase::Pending,
                error(&format!(
                    "DeploymentTarget does not match the specified DeploymentTargetClaim: {not_match}"
                )),
                Some(not_match.into()),
            ),
            (
                "free matching target",
                vec![target("dt", "cls").object()],
                ClaimPhase::Bound,
                success(),
                None,
            ),
        ];
        for (name, targets, phase, condition, error_returned) in cases {
            let mut objects = vec![
                claim("c", "cls")
                    .target("dt")
                    .phase(ClaimPhase::Pending)
                    .object(),
            ];
            objects.extend(targets);
            let (out, w) = reconcile(world(objects));
            let c = the_claim(&w);
            assert_eq!(c.phase(), Some(phase), "{name}");
            assert_eq!(first_condition(c.conditions()), condition, "{name}");
            assert_eq!(out.error, error_returned, "{name}");
            assert_eq!(
                annotation(&c.metadata, ANN_BOUND_BY_CONTROLLER),
                None,
                "{name}"
            );
            let bound = phase == ClaimPhase::Bound;
            assert_eq!(
                annotation(&c.metadata, ANN_BIND_COMPLETED),
                bound.then_some("true"),
                "{name}"
            );
            let warned = condition.1 == "True";
            assert_eq!(
                out.events
                    .iter()
                    .any(|e| e.type_ == EventType::Warning && e.reason == "BindingConflict"),
                warned,
                "{name}"
            );
        }
    }

    #[test]
    fn a_binder_chosen_target_another_claim_took_first_is_given_up_for_the_next_one() {
        // The state an older binder left when two claims picked the same target: the loser
        // names it and shows Bound, without bind-complete.
        let loser = || {
            claim("c", "cls")
                .target("dt-a")
                .annotation(ANN_BOUND_BY_CONTROLLER, "true")
                .finalizer(FINALIZER_BINDER)
                .phase(ClaimPhase::Bound)
        };
        let winner_by_claim = vec![
            claim("w", "cls")
                .target("dt-a")
                .annotation(ANN_BIND_COMPLETED, "true")
                .object(),
            target("dt-a", "cls").phase(TargetPhase::Bound).object(),
        ];
        let winner_by_claim_ref = vec![
            target("dt-a", "cls")
                .claim_ref("w")
                .phase(TargetPhase::Bound)
                .object(),
        ];
        for (case, others) in [
            ("targetName", winner_by_claim),
            ("claimRef", winner_by_claim_ref),
        ] {
            let mut objects = vec![loser().object(), target("dt-b", "cls").object()];
            objects.extend(others);
            let (out, w) = reconcile(world(objects));
            let c = the_claim(&w);
            assert_eq!(c.spec.target_name, "dt-b", "{case}");
            assert_eq!(c.phase(), Some(ClaimPhase::Bound), "{case}");
            assert_eq!(annotation(&c.metadata, ANN_BIND_COMPLETED), Some("true"));
            assert_eq!(
                annotation(&c.metadata, ANN_BOUND_BY_CONTROLLER),
                Some("true")
            );
            assert!(
                out.events.iter().any(|e| e.reason == "Rematching"),
                "{case}"
            );
            assert_eq!(first_condition(c.conditions()), success(), "{case}");
        }
        // Nothing else free: the claim waits as Pending, marked for its class's provisioner.
        let (_, w) = reconcile(world([
            loser().object(),
            target("dt-a", "cls")
                .claim_ref("w")
                .phase(TargetPhase::Bound)
                .object(),
        ]));
        let c = the_claim(&w);
        assert_eq!(
            (c.spec.target_name.as_str(), c.phase()),
            ("", Some(ClaimPhase::Pending))
        );
        assert_eq!(annotation(&c.metadata, ANN_TARGET_PROVISIONER), Some("cls"));
        // A name the user gave is never given up.
        let named = claim("c", "cls").target("dt-a").phase(ClaimPhase::Pending);
        let (_, w) = reconcile(world([
            named.object(),
            target("dt-a", "cls")
                .claim_ref("w")
                .phase(TargetPhase::Bound)
                .object(),
            target("dt-b", "cls").object(),
        ]));
        assert_eq!(the_claim(&w).spec.target_name, "dt-a");
    }

    fn bound_claim() -> crate::components::deployment_targets::testing::ClaimBuilder {
        claim("c", "cls")
            .annotation(ANN_BIND_COMPLETED, "true")
            .finalizer(FINALIZER_BINDER)
            .phase(ClaimPhase::Bound)
    }

    #[test]
    fn a_bound_claim_whose_target_is_gone_is_lost_and_comes_back() {
        let lost =
            "DeploymentTarget not found for a bounded DeploymentTargetClaim c in namespace ns";
        for claim in [bound_claim(), bound_claim().target("dt")] {
            let (out, w) = reconcile(world([
                claim.object(),
                target("other", "cls").claim_ref("x").object(),
            ]));
            assert_eq!(the_claim(&w).phase(), Some(ClaimPhase::Lost));
            assert_eq!(out.error.as_deref(), Some(lost));
            let message = format!("failed to process bound DeploymentTargetClaim: {lost}");
            assert_eq!(first_condition(the_claim(&w).conditions()), error(&message));
            assert!(
                out.events
                    .iter()
                    .any(|e| e.reason == "Lost" && e.type_ == EventType::Warning)
            );
            let mut back = w.clone();
            back.insert(target("dt", "cls").claim_ref("c").object());
            let (out, w) = reconcile(back);
            assert_eq!(the_claim(&w).phase(), Some(ClaimPhase::Bound));
            assert_eq!(the_target(&w, "dt").phase(), Some(TargetPhase::Bound));
            assert_eq!(first_condition(the_claim(&w).conditions()), success());
            assert_eq!(out.error, None);
        }
    }

    #[test]
    fn a_bound_claim_with_a_conflicting_or_doubled_target_reports_upstream_errors() {
        let error_text = "failed to get a DeploymentTarget for the given DeploymentTargetClaim c";
        let cases = [
            (
                bound_claim().target("dt"),
                vec![target("dt", "cls").claim_ref("x").object()],
            ),
            (
                bound_claim(),
                vec![
                    target("a", "cls").claim_ref("c").object(),
                    target("b", "cls").claim_ref("c").object(),
                ],
            ),
        ];
        for (claim, targets) in cases {
            let mut objects = vec![claim.object()];
            objects.extend(targets);
            let (out, w) = reconcile(world(objects));
            assert_eq!(out.error.as_deref(), Some(error_text));
            let message = format!("failed to process bound DeploymentTargetClaim: {error_text}");
            assert_eq!(first_condition(the_claim(&w).conditions()), error(&message));
            assert_eq!(
                the_claim(&w).phase(),
                Some(ClaimPhase::Bound),
                "not Lost: the target exists"
            );
        }
    }

    #[test]
    fn a_bound_claims_provisioner_annotation_follows_its_class() {
        let cases = [("cls", Some("cls")), ("", None)];
        for (class_name, want) in cases {
            let c = bound_claim()
                .annotation(ANN_TARGET_PROVISIONER, "stale")
                .target("dt");
            let mut c = c.build();
            c.spec.deployment_target_class_name = class_name.into();
            let (_, w) = reconcile(world([
                Object::Claim(c),
                target("dt", class_name).claim_ref("c").object(),
            ]));
            assert_eq!(
                annotation(&the_claim(&w).metadata, ANN_TARGET_PROVISIONER),
                want
            );
            assert_eq!(the_claim(&w).phase(), Some(ClaimPhase::Bound));
        }
    }

    #[test]
    fn a_marked_pending_claim_asks_its_class_provisioner() {
        let marked = || {
            claim("c", "cls")
                .annotation(ANN_TARGET_PROVISIONER, "cls")
                .phase(ClaimPhase::Pending)
                .finalizer(FINALIZER_BINDER)
        };
        let missing = "DeploymentTargetClaim c does not have a matching DeploymentTargetClass cls: the resource could not be found on the cluster";
        let (out, w) = reconcile(world([marked().object()]));
        assert_eq!(out.error.as_deref(), Some(missing));
        let message = format!("unable to handle provisioning of SpaceRequest: {missing}");
        assert_eq!(first_condition(the_claim(&w).conditions()), error(&message));

        let (out, _) = reconcile(world([
            marked().object(),
            class("cls", "example.com/unknown", "Delete"),
        ]));
        assert_eq!(
            out.writes.len(),
            1,
            "only the Success condition: {:?}",
            kinds(&out)
        );

        let (_, w) = reconcile(world([
            marked().object(),
            class("cls", PROVISIONER_DEVSANDBOX, "Delete"),
        ]));
        assert_eq!(w.space_requests("ns").count(), 1);
        let (_, w) = reconcile(world([
            marked().object(),
            class("cls", PROVISIONER_NAMESPACE, "Delete"),
        ]));
        assert!(w.namespace("ns--c").is_some());
        assert_eq!(the_target(&w, "c-dt").phase(), Some(TargetPhase::Available));
        assert_eq!(
            the_claim(&w).phase(),
            Some(ClaimPhase::Pending),
            "bound on the next reconcile"
        );
        let (_, w) = reconcile(w);
        assert_eq!(the_claim(&w).phase(), Some(ClaimPhase::Bound));
        assert_eq!(the_claim(&w).spec.target_name, "c-dt");
    }

    #[test]
    fn a_deleted_unbound_claim_just_loses_its_finalizer() {
        let (out, w) = reconcile(world([
            claim("c", "cls")
                .finalizer(FINALIZER_BINDER)
                .deleting(0)
                .object(),
            target("dt", "cls").claim_ref("c").object(),
        ]));
        assert!(w.claim("ns", "c").is_none());
        assert_eq!(
            the_target(&w, "dt").spec.claim_ref,
            "c",
            "targets naming it are left"
        );
        assert_eq!(
            kinds(&out),
            ["Update DeploymentTargetClaim ns/c"],
            "no condition on a claim that is gone"
        );
    }

    #[test]
    fn a_deleted_bound_claim_releases_its_target_by_reclaim_policy() {
        for policy in ["Delete", "Retain", "Keep"] {
            let (out, w) = reconcile(world([
                bound_claim().target("dt").deleting(0).object(),
                target("dt", "cls")
                    .claim_ref("c")
                    .phase(TargetPhase::Bound)
                    .object(),
                class("cls", PROVISIONER_NAMESPACE, policy),
            ]));
            assert!(w.claim("ns", "c").is_none(), "{policy}");
            let t = the_target(&w, "dt");
            assert_eq!(t.phase(), Some(TargetPhase::Released), "{policy}");
            assert_eq!(t.spec.claim_ref, "", "{policy}");
            assert_eq!(
                t.metadata.finalizers,
                Some(vec![FINALIZER_DT.into()]),
                "{policy}"
            );
            assert_eq!(
                t.metadata.deletion_timestamp.is_some(),
                policy == "Delete",
                "{policy}"
            );
            assert!(
                out.events.iter().any(|e| e.reason == "Released"),
                "{policy}"
            );
        }
    }

    #[test]
    fn a_deleted_bound_claim_waits_for_its_targets_class() {
        let (out, w) = reconcile(world([
            bound_claim().target("dt").deleting(0).object(),
            target("dt", "cls").claim_ref("c").object(),
        ]));
        assert_eq!(
            first_condition(the_claim(&w).conditions()),
            error("unable to locate matching DTClass for DT")
        );
        assert_eq!(
            out.error.as_deref(),
            Some(
                "unable to retrieve DeploymentTargetClass 'cls' referenced by DeploymentTarget: deploymenttargetclasses.appstudio.redhat.com \"cls\" not found"
            )
        );
        assert!(w.claim("ns", "c").unwrap().metadata.finalizers.is_some());
    }

    #[test]
    fn a_deleted_bound_claim_without_its_target_goes() {
        let (_, w) = reconcile(world([bound_claim().target("dt").deleting(0).object()]));
        assert!(w.claim("ns", "c").is_none());
    }

    #[test]
    fn target_events_reach_the_claims_that_name_it_or_that_it_names() {
        let w = world([
            claim("by-target-name", "cls").target("dt").object(),
            claim("named-by-claim-ref", "cls").object(),
            claim("other", "cls").target("x").object(),
            claim("elsewhere", "cls")
                .in_namespace("other")
                .target("dt")
                .object(),
        ]);
        let dt = target("dt", "cls").claim_ref("named-by-claim-ref").build();
        let names: Vec<String> = claims_for_target(&dt, &w)
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["by-target-name", "named-by-claim-ref"]);
    }
}
