//! Patch application: JSON merge patch (RFC 7386), JSON patch (RFC 6902, with Kubernetes' null-`test` quirk) and
//! strategic merge patch for built-in kinds (merge keys of the core kinds, `$patch` directives).

use serde_json::{Map, Value};

use crate::error::ApiError;

/// Maximum number of operations in one JSON patch (upstream limit).
const MAX_JSON_PATCH_OPS: usize = 10_000;

/// The kind of patch document, from the request's `Content-Type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json`
    Merge,
    /// `application/json-patch+json`
    Json,
    /// `application/strategic-merge-patch+json` (built-in kinds only)
    Strategic,
    /// `application/apply-patch+yaml` (simplified server-side apply)
    Apply {
        /// The `fieldManager` query parameter (required).
        field_manager: Option<String>,
        /// The `force` query parameter.
        force: bool,
    },
}

impl PatchKind {
    /// Maps a `Content-Type` (parameters ignored) to a patch kind.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or_default().trim() {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(Self::Apply {
                field_manager: None,
                force: false,
            }),
            _ => None,
        }
    }
}

/// Applies an RFC 7386 merge patch.
pub fn merge_patch(doc: &mut Value, patch: &Value) {
    json_patch::merge(doc, patch);
}

/// Applies an RFC 6902 JSON patch with kube-apiserver's leniencies (its JSON patch library, evanphx/json-patch
/// v4): a `test` whose value is `null` succeeds when the path is missing but its parent exists (kube-runtime's
/// `finalizer()` relies on it), and a `replace` of a missing member of an existing object adds it (Ray's
/// autoscaler replaces `/spec/workerGroupSpecs/<i>/scaleStrategy` on clusters that never had one). A
/// `replace` at a missing array index still fails.
pub fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let ops = patch
        .as_array()
        .ok_or_else(|| ApiError::bad_request("json patch must be an array"))?;
    if ops.len() > MAX_JSON_PATCH_OPS {
        return Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!(
                "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPS}, got {}",
                ops.len()
            ),
        ));
    }
    for op in ops {
        if op["op"] == "test" && op.get("value").is_some_and(Value::is_null) {
            let path = op["path"].as_str().unwrap_or_default();
            if doc.pointer(path).is_none() {
                let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
                if doc.pointer(parent).is_some() {
                    continue;
                }
                return Err(ApiError::patch_failed());
            }
        }
        let mut op = op.clone();
        if op["op"] == "replace" {
            let path = op["path"].as_str().unwrap_or_default();
            let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
            if doc.pointer(path).is_none() && doc.pointer(parent).is_some_and(Value::is_object) {
                op["op"] = Value::from("add");
            }
        }
        let parsed: json_patch::PatchOperation =
            serde_json::from_value(op).map_err(|e| ApiError::bad_request(format!("invalid json patch: {e}")))?;
        json_patch::patch(doc, std::slice::from_ref(&parsed)).map_err(|_| ApiError::patch_failed())?;
    }
    Ok(())
}

/// The strategic-merge key of a list field, `None` when the list is replaced wholesale.
fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims"
        | "readinessGates" => {
            if field == "readinessGates" {
                Some("conditionType")
            } else {
                Some("name")
            }
        }
        "volumeMounts" => Some("mountPath"),
        "volumeDevices" => Some("devicePath"),
        "ports" => {
            if items.iter().any(|i| i.get("containerPort").is_some()) {
                Some("containerPort")
            } else {
                Some("port")
            }
        }
        "ownerReferences" => Some("uid"),
        "conditions" => Some("type"),
        "hostAliases" => Some("ip"),
        "topologySpreadConstraints" => Some("topologyKey"),
        _ => None,
    }
}

