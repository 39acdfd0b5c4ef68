//! OpenAPI v3 value validation of a custom resource against its compiled schema, with kube-apiserver's
//! field paths, error types and messages (kube-openapi's validators as the CRD handler turns their results
//! into field errors).
//!
//! Paths follow kube-openapi: `spec.x` for properties, `spec.x[0]` for list items, `spec.x.key` for map
//! values. A result kube-openapi reports as a plain error (a numeric range check, an `anyOf` that failed)
//! becomes a cause on the nil path (`<nil>`), as upstream prints it.

use serde_json::Value;

use super::go_fmt::{bad_value, float_v, number_v};
use super::schema::{JsonType, ListType, Node};
use crate::error::FieldError;
use kube_compat::go_strconv::quote;

/// Where kube-openapi says the validated data lives.
const IN_BODY: &str = "in body";
/// The largest integer a float64 holds exactly (`swag.IsFloat64AJSONInteger`'s bound).
const MAX_JSON_INTEGER: f64 = 9_007_199_254_740_992.0;

/// A field error of type `TypeInvalid` (`Invalid value: "string": ... must be of type integer: "string"`).
fn type_invalid(path: &str, actual: &str, expected: &str) -> FieldError {
    FieldError {
        reason: "FieldValueTypeInvalid",
        field: path.to_string(),
        message: format!(
            "Invalid value: {}: {path} {IN_BODY} must be of type {expected}: {}",
            quote(actual),
            quote(actual)
        ),
    }
}

/// A `FieldValueInvalid` cause whose bad value is already rendered.
fn invalid(path: &str, value: &str, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: path.to_string(),
        message: format!("Invalid value: {value}: {detail}"),
    }
}

