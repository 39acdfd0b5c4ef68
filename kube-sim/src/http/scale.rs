//! The `scale` subresource of the built-in workloads (`GET`/`PUT`/`PATCH .../{name}/scale`), answering an
//! `autoscaling/v1` `Scale` whose `spec.replicas` is the object's and whose `status.selector` is the object's
//! label selector in string form, as `kubectl scale` and the HorizontalPodAutoscaler read it.

use serde_json::{Value, json};

use crate::error::{ApiError, FieldError};
use crate::kinds::ResourceInfo;
use crate::patch::{self, PatchKind};
use crate::store::{Store, StoredObject};

/// The `Scale` view of a stored workload.
pub fn scale_of(obj: &StoredObject) -> Value {
    let v = &obj.value();
    let meta = &v["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "resourceVersion": obj.rv.to_string(),
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": v["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {
            "replicas": v["status"]["replicas"].as_i64().unwrap_or(0),
            // An unknown operator cannot have passed validation; an empty selector string is the fallback.
            "selector": super::table::format::selector_string(&v["spec"]["selector"]).unwrap_or_default(),
        },
    })
}

/// Reads the workload and answers its `Scale`.
pub fn get(store: &Store, info: &ResourceInfo, ns: Option<&str>, name: &str) -> Result<Value, ApiError> {
    Ok(scale_of(store.get(&info.gvr, ns, name)?.as_ref()))
}

/// Applies the desired `Scale` (a `PUT` body, or the result of a patch): checks it, then writes `spec.replicas`
/// to the workload, guarded by the `Scale`'s resourceVersion when it carries one.
fn write(store: &Store, info: &ResourceInfo, ns: Option<&str>, name: &str, scale: &Value) -> Result<Value, ApiError> {
    let cur = store.get(&info.gvr, ns, name)?;
    let scale_target = crate::error::Target {
        group: "autoscaling",
        plural: &info.gvr.resource,
        kind: "Scale",
        name,
    };
    let replicas = &scale["spec"]["replicas"];
    let replicas = match replicas {
        Value::Null => 0,
        v => v.as_i64().filter(|n| i32::try_from(*n).is_ok()).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal {} into Go struct field ScaleSpec.spec.replicas of type int32",
                crate::store::apps::json_type(v)
            ))
        })?,
    };
    if replicas < 0 {
        return Err(ApiError::invalid(
            scale_target,
            &[FieldError {
                reason: "FieldValueInvalid",
                field: "spec.replicas".into(),
                message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            }],
        ));
    }
    let mut next = cur.value();
    next["spec"]["replicas"] = json!(replicas);
    next["metadata"]["resourceVersion"] = match scale["metadata"]["resourceVersion"].as_str() {
        Some(rv) if !rv.is_empty() => json!(rv),
        _ => json!(cur.rv.to_string()),
    };
    let updated = store.update(&info.gvr, ns, next, None)?;
    Ok(scale_of(&updated))
}

/// `PUT .../scale`.
pub fn update(
    store: &Store,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    write(store, info, ns, name, body)
}

/// `PATCH .../scale`: the patch applies to the current `Scale`.
pub fn patch(
    store: &Store,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    kind: &PatchKind,
    body: &Value,
) -> Result<Value, ApiError> {
    let mut scale = get(store, info, ns, name)?;
    match kind {
        PatchKind::Json => patch::json_patch(&mut scale, body)?,
        // A Scale has no lists, so strategic merge and apply reduce to a merge patch.
        _ => patch::merge_patch(&mut scale, body),
    }
    write(store, info, ns, name, &scale)
}
