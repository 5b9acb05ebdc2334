//! The plain data every reconcile function works on: a [`World`] of objects (what a reconcile
//! may read), and an [`Outcome`] (the writes it asks for, in order, the Events it reports, and
//! when to look again). The controller builds a `World` from its watch caches and executes the
//! writes against the API server; `cvo dt reconcile` keeps a `World` in memory and applies them
//! itself. Neither kind of caller is visible from here.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{LimitRange, Namespace, ResourceQuota, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

use super::tracking::{self, Hashing, Reads, Tracking};
use super::types::{
    DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, Environment,
    GitOpsDeploymentManagedEnvironment, SpaceRequest,
};

/// The kinds of object the component reads or writes, in the order `cvo dt reconcile` prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    DeploymentTargetClass,
    DeploymentTarget,
    DeploymentTargetClaim,
    Environment,
    GitOpsDeploymentManagedEnvironment,
    SpaceRequest,
    Namespace,
    ServiceAccount,
    RoleBinding,
    ResourceQuota,
    LimitRange,
    Secret,
}

impl Kind {
    /// The `kind` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::DeploymentTargetClass => "DeploymentTargetClass",
            Kind::DeploymentTarget => "DeploymentTarget",
            Kind::DeploymentTargetClaim => "DeploymentTargetClaim",
            Kind::Environment => "Environment",
            Kind::GitOpsDeploymentManagedEnvironment => "GitOpsDeploymentManagedEnvironment",
            Kind::SpaceRequest => "SpaceRequest",
            Kind::Namespace => "Namespace",
            Kind::ServiceAccount => "ServiceAccount",
            Kind::RoleBinding => "RoleBinding",
            Kind::ResourceQuota => "ResourceQuota",
            Kind::LimitRange => "LimitRange",
            Kind::Secret => "Secret",
        }
    }

    /// Whether objects of this kind live in a namespace.
    pub fn is_namespaced(self) -> bool {
        !matches!(self, Kind::DeploymentTargetClass | Kind::Namespace)
    }

    /// Every kind, in [`Kind`] order.
    pub const ALL: [Kind; 12] = [
        Kind::DeploymentTargetClass,
        Kind::DeploymentTarget,
        Kind::DeploymentTargetClaim,
        Kind::Environment,
        Kind::GitOpsDeploymentManagedEnvironment,
        Kind::SpaceRequest,
        Kind::Namespace,
        Kind::ServiceAccount,
        Kind::RoleBinding,
        Kind::ResourceQuota,
        Kind::LimitRange,
        Kind::Secret,
    ];

    /// The `apiVersion` field.
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::DeploymentTargetClass
            | Kind::DeploymentTarget
            | Kind::DeploymentTargetClaim
            | Kind::Environment => "appstudio.redhat.com/v1alpha1",
            Kind::GitOpsDeploymentManagedEnvironment => "managed-gitops.redhat.com/v1alpha1",
            Kind::SpaceRequest => "toolchain.dev.openshift.com/v1alpha1",
            Kind::Namespace
            | Kind::ServiceAccount
            | Kind::ResourceQuota
            | Kind::LimitRange
            | Kind::Secret => "v1",
            Kind::RoleBinding => "rbac.authorization.k8s.io/v1",
        }
    }

    /// The kind with this `apiVersion` and `kind`.
    pub fn from_type(api_version: &str, kind: &str) -> Option<Kind> {
        (Kind::ALL.into_iter()).find(|k| k.as_str() == kind && k.api_version() == api_version)
    }

    /// Whether this is a custom resource: the API server keeps `metadata.generation` for it
    /// and its status is a subresource.
    pub fn is_custom(self) -> bool {
        !matches!(
            self,
            Kind::Namespace
                | Kind::ServiceAccount
                | Kind::RoleBinding
                | Kind::ResourceQuota
                | Kind::LimitRange
                | Kind::Secret
        )
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which object: kind, namespace (`""` for cluster-scoped kinds) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

impl ObjectRef {
    pub fn new(kind: Kind, namespace: &str, name: &str) -> Self {
        ObjectRef {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The reference of an object of `kind` with this metadata ([`Object::reference`] without
    /// the object, so without copying it).
    pub fn of(kind: Kind, meta: &ObjectMeta) -> Self {
        let namespace = match kind.is_namespaced() {
            true => meta.namespace.clone().unwrap_or_default(),
            false => String::new(),
        };
        ObjectRef {
            kind,
            namespace,
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

/// An object's key borrowed: what [`World`] looks objects up by without allocating an
/// [`ObjectRef`] (two `String`s) for each look-up, as reconciles do many times an object.
trait Key {
    fn key(&self) -> (Kind, &str, &str);
}

impl Key for ObjectRef {
    fn key(&self) -> (Kind, &str, &str) {
        (self.kind, &self.namespace, &self.name)
    }
}

impl Key for (Kind, &str, &str) {
    fn key(&self) -> (Kind, &str, &str) {
        *self
    }
}

impl<'a> std::borrow::Borrow<dyn Key + 'a> for ObjectRef {
    fn borrow(&self) -> &(dyn Key + 'a) {
        self
    }
}

// Ordered as `ObjectRef` derives it (kind, namespace, name), as `Borrow` requires.
impl PartialEq for dyn Key + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for dyn Key + '_ {}

impl PartialOrd for dyn Key + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn Key + '_ {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

// Hashed as `ObjectRef` derives it (its fields in order), as `Borrow` requires.
impl std::hash::Hash for dyn Key + '_ {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// One object of a kind the component handles.
#[derive(Clone, Debug, PartialEq)]
pub enum Object {
    Class(DeploymentTargetClass),
    Target(DeploymentTarget),
    Claim(DeploymentTargetClaim),
    Environment(Environment),
    ManagedEnvironment(GitOpsDeploymentManagedEnvironment),
    SpaceRequest(SpaceRequest),
    Namespace(Namespace),
    ServiceAccount(ServiceAccount),
    RoleBinding(RoleBinding),
    ResourceQuota(ResourceQuota),
    LimitRange(LimitRange),
    Secret(Secret),
}

impl Object {
    pub fn kind(&self) -> Kind {
        match self {
            Object::Class(_) => Kind::DeploymentTargetClass,
            Object::Target(_) => Kind::DeploymentTarget,
            Object::Claim(_) => Kind::DeploymentTargetClaim,
            Object::Environment(_) => Kind::Environment,
            Object::ManagedEnvironment(_) => Kind::GitOpsDeploymentManagedEnvironment,
            Object::SpaceRequest(_) => Kind::SpaceRequest,
            Object::Namespace(_) => Kind::Namespace,
            Object::ServiceAccount(_) => Kind::ServiceAccount,
            Object::RoleBinding(_) => Kind::RoleBinding,
            Object::ResourceQuota(_) => Kind::ResourceQuota,
            Object::LimitRange(_) => Kind::LimitRange,
            Object::Secret(_) => Kind::Secret,
        }
    }

    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Object::Class(o) => o.meta(),
            Object::Target(o) => o.meta(),
            Object::Claim(o) => o.meta(),
            Object::Environment(o) => o.meta(),
            Object::ManagedEnvironment(o) => o.meta(),
            Object::SpaceRequest(o) => o.meta(),
            Object::Namespace(o) => o.meta(),
            Object::ServiceAccount(o) => o.meta(),
            Object::RoleBinding(o) => o.meta(),
            Object::ResourceQuota(o) => o.meta(),
            Object::LimitRange(o) => o.meta(),
            Object::Secret(o) => o.meta(),
        }
    }

    pub fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Object::Class(o) => o.meta_mut(),
            Object::Target(o) => o.meta_mut(),
            Object::Claim(o) => o.meta_mut(),
            Object::Environment(o) => o.meta_mut(),
            Object::ManagedEnvironment(o) => o.meta_mut(),
            Object::SpaceRequest(o) => o.meta_mut(),
            Object::Namespace(o) => o.meta_mut(),
            Object::ServiceAccount(o) => o.meta_mut(),
            Object::RoleBinding(o) => o.meta_mut(),
            Object::ResourceQuota(o) => o.meta_mut(),
            Object::LimitRange(o) => o.meta_mut(),
            Object::Secret(o) => o.meta_mut(),
        }
    }

    /// The object as JSON, with `apiVersion` and `kind`.
    pub fn to_value(&self) -> serde_json::Value {
        let value = match self {
            Object::Class(o) => serde_json::to_value(o),
            Object::Target(o) => serde_json::to_value(o),
            Object::Claim(o) => serde_json::to_value(o),
            Object::Environment(o) => serde_json::to_value(o),
            Object::ManagedEnvironment(o) => serde_json::to_value(o),
            Object::SpaceRequest(o) => serde_json::to_value(o),
            Object::Namespace(o) => serde_json::to_value(o),
            Object::ServiceAccount(o) => serde_json::to_value(o),
            Object::RoleBinding(o) => serde_json::to_value(o),
            Object::ResourceQuota(o) => serde_json::to_value(o),
            Object::LimitRange(o) => serde_json::to_value(o),
            Object::Secret(o) => serde_json::to_value(o),
        };
        // Serializing these types cannot fail: their maps have string keys.
        value.unwrap_or_default()
    }

    /// An object of `kind` read from JSON (whose `apiVersion` and `kind`, when present, must
    /// be that kind's); an error names the field it is in (`spec.claimRef: invalid type...`).
    pub fn from_value(kind: Kind, value: serde_json::Value) -> Result<Object, String> {
        use super::fields::from_value as read;
        Ok(match kind {
            Kind::DeploymentTargetClass => Object::Class(read(value)?),
            Kind::DeploymentTarget => Object::Target(read(value)?),
            Kind::DeploymentTargetClaim => Object::Claim(read(value)?),
            Kind::Environment => Object::Environment(read(value)?),
            Kind::GitOpsDeploymentManagedEnvironment => Object::ManagedEnvironment(read(value)?),
            Kind::SpaceRequest => Object::SpaceRequest(read(value)?),
            Kind::Namespace => Object::Namespace(read(value)?),
            Kind::ServiceAccount => Object::ServiceAccount(read(value)?),
            Kind::RoleBinding => Object::RoleBinding(read(value)?),
            Kind::ResourceQuota => Object::ResourceQuota(read(value)?),
            Kind::LimitRange => Object::LimitRange(read(value)?),
            Kind::Secret => Object::Secret(read(value)?),
        })
    }

    pub fn reference(&self) -> ObjectRef {
        ObjectRef::of(self.kind(), self.meta())
    }
}

/// The objects a reconcile may read, keyed and ordered by kind, namespace and name (so a
/// listing comes in the API server's order: by name).
///
/// Objects are shared (`Arc`): the controller builds a World per reconcile from its index of
/// watched objects without copying them; a change ([`World::modify`]) copies on write.
///
/// Every read of the objects goes through a method that notes it ([`World::find`],
/// [`World::in_namespace`], [`World::of_kind`], [`World::objects`]) and every change through
/// one that notes it ([`World::insert_shared`], [`World::remove`], [`World::modify`]): the
/// offline simulator skips reconciles on the strength of those notes ([`super::tracking`]).
#[derive(Clone, Default)]
pub struct World {
    objects: BTreeMap<ObjectRef, Arc<Object>>,
    /// The same objects by key, for look-ups: a `BTreeMap` look-up compares the key with a
    /// dozen others that share long prefixes (`team-042`, `dt-00042`); with 100,000 objects
    /// that was a tenth of `cvo dt reconcile`'s loop.
    by_key: HashMap<ObjectRef, Arc<Object>, Hashing>,
    /// The highest `resourceVersion` seen or given out (the API server's etcd revision), for
    /// [`World::apply`](super::apiserver).
    revision: u64,
    /// What reconciles read and when objects changed, while the offline simulator tracks them
    /// ([`World::track`]); bookkeeping, not part of what the world holds.
    tracking: Option<Box<Tracking>>,
}

impl PartialEq for World {
    fn eq(&self, other: &Self) -> bool {
        self.objects == other.objects && self.revision == other.revision
    }
}

// What the world holds (the look-up map and the bookkeeping repeat it or are not part of it).
impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("objects", &self.objects)
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

macro_rules! typed_access {
    ($get:ident, $list:ident, $variant:ident, $kind:ident, $ty:ty) => {
        /// The object of this kind with this namespace and name.
        pub fn $get(&self, namespace: &str, name: &str) -> Option<&$ty> {
            match self.find(Kind::$kind, namespace, name) {
                Some(Object::$variant(o)) => Some(o),
                _ => None,
            }
        }

        /// The objects of this kind in a namespace, by name.
        pub fn $list<'a>(&'a self, namespace: &str) -> impl Iterator<Item = &'a $ty> + 'a {
            self.in_namespace(Kind::$kind, namespace)
                .filter_map(|o| match o {
                    Object::$variant(o) => Some(o),
                    _ => None,
                })
        }
    };
}

impl World {
    pub fn new() -> Self {
        World::default()
    }

    /// Adds or replaces an object.
    pub fn insert(&mut self, object: Object) {
        self.insert_shared(Arc::new(object));
    }

    /// Adds or replaces an object shared with others (a watch index).
    pub fn insert_shared(&mut self, object: Arc<Object>) {
        let version = object.meta().resource_version.as_deref();
        if let Some(version) = version.and_then(|v| v.parse::<u64>().ok()) {
            self.revision = self.revision.max(version);
        }
        let reference = object.reference();
        self.note_change(&reference);
        // Replacing an object keeps both maps' keys (no copy of the reference, no rebalancing).
        if let Some(stored) = self.by_key.get_mut(&reference) {
            *stored = Arc::clone(&object);
            if let Some(stored) = self.objects.get_mut(&reference) {
                *stored = object;
            }
            return;
        }
        if let Some(t) = &mut self.tracking {
            t.created(reference.clone());
        }
        self.by_key.insert(reference.clone(), Arc::clone(&object));
        self.objects.insert(reference, object);
    }

    /// A world with room for `objects` objects in its look-up map (which otherwise grows,
    /// rehashing, while a stream is read).
    pub fn with_capacity(objects: usize) -> Self {
        World {
            by_key: HashMap::with_capacity_and_hasher(objects, Hashing::default()),
            ..World::default()
        }
    }

    /// Whether the world holds this object. Not a read a reconcile may make (it is not noted):
    /// for the offline simulator's own bookkeeping.
    pub(super) fn contains(&self, reference: &ObjectRef) -> bool {
        self.by_key.contains_key(reference)
    }

    /// The objects created while tracking since the last call (a reference may repeat, or
    /// name an object gone since).
    pub(super) fn take_created(&mut self) -> Vec<ObjectRef> {
        (self.tracking.as_mut()).map_or_else(Vec::new, |t| t.take_created())
    }

    /// Whether an object was removed while tracking since the last call (always, when not
    /// tracking).
    pub(super) fn take_removed(&mut self) -> bool {
        (self.tracking.as_mut()).is_none_or(|t| t.take_removed())
    }

    /// A World of these shared objects, given in key order (as an index's ranges give them).
    pub fn from_sorted(objects: impl IntoIterator<Item = (ObjectRef, Arc<Object>)>) -> Self {
        let objects: BTreeMap<ObjectRef, Arc<Object>> = objects.into_iter().collect();
        let revision = (objects.values())
            .filter_map(|o| o.meta().resource_version.as_deref()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        let by_key = (objects.iter())
            .map(|(r, o)| (r.clone(), Arc::clone(o)))
            .collect();
        World {
            objects,
            by_key,
            revision,
            tracking: None,
        }
    }

    /// The highest `resourceVersion` seen or given out: it moves on every change
    /// [`World::apply`](super::apiserver) makes.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// A `resourceVersion` newer than every one in the world.
    pub(super) fn next_revision(&mut self) -> String {
        self.revision += 1;
        self.revision.to_string()
    }

    pub fn remove(&mut self, reference: &ObjectRef) -> Option<Object> {
        let removed = self.objects.remove(reference)?;
        self.by_key.remove(reference);
        self.note_change(reference);
        if let Some(t) = &mut self.tracking {
            t.removed();
        }
        Some(Arc::unwrap_or_clone(removed))
    }

    pub fn get(&self, reference: &ObjectRef) -> Option<&Object> {
        self.find(reference.kind, &reference.namespace, &reference.name)
    }

    /// The object of `kind` with this namespace (`""` for cluster-scoped kinds) and name.
    pub fn find(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Object> {
        self.note_read(|| tracking::object_key(kind, namespace, name));
        let key: &dyn Key = &(kind, namespace, name);
        self.by_key.get(key).map(|o| &**o)
    }

    /// Changes an object in place (copied first if it is shared with others); false when there
    /// is none.
    pub fn modify(&mut self, reference: &ObjectRef, change: impl FnOnce(&mut Object)) -> bool {
        let Some(mut object) = self.by_key.remove(reference) else {
            return false;
        };
        // Unshared once both maps' references are out of the way.
        self.objects.remove(reference);
        change(Arc::make_mut(&mut object));
        self.note_change(reference);
        self.by_key.insert(reference.clone(), Arc::clone(&object));
        self.objects.insert(reference.clone(), object);
        true
    }

    /// Every object, by kind, namespace and name.
    pub fn objects(&self) -> impl Iterator<Item = &Object> {
        self.note_read(tracking::everything_key);
        self.objects.values().map(|o| &**o)
    }

    /// Starts tracking reads and changes (the offline simulator's [`World::begin_reads`]).
    pub fn track(&mut self) {
        let objects = self.by_key.len();
        (self.tracking).get_or_insert_with(|| Box::new(Tracking::with_capacity(objects)));
    }

    /// Stops tracking and forgets what was tracked.
    pub fn untrack(&mut self) {
        self.tracking = None;
    }

    /// Starts recording what is read (while tracking): the reads of one reconcile.
    pub fn begin_reads(&self) {
        if let Some(t) = &self.tracking {
            t.begin_reads();
        }
    }

    /// Stops recording reads: what was read since [`World::begin_reads`], and when that began
    /// (`tick`, from [`World::change_tick`] before it).
    pub fn end_reads(&self, tick: u64) -> Reads {
        match &self.tracking {
            Some(t) => t.end_reads(tick),
            None => Reads {
                tick,
                keys: Vec::new(),
            },
        }
    }

    /// The count of changes tracked so far.
    pub fn change_tick(&self) -> u64 {
        self.tracking.as_ref().map_or(0, |t| t.tick())
    }

    /// Whether anything `reads` names changed since they were made (always, when not tracking).
    pub fn changed_since(&self, reads: &Reads) -> bool {
        self.tracking
            .as_ref()
            .is_none_or(|t| t.changed_since(reads))
    }

    fn note_read(&self, key: impl FnOnce() -> tracking::ReadKey) {
        if let Some(t) = &self.tracking {
            t.read(key);
        }
    }

    fn note_change(&mut self, reference: &ObjectRef) {
        if let Some(t) = &mut self.tracking {
            t.changed(reference.kind, &reference.namespace, &reference.name);
        }
    }

    /// The objects of a kind in a namespace (`""` for cluster-scoped kinds), by name.
    pub fn in_namespace<'a>(
        &'a self,
        kind: Kind,
        namespace: &str,
    ) -> impl Iterator<Item = &'a Object> + 'a {
        self.note_read(|| tracking::namespace_key(kind, namespace));
        let start: &dyn Key = &(kind, namespace, "");
        let namespace = namespace.to_owned();
        (self
            .objects
            .range::<dyn Key, _>((std::ops::Bound::Included(start), std::ops::Bound::Unbounded)))
        .take_while(move |(r, _)| r.kind == kind && r.namespace == namespace)
        .map(|(_, o)| &**o)
    }

    /// Every object of a kind, by namespace and name.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Object> {
        self.note_read(|| tracking::kind_key(kind));
        (self.objects.range(ObjectRef::new(kind, "", "")..))
            .take_while(move |(r, _)| r.kind == kind)
            .map(|(_, o)| &**o)
    }

    /// A DeploymentTargetClass by name.
    pub fn class(&self, name: &str) -> Option<&DeploymentTargetClass> {
        match self.find(Kind::DeploymentTargetClass, "", name) {
            Some(Object::Class(c)) => Some(c),
            _ => None,
        }
    }

    /// Every DeploymentTargetClass, by name.
    pub fn classes(&self) -> impl Iterator<Item = &DeploymentTargetClass> {
        self.in_namespace(Kind::DeploymentTargetClass, "")
            .filter_map(|o| match o {
                Object::Class(c) => Some(c),
                _ => None,
            })
    }

    /// A Namespace by name.
    pub fn namespace(&self, name: &str) -> Option<&Namespace> {
        match self.find(Kind::Namespace, "", name) {
            Some(Object::Namespace(n)) => Some(n),
            _ => None,
        }
    }

    typed_access!(target, targets, Target, DeploymentTarget, DeploymentTarget);
    typed_access!(
        claim,
        claims,
        Claim,
        DeploymentTargetClaim,
        DeploymentTargetClaim
    );
    typed_access!(
        environment,
        environments,
        Environment,
        Environment,
        Environment
    );
    typed_access!(
        managed_environment,
        managed_environments,
        ManagedEnvironment,
        GitOpsDeploymentManagedEnvironment,
        GitOpsDeploymentManagedEnvironment
    );
    typed_access!(
        space_request,
        space_requests,
        SpaceRequest,
        SpaceRequest,
        SpaceRequest
    );
    typed_access!(
        service_account,
        service_accounts,
        ServiceAccount,
        ServiceAccount,
        ServiceAccount
    );
    typed_access!(
        role_binding,
        role_bindings,
        RoleBinding,
        RoleBinding,
        RoleBinding
    );
    typed_access!(
        resource_quota,
        resource_quotas,
        ResourceQuota,
        ResourceQuota,
        ResourceQuota
    );
    typed_access!(
        limit_range,
        limit_ranges,
        LimitRange,
        LimitRange,
        LimitRange
    );
    typed_access!(secret, secrets, Secret, Secret, Secret);
}

/// A kubeconfig for one ServiceAccount, whose token only the executor can obtain (a
/// TokenRequest on the cluster; a placeholder offline).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeconfigTemplate {
    /// The API server URL a client of the target uses.
    pub server: String,
    /// PEM CA bundle of that server, if it is not a publicly trusted one.
    pub certificate_authority_data: Option<String>,
    pub insecure_skip_tls_verify: bool,
    /// The namespace of the kubeconfig's context.
    pub namespace: String,
    /// The user name in the kubeconfig.
    pub user: String,
}

impl KubeconfigTemplate {
    /// The kubeconfig (YAML), authenticating with `token`.
    pub fn render(&self, token: &str) -> String {
        use base64::Engine as _;
        let mut cluster = serde_json::json!({"server": self.server});
        if let Some(ca) = &self.certificate_authority_data {
            let encoded = base64::engine::general_purpose::STANDARD.encode(ca);
            cluster["certificate-authority-data"] = encoded.into();
        }
        if self.insecure_skip_tls_verify {
            cluster["insecure-skip-tls-verify"] = true.into();
        }
        let config = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "target", "cluster": cluster}],
            "contexts": [{"name": "target", "context": {
                "cluster": "target", "namespace": self.namespace, "user": self.user}}],
            "current-context": "target",
            "users": [{"name": self.user, "user": {"token": token}}],
        });
        // serde_saphyr's bytes, written faster. A JSON value of strings and booleans always
        // has a YAML form.
        crate::yaml::to_document(&config).unwrap_or_default()
    }
}

