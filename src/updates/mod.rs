//! The update service (Cincinnati) side of the CVO: which updates the cluster's channel offers
//! (upstream `pkg/cincinnati` and `pkg/cvo/availableupdates.go`).
//!
//! Pure: [`request`] (the graph URL and upstream's checks before asking), [`graph`] (the graph
//! document and the updates from the current version), [`rules`] (whether a risk applies:
//! upstream's `clusterconditions.Match`), [`cache`] (the throttled cache of `PromQL` answers),
//! [`promql`] (a `PromQL` rule's answer from Prometheus' response), [`recommend`] (the
//! `Recommended` condition of a conditional update), [`retrieval`] (when to ask again, what is
//! kept after a failure), [`transport`] (the cluster's proxy and trusted CA for the update
//! service), [`alerts`] (firing alerts as update risks). The shells are [`fetch`] (HTTP GET
//! of the graph) and [`prometheus`] (the queries and the evaluation of the risks, the alerts)
//! with [`promql_target`] (upstream's default target, the cluster's Thanos querier), with the
//! `cluster` feature. The admin's side,
//! also pure and with the `cluster` feature: [`admin`] (`cvo upgrade`), [`progress`]
//! (`cvo upgrade status`), [`channel`] (`cvo upgrade channel`), [`accept`] (`cvo upgrade
//! accept`), [`recommendations`] (`cvo upgrade recommend`).

#[cfg(feature = "cluster")]
pub mod accept;
#[cfg(feature = "cluster")]
pub mod admin;
pub mod alerts;
pub mod cache;
#[cfg(feature = "cluster")]
pub mod channel;
#[cfg(feature = "cluster")]
pub mod fetch;
pub mod graph;
#[cfg(feature = "cluster")]
pub mod preflight_request;
#[cfg(feature = "cluster")]
pub mod progress;
#[cfg(feature = "cluster")]
pub mod prometheus;
pub mod promql;
#[cfg(feature = "cluster")]
pub mod promql_target;
pub mod recommend;
#[cfg(feature = "cluster")]
pub mod recommendations;
pub mod request;
pub mod retrieval;
pub mod rules;
pub mod transport;

pub use graph::{
    ClusterCondition, ConditionalUpdate, ConditionalUpdateRisk, Graph, PromQlClusterCondition,
    Target, Updates, updates,
};
pub use recommend::{Recommendation, recommendation};
pub use request::{DEFAULT_UPDATE_SERVICE, GraphRequest, Query, graph_request};
pub use retrieval::{AvailableUpdates, Key};

/// Why updates could not be retrieved: upstream's `RetrievedUpdates=False` reasons. The
/// checks before the request have their own messages; the others (upstream's `cincinnati.Error`)
/// are prefixed `Unable to retrieve available updates: ` in the condition ([`Failure::message`]).
/// `Display` is upstream's `Error()`: `<reason>: <detail>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    #[error("NoUpstream: {}", self.message())]
    NoUpstream,
    #[error("InvalidURI: {}", self.message())]
    InvalidUri(String),
    #[error("InvalidID: {}", self.message())]
    InvalidId(String),
    #[error("NoArchitecture: {}", self.message())]
    NoArchitecture,
    #[error("NoCurrentVersion: {}", self.message())]
    NoCurrentVersion,
    #[error("NoChannel: {}", self.message())]
    NoChannel,
    #[error("InvalidCurrentVersion: {}", self.message())]
    InvalidCurrentVersion,
    /// The request could not be built.
    #[error("InvalidRequest: {0}")]
    InvalidRequest(String),
    /// No response: connection refused, TLS, timeout.
    #[error("RemoteFailed: {0}")]
    RemoteFailed(String),
    /// A status other than 200, or a body that could not be read.
    #[error("ResponseFailed: {0}")]
    ResponseFailed(String),
    /// Not a graph document, or a node the updates need is invalid.
    #[error("ResponseInvalid: {0}")]
    ResponseInvalid(String),
    /// The current version is not a node of the channel's graph.
    #[error("VersionNotFound: {}", version_not_found(version, channel))]
    VersionNotFound { version: String, channel: String },
}

