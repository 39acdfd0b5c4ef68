//! `x-kubernetes-embedded-resource` objects must name their `apiVersion` and `kind`, as kube-apiserver checks
//! after schema validation (`spec.template.kind: Required value: must not be empty`).

use serde_json::Value;

use super::go_fmt::bad_value;
use super::schema::Node;
use crate::error::FieldError;

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn check_type_meta(map: &serde_json::Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    for key in ["apiVersion", "kind"] {
        let field = child(path, key);
        match map.get(key) {
            None => errs.push(FieldError::required(field, "must not be empty")),
            Some(Value::String(s)) if s.is_empty() => {
                errs.push(FieldError::invalid(field, s, "must not be empty"));
            }
            Some(Value::String(_)) => {}
            Some(other) => errs.push(FieldError {
                reason: "FieldValueInvalid",
                field,
                message: format!("Invalid value: {}: must be a string", bad_value(other)),
            }),
        }
    }
}

/// Checks every embedded resource at and below `node`.
pub fn validate(node: &Node, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if !node.has_embedded_below {
        return;
    }
    match v {
        Value::Object(map) => {
            if node.embedded_resource {
                check_type_meta(map, path, errs);
            }
            for (k, x) in map {
                if let Some(c) = node.properties.get(k) {
                    validate(c, x, &child(path, k), errs);
                } else if let Some(extra) = node.additional_properties.as_deref() {
                    validate(extra, x, &format!("{path}[{k}]"), errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.items.as_deref() {
                for (i, x) in items.iter().enumerate() {
                    validate(item, x, &format!("{path}[{i}]"), errs);
                }
            }
        }
        _ => {}
    }
}
