//! `cvo validate`: the payload linter for CI. Reads the payload and its directory listing,
//! runs [`crate::validate::validate`] and prints the report; exit 1 when it does not pass.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::{CliResult, ImageArgs, InclusionArgs, PayloadArgs, Settings};
use crate::capability::Capability;
use crate::include::InclusionConfig;
use crate::manifest::ManifestDir;
use crate::payload::source::list_entries;
use crate::payload::{
    Layout, LoadOptions, Payload, PayloadInput, PayloadSource, parse_release_metadata, read_input,
};
use crate::validate::report;
use crate::validate::{
    Listed, ListedIn, Options, Scope, ValidateInput, all_feature_sets, validate as run_checks,
};

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub payload: PayloadArgs,
    /// Narrow the checks that depend on a cluster configuration (the same resource in two
    /// files, capability consistency) to these settings; by default every known profile and
    /// feature set is considered.
    #[command(flatten)]
    pub inclusion: InclusionArgs,
    /// text: rustc-style with source snippets; json: a list of findings; junit: JUnit XML for CI
    /// test reports; github: GitHub Actions annotations.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = ValidateFormat::Text)]
    pub output: ValidateFormat,
    /// Fail (exit 1) on warnings too.
    #[arg(long)]
    pub deny_warnings: bool,
    #[command(flatten)]
    pub images: ImageArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ValidateFormat {
    Text,
    Json,
    Junit,
    Github,
}

pub fn validate(args: ValidateArgs, settings: &Settings) -> CliResult {
    args.inclusion.validate()?;
    let source = args.payload.source();
    let payload = read_input(&source, &settings.images).map_err(anyhow::Error::from)?;
    let listing = match &source {
        PayloadSource::Directory(root) => listing(root, payload.layout)?,
        _ => Vec::new(),
    };
    let (scope, extra_known) = scope(&args.inclusion, &payload)?;
    let options = Options {
        scope,
        extra_known_capabilities: extra_known,
        release_image: None,
    };
    let input = ValidateInput { payload, listing };
    let report = run_checks(&input, &options);
    let base = match &source {
        PayloadSource::Directory(root) => root.display().to_string(),
        _ => String::new(),
    };
    let text = match args.output {
        ValidateFormat::Text => report::text(&report, &base, args.deny_warnings),
        ValidateFormat::Json => report::json(&report, &base),
        ValidateFormat::Junit => report::junit(&report, &base, args.deny_warnings),
        ValidateFormat::Github => report::github(&report, &base, args.deny_warnings),
    };
    outln!("{}", text.trim_end_matches('\n'));
    Ok(if report.passes(args.deny_warnings) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The raw listing of the directories the CVO reads (and of a payload root itself).
fn listing(root: &Path, layout: Layout) -> anyhow::Result<Vec<Listed>> {
    let dirs: Vec<(ListedIn, std::path::PathBuf)> = match layout {
        Layout::PlainDirectory => vec![(ListedIn::Dir(ManifestDir::ReleaseManifests), root.into())],
        Layout::PayloadRoot => vec![
            (ListedIn::Root, root.into()),
            (
                ListedIn::Dir(ManifestDir::Manifests),
                root.join("manifests"),
            ),
            (
                ListedIn::Dir(ManifestDir::ReleaseManifests),
                root.join("release-manifests"),
            ),
        ],
    };
    let mut out = Vec::new();
    for (location, dir) in dirs {
        if !dir.is_dir() {
            continue;
        }
        let entries =
            list_entries(&dir).with_context(|| format!("{}: cannot list", dir.display()))?;
        out.extend(entries.into_iter().map(|e| Listed {
            location,
            name: e.name,
            is_dir: e.is_dir,
        }));
    }
    Ok(out)
}

fn any_inclusion_flag(args: &InclusionArgs) -> bool {
    args.inclusion.is_some()
        || args.exclude.is_some()
        || args.feature_set.is_some()
        || args.feature_gates.is_some()
        || args.cluster_profile.is_some()
        || args.capabilities_baseline.is_some()
        || args.additional_capabilities.is_some()
        || args.major_version.is_some()
        || args.install_config.is_some()
        || args.cluster_version.is_some()
}

/// The scope the flags describe: a flag the user gave narrows its dimension, the others stay
/// open (every known profile, every feature set, any feature gates).
fn scope(
    args: &InclusionArgs,
    input: &PayloadInput,
) -> anyhow::Result<(Scope, BTreeSet<Capability>)> {
    if !any_inclusion_flag(args) {
        return Ok((Scope::all(), BTreeSet::new()));
    }
    let config = args.config(&best_effort_payload(input))?;
    let from_file = args.inclusion.is_some();
    let all = Scope::all();
    let pick = |given: bool, value: Option<String>, every: Vec<String>| match value {
        Some(v) if given => vec![v],
        _ => every,
    };
    let scope = Scope {
        profiles: pick(
            from_file || args.cluster_profile.is_some(),
            config.profile.clone(),
            all.profiles,
        ),
        feature_sets: pick(
            from_file || args.feature_set.is_some() || args.install_config.is_some(),
            config.required_feature_set.clone(),
            all_feature_sets(),
        ),
        exclude: config.exclude_identifier.clone(),
        feature_gates: if from_file || args.feature_gates.is_some() || args.install_config.is_some()
        {
            config.enabled_feature_gates.clone()
        } else {
            None
        },
        major_version: config.major_version,
    };
    Ok((scope, extra_known(from_file, &config)))
}

/// An `--inclusion` file's `knownCapabilities` lets CI declare names openshift/api does not
/// have yet, as upstream CI's known-capabilities file does.
fn extra_known(from_file: bool, config: &InclusionConfig) -> BTreeSet<Capability> {
    match (&config.capabilities, from_file) {
        (Some(filter), true) => filter.known_capabilities.clone(),
        _ => BTreeSet::new(),
    }
}

/// What the inclusion flags need from the payload (its major version, its FeatureGate
/// manifests for `--install-config`), even when the payload has errors: then only the
/// release metadata is used.
fn best_effort_payload(input: &PayloadInput) -> Payload {
    if let Ok(payload) = Payload::from_input(input.clone(), &LoadOptions::default()) {
        return payload;
    }
    let release = input
        .release_metadata
        .as_ref()
        .and_then(|f| f.contents.as_ref().ok())
        .and_then(|bytes| parse_release_metadata(bytes).ok())
        .map(|(release, _)| release);
    Payload {
        origin: input.origin.clone(),
        layout: input.layout,
        release,
        images: Default::default(),
        release_image: String::new(),
        manifests: Vec::new(),
        warnings: Vec::new(),
        created: None,
    }
}
