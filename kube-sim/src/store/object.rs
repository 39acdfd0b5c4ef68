//! How the store keeps an object: serialized, with the few metadata fields read on every object indexed.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::select::{FieldSelector, LabelSelector};

/// A stored object: its JSON bytes, its resourceVersion and the few metadata fields that lists, watches and the
/// owner index read on every object (name, namespace, uid, labels, owner uids).
///
/// The object is kept serialized only: a decoded `serde_json::Value` of a pod is several times the size of its
/// JSON, and the store holds every live object plus the watch history. Readers that need the whole object call
/// [`StoredObject::value`], which decodes it.
#[derive(Debug)]
pub struct StoredObject {
    /// The object serialized once at commit time, so lists and watches never re-serialize.
    pub json: Bytes,
    /// `metadata.resourceVersion` as a number.
    pub rv: u64,
    /// The metadata fields read without decoding.
    meta: IndexedMeta,
}

/// The metadata of a [`StoredObject`] that is read without decoding it.
#[derive(Debug, Default)]
struct IndexedMeta {
    name: Box<str>,
    namespace: Option<Box<str>>,
    uid: Box<str>,
    /// `metadata.labels` with string values, sorted by key.
    labels: Box<[(Box<str>, Box<str>)]>,
    /// `metadata.ownerReferences`: the fields the owner index and the controllers read.
    owners: Box<[OwnerKey]>,
    /// `metadata.finalizers`.
    finalizers: Box<[Box<str>]>,
}

/// The fields of an owner reference read without decoding its object.
#[derive(Debug)]
struct OwnerKey {
    uid: Box<str>,
    kind: Box<str>,
    controller: bool,
}

impl IndexedMeta {
    fn of(value: &Value) -> Self {
        let meta = &value["metadata"];
        let text = |field: &str| meta[field].as_str().map(Box::from);
        let mut labels: Vec<(Box<str>, Box<str>)> = meta["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (Box::from(k.as_str()), Box::from(v))))
                    .collect()
            })
            .unwrap_or_default();
        labels.sort_unstable();
        Self {
            name: text("name").unwrap_or_default(),
            namespace: text("namespace"),
            uid: text("uid").unwrap_or_default(),
            labels: labels.into_boxed_slice(),
            owners: meta["ownerReferences"]
                .as_array()
                .map(|refs| {
                    refs.iter()
                        .filter_map(|r| {
                            Some(OwnerKey {
                                uid: r["uid"].as_str()?.into(),
                                kind: r["kind"].as_str().unwrap_or_default().into(),
                                controller: r["controller"].as_bool() == Some(true),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            finalizers: meta["finalizers"]
                .as_array()
                .map(|a| a.iter().filter_map(|f| f.as_str().map(Box::from)).collect())
                .unwrap_or_default(),
        }
    }
}

impl StoredObject {
    /// Wraps a value, stamping `metadata.resourceVersion = rv` and serializing it.
    pub fn new(mut value: Value, rv: u64) -> Arc<Self> {
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let json = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Arc::new(Self {
            meta: IndexedMeta::of(&value),
            json,
            rv,
        })
    }

    /// The object, decoded from its JSON (each call decodes; keep the result when reading several fields).
    pub fn value(&self) -> Value {
        // The bytes were serialized from a `Value` by `new`, so they always decode.
        serde_json::from_slice(&self.json).unwrap_or_default()
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    /// `metadata.namespace`, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.meta.namespace.as_deref()
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        &self.meta.uid
    }

    /// The value of label `key` (`metadata.labels`), if set.
    pub fn label(&self, key: &str) -> Option<&str> {
        let labels = &self.meta.labels;
        labels
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .map(|i| labels[i].1.as_ref())
    }

    /// Every label (`metadata.labels` with string values), sorted by key.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.meta.labels.iter().map(|(k, v)| (k.as_ref(), v.as_ref()))
    }

    /// The `uid` of each owner reference.
    pub fn owner_uids(&self) -> impl Iterator<Item = &str> {
        self.meta.owners.iter().map(|o| o.uid.as_ref())
    }

    /// Whether `metadata.finalizers` holds `finalizer`.
    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.meta.finalizers.iter().any(|f| f.as_ref() == finalizer)
    }

    /// The `uid` of the controller owner reference (`controller: true`), if any.
    pub fn controller_uid(&self) -> Option<&str> {
        self.meta.owners.iter().find(|o| o.controller).map(|o| o.uid.as_ref())
    }

    /// The `uid` of the controller owner reference of kind `kind`, if any.
    pub fn controller_of_kind(&self, kind: &str) -> Option<&str> {
        self.meta
            .owners
            .iter()
            .find(|o| o.controller && o.kind.as_ref() == kind)
            .map(|o| o.uid.as_ref())
    }

    /// Whether the object matches a label selector, read from the indexed labels.
    pub fn matches_labels(&self, selector: &LabelSelector) -> bool {
        selector.matches_with(|k| self.label(k))
    }

    /// Whether the object matches a field selector (decodes the object unless the selector is empty or only
    /// reads the name and namespace).
    pub fn matches_fields(&self, selector: &FieldSelector) -> bool {
        selector.is_empty()
            || selector
                .matches_metadata(self.name(), self.namespace())
                .unwrap_or_else(|| selector.matches(&self.value()))
    }

    /// The same object reported at another resourceVersion (used for DELETED-on-transition events).
    pub fn with_rv(&self, rv: u64) -> Arc<Self> {
        Self::new(self.value(), rv)
    }

    /// The metadata-only (`PartialObjectMetadata`) rendering of this object.
    pub fn partial_metadata(&self) -> Value {
        let mut value = self.value();
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": value["metadata"].take()})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-1",
                "namespace": "prod",
                "uid": "u-1",
                "finalizers": ["batch.kubernetes.io/job-tracking"],
                "labels": {"app": "web", "tier": "front"},
                "ownerReferences": [
                    {"kind": "ReplicaSet", "name": "web", "uid": "rs-1", "controller": true},
                    {"kind": "ConfigMap", "name": "c", "uid": "cm-1"},
                ],
            },
            "spec": {"nodeName": "node-3"},
            "status": {"phase": "Running"},
        })
    }