/// A result kube-openapi reports as a plain error: upstream turns it into a cause on the nil path.
fn plain(detail: String) -> FieldError {
    invalid(super::NIL_FIELD, "\"\"", &detail)
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The JSON type and Go format kube-openapi infers from a decoded value.
fn data_type(v: &Value) -> (JsonType, &'static str) {
    match v {
        Value::Object(_) => (JsonType::Object, ""),
        Value::Array(_) => (JsonType::Array, ""),
        Value::String(_) => (JsonType::String, ""),
        Value::Bool(_) => (JsonType::Boolean, ""),
        Value::Number(n) if n.is_i64() => (JsonType::Integer, "int64"),
        _ => (JsonType::Number, "float64"),
    }
}

fn is_json_integer(f: f64) -> bool {
    f.is_finite() && (-MAX_JSON_INTEGER..=MAX_JSON_INTEGER).contains(&f) && f.trunc() == f
}

/// The type validator.
fn check_type(node: &Node, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let declared = node.type_names();
    if declared.is_empty() && node.format.is_none() {
        return;
    }
    if v.is_null() {
        if !declared.is_empty() && !node.nullable {
            errs.push(type_invalid(path, "null", &declared));
        }
        return;
    }
    let (sch, fmt) = data_type(v);
    let is_float_int =
        sch == JsonType::Number && v.as_f64().is_some_and(is_json_integer) && node.type_contains(JsonType::Integer);
    let is_int_float = sch == JsonType::Integer && node.type_contains(JsonType::Number);
    let stringish = matches!(sch, JsonType::String | JsonType::Array);
    if let Some(format) = &node.format
        && !stringish
        && !(node.type_contains(sch) || fmt == format || is_float_int || is_int_float)
    {
        errs.push(type_invalid(path, fmt, format));
        return;
    }
    if node.format.is_some()
        && stringish
        && !(node.type_contains(JsonType::Number) || node.type_contains(JsonType::Integer))
    {
        return;
    }
    if !(node.type_contains(sch) || is_float_int || is_int_float) {
        errs.push(type_invalid(path, sch.name(), &declared));
    }
}

/// Go's `strconv.ParseInt`/`ParseUint`/`ParseFloat(_, 32)` range check of a number against the schema's
/// type and format (`IsValueValidAgainstRange`).
fn fits_format(n: &serde_json::Number, json_type: &str, format: &str) -> bool {
    let as_int = n.as_i64().map(i128::from).or_else(|| {
        n.as_f64()
            .filter(|f| f.trunc() == *f && f.abs() < 1e30)
            .map(|f| f as i128)
    });
    match (json_type, format) {
        ("integer", "int32") => as_int.is_some_and(|i| i32::try_from(i).is_ok()),
        ("integer", "uint32") => as_int.is_some_and(|i| u32::try_from(i).is_ok()),
        ("integer", "uint64") => as_int.is_some_and(|i| u64::try_from(i).is_ok()),
        ("integer", _) => as_int.is_some_and(|i| i64::try_from(i).is_ok()),
        (_, "float" | "float32") => n.as_f64().is_some_and(|f| f.abs() <= f64::from(f32::MAX)),
        _ => true,
    }
}

fn range_error(prefix: &str, json_type: &str, format: &str, path: &str) -> FieldError {
    if format.is_empty() {
        plain(format!(
            "{prefix} value must be of type {json_type} (default format) in {path}"
        ))
    } else {
        plain(format!(
            "{prefix} value must be of type {json_type} with format {format} in {path}"
        ))
    }
}

fn check_number(node: &Node, n: &serde_json::Number, path: &str, errs: &mut Vec<FieldError>) {
    let json_type = if node.int_or_string {
        "integer"
    } else {
        node.json_type.map(JsonType::name).unwrap_or_default()
    };
    let format = node.format.as_deref().unwrap_or_default();
    if !fits_format(n, json_type, format) {
        errs.push(range_error("Checked", json_type, format, path));
    }
    let data = n.as_f64().unwrap_or(f64::NAN);
    let shown = number_v(n);
    // An integer value is compared with the bound truncated to an integer, as upstream's native-type check.
    let bound = |b: f64| -> String { if n.is_i64() { (b as i64).to_string() } else { float_v(b) } };
    if let Some(factor) = node.multiple_of
        && factor > 0.0
        && !is_json_integer(data / factor)
    {
        errs.push(invalid(
            path,
            &shown,
            &format!("{path} {IN_BODY} should be a multiple of {}", float_v(factor)),
        ));
    }
    if let Some(max) = node.maximum {
        let bad = if node.exclusive_maximum {
            data >= max
        } else {
            data > max
        };
        if bad {
            let word = if node.exclusive_maximum {
                "less than"
            } else {
                "less than or equal to"
            };
            errs.push(invalid(
                path,
                &shown,
                &format!("{path} {IN_BODY} should be {word} {}", bound(max)),
            ));
        }
    }
    if let Some(min) = node.minimum {
        let bad = if node.exclusive_minimum {
            data <= min
        } else {
            data < min
        };
        if bad {
            let word = if node.exclusive_minimum {
                "greater than"
            } else {
                "greater than or equal to"
            };
            errs.push(invalid(
                path,
                &shown,
                &format!("{path} {IN_BODY} should be {word} {}", bound(min)),
            ));
        }
    }
}

fn check_string(node: &Node, s: &str, path: &str, errs: &mut Vec<FieldError>) {
    let len = s.chars().count() as i64;
    if let Some(max) = node.max_length
        && len > max
    {
        let unit = if max == 1 { "byte" } else { "bytes" };
        errs.push(FieldError {
            reason: "FieldValueTooLong",
            field: path.to_string(),
            message: format!("Too long: may not be more than {max} {unit}"),
        });
        return;
    }
    if let Some(min) = node.min_length
        && len < min
    {
        errs.push(invalid(
            path,
            &quote(s),
            &format!("{path} {IN_BODY} should be at least {min} chars long"),
        ));
        return;
    }
    if let Some(p) = &node.pattern
        && !p.is_match(s)
    {
        errs.push(invalid(
            path,
            &quote(s),
            &format!("{path} {IN_BODY} should match '{}'", p.source),
        ));
    }
}

fn check_format(node: &Node, s: &str, path: &str, errs: &mut Vec<FieldError>) {
    let Some(format) = node.format.as_deref() else {
        return;
    };
    if !node.type_contains(JsonType::String) || node.int_or_string {
        return;
    }
    if !super::formats::is_valid(format, s) {
        errs.push(type_invalid_value(path, s, format));
    }
}

/// A format failure: kube-openapi's `InvalidType` with the string itself as the "type" it saw.
fn type_invalid_value(path: &str, value: &str, format: &str) -> FieldError {
    FieldError {
        reason: "FieldValueTypeInvalid",
        field: path.to_string(),
        message: format!(
            "Invalid value: {}: {path} {IN_BODY} must be of type {format}: {}",
            quote(value),
            quote(value)
        ),
    }
}

fn enum_matches(allowed: &Value, v: &Value) -> bool {
    match (allowed, v) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

fn check_enum(node: &Node, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if node.enum_values.is_empty() || node.enum_values.iter().any(|a| enum_matches(a, v)) {
        return;
    }
    let supported: Vec<String> = node
        .enum_values
        .iter()
        .map(|a| match a {
            Value::String(s) => quote(s),
            other => quote(&other.to_string()),
        })
        .collect();
    errs.push(FieldError {
        reason: "FieldValueNotSupported",
        field: path.to_string(),
        message: format!(
            "Unsupported value: {}: supported values: {}",
            bad_value(v),
            supported.join(", ")
        ),
    });
}

fn check_array(node: &Node, items: &[Value], old: Option<&Value>, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(item_schema) = node.items.as_deref() {
        let old_items = correlate_items(node, old);
        for (i, item) in items.iter().enumerate() {
            let old_item = old_items.as_ref().and_then(|o| o.find(item));
            validate(item_schema, item, old_item, &format!("{path}[{i}]"), errs);
        }
    }
    let size = items.len() as i64;
    if let Some(min) = node.min_items
        && size < min
    {
        errs.push(invalid(
            path,
            &size.to_string(),
            &format!("{path} {IN_BODY} should have at least {min} items"),
        ));
    }
    if let Some(max) = node.max_items
        && size > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        errs.push(FieldError {
            reason: "FieldValueTooMany",
            field: path.to_string(),
            message: format!("Too many: {size}: must have at most {max} {unit}"),
        });
    }
    if node.unique_items && items.iter().enumerate().any(|(i, a)| items[..i].iter().any(|b| a == b)) {
        errs.push(invalid(
            path,
            "\"\"",
            &format!("{path} {IN_BODY} shouldn't contain duplicates"),
        ));
    }
}

fn check_object(
    node: &Node,
    map: &serde_json::Map<String, Value>,
    old: Option<&Value>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let n = map.len() as i64;
    if let Some(min) = node.min_properties
        && n < min
    {
        errs.push(invalid(
            path,
            &n.to_string(),
            &format!("{path} {IN_BODY} should have at least {min} properties"),
        ));
        return;
    }
    if let Some(max) = node.max_properties
        && n > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        errs.push(FieldError {
            reason: "FieldValueTooMany",
            field: path.to_string(),
            message: format!("Too many: {n}: must have at most {max} {unit}"),
        });
        return;
    }
    if let Some(extra) = node.additional_properties.as_deref() {
        let mut keys: Vec<&String> = map.keys().filter(|k| !node.properties.contains_key(*k)).collect();
        keys.sort();
        for k in keys {
            let old_v = old.and_then(|o| o.get(k));
            validate(extra, &map[k], old_v, &format!("{path}.{k}"), errs);
        }
    }
    for (k, schema) in &node.properties {
        if let Some(v) = map.get(k) {
            validate(schema, v, old.and_then(|o| o.get(k)), &child_path(path, k), errs);
        }
    }
    for k in &node.required {
        if !map.contains_key(k) {
            let field = format!("{path}.{k}");
            errs.push(FieldError {
                reason: "FieldValueRequired",
                field: field.trim_start_matches('.').to_string(),
                message: "Required value".into(),
            });
        }
    }
}

