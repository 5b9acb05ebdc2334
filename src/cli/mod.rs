//! The command line: argument definitions and the commands, each a thin shell over the core.
//!
//! Exit codes: 0 ok, 1 invalid input or failed checks, 2 usage error (clap's own).

/// `println!` that stops quietly when the reader goes away (`cvo explain | head`) instead of
/// panicking on the broken pipe.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::emit(&format!($($arg)*)) };
}

#[cfg(feature = "cluster")]
mod agent;
#[cfg(feature = "cluster")]
mod apply;
mod capabilities;
mod completion;
#[cfg(feature = "cluster")]
mod connect;
#[cfg(feature = "cluster")]
mod controller;
#[cfg(feature = "cluster")]
mod crds;
#[cfg(feature = "cluster")]
mod dt;
#[cfg(feature = "cluster")]
mod edge;
#[cfg(feature = "cluster")]
mod edge_agent;
#[cfg(feature = "cluster")]
mod edge_deploy;
#[cfg(feature = "cluster")]
mod edge_deploycheck;
#[cfg(feature = "cluster")]
mod edge_nmp;
#[cfg(feature = "cluster")]
mod edge_package;
#[cfg(feature = "cluster")]
mod edge_placement;
mod graph;
mod inclusion;
#[cfg(feature = "cluster")]
mod input;
mod payload_commands;
mod payload_image;
mod payload_info;
mod payload_mirror;
mod payload_new;
mod plan;
mod signatures;
#[cfg(feature = "cluster")]
mod start;
#[cfg(feature = "cluster")]
mod upgrade;
mod validate;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use clap::{Parser, Subcommand, ValueEnum};

pub use inclusion::InclusionArgs;

use crate::manifest::ParseError;
use crate::payload::{LoadError, LoadOptions, Payload, PayloadSource, read_input};

