//! Output formats of `cvo validate`: rustc-style text with source snippets, JSON, JUnit XML and
//! GitHub Actions workflow commands. Pure functions from a [`Report`] to a string.
//!
//! `base` is put in front of every file path (the `--payload` directory as given), so that
//! paths in the output open from where the command ran and GitHub can attach annotations.

use super::{Finding, Report, Severity};

/// Where a finding's file is, as printed.
pub fn display_path(base: &str, file: &str) -> String {
    let base = base
        .strip_prefix("./")
        .unwrap_or(base)
        .trim_end_matches('/');
    if base.is_empty() || base == "." {
        file.to_string()
    } else if file.is_empty() {
        base.to_string()
    } else {
        format!("{base}/{file}")
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The last line of the text and GitHub outputs.
pub fn summary(report: &Report, deny_warnings: bool) -> String {
    let errors = report.count(Severity::Error);
    let warnings = report.count(Severity::Warning);
    let verdict = if report.passes(deny_warnings) {
        "ok"
    } else {
        "error"
    };
    let denied = if deny_warnings && warnings > 0 {
        " (warnings denied)"
    } else {
        ""
    };
    format!(
        "{verdict}: {}: {}, {}: {}, {}{denied}",
        report.origin,
        plural(report.files.len(), "file"),
        plural(report.documents, "document"),
        plural(errors, "error"),
        plural(warnings, "warning"),
    )
}

/// rustc-style: header, `-->` location, the source line with a caret under the position, and
/// the help.
pub fn text(report: &Report, base: &str, deny_warnings: bool) -> String {
    let mut out = String::new();
    for finding in &report.findings {
        out.push_str(&text_finding(report, finding, base));
        out.push('\n');
    }
    out.push_str(&summary(report, deny_warnings));
    out.push('\n');
    out
}

fn text_finding(report: &Report, f: &Finding, base: &str) -> String {
    let source_line = f.line.and_then(|line| {
        let text = report.sources.get(&f.file)?;
        text.lines().nth(line.checked_sub(1)?)
    });
    let gutter = f.line.map_or(1, |l| l.to_string().len());
    let pad = " ".repeat(gutter);
    let mut out = format!("{}[{}]: {}\n", f.severity, f.code, f.message);
    let location = match (f.line, f.column) {
        (Some(line), Some(column)) => format!(":{line}:{column}"),
        _ => String::new(),
    };
    out.push_str(&format!(
        "{pad}--> {}{location}\n",
        display_path(base, &f.file)
    ));
    if let (Some(line), Some(source)) = (f.line, source_line) {
        let source = source.replace('\t', " ");
        let column = f.column.unwrap_or(1).max(1);
        let marker = " ".repeat(column - 1) + &"^".repeat(token_width(&source, column));
        out.push_str(&format!("{pad} |\n{line} | {source}\n{pad} | {marker}\n"));
    }
    if let Some(help) = &f.help {
        out.push_str(&format!("{pad} = help: {help}\n"));
    }
    out
}

/// How many characters to underline: the token that starts at `column` (up to a blank, `:`,
/// `,`, a quote, or the `+` between capability names), at least one.
fn token_width(line: &str, column: usize) -> usize {
    line.chars()
        .skip(column - 1)
        .take_while(|c| !c.is_whitespace() && !matches!(c, ':' | ',' | '+' | '"' | '\''))
        .count()
        .max(1)
}

/// `[{"severity","code","file","line","column","message","help"}]`, pretty-printed.
pub fn json(report: &Report, base: &str) -> String {
    let findings: Vec<Finding> = report
        .findings
        .iter()
        .map(|f| Finding {
            file: display_path(base, &f.file),
            ..f.clone()
        })
        .collect();
    serde_json::to_string_pretty(&findings).unwrap_or_else(|_| "[]".to_string()) + "\n"
}

/// Whether a finding fails the run.
fn fails(f: &Finding, deny_warnings: bool) -> bool {
    f.severity == Severity::Error || deny_warnings
}

/// Every file checked plus any file a finding names (a missing metadata file, an unread one),
/// in report order.
fn all_files(report: &Report) -> Vec<&str> {
    let mut extra: Vec<&str> = report
        .findings
        .iter()
        .map(|f| f.file.as_str())
        .filter(|f| !report.files.iter().any(|known| known == f))
        .collect();
    extra.sort_unstable();
    extra.dedup();
    extra.extend(report.files.iter().map(String::as_str));
    extra
}

/// One test case per file: passed, or failed with every failing finding of the file in the
/// failure's body. Warnings that do not fail go to the case's `system-out`.
pub fn junit(report: &Report, base: &str, deny_warnings: bool) -> String {
    let files = all_files(report);
    let cases: Vec<String> = files
        .iter()
        .map(|file| junit_case(report, file, base, deny_warnings))
        .collect();
    let failures = files
        .iter()
        .filter(|file| {
            report
                .findings
                .iter()
                .any(|f| f.file == **file && fails(f, deny_warnings))
        })
        .count();
    let name = xml(&format!("cvo validate {}", report.origin));
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"0\"",
        files.len()
    );
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{name}\" {counts}>\n  <testsuite name=\"{name}\" {counts} skipped=\"0\">\n{}  </testsuite>\n</testsuites>\n",
        cases.concat()
    )
}

