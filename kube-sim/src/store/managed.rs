//! Simplified server-side apply field ownership.
//!
//! Ownership is kept in a side table keyed by object uid (it is not rendered into `metadata.managedFields`, so
//! stored bytes and no-op detection are unaffected). It is tracked only for objects that server-side apply has
//! touched: an apply records the leaf fields of its configuration for its manager; later non-apply writes to such
//! an object hand the leaves they change to their manager (`fieldManager`, else `"unknown"`). Lists are atomic
//! leaves. An apply without `force` that changes the value of a leaf owned by another manager → 409
//! `FieldManagerConflict`; with `force` it takes the leaf over. Leaves a manager applied before and omits now are
//! removed unless another manager owns them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::kinds::ResourceInfo;

/// A field path (object keys from the root).
pub(super) type FieldPath = Vec<String>;

/// One manager's fields.
#[derive(Debug, Clone, Default)]
pub(super) struct ManagerFields {
    /// Last written by an apply (true) or an update (false).
    pub applied: bool,
    /// Owned leaf paths.
    pub fields: BTreeSet<FieldPath>,
}

/// Field ownership of one object: manager → fields.
pub(super) type Managed = BTreeMap<String, ManagerFields>;

/// Manager name for writes without `fieldManager` (kube sends no User-Agent to derive one from).
pub(super) const UNKNOWN_MANAGER: &str = "unknown";

/// Renders a path as upstream does in conflict messages (`.spec.x`).
pub(super) fn render(path: &FieldPath) -> String {
    path.iter().map(|s| format!(".{s}")).collect()
}

/// Leaf paths of a configuration or object, skipping type and server-owned metadata (and `status` on kinds with a
/// status subresource, whose main endpoint ignores it).
pub(super) fn leaf_paths(info: &ResourceInfo, obj: &Value) -> BTreeSet<FieldPath> {
    let mut out = BTreeSet::new();
    let Some(map) = obj.as_object() else {
        return out;
    };
    for (k, v) in map {
        match k.as_str() {
            "apiVersion" | "kind" => {}
            "status" if info.status_subresource => {}
            "metadata" => {
                for mk in ["labels", "annotations"] {
                    if let Some(m) = v.get(mk).and_then(Value::as_object) {
                        for key in m.keys() {
                            out.insert(vec!["metadata".into(), mk.into(), key.clone()]);
                        }
                    }
                }
                for mk in ["finalizers", "ownerReferences"] {
                    if v.get(mk).is_some_and(|x| !x.is_null()) {
                        out.insert(vec!["metadata".into(), mk.into()]);
                    }
                }
            }
            _ => collect(v, &mut vec![k.clone()], &mut out),
        }
    }
    out
}

fn collect(v: &Value, prefix: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
    match v.as_object() {
        Some(m) if !m.is_empty() => {
            for (k, child) in m {
                prefix.push(k.clone());
                collect(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {
            out.insert(prefix.clone());
        }
    }
}

/// The value at `path`, if any.
pub(super) fn get<'a>(obj: &'a Value, path: &FieldPath) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, k| v.get(k))
}

/// Removes the value at `path` (and parents it leaves empty, below the root's direct children).
pub(super) fn remove(obj: &mut Value, path: &FieldPath) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for k in parents {
        match cur.get_mut(k) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.remove(last);
    }
}

/// Whether two paths overlap (one is a prefix of the other).
fn overlaps(a: &FieldPath, b: &FieldPath) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// Checks an apply of `applied` (its leaf paths `paths`) by `manager` against `current`; returns the conflicts as
/// `(other manager, path)`.
pub(super) fn conflicts(
    managed: &Managed,
    manager: &str,
    paths: &BTreeSet<FieldPath>,
    applied: &Value,
    current: &Value,
) -> Vec<(String, FieldPath)> {
    let mut out = Vec::new();
    for p in paths {
        if get(applied, p) == get(current, p) {
            continue;
        }
        for (other, mf) in managed {
            if other != manager && mf.fields.iter().any(|f| overlaps(f, p)) {
                out.push((other.clone(), p.clone()));
            }
        }
    }
    out
}

/// The 409 for apply conflicts.
pub(super) fn conflict_error(info: &ResourceInfo, name: &str, conflicts: &[(String, FieldPath)]) -> ApiError {
    let (group, version) = (&info.gvr.group, &info.gvr.version);
    let api_version = if group.is_empty() {
        version.clone()
    } else {
        format!("{group}/{version}")
    };
    let lines: Vec<String> = conflicts
        .iter()
        .map(|(m, p)| format!("conflict with \"{m}\" using {api_version}: {}", render(p)))
        .collect();
    let message = if lines.len() == 1 {
        format!("Apply failed with 1 conflict: {}", lines[0])
    } else {
        format!("Apply failed with {} conflicts: {}", lines.len(), lines.join("\n"))
    };
    let mut e = ApiError::new(409, "Conflict", message);
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, p)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{m}\" using {api_version}"), "field": render(p)})
        })
        .collect();
    let mut details = serde_json::Map::new();
    details.insert("name".into(), json!(name));
    if !group.is_empty() {
        details.insert("group".into(), json!(group));
    }
    details.insert("kind".into(), json!(info.gvr.resource));
    details.insert("causes".into(), Value::Array(causes));
    e.details = Value::Object(details);
    e
}