#[derive(Debug, Parser)]
// A fixed width (clap measures no terminal without its `wrap_help` feature) wide enough that
// every command lays its flags out the same way, description beside the flag.
#[command(
    name = "cvo",
    version,
    term_width = 120,
    about = "Release-payload processor in the style of the OpenShift Cluster Version Operator"
)]
#[cfg_attr(
    not(feature = "cluster"),
    command(
        after_help = "This cvo was built without the `cluster` feature: the apply, start, crds, controller, dt, \
                          agent and edge commands are left out. Build with default features to have them."
    )
)]
pub struct Cli {
    /// Log format on standard error.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

/// How release images are reached and where they are extracted: the flags of every command
/// that reads a payload or an image.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Release images and registries")]
pub struct ImageArgs {
    /// Where release images are extracted [default: $XDG_CACHE_HOME/cvo/payloads, else
    /// ~/.cache/cvo/payloads].
    #[arg(long, env = "CVO_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Registry user name (with --registry-password-stdin); default: the auth files podman and
    /// docker write ($REGISTRY_AUTH_FILE, ${XDG_RUNTIME_DIR}/containers/auth.json,
    /// ~/.config/containers/auth.json, ~/.docker/config.json) and their credential helpers, else
    /// anonymous.
    #[arg(long, value_name = "USER", requires = "registry_password_stdin")]
    pub registry_username: Option<String>,
    /// Read the registry password from standard input (with --registry-username).
    #[arg(long, requires = "registry_username")]
    pub registry_password_stdin: bool,
    /// A registry (`HOST` or `HOST:PORT`) to reach over plain HTTP; loopback registries always
    /// are.
    #[arg(long, value_name = "HOST")]
    pub insecure_registry: Vec<String>,
    /// A `certs.d` directory: `DIR/<host[:port]>/*.crt` are the CA certificates (PEM) of that
    /// registry, which is then reached over TLS even on loopback (docker's and podman's
    /// convention); default: /etc/containers/certs.d, then /etc/docker/certs.d.
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Vec<PathBuf>,
    /// Draw no progress bar while pulling from a registry (none is drawn anyway when standard
    /// error is not a terminal, $CI is set, or the output is machine-readable).
    #[arg(long)]
    pub quiet: bool,
    /// A docker-style auth file (`auths.<host>.auth`) tried before the docker config.
    #[arg(long, env = "REGISTRY_AUTH_FILE", value_name = "FILE", hide = true)]
    pub registry_auth_file: Option<PathBuf>,
    /// The docker configuration directory (its `config.json` holds registry credentials).
    #[arg(long, env = "DOCKER_CONFIG", value_name = "DIR", hide = true)]
    pub docker_config: Option<PathBuf>,
    /// At most this many uncompressed bytes in a release image's layers.
    #[arg(long, env = "CVO_OCI_MAX_BYTES", value_name = "BYTES", hide = true)]
    pub max_image_bytes: Option<u64>,
    /// At most this many entries in a release image's layers.
    #[arg(long, env = "CVO_OCI_MAX_ENTRIES", value_name = "N", hide = true)]
    pub max_image_entries: Option<u64>,
}

impl ImageArgs {
    /// The image options every command uses, built once. `progress` says whether a pull may
    /// draw a progress bar.
    fn options(&self, progress: bool) -> anyhow::Result<crate::oci::Options> {
        let mut options = crate::oci::Options::new(match &self.cache_dir {
            Some(dir) => dir.clone(),
            None => default_cache_dir(),
        });
        let defaults = crate::oci::Limits::default();
        options.limits = crate::oci::Limits {
            max_bytes: self.max_image_bytes.unwrap_or(defaults.max_bytes),
            max_entries: self.max_image_entries.unwrap_or(defaults.max_entries),
        };
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let docker_config = (self
            .docker_config
            .clone()
            .filter(|d| !d.as_os_str().is_empty()))
        .or_else(|| home.as_ref().map(|h| h.join(".docker")));
        // podman's order: $REGISTRY_AUTH_FILE, ${XDG_RUNTIME_DIR}/containers/auth.json,
        // ~/.config/containers/auth.json, then docker's config.
        let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from);
        options.registry = crate::oci::registry::RegistrySettings {
            credentials: None,
            insecure: self.insecure_registry.clone(),
            cert_dirs: self.cert_dir.clone(),
            auth_files: (self.registry_auth_file.iter())
                .filter(|f| !f.as_os_str().is_empty())
                .cloned()
                .chain(runtime_dir.map(|d| d.join("containers/auth.json")))
                .chain(
                    home.as_ref()
                        .map(|h| h.join(".config/containers/auth.json")),
                )
                .chain(docker_config.map(|d| d.join("config.json")))
                .collect(),
            progress,
            pull_secret: None,
        };
        if let Some(user) = &self.registry_username {
            let mut password = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut password)
                .context("--registry-password-stdin: cannot read standard input")?;
            let password = password.trim_end_matches(['\n', '\r']).to_string();
            options.registry.credentials = Some((user.clone(), password));
        }
        Ok(options)
    }
}

