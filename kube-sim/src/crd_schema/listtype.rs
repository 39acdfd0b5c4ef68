//! The `x-kubernetes-list-type` invariants: a `set` holds each scalar once, a `map` holds each combination of
//! its `x-kubernetes-list-map-keys` once (`spec.x[2]: Duplicate value: "a"`).

use serde_json::{Map, Value};

use super::go_fmt::bad_value;
use super::schema::{ListType, Node};
use crate::error::FieldError;

fn duplicate(path: String, value: &Value) -> FieldError {
    FieldError {
        reason: "FieldValueDuplicate",
        field: path,
        message: format!("Duplicate value: {}", bad_value(value)),
    }
}

fn check_set(items: &[Value], path: &str, errs: &mut Vec<FieldError>) {
    let mut reported: Vec<&Value> = Vec::new();
    for (i, x) in items.iter().enumerate() {
        if items[..i].contains(x) && !reported.contains(&x) {
            reported.push(x);
            errs.push(duplicate(format!("{path}[{i}]"), x));
        }
    }
}

fn check_map(node: &Node, items: &[Value], path: &str, errs: &mut Vec<FieldError>) {
    let mut seen: Vec<Vec<Option<&Value>>> = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let Some(obj) = x.as_object() else {
            errs.push(FieldError::invalid(
                format!("{path}[{i}]"),
                "",
                "must be an object for an array of list-type map",
            ));
            continue;
        };
        let key: Vec<Option<&Value>> = node
            .list_map_keys
            .iter()
            .map(|k| {
                obj.get(k)
                    .or_else(|| node.items.as_deref()?.properties.get(k)?.default.as_ref())
            })
            .collect();
        if seen.contains(&key) {
            let shown: Map<String, Value> = node
                .list_map_keys
                .iter()
                .zip(&key)
                .filter_map(|(k, v)| Some((k.clone(), (*v)?.clone())))
                .collect();
            errs.push(duplicate(format!("{path}[{i}]"), &Value::Object(shown)));
        } else {
            seen.push(key);
        }
    }
}

/// Checks the list-type invariants of `v` and everything below it.
pub fn validate(node: &Node, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    match v {
        Value::Array(items) => {
            match node.list_type {
                ListType::Set => check_set(items, path, errs),
                ListType::Map => check_map(node, items, path, errs),
                ListType::Atomic => {}
            }
            if let Some(item) = node.items.as_deref() {
                for (i, x) in items.iter().enumerate() {
                    validate(item, x, &format!("{path}[{i}]"), errs);
                }
            }
        }
        Value::Object(map) => {
            for (k, x) in map {
                if let Some(child) = node.properties.get(k) {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    validate(child, x, &p, errs);
                } else if let Some(extra) = node.additional_properties.as_deref() {
                    validate(extra, x, &format!("{path}[{k}]"), errs);
                }
            }
        }
        _ => {}
    }
}
