//! `appstudio.redhat.com/namespace`: `cvo`'s own provisioner, which needs nothing outside the
//! cluster. For a claim `C` in namespace `NS` it makes, each only when missing, with what the
//! class's parameters say ([`crate::components::deployment_targets::parameters`]):
//!
//! 1. the Namespace [`namespace_name`] (`NS--C` as ADR 8 draws it, when that is unambiguous),
//!    labelled with the claim, its namespace and the target, so that deprovisioning deletes
//!    only a namespace made for that target;
//! 2. in it, the class's ResourceQuota and LimitRange (`deployment-target`), before anyone has
//!    access;
//! 3. the ServiceAccount `deployment-target` in it, and the RoleBinding
//!    `deployment-target-<role>` giving it the class's ClusterRole (`admin` by default) in that
//!    namespace only;
//! 4. the Secret `C-dt-kubeconfig` in `NS`, a kubeconfig for that ServiceAccount (the executor
//!    requests its token, for the class's lifetime, and records when it expires);
//! 5. the DeploymentTarget `C-dt` in `NS`, reserved for `C` (`claimRef`), then its status
//!    `Available`. The binder binds it on its next reconcile.
//!
//! A class's `maxClaimsPerNamespace` caps how many targets it provisions for one namespace's
//! claims. While a target lives, [`NamespaceProvisioner::maintain`] keeps the quota and the
//! LimitRange as the class says and renews the token once 80% of its lifetime has passed.
//! Deprovisioning deletes that Secret and that Namespace (only if labelled for the target) and
//! waits until the namespace is gone.

use std::time::Duration;

