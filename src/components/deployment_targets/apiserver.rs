//! The API server's semantics over a [`World`], for the offline simulator (`cvo dt
//! reconcile`): what a write does, and which writes it refuses. Every write that changes
//! something gets a new `resourceVersion` (one counter for the world, like etcd's revision);
//! a write carrying another `resourceVersion` than the object's is a conflict (none given is
//! an unconditional write). Custom resources keep `metadata.generation`, bumped when their
//! spec changes or their deletion starts. `Update` writes metadata and spec, `UpdateStatus`
//! only the status (the status subresource); a write that changes nothing is no write. An
//! object with finalizers is only marked when deleted (`deletionTimestamp`), and goes once the
//! last one is removed. Offline, no namespace need exist for objects to be created in it.

use k8s_openapi::api::core::v1::{NamespaceStatus, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::SignedDuration;
use sha2::Digest as _;

use super::meta::is_deleting;
use super::model::{
    Context, Kind, KubeconfigToken, Object, ObjectRef, World, Write, fill_kubeconfig_secret,
};
use super::types::TargetPhase;

/// The token put in kubeconfigs offline, where no TokenRequest can be made.
pub const PLACEHOLDER_TOKEN: &str = "OFFLINE-PLACEHOLDER-cvo-dt-reconcile-requests-no-token";

/// A write the API server refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("{0} not found")]
    NotFound(ObjectRef),
    #[error("{0} already exists")]
    AlreadyExists(ObjectRef),
    #[error(
        "conflict on {reference}: the object has been modified (resourceVersion {current}, the write carries {given})"
    )]
    Conflict {
        reference: ObjectRef,
        given: String,
        current: String,
    },
    #[error("{reference} is invalid: {message}")]
    Invalid {
        reference: ObjectRef,
        message: String,
    },
    #[error("{reference} is forbidden: {message}")]
    Forbidden {
        reference: ObjectRef,
        message: String,
    },
}

impl World {
    /// Applies one write as the API server would; `ctx.now` stamps creations and deletions.
    pub fn apply(&mut self, write: &Write, ctx: &Context) -> Result<(), ApplyError> {
        self.apply_owned(write.clone(), ctx)
    }

    /// [`World::apply`], taking the write (the objects it carries are stored without a copy).
    pub fn apply_owned(&mut self, write: Write, ctx: &Context) -> Result<(), ApplyError> {
        match write {
            Write::Create(object) => self.create(object, ctx),
            Write::Update(object) => self.update(object, false),
            Write::UpdateStatus(object) => self.update(object, true),
            Write::Delete(reference) => self.delete(&reference, ctx),
            Write::CreateKubeconfigSecret { secret, token } => {
                self.create(Object::Secret(offline_token(secret, &token, ctx)), ctx)
            }
            Write::RenewKubeconfigSecret { secret, token } => {
                self.update(Object::Secret(offline_token(secret, &token, ctx)), false)
            }
        }
    }

    fn create(&mut self, mut object: Object, ctx: &Context) -> Result<(), ApplyError> {
        self.name_generated(&mut object)?;
        let reference = object.reference();
        if reference.kind.is_namespaced() && reference.namespace.is_empty() {
            return Err(invalid(&reference, "metadata.namespace is required"));
        }
        if self
            .namespace(&reference.namespace)
            .is_some_and(|n| is_deleting(&n.metadata))
        {
            let message = format!(
                "unable to create new content in namespace {} because it is being terminated",
                reference.namespace
            );
            return Err(ApplyError::Forbidden { reference, message });
        }
        if self.get(&reference).is_some() {
            return Err(ApplyError::AlreadyExists(reference));
        }
        if reference.kind.is_custom() {
            // The status is a subresource: what a create carries is dropped.
            with_status_of(&mut object, None);
        }
        let revision = self.next_revision();
        let meta = object.meta_mut();
        meta.resource_version = Some(revision.clone());
        meta.uid = Some(format!("00000000-0000-4000-8000-{revision:0>12}"));
        meta.creation_timestamp = Some(Time(ctx.now));
        meta.deletion_timestamp = None;
        meta.generation = reference.kind.is_custom().then_some(1);
        if let Object::Namespace(n) = &mut object {
            n.status = Some(phase("Active"));
        }
        self.insert(object);
        Ok(())
    }

