//! The per-node node management worker (spec B.2; anax `nodemanagement` and the download
//! worker) as a deterministic state machine: plain data in, statuses out, with the clock (Unix
//! seconds) and the random source passed in, and downloads and the installer as callbacks.
//!
//! - [`Worker::sync`] (anax `ProcessAllNMPS`): a status per applicable, enabled policy,
//!   `waiting`, scheduled uniformly in `[start, start+startWindow)`; statuses of policies that
//!   are gone, disabled or no longer apply are removed.
//! - [`Worker::monitor`] (`checkNMPTimeToRun`, every 60 s): nothing while a job is active; else
//!   the due `waiting` status scheduled **latest** starts (`download started`).
//! - [`Worker::download`] (`DownloadAgentUpgradePackages`, `ResolveUpgradeVersions`,
//!   `DownloadComplete`): per kind (software, config, cert) the manifest's version (exact,
//!   `latest`, range) against the node's; upgrade, skip when equal, downgrade only with
//!   `allowDowngrade` and no later-scheduled policy for that kind; then `no action required`,
//!   `precheck failed`, `downloaded` (`ha node waiting` in an HA group), or after a failed
//!   download `waiting` again until 4 retries were made (5 tries), then `download failed`.
//! - The installer: `initiated`, then `successful`, or `failed` and a rollback.
//! - [`Worker::reset`], [`Worker::restart`], [`Worker::versions_changed`] (re-arming the
//!   policies that asked for `latest` when the hub's versions change).
//!
//! [`Worker::tick`] runs one monitor period: the active job advances one step, then the
//! monitor may start the next job. Every status change is logged as a [`Transition`].

use std::collections::{BTreeMap, BTreeSet};

use rand08::Rng;

use super::agent_files::{self, AgentFileVersions, FileKind, UpgradeManifest};
use super::exchange::NodePolicy;
use super::nmp::{self, ManagementPolicy};
use super::nmp_status::{
    AgentUpgradeInternal, AgentUpgradePolicyStatus, LatestMap, PolicyStatus, Status,
    UpgradedVersions, ZERO_TIME, rfc3339,
};
use super::version;

/// A failed download goes back to `waiting` while fewer retries than this were made (anax
/// `DownloadAttempts < 4`): five tries in all. (anax's log line says "3 times"; the code
/// allows five.)
pub const MAX_DOWNLOAD_RETRIES: u32 = 4;
/// The monitor's period, seconds (anax's `NMPMonitor` subworker).
pub const MONITOR_PERIOD: i64 = 60;
/// The org of the CSS objects that hold the agent files (anax `CSSSHAREDORG`).
pub const CSS_SHARED_ORG: &str = "IBM";

/// What the worker knows about its node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeState {
    /// `org/name` of the node's pattern; empty for a policy node.
    pub pattern: String,
    pub cluster: bool,
    /// The node's HA group; empty for none.
    pub ha_group: String,
    /// The agent's current versions per kind; missing is unknown (any version upgrades it).
    pub versions: BTreeMap<FileKind, String>,
    /// The software files the node needs ([`agent_files::software_files`]), or why there are none.
    pub software_files: Vec<String>,
    pub software_files_error: Option<String>,
}

impl NodeState {
    fn version(&self, kind: FileKind) -> &str {
        self.versions.get(&kind).map_or("", String::as_str)
    }
}

/// What the hub offers: the node's org, the available versions, the upgrade manifests (by
/// `id` in the node's org, by `org/id` in another).
#[derive(Debug, Clone, Copy)]
pub struct Hub<'a> {
    pub org: &'a str,
    pub versions: &'a AgentFileVersions,
    pub manifests: &'a BTreeMap<String, UpgradeManifest>,
}

