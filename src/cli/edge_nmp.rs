//! `cvo edge nmp status`: a node's node management worker (`components::edge::nmp_worker`)
//! run over exchange documents read from files, printing each applicable policy's status as the
//! exchange holds it. The files are read and checked here; the worker decides.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use clap::{Args, Subcommand};
use rand_chacha::ChaCha8Rng;
use rand08::SeedableRng as _;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::CliResult;
use super::edge::EdgeFormat;
use super::edge_deploycheck::{document, read};
use crate::components::edge::agent_files::{
    self, AgentFileVersions, DeviceFacts, FileKind, UpgradeManifest,
};
use crate::components::edge::exchange::{self, NodePolicy};
use crate::components::edge::fields::Doc;
use crate::components::edge::nmp::{self, ManagementPolicy};
use crate::components::edge::nmp_plan::{self, FleetNode};
use crate::components::edge::nmp_status::{PolicyStatus, Status};
use crate::components::edge::nmp_worker::{
    self, Hub, MONITOR_PERIOD, NodeState, Worker, last_time,
};
use crate::components::edge::version;
use crate::suggest;

/// anax's node management working directory (`GetNodeMgmtDirectory`'s default).
const WORKING_DIR: &str = "/var/horizon/nmp";

#[derive(Debug, Args)]
pub struct NmpGroup {
    #[command(subcommand)]
    pub command: NmpCommand,
}

#[derive(Debug, Subcommand)]
pub enum NmpCommand {
    /// Run a node's node management worker from --now for --steps monitor periods (60 s each)
    /// and print each applicable policy's status.
    #[command(after_help = STATUS_HELP)]
    Status(NmpStatusArgs),
    /// The fleet view: per NMP the nodes it applies to, when each starts within the window,
    /// the versions each ends on and the nodes it skips with the reason; the fleet's agent
    /// versions before and after.
    #[command(after_help = PLAN_HELP)]
    Plan(NmpPlanArgs),
}

const PLAN_HELP: &str = "Example:
  cvo edge nmp plan --nodes nodes/ --policies nmps/ --versions versions.json \\
      --manifests manifests/ --now 2026-03-01T00:00:00Z -o json