/// One write a reconcile asks for. Writes are executed in order and stop at the first that
/// fails; a write to an object carries the `resourceVersion` the reconcile read, and the
/// executor carries a newer one forward from its own earlier writes to the same object.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    Create(Object),
    /// Metadata and spec (the status subresource is not touched).
    Update(Object),
    /// The status subresource only.
    UpdateStatus(Object),
    /// Deleting an object with finalizers only marks it (`deletionTimestamp`).
    Delete(ObjectRef),
    /// Creates `secret` with a kubeconfig holding a new token ([`KubeconfigToken`]).
    CreateKubeconfigSecret {
        secret: Secret,
        token: KubeconfigToken,
    },
    /// Replaces `secret` (as read, with its `resourceVersion`) with one holding a new token:
    /// the renewal of a token before it expires.
    RenewKubeconfigSecret {
        secret: Secret,
        token: KubeconfigToken,
    },
}

/// The token a kubeconfig Secret is written with: one for `service_account` from the
/// TokenRequest API (offline, a placeholder), asked to be valid `expiration_seconds`; the API
/// server may cap that (`--service-account-max-token-expiration`), so what the Secret records
/// ([`fill_kubeconfig_secret`]) is the expiry the server gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeconfigToken {
    pub service_account: ObjectRef,
    pub kubeconfig: KubeconfigTemplate,
    pub expiration_seconds: i64,
}