    /// `generateName`: the name is the prefix and five characters the API server's alphabet
    /// allows, chosen from a hash of the prefix and a counter so that runs repeat.
    fn name_generated(&self, object: &mut Object) -> Result<(), ApplyError> {
        let meta = object.meta();
        if meta.name.as_deref().is_some_and(|n| !n.is_empty()) {
            return Ok(());
        }
        let Some(prefix) = meta.generate_name.clone().filter(|p| !p.is_empty()) else {
            return Err(invalid(
                &object.reference(),
                "name or generateName is required",
            ));
        };
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        for attempt in 0u32.. {
            let digest = sha2::Sha256::digest(format!(
                "{}/{prefix}/{attempt}",
                object.reference().namespace
            ));
            let suffix: String = (digest.iter().take(5))
                .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
                .collect();
            let mut candidate = object.clone();
            candidate.meta_mut().name = Some(format!("{prefix}{suffix}"));
            if self.get(&candidate.reference()).is_none() {
                *object = candidate;
                break;
            }
        }
        Ok(())
    }

    /// `Update` (metadata and spec) or `UpdateStatus` (status only).
    fn update(&mut self, object: Object, status_only: bool) -> Result<(), ApplyError> {
        let reference = object.reference();
        let stored = self
            .get(&reference)
            .ok_or_else(|| ApplyError::NotFound(reference.clone()))?;
        check_version(&reference, object.meta(), stored.meta())?;
        let updated = match status_only {
            // A reconcile's status write carries the object as it read it but for the status:
            // the write is then the stored object, without copying the stored one.
            true if equal_but_status(&object, stored) => {
                let mut updated = object;
                stored_form(&mut updated);
                updated
            }
            true => {
                let mut updated = stored.clone();
                with_status_of(&mut updated, Some(&object));
                updated
            }
            false => updated_metadata_and_spec(stored, object)?,
        };
        if updated == *stored {
            return Ok(());
        }
        let spec_changed = reference.kind.is_custom() && spec_differs(&updated, stored);
        let mut updated = updated;
        let revision = self.next_revision();
        let meta = updated.meta_mut();
        meta.resource_version = Some(revision);
        if spec_changed {
            meta.generation = Some(meta.generation.unwrap_or(0) + 1);
        }
        if is_deleting(meta) && meta.finalizers.is_none() {
            self.remove_and_tidy(&reference);
        } else {
            self.insert(updated);
        }
        Ok(())
    }

    fn delete(&mut self, reference: &ObjectRef, ctx: &Context) -> Result<(), ApplyError> {
        if self.get(reference).is_none() {
            return Err(ApplyError::NotFound(reference.clone()));
        }
        if reference.kind == Kind::Namespace {
            self.delete_namespace(&reference.name, ctx);
        } else {
            self.delete_object(reference, ctx);
        }
        Ok(())
    }

    /// Marks an object with finalizers as being deleted, removes one without.
    fn delete_object(&mut self, reference: &ObjectRef, ctx: &Context) {
        let Some(object) = self.get(reference) else {
            return;
        };
        if object.meta().finalizers.is_none() {
            self.remove_and_tidy(reference);
            return;
        }
        if is_deleting(object.meta()) {
            return;
        }
        let revision = self.next_revision();
        self.modify(reference, |object| {
            let meta = object.meta_mut();
            meta.deletion_timestamp = Some(Time(ctx.now));
            meta.resource_version = Some(revision);
            meta.generation = meta.generation.filter(|g| *g > 0).map(|g| g + 1);
        });
    }

    /// Deleting a namespace deletes everything in it, then the namespace once it is empty.
    /// (On a cluster the namespace controller does this asynchronously: the namespace stays
    /// `Terminating` for a while; offline it happens within the write.)
    fn delete_namespace(&mut self, name: &str, ctx: &Context) {
        let reference = ObjectRef::new(Kind::Namespace, "", name);
        if self.get(&reference).is_some_and(|n| !is_deleting(n.meta())) {
            let revision = self.next_revision();
            self.modify(&reference, |object| {
                if let Object::Namespace(n) = object {
                    n.metadata.deletion_timestamp = Some(Time(ctx.now));
                    n.metadata.resource_version = Some(revision);
                    n.status = Some(phase("Terminating"));
                }
            });
        }
        let inside: Vec<ObjectRef> = self.inside(name).map(Object::reference).collect();
        for reference in inside {
            self.delete_object(&reference, ctx);
        }
        self.tidy_namespace(name);
    }

