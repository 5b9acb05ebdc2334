//! Fields an object has that its type does not (the API server drops them: it prunes what a
//! CRD's schema does not declare and ignores what a built-in type lacks), found by walking the
//! object beside the type's OpenAPI schema, each with the near miss among the fields the type
//! has there ([`suggest`]). And type errors with the path of the field they are in.
//!
//! Written here rather than taken from a crate: what counts as unknown is what the API server
//! keeps, which is the schema it is given (a CRD's `openAPIV3Schema`, or a built-in type's), so
//! the walk follows that schema's rules (`properties`, `additionalProperties`, `items`,
//! `x-kubernetes-preserve-unknown-fields`) rather than a deserializer's.

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::suggest::suggest;

/// A field the type does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownField {
    /// Where: `spec.resources`, `spec.limits[0].typ`.
    pub path: String,
    /// The field the type has there that the name is a near miss of.
    pub suggestion: Option<String>,
    /// Every field the type has there, sorted.
    pub known: Vec<String>,
}

impl std::fmt::Display for UnknownField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown field {}", self.path)?;
        match &self.suggestion {
            Some(s) => write!(f, " (did you mean {s}?)"),
            None if self.known.is_empty() => Ok(()),
            None => write!(f, " (known fields there: {})", self.known.join(", ")),
        }
    }
}

/// The fields of `value` that `schema` (an OpenAPI v3 schema as JSON; `$ref`s into `$defs` or
/// `definitions` of the same document are followed) does not declare, in the order met. To check
/// many values against one schema, compile it once ([`CompiledSchema`]).
pub fn unknown_fields(value: &Value, schema: &Value) -> Vec<UnknownField> {
    CompiledSchema::new(schema).unknown_fields(value)
}

/// A schema made ready for [`CompiledSchema::unknown_fields`]: each subschema's alternatives
/// (`allOf`, `anyOf`, `oneOf`) and `$ref`s resolved once, its declared fields in a hash map and
/// its sorted list of known fields made once, so checking an object costs a walk of the object
/// and nothing per schema node. (Checking 100,000 objects walked and resolved the JSON schema
/// again for every field of every object.)
#[derive(Clone, Debug)]
pub struct CompiledSchema {
    nodes: Vec<Node>,
}

/// One subschema with its alternatives merged, as the walk reads it.
#[derive(Clone, Debug, Default)]
struct Node {
    /// `x-kubernetes-preserve-unknown-fields: true` on the schema or an alternative.
    preserve: bool,
    /// Whether the schema or an alternative declares `properties` (even none).
    has_properties: bool,
    /// Each declared field's schema: the first alternative's that declares it.
    properties: HashMap<String, usize>,
    /// Every declared field, sorted, without repeats (the message's list).
    known: Vec<String>,
    /// The first `additionalProperties` that is a schema (an object).
    additional: Option<usize>,
    /// The first `items`.
    items: Option<usize>,
}

impl CompiledSchema {
    /// `schema` (an OpenAPI v3 schema as JSON) compiled; recursive `$ref`s become cycles.
    pub fn new(schema: &Value) -> Self {
        let mut compiler = Compiler {
            root: schema,
            nodes: Vec::new(),
            ids: HashMap::new(),
        };
        compiler.compile(schema);
        CompiledSchema {
            nodes: compiler.nodes,
        }
    }

    /// The fields of `value` the schema does not declare, in the order met.
    pub fn unknown_fields(&self, value: &Value) -> Vec<UnknownField> {
        let mut found = Vec::new();
        self.walk(value, 0, &mut Vec::new(), &mut found);
        found
    }

    fn walk<'v>(
        &self,
        value: &'v Value,
        node: usize,
        path: &mut Vec<Segment<'v>>,
        found: &mut Vec<UnknownField>,
    ) {
        let node = &self.nodes[node];
        if node.preserve {
            return;
        }
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    let declared = node.properties.get(key.as_str()).copied();
                    match declared.or(node.additional) {
                        Some(next) => {
                            path.push(Segment::Key(key));
                            self.walk(item, next, path, found);
                            path.pop();
                        }
                        None if node.has_properties => {
                            let known: Vec<&str> = node.known.iter().map(String::as_str).collect();
                            path.push(Segment::Key(key));
                            found.push(UnknownField {
                                path: path_text(path),
                                suggestion: suggest(key, &known).map(str::to_owned),
                                known: node.known.clone(),
                            });
                            path.pop();
                        }
                        None => {}
                    }
                }
            }
            Value::Array(items) => {
                let Some(next) = node.items else {
                    return;
                };
                for (i, item) in items.iter().enumerate() {
                    path.push(Segment::Index(i));
                    self.walk(item, next, path, found);
                    path.pop();
                }
            }
            _ => {}
        }
    }
}

/// A step of the path to a field, kept as it is and written out only for an unknown field.
#[derive(Clone, Copy, Debug)]
enum Segment<'v> {
    Key(&'v str),
    Index(usize),
}

/// `spec.limits[1].typ`.
fn path_text(path: &[Segment]) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Segment::Index(i) => {
                let _ = write!(text, "[{i}]");
            }
        }
    }
    text
}

/// Compiles each subschema once, by its place in the schema document.
struct Compiler<'s> {
    root: &'s Value,
    nodes: Vec<Node>,
    ids: HashMap<*const Value, usize>,
}