impl Hub<'_> {
    /// A manifest named `org/id` or `id` (then in the node's org): its org, id and content.
    /// As anax's download worker does, a manifest is fetched from its own org (the usual hub
    /// keeps them in `IBM`): [`Hub::manifests`] holds the node's org's by `id` and another
    /// org's by `org/id`.
    fn manifest(&self, name: &str) -> (String, String, Option<&UpgradeManifest>) {
        let (org, id) = name.split_once('/').unwrap_or((self.org, name));
        let found = match org == self.org {
            true => self.manifests.get(id),
            false => None,
        }
        .or_else(|| self.manifests.get(&format!("{org}/{id}")));
        (org.to_owned(), id.to_owned(), found)
    }
}

/// One status change: `from` `None` is a status created, `to` `None` one removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub at: i64,
    pub nmp: String,
    pub from: Option<Status>,
    pub to: Option<Status>,
}

/// How a download ended (anax's `NMPDownloadCompleteMessage`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum DownloadOutcome {
    NoAction,
    Downloaded(Vec<(FileKind, String)>),
    PrecheckFailed(String),
    DownloadFailed(String),
}

/// What a download records besides its outcome, when known: the versions it resolved (tried)
/// and which kinds the manifest asked as `latest`. A failed job keeps both, so that a new
/// `latest` can re-arm it when it is not what it tried.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Recorded {
    save: Option<UpgradedVersions>,
    latest: Option<LatestMap>,
}

/// What a job will download: per kind the version and the files, the files the manifest
/// does not list, and what the status records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub kinds: Vec<(FileKind, String)>,
    /// (kind, CSS object type, file name), in anax's order.
    pub downloads: Vec<(FileKind, String, String)>,
    pub missing: Vec<String>,
    pub manifest: String,
    pub save: UpgradedVersions,
    pub latest: LatestMap,
}

#[derive(Debug, Clone, Default)]
pub struct Worker {
    pub node: NodeState,
    /// The agent's node management working directory, recorded in each status.
    pub working_dir: String,
    pub statuses: BTreeMap<String, PolicyStatus>,
    /// Per downloaded job, the kinds and versions the installer will change.
    planned: BTreeMap<String, Vec<(FileKind, String)>>,
    pub log: Vec<Transition>,
}

impl Worker {
    pub fn new(node: NodeState, working_dir: &str) -> Self {
        Worker {
            node,
            working_dir: working_dir.to_owned(),
            ..Worker::default()
        }
    }

    /// Takes over statuses kept from before (the agent's database, or a previous run's): a
    /// job already downloaded will install the recorded versions the download chose. The
    /// status records the software version even when it was not chosen (anax's
    /// `versionsToSave`), so the download's decision (`wants`) is made again per
    /// recorded version: a recorded downgrade without `allowDowngrade` is not installed.
    pub fn restore(&mut self, statuses: BTreeMap<String, PolicyStatus>, hub: &Hub) {
        self.planned.clear();
        self.statuses = statuses;
        let names: Vec<String> = self.statuses.keys().cloned().collect();
        for name in names {
            let kinds = self.replanned(&name, hub);
            if !kinds.is_empty() {
                self.planned.insert(name, kinds);
            }
        }
    }

    /// The recorded versions of a status that its download would install.
    fn replanned(&self, name: &str, hub: &Hub) -> Vec<(FileKind, String)> {
        let Some(status) = self.statuses.get(name) else {
            return Vec::new();
        };
        let v = &status.agent_upgrade.upgraded_versions;
        [
            (FileKind::Software, &v.software_version),
            (FileKind::Config, &v.config_version),
            (FileKind::Cert, &v.cert_version),
        ]
        .into_iter()
        .filter(|(kind, version)| {
            !version.is_empty() && self.wants(name, status, *kind, version, hub) == Ok(true)
        })
        .map(|(kind, version)| (kind, version.clone()))
        .collect()
    }

