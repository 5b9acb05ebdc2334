//! What the API server does with a custom resource under a CRD version's structural schema
//! (`openAPIV3Schema`): nulls of non-nullable fields dropped, unknown fields pruned, defaults
//! applied, then the value validations, with the API server's field paths and error types
//! (`spec.size: Required value`, `spec.mode: Unsupported value: "x": supported values: "a"`).
//! The preflight ([`crate::preflight`]) runs the objects a cluster stores through the schema an
//! update would install, to find those that would fail it and the fields it would drop.
//!
//! Written here rather than taken from a crate: JSON Schema validators (`jsonschema`) do not
//! know Kubernetes' dialect (`nullable`, `x-kubernetes-int-or-string`,
//! `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-embedded-resource`, list types, the
//! formats the API server keeps, pruning and defaulting before validation), and their errors
//! are not the API server's. Checked against the real kube-apiserver by the cluster test
//! `crd_schema_agrees_with_the_api_server`.
//!
//! `x-kubernetes-validations` rules are evaluated with cel-rust (the CEL standard library and
//! its strings and lists extensions), after the schema's own validations as the API server does
//! them (and not at all when those found a type, enum, required, length or count error). A
//! transition rule (`oldSelf`) does not apply (the API server runs none on a create). A rule
//! cel-rust cannot compile or run (Kubernetes' own CEL libraries: quantities, IPs, URLs, ...) is
//! not evaluated and counted ([`Schema::unevaluated_rules`], [`Outcome::unevaluated_rules`]) so
//! a caller can say so. Formats this module does not know (see
//! [`FORMATS`]) pass, as the API server's unknown formats do.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use regex::Regex;
use serde_json::{Map, Value};

/// The formats checked (the API server's names with `-` removed, as it normalizes them).
/// The API server knows more (`uri`, `email`, `hostname`, `mac`, `duration`, ...); values of
/// those pass here unchecked.
pub const FORMATS: &[&str] = &[
    "byte",
    "date",
    "datetime",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "ipv4",
    "ipv6",
    "cidr",
    "hexcolor",
    "k8sshortname",
    "k8slongname",
];

/// A schema the API server would not have accepted in a CRD.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("{path}: pattern {pattern:?} is not a valid regular expression: {reason}")]
    Pattern {
        path: String,
        pattern: String,
        reason: String,
    },
}

/// The API server's field error types ([`ErrorType::reason`] gives its `reason` string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorType {
    Required,
    Invalid,
    TypeInvalid,
    NotSupported,
    TooLong,
    TooMany,
    Duplicate,
    Forbidden,
}

impl ErrorType {
    /// The `reason` of the API server's status cause (`FieldValueRequired`, ...).
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Forbidden => "FieldValueForbidden",
        }
    }

    fn title(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Forbidden => "Forbidden",
        }
    }
}

/// One way a value fails the schema, as the API server words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The field path: `spec.items[0].name`, `spec.labels.key`.
    pub field: String,
    pub error: ErrorType,
    /// The value shown (JSON), if the API server shows one.
    pub value: Option<String>,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.error.title())?;
        if let Some(value) = &self.value {
            write!(f, ": {value}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// What the schema does to one object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The fields the schema does not declare, which the API server drops (paths as in
    /// [`Violation::field`]).
    pub pruned: Vec<String>,
    /// The object after pruning and defaulting fails these validations.
    pub violations: Vec<Violation>,
    /// Evaluations of `x-kubernetes-validations` rules that failed here for want of a
    /// function (the rule's verdict is unknown).
    pub unevaluated_rules: usize,
}

/// A compiled structural schema.
#[derive(Clone)]
pub struct Schema {
    nodes: Vec<Node>,
    /// Whether any node has a rule (the API server then reports when it skips them).
    has_rules: bool,
    unevaluated_rules: usize,
    cel: Arc<cel::Env>,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("nodes", &self.nodes)
            .finish()
    }
}

/// Where a value is, as pruning cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Inner,
    /// An item of an array with `x-kubernetes-preserve-unknown-fields`.
    InPreservingArray,
}

/// One `x-kubernetes-validations` rule.
#[derive(Clone)]
struct Rule {
    source: String,
    message: Option<String>,
    message_expression: Option<Arc<cel::Program>>,
    field_path: Option<String>,
    reason: Option<String>,
    /// `None`: not evaluated (cel-rust cannot compile it, or it is a transition rule).
    program: Option<Arc<cel::Program>>,
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rule")
            .field("source", &self.source)
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

#[derive(Debug, Clone, Default)]
struct Node {
    types: Vec<Type>,
    nullable: bool,
    preserve_unknown: bool,
    embedded_resource: bool,
    default: Option<Value>,
    enumeration: Option<Vec<Value>>,
    required: Vec<String>,
    properties: BTreeMap<String, usize>,
    /// `additionalProperties` as a schema (`true` and no properties keeps any field too).
    additional: Option<usize>,
    additional_allowed: bool,
    items: Option<usize>,
    max_length: Option<u64>,
    min_length: Option<u64>,
    pattern: Option<(String, Regex)>,
    /// The format as checked (`-` removed) and as written (the message's).
    format: Option<(String, String)>,
    maximum: Option<(f64, bool)>,
    minimum: Option<(f64, bool)>,
    multiple_of: Option<f64>,
    max_items: Option<u64>,
    min_items: Option<u64>,
    max_properties: Option<u64>,
    min_properties: Option<u64>,
    all_of: Vec<usize>,
    any_of: Vec<usize>,
    one_of: Vec<usize>,
    not: Option<usize>,
    list_type: Option<String>,
    list_map_keys: Vec<String>,
    rules: Vec<Rule>,
}

impl Schema {
    /// `schema` (a CRD version's `openAPIV3Schema` as JSON) compiled.
    pub fn new(schema: &Value) -> Result<Self, SchemaError> {
        let mut env = cel::Env::stdlib();
        // The extensions Kubernetes' CEL environment also has; declaring them cannot fail on
        // a fresh environment, and without them their rules are only not evaluated.
        let _ = env.add_extension(cel::extensions::strings);
        let _ = env.add_extension(cel::extensions::lists);
        let mut compiled = Schema {
            nodes: Vec::new(),
            has_rules: false,
            unevaluated_rules: 0,
            cel: Arc::new(env),
        };
        compiled.compile(schema, "openAPIV3Schema")?;
        Ok(compiled)
    }

