//! The `apps/v1` API-server strategy: defaults for Deployments, ReplicaSets, StatefulSets and DaemonSets, the
//! status a new object starts with, and the validation kube-apiserver applies to their selectors and replicas.

use serde_json::{Value, json};

use super::strategy::default_pod;
use crate::error::{ApiError, FieldError};
use crate::kinds::ResourceInfo;

/// Whether `info` is one of the `apps/v1` workload kinds this module handles.
pub(super) fn is_workload(info: &ResourceInfo) -> bool {
    info.gvr.group == "apps"
        && matches!(
            info.gvr.resource.as_str(),
            "deployments" | "replicasets" | "statefulsets" | "daemonsets"
        )
}

fn set_default(obj: &mut Value, key: &str, v: Value) {
    if let Some(m) = obj.as_object_mut()
        && m.get(key).is_none_or(Value::is_null)
    {
        m.insert(key.into(), v);
    }
}

/// Applies the upstream defaults of the kind to `obj` (an object that passed [`validate`]).
pub(super) fn default_workload(info: &ResourceInfo, obj: &mut Value) {
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    match info.gvr.resource.as_str() {
        "deployments" => {
            set_default(spec, "replicas", json!(1));
            set_default(spec, "strategy", json!({"type": "RollingUpdate"}));
            if spec["strategy"]["type"] == "RollingUpdate" {
                let ru = &mut spec["strategy"]["rollingUpdate"];
                if !ru.is_object() {
                    *ru = json!({});
                }
                set_default(ru, "maxUnavailable", json!("25%"));
                set_default(ru, "maxSurge", json!("25%"));
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(spec, "progressDeadlineSeconds", json!(600));
        }
        "replicasets" => set_default(spec, "replicas", json!(1)),
        "statefulsets" => {
            set_default(spec, "replicas", json!(1));
            set_default(spec, "podManagementPolicy", json!("OrderedReady"));
            set_default(spec, "updateStrategy", json!({"type": "RollingUpdate"}));
            if spec["updateStrategy"]["type"] == "RollingUpdate" {
                set_default(&mut spec["updateStrategy"], "rollingUpdate", json!({"partition": 0}));
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(
                spec,
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
        }
        "daemonsets" => {
            set_default(spec, "updateStrategy", json!({"type": "RollingUpdate"}));
            if spec["updateStrategy"]["type"] == "RollingUpdate" {
                let ru = &mut spec["updateStrategy"]["rollingUpdate"];
                if !ru.is_object() {
                    *ru = json!({});
                }
                set_default(ru, "maxUnavailable", json!(1));
                set_default(ru, "maxSurge", json!(0));
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
        }
        _ => {}
    }
    // Go clients send an unset template creation time as `null`; typed decoding drops it, so must we, or the
    // template of a rollback (`kubectl rollout undo`) would differ from its ReplicaSet's.
    if let Some(tmeta) = spec["template"]["metadata"].as_object_mut()
        && tmeta.get("creationTimestamp").is_some_and(Value::is_null)
    {
        tmeta.remove("creationTimestamp");
    }
    if spec["template"]["spec"].is_object() {
        let mut pod = json!({"spec": spec["template"]["spec"].take()});
        default_pod(&mut pod);
        spec["template"]["spec"] = pod["spec"].take();
    }
}

/// The status a new object starts with (the fields upstream's Go types never omit).
pub(super) fn initial_status(info: &ResourceInfo) -> Value {
    match info.gvr.resource.as_str() {
        "replicasets" => json!({"replicas": 0}),
        "statefulsets" => json!({"replicas": 0, "availableReplicas": 0}),
        "daemonsets" => json!({
            "currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0
        }),
        _ => json!({}),
    }
}

/// Go's `%#v` of a `map[string]string`, as kube-apiserver prints template labels in errors.
fn go_string_map(m: &Value) -> String {
    let mut pairs: Vec<(String, String)> = m
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    pairs.sort();
    let body: Vec<String> = pairs.iter().map(|(k, v)| format!("{k:?}:{v:?}")).collect();
    if m.is_null() {
        "map[string]string(nil)".to_string()
    } else {
        format!("map[string]string{{{}}}", body.join(", "))
    }
}

/// How Go's JSON decoder names a value it cannot put into an int32 (`string`, `number 3000000000`, ...).
pub(crate) fn json_type(v: &Value) -> String {
    match v {
        Value::String(_) => "string".into(),
        Value::Bool(_) => "bool".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        other => format!("number {other}"),
    }
}

/// Whether a `LabelSelector` object selects the labels `labels` (an empty selector selects nothing here, as
/// the apps validation requires a non-empty one).
pub(crate) fn selector_matches(selector: &Value, labels: &Value) -> bool {
    let get = |k: &str| labels.get(k).and_then(Value::as_str);
    let labels_ok = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| get(k) == v.as_str());
    let exprs_ok = selector["matchExpressions"].as_array().into_iter().flatten().all(|e| {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match e["operator"].as_str().unwrap_or_default() {
            "In" => get(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => get(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => get(key).is_some(),
            "DoesNotExist" => get(key).is_none(),
            _ => false,
        }
    });
    labels_ok && exprs_ok
}

fn selector_is_empty(selector: &Value) -> bool {
    selector["matchLabels"].as_object().is_none_or(|m| m.is_empty())
        && selector["matchExpressions"].as_array().is_none_or(|a| a.is_empty())
}

/// kube-apiserver's validation of a workload's selector, template labels and replicas.
pub(super) fn validate(info: &ResourceInfo, name: &str, obj: &Value) -> Result<(), ApiError> {
    let spec = &obj["spec"];
    let mut causes = Vec::new();
    let selector = &spec["selector"];
    if selector.is_null() {
        causes.push(FieldError {
            reason: "FieldValueRequired",
            field: "spec.selector".into(),
            message: "Required value".into(),
        });
    } else if selector_is_empty(selector) {
        causes.push(FieldError::invalid(
            "spec.selector",
            &selector.to_string(),
            "empty selector is invalid for deployment",
        ));
    } else {
        let labels = &spec["template"]["metadata"]["labels"];
        if !selector_matches(selector, labels) {
            causes.push(FieldError {
                reason: "FieldValueInvalid",
                field: "spec.template.metadata.labels".into(),
                message: format!(
                    "Invalid value: {}: `selector` does not match template `labels`",
                    go_string_map(labels)
                ),
            });
        }
    }
    for field in [
        "replicas",
        "minReadySeconds",
        "revisionHistoryLimit",
        "progressDeadlineSeconds",
    ] {
        let v = &spec[field];
        if v.is_null() {
            continue;
        }
        if v.as_i64().is_none_or(|n| i32::try_from(n).is_err()) {
            let found = json_type(v);
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"v1\" cannot be handled as a {kind}: json: cannot unmarshal {found} into Go struct field {kind}Spec.spec.{field} of type int32",
                kind = info.kind
            )));
        }
    }
    if let Some(r) = spec["replicas"].as_i64()
        && r < 0
    {
        causes.push(FieldError {
            reason: "FieldValueInvalid",
            field: "spec.replicas".into(),
            message: format!("Invalid value: {r}: must be greater than or equal to 0"),
        });
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(info.target(name), &causes))
    }
}

/// The update rule: `spec.selector` is immutable in `apps/v1`.
pub(super) fn validate_update(info: &ResourceInfo, name: &str, old: &Value, new: &mut Value) -> Result<(), ApiError> {
    if new["spec"]["selector"].is_null() {
        new["spec"]["selector"] = old["spec"]["selector"].clone();
    }
    if old["spec"]["selector"] != new["spec"]["selector"] {
        return Err(ApiError::invalid(
            info.target(name),
            &[FieldError::invalid(
                "spec.selector",
                &new["spec"]["selector"].to_string(),
                "field is immutable",
            )],
        ));
    }
    validate(info, name, new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_objects_match_labels() {
        let labels = json!({"app": "web", "tier": "front"});
        assert!(selector_matches(&json!({"matchLabels": {"app": "web"}}), &labels));
        assert!(!selector_matches(&json!({"matchLabels": {"app": "db"}}), &labels));
        let exprs = json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]});
        assert!(selector_matches(&exprs, &labels));
        let missing = json!({"matchExpressions": [{"key": "zone", "operator": "Exists"}]});
        assert!(!selector_matches(&missing, &labels));
    }

    #[test]
    fn replicas_beyond_int32_are_undecodable() {
        let info = crate::kinds::builtin_resources()
            .into_iter()
            .find(|r| r.gvr.resource == "deployments")
            .unwrap();
        let d = json!({"spec": {"replicas": 3_000_000_000_i64, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}}}});
        let e = validate(&info, "d", &d).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
    }

    #[test]
    fn template_labels_print_as_go_maps() {
        assert_eq!(
            go_string_map(&json!({"b": "2", "a": "1"})),
            r#"map[string]string{"a":"1", "b":"2"}"#
        );
        assert_eq!(go_string_map(&Value::Null), "map[string]string(nil)");
    }
}