fn junit_case(report: &Report, file: &str, base: &str, deny_warnings: bool) -> String {
    let (failing, passing): (Vec<&Finding>, Vec<&Finding>) = report
        .findings
        .iter()
        .filter(|f| f.file == file)
        .partition(|f| fails(f, deny_warnings));
    let classname = match file.rsplit_once('/') {
        Some((dir, _)) => dir,
        None => "payload",
    };
    let open = format!(
        "    <testcase classname=\"{}\" name=\"{}\"",
        xml(classname),
        xml(&display_path(base, file))
    );
    if failing.is_empty() && passing.is_empty() {
        return format!("{open}/>\n");
    }
    let mut out = format!("{open}>\n");
    if let Some(first) = failing.first() {
        let more = match failing.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        out.push_str(&format!(
            "      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
            xml(first.code.as_str()),
            xml(&format!("[{}] {}{more}", first.code, first.message)),
            xml(&plain_lines(&failing))
        ));
    }
    if !passing.is_empty() {
        out.push_str(&format!(
            "      <system-out>{}</system-out>\n",
            xml(&plain_lines(&passing))
        ));
    }
    out.push_str("    </testcase>\n");
    out
}

/// `line:column: severity[code]: message` and an indented help, one finding after another.
fn plain_lines(findings: &[&Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            let at = match (f.line, f.column) {
                (Some(l), Some(c)) => format!("{l}:{c}: "),
                _ => String::new(),
            };
            let help = f
                .help
                .as_ref()
                .map(|h| format!("\n  help: {h}"))
                .unwrap_or_default();
            format!("{at}{}[{}]: {}{help}", f.severity, f.code, f.message)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// XML text and attribute escaping; characters XML 1.0 cannot carry become U+FFFD.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// GitHub Actions workflow commands (`::error file=...,line=...,col=...,title=CODE::message`),
/// which annotate the pull request's diff, then the summary line.
pub fn github(report: &Report, base: &str, deny_warnings: bool) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let command = if fails(f, deny_warnings) {
            "error"
        } else {
            "warning"
        };
        let mut properties = vec![format!(
            "file={}",
            github_property(&display_path(base, &f.file))
        )];
        if let (Some(line), Some(column)) = (f.line, f.column) {
            properties.push(format!("line={line}"));
            properties.push(format!("col={column}"));
        }
        properties.push(format!("title={}", github_property(f.code.as_str())));
        let message = match &f.help {
            Some(help) => format!("{}\nhelp: {help}", f.message),
            None => f.message.clone(),
        };
        out.push_str(&format!(
            "::{command} {}::{}\n",
            properties.join(","),
            github_data(&message)
        ));
    }
    out.push_str(&summary(report, deny_warnings));
    out.push('\n');
    out
}