/// Writes the kubeconfig authenticating with `token` into `secret` (key `kubeconfig`) and
/// records when the token was issued and when it expires (annotations
/// [`ANN_TOKEN_ISSUED_AT`](super::keys::ANN_TOKEN_ISSUED_AT) and
/// [`ANN_TOKEN_EXPIRES_AT`](super::keys::ANN_TOKEN_EXPIRES_AT)), from which its renewal is
/// decided.
pub fn fill_kubeconfig_secret(
    secret: &mut Secret,
    kubeconfig: &KubeconfigTemplate,
    token: &str,
    issued: k8s_openapi::jiff::Timestamp,
    expires: k8s_openapi::jiff::Timestamp,
) {
    use super::keys::{ANN_TOKEN_EXPIRES_AT, ANN_TOKEN_ISSUED_AT};
    let text = kubeconfig.render(token);
    let data = secret.data.get_or_insert_with(Default::default);
    data.insert(
        "kubeconfig".into(),
        k8s_openapi::ByteString(text.into_bytes()),
    );
    let annotations = secret
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    annotations.insert(ANN_TOKEN_ISSUED_AT.into(), rfc3339(issued));
    annotations.insert(ANN_TOKEN_EXPIRES_AT.into(), rfc3339(expires));
}

/// A time as Kubernetes writes them: RFC 3339, UTC, whole seconds.
pub fn rfc3339(t: k8s_openapi::jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl Write {
    /// What the write does, as messages and metrics name it.
    pub fn verb(&self) -> &'static str {
        match self {
            Write::Create(_) | Write::CreateKubeconfigSecret { .. } => "create",
            Write::RenewKubeconfigSecret { .. } => "renew token",
            Write::Update(_) => "update",
            Write::UpdateStatus(_) => "update status",
            Write::Delete(_) => "delete",
        }
    }

    /// The object written.
    pub fn target(&self) -> ObjectRef {
        match self {
            Write::Create(o) | Write::Update(o) | Write::UpdateStatus(o) => o.reference(),
            Write::Delete(r) => r.clone(),
            Write::CreateKubeconfigSecret { secret, .. }
            | Write::RenewKubeconfigSecret { secret, .. } => {
                ObjectRef::of(Kind::Secret, &secret.metadata)
            }
        }
    }
}

