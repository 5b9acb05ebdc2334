//! The controller's index of watched objects, from which it builds each reconcile's [`World`]
//! without copying objects (linkerd2's policy-controller keeps one the same way: fed by watch
//! events, read by value, testable with synthetic objects).
//!
//! It also holds the controller's own writes ("read your writes", as the Kubernetes PV
//! controller's and scheduler's assume caches do): the object an API write returns replaces the
//! older one at once, before its watch event arrives. Without it, a reconcile that runs right
//! after another reads the target the first one just bound as still free: claims of one class
//! created together then pick the same target (BENCHMARKS.md, "DeploymentTarget binding").
//!
//! Kube-free: the shell turns watch events into [`Change`]s.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use super::model::{Kind, Object, ObjectRef, World};

/// A watch event, as the index takes it.
#[derive(Debug)]
pub enum Change {
    /// An object was added or modified.
    Apply(Object),
    /// An object was deleted.
    Delete(ObjectRef),
    /// The watch of a kind (re)starts listing: what follows, up to [`Change::RelistDone`],
    /// replaces every object of the kind.
    Relist(Kind),
    /// One object of a relisting.
    RelistApply(Object),
    /// The relisting is complete.
    RelistDone(Kind),
}

/// The objects every reconcile reads, shared between the watch tasks and the reconciles.
#[derive(Debug, Default)]
pub struct Index {
    inner: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    objects: BTreeMap<ObjectRef, Arc<Object>>,
    relisting: HashMap<Kind, Vec<Arc<Object>>>,
}

impl Inner {
    /// Holds `object` unless the index holds a newer version of it.
    fn put(&mut self, object: Arc<Object>) {
        let reference = object.reference();
        let newer = (self.objects.get(&reference)).is_none_or(|held| !is_older(&object, held));
        if newer {
            self.objects.insert(reference, object);
        }
    }
}

/// The kinds a reconcile reads in every namespace, not only its own: the cluster-scoped ones,
/// and what the namespace provisioner made in the namespaces it made for claims (their
/// ServiceAccounts, RoleBindings, ResourceQuotas and LimitRanges, which the shell watches only
/// there).
fn read_everywhere(kind: Kind) -> bool {
    !kind.is_namespaced()
        || matches!(
            kind,
            Kind::ServiceAccount | Kind::RoleBinding | Kind::ResourceQuota | Kind::LimitRange
        )
}

impl Index {
    pub fn new() -> Self {
        Index::default()
    }

    /// Takes a watch event; returns the objects it removed (a deletion, or what a relisting no
    /// longer lists), for the controllers' deletion triggers. A version older than what the
    /// index holds (the controller's own write got there first) is ignored, in a relisting too.
    pub fn apply(&self, change: Change) -> Vec<Arc<Object>> {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        match change {
            Change::Apply(object) => {
                inner.put(Arc::new(object));
                Vec::new()
            }
            Change::Delete(reference) => inner.objects.remove(&reference).into_iter().collect(),
            Change::Relist(kind) => {
                inner.relisting.insert(kind, Vec::new());
                Vec::new()
            }
            Change::RelistApply(object) => {
                let kind = object.kind();
                (inner.relisting.entry(kind).or_default()).push(Arc::new(object));
                Vec::new()
            }
            Change::RelistDone(kind) => {
                let listed = inner.relisting.remove(&kind).unwrap_or_default();
                let mut held: BTreeMap<ObjectRef, Arc<Object>> = BTreeMap::new();
                let keys: Vec<ObjectRef> = (inner.objects.keys())
                    .filter(|r| r.kind == kind)
                    .cloned()
                    .collect();
                for key in keys {
                    if let Some(object) = inner.objects.remove(&key) {
                        held.insert(key, object);
                    }
                }
                for object in listed {
                    let reference = object.reference();
                    let newer = match held.remove(&reference) {
                        Some(h) if is_older(&object, &h) => h,
                        _ => object,
                    };
                    inner.objects.insert(reference, newer);
                }
                held.into_values().collect()
            }
        }
    }

