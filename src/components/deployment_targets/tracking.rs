//! What reconciles read from a [`World`](super::model::World) and when its objects changed: how
//! the offline simulator (`cvo dt reconcile`) knows that a reconcile would see exactly what it
//! saw last time, so would decide exactly the same, and can be skipped.
//!
//! A reconcile is a pure function of what it reads (the objects it gets, the namespaces and
//! kinds it lists) and of the [`Context`](super::model::Context), which stands still for a
//! whole run. The reads of a reconcile, and of the writes it asks for as the API server applies
//! them, are recorded as hashes: an object, a kind in a namespace (a listing), a whole kind, or
//! everything. Every change to the world (an object created, replaced or removed) moves a
//! counter and stamps the hashes of the object, its kind in its namespace, its kind and
//! everything. A reconcile is due again once one of the hashes it read is stamped later than
//! when it ran. Two keys with the same hash only make a reconcile run when it need not: never
//! the other way.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;

use foldhash::fast::FixedState;

use super::model::{Kind, ObjectRef};

/// One thing a reconcile read, hashed.
pub type ReadKey = u64;

/// An object: kind, namespace (`""` for cluster-scoped kinds) and name.
pub fn object_key(kind: Kind, namespace: &str, name: &str) -> ReadKey {
    hash((0u8, kind, namespace, name))
}

/// The listing of a kind in a namespace.
pub fn namespace_key(kind: Kind, namespace: &str) -> ReadKey {
    hash((1u8, kind, namespace))
}

/// The listing of a whole kind.
pub fn kind_key(kind: Kind) -> ReadKey {
    hash((2u8, kind))
}

/// Every object.
pub fn everything_key() -> ReadKey {
    hash(3u8)
}

/// A fast hasher with a fixed seed: the same keys hash the same in every run.
pub type Hashing = FixedState;

fn hash(value: impl Hash) -> u64 {
    Hashing::default().hash_one(value)
}

/// A world's record of reads (while a reconcile runs) and of changes.
#[derive(Debug, Default)]
pub struct Tracking {
    /// The reads since [`Tracking::begin_reads`]; `None` when no reconcile is being recorded.
    /// A mutex because reconciles read through a shared `&World`.
    reads: Mutex<Option<Vec<ReadKey>>>,
    /// Counts changes.
    tick: u64,
    /// The tick of the last change to each key.
    changed: HashMap<ReadKey, u64, Hashing>,
    /// The objects created since [`Tracking::take_created`].
    created: Vec<ObjectRef>,
    /// Whether an object was removed since [`Tracking::take_removed`].
    removed: bool,
}

impl Clone for Tracking {
    fn clone(&self) -> Self {
        Tracking {
            reads: Mutex::new(self.lock().clone()),
            tick: self.tick,
            changed: self.changed.clone(),
            created: self.created.clone(),
            removed: self.removed,
        }
    }
}

/// When a reconcile ran and what it read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads {
    pub tick: u64,
    pub keys: Vec<ReadKey>,
}

impl Tracking {
    /// Room for the changes of about `objects` objects.
    pub fn with_capacity(objects: usize) -> Self {
        Tracking {
            changed: HashMap::with_capacity_and_hasher(objects, Hashing::default()),
            ..Tracking::default()
        }
    }

    /// Notes that an object was created.
    pub fn created(&mut self, reference: ObjectRef) {
        self.created.push(reference);
    }

    /// The objects created since the last call.
    pub fn take_created(&mut self) -> Vec<ObjectRef> {
        std::mem::take(&mut self.created)
    }

    /// Notes that an object was removed.
    pub fn removed(&mut self) {
        self.removed = true;
    }

    /// Whether an object was removed since the last call.
    pub fn take_removed(&mut self) -> bool {
        std::mem::take(&mut self.removed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Vec<ReadKey>>> {
        // A panic while the lock was held leaves the reads as they were: still usable.
        self.reads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes a read, when a reconcile is being recorded.
    pub fn read(&self, key: impl FnOnce() -> ReadKey) {
        if let Some(reads) = self.lock().as_mut() {
            reads.push(key());
        }
    }

    /// Starts recording a reconcile's reads.
    pub fn begin_reads(&self) {
        *self.lock() = Some(Vec::new());
    }

    /// Stops recording: when the reconcile started (`tick`, taken before it) and what it read.
    pub fn end_reads(&self, tick: u64) -> Reads {
        let mut keys = self.lock().take().unwrap_or_default();
        keys.sort_unstable();
        keys.dedup();
        Reads { tick, keys }
    }

    /// The count of changes so far.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    /// Records a change to the object of `kind` in `namespace` named `name`.
    pub fn changed(&mut self, kind: Kind, namespace: &str, name: &str) {
        self.tick += 1;
        for key in [
            object_key(kind, namespace, name),
            namespace_key(kind, namespace),
            kind_key(kind),
            everything_key(),
        ] {
            self.changed.insert(key, self.tick);
        }
    }

    /// Whether something `reads` names changed after they were made.
    pub fn changed_since(&self, reads: &Reads) -> bool {
        (reads.keys.iter()).any(|k| self.changed.get(k).is_some_and(|&t| t > reads.tick))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_stamps_the_object_its_listings_and_everything() {
        let mut t = Tracking::default();
        t.begin_reads();
        t.read(|| object_key(Kind::Secret, "ns", "a"));
        let a = t.end_reads(t.tick());
        let listing = |key| Reads {
            tick: a.tick,
            keys: vec![key],
        };
        t.changed(Kind::Secret, "ns", "b");
        assert!(!t.changed_since(&a), "another object");
        assert!(t.changed_since(&listing(namespace_key(Kind::Secret, "ns"))));
        assert!(!t.changed_since(&listing(namespace_key(Kind::Secret, "other"))));
        assert!(!t.changed_since(&listing(namespace_key(Kind::Namespace, "ns"))));
        assert!(t.changed_since(&listing(kind_key(Kind::Secret))));
        assert!(t.changed_since(&listing(everything_key())));
        t.changed(Kind::Secret, "ns", "a");
        assert!(t.changed_since(&a));
        let later = Reads {
            tick: t.tick(),
            keys: a.keys.clone(),
        };
        assert!(!t.changed_since(&later), "changed before the reads");
    }

    #[test]
    fn reads_are_recorded_only_between_begin_and_end() {
        let t = Tracking::default();
        t.read(|| object_key(Kind::Secret, "ns", "ignored"));
        t.begin_reads();
        t.read(|| object_key(Kind::Secret, "ns", "x"));
        t.read(|| object_key(Kind::Secret, "ns", "x"));
        let reads = t.end_reads(7);
        assert_eq!(reads.tick, 7);
        assert_eq!(reads.keys, vec![object_key(Kind::Secret, "ns", "x")]);
        t.read(|| object_key(Kind::Secret, "ns", "after"));
        assert_eq!(t.end_reads(0).keys, Vec::<ReadKey>::new());
    }
}
