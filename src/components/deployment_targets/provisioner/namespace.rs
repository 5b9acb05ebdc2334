//! `appstudio.redhat.com/namespace`: `cvo`'s own provisioner, which needs nothing outside the
//! cluster. For a claim `C` in namespace `NS` it makes, each only when missing:
//!
//! 1. the Namespace `NS--C` ([`namespace_name`]), labelled with the claim, its namespace and
//!    the target, so that deprovisioning deletes only a namespace made for that target;
//! 2. the ServiceAccount `deployment-target` in it, and the RoleBinding
//!    `deployment-target-admin` giving it the ClusterRole `admin` in that namespace only;
//! 3. the Secret `C-dt-kubeconfig` in `NS`, a kubeconfig for that ServiceAccount (the executor
//!    requests its token);
//! 4. the DeploymentTarget `C-dt` in `NS`, reserved for `C` (`claimRef`), then its status
//!    `Available`. The binder binds it on its next reconcile.
//!
//! Deprovisioning deletes that Secret and that Namespace (only if labelled for the target) and
//! waits until the namespace is gone.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use sha2::Digest as _;

use super::{Changes, Deprovisioned, Deprovisioning, Provisioner};
use crate::components::deployment_targets::keys::{
    ANN_DYNAMICALLY_PROVISIONED, LABEL_CLAIM, LABEL_TARGET, PROVISIONER_NAMESPACE,
};
use crate::components::deployment_targets::meta::{
    annotation, is_deleting, label, name, namespace,
};
use crate::components::deployment_targets::model::{
    Context, Event, EventType, Kind, KubeconfigTemplate, Next, Object, ObjectRef, World, Write,
};
use crate::components::deployment_targets::types::{
    DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, DeploymentTargetSpec,
    KubernetesCredentials, TargetPhase,
};

/// On what the namespace provisioner makes: the namespace of the claim it was made for (the
/// claim's name is under `appstudio.openshift.io/dtc`).
pub const LABEL_CLAIM_NAMESPACE: &str = "appstudio.openshift.io/dtc-namespace";
/// The ServiceAccount in a provisioned namespace whose kubeconfig the target holds.
pub const SERVICE_ACCOUNT: &str = "deployment-target";
/// The RoleBinding of that ServiceAccount to the ClusterRole `admin`, in that namespace only.
pub const ROLE_BINDING: &str = "deployment-target-admin";
/// The ClusterRole the ServiceAccount is given in its namespace: everything in it, but no
/// quota or the namespace itself.
pub const CLUSTER_ROLE: &str = "admin";
/// How long a provisioned namespace may take to go after its target's deletion before the
/// target is `Failed`. The namespace controller deletes every object in it and waits for their
/// finalizers, which takes seconds; a namespace still there after five minutes is stuck (an
/// aggregated API that does not answer, a finalizer no controller removes) and needs a person.
/// Longer than devsandbox's two minutes, which time a SpaceRequest the toolchain already
/// reports as unable to terminate.
pub const DEPROVISION_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// How often to look at a namespace being deleted (besides on its watch events).
pub const DEPROVISION_POLL: Duration = Duration::from_secs(30);

/// The longest claim name it provisions for: `<claim>-dt` is a label value (63 at most).
const MAX_CLAIM_NAME: usize = 60;

pub struct NamespaceProvisioner;

/// The namespace made for claim `claim` of namespace `claim_namespace`: `NS--C` as ADR 8 draws
/// it (`team-a--prod-dtc`). A name that is not a DNS label as it stands (longer than 63, or
/// with dots, which claim names may have) is cut to 54 characters, dots made dashes, and
/// ends with 8 hex digits of a hash of `NS/C`, so that two claims never share one.
pub fn namespace_name(claim_namespace: &str, claim: &str) -> String {
    let plain = format!("{claim_namespace}--{claim}");
    let label = plain.replace('.', "-");
    if label == plain && label.len() <= 63 {
        return label;
    }
    let digest = sha2::Sha256::digest(format!("{claim_namespace}/{claim}"));
    let head: String = label.chars().take(54).collect();
    format!(
        "{}-{}",
        head.trim_end_matches('-'),
        &hex::encode(digest)[..8]
    )
}

