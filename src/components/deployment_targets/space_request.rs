//! The SpaceRequest reconciler (spec A.6): the half of the devsandbox provisioner that turns a
//! SpaceRequest the toolchain made ready into the DeploymentTarget `<claim>-dt`, and deletes
//! SpaceRequests whose claim is gone. SpaceRequests belong to the toolchain, so it writes no
//! condition on them: an error is only returned (and retried).

use super::keys::{LABEL_CLAIM, LABEL_TARGET, PROVISIONER_DEVSANDBOX};
use super::meta::{is_deleting, label, name, set_label};
use super::model::{Context, EventType, Object, ObjectRef, Outcome, World, Write};
use super::provisioner::devsandbox::ready_condition;
use super::types::{
    DeploymentTarget, DeploymentTargetClaim, DeploymentTargetSpec, KubernetesCredentials,
    ReclaimPolicy, SpaceRequest, TargetPhase,
};

/// Reconciles one SpaceRequest.
pub fn reconcile_space_request(request: &ObjectRef, world: &World, ctx: &Context) -> Outcome {
    let mut out = Outcome::done();
    let Some(sr) = world.space_request(&request.namespace, &request.name) else {
        return out;
    };
    let Some(claim) = label(&sr.metadata, LABEL_CLAIM).filter(|_| !is_deleting(&sr.metadata))
    else {
        return out;
    };
    match orphaned(sr, claim, world) {
        Err(e) => out.error = Some(e),
        Ok(true) => {
            out.writes.push(Write::Delete(request.clone()));
            let message = format!("deleted: its DeploymentTargetClaim {claim} no longer exists");
            out.event(request.clone(), EventType::Normal, "Orphaned", message);
        }
        Ok(false) if ready_with_one_namespace(sr) => {
            if let Err(e) = ensure_target(&mut out, sr, world, ctx) {
                out.error = Some(e);
            }
        }
        Ok(false) => {}
    }
    out
}

/// Whether the SpaceRequest's claim is gone and the devsandbox class (the last one listed)
/// says `Delete`; an error when there is no devsandbox class.
fn orphaned(sr: &SpaceRequest, claim: &str, world: &World) -> Result<bool, String> {
    let class = (world.classes())
        .filter(|c| c.spec.provisioner == PROVISIONER_DEVSANDBOX)
        .last();
    let class = class.ok_or("unable to locate dev sandbox provisioner DeploymentTargetClass")?;
    let ns = sr.metadata.namespace.as_deref().unwrap_or("");
    Ok(class.reclaim_policy() == Some(ReclaimPolicy::Delete) && world.claim(ns, claim).is_none())
}

/// Ready (`True`) with exactly one namespace: more than one is not supported (as upstream).
fn ready_with_one_namespace(sr: &SpaceRequest) -> bool {
    let Some(status) = &sr.status else {
        return false;
    };
    let ready = ready_condition(sr).is_some_and(|c| c.status == "True");
    ready && status.namespace_access.len() == 1
}

/// The target of the SpaceRequest, made if missing, and the SpaceRequest labelled with it.
fn ensure_target(
    out: &mut Outcome,
    sr: &SpaceRequest,
    world: &World,
    ctx: &Context,
) -> Result<(), String> {
    let target = match target_for_space_request(sr, world)? {
        Some(t) => name(&t.metadata).to_owned(),
        None => create_target(out, sr, world, ctx)?,
    };
    let mut labelled = sr.clone();
    if set_label(&mut labelled.metadata, LABEL_TARGET, &target) {
        out.writes
            .push(Write::Update(Object::SpaceRequest(labelled)));
    }
    Ok(())
}

/// `findMatchingDTForSpaceRequest`: the target its `appstudio.openshift.io/dt` label names,
/// else the first one whose `claimRef` names its claim, which must exist.
pub fn target_for_space_request<'a>(
    sr: &SpaceRequest,
    world: &'a World,
) -> Result<Option<&'a DeploymentTarget>, String> {
    let ns = sr.metadata.namespace.as_deref().unwrap_or("");
    if let Some(t) = label(&sr.metadata, LABEL_TARGET).and_then(|t| world.target(ns, t)) {
        return Ok(Some(t));
    }
    let claim = claim_of(sr, world)?;
    Ok((world.targets(ns)).find(|t| t.spec.claim_ref == name(&claim.metadata)))
}

/// `findMatchingDTCForSpaceRequest`, with the API server's not-found message.
fn claim_of<'a>(sr: &SpaceRequest, world: &'a World) -> Result<&'a DeploymentTargetClaim, String> {
    let ns = sr.metadata.namespace.as_deref().unwrap_or("");
    let Some(c) = label(&sr.metadata, LABEL_CLAIM) else {
        return Err(format!(
            "no '{LABEL_CLAIM}' label is set for spacerequest '{}' '{ns}'",
            name(&sr.metadata)
        ));
    };
    world.claim(ns, c).ok_or_else(|| {
        format!("unable to locate DTC with name '{c}' in Namespace '{ns}': deploymenttargetclaims.appstudio.redhat.com \"{c}\" not found")
    })
}

