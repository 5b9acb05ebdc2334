//! The Environment controller (spec A.8): keeps the GitOpsDeploymentManagedEnvironment
//! `managed-environment-<env>` in step with an Environment, from the DeploymentTarget its bound
//! claim points at or from its own `unstableConfigurationFields`; copies a claim's credentials
//! into a Secret of the managed-environment type; and reports what the user must fix through two
//! conditions, `Reconciled` and the legacy, inverted `ErrorOccurred`.
//!
//! As upstream (managed-gitops `environment_controller.go`), a user error is reported once and not
//! retried: the watches below bring the Environment back when what it names changes. Only a
//! claim whose target lookup fails for another reason than absence is retried (with backoff).
//!
//! Unlike upstream, the status tells the truth about a claim that is not bound: upstream waits
//! without a word (and flips earlier errors to resolved, so the Environment reads
//! `Reconciled=True` while nothing deploys anywhere); here it is `Reconciled=False` with reason
//! `DeploymentTargetClaimNotBound`. And once the Environment has no target (its claim is gone,
//! not bound, or its target is), the managed environment and the copied Secret the controller
//! made for it go too, instead of pointing Argo CD at credentials of a target it no longer has.

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference, Time};
use kube::Resource;

use super::keys::{
    CONDITION_ERROR_OCCURRED, CONDITION_RECONCILED, LABEL_ENVIRONMENT_SECRET,
    MANAGED_ENVIRONMENT_PREFIX, MANAGED_ENVIRONMENT_SECRET_PREFIX, MANAGED_ENVIRONMENT_SECRET_TYPE,
    REASON_ERROR_OCCURRED,
};
use super::model::{Context, Event, EventType, Kind, Object, ObjectRef, Outcome, World, Write};
use super::types::{
    ClaimPhase, DeploymentTarget, DeploymentTargetClaim, Environment,
    GitOpsDeploymentManagedEnvironment, ManagedEnvironmentSpec, UnstableEnvironmentConfiguration,
};
use crate::manifest::go_quote;

/// What keeps an Environment from being projected. The text is upstream's condition message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvironmentError {
    #[error(
        "Environment is invalid since it cannot have both DeploymentTargetClaim and credentials configuration set"
    )]
    Invalid,
    #[error("DeploymentTargetClaim not found while generating the desired Environment resource")]
    ClaimNotFound,
    /// The claim exists but is not `Bound` (upstream waits without a word, and reports the
    /// Environment reconciled).
    #[error("DeploymentTargetClaim {claim} is {}, not Bound", phase.map_or("without a phase yet", |p| match p {
        ClaimPhase::Pending => "Pending",
        ClaimPhase::Lost => "Lost (its DeploymentTarget is gone)",
        ClaimPhase::Bound => "Bound",
    }))]
    ClaimNotBound {
        claim: String,
        phase: Option<ClaimPhase>,
    },
    /// The bound claim's `targetName` names a DeploymentTarget that does not exist.
    #[error("DeploymentTargetClaim references a DeploymentTarget that does not exist")]
    TargetMissing,
    /// The bound claim's target cannot be told (a conflict, or several claim it).
    #[error("Unable to find the DeploymentTarget for DeploymentTargetClaim")]
    TargetLookup(BoundTargetError),
    /// The bound claim has no `targetName` and no DeploymentTarget has a `claimRef` to it.
    #[error("DeploymentTarget not found for DeploymentTargetClaim")]
    TargetNotFound,
    #[error("the secret {0} referenced by the Environment resource was not found")]
    SecretNotFound(String),
}

impl EnvironmentError {
    /// The reason of `Reconciled=False`.
    pub fn reason(&self) -> &'static str {
        match self {
            EnvironmentError::Invalid => "InvalidEnvironment",
            EnvironmentError::ClaimNotFound => "DeploymentTargetClaimNotFound",
            EnvironmentError::ClaimNotBound { .. } => "DeploymentTargetClaimNotBound",
            EnvironmentError::TargetMissing
            | EnvironmentError::TargetLookup(_)
            | EnvironmentError::TargetNotFound => "DeploymentTargetNotFound",
            EnvironmentError::SecretNotFound(_) => "SecretNotFound",
        }
    }

    /// The error the reconcile returns, so that it is retried: upstream retries only a lookup
    /// that failed for another reason than absence; every other error waits for a watch event.
    fn reconcile_error(&self) -> Option<String> {
        match self {
            EnvironmentError::TargetLookup(cause) => Some(format!(
                "unable to generate expected GitOpsDeploymentManagedEnvironment resource: {cause}"
            )),
            _ => None,
        }
    }

    /// Whether the Environment has no target to deploy to (its claim is gone or not bound, or
    /// the claim's target is): what the controller made for it goes.
    fn target_gone(&self) -> bool {
        matches!(
            self,
            EnvironmentError::ClaimNotFound
                | EnvironmentError::ClaimNotBound { .. }
                | EnvironmentError::TargetMissing
                | EnvironmentError::TargetNotFound
        )
    }
}

/// Why a bound claim's DeploymentTarget cannot be told (upstream's `getDTBoundByDTC` errors).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BoundTargetError {
    /// The target the claim names is claimed by another claim.
    #[error(
        "cannot bind DeploymentTargetClaim {claim} with target {} to DeploymentTarget {target} with claim ref {}: DeploymentTarget has a claimRef to another DeploymentTargetClaim",
        go_quote(target),
        go_quote(claim_ref)
    )]
    Conflict {
        claim: String,
        target: String,
        claim_ref: String,
    },
    #[error("multiple DeploymentTargets found for a bounded DeploymentTargetClaim {0}")]
    Multiple(String),
}

/// Reconciles the Environment `env` (spec A.8).
pub fn reconcile_environment(env: &ObjectRef, world: &World, ctx: &Context) -> Outcome {
    if namespace_terminating(world, &env.namespace) {
        return Outcome::done();
    }
    match world.environment(&env.namespace, &env.name) {
        Some(environment) => reconcile_existing(environment, world, ctx),
        None => delete_managed_environment(env, world, "is gone"),
    }
}

/// `managed-environment-<env>`.
pub fn managed_environment_name(environment: &str) -> String {
    format!("{MANAGED_ENVIRONMENT_PREFIX}{environment}")
}

/// `managed-environment-secret-<env>`.
pub fn managed_environment_secret_name(environment: &str) -> String {
    format!("{MANAGED_ENVIRONMENT_SECRET_PREFIX}{environment}")
}

fn namespace_terminating(world: &World, namespace: &str) -> bool {
    // A namespace the world does not hold counts as live, as upstream treats NotFound.
    (world.namespace(namespace)).is_some_and(|n| n.metadata.deletion_timestamp.is_some())
}

