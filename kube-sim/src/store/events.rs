//! One storage for Events, served as core `v1` and as `events.k8s.io/v1`.
//!
//! A real API server keeps a single Event storage (in its internal version, which has core v1's field names) and
//! converts on the way in and out of `events.k8s.io/v1` (k8s.io/kubernetes `pkg/apis/events/v1` conversion), so an
//! event written by kube's `Recorder` (events.k8s.io) shows in `kubectl get events` and `kubectl describe`
//! (core v1), and the other way round. The store does the same: Events live in the core `v1` `events` storage;
//! the [`crate::store::Store`] methods translate every events.k8s.io/v1 request (object bodies, patches, field
//! selectors) into core terms, run the core pipeline, and present what comes back (objects, list items, watch
//! events, errors) as events.k8s.io/v1.
//!
//! The conversion renames a handful of top-level fields ([`RENAMED_FIELDS`]) and keeps the rest, which have the
//! same names and shapes in both versions (`eventTime`, `series`, `action`, `reason`, `related`, `type`,
//! `reportingInstance`). Like upstream it does not derive one field from another: `series.count` is not copied to
//! `count` (`kubectl describe` reads `series` itself) and `reportingController` is not copied to `source.component`.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::StoredObject;
use crate::error::ApiError;
use crate::kinds::Gvr;
use crate::patch::PatchKind;

/// API group of the new-style Events API.
pub const EVENTS_GROUP: &str = "events.k8s.io";
/// The version of [`EVENTS_GROUP`] that is served.
const EVENTS_VERSION: &str = "v1";
/// The plural of Events in both groups.
const EVENTS_RESOURCE: &str = "events";
/// `apiVersion` of stored (core) Events.
const CORE_API_VERSION: &str = "v1";
/// `apiVersion` of events.k8s.io/v1 Events.
const EVENTS_API_VERSION: &str = "events.k8s.io/v1";

/// Top-level fields whose names differ: (core v1 name, events.k8s.io/v1 name). Upstream's manual conversion
/// functions map exactly these; `reportingComponent` is the core JSON name of the internal `ReportingController`.
pub const RENAMED_FIELDS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// Field-selector labels of events.k8s.io/v1 that name a core label differently: (events.k8s.io prefix or label,
/// core prefix or label). A label ending in `.` is a prefix.
const RENAMED_SELECTOR_LABELS: &[(&str, &str)] = &[
    ("regarding.", "involvedObject."),
    ("reportingController", "reportingComponent"),
];

/// Core-only field-selector labels that events.k8s.io/v1 does not accept.
const CORE_ONLY_SELECTOR_LABELS: &[&str] = &["involvedObject.", "reportingComponent"];

/// Whether `gvr` is events.k8s.io/v1 `events`, which is served from the core Event storage.
pub fn is_events_v1(gvr: &Gvr) -> bool {
    gvr.group == EVENTS_GROUP && gvr.version == EVENTS_VERSION && gvr.resource == EVENTS_RESOURCE
}

/// The resource that stores events.k8s.io/v1 Events: core `v1` `events`.
pub fn storage_gvr() -> Gvr {
    Gvr::core(EVENTS_RESOURCE)
}