/// `$XDG_CACHE_HOME/cvo/payloads`, else `~/.cache/cvo/payloads`, else under the temp dir.
fn default_cache_dir() -> PathBuf {
    let from_env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    from_env("XDG_CACHE_HOME")
        .or_else(|| from_env("HOME").map(|h| h.join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("cvo")
        .join("payloads")
}

/// What every command gets besides its own arguments: values built once from the global flags
/// and the environment, so nothing deeper reads either.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How release images are pulled and extracted.
    pub images: crate::oci::Options,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render the documents a cluster configuration keeps into DIR/manifests/.
    Render(payload_commands::RenderArgs),
    /// Show every document of a payload, whether it is included and the upstream reason if not.
    Explain(payload_commands::ExplainArgs),
    /// Show the run-level task graph of the load-time-included manifests.
    Graph(graph::GraphArgs),
    /// Print the ClusterVersion status.versionHash the upstream CVO would report.
    Hash(payload_commands::HashArgs),
    /// Compute known, enabled and implicitly enabled capabilities.
    Capabilities(capabilities::CapabilitiesArgs),
    /// Check a payload for everything that would fail or surprise on a live cluster.
    Validate(validate::ValidateArgs),
    /// Preview an upgrade: implicitly enabled capabilities and what is created, updated,
    /// deleted or left behind.
    Plan(plan::PlanArgs),
    /// Print the CustomResourceDefinitions of the CVO (ClusterVersion, ClusterOperator) or of a
    /// component the payload ships (--component).
    #[cfg(feature = "cluster")]
    Crds(crds::CrdsArgs),
    /// Apply a payload to a cluster once (server-side apply), in task-graph order.
    #[cfg(feature = "cluster")]
    Apply(apply::ApplyArgs),
    /// Release images in registries and OCI image layouts: pull (extract), push (pack and
    /// upload), info.
    Payload(payload_image::PayloadGroup),
    /// Run the operator: apply the payload every resync interval and report ClusterVersion
    /// status, until interrupted (Ctrl-C, SIGTERM).
    #[cfg(feature = "cluster")]
    Start(start::StartArgs),
    /// Run a payload component's controllers (what its Deployment runs): leader election,
    /// /metrics, /healthz, /readyz and Kubernetes Events, until interrupted.
    #[cfg(feature = "cluster")]
    Controller(controller::ControllerGroup),
    /// DeploymentTargets, claims and classes: `dt reconcile` runs their controllers offline.
    #[cfg(feature = "cluster")]
    Dt(dt::DtGroup),
    /// Agent late binding: `agent transition` runs the host state machine, `agent admit` the
    /// Agent and InfraEnv admission rules, `agent simulate` boots simulated hosts.
    #[cfg(feature = "cluster")]
    Agent(agent::AgentGroup),
    /// Open Horizon edge policies: `edge constraints` validates and decides constraints,
    /// `edge version-range` tests versions against a range.
    #[cfg(feature = "cluster")]
    Edge(edge::EdgeGroup),
    /// The cluster's update status, or request an update (`oc adm upgrade`): --to VERSION,
    /// --to-image IMAGE, --to-latest, --to-multi-arch, --clear; `upgrade status` for the
    /// progress of an update, `upgrade channel NAME` to set the channel.
    #[cfg(feature = "cluster")]
    Upgrade(upgrade::UpgradeArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completion(completion::CompletionArgs),
    /// Write the man pages of cvo and of every command into a directory.
    Man(completion::ManArgs),
}

impl Command {
    /// The release-image flags of a command that may read an image.
    fn images(&self) -> Option<&ImageArgs> {
        match self {
            Command::Render(a) => Some(&a.images),
            Command::Explain(a) => Some(&a.images),
            Command::Graph(a) => Some(&a.images),
            Command::Hash(a) => Some(&a.images),
            Command::Validate(a) => Some(&a.images),
            #[cfg(feature = "cluster")]
            Command::Apply(a) => Some(&a.images),
            #[cfg(feature = "cluster")]
            Command::Start(a) => Some(&a.images),
            Command::Plan(a) => Some(&a.images),
            Command::Payload(a) => a.images(),
            Command::Capabilities(_) | Command::Completion(_) | Command::Man(_) => None,
            #[cfg(feature = "cluster")]
            Command::Crds(_)
            | Command::Controller(_)
            | Command::Dt(_)
            | Command::Agent(_)
            | Command::Edge(_)
            | Command::Upgrade(_) => None,
        }
    }
}

/// Where the payload comes from; shared by every payload command: `--payload SRC`, or `SRC` as
/// the command's argument (`cvo validate payloads/4.18.0`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PayloadArgs {
    /// Payload directory (a payload root or a plain directory of manifests), or a release image
    /// in an OCI image layout (`oci-layout:PATH[:TAG]`) or a registry (`registry/repo:tag`,
    /// `registry/repo@sha256:...`, `docker://...`); default: the payload bundled into cvo.
    #[arg(long, value_name = "SRC")]
    pub payload: Option<String>,
    /// The payload, as --payload takes it.
    #[arg(value_name = "SRC", conflicts_with = "payload")]
    pub positional: Option<String>,
}

impl PayloadArgs {
    /// The payload named `src`.
    pub fn named(src: &str) -> PayloadArgs {
        PayloadArgs {
            payload: Some(src.to_string()),
            positional: None,
        }
    }

    /// The payload as the user gave it, by flag or argument.
    pub fn given(&self) -> Option<&str> {
        self.payload.as_deref().or(self.positional.as_deref())
    }

    pub fn source(&self) -> PayloadSource {
        PayloadSource::from_arg(self.given())
    }
}

/// `--payload SRC` alone, for a command whose arguments are something else (`cvo explain`
/// takes the payload as its first argument only when that is clearly one: see
/// [`PayloadFlag::with_first_argument`]).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PayloadFlag {
    /// Payload directory (a payload root or a plain directory of manifests), or a release image
    /// in an OCI image layout (`oci-layout:PATH[:TAG]`) or a registry (`registry/repo:tag`,
    /// `registry/repo@sha256:...`, `docker://...`); default: the payload bundled into cvo. The
    /// first argument may name it instead when it is a directory or an image reference.
    #[arg(long, value_name = "SRC")]
    pub payload: Option<String>,
}

