//! Kubernetes Events about the ClusterVersion, as upstream's sync worker records them while it
//! loads a release (`SyncWorker.syncPayload`): the same reasons, types and messages, about the
//! object `config.openshift.io/v1 ClusterVersion version` in `openshift-cluster-version` (where
//! upstream's reference puts them, the ClusterVersion being cluster-scoped).
//!
//! [`load_events`] is pure: the Events of one attempt at a release, from what became of it.
//! [`EventRecorder`] publishes them (kube-runtime's recorder, which folds repeats into a series);
//! a failure to record is logged, never a failed pass.

use crate::manifest::go_quote;

use super::outcome::{LoadFailure, PayloadLoadStep, RequestedUpdate};

/// The namespace the Events are recorded in, and their reporting component (upstream's
/// `EventSource{Component: namespace}`).
pub const EVENTS_NAMESPACE: &str = "openshift-cluster-version";

/// One Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterVersionEvent {
    pub warning: bool,
    pub reason: &'static str,
    pub note: String,
}

fn normal(reason: &'static str, note: String) -> ClusterVersionEvent {
    ClusterVersionEvent {
        warning: false,
        reason,
        note,
    }
}

fn warning(reason: &'static str, note: String) -> ClusterVersionEvent {
    ClusterVersionEvent {
        warning: true,
        reason,
        note,
    }
}

/// What became of one attempt to load a release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadOutcome<'a> {
    /// Retrieval goes on in the background (nothing more to say yet).
    StillRetrieving,
    /// It failed at `failure.step` (after retrieval for the later steps).
    Failed(&'a LoadFailure),
    /// Loaded and accepted. `unverified`: why its signature could not be verified when `force`
    /// let it through; `preconditions`: `None` for a local payload (none are run), else the
    /// warnings accepted (empty: all passed); `version` and `architecture` as loaded.
    Loaded {
        unverified: Option<&'a str>,
        preconditions: Option<&'a str>,
        version: &'a str,
        architecture: &'a str,
    },
}

/// Upstream's Events for loading `update`: `RetrievePayload` when `starting` (a retrieval
/// begins), then by outcome `RetrievePayloadFailed`, or a `RetrievePayload` warning for a forced
/// unverified release, `LoadPayload`, `LoadPayloadFailed`, `VerifyPayloadVersionFailed`,
/// `PreconditionBlock`, `PreconditionWarn`, `PreconditionsPassed` and `PayloadLoaded`.
pub fn load_events(
    update: &RequestedUpdate,
    starting: bool,
    outcome: &LoadOutcome<'_>,
) -> Vec<ClusterVersionEvent> {
    let (v, i) = (go_quote(&update.version), go_quote(&update.image));
    let mut events = Vec::new();
    if starting {
        events.push(normal(
            "RetrievePayload",
            format!("Retrieving and verifying payload version={v} image={i}"),
        ));
    }
    let loading = || {
        normal(
            "LoadPayload",
            format!("Loading payload version={v} image={i}"),
        )
    };
    match outcome {
        LoadOutcome::StillRetrieving => {}
        LoadOutcome::Failed(failure) => match failure.step {
            PayloadLoadStep::RetrievePayload => events.push(warning(
                "RetrievePayloadFailed",
                format!(
                    "Retrieving payload failed version={v} image={i} failure={}",
                    failure.error.replace('\n', " // ")
                ),
            )),
            PayloadLoadStep::LoadPayload => {
                events.push(loading());
                events.push(warning(
                    "LoadPayloadFailed",
                    format!(
                        "Loading payload failed version={v} image={i} failure={}",
                        failure.error
                    ),
                ));
            }
            PayloadLoadStep::VerifyPayloadVersion => {
                events.push(loading());
                events.push(warning(
                    "VerifyPayloadVersionFailed",
                    format!(
                        "Verifying payload failed version={v} image={i} failure={}",
                        failure.error
                    ),
                ));
            }
            PayloadLoadStep::PreconditionChecks => {
                events.push(loading());
                // Upstream fills the requested version from the payload before the checks.
                events.push(warning(
                    "PreconditionBlock",
                    format!(
                        "Preconditions failed for payload loaded version={v} image={i}: {}",
                        failure.error
                    ),
                ));
            }
        },
        LoadOutcome::Loaded {
            unverified,
            preconditions,
            version,
            architecture,
        } => {
            if let Some(message) = unverified {
                events.push(warning("RetrievePayload", message.to_string()));
            }
            events.push(loading());
            let v = go_quote(if update.version.is_empty() {
                version
            } else {
                &update.version
            });
            if let Some(warnings) = preconditions {
                if !warnings.is_empty() {
                    events.push(warning(
                        "PreconditionWarn",
                        format!(
                            "precondition warning for payload loaded version={v} image={i}: {warnings}"
                        ),
                    ));
                }
                events.push(normal(
                    "PreconditionsPassed",
                    format!("preconditions passed for payload loaded version={v} image={i}"),
                ));
            }
            events.push(normal(
                "PayloadLoaded",
                format!(
                    "Payload loaded version={v} image={i} architecture={}",
                    go_quote(architecture)
                ),
            ));
        }
    }
    events
}

/// Publishes Events about the ClusterVersion; cheap to clone (one recorder, whose series cache
/// is shared).
#[derive(Clone)]
pub struct EventRecorder {
    recorder: kube::runtime::events::Recorder,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventRecorder")
    }
}