/// Creates `<claim>-dt` from the SpaceRequest's namespace and secret, then makes it Available.
fn create_target(
    out: &mut Outcome,
    sr: &SpaceRequest,
    world: &World,
    ctx: &Context,
) -> Result<String, String> {
    let claim = claim_of(sr, world)
        .map_err(|e| format!("unable to locate matching DTC for SpaceRequest: {e}"))?;
    let ns = sr.metadata.namespace.as_deref().unwrap_or("");
    let dt_name = format!("{}-dt", name(&claim.metadata));
    if world.target(ns, &dt_name).is_some() {
        return Err(format!(
            "deploymenttargets.appstudio.redhat.com \"{dt_name}\" already exists"
        ));
    }
    let mut target = new_target(sr, claim, &dt_name, ctx);
    out.writes
        .push(Write::Create(Object::Target(target.clone())));
    target.set_phase(TargetPhase::Available);
    out.writes.push(Write::UpdateStatus(Object::Target(target)));
    let message = format!(
        "provisioned DeploymentTarget {dt_name} from SpaceRequest {}",
        name(&sr.metadata)
    );
    out.event(
        Object::Claim(claim.clone()).reference(),
        EventType::Normal,
        "Provisioned",
        message,
    );
    Ok(dt_name)
}

fn new_target(
    sr: &SpaceRequest,
    claim: &DeploymentTargetClaim,
    dt_name: &str,
    ctx: &Context,
) -> DeploymentTarget {
    let status = sr.status.clone().unwrap_or_default();
    let access = status.namespace_access.first().cloned().unwrap_or_default();
    let spec = DeploymentTargetSpec {
        deployment_target_class_name: claim.spec.deployment_target_class_name.clone(),
        kubernetes_credentials: KubernetesCredentials {
            default_namespace: access.name,
            api_url: status.target_cluster_url,
            cluster_credentials_secret: access.secret_ref,
            allow_insecure_skip_tls_verify: ctx.insecure_provisioned_targets,
        },
        claim_ref: name(&claim.metadata).to_owned(),
    };
    let mut target = DeploymentTarget::new(dt_name, spec);
    target.metadata.namespace = claim.metadata.namespace.clone();
    super::provisioner::mark_provisioned(&mut target, claim, PROVISIONER_DEVSANDBOX);
    target
}