use k8s_openapi::api::core::v1::{LimitRange, Namespace, ResourceQuota, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use sha2::Digest as _;

use super::{Changes, Deprovisioned, Deprovisioning, Provisioner};
use crate::components::deployment_targets::keys::{
    ANN_DYNAMICALLY_PROVISIONED, ANN_TOKEN_EXPIRES_AT, ANN_TOKEN_ISSUED_AT, LABEL_CLAIM,
    LABEL_TARGET, PROVISIONER_NAMESPACE,
};
use crate::components::deployment_targets::meta::{
    annotation, is_deleting, label, name, namespace, set_annotation,
};
use crate::components::deployment_targets::model::{
    Context, Event, EventType, Kind, KubeconfigTemplate, KubeconfigToken, Next, Object, ObjectRef,
    World, Write,
};
use crate::components::deployment_targets::parameters::{
    NamespaceParameters, namespace_parameters,
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

/// The namespace made for claim `claim` of namespace `claim_namespace`; no two claims get the
/// same one (the mapping is injective, so no tenant can take another's name):
///
/// - `NS--C` as ADR 8 draws it (`team-a--prod-dtc`) when that holds exactly one `--` (and no
///   longer run of dashes), the claim name has no dot and the whole fits a DNS label (63):
///   that one `--` splits it back into `NS` and `C`.
/// - Otherwise `NS-C` with dots made dashes and every run of dashes made one, cut to 46
///   characters, then `-` and 16 hex digits of SHA-256 of `NS/C` (`team-a-prod-v1-<hash>`).
///   Such a name holds no `--`, so it is never one of the first form, and two of them are the
///   same only if 64 bits of SHA-256 of distinct inputs are.
pub fn namespace_name(claim_namespace: &str, claim: &str) -> String {
    let plain = format!("{claim_namespace}--{claim}");
    // One `--` and no longer run of dashes: it can be split back in one way only.
    let unambiguous = plain.match_indices("--").count() == 1 && !plain.contains("---");
    if unambiguous && !claim.contains('.') && plain.len() <= 63 {
        return plain;
    }
    let digest = sha2::Sha256::digest(format!("{claim_namespace}/{claim}"));
    let mut head = String::new();
    for ch in format!("{claim_namespace}-{claim}").chars() {
        let ch = if ch == '.' { '-' } else { ch };
        if !(ch == '-' && head.ends_with('-')) {
            head.push(ch);
        }
    }
    let head: String = head.chars().take(NAMESPACE_HEAD).collect();
    format!(
        "{}-{}",
        head.trim_end_matches('-'),
        &hex::encode(digest)[..HASH_DIGITS]
    )
}

/// Hex digits of the hash that ends a namespace name of the second form (64 bits: no one finds
/// another claim that hashes the same).
const HASH_DIGITS: usize = 16;
/// What of `NS-C` a namespace name of the second form keeps: 63 less the dash and the hash.
const NAMESPACE_HEAD: usize = 63 - 1 - HASH_DIGITS;

/// The ResourceQuota and the LimitRange the class's parameters ask for in each namespace.
pub const LIMITS: &str = "deployment-target";

/// The RoleBinding giving the ServiceAccount `role` in its namespace
/// (`deployment-target-admin` for the default role).
pub fn role_binding_name(role: &str) -> String {
    format!("deployment-target-{role}")
}

/// A token is renewed once this share of its lifetime has passed (as the kubelet renews the
/// tokens it projects: at 80%).
pub const RENEW_AFTER_PERCENT: i64 = 80;

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
        class: &DeploymentTargetClass,
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
        let parameters = namespace_parameters(class)?;
        let existing = world.target(ns, &target_name(c));
        if existing.is_none() {
            check_cap(world, claim, class, &parameters)?;
        }
        // A target made earlier keeps its namespace (one named by an older form of the name).
        let target_ns = match existing {
            Some(t) if !t.spec.kubernetes_credentials.default_namespace.is_empty() => {
                t.spec.kubernetes_credentials.default_namespace.clone()
            }
            _ => namespace_name(ns, c),
        };
        let mut changes = Changes::default();
        ensure_namespace(&mut changes, world, ns, c, &target_ns)?;
        ensure_limits(&mut changes, world, ns, c, &target_ns, &parameters)?;
        ensure_access(&mut changes, world, ns, c, &target_ns, &parameters.role);
        ensure_secret(&mut changes, world, ns, c, &target_ns, &parameters, ctx)?;
        ensure_target(&mut changes, world, claim, &target_ns, ctx)?;
        Ok(changes)
    }

    fn maintain(
        &self,
        target: &DeploymentTarget,
        class: &DeploymentTargetClass,
        world: &World,
        ctx: &Context,
    ) -> Result<(Changes, Next), String> {
        let (ns, t) = (namespace(&target.metadata), name(&target.metadata));
        let made = annotation(&target.metadata, ANN_DYNAMICALLY_PROVISIONED);
        let target_ns = target
            .spec
            .kubernetes_credentials
            .default_namespace
            .as_str();
        let ours = (world.namespace(target_ns))
            .filter(|n| made_for_target(&n.metadata, ns, t) && !is_deleting(&n.metadata));
        let (Some(PROVISIONER_NAMESPACE), Some(made_ns)) = (made, ours) else {
            return Ok((Changes::default(), Next::Done));
        };
        let parameters = namespace_parameters(class)?;
        let c = label(&made_ns.metadata, LABEL_CLAIM).unwrap_or_default();
        let mut changes = Changes::default();
        ensure_limits(&mut changes, world, ns, c, target_ns, &parameters)?;
        let next = renew_token(&mut changes, world, target, &parameters, ctx);
        Ok((changes, next))
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

/// The watch of the kubeconfig Secrets it writes: the target a Secret was made for (whose
/// reconcile renews the token in it).
pub fn target_for_secret(secret: &Secret) -> Option<ObjectRef> {
    let meta = &secret.metadata;
    let target = label(meta, LABEL_TARGET)?;
    let ns = label(meta, LABEL_CLAIM_NAMESPACE)?;
    (meta.namespace.as_deref() == Some(ns))
        .then(|| ObjectRef::new(Kind::DeploymentTarget, ns, target))
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

/// The ServiceAccount and its RoleBinding to `role` in the made namespace.
fn ensure_access(
    changes: &mut Changes,
    world: &World,
    ns: &str,
    c: &str,
    target_ns: &str,
    role: &str,
) {
    if world.service_account(target_ns, SERVICE_ACCOUNT).is_none() {
        let account = ServiceAccount {
            metadata: made_meta(SERVICE_ACCOUNT, Some(target_ns), ns, c),
            ..ServiceAccount::default()
        };
        changes
            .writes
            .push(Write::Create(Object::ServiceAccount(account)));
    }
    let binding_name = role_binding_name(role);
    if world.role_binding(target_ns, &binding_name).is_none() {
        let binding = RoleBinding {
            metadata: made_meta(&binding_name, Some(target_ns), ns, c),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name: role.into(),
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
    parameters: &NamespaceParameters,
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
    changes.writes.push(Write::CreateKubeconfigSecret {
        secret: Secret {
            metadata: made_meta(&secret_name, Some(ns), ns, c),
            type_: Some("Opaque".into()),
            ..Secret::default()
        },
        token: kubeconfig_token(target_ns, parameters, ctx),
    });
    Ok(())
}

/// The token of the ServiceAccount in `target_ns`, for a kubeconfig of the API server the
/// controller was told of.
fn kubeconfig_token(
    target_ns: &str,
    parameters: &NamespaceParameters,
    ctx: &Context,
) -> KubeconfigToken {
    let settings = &ctx.namespace_provisioner;
    KubeconfigToken {
        service_account: ObjectRef::new(Kind::ServiceAccount, target_ns, SERVICE_ACCOUNT),
        kubeconfig: KubeconfigTemplate {
            server: settings.server.clone(),
            certificate_authority_data: settings.certificate_authority_data.clone(),
            insecure_skip_tls_verify: ctx.insecure_provisioned_targets,
            namespace: target_ns.to_owned(),
            user: SERVICE_ACCOUNT.into(),
        },
        expiration_seconds: parameters.token_expiration_seconds,
    }
}

/// The class's `maxClaimsPerNamespace`: the targets it provisioned for the claims of this
/// claim's namespace (those not being deleted) leave room for one more.
fn check_cap(
    world: &World,
    claim: &DeploymentTargetClaim,
    class: &DeploymentTargetClass,
    parameters: &NamespaceParameters,
) -> Result<(), String> {
    let Some(cap) = parameters.max_claims_per_namespace else {
        return Ok(());
    };
    let ns = namespace(&claim.metadata);
    let class_name = name(&class.metadata);
    let provisioned = (world.targets(ns))
        .filter(|t| {
            annotation(&t.metadata, ANN_DYNAMICALLY_PROVISIONED) == Some(PROVISIONER_NAMESPACE)
                && t.spec.deployment_target_class_name == class_name
                && !is_deleting(&t.metadata)
        })
        .count();
    match provisioned < cap as usize {
        true => Ok(()),
        false => Err(format!(
            "namespace {ns} already has {provisioned} DeploymentTargets of DeploymentTargetClass {class_name}, its maxClaimsPerNamespace; delete a claim of that class, or ask the class's owner for a higher limit"
        )),
    }
}

/// The class's ResourceQuota and LimitRange in the made namespace, as its parameters say them
/// now: created, updated when they differ, deleted when the class no longer asks for them.
fn ensure_limits(
    changes: &mut Changes,
    world: &World,
    ns: &str,
    c: &str,
    target_ns: &str,
    parameters: &NamespaceParameters,
) -> Result<(), String> {
    let quota = parameters.resource_quota.clone().map(|spec| ResourceQuota {
        metadata: limits_meta(target_ns, ns, c, &spec),
        spec: Some(spec),
        ..ResourceQuota::default()
    });
    let current = world.resource_quota(target_ns, LIMITS);
    reconcile_made(changes, current, quota, Object::ResourceQuota, ns, c)?;
    let range = parameters.limit_range.clone().map(|spec| LimitRange {
        metadata: limits_meta(target_ns, ns, c, &spec),
        spec: Some(spec),
    });
    let current = world.limit_range(target_ns, LIMITS);
    reconcile_made(changes, current, range, Object::LimitRange, ns, c)
}

/// The metadata of a quota or LimitRange made from `spec`: the labels of what is made for the
/// claim, and a digest of the spec as the class gave it ([`ANN_LIMITS_SPEC`]). What the API
/// server stores differs (it writes quantities its own way and defaults a LimitRange's
/// `default` from `max`), so whether the class changed is told by the digest, not the spec.
fn limits_meta<S: serde::Serialize>(target_ns: &str, ns: &str, c: &str, spec: &S) -> ObjectMeta {
    let mut meta = made_meta(LIMITS, Some(target_ns), ns, c);
    let text = serde_json::to_string(spec).unwrap_or_default();
    let digest = hex::encode(sha2::Sha256::digest(text));
    set_annotation(&mut meta, ANN_LIMITS_SPEC, &digest[..16]);
    meta
}

/// On the ResourceQuota and LimitRange the namespace provisioner makes: a digest of the spec
/// the class gave.
pub const ANN_LIMITS_SPEC: &str = "provisioner.appstudio.redhat.com/spec-digest";

/// Brings an object the provisioner makes to `wanted`: created, replaced when the class's
/// spec changed (its digest differs), or deleted. One of that name it did not make is an error.
fn reconcile_made<T: kube::Resource + Clone>(
    changes: &mut Changes,
    current: Option<&T>,
    wanted: Option<T>,
    wrap: fn(T) -> Object,
    ns: &str,
    c: &str,
) -> Result<(), String> {
    let same = |a: &T, b: &T| {
        annotation(a.meta(), ANN_LIMITS_SPEC) == annotation(b.meta(), ANN_LIMITS_SPEC)
    };
    if let Some(current) = current {
        let meta = current.meta();
        if label(meta, LABEL_CLAIM) != Some(c) || label(meta, LABEL_CLAIM_NAMESPACE) != Some(ns) {
            let object = wrap(current.clone()).reference();
            return Err(format!(
                "{object} exists and was not made for DeploymentTargetClaim {c} in namespace {ns}"
            ));
        }
    }
    match (current, wanted) {
        (None, Some(wanted)) => changes.writes.push(Write::Create(wrap(wanted))),
        (Some(current), Some(mut wanted)) if !same(current, &wanted) => {
            let digest = annotation(wanted.meta(), ANN_LIMITS_SPEC).map(str::to_owned);
            *wanted.meta_mut() = current.meta().clone();
            set_annotation(
                wanted.meta_mut(),
                ANN_LIMITS_SPEC,
                &digest.unwrap_or_default(),
            );
            changes.writes.push(Write::Update(wrap(wanted)));
        }
        (Some(current), None) => {
            let reference = wrap(current.clone()).reference();
            changes.writes.push(Write::Delete(reference));
        }
        _ => {}
    }
    Ok(())
}

/// When the token in a kubeconfig Secret the provisioner wrote is due for renewal: once
/// [`RENEW_AFTER_PERCENT`] of the lifetime it was given has passed (`None`: now, because the
/// Secret does not say when its token was issued or expires, as those of older versions).
pub fn renewal_time(secret: &Secret) -> Option<Timestamp> {
    let read = |key: &str| -> Option<Timestamp> { annotation(&secret.metadata, key)?.parse().ok() };
    let issued = read(ANN_TOKEN_ISSUED_AT)?;
    let expires = read(ANN_TOKEN_EXPIRES_AT)?;
    let lifetime = expires.duration_since(issued).as_secs();
    let after = SignedDuration::from_secs(lifetime * RENEW_AFTER_PERCENT / 100);
    issued.checked_add(after).ok()
}

/// Renews the target's token when it is due; when to look again.
fn renew_token(
    changes: &mut Changes,
    world: &World,
    target: &DeploymentTarget,
    parameters: &NamespaceParameters,
    ctx: &Context,
) -> Next {
    let ns = namespace(&target.metadata);
    let credentials = &target.spec.kubernetes_credentials;
    let Some(secret) = world
        .secret(ns, &credentials.cluster_credentials_secret)
        .filter(|s| made_for_target(&s.metadata, ns, name(&target.metadata)))
    else {
        return Next::Done;
    };
    match renewal_time(secret) {
        Some(at) if at > ctx.now => {
            let wait = ctx.now.duration_until(at).unsigned_abs();
            Next::RequeueAfter(wait.max(Duration::from_secs(1)))
        }
        _ => {
            changes.writes.push(Write::RenewKubeconfigSecret {
                secret: secret.clone(),
                token: kubeconfig_token(&credentials.default_namespace, parameters, ctx),
            });
            let message = format!("renewed the token in Secret {}", name(&secret.metadata));
            changes
                .events
                .push(event(target, EventType::Normal, "TokenRenewed", message));
            // The next reconcile reads the new expiry and waits for it.
            Next::Done
        }
    }
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
            dotted.starts_with("team-a-prod-v1-") && dotted.len() == "team-a-prod-v1-".len() + 16,
            "{dotted}"
        );
        let long = namespace_name("team-a", &"x".repeat(70));
        assert_eq!(long.len(), 63);
        assert_eq!(long, namespace_name("team-a", &"x".repeat(70)));
        // The cut falls on a dash: no dash doubled, none before the hash.
        let cut = namespace_name(&"a".repeat(45), &"b".repeat(20));
        assert_eq!(cut, format!("{}-{}", "a".repeat(45), &cut[46..]));
        assert!(!cut.contains("--"), "{cut}");
    }

    /// Names tenants could pick to take another's namespace: each pair maps to two names, and
    /// every name is a DNS label.
    #[test]
    fn no_two_claims_share_a_namespace_name() {
        let pairs: &[(&str, &str)] = &[
            // The collision of `NS--C`: claim `a--b` in `team`, claim `b` in `team--a`.
            ("team", "a--b"),
            ("team--a", "b"),
            ("team-a", "b"),
            ("team", "a-b"),
            ("team-", "-a"),
            ("team-", "a"),
            ("team", "-a"),
            ("t", "eam--a--b"),
            ("team--a--b", "c"),
            // A plain name that spells a hashed one, and the dotted claim it would copy.
            ("x", "abc.d"),
            ("x", "abc-d"),
            ("x", "abc--d"),
            ("x--abc", "d"),
            // Dots and dashes that fold together.
            ("team", "a.b"),
            ("team", "a-.b"),
            ("team", "a.-b"),
            ("team", "a..b"),
            // Too long for the plain form, alike in their first 46 characters.
            ("team", &"p".repeat(60)),
            ("team", &format!("{}q", "p".repeat(59))),
            (&"n".repeat(40), &"c".repeat(30)),
            (&"n".repeat(40), &format!("{}d", "c".repeat(29))),
        ];
        let mut names = std::collections::BTreeMap::new();
        for (ns, claim) in pairs {
            let made = namespace_name(ns, claim);
            let errors = crate::components::deployment_targets::dns1123::label_errors(&made);
            assert!(errors.is_empty(), "{ns}/{claim}: {made}: {errors:?}");
            if let Some(other) = names.insert(made.clone(), (ns, claim)) {
                panic!("{ns}/{claim} and {}/{} both get {made}", other.0, other.1);
            }
        }
        // The plain form for the unambiguous pairs, readable as ADR 8 draws it.
        assert_eq!(namespace_name("team-a", "b"), "team-a--b");
        assert_eq!(namespace_name("team", "a-b"), "team--a-b");
        // The second form holds no `--`: it never spells a first-form name.
        assert!(!namespace_name("team", "a--b").contains("--"));
        assert!(!namespace_name("team--a", "b").contains("--"));
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
        let binding = w
            .role_binding("ns--c", &role_binding_name("admin"))
            .unwrap();
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
        let Write::CreateKubeconfigSecret { token, .. } = &changes.writes[3] else {
            panic!()
        };
        assert_eq!(
            token.service_account,
            ObjectRef::new(Kind::ServiceAccount, "ns--c", SERVICE_ACCOUNT)
        );
        assert_eq!(
            token.expiration_seconds,
            365 * 24 * 3600,
            "a year by default"
        );
        let kubeconfig = &token.kubeconfig;
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

    fn class_with(parameters: serde_json::Value) -> DeploymentTargetClass {
        let Object::Class(mut cls) = crate::components::deployment_targets::testing::class(
            "cls",
            PROVISIONER_NAMESPACE,
            "Delete",
        ) else {
            unreachable!()
        };
        cls.spec.parameters = parameters
            .as_object()
            .cloned()
            .map(crate::components::deployment_targets::types::ClassParameters);
        cls
    }

    /// Runs the provisioner for `claim` until it asks for nothing more.
    fn provisioned(
        mut w: World,
        claim: &DeploymentTargetClaim,
        class: &DeploymentTargetClass,
    ) -> World {
        for _ in 0..3 {
            let changes = NamespaceProvisioner
                .provision(claim, class, &w, &ctx())
                .unwrap();
            if changes.writes.is_empty() {
                return w;
            }
            w = applied(
                w,
                &crate::components::deployment_targets::model::Outcome {
                    writes: changes.writes,
                    ..crate::components::deployment_targets::model::Outcome::done()
                },
            );
        }
        panic!("the provisioner does not settle")
    }

    #[test]
    fn class_parameters_shape_what_is_made() {
        let class = class_with(serde_json::json!({
            "role": "edit",
            "tokenExpirationSeconds": 3600,
            "resourceQuota": {"hard": {"pods": "4"}},
            "limitRange": {"limits": [{"type": "Container", "default": {"cpu": "250m"}}]},
        }));
        let changes = NamespaceProvisioner
            .provision(&marked(), &class, &World::new(), &ctx())
            .unwrap();
        let order: Vec<String> = (changes.writes.iter())
            .map(|w| w.target().to_string())
            .collect();
        assert_eq!(
            order[..5],
            [
                "Namespace ns--c",
                "ResourceQuota ns--c/deployment-target",
                "LimitRange ns--c/deployment-target",
                "ServiceAccount ns--c/deployment-target",
                "RoleBinding ns--c/deployment-target-edit",
            ],
            "the limits are in place before anyone has access"
        );
        let Write::CreateKubeconfigSecret { token, .. } = &changes.writes[5] else {
            panic!("{:?}", changes.writes[5])
        };
        assert_eq!(token.expiration_seconds, 3600);
        let w = provisioned(World::new(), &marked(), &class);
        let quota = w.resource_quota("ns--c", LIMITS).unwrap();
        let hard = quota.spec.as_ref().unwrap().hard.as_ref().unwrap();
        assert_eq!(hard["pods"].0, "4");
        assert_eq!(quota.metadata.labels.as_ref(), Some(&labels("ns", "c")));
        let range = w.limit_range("ns--c", LIMITS).unwrap();
        assert_eq!(range.spec.as_ref().unwrap().limits[0].type_, "Container");
        let binding = w.role_binding("ns--c", "deployment-target-edit").unwrap();
        assert_eq!(binding.role_ref.name, "edit");

        // A class with parameters the provisioner does not know provisions nothing.
        let bad = class_with(serde_json::json!({"quota": {"pods": "4"}}));
        let refused = NamespaceProvisioner.provision(&marked(), &bad, &World::new(), &ctx());
        assert!(
            refused
                .unwrap_err()
                .starts_with("DeploymentTargetClass cls: spec.parameters.quota: "),
        );
    }

    #[test]
    fn max_claims_per_namespace_caps_what_a_class_provisions_for_a_namespace() {
        let class = class_with(serde_json::json!({"maxClaimsPerNamespace": 1}));
        let first = marked();
        let w = provisioned(World::new(), &first, &class);
        let second = claim("d", "cls")
            .annotation(ANN_TARGET_PROVISIONER, "cls")
            .build();
        assert_eq!(
            NamespaceProvisioner.provision(&second, &class, &w, &ctx()),
            Err("namespace ns already has 1 DeploymentTargets of DeploymentTargetClass cls, its maxClaimsPerNamespace; delete a claim of that class, or ask the class's owner for a higher limit".into())
        );
        // The first claim's own provisioning goes on; another namespace has its own count.
        assert_eq!(
            NamespaceProvisioner.provision(&first, &class, &w, &ctx()),
            Ok(Changes::default())
        );
        let mut elsewhere = second.clone();
        elsewhere.metadata.namespace = Some("other".into());
        assert!(
            NamespaceProvisioner
                .provision(&elsewhere, &class, &w, &ctx())
                .is_ok()
        );
        // A target of the class being deleted no longer counts.
        let mut w = w;
        w.modify(&ObjectRef::new(Kind::DeploymentTarget, "ns", "c-dt"), |o| {
            if let Object::Target(t) = o {
                t.metadata.deletion_timestamp = Some(
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ctx().now),
                );
            }
        });
        assert!(
            NamespaceProvisioner
                .provision(&second, &class, &w, &ctx())
                .is_ok()
        );
    }

    #[test]
    fn tokens_are_renewed_after_80_percent_of_the_lifetime_the_server_gave() {
        let class = class_with(serde_json::json!({"tokenExpirationSeconds": 3600}));
        let w = provisioned(World::new(), &marked(), &class);
        let target = w.target("ns", "c-dt").unwrap().clone();
        let secret = w.secret("ns", "c-dt-kubeconfig").unwrap().clone();
        // Offline the token is issued at now for the hour asked: renewed 48 minutes on.
        assert_eq!(
            renewal_time(&secret),
            Some("2024-05-01T12:48:00Z".parse().unwrap())
        );
        let at = |now: &str| Context::at(now.parse().unwrap());
        let (changes, next) = NamespaceProvisioner
            .maintain(&target, &class, &w, &at("2024-05-01T12:30:00Z"))
            .unwrap();
        assert_eq!(changes, Changes::default());
        assert_eq!(next, Next::RequeueAfter(Duration::from_secs(18 * 60)));
        let (changes, next) = NamespaceProvisioner
            .maintain(&target, &class, &w, &at("2024-05-01T12:48:00Z"))
            .unwrap();
        assert_eq!(next, Next::Done);
        let [
            Write::RenewKubeconfigSecret {
                secret: renewed,
                token,
            },
        ] = &changes.writes[..]
        else {
            panic!("{:?}", changes.writes)
        };
        assert_eq!(
            renewed, &secret,
            "the Secret as read, with its resourceVersion"
        );
        assert_eq!(token.expiration_seconds, 3600);
        assert_eq!(changes.events[0].reason, "TokenRenewed");

        // A server that capped a year to an hour: the renewal follows what it gave.
        let mut capped = secret.clone();
        set_annotation(
            &mut capped.metadata,
            ANN_TOKEN_ISSUED_AT,
            "2024-05-01T12:00:00Z",
        );
        set_annotation(
            &mut capped.metadata,
            ANN_TOKEN_EXPIRES_AT,
            "2024-05-01T13:00:00Z",
        );
        assert_eq!(
            renewal_time(&capped),
            Some("2024-05-01T12:48:00Z".parse().unwrap())
        );
        // A Secret that does not say (an older version's) is renewed now.
        let mut unknown = secret.clone();
        unknown.metadata.annotations = None;
        assert_eq!(renewal_time(&unknown), None);
    }

    #[test]
    fn limits_follow_the_class_while_the_target_lives() {
        let class = class_with(serde_json::json!({"resourceQuota": {"hard": {"pods": "4"}}}));
        let w = provisioned(World::new(), &marked(), &class);
        let target = w.target("ns", "c-dt").unwrap().clone();
        let maintain = |class: &DeploymentTargetClass| {
            let (changes, _) = NamespaceProvisioner
                .maintain(&target, class, &w, &ctx())
                .unwrap();
            (changes.writes.iter())
                .map(|w| format!("{} {}", w.verb(), w.target()))
                .collect::<Vec<_>>()
        };
        assert_eq!(maintain(&class), Vec::<String>::new());
        let raised = class_with(serde_json::json!({
            "resourceQuota": {"hard": {"pods": "8"}},
            "limitRange": {"limits": [{"type": "Container"}]},
        }));
        assert_eq!(
            maintain(&raised),
            [
                "update ResourceQuota ns--c/deployment-target",
                "create LimitRange ns--c/deployment-target"
            ]
        );
        assert_eq!(
            maintain(&class_with(serde_json::json!({}))),
            ["delete ResourceQuota ns--c/deployment-target"]
        );
        // A user-made target is not the provisioner's to maintain.
        let user = crate::components::deployment_targets::testing::target("c-dt", "cls").build();
        let (changes, next) = NamespaceProvisioner
            .maintain(&user, &class, &w, &ctx())
            .unwrap();
        assert_eq!((changes, next), (Changes::default(), Next::Done));
    }
}
