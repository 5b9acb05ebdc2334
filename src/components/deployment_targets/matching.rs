//! Which DeploymentTarget a claim may bind, or is bound to (spec A.5): `doesDTMatchDTC`,
//! `checkForBindingConflict`, `findMatchingDTForDTC` and `getDTBoundByDTC`, with upstream's
//! messages. Matching is by class name only; the first eligible target in listing order (by
//! name) wins, as upstream has it (no scoring).

use super::keys::ANN_TARGET_PROVISIONER;
use super::meta::{annotation, name, namespace};
use super::model::World;
use super::types::{DeploymentTarget, DeploymentTargetClaim, TargetPhase};

/// Why a target may not be bound to a claim: a `doesDTMatchDTC` mismatch or a
/// `checkForBindingConflict` conflict, each with upstream's reason. Kept apart from the
/// message so that matching, which tries every target of a namespace, formats nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    Mismatch(&'static str),
    Conflict(&'static str),
}

/// `doesDTMatchDTC`'s checks in its order, then `checkForBindingConflict`'s.
fn refusal(target: &DeploymentTarget, claim: &DeploymentTargetClaim) -> Option<Refusal> {
    let claim_ref = target.spec.claim_ref.as_str();
    if !claim_ref.is_empty() && claim_ref != name(&claim.metadata) {
        return Some(Refusal::Mismatch(
            "DeploymentTarget already references another DeploymentTargetClaim via DeploymentTarget's .spec.claimRef field",
        ));
    }
    if target.spec.deployment_target_class_name != claim.spec.deployment_target_class_name {
        return Some(Refusal::Mismatch(
            "deploymentTargetClassName does not match",
        ));
    }
    // No phase ("") is as good as Available: user-made targets have none.
    if !matches!(target.phase(), None | Some(TargetPhase::Available)) {
        return Some(Refusal::Mismatch(
            "DeploymentTarget is not in Available phase",
        ));
    }
    if target.spec.kubernetes_credentials.is_empty() {
        return Some(Refusal::Mismatch(
            "DeploymentTarget does not have cluster credentials",
        ));
    }
    binding_conflict(claim, target).map(Refusal::Conflict)
}

/// `checkForBindingConflict`'s reason, if a claim and a target point at others.
fn binding_conflict(
    claim: &DeploymentTargetClaim,
    target: &DeploymentTarget,
) -> Option<&'static str> {
    let claim_name = name(&claim.metadata);
    let target_name = name(&target.metadata);
    let wanted = claim.spec.target_name.as_str();
    let claim_ref = target.spec.claim_ref.as_str();
    let wants_this_or_any = wanted == target_name || wanted.is_empty();
    if wants_this_or_any && !claim_ref.is_empty() && claim_ref != claim_name {
        return Some("DeploymentTarget has a claimRef to another DeploymentTargetClaim");
    }
    let free_or_ours = claim_ref == claim_name || claim_ref.is_empty();
    if free_or_ours && !wanted.is_empty() && wanted != target_name {
        return Some("DeploymentTargetClaim targets a DeploymentTarget that is already claimed");
    }
    None
}

/// `doesDTMatchDTC`: whether `target` may be bound to `claim`; else why not, in upstream's words.
pub fn target_matches_claim(
    target: &DeploymentTarget,
    claim: &DeploymentTargetClaim,
) -> Result<(), String> {
    match refusal(target, claim) {
        None => Ok(()),
        Some(Refusal::Mismatch(reason)) => Err(format!(
            "DeploymentTarget {} does not match DeploymentTargetClaim {} in namespace {}: {reason}",
            name(&target.metadata),
            name(&claim.metadata),
            namespace(&claim.metadata),
        )),
        Some(Refusal::Conflict(reason)) => Err(conflict_message(claim, target, reason)),
    }
}

/// `checkForBindingConflict`: a claim and a target that point at others.
pub fn check_binding_conflict(
    claim: &DeploymentTargetClaim,
    target: &DeploymentTarget,
) -> Result<(), String> {
    match binding_conflict(claim, target) {
        None => Ok(()),
        Some(reason) => Err(conflict_message(claim, target, reason)),
    }
}

fn conflict_message(
    claim: &DeploymentTargetClaim,
    target: &DeploymentTarget,
    reason: &str,
) -> String {
    format!(
        "cannot bind DeploymentTargetClaim {} with target {:?} to DeploymentTarget {} with claim ref {:?}: {reason}",
        name(&claim.metadata),
        claim.spec.target_name,
        name(&target.metadata),
        target.spec.claim_ref,
    )
}

/// Whether the binder marked the claim for dynamic provisioning.
pub fn is_marked_for_provisioning(claim: &DeploymentTargetClaim) -> bool {
    annotation(&claim.metadata, ANN_TARGET_PROVISIONER).is_some()
}

/// `findMatchingDTForDTC`: the first target (by name) in the claim's namespace it may bind. A
/// claim marked for dynamic provisioning waits for a target that names it in `claimRef`.
pub fn find_matching_target<'a>(
    claim: &DeploymentTargetClaim,
    world: &'a World,
) -> Option<&'a DeploymentTarget> {
    let marked = is_marked_for_provisioning(claim);
    let claim_name = name(&claim.metadata);
    (world.targets(namespace(&claim.metadata)))
        .find(|t| (!marked || t.spec.claim_ref == claim_name) && refusal(t, claim).is_none())
}