impl EventRecorder {
    pub fn new(client: kube::Client) -> Self {
        let reporter = kube::runtime::events::Reporter {
            controller: EVENTS_NAMESPACE.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        EventRecorder {
            recorder: kube::runtime::events::Recorder::new(client, reporter),
        }
    }

    /// Records `events` (in order), logging each as upstream's broadcaster also does.
    pub async fn record(&self, events: &[ClusterVersionEvent]) {
        use k8s_openapi::api::core::v1::ObjectReference;
        use kube::runtime::events::{Event, EventType};
        let reference = ObjectReference {
            api_version: Some("config.openshift.io/v1".into()),
            kind: Some("ClusterVersion".into()),
            name: Some(crate::cluster::CLUSTER_VERSION_NAME.into()),
            namespace: Some(EVENTS_NAMESPACE.into()),
            ..Default::default()
        };
        for event in events {
            tracing::info!(
                reason = event.reason,
                warning = event.warning,
                "event: {}",
                event.note
            );
            // events.k8s.io allows a note of 1 kB.
            let mut note = event.note.clone();
            if note.len() > 1024 {
                let mut end = 1021;
                while !note.is_char_boundary(end) {
                    end -= 1;
                }
                note.truncate(end);
                note.push_str("...");
            }
            let published = self
                .recorder
                .publish(
                    &Event {
                        type_: if event.warning {
                            EventType::Warning
                        } else {
                            EventType::Normal
                        },
                        reason: event.reason.into(),
                        action: action(&note),
                        note: Some(note),
                        secondary: None,
                    },
                    &reference,
                )
                .await;
            if let Err(error) = published {
                tracing::warn!(%error, reason = event.reason, "cannot record an Event about the ClusterVersion");
            }
        }
    }
}

/// The Event's `action`. kube-runtime's recorder folds Events of the same type, reason, action
/// and object into one series, while upstream's (client-go) folds only identical messages: so
/// the note is the action, within the 128 bytes the API allows.
fn action(note: &str) -> String {
    let mut end = note.len().min(128);
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    note[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(version: &str) -> RequestedUpdate {
        RequestedUpdate {
            image: "img@sha256:2".into(),
            version: version.into(),
        }
    }

    fn reasons(events: &[ClusterVersionEvent]) -> Vec<(&str, bool)> {
        events.iter().map(|e| (e.reason, e.warning)).collect()
    }

    #[test]
    fn a_release_that_loads_passes_its_preconditions() {
        let loaded = LoadOutcome::Loaded {
            unverified: None,
            preconditions: Some(""),
            version: "4.19.0",
            architecture: "amd64",
        };
        let events = load_events(&update(""), true, &loaded);
        assert_eq!(
            reasons(&events),
            [
                ("RetrievePayload", false),
                ("LoadPayload", false),
                ("PreconditionsPassed", false),
                ("PayloadLoaded", false)
            ]
        );
        assert_eq!(
            events[0].note,
            r#"Retrieving and verifying payload version="" image="img@sha256:2""#
        );
        assert_eq!(
            events[2].note,
            r#"preconditions passed for payload loaded version="4.19.0" image="img@sha256:2""#
        );
        assert_eq!(
            events[3].note,
            r#"Payload loaded version="4.19.0" image="img@sha256:2" architecture="amd64""#
        );
        // The operator's own payload runs no preconditions.
        let local = LoadOutcome::Loaded {
            unverified: None,
            preconditions: None,
            version: "4.19.0",
            architecture: "amd64",
        };
        assert_eq!(
            reasons(&load_events(&update("4.19.0"), true, &local)),
            [
                ("RetrievePayload", false),
                ("LoadPayload", false),
                ("PayloadLoaded", false)
            ]
        );
    }

    #[test]
    fn warnings_and_failures_are_warning_events() {
        let forced = LoadOutcome::Loaded {
            unverified: Some("The update cannot be verified: no signature"),
            preconditions: Some("Precondition \"X\" failed because of \"Y\": z"),
            version: "4.19.0",
            architecture: "amd64",
        };
        let events = load_events(&update("4.19.0"), false, &forced);
        assert_eq!(
            reasons(&events),
            [
                ("RetrievePayload", true),
                ("LoadPayload", false),
                ("PreconditionWarn", true),
                ("PreconditionsPassed", false),
                ("PayloadLoaded", false)
            ]
        );
        let failure = |step| LoadFailure {
            step,
            error: "first\nsecond".into(),
        };
        let retrieval = failure(PayloadLoadStep::RetrievePayload);
        let events = load_events(&update("4.19.0"), true, &LoadOutcome::Failed(&retrieval));
        assert_eq!(
            events[1].note,
            r#"Retrieving payload failed version="4.19.0" image="img@sha256:2" failure=first // second"#
        );
        let block = failure(PayloadLoadStep::PreconditionChecks);
        assert_eq!(
            reasons(&load_events(
                &update("4.19.0"),
                false,
                &LoadOutcome::Failed(&block)
            )),
            [("LoadPayload", false), ("PreconditionBlock", true)]
        );
        let version = failure(PayloadLoadStep::VerifyPayloadVersion);
        assert_eq!(
            reasons(&load_events(
                &update("4.19.0"),
                false,
                &LoadOutcome::Failed(&version)
            )),
            [("LoadPayload", false), ("VerifyPayloadVersionFailed", true)]
        );
        assert!(load_events(&update("4.19.0"), false, &LoadOutcome::StillRetrieving).is_empty());
    }
}