impl PayloadFlag {
    /// The payload, and the arguments left: without `--payload`, a first argument that is a
    /// directory, `bundled`, an `oci-layout:` or a registry reference names the payload (a
    /// document's name, file name or `kind/name` is none of these).
    pub fn with_first_argument(&self, arguments: &[String]) -> (PayloadArgs, Vec<String>) {
        let names_payload = |arg: &str| {
            arg == "bundled"
                || arg.starts_with("oci-layout:")
                || crate::oci::registry::is_reference(arg)
                || std::path::Path::new(arg).is_dir()
        };
        match (&self.payload, arguments.split_first()) {
            (None, Some((first, rest))) if names_payload(first) => {
                (PayloadArgs::named(first), rest.to_vec())
            }
            _ => (
                PayloadArgs {
                    payload: self.payload.clone(),
                    positional: None,
                },
                arguments.to_vec(),
            ),
        }
    }
}

/// A failure the user must fix; printed as `error: ...` with exit code 1.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

pub type CliResult = Result<ExitCode, CliError>;

/// Runs a parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    // The operator loop reports its progress at info; the one-shot commands only warn.
    #[cfg(feature = "cluster")]
    let default_level = if matches!(cli.command, Command::Start(_) | Command::Controller(_)) {
        "info"
    } else {
        "warn"
    };
    #[cfg(not(feature = "cluster"))]
    let default_level = "warn";
    init_logging(cli.log_format, default_level);
    use std::io::IsTerminal as _;
    let ci = std::env::var("CI").ok();
    let progress = crate::oci::progress::show_progress(
        std::io::stderr().is_terminal(),
        ci.as_deref(),
        output_mode(&cli),
    );
    let images = cli.command.images().cloned().unwrap_or_default();
    let settings = match images.options(progress) {
        Ok(images) => Settings { images },
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Render(args) => payload_commands::render(args, &settings),
        Command::Explain(args) => payload_commands::explain(args, &settings),
        Command::Graph(args) => graph::graph(args, &settings),
        Command::Hash(args) => payload_commands::hash(args, &settings),
        Command::Capabilities(args) => capabilities::capabilities(args),
        Command::Validate(args) => validate::validate(args, &settings),
        Command::Plan(args) => plan::plan(args, &settings),
        #[cfg(feature = "cluster")]
        Command::Crds(args) => crds::crds_command(args),
        #[cfg(feature = "cluster")]
        Command::Apply(args) => apply::apply(args, &settings),
        Command::Payload(args) => payload_image::payload(args, &settings),
        #[cfg(feature = "cluster")]
        Command::Start(args) => start::start(args, &settings),
        #[cfg(feature = "cluster")]
        Command::Controller(args) => controller::controller(args),
        #[cfg(feature = "cluster")]
        Command::Dt(group) => dt::dt(group),
        #[cfg(feature = "cluster")]
        Command::Agent(group) => agent::agent(group),
        #[cfg(feature = "cluster")]
        Command::Edge(group) => edge::edge(group),
        #[cfg(feature = "cluster")]
        Command::Upgrade(args) => upgrade::upgrade(args),
        Command::Completion(args) => completion::completion(args),
        Command::Man(args) => completion::man(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            report(&e);
            ExitCode::from(1)
        }
    }
}

