//! The objects a cluster stores under the target's CRD schemas: which would fail a schema the
//! update installs, and which fields it would drop (the API server prunes what a structural
//! schema does not declare, also from stored objects as it reads them). [`crate::crd_schema`]
//! does what the API server does with one object; this module decides what to list and words
//! the findings.
//!
//! Pure: the shell reads the live CRDs ([`LiveCrd`]) and lists the objects of each
//! [`Listing`] this module asks for.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::Finding;
use crate::crd_schema::Schema;
use crate::manifest::Manifest;

pub const STORED_OBJECTS_INVALID: &str = "PreflightStoredObjectsInvalid";
pub const FIELDS_PRUNED: &str = "PreflightStoredFieldsPruned";
pub const SCHEMA_URL: &str = "https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#validation";
pub const PRUNING_URL: &str = "https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning";

/// At most this many objects are named per finding (the count says how many there are), with
/// at most this many of each object's problems, each cut at this many characters: the
/// findings go into the ClusterVersion status.
const NAMED: usize = 20;
const PER_OBJECT: usize = 5;
const LINE: usize = 300;

/// What the shell read of a live CRD the target changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveCrd {
    pub served: BTreeSet<String>,
    pub storage: Option<String>,
    /// `spec.conversion.strategy` is `None` (or unset): a version the cluster does not serve
    /// yet holds the same fields as the stored one.
    pub no_conversion: bool,
    /// Each version's `openAPIV3Schema`: a version whose schema the update leaves as it is
    /// needs no check.
    pub schemas: BTreeMap<String, Value>,
}

/// Objects to list: those of CRD `crd` read at `list_version`, to be checked against the
/// target's schema of `target_version`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Listing {
    pub crd: String,
    pub list_version: String,
    pub target_version: String,
}

/// What to list for the target's `crds`: each version the target serves, read at the same
/// version where the cluster serves it, else (no conversion) at the stored version. A version
/// only a conversion webhook could produce is not listed.
pub fn listings(crds: &[&Manifest], live: &BTreeMap<String, LiveCrd>) -> Vec<Listing> {
    let mut out = Vec::new();
    for crd in crds {
        let Some(live) = live.get(&crd.id.name) else {
            continue;
        };
        let object = crd.object();
        // A webhook of the target would convert: what it makes cannot be read before it runs.
        let target_converts = (object.pointer("/spec/conversion/strategy"))
            .and_then(Value::as_str)
            .is_some_and(|s| s != "None");
        for (version, schema) in served_schemas(&object) {
            if live.schemas.get(&version) == Some(&schema) {
                continue;
            }
            let list_version = if live.served.contains(&version) {
                Some(version.clone())
            } else if live.no_conversion && !target_converts {
                live.storage.clone().filter(|s| live.served.contains(s))
            } else {
                None
            };
            if let Some(list_version) = list_version {
                out.push(Listing {
                    crd: crd.id.name.clone(),
                    list_version,
                    target_version: version,
                });
            }
        }
    }
    out
}

/// The served versions of a CRD manifest with their `openAPIV3Schema`.
fn served_schemas(crd: &Value) -> Vec<(String, Value)> {
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    (versions.into_iter().flatten())
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| {
            let name = v.get("name")?.as_str()?.to_string();
            let schema = v.pointer("/schema/openAPIV3Schema")?.clone();
            Some((name, schema))
        })
        .collect()
}

/// What the checks found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    pub findings: Vec<Finding>,
    /// Schemas of the target that could not be compiled (the API server would refuse them).
    pub errors: Vec<String>,
    /// `x-kubernetes-validations` rules of the checked schemas not evaluated (once per rule
    /// cel-rust cannot compile, once per object a rule could not run on).
    pub unevaluated_rules: usize,
}

/// Checks each listing's objects (`objects`, in the order of `listings`) against the target's
/// schema for it ([`Checker`] at once).
pub fn check(to: &str, crds: &[&Manifest], stored: &[(Listing, Vec<Value>)]) -> Checked {
    let listings: Vec<Listing> = stored.iter().map(|(l, _)| l.clone()).collect();
    let mut checker = Checker::new(to, crds, &listings);
    for (listing, objects) in stored {
        checker.add(listing, objects);
    }
    checker.finish()
}

