//! Table tests of the node management worker, from spec B.2's rules, and the 1,000-node
//! scenario.

use super::*;
use rand_chacha::ChaCha8Rng;
use rand08::SeedableRng as _;

/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200;

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn policy(json: &str) -> ManagementPolicy {
    nmp::validate(serde_json::from_str(json).unwrap())
        .unwrap()
        .policy
}

/// A pattern policy whose window opens a second before `start`: the monitor starts a job only
/// once its scheduled time is strictly past (anax `TimeToStart`), so a tick at `start` finds it
/// due.
fn upgrade_policy(
    pattern: &str,
    start: i64,
    window: i64,
    manifest: &str,
    down: bool,
) -> ManagementPolicy {
    policy(&format!(
        r#"{{"patterns": ["{pattern}"], "enabled": true, "start": "{}", "startWindow": {window},
            "agentUpgradePolicy": {{"manifest": "{manifest}", "allowDowngrade": {down}}}}}"#,
        rfc3339(start - 1)
    ))
}

fn manifest(software: &str, config: &str) -> UpgradeManifest {
    serde_json::from_value(serde_json::json!({
        "softwareUpgrade": {"files": ["*"], "version": software},
        "configurationUpgrade": {"files": ["agent-install.cfg"], "version": config},
    }))
    .unwrap()
}

fn versions(software: &[&str]) -> AgentFileVersions {
    AgentFileVersions {
        agent_software_versions: software.iter().map(|v| v.to_string()).collect(),
        agent_config_versions: vec!["1.0.0".into(), "1.1.0".into()],
        ..AgentFileVersions::default()
    }
}

fn cluster_node(pattern: &str, software: &str) -> NodeState {
    let mut versions = BTreeMap::new();
    if !software.is_empty() {
        versions.insert(FileKind::Software, software.to_owned());
    }
    NodeState {
        pattern: pattern.into(),
        cluster: true,
        versions,
        software_files: vec![
            agent_files::CLUSTER_FILE.to_owned(),
            agent_files::cluster_image("amd64"),
        ],
        ..NodeState::default()
    }
}

fn nmps(list: Vec<(&str, ManagementPolicy)>) -> BTreeMap<String, ManagementPolicy> {
    list.into_iter().map(|(n, p)| (n.to_owned(), p)).collect()
}

fn ok(_: FileKind, _: &str, _: &str) -> Result<(), String> {
    Ok(())
}

/// Runs ticks every minute from `from` while `until` is not reached.
fn run(worker: &mut Worker, hub: &Hub, from: i64, until: i64) {
    let mut now = from;
    while now < until {
        worker.tick(now, hub, true, &mut ok, &mut |_| Ok(()));
        now += MONITOR_PERIOD;
    }
}

#[test]
fn scheduling_in_the_window() {
    let cases = [
        ("2026-03-01T00:00:00Z", "", 0, T0),
        ("2026-03-01T02:00:00+02:00", "", 0, T0),
        ("now", "2026-03-01T00:00:00.000000Z[UTC]", 0, T0),
        // lastUpdated not in the exchange's format: the clock.
        ("now", "2026-03-01T00:00:00Z", 0, T0 + 5),
        ("now", "", 0, T0 + 5),
    ];
    for (start, updated, window, want) in cases {
        assert_eq!(
            scheduled_start(start, updated, window, T0 + 5, &mut rng(1)),
            want,
            "{start} {updated}"
        );
    }
    let draws: Vec<i64> = {
        let mut r = rng(7);
        (0..2000)
            .map(|_| scheduled_start("2026-03-01T00:00:00Z", "", 60, 0, &mut r) - T0)
            .collect()
    };
    assert!(draws.iter().all(|d| (0..60).contains(d)));
    assert!(draws.contains(&0) && draws.contains(&59));
    // The same seed, the same times.
    let again: Vec<i64> = {
        let mut r = rng(7);
        (0..2000)
            .map(|_| scheduled_start("2026-03-01T00:00:00Z", "", 60, 0, &mut r) - T0)
            .collect()
    };
    assert_eq!(draws, again);
    // The end of time plus the largest window: no overflow.
    let end = scheduled_start("9999-12-31T23:59:59Z", "", i64::MAX, 0, &mut rng(1));
    assert!(end >= 253_402_300_799);
}

#[test]
fn latest_scheduled_first_and_one_job_at_a_time() {
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/var/horizon/nmp");
    let policies = nmps(vec![
        ("org/a", upgrade_policy("p", T0, 0, "m", false)),
        ("org/b", upgrade_policy("p", T0 + 100, 0, "m", false)),
        ("org/c", upgrade_policy("p", T0 + 100, 0, "m", false)),
        ("org/later", upgrade_policy("p", T0 + 9999, 0, "m", false)),
    ]);
    worker.sync(&policies, None, T0 - 10, &mut rng(1));
    assert!(
        worker
            .statuses
            .values()
            .all(|s| s.status() == Status::Waiting)
    );
    assert_eq!(worker.monitor(T0 - 1, false), None, "nothing due yet");
    // Scheduled at T0 - 1: at that very second not yet (strictly before the clock), at T0 yes.
    assert_eq!(worker.monitor(T0, false).as_deref(), Some("org/a"));
    let mut worker2 = worker.clone();
    // Once b and c are due too, the latest goes first; a tie goes to the last name.
    worker.reset("org/a", T0);
    assert_eq!(worker.monitor(T0 + 200, false).as_deref(), Some("org/c"));
    assert_eq!(worker.monitor(T0 + 260, false), None, "c is active");
    assert_eq!(worker.active(), ["org/c"]);
    // A restart sends a download cut short back to waiting.
    worker2.restart(T0 + 1);
    assert_eq!(worker2.statuses["org/a"].status(), Status::Waiting);
}