/// The Environment is gone (or, `why`, has no target any more): its managed environment goes
/// too. Its ownerRef cannot do it (the owner kind it names does not exist), which is why
/// upstream deletes it by name.
fn delete_managed_environment(env: &ObjectRef, world: &World, why: &str) -> Outcome {
    let mut out = Outcome::done();
    let name = managed_environment_name(&env.name);
    if world.managed_environment(&env.namespace, &name).is_some() {
        let managed = ObjectRef::new(
            Kind::GitOpsDeploymentManagedEnvironment,
            &env.namespace,
            &name,
        );
        out.writes.push(Write::Delete(managed.clone()));
        let message = format!("deleted: its Environment {} {why}", env.name);
        out.events
            .push(event(managed, EventType::Normal, "Deleted", message));
    }
    out
}

fn reconcile_existing(env: &Environment, world: &World, ctx: &Context) -> Outcome {
    let mut out = Outcome::done();
    match project(env, world, &mut out) {
        Ok(()) => resolve(env, &mut out),
        Err(error) => {
            report(env, &error, ctx, &mut out);
            if error.target_gone() {
                let reference = ObjectRef::new(Kind::Environment, namespace(env), name(env));
                let removed = delete_managed_environment(&reference, world, "has no target");
                out.writes.extend(removed.writes);
                out.events.extend(removed.events);
            }
            if error.target_gone() || matches!(error, EnvironmentError::SecretNotFound(_)) {
                delete_copied_secret(env, world, &mut out);
            }
            out.error = error.reconcile_error();
        }
    }
    out
}

/// The managed environment an Environment asks for, before its credentials are looked at.
struct Desired {
    spec: ManagedEnvironmentSpec,
    /// Claim credentials come from a provisioner, in a Secret of any type; they are copied.
    from_claim: bool,
}

/// Writes the managed environment (and the credentials copy) the Environment asks for.
fn project(env: &Environment, world: &World, out: &mut Outcome) -> Result<(), EnvironmentError> {
    let Some(desired) = desired(env, world)? else {
        return Ok(());
    };
    let spec = with_credentials(env, desired, world, out)?;
    apply_managed_environment(env, spec, world, out);
    Ok(())
}

/// `None`: nothing to project: the Environment deploys to its own namespace (neither claim nor
/// credentials).
fn desired(env: &Environment, world: &World) -> Result<Option<Desired>, EnvironmentError> {
    let unstable = env.spec.unstable_configuration_fields.as_ref();
    let claim = env.claim_name();
    match (claim.is_empty(), unstable) {
        (false, Some(_)) => Err(EnvironmentError::Invalid),
        (false, None) => from_claim(namespace(env), claim, world),
        (true, Some(fields)) => Ok(Some(Desired {
            spec: from_fields(fields),
            from_claim: false,
        })),
        (true, None) => Ok(None),
    }
}

fn from_claim(ns: &str, claim: &str, world: &World) -> Result<Option<Desired>, EnvironmentError> {
    let claim = (world.claim(ns, claim)).ok_or(EnvironmentError::ClaimNotFound)?;
    let phase = (claim.status.as_ref()).and_then(|s| s.phase);
    if phase != Some(ClaimPhase::Bound) {
        return Err(EnvironmentError::ClaimNotBound {
            claim: name(claim).to_owned(),
            phase,
        });
    }
    let target = bound_target(claim, world)?.ok_or(EnvironmentError::TargetNotFound)?;
    let credentials = &target.spec.kubernetes_credentials;
    let namespaces = match credentials.default_namespace.as_str() {
        "" => Vec::new(),
        namespace => vec![namespace.to_owned()],
    };
    Ok(Some(Desired {
        spec: ManagedEnvironmentSpec {
            api_url: credentials.api_url.clone(),
            credentials_secret: credentials.cluster_credentials_secret.clone(),
            allow_insecure_skip_tls_verify: credentials.allow_insecure_skip_tls_verify,
            namespaces,
            ..ManagedEnvironmentSpec::default()
        },
        from_claim: true,
    }))
}

fn from_fields(fields: &UnstableEnvironmentConfiguration) -> ManagedEnvironmentSpec {
    let credentials = &fields.kubernetes_credentials;
    ManagedEnvironmentSpec {
        api_url: credentials.api_url.clone(),
        credentials_secret: credentials.cluster_credentials_secret.clone(),
        allow_insecure_skip_tls_verify: credentials.allow_insecure_skip_tls_verify,
        namespaces: credentials.namespaces.clone(),
        cluster_resources: credentials.cluster_resources,
        ..ManagedEnvironmentSpec::default()
    }
}

/// The DeploymentTarget a bound claim is bound to: the one it names (which must not be claimed
/// by another claim), else the one whose `claimRef` is the claim.
fn bound_target<'w>(
    claim: &'w DeploymentTargetClaim,
    world: &'w World,
) -> Result<Option<&'w DeploymentTarget>, EnvironmentError> {
    let ns = namespace(claim);
    let claim_name = name(claim);
    let target_name = claim.spec.target_name.as_str();
    if !target_name.is_empty() {
        let target = (world.target(ns, target_name)).ok_or(EnvironmentError::TargetMissing)?;
        let claim_ref = target.spec.claim_ref.as_str();
        // The other conflict upstream checks (the claim names another target) cannot arise
        // for the target the claim names.
        if !claim_ref.is_empty() && claim_ref != claim_name {
            return Err(EnvironmentError::TargetLookup(BoundTargetError::Conflict {
                claim: claim_name.to_owned(),
                target: target_name.to_owned(),
                claim_ref: claim_ref.to_owned(),
            }));
        }
        return Ok(Some(target));
    }
    let mut claiming = world.targets(ns).filter(|t| t.spec.claim_ref == claim_name);
    let first = claiming.next();
    match claiming.next() {
        Some(_) => Err(EnvironmentError::TargetLookup(BoundTargetError::Multiple(
            claim_name.to_owned(),
        ))),
        None => Ok(first),
    }
}

/// The spec with its credentials Secret checked, and a claim's copied when they are not of the
/// managed-environment type already.
fn with_credentials(
    env: &Environment,
    mut desired: Desired,
    world: &World,
    out: &mut Outcome,
) -> Result<ManagedEnvironmentSpec, EnvironmentError> {
    let secret_name = &desired.spec.credentials_secret;
    let secret = (world.secret(namespace(env), secret_name))
        .ok_or_else(|| EnvironmentError::SecretNotFound(secret_name.clone()))?;
    let managed_type = secret.type_.as_deref() == Some(MANAGED_ENVIRONMENT_SECRET_TYPE);
    if desired.from_claim && !managed_type {
        desired.spec.credentials_secret = copy_secret(env, secret, world, out);
    }
    Ok(desired.spec)
}

/// Creates or refreshes `managed-environment-secret-<env>` from `source`; returns its name.
fn copy_secret(env: &Environment, source: &Secret, world: &World, out: &mut Outcome) -> String {
    let copy_name = managed_environment_secret_name(name(env));
    let message = format!(
        "copied the credentials of Secret {} into {copy_name}",
        name(source)
    );
    match world.secret(namespace(env), &copy_name) {
        None => {
            let copy = new_secret_copy(env, &copy_name, source);
            out.writes.push(Write::Create(Object::Secret(copy)));
            out.events.push(env_event(
                env,
                EventType::Normal,
                "CredentialsCopied",
                message,
            ));
        }
        Some(copy) if !same_data(copy, source) => {
            let mut copy = copy.clone();
            copy.data = source.data.clone();
            out.writes.push(Write::Update(Object::Secret(copy)));
            out.events.push(env_event(
                env,
                EventType::Normal,
                "CredentialsUpdated",
                message,
            ));
        }
        Some(_) => {}
    }
    copy_name
}

