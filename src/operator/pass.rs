//! One sync pass as plain data (spec §4.3, §7.1). A pass observes the cluster ([`Observed`]),
//! plans ([`plan_pass`]: payload, capabilities, inclusion configuration, mode, task graph),
//! has the plan executed, then derives the next status ([`pass_status`]) and the state the next
//! pass starts from ([`SyncState::record_pass`]). Accepting a requested release
//! ([`accept_release`]: preconditions, implicit enablement) is decided here too. No I/O:
//! [`super::run`](mod@super::run) reads, executes and writes around these functions.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::deletions::Deletions;
use super::outcome::{ApplyReport, LoadFailure, PayloadLoad, RequestedUpdate};
use super::precondition::{self, ClusterView};
use super::status::{StatusInput, next_status};
use super::summary::{OperatorUpdateStartTimes, progress};
use super::upgradeable::RiskFacts;
use crate::capability::implicit::{Side, implicitly_enabled};
use crate::capability::{
    Capability, ClusterCapabilities, set_capabilities, set_from_implicitly_enabled,
};
use crate::cluster::validation::FieldError;
use crate::cluster::{ClusterVersion, ClusterVersionStatus, Release};
use crate::graph::{Mode, TaskGraph, workers_for};
use crate::hash::version_hash;
use crate::include::{ClusterFacts, InclusionConfig};
use crate::manifest::Manifest;
use crate::payload::Payload;
use crate::payload::metadata::running_architecture;
use crate::updates::request::MULTI;
use crate::updates::{AvailableUpdates, Key, Query};

/// What a pass read from the cluster before deciding anything.
#[derive(Debug, Clone)]
pub struct Observed {
    /// The ClusterVersion `version`, its invalid fields cleared (upstream syncs that spec).
    pub cluster_version: ClusterVersion,
    /// What the CVO's own checks found wrong in the spec (the `Invalid` condition).
    pub validation_errors: Vec<FieldError>,
    /// The FeatureGate `cluster`'s `spec.featureSet` (`""`: Default, or no FeatureGate).
    pub feature_set: String,
    /// The FeatureGate `cluster` (`None`: there is none), whose status names the gates.
    pub feature_gate: Option<super::feature_gates::ClusterFeatureGate>,
    /// When the pass started, to the second (condition and history times).
    pub now: Time,
}

/// What `cvo start` was told about the cluster it runs in (its flags and its pod's environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorFacts {
    /// `$CLUSTER_PROFILE`.
    pub profile: String,
    /// `$EXCLUDE_MANIFESTS`.
    pub exclude: Option<String>,
    /// `--always-enable-capabilities`.
    pub always_enable: Vec<Capability>,
}

/// What the loop remembers between passes.
#[derive(Debug, Clone, Default)]
pub struct SyncState {
    /// The previous pass's capabilities; `None` before the first pass (then the prior
    /// capabilities are the ClusterVersion's `status.capabilities.enabledCapabilities`).
    pub capabilities: Option<ClusterCapabilities>,
    /// Capabilities an upgrade implicitly enabled (spec §4.2); kept in memory as upstream does.
    pub upgrade_implicit: BTreeSet<Capability>,
    /// The payload passes apply: the one the operator started with until a requested release
    /// was loaded.
    pub current: Option<Arc<Payload>>,
    /// The requested release that could not be used, and why (`ReleaseAccepted=False`).
    pub release_failure: Option<(RequestedUpdate, LoadFailure)>,
    /// The requested release whose retrieval outlived the pass's bound and goes on in the
    /// background (`ReleaseAccepted=Unknown`, `RetrievePayload`, as upstream while it retrieves).
    pub release_retrieving: Option<RequestedUpdate>,
    /// When each ClusterOperator the payload waits on started updating (slow operators).
    pub start_times: OperatorUpdateStartTimes,
    /// The payload's deletions requested since the operator started (upstream keeps them in
    /// memory too); the unfinished ones make the cluster not upgradeable.
    pub deletions: Deletions,
    /// The risks accepted when the current payload was loaded (precondition warnings, forced
    /// failures); `None` while applying the operator's own payload.
    pub accepted_risks: Option<String>,
    /// Upstream `SyncWork.Attempt`: passes that failed in a row, which rotates the reconcile
    /// order so one stuck manifest cannot starve the others.
    pub attempt: u64,
    /// The last retrieval of updates from the update service (`None` before the first).
    pub updates: Option<AvailableUpdates>,
    /// Whether the current payload's release image had its signatures verified (false for the
    /// operator's own payload): its history entry's `verified`.
    pub verified: bool,
    /// The preflight `spec.desiredUpdate` asks for, as far as it got (`None`: none asked).
    pub preflight: Option<super::preflight_status::Preflight>,
}