/// One download for a node running `software`, the manifest, allowDowngrade and the hub's
/// software versions: the status, its error, what it records.
fn outcome(
    node: NodeState,
    manifest: Option<UpgradeManifest>,
    down: bool,
    software: &[&str],
) -> (Status, String, UpgradedVersions) {
    let mut worker = Worker::new(node, "/w");
    let policies = nmps(vec![("org/n", upgrade_policy("p", T0, 0, "m", down))]);
    worker.sync(&policies, None, T0, &mut rng(1));
    assert_eq!(worker.monitor(T0, true).as_deref(), Some("org/n"));
    let manifests: BTreeMap<_, _> = manifest.into_iter().map(|m| ("m".to_owned(), m)).collect();
    let versions = versions(software);
    let hub = Hub {
        org: "org",
        versions: &versions,
        manifests: &manifests,
    };
    worker.download("org/n", &hub, T0, &mut ok);
    let s = &worker.statuses["org/n"];
    (
        s.status(),
        s.agent_upgrade.error_message.clone(),
        s.agent_upgrade.upgraded_versions.clone(),
    )
}

/// node, manifest software version, allowDowngrade, hub versions; status, recorded, error.
type Case<'a> = (
    &'a str,
    &'a str,
    bool,
    &'a [&'a str],
    Status,
    &'a str,
    &'a str,
);

#[test]
fn version_resolution() {
    use Status::*;
    let hub = ["2.30.0", "2.31.0", "not-a-version"];
    let cases: &[Case] = &[
        // node, manifest software, allowDowngrade, hub versions, status, recorded, error
        ("2.30.0", "latest", false, &hub, Downloaded, "2.31.0", ""),
        (
            "2.31.0",
            "latest",
            false,
            &hub,
            NoActionRequired,
            "2.31.0",
            "",
        ),
        ("2.30.0", "2.31.0", false, &hub, Downloaded, "2.31.0", ""),
        // Exact versions are taken as they are, available or not (anax).
        ("2.30.0", "2.40.0", false, &hub, Downloaded, "2.40.0", ""),
        (
            "2.31.0",
            "2.30.0",
            false,
            &hub,
            NoActionRequired,
            "2.30.0",
            "",
        ),
        ("2.31.0", "2.30.0", true, &hub, Downloaded, "2.30.0", ""),
        (
            "2.30.0",
            "[2.0.0,2.31.0)",
            false,
            &hub,
            NoActionRequired,
            "2.30.0",
            "",
        ),
        (
            "2.29.0",
            "[2.0.0,2.31.0)",
            false,
            &hub,
            Downloaded,
            "2.30.0",
            "",
        ),
        (
            "local build",
            "2.30.0",
            false,
            &hub,
            Downloaded,
            "2.30.0",
            "",
        ),
        ("", "2.30.0", false, &hub, Downloaded, "2.30.0", ""),
        ("2.30.0", "", false, &hub, NoActionRequired, "", ""),
        (
            "bogus",
            "2.30.0",
            false,
            &hub,
            PrecheckFailed,
            "",
            "Error checking upgrade version against current node version: Input version string bogus or 2.30.0 is not a valid single version string.",
        ),
        (
            "2.30.0",
            "latest",
            false,
            &[],
            PrecheckFailed,
            "",
            "Version keyword \"latest\" specified but no availible versions found in exchange.",
        ),
        (
            "2.30.0",
            "[3.0.0,INFINITY)",
            false,
            &hub,
            PrecheckFailed,
            "",
            "Failed to find matching version.",
        ),
        (
            "2.30.0",
            "newest",
            false,
            &hub,
            PrecheckFailed,
            "",
            "Unrecognized version expression string newest.",
        ),
    ];
    for &(node, software, down, available, status, recorded, error) in cases {
        let got = outcome(
            cluster_node("org/p", node),
            Some(manifest(software, "")),
            down,
            available,
        );
        assert_eq!(
            (got.0, got.1.as_str(), got.2.software_version.as_str()),
            (status, error, recorded),
            "{node} {software} {down}"
        );
    }
}

#[test]
fn config_and_cert_and_the_file_lists() {
    let mut node = cluster_node("org/p", "2.31.0");
    node.versions.insert(FileKind::Config, "1.0.0".into());
    let (status, _, saved) = outcome(
        node.clone(),
        Some(manifest("", "latest")),
        false,
        &["2.31.0"],
    );
    assert_eq!(
        (status, saved.config_version.as_str()),
        (Status::Downloaded, "1.1.0")
    );
    // A kind to download whose file the manifest does not list.
    let mut m = manifest("", "latest");
    m.configuration_upgrade.files.clear();
    let (status, error, _) = outcome(node.clone(), Some(m), false, &["2.31.0"]);
    assert_eq!(status, Status::PrecheckFailed);
    assert_eq!(
        error,
        "The following package or file names are not listed in the manifest org/m: agent-install.cfg"
    );
    let mut m = manifest("latest", "");
    m.software_upgrade.files = vec!["agent-install.sh".into()];
    let (_, error, _) = outcome(cluster_node("org/p", "1.0.0"), Some(m), false, &["2.31.0"]);
    assert_eq!(
        error,
        "The following package or file names are not listed in the manifest org/m: horizon-agent-edge-cluster-files.tar.gz, amd64_anax_k8s.tar.gz"
    );
    let (status, error, _) = outcome(node.clone(), None, false, &["2.31.0"]);
    assert_eq!(status, Status::PrecheckFailed);
    assert!(error.contains("org/m"), "{error}");
    node.software_files_error = Some("Failed to find package type for install type windows".into());
    let (status, error, _) = outcome(node, Some(manifest("latest", "")), false, &["2.32.0"]);
    assert_eq!(
        (status, error.as_str()),
        (
            Status::PrecheckFailed,
            "Failed to find package type for install type windows"
        )
    );
}