/// `<claim>-dt`, the target made for a claim (as devsandbox names it).
pub fn target_name(claim: &str) -> String {
    format!("{claim}-dt")
}

/// `<claim>-dt-kubeconfig`, the Secret in the claim's namespace holding the kubeconfig.
pub fn secret_name(claim: &str) -> String {
    format!("{claim}-dt-kubeconfig")
}

/// The labels of everything made for `claim` of `claim_namespace`.
fn labels(claim_namespace: &str, claim: &str) -> std::collections::BTreeMap<String, String> {
    [
        (LABEL_CLAIM, claim.to_owned()),
        (LABEL_CLAIM_NAMESPACE, claim_namespace.to_owned()),
        (LABEL_TARGET, target_name(claim)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

fn made_meta(
    name: &str,
    namespace: Option<&str>,
    claim_namespace: &str,
    claim: &str,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some(labels(claim_namespace, claim)),
        ..ObjectMeta::default()
    }
}

/// Whether `meta` carries the labels of what was made for the target `target` of namespace
/// `target_namespace`.
fn made_for_target(meta: &ObjectMeta, target_namespace: &str, target: &str) -> bool {
    label(meta, LABEL_TARGET) == Some(target)
        && label(meta, LABEL_CLAIM_NAMESPACE) == Some(target_namespace)
}

impl Provisioner for NamespaceProvisioner {
    fn name(&self) -> &'static str {
        PROVISIONER_NAMESPACE
    }

    fn provisions(&self) -> &'static str {
        "Namespace"
    }

    fn provision(
        &self,
        claim: &DeploymentTargetClaim,
        _class: &DeploymentTargetClass,
        world: &World,
        ctx: &Context,
    ) -> Result<Changes, String> {
        let (ns, c) = (namespace(&claim.metadata), name(&claim.metadata));
        if c.len() > MAX_CLAIM_NAME {
            return Err(format!(
                "the claim name {c} is longer than {MAX_CLAIM_NAME} characters: {PROVISIONER_NAMESPACE} labels what it makes with {}",
                target_name(c)
            ));
        }
        let mut changes = Changes::default();
        let target_ns = namespace_name(ns, c);
        ensure_namespace(&mut changes, world, ns, c, &target_ns)?;
        ensure_access(&mut changes, world, ns, c, &target_ns);
        ensure_secret(&mut changes, world, ns, c, &target_ns, ctx)?;
        ensure_target(&mut changes, world, claim, &target_ns, ctx)?;
        Ok(changes)
    }

    fn deprovision(
        &self,
        target: &DeploymentTarget,
        world: &World,
        ctx: &Context,
    ) -> Deprovisioning {
        let (ns, t) = (namespace(&target.metadata), name(&target.metadata));
        let mut changes = Changes::default();
        let secret = world.secret(
            ns,
            &target
                .spec
                .kubernetes_credentials
                .cluster_credentials_secret,
        );
        if let Some(s) =
            secret.filter(|s| made_for_target(&s.metadata, ns, t) && !is_deleting(&s.metadata))
        {
            changes
                .writes
                .push(Write::Delete(Object::Secret(s.clone()).reference()));
        }
        let made = world.namespace(&target.spec.kubernetes_credentials.default_namespace);
        let state = match made.filter(|n| made_for_target(&n.metadata, ns, t)) {
            None => Deprovisioned::Finished,
            Some(n) if !is_deleting(&n.metadata) => {
                changes
                    .writes
                    .push(Write::Delete(Object::Namespace(n.clone()).reference()));
                let message = format!("deleting namespace {}", name(&n.metadata));
                changes
                    .events
                    .push(event(target, EventType::Normal, "Deprovisioning", message));
                Deprovisioned::Pending(Next::RequeueAfter(DEPROVISION_POLL))
            }
            Some(n) => waiting(target, n, ctx),
        };
        Deprovisioning { changes, state }
    }
}