impl<'s> Compiler<'s> {
    fn compile(&mut self, schema: &'s Value) -> usize {
        let key: *const Value = schema;
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        // Reserved before the subschemas are compiled, so a `$ref` back to it ends there.
        let id = self.nodes.len();
        self.nodes.push(Node::default());
        self.ids.insert(key, id);
        let members = members(schema, self.root);
        let preserve = (members.iter())
            .any(|s| s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)));
        let property_maps: Vec<&'s Map<String, Value>> = (members.iter())
            .filter_map(|s| s.get("properties").and_then(Value::as_object))
            .collect();
        let mut properties = HashMap::new();
        let mut known: Vec<String> = Vec::new();
        if !preserve {
            for map in &property_maps {
                for (field, sub) in *map {
                    known.push(field.clone());
                    if !properties.contains_key(field) {
                        let sub = self.compile(sub);
                        properties.insert(field.clone(), sub);
                    }
                }
            }
        }
        known.sort_unstable();
        known.dedup();
        let additional = match preserve {
            true => None,
            false => (members.iter())
                .filter_map(|s| s.get("additionalProperties"))
                .find(|a| a.is_object()),
        };
        let additional = additional.map(|a| self.compile(a));
        let items = match preserve {
            true => None,
            false => members.iter().find_map(|s| s.get("items")),
        };
        let items = items.map(|i| self.compile(i));
        self.nodes[id] = Node {
            preserve,
            has_properties: !property_maps.is_empty(),
            properties,
            known,
            additional,
            items,
        };
        id
    }
}

/// The schema and the alternatives it is made of (`allOf`, `anyOf`, `oneOf`: `Option<T>` is
/// `anyOf: [T, null]`), `$ref`s followed.
fn members<'a>(schema: &'a Value, root: &'a Value) -> Vec<&'a Value> {
    let mut out = Vec::new();
    let mut todo = vec![schema];
    while let Some(s) = todo.pop() {
        if out.len() > 64 {
            break;
        }
        let s = resolve(s, root);
        out.push(s);
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(list) = s.get(key).and_then(Value::as_array) {
                todo.extend(list.iter());
            }
        }
    }
    out
}

/// `schema`, or what its `$ref` (`#/$defs/X`, `#/definitions/X`) points at in `root`.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..16 {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            break;
        };
        match root.pointer(pointer) {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

/// `value` as a `T`, or the error with the path of the field it is in (`spec.claimRef: invalid
/// type: map, expected a string`).
///
/// Read first without noting the path (which copies every key read): only a value that does
/// not read is read again, noting it, for the error.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    if let Ok(read) = T::deserialize(&value) {
        return Ok(read);
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        match path.as_str() {
            "." | "" => e.into_inner().to_string(),
            _ => format!("{path}: {}", e.into_inner()),
        }
    })
}

/// The OpenAPI schema of a type with every subschema inlined (recursive ones stay `$ref`s into
/// `$defs`, which [`unknown_fields`] follows).
pub fn schema_of<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::openapi3()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_found_with_their_paths_and_near_misses() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "targetName": {"type": "string"},
                    "deploymentTargetClassName": {"type": "string"},
                    "limits": {"type": "array", "items": {"$ref": "#/$defs/Limit"}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                }},
                "status": {"anyOf": [{"type": "object", "properties": {"phase": {"type": "string"}}}, {"type": "null"}]},
            },
            "$defs": {"Limit": {"type": "object", "properties": {"type": {"type": "string"}}}},
        });
        let value = json!({
            "spec": {
                "targetname": "x", "resources": {"requests": {}}, "arch": "x86-64",
                "limits": [{"type": "Pod"}, {"typ": "Container"}],
                "labels": {"anything": "goes"},
                "free": {"any": {"thing": 1}},
            },
            "status": {"phse": "Bound"},
        });
        let found: Vec<String> = unknown_fields(&value, &schema)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "unknown field spec.arch (known fields there: deploymentTargetClassName, free, labels, limits, targetName)",
                "unknown field spec.limits[1].typ (did you mean type?)",
                "unknown field spec.resources (known fields there: deploymentTargetClassName, free, labels, limits, targetName)",
                "unknown field spec.targetname (did you mean targetName?)",
                "unknown field status.phse (did you mean phase?)",
            ]
        );
    }

    #[test]
    fn a_compiled_schema_follows_recursive_refs_and_checks_many_values() {
        let schema = json!({
            "$ref": "#/$defs/Tree",
            "$defs": {"Tree": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
            }}},
        });
        let compiled = CompiledSchema::new(&schema);
        let deep = json!({"name": "a", "children": [
            {"name": "b"},
            {"name": "c", "children": [{"nmae": "d"}]},
        ]});
        let found: Vec<String> = (compiled.unknown_fields(&deep).iter())
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            ["unknown field children[1].children[0].nmae (did you mean name?)"]
        );
        assert_eq!(compiled.unknown_fields(&json!({"name": "x"})), vec![]);
        assert_eq!(unknown_fields(&deep, &schema).len(), 1);
    }

    #[test]
    fn type_errors_name_the_field_path() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Spec {
            claim_ref: String,
            items: Vec<u8>,
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Object {
            spec: Spec,
        }
        let err = from_value::<Object>(json!({"spec": {"claimRef": {"name": "x"}, "items": []}}))
            .unwrap_err();
        assert_eq!(err, "spec.claimRef: invalid type: map, expected a string");
        let err = from_value::<Object>(json!({"spec": {"claimRef": "x", "items": [1, "a"]}}))
            .unwrap_err();
        assert_eq!(
            err,
            "spec.items[1]: invalid type: string \"a\", expected u8"
        );
        let err = from_value::<Object>(json!("text")).unwrap_err();
        assert_eq!(err, "invalid type: string \"text\", expected struct Object");
    }
}
