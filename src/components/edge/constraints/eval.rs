//! Deciding constraints against properties, as anax does (`propertyInArray` and the
//! `RequiredProperty` walk), and two policies' compatibility (`policy.Are_Compatible`, without
//! the agreement protocols).
//!
//! A term is decided by the first property with its name whose value is a number, a boolean or
//! a string; a property of another JSON kind, or a boolean tested with `in`, is passed over and
//! the next one with the name is tried. No such property: false, even for `!=`.

use serde_json::Value;

use super::{ConstraintError, Disjunction, Node, Term, go_parse_bool, go_parse_float, parse};
use crate::components::edge::properties::{LIST_TYPE, Property, VERSION_TYPE};
use crate::components::edge::version::{VersionRange, is_version_expression, is_version_string};

/// Whether the properties satisfy every constraint of the array (ANDed); an empty array is
/// satisfied by anything. Constraints are validated first: an invalid one is the error.
pub fn satisfied<S: AsRef<str>>(
    constraints: &[S],
    properties: &[Property],
) -> Result<bool, ConstraintError> {
    super::validate(constraints)?;
    let mut all = true;
    for constraint in constraints {
        let constraint = constraint.as_ref();
        let tree = parse(constraint).map_err(|cause| ConstraintError::Expression {
            constraint: constraint.to_owned(),
            cause,
        })?;
        all &= holds(&tree, properties);
    }
    Ok(all)
}

/// Some AND group holds.
pub fn holds(tree: &Disjunction, properties: &[Property]) -> bool {
    tree.0.iter().any(|group| {
        group.iter().all(|node| match node {
            Node::Term(term) => term_holds(term, properties),
            Node::Group(inner) => holds(inner, properties),
        })
    })
}

/// One term against the property list.
pub fn term_holds(term: &Term, properties: &[Property]) -> bool {
    for property in properties.iter().filter(|p| p.name == term.name) {
        let decided = match &property.value {
            Some(Value::Number(n)) => Some(number_holds(n.as_f64().unwrap_or(f64::NAN), term)),
            Some(Value::Bool(b)) => bool_holds(*b, term),
            Some(Value::String(s)) => Some(string_holds(property, s, term)),
            _ => None,
        };
        if let Some(decided) = decided {
            return decided;
        }
    }
    false
}

/// `<`, `>`, `<=`, `>=`, `!=` compare; any other operator (`=`, `==`, `in`, `=<`, `=>`) is
/// equality. A value that is not a number is false.
fn number_holds(property: f64, term: &Term) -> bool {
    let Some(value) = go_parse_float(&term.value) else {
        return false;
    };
    match term.op.as_str() {
        "<" => property < value,
        ">" => property > value,
        "<=" => property <= value,
        ">=" => property >= value,
        "!=" => property != value,
        _ => property == value,
    }
}

/// A value that is not a Go boolean is false; then `=`, `==`, `!=` compare, `in` decides
/// nothing (`None`: the next property is tried) and other operators are false.
fn bool_holds(property: bool, term: &Term) -> Option<bool> {
    let Some(value) = go_parse_bool(&term.value) else {
        return Some(false);
    };
    match term.op.as_str() {
        "!=" => Some(property != value),
        "=" | "==" => Some(property == value),
        "in" => None,
        _ => Some(false),
    }
}

fn string_holds(property: &Property, text: &str, term: &Term) -> bool {
    let have = trim_spaces(strip_quotes(text));
    let want = trim_spaces(strip_quotes(&term.value));
    let is_list = property.r#type == LIST_TYPE;
    match term.op.as_str() {
        "!=" if is_list => !list_contains(want, have),
        "!=" => have != want,
        "in" if property.r#type == VERSION_TYPE
            || (is_version_string(have) && is_version_expression(want)) =>
        {
            VersionRange::parse(want).is_ok_and(|range| range.contains(have).unwrap_or(false))
        }
        // Each item is trimmed and unquoted here and again in `list_contains`, as in anax.
        "in" if is_list => {
            (have.split(',')).any(|item| list_contains(strip_quotes(trim_spaces(item)), want))
        }
        "in" => list_contains(have, want),
        // An untyped "toad,cat,dog" equals cat: the value is looked for among the items.
        "=" | "==" => list_contains(want, have) || have == want,
        _ => false,
    }
}

/// Whether `item` (unquoted, trimmed) is one of the comma-separated `list`'s items (each
/// trimmed, then unquoted), anax `stringListContains`.
fn list_contains(item: &str, list: &str) -> bool {
    let item = strip_quotes(trim_spaces(item));
    list.split(',')
        .any(|candidate| strip_quotes(trim_spaces(candidate)) == item)
}

/// Surrounding double quotes off (anax `removeQuotes`; it panics on an empty text or a lone
/// quote, which are kept here as they are).
fn strip_quotes(text: &str) -> &str {
    match text.len() >= 2 && text.starts_with('"') && text.ends_with('"') {
        true => &text[1..text.len() - 1],
        false => text,
    }
}

/// Spaces, and only spaces, off both ends (anax `removeSpaces`).
fn trim_spaces(text: &str) -> &str {
    text.trim_matches(' ')
}

/// One side of a compatibility check: what it offers and what it asks of the other side.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicySide {
    pub properties: Vec<Property>,
    pub constraints: Vec<String>,
}

/// Why two sides are not compatible. The wording is cvo's: anax's depends on the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Incompatible {
    #[error("the {side} constraints are not valid: {error}")]
    Invalid {
        side: &'static str,
        error: ConstraintError,
    },
    #[error("the {side} constraints are not satisfied by the {other} properties")]
    Unsatisfied {
        side: &'static str,
        other: &'static str,
    },
}

/// Bidirectional compatibility (`policy.Are_Compatible` for properties and constraints): the
/// consumer's constraints (deployment or management policy) hold for the producer's properties
/// (the node), and the producer's constraints hold for the consumer's properties.
pub fn are_compatible(producer: &PolicySide, consumer: &PolicySide) -> Result<(), Incompatible> {
    let directions = [
        (consumer, producer, "consumer", "producer"),
        (producer, consumer, "producer", "consumer"),
    ];
    for (asking, offering, side, other) in directions {
        match satisfied(&asking.constraints, &offering.properties) {
            Ok(true) => {}
            Ok(false) => return Err(Incompatible::Unsatisfied { side, other }),
            Err(error) => return Err(Incompatible::Invalid { side, error }),
        }
    }
    Ok(())
}