/// The watch of the namespaces it makes: the target a namespace was made for, whose
/// deprovisioning waits for the namespace to go.
pub fn targets_for_namespace(n: &Namespace, world: &World) -> Vec<ObjectRef> {
    let target_ns = label(&n.metadata, LABEL_CLAIM_NAMESPACE);
    let target = label(&n.metadata, LABEL_TARGET);
    let found = target_ns
        .zip(target)
        .and_then(|(ns, t)| world.target(ns, t));
    (found.iter())
        .map(|t| Object::Target((*t).clone()).reference())
        .collect()
}

/// The namespace `n` is being deleted: wait, or give up once the target has waited too long.
fn waiting(target: &DeploymentTarget, n: &Namespace, ctx: &Context) -> Deprovisioned {
    let since = target.metadata.deletion_timestamp.as_ref().map(|t| t.0);
    let timeout =
        k8s_openapi::jiff::SignedDuration::try_from(DEPROVISION_TIMEOUT).unwrap_or_default();
    let late = since.is_some_and(|s| ctx.now > s + timeout);
    if target.phase() == Some(TargetPhase::Failed) || late {
        return Deprovisioned::Failed(format!(
            "namespace {} is still being deleted {} minutes after the DeploymentTarget's deletion",
            name(&n.metadata),
            DEPROVISION_TIMEOUT.as_secs() / 60
        ));
    }
    Deprovisioned::Pending(Next::RequeueAfter(DEPROVISION_POLL))
}

fn event(regarding: &DeploymentTarget, type_: EventType, reason: &str, message: String) -> Event {
    Event {
        regarding: Object::Target(regarding.clone()).reference(),
        type_,
        reason: reason.to_owned(),
        message,
    }
}

/// The namespace, unless one of that name exists that was not made for this claim.
fn ensure_namespace(
    changes: &mut Changes,
    world: &World,
    ns: &str,
    c: &str,
    target_ns: &str,
) -> Result<(), String> {
    match world.namespace(target_ns) {
        Some(n)
            if label(&n.metadata, LABEL_CLAIM) != Some(c)
                || label(&n.metadata, LABEL_CLAIM_NAMESPACE) != Some(ns) =>
        {
            Err(format!(
                "namespace {target_ns} exists and was not made for DeploymentTargetClaim {c} in namespace {ns}"
            ))
        }
        Some(n) if is_deleting(&n.metadata) => {
            Err(format!("namespace {target_ns} is still being deleted"))
        }
        Some(_) => Ok(()),
        None => {
            let namespace = Namespace {
                metadata: made_meta(target_ns, None, ns, c),
                ..Namespace::default()
            };
            changes
                .writes
                .push(Write::Create(Object::Namespace(namespace)));
            Ok(())
        }
    }
}

/// The ServiceAccount and its RoleBinding to `admin` in the made namespace.
fn ensure_access(changes: &mut Changes, world: &World, ns: &str, c: &str, target_ns: &str) {
    if world.service_account(target_ns, SERVICE_ACCOUNT).is_none() {
        let account = ServiceAccount {
            metadata: made_meta(SERVICE_ACCOUNT, Some(target_ns), ns, c),
            ..ServiceAccount::default()
        };
        changes
            .writes
            .push(Write::Create(Object::ServiceAccount(account)));
    }
    if world.role_binding(target_ns, ROLE_BINDING).is_none() {
        let binding = RoleBinding {
            metadata: made_meta(ROLE_BINDING, Some(target_ns), ns, c),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name: CLUSTER_ROLE.into(),
            },
            subjects: Some(vec![Subject {
                api_group: None,
                kind: "ServiceAccount".into(),
                name: SERVICE_ACCOUNT.into(),
                namespace: Some(target_ns.to_owned()),
            }]),
        };
        changes
            .writes
            .push(Write::Create(Object::RoleBinding(binding)));
    }
}

