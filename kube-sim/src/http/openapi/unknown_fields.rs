//! Unknown fields of built-in objects, found by walking an object against the published schema of its kind, as
//! kube-apiserver's strict decoder finds the fields its Go types do not have.

use std::sync::LazyLock;

use k8s_openapi::schemars::SchemaGenerator;
use serde_json::{Map, Value};

use super::{Dialect, builtin};

/// The definitions of every built-in kind kube-sim knows, generated once per process.
static DEFINITIONS: LazyLock<Map<String, Value>> = LazyLock::new(|| {
    let mut generator: SchemaGenerator = Dialect::V2.generator();
    for kind in builtin::all() {
        (kind.generate)(&mut generator);
    }
    generator.take_definitions(true)
});

/// Follows `$ref`s (`#/definitions/NAME`) to the schema they name.
fn resolve(mut schema: &Value) -> &Value {
    for _ in 0..16 {
        match schema["$ref"].as_str() {
            Some(r) => match DEFINITIONS.get(r.rsplit('/').next().unwrap_or_default()) {
                Some(s) => schema = s,
                None => return &Value::Null,
            },
            None => break,
        }
    }
    schema
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(schema: &Value, value: &mut Value, path: &str, prune: bool, found: &mut Vec<String>) {
    let schema = resolve(schema);
    if schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true) {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = schema["properties"].as_object();
            let additional = Some(&schema["additionalProperties"]).filter(|a| a.is_object());
            if properties.is_none() && additional.is_none() {
                // A free-form object (RawExtension, JSON): anything goes.
                return;
            }
            let mut unknown = Vec::new();
            for (key, v) in map.iter_mut() {
                // Strategic merge patch directives (`$patch`, `$setElementOrder/...`) are not fields.
                if key.starts_with('$') {
                    continue;
                }
                let path = child(path, key);
                match properties.and_then(|p| p.get(key)).or(additional) {
                    Some(s) => walk(s, v, &path, prune, found),
                    None => {
                        found.push(path);
                        unknown.push(key.clone());
                    }
                }
            }
            if prune && !unknown.is_empty() {
                map.retain(|k, _| !unknown.contains(k));
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, v) in items.iter_mut().enumerate() {
                    walk(item, v, &format!("{path}[{i}]"), prune, found);
                }
            }
        }
        _ => {}
    }
}

/// The paths of the fields of `value` (an object of the built-in kind `group/version/kind`, or a patch of one)
/// that its schema does not have (`spec.containers[0].imagePullPolicyy`), removed from `value` when `prune`.
/// `None` when kube-sim has no schema for the kind.
pub(in crate::http) fn unknown_fields(
    group: &str,
    version: &str,
    kind: &str,
    value: &mut Value,
    prune: bool,
) -> Option<Vec<String>> {
    let builtin = builtin::find(group, version, kind)?;
    let schema = DEFINITIONS.get((builtin.definition)().as_ref())?;
    let mut found = Vec::new();
    walk(schema, value, "", prune, &mut found);
    Some(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn finds_unknown_fields_at_every_depth_and_prunes_them() {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod", "bogus": 1,
            "metadata": {"name": "p", "labels": {"any": "label"}, "annotationz": {}},
            "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicyy": "Always",
                     "resources": {"limits": {"cpu": "1"}}}],
                     "$setElementOrder/containers": [{"name": "c"}]}
        });
        let found = unknown_fields("", "v1", "Pod", &mut pod, true).unwrap();
        assert_eq!(
            found,
            ["bogus", "metadata.annotationz", "spec.containers[0].imagePullPolicyy"]
        );
        assert_eq!(
            pod,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "labels": {"any": "label"}},
                "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}}],
                         "$setElementOrder/containers": [{"name": "c"}]}
            })
        );
    }

    #[test]
    fn known_objects_free_form_fields_and_unknown_kinds_pass() {
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}});
        assert_eq!(
            unknown_fields("", "v1", "ConfigMap", &mut cm, false).unwrap(),
            Vec::<String>::new()
        );
        let mut crd = json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}});
        let found = unknown_fields(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            &mut crd,
            false,
        );
        assert_eq!(found.unwrap(), Vec::<String>::new());
        assert!(unknown_fields("ray.io", "v1", "RayCluster", &mut json!({"x": 1}), false).is_none());
    }
}