    /// The agent starts with statuses kept from before (anax `Initialize`, in its order): the
    /// policies are processed, `download started` goes back to `waiting`, statuses the
    /// exchange set to `reset` are reset, and the hub's versions are checked for a new
    /// `latest`. Returns the deferred statuses of that last check.
    pub fn start(
        &mut self,
        nmps: &BTreeMap<String, ManagementPolicy>,
        node_policy: Option<&NodePolicy>,
        versions: &AgentFileVersions,
        now: i64,
        rng: &mut impl Rng,
    ) -> Vec<String> {
        self.sync(nmps, node_policy, now, rng);
        self.restart(now);
        let reset: Vec<String> = (self.statuses.iter())
            .filter(|(_, s)| s.status() == Status::Reset)
            .map(|(name, _)| name.clone())
            .collect();
        for name in reset {
            self.reset(&name, now);
        }
        self.versions_changed(versions, nmps, now, rng)
    }

    /// The statuses of jobs in progress (at most one, by construction).
    pub fn active(&self) -> Vec<&str> {
        (self.statuses.iter())
            .filter(|(_, s)| s.status().is_active())
            .map(|(name, _)| name.as_str())
            .collect()
    }

    fn set(&mut self, name: &str, to: Status, at: i64) {
        if let Some(status) = self.statuses.get_mut(name) {
            let from = status.status();
            status.agent_upgrade.status = to;
            self.log.push(Transition {
                at,
                nmp: name.to_owned(),
                from: Some(from),
                to: Some(to),
            });
        }
    }

    fn remove(&mut self, name: &str, at: i64) {
        if let Some(status) = self.statuses.remove(name) {
            self.planned.remove(name);
            self.log.push(Transition {
                at,
                nmp: name.to_owned(),
                from: Some(status.status()),
                to: None,
            });
        }
    }

    /// anax `ProcessAllNMPS`: `nmps` are the org's policies by `org/name`.
    pub fn sync(
        &mut self,
        nmps: &BTreeMap<String, ManagementPolicy>,
        node_policy: Option<&NodePolicy>,
        now: i64,
        rng: &mut impl Rng,
    ) {
        // anax's worker hands an empty policy, never none, to `VerifyCompatible` when the node
        // has no policy: an NMP without constraints then applies to it.
        let empty = NodePolicy::default();
        let node_policy = Some(node_policy.unwrap_or(&empty));
        let mut matching = BTreeSet::new();
        for (name, policy) in nmps {
            if !nmp::applies(node_policy, &self.node.pattern, policy) {
                continue;
            }
            matching.insert(name.as_str());
            if !policy.enabled {
                self.remove(name, now);
            } else if !self.statuses.contains_key(name) {
                let status = new_status(policy, &self.working_dir, now, rng);
                self.statuses.insert(name.clone(), status);
                self.log.push(Transition {
                    at: now,
                    nmp: name.clone(),
                    from: None,
                    to: Some(Status::Waiting),
                });
            }
        }
        let stale: Vec<String> = (self.statuses.keys())
            .filter(|name| !matching.contains(name.as_str()))
            .cloned()
            .collect();
        for name in stale {
            self.remove(&name, now);
        }
    }

    /// anax `checkNMPTimeToRun`: promotes `ha node waiting` when the node may run (no HA group,
    /// or its turn in the group) and then starts nothing in this period; nothing while a job is
    /// downloading, downloaded or initiated (a `rollback started` does not wait); else starts the due `waiting`
    /// status scheduled strictly before `now` (anax `TimeToStart`: `Before(now)`) with the latest
    /// scheduled time (a tie goes to the last name). Returns it.
    pub fn monitor(&mut self, now: i64, ha_turn: bool) -> Option<String> {
        let ha_waiting: Vec<String> = (self.statuses.iter())
            .filter(|(_, s)| s.status() == Status::HaNodeWaiting)
            .map(|(name, _)| name.clone())
            .collect();
        if self.node.ha_group.is_empty() || ha_turn {
            for name in &ha_waiting {
                self.set(name, Status::Downloaded, now);
            }
        }
        // anax ends the period after looking at the HA statuses, and waits while a job is
        // downloading, downloaded or initiated; `rollback started` does not hold it.
        let blocking = |s: Status| {
            matches!(
                s,
                Status::DownloadStarted
                    | Status::Downloaded
                    | Status::Initiated
                    | Status::HaNodeWaiting
            )
        };
        if !ha_waiting.is_empty() || self.statuses.values().any(|s| blocking(s.status())) {
            return None;
        }
        let next = (self.statuses.iter())
            .filter(|(_, s)| s.status() == Status::Waiting && s.internal.scheduled_unix_time < now)
            .max_by_key(|(_, s)| s.internal.scheduled_unix_time)
            .map(|(name, _)| name.clone())?;
        self.set(&next, Status::DownloadStarted, now);
        Some(next)
    }