    /// How many `x-kubernetes-validations` rules of the schema are not evaluated here
    /// (cel-rust cannot compile them).
    pub fn unevaluated_rules(&self) -> usize {
        self.unevaluated_rules
    }

    fn compile_rules(&mut self, schema: &Value) -> Vec<Rule> {
        let rules = schema
            .get("x-kubernetes-validations")
            .and_then(Value::as_array);
        let mut out = Vec::new();
        for rule in rules.into_iter().flatten() {
            let text = |key: &str| rule.get(key).and_then(Value::as_str).map(str::to_string);
            let Some(source) = text("rule") else { continue };
            self.has_rules = true;
            let compile = |source: &str| self.cel.compile(source).ok().map(Arc::new);
            let transition =
                compile(&source).is_some_and(|p| p.references().has_variable("oldSelf"));
            // A transition rule is not run on a create (the API server has no old object),
            // which is the question asked of a stored object here: it does not apply.
            let program = if transition { None } else { compile(&source) };
            let message_expression = text("messageExpression").and_then(|m| compile(&m));
            if program.is_none() && !transition {
                self.unevaluated_rules += 1;
            }
            out.push(Rule {
                message: text("message"),
                message_expression,
                field_path: text("fieldPath"),
                reason: text("reason"),
                program,
                source,
            });
        }
        out
    }

    fn compile(&mut self, schema: &Value, path: &str) -> Result<usize, SchemaError> {
        let id = self.nodes.len();
        self.nodes.push(Node::default());
        let mut node = Node::default();
        let get = |key: &str| schema.get(key);
        let flag = |key: &str| get(key).and_then(Value::as_bool) == Some(true);
        let number = |key: &str| get(key).and_then(Value::as_f64);
        let count = |key: &str| get(key).and_then(Value::as_u64);
        if flag("x-kubernetes-int-or-string") {
            node.types = vec![Type::Integer, Type::String];
        } else if let Some(t) = get("type").and_then(Value::as_str) {
            node.types = type_of(t).into_iter().collect();
        }
        node.nullable = flag("nullable");
        node.preserve_unknown = flag("x-kubernetes-preserve-unknown-fields");
        node.embedded_resource = flag("x-kubernetes-embedded-resource");
        node.default = get("default").cloned();
        node.enumeration = get("enum").and_then(Value::as_array).cloned();
        node.required = (get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten())
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
        if let Some(properties) = get("properties").and_then(Value::as_object) {
            for (name, sub) in properties {
                let child = self.compile(sub, &format!("{path}.properties[{name}]"))?;
                node.properties.insert(name.clone(), child);
            }
        }
        match get("additionalProperties") {
            Some(Value::Bool(allowed)) => node.additional_allowed = *allowed,
            Some(sub @ Value::Object(_)) => {
                node.additional = Some(self.compile(sub, &format!("{path}.additionalProperties"))?);
            }
            _ => {}
        }
        if let Some(items) = get("items").filter(|i| i.is_object()) {
            node.items = Some(self.compile(items, &format!("{path}.items"))?);
        }
        node.max_length = count("maxLength");
        node.min_length = count("minLength");
        if let Some(pattern) = get("pattern").and_then(Value::as_str) {
            let regex = Regex::new(&go_pattern(pattern)).map_err(|e| SchemaError::Pattern {
                path: format!("{path}.pattern"),
                pattern: pattern.to_string(),
                reason: e.to_string(),
            })?;
            node.pattern = Some((pattern.to_string(), regex));
        }
        node.format = (get("format").and_then(Value::as_str))
            .map(|f| (f.replace('-', ""), f.to_string()))
            .filter(|(f, _)| FORMATS.contains(&f.as_str()));
        node.maximum = number("maximum").map(|m| (m, flag("exclusiveMaximum")));
        node.minimum = number("minimum").map(|m| (m, flag("exclusiveMinimum")));
        node.multiple_of = number("multipleOf");
        node.max_items = count("maxItems");
        node.min_items = count("minItems");
        node.max_properties = count("maxProperties");
        node.min_properties = count("minProperties");
        for (key, list) in [
            ("allOf", &mut node.all_of),
            ("anyOf", &mut node.any_of),
            ("oneOf", &mut node.one_of),
        ] {
            for (i, sub) in (get(key).and_then(Value::as_array).into_iter().flatten()).enumerate() {
                list.push(self.compile(sub, &format!("{path}.{key}[{i}]"))?);
            }
        }
        if let Some(not) = get("not").filter(|n| n.is_object()) {
            node.not = Some(self.compile(not, &format!("{path}.not"))?);
        }
        node.list_type = get("x-kubernetes-list-type")
            .and_then(Value::as_str)
            .map(str::to_string);
        node.list_map_keys = (get("x-kubernetes-list-map-keys").and_then(Value::as_array))
            .into_iter()
            .flatten()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect();
        node.rules = self.compile_rules(schema);
        self.nodes[id] = node;
        Ok(id)
    }

    /// `object` (a custom resource as the API server returns it) written again under this
    /// schema: what is pruned, and what fails validation after pruning and defaulting.
    pub fn check(&self, object: &Value) -> Outcome {
        let mut value = object.clone();
        let mut outcome = Outcome::default();
        self.prune(&mut value, 0, "", Level::Root, &mut outcome.pruned);
        outcome.pruned.sort();
        self.apply_defaults(&mut value, 0);
        self.validate(&value, 0, "", &mut outcome.violations);
        if self.has_rules {
            let blocking = (outcome.violations.iter()).any(|v| {
                use ErrorType::*;
                matches!(
                    v.error,
                    NotSupported | Required | TooLong | TooMany | TypeInvalid
                )
            });
            if blocking {
                outcome.violations.push(violation(
                    "<nil>",
                    ErrorType::Invalid,
                    Some("null".into()),
                    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
                ));
            } else {
                let mut unevaluated = 0;
                self.run_rules(&value, 0, "", &mut outcome.violations, &mut unevaluated);
                outcome.unevaluated_rules = unevaluated;
            }
        }
        outcome
    }

