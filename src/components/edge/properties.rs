//! Properties as the Open Horizon exchange stores them (node, service, deployment and
//! management policies): `{"name": ..., "value": ..., "type": ...}`, the type optional. Values
//! are JSON: numbers (float64 in anax, hence in constraints), booleans and strings; a `version`
//! or `list of strings` property holds a string (`"1.2.3"`, `"a,b,c"`).
//!
//! [`validate`] is anax's `PropertyList.Validate`, messages included; constraint evaluation does
//! not need it (anax evaluates unvalidated properties too), the commands run it on their input.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::version::is_plain_version_string;

pub const STRING_TYPE: &str = "string";
pub const VERSION_TYPE: &str = "version";
pub const BOOLEAN_TYPE: &str = "boolean";
pub const INTEGER_TYPE: &str = "int";
pub const FLOAT_TYPE: &str = "float";
/// The spec's (and the shipped documentation's) spelling; an older anax spelled it
/// `list of string`.
pub const LIST_TYPE: &str = "list of strings";

/// One exchange property. A missing `value` and `null` are both absent, as in Go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Property {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub value: Option<Value>,
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub r#type: String,
}

impl Property {
    /// An untyped property.
    pub fn new(name: &str, value: Value) -> Self {
        Property {
            name: name.to_owned(),
            value: Some(value),
            r#type: String::new(),
        }
    }

    /// A property with a declared type.
    pub fn typed(name: &str, value: Value, r#type: &str) -> Self {
        Property {
            r#type: r#type.to_owned(),
            ..Property::new(name, value)
        }
    }
}

