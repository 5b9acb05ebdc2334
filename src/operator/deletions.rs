//! The deletions a payload asked for (`release.openshift.io/delete: "true"`), remembered across
//! passes as upstream's `lib/resourcedelete` does: the DELETE is sent once, and the object counts
//! as "deletion in progress" until a later look finds it gone. The in-progress ones feed the
//! `ResourceDeletionInProgress` risk that makes the cluster not upgradeable
//! ([`super::upgradeable`]). Pure: the apply shell reports what it saw and sends the DELETEs this
//! decides.

use std::collections::BTreeMap;
use std::fmt;

/// A deleted object as upstream names it: its kind in lower case, its namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeletedResource {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl DeletedResource {
    pub fn new(kind: &str, namespace: &str, name: &str) -> DeletedResource {
        DeletedResource {
            kind: kind.to_ascii_lowercase(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

/// Upstream `Resource.String`: `configmap "ns/name"`, `namespace "name"`.
impl fmt::Display for DeletedResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} \"{}\"", self.kind, self.name)
        } else {
            write!(f, "{} \"{}/{}\"", self.kind, self.namespace, self.name)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeleteState {
    /// The DELETE was sent; the object was still there when last looked at.
    Requested,
    /// Seen gone.
    Verified,
}

/// What to do about an object the payload deletes, given what a GET found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteDecision {
    /// Send the DELETE (the first time the object is seen, in the Updating mode).
    Delete,
    /// Nothing to send: already requested, already gone, or not the Updating mode.
    Nothing,
}

/// Every deletion requested since the operator started.
#[derive(Debug, Clone, Default)]
pub struct Deletions {
    seen: BTreeMap<DeletedResource, DeleteState>,
}

impl Deletions {
    /// Upstream `GetDeleteProgress` and the `Delete*` helpers: a requested deletion is verified
    /// once the object is gone; an object gone before any request counts as deleted; an
    /// existing object not requested yet is deleted, in the Updating mode only.
    ///
    /// Upstream only looks while updating, so a deletion still running when an update completes
    /// stays "in progress" until the operator restarts. Here any mode's look verifies it.
    pub fn observe(
        &mut self,
        resource: DeletedResource,
        exists: bool,
        updating: bool,
    ) -> DeleteDecision {
        match (self.seen.get(&resource), exists) {
            (_, false) => {
                self.seen.insert(resource, DeleteState::Verified);
                DeleteDecision::Nothing
            }
            (Some(_), true) => DeleteDecision::Nothing,
            (None, true) if updating => DeleteDecision::Delete,
            (None, true) => DeleteDecision::Nothing,
        }
    }

    /// The DELETE of `resource` was accepted by the server.
    pub fn requested(&mut self, resource: DeletedResource) {
        self.seen.insert(resource, DeleteState::Requested);
    }

    /// Upstream `DeletesInProgress`: requested and not seen gone, as `kind "ns/name"`, sorted.
    pub fn in_progress(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .seen
            .iter()
            .filter(|(_, state)| **state == DeleteState::Requested)
            .map(|(resource, _)| resource.to_string())
            .collect();
        names.sort();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc() -> DeletedResource {
        DeletedResource::new("Service", "openshift-etcd", "metrics")
    }

    #[test]
    fn names_are_upstreams() {
        assert_eq!(svc().to_string(), r#"service "openshift-etcd/metrics""#);
        assert_eq!(
            DeletedResource::new("Namespace", "", "old").to_string(),
            r#"namespace "old""#
        );
    }

    #[test]
    fn a_deletion_is_sent_once_and_in_progress_until_seen_gone() {
        let mut d = Deletions::default();
        assert_eq!(d.observe(svc(), true, false), DeleteDecision::Nothing);
        assert!(d.in_progress().is_empty(), "only updating deletes");
        assert_eq!(d.observe(svc(), true, true), DeleteDecision::Delete);
        d.requested(svc());
        assert_eq!(d.in_progress(), [r#"service "openshift-etcd/metrics""#]);
        assert_eq!(
            d.observe(svc(), true, true),
            DeleteDecision::Nothing,
            "sent once"
        );
        assert_eq!(d.in_progress().len(), 1, "still there: still in progress");
        assert_eq!(d.observe(svc(), false, false), DeleteDecision::Nothing);
        assert!(d.in_progress().is_empty(), "any mode's look verifies");
        assert_eq!(
            d.observe(svc(), true, true),
            DeleteDecision::Nothing,
            "a reappeared object is not deleted again (upstream only warns)"
        );
    }

    #[test]
    fn gone_before_any_request_counts_as_deleted() {
        let mut d = Deletions::default();
        assert_eq!(d.observe(svc(), false, true), DeleteDecision::Nothing);
        assert!(d.in_progress().is_empty());
    }

    #[test]
    fn in_progress_is_sorted() {
        let mut d = Deletions::default();
        d.requested(DeletedResource::new("Service", "b", "x"));
        d.requested(DeletedResource::new("ConfigMap", "a", "y"));
        assert_eq!(d.in_progress(), [r#"configmap "a/y""#, r#"service "b/x""#]);
    }
}
