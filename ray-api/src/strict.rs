//! Strict reading of input a person typed: unknown fields are errors, reported by their full path,
//! instead of being dropped silently the way the API server prunes them.
//!
//! Two checks, for two purposes:
//! - [`unknown_fields`] compares a document with a CRD's schema, as the API server's strict field
//!   validation (`kubectl apply --validate=strict`) does. The CLI's `render` uses it: it needs no
//!   deserializer of its own, only the schema `render` already has for defaulting.
//! - [`from_value_strict`] deserializes with every field the Rust types do not keep reported, which is
//!   what proves that the types read a manifest without losing a field (the tests over KubeRay's samples).
//!
//! The normal `Deserialize` impls stay lenient, as a controller must be: the API server has already
//! pruned what the schema does not know, and a newer CRD may carry fields this version does not.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a strict parse failed.
#[derive(Debug, thiserror::Error)]
pub enum StrictParseError {
    /// The document names fields the type does not have; each entry is a full path such as
    /// `spec.workerGroupSpecs[0].replica`.
    #[error("{}", unknown_field_lines(.0))]
    UnknownFields(Vec<String>),
    /// The document does not fit the type (wrong type, missing required field, ...).
    #[error("{0}")]
    Invalid(#[from] serde_json::Error),
}

/// Root fields every resource has but kube's derived types do not store as fields.
const ROOT_TYPE_META: [&str; 2] = ["apiVersion", "kind"];

/// The message of a document's unknown fields: `a.b: unknown field; c: unknown field`.
pub fn unknown_field_lines(paths: &[String]) -> String {
    paths
        .iter()
        .map(|p| format!("{p}: unknown field"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Deserialises `value` into `T`, failing on any field `T` does not define.
///
/// Known limit: objects embedded through [`crate::Embedded`] (`headService`, `serveService`) are read
/// leniently inside, as the Kubernetes `Service` type they hold is.
pub fn from_value_strict<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, StrictParseError> {
    let mut unknown = Vec::new();
    let parsed: T = serde_ignored::deserialize(value, |path| {
        let path = json_path(&path);
        // kube's derived resources check the type meta separately and skip it while reading.
        if !ROOT_TYPE_META.contains(&path.as_str()) {
            unknown.push(path);
        }
    })?;
    if unknown.is_empty() {
        Ok(parsed)
    } else {
        Err(StrictParseError::UnknownFields(unknown))
    }
}

/// The paths (`spec.workerGroupSpecs[0].replica`) of the fields of `document` that `schema` (a CRD's
/// `openAPIV3Schema`) does not know, in document order.
///
/// As the API server: an object whose schema lists `properties` may hold only those (and, with
/// `additionalProperties`, any key, checked against that schema); one that preserves unknown fields or
/// lists no properties is not checked; the root's `metadata` may hold the fields of an `ObjectMeta`.
pub fn unknown_fields(document: &Value, schema: &Value) -> Vec<String> {
    let mut unknown = Vec::new();
    walk("", document, schema, &mut unknown);
    unknown
}

/// The fields of the root `metadata` that are not `ObjectMeta`'s (the CRD's schema describes the root
/// metadata as a bare object; the API server checks it as `ObjectMeta`).
fn unknown_metadata_fields(metadata: &Value, unknown: &mut Vec<String>) {
    // Generated once: `render` checks every document of its input.
    static OBJECT_META: std::sync::LazyLock<schemars::Schema> =
        std::sync::LazyLock::new(|| schemars::schema_for!(ObjectMeta));
    let Value::Object(fields) = metadata else { return };
    let known = OBJECT_META.get("properties").and_then(Value::as_object);
    for key in fields.keys() {
        if known.is_some_and(|known| !known.contains_key(key)) {
            unknown.push(format!("metadata.{key}"));
        }
    }
}

/// Checks `value` at `path` against `schema`.
fn walk(path: &str, value: &Value, schema: &Value, unknown: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            let preserves = schema
                .get("x-kubernetes-preserve-unknown-fields")
                .and_then(Value::as_bool)
                == Some(true);
            let properties = schema.get("properties").and_then(Value::as_object);
            let values = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, child) in fields {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if path.is_empty() {
                    // The root's type meta is checked by kind, its metadata as `ObjectMeta`.
                    if ROOT_TYPE_META.contains(&key.as_str()) {
                        continue;
                    }
                    if key == "metadata" {
                        unknown_metadata_fields(child, unknown);
                        continue;
                    }
                }
                match (properties.and_then(|p| p.get(key)), values) {
                    (Some(property), _) => walk(&child_path, child, property, unknown),
                    (None, Some(values)) => walk(&child_path, child, values, unknown),
                    (None, None) if properties.is_some() && !preserves => unknown.push(child_path),
                    (None, None) => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    walk(&format!("{path}[{index}]"), item, item_schema, unknown);
                }
            }
        }
        _ => {}
    }
}

/// Formats a serde path the way our validation errors name fields: `a.b[2].c`.
fn json_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", json_path(parent)),
        Path::Map { parent, key } => {
            let parent = json_path(parent);
            if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            }
        }
        Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => json_path(parent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RayCluster;

    fn cluster_with_worker(worker: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"},
            "spec": {
                "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}},
                "workerGroupSpecs": [worker]
            }
        })
    }

    #[test]
    fn unknown_field_is_reported_by_its_full_path() {
        let doc = cluster_with_worker(serde_json::json!({"groupName": "g", "replica": 3,
            "template": {"spec": {"containers": [{"name": "w", "image": "i", "imagePullPolice": "Always"}]}}}));
        let err = from_value_strict::<RayCluster>(doc.clone()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.workerGroupSpecs[0].replica: unknown field; \
             spec.workerGroupSpecs[0].template.spec.containers[0].imagePullPolice: unknown field"
        );
        // The ordinary deserializer ignores both, as the API server prunes them.
        let lenient: RayCluster = serde_json::from_value(doc).unwrap();
        assert_eq!(lenient.spec.worker_group_specs.unwrap()[0].replicas, None);
    }

    /// The RayCluster CRD's schema, generated once for the tests that share it.
    fn cluster_schema() -> &'static Value {
        static SCHEMA: std::sync::LazyLock<Value> =
            std::sync::LazyLock::new(|| crate::defaults::crd_schema(&crate::crds::all_crds()[0]));
        &SCHEMA
    }

    #[test]
    fn the_schema_check_names_unknown_fields_by_path() {
        let doc = cluster_with_worker(
            serde_json::json!({"groupName": "g", "replica": 3, "rayStartParams": {"num-cpus": "1"},
            "template": {"metadata": {"labelz": {}}, "spec": {"containers": [{"name": "w", "image": "i", "imagePullPolice": "Always"}]}}}),
        );
        let mut doc = doc;
        doc["metadata"]["nmae"] = serde_json::json!("typo");
        doc["spec"]["headGroupSpec"]["rayStartParams"] = serde_json::json!({"dashboard-host": "0.0.0.0"});
        assert_eq!(
            unknown_fields(&doc, cluster_schema()),
            [
                "metadata.nmae",
                "spec.workerGroupSpecs[0].replica",
                "spec.workerGroupSpecs[0].template.metadata.labelz",
                "spec.workerGroupSpecs[0].template.spec.containers[0].imagePullPolice",
            ]
        );
        // What the types would report, the schema reports too (it is generated from them).
        let typed = match from_value_strict::<RayCluster>(doc).unwrap_err() {
            StrictParseError::UnknownFields(paths) => paths,
            other => panic!("{other}"),
        };
        assert_eq!(typed.len(), 4, "{typed:?}");
    }

    #[test]
    fn the_schema_check_accepts_a_known_document() {
        let doc = cluster_with_worker(serde_json::json!({"groupName": "g", "replicas": 3,
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "w", "image": "i"}]}}}));
        assert_eq!(unknown_fields(&doc, cluster_schema()), Vec::<String>::new());
    }

    #[test]
    fn a_known_document_parses_strictly() {
        let doc = cluster_with_worker(serde_json::json!({"groupName": "g", "replicas": 3,
            "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}}));
        let cluster: RayCluster = from_value_strict(doc).unwrap();
        assert_eq!(cluster.spec.worker_group_specs.unwrap()[0].replicas, Some(3));
    }

    #[test]
    fn type_errors_are_not_reported_as_unknown_fields() {
        let doc = cluster_with_worker(serde_json::json!({"groupName": 7}));
        assert!(matches!(
            from_value_strict::<RayCluster>(doc),
            Err(StrictParseError::Invalid(_))
        ));
    }
}
