//! Leader election on a `coordination.k8s.io/v1` Lease, so that only one `cvo start` replica
//! applies the payload and one replica of a component's controllers acts (kube-runtime 5 has
//! no lease helper, so this is written by hand).
//!
//! The protocol is client-go's: the holder renews `spec.renewTime` every `renew_interval`; a
//! candidate takes the lease over when it is free (`holderIdentity` empty) or expired
//! (`renewTime + leaseDurationSeconds < now`). Every write is a `replace` carrying the
//! `resourceVersion` that was read (optimistic concurrency), so of two candidates racing for
//! the same lease exactly one wins; the loser sees 409 Conflict and keeps waiting. On a clean
//! stop the holder releases the lease (empties `holderIdentity`) so a standby takes over at
//! its next attempt instead of after the lease expires.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use tokio::sync::watch;

/// The CVO's namespace, where its Lease lives.
pub const LEASE_NAMESPACE: &str = "openshift-cluster-version";
/// The Lease's name (upstream's lock is also called `version`).
pub const LEASE_NAME: &str = "version";

/// Who competes for which Lease, and how often.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    /// This replica's identity (`holderIdentity`); unique per process.
    pub identity: String,
    /// `leaseDurationSeconds`: how long a holder that stopped renewing keeps the lease.
    pub lease_duration: Duration,
    /// How often the holder renews and a candidate retries; well below `lease_duration`.
    pub renew_interval: Duration,
}

impl LeaseConfig {
    /// The CVO's `openshift-cluster-version/version`, 30 s leases renewed every 5 s.
    pub fn new(identity: impl Into<String>) -> Self {
        LeaseConfig::named(LEASE_NAMESPACE, LEASE_NAME, identity)
    }

    /// The Lease `namespace/name` (a component's), 30 s leases renewed every 5 s.
    pub fn named(namespace: &str, name: &str, identity: impl Into<String>) -> Self {
        LeaseConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(30),
            renew_interval: Duration::from_secs(5),
        }
    }
}

/// Why leader election cannot go on: waiting longer would not help.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error(
        "the Lease {namespace}/{name} cannot be created: namespace {namespace} does not exist and this user may not create it ({cause}); create it (kubectl create namespace {namespace}) or grant this user `create` on namespaces, or run a single replica with --disable-leader-election"
    )]
    NoNamespace {
        namespace: String,
        name: String,
        cause: String,
    },
}

/// Why one attempt at the Lease failed.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    /// Creating the Lease answered 404: its namespace does not exist (or the API is missing).
    #[error("cannot create the Lease: {}", .0.message)]
    CannotCreate(Box<kube::core::Status>),
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

/// One candidate for one Lease.
#[derive(Clone)]
pub struct LeaderElector {
    client: kube::Client,
    api: Api<Lease>,
    config: LeaseConfig,
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

/// Free (no holder) or expired at `now`.
pub fn is_free_or_expired(spec: &LeaseSpec, now: Timestamp) -> bool {
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder.is_empty() {
        return true;
    }
    let Some(renewed) = spec.renew_time.as_ref().or(spec.acquire_time.as_ref()) else {
        return true;
    };
    let duration_ms = i64::from(spec.lease_duration_seconds.unwrap_or(0)) * 1000;
    renewed.0.as_millisecond() + duration_ms < now.as_millisecond()
}

impl LeaderElector {
    pub fn new(client: kube::Client, config: LeaseConfig) -> Self {
        let api = Api::namespaced(client.clone(), &config.namespace);
        LeaderElector {
            client,
            api,
            config,
        }
    }

    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    fn duration_secs(&self) -> i32 {
        i32::try_from(self.config.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    /// One attempt: creates the Lease, renews it if held, takes it over if free or expired.
    /// `Ok(true)` when this candidate holds the lease afterwards; a lost race is `Ok(false)`.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, AttemptError> {
        let me = self.config.identity.as_str();
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(me.into()),
                    lease_duration_seconds: Some(self.duration_secs()),
                    acquire_time: Some(now()),
                    renew_time: Some(now()),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                // Creating a namespaced object answers 404 only when its namespace (or the
                // Lease API) is missing.
                Err(kube::Error::Api(s)) if s.code == 404 => Err(AttemptError::CannotCreate(s)),
                created => Ok(conflict_is_false(created)?),
            };
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() == Some(me) {
            spec.renew_time = Some(now());
            spec.lease_duration_seconds = Some(self.duration_secs());
        } else if is_free_or_expired(spec, Timestamp::now()) {
            tracing::info!(
                previous = spec.holder_identity.as_deref().unwrap_or_default(),
                identity = me,
                "taking over the lease"
            );
            spec.holder_identity = Some(me.into());
            spec.acquire_time = Some(now());
            spec.renew_time = Some(now());
            spec.lease_duration_seconds = Some(self.duration_secs());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        } else {
            return Ok(false);
        }
        // metadata.resourceVersion is the one read: a concurrent writer makes this a 409.
        let replaced = self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await;
        Ok(conflict_is_false(replaced)?)
    }

