//! The documentation cannot rot: every relative link in README.md and `docs/` leads to a file
//! (and heading) that exists, and every example block runs.
//!
//! An example is a fenced block whose info string is `console example`. Each `$ command` line
//! is run by `sh -c` in the repository root with the freshly built `cvo` first on `PATH`; the
//! lines after it, up to the next `$ ` line, are its expected standard output, where a line
//! `...` matches any run of lines (none included). A last line `[exit N]` is the expected exit
//! code (default 0). A command with no lines after it must only succeed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files whose links and examples are checked: the front page, the docs and the
/// READMEs of folders.
fn markdown_files() -> Vec<PathBuf> {
    let root = repo();
    let mut files = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    for dir in ["docs", "payloads", "hack"] {
        collect_markdown(&root.join(dir), &mut files);
    }
    files.sort();
    files
}

fn collect_markdown(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_markdown(&path, into);
        } else if path.extension().is_some_and(|e| e == "md") {
            into.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// One fenced block: its info string, the line its first content line is on, its lines.
struct Block {
    info: String,
    line: usize,
    lines: Vec<String>,
}

/// The prose lines (outside fences, with their line numbers) and the fenced blocks of a file.
fn split_fences(text: &str) -> (Vec<(usize, &str)>, Vec<Block>) {
    let mut prose = Vec::new();
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let trimmed = line.trim_start();
        match open.as_mut() {
            None if trimmed.starts_with("```") => {
                open = Some(Block {
                    info: trimmed.trim_start_matches('`').trim().to_string(),
                    line: number + 1,
                    lines: Vec::new(),
                });
            }
            None => prose.push((number, line)),
            Some(_) if trimmed.starts_with("```") => blocks.extend(open.take()),
            Some(block) => block.lines.push(line.to_string()),
        }
    }
    (prose, blocks)
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces made `-`; a repeated anchor gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let (prose, _) = split_fences(text);
    let mut seen = BTreeSet::new();
    for (_, line) in prose {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut candidate = slug.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

/// The targets of the inline links `[text](target)` of a line.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(after[..end].trim().to_string());
        rest = &after[end..];
    }
    targets
}

fn broken_links(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let (prose, _) = split_fences(&text);
    let mut problems = Vec::new();
    for (number, line) in prose {
        // Inline code is not a link.
        let without_code: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for target in link_targets(&without_code) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let linked = if path.is_empty() {
                file.to_path_buf()
            } else {
                file.parent().unwrap().join(path)
            };
            let at = format!("{}:{number}: link `{target}`", relative(file));
            if !linked.exists() {
                problems.push(format!("{at}: no file {}", linked.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let Ok(linked_text) = std::fs::read_to_string(&linked) else {
                    problems.push(format!("{at}: an anchor into a folder"));
                    continue;
                };
                if !anchors(&linked_text).contains(anchor) {
                    problems.push(format!("{at}: no heading with that anchor"));
                }
            }
        }
    }
    problems
}

#[test]
fn relative_links_lead_somewhere() {
    let problems: Vec<String> = markdown_files()
        .iter()
        .flat_map(|f| broken_links(f))
        .collect();
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn readme_stays_a_front_page() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines; reference belongs in docs/"
    );
    // Every page of docs/ is reachable from the front page, directly or through another page.
    let mut reached = BTreeSet::new();
    let mut queue = vec![repo().join("README.md")];
    while let Some(file) = queue.pop() {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in text.lines().flat_map(link_targets) {
            let path = target.split('#').next().unwrap_or_default();
            if path.is_empty() || target.contains("://") || !path.ends_with(".md") {
                continue;
            }
            let linked = file.parent().unwrap().join(path);
            let Ok(linked) = linked.canonicalize() else {
                continue;
            };
            if reached.insert(linked.clone()) {
                queue.push(linked);
            }
        }
    }
    let mut docs = Vec::new();
    collect_markdown(&repo().join("docs"), &mut docs);
    let unreached: Vec<String> = docs
        .iter()
        .filter(|d| !reached.contains(&d.canonicalize().unwrap()))
        .map(|d| relative(d))
        .collect();
    assert!(
        unreached.is_empty(),
        "docs pages no link from README.md leads to: {unreached:?}"
    );
}