/// Go's DeepEqual of two Secrets' data read from the API, where no data and empty data are one.
fn same_data(a: &Secret, b: &Secret) -> bool {
    let empty = Default::default();
    a.data.as_ref().unwrap_or(&empty) == b.data.as_ref().unwrap_or(&empty)
}

fn new_secret_copy(env: &Environment, copy_name: &str, source: &Secret) -> Secret {
    let owner = OwnerReference {
        api_version: Environment::api_version(&()).into_owned(),
        kind: Environment::kind(&()).into_owned(),
        name: name(env).to_owned(),
        uid: env.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    Secret {
        metadata: ObjectMeta {
            name: Some(copy_name.to_owned()),
            namespace: Some(namespace(env).to_owned()),
            labels: Some([(LABEL_ENVIRONMENT_SECRET.to_owned(), name(env).to_owned())].into()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        type_: Some(MANAGED_ENVIRONMENT_SECRET_TYPE.to_owned()),
        data: source.data.clone(),
        ..Secret::default()
    }
}

/// The copy goes with the Secret it copied.
fn delete_copied_secret(env: &Environment, world: &World, out: &mut Outcome) {
    let copy_name = managed_environment_secret_name(name(env));
    if world.secret(namespace(env), &copy_name).is_some() {
        let copy = ObjectRef::new(Kind::Secret, namespace(env), &copy_name);
        out.writes.push(Write::Delete(copy));
        let message = format!("deleted {copy_name}: the Secret it copied is gone");
        out.events.push(env_event(
            env,
            EventType::Normal,
            "CredentialsDeleted",
            message,
        ));
    }
}

/// Creates the managed environment, or updates its spec (only) when it differs.
fn apply_managed_environment(
    env: &Environment,
    spec: ManagedEnvironmentSpec,
    world: &World,
    out: &mut Outcome,
) {
    let managed_name = managed_environment_name(name(env));
    let (write, reason, verb) = match world.managed_environment(namespace(env), &managed_name) {
        None => {
            let managed = new_managed_environment(env, &managed_name, spec);
            let write = Write::Create(Object::ManagedEnvironment(managed));
            (write, "ManagedEnvironmentCreated", "created")
        }
        Some(current) if current.spec != spec => {
            let mut updated = current.clone();
            updated.spec = spec;
            let write = Write::Update(Object::ManagedEnvironment(updated));
            (write, "ManagedEnvironmentUpdated", "updated")
        }
        Some(_) => return,
    };
    out.writes.push(write);
    let message = format!("{verb} GitOpsDeploymentManagedEnvironment {managed_name}");
    out.events
        .push(env_event(env, EventType::Normal, reason, message));
}

fn new_managed_environment(
    env: &Environment,
    managed_name: &str,
    spec: ManagedEnvironmentSpec,
) -> GitOpsDeploymentManagedEnvironment {
    // Upstream's quirk, kept because its watch mapping (and any tool reading these) relies on
    // it: the managed-gitops group/version with `kind: Environment`, which names no real kind.
    let owner = OwnerReference {
        api_version: GitOpsDeploymentManagedEnvironment::api_version(&()).into_owned(),
        kind: Environment::kind(&()).into_owned(),
        name: name(env).to_owned(),
        uid: env.metadata.uid.clone().unwrap_or_default(),
        ..OwnerReference::default()
    };
    let mut managed = GitOpsDeploymentManagedEnvironment::new(managed_name, spec);
    managed.metadata.namespace = Some(namespace(env).to_owned());
    managed.metadata.owner_references = Some(vec![owner]);
    managed
}

/// Records `error` in both conditions (`ErrorOccurred=True` with reason `ErrorOccurred`,
/// `Reconciled=False` with the error's reason, both with its message), when they differ.
fn report(env: &Environment, error: &EnvironmentError, ctx: &Context, out: &mut Outcome) {
    let message = error.to_string();
    let mut conditions = conditions(env);
    let legacy = upsert_condition(
        &mut conditions,
        (CONDITION_ERROR_OCCURRED, "True", REASON_ERROR_OCCURRED),
        &message,
        ctx,
    );
    let reconciled = upsert_condition(
        &mut conditions,
        (CONDITION_RECONCILED, "False", error.reason()),
        &message,
        ctx,
    );
    if legacy || reconciled {
        out.writes.push(with_conditions(env, conditions));
        out.events
            .push(env_event(env, EventType::Warning, error.reason(), message));
    }
}

/// Upstream's `insertOrUpdateConditionsInSlice`: adds the condition, or replaces it when its
/// status, reason or message differ; either way with `lastTransitionTime` now.
fn upsert_condition(
    conditions: &mut Vec<Condition>,
    (type_, status, reason): (&str, &str, &str),
    message: &str,
    ctx: &Context,
) -> bool {
    let new = Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        last_transition_time: Time(ctx.now),
        observed_generation: None,
    };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        None => conditions.push(new),
        Some(c)
            if (&c.status, &c.reason, &c.message) != (&new.status, &new.reason, &new.message) =>
        {
            *c = new;
        }
        Some(_) => return false,
    }
    true
}

/// Upstream's `updateConditionErrorAsResolved`, after a reconcile that reported no error:
/// `ErrorOccurred` turns False and `Reconciled` True, each reason gets the suffix `Resolved` and
/// the message is cleared. Upstream leaves `lastTransitionTime` as it was, and so does this.
fn resolve(env: &Environment, out: &mut Outcome) {
    let mut conditions = conditions(env);
    let legacy = flip(&mut conditions, CONDITION_ERROR_OCCURRED, "False");
    let reconciled = flip(&mut conditions, CONDITION_RECONCILED, "True");
    if !(legacy || reconciled) {
        return;
    }
    let shown = if reconciled {
        CONDITION_RECONCILED
    } else {
        CONDITION_ERROR_OCCURRED
    };
    let reason = (conditions.iter().find(|c| c.type_ == shown)).map(|c| c.reason.clone());
    out.writes.push(with_conditions(env, conditions));
    let message = "the error reported earlier is resolved".to_owned();
    let reason = reason.unwrap_or_default();
    out.events
        .push(env_event(env, EventType::Normal, &reason, message));
}

fn flip(conditions: &mut [Condition], type_: &str, status: &str) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) if c.status != status => {
            c.status = status.to_owned();
            c.reason.push_str("Resolved");
            c.message.clear();
            true
        }
        _ => false,
    }
}

fn conditions(env: &Environment) -> Vec<Condition> {
    (env.status.as_ref()).map_or_else(Vec::new, |s| s.conditions.clone())
}

fn with_conditions(env: &Environment, conditions: Vec<Condition>) -> Write {
    let mut updated = env.clone();
    updated
        .status
        .get_or_insert_with(Default::default)
        .conditions = conditions;
    Write::UpdateStatus(Object::Environment(updated))
}