    /// The `x-kubernetes-validations` rules of node `id` and of those below it, on `value`.
    fn run_rules(
        &self,
        value: &Value,
        id: usize,
        path: &str,
        out: &mut Vec<Violation>,
        unevaluated: &mut usize,
    ) {
        if value.is_null() {
            return;
        }
        let node = &self.nodes[id];
        for rule in &node.rules {
            self.run_rule(rule, value, id, path, out, unevaluated);
        }
        for &sub in &node.all_of {
            self.run_rules(value, sub, path, out, unevaluated);
        }
        match value {
            Value::Array(items) => {
                if let Some(sub) = node.items {
                    for (i, item) in items.iter().enumerate() {
                        self.run_rules(item, sub, &format!("{path}[{i}]"), out, unevaluated);
                    }
                }
            }
            Value::Object(map) => {
                for (key, child) in map {
                    if let Some(sub) = node.properties.get(key).copied().or(node.additional) {
                        self.run_rules(child, sub, &join(path, key), out, unevaluated);
                    }
                }
            }
            _ => {}
        }
    }

    /// One rule on `value` (at node `id`): a violation when it is false, as the API server
    /// words it (the rule's message, its messageExpression's, or `failed rule: RULE`; its
    /// reason and fieldPath).
    fn run_rule(
        &self,
        rule: &Rule,
        value: &Value,
        id: usize,
        path: &str,
        out: &mut Vec<Violation>,
        unevaluated: &mut usize,
    ) {
        let Some(program) = &rule.program else {
            return;
        };
        let mut context = cel::Context::with_env(self.cel.clone());
        context.add_variable_from_value("self", self.to_cel(value, Some(id), path.is_empty()));
        let field = match rule.field_path.as_deref().and_then(|f| f.strip_prefix('.')) {
            Some(rest) => join(path, rest),
            None => path.to_string(),
        };
        let field = if field.is_empty() {
            "<nil>".to_string()
        } else {
            field
        };
        // The value the API server shows is the schema's type.
        let type_name = self.nodes[id].types.first().map_or("", |t| t.name());
        let shown = Some(format!("{type_name:?}"));
        match program.execute(&context) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
                let expression = (rule.message_expression.as_ref())
                    .and_then(|m| m.execute(&context).ok())
                    .and_then(|v| match v {
                        cel::Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
                        _ => None,
                    });
                let detail = expression.unwrap_or_else(|| match &rule.message {
                    Some(m) if !m.trim().is_empty() => m.trim().to_string(),
                    _ => format!("failed rule: {}", rule.source.trim()),
                });
                let v = match rule.reason.as_deref() {
                    Some("FieldValueForbidden") => {
                        violation(&field, ErrorType::Forbidden, None, detail)
                    }
                    Some("FieldValueRequired") => {
                        violation(&field, ErrorType::Required, None, detail)
                    }
                    Some("FieldValueDuplicate") => {
                        violation(&field, ErrorType::Duplicate, shown, String::new())
                    }
                    _ => violation(&field, ErrorType::Invalid, shown, detail),
                };
                out.push(v);
            }
            // A missing field is the rule's error at the API server too.
            Err(cel::ExecutionError::NoSuchKey(key)) => out.push(violation(
                &field,
                ErrorType::Invalid,
                shown,
                format!("no such key: {key} evaluating rule: {}", rule.source.trim()),
            )),
            Ok(_) | Err(_) => *unevaluated += 1,
        }
    }

    /// `value` as CEL sees it under node `id` (`None`: no schema, as under
    /// `x-kubernetes-preserve-unknown-fields`): a `number` is a double even when it has no
    /// fraction; the root's metadata has only its name and generateName.
    fn to_cel(&self, value: &Value, id: Option<usize>, root: bool) -> cel::Value {
        let node = id.map(|i| &self.nodes[i]);
        match value {
            Value::Null => cel::Value::Null,
            Value::Bool(b) => cel::Value::Bool(*b),
            Value::String(s) => cel::Value::String(Arc::new(s.clone())),
            Value::Number(n) => {
                let double = node.is_some_and(|n| n.types == [Type::Number]);
                match (n.as_i64(), double) {
                    (Some(i), false) => cel::Value::Int(i),
                    _ => cel::Value::Float(n.as_f64().unwrap_or(0.0)),
                }
            }
            Value::Array(items) => {
                let sub = node.and_then(|n| n.items);
                let list = items.iter().map(|v| self.to_cel(v, sub, false)).collect();
                cel::Value::List(Arc::new(list))
            }
            Value::Object(map) => {
                let mut out = HashMap::new();
                for (key, child) in map {
                    let child = if root && key == "metadata" {
                        let kept: Map<String, Value> = (child.as_object().into_iter())
                            .flatten()
                            .filter(|(k, _)| matches!(k.as_str(), "name" | "generateName"))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        self.to_cel(&Value::Object(kept), None, false)
                    } else {
                        let sub =
                            node.and_then(|n| n.properties.get(key).copied().or(n.additional));
                        self.to_cel(child, sub, false)
                    };
                    out.insert(key.clone(), child);
                }
                cel::Value::Map(out.into())
            }
        }
    }

    /// Drops the fields the schema does not declare (recording their paths) and the nulls of
    /// fields that are neither nullable nor defaulted.
    fn prune(
        &self,
        value: &mut Value,
        id: usize,
        path: &str,
        level: Level,
        pruned: &mut Vec<String>,
    ) {
        let node = &self.nodes[id];
        // Under an array that preserves unknown fields, its items keep theirs too.
        let keep_unknown = node.preserve_unknown || level == Level::InPreservingArray;
        match value {
            Value::Object(map) => {
                let resource = level == Level::Root || node.embedded_resource;
                let mut drop = Vec::new();
                for (key, child) in map.iter_mut() {
                    let child_path = join(path, key);
                    // ObjectMeta and the type fields are the API server's, whatever the
                    // schema declares about them.
                    if resource && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                        continue;
                    }
                    let schema = node.properties.get(key).copied().or(node.additional);
                    match schema {
                        Some(sub) => {
                            let s = &self.nodes[sub];
                            // A null is dropped unless allowed or a default replaces it.
                            if child.is_null() && !s.nullable && s.default.is_none() {
                                drop.push((key.clone(), false));
                                continue;
                            }
                            self.prune(child, sub, &child_path, Level::Inner, pruned);
                        }
                        None if keep_unknown || node.additional_allowed => {}
                        None => drop.push((key.clone(), true)),
                    }
                }
                for (key, record) in drop {
                    map.remove(&key);
                    if record {
                        pruned.push(join(path, &key));
                    }
                }
            }
            Value::Array(items) => {
                if let Some(sub) = node.items {
                    let level = if node.preserve_unknown {
                        Level::InPreservingArray
                    } else {
                        Level::Inner
                    };
                    for (i, item) in items.iter_mut().enumerate() {
                        self.prune(item, sub, &format!("{path}[{i}]"), level, pruned);
                    }
                }
            }
            _ => {}
        }
    }

    /// Sets the declared defaults of absent fields, then defaults inside every field.
    fn apply_defaults(&self, value: &mut Value, id: usize) {
        let node = &self.nodes[id];
        match value {
            Value::Object(map) => {
                for (key, &sub) in &node.properties {
                    if let Some(default) = &self.nodes[sub].default
                        && !map.contains_key(key)
                    {
                        map.insert(key.clone(), default.clone());
                    }
                }
                for (key, child) in map.iter_mut() {
                    if let Some(sub) = node.properties.get(key).copied().or(node.additional) {
                        self.default_null(child, sub);
                        self.apply_defaults(child, sub);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(sub) = node.items {
                    for item in items {
                        self.default_null(item, sub);
                        self.apply_defaults(item, sub);
                    }
                }
            }
            _ => {}
        }
    }

    /// A null where node `sub` is neither nullable nor without a default becomes the default.
    fn default_null(&self, value: &mut Value, sub: usize) {
        let s = &self.nodes[sub];
        if value.is_null()
            && !s.nullable
            && let Some(default) = &s.default
        {
            *value = default.clone();
        }
    }

    fn validate(&self, value: &Value, id: usize, path: &str, out: &mut Vec<Violation>) {
        let node = &self.nodes[id];
        let shown = if path.is_empty() { "<nil>" } else { path };
        let name = if path.is_empty() { "." } else { path };
        if value.is_null() {
            if let Some(allowed) = &node.enumeration
                && !allowed.iter().any(Value::is_null)
            {
                out.push(not_supported(shown, value, allowed));
            }
            if !node.types.is_empty() && !node.nullable {
                let types: Vec<&str> = node.types.iter().map(|t| t.name()).collect();
                out.push(violation(
                    shown,
                    ErrorType::TypeInvalid,
                    Some("\"null\"".into()),
                    format!(
                        "{name} in body must be of type {}: \"null\"",
                        types.join(",")
                    ),
                ));
            }
            return;
        }
        if !node.types.is_empty() && !node.types.iter().any(|t| t.admits(value)) {
            // The value shown is the value's JSON type, as kube-openapi reports it. The
            // other checks still run (an enum reports too), each on values of its kind.
            let types: Vec<&str> = node.types.iter().map(|t| t.name()).collect();
            out.push(violation(
                shown,
                ErrorType::TypeInvalid,
                Some(format!("{:?}", json_type(value))),
                format!(
                    "{name} in body must be of type {}: {:?}",
                    types.join(","),
                    json_type(value)
                ),
            ));
        }
        if let Some(allowed) = &node.enumeration
            && !allowed.iter().any(|a| json_equal(a, value))
        {
            out.push(not_supported(shown, value, allowed));
        }
        match value {
            Value::String(s) => self.validate_string(node, s, shown, name, out),
            Value::Number(n) => {
                validate_number(node, n.as_f64().unwrap_or(0.0), value, shown, name, out)
            }
            Value::Array(items) => self.validate_array(node, items, path, shown, name, out),
            Value::Object(map) => self.validate_object(node, map, path, shown, name, out),
            _ => {}
        }
        self.validate_alternatives(node, value, path, name, out);
    }

    fn validate_string(
        &self,
        node: &Node,
        s: &str,
        shown: &str,
        name: &str,
        out: &mut Vec<Violation>,
    ) {
        let chars = s.chars().count() as u64;
        if let Some(max) = node.max_length
            && chars > max
        {
            let unit = if max == 1 { "byte" } else { "bytes" };
            out.push(violation(
                shown,
                ErrorType::TooLong,
                None,
                format!("may not be more than {max} {unit}"),
            ));
        }
        if let Some(min) = node.min_length
            && chars < min
        {
            out.push(violation(
                shown,
                ErrorType::Invalid,
                Some(format!("{s:?}")),
                format!("{name} in body should be at least {min} chars long"),
            ));
        }
        if let Some((pattern, regex)) = &node.pattern
            && !regex.is_match(s)
        {
            out.push(violation(
                shown,
                ErrorType::Invalid,
                Some(format!("{s:?}")),
                format!("{name} in body should match '{pattern}'"),
            ));
        }
        if let Some((format, written)) = &node.format
            && !format_admits(format, s)
        {
            out.push(violation(
                shown,
                ErrorType::TypeInvalid,
                Some(format!("{s:?}")),
                format!("{name} in body must be of type {written}: {s:?}"),
            ));
        }
    }

    fn validate_array(
        &self,
        node: &Node,
        items: &[Value],
        path: &str,
        shown: &str,
        name: &str,
        out: &mut Vec<Violation>,
    ) {
        let n = items.len() as u64;
        too_many(n, node.max_items, shown, out);
        if let Some(min) = node.min_items
            && n < min
        {
            out.push(violation(
                shown,
                ErrorType::Invalid,
                Some(shown_value(&Value::Array(items.to_vec()))),
                format!("{name} in body should have at least {min} items"),
            ));
        }
        if let Some(sub) = node.items {
            for (i, item) in items.iter().enumerate() {
                self.validate(item, sub, &format!("{path}[{i}]"), out);
            }
        }
        match node.list_type.as_deref() {
            Some("set") => {
                // Each repeated value once, at its first repeat (as the API server).
                let mut seen: Vec<(Value, usize)> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    if let Some((_, times)) = seen.iter_mut().find(|(s, _)| json_equal(s, item)) {
                        *times += 1;
                        if *times > 2 {
                            continue;
                        }
                        out.push(violation(
                            &format!("{path}[{i}]"),
                            ErrorType::Duplicate,
                            Some(shown_value(item)),
                            String::new(),
                        ));
                    } else {
                        seen.push((item.clone(), 1));
                    }
                }
            }
            Some("map") if !node.list_map_keys.is_empty() => {
                let mut seen = BTreeSet::new();
                for (i, item) in items.iter().enumerate() {
                    let Some(object) = item.as_object() else {
                        continue;
                    };
                    let mut key = Map::new();
                    for k in &node.list_map_keys {
                        if let Some(v) = object.get(k) {
                            key.insert(k.clone(), v.clone());
                        }
                    }
                    let key = Value::Object(key);
                    if !seen.insert(key.to_string()) {
                        out.push(violation(
                            &format!("{path}[{i}]"),
                            ErrorType::Duplicate,
                            Some(key.to_string()),
                            String::new(),
                        ));
                    }
                }
            }
            _ => {}
        }
    }

    fn validate_object(
        &self,
        node: &Node,
        map: &Map<String, Value>,
        path: &str,
        shown: &str,
        name: &str,
        out: &mut Vec<Violation>,
    ) {
        let n = map.len() as u64;
        too_many(n, node.max_properties, shown, out);
        if let Some(min) = node.min_properties
            && n < min
        {
            out.push(violation(
                shown,
                ErrorType::Invalid,
                Some(n.to_string()),
                format!("{name} in body should have at least {min} properties"),
            ));
        }
        // An embedded resource needs its type fields, as ObjectMeta's validation says.
        let type_fields = ["apiVersion", "kind"].map(String::from);
        let embedded = if node.embedded_resource {
            &type_fields[..]
        } else {
            &[]
        };
        for required in node.required.iter().chain(embedded) {
            if !map.contains_key(required) {
                out.push(violation(
                    &join(path, required),
                    ErrorType::Required,
                    None,
                    String::new(),
                ));
            }
        }
        let resource = path.is_empty() || node.embedded_resource;
        for (key, child) in map {
            // The type fields and metadata are the API server's (ObjectMeta); of metadata the
            // schema may only constrain the name and generateName.
            if resource && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                if key == "metadata"
                    && let Some(&meta) = node.properties.get("metadata")
                {
                    for field in ["name", "generateName"] {
                        let sub = self.nodes[meta].properties.get(field);
                        if let (Some(&sub), Some(v)) = (sub, child.get(field)) {
                            self.validate(v, sub, &join(&join(path, "metadata"), field), out);
                        }
                    }
                }
                continue;
            }
            if let Some(sub) = node.properties.get(key).copied().or(node.additional) {
                self.validate(child, sub, &join(path, key), out);
            }
        }
    }

    /// `allOf`, `anyOf`, `oneOf` and `not`, worded as kube-openapi words them.
    fn validate_alternatives(
        &self,
        node: &Node,
        value: &Value,
        path: &str,
        name: &str,
        out: &mut Vec<Violation>,
    ) {
        let run = |sub: usize| {
            let mut errors = Vec::new();
            self.validate(value, sub, path, &mut errors);
            errors
        };
        // kube-openapi's composite errors carry no field: the API server reports them at the
        // root ("<nil>") with the path quoted in the detail.
        let invalid =
            |detail: String| violation("<nil>", ErrorType::Invalid, Some("\"\"".into()), detail);
        if !node.all_of.is_empty() {
            let results: Vec<Vec<Violation>> = node.all_of.iter().map(|&s| run(s)).collect();
            let valid = results.iter().filter(|r| r.is_empty()).count();
            if valid != results.len() {
                out.extend(results.into_iter().flatten());
                let none = if valid == 0 { ". None validated" } else { "" };
                out.push(invalid(format!(
                    "{name:?} must validate all the schemas (allOf){none}"
                )));
            }
        }
        if !node.any_of.is_empty() {
            let results: Vec<Vec<Violation>> = node.any_of.iter().map(|&s| run(s)).collect();
            if !results.iter().any(Vec::is_empty) {
                out.push(invalid(format!(
                    "{name:?} must validate at least one schema (anyOf)"
                )));
                if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                    out.extend(best);
                }
            }
        }
        if !node.one_of.is_empty() {
            let results: Vec<Vec<Violation>> = node.one_of.iter().map(|&s| run(s)).collect();
            let valid = results.iter().filter(|r| r.is_empty()).count();
            if valid != 1 {
                let found = match valid {
                    0 => "Found none valid".to_string(),
                    n => format!("Found {n} valid alternatives"),
                };
                out.push(invalid(format!(
                    "{name:?} must validate one and only one schema (oneOf). {found}"
                )));
                if valid == 0
                    && let Some(best) = results.into_iter().min_by_key(Vec::len)
                {
                    out.extend(best);
                }
            }
        }
        if let Some(not) = node.not
            && run(not).is_empty()
        {
            out.push(invalid(format!(
                "{name:?} must not validate the schema (not)"
            )));
        }
    }
}