/// Why [`bound_target`] found no single target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoundTargetError {
    /// `spec.targetName` names a target that does not exist.
    NotFound,
    /// A binding conflict, or several targets naming the claim.
    Other(String),
}

/// `getDTBoundByDTC`: the target `spec.targetName` names (which must not conflict), else the
/// only one whose `claimRef` names the claim (`Ok(None)` when none does).
pub fn bound_target<'a>(
    claim: &DeploymentTargetClaim,
    world: &'a World,
) -> Result<Option<&'a DeploymentTarget>, BoundTargetError> {
    let ns = namespace(&claim.metadata);
    let claim_name = name(&claim.metadata);
    if !claim.spec.target_name.is_empty() {
        let target = world.target(ns, &claim.spec.target_name);
        let target = target.ok_or(BoundTargetError::NotFound)?;
        check_binding_conflict(claim, target).map_err(BoundTargetError::Other)?;
        return Ok(Some(target));
    }
    let mut naming = world.targets(ns).filter(|t| t.spec.claim_ref == claim_name);
    let first = naming.next();
    if first.is_some() && naming.next().is_some() {
        return Err(BoundTargetError::Other(format!(
            "multiple DeploymentTargets found for a bounded DeploymentTargetClaim {claim_name}"
        )));
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::model::Object;
    use crate::components::deployment_targets::testing::{
        ClaimBuilder, MetaBuilder, TargetBuilder, claim, target,
    };

    #[test]
    fn does_target_match_claim_checks_in_upstream_order() {
        let prefix = "DeploymentTarget dt does not match DeploymentTargetClaim c in namespace ns: ";
        let cases: Vec<(&str, TargetBuilder, ClaimBuilder, Option<&str>)> = vec![
            (
                "same class, no phase, credentials",
                target("dt", "cls"),
                claim("c", "cls"),
                None,
            ),
            (
                "Available",
                target("dt", "cls").phase(TargetPhase::Available),
                claim("c", "cls"),
                None,
            ),
            (
                "claimRef to this claim",
                target("dt", "cls").claim_ref("c"),
                claim("c", "cls"),
                None,
            ),
            (
                "claimRef to another claim comes first",
                target("dt", "other")
                    .claim_ref("x")
                    .phase(TargetPhase::Bound),
                claim("c", "cls"),
                Some(
                    "DeploymentTarget already references another DeploymentTargetClaim via DeploymentTarget's .spec.claimRef field",
                ),
            ),
            (
                "class",
                target("dt", "other").phase(TargetPhase::Bound),
                claim("c", "cls"),
                Some("deploymentTargetClassName does not match"),
            ),
            (
                "phase",
                target("dt", "cls").phase(TargetPhase::Released),
                claim("c", "cls"),
                Some("DeploymentTarget is not in Available phase"),
            ),
            (
                "credentials",
                target("dt", "cls").no_credentials(),
                claim("c", "cls"),
                Some("DeploymentTarget does not have cluster credentials"),
            ),
        ];
        for (name, dt, dtc, want) in cases {
            let got = target_matches_claim(&dt.build(), &dtc.build());
            assert_eq!(
                got,
                want.map(|w| Err(format!("{prefix}{w}"))).unwrap_or(Ok(())),
                "{name}"
            );
        }
        let conflicting = target_matches_claim(
            &target("dt", "cls").build(),
            &claim("c", "cls").target("other").build(),
        );
        assert_eq!(
            conflicting.unwrap_err(),
            "cannot bind DeploymentTargetClaim c with target \"other\" to DeploymentTarget dt with claim ref \"\": DeploymentTargetClaim targets a DeploymentTarget that is already claimed"
        );
    }

    /// Upstream's `doesDTMatchDTC` binds only a target whose phase is `""` or `Available`; a
    /// phase no controller writes is kept as written and refused like any other.
    #[test]
    fn only_no_phase_or_available_matches() {
        let cases: Vec<(Option<TargetPhase>, bool)> = vec![
            (None, true),
            (TargetPhase::parse(""), true),
            (Some(TargetPhase::Available), true),
            (Some(TargetPhase::Pending), false),
            (Some(TargetPhase::Bound), false),
            (Some(TargetPhase::Released), false),
            (Some(TargetPhase::Failed), false),
            (TargetPhase::parse("Bogus"), false),
            (TargetPhase::parse("available"), false),
        ];
        for (phase, matches) in cases {
            let mut dt = target("dt", "cls");
            if let Some(phase) = phase.clone() {
                dt = dt.phase(phase);
            }
            let dt = dt.build();
            let got = target_matches_claim(&dt, &claim("c", "cls").build());
            assert_eq!(got.is_ok(), matches, "{phase:?}: {got:?}");
            if !matches {
                assert!(
                    got.unwrap_err()
                        .ends_with("DeploymentTarget is not in Available phase"),
                    "{phase:?}"
                );
            }
            let world = crate::components::deployment_targets::testing::world([Object::Target(dt)]);
            assert_eq!(
                find_matching_target(&claim("c", "cls").build(), &world).is_some(),
                matches,
                "{phase:?}"
            );
        }
        // Read from and written back to JSON as it was.
        let read: crate::components::deployment_targets::types::DeploymentTargetStatus =
            serde_json::from_value(serde_json::json!({"phase": "Bogus"})).unwrap();
        assert_eq!(read.phase, Some(TargetPhase::Other("Bogus".into())));
        assert_eq!(serde_json::to_value(&read).unwrap()["phase"], "Bogus");
        let none: crate::components::deployment_targets::types::DeploymentTargetStatus =
            serde_json::from_value(serde_json::json!({"phase": ""})).unwrap();
        assert_eq!(none.phase, None);
    }

    #[test]
    fn binding_conflicts_have_upstream_messages() {
        let cases = [
            ("", "", None),
            ("dt", "c", None),
            ("", "c", None),
            ("dt", "", None),
            (
                "",
                "x",
                Some((
                    "\"\"",
                    "\"x\"",
                    "DeploymentTarget has a claimRef to another DeploymentTargetClaim",
                )),
            ),
            (
                "dt",
                "x",
                Some((
                    "\"dt\"",
                    "\"x\"",
                    "DeploymentTarget has a claimRef to another DeploymentTargetClaim",
                )),
            ),
            (
                "other",
                "c",
                Some((
                    "\"other\"",
                    "\"c\"",
                    "DeploymentTargetClaim targets a DeploymentTarget that is already claimed",
                )),
            ),
            (
                "other",
                "",
                Some((
                    "\"other\"",
                    "\"\"",
                    "DeploymentTargetClaim targets a DeploymentTarget that is already claimed",
                )),
            ),
            ("other", "x", None),
        ];
        for (wanted, claim_ref, want) in cases {
            let dtc = claim("c", "cls").target(wanted).build();
            let dt = target("dt", "cls").claim_ref(claim_ref).build();
            let want = want.map(|(t, r, reason)| {
                format!("cannot bind DeploymentTargetClaim c with target {t} to DeploymentTarget dt with claim ref {r}: {reason}")
            });
            assert_eq!(
                check_binding_conflict(&dtc, &dt).err(),
                want,
                "target {wanted:?}, claimRef {claim_ref:?}"
            );
        }
    }

    fn world(targets: Vec<DeploymentTarget>) -> World {
        let mut world = World::new();
        for t in targets {
            world.insert(Object::Target(t));
        }
        world
    }

    #[test]
    fn the_first_eligible_target_by_name_matches() {
        let w = world(vec![
            target("c-bound", "cls").phase(TargetPhase::Bound).build(),
            target("b-other-class", "gold").build(),
            target("d-second", "cls").build(),
            target("c-first", "cls")
                .phase(TargetPhase::Available)
                .build(),
        ]);
        let found = find_matching_target(&claim("c", "cls").build(), &w);
        assert_eq!(found.map(|t| name(&t.metadata)), Some("c-first"));
    }

    #[test]
    fn a_claim_marked_for_provisioning_only_takes_a_target_naming_it() {
        let w = world(vec![
            target("a-free", "cls").build(),
            target("b-mine", "cls")
                .claim_ref("c")
                .phase(TargetPhase::Available)
                .build(),
        ]);
        let marked = claim("c", "cls")
            .annotation(ANN_TARGET_PROVISIONER, "cls")
            .build();
        assert_eq!(
            find_matching_target(&marked, &w).map(|t| name(&t.metadata)),
            Some("b-mine")
        );
        let unmarked = claim("c", "cls").build();
        assert_eq!(
            find_matching_target(&unmarked, &w).map(|t| name(&t.metadata)),
            Some("a-free")
        );
    }

    #[test]
    fn bound_target_by_name_or_by_claim_ref() {
        let w = world(vec![
            target("a", "cls").claim_ref("c").build(),
            target("b", "cls").claim_ref("d").build(),
            target("e", "cls").claim_ref("d").build(),
        ]);
        let found = |c: DeploymentTargetClaim| {
            bound_target(&c, &w).map(|t| t.map(|t| name(&t.metadata).to_owned()))
        };
        assert_eq!(found(claim("c", "cls").build()), Ok(Some("a".into())));
        assert_eq!(
            found(claim("c", "cls").target("a").build()),
            Ok(Some("a".into()))
        );
        assert_eq!(found(claim("z", "cls").build()), Ok(None));
        assert_eq!(
            found(claim("c", "cls").target("gone").build()),
            Err(BoundTargetError::NotFound)
        );
        assert_eq!(
            found(claim("d", "cls").build()),
            Err(BoundTargetError::Other(
                "multiple DeploymentTargets found for a bounded DeploymentTargetClaim d".into()
            ))
        );
        let conflict = found(claim("c", "cls").target("b").build()).unwrap_err();
        assert!(
            matches!(conflict, BoundTargetError::Other(m) if m.ends_with("DeploymentTarget has a claimRef to another DeploymentTargetClaim"))
        );
    }
}