fn env_event(env: &Environment, type_: EventType, reason: &str, message: String) -> Event {
    let regarding = ObjectRef::new(Kind::Environment, namespace(env), name(env));
    event(regarding, type_, reason, message)
}

fn event(regarding: ObjectRef, type_: EventType, reason: &str, message: String) -> Event {
    Event {
        regarding,
        type_,
        reason: reason.to_owned(),
        message,
    }
}

fn name<R: Resource>(object: &R) -> &str {
    object.meta().name.as_deref().unwrap_or("")
}

fn namespace<R: Resource>(object: &R) -> &str {
    object.meta().namespace.as_deref().unwrap_or("")
}

// ---- Watches: which Environments an event on another object concerns (upstream's map
// functions; the shell applies upstream's predicates: ResourceVersionChanged for Secrets and
// claims, GenerationChanged for targets and managed environments).

/// The Environments a Secret event concerns. Only Opaque Secrets and the managed-environment
/// type are looked at (a Secret without a type is Opaque, the API server's default). A copy
/// names its Environment in a label; an Opaque Secret concerns the claim-backed Environments
/// whose claim's target holds it. (Environments with their own credentials are not mapped, as
/// upstream.)
pub fn environments_for_secret(secret: &Secret, world: &World) -> Vec<ObjectRef> {
    let ns = namespace(secret);
    match secret.type_.as_deref().unwrap_or("Opaque") {
        MANAGED_ENVIRONMENT_SECRET_TYPE => {
            let labels = secret.metadata.labels.as_ref();
            let owner = labels.and_then(|l| l.get(LABEL_ENVIRONMENT_SECRET));
            (owner.filter(|env| !env.is_empty()))
                .map(|env| vec![ObjectRef::new(Kind::Environment, ns, env)])
                .unwrap_or_default()
        }
        "Opaque" => environments_matching(world, ns, |env| {
            target_of_claim(env.claim_name(), ns, world).is_some_and(|target| {
                target
                    .spec
                    .kubernetes_credentials
                    .cluster_credentials_secret
                    == name(secret)
            })
        }),
        _ => Vec::new(),
    }
}

/// The target upstream's Secret mapping associates with a claim: the first, by name, that the
/// claim names or that claims it. Upstream drops the whole event when one Environment's claim
/// is missing; here only that Environment is passed over.
fn target_of_claim<'w>(claim: &str, ns: &'w str, world: &'w World) -> Option<&'w DeploymentTarget> {
    let claim = world.claim(ns, claim).filter(|_| !claim.is_empty())?;
    (world.targets(ns))
        .find(|t| claim.spec.target_name == name(*t) || t.spec.claim_ref == name(claim))
}

/// The Environments backed by this claim.
pub fn environments_for_claim(claim: &DeploymentTargetClaim, world: &World) -> Vec<ObjectRef> {
    let claim_name = name(claim);
    environments_matching(world, namespace(claim), |env| {
        env.claim_name() == claim_name
    })
}

/// The Environments backed by a claim that names this target or that this target claims.
pub fn environments_for_target(target: &DeploymentTarget, world: &World) -> Vec<ObjectRef> {
    let ns = namespace(target);
    let claims: Vec<&str> = (world.claims(ns))
        .filter(|c| c.spec.target_name == name(target) || target.spec.claim_ref == name(*c))
        .map(name)
        .collect();
    environments_matching(world, ns, |env| claims.contains(&env.claim_name()))
}

/// The Environments named by the managed environment's ownerRefs of upstream's quirky shape
/// (managed-gitops apiVersion, `kind: Environment`).
pub fn environment_for_managed_environment(
    managed: &GitOpsDeploymentManagedEnvironment,
) -> Vec<ObjectRef> {
    let api_version = GitOpsDeploymentManagedEnvironment::api_version(&());
    let owners = managed.metadata.owner_references.iter().flatten();
    owners
        .filter(|o| o.kind == Environment::kind(&()) && o.api_version == api_version)
        .map(|o| ObjectRef::new(Kind::Environment, namespace(managed), &o.name))
        .collect()
}

