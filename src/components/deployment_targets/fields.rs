//! Fields an object has that its type does not (the API server drops them: it prunes what a
//! CRD's schema does not declare and ignores what a built-in type lacks), found by walking the
//! object beside the type's OpenAPI schema, each with the near miss among the fields the type
//! has there ([`suggest`]). And type errors with the path of the field they are in.
//!
//! Written here rather than taken from a crate: what counts as unknown is what the API server
//! keeps, which is the schema it is given (a CRD's `openAPIV3Schema`, or a built-in type's), so
//! the walk follows that schema's rules (`properties`, `additionalProperties`, `items`,
//! `x-kubernetes-preserve-unknown-fields`) rather than a deserializer's.

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
/// `definitions` of the same document are followed) does not declare, in the order met.
pub fn unknown_fields(value: &Value, schema: &Value) -> Vec<UnknownField> {
    let mut found = Vec::new();
    walk(value, schema, schema, &mut String::new(), &mut found);
    found
}

fn walk(
    value: &Value,
    schema: &Value,
    root: &Value,
    path: &mut String,
    found: &mut Vec<UnknownField>,
) {
    let members = members(schema, root);
    if members
        .iter()
        .any(|s| s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)))
    {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties: Vec<&Map<String, Value>> = (members.iter())
                .filter_map(|s| s.get("properties").and_then(Value::as_object))
                .collect();
            let additional = (members.iter())
                .filter_map(|s| s.get("additionalProperties"))
                .find(|a| a.is_object());
            for (key, item) in map {
                let declared = properties.iter().find_map(|p| p.get(key));
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                match (declared, additional) {
                    (Some(s), _) | (None, Some(s)) => walk(item, s, root, path, found),
                    (None, None) if !properties.is_empty() => {
                        let mut known: Vec<&str> = (properties.iter())
                            .flat_map(|p| p.keys().map(String::as_str))
                            .collect();
                        known.sort_unstable();
                        known.dedup();
                        found.push(UnknownField {
                            path: path.clone(),
                            suggestion: suggest(key, &known).map(str::to_owned),
                            known: known.into_iter().map(str::to_owned).collect(),
                        });
                    }
                    (None, None) => {}
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = members.iter().find_map(|s| s.get("items")) else {
                return;
            };
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, item_schema, root, path, found);
                path.truncate(len);
            }
        }
        _ => {}
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
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, String> {
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
