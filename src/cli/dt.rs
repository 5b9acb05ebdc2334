//! `cvo dt`: the DeploymentTarget component offline. `cvo dt reconcile` runs the binder, the
//! reclaimer, the provisioners and the SpaceRequest reconciler over objects read from a file
//! until nothing changes, and prints the objects as they end up.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::CliResult;
use crate::components::deployment_targets::load::load;
use crate::components::deployment_targets::model::{Context, Kind, Object, World};
use crate::components::deployment_targets::offline::{self, Report};
use crate::components::deployment_targets::types::ClaimPhase;

#[derive(Debug, Args)]
pub struct DtGroup {
    #[command(subcommand)]
    pub command: DtCommand,
}

#[derive(Debug, Subcommand)]
pub enum DtCommand {
    /// Bind, provision and reclaim DeploymentTargets offline: run the controllers over the
    /// objects in a file until nothing changes, and print the objects as they end up.
    #[command(after_help = RECONCILE_HELP)]
    Reconcile(ReconcileArgs),
}

// Laid out by hand: clap wraps no help text without its `wrap_help` feature.
const RECONCILE_HELP: &str = "Kinds read: DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, Environment
(appstudio.redhat.com/v1alpha1), GitOpsDeploymentManagedEnvironment (managed-gitops.redhat.com/v1alpha1),
SpaceRequest (toolchain.dev.openshift.com/v1alpha1), Namespace, ServiceAccount, Secret, ResourceQuota,
LimitRange (v1), RoleBinding (rbac.authorization.k8s.io/v1): YAML documents, or JSON documents (one JSON
stream, or separated by `---` lines). A namespaced object without a namespace is in `default`;
metadata.deletionTimestamp means being deleted; a Secret's stringData is folded into data. A field the
API server would drop is warned about on standard error, with the field it is a near miss of. Time stands
still (--now): what only time would change stays as it is, and kubeconfigs the namespace provisioner
writes hold a placeholder token.

Exit codes:
  0  a round changed nothing and no object has an error (with --require-bound: and every claim is Bound)
  1  an object still has an error (each is listed on standard error, and under `errors` with -o json),
     or (--require-bound) a claim is not Bound (listed on standard error, and under `unbound`),
     or the rounds ran out before the objects settled (the output is then as the last round left it),
     or the input could not be read or holds no object
  2  usage error";

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// The objects: a YAML stream (`---`-separated documents, or a v1 List) or JSON; `-` reads
    /// standard input.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub file: PathBuf,
    /// The time the controllers see, RFC 3339 (`2024-05-01T12:00:00Z`) [default: now].
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub now: Option<Timestamp>,
    /// Give up after this many rounds (each reconciles every object once).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_rounds: u32,
    /// Fail (exit 1) unless every DeploymentTargetClaim ends `Bound`: what CI asks of a set
    /// of claims and targets.
    #[arg(long)]
    pub require_bound: bool,
    /// yaml: the resulting objects as a `---` stream; json: {"objects", "errors", "unbound",
    /// "rounds", "converged"}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = DtFormat::Yaml)]
    pub output: DtFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DtFormat {
    Yaml,
    Json,
}

fn parse_time(text: &str) -> Result<Timestamp, String> {
    text.parse()
        .map_err(|e| format!("not an RFC 3339 time (like 2024-05-01T12:00:00Z): {e}"))
}

pub fn dt(group: DtGroup) -> CliResult {
    match group.command {
        DtCommand::Reconcile(args) => reconcile(args),
    }
}

fn reconcile(args: ReconcileArgs) -> CliResult {
    let (origin, text) = super::input::read_input(&args.file)?;
    let loaded = load(&text).with_context(|| origin.clone())?;
    for warning in &loaded.warnings {
        tracing::warn!("{origin}: {warning}");
    }
    if loaded.world.objects().next().is_none() {
        return Err(anyhow::anyhow!(
            "{origin}: no objects to reconcile (it holds no document, or only empty ones and objects already gone)"
        )
        .into());
    }
    let ctx = Context::at(args.now.unwrap_or_else(Timestamp::now));
    let report = offline::run(loaded.world, &ctx, args.max_rounds as usize);
    let unbound = unbound(&report);
    print(&report, &unbound, args.output)?;
    let verdict = verdict(&report, &unbound, args.require_bound);
    // The process ends with this command: freeing every object one by one (0.4 s of 100,000
    // objects' 10 s, BENCHMARKS.md) is work the operating system does at once.
    std::mem::forget(report);
    Ok(verdict)
}

/// A claim that did not end `Bound`.
#[derive(Debug, serde::Serialize)]
struct Unbound {
    namespace: String,
    name: String,
    /// Its phase (`""`: none).
    phase: String,
}

fn unbound(report: &Report) -> Vec<Unbound> {
    (report.world.of_kind(Kind::DeploymentTargetClaim))
        .filter_map(|o| match o {
            Object::Claim(c) if c.phase() != Some(ClaimPhase::Bound) => Some(Unbound {
                namespace: c.metadata.namespace.clone().unwrap_or_default(),
                name: c.metadata.name.clone().unwrap_or_default(),
                phase: c.phase().map(|p| format!("{p:?}")).unwrap_or_default(),
            }),
            _ => None,
        })
        .collect()
}

