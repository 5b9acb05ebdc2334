//! Reading what a user hands a command: a file, or standard input for `-`, and the YAML or
//! JSON documents in it with line-numbered errors. One place, so every command names its input
//! the same way (`standard input` or the path) and reports a YAML error at the same line.

use std::io::Read as _;
use std::path::Path;

use anyhow::{Context as _, anyhow};
use serde_json::Value;

/// The input's name for messages (`standard input` or the path) and its text.
pub fn read_input(path: &Path) -> anyhow::Result<(String, String)> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read standard input")?;
        return Ok(("standard input".to_owned(), text));
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    Ok((path.display().to_string(), text))
}

/// The documents of a YAML (or JSON) stream as JSON, each with the line it starts at; empty
/// documents are left out. Errors say `line N: ...` in the whole stream's numbering.
pub fn documents(text: &str) -> anyhow::Result<Vec<(usize, Value)>> {
    let chunks = crate::yaml::split_stream(text)
        .map_err(|e| anyhow!("line {}: {}", e.position.map_or(1, |p| p.line), e.message))?;
    let mut values = Vec::new();
    for chunk in &chunks {
        let value = match &chunk.json {
            Some(json) => json.clone(),
            None => crate::yaml::parse_document(&chunk.reader_text())
                .map(|node| node.into_value())
                .map_err(|e| {
                    let line = |p: crate::yaml::Position| chunk.line + p.line - 1;
                    let at = e.position.map_or(chunk.line, line);
                    match e.started_at {
                        Some(start) => anyhow!(
                            "line {at}: {} (it started at line {} column {})",
                            e.message,
                            line(start),
                            start.column
                        ),
                        None => anyhow!("line {at}: {}", e.message),
                    }
                })?,
        };
        if !value.is_null() {
            values.push((chunk.line, value));
        }
    }
    Ok(values)
}