#[test]
fn five_tries_then_download_failed_and_reset() {
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    let policies = nmps(vec![("org/n", upgrade_policy("p", T0, 0, "m", false))]);
    worker.sync(&policies, None, T0, &mut rng(1));
    let manifests = BTreeMap::from([("m".to_owned(), manifest("latest", ""))]);
    let versions = versions(&["2.31.0"]);
    let hub = Hub {
        org: "org",
        versions: &versions,
        manifests: &manifests,
    };
    let mut tries = 0;
    let mut refuse = |_: FileKind, _: &str, _: &str| -> Result<(), String> {
        tries += 1;
        Err("connection refused".into())
    };
    for minute in 0..20 {
        worker.tick(T0 + 60 * minute, &hub, true, &mut refuse, &mut |_| Ok(()));
    }
    assert_eq!(tries, 5);
    let s = &worker.statuses["org/n"];
    assert_eq!(s.status(), Status::DownloadFailed);
    assert_eq!(s.internal.download_attempts, MAX_DOWNLOAD_RETRIES);
    assert_eq!(
        s.agent_upgrade.error_message,
        "Error downloading css object IBM/agent_software_files-2.31.0/horizon-agent-edge-cluster-files.tar.gz: connection refused"
    );
    let statuses: Vec<Status> = worker.log.iter().filter_map(|t| t.to).collect();
    let started = statuses
        .iter()
        .filter(|s| **s == Status::DownloadStarted)
        .count();
    assert_eq!(started, 5);
    // reset: waiting, tries cleared; then the job runs to the end.
    assert!(worker.reset("org/n", T0 + 3600));
    assert!(!worker.reset("org/other", T0 + 3600));
    assert_eq!(worker.statuses["org/n"].internal.download_attempts, 0);
    run(&mut worker, &hub, T0 + 3600, T0 + 4000);
    let s = &worker.statuses["org/n"];
    assert_eq!(s.status(), Status::Successful);
    assert_eq!(worker.node.versions[&FileKind::Software], "2.31.0");
    assert_eq!(
        (
            s.agent_upgrade.start_time.as_str(),
            s.agent_upgrade.end_time.as_str()
        ),
        ("2026-03-01T01:02:00Z", "2026-03-01T01:03:00Z")
    );
}

#[test]
fn the_job_lifecycle_tick_by_tick() {
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    let policies = nmps(vec![("org/n", upgrade_policy("p", T0, 0, "m", false))]);
    worker.sync(&policies, None, T0, &mut rng(1));
    let manifests = BTreeMap::from([("m".to_owned(), manifest("latest", ""))]);
    let versions = versions(&["2.31.0"]);
    let hub = Hub {
        org: "org",
        versions: &versions,
        manifests: &manifests,
    };
    let mut seen = Vec::new();
    let mut fail_install =
        |_: &[(FileKind, String)]| Err("agent-install.sh exited with 3".to_owned());
    for minute in 0..6 {
        worker.tick(T0 + 60 * minute, &hub, true, &mut ok, &mut fail_install);
        seen.push(worker.statuses["org/n"].status());
    }
    use Status::*;
    assert_eq!(
        seen,
        [
            DownloadStarted,
            Downloaded,
            Initiated,
            RollbackStarted,
            RollbackSuccessful,
            RollbackSuccessful
        ]
    );
    let all: Vec<Status> = worker.log.iter().filter_map(|t| t.to).collect();
    assert_eq!(
        all,
        [
            Waiting,
            DownloadStarted,
            Downloaded,
            Initiated,
            Failed,
            RollbackStarted,
            RollbackSuccessful
        ]
    );
    assert_eq!(
        worker.statuses["org/n"].agent_upgrade.error_message,
        "agent-install.sh exited with 3"
    );
    assert_eq!(
        worker.node.versions[&FileKind::Software],
        "2.30.0",
        "rolled back"
    );
}

#[test]
fn ha_nodes_wait_for_their_turn() {
    let mut node = cluster_node("org/p", "2.30.0");
    node.ha_group = "group1".into();
    let mut worker = Worker::new(node, "/w");
    let policies = nmps(vec![("org/n", upgrade_policy("p", T0, 0, "m", false))]);
    worker.sync(&policies, None, T0, &mut rng(1));
    let manifests = BTreeMap::from([("m".to_owned(), manifest("latest", ""))]);
    let versions = versions(&["2.31.0"]);
    let hub = Hub {
        org: "org",
        versions: &versions,
        manifests: &manifests,
    };
    worker.tick(T0, &hub, false, &mut ok, &mut |_| Ok(()));
    worker.tick(T0 + 60, &hub, false, &mut ok, &mut |_| Ok(()));
    assert_eq!(worker.statuses["org/n"].status(), Status::HaNodeWaiting);
    worker.tick(T0 + 120, &hub, false, &mut ok, &mut |_| Ok(()));
    assert_eq!(worker.statuses["org/n"].status(), Status::HaNodeWaiting);
    worker.tick(T0 + 180, &hub, true, &mut ok, &mut |_| Ok(()));
    assert_eq!(worker.statuses["org/n"].status(), Status::Downloaded);
}

