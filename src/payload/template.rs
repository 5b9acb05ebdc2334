//! The subset of Go `text/template` that the CVO's own manifests (`manifests/`) use.
//!
//! Written by hand because no Rust crate implements Go template semantics, and the CVO only
//! needs: `{{.ReleaseImage}}`, `{{ .ClusterProfile }}`, `{{index .Images "tag"}}`, string
//! literals (`{{ "{{ $value }}" }}` is how its PrometheusRules escape braces), comments and the
//! `{{-`/`-}}` trim markers. Anything else is an error naming the action, which loading turns
//! into the upstream "skip with a warning" and rendering into a failure.

use std::collections::BTreeMap;

/// The data the template sees (upstream `manifestRenderConfig`).
#[derive(Debug, Clone, Default)]
pub struct RenderConfig {
    pub release_image: String,
    pub cluster_profile: String,
    pub images: BTreeMap<String, String>,
}

/// Renders `text`; `name` is the file name, used in messages as Go does.
pub fn render(name: &str, text: &str, config: &RenderConfig) -> Result<String, String> {
    if !text.contains("{{") {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut consumed = 0;
    while let Some(open) = rest.find("{{") {
        let (before, after_open) = rest.split_at(open);
        let after_open = &after_open[2..];
        let trim_left = after_open.starts_with("- ")
            || after_open.starts_with("-\t")
            || after_open.starts_with("-\n");
        out.push_str(if trim_left { before.trim_end() } else { before });
        let body_start = if trim_left { 1 } else { 0 };
        let line = line_of(text, consumed + open);
        let close = find_close(&after_open[body_start..])
            .ok_or_else(|| format!("template: {name}:{line}: unclosed action"))?;
        let body = &after_open[body_start..body_start + close];
        let (body, trim_right) = match body
            .strip_suffix(" -")
            .or_else(|| body.strip_suffix("\t-"))
            .or_else(|| body.strip_suffix("\n-"))
        {
            Some(b) => (b, true),
            None => (body, false),
        };
        out.push_str(&evaluate(name, line, body.trim(), config)?);
        let skipped = open + 2 + body_start + close + 2;
        consumed += skipped;
        rest = &rest[skipped..];
        if trim_right {
            let trimmed = rest.trim_start();
            consumed += rest.len() - trimmed.len();
            rest = trimmed;
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// The offset of the `}}` closing an action, skipping over quoted strings inside it.
fn find_close(body: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b'\'' => i = skip_quoted(bytes, i)?,
            b'`' => i += 1 + body[i + 1..].find('`')? + 1,
            b'}' if bytes.get(i + 1) == Some(&b'}') => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn skip_quoted(bytes: &[u8], start: usize) -> Option<usize> {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote => return Some(i + 1),
            b'\n' => return None,
            _ => i += 1,
        }
    }
    None
}

fn evaluate(
    name: &str,
    line: usize,
    action: &str,
    config: &RenderConfig,
) -> Result<String, String> {
    if action.starts_with("/*") && action.ends_with("*/") {
        return Ok(String::new());
    }
    let words = words(action)
        .ok_or_else(|| format!("template: {name}:{line}: malformed action {{{{{action}}}}}"))?;
    match words.as_slice() {
        [single] => value(name, line, single, config),
        [function, map, key] if function == "index" => {
            let images = match map.as_str() {
                ".Images" => &config.images,
                other => return Err(field_error(name, line, other)),
            };
            let key = literal(key).ok_or_else(|| unsupported(name, line, action))?;
            Ok(images.get(&key).cloned().unwrap_or_default())
        }
        _ => Err(unsupported(name, line, action)),
    }
}

fn value(name: &str, line: usize, word: &str, config: &RenderConfig) -> Result<String, String> {
    match word {
        ".ReleaseImage" => Ok(config.release_image.clone()),
        ".ClusterProfile" => Ok(config.cluster_profile.clone()),
        ".Images" => Ok(go_map(&config.images)),
        field if field.starts_with('.') && field.len() > 1 => Err(field_error(name, line, field)),
        other => literal(other).ok_or_else(|| unsupported(name, line, other)),
    }
}

fn field_error(name: &str, line: usize, field: &str) -> String {
    let first = field
        .trim_start_matches('.')
        .split('.')
        .next()
        .unwrap_or("");
    format!(
        "template: {name}:{line}: executing {name:?} at <{field}>: can't evaluate field {first} in type payload.manifestRenderConfig"
    )
}

fn unsupported(name: &str, line: usize, action: &str) -> String {
    format!(
        "template: {name}:{line}: unsupported action {{{{{action}}}}}: cvo renders only .ReleaseImage, .ClusterProfile, index .Images \"tag\" and string literals"
    )
}

/// Go prints a map as `map[k:v k2:v2]`.
fn go_map(map: &BTreeMap<String, String>) -> String {
    let items: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    format!("map[{}]", items.join(" "))
}

/// Splits an action into words; quoted strings stay whole.
fn words(action: &str) -> Option<Vec<String>> {
    let bytes = action.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        i = match bytes[i] {
            b'"' | b'\'' => skip_quoted(bytes, i)?,
            b'`' => i + 1 + action[i + 1..].find('`')? + 1,
            _ => {
                i + action[i..]
                    .find(|c: char| c.is_ascii_whitespace())
                    .unwrap_or(action.len() - i)
            }
        };
        words.push(action[start..i].to_string());
    }
    Some(words)
}

/// A Go string literal: interpreted `"..."` or raw `` `...` ``.
fn literal(word: &str) -> Option<String> {
    if let Some(raw) = word.strip_prefix('`').and_then(|w| w.strip_suffix('`')) {
        return Some(raw.to_string());
    }
    let inner = word.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'v' => '\u{b}',
            '\\' => '\\',
            '"' => '"',
            '\'' => '\'',
            'x' => char::from(u8::from_str_radix(&take(&mut chars, 2)?, 16).ok()?),
            'u' => char::from_u32(u32::from_str_radix(&take(&mut chars, 4)?, 16).ok()?)?,
            _ => return None,
        });
    }
    Some(out)
}