    /// Removes an object; a namespace being deleted that it leaves empty goes too.
    fn remove_and_tidy(&mut self, reference: &ObjectRef) {
        self.remove(reference);
        self.next_revision();
        if reference.kind.is_namespaced() {
            self.tidy_namespace(&reference.namespace);
        }
    }

    /// The objects in a namespace, by kind and name (a look-up per kind, not a scan of the world).
    fn inside<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = &'a Object> + 'a {
        (Kind::ALL.into_iter())
            .filter(|k| k.is_namespaced())
            .flat_map(move |k| self.in_namespace(k, namespace))
    }

    fn tidy_namespace(&mut self, name: &str) {
        let namespace = ObjectRef::new(Kind::Namespace, "", name);
        let terminating = self.get(&namespace).is_some_and(|n| is_deleting(n.meta()));
        if terminating && self.inside(name).next().is_none() {
            self.remove(&namespace);
            self.next_revision();
        }
    }
}

/// `secret` with a kubeconfig holding the placeholder token, issued now and valid as long as
/// asked (no API server caps it offline).
fn offline_token(mut secret: Secret, token: &KubeconfigToken, ctx: &Context) -> Secret {
    let lifetime = SignedDuration::from_secs(token.expiration_seconds);
    let expires = ctx.now.checked_add(lifetime).unwrap_or(ctx.now);
    fill_kubeconfig_secret(
        &mut secret,
        &token.kubeconfig,
        PLACEHOLDER_TOKEN,
        ctx.now,
        expires,
    );
    secret
}

fn invalid(reference: &ObjectRef, message: &str) -> ApplyError {
    ApplyError::Invalid {
        reference: reference.clone(),
        message: message.to_owned(),
    }
}

fn phase(phase: &str) -> NamespaceStatus {
    NamespaceStatus {
        phase: Some(phase.to_owned()),
        ..NamespaceStatus::default()
    }
}

fn check_version(
    reference: &ObjectRef,
    given: &ObjectMeta,
    stored: &ObjectMeta,
) -> Result<(), ApplyError> {
    match (&given.resource_version, &stored.resource_version) {
        (Some(given), Some(current)) if given != current => Err(ApplyError::Conflict {
            reference: reference.clone(),
            given: given.clone(),
            current: current.clone(),
        }),
        _ => Ok(()),
    }
}

/// Gives `object` the status of `source`, an object of the same kind (none when `source` is
/// `None` or has none), and leaves it as the API server stores it ([`stored_form`]).
///
/// Typed: this used to go through JSON (the object and the status serialized, the status put in,
/// the result read back), which was most of the time `cvo dt reconcile` spent applying writes
/// (BENCHMARKS.md). The tests check it against that round trip.
fn with_status_of(object: &mut Object, source: Option<&Object>) {
    macro_rules! status {
        ($variant:ident, $o:expr) => {{
            let status = match source {
                Some(Object::$variant(s)) => s.status.as_ref(),
                _ => None,
            };
            // Most writes carry the status they read: no copy then.
            if $o.status.as_ref() != status {
                $o.status = status.cloned();
            }
        }};
    }
    match object {
        Object::Class(o) => status!(Class, o),
        Object::Target(o) => status!(Target, o),
        Object::Claim(o) => status!(Claim, o),
        Object::Environment(o) => status!(Environment, o),
        Object::ManagedEnvironment(o) => status!(ManagedEnvironment, o),
        Object::SpaceRequest(o) => status!(SpaceRequest, o),
        Object::Namespace(o) => status!(Namespace, o),
        Object::ResourceQuota(o) => status!(ResourceQuota, o),
        // No status.
        Object::ServiceAccount(_)
        | Object::RoleBinding(_)
        | Object::LimitRange(_)
        | Object::Secret(_) => {}
    }
    stored_form(object);
}