/// `maxItems` and `maxProperties`, which the API server words alike.
fn too_many(n: u64, max: Option<u64>, shown: &str, out: &mut Vec<Violation>) {
    if let Some(max) = max
        && n > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        out.push(violation(
            shown,
            ErrorType::TooMany,
            Some(n.to_string()),
            format!("must have at most {max} {unit}"),
        ));
    }
}

/// An `enum` violation, as `field.NotSupported` words it.
fn not_supported(shown: &str, value: &Value, allowed: &[Value]) -> Violation {
    let values: Vec<String> = (allowed.iter())
        .map(|a| match a {
            Value::String(s) => format!("{s:?}"),
            other => format!("{:?}", other.to_string()),
        })
        .collect();
    violation(
        shown,
        ErrorType::NotSupported,
        Some(shown_value(value)),
        format!("supported values: {}", values.join(", ")),
    )
}

fn validate_number(
    node: &Node,
    x: f64,
    value: &Value,
    shown: &str,
    name: &str,
    out: &mut Vec<Violation>,
) {
    let mut invalid = |detail: String| {
        out.push(violation(
            shown,
            ErrorType::Invalid,
            Some(shown_value(value)),
            detail,
        ));
    };
    if let Some((max, exclusive)) = node.maximum {
        if exclusive && x >= max {
            invalid(format!(
                "{name} in body should be less than {}",
                number_text(max)
            ));
        } else if !exclusive && x > max {
            invalid(format!(
                "{name} in body should be less than or equal to {}",
                number_text(max)
            ));
        }
    }
    if let Some((min, exclusive)) = node.minimum {
        if exclusive && x <= min {
            invalid(format!(
                "{name} in body should be greater than {}",
                number_text(min)
            ));
        } else if !exclusive && x < min {
            invalid(format!(
                "{name} in body should be greater than or equal to {}",
                number_text(min)
            ));
        }
    }
    if let Some(factor) = node.multiple_of
        && factor > 0.0
        && !is_multiple(x, factor)
    {
        invalid(format!(
            "{name} in body should be a multiple of {}",
            number_text(factor)
        ));
    }
}