    /// What a job would download (anax `DownloadAgentUpgradePackages` up to the downloads), or
    /// the `precheck failed` message.
    pub fn plan(&self, name: &str, hub: &Hub) -> Result<Plan, String> {
        let status = self
            .statuses
            .get(name)
            .ok_or_else(|| format!("no status for {name}"))?;
        if let Some(error) = &self.node.software_files_error {
            return Err(error.clone());
        }
        let (org, id, manifest) = hub.manifest(&status.internal.manifest);
        let manifest = manifest.ok_or_else(|| {
            format!("Failed to get the upgrade manifest {org}/{id}: no object of type agent_upgrade_manifests with that id")
        })?;
        // Per kind, the version the manifest asks for among the hub's.
        let mut resolved = BTreeMap::new();
        for kind in FileKind::ALL {
            let wanted = &manifest.of(kind).version;
            if !wanted.is_empty() {
                let found = agent_files::best_matching_version(hub.versions.of(kind), wanted)
                    .map_err(|e| e.to_string())?;
                resolved.insert(kind, found);
            }
        }
        let mut plan = Plan {
            manifest: format!("{org}/{id}"),
            latest: latest_map(manifest),
            ..Plan::default()
        };
        for (&kind, wanted) in &resolved {
            if kind == FileKind::Software && self.meets(manifest.software_minimum.as_deref()) {
                continue;
            }
            if self.wants(name, status, kind, wanted, hub)? {
                plan.kinds.push((kind, wanted.clone()));
            }
        }
        for (kind, wanted) in &plan.kinds {
            let css_type = format!("{}-{wanted}", kind.css_type());
            let files = match kind {
                FileKind::Software => self.node.software_files.clone(),
                FileKind::Config => vec![agent_files::CONFIG_FILE.to_owned()],
                FileKind::Cert => vec![agent_files::CERT_FILE.to_owned()],
            };
            for file in files {
                match manifest.lists(*kind, &file) {
                    true => plan.downloads.push((*kind, css_type.clone(), file)),
                    false => plan.missing.push(file),
                }
            }
        }
        // The software version the manifest names is recorded whether or not it is installed;
        // config and cert only when downloaded (anax's `versionsToSave`).
        let downloaded = |kind| {
            (plan.kinds.iter())
                .find(|(k, _)| *k == kind)
                .map_or_else(String::new, |(_, v)| v.clone())
        };
        plan.save = UpgradedVersions {
            software_version: resolved
                .get(&FileKind::Software)
                .cloned()
                .unwrap_or_default(),
            config_version: downloaded(FileKind::Config),
            cert_version: downloaded(FileKind::Cert),
        };
        Ok(plan)
    }

    /// Whether the agent is already at the seed's `atLeastVersion` or newer: then its
    /// software is left as it is (a minimum, not a target).
    fn meets(&self, minimum: Option<&str>) -> bool {
        let current = self.node.version(FileKind::Software);
        minimum.is_some_and(|minimum| {
            version::compare_versions(current, minimum).is_ok_and(|o| o != std::cmp::Ordering::Less)
        })
    }