    /// Creates the Lease's namespace, which a fresh cluster may lack (the installer normally
    /// creates it); a concurrent creation is fine. A user who may not create it gets
    /// [`LeaseError::NoNamespace`], since no amount of retrying helps then.
    async fn create_namespace(&self) -> Result<(), LeaseError> {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(self.config.namespace.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        match namespaces.create(&PostParams::default(), &namespace).await {
            Ok(_) => {
                tracing::info!(namespace = %self.config.namespace, "created the lease namespace");
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 403 || s.code == 401 => {
                Err(LeaseError::NoNamespace {
                    namespace: self.config.namespace.clone(),
                    name: self.config.name.clone(),
                    cause: s.message,
                })
            }
            // Transient (the apiserver going away, ...): the next attempt tries again.
            Err(e) => {
                tracing::warn!(error = %e, namespace = %self.config.namespace, "cannot create the lease namespace");
                Ok(())
            }
        }
    }

    /// Gives the lease up if this candidate holds it (empties `holderIdentity`).
    pub async fn release(&self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            return Ok(());
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.renew_time = Some(now());
        conflict_is_false(
            self.api
                .replace(&self.config.name, &PostParams::default(), &lease)
                .await,
        )
        .map(|_| ())
    }

    /// Keeps trying and renewing every `renew_interval`, publishing whether this candidate
    /// leads on `leader`, until `stop` turns true (or its sender goes away); then releases.
    /// A holder that cannot renew for a whole lease duration stops leading. Returns an error
    /// (and stops) only when waiting cannot help: the namespace is missing and cannot be made.
    pub async fn run(
        self,
        leader: watch::Sender<bool>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), LeaseError> {
        let mut last_renewed: Option<std::time::Instant> = None;
        loop {
            if *stop.borrow() {
                break;
            }
            let leading = match self.try_acquire_or_renew().await {
                Ok(true) => {
                    last_renewed = Some(std::time::Instant::now());
                    true
                }
                Ok(false) => false,
                Err(e @ AttemptError::CannotCreate(_)) => {
                    tracing::warn!(error = %e, namespace = %self.config.namespace, "the lease namespace may be missing");
                    self.create_namespace().await?;
                    false
                }
                Err(e) => {
                    tracing::warn!(error = %e, lease = %self.config.name, "cannot acquire or renew the lease");
                    last_renewed.is_some_and(|t| t.elapsed() < self.config.lease_duration)
                }
            };
            if !leading {
                last_renewed = None;
            }
            leader.send_if_modified(|was| {
                let changed = *was != leading;
                if changed {
                    if leading {
                        tracing::info!(identity = %self.config.identity, "became the leader");
                    } else {
                        tracing::info!(identity = %self.config.identity, "not the leader; waiting for the lease");
                    }
                }
                *was = leading;
                changed
            });
            tokio::select! {
                _ = tokio::time::sleep(self.config.renew_interval) => {}
                changed = stop.changed() => if changed.is_err() { break },
            }
        }
        leader.send_replace(false);
        if last_renewed.is_some() {
            match self.release().await {
                Ok(()) => tracing::info!(identity = %self.config.identity, "released the lease"),
                Err(e) => tracing::warn!(error = %e, "cannot release the lease"),
            }
        }
        Ok(())
    }
}

fn conflict_is_false<T>(result: Result<T, kube::Error>) -> Result<bool, kube::Error> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry() {
        let t = |s: i64| Timestamp::from_second(s).unwrap();
        let spec = LeaseSpec {
            holder_identity: Some("a".into()),
            renew_time: Some(MicroTime(t(100))),
            lease_duration_seconds: Some(10),
            ..Default::default()
        };
        assert!(!is_free_or_expired(&spec, t(110)));
        assert!(is_free_or_expired(&spec, t(111)));
        let free = LeaseSpec {
            holder_identity: Some(String::new()),
            ..spec.clone()
        };
        assert!(is_free_or_expired(&free, t(100)));
    }
}