/// kube-openapi's `MultipleOf`: a factor under 1 multiplies by its inverse, and the quotient
/// is an integer within a relative epsilon (so `0.3` is a multiple of `0.1`).
fn is_multiple(x: f64, factor: f64) -> bool {
    let quotient = if factor < 1.0 {
        1.0 / factor * x
    } else {
        x / factor
    };
    let nearest = quotient.round();
    let epsilon = 1e-9;
    (quotient - nearest).abs() <= epsilon * nearest.abs().max(1.0)
}

impl Type {
    fn name(self) -> &'static str {
        match self {
            Type::Object => "object",
            Type::Array => "array",
            Type::String => "string",
            Type::Integer => "integer",
            Type::Number => "number",
            Type::Boolean => "boolean",
        }
    }

    /// Whether `value` is of this type: a number without a fraction is an integer (the API
    /// server reads `2.0` as a float that is a JSON integer), an integer is a number.
    fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Type::Object, Value::Object(_))
            | (Type::Array, Value::Array(_))
            | (Type::String, Value::String(_))
            | (Type::Boolean, Value::Bool(_))
            | (Type::Number, Value::Number(_)) => true,
            // Beyond ±2^53 a number is not an integer for kube-openapi (nor exact in JSON).
            (Type::Integer, Value::Number(n)) => n.as_f64().is_some_and(|f| {
                const LIMIT: f64 = 9_007_199_254_740_992.0;
                f.fract() == 0.0 && f.abs() < LIMIT
            }),
            _ => false,
        }
    }
}

