//! `cvo agent`: the agent late-binding component's decisions offline, for scripting and
//! checking. `cvo agent transition` runs the host state machine once; `cvo agent admit` runs
//! the Agent or InfraEnv admission webhook's rules on objects in files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::CliResult;
use crate::components::agents::keys::{KIND_ADD_TO_EXISTING_CLUSTER_HOST, KIND_HOST};
use crate::components::agents::reconcile::{STAGE_DONE, STAGE_REBOOTING};
use crate::components::agents::state::{
    HostEvent, HostFacts, HostState, Registration, allowed_from, transition,
};
use crate::components::agents::types::{Agent, InfraEnv};
use crate::components::agents::validation::{VALIDATIONS, lookup};
use crate::components::agents::webhook::{Admission, Operation, admit_agent, admit_infraenv};
use crate::suggest::unknown_value;

#[derive(Debug, Args)]
pub struct AgentGroup {
    #[command(subcommand)]
    pub command: AgentCommand,
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// What an event (bind, unbind, reclaim, register, refresh, cancel) does to a host in a
    /// state: the state it goes to and its statusInfo, or the refusal and the states the event
    /// runs from.
    #[command(after_help = TRANSITION_HELP)]
    Transition(TransitionArgs),
    /// Judge an Agent or InfraEnv create or update as the admission webhook does.
    #[command(after_help = ADMIT_HELP)]
    Admit(AdmitArgs),
    /// Simulate N hosts booting an InfraEnv's discovery image: they register as Agents with an
    /// inventory, check in, and obey the `exit` step that completes a bind or an unbind,
    /// until interrupted.
    #[command(after_help = SIMULATE_HELP)]
    Simulate(SimulateArgs),
}

const SIMULATE_HELP: &str = "The simulator does, through the Kubernetes API, what assisted-service does for a real
discovery agent: it creates the Agents (named PREFIX-N, in the InfraEnv's namespace) and writes the host's registration
(state and inventory) into their status; `cvo controller agents` does the rest. Hosts below the pool minimums
(2 cores, 8 GiB memory, a 100 GB disk) become insufficient-unbound. A host installed from disk runs no discovery
agent; running the simulator again boots every host into the discovery image again.

Exit codes:
  0  interrupted (SIGINT/SIGTERM) after registering
  1  the InfraEnv or the cluster cannot be read, or a host cannot register
  2  usage error";

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The InfraEnv whose discovery image the hosts boot, as NAMESPACE/NAME.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_namespaced)]
    pub infraenv: (String, String),
    /// How many hosts.
    #[arg(long, value_name = "N")]
    pub hosts: u32,
    /// CPU cores per host.
    #[arg(long, value_name = "C", default_value_t = 4)]
    pub cpu: i64,
    /// Memory per host, GiB.
    #[arg(long, value_name = "M", default_value_t = 16)]
    pub memory_gib: i64,
    /// Installation disk per host, GiB.
    #[arg(long, value_name = "D", default_value_t = 120)]
    pub disk_gib: i64,
    /// Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or the in-cluster config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Agent names are PREFIX-0, PREFIX-1, ... [default: the InfraEnv's name].
    #[arg(long, value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// Seconds between a host's check-ins.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub check_in_seconds: u64,
    /// Milliseconds between looks at the hosts' next steps.
    #[arg(long, value_name = "MS", default_value_t = 500, hide = true)]
    pub poll_millis: u64,
}

fn parse_namespaced(value: &str) -> Result<(String, String), String> {
    match value.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns.to_owned(), name.to_owned()))
        }
        _ => Err(format!(
            "{value:?} is not NAMESPACE/NAME (e.g. --infraenv pool/datacenter-a)"
        )),
    }
}

// Laid out by hand: clap wraps no help text without its `wrap_help` feature.
const TRANSITION_HELP: &str = "A refused transition leaves the host where it is (`to` is `from`) with the state machine's error,
and the states the event runs from (`allowedFrom`). A registration can also be refused by a rule that matched, with
its HTTP status (`code`): an installed host's (409), or one that must boot from disk (403).

