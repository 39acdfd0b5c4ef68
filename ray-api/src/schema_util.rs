//! Pieces of the generated CRD schemas that KubeRay's CRD has and derive attributes cannot
//! express directly (CEL rules, `required` lists for fields that are `Option` in Rust).

use serde_json::{Value, json};

use crate::constants::{KUBERAY_CONTROLLER, MULTIKUEUE_CONTROLLER};

/// CEL rules of every `managedBy` field: immutable, and one of the two known controllers.
pub(crate) fn managed_by_validations() -> Value {
    json!([
        {"message": "the managedBy field is immutable", "rule": "self == oldSelf"},
        {
            "message": format!("the managedBy field value must be either '{KUBERAY_CONTROLLER}' or '{MULTIKUEUE_CONTROLLER}'"),
            "rule": format!("self in ['{KUBERAY_CONTROLLER}', '{MULTIKUEUE_CONTROLLER}']"),
        }
    ])
}

/// A CEL rule making a field immutable.
pub(crate) fn immutable_validation(message: &str) -> Value {
    json!([{"message": message, "rule": "self == oldSelf"}])
}

/// CEL rules of `spec.deletionStrategy`.
pub(crate) fn deletion_strategy_validations() -> Value {
    json!([
        {
            "message": "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same deletionStrategy",
            "rule": "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))"
        },
        {
            "message": "deletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)",
            "rule": "((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))"
        }
    ])
}

/// CEL rules of a deletion rule's `condition`.
pub(crate) fn deletion_condition_validations() -> Value {
    json!([
        {
            "message": "JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition.",
            "rule": "!(has(self.jobStatus) && has(self.jobDeploymentStatus))"
        },
        {
            "message": "the deletion condition requires either the JobStatus or the JobDeploymentStatus field.",
            "rule": "has(self.jobStatus) || has(self.jobDeploymentStatus)"
        }
    ])
}

/// Adds names to a schema's `required` list (keeping it sorted and free of duplicates).
fn add_required(schema: &mut schemars::Schema, names: &[&str]) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let mut required: Vec<String> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    for name in names {
        if !required.iter().any(|r| r == name) {
            required.push((*name).to_string());
        }
    }
    required.sort();
    object.insert("required".to_string(), json!(required));
}

/// `minReplicas`/`maxReplicas` are `Option` in Rust (Go pointers, validated for nil) but required
/// in KubeRay's CRD, where the API server's defaulting fills them first.
pub(crate) fn require_min_max_replicas(schema: &mut schemars::Schema) {
    add_required(schema, &["minReplicas", "maxReplicas"]);
}

/// `stepSizePercent`/`intervalSeconds` are pointers in Go but required in KubeRay's CRD.
pub(crate) fn require_cluster_upgrade_options(schema: &mut schemars::Schema) {
    add_required(schema, &["stepSizePercent", "intervalSeconds"]);
}
