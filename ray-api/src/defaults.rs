//! Applying a CRD's schema defaults to an object, as the API server does when it stores one.
//!
//! KubeRay's rules run on what the server stored: a worker group without `minReplicas` has
//! `minReplicas: 0` by then. Tools that work on manifests directly (`kuberay-operator render`) apply
//! the same defaults first, from our generated CRD, so the CRD stays the one source of them.

use serde_json::Value;

/// Fills every absent property that has a `default` in `schema` (an `openAPIV3Schema`), recursing
/// into objects, arrays and maps that are present. Present values, even wrong ones, are left alone.
pub fn apply_schema_defaults(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (key, property) in properties {
                    if !map.contains_key(key)
                        && let Some(default) = property.get("default")
                    {
                        map.insert(key.clone(), default.clone());
                    }
                    if let Some(child) = map.get_mut(key) {
                        apply_schema_defaults(child, property);
                    }
                }
            }
            if let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                let known = schema.get("properties").and_then(Value::as_object);
                for (key, child) in map.iter_mut() {
                    if !known.is_some_and(|k| k.contains_key(key)) {
                        apply_schema_defaults(child, values);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                items
                    .iter_mut()
                    .for_each(|item| apply_schema_defaults(item, item_schema));
            }
        }
        _ => {}
    }
}

/// The `openAPIV3Schema` of a generated CRD (its first version) as JSON, for [`apply_schema_defaults`].
pub fn crd_schema(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> Value {
    crd.spec
        .versions
        .first()
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_absent_fields_in_nested_arrays_only() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "groups": {"type": "array", "items": {"type": "object", "properties": {
                "minReplicas": {"type": "integer", "default": 0},
                "numOfHosts": {"type": "integer", "default": 1}
            }}}
        }}}});
        let mut value = json!({"spec": {"groups": [{"numOfHosts": 4}, {}]}});
        apply_schema_defaults(&mut value, &schema);
        assert_eq!(
            value,
            json!({"spec": {"groups": [{"numOfHosts": 4, "minReplicas": 0}, {"minReplicas": 0, "numOfHosts": 1}]}})
        );
    }

    #[test]
    fn worker_group_defaults_come_from_the_generated_crd() {
        let crd = crate::crds::all_crds().into_iter().next().unwrap();
        let schema = crd_schema(&crd);
        let mut value = json!({"spec": {"workerGroupSpecs": [{"groupName": "g"}]}});
        apply_schema_defaults(&mut value, &schema);
        let group = &value["spec"]["workerGroupSpecs"][0];
        assert_eq!(group["minReplicas"], 0);
        assert_eq!(group["maxReplicas"], 2147483647);
        assert_eq!(group["numOfHosts"], 1);
    }
}