register takes --bound (the host registers the first time from an InfraEnv with a clusterRef), --stage (its install
stage: Rebooting or Done change where a registration goes) and --kind. refresh takes what the host monitor saw: the
flags --disconnected, --media-disconnected, --no-inventory, --failing VALIDATION (repeatable; statusInfo then names
the failing validations by id) and --reclaim-timed-out.

Exit codes:
  0  the transition was judged (allowed or refused)
  2  usage error (an unknown state, event, stage, kind or validation, or a flag of another event)";

const ADMIT_HELP: &str = "Files are YAML or JSON, one object each; `-` reads standard input. An object without
metadata.namespace is not judged on the namespace rules. InfraEnv updates that add osImageVersion beside a clusterRef
are allowed only with --cluster-installed (the webhook reads the ClusterDeployment's spec.installed).

Exit codes:
  0  the request was judged (allowed or denied)
  1  a file cannot be read, or is not the kind asked for
  2  usage error";

#[derive(Debug, Args)]
pub struct TransitionArgs {
    /// The host's state (`status.debugInfo.state`), e.g. known-unbound.
    #[arg(long, value_name = "STATE", value_parser = parse_state)]
    pub state: HostState,
    /// bind, unbind, reclaim, register, refresh or cancel.
    #[arg(long, value_name = "EVENT", value_parser = parse_event)]
    pub event: Event,
    /// register: the host registers the first time and its InfraEnv has a clusterRef.
    #[arg(long)]
    pub bound: bool,
    /// register: the host's install stage (status.progress.currentStage), e.g. Rebooting.
    #[arg(long, value_name = "STAGE", value_parser = parse_stage)]
    pub stage: Option<String>,
    /// register: Host (day 1) or AddToExistingClusterHost (day 2).
    #[arg(long, value_name = "KIND", value_parser = parse_kind)]
    pub kind: Option<String>,
    /// refresh: the host has not checked in recently.
    #[arg(long)]
    pub disconnected: bool,
    /// refresh: the discovery media cannot be read.
    #[arg(long)]
    pub media_disconnected: bool,
    /// refresh: the host has sent no inventory.
    #[arg(long)]
    pub no_inventory: bool,
    /// refresh: a validation that fails (repeatable, or comma-separated), e.g.
    /// has-min-cpu-cores, machine-cidr-defined.
    #[arg(long, value_name = "VALIDATION", value_delimiter = ',', value_parser = parse_validation)]
    pub failing: Vec<String>,
    /// refresh: the host has been reclaiming for longer than the reclaim timeout.
    #[arg(long)]
    pub reclaim_timed_out: bool,
    /// text: one line and the statusInfo; json|yaml: {"from", "event", "allowed", "to",
    /// "statusInfo", "error", "code", "allowedFrom"}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// The events `cvo agent transition` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Bind,
    Unbind,
    Reclaim,
    Register,
    Refresh,
    Cancel,
}

impl Event {
    const ALL: [(&'static str, Event); 6] = [
        ("bind", Event::Bind),
        ("unbind", Event::Unbind),
        ("reclaim", Event::Reclaim),
        ("register", Event::Register),
        ("refresh", Event::Refresh),
        ("cancel", Event::Cancel),
    ];

    fn name(self) -> &'static str {
        Event::ALL
            .iter()
            .find(|(_, e)| *e == self)
            .map_or("", |(n, _)| n)
    }
}

/// The install stages (upstream's `models.HostStage*`).
const STAGES: &[&str] = &[
    "Starting installation",
    "Waiting for control plane",
    "Waiting for bootkube",
    "Waiting for controller",
    "Installing",
    "Writing image to disk",
    "Rebooting",
    "Waiting for ignition",
    "Configuring",
    "Joined",
    "Done",
    "Failed",
];

fn parse_stage(text: &str) -> Result<String, String> {
    match STAGES.contains(&text) {
        true => Ok(text.to_owned()),
        false => Err(unknown_value("install stage", text, STAGES)),
    }
}

fn parse_kind(text: &str) -> Result<String, String> {
    let kinds = [KIND_HOST, KIND_ADD_TO_EXISTING_CLUSTER_HOST];
    match kinds.contains(&text) {
        true => Ok(text.to_owned()),
        false => Err(unknown_value("host kind", text, &kinds)),
    }
}

fn parse_validation(text: &str) -> Result<String, String> {
    let ids: Vec<&str> = VALIDATIONS.iter().map(|v| v.id).collect();
    match ids.contains(&text) {
        true => Ok(text.to_owned()),
        false => Err(unknown_value("validation", text, &ids)),
    }
}

impl TransitionArgs {
    /// The state machine's event, from `--event` and its flags; a flag of another event is a
    /// usage error.
    fn host_event(&self) -> Result<HostEvent, String> {
        let register = self.bound || self.stage.is_some() || self.kind.is_some();
        let refresh = self.disconnected
            || self.media_disconnected
            || self.no_inventory
            || !self.failing.is_empty()
            || self.reclaim_timed_out;
        let only = |flags: &str, event: &str| {
            format!(
                "{flags} {} for --event {event} only",
                match flags.contains(',') {
                    true => "are",
                    false => "is",
                }
            )
        };
        if register && self.event != Event::Register {
            return Err(only("--bound, --stage, --kind", "register"));
        }
        if refresh && self.event != Event::Refresh {
            return Err(only(
                "--disconnected, --media-disconnected, --no-inventory, --failing, --reclaim-timed-out",
                "refresh",
            ));
        }
        Ok(match self.event {
            Event::Bind => HostEvent::Bind,
            Event::Unbind => HostEvent::Unbind,
            Event::Reclaim => HostEvent::Reclaim,
            Event::Cancel => HostEvent::Cancel,
            Event::Register => {
                let stage = self.stage.as_deref().unwrap_or_default();
                let day2 = self.kind.as_deref() == Some(KIND_ADD_TO_EXISTING_CLUSTER_HOST);
                HostEvent::Register(Registration {
                    bound: self.bound,
                    in_reboot: stage == STAGE_REBOOTING,
                    day2_done: day2 && stage == STAGE_DONE,
                    ..Registration::default()
                })
            }
            Event::Refresh => HostEvent::Refresh(self.facts()),
        })
    }

    /// What `--event refresh`'s flags say the host monitor saw: every validation passes but
    /// those `--failing` names.
    fn facts(&self) -> HostFacts {
        let fails = |id: &str| self.failing.iter().any(|f| f == id);
        let cluster_dependent = (self.failing.iter())
            .any(|f| lookup(f).is_some_and(|v| v.cluster_dependent) || f.ends_with("-for-role"));
        HostFacts {
            connected: !self.disconnected,
            media_connected: !self.media_disconnected,
            has_inventory: !self.no_inventory,
            has_min_valid_disks: !fails("has-min-valid-disks"),
            has_min_cpu_cores: !fails("has-min-cpu-cores"),
            has_min_memory: !fails("has-min-memory"),
            hostname_valid: !fails("hostname-valid"),
            sufficient_for_install: !cluster_dependent,
            input_fields_exist: !fails("machine-cidr-defined"),
            failing_validations: self.failing.clone(),
            reclaim_timed_out: self.reclaim_timed_out,
        }
    }
}

fn parse_state(text: &str) -> Result<HostState, String> {
    text.parse()
        .map_err(|e: crate::components::agents::state::UnknownState| e.to_string())
}

fn parse_event(text: &str) -> Result<Event, String> {
    (Event::ALL.iter())
        .find(|(name, _)| *name == text)
        .map(|(_, event)| *event)
        .ok_or_else(|| {
            let valid: Vec<&str> = Event::ALL.iter().map(|(n, _)| *n).collect();
            unknown_value("event", text, &valid)
        })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Yaml,
}

#[derive(Debug, Args)]
pub struct AdmitArgs {
    /// The kind of the objects.
    #[arg(long, value_enum, ignore_case = true)]
    pub kind: AdmitKind,
    /// The request's operation.
    #[arg(long, value_enum, ignore_case = true)]
    pub operation: AdmitOperation,
    /// The object as it was (UPDATE only).
    #[arg(long, value_name = "FILE")]
    pub old: Option<PathBuf>,
    /// The object as created or updated.
    #[arg(long, value_name = "FILE")]
    pub new: PathBuf,
    /// InfraEnv UPDATE: the ClusterDeployment of spec.clusterRef is installed.
    #[arg(long)]
    pub cluster_installed: bool,
    /// text: allowed, or denied and the message; json|yaml: {"allowed", "message"}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AdmitKind {
    #[value(name = "Agent")]
    Agent,
    #[value(name = "InfraEnv")]
    InfraEnv,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AdmitOperation {
    #[value(name = "CREATE")]
    Create,
    #[value(name = "UPDATE")]
    Update,
}

pub fn agent(group: AgentGroup) -> CliResult {
    match group.command {
        AgentCommand::Transition(args) => transition_command(args),
        AgentCommand::Admit(args) => admit(args),
        AgentCommand::Simulate(args) => simulate(args),
    }
}

fn simulate(args: SimulateArgs) -> CliResult {
    use crate::components::agents::discovery::Hardware;
    use crate::components::agents::simulator::{SimulatorOptions, run};
    let (namespace, name) = args.infraenv.clone();
    let options = SimulatorOptions {
        prefix: args.prefix.clone().unwrap_or_else(|| name.clone()),
        namespace,
        infra_env: name,
        hosts: args.hosts,
        hardware: Hardware {
            cpu_cores: args.cpu,
            memory_gib: args.memory_gib,
            disk_gib: args.disk_gib,
        },
        heartbeat: std::time::Duration::from_secs(args.check_in_seconds.max(1)),
        poll: std::time::Duration::from_millis(args.poll_millis.max(10)),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let client = super::connect::connect(args.kubeconfig.as_deref(), None).await?;
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            crate::host::signal::shutdown_signal().await;
            let _ = tx.send(true);
        });
        let infraenv = format!("{}/{}", options.namespace, options.infra_env);
        let registered = |n: u32| {
            println!("registered {n} hosts from InfraEnv {infraenv}");
        };
        run(client, options.clone(), registered, rx).await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `cvo agent transition`'s answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TransitionReport {
    from: String,
    event: &'static str,
    allowed: bool,
    to: String,
    status_info: Option<String>,
    error: Option<String>,
    /// A refusal's HTTP status (500: no rule).
    code: Option<u16>,
    /// The states the event runs from (with these flags).
    allowed_from: Vec<String>,
}

fn transition_command(args: TransitionArgs) -> CliResult {
    let event = match args.host_event() {
        Ok(event) => event,
        Err(message) => usage_error("transition", &message),
    };
    let allowed_from = allowed_from(&event)
        .into_iter()
        .map(|s| s.to_string())
        .collect();
    let report = match transition(args.state, &event) {
        Ok(t) => TransitionReport {
            from: t.from.to_string(),
            event: args.event.name(),
            allowed: true,
            to: t.to.to_string(),
            status_info: t.status_info,
            error: None,
            code: None,
            allowed_from,
        },
        Err(e) => TransitionReport {
            from: args.state.to_string(),
            event: args.event.name(),
            allowed: false,
            to: args.state.to_string(),
            status_info: None,
            error: Some(e.to_string()),
            code: Some(e.code()),
            allowed_from,
        },
    };
    print(&report, args.output, text_transition)
}

/// `known-unbound --bind--> binding` and the statusInfo, or the refusal and where the event
/// runs from.
fn text_transition(report: &TransitionReport) -> String {
    let shown = |state: &str| match state {
        "" => "\"\"".to_owned(),
        state => state.to_owned(),
    };
    let from = shown(&report.from);
    match (&report.status_info, &report.error) {
        (_, Some(error)) if report.code == Some(500) => {
            let states: Vec<String> = report.allowed_from.iter().map(|s| shown(s)).collect();
            let states = match states.as_slice() {
                [] => "no state".to_owned(),
                many => many.join(", "),
            };
            format!(
                "{from} --{}--> refused: {error}\n{} runs from: {states}",
                report.event, report.event
            )
        }
        (_, Some(error)) => format!(
            "{from} --{}--> refused ({}): {error}",
            report.event,
            report.code.unwrap_or_default()
        ),
        (info, None) => format!(
            "{from} --{}--> {}\nstatusInfo: {}",
            report.event,
            shown(&report.to),
            info.as_deref().unwrap_or("(unchanged)")
        ),
    }
}

fn admit(args: AdmitArgs) -> CliResult {
    let operation = match args.operation {
        AdmitOperation::Create => Operation::Create,
        AdmitOperation::Update => Operation::Update,
    };
    match (operation, &args.old) {
        (Operation::Update, None) => usage_error("admit", "--operation UPDATE needs --old FILE"),
        (Operation::Create, Some(_)) => {
            usage_error("admit", "--old is for --operation UPDATE only")
        }
        _ => {}
    }
    let admission = match args.kind {
        AdmitKind::Agent => {
            let new: Agent = read_object(&args.new, "Agent")?;
            let old: Option<Agent> = args
                .old
                .as_deref()
                .map(|p| read_object(p, "Agent"))
                .transpose()?;
            admit_agent(operation, old.as_ref(), &new)
        }
        AdmitKind::InfraEnv => {
            let new: InfraEnv = read_object(&args.new, "InfraEnv")?;
            let old: Option<InfraEnv> = (args.old.as_deref())
                .map(|p| read_object(p, "InfraEnv"))
                .transpose()?;
            admit_infraenv(operation, old.as_ref(), &new, Some(args.cluster_installed))
        }
    };
    print(&admission, args.output, text_admission)
}

fn text_admission(admission: &Admission) -> String {
    match admission.allowed {
        true => "allowed".to_owned(),
        false => format!("denied: {}", admission.message),
    }
}

/// A usage error of `cvo agent SUBCOMMAND`, reported as clap reports its own (exit code 2).
fn usage_error(subcommand: &str, message: &str) -> ! {
    super::usage_error(
        &["agent", subcommand],
        clap::error::ErrorKind::ArgumentConflict,
        message,
    )
}

/// Prints a verdict in `format` (`text` through `text`); the command judged, so it succeeds.
fn print<T: Serialize>(value: &T, format: Format, text: fn(&T) -> String) -> CliResult {
    let out = match format {
        Format::Text => text(value),
        Format::Yaml => serde_saphyr::to_string(value).context("cannot write YAML")?,
        Format::Json => serde_json::to_string_pretty(value).context("cannot write JSON")?,
    };
    outln!("{}", out.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// The one object of a YAML or JSON file (`-`: standard input), which must be a `kind` of
/// `agent-install.openshift.io/v1beta1` where it says what it is.
fn read_object<T: DeserializeOwned>(path: &Path, kind: &str) -> anyhow::Result<T> {
    let (origin, text) = super::input::read_input(path)?;
    let value = parse_one(&text).with_context(|| origin.clone())?;
    check_kind(&value, kind).with_context(|| origin.clone())?;
    serde_json::from_value(value).with_context(|| format!("{origin}: not a valid {kind}"))
}

/// The file's one document as JSON.
fn parse_one(text: &str) -> anyhow::Result<Value> {
    let mut values: Vec<Value> = (super::input::documents(text)?.into_iter())
        .map(|(_, value)| value)
        .collect();
    match values.len() {
        1 => Ok(values.remove(0)),
        0 => anyhow::bail!("no object in the file"),
        n => anyhow::bail!("{n} objects in the file; give one object per file"),
    }
}

fn check_kind(value: &Value, kind: &str) -> anyhow::Result<()> {
    if !value.is_object() {
        anyhow::bail!("not an object");
    }
    let field = |name: &str| value.get(name).and_then(Value::as_str);
    if let Some(found) = field("kind").filter(|k| *k != kind) {
        anyhow::bail!("kind is {found:?}, not {kind:?} (--kind)");
    }
    let api_version = "agent-install.openshift.io/v1beta1";
    if let Some(found) = field("apiVersion").filter(|v| *v != api_version) {
        anyhow::bail!("apiVersion is {found:?}, not {api_version:?}");
    }
    Ok(())
}