/// `Normal` or `Warning`, as Kubernetes Events have it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// A Kubernetes Event to record on an object a reconcile acted on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub regarding: ObjectRef,
    pub type_: EventType,
    /// UpperCamelCase, e.g. `Bound`, `Provisioning`, `Released`.
    pub reason: String,
    pub message: String,
}

/// When to reconcile the object again (besides on a watch event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Only when something it watches changes.
    Done,
    /// Soon (after a write whose result the next reconcile must see).
    Requeue,
    RequeueAfter(Duration),
}

/// What one reconcile decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub writes: Vec<Write>,
    pub events: Vec<Event>,
    pub next: Next,
    /// The error upstream's reconciler returns (retried with backoff); the conditions it
    /// wrote are among `writes`.
    pub error: Option<String>,
}

impl Outcome {
    pub fn done() -> Self {
        Outcome {
            writes: Vec::new(),
            events: Vec::new(),
            next: Next::Done,
            error: None,
        }
    }

    /// Records a Kubernetes Event on `regarding`.
    pub fn event(&mut self, regarding: ObjectRef, type_: EventType, reason: &str, message: String) {
        self.events.push(Event {
            regarding,
            type_,
            reason: reason.to_owned(),
            message,
        });
    }
}

/// What every reconcile is given besides the objects: the clock and the settings of the
/// controller (passed as values; nothing here reads the environment).
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    /// Now, as the reconcile should see it (`cvo dt reconcile --now` sets it).
    pub now: k8s_openapi::jiff::Timestamp,
    /// The settings of the `appstudio.redhat.com/namespace` provisioner.
    pub namespace_provisioner: NamespaceProvisionerSettings,
    /// Upstream's `DEV_ONLY_IGNORE_SELFSIGNED_CERT_IN_DEPLOYMENT_TARGET`: provisioned targets
    /// get `allowInsecureSkipTLSVerify: true`.
    pub insecure_provisioned_targets: bool,
}

