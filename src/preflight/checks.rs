//! Checks a target release ships for its own preflight (the idea of openshift/enhancements#1930,
//! "preflight from target release": a component states in the *new* release what it cannot
//! update from, instead of backporting a guard to every older release).
//!
//! A check is a ConfigMap of the payload annotated `release.openshift.io/preflight-check:
//! "true"`, included for the cluster like any manifest (capability, profile, feature set), with
//! these data keys:
//!
//! * `risk`: the risk's CamelCase name (`^[A-Z][A-Za-z0-9.-]*$`), what an administrator accepts;
//! * `message`: what it means, for people; `url`: where to read more;
//! * exactly one test: `promql`, a PromQL expression with upstream's `PromQL` risk semantics
//!   (1: the risk applies, 0: it does not); or `objects`, a YAML mapping that lists objects of
//!   the cluster (`apiVersion`, `kind`, optional `namespace` and `labelSelector`) and applies
//!   when one of them has a value at `path` (a JSON pointer; equal to `equals` when given).
//!
//! A ConfigMap, not a kind of its own: the checks need no CRD, are applied like any manifest
//! after the update (a record of what the release checked), and every tool that reads payloads
//! already understands them. Pure: parsing and the `objects` test; the shell lists the objects
//! and asks Prometheus.

use serde::Serialize;
use serde_json::Value;

use super::Finding;
use crate::manifest::Manifest;
use crate::suggest::did_you_mean;

/// The annotation that makes a ConfigMap of the payload a preflight check.
pub const CHECK_ANNOTATION: &str = "release.openshift.io/preflight-check";

/// The data keys of a check.
const KEYS: [&str; 5] = ["risk", "message", "url", "promql", "objects"];
/// The keys of an `objects` test.
const OBJECT_KEYS: [&str; 6] = [
    "apiVersion",
    "kind",
    "namespace",
    "labelSelector",
    "path",
    "equals",
];

/// A check of the target release.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// The ConfigMap's file and name, to say where it comes from.
    pub file: String,
    pub name: String,
    pub risk: String,
    pub message: String,
    pub url: String,
    pub test: CheckTest,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CheckTest {
    Promql(String),
    Objects(ObjectsTest),
}

/// Which objects to list, and what makes one match.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectsTest {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    /// A JSON pointer (`/spec/mode`); `None`: any listed object matches.
    pub path: Option<String>,
    pub equals: Option<Value>,
}

/// What evaluating a check gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckOutcome {
    /// The risk applies; why (the matching objects, the query's answer).
    Applies(String),
    DoesNotApply,
    /// It could not be evaluated: the risk is reported as applying (fail closed), with why.
    Failed(String),
}

/// Why a check manifest is not a valid check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: preflight check ConfigMap {name}: {problem}")]
pub struct CheckError {
    pub file: String,
    pub name: String,
    pub problem: String,
}

/// Whether `manifest` is marked as a preflight check.
pub fn is_check(manifest: &Manifest) -> bool {
    manifest
        .annotation(CHECK_ANNOTATION)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The checks among `manifests` (those marked [`is_check`]), each parsed or why not.
pub fn checks<'m>(
    manifests: impl IntoIterator<Item = &'m Manifest>,
) -> Vec<Result<Check, CheckError>> {
    (manifests.into_iter())
        .filter(|m| is_check(m))
        .map(parse)
        .collect()
}

/// Parses one check manifest.
pub fn parse(manifest: &Manifest) -> Result<Check, CheckError> {
    let fail = |problem: String| CheckError {
        file: manifest.file.to_string(),
        name: manifest.id.name.clone(),
        problem,
    };
    if !manifest.id.group.is_empty() || manifest.id.kind != "ConfigMap" {
        return Err(fail(format!(
            "{CHECK_ANNOTATION} marks a {}, but a check is a ConfigMap",
            manifest.id.kind
        )));
    }
    let object = manifest.object();
    let empty = serde_json::Map::new();
    let data = object
        .get("data")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for key in data.keys() {
        if !KEYS.contains(&key.as_str()) {
            return Err(fail(format!(
                "unknown data key {key:?}{}; valid keys: {}",
                did_you_mean(key, &KEYS),
                KEYS.join(", ")
            )));
        }
    }
    let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::trim);
    let required = |key: &str| {
        text(key)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .ok_or_else(|| fail(format!("data.{key} is required")))
    };
    let risk = required("risk")?;
    if !valid_risk_name(&risk) {
        return Err(fail(format!(
            "data.risk {risk:?} is not a CamelCase risk name (^[A-Z][A-Za-z0-9.-]*$)"
        )));
    }
    let message = required("message")?;
    let url = required("url")?;
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(fail(format!(
            "data.url {url:?} must be an http:// or https:// URL"
        )));
    }
    let test = match (text("promql"), text("objects")) {
        (Some(q), None) if !q.is_empty() => CheckTest::Promql(q.to_string()),
        (None, Some(o)) => CheckTest::Objects(parse_objects(o).map_err(fail)?),
        (Some(_), Some(_)) => {
            return Err(fail("give data.promql or data.objects, not both".into()));
        }
        _ => {
            return Err(fail(
                "one of data.promql and data.objects is required".into(),
            ));
        }
    };
    Ok(Check {
        file: manifest.file.to_string(),
        name: manifest.id.name.clone(),
        risk,
        message,
        url,
        test,
    })
}