fn github_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn github_property(text: &str) -> String {
    github_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::validate::Code;

    fn report() -> Report {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    release.openshift.io/delete: \"yes\"\n";
        Report {
            origin: "p".into(),
            findings: vec![
                Finding::new(
                    Code::MissingMetadata,
                    "release-manifests/release-metadata",
                    "release-manifests/release-metadata is missing",
                ),
                Finding::new(
                    Code::DeleteValue,
                    "release-manifests/0000_10_a_x.yaml",
                    r#"invalid delete annotation "release.openshift.io/delete" value: "yes""#,
                )
                .at(5, 5)
                .help("set it to \"true\" & <go>"),
            ],
            files: vec![
                "release-manifests/0000_10_a_x.yaml".into(),
                "release-manifests/0000_10_a_y.yaml".into(),
            ],
            documents: 2,
            sources: BTreeMap::from([(
                "release-manifests/0000_10_a_x.yaml".to_string(),
                Arc::new(text.to_string()),
            )]),
        }
    }

    #[test]
    fn text_is_rustc_style_with_a_snippet() {
        assert_eq!(
            text(&report(), "./payload/", false),
            r#"warning[missing-metadata]: release-manifests/release-metadata is missing
 --> payload/release-manifests/release-metadata

error[delete-value]: invalid delete annotation "release.openshift.io/delete" value: "yes"
 --> payload/release-manifests/0000_10_a_x.yaml:5:5
  |
5 |     release.openshift.io/delete: "yes"
  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: set it to "true" & <go>

error: p: 2 files, 2 documents: 1 error, 1 warning
"#
        );
    }

    #[test]
    fn summary_and_denied_warnings() {
        let mut r = report();
        r.findings.remove(1);
        assert_eq!(
            summary(&r, false),
            "ok: p: 2 files, 2 documents: 0 errors, 1 warning"
        );
        assert_eq!(
            summary(&r, true),
            "error: p: 2 files, 2 documents: 0 errors, 1 warning (warnings denied)"
        );
    }

    #[test]
    fn json_lists_every_field() {
        let value: serde_json::Value = serde_json::from_str(&json(&report(), "")).unwrap();
        assert_eq!(
            value[1],
            serde_json::json!({
                "severity": "error",
                "code": "delete-value",
                "file": "release-manifests/0000_10_a_x.yaml",
                "line": 5,
                "column": 5,
                "message": "invalid delete annotation \"release.openshift.io/delete\" value: \"yes\"",
                "help": "set it to \"true\" & <go>"
            })
        );
        assert_eq!(value[0]["line"], serde_json::Value::Null);
    }

    #[test]
    fn junit_has_a_case_per_file_and_escapes() {
        assert_eq!(
            junit(&report(), "", false),
            r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="cvo validate p" tests="3" failures="1" errors="0">
  <testsuite name="cvo validate p" tests="3" failures="1" errors="0" skipped="0">
    <testcase classname="release-manifests" name="release-manifests/release-metadata">
      <system-out>warning[missing-metadata]: release-manifests/release-metadata is missing</system-out>
    </testcase>
    <testcase classname="release-manifests" name="release-manifests/0000_10_a_x.yaml">
      <failure type="delete-value" message="[delete-value] invalid delete annotation &quot;release.openshift.io/delete&quot; value: &quot;yes&quot;">5:5: error[delete-value]: invalid delete annotation &quot;release.openshift.io/delete&quot; value: &quot;yes&quot;
  help: set it to &quot;true&quot; &amp; &lt;go&gt;</failure>
    </testcase>
    <testcase classname="release-manifests" name="release-manifests/0000_10_a_y.yaml"/>
  </testsuite>
</testsuites>
"#
        );
        let denied = junit(&report(), "", true);
        assert!(denied.contains(r#"tests="3" failures="2""#), "{denied}");
        assert_eq!(xml("a\u{1}b"), "a\u{fffd}b");
    }

    #[test]
    fn github_commands_escape_data_and_properties() {
        assert_eq!(
            github(&report(), "p,q", false),
            "::warning file=p%2Cq/release-manifests/release-metadata,title=missing-metadata::release-manifests/release-metadata is missing\n\
             ::error file=p%2Cq/release-manifests/0000_10_a_x.yaml,line=5,col=5,title=delete-value::invalid delete annotation \"release.openshift.io/delete\" value: \"yes\"%0Ahelp: set it to \"true\" & <go>\n\
             error: p: 2 files, 2 documents: 1 error, 1 warning\n"
        );
        assert_eq!(github_data("100%\r\n"), "100%25%0D%0A");
    }
}