/// The kubeconfig Secret in the claim's namespace.
fn ensure_secret(
    changes: &mut Changes,
    world: &World,
    ns: &str,
    c: &str,
    target_ns: &str,
    ctx: &Context,
) -> Result<(), String> {
    let secret_name = secret_name(c);
    if let Some(existing) = world.secret(ns, &secret_name) {
        if !made_for_target(&existing.metadata, ns, &target_name(c)) {
            return Err(format!(
                "Secret {secret_name} exists and was not made for DeploymentTargetClaim {c}"
            ));
        }
        return Ok(());
    }
    let settings = &ctx.namespace_provisioner;
    changes.writes.push(Write::CreateKubeconfigSecret {
        secret: Secret {
            metadata: made_meta(&secret_name, Some(ns), ns, c),
            type_: Some("Opaque".into()),
            ..Secret::default()
        },
        service_account: ObjectRef::new(Kind::ServiceAccount, target_ns, SERVICE_ACCOUNT),
        kubeconfig: KubeconfigTemplate {
            server: settings.server.clone(),
            certificate_authority_data: settings.certificate_authority_data.clone(),
            insecure_skip_tls_verify: ctx.insecure_provisioned_targets,
            namespace: target_ns.to_owned(),
            user: SERVICE_ACCOUNT.into(),
        },
    });
    Ok(())
}

/// The target `C-dt`, `Available`; one of that name must be this provisioner's, for this claim.
fn ensure_target(
    changes: &mut Changes,
    world: &World,
    claim: &DeploymentTargetClaim,
    target_ns: &str,
    ctx: &Context,
) -> Result<(), String> {
    let (ns, c) = (namespace(&claim.metadata), name(&claim.metadata));
    let dt_name = target_name(c);
    let mut target = match world.target(ns, &dt_name) {
        Some(existing) => {
            if annotation(&existing.metadata, ANN_DYNAMICALLY_PROVISIONED)
                != Some(PROVISIONER_NAMESPACE)
            {
                return Err(format!(
                    "DeploymentTarget {dt_name} already exists and was not made by the {PROVISIONER_NAMESPACE} provisioner"
                ));
            }
            if existing.spec.claim_ref != c {
                return Err(format!(
                    "DeploymentTarget {dt_name} already exists and does not reference DeploymentTargetClaim {c}"
                ));
            }
            existing.clone()
        }
        None => {
            let target = new_target(claim, target_ns, ctx);
            changes
                .writes
                .push(Write::Create(Object::Target(target.clone())));
            let message =
                format!("provisioned DeploymentTarget {dt_name} in namespace {target_ns}");
            changes.events.push(Event {
                regarding: Object::Claim(claim.clone()).reference(),
                type_: EventType::Normal,
                reason: "Provisioned".into(),
                message,
            });
            target
        }
    };
    // A target made here starts Available; one whose status write was lost gets it now.
    if target.phase().is_none() && target.set_phase(TargetPhase::Available) {
        changes
            .writes
            .push(Write::UpdateStatus(Object::Target(target)));
    }
    Ok(())
}