/// Checks stored objects page by page, keeping only what the findings say (the counts and the
/// first objects named), so that listing a CRD with many objects holds one page at a time.
pub struct Checker {
    to: String,
    schemas: Compiled,
    errors: Vec<String>,
    unevaluated_rules: usize,
    /// The schemas met so far (their rules not compiled count once).
    met: BTreeSet<(String, String)>,
    invalid: Tally,
    pruned: Tally,
}

/// Objects found, each once: how many, and the lines of the first [`NAMED`].
#[derive(Default)]
struct Tally {
    seen: BTreeSet<(String, String)>,
    lines: Vec<String>,
}

impl Tally {
    fn add(&mut self, key: (String, String), line: impl FnOnce() -> String) {
        if self.seen.insert(key) && self.lines.len() < NAMED {
            self.lines.push(line());
        }
    }

    /// The count, then the lines (and how many more there are).
    fn text(&self) -> (usize, String) {
        let mut lines = self.lines.clone();
        let more = self.seen.len() - lines.len();
        if more > 0 {
            lines.push(format!("and {more} more"));
        }
        (self.seen.len(), lines.join("\n"))
    }
}

impl Checker {
    /// A checker of the stored objects `listings` name against the schemas of `crds`, the
    /// target's. Only those schemas are compiled (their CEL rules cost about 8 ms a schema).
    pub fn new(to: &str, crds: &[&Manifest], listings: &[Listing]) -> Self {
        let mut errors = Vec::new();
        let schemas = compiled_schemas(crds, listings, &mut errors);
        Checker {
            to: to.to_string(),
            schemas,
            errors,
            unevaluated_rules: 0,
            met: BTreeSet::new(),
            invalid: Tally::default(),
            pruned: Tally::default(),
        }
    }

    /// One page of `listing`'s objects.
    pub fn add(&mut self, listing: &Listing, objects: &[Value]) {
        let key = (listing.crd.clone(), listing.target_version.clone());
        let Some((kind, file, schema)) = self.schemas.get(&key) else {
            return;
        };
        if self.met.insert(key) {
            self.unevaluated_rules += schema.unevaluated_rules();
        }
        let at = format!("{} {}", listing.crd, listing.target_version);
        for object in objects {
            let outcome = schema.check(object);
            self.unevaluated_rules += outcome.unevaluated_rules;
            let name = object_name(kind, object);
            // An object served in several versions is reported once, for the first.
            let key = (listing.crd.clone(), name.clone());
            if !outcome.violations.is_empty() {
                self.invalid.add(key.clone(), || {
                    let texts: Vec<String> =
                        outcome.violations.iter().map(|v| v.to_string()).collect();
                    format!("* {name} ({at}, {file}): {}", few(&texts, "; "))
                });
            }
            if !outcome.pruned.is_empty() {
                self.pruned.add(key, || {
                    format!("* {name} ({at}, {file}): {}", few(&outcome.pruned, ", "))
                });
            }
        }
    }

    /// The findings.
    pub fn finish(self) -> Checked {
        let to = &self.to;
        let mut findings = Vec::new();
        let cel = if self.unevaluated_rules > 0 {
            format!(
                "\n({} evaluations of x-kubernetes-validations rules were not possible: functions of Kubernetes' CEL libraries cvo does not have.)",
                self.unevaluated_rules
            )
        } else {
            String::new()
        };
        let (invalid, lines) = self.invalid.text();
        if invalid > 0 {
            findings.push(Finding {
                name: STORED_OBJECTS_INVALID.into(),
                message: format!(
                    "{invalid} objects stored in the cluster fail the schema {to} installs for their CustomResourceDefinition: the API server would refuse them as they are, and any write that changes these fields without fixing them:\n{lines}{cel}"
                ),
                url: SCHEMA_URL.into(),
            });
        }
        let (pruned, lines) = self.pruned.text();
        if pruned > 0 {
            findings.push(Finding {
                name: FIELDS_PRUNED.into(),
                message: format!(
                    "{pruned} objects stored in the cluster have fields the schema {to} installs for their CustomResourceDefinition does not declare; the API server drops them (pruning) once the update installs it:\n{lines}"
                ),
                url: PRUNING_URL.into(),
            });
        }
        Checked {
            findings,
            errors: self.errors,
            unevaluated_rules: self.unevaluated_rules,
        }
    }
}