impl SyncState {
    /// Makes `next` the payload passes apply, as [`accept_release`] accepted it.
    pub fn adopt(&mut self, next: Arc<Payload>, accepted: Accepted) {
        self.upgrade_implicit = accepted.implicitly_enabled;
        self.start_times.clear();
        self.accepted_risks = accepted.risks;
        self.verified = false;
        self.current = Some(next);
        self.release_failure = None;
        self.release_retrieving = None;
    }

    /// Remembers a plan's capabilities as the next pass's prior ones, before it is executed
    /// (upstream fixes them before applying: a pass cut short has enabled them all the same).
    pub fn record_capabilities(&mut self, plan: &PassPlan<'_>) {
        self.capabilities = Some(plan.capabilities.clone());
    }

    /// Remembers what a pass did: which ClusterOperators are still updating, and whether it
    /// failed (the reconcile rotation).
    pub fn record_pass(&mut self, report: &ApplyReport, now: &Time) {
        self.start_times.observe(report, now);
        self.attempt = if report.is_success() {
            0
        } else {
            self.attempt + 1
        };
    }
}

/// The sync states of spec §7.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    Initializing,
    Updating,
    Reconciling,
}

/// No Completed history ⇒ Initializing; the top entry Completed with the desired image ⇒
/// Reconciling; else Updating.
pub fn sync_mode(status: Option<&ClusterVersionStatus>, image: &str) -> SyncMode {
    let history = status.map(|s| s.history.as_slice()).unwrap_or_default();
    if !history.iter().any(|h| h.state == "Completed") {
        SyncMode::Initializing
    } else if history[0].state == "Completed" && history[0].image == image {
        SyncMode::Reconciling
    } else {
        SyncMode::Updating
    }
}

/// Everything a pass's decisions depend on: the cluster as observed, what the operator was
/// told, and what earlier passes left.
#[derive(Debug, Clone, Copy)]
pub struct PassInput<'a> {
    pub observed: &'a Observed,
    pub operator: &'a OperatorFacts,
    pub state: &'a SyncState,
}

impl PassInput<'_> {
    fn cluster_version(&self) -> &ClusterVersion {
        &self.observed.cluster_version
    }

    /// The feature gates the cluster has enabled with `payload`
    /// ([`super::feature_gates::enabled_gates`]).
    fn gates(&self, payload: &Payload) -> BTreeSet<String> {
        let gate = self.observed.feature_gate.as_ref();
        super::feature_gates::enabled_gates(gate, payload, &self.operator.profile).0
    }

    /// The capabilities of this pass with `payload` under `gates` (spec §4.3): the spec's, plus
    /// the previous pass's (or, on the first pass, `status.capabilities.enabledCapabilities`)
    /// and the always-enabled ones, plus those an upgrade enabled implicitly. The payload's
    /// registry decides which are known (openshift/api's and those it declares).
    pub fn capabilities(&self, payload: &Payload, gates: &BTreeSet<String>) -> ClusterCapabilities {
        let cv = self.cluster_version();
        let mut ensure: Vec<Capability> = match &self.state.capabilities {
            Some(caps) => caps.enabled.iter().cloned().collect(),
            None => (cv.status.as_ref())
                .and_then(|s| s.capabilities.as_ref())
                .map(|c| c.enabled_capabilities.clone())
                .unwrap_or_default(),
        };
        ensure.extend(self.operator.always_enable.iter().cloned());
        let caps = set_capabilities(
            &payload.registry(),
            cv.spec.capabilities.as_ref(),
            &ensure,
            gates,
        );
        let implicit: BTreeSet<Capability> = (caps.implicitly_enabled)
            .union(&self.state.upgrade_implicit)
            .cloned()
            .collect();
        set_from_implicitly_enabled(&implicit, caps)
    }

    /// The capabilities this cluster would have with `payload` (its registry, its feature
    /// gates), as a filter: a preflight's view of the target release.
    pub fn capability_filter(&self, payload: &Payload) -> crate::include::CapabilityFilter {
        let gates = self.gates(payload);
        self.capabilities(payload, &gates).filter()
    }

    /// This cluster's inclusion facts for `payload`, without overrides.
    fn facts(
        &self,
        payload: &Payload,
        gates: BTreeSet<String>,
        caps: &ClusterCapabilities,
    ) -> ClusterFacts {
        ClusterFacts {
            exclude: self.operator.exclude.clone(),
            feature_set: self.observed.feature_set.clone(),
            profile: self.operator.profile.clone(),
            feature_gates: Some(gates),
            capabilities: Some(caps.filter()),
            overrides: vec![],
            major_version: payload.major_version(),
        }
    }
}

