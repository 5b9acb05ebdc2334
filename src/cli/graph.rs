//! `cvo graph`: the task graph the CVO would run for the load-time-included manifests.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::json;

use super::{CliResult, ImageArgs, InclusionArgs, PayloadArgs, Settings, load_payload};
use crate::graph::{Mode, TaskGraph};
use crate::manifest::Manifest;

#[derive(Debug, Args)]
pub struct GraphArgs {
    #[command(flatten)]
    pub payload: PayloadArgs,
    /// update: run levels in order, components in parallel; install: everything parallel.
    #[arg(long, value_enum, default_value_t = GraphMode::Update)]
    pub mode: GraphMode,
    #[command(flatten)]
    pub inclusion: InclusionArgs,
    /// text: the nodes and their tasks; json: nodes with tasks and edges; dot: Graphviz.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = GraphFormat::Text)]
    pub output: GraphFormat,
    #[command(flatten)]
    pub images: ImageArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphMode {
    Update,
    Install,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    Text,
    Json,
    Dot,
}

pub fn graph(args: GraphArgs, settings: &Settings) -> CliResult {
    args.inclusion.validate()?;
    let options = super::payload_commands::load_options(&args.inclusion, None, false);
    let payload = load_payload(settings, &args.payload, &options)?;
    let config = args.inclusion.config(&payload)?.load_time();
    let tasks = payload.included(&config);
    let mode = match args.mode {
        GraphMode::Update => Mode::Update,
        GraphMode::Install => Mode::Install,
    };
    let graph = TaskGraph::build(&tasks, mode);
    match args.output {
        GraphFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&graph_json(&graph, &tasks))
                .map_err(anyhow::Error::from)?
        ),
        GraphFormat::Dot => outln!(
            "{}",
            graph.to_dot(|i| label(tasks[i], i, tasks.len())).trim_end()
        ),
        GraphFormat::Text => print_text(&graph, &tasks),
    }
    Ok(ExitCode::SUCCESS)
}

fn label(manifest: &Manifest, index: usize, total: usize) -> String {
    format!(
        "{} {}",
        manifest.file,
        manifest.task_string(index + 1, total)
    )
}

fn graph_json(graph: &TaskGraph, tasks: &[&Manifest]) -> serde_json::Value {
    let nodes: Vec<serde_json::Value> = graph
        .nodes
        .iter()
        .map(|node| {
            let tasks: Vec<serde_json::Value> = node
                .tasks
                .iter()
                .map(|&t| json!({"file": &*tasks[t].file, "index": tasks[t].index}))
                .collect();
            json!({"tasks": tasks, "in": node.inputs, "out": node.outputs})
        })
        .collect();
    json!({ "nodes": nodes })
}

fn print_text(graph: &TaskGraph, tasks: &[&Manifest]) {
    outln!("{} tasks in {} nodes", tasks.len(), graph.nodes.len());
    for (i, node) in graph.nodes.iter().enumerate() {
        outln!("node {i}: in {:?} out {:?}", node.inputs, node.outputs);
        for &t in &node.tasks {
            outln!(
                "  {} {}",
                tasks[t].file,
                tasks[t].task_string(t + 1, tasks.len())
            );
        }
    }
}