type Compiled = BTreeMap<(String, String), (String, String, Schema)>;

/// The target's schemas by (CRD, version), with the CRD's kind and file.
fn compiled_schemas(
    crds: &[&Manifest],
    listings: &[Listing],
    errors: &mut Vec<String>,
) -> Compiled {
    let mut schemas = BTreeMap::new();
    let listed = |crd: &str, version: &str| {
        (listings.iter()).any(|l| l.crd == crd && l.target_version == version)
    };
    for crd in crds {
        let object = crd.object();
        let kind = (object.pointer("/spec/names/kind").and_then(Value::as_str))
            .unwrap_or(&crd.id.name)
            .to_string();
        let versions = served_schemas(&object).into_iter();
        for (version, schema) in versions.filter(|(v, _)| listed(&crd.id.name, v)) {
            match Schema::new(&schema) {
                Ok(schema) => {
                    let value = (kind.clone(), crd.file.to_string(), schema);
                    schemas.insert((crd.id.name.clone(), version), value);
                }
                Err(e) => errors.push(format!(
                    "CustomResourceDefinition {} ({}) version {version}: {e}",
                    crd.id.name, crd.file
                )),
            }
        }
    }
    schemas
}

fn object_name(kind: &str, object: &Value) -> String {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
    match text("/metadata/namespace") {
        "" => format!("{kind} {}", text("/metadata/name")),
        ns => format!("{kind} {ns}/{}", text("/metadata/name")),
    }
}