/// The DeploymentTarget reconciler's watch on SpaceRequests: the target a SpaceRequest is for.
pub fn targets_for_space_request(sr: &SpaceRequest, world: &World) -> Vec<ObjectRef> {
    match target_for_space_request(sr, world) {
        Ok(Some(t)) => vec![Object::Target(t.clone()).reference()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::keys::{
        ANN_DYNAMICALLY_PROVISIONED, ANN_TARGET_PROVISIONER, LABEL_TARGET_PROVISIONER,
    };
    use crate::components::deployment_targets::meta::annotation;
    use crate::components::deployment_targets::model::Kind;
    use crate::components::deployment_targets::testing::{
        MetaBuilder, applied, claim, class, ctx, space_request, target, world,
    };

    const READY: Option<(&str, &str)> = Some(("True", "Ready"));
    const ACCESS: &[(&str, &str)] = &[("member-ns", "member-secret")];

    fn reconcile_with(w: World, ctx: &Context) -> (Outcome, World) {
        let out = reconcile_space_request(&ObjectRef::new(Kind::SpaceRequest, "ns", "sr"), &w, ctx);
        let after = applied(w, &out);
        (out, after)
    }

    fn reconcile(w: World) -> (Outcome, World) {
        reconcile_with(w, &ctx())
    }

    fn sandbox(policy: &str) -> Object {
        class("sandbox", PROVISIONER_DEVSANDBOX, policy)
    }

    fn ready(labels: &[(&str, &str)]) -> Object {
        Object::SpaceRequest(space_request("sr", labels, READY, ACCESS))
    }

    #[test]
    fn makes_the_target_of_a_ready_space_request_and_labels_it() {
        let marked = claim("c", "cls")
            .annotation(ANN_TARGET_PROVISIONER, "cls")
            .object();
        let mut insecure = ctx();
        insecure.insecure_provisioned_targets = true;
        let (out, w) = reconcile_with(
            world([marked, sandbox("Delete"), ready(&[(LABEL_CLAIM, "c")])]),
            &insecure,
        );
        assert_eq!(out.error, None);
        let dt = w.target("ns", "c-dt").expect("c-dt");
        assert_eq!(dt.phase(), Some(TargetPhase::Available));
        assert_eq!(
            dt.spec,
            DeploymentTargetSpec {
                deployment_target_class_name: "cls".into(),
                kubernetes_credentials: KubernetesCredentials {
                    default_namespace: "member-ns".into(),
                    api_url: "https://member.example:6443".into(),
                    cluster_credentials_secret: "member-secret".into(),
                    allow_insecure_skip_tls_verify: true,
                },
                claim_ref: "c".into(),
            }
        );
        assert_eq!(label(&dt.metadata, LABEL_TARGET_PROVISIONER), Some("cls"));
        assert_eq!(
            annotation(&dt.metadata, ANN_DYNAMICALLY_PROVISIONED),
            Some(PROVISIONER_DEVSANDBOX)
        );
        assert_eq!(
            label(&w.space_request("ns", "sr").unwrap().metadata, LABEL_TARGET),
            Some("c-dt")
        );
        assert_eq!(out.events[0].reason, "Provisioned");
        let (again, _) = reconcile(w);
        assert_eq!(again.writes, vec![]);
    }

    #[test]
    fn finds_an_existing_target_by_label_or_claim_ref() {
        let cases = [
            (
                vec![(LABEL_CLAIM, "c"), (LABEL_TARGET, "mine")],
                target("mine", "cls").object(),
                "mine",
            ),
            (
                vec![(LABEL_CLAIM, "c")],
                target("named", "cls").claim_ref("c").object(),
                "named",
            ),
        ];
        for (labels, existing, want) in cases {
            let (out, w) = reconcile(world([
                claim("c", "cls").object(),
                sandbox("Delete"),
                ready(&labels),
                existing,
            ]));
            assert_eq!(out.error, None);
            assert!(w.target("ns", "c-dt").is_none());
            let sr = w.space_request("ns", "sr").unwrap();
            assert_eq!(label(&sr.metadata, LABEL_TARGET), Some(want));
            assert_eq!(
                targets_for_space_request(sr, &w),
                vec![ObjectRef::new(Kind::DeploymentTarget, "ns", want)]
            );
        }
    }

    #[test]
    fn waits_for_ready_and_exactly_one_namespace() {
        let requests = [
            space_request("sr", &[(LABEL_CLAIM, "c")], None, ACCESS),
            space_request(
                "sr",
                &[(LABEL_CLAIM, "c")],
                Some(("False", "Provisioning")),
                ACCESS,
            ),
            space_request("sr", &[(LABEL_CLAIM, "c")], READY, &[]),
            space_request(
                "sr",
                &[(LABEL_CLAIM, "c")],
                READY,
                &[("a", "s"), ("b", "s")],
            ),
        ];
        for sr in requests {
            let (out, _) = reconcile(world([
                claim("c", "cls").object(),
                sandbox("Delete"),
                Object::SpaceRequest(sr),
            ]));
            assert_eq!(out, Outcome::done());
        }
    }

    #[test]
    fn skips_space_requests_being_deleted_or_without_a_claim_label() {
        let deleting = Object::SpaceRequest({
            let mut sr = space_request("sr", &[(LABEL_CLAIM, "c")], READY, ACCESS);
            sr.metadata.deletion_timestamp = Some(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ctx().now),
            );
            sr
        });
        for sr in [deleting, ready(&[])] {
            let (out, _) = reconcile(world([sandbox("Delete"), sr]));
            assert_eq!(out, Outcome::done());
        }
    }

    #[test]
    fn deletes_an_orphan_only_when_the_last_sandbox_class_says_delete() {
        let (_, w) = reconcile(world([sandbox("Delete"), ready(&[(LABEL_CLAIM, "gone")])]));
        assert!(w.space_request("ns", "sr").is_none());
        let classes = [
            class("a", PROVISIONER_DEVSANDBOX, "Delete"),
            class("b", PROVISIONER_DEVSANDBOX, "Retain"),
        ];
        let (out, w) = reconcile(world(
            classes.into_iter().chain([ready(&[(LABEL_CLAIM, "gone")])]),
        ));
        assert!(w.space_request("ns", "sr").is_some());
        assert_eq!(
            out.error.as_deref(),
            Some(
                "unable to locate DTC with name 'gone' in Namespace 'ns': deploymenttargetclaims.appstudio.redhat.com \"gone\" not found"
            )
        );
    }

    #[test]
    fn upstream_errors() {
        let (out, _) = reconcile(world([
            claim("c", "cls").object(),
            ready(&[(LABEL_CLAIM, "c")]),
        ]));
        assert_eq!(
            out.error.as_deref(),
            Some("unable to locate dev sandbox provisioner DeploymentTargetClass")
        );
        let (out, _) = reconcile(world([
            claim("c", "cls").object(),
            sandbox("Delete"),
            ready(&[(LABEL_CLAIM, "c")]),
            target("c-dt", "cls").object(),
        ]));
        assert_eq!(
            out.error.as_deref(),
            Some("deploymenttargets.appstudio.redhat.com \"c-dt\" already exists")
        );
    }
}