fn type_of(name: &str) -> Option<Type> {
    Some(match name {
        "object" => Type::Object,
        "array" => Type::Array,
        "string" => Type::String,
        "integer" => Type::Integer,
        "number" => Type::Number,
        "boolean" => Type::Boolean,
        _ => return None,
    })
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Equal as JSON values: numbers by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && (x.iter()).all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A value as the API server's field errors show it: strings quoted, the rest as JSON.
fn shown_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn number_text(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn violation(field: &str, error: ErrorType, value: Option<String>, detail: String) -> Violation {
    Violation {
        field: field.to_string(),
        error,
        value,
        detail,
    }
}

/// Whether `s` is of `format` (a name of [`FORMATS`]), as the API server's format checks
/// decide.
fn format_admits(format: &str, s: &str) -> bool {
    static PATTERNS: std::sync::OnceLock<BTreeMap<&'static str, Regex>> =
        std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        let uuid = |version: &str, variant: &str| {
            format!("(?i)^[0-9a-f]{{8}}-?[0-9a-f]{{4}}-?{version}[0-9a-f]{{3}}-?{variant}[0-9a-f]{{3}}-?[0-9a-f]{{12}}$")
        };
        let compiled = [
            ("uuid", uuid("[0-9a-f]", "[0-9a-f]")),
            ("uuid3", uuid("3", "[0-9a-f]")),
            ("uuid4", uuid("4", "[89ab]")),
            ("uuid5", uuid("5", "[89ab]")),
            ("hexcolor", "^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$".to_string()),
            ("k8sshortname", "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$".to_string()),
            (
                "k8slongname",
                "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$".to_string(),
            ),
            // strfmt's IsDateTime: the part after the date's `t` (case-insensitive).
            (
                "datetime",
                "^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
                    .to_string(),
            ),
            // govalidator's IsBase64 (padding required, nothing empty).
            (
                "byte",
                "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
                    .to_string(),
            ),
        ];
        (compiled.into_iter())
            .map(|(name, p)| (name, Regex::new(&p).expect("a valid built-in pattern")))
            .collect()
    });
    match format {
        "byte" => patterns["byte"].is_match(s),
        "date" => s.parse::<jiff::civil::Date>().is_ok() && s.len() == 10,
        "ipv4" => s.contains('.') && ip_sloppy(s).is_some(),
        "ipv6" => s.contains(':') && ip_sloppy(s).is_some(),
        "cidr" => s.split_once('/').is_some_and(|(ip, bits)| {
            let max = match ip_sloppy(ip) {
                Some(core::net::IpAddr::V4(_)) => 32,
                Some(core::net::IpAddr::V6(_)) => 128,
                None => return false,
            };
            bits.parse::<u8>().is_ok_and(|b| b <= max) && !bits.starts_with('+')
        }),
        "k8sshortname" => s.len() <= 63 && patterns["k8sshortname"].is_match(s),
        "k8slongname" => s.len() <= 253 && patterns["k8slongname"].is_match(s),
        "datetime" => {
            let lower = s.to_lowercase();
            let mut parts = lower.split('t');
            let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
                return false;
            };
            let Some(m) = patterns["datetime"].captures(time) else {
                return false;
            };
            s.len() >= 4
                && format_admits("date", date)
                && &m[1] <= "23"
                && &m[2] <= "59"
                && &m[3] <= "59"
        }
        other => patterns.get(other).is_none_or(|p| p.is_match(s)),
    }
}