/// How the namespace provisioner tells a target's users where the API server is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespaceProvisionerSettings {
    /// The API server URL written into targets and kubeconfigs.
    pub server: String,
    /// PEM CA bundle of that server, written into kubeconfigs.
    pub certificate_authority_data: Option<String>,
}

impl Context {
    /// A context at `now` with the in-cluster API server URL and no CA.
    pub fn at(now: k8s_openapi::jiff::Timestamp) -> Self {
        Context {
            now,
            namespace_provisioner: NamespaceProvisionerSettings {
                server: "https://kubernetes.default.svc".into(),
                certificate_authority_data: None,
            },
            insecure_provisioned_targets: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_of_each() -> Vec<Object> {
        vec![
            Object::Class(DeploymentTargetClass::new("x", Default::default())),
            Object::Target(DeploymentTarget::new("x", Default::default())),
            Object::Claim(DeploymentTargetClaim::new("x", Default::default())),
            Object::Environment(Environment::new("x", Default::default())),
            Object::ManagedEnvironment(GitOpsDeploymentManagedEnvironment::new(
                "x",
                Default::default(),
            )),
            Object::SpaceRequest(SpaceRequest::new("x", Default::default())),
            Object::Namespace(Namespace::default()),
            Object::ServiceAccount(ServiceAccount::default()),
            Object::RoleBinding(RoleBinding::default()),
            Object::ResourceQuota(ResourceQuota::default()),
            Object::LimitRange(LimitRange::default()),
            Object::Secret(Secret::default()),
        ]
    }

    #[test]
    fn every_kind_round_trips_through_json_with_its_api_version_and_kind() {
        let objects = one_of_each();
        assert_eq!(
            objects.iter().map(Object::kind).collect::<Vec<_>>(),
            Kind::ALL
        );
        for object in objects {
            let kind = object.kind();
            let value = object.to_value();
            assert_eq!(value["apiVersion"], kind.api_version(), "{kind}");
            assert_eq!(value["kind"], kind.as_str(), "{kind}");
            assert_eq!(
                Kind::from_type(kind.api_version(), kind.as_str()),
                Some(kind)
            );
            assert_eq!(Object::from_value(kind, value).unwrap(), object, "{kind}");
        }
        assert_eq!(Kind::from_type("v1", "DeploymentTarget"), None);
    }

    #[test]
    fn inserting_objects_moves_the_revision_past_their_versions() {
        let mut world = World::new();
        let mut secret = Secret::default();
        secret.metadata.resource_version = Some("41".into());
        world.insert(Object::Secret(secret));
        assert_eq!(world.revision(), 41);
        assert_eq!(world.next_revision(), "42");
    }
}