/// What one pass will do.
#[derive(Debug, Clone)]
pub struct PassPlan<'p> {
    pub payload: &'p Payload,
    pub capabilities: ClusterCapabilities,
    /// The whole inclusion configuration: `manifests` passed its load-time part, each task is
    /// checked against its apply-time part.
    pub config: InclusionConfig,
    /// The load-time-included manifests, in payload order.
    pub manifests: Vec<&'p Manifest>,
    pub sync_mode: SyncMode,
    pub mode: Mode,
    pub graph: TaskGraph,
    pub workers: usize,
}

/// Plans a pass of `payload`: capabilities and feature gates are worked out once, the manifests
/// load-filtered, the task graph built for the sync mode.
pub fn plan_pass<'p>(input: &PassInput<'_>, payload: &'p Payload) -> PassPlan<'p> {
    let gates = input.gates(payload);
    let capabilities = input.capabilities(payload, &gates);
    let config = ClusterFacts {
        overrides: input.cluster_version().spec.overrides.clone(),
        ..input.facts(payload, gates, &capabilities)
    }
    .inclusion();
    let manifests = payload.included(&config.load_time());
    let status = input.cluster_version().status.as_ref();
    let sync_mode = sync_mode(status, &payload.release_image);
    let mode = match sync_mode {
        SyncMode::Initializing => Mode::Install,
        SyncMode::Updating => Mode::Update,
        SyncMode::Reconciling => Mode::Reconcile {
            attempt: input.state.attempt,
        },
    };
    let graph = TaskGraph::build(&manifests, mode);
    let workers = workers_for(mode, &graph);
    PassPlan {
        payload,
        capabilities,
        config,
        manifests,
        sync_mode,
        mode,
        graph,
        workers,
    }
}

/// Why a loaded release may be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// What moving to it enables implicitly (spec §4.2).
    pub implicitly_enabled: BTreeSet<Capability>,
    /// The risks accepted (precondition warnings, forced failures); `None` for the operator's
    /// own payload, which upstream runs no preconditions for.
    pub risks: Option<String>,
}

/// What to ask the update service while `payload` is applied (upstream `syncAvailableUpdates`):
/// `preferred` (upstream's `--update-service`) when set, else `spec.upstream`, else
/// `default_upstream`; the running architecture (`Multi` for a
/// multi-architecture payload, else the Go name of this process's); the asked one
/// (`spec.desiredUpdate.architecture`, else the running one); the payload's version. With the
/// [`Key`] whose change asks again at once.
pub fn updates_query(
    cv: &ClusterVersion,
    payload: &Payload,
    preferred: Option<&str>,
    default_upstream: &str,
) -> (Query, Key) {
    let spec = &cv.spec;
    let upstream = (preferred.filter(|u| !u.is_empty()))
        .or(spec.upstream.as_deref().filter(|u| !u.is_empty()))
        .unwrap_or(default_upstream);
    let current_arch = match payload
        .release
        .as_ref()
        .and_then(|r| r.architecture.as_deref())
    {
        Some(MULTI) => MULTI,
        _ => running_architecture(),
    };
    let desired_arch = (spec.desired_update.as_ref())
        .and_then(|u| u.architecture.as_deref())
        .filter(|a| !a.is_empty())
        .unwrap_or(current_arch);
    let query = Query {
        upstream: upstream.to_string(),
        cluster_id: spec.cluster_id.clone(),
        desired_arch: desired_arch.to_string(),
        current_arch: current_arch.to_string(),
        channel: spec.channel.clone().unwrap_or_default(),
        version: (payload.release.as_ref())
            .map(|r| r.version.clone())
            .unwrap_or_default(),
    };
    let key = Key {
        upstream: query.upstream.clone(),
        channel: query.channel.clone(),
        architecture: query.desired_arch.clone(),
    };
    (query, key)
}