fn take(chars: &mut std::str::Chars<'_>, n: usize) -> Option<String> {
    let s: String = chars.take(n).collect();
    (s.len() == n).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> RenderConfig {
        RenderConfig {
            release_image: "quay.io/r@sha256:1".into(),
            cluster_profile: "single-node-developer".into(),
            images: [("cvo".to_string(), "quay.io/cvo@sha256:2".to_string())].into(),
        }
    }

    #[test]
    fn renders_the_fields_the_cvo_uses() {
        let text = "image: {{.ReleaseImage}}\nprofile: {{ .ClusterProfile }}\ncvo: {{index .Images \"cvo\"}}\nmissing: '{{ index .Images `none` }}'\n";
        assert_eq!(
            render("f.yaml", text, &config()).unwrap(),
            "image: quay.io/r@sha256:1\nprofile: single-node-developer\ncvo: quay.io/cvo@sha256:2\nmissing: ''\n"
        );
    }

    #[test]
    fn string_literals_escape_braces_like_the_cvo_prometheus_rules() {
        let text = r#"description: {{ "{{ $value | humanizeDuration }}" }} and {{ "{{ with $x := \"y\" | query }}" }}."#;
        assert_eq!(
            render("f.yaml", text, &config()).unwrap(),
            r#"description: {{ $value | humanizeDuration }} and {{ with $x := "y" | query }}."#
        );
    }

    #[test]
    fn trim_markers_and_comments() {
        assert_eq!(
            render(
                "f",
                "a  {{- .ClusterProfile -}}  \n b{{/* note */}}",
                &config()
            )
            .unwrap(),
            "asingle-node-developerb"
        );
    }

    #[test]
    fn unknown_fields_fail_like_go() {
        let err = render("f.yaml", "a\nb: {{index .FutureField \"k\"}}", &config()).unwrap_err();
        assert_eq!(
            err,
            "template: f.yaml:2: executing \"f.yaml\" at <.FutureField>: can't evaluate field FutureField in type payload.manifestRenderConfig"
        );
        assert!(
            render("f.yaml", "{{ .Nope }}", &config())
                .unwrap_err()
                .contains("can't evaluate field Nope")
        );
    }

    #[test]
    fn unsupported_actions_and_unclosed_ones_are_errors() {
        assert!(
            render("f", "{{ if .ReleaseImage }}x{{ end }}", &config())
                .unwrap_err()
                .contains("unsupported action")
        );
        assert!(
            render("f", "a {{ .ReleaseImage", &config())
                .unwrap_err()
                .contains("unclosed action")
        );
    }

    #[test]
    fn text_without_actions_is_unchanged() {
        assert_eq!(
            render("f", "a: { b: c }\n", &config()).unwrap(),
            "a: { b: c }\n"
        );
    }
}