    /// anax `ResolveUpgradeVersions` for one kind: newer than the node's → yes; equal → no;
    /// older → only with `allowDowngrade` and no policy scheduled later that sets this kind.
    fn wants(
        &self,
        name: &str,
        status: &PolicyStatus,
        kind: FileKind,
        wanted: &str,
        hub: &Hub,
    ) -> Result<bool, String> {
        let current = match self.node.version(kind) {
            "local build" if kind == FileKind::Software => "0.0.0",
            other => other,
        };
        match version::compare_versions(current, wanted) {
            Err(e) if !current.is_empty() => Err(format!(
                "Error checking upgrade version against current node version: {e}"
            )),
            Ok(std::cmp::Ordering::Greater) => {
                Ok(status.internal.allow_downgrade
                    && !self.later_policy_sets(name, status, kind, hub))
            }
            Ok(std::cmp::Ordering::Equal) => Ok(false),
            _ => Ok(true),
        }
    }

    /// Whether another policy of this node, scheduled after this one, sets the kind (anax
    /// `FindNodeUpgradeStatusesWithTypeAfterTime`): then a downgrade would undo it.
    fn later_policy_sets(
        &self,
        name: &str,
        status: &PolicyStatus,
        kind: FileKind,
        hub: &Hub,
    ) -> bool {
        (self.statuses.iter()).any(|(other, s)| {
            other != name
                && s.internal.scheduled_unix_time > status.internal.scheduled_unix_time
                && hub
                    .manifest(&s.internal.manifest)
                    .2
                    .is_some_and(|m| !m.of(kind).version.is_empty())
        })
    }

    /// Runs the download of a `download started` job: `fetch(kind, css_type, file)` gets one
    /// CSS object (`IBM/<css_type>/<file>`).
    pub fn download(
        &mut self,
        name: &str,
        hub: &Hub,
        now: i64,
        fetch: &mut impl FnMut(FileKind, &str, &str) -> Result<(), String>,
    ) {
        let (outcome, recorded) = match self.plan(name, hub) {
            // The manifest, when there is one, still says which kinds asked for `latest`: a
            // `latest` that had no versions is re-armed when versions appear.
            Err(message) => {
                let latest = (self.statuses.get(name))
                    .and_then(|s| hub.manifest(&s.internal.manifest).2)
                    .map(latest_map);
                let recorded = Recorded { save: None, latest };
                (DownloadOutcome::PrecheckFailed(message), recorded)
            }
            Ok(plan) => {
                let outcome = fetch_all(&plan, fetch).unwrap_or_else(|| {
                    if plan.kinds.is_empty() {
                        DownloadOutcome::NoAction
                    } else if plan.missing.is_empty() {
                        DownloadOutcome::Downloaded(plan.kinds.clone())
                    } else {
                        DownloadOutcome::PrecheckFailed(format!(
                            "The following package or file names are not listed in the manifest {}: {}",
                            plan.manifest,
                            plan.missing.join(", ")
                        ))
                    }
                });
                let recorded = Recorded {
                    save: Some(plan.save),
                    latest: Some(plan.latest),
                };
                (outcome, recorded)
            }
        };
        self.download_complete(name, outcome, recorded, now);
    }