fn valid_risk_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

fn parse_objects(text: &str) -> Result<ObjectsTest, String> {
    let value = crate::yaml::parse_value(text).map_err(|e| format!("data.objects: {e}"))?;
    let Some(map) = value.as_object() else {
        return Err("data.objects must be a mapping (apiVersion, kind, ...)".into());
    };
    for key in map.keys() {
        if !OBJECT_KEYS.contains(&key.as_str()) {
            return Err(format!(
                "unknown key {key:?} in data.objects{}; valid keys: {}",
                did_you_mean(key, &OBJECT_KEYS),
                OBJECT_KEYS.join(", ")
            ));
        }
    }
    let string = |key: &str| -> Result<Option<String>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(format!("data.objects.{key} must be a non-empty string")),
        }
    };
    let need = |key: &str| string(key)?.ok_or_else(|| format!("data.objects.{key} is required"));
    let (api_version, kind) = (need("apiVersion")?, need("kind")?);
    // The operator may read Secrets; a check must not turn it into an oracle of their contents
    // for whoever reads the ClusterVersion status.
    if api_version == "v1" && kind == "Secret" {
        return Err("data.objects cannot list Secrets: their contents are not for a check to reveal in the ClusterVersion status".into());
    }
    let path = string("path")?;
    if let Some(p) = &path
        && !p.starts_with('/')
    {
        return Err(format!(
            "data.objects.path {p:?} must be a JSON pointer (starting with '/', e.g. /spec/mode)"
        ));
    }
    let equals = map.get("equals").cloned();
    if equals.is_some() && path.is_none() {
        return Err("data.objects.equals needs data.objects.path".into());
    }
    Ok(ObjectsTest {
        api_version,
        kind,
        namespace: string("namespace")?,
        label_selector: string("labelSelector")?,
        path,
        equals,
    })
}

/// The `objects` test over the listed objects: the ones with a value at `path` (equal to
/// `equals` when given) make the risk apply.
pub fn match_objects(test: &ObjectsTest, objects: &[Value]) -> CheckOutcome {
    let matching: Vec<String> = (objects.iter())
        .filter(|o| match (&test.path, &test.equals) {
            (None, _) => true,
            (Some(path), None) => o.pointer(path).is_some_and(|v| !v.is_null()),
            (Some(path), Some(want)) => o.pointer(path) == Some(want),
        })
        .map(object_name)
        .collect();
    if matching.is_empty() {
        return CheckOutcome::DoesNotApply;
    }
    const SHOWN: usize = 5;
    let mut shown = matching[..matching.len().min(SHOWN)].join(", ");
    if matching.len() > SHOWN {
        shown.push_str(&format!(" and {} more", matching.len() - SHOWN));
    }
    CheckOutcome::Applies(format!("{} {}: {shown}", matching.len(), test.kind))
}

fn object_name(object: &Value) -> String {
    let meta = |key: &str| {
        object
            .pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_str)
    };
    match (meta("namespace"), meta("name")) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        (_, name) => name.unwrap_or("<unnamed>").to_string(),
    }
}