/// Primitive lists that strategic merge treats as sets (`patchStrategy: merge` on a list of scalars).
fn is_primitive_merge_list(field: &str) -> bool {
    field == "finalizers"
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .filter(|i| i.get(DIRECTIVE).is_none() || i.as_object().is_some_and(|o| o.len() > 1))
                .map(strip_directives)
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Applies a strategic merge patch with the merge-key table of the built-in kinds.
pub fn strategic_merge(doc: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let Value::Object(pm) = patch else {
        return Err(ApiError::bad_request("strategic merge patch must be an object"));
    };
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    merge_map(doc, pm)
}

fn merge_map(doc: &mut Value, pm: &Map<String, Value>) -> Result<(), ApiError> {
    match pm.get(DIRECTIVE).and_then(Value::as_str) {
        Some("replace") => {
            *doc = strip_directives(&Value::Object(pm.clone()));
            return Ok(());
        }
        Some("delete") => {
            *doc = Value::Null;
            return Ok(());
        }
        _ => {}
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let Value::Object(dm) = doc else { return Ok(()) };
    if let Some(retain) = pm.get(RETAIN_KEYS).and_then(Value::as_array) {
        let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
        dm.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (k, pv) in pm {
        if let Some(field) = k.strip_prefix(DELETE_FROM_PRIMITIVE) {
            if let (Some(Value::Array(list)), Some(del)) = (dm.get_mut(field), pv.as_array()) {
                list.retain(|x| !del.contains(x));
            }
            continue;
        }
        if k.starts_with('$') || k.starts_with(SET_ELEMENT_ORDER) {
            continue;
        }
        match pv {
            Value::Null => {
                dm.remove(k);
            }
            Value::Object(inner) => {
                let slot = dm.entry(k.clone()).or_insert(Value::Null);
                merge_map(slot, inner)?;
                if slot.is_null() {
                    dm.remove(k);
                }
            }
            Value::Array(items) => {
                let merged = merge_list(k, dm.get(k), items)?;
                dm.insert(k.clone(), merged);
            }
            scalar => {
                dm.insert(k.clone(), scalar.clone());
            }
        }
    }
    Ok(())
}

fn merge_list(field: &str, current: Option<&Value>, items: &[Value]) -> Result<Value, ApiError> {
    if items
        .iter()
        .any(|i| i.get(DIRECTIVE).and_then(Value::as_str) == Some("replace"))
    {
        return Ok(strip_directives(&Value::Array(
            items.iter().filter(|i| i.get(DIRECTIVE).is_none()).cloned().collect(),
        )));
    }
    let cur: Vec<Value> = current.and_then(Value::as_array).cloned().unwrap_or_default();
    if is_primitive_merge_list(field) {
        let mut out = cur;
        for i in items {
            if !out.contains(i) {
                out.push(i.clone());
            }
        }
        return Ok(Value::Array(out));
    }
    let Some(key) = merge_key(field, items).filter(|_| items.iter().all(Value::is_object)) else {
        return Ok(strip_directives(&Value::Array(items.to_vec())));
    };
    let mut out = cur;
    for item in items {
        let Some(id) = item.get(key) else {
            return Err(ApiError::bad_request(format!(
                "map: {item} does not contain declared merge key: {key}"
            )));
        };
        let pos = out.iter().position(|x| x.get(key) == Some(id));
        let is_delete = item.get(DIRECTIVE).and_then(Value::as_str) == Some("delete");
        match (pos, is_delete) {
            (Some(p), true) => {
                out.remove(p);
            }
            (None, true) => {}
            (Some(p), false) => {
                if let Value::Object(pm) = item {
                    merge_map(&mut out[p], pm)?;
                }
            }
            (None, false) => out.push(strip_directives(item)),
        }
    }
    Ok(Value::Array(out))
}

/// Parses an apply body: JSON first, then YAML.
pub fn parse_apply_body(body: &[u8]) -> Result<Value, ApiError> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("apply body is not UTF-8"))?;
    serde_saphyr::from_str::<Value>(text).map_err(|e| ApiError::bad_request(format!("invalid apply body: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_test_on_missing_path_succeeds() {
        let mut doc = json!({"metadata": {"name": "a"}});
        let p = json!([{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["x/y"]}]);
        json_patch(&mut doc, &p).unwrap();
        assert_eq!(doc["metadata"]["finalizers"], json!(["x/y"]));
    }

    #[test]
    fn replace_of_a_missing_object_member_adds_it_but_a_missing_index_fails() {
        let mut doc = json!({"spec": {"workerGroupSpecs": [{"replicas": 3}]}});
        let p = json!([{"op":"replace","path":"/spec/workerGroupSpecs/0/scaleStrategy","value":{"workersToDelete":["w"]}},
                       {"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":0}]);
        json_patch(&mut doc, &p).unwrap();
        assert_eq!(
            doc,
            json!({"spec": {"workerGroupSpecs": [{"replicas": 0, "scaleStrategy": {"workersToDelete": ["w"]}}]}})
        );
        let p = json!([{"op":"replace","path":"/spec/workerGroupSpecs/1","value":{}}]);
        assert_eq!(json_patch(&mut doc, &p).unwrap_err().code, 422);
        let p = json!([{"op":"replace","path":"/spec/missing/x","value":1}]);
        assert_eq!(json_patch(&mut doc, &p).unwrap_err().code, 422);
    }

    #[test]
    fn failed_test_is_invalid() {
        let mut doc = json!({"metadata": {"finalizers": ["a"]}});
        let p = json!([{"op":"test","path":"/metadata/finalizers/0","value":"b"}]);
        assert_eq!(json_patch(&mut doc, &p).unwrap_err().code, 422);
    }

    #[test]
    fn strategic_merges_by_key_and_unions_finalizers() {
        let mut doc = json!({"metadata":{"finalizers":["b"]},"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"1"}]}});
        let p = json!({"metadata":{"finalizers":["a"]},"spec":{"containers":[{"name":"b","image":"2"},{"name":"c","image":"3"},{"name":"a","$patch":"delete"}]}});
        strategic_merge(&mut doc, &p).unwrap();
        assert_eq!(doc["metadata"]["finalizers"], json!(["b", "a"]));
        assert_eq!(
            doc["spec"]["containers"],
            json!([{"name":"b","image":"2"},{"name":"c","image":"3"}])
        );
    }
}