/// Why a property list is refused; the text is anax's (typo `verion` included).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertyError {
    #[error("Property must include a name and a value: {0}")]
    Incomplete(String),
    #[error(
        "Property {0} has invalid property type {1}. Allowed property types are: version, string, int, boolean, float, and list of strings."
    )]
    UnknownType(String, String),
    #[error("Property value is of type {0}, expected type {1}")]
    TypeMismatch(&'static str, String),
    #[error("Value {0} of property {1} is not an integer type")]
    NotInteger(String, String),
    #[error("Property {0} with value {1} is not a valid verion string")]
    NotVersion(String, String),
    #[error("Property {0} has invalid value type {1}")]
    ValueType(String, &'static str),
}

/// Checks each property's name, value and declared type, stopping at the first problem.
pub fn validate(properties: &[Property]) -> Result<(), PropertyError> {
    properties.iter().try_for_each(validate_one)
}

fn validate_one(property: &Property) -> Result<(), PropertyError> {
    let declared = property.r#type.as_str();
    let value = match &property.value {
        Some(value) if !property.name.is_empty() => value,
        _ => return Err(PropertyError::Incomplete(go_struct(property))),
    };
    let known = [
        STRING_TYPE,
        VERSION_TYPE,
        BOOLEAN_TYPE,
        INTEGER_TYPE,
        FLOAT_TYPE,
        LIST_TYPE,
        "",
    ];
    if !known.contains(&declared) {
        return Err(PropertyError::UnknownType(
            property.name.clone(),
            declared.to_owned(),
        ));
    }
    let mismatch = |go_type| Err(PropertyError::TypeMismatch(go_type, declared.to_owned()));
    match value {
        Value::Bool(_) if ![BOOLEAN_TYPE, ""].contains(&declared) => mismatch("bool"),
        Value::Bool(_) => Ok(()),
        Value::Number(n) => {
            let number = n.as_f64().unwrap_or(f64::NAN);
            if declared == INTEGER_TYPE && go_int(number) as f64 != number {
                return Err(PropertyError::NotInteger(
                    go_value_localized(value),
                    property.name.clone(),
                ));
            }
            match [INTEGER_TYPE, FLOAT_TYPE, ""].contains(&declared) {
                true => Ok(()),
                false => mismatch("float64"),
            }
        }
        Value::String(text) if declared == VERSION_TYPE => match is_plain_version_string(text) {
            true => Ok(()),
            false => Err(PropertyError::NotVersion(
                property.name.clone(),
                text.clone(),
            )),
        },
        Value::String(_) if ![STRING_TYPE, LIST_TYPE, ""].contains(&declared) => mismatch("string"),
        Value::String(_) => Ok(()),
        Value::Array(_) => Err(PropertyError::ValueType(
            property.name.clone(),
            "[]interface {}",
        )),
        Value::Object(_) => Err(PropertyError::ValueType(
            property.name.clone(),
            "map[string]interface {}",
        )),
        Value::Null => Err(PropertyError::Incomplete(go_struct(property))),
    }
}

/// Go's `int(f)` on amd64: the value truncated, and the smallest int for anything outside the
/// 64-bit range (or NaN), so that `float64(int(f)) != f` refuses it as anax does.
fn go_int(number: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    match (-LIMIT..LIMIT).contains(&number) {
        true => number.trunc() as i64,
        false => i64::MIN,
    }
}

/// A property as anax's message printer prints the struct: `{name value type}`, `<nil>` for
/// no value, numbers localized.
fn go_struct(property: &Property) -> String {
    let value = (property.value.as_ref()).map_or("<nil>".to_owned(), go_value_localized);
    format!("{{{} {value} {}}}", property.name, property.r#type)
}

/// A JSON value as Go's `%v` prints what `encoding/json` decoded it into.
pub fn go_value(value: &Value) -> String {
    format_value(value, &go_float)
}

/// A JSON value as anax's message printer (`golang.org/x/text/message`, English) prints it:
/// Go's `%v` with numbers localized ([`go_float_localized`]).
pub fn go_value_localized(value: &Value) -> String {
    format_value(value, &go_float_localized)
}

fn format_value(value: &Value, float: &dyn Fn(f64) -> String) -> String {
    match value {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => float(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| format_value(v, float)).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(map) => {
            let entries: Vec<String> = (map.iter())
                .map(|(k, v)| format!("{k}:{}", format_value(v, float)))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
    }
}

/// A float64's shortest digits and decimal exponent (`1234.5` → `("1.2345", 3)`), or its
/// name when it is not finite.
fn shortest(number: f64) -> Result<(String, i32), String> {
    if !number.is_finite() {
        return Err(match number {
            n if n.is_nan() => "NaN".to_owned(),
            n if n > 0.0 => "+Inf".to_owned(),
            _ => "-Inf".to_owned(),
        });
    }
    let scientific = format!("{number:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    Ok((mantissa.to_owned(), exponent.parse().unwrap_or(0)))
}

/// Whether Go's `%v` (`%g` with the shortest digits) writes the exponent form: an exponent
/// below -4 or at least 6 (`1e+06`, `123456`).
fn exponent_form(number: f64, exponent: i32) -> bool {
    number != 0.0 && !(-4..6).contains(&exponent)
}

/// Go's `%v` of a float64: the shortest digits, in exponent form (`1e+06`, `1e-05`) when the
/// exponent is below -4 or at least 6.
pub fn go_float(number: f64) -> String {
    match shortest(number) {
        Err(name) => name,
        Ok((mantissa, exponent)) if exponent_form(number, exponent) => {
            let sign = if exponent < 0 { '-' } else { '+' };
            format!("{mantissa}e{sign}{:02}", exponent.abs())
        }
        Ok(_) => format!("{number}"),
    }
}

/// `%v` of a float64 through anax's message printer: the same choice of form as
/// [`go_float`], the exponent written `×10⁰⁶` (superscript, two digits at least) and whole
/// digits grouped by commas (`2,048.5`).
pub fn go_float_localized(number: f64) -> String {
    match shortest(number) {
        Err(name) => name,
        Ok((mantissa, exponent)) if exponent_form(number, exponent) => {
            const SUPERSCRIPT: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
            let digits = format!("{:02}", exponent.abs());
            let power: String = (digits.bytes())
                .map(|d| SUPERSCRIPT[usize::from(d - b'0')])
                .collect();
            let sign = if exponent < 0 { "⁻" } else { "" };
            format!("{mantissa}×10{sign}{power}")
        }
        Ok(_) => {
            let plain = format!("{}", number.abs());
            let (whole, fraction) = plain.split_once('.').unwrap_or((&plain, ""));
            let mut grouped = String::new();
            for (i, digit) in whole.chars().enumerate() {
                if i > 0 && (whole.len() - i) % 3 == 0 {
                    grouped.push(',');
                }
                grouped.push(digit);
            }
            let sign = if number < 0.0 { "-" } else { "" };
            match fraction.is_empty() {
                true => format!("{sign}{grouped}"),
                false => format!("{sign}{grouped}.{fraction}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Vec<Property> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn valid_lists() {
        let props = parse(
            r#"[{"name":"cpu","value":4,"type":"int"},{"name":"mem","value":1.5,"type":"float"},
                {"name":"gpu","value":true,"type":"boolean"},{"name":"os","value":"linux","type":"string"},
                {"name":"v","value":"1.2","type":"version"},{"name":"langs","value":"a,b","type":"list of strings"},
                {"name":"untyped","value":"x"},{"name":"n","value":3},{"name":"b","value":false},
                {"name":"inf","value":"INFINITY","type":"version"},{"name":"whole","value":3.0,"type":"int"}]"#,
        );
        assert_eq!(validate(&props), Ok(()));
        assert_eq!(props[6].r#type, "");
        // Round trip: no `type` key when none was declared.
        assert_eq!(
            serde_json::to_value(&props[6]).unwrap(),
            json!({"name": "untyped", "value": "x"})
        );
    }

    #[test]
    fn anax_messages() {
        let cases = [
            (
                r#"{"name":"a"}"#,
                "Property must include a name and a value: {a <nil> }",
            ),
            (
                r#"{"name":"a","value":null,"type":"int"}"#,
                "Property must include a name and a value: {a <nil> int}",
            ),
            (
                r#"{"value":1}"#,
                "Property must include a name and a value: { 1 }",
            ),
            (
                r#"{"name":"a","value":1,"type":"integer"}"#,
                "Property a has invalid property type integer. Allowed property types are: version, string, int, boolean, float, and list of strings.",
            ),
            (
                r#"{"name":"a","value":true,"type":"string"}"#,
                "Property value is of type bool, expected type string",
            ),
            (
                r#"{"name":"a","value":1.5,"type":"int"}"#,
                "Value 1.5 of property a is not an integer type",
            ),
            // The message printer localizes numbers (facts of anax main, golang.org/x/text).
            (
                r#"{"name":"a","value":2048.5,"type":"int"}"#,
                "Value 2,048.5 of property a is not an integer type",
            ),
            (
                r#"{"name":"a","value":1e-7,"type":"int"}"#,
                "Value 1×10⁻⁰⁷ of property a is not an integer type",
            ),
            // Outside the 64-bit range: Go's int() of it is not it.
            (
                r#"{"name":"a","value":1e20,"type":"int"}"#,
                "Value 1×10²⁰ of property a is not an integer type",
            ),
            (
                r#"{"name":"a","value":9223372036854775807,"type":"int"}"#,
                "Value 9.223372036854776×10¹⁸ of property a is not an integer type",
            ),
            (
                r#"{"value":{"k":2048.5}}"#,
                "Property must include a name and a value: { map[k:2,048.5] }",
            ),
            (
                r#"{"name":"a","value":1,"type":"boolean"}"#,
                "Property value is of type float64, expected type boolean",
            ),
            (
                r#"{"name":"a","value":"1","type":"int"}"#,
                "Property value is of type string, expected type int",
            ),
            (
                r#"{"name":"a","value":"true","type":"boolean"}"#,
                "Property value is of type string, expected type boolean",
            ),
            (
                r#"{"name":"a","value":"1.02","type":"version"}"#,
                "Property a with value 1.02 is not a valid verion string",
            ),
            (
                r#"{"name":"a","value":["x"]}"#,
                "Property a has invalid value type []interface {}",
            ),
            (
                r#"{"name":"a","value":{"k":1}}"#,
                "Property a has invalid value type map[string]interface {}",
            ),
            (
                r#"{"name":"a","value":["x"],"type":"list of strings"}"#,
                "Property a has invalid value type []interface {}",
            ),
        ];
        for (text, want) in cases {
            let prop: Property = serde_json::from_str(text).unwrap();
            assert_eq!(validate(&[prop]).unwrap_err().to_string(), want, "{text}");
        }
    }

    #[test]
    fn go_formatting() {
        for (n, want) in [
            (3.0, "3"),
            (1.5, "1.5"),
            (123456.0, "123456"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (100000000.0, "1e+08"),
            (1.25e22, "1.25e+22"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (0.0, "0"),
        ] {
            assert_eq!(go_float(n), want, "{n}");
        }
        // golang.org/x/text/message, English (printed by it).
        for (n, want) in [
            (1e6, "1×10⁰⁶"),
            (123456.0, "123,456"),
            (1234567.0, "1.234567×10⁰⁶"),
            (2048.5, "2,048.5"),
            (1e-7, "1×10⁻⁰⁷"),
            (1e20, "1×10²⁰"),
            (0.0001, "0.0001"),
            (-2048.5, "-2,048.5"),
            (1.5e300, "1.5×10³⁰⁰"),
            (12345678.9, "1.23456789×10⁰⁷"),
            (100.0, "100"),
            (100000.0, "100,000"),
        ] {
            assert_eq!(go_float_localized(n), want, "{n}");
        }
    }
}