impl Check {
    /// The finding of this check's outcome, if the risk applies (or could not be evaluated).
    pub fn finding(&self, outcome: &CheckOutcome) -> Option<Finding> {
        let why = match outcome {
            CheckOutcome::DoesNotApply => return None,
            CheckOutcome::Applies(why) => format!("(found: {why})"),
            CheckOutcome::Failed(e) => format!(
                "(the check could not be evaluated, so the risk is reported as applying: {e})"
            ),
        };
        Some(Finding {
            name: self.risk.clone(),
            message: format!(
                "{}\n{why} [check {} in {}]",
                self.message, self.name, self.file
            ),
            url: self.url.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::{InputFile, Layout, LoadOptions, Payload, PayloadInput};

    fn manifests(text: &str) -> Payload {
        let input = PayloadInput {
            origin: "test".into(),
            layout: Layout::PayloadRoot,
            manifests: vec![],
            release_manifests: vec![InputFile {
                name: "0000_90_x_preflight.yaml".into(),
                contents: Ok(text.as_bytes().to_vec()),
            }],
            release_metadata: None,
            image_references: None,
        };
        Payload::from_input(input, &LoadOptions::default()).unwrap()
    }

    fn check(data: &str) -> Result<Check, CheckError> {
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: openshift-cluster-version\n  annotations:\n    release.openshift.io/preflight-check: \"true\"\ndata:\n{data}"
        );
        let payload = manifests(&text);
        let mut found = checks(&payload.manifests);
        assert_eq!(found.len(), 1);
        found.remove(0)
    }

    const HEAD: &str = "  risk: LegacyWidgets\n  message: Widgets in legacy mode stop working.\n  url: https://example.com/widgets\n";

    #[test]
    fn checks_parse_with_either_test() {
        let promql = check(&format!("{HEAD}  promql: 'max(widget_legacy)'\n")).unwrap();
        assert_eq!(promql.test, CheckTest::Promql("max(widget_legacy)".into()));
        let objects = check(&format!(
            "{HEAD}  objects: |\n    apiVersion: v1\n    kind: ConfigMap\n    namespace: widgets\n    path: /data/mode\n    equals: legacy\n"
        ))
        .unwrap();
        let CheckTest::Objects(test) = objects.test else {
            panic!("objects")
        };
        assert_eq!(test.path.as_deref(), Some("/data/mode"));
        assert_eq!(test.equals, Some(Value::String("legacy".into())));
    }

    #[test]
    fn bad_checks_say_what_is_wrong() {
        let problem = |data: &str| check(data).unwrap_err().to_string();
        assert_eq!(
            problem(&format!("{HEAD}  promqll: x\n")),
            "0000_90_x_preflight.yaml: preflight check ConfigMap c: unknown data key \"promqll\" (did you mean promql?); valid keys: risk, message, url, promql, objects"
        );
        assert!(
            problem("  message: m\n  url: https://x\n  promql: x\n")
                .ends_with("data.risk is required")
        );
        assert!(
            problem(&HEAD.replace("LegacyWidgets", "legacy widgets"))
                .contains("is not a CamelCase risk name")
        );
        assert!(problem(HEAD).ends_with("one of data.promql and data.objects is required"));
        assert!(
            problem(&format!(
                "{HEAD}  objects: |\n    apiVersion: v1\n    knd: ConfigMap\n"
            ))
            .contains("unknown key \"knd\" in data.objects (did you mean kind?)")
        );
        assert!(
            problem(&format!(
                "{HEAD}  objects: |\n    apiVersion: v1\n    kind: Secret\n"
            ))
            .contains("cannot list Secrets")
        );
        assert!(
            problem(&format!(
                "{HEAD}  objects: |\n    apiVersion: v1\n    kind: ConfigMap\n    path: data.mode\n"
            ))
            .contains("must be a JSON pointer")
        );
    }

    #[test]
    fn objects_match_by_path_and_value() {
        let test = |path: Option<&str>, equals: Option<Value>| ObjectsTest {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: None,
            label_selector: None,
            path: path.map(str::to_string),
            equals,
        };
        let objects = [
            serde_json::json!({"metadata": {"name": "a", "namespace": "n"}, "data": {"mode": "legacy"}}),
            serde_json::json!({"metadata": {"name": "b", "namespace": "n"}, "data": {"mode": "new"}}),
            serde_json::json!({"metadata": {"name": "c", "namespace": "n"}}),
        ];
        let legacy = Some(Value::String("legacy".into()));
        assert_eq!(
            match_objects(&test(Some("/data/mode"), legacy), &objects),
            CheckOutcome::Applies("1 ConfigMap: n/a".into())
        );
        assert_eq!(
            match_objects(&test(Some("/data/mode"), None), &objects),
            CheckOutcome::Applies("2 ConfigMap: n/a, n/b".into())
        );
        assert_eq!(
            match_objects(&test(Some("/data/other"), None), &objects),
            CheckOutcome::DoesNotApply
        );
        assert_eq!(
            match_objects(&test(None, None), &[]),
            CheckOutcome::DoesNotApply
        );
    }

    #[test]
    fn a_failed_check_fails_closed() {
        let c = check(&format!("{HEAD}  promql: x\n")).unwrap();
        assert_eq!(c.finding(&CheckOutcome::DoesNotApply), None);
        let f = c
            .finding(&CheckOutcome::Failed("no Prometheus".into()))
            .unwrap();
        assert_eq!(f.name, "LegacyWidgets");
        assert_eq!(
            f.message,
            "Widgets in legacy mode stop working.\n(the check could not be evaluated, so the risk is reported as applying: no Prometheus) [check c in 0000_90_x_preflight.yaml]"
        );
    }
}