/// Old list items correlated with new ones for ratcheting: only map-type lists correlate (by their keys).
pub(super) struct OldItems<'a> {
    keys: &'a [String],
    items: &'a [Value],
}

impl<'a> OldItems<'a> {
    /// The old item with the same map keys as `new`.
    pub(super) fn find(&self, new: &Value) -> Option<&'a Value> {
        self.items
            .iter()
            .find(|o| self.keys.iter().all(|k| o.get(k) == new.get(k)))
    }
}

/// The old list to correlate items against, when the list is a map-type list.
pub(super) fn correlate_items<'a>(node: &'a Node, old: Option<&'a Value>) -> Option<OldItems<'a>> {
    if node.list_type != ListType::Map || node.list_map_keys.is_empty() {
        return None;
    }
    Some(OldItems {
        keys: &node.list_map_keys,
        items: old?.as_array()?,
    })
}

/// Validates `v` against `node` at `path`, appending field errors. `old` is the correlated old value on
/// update: an unchanged value is not re-validated (upstream's validation ratcheting).
pub fn validate(node: &Node, v: &Value, old: Option<&Value>, path: &str, errs: &mut Vec<FieldError>) {
    if old == Some(v) {
        return;
    }
    check_type(node, v, path, errs);
    if v.is_null() {
        check_enum(node, v, path, errs);
        return;
    }
    check_compositions(node, v, path, errs);
    if let Value::String(s) = v {
        check_string(node, s, path, errs);
        check_format(node, s, path, errs);
    }
    if let Value::Number(n) = v {
        check_number(node, n, path, errs);
    }
    if let Value::Array(items) = v {
        check_array(node, items, old, path, errs);
    }
    check_enum(node, v, path, errs);
    if let Value::Object(map) = v {
        check_object(node, map, old, path, errs);
    }
}