--nodes is a file or a directory of files holding the exchange's {\"nodes\": {\"ORG/ID\": {...}}}
answers (any number of nodes each); --node-policies the same for node policies
({\"ORG/ID\": {\"deployment\": ..., \"management\": ...}}); the other files as for `nmp status`.
Each node's start times come from --seed and its id, so a node's plan does not depend on the
others. Downloads and installs are taken to succeed.

Exit codes:
  0  the plan was computed
  1  a file cannot be read or is not valid (the file is named)
  2  usage error";

#[derive(Debug, Args)]
pub struct NmpPlanArgs {
    /// The nodes: a file or a directory of the exchange's `{"nodes": {...}}` answers.
    #[arg(long, value_name = "DIR|FILE")]
    pub nodes: PathBuf,
    /// Node policies by node id (`{"ORG/ID": {...}}`), a file or a directory of them; a node
    /// without one has an empty policy (only NMPs without constraints apply, as in anax).
    #[arg(long, value_name = "DIR|FILE")]
    pub node_policies: Option<PathBuf>,
    /// The org's node management policies.
    #[arg(long, value_name = "DIR")]
    pub policies: PathBuf,
    /// The hub's agent file versions (`/orgs/{org}/AgentFileVersion`).
    #[arg(long, value_name = "FILE")]
    pub versions: PathBuf,
    /// The upgrade manifests (CSS `agent_upgrade_manifests`); without it none exist.
    #[arg(long, value_name = "DIR")]
    pub manifests: Option<PathBuf>,
    /// The clock, RFC 3339; the NMPs' `now` starts here.
    #[arg(long, value_name = "RFC3339", value_parser = parse_time)]
    pub now: jiff::Timestamp,
    /// The random source's seed (the start times within each window).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// table: per NMP a line per node, then the fleet's versions; json: the same as data.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = PlanFormat::Table)]
    pub output: PlanFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanFormat {
    Table,
    Json,
}

const STATUS_HELP: &str = "Example:
  cvo edge nmp status --node node.json --policies nmps/ --versions versions.json \\
      --manifests manifests/ --now 2026-03-01T00:00:00Z --steps 10 -o json

Files are the exchange's JSON. --policies DIR holds one NMP per NAME.json (named ORG/NAME after
the node's org) or the exchange's {\"managementPolicy\": {\"ORG/NAME\": {...}}} answer;
--manifests DIR one upgrade manifest per ID.json, or ORG/ID.json for another org's (agentUpgradePolicy.manifest
               names ID or ORG/ID; IBM/edgeNodeFiles_manifest_2.31.0 is DIR/IBM/edgeNodeFiles_manifest_2.31.0.json).
Each step: the active job advances (download, install), then the monitor may start the next.
Downloads and installs succeed; --seed picks the start times in each policy's startWindow.

Exit codes:
  0  the statuses were computed
  1  a file cannot be read or is not valid (the file is named)
  2  usage error";

#[derive(Debug, Args)]
pub struct NmpStatusArgs {
    /// The node (`/orgs/{org}/nodes/{id}`): pattern, nodeType, softwareVersions, ha_group.
    #[arg(long, value_name = "FILE")]
    pub node: PathBuf,
    /// The node policy (`/nodes/{id}/policy`); without it an empty one (only NMPs without
    /// constraints apply, as in anax) and a device's agent files cannot be named.
    #[arg(long, value_name = "FILE")]
    pub node_policy: Option<PathBuf>,
    /// The org's node management policies.
    #[arg(long, value_name = "DIR")]
    pub policies: PathBuf,
    /// The hub's agent file versions (`/orgs/{org}/AgentFileVersion`).
    #[arg(long, value_name = "FILE")]
    pub versions: PathBuf,
    /// The upgrade manifests (CSS `agent_upgrade_manifests`); without it none exist.
    #[arg(long, value_name = "DIR")]
    pub manifests: Option<PathBuf>,
    /// The statuses kept from before: a previous run's `-o json` (the exchange's
    /// `{"managementStatus": ...}` with `agentUpgradeInternal`). The worker then starts as the
    /// agent does: `download started` is tried again, `reset` statuses are reset, a new
    /// `latest` re-arms.
    #[arg(long, value_name = "FILE")]
    pub statuses: Option<PathBuf>,
    /// The clock at the first step, RFC 3339 (`2026-03-01T00:00:00Z`).
    #[arg(long, value_name = "RFC3339", value_parser = parse_time)]
    pub now: jiff::Timestamp,
    /// The random source's seed (the start times within each window).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Monitor periods to run; 0 only creates the statuses.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub steps: u32,
    /// text: a line per policy; json: the exchange's {"managementStatus": {"ORG/NAME": ...}}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = EdgeFormat::Text)]
    pub output: EdgeFormat,
}

fn parse_time(text: &str) -> Result<jiff::Timestamp, String> {
    text.parse()
        .map_err(|e| format!("not an RFC 3339 time such as 2026-03-01T00:00:00Z: {e}"))
}

pub fn nmp(group: NmpGroup) -> CliResult {
    match group.command {
        NmpCommand::Status(args) => status(args),
        NmpCommand::Plan(args) => plan(args),
    }
}

/// The files of `--nodes`/`--node-policies`: the file, or the directory's `*.json`.
fn file_or_dir(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    match path.is_dir() {
        true => json_files(path),
        false => Ok(vec![path.to_owned()]),
    }
}

/// `{KEY: {ID: object}}` answers, merged; an id seen twice is an error naming both files.
fn objects_by_id<T: DeserializeOwned>(
    path: &Path,
    key: &str,
    doc: Doc,
) -> anyhow::Result<BTreeMap<String, T>> {
    let what = doc.what();
    let mut out = BTreeMap::new();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for file in file_or_dir(path)? {
        let value: Value = serde_json::from_str(&read(&file)?)
            .with_context(|| format!("{}: not JSON", file.display()))?;
        let map = match value.get(key) {
            Some(Value::Object(map)) => map.clone(),
            _ => match value {
                Value::Object(map) if key == "nodePolicy" => map,
                _ => bail!(
                    "{}: not the exchange's {{\"{key}\": {{\"ORG/ID\": ...}}}} answer",
                    file.display()
                ),
            },
        };
        // A field anax does not know is named once per file, not once per node.
        let mut warned = std::collections::BTreeSet::new();
        for (id, object) in map {
            let (parsed, warnings) = exchange::checked::<T>(object, doc)
                .with_context(|| format!("{}: {id}", file.display()))?;
            for w in warnings.into_iter().filter(|w| warned.insert(w.clone())) {
                eprintln!("warning: {}: {id}: {w}", file.display());
            }
            if let Some(before) = seen.insert(id.clone(), file.clone()) {
                bail!(
                    "{id}: in both {} and {}: give each {what} once",
                    before.display(),
                    file.display()
                );
            }
            out.insert(id, parsed);
        }
    }
    Ok(out)
}

fn plan(args: NmpPlanArgs) -> CliResult {
    let nodes: BTreeMap<String, exchange::Node> = objects_by_id(&args.nodes, "nodes", Doc::Node)?;
    let policies_of: BTreeMap<String, NodePolicy> = match &args.node_policies {
        Some(path) => objects_by_id(path, "nodePolicy", Doc::NodePolicy)?,
        None => BTreeMap::new(),
    };
    if let Some(id) = policies_of.keys().find(|id| !nodes.contains_key(*id)) {
        return Err(anyhow!(
            "{}: a node policy for {id}, which is not one of the --nodes{}",
            args.node_policies
                .as_deref()
                .unwrap_or(Path::new(""))
                .display(),
            suggest::did_you_mean(id, &nodes.keys().map(String::as_str).collect::<Vec<_>>())
        )
        .into());
    }
    let org = nodes
        .keys()
        .next()
        .and_then(|id| id.split_once('/'))
        .map_or("", |(org, _)| org)
        .to_owned();
    let (versions, manifests, policies) = read_hub_inputs(
        &args.versions,
        args.manifests.as_deref(),
        &args.policies,
        &org,
    )?;
    let fleet: Vec<FleetNode> = (nodes.iter())
        .map(|(id, node)| {
            let policy = policies_of.get(id).cloned();
            FleetNode {
                id: id.clone(),
                state: node_state(node, policy.as_ref()),
                policy,
            }
        })
        .collect();
    let hub = Hub {
        org: &org,
        versions: &versions,
        manifests: &manifests,
    };
    let planned = nmp_plan::plan(&fleet, &policies, &hub, args.now.as_second(), args.seed);
    match args.output {
        PlanFormat::Json => {
            let mut value = serde_json::to_value(&planned).map_err(anyhow::Error::from)?;
            // Times as the exchange writes them.
            for policy in value["policies"]
                .as_object_mut()
                .into_iter()
                .flat_map(|m| m.values_mut())
            {
                for node in policy["nodes"].as_array_mut().into_iter().flatten() {
                    let at = node["scheduled"].as_i64().unwrap_or_default();
                    node["scheduled"] = json!(crate::components::edge::nmp_status::rfc3339(at));
                }
            }
            let text = serde_json::to_string_pretty(&value).map_err(anyhow::Error::from)?;
            outln!("{text}");
        }
        PlanFormat::Table => {
            use std::fmt::Write as _;
            let mut out = String::new();
            for (name, policy) in &planned.policies {
                let _ = writeln!(
                    out,
                    "{name}: {} nodes, {} skipped",
                    policy.nodes.len(),
                    policy.skipped.len()
                );
                for s in &policy.nodes {
                    let versions: Vec<String> =
                        s.versions.iter().map(|(k, v)| format!("{k} {v}")).collect();
                    let _ = writeln!(
                        out,
                        "  {}  {}  {}  {}",
                        s.node,
                        crate::components::edge::nmp_status::rfc3339(s.scheduled),
                        s.outcome,
                        versions.join(", ")
                    );
                }
                for s in &policy.skipped {
                    let _ = writeln!(out, "  {}  skipped: {}", s.node, s.reason);
                }
            }
            let _ = writeln!(out, "fleet software versions (before -> after):");
            let all: std::collections::BTreeSet<&String> =
                planned.before.keys().chain(planned.after.keys()).collect();
            for version in all {
                let _ = writeln!(
                    out,
                    "  {version}: {} -> {}",
                    planned.before.get(version).unwrap_or(&0),
                    planned.after.get(version).unwrap_or(&0)
                );
            }
            outln!("{}", out.trim_end());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn status(args: NmpStatusArgs) -> CliResult {
    let (node_id, node) = super::edge_deploycheck::node(&args.node)?;
    let org = node_id
        .as_deref()
        .and_then(|id| id.split_once('/'))
        .map_or("", |(org, _)| org)
        .to_owned();
    let node_policy = match &args.node_policy {
        Some(path) => Some(document::<NodePolicy>(path, Doc::NodePolicy, "nodePolicy")?.1),
        None => None,
    };
    let (versions, manifests, policies) = read_hub_inputs(
        &args.versions,
        args.manifests.as_deref(),
        &args.policies,
        &org,
    )?;
    let now = args.now.as_second();
    let until = now + i64::from(args.steps) * MONITOR_PERIOD;
    if until > last_time() {
        return Err(anyhow!(
            "--now {} with --steps {} runs past 9999-12-30T22:00:00Z, the last time a status can show: use an earlier --now or fewer steps",
            args.now,
            args.steps
        )
        .into());
    }
    if let Some((name, _)) =
        (policies.iter()).find(|(_, p)| !nmp_worker::window_fits(p, now, until))
    {
        return Err(anyhow!(
            "{}: {name}: its start plus startWindow pass 9999-12-30T22:00:00Z, the last time a status can show: use a smaller startWindow or an earlier start",
            args.policies.display()
        )
        .into());
    }

    let mut worker = Worker::new(node_state(&node, node_policy.as_ref()), WORKING_DIR);
    let hub = Hub {
        org: &org,
        versions: &versions,
        manifests: &manifests,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    match &args.statuses {
        Some(path) => {
            worker.restore(read_statuses(path)?, &hub);
            let deferred = worker.start(&policies, node_policy.as_ref(), &versions, now, &mut rng);
            for name in deferred {
                eprintln!(
                    "note: {name} asks for latest and is in progress: the hub's versions are checked again for it when it ends"
                );
            }
        }
        None => worker.sync(&policies, node_policy.as_ref(), now, &mut rng),
    }
    for step in 0..i64::from(args.steps) {
        worker.tick(
            now + step * MONITOR_PERIOD,
            &hub,
            true,
            &mut |_, _, _| Ok(()),
            &mut |_| Ok(()),
        );
    }
    print(&worker.statuses, args.output)?;
    Ok(ExitCode::SUCCESS)
}

/// The node as the worker sees it: its pattern and type, the agent's versions
/// (`softwareVersions` `horizon`, `config`, `cert`), its HA group and the software files it
/// needs (from the node policy's built-in properties for a device).
fn node_state(node: &exchange::Node, policy: Option<&NodePolicy>) -> NodeState {
    let property = |name: &str| {
        (policy.into_iter())
            .flat_map(|p| p.properties.iter())
            .find(|p| p.name == name)
            .and_then(|p| p.value.clone())
    };
    let cluster = node.node_type == "cluster";
    // A cluster's files name its architecture only; anax's agent always holds a node policy,
    // whose openhorizon.arch is the node's arch when no policy document is given.
    let device = (policy.is_some() || cluster).then(|| DeviceFacts {
        os: property(agent_files::OS_PROPERTY).map(|v| match v {
            Value::String(os) => os,
            other => other.to_string(),
        }),
        arch: (property("openhorizon.arch").and_then(|v| v.as_str().map(str::to_owned)))
            .unwrap_or_else(|| node.arch.clone()),
        containerized: property("openhorizon.containerized").and_then(|v| v.as_bool())
            == Some(true),
    });
    let versions = (FileKind::ALL.into_iter())
        .filter_map(|kind| Some((kind, node.software_versions.get(kind.node_key())?.clone())))
        .collect();
    let (software_files, software_files_error) =
        match agent_files::software_files(cluster, device.as_ref()) {
            Ok(files) => (files, None),
            Err(e) => (Vec::new(), Some(e)),
        };
    NodeState {
        pattern: node.pattern.clone(),
        cluster,
        ha_group: node.ha_group.clone(),
        versions,
        software_files,
        software_files_error,
    }
}

/// A JSON object whose keys must all be known (a typo is an error with the near miss).
fn strict<T: DeserializeOwned>(path: &Path, what: &str, known: &[&str]) -> anyhow::Result<T> {
    let value: Value = serde_json::from_str(&read(path)?)
        .with_context(|| format!("{}: not JSON", path.display()))?;
    check_keys(&value, what, known).with_context(|| format!("{}", path.display()))?;
    serde_json::from_value(value).with_context(|| format!("{}: not {what}", path.display()))
}

fn check_keys(value: &Value, what: &str, known: &[&str]) -> anyhow::Result<()> {
    let Some(object) = value.as_object() else {
        bail!("not {what}: a JSON object is expected");
    };
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => bail!(
            "{}",
            suggest::unknown_value(&format!("{what} field"), key, known)
        ),
        None => Ok(()),
    }
}

fn warn_invalid_versions(path: &Path, versions: &AgentFileVersions) {
    for kind in FileKind::ALL {
        for v in versions
            .of(kind)
            .iter()
            .filter(|v| !version::is_version_string(v))
        {
            eprintln!(
                "warning: {}: {v:?} is not a version; ignored, as anax ignores it",
                path.display()
            );
        }
    }
}

const MANIFEST_KEYS: [&str; 3] = [
    "softwareUpgrade",
    "certificateUpgrade",
    "configurationUpgrade",
];

/// `DIR/ID.json` → manifest ID (the node's org), `DIR/ORG/ID.json` → manifest ORG/ID (another
/// org's, such as IBM's, where a hub usually keeps them).
fn read_manifests(dir: &Path) -> anyhow::Result<BTreeMap<String, UpgradeManifest>> {
    let mut manifests = BTreeMap::new();
    let mut files: Vec<(String, PathBuf)> = (json_files(dir)?.into_iter())
        .map(|path| (stem(&path), path))
        .collect();
    let orgs = std::fs::read_dir(dir).with_context(|| format!("{}: cannot read", dir.display()))?;
    for entry in orgs {
        let org_dir = entry?.path();
        if org_dir.is_dir() {
            let org = org_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            for path in json_files(&org_dir)? {
                files.push((format!("{org}/{}", stem(&path)), path));
            }
        }
    }
    for (id, path) in files {
        let value: Value = serde_json::from_str(&read(&path)?)
            .with_context(|| format!("{}: not JSON", path.display()))?;
        check_keys(&value, "upgrade manifest", &MANIFEST_KEYS)
            .with_context(|| format!("{}", path.display()))?;
        for key in MANIFEST_KEYS {
            if let Some(part) = value.get(key) {
                check_keys(part, key, &["files", "version"])
                    .with_context(|| format!("{}", path.display()))?;
            }
        }
        let manifest: UpgradeManifest = serde_json::from_value(value)
            .with_context(|| format!("{}: not an upgrade manifest", path.display()))?;
        manifest.validate().map_err(|e| {
            anyhow!(
                "{}: {e} Use latest, a version or a version range",
                path.display()
            )
        })?;
        manifests.insert(id, manifest);
    }
    Ok(manifests)
}

const NMP_KEYS: [&str; 13] = [
    "owner",
    "label",
    "description",
    "constraints",
    "properties",
    "patterns",
    "enabled",
    "start",
    "startWindow",
    "agentUpgradePolicy",
    "agentImagePolicy",
    "lastUpdated",
    "created",
];

/// What `nmp status` and `nmp plan` both read from the hub's files: the agent file versions
/// (warned about when invalid), the upgrade manifests, and the policies of `org` (whose seed's
/// `atLeastVersion` adds a manifest).
#[allow(clippy::type_complexity)]
fn read_hub_inputs(
    versions: &Path,
    manifests: Option<&Path>,
    policies: &Path,
    org: &str,
) -> anyhow::Result<(
    AgentFileVersions,
    BTreeMap<String, UpgradeManifest>,
    BTreeMap<String, ManagementPolicy>,
)> {
    let file_versions: AgentFileVersions = strict(
        versions,
        "agent file versions",
        &[
            "agentSoftwareVersions",
            "agentConfigVersions",
            "agentCertVersions",
            "lastUpdated",
        ],
    )?;
    warn_invalid_versions(versions, &file_versions);
    let mut manifests = match manifests {
        Some(dir) => read_manifests(dir)?,
        None => BTreeMap::new(),
    };
    let policies = read_policies(policies, org, &mut manifests)?;
    Ok((file_versions, manifests, policies))
}

/// The policies by `ORG/NAME`, validated; the seed's `atLeastVersion` becomes a manifest
/// `seed-NAME`.
fn read_policies(
    dir: &Path,
    org: &str,
    manifests: &mut BTreeMap<String, UpgradeManifest>,
) -> anyhow::Result<BTreeMap<String, ManagementPolicy>> {
    let mut policies = BTreeMap::new();
    for path in json_files(dir)? {
        let value: Value = serde_json::from_str(&read(&path)?)
            .with_context(|| format!("{}: not JSON", path.display()))?;
        let entries: Vec<(String, Value)> = match value.get("managementPolicy") {
            Some(Value::Object(map)) => map.clone().into_iter().collect(),
            _ => {
                let name = match org {
                    "" => stem(&path),
                    org => format!("{org}/{}", stem(&path)),
                };
                vec![(name, value)]
            }
        };
        for (name, value) in entries {
            let at = || format!("{}: {name}", path.display());
            check_keys(&value, "node management policy", &NMP_KEYS).with_context(at)?;
            check_parts(&value).with_context(at)?;
            if value.get("enabled").is_none() {
                eprintln!(
                    "warning: {}: no enabled field, which the exchange requires: taken as false, the policy is ignored",
                    at()
                );
            }
            let policy: ManagementPolicy = serde_json::from_value(value)
                .with_context(|| format!("{}: not a node management policy", at()))?;
            let validated = nmp::validate(policy).with_context(at)?;
            for warning in &validated.warnings {
                eprintln!("warning: {}: {warning}", at());
            }
            let mut policy = validated.policy;
            if let Some(seed) = validated.seed_manifest {
                let id = format!("seed-{}", name.rsplit('/').next().unwrap_or(&name));
                let mut manifest: UpgradeManifest =
                    serde_json::from_value(seed).context("the seed's manifest")?;
                manifest.software_minimum = validated.seed_minimum.clone();
                manifest.validate().map_err(|e| {
                    anyhow!(
                        "{}: agentUpgradePolicy.atLeastVersion: {e} Use current or a version",
                        at()
                    )
                })?;
                if manifests.insert(id.clone(), manifest).is_some() {
                    bail!(
                        "{}: the seed's atLeastVersion stands for a manifest {id}, and --manifests has a file {id}.json: rename that file or give the policy a manifest",
                        at()
                    );
                }
                if let Some(upgrade) = policy.agent_upgrade_policy.as_mut() {
                    upgrade.manifest = id;
                }
            }
            if policies.insert(name.clone(), policy).is_some() {
                bail!(
                    "{}: policy {name} is given twice in {}",
                    path.display(),
                    dir.display()
                );
            }
        }
    }
    Ok(policies)
}

/// The fields inside an NMP's `agentUpgradePolicy` and `properties` entries.
fn check_parts(value: &Value) -> anyhow::Result<()> {
    if let Some(upgrade) = value.get("agentUpgradePolicy") {
        let known = [
            "manifest",
            "allowDowngrade",
            "atLeastVersion",
            "start",
            "duration",
        ];
        check_keys(upgrade, "agentUpgradePolicy", &known)?;
    }
    if let Some(Value::Array(properties)) = value.get("properties") {
        for property in properties {
            check_keys(property, "property", &["name", "value", "type"])?;
        }
    }
    Ok(())
}

/// `{"managementStatus": {"ORG/NAME": status}}`, as `-o json` prints it.
fn read_statuses(path: &Path) -> anyhow::Result<BTreeMap<String, PolicyStatus>> {
    let value: Value = serde_json::from_str(&read(path)?)
        .with_context(|| format!("{}: not JSON", path.display()))?;
    check_keys(
        &value,
        "node management statuses",
        &["managementStatus", "lastIndex"],
    )
    .with_context(|| format!("{}", path.display()))?;
    let statuses = value.get("managementStatus").cloned().unwrap_or(json!({}));
    // A status that is no status: the valid ones and the near miss, not serde's variant list.
    if let Value::Object(map) = &statuses {
        for (name, status) in map {
            let text = status.pointer("/agentUpgradePolicyStatus/status");
            if let Some(text) = text.and_then(Value::as_str) {
                text.parse::<Status>()
                    .map_err(|e| anyhow!("{}: {name}: {e}", path.display()))?;
            }
        }
    }
    serde_json::from_value(statuses).with_context(|| {
        format!(
            "{}: not node management statuses with agentUpgradeInternal (as `cvo edge nmp status -o json` prints them)",
            path.display()
        )
    })
}

fn json_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot read the directory", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("{}: cannot read the directory", dir.display()))?
            .path();
        if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn print(statuses: &BTreeMap<String, PolicyStatus>, output: EdgeFormat) -> anyhow::Result<()> {
    match output {
        EdgeFormat::Json => {
            let out = json!({"managementStatus": statuses, "lastIndex": 0});
            outln!("{}", serde_json::to_string_pretty(&out)?);
        }
        EdgeFormat::Text if statuses.is_empty() => {
            outln!("no node management policy applies to the node")
        }
        EdgeFormat::Text => {
            for (name, status) in statuses {
                outln!("{name}: {}", describe(status));
            }
        }
    }
    Ok(())
}

fn describe(status: &PolicyStatus) -> String {
    let s = &status.agent_upgrade;
    let mut parts = vec![s.status.to_string()];
    let scheduled = match s.scheduled_time.as_str() {
        "" => "no agentUpgradePolicy".to_owned(),
        at => format!("scheduled {at}"),
    };
    parts.push(scheduled);
    if !s.start_time.is_empty() {
        parts.push(format!("started {}", s.start_time));
    }
    if !s.end_time.is_empty() {
        parts.push(format!("ended {}", s.end_time));
    }
    let v = &s.upgraded_versions;
    for (kind, version) in [
        ("software", &v.software_version),
        ("config", &v.config_version),
        ("cert", &v.cert_version),
    ] {
        if !version.is_empty() {
            parts.push(format!("{kind} {version}"));
        }
    }
    if status.internal.download_attempts > 0 {
        parts.push(format!(
            "download retries {}",
            status.internal.download_attempts
        ));
    }
    let mut line = parts.join(", ");
    if !s.error_message.is_empty() {
        line.push_str(&format!(": {}", s.error_message));
    }
    line
}