fn environments_matching(
    world: &World,
    ns: &str,
    matches: impl Fn(&Environment) -> bool,
) -> Vec<ObjectRef> {
    (world.environments(ns))
        .filter(|env| matches(env))
        .map(|env| ObjectRef::new(Kind::Environment, ns, name(env)))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::components::deployment_targets::model::Next;
    use crate::components::deployment_targets::types::{
        DeploymentTargetClaimConfig, DeploymentTargetClaimSpec, DeploymentTargetClaimStatus,
        DeploymentTargetSpec, EnvironmentConfiguration, EnvironmentCredentials, EnvironmentSpec,
        EnvironmentStatus, EnvironmentTarget, KubernetesCredentials,
    };

    const NS: &str = "team";

    fn now() -> Timestamp {
        "2024-05-01T10:00:00Z".parse().unwrap()
    }

    fn earlier() -> Timestamp {
        "2024-04-01T08:00:00Z".parse().unwrap()
    }

    fn meta(name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("7".into()),
            ..ObjectMeta::default()
        }
    }

    fn environment(name: &str) -> Environment {
        Environment {
            metadata: meta(name),
            spec: EnvironmentSpec {
                display_name: name.into(),
                deployment_strategy: "AppStudioAutomated".into(),
                ..EnvironmentSpec::default()
            },
            status: None,
        }
    }

    fn claim_env(name: &str, claim: &str) -> Environment {
        let mut env = environment(name);
        env.spec.configuration = Some(EnvironmentConfiguration {
            env: Vec::new(),
            target: Some(EnvironmentTarget {
                deployment_target_claim: DeploymentTargetClaimConfig {
                    claim_name: claim.into(),
                },
            }),
        });
        env
    }

    fn fields_env(name: &str, secret: &str) -> Environment {
        let mut env = environment(name);
        env.spec.unstable_configuration_fields = Some(UnstableEnvironmentConfiguration {
            cluster_type: Some("OpenShift".into()),
            kubernetes_credentials: EnvironmentCredentials {
                target_namespace: "apps".into(),
                api_url: "https://api.example.com:6443".into(),
                cluster_credentials_secret: secret.into(),
                allow_insecure_skip_tls_verify: true,
                namespaces: vec!["apps".into(), "tools".into()],
                cluster_resources: true,
                ..EnvironmentCredentials::default()
            },
        });
        env
    }

    fn with_conditions_of(
        mut env: Environment,
        conditions: &[(&str, &str, &str, &str)],
    ) -> Environment {
        let conditions = (conditions.iter())
            .map(|(type_, status, reason, message)| Condition {
                type_: (*type_).into(),
                status: (*status).into(),
                reason: (*reason).into(),
                message: (*message).into(),
                last_transition_time: Time(earlier()),
                observed_generation: None,
            })
            .collect();
        env.status = Some(EnvironmentStatus { conditions });
        env
    }

    fn claim(name: &str, phase: Option<ClaimPhase>, target_name: &str) -> DeploymentTargetClaim {
        DeploymentTargetClaim {
            metadata: meta(name),
            spec: DeploymentTargetClaimSpec {
                deployment_target_class_name: "isolation-level-namespace".into(),
                target_name: target_name.into(),
            },
            status: Some(DeploymentTargetClaimStatus {
                phase,
                conditions: Vec::new(),
            }),
        }
    }

    fn target(name: &str, claim_ref: &str, default_namespace: &str) -> DeploymentTarget {
        DeploymentTarget {
            metadata: meta(name),
            spec: DeploymentTargetSpec {
                deployment_target_class_name: "isolation-level-namespace".into(),
                kubernetes_credentials: KubernetesCredentials {
                    default_namespace: default_namespace.into(),
                    api_url: "https://target.example.com:6443".into(),
                    cluster_credentials_secret: "target-kubeconfig".into(),
                    allow_insecure_skip_tls_verify: true,
                },
                claim_ref: claim_ref.into(),
            },
            status: None,
        }
    }

    fn secret(name: &str, type_: Option<&str>, kubeconfig: &str) -> Secret {
        let data = [(
            "kubeconfig".to_owned(),
            ByteString(kubeconfig.as_bytes().to_vec()),
        )];
        Secret {
            metadata: meta(name),
            type_: type_.map(str::to_owned),
            data: Some(BTreeMap::from(data)),
            ..Secret::default()
        }
    }

    fn namespace_object(terminating: bool) -> Object {
        let mut ns = Namespace::default();
        ns.metadata.name = Some(NS.into());
        if terminating {
            ns.metadata.deletion_timestamp = Some(Time(earlier()));
        }
        Object::Namespace(ns)
    }

    fn world(objects: Vec<Object>) -> World {
        let mut world = World::new();
        objects.into_iter().for_each(|o| world.insert(o));
        world
    }

    /// A claim-backed Environment whose claim is bound to a target with Opaque credentials.
    fn bound_world(extra: Vec<Object>) -> Vec<Object> {
        let mut objects = vec![
            Object::Environment(claim_env("dev", "dev-claim")),
            Object::Claim(claim("dev-claim", Some(ClaimPhase::Bound), "")),
            Object::Target(target("dev-target", "dev-claim", "deploy-ns")),
            Object::Secret(secret("target-kubeconfig", Some("Opaque"), "config-1")),
        ];
        objects.extend(extra);
        objects
    }

    fn reconcile(objects: Vec<Object>, env: &str) -> Outcome {
        let env = ObjectRef::new(Kind::Environment, NS, env);
        reconcile_environment(&env, &world(objects), &Context::at(now()))
    }

    /// The conditions of the one status write, as (type, status, reason, message, transition).
    fn status_written(out: &Outcome) -> Vec<(String, String, String, String, Timestamp)> {
        let statuses: Vec<_> = (out.writes.iter())
            .filter_map(|w| match w {
                Write::UpdateStatus(Object::Environment(e)) => Some(e),
                _ => None,
            })
            .collect();
        assert_eq!(statuses.len(), 1, "{:?}", out.writes);
        (statuses[0].status.as_ref().unwrap().conditions.iter())
            .map(|c| {
                let (t, s, r, m) = (&c.type_, &c.status, &c.reason, &c.message);
                (
                    t.clone(),
                    s.clone(),
                    r.clone(),
                    m.clone(),
                    c.last_transition_time.0,
                )
            })
            .collect()
    }

    fn reported(reason: &str, message: &str) -> Vec<(String, String, String, String, Timestamp)> {
        vec![
            (
                "ErrorOccurred".into(),
                "True".into(),
                "ErrorOccurred".into(),
                message.into(),
                now(),
            ),
            (
                "Reconciled".into(),
                "False".into(),
                reason.into(),
                message.into(),
                now(),
            ),
        ]
    }

    fn created_managed_environment(out: &Outcome) -> &GitOpsDeploymentManagedEnvironment {
        (out.writes.iter())
            .find_map(|w| match w {
                Write::Create(Object::ManagedEnvironment(m)) => Some(m),
                _ => None,
            })
            .expect("a managed environment is created")
    }

    fn reasons(out: &Outcome) -> Vec<(EventType, &str)> {
        out.events
            .iter()
            .map(|e| (e.type_, e.reason.as_str()))
            .collect()
    }

    #[test]
    fn a_terminating_namespace_is_left_alone() {
        let out = reconcile(bound_world(vec![namespace_object(true)]), "dev");
        assert_eq!(out, Outcome::done());
    }

    #[test]
    fn a_live_or_unknown_namespace_is_reconciled() {
        for objects in [
            bound_world(vec![namespace_object(false)]),
            bound_world(vec![]),
        ] {
            let out = reconcile(objects, "dev");
            created_managed_environment(&out);
        }
    }

    #[test]
    fn a_gone_environment_takes_its_managed_environment_with_it() {
        let managed = GitOpsDeploymentManagedEnvironment::new(
            "managed-environment-dev",
            ManagedEnvironmentSpec::default(),
        );
        let mut managed = managed;
        managed.metadata.namespace = Some(NS.into());
        let out = reconcile(vec![Object::ManagedEnvironment(managed)], "dev");
        let gone = ObjectRef::new(
            Kind::GitOpsDeploymentManagedEnvironment,
            NS,
            "managed-environment-dev",
        );
        assert_eq!(out.writes, vec![Write::Delete(gone.clone())]);
        assert_eq!(out.events[0].regarding, gone);
        assert_eq!(reconcile(vec![], "dev"), Outcome::done());
    }

    #[test]
    fn user_errors_are_reported_in_both_conditions_with_upstream_reasons_and_messages() {
        let both = {
            let mut env = claim_env("dev", "dev-claim");
            env.spec.unstable_configuration_fields =
                fields_env("x", "s").spec.unstable_configuration_fields;
            env
        };
        let cases: Vec<(&str, Vec<Object>, &str, &str)> = vec![
            (
                "claim and credentials",
                bound_world(vec![Object::Environment(both)]),
                "InvalidEnvironment",
                "Environment is invalid since it cannot have both DeploymentTargetClaim and credentials configuration set",
            ),
            (
                "claim missing",
                vec![Object::Environment(claim_env("dev", "dev-claim"))],
                "DeploymentTargetClaimNotFound",
                "DeploymentTargetClaim not found while generating the desired Environment resource",
            ),
            (
                "named target missing",
                vec![
                    Object::Environment(claim_env("dev", "dev-claim")),
                    Object::Claim(claim("dev-claim", Some(ClaimPhase::Bound), "gone")),
                ],
                "DeploymentTargetNotFound",
                "DeploymentTargetClaim references a DeploymentTarget that does not exist",
            ),
            (
                "no target claims it",
                vec![
                    Object::Environment(claim_env("dev", "dev-claim")),
                    Object::Claim(claim("dev-claim", Some(ClaimPhase::Bound), "")),
                    Object::Target(target("other-target", "other-claim", "ns")),
                ],
                "DeploymentTargetNotFound",
                "DeploymentTarget not found for DeploymentTargetClaim",
            ),
            (
                "target secret missing",
                bound_world(vec![])[..3].to_vec(),
                "SecretNotFound",
                "the secret target-kubeconfig referenced by the Environment resource was not found",
            ),
            (
                "own credentials secret missing",
                vec![Object::Environment(fields_env("dev", "creds"))],
                "SecretNotFound",
                "the secret creds referenced by the Environment resource was not found",
            ),
            (
                "own credentials without a secret",
                vec![Object::Environment(fields_env("dev", ""))],
                "SecretNotFound",
                "the secret  referenced by the Environment resource was not found",
            ),
        ];
        for (case, objects, reason, message) in cases {
            let out = reconcile(objects, "dev");
            assert_eq!(status_written(&out), reported(reason, message), "{case}");
            assert_eq!(reasons(&out), vec![(EventType::Warning, reason)], "{case}");
            assert_eq!(out.events[0].message, message, "{case}");
            assert_eq!(
                (out.next, out.error.as_deref()),
                (Next::Done, None),
                "{case}"
            );
            assert_eq!(
                out.writes.len(),
                1,
                "{case}: nothing but the status is written"
            );
        }
    }

    #[test]
    fn a_reported_error_is_not_written_again() {
        let message =
            "DeploymentTargetClaim not found while generating the desired Environment resource";
        let env = with_conditions_of(
            claim_env("dev", "dev-claim"),
            &[
                ("ErrorOccurred", "True", "ErrorOccurred", message),
                (
                    "Reconciled",
                    "False",
                    "DeploymentTargetClaimNotFound",
                    message,
                ),
            ],
        );
        assert_eq!(
            reconcile(vec![Object::Environment(env)], "dev"),
            Outcome::done()
        );
    }

    #[test]
    fn a_changed_error_replaces_the_conditions_with_a_new_transition_time() {
        let env = with_conditions_of(
            claim_env("dev", "dev-claim"),
            &[
                ("Ready", "True", "Fine", ""),
                ("ErrorOccurred", "True", "ErrorOccurred", "old"),
                ("Reconciled", "False", "SecretNotFound", "old"),
            ],
        );
        let out = reconcile(vec![Object::Environment(env)], "dev");
        let message =
            "DeploymentTargetClaim not found while generating the desired Environment resource";
        let mut expected = vec![(
            "Ready".into(),
            "True".into(),
            "Fine".into(),
            String::new(),
            earlier(),
        )];
        expected.extend(reported("DeploymentTargetClaimNotFound", message));
        assert_eq!(status_written(&out), expected);
    }

    #[test]
    fn target_lookup_failures_are_reported_and_retried() {
        let conflict = vec![
            Object::Environment(claim_env("dev", "dev-claim")),
            Object::Claim(claim("dev-claim", Some(ClaimPhase::Bound), "dev-target")),
            Object::Target(target("dev-target", "someone-else", "ns")),
        ];
        let multiple = vec![
            Object::Environment(claim_env("dev", "dev-claim")),
            Object::Claim(claim("dev-claim", Some(ClaimPhase::Bound), "")),
            Object::Target(target("a-target", "dev-claim", "ns")),
            Object::Target(target("b-target", "dev-claim", "ns")),
        ];
        let cases = [
            (
                conflict,
                "cannot bind DeploymentTargetClaim dev-claim with target \"dev-target\" to DeploymentTarget dev-target with claim ref \"someone-else\": DeploymentTarget has a claimRef to another DeploymentTargetClaim",
            ),
            (
                multiple,
                "multiple DeploymentTargets found for a bounded DeploymentTargetClaim dev-claim",
            ),
        ];
        for (objects, cause) in cases {
            let out = reconcile(objects, "dev");
            let message = "Unable to find the DeploymentTarget for DeploymentTargetClaim";
            assert_eq!(
                status_written(&out),
                reported("DeploymentTargetNotFound", message)
            );
            let error = format!(
                "unable to generate expected GitOpsDeploymentManagedEnvironment resource: {cause}"
            );
            assert_eq!(out.error, Some(error));
        }
    }

    #[test]
    fn an_unbound_claim_is_reported_not_waited_for_in_silence() {
        let cases = [
            (
                None,
                "DeploymentTargetClaim dev-claim is without a phase yet, not Bound",
            ),
            (
                Some(ClaimPhase::Pending),
                "DeploymentTargetClaim dev-claim is Pending, not Bound",
            ),
            (
                Some(ClaimPhase::Lost),
                "DeploymentTargetClaim dev-claim is Lost (its DeploymentTarget is gone), not Bound",
            ),
        ];
        for (phase, message) in cases {
            let objects = vec![
                Object::Environment(claim_env("dev", "dev-claim")),
                Object::Claim(claim("dev-claim", phase, "")),
            ];
            let out = reconcile(objects, "dev");
            assert_eq!(
                status_written(&out),
                reported("DeploymentTargetClaimNotBound", message),
                "{phase:?}"
            );
            assert_eq!(
                reasons(&out),
                vec![(EventType::Warning, "DeploymentTargetClaimNotBound")]
            );
            assert_eq!(
                (out.next, out.error),
                (Next::Done, None),
                "the claim's watch brings it back"
            );
        }
    }

    /// What the controller made for an Environment goes once its target is gone (upstream
    /// leaves the managed environment and the copied credentials pointing at it).
    #[test]
    fn what_was_made_goes_with_the_target() {
        let made = reconcile(bound_world(vec![]), "dev");
        let made_world = crate::components::deployment_targets::testing::applied(
            world(bound_world(vec![])),
            &made,
        );
        let managed = ObjectRef::new(
            Kind::GitOpsDeploymentManagedEnvironment,
            NS,
            "managed-environment-dev",
        );
        let copy = ObjectRef::new(Kind::Secret, NS, "managed-environment-secret-dev");
        assert!(made_world.get(&managed).is_some() && made_world.get(&copy).is_some());
        let lost = Object::Claim(claim("dev-claim", Some(ClaimPhase::Lost), ""));
        let without_claim = |keep: &dyn Fn(&Object) -> bool| -> Vec<Object> {
            (made_world.objects())
                .filter(|o| o.kind() != Kind::DeploymentTargetClaim && keep(o))
                .cloned()
                .collect()
        };
        let cases: Vec<(&str, Vec<Object>, &str)> = vec![
            (
                "claim gone",
                without_claim(&|_| true),
                "DeploymentTargetClaimNotFound",
            ),
            (
                "claim lost",
                [
                    without_claim(&|o| o.kind() != Kind::DeploymentTarget),
                    vec![lost],
                ]
                .concat(),
                "DeploymentTargetClaimNotBound",
            ),
            (
                "target gone",
                (made_world.objects())
                    .filter(|o| o.kind() != Kind::DeploymentTarget)
                    .cloned()
                    .collect(),
                "DeploymentTargetNotFound",
            ),
        ];
        for (case, objects, reason) in cases {
            let out = reconcile(objects, "dev");
            let deleted: Vec<&ObjectRef> = (out.writes.iter())
                .filter_map(|w| match w {
                    Write::Delete(r) => Some(r),
                    _ => None,
                })
                .collect();
            assert_eq!(deleted, [&managed, &copy], "{case}");
            assert_eq!(status_written(&out)[1].2, reason, "{case}");
        }
    }

    #[test]
    fn resolved_conditions_stay_as_they_are() {
        let env = with_conditions_of(
            environment("dev"),
            &[
                ("ErrorOccurred", "False", "ErrorOccurredResolved", ""),
                ("Reconciled", "True", "SecretNotFoundResolved", ""),
            ],
        );
        assert_eq!(
            reconcile(vec![Object::Environment(env)], "dev"),
            Outcome::done()
        );
    }

    #[test]
    fn an_environment_with_neither_claim_nor_credentials_needs_nothing() {
        let out = reconcile(vec![Object::Environment(environment("dev"))], "dev");
        assert_eq!(out, Outcome::done());
    }

    #[test]
    fn a_bound_claim_is_projected_with_copied_credentials() {
        let out = reconcile(bound_world(vec![]), "dev");
        let Write::Create(Object::Secret(copy)) = &out.writes[0] else {
            panic!("the credentials are copied first: {:?}", out.writes)
        };
        assert_eq!(
            copy.metadata.name.as_deref(),
            Some("managed-environment-secret-dev")
        );
        assert_eq!(copy.metadata.namespace.as_deref(), Some(NS));
        assert_eq!(
            copy.type_.as_deref(),
            Some("managed-gitops.redhat.com/managed-environment")
        );
        let label = [(
            "appstudio.openshift.io/environment-secret".to_owned(),
            "dev".to_owned(),
        )];
        assert_eq!(copy.metadata.labels, Some(BTreeMap::from(label)));
        let owner = OwnerReference {
            api_version: "appstudio.redhat.com/v1alpha1".into(),
            kind: "Environment".into(),
            name: "dev".into(),
            uid: "uid-dev".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        assert_eq!(copy.metadata.owner_references, Some(vec![owner]));
        assert_eq!(copy.data, secret("x", None, "config-1").data);

        let managed = created_managed_environment(&out);
        assert_eq!(
            managed.metadata.name.as_deref(),
            Some("managed-environment-dev")
        );
        assert_eq!(managed.metadata.namespace.as_deref(), Some(NS));
        let expected = ManagedEnvironmentSpec {
            api_url: "https://target.example.com:6443".into(),
            credentials_secret: "managed-environment-secret-dev".into(),
            allow_insecure_skip_tls_verify: true,
            namespaces: vec!["deploy-ns".into()],
            ..ManagedEnvironmentSpec::default()
        };
        assert_eq!(managed.spec, expected);
        let quirk = OwnerReference {
            api_version: "managed-gitops.redhat.com/v1alpha1".into(),
            kind: "Environment".into(),
            name: "dev".into(),
            uid: "uid-dev".into(),
            ..OwnerReference::default()
        };
        assert_eq!(managed.metadata.owner_references, Some(vec![quirk]));
        assert_eq!(out.writes.len(), 2);
        let normal = EventType::Normal;
        assert_eq!(
            reasons(&out),
            vec![
                (normal, "CredentialsCopied"),
                (normal, "ManagedEnvironmentCreated")
            ]
        );
        assert_eq!(
            out.events[1].message,
            "created GitOpsDeploymentManagedEnvironment managed-environment-dev"
        );
        assert_eq!((out.next, out.error), (Next::Done, None));
    }

    #[test]
    fn the_target_is_the_one_the_claim_names_or_the_one_claiming_it() {
        let named = vec![
            Object::Environment(claim_env("dev", "dev-claim")),
            Object::Claim(claim("dev-claim", Some(ClaimPhase::Bound), "named")),
            Object::Target(target("a-claiming", "dev-claim", "a-ns")),
            Object::Target(target("named", "", "named-ns")),
            Object::Secret(secret("target-kubeconfig", Some("Opaque"), "c")),
        ];
        let out = reconcile(named, "dev");
        assert_eq!(
            created_managed_environment(&out).spec.namespaces,
            vec!["named-ns".to_owned()]
        );
        let out = reconcile(bound_world(vec![]), "dev");
        assert_eq!(
            created_managed_environment(&out).spec.namespaces,
            vec!["deploy-ns".to_owned()]
        );
    }

    #[test]
    fn a_target_without_a_default_namespace_gives_no_namespaces() {
        let out = reconcile(
            bound_world(vec![Object::Target(target("dev-target", "dev-claim", ""))]),
            "dev",
        );
        assert_eq!(
            created_managed_environment(&out).spec.namespaces,
            Vec::<String>::new()
        );
    }

    #[test]
    fn credentials_already_of_the_managed_type_are_used_as_they_are() {
        let typed = secret(
            "target-kubeconfig",
            Some(MANAGED_ENVIRONMENT_SECRET_TYPE),
            "c",
        );
        let out = reconcile(bound_world(vec![Object::Secret(typed)]), "dev");
        assert_eq!(out.writes.len(), 1);
        assert_eq!(
            created_managed_environment(&out).spec.credentials_secret,
            "target-kubeconfig"
        );
    }

    #[test]
    fn the_copy_is_refreshed_only_when_its_data_differs() {
        let stale = new_secret_copy(
            &environment("dev"),
            "managed-environment-secret-dev",
            &secret("s", None, "old"),
        );
        let out = reconcile(bound_world(vec![Object::Secret(stale.clone())]), "dev");
        let Write::Update(Object::Secret(updated)) = &out.writes[0] else {
            panic!("{:?}", out.writes)
        };
        let mut expected = stale;
        expected.data = secret("x", None, "config-1").data;
        assert_eq!(updated, &expected);
        assert_eq!(out.events[0].reason, "CredentialsUpdated");

        let fresh = new_secret_copy(
            &environment("dev"),
            "managed-environment-secret-dev",
            &secret("s", None, "config-1"),
        );
        let out = reconcile(bound_world(vec![Object::Secret(fresh)]), "dev");
        assert!(
            matches!(
                out.writes[..],
                [Write::Create(Object::ManagedEnvironment(_))]
            ),
            "{:?}",
            out.writes
        );
    }

    #[test]
    fn no_data_and_empty_data_are_the_same() {
        let mut a = secret("a", None, "");
        let mut b = a.clone();
        a.data = None;
        b.data = Some(BTreeMap::new());
        assert!(same_data(&a, &b));
        assert!(!same_data(&a, &secret("c", None, "x")));
    }

    #[test]
    fn a_missing_secret_deletes_the_copy_after_reporting() {
        let copy = new_secret_copy(
            &environment("dev"),
            "managed-environment-secret-dev",
            &secret("s", None, "c"),
        );
        let mut objects = bound_world(vec![])[..3].to_vec();
        objects.push(Object::Secret(copy));
        let out = reconcile(objects, "dev");
        assert!(matches!(out.writes[0], Write::UpdateStatus(_)));
        let copy = ObjectRef::new(Kind::Secret, NS, "managed-environment-secret-dev");
        assert_eq!(out.writes[1], Write::Delete(copy));
        let expected = vec![
            (EventType::Warning, "SecretNotFound"),
            (EventType::Normal, "CredentialsDeleted"),
        ];
        assert_eq!(reasons(&out), expected);
    }

    #[test]
    fn own_credentials_are_projected_without_a_copy() {
        let objects = vec![
            Object::Environment(fields_env("dev", "creds")),
            Object::Secret(secret("creds", Some("Opaque"), "c")),
        ];
        let out = reconcile(objects, "dev");
        assert_eq!(out.writes.len(), 1);
        let expected = ManagedEnvironmentSpec {
            api_url: "https://api.example.com:6443".into(),
            credentials_secret: "creds".into(),
            allow_insecure_skip_tls_verify: true,
            namespaces: vec!["apps".into(), "tools".into()],
            cluster_resources: true,
            create_new_service_account: false,
        };
        assert_eq!(created_managed_environment(&out).spec, expected);
    }

    #[test]
    fn an_existing_managed_environment_is_updated_only_in_its_spec_and_only_when_it_differs() {
        let out = reconcile(bound_world(vec![]), "dev");
        let mut current = created_managed_environment(&out).clone();
        current.metadata.resource_version = Some("42".into());
        current.metadata.labels = Some([("kept".to_owned(), "yes".to_owned())].into());
        let copy = new_secret_copy(
            &environment("dev"),
            "managed-environment-secret-dev",
            &secret("s", None, "config-1"),
        );
        let settled = bound_world(vec![
            Object::Secret(copy),
            Object::ManagedEnvironment(current.clone()),
        ]);
        assert_eq!(reconcile(settled.clone(), "dev"), Outcome::done());

        let mut drifted = current.clone();
        drifted.spec.api_url = "https://elsewhere:6443".into();
        drifted.spec.create_new_service_account = true;
        let mut objects = settled;
        objects.push(Object::ManagedEnvironment(drifted));
        let out = reconcile(objects, "dev");
        assert_eq!(
            out.writes,
            vec![Write::Update(Object::ManagedEnvironment(current))]
        );
        assert_eq!(
            reasons(&out),
            vec![(EventType::Normal, "ManagedEnvironmentUpdated")]
        );
    }

    #[test]
    fn recovery_resolves_the_conditions_after_the_writes() {
        let message =
            "the secret target-kubeconfig referenced by the Environment resource was not found";
        let env = with_conditions_of(
            claim_env("dev", "dev-claim"),
            &[
                ("ErrorOccurred", "True", "ErrorOccurred", message),
                ("Reconciled", "False", "SecretNotFound", message),
            ],
        );
        let out = reconcile(bound_world(vec![Object::Environment(env)]), "dev");
        assert!(matches!(out.writes[0], Write::Create(Object::Secret(_))));
        assert!(matches!(
            out.writes[1],
            Write::Create(Object::ManagedEnvironment(_))
        ));
        let conditions = status_written(&out);
        assert_eq!(out.writes.len(), 3);
        assert!(matches!(out.writes[2], Write::UpdateStatus(_)));
        let reasons: Vec<_> = conditions
            .iter()
            .map(|c| (c.1.as_str(), c.2.as_str()))
            .collect();
        assert_eq!(
            reasons,
            vec![
                ("False", "ErrorOccurredResolved"),
                ("True", "SecretNotFoundResolved")
            ]
        );
    }

    #[test]
    fn only_one_of_the_two_conditions_is_resolved_when_only_one_is_set() {
        let env = with_conditions_of(
            environment("dev"),
            &[("ErrorOccurred", "True", "ErrorOccurred", "m")],
        );
        let out = reconcile(vec![Object::Environment(env)], "dev");
        let resolved = vec![(
            "ErrorOccurred".into(),
            "False".into(),
            "ErrorOccurredResolved".into(),
            String::new(),
            earlier(),
        )];
        assert_eq!(status_written(&out), resolved);
        assert_eq!(
            reasons(&out),
            vec![(EventType::Normal, "ErrorOccurredResolved")]
        );
    }

    // ---- watches

    fn refs(names: &[&str]) -> Vec<ObjectRef> {
        names
            .iter()
            .map(|n| ObjectRef::new(Kind::Environment, NS, n))
            .collect()
    }

    #[test]
    fn secrets_map_to_the_environments_using_them() {
        let objects = bound_world(vec![
            Object::Environment(claim_env("orphan", "missing-claim")),
            Object::Environment(fields_env("own", "target-kubeconfig")),
            Object::Environment(claim_env("named", "named-claim")),
            Object::Claim(claim("named-claim", Some(ClaimPhase::Bound), "dev-target")),
        ]);
        let world = world(objects);
        let opaque = secret("target-kubeconfig", Some("Opaque"), "c");
        assert_eq!(
            environments_for_secret(&opaque, &world),
            refs(&["dev", "named"])
        );
        let untyped = secret("target-kubeconfig", None, "c");
        assert_eq!(
            environments_for_secret(&untyped, &world),
            refs(&["dev", "named"])
        );
        let unrelated = secret("other", Some("Opaque"), "c");
        assert_eq!(environments_for_secret(&unrelated, &world), refs(&[]));
        let tls = secret("target-kubeconfig", Some("kubernetes.io/tls"), "c");
        assert_eq!(environments_for_secret(&tls, &world), refs(&[]));

        let copy = new_secret_copy(
            &environment("dev"),
            "managed-environment-secret-dev",
            &opaque,
        );
        assert_eq!(environments_for_secret(&copy, &world), refs(&["dev"]));
        let mut unlabelled = copy;
        unlabelled.metadata.labels = None;
        assert_eq!(environments_for_secret(&unlabelled, &world), refs(&[]));
    }

    #[test]
    fn claims_and_targets_map_to_the_environments_they_back() {
        let objects = bound_world(vec![
            Object::Environment(claim_env("named", "named-claim")),
            Object::Claim(claim("named-claim", None, "named-target")),
            Object::Environment(environment("plain")),
        ]);
        let world = world(objects);
        let dev_claim = world.claim(NS, "dev-claim").unwrap();
        assert_eq!(environments_for_claim(dev_claim, &world), refs(&["dev"]));
        let claiming = world.target(NS, "dev-target").unwrap();
        assert_eq!(environments_for_target(claiming, &world), refs(&["dev"]));
        let named = target("named-target", "", "ns");
        assert_eq!(environments_for_target(&named, &world), refs(&["named"]));
        assert_eq!(
            environments_for_target(&target("loose", "", "ns"), &world),
            refs(&[])
        );
    }

    #[test]
    fn managed_environments_map_through_the_quirky_owner_reference_only() {
        let out = reconcile(bound_world(vec![]), "dev");
        let mut managed = created_managed_environment(&out).clone();
        assert_eq!(
            environment_for_managed_environment(&managed),
            refs(&["dev"])
        );
        let real_kind = OwnerReference {
            api_version: "appstudio.redhat.com/v1alpha1".into(),
            kind: "Environment".into(),
            name: "other".into(),
            ..OwnerReference::default()
        };
        managed.metadata.owner_references = Some(vec![real_kind]);
        assert_eq!(environment_for_managed_environment(&managed), refs(&[]));
    }
}