fn version_not_found(version: &str, channel: &str) -> String {
    format!(
        "currently reconciling cluster version {version} not found in the {} channel",
        crate::manifest::go_quote(channel)
    )
}

impl Failure {
    /// The `RetrievedUpdates` reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Failure::NoUpstream => "NoUpstream",
            Failure::InvalidUri(_) => "InvalidURI",
            Failure::InvalidId(_) => "InvalidID",
            Failure::NoArchitecture => "NoArchitecture",
            Failure::NoCurrentVersion => "NoCurrentVersion",
            Failure::NoChannel => "NoChannel",
            Failure::InvalidCurrentVersion => "InvalidCurrentVersion",
            Failure::InvalidRequest(_) => "InvalidRequest",
            Failure::RemoteFailed(_) => "RemoteFailed",
            Failure::ResponseFailed(_) => "ResponseFailed",
            Failure::ResponseInvalid(_) => "ResponseInvalid",
            Failure::VersionNotFound { .. } => "VersionNotFound",
        }
    }

    /// The `RetrievedUpdates` message, upstream's text.
    pub fn message(&self) -> String {
        let unable = |m: &str| format!("Unable to retrieve available updates: {m}");
        match self {
            Failure::NoUpstream => {
                "No updateService server has been set to retrieve updates.".into()
            }
            Failure::InvalidUri(e) => format!("failed to parse upstream URL: {e}"),
            Failure::InvalidId(e) => e.clone(),
            Failure::NoArchitecture => "The set of architectures has not been configured.".into(),
            Failure::NoCurrentVersion => "The cluster version does not have a semantic version assigned and cannot calculate valid upgrades.".into(),
            Failure::NoChannel => "The update channel has not been configured.".into(),
            Failure::InvalidCurrentVersion => "The current cluster version is not a valid semantic version and cannot be used to calculate upgrades.".into(),
            Failure::InvalidRequest(m)
            | Failure::RemoteFailed(m)
            | Failure::ResponseFailed(m)
            | Failure::ResponseInvalid(m) => unable(m),
            Failure::VersionNotFound { version, channel } => {
                unable(&version_not_found(version, channel))
            }
        }
    }

    /// A failure of the exchange with the update service itself (no answer, a bad status, a
    /// bad document): upstream keeps the updates it retrieved before.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Failure::RemoteFailed(_) | Failure::ResponseFailed(_) | Failure::ResponseInvalid(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_upstreams() {
        let cases = [
            (
                Failure::NoUpstream,
                "NoUpstream",
                "No updateService server has been set to retrieve updates.",
            ),
            (
                Failure::NoChannel,
                "NoChannel",
                "The update channel has not been configured.",
            ),
            (
                Failure::NoArchitecture,
                "NoArchitecture",
                "The set of architectures has not been configured.",
            ),
            (
                Failure::NoCurrentVersion,
                "NoCurrentVersion",
                "The cluster version does not have a semantic version assigned and cannot calculate valid upgrades.",
            ),
            (
                Failure::InvalidCurrentVersion,
                "InvalidCurrentVersion",
                "The current cluster version is not a valid semantic version and cannot be used to calculate upgrades.",
            ),
            (
                Failure::ResponseFailed("unexpected HTTP status: 500 Internal Server Error".into()),
                "ResponseFailed",
                "Unable to retrieve available updates: unexpected HTTP status: 500 Internal Server Error",
            ),
            (
                Failure::VersionNotFound {
                    version: "4.18.0".into(),
                    channel: "stable-4.18".into(),
                },
                "VersionNotFound",
                "Unable to retrieve available updates: currently reconciling cluster version 4.18.0 not found in the \"stable-4.18\" channel",
            ),
        ];
        for (failure, reason, message) in cases {
            assert_eq!(failure.reason(), reason);
            assert_eq!(failure.message(), message);
        }
        assert_eq!(
            Failure::RemoteFailed("x".into()).to_string(),
            "RemoteFailed: x"
        );
    }
}