#[test]
fn a_downgrade_never_undoes_a_later_policy() {
    let manifests = BTreeMap::from([
        ("up".to_owned(), manifest("latest", "")),
        ("pin".to_owned(), manifest("2.29.0", "")),
    ]);
    let versions = versions(&["2.29.0", "2.31.0"]);
    let hub = Hub {
        org: "org",
        versions: &versions,
        manifests: &manifests,
    };
    // pin (allowDowngrade) is scheduled before up: up runs first (latest first), then pin may
    // not undo it.
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    let policies = nmps(vec![
        ("org/pin", upgrade_policy("p", T0, 0, "pin", true)),
        ("org/up", upgrade_policy("p", T0 + 60, 0, "up", false)),
    ]);
    worker.sync(&policies, None, T0, &mut rng(1));
    run(&mut worker, &hub, T0 + 60, T0 + 1200);
    assert_eq!(worker.statuses["org/up"].status(), Status::Successful);
    assert_eq!(
        worker.statuses["org/pin"].status(),
        Status::NoActionRequired
    );
    assert_eq!(worker.node.versions[&FileKind::Software], "2.31.0");
    // Alone, the same pin downgrades.
    let mut worker = Worker::new(cluster_node("org/p", "2.31.0"), "/w");
    let policies = nmps(vec![("org/pin", upgrade_policy("p", T0, 0, "pin", true))]);
    worker.sync(&policies, None, T0, &mut rng(1));
    run(&mut worker, &hub, T0, T0 + 600);
    assert_eq!(worker.node.versions[&FileKind::Software], "2.29.0");
}