fn print(report: &Report, unbound: &[Unbound], format: DtFormat) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let written = match format {
        DtFormat::Yaml => write_yaml_stream(&report.world, &mut out),
        DtFormat::Json => write_json(report, unbound, &mut out),
    };
    let written = written.and_then(|()| out.flush().context(STDOUT));
    if let Err(e) = &written {
        super::exit_if_broken_pipe(e);
        // What is still buffered is not written after an error (past 1 MiB, what came before
        // it is out already).
        let _ = out.into_parts();
    }
    written
}

const STDOUT: &str = "cannot write to standard output";

fn write_json(
    report: &Report,
    unbound: &[Unbound],
    out: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    let value = json!({
        "objects": report.world.objects().map(Object::to_value).collect::<Vec<_>>(),
        "errors": report.errors,
        "unbound": unbound,
        "rounds": report.rounds,
        "converged": report.converged,
    });
    // As an io::Error, so that a reader gone is seen as one (serde_json's error hides it).
    (serde_json::to_writer_pretty(&mut *out, &value))
        .map_err(std::io::Error::from)
        .context(STDOUT)?;
    out.write_all(b"\n").context(STDOUT)
}

/// The objects as a YAML stream, as `serde_saphyr::to_string_multiple` writes them (each
/// document, then `---` lines between them; the last one's trailing blank lines trimmed, as
/// the command always printed it), each written by `yaml::to_document` (serde_saphyr's bytes,
/// written faster). A batch of documents at a time, each batch's on every core: on 100,000
/// objects writing them one after the other was a fifth of the command's time, and holding the
/// whole stream (71 MB, then a copy to print) most of its memory (BENCHMARKS.md).
fn write_yaml_stream(world: &World, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    use rayon::prelude::*;
    const BATCH: usize = 4096;
    let objects: Vec<&Object> = world.objects().collect();
    if objects.is_empty() {
        // A world left empty (its last objects deleted) is an empty line, as it always was.
        return out.write_all(b"\n").context(STDOUT);
    }
    let batches = objects.chunks(BATCH).count();
    for (b, batch) in objects.chunks(BATCH).enumerate() {
        let documents = (batch.par_iter())
            .map(|o| crate::yaml::to_document(&o.to_value()))
            .collect::<Result<Vec<String>, _>>()
            .context("cannot write the objects as YAML")?;
        for (i, document) in documents.iter().enumerate() {
            if b > 0 || i > 0 {
                out.write_all(b"---\n").context(STDOUT)?;
            }
            match b + 1 == batches && i + 1 == documents.len() {
                true => writeln!(out, "{}", document.trim_end()),
                false => out.write_all(document.as_bytes()),
            }
            .context(STDOUT)?;
        }
    }
    Ok(())
}

/// Success only when the objects settled without errors (and, with `--require-bound`, every
/// claim is Bound); what is wrong goes to standard error.
fn verdict(report: &Report, unbound: &[Unbound], require_bound: bool) -> ExitCode {
    for e in &report.errors {
        let at = match e.namespace.is_empty() {
            true => e.name.clone(),
            false => format!("{}/{}", e.namespace, e.name),
        };
        eprintln!("error: {} {at}: {}", e.kind, e.message);
    }
    if !report.converged {
        eprintln!(
            "error: the objects did not settle in {} rounds (--max-rounds); the output is as the last round left them",
            report.rounds
        );
    }
    if require_bound {
        for c in unbound {
            let phase = match c.phase.as_str() {
                "" => "without a phase",
                phase => phase,
            };
            eprintln!(
                "error: DeploymentTargetClaim {}/{} is {phase}, not Bound (--require-bound)",
                c.namespace, c.name
            );
        }
    }
    let bound = !require_bound || unbound.is_empty();
    match report.converged && report.errors.is_empty() && bound {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::testing::{claim, namespace, target, world};

    /// The stream as it was written before batches: every document, joined, the end trimmed.
    fn joined(world: &World) -> String {
        let documents: Vec<String> = (world.objects())
            .map(|o| crate::yaml::to_document(&o.to_value()).unwrap())
            .collect();
        format!("{}\n", documents.join("---\n").trim_end())
    }

    fn streamed(world: &World) -> String {
        let mut out = Vec::new();
        write_yaml_stream(world, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// `count` namespaces, each ending in a value with trailing line breaks (what the stream's
    /// end trims, on the last one).
    fn namespaces(count: usize) -> World {
        world((0..count).map(|i| {
            let mut n = namespace(&format!("ns-{i:05}"), &[("team", "a")]);
            n.status = Some(k8s_openapi::api::core::v1::NamespaceStatus {
                phase: Some("Active\n\n".into()),
                ..Default::default()
            });
            Object::Namespace(n)
        }))
    }

    #[test]
    fn the_yaml_stream_written_in_batches_is_the_stream_joined() {
        let small = world([target("dt", "cls").object(), claim("c", "cls").object()]);
        assert_eq!(streamed(&small), joined(&small));
        assert_eq!(streamed(&World::new()), "\n");
        assert_eq!(streamed(&World::new()), joined(&World::new()));
        // One batch and its end, exact batches, two batches and a part.
        for count in [1, 4095, 4096, 4097, 8192, 9000] {
            let many = namespaces(count);
            let text = streamed(&many);
            assert_eq!(text, joined(&many), "{count}");
            assert_eq!(text.matches("\n---\n").count(), count - 1);
            assert!(text.ends_with("    Active\n"), "{count}");
        }
        // What the trimming is for: a document that ends in more than its line break.
        let last = crate::yaml::to_document(&namespaces(1).objects().next().unwrap().to_value());
        let last = last.unwrap();
        assert!(last.trim_end().len() + 1 < last.len(), "{last:?}");
    }
}