/// `pattern` (Go's RE2 syntax, as the API server compiles it) in the syntax of Rust's regex:
/// the Perl classes `\d`, `\w`, `\s` are ASCII as in RE2 (Rust's are Unicode); in a character
/// class, `[` and a leading `]` are literal as in RE2 (Rust nests classes), and `&`, `~` are
/// escaped (Rust's class operators `&&`, `~~`).
fn go_pattern(pattern: &str) -> String {
    let perl = |class: char| -> Option<(&'static str, bool)> {
        Some(match class {
            'd' => ("0-9", false),
            'D' => ("0-9", true),
            'w' => ("0-9A-Za-z_", false),
            'W' => ("0-9A-Za-z_", true),
            's' => (r"\t\n\x0C\r ", false),
            'S' => (r"\t\n\x0C\r ", true),
            _ => return None,
        })
    };
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let (mut in_class, mut class_start) = (false, false);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\\' {
            match next.and_then(perl) {
                Some((set, negated)) => match (in_class, negated) {
                    (true, false) => out.push_str(set),
                    (_, true) => out.push_str(&format!("[^{set}]")),
                    (false, false) => out.push_str(&format!("[{set}]")),
                },
                None => {
                    out.push('\\');
                    if let Some(n) = next {
                        out.push(n);
                    }
                }
            }
            i += 2;
            class_start = false;
            continue;
        }
        if in_class {
            match c {
                ']' if !class_start => in_class = false,
                ']' => out.push('\\'),
                '[' if next == Some(':') => {
                    // A POSIX class (`[:alpha:]`), the same in both.
                    let close = (i + 2..chars.len()).find(|&j| chars[j] == ']');
                    let end = close.unwrap_or(chars.len() - 1);
                    out.extend(&chars[i..=end]);
                    i = end + 1;
                    class_start = false;
                    continue;
                }
                '[' | '&' | '~' => out.push('\\'),
                _ => {}
            }
            out.push(c);
            class_start = false;
        } else {
            out.push(c);
            if c == '[' {
                in_class = true;
                class_start = true;
                if next == Some('^') {
                    out.push('^');
                    i += 1;
                }
            }
        }
        i += 1;
    }
    out
}