/// The first [`PER_OBJECT`] of `items`, each cut at [`LINE`] characters, joined.
fn few(items: &[String], separator: &str) -> String {
    let mut shown: Vec<String> = (items.iter().take(PER_OBJECT))
        .map(|t| match t.char_indices().nth(LINE) {
            Some((cut, _)) => format!("{}...", &t[..cut]),
            None => t.clone(),
        })
        .collect();
    if items.len() > PER_OBJECT {
        shown.push(format!("and {} more", items.len() - PER_OBJECT));
    }
    shown.join(separator)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::Payload;
    use serde_json::json;

    const INCLUDE: &str =
        "    include.release.openshift.io/self-managed-high-availability: \"true\"\n";

    /// A widgets CRD serving `versions` (name, served), each with a schema requiring
    /// `spec.size`.
    fn target(versions: &[(&str, bool)]) -> Payload {
        let versions: String = (versions.iter())
            .map(|(v, served)| {
                format!(
                    "  - name: {v}\n    served: {served}\n    storage: {}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            required: [size]\n            properties:\n              size: {{type: integer}}\n            x-kubernetes-validations:\n            - rule: self.size > 0\n",
                    *v == "v1"
                )
            })
            .collect();
        let crd = format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n  annotations:\n{INCLUDE}spec:\n  group: example.com\n  names:\n    kind: Widget\n    plural: widgets\n  scope: Namespaced\n  versions:\n{versions}"
        );
        crate::payload::of_release_manifests("4.18.0", &[("0000_10_crd.yaml", crd)])
    }

    fn live(served: &[&str], storage: &str, no_conversion: bool) -> BTreeMap<String, LiveCrd> {
        BTreeMap::from([(
            "widgets.example.com".to_string(),
            LiveCrd {
                served: served.iter().map(|s| s.to_string()).collect(),
                storage: Some(storage.into()),
                no_conversion,
                schemas: BTreeMap::new(),
            },
        )])
    }

    fn listing(list: &str, target: &str) -> Listing {
        Listing {
            crd: "widgets.example.com".into(),
            list_version: list.into(),
            target_version: target.into(),
        }
    }

    #[test]
    fn what_is_listed() {
        let payload = target(&[("v1", true), ("v2", true), ("v0", false)]);
        let crds: Vec<&Manifest> = payload.manifests.iter().collect();
        // v1 is served live; v2 is new: read at the stored version when nothing converts.
        assert_eq!(
            listings(&crds, &live(&["v1"], "v1", true)),
            [listing("v1", "v1"), listing("v1", "v2")]
        );
        // A webhook would convert to v2: what it makes cannot be read before the update.
        assert_eq!(
            listings(&crds, &live(&["v1"], "v1", false)),
            [listing("v1", "v1")]
        );
        // A CRD the cluster does not have yet has no stored objects.
        assert!(listings(&crds, &BTreeMap::new()).is_empty());
        // A version whose schema does not change needs no check.
        let mut same = live(&["v1"], "v1", true);
        let v1 = served_schemas(&crds[0].object()).remove(0).1;
        same.get_mut("widgets.example.com")
            .unwrap()
            .schemas
            .insert("v1".into(), v1);
        assert_eq!(listings(&crds, &same), [listing("v1", "v2")]);
    }

    #[test]
    fn findings_name_the_objects_and_fields() {
        let payload = target(&[("v1", true)]);
        let crds: Vec<&Manifest> = payload.manifests.iter().collect();
        let widget = |name: &str, spec: Value| {
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                   "metadata": {"name": name, "namespace": "ns"}, "spec": spec})
        };
        let objects = vec![
            widget("good", json!({"size": 1})),
            widget("no-size", json!({"colour": "red"})),
        ];
        let checked = check("4.18.0", &crds, &[(listing("v1", "v1"), objects)]);
        assert_eq!(checked.unevaluated_rules, 0);
        let names: Vec<&str> = checked.findings.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, [STORED_OBJECTS_INVALID, FIELDS_PRUNED]);
        assert_eq!(
            checked.findings[0].message,
            "1 objects stored in the cluster fail the schema 4.18.0 installs for their CustomResourceDefinition: the API server would refuse them as they are, and any write that changes these fields without fixing them:\n* Widget ns/no-size (widgets.example.com v1, 0000_10_crd.yaml): spec.size: Required value; <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
        );
        assert!(checked.findings[1].message.ends_with(
            "pruning) once the update installs it:\n* Widget ns/no-size (widgets.example.com v1, 0000_10_crd.yaml): spec.colour"
        ));
        let clean = check(
            "4.18.0",
            &crds,
            &[(
                listing("v1", "v1"),
                vec![widget("good", json!({"size": 1}))],
            )],
        );
        assert!(clean.findings.is_empty());
    }

    #[test]
    fn an_object_is_reported_once_with_a_few_of_its_problems() {
        let payload = target(&[("v1", true), ("v2", true)]);
        let crds: Vec<&Manifest> = payload.manifests.iter().collect();
        let unknown: serde_json::Map<String, Value> =
            (0..8).map(|i| (format!("f{i}"), json!(i))).collect();
        let object = json!({"metadata": {"name": "w"}, "spec": unknown});
        let stored = [
            (listing("v1", "v1"), vec![object.clone()]),
            (listing("v1", "v2"), vec![object]),
        ];
        let checked = check("4.18.0", &crds, &stored);
        let pruned = &checked.findings[1].message;
        assert!(pruned.starts_with("1 objects"), "{pruned}");
        assert!(
            pruned.ends_with(": spec.f0, spec.f1, spec.f2, spec.f3, spec.f4, and 3 more"),
            "{pruned}"
        );
    }

    #[test]
    fn many_objects_are_counted_and_some_named() {
        let payload = target(&[("v1", true)]);
        let crds: Vec<&Manifest> = payload.manifests.iter().collect();
        let objects: Vec<Value> = (0..25)
            .map(|i| json!({"metadata": {"name": format!("w{i}")}, "spec": {}}))
            .collect();
        let checked = check("4.18.0", &crds, &[(listing("v1", "v1"), objects)]);
        let message = &checked.findings[0].message;
        assert!(message.starts_with("25 objects"), "{message}");
        assert!(message.contains("* Widget w19 (") && !message.contains("* Widget w20 ("));
        assert!(message.ends_with("\nand 5 more"), "{message}");
    }
}