    /// anax `DownloadComplete`: the outcome, and what was recorded when known.
    fn download_complete(
        &mut self,
        name: &str,
        outcome: DownloadOutcome,
        recorded: Recorded,
        now: i64,
    ) {
        let Some(status) = self.statuses.get_mut(name) else {
            return;
        };
        if let Some(save) = recorded.save {
            status.agent_upgrade.upgraded_versions = save;
        }
        if let Some(latest) = recorded.latest {
            status.internal.latest_map = latest;
        }
        let to = match outcome {
            DownloadOutcome::NoAction => Status::NoActionRequired,
            DownloadOutcome::Downloaded(kinds) => {
                self.planned.insert(name.to_owned(), kinds);
                match self.node.ha_group.is_empty() {
                    true => Status::Downloaded,
                    false => Status::HaNodeWaiting,
                }
            }
            DownloadOutcome::PrecheckFailed(message) => {
                status.agent_upgrade.error_message = message;
                Status::PrecheckFailed
            }
            DownloadOutcome::DownloadFailed(_)
                if status.internal.download_attempts < MAX_DOWNLOAD_RETRIES =>
            {
                status.internal.download_attempts += 1;
                Status::Waiting
            }
            DownloadOutcome::DownloadFailed(message) => {
                status.agent_upgrade.error_message = message;
                Status::DownloadFailed
            }
        };
        self.set(name, to, now);
    }

    /// The installer takes a `downloaded` job: `initiated`, with its start time.
    pub fn initiate(&mut self, name: &str, now: i64) {
        if let Some(status) = self.statuses.get_mut(name) {
            status.agent_upgrade.start_time = rfc3339(now);
            self.set(name, Status::Initiated, now);
        }
    }

    /// The installer ends an `initiated` job: `successful` (the node now runs the downloaded
    /// versions), or `failed` with its message and a rollback started.
    pub fn finish(&mut self, name: &str, now: i64, result: Result<(), String>) {
        let Some(status) = self.statuses.get_mut(name) else {
            return;
        };
        status.agent_upgrade.end_time = rfc3339(now);
        match result {
            Ok(()) => {
                for (kind, version) in self.planned.remove(name).unwrap_or_default() {
                    self.node.versions.insert(kind, version);
                }
                self.set(name, Status::Successful, now);
            }
            Err(message) => {
                status.agent_upgrade.error_message = message;
                self.set(name, Status::Failed, now);
                self.set(name, Status::RollbackStarted, now);
            }
        }
    }

    /// The rollback of a failed job ends.
    pub fn rolled_back(&mut self, name: &str, now: i64, result: Result<(), String>) {
        self.planned.remove(name);
        match result {
            Ok(()) => self.set(name, Status::RollbackSuccessful, now),
            Err(message) => {
                if let Some(status) = self.statuses.get_mut(name) {
                    status.agent_upgrade.error_message = message;
                }
                self.set(name, Status::RollbackFailed, now)
            }
        }
    }

    /// The exchange says `reset` (`hzn exchange node management reset`, `hzn nmstatus reset`):
    /// `waiting` again, times and download tries cleared. False when there is no such status.
    pub fn reset(&mut self, name: &str, now: i64) -> bool {
        let Some(status) = self.statuses.get_mut(name) else {
            return false;
        };
        status.agent_upgrade.start_time.clear();
        status.agent_upgrade.end_time.clear();
        status.internal.download_attempts = 0;
        self.planned.remove(name);
        self.set(name, Status::Waiting, now);
        true
    }

    /// The agent starts: a download cut short (`download started`) is tried again.
    pub fn restart(&mut self, now: i64) {
        let started: Vec<String> = (self.statuses.iter())
            .filter(|(_, s)| s.status() == Status::DownloadStarted)
            .map(|(name, _)| name.clone())
            .collect();
        for name in started {
            self.set(&name, Status::Waiting, now);
        }
    }