/// `anyOf`, `oneOf`, `allOf` and `not`, with kube-openapi's messages (the failure of the first alternative
/// is reported with the summary).
fn check_compositions(node: &Node, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if !node.any_of.is_empty() {
        let mut first_failure = None;
        let mut ok = false;
        for alt in &node.any_of {
            let mut sub = Vec::new();
            validate(alt, v, None, path, &mut sub);
            if sub.is_empty() {
                ok = true;
                break;
            }
            first_failure.get_or_insert(sub);
        }
        if !ok {
            errs.push(plain(format!(
                "{} must validate at least one schema (anyOf)",
                quote(path)
            )));
            errs.extend(first_failure.unwrap_or_default());
        }
    }
    if !node.one_of.is_empty() {
        let mut first_failure = None;
        let mut valid = 0;
        for alt in &node.one_of {
            let mut sub = Vec::new();
            validate(alt, v, None, path, &mut sub);
            if sub.is_empty() {
                valid += 1;
            } else if valid == 0 {
                first_failure.get_or_insert(sub);
            }
        }
        if valid != 1 {
            let why = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            errs.push(plain(format!(
                "{} must validate one and only one schema (oneOf). {why}",
                quote(path)
            )));
            if valid == 0 {
                errs.extend(first_failure.unwrap_or_default());
            }
        }
    }
    if !node.all_of.is_empty() {
        let mut valid = 0;
        for alt in &node.all_of {
            let mut sub = Vec::new();
            validate(alt, v, None, path, &mut sub);
            if sub.is_empty() {
                valid += 1;
            }
            errs.extend(sub);
        }
        if valid != node.all_of.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            errs.push(plain(format!(
                "{} must validate all the schemas (allOf){none}",
                quote(path)
            )));
        }
    }
    if let Some(not) = node.not.as_deref() {
        let mut sub = Vec::new();
        validate(not, v, None, path, &mut sub);
        if sub.is_empty() {
            errs.push(plain(format!("{} must not validate the schema (not)", quote(path))));
        }
    }
}
