//! The document tree a YAML document decodes to, shaped like what Go's `json.Marshal` sees:
//! mappings hold string keys, sorted byte-wise, each once (the last occurrence wins).
//!
//! Not `serde_json::Value`: its map is a `BTreeMap` that allocates per node and re-balances per
//! insert, which dominated loading time; a mapping here is a vector sorted once when complete.

use serde_json::{Map, Number, Value};

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    /// Always finite: NaN and infinities have no JSON form and are refused while building.
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Mapping),
}

/// Entries sorted by key, keys unique.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mapping(Vec<(String, Node)>);

impl Mapping {
    /// Builds a mapping from entries in document order: later duplicates replace earlier ones.
    pub fn from_entries(mut entries: Vec<(String, Node)>) -> Self {
        // A stable sort keeps document order among equal keys; keep the last of each run.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut unique: Vec<(String, Node)> = Vec::with_capacity(entries.len());
        for entry in entries {
            match unique.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => unique.push(entry),
            }
        }
        Mapping(unique)
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| &self.0[i].1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn into_entries(self) -> Vec<(String, Node)> {
        self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Node {
    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(m) => m.get(key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&Mapping> {
        match self {
            Node::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Node::Null)
    }

    /// How a message names this kind of value.
    pub fn type_name(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Int(_) | Node::Uint(_) | Node::Float(_) => "a number",
            Node::Str(_) => "a string",
            Node::Seq(_) => "a sequence",
            Node::Map(_) => "a mapping",
        }
    }

    pub fn into_value(self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Int(i) => Value::Number(i.into()),
            Node::Uint(u) => Value::Number(u.into()),
            Node::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
            Node::Str(s) => Value::String(s),
            Node::Seq(items) => Value::Array(items.into_iter().map(Node::into_value).collect()),
            Node::Map(m) => Value::Object(
                m.0.into_iter()
                    .map(|(k, v)| (k, v.into_value()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

impl From<Value> for Node {
    fn from(value: Value) -> Self {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(b),
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => Node::Int(i),
                (_, Some(u), _) => Node::Uint(u),
                (_, _, f) => Node::Float(f.unwrap_or_default()),
            },
            Value::String(s) => Node::Str(s),
            Value::Array(items) => Node::Seq(items.into_iter().map(Node::from).collect()),
            Value::Object(map) => Node::Map(Mapping::from_entries(
                map.into_iter().map(|(k, v)| (k, Node::from(v))).collect(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_are_sorted_and_the_last_duplicate_wins() {
        let m = Mapping::from_entries(vec![
            ("b".into(), Node::Int(1)),
            ("a".into(), Node::Int(2)),
            ("b".into(), Node::Int(3)),
            ("B".into(), Node::Int(4)),
        ]);
        let keys: Vec<&str> = m.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, vec!["B", "a", "b"]);
        assert_eq!(m.get("b"), Some(&Node::Int(3)));
        assert_eq!(m.get("c"), None);
    }

    #[test]
    fn converts_to_and_from_json_values() {
        let value = serde_json::json!({"b": [1, -2, 1.5, true, null, "s"], "a": {"x": 18446744073709551615u64}});
        assert_eq!(Node::from(value.clone()).into_value(), value);
    }
}