    /// anax `HandleAgentFilesVersionChange`: the hub's versions changed; the statuses whose
    /// manifest asked for `latest` are evaluated again. Active jobs (`ha node waiting`
    /// included) are deferred (returned); failed ones are re-armed unless the new latest is
    /// what they tried; the others unless the node already runs it. A re-armed status is
    /// `waiting` with its times and download tries cleared, scheduled again in the policy's
    /// window from now (spec B.2; anax's code counts from the policy's `lastUpdated`, which
    /// would make the job due at once).
    pub fn versions_changed(
        &mut self,
        versions: &AgentFileVersions,
        nmps: &BTreeMap<String, ManagementPolicy>,
        now: i64,
        rng: &mut impl Rng,
    ) -> Vec<String> {
        let mut deferred = Vec::new();
        let names: Vec<String> = self.statuses.keys().cloned().collect();
        for name in names {
            let status = &self.statuses[&name];
            let latest = status.internal.latest_map;
            if !latest.any() || status.status() == Status::Waiting {
                continue;
            }
            if status.status().is_active() {
                deferred.push(name);
                continue;
            }
            let done = match status.status().is_failure() {
                true => {
                    let tried = &status.agent_upgrade.upgraded_versions;
                    is_latest(versions, latest, |kind| match kind {
                        FileKind::Software => tried.software_version.clone(),
                        FileKind::Config => tried.config_version.clone(),
                        FileKind::Cert => tried.cert_version.clone(),
                    })
                }
                false => is_latest(versions, latest, |kind| self.node.version(kind).to_owned()),
            };
            if done {
                continue;
            }
            let at =
                (nmps.get(&name)).map(|p| scheduled_start("now", "", p.start_window, now, rng));
            if let Some(status) = self.statuses.get_mut(&name) {
                if let Some(at) = at {
                    status.internal.scheduled_unix_time = at;
                    status.agent_upgrade.scheduled_time = rfc3339(at);
                }
                status.agent_upgrade.start_time.clear();
                status.agent_upgrade.end_time.clear();
                status.internal.download_attempts = 0;
            }
            self.set(&name, Status::Waiting, now);
        }
        deferred
    }

    /// One monitor period at `now`: the active job advances one step (download, install,
    /// rollback), then the monitor may start the next job.
    pub fn tick(
        &mut self,
        now: i64,
        hub: &Hub,
        ha_turn: bool,
        fetch: &mut impl FnMut(FileKind, &str, &str) -> Result<(), String>,
        install: &mut impl FnMut(&[(FileKind, String)]) -> Result<(), String>,
    ) {
        let active = (self.statuses.iter())
            .find(|(_, s)| s.status().is_active())
            .map(|(name, s)| (name.clone(), s.status()));
        match active {
            Some((name, Status::DownloadStarted)) => self.download(&name, hub, now, fetch),
            Some((name, Status::Downloaded)) => self.initiate(&name, now),
            Some((name, Status::Initiated)) => {
                let kinds = self.planned.get(&name).cloned().unwrap_or_default();
                self.finish(&name, now, install(&kinds));
            }
            Some((name, Status::RollbackStarted)) => self.rolled_back(&name, now, Ok(())),
            _ => {}
        }
        self.monitor(now, ha_turn);
    }
}

/// Which kinds a manifest asks as `latest` (anax `checkForLatestKeywords`).
fn latest_map(manifest: &UpgradeManifest) -> LatestMap {
    LatestMap {
        software_latest: manifest.is_latest(FileKind::Software),
        config_latest: manifest.is_latest(FileKind::Config),
        cert_latest: manifest.is_latest(FileKind::Cert),
    }
}

/// Fetches the plan's files in order; the first failure is the job's `download failed`.
fn fetch_all(
    plan: &Plan,
    fetch: &mut impl FnMut(FileKind, &str, &str) -> Result<(), String>,
) -> Option<DownloadOutcome> {
    for (kind, css_type, file) in &plan.downloads {
        if let Err(e) = fetch(*kind, css_type, file) {
            return Some(DownloadOutcome::DownloadFailed(format!(
                "Error downloading css object {CSS_SHARED_ORG}/{css_type}/{file}: {e}"
            )));
        }
    }
    None
}

/// Whether, for every kind asked as `latest`, `version(kind)` is the hub's highest (anax
/// `IsVersionLatest`: no versions available counts as latest).
fn is_latest(
    versions: &AgentFileVersions,
    latest: LatestMap,
    version: impl Fn(FileKind) -> String,
) -> bool {
    let asked = [
        (FileKind::Software, latest.software_latest),
        (FileKind::Config, latest.config_latest),
        (FileKind::Cert, latest.cert_latest),
    ];
    (asked.into_iter())
        .filter(|(_, asked)| *asked)
        .all(|(kind, _)| versions.latest(kind).is_none_or(|top| top == version(kind)))
}