/// Records a successful apply: `manager` owns exactly `paths`; with `force`, other managers lose the overlapping
/// paths whose values the apply changed (`taken`).
pub(super) fn record_apply(managed: &mut Managed, manager: &str, paths: BTreeSet<FieldPath>, taken: &[FieldPath]) {
    for (other, mf) in managed.iter_mut() {
        if other != manager {
            mf.fields.retain(|f| !taken.iter().any(|t| overlaps(f, t)));
        }
    }
    managed.insert(
        manager.to_string(),
        ManagerFields {
            applied: true,
            fields: paths,
        },
    );
    managed.retain(|_, mf| !mf.fields.is_empty());
}

/// Leaves `manager` applied last time, omits now, and no other manager owns: the apply removes them.
pub(super) fn dropped(managed: &Managed, manager: &str, paths: &BTreeSet<FieldPath>) -> Vec<FieldPath> {
    let Some(prev) = managed.get(manager).filter(|m| m.applied) else {
        return Vec::new();
    };
    prev.fields
        .iter()
        .filter(|p| !paths.contains(*p))
        .filter(|p| {
            !managed
                .iter()
                .any(|(m, mf)| m != manager && mf.fields.iter().any(|f| overlaps(f, p)))
        })
        .cloned()
        .collect()
}

/// Records a non-apply write: `manager` takes the leaves that changed between `old` and `new`.
pub(super) fn record_update(managed: &mut Managed, info: &ResourceInfo, manager: &str, old: &Value, new: &Value) {
    let before = leaf_paths(info, old);
    let after = leaf_paths(info, new);
    let changed: Vec<FieldPath> = after
        .iter()
        .filter(|p| !before.contains(*p) || get(old, p) != get(new, p))
        .cloned()
        .collect();
    let removed: Vec<FieldPath> = before.difference(&after).cloned().collect();
    if changed.is_empty() && removed.is_empty() {
        return;
    }
    for (other, mf) in managed.iter_mut() {
        mf.fields.retain(|f| !removed.iter().any(|r| overlaps(f, r)));
        if other != manager {
            mf.fields.retain(|f| !changed.iter().any(|c| overlaps(f, c)));
        }
    }
    let entry = managed.entry(manager.to_string()).or_default();
    entry.fields.extend(changed);
    managed.retain(|_, mf| !mf.fields.is_empty());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm_info() -> ResourceInfo {
        crate::kinds::builtin_resources()
            .into_iter()
            .find(|r| r.gvr.resource == "configmaps")
            .unwrap()
    }

    fn p(s: &str) -> FieldPath {
        s.split('.').map(str::to_string).collect()
    }

    #[test]
    fn leaves_skip_type_and_server_metadata() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "uid": "u", "labels": {"a": "b"}, "finalizers": ["f"]},
            "data": {"k": "v", "l": [1]}, "spec": {}});
        let got: Vec<String> = leaf_paths(&cm_info(), &obj).iter().map(render).collect();
        assert_eq!(
            got,
            [
                ".data.k",
                ".data.l",
                ".metadata.finalizers",
                ".metadata.labels.a",
                ".spec"
            ]
        );
    }

    #[test]
    fn conflicts_force_and_dropped_fields() {
        let info = cm_info();
        let mut owned = Managed::new();
        let applied = json!({"data": {"x": "1", "y": "1"}});
        record_apply(&mut owned, "op", leaf_paths(&info, &applied), &[]);
        // op2 changes data.x with an update: it takes data.x over.
        let current = json!({"data": {"x": "2", "y": "1"}});
        record_update(&mut owned, &info, "op2", &applied, &current);
        assert_eq!(owned["op2"].fields.iter().collect::<Vec<_>>(), [&p("data.x")]);
        assert!(!owned["op"].fields.contains(&p("data.x")));

        // Same value for an owned field: no conflict; a different one: conflict with op2.
        let same = json!({"data": {"x": "2", "y": "1"}});
        assert!(conflicts(&owned, "op", &leaf_paths(&info, &same), &same, &current).is_empty());
        let other = json!({"data": {"x": "3", "y": "1"}});
        let c = conflicts(&owned, "op", &leaf_paths(&info, &other), &other, &current);
        assert_eq!(c, [("op2".to_string(), p("data.x"))]);
        let e = conflict_error(&info, "cm", &c);
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
        assert_eq!(
            e.message,
            r#"Apply failed with 1 conflict: conflict with "op2" using v1: .data.x"#
        );
        assert_eq!(e.details["causes"][0]["reason"], "FieldManagerConflict");

        // Forced: op takes data.x; op2 owns nothing and disappears.
        let taken: Vec<FieldPath> = c.into_iter().map(|(_, p)| p).collect();
        record_apply(&mut owned, "op", leaf_paths(&info, &other), &taken);
        assert!(!owned.contains_key("op2"));

        // op stops applying data.y: it is removed (nobody else owns it).
        let fewer = json!({"data": {"x": "3"}});
        assert_eq!(dropped(&owned, "op", &leaf_paths(&info, &fewer)), [p("data.y")]);
        let mut doc = json!({"data": {"x": "3", "y": "1"}});
        remove(&mut doc, &p("data.y"));
        assert_eq!(doc, json!({"data": {"x": "3"}}));
    }
}