/// `object` as it reads back from its JSON form, which is how the API server stores it: times
/// in whole seconds (`Time` serializes so), and a target phase written as the name of a known
/// one (or as `""`) read as that phase. Every other field reads back as it was written.
fn stored_form(object: &mut Object) {
    let meta = object.meta_mut();
    for time in [&mut meta.creation_timestamp, &mut meta.deletion_timestamp] {
        time.iter_mut().for_each(whole_seconds);
    }
    for entry in meta.managed_fields.iter_mut().flatten() {
        entry.time.iter_mut().for_each(whole_seconds);
    }
    let conditions = match object {
        Object::Class(o) => o.status.as_mut().map(|s| &mut s.conditions),
        Object::Target(o) => o.status.as_mut().map(|s| {
            if let Some(TargetPhase::Other(phase)) = &s.phase {
                s.phase = TargetPhase::parse(phase);
            }
            &mut s.conditions
        }),
        Object::Claim(o) => o.status.as_mut().map(|s| &mut s.conditions),
        Object::Environment(o) => o.status.as_mut().map(|s| &mut s.conditions),
        Object::ManagedEnvironment(o) => o.status.as_mut().map(|s| &mut s.conditions),
        Object::Namespace(o) => {
            let conditions = o.status.as_mut().and_then(|s| s.conditions.as_mut());
            for c in conditions.into_iter().flatten() {
                c.last_transition_time.iter_mut().for_each(whole_seconds);
            }
            None
        }
        _ => None,
    };
    for c in conditions.into_iter().flatten() {
        whole_seconds(&mut c.last_transition_time);
    }
}

/// A time as its JSON form reads back: whole seconds.
fn whole_seconds(time: &mut Time) {
    if time.0.subsec_nanosecond() != 0 {
        // Through the JSON form itself (rare), so that what `Time` writes decides (before 1970
        // too); a time it cannot write stays as it is.
        let read = (serde_json::to_value(&*time).ok()).and_then(|v| serde_json::from_value(v).ok());
        if let Some(read) = read {
            *time = read;
        }
    }
}

/// What an `Update` of `stored` to `new` leaves: `new`'s metadata and spec, `stored`'s status
/// and the metadata only the server sets. No finalizer may be added to an object being deleted.
fn updated_metadata_and_spec(stored: &Object, new: Object) -> Result<Object, ApplyError> {
    let mut updated = new;
    with_status_of(&mut updated, Some(stored));
    let kept = stored.meta();
    if is_deleting(kept) {
        let old = kept.finalizers.clone().unwrap_or_default();
        let added = (updated.meta().finalizers.iter().flatten()).any(|f| !old.contains(f));
        if added {
            return Err(ApplyError::Forbidden {
                reference: stored.reference(),
                message: "no new finalizers can be added if the object is being deleted".into(),
            });
        }
    }
    let meta = updated.meta_mut();
    meta.uid = kept.uid.clone();
    meta.creation_timestamp = kept.creation_timestamp.clone();
    meta.deletion_timestamp = kept.deletion_timestamp.clone();
    meta.deletion_grace_period_seconds = kept.deletion_grace_period_seconds;
    meta.generation = kept.generation;
    meta.resource_version = kept.resource_version.clone();
    Ok(updated)
}

/// Whether two objects are the same but for their status (objects of kinds without one: the
/// same).
fn equal_but_status(a: &Object, b: &Object) -> bool {
    match (a, b) {
        (Object::Class(a), Object::Class(b)) => a.metadata == b.metadata && a.spec == b.spec,
        (Object::Target(a), Object::Target(b)) => a.metadata == b.metadata && a.spec == b.spec,
        (Object::Claim(a), Object::Claim(b)) => a.metadata == b.metadata && a.spec == b.spec,
        (Object::Environment(a), Object::Environment(b)) => {
            a.metadata == b.metadata && a.spec == b.spec
        }
        (Object::ManagedEnvironment(a), Object::ManagedEnvironment(b)) => {
            a.metadata == b.metadata && a.spec == b.spec
        }
        (Object::SpaceRequest(a), Object::SpaceRequest(b)) => {
            a.metadata == b.metadata && a.spec == b.spec
        }
        (Object::Namespace(a), Object::Namespace(b)) => {
            a.metadata == b.metadata && a.spec == b.spec
        }
        (Object::ResourceQuota(a), Object::ResourceQuota(b)) => {
            a.metadata == b.metadata && a.spec == b.spec
        }
        (Object::ServiceAccount(_), Object::ServiceAccount(_))
        | (Object::RoleBinding(_), Object::RoleBinding(_))
        | (Object::LimitRange(_), Object::LimitRange(_))
        | (Object::Secret(_), Object::Secret(_)) => a == b,
        _ => false,
    }
}