/// An IP address as Kubernetes' "sloppy" parsers read it (IPv4 octets may have leading zeros).
fn ip_sloppy(s: &str) -> Option<core::net::IpAddr> {
    if let Ok(ip) = s.parse() {
        return Some(ip);
    }
    let octets: Vec<&str> = s.split('.').collect();
    if octets.len() != 4 {
        return None;
    }
    let mut bytes = [0u8; 4];
    for (b, o) in bytes.iter_mut().zip(&octets) {
        if o.is_empty() || o.len() > 3 || !o.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        *b = o.parse().ok()?;
    }
    Some(core::net::IpAddr::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widget_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10},
                        "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                        "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
                        "port": {"x-kubernetes-int-or-string": true},
                        "tags": {"type": "array", "maxItems": 2, "x-kubernetes-list-type": "set",
                                 "items": {"type": "string"}},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                  "x-kubernetes-list-map-keys": ["name"],
                                  "items": {"type": "object", "properties": {
                                      "name": {"type": "string"}, "port": {"type": "integer"}}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "note": {"type": "string", "nullable": true},
                        "when": {"type": "string", "format": "date-time"},
                        "uid": {"type": "string", "format": "int32"}
                    }
                }
            }
        })
    }

    fn check(object: Value) -> Outcome {
        Schema::new(&widget_schema()).unwrap().check(&object)
    }

    fn texts(outcome: &Outcome) -> Vec<String> {
        outcome
            .violations
            .iter()
            .map(Violation::to_string)
            .collect()
    }

    fn widget(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "namespace": "ns"}, "spec": spec})
    }

    #[test]
    fn a_valid_object_passes_and_keeps_its_metadata() {
        let outcome = check(widget(json!({"size": 3, "port": "http", "note": null,
            "extra": {"anything": [1]}, "labels": {"a": "b"}, "when": "2024-05-01T12:00:00Z",
            "uid": "not checked", "tags": ["x", "y"]})));
        assert_eq!(outcome, Outcome::default());
    }

    #[test]
    fn each_kind_of_violation_as_the_api_server_words_it() {
        let cases: &[(Value, &[&str])] = &[
            (json!({}), &["spec.size: Required value"]),
            (
                json!({"size": "3"}),
                &[
                    "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
                ],
            ),
            (
                json!({"size": 11}),
                &[
                    "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
                ],
            ),
            (
                json!({"size": 0}),
                &[
                    "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
                ],
            ),
            (json!({"size": 2.0}), &[]),
            (
                json!({"size": 1, "mode": "c"}),
                &["spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\""],
            ),
            (
                json!({"size": 1, "name": "abcdef"}),
                &["spec.name: Too long: may not be more than 5 bytes"],
            ),
            (
                json!({"size": 1, "name": "AB"}),
                &["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"],
            ),
            (
                json!({"size": 1, "tags": ["a", "b", "a"]}),
                &[
                    "spec.tags: Too many: 3: must have at most 2 items",
                    "spec.tags[2]: Duplicate value: \"a\"",
                ],
            ),
            (
                json!({"size": 1, "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]}),
                &["spec.ports[1]: Duplicate value: {\"name\":\"a\"}"],
            ),
            (
                json!({"size": 1, "port": true}),
                &[
                    "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                ],
            ),
            (
                json!({"size": 1, "labels": {"a": 1}}),
                &[
                    "spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"",
                ],
            ),
            (
                json!({"size": 1, "when": "yesterday"}),
                &[
                    "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
                ],
            ),
        ];
        for (spec, expected) in cases {
            let outcome = check(widget(spec.clone()));
            assert_eq!(texts(&outcome), *expected, "{spec}");
        }
    }

    #[test]
    fn unknown_fields_are_pruned_and_reported_defaults_fill_in() {
        let outcome = check(widget(json!({"size": 1, "colour": "red", "mode": null,
            "ports": [{"name": "a", "proto": "TCP"}], "extra": {"kept": true}})));
        assert_eq!(outcome.pruned, ["spec.colour", "spec.ports[0].proto"]);
        assert!(outcome.violations.is_empty(), "{:?}", outcome.violations);
        // A required field with a default is no violation: the default fills it in.
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "required": ["mode"], "properties": {"mode": {"type": "string", "default": "x"}}}}});
        let outcome = Schema::new(&schema).unwrap().check(&widget(json!({})));
        assert_eq!(outcome, Outcome::default());
        // A root without a schema for it prunes everything but apiVersion, kind and metadata.
        let outcome = Schema::new(&json!({"type": "object"}))
            .unwrap()
            .check(&widget(json!({"size": 1})));
        assert_eq!(outcome.pruned, ["spec"]);
    }

    #[test]
    fn alternatives_and_not() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            "not": {"required": ["c"]}}}});
        let schema = Schema::new(&schema).unwrap();
        assert!(
            schema
                .check(&widget(json!({"a": "x"})))
                .violations
                .is_empty()
        );
        let both = schema.check(&widget(json!({"a": "x", "b": "y"})));
        assert_eq!(
            texts(&both),
            [
                "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found 2 valid alternatives"
            ]
        );
        let none = schema.check(&widget(json!({})));
        assert_eq!(
            texts(&none),
            [
                "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found none valid",
                "spec.a: Required value"
            ]
        );
    }

    #[test]
    fn validation_rules() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {
            "size": {"type": "integer"}, "mode": {"type": "string"},
            "ratio": {"type": "number"},
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"},
                     "x-kubernetes-validations": [{"rule": "self.all(t, t.size() < 3)"}]}},
        "x-kubernetes-validations": [
            {"rule": "self.size <= 5 || self.mode == 'b'", "message": "big widgets need mode b"},
            {"rule": "!has(self.name) || self.name.startsWith('a')", "fieldPath": ".name",
             "reason": "FieldValueForbidden"},
            {"rule": "!has(self.ratio) || self.ratio < 1.0",
             "messageExpression": "'ratio ' + string(self.ratio) + ' is too big'"},
            {"rule": "self.mode == 'b' || self.size > 0"},
            {"rule": "!has(self.name) || self.name.size() < 10"}
        ]}}});
        let schema = Schema::new(&schema).unwrap();
        let check = |spec: Value| {
            let outcome = schema.check(&widget(spec));
            (texts(&outcome), outcome.unevaluated_rules)
        };
        assert_eq!(
            check(json!({"size": 3, "mode": "a", "name": "ab", "ratio": 0.5})),
            (vec![], 0)
        );
        assert_eq!(
            check(json!({"size": 6, "mode": "a", "name": "b", "ratio": 2, "tags": ["abc"]})),
            (
                vec![
                    "spec: Invalid value: \"object\": big widgets need mode b".to_string(),
                    "spec.name: Forbidden: failed rule: !has(self.name) || self.name.startsWith('a')".into(),
                    "spec: Invalid value: \"object\": ratio 2 is too big".into(),
                    "spec.tags: Invalid value: \"array\": failed rule: self.all(t, t.size() < 3)".into(),
                ],
                0
            )
        );
        // A missing field is the rule's error; the type errors stop the rules.
        assert_eq!(
            check(json!({"mode": "a"})).0,
            [
                "spec: Invalid value: \"object\": no such key: size evaluating rule: self.size <= 5 || self.mode == 'b'",
                "spec: Invalid value: \"object\": no such key: size evaluating rule: self.mode == 'b' || self.size > 0"
            ]
        );
        assert_eq!(
            check(json!({"size": "x"})).0[1],
            "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
        );
    }

    #[test]
    fn cel_rules_are_counted_and_a_bad_pattern_is_an_error() {
        let rules = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self == oldSelf"}, {"rule": "self.x.quantity()"}, {"rule": "has(self.x)"},
            {"rule": "self.x =="}]});
        // A transition rule does not apply; an unknown function compiles (it fails when run).
        assert_eq!(Schema::new(&rules).unwrap().unevaluated_rules(), 1);
        let bad =
            json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}});
        let err = Schema::new(&bad).unwrap_err();
        assert!(err.to_string().starts_with(
            "openAPIV3Schema.properties[x].pattern: pattern \"(\" is not a valid regular expression"
        ));
    }

    #[test]
    fn go_patterns_in_rust() {
        for (go, rust) in [
            (r"^\d+$", "^[0-9]+$"),
            (
                r"^\S+\s[\w.]$",
                r"^[^\t\n\x0C\r ]+[\t\n\x0C\r ][0-9A-Za-z_.]$",
            ),
            (r"[^][ ()]", r"[^\]\[ ()]"),
            (r"[[:alpha:]&]", r"[[:alpha:]\&]"),
            (r"\\d", r"\\d"),
        ] {
            assert_eq!(go_pattern(go), rust, "{go}");
            assert!(Regex::new(&go_pattern(go)).is_ok(), "{go}");
        }
        let digits = Regex::new(&go_pattern(r"^\d+$")).unwrap();
        assert!(digits.is_match("12") && !digits.is_match("\u{0661}\u{0662}"));
    }

    #[test]
    fn formats() {
        let yes = [
            ("byte", "aGVsbG8="),
            ("date", "2024-05-01"),
            ("datetime", "2024-05-01T12:00:00.5+02:00"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000"),
            ("ipv4", "10.0.0.1"),
            ("ipv4", "010.0.0.1"),
            ("ipv6", "::1"),
            ("cidr", "10.0.0.0/8"),
            ("hexcolor", "#fff"),
            ("k8sshortname", "a-b"),
            ("k8slongname", "a.b-c"),
        ];
        let no = [
            ("byte", "not base64!"),
            ("date", "2024-13-01"),
            ("datetime", "2024-05-01"),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000"),
            ("ipv4", "::1"),
            ("ipv6", "10.0.0.1"),
            ("cidr", "10.0.0.0/33"),
            ("k8sshortname", "A"),
            ("k8slongname", "-a"),
        ];
        for (format, s) in yes {
            assert!(format_admits(format, s), "{format} {s}");
        }
        for (format, s) in no {
            assert!(!format_admits(format, s), "{format} {s}");
        }
    }
}