/// Renames the top-level fields of an Event (or a partial one, such as a merge patch) from one vocabulary to the
/// other, dropping fields that only exist under the target's other names (a `message` sent to events.k8s.io is
/// unknown there, as a `note` is in core v1), and sets `apiVersion` when the input has one.
fn rename(obj: &Value, to_v1: bool, api_version: &str) -> Value {
    let Some(fields) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::with_capacity(fields.len());
    for (key, value) in fields {
        if key == "apiVersion" {
            out.insert(key.clone(), Value::String(api_version.to_string()));
            continue;
        }
        let pair = RENAMED_FIELDS
            .iter()
            .find(|(core, v1)| if to_v1 { core == key } else { v1 == key });
        let foreign = RENAMED_FIELDS
            .iter()
            .any(|(core, v1)| if to_v1 { v1 == key } else { core == key });
        match pair {
            Some((core, v1)) => {
                out.insert((if to_v1 { *v1 } else { *core }).to_string(), value.clone());
            }
            None if foreign => {}
            None => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// A stored core v1 Event as events.k8s.io/v1.
pub fn core_to_v1(core: &Value) -> Value {
    rename(core, true, EVENTS_API_VERSION)
}

/// The 400 upstream answers when a body's `apiVersion` is not the endpoint's.
fn api_version_mismatch(found: &str) -> ApiError {
    ApiError::bad_request(format!(
        "the API version in the data ({found}) does not match the expected API version ({EVENTS_API_VERSION})"
    ))
}

/// An events.k8s.io/v1 Event (full or partial) in core v1 terms, for storage. A body with another `apiVersion`
/// is rejected as the endpoint would.
pub fn v1_to_core(v1: &Value) -> Result<Value, ApiError> {
    if let Some(found) = v1.get("apiVersion").and_then(Value::as_str).filter(|v| !v.is_empty())
        && found != EVENTS_API_VERSION
    {
        return Err(api_version_mismatch(found));
    }
    Ok(rename(v1, false, CORE_API_VERSION))
}

/// A stored object presented as events.k8s.io/v1 (same resourceVersion).
pub fn present(obj: &Arc<StoredObject>) -> Arc<StoredObject> {
    StoredObject::new(core_to_v1(&obj.value()), obj.rv)
}

/// A patch against an events.k8s.io/v1 Event rewritten to apply to the stored core Event: object-shaped patches
/// (merge, strategic merge, apply) get their top-level fields renamed; JSON patches get the first segment of
/// each `path` and `from` renamed.
pub fn patch_to_core(kind: &PatchKind, body: &Value) -> Result<Value, ApiError> {
    match kind {
        PatchKind::Json => {
            let Some(ops) = body.as_array() else {
                return Ok(body.clone());
            };
            let ops = ops
                .iter()
                .map(|op| {
                    let mut op = op.clone();
                    for field in ["path", "from"] {
                        if let Some(path) = op.get(field).and_then(Value::as_str) {
                            let renamed = json_pointer_to_core(path);
                            op[field] = Value::String(renamed);
                        }
                    }
                    op
                })
                .collect();
            Ok(Value::Array(ops))
        }
        PatchKind::Apply { .. } => match body.get("apiVersion").and_then(Value::as_str) {
            // Apply compares the body's apiVersion with the endpoint; say so in the endpoint's terms.
            Some(found) if found != EVENTS_API_VERSION => Err(ApiError::bad_request(
                "apiVersion and kind of the applied object must match the endpoint",
            )),
            _ => v1_to_core(body),
        },
        PatchKind::Merge | PatchKind::Strategic => v1_to_core(body),
    }
}

/// `/note/x` → `/message/x`: renames the first segment of a JSON pointer.
fn json_pointer_to_core(path: &str) -> String {
    let Some(rest) = path.strip_prefix('/') else {
        return path.to_string();
    };
    let (first, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    match RENAMED_FIELDS.iter().find(|(_, v1)| *v1 == first) {
        Some((core, _)) => format!("/{core}{tail}"),
        None => path.to_string(),
    }
}

/// An events.k8s.io/v1 field selector in core labels (`regarding.name=x` → `involvedObject.name=x`,
/// `reportingController` → `reportingComponent`); the core-only labels are rejected as upstream does.
pub fn field_selector_to_core(selector: &str) -> Result<String, ApiError> {
    let mut terms = Vec::new();
    for term in split_unescaped(selector) {
        let op_at = term.find(['=', '!']).unwrap_or(term.len());
        let (label, rest) = term.split_at(op_at);
        let label = label.trim();
        let core_only = CORE_ONLY_SELECTOR_LABELS.iter().any(|l| {
            if l.ends_with('.') {
                label.starts_with(l)
            } else {
                label == *l
            }
        });
        if core_only {
            return Err(ApiError::bad_request(format!("field label not supported: {label}")));
        }
        let renamed = RENAMED_SELECTOR_LABELS.iter().find_map(|(v1, core)| {
            if v1.ends_with('.') {
                label.strip_prefix(v1).map(|suffix| format!("{core}{suffix}"))
            } else {
                (label == *v1).then(|| core.to_string())
            }
        });
        terms.push(format!("{}{rest}", renamed.as_deref().unwrap_or(label)));
    }
    Ok(terms.join(","))
}

/// Splits a selector on commas that are not backslash-escaped, keeping the escapes.
fn split_unescaped(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// An error from the core Event storage reworded for events.k8s.io/v1 (`events "x" not found` →
/// `events.events.k8s.io "x" not found`, with the group in `details`), as the endpoint itself would answer.
pub fn retarget_error(mut e: ApiError) -> ApiError {
    let core_prefixes = [
        (
            format!("{EVENTS_RESOURCE} \""),
            format!("{EVENTS_RESOURCE}.{EVENTS_GROUP} \""),
        ),
        ("Event \"".to_string(), format!("Event.{EVENTS_GROUP} \"")),
    ];
    for (core, v1) in core_prefixes {
        if let Some(rest) = e.message.strip_prefix(&core) {
            e.message = format!("{v1}{rest}");
            if let Some(details) = e.details.as_object_mut()
                && details.contains_key("name")
            {
                details.insert("group".into(), Value::String(EVENTS_GROUP.into()));
            }
            break;
        }
    }
    e
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn v1_event() -> Value {
        json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e1", "namespace": "default"},
            "eventTime": "2026-11-22T10:00:00.000000Z",
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default", "uid": "u1"},
            "note": "hello", "reason": "Started", "type": "Normal", "action": "Start",
            "reportingController": "ctl", "reportingInstance": "ctl-0",
            "deprecatedCount": 3, "deprecatedSource": {"component": "c"},
            "deprecatedFirstTimestamp": "2026-11-22T10:00:00Z", "deprecatedLastTimestamp": "2026-11-22T10:01:00Z",
            "series": {"count": 2, "lastObservedTime": "2026-11-22T10:01:00.000000Z"},
            "related": {"kind": "Node", "name": "n"},
        })
    }

    #[test]
    fn v1_to_core_renames_the_upstream_fields_and_keeps_the_rest() {
        let core = v1_to_core(&v1_event()).unwrap();
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["message"], "hello");
        assert_eq!(core["reportingComponent"], "ctl");
        assert_eq!(core["reportingInstance"], "ctl-0");
        assert_eq!(core["count"], 3);
        assert_eq!(core["source"]["component"], "c");
        assert_eq!(core["firstTimestamp"], "2026-11-22T10:00:00Z");
        assert_eq!(core["lastTimestamp"], "2026-11-22T10:01:00Z");
        assert_eq!(core["series"]["count"], 2);
        for gone in [
            "regarding",
            "note",
            "reportingController",
            "deprecatedCount",
            "deprecatedSource",
        ] {
            assert!(core.get(gone).is_none(), "{gone} left in {core}");
        }
    }

    #[test]
    fn conversion_round_trips() {
        let v1 = v1_event();
        assert_eq!(core_to_v1(&v1_to_core(&v1).unwrap()), v1);
    }

    #[test]
    fn fields_unknown_to_the_target_version_are_dropped() {
        let core = v1_to_core(&json!({"note": "kept", "message": "not an events.k8s.io field"})).unwrap();
        assert_eq!(core, json!({"message": "kept"}));
        let v1 = core_to_v1(&json!({"message": "kept", "note": "not a core field"}));
        assert_eq!(v1, json!({"note": "kept"}));
    }

    #[test]
    fn other_api_versions_are_rejected() {
        let e = v1_to_core(&json!({"apiVersion": "v1", "kind": "Event"})).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.contains("events.k8s.io/v1"), "{}", e.message);
    }

    #[test]
    fn field_selectors_are_translated() {
        assert_eq!(
            field_selector_to_core("regarding.name=a\\,b,reportingController!=x,type=Normal").unwrap(),
            "involvedObject.name=a\\,b,reportingComponent!=x,type=Normal"
        );
        assert_eq!(field_selector_to_core("").unwrap(), "");
        assert_eq!(field_selector_to_core("involvedObject.name=a").unwrap_err().code, 400);
    }

    #[test]
    fn json_patches_are_translated() {
        let ops = json!([{"op": "replace", "path": "/series/count", "value": 3},
                         {"op": "copy", "from": "/note", "path": "/regarding/name"}]);
        let core = patch_to_core(&PatchKind::Json, &ops).unwrap();
        assert_eq!(core[0]["path"], "/series/count");
        assert_eq!(core[1]["from"], "/message");
        assert_eq!(core[1]["path"], "/involvedObject/name");
    }

    #[test]
    fn errors_name_the_events_k8s_io_resource() {
        let core_gvr = storage_gvr();
        let info = crate::kinds::builtin_resources()
            .into_iter()
            .find(|r| r.gvr == core_gvr)
            .unwrap();
        let e = retarget_error(ApiError::not_found(info.target("x")));
        assert_eq!(e.message, "events.events.k8s.io \"x\" not found");
        assert_eq!(e.details["group"], "events.k8s.io");
    }
}