/// One command of an example and what it must print.
struct Example {
    at: String,
    command: String,
    expected: Vec<String>,
    exit: i32,
}

fn examples(file: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(file).unwrap();
    let (_, blocks) = split_fences(&text);
    let mut out = Vec::new();
    for block in blocks {
        let mut words = block.info.split_whitespace();
        if words.next() != Some("console") || !words.any(|w| w == "example") {
            continue;
        }
        let mut current: Option<Example> = None;
        for (offset, line) in block.lines.iter().enumerate() {
            if let Some(command) = line.strip_prefix("$ ") {
                out.extend(current.take());
                current = Some(Example {
                    at: format!("{}:{}", relative(file), block.line + offset),
                    command: command.to_string(),
                    expected: Vec::new(),
                    exit: 0,
                });
            } else if let Some(example) = current.as_mut() {
                let code = line
                    .strip_prefix("[exit ")
                    .and_then(|rest| rest.strip_suffix(']'))
                    .and_then(|n| n.parse().ok());
                match code {
                    Some(code) => example.exit = code,
                    None => example.expected.push(line.trim_end().to_string()),
                }
            } else {
                panic!(
                    "{}:{}: an example block must start with a `$ ` command line",
                    relative(file),
                    block.line + offset
                );
            }
        }
        out.extend(current);
    }
    out
}

/// Whether `actual` matches `expected`, where a `...` line matches any run of lines.
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(line, more)| line.trim_end() == first && matches(rest, more)),
    }
}

#[test]
fn examples_run_as_shown() {
    let cvo = PathBuf::from(env!("CARGO_BIN_EXE_cvo"));
    let path = format!(
        "{}:{}",
        cvo.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let scratch = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in markdown_files() {
        for example in examples(&file) {
            count += 1;
            let output = Command::new("sh")
                .arg("-c")
                .arg(&example.command)
                .current_dir(repo())
                .env("PATH", &path)
                .env("CI", "true")
                .env("NO_COLOR", "1")
                .env("XDG_CACHE_HOME", scratch.path().join("cache"))
                .env_remove("CLUSTER_PROFILE")
                .env_remove("KUBECONFIG")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            let actual: Vec<&str> = stdout.lines().collect();
            let code = output.status.code().unwrap_or(-1);
            let output_ok = example.expected.is_empty() || matches(&example.expected, &actual);
            if code != example.exit || !output_ok {
                failures.push(format!(
                    "{}: `{}` exited {code} (expected {}){}\n--- expected\n{}\n--- got\n{}--- stderr\n{}",
                    example.at,
                    example.command,
                    example.exit,
                    if output_ok { "" } else { ", output differs" },
                    example.expected.join("\n"),
                    stdout,
                    String::from_utf8_lossy(&output.stderr),
                ));
            }
        }
    }
    assert!(count > 0, "no examples found");
    assert!(
        failures.is_empty(),
        "{} of {count} examples fail:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn ellipsis_matches_any_run_of_lines() {
    let expected: Vec<String> = ["a", "...", "d"].iter().map(|s| s.to_string()).collect();
    assert!(matches(&expected, &["a", "b", "c", "d"]));
    assert!(matches(&expected, &["a", "d"]));
    assert!(!matches(&expected, &["a", "b"]));
    assert!(!matches(&expected, &["x", "d"]));
}

#[test]
fn anchors_follow_github() {
    let text = "# T\n## `cvo start`: the operator\n## Inclusion flags (`a`, `b`)\n## T\n```\n# not a heading\n```\n";
    let got = anchors(text);
    for anchor in ["t", "cvo-start-the-operator", "inclusion-flags-a-b", "t-1"] {
        assert!(got.contains(anchor), "{anchor} in {got:?}");
    }
    assert!(!got.contains("not-a-heading"));
}