/// Whether `next`, loaded for the request, may replace `current` (upstream's preconditions,
/// unless `local`: the operator's own payload), and what it enables implicitly.
pub fn accept_release(
    input: &PassInput<'_>,
    current: &Payload,
    next: &Payload,
    local: bool,
) -> Result<Accepted, LoadFailure> {
    let cv = input.cluster_version();
    let risks = if local {
        None
    } else {
        let view = ClusterView::new(
            cv,
            current.version().unwrap_or_default(),
            &current.release_image,
        );
        let force = cv.spec.desired_update.as_ref().is_some_and(|u| u.force);
        let target = next.version().unwrap_or_default();
        Some(precondition::check(&view, target, force)?.unwrap_or_default())
    };
    Ok(Accepted {
        implicitly_enabled: upgrade_implicit(input, current, next),
        risks,
    })
}

/// The capabilities implicitly enabled by moving from `current` to `next` (spec §4.2), each
/// side with its own feature gates and this pass's capabilities under them.
fn upgrade_implicit(
    input: &PassInput<'_>,
    current: &Payload,
    next: &Payload,
) -> BTreeSet<Capability> {
    let config = |payload: &Payload| {
        let gates = input.gates(payload);
        let caps = input.capabilities(payload, &gates);
        input.facts(payload, gates, &caps).inclusion()
    };
    let (current_config, next_config) = (config(current), config(next));
    let current_manifests = current.included(&current_config.load_time());
    let next_manifests = next.included(&next_config.load_time());
    implicitly_enabled(
        Side {
            manifests: &next_manifests,
            config: &next_config,
        },
        Side {
            manifests: &current_manifests,
            config: &current_config,
        },
        &input.state.upgrade_implicit,
    )
    .capabilities
}

