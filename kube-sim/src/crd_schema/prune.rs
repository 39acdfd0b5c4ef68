//! Structural pruning, removal of non-nullable nulls and defaulting of a custom resource, in the order
//! kube-apiserver decodes one: unknown fields are dropped (and reported for `fieldValidation`), nulls of
//! non-nullable fields without a default dropped, then defaults filled in where a field is absent.

use serde_json::Value;

use super::schema::Node;

/// The fields of `ObjectMeta`: anything else under a resource's `metadata` is unknown.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Keys every resource (the root and embedded resources) keeps whatever its schema says.
const TYPE_META_FIELDS: &[&str] = &["apiVersion", "kind"];

fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

fn unknown_object_meta(meta: &Value, path: &str, unknown: &mut Vec<String>) {
    if let Value::Object(m) = meta {
        for k in m.keys().filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str())) {
            unknown.push(join(path, k));
        }
    }
}

/// Appends to `unknown` the paths of the fields in `v` that `node` does not declare (`spec.foo`,
/// `spec.list[0].bar`), the fields `fieldValidation=Strict` rejects. `resource` marks a resource (the root or
/// an embedded one): its `apiVersion` and `kind` are always known and its `metadata` is `ObjectMeta`.
pub fn unknown_fields(node: &Node, v: &Value, path: &str, resource: bool, unknown: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            let resource = resource || node.embedded_resource;
            for (k, x) in map {
                let here = join(path, k);
                if resource && TYPE_META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if resource && k == "metadata" {
                    unknown_object_meta(x, &here, unknown);
                } else if let Some(child) = node.child(k) {
                    unknown_fields(child, x, &here, false, unknown);
                } else if !(node.preserve_unknown_fields || node.additional_properties_any) {
                    unknown.push(here);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.items.as_deref() {
                for (i, x) in items.iter().enumerate() {
                    unknown_fields(item, x, &format!("{path}[{i}]"), false, unknown);
                }
            }
        }
        _ => {}
    }
}

/// Drops the fields `node` does not declare from `v` (see [`unknown_fields`] for what `resource` keeps).
pub fn prune(node: &Node, v: &mut Value, resource: bool) {
    match v {
        Value::Object(map) => {
            let resource = resource || node.embedded_resource;
            map.retain(|k, _| {
                (resource && (TYPE_META_FIELDS.contains(&k.as_str()) || k == "metadata"))
                    || node.child(k).is_some()
                    || node.preserve_unknown_fields
                    || node.additional_properties_any
            });
            for (k, x) in map.iter_mut() {
                if resource && k == "metadata" {
                    if let Value::Object(m) = x {
                        m.retain(|k, _| OBJECT_META_FIELDS.contains(&k.as_str()));
                    }
                } else if let Some(child) = node.child(k)
                    && !(resource && TYPE_META_FIELDS.contains(&k.as_str()))
                {
                    prune(child, x, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.items.as_deref() {
                items.iter_mut().for_each(|x| prune(item, x, false));
            }
        }
        _ => {}
    }
}

/// Removes `null` values of fields that are neither nullable nor defaulted (upstream drops them before
/// defaulting, so such a null reads as "absent").
pub fn drop_non_nullable_nulls(node: &Node, v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, x| match node.child(k) {
                Some(child) => !(x.is_null() && child.default.is_none() && !child.nullable),
                None => true,
            });
            for (k, x) in map.iter_mut() {
                if let Some(child) = node.child(k) {
                    drop_non_nullable_nulls(child, x);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.items.as_deref() {
                items.iter_mut().for_each(|x| drop_non_nullable_nulls(item, x));
            }
        }
        _ => {}
    }
}

fn wants_default(child: &Node, x: Option<&Value>) -> bool {
    child.default.is_some() && x.is_none_or(|x| x.is_null() && !child.nullable)
}

/// Fills in the schema's defaults where a field is absent (or a non-nullable null), recursively, defaults
/// included.
pub fn apply_defaults(node: &Node, v: &mut Value) {
    if !node.has_defaults_below {
        return;
    }
    match v {
        Value::Object(map) => {
            for (k, child) in &node.properties {
                if wants_default(child, map.get(k))
                    && let Some(d) = &child.default
                {
                    map.insert(k.clone(), d.clone());
                }
            }
            for (k, x) in map.iter_mut() {
                if let Some(child) = node.properties.get(k) {
                    apply_defaults(child, x);
                } else if let Some(extra) = node.additional_properties.as_deref() {
                    if wants_default(extra, Some(x))
                        && let Some(d) = &extra.default
                    {
                        *x = d.clone();
                    }
                    apply_defaults(extra, x);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.items.as_deref() {
                for x in items.iter_mut() {
                    if wants_default(item, Some(x))
                        && let Some(d) = &item.default
                    {
                        *x = d.clone();
                    }
                    apply_defaults(item, x);
                }
            }
        }
        _ => {}
    }
}