/// Whether everything but metadata and status (what a change to bumps `generation`) differs
/// between two custom resources of the same kind: their `spec`s.
fn spec_differs(a: &Object, b: &Object) -> bool {
    match (a, b) {
        (Object::Class(a), Object::Class(b)) => a.spec != b.spec,
        (Object::Target(a), Object::Target(b)) => a.spec != b.spec,
        (Object::Claim(a), Object::Claim(b)) => a.spec != b.spec,
        (Object::Environment(a), Object::Environment(b)) => a.spec != b.spec,
        (Object::ManagedEnvironment(a), Object::ManagedEnvironment(b)) => a.spec != b.spec,
        (Object::SpaceRequest(a), Object::SpaceRequest(b)) => a.spec != b.spec,
        _ => a.kind() != b.kind(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::keys::{
        ANN_TOKEN_EXPIRES_AT, ANN_TOKEN_ISSUED_AT, FINALIZER_DT,
    };
    use crate::components::deployment_targets::model::KubeconfigTemplate;
    use crate::components::deployment_targets::testing::{
        MetaBuilder, at, claim, ctx, namespace, now, target, world,
    };
    use crate::components::deployment_targets::types::{
        SpaceRequest, SpaceRequestSpec, TargetPhase,
    };
    use k8s_openapi::api::core::v1::{Secret, ServiceAccount};

    /// What `with_status_of` did before it was typed: the object through JSON, with the status
    /// of `source` put in (or taken out).
    fn with_status_through_json(object: &Object, source: Option<&Object>) -> Object {
        let mut value = object.to_value();
        let status = source.and_then(|s| s.to_value().get("status").cloned());
        let map = value.as_object_mut().unwrap();
        match status {
            Some(status) => map.insert("status".into(), status),
            None => map.remove("status"),
        };
        Object::from_value(object.kind(), value).unwrap()
    }

    /// What a change to bumps `generation`, as compared before `spec_differs`: everything but
    /// metadata and status, as JSON.
    fn spec_through_json(object: &Object) -> serde_json::Value {
        let mut value = object.to_value();
        let map = value.as_object_mut().unwrap();
        map.remove("metadata");
        map.remove("status");
        value
    }

    /// Every object of the fixtures under testdata/dt, as read and as reconciling them leaves
    /// them, with variants the JSON round trip changes: times with fractions of a second (after
    /// 1970 and before), a target phase written as a known one's name, and `""`.
    fn corpus() -> Vec<Object> {
        let fixtures = [
            include_str!("../../../testdata/dt/bind-by-class.yaml"),
            include_str!("../../../testdata/dt/conflicts.yaml"),
            include_str!("../../../testdata/dt/devsandbox.yaml"),
            include_str!("../../../testdata/dt/environment.yaml"),
            include_str!("../../../testdata/dt/lost.yaml"),
            include_str!("../../../testdata/dt/namespace-provisioner.yaml"),
            include_str!("../../../testdata/dt/no-credentials.yaml"),
            include_str!("../../../testdata/dt/target-name.yaml"),
            include_str!("../../../testdata/dt/tenants.yaml"),
        ];
        let mut objects = Vec::new();
        for text in fixtures {
            let read = crate::components::deployment_targets::load::load(text)
                .unwrap()
                .world;
            objects.extend(read.objects().cloned());
            let report = crate::components::deployment_targets::offline::run(read, &ctx(), 20);
            objects.extend(report.world.objects().cloned());
        }
        let odd_times = [
            "2024-05-01T12:00:00.250Z",
            "1969-12-31T23:59:58.5Z",
            "2024-05-01T12:00:00.999999999Z",
        ];
        let mut variants = Vec::new();
        for (i, object) in objects.iter().enumerate() {
            let time = Time(odd_times[i % odd_times.len()].parse().unwrap());
            let mut odd = object.clone();
            let meta = odd.meta_mut();
            meta.creation_timestamp = Some(time.clone());
            meta.deletion_timestamp = meta.deletion_timestamp.as_ref().map(|_| time.clone());
            meta.managed_fields = Some(vec![Default::default()]);
            meta.managed_fields.as_mut().unwrap()[0].time = Some(time.clone());
            match &mut odd {
                Object::Target(t) => {
                    let status = t.status.get_or_insert_default();
                    status.phase = Some(TargetPhase::Other(["Bound", ""][i % 2].into()));
                    (status.conditions.iter_mut())
                        .for_each(|c| c.last_transition_time = time.clone());
                }
                Object::Claim(c) => {
                    let status = c.status.get_or_insert_default();
                    (status.conditions.iter_mut())
                        .for_each(|c| c.last_transition_time = time.clone());
                }
                Object::Environment(e) => {
                    let status = e.status.get_or_insert_default();
                    (status.conditions.iter_mut())
                        .for_each(|c| c.last_transition_time = time.clone());
                }
                Object::Namespace(n) => {
                    let status = n.status.get_or_insert_default();
                    status.conditions =
                        Some(vec![k8s_openapi::api::core::v1::NamespaceCondition {
                            last_transition_time: Some(time.clone()),
                            status: "True".into(),
                            type_: "NamespaceDeletionContentFailure".into(),
                            ..Default::default()
                        }]);
                }
                _ => {}
            }
            variants.push(odd);
        }
        objects.extend(variants);
        objects
    }

    #[test]
    fn typed_writes_leave_what_the_json_round_trip_left() {
        let objects = corpus();
        for kind in Kind::ALL {
            let of_kind: Vec<&Object> = objects.iter().filter(|o| o.kind() == kind).collect();
            assert!(!of_kind.is_empty() || kind == Kind::LimitRange, "{kind}");
            for a in &of_kind {
                let mut typed = (*a).clone();
                with_status_of(&mut typed, None);
                assert_eq!(typed, with_status_through_json(a, None), "{kind}");
                for b in &of_kind {
                    let mut typed = (*a).clone();
                    with_status_of(&mut typed, Some(b));
                    let json = with_status_through_json(a, Some(b));
                    assert_eq!(
                        typed,
                        json,
                        "{} with the status of {}",
                        a.reference(),
                        b.reference()
                    );
                    if kind.is_custom() {
                        assert_eq!(
                            spec_differs(&json, b),
                            spec_through_json(&json) != spec_through_json(b),
                            "{} against {}",
                            a.reference(),
                            b.reference()
                        );
                    }
                }
            }
        }
    }

    /// A status write that carries the stored object but for the status is stored as the copy
    /// of the stored object with that status would be (times of the metadata in fractions of a
    /// second included); one that changes more is not taken for one.
    #[test]
    fn a_status_write_of_the_object_as_read_stores_what_a_copy_would() {
        let objects = corpus();
        for a in &objects {
            for b in objects.iter().filter(|b| b.kind() == a.kind()) {
                let mut write = a.clone();
                with_status_of(&mut write, Some(b));
                *write.meta_mut() = a.meta().clone();
                assert!(equal_but_status(&write, a), "{}", a.reference());
                let mut copy = a.clone();
                with_status_of(&mut copy, Some(&write));
                let mut taken = write.clone();
                stored_form(&mut taken);
                assert_eq!(
                    taken,
                    copy,
                    "{} with the status of {}",
                    a.reference(),
                    b.reference()
                );
                write.meta_mut().labels = Some([("other".into(), "label".into())].into());
                assert!(!equal_but_status(&write, a), "{}", a.reference());
            }
        }
    }

    fn dt_ref(name: &str) -> ObjectRef {
        ObjectRef::new(Kind::DeploymentTarget, "ns", name)
    }

    #[test]
    fn create_stamps_server_fields_and_drops_a_custom_resource_status() {
        let mut w = world([target("old", "cls").object()]);
        let mut new = target("dt", "cls").phase(TargetPhase::Bound).build();
        new.metadata.resource_version = None;
        w.apply(&Write::Create(Object::Target(new.clone())), &ctx())
            .unwrap();
        let created = w.target("ns", "dt").unwrap();
        let meta = &created.metadata;
        assert_eq!(meta.resource_version.as_deref(), Some("2"));
        assert_eq!(
            meta.uid.as_deref(),
            Some("00000000-0000-4000-8000-000000000002")
        );
        assert_eq!(meta.creation_timestamp, Some(Time(now())));
        assert_eq!(meta.generation, Some(1));
        assert_eq!(created.phase(), None, "status is a subresource");
        let again = w.apply(&Write::Create(Object::Target(new)), &ctx());
        assert_eq!(again, Err(ApplyError::AlreadyExists(dt_ref("dt"))));
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some("sa".into()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        let refused = w.apply(&Write::Create(Object::ServiceAccount(account)), &ctx());
        assert!(
            matches!(refused, Err(ApplyError::Invalid { message, .. }) if message == "metadata.namespace is required")
        );
    }

    #[test]
    fn generate_name_gives_repeatable_distinct_names() {
        let request = |w: &mut World| {
            let mut sr = SpaceRequest::new(
                "",
                SpaceRequestSpec {
                    tier_name: "t".into(),
                    target_cluster_roles: vec![],
                },
            );
            sr.metadata = ObjectMeta {
                generate_name: Some("c-".into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            };
            w.apply(&Write::Create(Object::SpaceRequest(sr)), &ctx())
                .unwrap();
        };
        let names = |w: &World| {
            w.space_requests("ns")
                .map(|r| r.metadata.name.clone().unwrap())
                .collect::<Vec<_>>()
        };
        let (mut first, mut second) = (World::new(), World::new());
        for w in [&mut first, &mut second] {
            request(w);
            request(w);
        }
        assert_eq!(names(&first), names(&second));
        let got = names(&first);
        assert_eq!(got.len(), 2);
        for n in &got {
            assert!(n.starts_with("c-") && n.len() == 7, "{n}");
            assert!(
                n[2..]
                    .bytes()
                    .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)),
                "{n}"
            );
        }
    }

    #[test]
    fn update_checks_the_version_keeps_the_status_and_bumps_generation_on_spec_changes() {
        let mut w = world([target("dt", "cls").phase(TargetPhase::Available).object()]);
        w.apply(
            &Write::Create(Object::Target(target("other", "cls").build())),
            &ctx(),
        )
        .unwrap();
        let read = w.target("ns", "dt").unwrap().clone();
        assert_eq!(read.metadata.generation, None);

        let mut relabelled = read.clone();
        crate::components::deployment_targets::meta::set_label(
            &mut relabelled.metadata,
            "team",
            "a",
        );
        relabelled.set_phase(TargetPhase::Failed);
        w.apply(&Write::Update(Object::Target(relabelled.clone())), &ctx())
            .unwrap();
        let after = w.target("ns", "dt").unwrap();
        assert_eq!(
            after.phase(),
            Some(TargetPhase::Available),
            "an update leaves the status"
        );
        assert_eq!(
            after.metadata.generation, None,
            "metadata alone is no spec change"
        );
        assert_eq!(after.metadata.resource_version.as_deref(), Some("3"));

        let stale = w.apply(&Write::Update(Object::Target(relabelled)), &ctx());
        assert_eq!(
            stale,
            Err(ApplyError::Conflict {
                reference: dt_ref("dt"),
                given: "1".into(),
                current: "3".into()
            })
        );

        let mut respec = w.target("ns", "dt").unwrap().clone();
        respec.spec.claim_ref = "c".into();
        w.apply(&Write::Update(Object::Target(respec.clone())), &ctx())
            .unwrap();
        assert_eq!(w.target("ns", "dt").unwrap().metadata.generation, Some(1));
        let unchanged = w.revision();
        respec.metadata.resource_version = None;
        w.apply(&Write::Update(Object::Target(respec)), &ctx())
            .unwrap();
        assert_eq!(
            w.revision(),
            unchanged,
            "a write that changes nothing is no write"
        );

        let missing = w.apply(
            &Write::Update(Object::Target(target("gone", "cls").build())),
            &ctx(),
        );
        assert_eq!(missing, Err(ApplyError::NotFound(dt_ref("gone"))));
    }

    #[test]
    fn update_status_writes_only_the_status() {
        let mut w = world([target("dt", "cls").object()]);
        let mut written = target("dt", "cls")
            .claim_ref("sneaky")
            .label("a", "b")
            .build();
        written.set_phase(TargetPhase::Bound);
        w.apply(&Write::UpdateStatus(Object::Target(written)), &ctx())
            .unwrap();
        let after = w.target("ns", "dt").unwrap();
        assert_eq!(after.phase(), Some(TargetPhase::Bound));
        assert_eq!(after.spec.claim_ref, "");
        assert_eq!(after.metadata.labels, None);
        assert_eq!(after.metadata.generation, None);
    }

    #[test]
    fn delete_marks_objects_with_finalizers_and_the_last_finalizer_removes_them() {
        let mut held = target("held", "cls").finalizer(FINALIZER_DT).build();
        held.metadata.generation = Some(1);
        let mut w = world([Object::Target(held), target("free", "cls").object()]);
        w.apply(&Write::Delete(dt_ref("free")), &ctx()).unwrap();
        assert!(w.target("ns", "free").is_none());
        w.apply(&Write::Delete(dt_ref("held")), &ctx()).unwrap();
        let marked = w.target("ns", "held").unwrap().clone();
        assert_eq!(marked.metadata.deletion_timestamp, Some(Time(now())));
        assert_eq!(marked.metadata.generation, Some(2));
        let later = Context::at(at(60));
        w.apply(&Write::Delete(dt_ref("held")), &later).unwrap();
        assert_eq!(
            w.target("ns", "held").unwrap().metadata.deletion_timestamp,
            Some(Time(now())),
            "deleting again changes nothing"
        );

        let mut more = marked.clone();
        more.metadata.finalizers = Some(vec![FINALIZER_DT.into(), "x/y".into()]);
        let refused = w.apply(&Write::Update(Object::Target(more)), &ctx());
        assert!(
            matches!(refused, Err(ApplyError::Forbidden { message, .. }) if message == "no new finalizers can be added if the object is being deleted")
        );

        let mut released = w.target("ns", "held").unwrap().clone();
        released.metadata.finalizers = None;
        w.apply(&Write::Update(Object::Target(released)), &ctx())
            .unwrap();
        assert!(w.target("ns", "held").is_none());
        assert_eq!(
            w.apply(&Write::Delete(dt_ref("held")), &ctx()),
            Err(ApplyError::NotFound(dt_ref("held")))
        );
    }

    #[test]
    fn deleting_a_namespace_deletes_its_content_and_it_goes_when_empty() {
        let inside = |name: &str| claim(name, "cls").in_namespace("made").object();
        let mut w = world([
            Object::Namespace(namespace("made", &[])),
            inside("free"),
            Object::Claim(
                claim("held", "cls")
                    .in_namespace("made")
                    .finalizer("x/y")
                    .build(),
            ),
            claim("outside", "cls").object(),
        ]);
        w.apply(
            &Write::Delete(ObjectRef::new(Kind::Namespace, "", "made")),
            &ctx(),
        )
        .unwrap();
        let ns = w
            .namespace("made")
            .expect("held by an object with a finalizer");
        assert_eq!(
            ns.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Terminating")
        );
        assert!(w.claim("made", "free").is_none());
        assert!(
            w.claim("made", "held")
                .unwrap()
                .metadata
                .deletion_timestamp
                .is_some()
        );
        assert!(w.claim("ns", "outside").is_some());
        let refused = w.apply(&Write::Create(inside("new")), &ctx());
        assert!(
            matches!(refused, Err(ApplyError::Forbidden { .. })),
            "{refused:?}"
        );

        let mut held = w.claim("made", "held").unwrap().clone();
        held.metadata.finalizers = None;
        w.apply(&Write::Update(Object::Claim(held)), &ctx())
            .unwrap();
        assert!(
            w.namespace("made").is_none(),
            "the last object out takes the namespace"
        );
    }

    #[test]
    fn a_kubeconfig_secret_gets_a_marked_placeholder_token() {
        let mut w = World::new();
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some("kc".into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        };
        let token = KubeconfigToken {
            service_account: ObjectRef::new(Kind::ServiceAccount, "made", "sa"),
            kubeconfig: KubeconfigTemplate {
                server: "https://api.example:6443".into(),
                certificate_authority_data: None,
                insecure_skip_tls_verify: false,
                namespace: "made".into(),
                user: "sa".into(),
            },
            expiration_seconds: 3600,
        };
        let write = Write::CreateKubeconfigSecret {
            secret,
            token: token.clone(),
        };
        w.apply(&write, &ctx()).unwrap();
        let stored = w.secret("ns", "kc").unwrap().clone();
        let data = &stored.data.as_ref().unwrap()["kubeconfig"].0;
        let text = String::from_utf8(data.clone()).unwrap();
        let config = crate::yaml::parse_value(&text).unwrap();
        assert_eq!(config["users"][0]["user"]["token"], PLACEHOLDER_TOKEN);
        assert_eq!(
            config["clusters"][0]["cluster"]["server"],
            "https://api.example:6443"
        );
        assert_eq!(config["contexts"][0]["context"]["namespace"], "made");
        let annotations = stored.metadata.annotations.clone().unwrap();
        assert_eq!(annotations[ANN_TOKEN_ISSUED_AT], "2024-05-01T12:00:00Z");
        assert_eq!(annotations[ANN_TOKEN_EXPIRES_AT], "2024-05-01T13:00:00Z");

        // A renewal replaces the Secret (as read), with the token issued at the new now.
        let later = Context::at("2024-05-01T12:50:00Z".parse().unwrap());
        let renew = Write::RenewKubeconfigSecret {
            secret: stored,
            token,
        };
        w.apply(&renew, &later).unwrap();
        let renewed = w.secret("ns", "kc").unwrap().metadata.annotations.clone();
        assert_eq!(
            renewed.unwrap()[ANN_TOKEN_EXPIRES_AT],
            "2024-05-01T13:50:00Z"
        );
    }
}