/// What the command writes, for the registry progress bar: none with `--quiet`, none among
/// machine-readable output (`-o json|junit|github|yaml|dot`, `--log-format json`).
fn output_mode(cli: &Cli) -> crate::oci::progress::OutputMode {
    use crate::oci::progress::OutputMode;
    fn machine<T: ValueEnum>(format: &T) -> bool {
        !matches!(
            format.to_possible_value().as_ref().map(|v| v.get_name()),
            Some("text" | "table")
        )
    }
    let machine_output = match &cli.command {
        Command::Explain(a) => machine(&a.output),
        Command::Graph(a) => machine(&a.output),
        Command::Capabilities(a) => machine(&a.output),
        Command::Validate(a) => machine(&a.output),
        Command::Plan(a) => machine(&a.output),
        #[cfg(feature = "cluster")]
        Command::Crds(a) => machine(&a.output),
        #[cfg(feature = "cluster")]
        Command::Apply(a) => machine(&a.output),
        Command::Payload(a) => a.machine_output(),
        Command::Render(_) | Command::Hash(_) | Command::Completion(_) | Command::Man(_) => false,
        #[cfg(feature = "cluster")]
        Command::Start(_) | Command::Controller(_) | Command::Upgrade(_) => false,
        #[cfg(feature = "cluster")]
        Command::Dt(group) => match &group.command {
            dt::DtCommand::Reconcile(a) => machine(&a.output),
        },
        #[cfg(feature = "cluster")]
        Command::Agent(group) => match &group.command {
            agent::AgentCommand::Transition(a) => machine(&a.output),
            agent::AgentCommand::Admit(a) => machine(&a.output),
            agent::AgentCommand::Simulate(_) => false,
        },
        #[cfg(feature = "cluster")]
        Command::Edge(group) => match &group.command {
            edge::EdgeCommand::Constraints(a) => machine(&a.output),
            edge::EdgeCommand::VersionRange(a) => machine(&a.output),
            edge::EdgeCommand::AgentInstall(a) => machine(&a.output),
            edge::EdgeCommand::Namespace(a) => machine(&a.output),
            edge::EdgeCommand::Deploycheck(a) => machine(&a.output),
            edge::EdgeCommand::Nmp(g) => match &g.command {
                edge_nmp::NmpCommand::Status(a) => machine(&a.output),
                edge_nmp::NmpCommand::Plan(a) => machine(&a.output),
            },
            edge::EdgeCommand::Deploy(a) => machine(&a.output),
            edge::EdgeCommand::Package(group) => match &group.command {
                edge_package::PackageCommand::New(a) => machine(&a.output),
                edge_package::PackageCommand::Inspect(a) => machine(&a.output),
                edge_package::PackageCommand::Verify(a) => machine(&a.output),
            },
        },
    };
    if cli.command.images().is_some_and(|i| i.quiet) {
        OutputMode::Quiet
    } else if machine_output || cli.log_format == LogFormat::Json {
        OutputMode::Machine
    } else {
        OutputMode::Human
    }
}

/// Writes one line to standard output; a closed pipe ends the program quietly.
/// A usage error of the subcommand at `path` (`["edge", "agent-install"]`), reported as clap
/// reports its own: `error: MESSAGE`, the usage line, exit code 2.
#[cfg(feature = "cluster")]
pub fn usage_error(path: &[&str], kind: clap::error::ErrorKind, message: &str) -> ! {
    use clap::CommandFactory as _;
    let mut command = Cli::command();
    command.build();
    let mut current = &mut command;
    for name in path {
        current = current
            .find_subcommand_mut(name)
            .expect("usage_error: a cvo subcommand");
    }
    current.error(kind, message).exit()
}

pub fn emit(line: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// Ends the process quietly (exit 0) when `error` is standard output's reader having gone
/// (`cvo ... | head`), as [`emit`] does; otherwise returns.
pub fn exit_if_broken_pipe(error: &anyhow::Error) {
    let broken = (error.chain())
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe);
    if broken {
        std::process::exit(0);
    }
}

fn init_logging(format: LogFormat, default_level: &str) {
    use std::io::IsTerminal as _;
    // kube-client logs each failed request at ERROR itself; cvo reports them with context.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("{default_level},kube_client=off"))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder.without_time().try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

fn report(error: &CliError) {
    match error {
        CliError::Load(load) => {
            eprintln!(
                "error: {}: {} problem(s) loading the payload",
                load.origin,
                load.problems.len()
            );
            for problem in &load.problems {
                print_problem(problem);
            }
        }
        CliError::Other(e) => eprintln!("error: {e:#}"),
    }
}

fn print_problem(problem: &ParseError) {
    eprintln!("  {problem}");
    eprintln!("    help: {}", problem.help());
}

/// Loads a payload, logging what the CVO would only log.
pub fn load_payload(
    settings: &Settings,
    args: &PayloadArgs,
    options: &LoadOptions,
) -> Result<Payload, CliError> {
    let source = args.source();
    let input = read_input(&source, &settings.images).map_err(anyhow::Error::from)?;
    let payload = Payload::from_input(input, options)?;
    for warning in &payload.warnings {
        tracing::warn!(payload = %payload.origin, "{warning}");
    }
    Ok(payload)
}