/// A new status for a policy (anax `StatusFromNewPolicy`): `waiting`, scheduled when the
/// policy has an `agentUpgradePolicy` (else Go's zero time, due at once, as anax leaves it).
fn new_status(
    policy: &ManagementPolicy,
    working_dir: &str,
    now: i64,
    rng: &mut impl Rng,
) -> PolicyStatus {
    let mut status = PolicyStatus {
        agent_upgrade: AgentUpgradePolicyStatus {
            scheduled_time: String::new(),
            start_time: String::new(),
            end_time: String::new(),
            upgraded_versions: UpgradedVersions::default(),
            status: Status::Waiting,
            k8s: None,
            error_message: String::new(),
            working_directory: String::new(),
        },
        internal: AgentUpgradeInternal {
            allow_downgrade: false,
            manifest: String::new(),
            scheduled_unix_time: ZERO_TIME,
            latest_map: LatestMap::default(),
            download_attempts: 0,
        },
    };
    if let Some(upgrade) = &policy.agent_upgrade_policy {
        let at = scheduled_start(
            &policy.start,
            &policy.last_updated,
            policy.start_window,
            now,
            rng,
        );
        status.agent_upgrade.scheduled_time = rfc3339(at);
        status.agent_upgrade.working_directory = working_dir.to_owned();
        status.internal.scheduled_unix_time = at;
        status.internal.allow_downgrade = upgrade.allow_downgrade;
        status.internal.manifest = upgrade.manifest.clone();
    }
    status
}

/// The scheduled start (anax `SetScheduledStartTime`), whole seconds: `start`, or for `now`
/// the policy's `lastUpdated` (the clock when that does not parse), plus a uniform random
/// offset in `[0, startWindow)`.
pub fn scheduled_start(
    start: &str,
    last_updated: &str,
    window: i64,
    now: i64,
    rng: &mut impl Rng,
) -> i64 {
    let base = schedule_base(start, last_updated, now);
    match window > 0 {
        // Saturating: a start near the end of time plus a huge window stays a time.
        true => base.saturating_add(rng.gen_range(0..window)),
        false => base,
    }
}

/// Where a policy's window opens: `start`, or for `now` its `lastUpdated` or the clock.
fn schedule_base(start: &str, last_updated: &str, now: i64) -> i64 {
    match start {
        "now" => exchange_time(last_updated).unwrap_or(now),
        // A start that is not RFC 3339 is Go's zero time (validation refuses it before).
        other => (other.parse::<jiff::Timestamp>()).map_or(ZERO_TIME, |t| t.as_second()),
    }
}

/// The last second a status can show as RFC 3339 (`9999-12-30T22:00:00Z`).
pub fn last_time() -> i64 {
    jiff::Timestamp::MAX.as_second()
}

/// Whether every time the worker may schedule the policy at, running from `now` to `until`,
/// can be shown: its window from its start (or `lastUpdated`, or the clock), and a re-arm's
/// window from `until`, end by [`last_time`].
pub fn window_fits(policy: &ManagementPolicy, now: i64, until: i64) -> bool {
    let base = schedule_base(&policy.start, &policy.last_updated, now).max(until);
    base.checked_add(policy.start_window)
        .is_some_and(|end| end <= last_time())
}

/// The exchange's timestamps, `2006-01-02T15:04:05.000000Z[UTC]`, in Unix seconds.
pub fn exchange_time(text: &str) -> Option<i64> {
    let text = text.strip_suffix("[UTC]")?;
    text.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

#[cfg(test)]
#[path = "nmp_worker_tests.rs"]
mod tests;
