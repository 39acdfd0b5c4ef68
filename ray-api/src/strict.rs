//! Strict parsing for input a person typed (the CLI's `render`): unknown fields are errors, reported
//! by their full path, instead of being dropped silently the way the API server prunes them.
//!
//! The normal `Deserialize` impls stay lenient, as a controller must be: the API server has already
//! pruned what the schema does not know, and a newer CRD may carry fields this version does not.

use serde::de::DeserializeOwned;

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

fn unknown_field_lines(paths: &[String]) -> String {
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