    #[test]
    fn keeps_the_object_as_json_stamped_with_its_resource_version() {
        let obj = StoredObject::new(pod(), 42);
        let mut want = pod();
        want["metadata"]["resourceVersion"] = json!("42");
        assert_eq!(obj.value(), want);
        assert_eq!(serde_json::from_slice::<Value>(&obj.json).unwrap(), want);
        assert_eq!(obj.rv, 42);
        assert_eq!(obj.with_rv(43).value()["metadata"]["resourceVersion"], "43");
        assert_eq!(obj.partial_metadata()["metadata"], want["metadata"]);
    }

    #[test]
    fn indexes_name_namespace_uid_labels_and_owners() {
        let obj = StoredObject::new(pod(), 1);
        assert_eq!((obj.name(), obj.namespace(), obj.uid()), ("web-1", Some("prod"), "u-1"));
        assert_eq!(
            (obj.label("app"), obj.label("tier"), obj.label("none")),
            (Some("web"), Some("front"), None)
        );
        assert_eq!(obj.owner_uids().collect::<Vec<_>>(), ["rs-1", "cm-1"]);
        assert_eq!(obj.controller_uid(), Some("rs-1"));
        assert_eq!(obj.controller_of_kind("ReplicaSet"), Some("rs-1"));
        assert_eq!(obj.controller_of_kind("ConfigMap"), None);
        assert!(obj.has_finalizer("batch.kubernetes.io/job-tracking") && !obj.has_finalizer("other"));
        let bare = StoredObject::new(json!({"metadata": {"name": "n"}}), 1);
        assert_eq!((bare.namespace(), bare.uid(), bare.label("app")), (None, "", None));
        assert_eq!(bare.controller_uid(), None);
    }

    #[test]
    fn selectors_on_the_index_agree_with_selectors_on_the_decoded_object() {
        let obj = StoredObject::new(pod(), 1);
        let value = obj.value();
        for labels in [
            "app=web",
            "app=web,tier=front",
            "app!=web",
            "tier in (back)",
            "!none",
            "none",
            "",
        ] {
            let selector = LabelSelector::parse(labels).unwrap();
            assert_eq!(obj.matches_labels(&selector), selector.matches(&value), "{labels}");
        }
        for fields in [
            "metadata.name=web-1",
            "metadata.name!=web-1",
            "metadata.namespace=prod,metadata.name=web-2",
            "spec.nodeName=node-3",
            "status.phase!=Running,metadata.name=web-1",
            "",
        ] {
            let selector = FieldSelector::parse(fields, "Pod").unwrap();
            assert_eq!(obj.matches_fields(&selector), selector.matches(&value), "{fields}");
        }
    }
}