fn new_target(claim: &DeploymentTargetClaim, target_ns: &str, ctx: &Context) -> DeploymentTarget {
    let (ns, c) = (namespace(&claim.metadata), name(&claim.metadata));
    let spec = DeploymentTargetSpec {
        deployment_target_class_name: claim.spec.deployment_target_class_name.clone(),
        kubernetes_credentials: KubernetesCredentials {
            default_namespace: target_ns.to_owned(),
            api_url: ctx.namespace_provisioner.server.clone(),
            cluster_credentials_secret: secret_name(c),
            allow_insecure_skip_tls_verify: ctx.insecure_provisioned_targets,
        },
        claim_ref: c.to_owned(),
    };
    let mut target = DeploymentTarget::new(&target_name(c), spec);
    target.metadata.namespace = Some(ns.to_owned());
    super::mark_provisioned(&mut target, claim, PROVISIONER_NAMESPACE);
    target
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::keys::{
        ANN_TARGET_PROVISIONER, LABEL_TARGET_PROVISIONER,
    };
    use crate::components::deployment_targets::testing::{
        MetaBuilder, applied, claim, ctx, namespace, target, world,
    };
    use k8s_openapi::api::core::v1::Secret;

    #[test]
    fn namespace_names_are_the_adr_form_or_a_cut_hashed_label() {
        assert_eq!(namespace_name("team-a", "prod-dtc"), "team-a--prod-dtc");
        let dotted = namespace_name("team-a", "prod.v1");
        assert!(
            dotted.starts_with("team-a--prod-v1-") && dotted.len() == "team-a--prod-v1-".len() + 8,
            "{dotted}"
        );
        assert_ne!(
            dotted,
            namespace_name("team-a", "prod-v1"),
            "no two claims share one"
        );
        let long = namespace_name("team-a", &"x".repeat(70));
        assert_eq!(long.len(), 63);
        assert_eq!(long, namespace_name("team-a", &"x".repeat(70)));
        // The cut falls on the separator: the name ends `<53 a>-<hash>`, no dash doubled.
        let cut = namespace_name(&"a".repeat(53), &"b".repeat(20));
        assert_eq!(cut.len(), 62);
        assert!(
            cut.starts_with(&format!("{}-", "a".repeat(53))) && !cut.contains("--"),
            "{cut}"
        );
    }

    fn provision(w: &World, c: &DeploymentTargetClaim) -> Result<Changes, String> {
        let class = DeploymentTargetClass::new("cls", Default::default());
        NamespaceProvisioner.provision(c, &class, w, &ctx())
    }

    fn marked() -> DeploymentTargetClaim {
        claim("c", "cls")
            .annotation(ANN_TARGET_PROVISIONER, "cls")
            .build()
    }

    #[test]
    fn provisions_namespace_access_kubeconfig_and_target_in_order() {
        let mut ctx = ctx();
        ctx.insecure_provisioned_targets = true;
        let class = DeploymentTargetClass::new("cls", Default::default());
        let changes = NamespaceProvisioner
            .provision(&marked(), &class, &World::new(), &ctx)
            .unwrap();
        let order: Vec<String> = changes
            .writes
            .iter()
            .map(|w| w.target().to_string())
            .collect();
        assert_eq!(
            order,
            [
                "Namespace ns--c",
                "ServiceAccount ns--c/deployment-target",
                "RoleBinding ns--c/deployment-target-admin",
                "Secret ns/c-dt-kubeconfig",
                "DeploymentTarget ns/c-dt",
                "DeploymentTarget ns/c-dt",
            ]
        );
        let w = applied(
            World::new(),
            &crate::components::deployment_targets::model::Outcome {
                writes: changes.writes.clone(),
                ..crate::components::deployment_targets::model::Outcome::done()
            },
        );
        let ns = w.namespace("ns--c").unwrap();
        let want_labels = labels("ns", "c");
        assert_eq!(ns.metadata.labels.as_ref(), Some(&want_labels));
        let binding = w.role_binding("ns--c", ROLE_BINDING).unwrap();
        assert_eq!(
            (
                binding.role_ref.kind.as_str(),
                binding.role_ref.name.as_str()
            ),
            ("ClusterRole", "admin")
        );
        let subject = &binding.subjects.as_ref().unwrap()[0];
        assert_eq!(
            (
                subject.kind.as_str(),
                subject.name.as_str(),
                subject.namespace.as_deref()
            ),
            ("ServiceAccount", SERVICE_ACCOUNT, Some("ns--c"))
        );
        let Write::CreateKubeconfigSecret {
            service_account,
            kubeconfig,
            ..
        } = &changes.writes[3]
        else {
            panic!()
        };
        assert_eq!(
            service_account,
            &ObjectRef::new(Kind::ServiceAccount, "ns--c", SERVICE_ACCOUNT)
        );
        assert_eq!(
            (
                kubeconfig.server.as_str(),
                kubeconfig.namespace.as_str(),
                kubeconfig.insecure_skip_tls_verify
            ),
            ("https://kubernetes.default.svc", "ns--c", true)
        );
        let dt = w.target("ns", "c-dt").unwrap();
        assert_eq!(dt.phase(), Some(TargetPhase::Available));
        assert_eq!(dt.spec.claim_ref, "c");
        assert_eq!(dt.spec.deployment_target_class_name, "cls");
        assert_eq!(
            dt.spec.kubernetes_credentials,
            KubernetesCredentials {
                default_namespace: "ns--c".into(),
                api_url: "https://kubernetes.default.svc".into(),
                cluster_credentials_secret: "c-dt-kubeconfig".into(),
                allow_insecure_skip_tls_verify: true,
            }
        );
        assert_eq!(label(&dt.metadata, LABEL_TARGET_PROVISIONER), Some("cls"));
        assert_eq!(
            annotation(&dt.metadata, ANN_DYNAMICALLY_PROVISIONED),
            Some(PROVISIONER_NAMESPACE)
        );
        assert_eq!(changes.events[0].reason, "Provisioned");
        assert_eq!(
            provision(&w, &marked()),
            Ok(Changes::default()),
            "each step only once"
        );
        assert_eq!(
            targets_for_namespace(ns, &w),
            vec![ObjectRef::new(Kind::DeploymentTarget, "ns", "c-dt")]
        );
    }

    #[test]
    fn a_target_whose_status_write_was_lost_is_made_available() {
        let ours = target("c-dt", "cls")
            .claim_ref("c")
            .annotation(ANN_DYNAMICALLY_PROVISIONED, PROVISIONER_NAMESPACE);
        let mut w = world([ours.object()]);
        let made = provision(&w, &marked()).unwrap();
        for write in &made.writes[..4] {
            w.apply(write, &ctx()).unwrap();
        }
        let changes = provision(&w, &marked()).unwrap();
        assert!(
            matches!(&changes.writes[..], [Write::UpdateStatus(Object::Target(t))] if t.phase() == Some(TargetPhase::Available))
        );
    }

    #[test]
    fn refuses_what_it_did_not_make() {
        let foreign_secret = Object::Secret(Secret {
            metadata: ObjectMeta {
                name: Some("c-dt-kubeconfig".into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        });
        let ours_ns = || {
            Object::Namespace(namespace(
                "ns--c",
                &[
                    (LABEL_CLAIM, "c"),
                    (LABEL_CLAIM_NAMESPACE, "ns"),
                    (LABEL_TARGET, "c-dt"),
                ],
            ))
        };
        let cases: Vec<(Vec<Object>, &str)> = vec![
            (
                vec![Object::Namespace(namespace("ns--c", &[]))],
                "namespace ns--c exists and was not made for DeploymentTargetClaim c in namespace ns",
            ),
            (
                vec![Object::Namespace(namespace(
                    "ns--c",
                    &[(LABEL_CLAIM, "c"), (LABEL_CLAIM_NAMESPACE, "other")],
                ))],
                "namespace ns--c exists and was not made for DeploymentTargetClaim c in namespace ns",
            ),
            (
                vec![ours_ns(), foreign_secret],
                "Secret c-dt-kubeconfig exists and was not made for DeploymentTargetClaim c",
            ),
            (
                vec![target("c-dt", "cls").object()],
                "DeploymentTarget c-dt already exists and was not made by the appstudio.redhat.com/namespace provisioner",
            ),
            (
                vec![
                    target("c-dt", "cls")
                        .annotation(ANN_DYNAMICALLY_PROVISIONED, PROVISIONER_NAMESPACE)
                        .object(),
                ],
                "DeploymentTarget c-dt already exists and does not reference DeploymentTargetClaim c",
            ),
        ];
        for (objects, want) in cases {
            assert_eq!(provision(&world(objects), &marked()), Err(want.to_owned()));
        }
        let mut deleting = namespace(
            "ns--c",
            &[(LABEL_CLAIM, "c"), (LABEL_CLAIM_NAMESPACE, "ns")],
        );
        deleting.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ctx().now),
        );
        assert_eq!(
            provision(&world([Object::Namespace(deleting)]), &marked()),
            Err("namespace ns--c is still being deleted".into())
        );
        let long = claim(&"c".repeat(61), "cls").build();
        assert!(
            provision(&World::new(), &long)
                .unwrap_err()
                .starts_with("the claim name ccc")
        );
    }
}