    /// Takes what an API write returned. It replaces only an object the index holds in an
    /// older version: a created object arrives by its watch event, and a write answered after
    /// its object's deletion was watched must not bring it back.
    pub fn wrote(&self, object: Object) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let reference = object.reference();
        let older = (inner.objects.get(&reference)).is_some_and(|held| is_older(held, &object));
        if older {
            inner.objects.insert(reference, Arc::new(object));
        }
    }

    /// What a reconcile of an object in `namespace` may read: every object of that namespace,
    /// and of the kinds read everywhere: the cluster-scoped ones, and what the namespace
    /// provisioner made in its namespaces.
    pub fn world(&self, namespace: &str) -> World {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let objects = Kind::ALL.iter().flat_map(|&kind| {
            let everywhere = read_everywhere(kind);
            let start = ObjectRef::new(kind, if everywhere { "" } else { namespace }, "");
            (inner.objects.range(start..))
                .take_while(move |(r, _)| {
                    r.kind == kind && (everywhere || r.namespace == namespace)
                })
                .map(|(r, o)| (r.clone(), o.clone()))
        });
        World::from_sorted(objects.collect::<Vec<_>>())
    }

    /// How many objects the index holds.
    pub fn len(&self) -> usize {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether `a` is an older version than `b` by `resourceVersion` (etcd's revision, which the
/// API server exposes as a decimal string; the Kubernetes assume cache compares it the same
/// way). Unreadable versions are never older: the watch stays authoritative.
fn is_older(a: &Object, b: &Object) -> bool {
    let version = |o: &Object| o.meta().resource_version.as_deref()?.parse::<u64>().ok();
    matches!((version(a), version(b)), (Some(a), Some(b)) if a < b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::testing::{claim, class, target};

    fn versioned(mut object: Object, version: u64) -> Object {
        object.meta_mut().resource_version = Some(version.to_string());
        object
    }

    fn version_of(world: &World, kind: Kind, name: &str) -> Option<String> {
        let o = world.get(&ObjectRef::new(kind, "ns", name))?;
        o.meta().resource_version.clone()
    }

    #[test]
    fn a_world_holds_its_namespace_and_what_is_read_everywhere() {
        let index = Index::new();
        let mut other = target("far", "cls").object();
        other.meta_mut().namespace = Some("ns2".into());
        let mut prefix = target("near", "cls").object();
        prefix.meta_mut().namespace = Some("ns-".into());
        for o in [
            target("dt", "cls").object(),
            claim("c", "cls").object(),
            class("cls", "p", "Delete"),
            other,
            prefix,
        ] {
            index.apply(Change::Apply(o));
        }
        let world = index.world("ns");
        let names: Vec<String> = world.objects().map(|o| o.reference().to_string()).collect();
        assert_eq!(world.targets("ns").count(), 1, "{names:?}");
        assert_eq!(world.claims("ns").count(), 1);
        assert!(world.class("cls").is_some());
        assert_eq!(world.objects().count(), 3, "{names:?}");
        assert_eq!(index.world("ns2").targets("ns2").count(), 1);
    }

    #[test]
    fn the_controllers_own_write_is_read_before_its_watch_event_arrives() {
        let index = Index::new();
        index.apply(Change::Apply(versioned(target("dt", "cls").object(), 5)));
        index.wrote(versioned(target("dt", "cls").object(), 7));
        let seen = || version_of(&index.world("ns"), Kind::DeploymentTarget, "dt");
        assert_eq!(seen().as_deref(), Some("7"));
        // The watch catches up with an intermediate version, then with the write itself.
        index.apply(Change::Apply(versioned(target("dt", "cls").object(), 6)));
        assert_eq!(seen().as_deref(), Some("7"));
        index.apply(Change::Apply(versioned(target("dt", "cls").object(), 9)));
        assert_eq!(seen().as_deref(), Some("9"));
        // A write answered late (older than what was watched since) changes nothing.
        index.wrote(versioned(target("dt", "cls").object(), 8));
        assert_eq!(seen().as_deref(), Some("9"));
    }

    #[test]
    fn a_write_never_brings_back_a_deleted_object_nor_adds_one() {
        let index = Index::new();
        index.apply(Change::Apply(versioned(target("dt", "cls").object(), 5)));
        index.apply(Change::Delete(target("dt", "cls").object().reference()));
        index.wrote(versioned(target("dt", "cls").object(), 6));
        index.wrote(versioned(claim("c", "cls").object(), 6));
        assert!(index.is_empty());
    }

    #[test]
    fn a_relisting_replaces_its_kind_only_once_done() {
        let index = Index::new();
        index.apply(Change::Apply(target("old", "cls").object()));
        index.apply(Change::Apply(claim("c", "cls").object()));
        index.apply(Change::Relist(Kind::DeploymentTarget));
        index.apply(Change::RelistApply(target("new", "cls").object()));
        let names = |w: World| -> Vec<String> {
            w.targets("ns")
                .map(|t| t.metadata.name.clone().unwrap())
                .collect()
        };
        assert_eq!(names(index.world("ns")), ["old"]);
        index.apply(Change::RelistDone(Kind::DeploymentTarget));
        assert_eq!(names(index.world("ns")), ["new"]);
        assert_eq!(index.world("ns").claims("ns").count(), 1);
    }

    #[test]
    fn a_relisting_keeps_the_controllers_newer_write_and_reports_what_it_dropped() {
        let index = Index::new();
        index.apply(Change::Apply(versioned(target("dt", "cls").object(), 5)));
        index.apply(Change::Apply(versioned(target("gone", "cls").object(), 6)));
        index.apply(Change::Relist(Kind::DeploymentTarget));
        index.apply(Change::RelistApply(versioned(
            target("dt", "cls").object(),
            7,
        )));
        // Written while the list (taken at 7) was read.
        index.wrote(versioned(target("dt", "cls").object(), 9));
        let dropped = index.apply(Change::RelistDone(Kind::DeploymentTarget));
        let dropped: Vec<String> = dropped.iter().map(|o| o.reference().name.clone()).collect();
        assert_eq!(dropped, ["gone"]);
        assert_eq!(
            version_of(&index.world("ns"), Kind::DeploymentTarget, "dt").as_deref(),
            Some("9")
        );
        let deleted = index.apply(Change::Delete(target("dt", "cls").object().reference()));
        assert_eq!(deleted.len(), 1);
        assert!(
            index
                .apply(Change::Delete(target("dt", "cls").object().reference()))
                .is_empty()
        );
    }

    #[test]
    fn unreadable_versions_leave_the_watch_in_charge() {
        let index = Index::new();
        let mut odd = target("dt", "cls").object();
        odd.meta_mut().resource_version = Some("x".into());
        index.apply(Change::Apply(odd));
        index.wrote(versioned(target("dt", "cls").object(), 3));
        assert_eq!(
            version_of(&index.world("ns"), Kind::DeploymentTarget, "dt").as_deref(),
            Some("x")
        );
        index.apply(Change::Apply(versioned(target("dt", "cls").object(), 1)));
        assert_eq!(
            version_of(&index.world("ns"), Kind::DeploymentTarget, "dt").as_deref(),
            Some("1")
        );
    }
}