#[test]
fn sync_follows_the_policies() {
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    let mut policies = nmps(vec![
        ("org/a", upgrade_policy("p", T0, 0, "m", false)),
        ("org/other", upgrade_policy("q", T0, 0, "m", false)),
        (
            "org/bare",
            policy(r#"{"patterns": ["org/p"], "enabled": true}"#),
        ),
    ]);
    worker.sync(&policies, None, T0, &mut rng(1));
    assert_eq!(
        worker.statuses.keys().collect::<Vec<_>>(),
        ["org/a", "org/bare"]
    );
    // No agentUpgradePolicy: no scheduled time, due at once, nothing to download from.
    let bare = &worker.statuses["org/bare"];
    assert_eq!(bare.agent_upgrade.scheduled_time, "");
    assert_eq!(bare.internal.scheduled_unix_time, ZERO_TIME);
    // A policy node without a node policy: anax's worker compares with an empty policy, so
    // only an NMP without constraints applies.
    let mut policy_node = Worker::new(NodeState::default(), "/w");
    let by_policy = nmps(vec![
        ("org/any", policy(r#"{"enabled": true}"#)),
        (
            "org/ring",
            policy(r#"{"enabled": true, "constraints": ["ring == 1"]}"#),
        ),
    ]);
    policy_node.sync(&by_policy, None, T0, &mut rng(1));
    assert_eq!(policy_node.statuses.keys().collect::<Vec<_>>(), ["org/any"]);
    let ring: NodePolicy =
        serde_json::from_str(r#"{"properties": [{"name": "ring", "value": 1}]}"#).unwrap();
    policy_node.sync(&by_policy, Some(&ring), T0, &mut rng(1));
    assert_eq!(policy_node.statuses.len(), 2);
    // Disabled, then gone.
    policies.get_mut("org/a").unwrap().enabled = false;
    worker.sync(&policies, None, T0, &mut rng(1));
    assert!(!worker.statuses.contains_key("org/a"));
    policies.clear();
    worker.sync(&policies, None, T0, &mut rng(1));
    assert!(worker.statuses.is_empty());
    let removed = worker.log.iter().filter(|t| t.to.is_none()).count();
    assert_eq!(removed, 2);
}

#[test]
fn a_new_latest_re_arms() {
    let manifests = BTreeMap::from([("m".to_owned(), manifest("latest", ""))]);
    let old = versions(&["2.31.0"]);
    let new = versions(&["2.31.0", "2.32.0"]);
    let hub = Hub {
        org: "org",
        versions: &old,
        manifests: &manifests,
    };
    let policies = nmps(vec![("org/n", upgrade_policy("p", T0, 600, "m", false))]);
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    worker.sync(&policies, None, T0, &mut rng(1));
    run(&mut worker, &hub, T0, T0 + 1200);
    assert_eq!(worker.statuses["org/n"].status(), Status::Successful);
    assert!(worker.statuses["org/n"].internal.latest_map.software_latest);
    // The same versions: nothing to do.
    assert!(
        worker
            .versions_changed(&old, &policies, T0 + 1300, &mut rng(2))
            .is_empty()
    );
    assert_eq!(worker.statuses["org/n"].status(), Status::Successful);
    // A new latest: waiting again, scheduled again in the window, times cleared.
    worker.versions_changed(&new, &policies, T0 + 1300, &mut rng(2));
    let s = &worker.statuses["org/n"];
    assert_eq!(s.status(), Status::Waiting);
    assert_eq!(
        (
            s.agent_upgrade.start_time.as_str(),
            s.agent_upgrade.end_time.as_str()
        ),
        ("", "")
    );
    // lastUpdated is not set here: rescheduled from the clock.
    assert!((T0 + 1300..T0 + 1900).contains(&s.internal.scheduled_unix_time));
    let hub = Hub {
        versions: &new,
        ..hub
    };
    run(&mut worker, &hub, T0 + 1300, T0 + 2400);
    assert_eq!(worker.node.versions[&FileKind::Software], "2.32.0");

    // A failed job is re-armed only for a latest it did not try.
    let mut failed = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    failed.sync(&policies, None, T0, &mut rng(1));
    let hub = Hub {
        versions: &old,
        ..hub
    };
    let mut minute = 0;
    while failed.statuses["org/n"].status() != Status::DownloadFailed {
        failed.tick(
            T0 + 60 * minute,
            &hub,
            true,
            &mut |_, _, _| Err("no".into()),
            &mut |_| Ok(()),
        );
        minute += 1;
    }
    // A failed download records the latest it tried: the same versions do not re-arm it, a
    // new latest does, with its download tries cleared.
    let s = &failed.statuses["org/n"];
    assert!(s.internal.latest_map.software_latest);
    assert_eq!(s.agent_upgrade.upgraded_versions.software_version, "2.31.0");
    assert!(
        failed
            .versions_changed(&old, &policies, T0 + 7200, &mut rng(3))
            .is_empty()
    );
    assert_eq!(failed.statuses["org/n"].status(), Status::DownloadFailed);
    failed.versions_changed(&new, &policies, T0 + 7200, &mut rng(3));
    let s = &failed.statuses["org/n"];
    assert_eq!(s.status(), Status::Waiting);
    assert_eq!(s.internal.download_attempts, 0);
    assert!((T0 + 7200..T0 + 7800).contains(&s.internal.scheduled_unix_time));
    // ha node waiting is active: deferred, not re-armed.
    let mut ha = worker.clone();
    ha.statuses.get_mut("org/n").unwrap().agent_upgrade.status = Status::HaNodeWaiting;
    assert_eq!(
        ha.versions_changed(&versions(&["2.33.0"]), &policies, T0, &mut rng(4)),
        ["org/n"]
    );
    assert_eq!(ha.statuses["org/n"].status(), Status::HaNodeWaiting);
    // Active jobs are deferred.
    let mut active = worker.clone();
    active
        .statuses
        .get_mut("org/n")
        .unwrap()
        .agent_upgrade
        .status = Status::Downloaded;
    assert_eq!(
        active.versions_changed(&versions(&["2.33.0"]), &policies, T0, &mut rng(4)),
        ["org/n"]
    );
}

#[test]
fn a_failed_job_with_a_known_latest() {
    let manifests = BTreeMap::from([("m".to_owned(), manifest("latest", ""))]);
    let old = versions(&["2.31.0"]);
    let hub = Hub {
        org: "org",
        versions: &old,
        manifests: &manifests,
    };
    let policies = nmps(vec![("org/n", upgrade_policy("p", T0, 0, "m", false))]);
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    worker.sync(&policies, None, T0, &mut rng(1));
    for minute in 0..6 {
        worker.tick(T0 + 60 * minute, &hub, true, &mut ok, &mut |_| {
            Err("exit 3".into())
        });
    }
    assert_eq!(
        worker.statuses["org/n"].status(),
        Status::RollbackSuccessful
    );
    // It tried 2.31.0: the same latest does not re-arm it, a new one does.
    worker.versions_changed(&old, &policies, T0 + 600, &mut rng(2));
    assert_eq!(
        worker.statuses["org/n"].status(),
        Status::RollbackSuccessful
    );
    worker.versions_changed(
        &versions(&["2.31.0", "2.32.0"]),
        &policies,
        T0 + 600,
        &mut rng(2),
    );
    assert_eq!(worker.statuses["org/n"].status(), Status::Waiting);
}

/// The spread of start times over 1,000 nodes: per tenth of the window, how many nodes.
fn deciles(offsets: &[i64], window: i64) -> [usize; 10] {
    let mut counts = [0; 10];
    for offset in offsets {
        counts[(offset * 10 / window) as usize] += 1;
    }
    counts
}

/// 1,000 nodes, half allowed to downgrade; an upgrade to `latest` and a config upgrade, both
/// in a one-hour window, then a pin to an older version two hours later. Every tenth node's
/// software downloads fail.
#[test]
fn a_thousand_nodes() {
    const NODES: usize = 1000;
    const WINDOW: i64 = 3600;
    let manifests = BTreeMap::from([
        ("up".to_owned(), manifest("latest", "")),
        ("config".to_owned(), manifest("", "latest")),
        ("pin".to_owned(), manifest("2.30.0", "")),
    ]);
    let versions = versions(&["2.30.0", "2.31.0", "2.32.0"]);
    let hub = Hub {
        org: "org",
        versions: &versions,
        manifests: &manifests,
    };
    let policies = nmps(vec![
        (
            "org/upgrade",
            upgrade_policy("keep\", \"down", T0, WINDOW, "up", false),
        ),
        (
            "org/config",
            upgrade_policy("keep\", \"down", T0, WINDOW, "config", false),
        ),
        (
            "org/pin-keep",
            upgrade_policy("keep", T0 + 7200, 600, "pin", false),
        ),
        (
            "org/pin-down",
            upgrade_policy("down", T0 + 7200, 600, "pin", true),
        ),
    ]);
    let mut random = rng(2026);
    let mut workers: Vec<Worker> = (0..NODES)
        .map(|i| {
            let pattern = if i % 2 == 0 { "org/keep" } else { "org/down" };
            let mut node = cluster_node(pattern, "2.31.0");
            node.versions.insert(FileKind::Config, "1.0.0".into());
            let mut worker = Worker::new(node, "/var/horizon/nmp");
            worker.sync(&policies, None, T0 - 60, &mut random);
            worker
        })
        .collect();
    let failing = |i: usize| i % 10 == 3;

    // Start times: uniform over the window.
    let offsets: Vec<i64> = (workers.iter())
        .map(|w| w.statuses["org/upgrade"].internal.scheduled_unix_time - (T0 - 1))
        .collect();
    assert!(offsets.iter().all(|o| (0..WINDOW).contains(o)));
    let counts = deciles(&offsets, WINDOW);
    let expected = NODES as f64 / 10.0;
    let chi2: f64 = counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum();
    eprintln!(
        "1,000 nodes: start times per tenth of the window {counts:?}, min {}, max {}, chi-square {chi2:.2} (9 degrees of freedom)",
        counts.iter().min().unwrap(),
        counts.iter().max().unwrap()
    );
    assert!(counts.iter().all(|c| (60..=140).contains(c)), "{counts:?}");

    let end = T0 + 7200 + 600 + 30 * MONITOR_PERIOD;
    for (i, worker) in workers.iter_mut().enumerate() {
        let mut fetch =
            |kind: FileKind, _: &str, _: &str| match failing(i) && kind == FileKind::Software {
                true => Err("CSS unreachable".to_owned()),
                false => Ok(()),
            };
        let mut now = T0;
        while now < end {
            worker.tick(now, &hub, true, &mut fetch, &mut |_| Ok(()));
            assert!(worker.active().len() <= 1);
            now += MONITOR_PERIOD;
        }
    }

    for (i, worker) in workers.iter().enumerate() {
        // No two jobs at once: replaying the log, never two active statuses.
        let mut state: BTreeMap<&str, Status> = BTreeMap::new();
        for t in &worker.log {
            match t.to {
                Some(to) => state.insert(&t.nmp, to),
                None => state.remove(t.nmp.as_str()),
            };
            assert!(
                state.values().filter(|s| s.is_active()).count() <= 1,
                "node {i} at {}",
                t.at
            );
        }
        let status = |name: &str| worker.statuses[name].status();
        let software = worker.node.versions[&FileKind::Software].as_str();
        assert_eq!(status("org/config"), Status::Successful, "node {i}");
        assert_eq!(worker.node.versions[&FileKind::Config], "1.1.0");
        let downs = (worker.log.iter())
            .filter(|t| t.nmp == "org/upgrade" && t.to == Some(Status::DownloadStarted))
            .count();
        if failing(i) {
            // Five tries, then download failed; the pin (a downgrade here) fails the same way.
            assert_eq!(status("org/upgrade"), Status::DownloadFailed, "node {i}");
            assert_eq!(downs, 5);
            assert_eq!(worker.statuses["org/upgrade"].internal.download_attempts, 4);
            assert_eq!(status("org/pin-down"), Status::DownloadFailed);
            assert_eq!(software, "2.31.0");
        } else if i % 2 == 0 {
            // No allowDowngrade: the pin to an older version does nothing.
            assert_eq!((status("org/upgrade"), downs), (Status::Successful, 1));
            assert_eq!(status("org/pin-keep"), Status::NoActionRequired);
            assert_eq!(software, "2.32.0");
        } else {
            assert_eq!(status("org/upgrade"), Status::Successful);
            assert_eq!(status("org/pin-down"), Status::Successful);
            assert_eq!(software, "2.30.0", "node {i} downgraded");
        }
    }
}

#[test]
fn starting_from_kept_statuses() {
    let manifests = BTreeMap::from([("m".to_owned(), manifest("latest", "latest"))]);
    let versions = versions(&["2.31.0"]);
    let hub = Hub {
        org: "org",
        versions: &versions,
        manifests: &manifests,
    };
    let policies = nmps(vec![
        ("org/a", upgrade_policy("p", T0, 0, "m", false)),
        ("org/b", upgrade_policy("p", T0 + 60, 0, "m", false)),
    ]);
    let mut before = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    before.sync(&policies, None, T0, &mut rng(1));
    run(&mut before, &hub, T0 + 60, T0 + 180);
    assert_eq!(before.statuses["org/b"].status(), Status::Downloaded);
    // The agent restarts: the downloaded job installs what it downloaded.
    let mut after = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    let mut kept = before.statuses.clone();
    kept.get_mut("org/a").unwrap().agent_upgrade.status = Status::Reset;
    after.restore(kept, &hub);
    after.start(&policies, None, &versions, T0 + 600, &mut rng(2));
    assert_eq!(after.statuses["org/a"].status(), Status::Waiting, "reset");
    run(&mut after, &hub, T0 + 600, T0 + 720);
    assert_eq!(after.statuses["org/b"].status(), Status::Successful);
    assert_eq!(after.node.versions[&FileKind::Software], "2.31.0");
    assert_eq!(after.node.versions[&FileKind::Config], "1.1.0");
    // Then a, reset, finds nothing left to do.
    run(&mut after, &hub, T0 + 720, T0 + 900);
    assert_eq!(after.statuses["org/a"].status(), Status::NoActionRequired);
    // A download cut short is tried again.
    let mut cut = before.clone();
    cut.statuses.get_mut("org/b").unwrap().agent_upgrade.status = Status::DownloadStarted;
    let kept = cut.statuses.clone();
    cut.restore(kept, &hub);
    cut.start(&policies, None, &versions, T0 + 600, &mut rng(2));
    assert_eq!(cut.statuses["org/b"].status(), Status::Waiting);
}

#[test]
fn a_restored_download_installs_only_what_it_chose() {
    // The node runs software 2.31.0 and config 1.0.0; the manifest pins software 2.30.0 (a
    // downgrade, not allowed) and config latest. The status records software 2.30.0 anyway.
    let manifests = BTreeMap::from([("m".to_owned(), manifest("2.30.0", "latest"))]);
    let versions = versions(&["2.30.0", "2.31.0"]);
    let hub = Hub {
        org: "org",
        versions: &versions,
        manifests: &manifests,
    };
    let policies = nmps(vec![("org/n", upgrade_policy("p", T0, 0, "m", false))]);
    let mut node = cluster_node("org/p", "2.31.0");
    node.versions.insert(FileKind::Config, "1.0.0".into());
    let mut before = Worker::new(node.clone(), "/w");
    before.sync(&policies, None, T0, &mut rng(1));
    run(&mut before, &hub, T0, T0 + 120);
    let recorded = &before.statuses["org/n"];
    assert_eq!(recorded.status(), Status::Downloaded);
    assert_eq!(
        recorded.agent_upgrade.upgraded_versions.software_version,
        "2.30.0"
    );
    // Restarted from the kept statuses: only the config is installed.
    let mut after = Worker::new(node.clone(), "/w");
    after.restore(before.statuses.clone(), &hub);
    after.start(&policies, None, &versions, T0 + 600, &mut rng(2));
    let mut installed = Vec::new();
    let mut now = T0 + 600;
    while now < T0 + 900 {
        after.tick(now, &hub, true, &mut ok, &mut |kinds| {
            installed.extend_from_slice(kinds);
            Ok(())
        });
        now += MONITOR_PERIOD;
    }
    assert_eq!(after.statuses["org/n"].status(), Status::Successful);
    assert_eq!(installed, [(FileKind::Config, "1.1.0".to_owned())]);
    assert_eq!(after.node.versions[&FileKind::Software], "2.31.0");
    // With allowDowngrade the same record installs the downgrade.
    let mut allowed = before.statuses.clone();
    allowed.get_mut("org/n").unwrap().internal.allow_downgrade = true;
    let mut after = Worker::new(node, "/w");
    after.restore(allowed, &hub);
    run(&mut after, &hub, T0 + 600, T0 + 900);
    assert_eq!(after.node.versions[&FileKind::Software], "2.30.0");
}

#[test]
fn a_re_armed_job_is_scheduled_from_now_not_from_last_updated() {
    let manifests = BTreeMap::from([("m".to_owned(), manifest("latest", ""))]);
    let old = versions(&["2.31.0"]);
    let new = versions(&["2.31.0", "2.32.0"]);
    let hub = Hub {
        org: "org",
        versions: &old,
        manifests: &manifests,
    };
    let mut policies = nmps(vec![(
        "org/n",
        policy(
            r#"{"patterns": ["p"], "enabled": true, "start": "now", "startWindow": 600,
                "agentUpgradePolicy": {"manifest": "m"},
                "lastUpdated": "2026-01-01T00:00:00.000000Z[UTC]"}"#,
        ),
    )]);
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    worker.sync(&policies, None, T0, &mut rng(1));
    // Created: from lastUpdated (2026-01-01, long past), so due at once.
    let jan = exchange_time("2026-01-01T00:00:00.000000Z[UTC]").unwrap();
    assert!((jan..jan + 600).contains(&worker.statuses["org/n"].internal.scheduled_unix_time));
    run(&mut worker, &hub, T0, T0 + 300);
    assert_eq!(worker.statuses["org/n"].status(), Status::Successful);
    // Re-armed by a new latest: from now, in the window.
    for seed in 0..20 {
        let mut again = worker.clone();
        again.versions_changed(&new, &policies, T0 + 3600, &mut rng(seed));
        let s = &again.statuses["org/n"];
        assert_eq!(s.status(), Status::Waiting);
        assert!(
            (T0 + 3600..T0 + 4200).contains(&s.internal.scheduled_unix_time),
            "seed {seed}: {}",
            s.agent_upgrade.scheduled_time
        );
    }
    // A window of 0: exactly now.
    policies.get_mut("org/n").unwrap().start_window = 0;
    worker.versions_changed(&new, &policies, T0 + 3600, &mut rng(1));
    assert_eq!(
        worker.statuses["org/n"].internal.scheduled_unix_time,
        T0 + 3600
    );
}

#[test]
fn a_latest_without_versions_is_re_armed_when_versions_appear() {
    let manifests = BTreeMap::from([("m".to_owned(), manifest("latest", ""))]);
    let none = versions(&[]);
    let hub = Hub {
        org: "org",
        versions: &none,
        manifests: &manifests,
    };
    let policies = nmps(vec![("org/n", upgrade_policy("p", T0, 0, "m", false))]);
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    worker.sync(&policies, None, T0, &mut rng(1));
    run(&mut worker, &hub, T0, T0 + 120);
    assert_eq!(worker.statuses["org/n"].status(), Status::PrecheckFailed);
    assert!(worker.statuses["org/n"].internal.latest_map.software_latest);
    worker.versions_changed(&versions(&["2.31.0"]), &policies, T0 + 600, &mut rng(2));
    assert_eq!(worker.statuses["org/n"].status(), Status::Waiting);
}

#[test]
fn a_manifest_of_another_org_is_not_found() {
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    let policies = nmps(vec![(
        "org/n",
        upgrade_policy("p", T0, 0, "other/m", false),
    )]);
    worker.sync(&policies, None, T0, &mut rng(1));
    let manifests = BTreeMap::from([("m".to_owned(), manifest("latest", ""))]);
    let versions = versions(&["2.31.0"]);
    let hub = Hub {
        org: "org",
        versions: &versions,
        manifests: &manifests,
    };
    run(&mut worker, &hub, T0, T0 + 120);
    let s = &worker.statuses["org/n"];
    assert_eq!(s.status(), Status::PrecheckFailed);
    assert!(
        s.agent_upgrade.error_message.contains("other/m"),
        "{}",
        s.agent_upgrade.error_message
    );
    // The node's own org, named or not, is found.
    for name in ["m", "org/m"] {
        let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
        let policies = nmps(vec![("org/n", upgrade_policy("p", T0, 0, name, false))]);
        worker.sync(&policies, None, T0, &mut rng(1));
        run(&mut worker, &hub, T0, T0 + 300);
        assert_eq!(
            worker.statuses["org/n"].status(),
            Status::Successful,
            "{name}"
        );
    }
}

#[test]
fn windows_end_before_the_last_time_a_status_can_show() {
    let last = last_time();
    assert_eq!(rfc3339(last), "9999-12-30T22:00:00Z");
    assert_eq!(rfc3339(last + 1), "", "past it there is no RFC 3339 time");
    let at = |start: &str, window: i64| {
        let mut p = policy(&format!(
            r#"{{"patterns": ["p"], "start": "{start}", "startWindow": {window}}}"#
        ));
        p.last_updated = String::new();
        p
    };
    let cases = [
        (at("2026-03-01T00:00:00Z", 3600), T0, T0, true),
        (at("9999-12-30T21:00:00Z", 3600), T0, T0, true),
        (at("9999-12-30T21:00:00Z", 3601), T0, T0, false),
        (at("2026-03-01T00:00:00Z", i64::MAX), T0, T0, false),
        // now: from the clock; a re-arm at the end of the run counts too.
        (at("now", 60), last - 60, last - 60, true),
        (at("now", 60), T0, last - 30, false),
    ];
    for (policy, now, until, fits) in cases {
        assert_eq!(
            window_fits(&policy, now, until),
            fits,
            "{} {}",
            policy.start,
            policy.start_window
        );
    }
}

/// Issue 21: the node management path on hub-shaped data, each ending as anax main's
/// download worker would (2f3fa5a: findBestMatchingVersion, the manifest's own org,
/// HZN_CLUSTER_IMAGE from openhorizon.arch, checkNMPTimeToRun's blocking statuses).
#[test]
fn hub_shaped_data() {
    // Build-numbered versions: `latest` is the highest by anax's order.
    let build_numbered = versions(&["2.30.0-1400", "2.31.0-1498", "2.31.0-1001"]);
    let ibm: BTreeMap<_, _> = [(
        "IBM/edgeNodeFiles_manifest_2.31.0".to_owned(),
        manifest("latest", ""),
    )]
    .into_iter()
    .collect();
    let hub = Hub {
        org: "userorg",
        versions: &build_numbered,
        manifests: &ibm,
    };
    let mut node = cluster_node("userorg/p", "2.30.0-1400");
    node.software_files = vec![
        agent_files::CLUSTER_FILE.to_owned(),
        agent_files::cluster_image("arm64"),
    ];
    let mut worker = Worker::new(node, "/w");
    let policies = nmps(vec![(
        "userorg/up",
        upgrade_policy("p", T0, 0, "IBM/edgeNodeFiles_manifest_2.31.0", false),
    )]);
    worker.sync(&policies, None, T0, &mut rng(1));
    assert_eq!(worker.monitor(T0, true).as_deref(), Some("userorg/up"));
    let plan = worker.plan("userorg/up", &hub).unwrap();
    assert_eq!(plan.manifest, "IBM/edgeNodeFiles_manifest_2.31.0");
    assert_eq!(plan.kinds, [(FileKind::Software, "2.31.0-1498".to_owned())]);
    // An arm64 cluster fetches the arm64 image.
    let files: Vec<&str> = plan.downloads.iter().map(|(_, _, f)| f.as_str()).collect();
    assert_eq!(
        files,
        [
            "horizon-agent-edge-cluster-files.tar.gz",
            "arm64_anax_k8s.tar.gz"
        ]
    );
    worker.download("userorg/up", &hub, T0, &mut ok);
    assert_eq!(worker.statuses["userorg/up"].status(), Status::Downloaded);

    // The seed's atLeastVersion: a minimum for the software only.
    let seed = |x: &str| {
        let v = nmp::validate(
            serde_json::from_str(&format!(
                r#"{{"patterns": ["p"], "enabled": true, "agentUpgradePolicy": {{"atLeastVersion": "{x}"}}}}"#
            ))
            .unwrap(),
        )
        .unwrap();
        let mut m: UpgradeManifest = serde_json::from_value(v.seed_manifest.unwrap()).unwrap();
        m.software_minimum = v.seed_minimum;
        m
    };
    let minimum: BTreeMap<_, _> = [("m".to_owned(), seed("2.31.0-1001"))]
        .into_iter()
        .collect();
    let hub = Hub {
        org: "org",
        versions: &build_numbered,
        manifests: &minimum,
    };
    for (current, want) in [
        // Below the minimum: the highest from it up.
        (
            "2.30.0-1400",
            vec![(FileKind::Software, "2.31.0-1498".to_owned())],
        ),
        // At or above it: left alone, and config and cert are never touched.
        ("2.31.0-1001", vec![]),
        ("2.31.0-1200", vec![]),
    ] {
        let mut worker = Worker::new(cluster_node("org/p", current), "/w");
        let policies = nmps(vec![("org/n", upgrade_policy("p", T0, 0, "m", false))]);
        worker.sync(&policies, None, T0, &mut rng(1));
        worker.monitor(T0, true);
        assert_eq!(worker.plan("org/n", &hub).unwrap().kinds, want, "{current}");
    }
}

/// anax's monitor does not wait on a rollback in progress (checkNMPTimeToRun looks for
/// downloaded, initiated, download started and ha node waiting only).
#[test]
fn a_rollback_does_not_hold_the_monitor() {
    let mut worker = Worker::new(cluster_node("org/p", "2.30.0"), "/w");
    let policies = nmps(vec![
        ("org/a", upgrade_policy("p", T0, 0, "m", false)),
        ("org/b", upgrade_policy("p", T0 + 100, 0, "m", false)),
    ]);
    worker.sync(&policies, None, T0, &mut rng(1));
    assert_eq!(worker.monitor(T0, true).as_deref(), Some("org/a"));
    worker.set("org/a", Status::RollbackStarted, T0 + 1);
    assert_eq!(worker.monitor(T0 + 200, true).as_deref(), Some("org/b"));
}