/// The ClusterVersion status after `plan` was executed with `report`; `state` is the state
/// the pass left ([`SyncState::record_pass`] already applied); `risk_facts` what the
/// `Upgradeable` risk sources read from the cluster after the pass (so that the admin
/// ConfigMaps an install has just created count).
pub fn pass_status(
    observed: &Observed,
    plan: &PassPlan<'_>,
    report: &ApplyReport,
    state: &SyncState,
    risk_facts: &RiskFacts,
) -> ClusterVersionStatus {
    let cv = &observed.cluster_version;
    let release = plan.payload.release.as_ref();
    let desired = Release {
        version: release.map(|r| r.version.clone()),
        image: Some(plan.payload.release_image.clone()),
        url: release.and_then(|r| r.url.clone()),
        channels: release.map(|r| r.channels.clone()).unwrap_or_default(),
        architecture: release.and_then(|r| r.architecture.clone()),
    };
    // The deletions as this pass left them: one it requested is in progress at once.
    let risk_facts = RiskFacts {
        deletes_in_progress: state.deletions.in_progress(),
        ..risk_facts.clone()
    };
    let payload_load = match (&state.release_failure, &state.release_retrieving) {
        (_, Some(update)) => PayloadLoad::Retrieving(update.clone()),
        (None, None) => PayloadLoad::Loaded,
        (Some((update, failure)), None) => PayloadLoad::Failed {
            update: update.clone(),
            step: failure.step,
            error: failure.error.clone(),
        },
    };
    next_status(StatusInput {
        now: observed.now.clone(),
        previous: cv.status.as_ref(),
        generation: cv.metadata.generation,
        desired,
        version_hash: version_hash(plan.manifests.iter().copied()),
        capabilities: &plan.capabilities,
        reconciling: plan.sync_mode == SyncMode::Reconciling,
        progress: progress(report, &plan.manifests),
        updates: state.updates.as_ref(),
        start_times: &state.start_times,
        overrides: &cv.spec.overrides,
        risk_facts: &risk_facts,
        payload_load,
        validation_errors: &observed.validation_errors,
        accepted_risks: state.accepted_risks.as_deref(),
        verified: state.accepted_risks.is_some().then_some(state.verified),
        preflight: state.preflight.as_ref(),
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::cluster::UpdateHistory;

    fn entry(state: &str, image: &str) -> UpdateHistory {
        UpdateHistory {
            state: state.into(),
            started_time: Time(Timestamp::UNIX_EPOCH),
            completion_time: None,
            version: None,
            image: image.into(),
            verified: false,
            accepted_risks: None,
        }
    }

    #[test]
    fn sync_modes() {
        assert_eq!(sync_mode(None, "a"), SyncMode::Initializing);
        let mut s = ClusterVersionStatus {
            history: vec![entry("Partial", "a")],
            ..Default::default()
        };
        assert_eq!(sync_mode(Some(&s), "a"), SyncMode::Initializing);
        s.history = vec![entry("Completed", "a")];
        assert_eq!(sync_mode(Some(&s), "a"), SyncMode::Reconciling);
        assert_eq!(sync_mode(Some(&s), "b"), SyncMode::Updating);
        s.history = vec![entry("Partial", "b"), entry("Completed", "a")];
        assert_eq!(sync_mode(Some(&s), "b"), SyncMode::Updating);
    }

    use crate::capability::{CapabilitiesSpec, Registry};
    use crate::cluster::{ClusterOperatorStatusCondition, ClusterVersionSpec, Update};
    use crate::operator::outcome::{Effect, PayloadLoadStep, TaskError};
    use crate::payload::{LoadOptions, read_directory};

    fn payload(version: &str) -> Payload {
        let dir = format!("{}/payloads/{version}", env!("CARGO_MANIFEST_DIR"));
        let input = read_directory(std::path::Path::new(&dir)).expect("readable");
        let options = LoadOptions {
            release_image: Some(format!("example.com/release:{version}")),
            ..Default::default()
        };
        Payload::from_input(input, &options).expect("loads")
    }

    #[test]
    fn the_preferred_update_service_overrides_spec_upstream() {
        let p = payload("4.17.0");
        let mut observed = cluster(&[], vec![]);
        let asked = |cv: &ClusterVersion, preferred| {
            updates_query(cv, &p, preferred, "https://default/graph")
                .0
                .upstream
        };
        let cv = &mut observed.cluster_version;
        assert_eq!(asked(cv, None), "https://default/graph");
        cv.spec.upstream = Some("https://spec/graph".into());
        assert_eq!(asked(cv, None), "https://spec/graph");
        assert_eq!(asked(cv, Some("")), "https://spec/graph");
        assert_eq!(asked(cv, Some("https://flag/graph")), "https://flag/graph");
        cv.spec.upstream = None;
        assert_eq!(asked(cv, Some("https://flag/graph")), "https://flag/graph");
    }

    fn cluster(additional: &[&str], history: Vec<UpdateHistory>) -> Observed {
        let mut cv = ClusterVersion::new(
            "version",
            ClusterVersionSpec {
                cluster_id: "0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a61".into(),
                capabilities: Some(CapabilitiesSpec {
                    baseline_capability_set: Some("None".into()),
                    additional_enabled_capabilities: additional
                        .iter()
                        .map(|c| Capability::new(*c))
                        .collect(),
                }),
                ..Default::default()
            },
        );
        cv.status = Some(ClusterVersionStatus {
            history,
            ..Default::default()
        });
        Observed {
            cluster_version: cv,
            validation_errors: vec![],
            feature_set: String::new(),
            feature_gate: None,
            now: Time(Timestamp::UNIX_EPOCH),
        }
    }

    fn caps(names: &[&str]) -> BTreeSet<Capability> {
        names.iter().map(|c| Capability::new(*c)).collect()
    }

    #[test]
    fn a_fresh_cluster_plans_an_install_of_its_capabilities() {
        let payload = payload("4.18.0");
        let observed = cluster(&["Console"], vec![]);
        let state = SyncState::default();
        let operator = OperatorFacts::default();
        let input = PassInput {
            observed: &observed,
            operator: &operator,
            state: &state,
        };
        let plan = plan_pass(&input, &payload);
        assert_eq!(plan.sync_mode, SyncMode::Initializing);
        assert_eq!(plan.mode, Mode::Install);
        assert!(
            plan.capabilities
                .enabled
                .contains(&Capability::new("Console"))
        );
        assert!(
            !plan
                .capabilities
                .enabled
                .contains(&Capability::new("baremetal"))
        );
        // The manifests passed the load-time filters only: a disabled capability's manifests
        // are planned, and skipped per task at apply time.
        let baremetal = (plan.manifests.iter())
            .filter(|m| {
                m.capabilities()
                    .unwrap_or_default()
                    .contains(&Capability::new("baremetal"))
            })
            .collect::<Vec<_>>();
        assert!(!baremetal.is_empty(), "4.18.0 has baremetal manifests");
        let apply_time = plan.config.apply_time();
        for m in baremetal {
            assert!(
                crate::include::include(m, &apply_time).is_err(),
                "{}",
                m.describe()
            );
        }
        assert_eq!(plan.config.major_version, Some(4));
        let tasks: usize = plan.graph.nodes.iter().map(|n| n.tasks.len()).sum();
        assert_eq!(
            tasks,
            plan.manifests.len(),
            "one graph, every manifest once"
        );
    }

    #[test]
    fn prior_and_always_enabled_capabilities_stay_enabled() {
        let payload = payload("4.18.0");
        let observed = cluster(&[], vec![entry("Completed", "example.com/release:4.18.0")]);
        let state = SyncState {
            capabilities: Some(set_capabilities(
                &Registry::standard(),
                None,
                &[Capability::new("Console")],
                &BTreeSet::new(),
            )),
            ..Default::default()
        };
        let operator = OperatorFacts {
            always_enable: vec![Capability::new("Insights")],
            ..Default::default()
        };
        let input = PassInput {
            observed: &observed,
            operator: &operator,
            state: &state,
        };
        let plan = plan_pass(&input, &payload);
        assert_eq!(plan.sync_mode, SyncMode::Reconciling);
        assert_eq!(plan.mode, Mode::Reconcile { attempt: 0 });
        let enabled = &plan.capabilities.enabled;
        assert!(
            enabled.contains(&Capability::new("Console")),
            "enable-not-disable"
        );
        assert!(
            enabled.contains(&Capability::new("Insights")),
            "always enabled"
        );
        assert!(
            plan.capabilities
                .implicitly_enabled
                .contains(&Capability::new("Console"))
        );
    }

    #[test]
    fn recording_a_pass_keeps_capabilities_and_counts_failures() {
        let payload = payload("4.18.0");
        let observed = cluster(&["Console"], vec![]);
        let mut state = SyncState::default();
        let operator = OperatorFacts::default();
        let plan = plan_pass(
            &PassInput {
                observed: &observed,
                operator: &operator,
                state: &state,
            },
            &payload,
        );
        let failed = ApplyReport {
            errors: vec![TaskError {
                task: "configmap \"a/b\" (1 of 1)".into(),
                reason: "UpdatePayloadFailed".into(),
                message: "Could not update configmap \"a/b\" (1 of 1)".into(),
                error: "boom".into(),
                effect: Effect::Fail,
                name: None,
            }],
            ..Default::default()
        };
        state.record_pass(&failed, &observed.now);
        state.record_pass(&failed, &observed.now);
        assert_eq!(state.attempt, 2);
        assert_eq!(state.capabilities, None, "recorded when planned, not here");
        state.record_capabilities(&plan);
        assert_eq!(state.capabilities.as_ref(), Some(&plan.capabilities));
        state.record_pass(&ApplyReport::default(), &observed.now);
        assert_eq!(state.attempt, 0);
    }

    #[test]
    fn accepting_an_upgrade_enables_moved_capabilities_implicitly() {
        let (old, new) = (payload("4.17.0"), payload("4.18.0"));
        let history = vec![entry("Completed", &old.release_image)];
        let mut observed = cluster(&["Console"], history);
        let state = SyncState::default();
        let operator = OperatorFacts::default();
        let input = PassInput {
            observed: &observed,
            operator: &operator,
            state: &state,
        };
        let accepted = accept_release(&input, &old, &new, false).expect("accepted");
        assert_eq!(accepted.implicitly_enabled, caps(&["MachineAPI"]));
        // Without a channel the recommended-update precondition warns; the warning is a risk.
        assert_eq!(
            accepted.risks.as_deref(),
            Some(
                "Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"NoChannel\": Configured channel is unset, so the recommended status of updating from 4.17.0 to 4.18.0 is unknown."
            )
        );
        let local = accept_release(&input, &old, &new, true).expect("accepted");
        assert_eq!(
            local.risks, None,
            "no preconditions for the operator's own payload"
        );

        // Upgradeable=False blocks a minor update: the precondition's failure, upstream's step.
        let status = observed.cluster_version.status.as_mut().expect("status");
        status.desired = Some(Release {
            version: Some("4.17.0".into()),
            image: Some(old.release_image.clone()),
            ..Default::default()
        });
        status.conditions.push(
            ClusterOperatorStatusCondition::new("Upgradeable", "False", observed.now.clone())
                .because("Blocked", "an admin says no"),
        );
        observed.cluster_version.spec.desired_update = Some(Update {
            version: Some("4.18.0".into()),
            ..Default::default()
        });
        let input = PassInput {
            observed: &observed,
            operator: &operator,
            state: &state,
        };
        let refused = accept_release(&input, &old, &new, false).unwrap_err();
        assert_eq!(refused.step, PayloadLoadStep::PreconditionChecks);
        assert!(
            refused.error.contains("an admin says no"),
            "{}",
            refused.error
        );
    }

    /// A payload with a capability of its own, `Widgets` (in no baseline set: opt-in), and one
    /// manifest of it.
    fn widgets_payload() -> Payload {
        let file = |name: &str, text: &str| crate::payload::InputFile {
            name: name.into(),
            contents: Ok(text.as_bytes().to_vec()),
        };
        let input = crate::payload::PayloadInput {
            origin: "test".into(),
            layout: crate::payload::Layout::PayloadRoot,
            manifests: vec![],
            release_manifests: vec![file(
                "0000_50_widgets_00_namespace.yaml",
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: widgets\n  annotations:\n    capability.openshift.io/name: Widgets\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n",
            )],
            release_metadata: Some(file(
                "release-metadata",
                r#"{"kind":"cincinnati-metadata-v0","version":"4.19.0","metadata":{"capabilities.cvo.openshift.io/declared":[{"name":"Widgets","description":"The widget API."}]}}"#,
            )),
            image_references: None,
        };
        Payload::from_input(input, &LoadOptions::default()).expect("loads")
    }

    #[test]
    fn a_declared_capability_is_known_and_follows_the_baseline() {
        let payload = widgets_payload();
        let widgets = Capability::new("Widgets");
        let operator = OperatorFacts::default();
        let state = SyncState::default();
        let none = cluster(&[], vec![]);
        let input = PassInput {
            observed: &none,
            operator: &operator,
            state: &state,
        };
        let plan = plan_pass(&input, &payload);
        assert!(plan.capabilities.known.contains(&widgets));
        assert!(!plan.capabilities.enabled.contains(&widgets));
        assert_eq!(plan.manifests.len(), 1, "planned; skipped per task");
        let apply_time = plan.config.apply_time();
        assert_eq!(
            crate::include::include(plan.manifests[0], &apply_time)
                .unwrap_err()
                .to_string(),
            "disabled capabilities: Widgets"
        );

        // The default baseline, vCurrent, does not have it either: only asking for it enables it.
        let mut current = cluster(&[], vec![]);
        current.cluster_version.spec.capabilities = None;
        let input = PassInput {
            observed: &current,
            operator: &operator,
            state: &state,
        };
        let plan = plan_pass(&input, &payload);
        assert!(plan.capabilities.known.contains(&widgets));
        assert!(
            !plan.capabilities.enabled.contains(&widgets),
            "vCurrent does not have it"
        );
        let asked = cluster(&["Widgets"], vec![]);
        let input = PassInput {
            observed: &asked,
            operator: &operator,
            state: &state,
        };
        let plan = plan_pass(&input, &payload);
        assert!(plan.capabilities.enabled.contains(&widgets));
        assert!(crate::include::include(plan.manifests[0], &plan.config.apply_time()).is_ok());
        // An upstream CVO does not know it.
        assert!(!Registry::standard().is_known(&widgets));
    }
}
