//! Kubernetes objects as Go's `encoding/json` marshals the structs, for the YuniKorn task-groups
//! annotation: object keys in Go struct-field order with Go's `omitempty` rules (k8s-openapi
//! serialises keys alphabetically). The text itself is written by
//! `kube_compat::go_json::to_string_in_order`, which adds Go's HTML-safe string escaping.

use k8s_openapi::api::core::v1::{
    Affinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm, Toleration,
    WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde_json::{Map, Value};

/// Builds a JSON object in insertion order (serde_json `preserve_order`).
#[derive(Default)]
pub(crate) struct GoObject(Map<String, Value>);

impl GoObject {
    /// Adds a key unconditionally.
    pub(crate) fn put(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    /// Adds a key when the value is present and not "empty" in Go's sense.
    pub(crate) fn put_non_empty(self, key: &str, value: Option<Value>) -> Self {
        match value {
            Some(v) if !is_go_empty(&v) => self.put(key, v),
            _ => self,
        }
    }

    /// The finished object.
    pub(crate) fn build(self) -> Value {
        Value::Object(self.0)
    }
}

/// Go `omitempty`: empty string, empty array, empty map, false, 0 or null.
fn is_go_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// An optional string list as a JSON array.
fn strings(values: &Option<Vec<String>>) -> Option<Value> {
    values.as_ref().map(|v| Value::from(v.clone()))
}

/// An optional list converted element-wise.
fn list<T>(values: &Option<Vec<T>>, convert: fn(&T) -> Value) -> Option<Value> {
    values.as_ref().map(|v| Value::Array(v.iter().map(convert).collect()))
}

/// `corev1.Affinity`.
pub(crate) fn affinity(a: &Affinity) -> Value {
    let node = a.node_affinity.as_ref().map(|n| {
        GoObject::default()
            .put_non_empty(
                "requiredDuringSchedulingIgnoredDuringExecution",
                n.required_during_scheduling_ignored_during_execution
                    .as_ref()
                    .map(node_selector),
            )
            .put_non_empty(
                "preferredDuringSchedulingIgnoredDuringExecution",
                list(&n.preferred_during_scheduling_ignored_during_execution, |p| {
                    GoObject::default()
                        .put("weight", p.weight)
                        .put("preference", node_selector_term(&p.preference))
                        .build()
                }),
            )
            .build()
    });
    let pod = |required: &Option<Vec<PodAffinityTerm>>, preferred: &Option<Vec<WeightedPodAffinityTerm>>| {
        GoObject::default()
            .put_non_empty(
                "requiredDuringSchedulingIgnoredDuringExecution",
                list(required, pod_affinity_term),
            )
            .put_non_empty(
                "preferredDuringSchedulingIgnoredDuringExecution",
                list(preferred, |w| {
                    GoObject::default()
                        .put("weight", w.weight)
                        .put("podAffinityTerm", pod_affinity_term(&w.pod_affinity_term))
                        .build()
                }),
            )
            .build()
    };
    let pod_affinity = a.pod_affinity.as_ref().map(|p| {
        pod(
            &p.required_during_scheduling_ignored_during_execution,
            &p.preferred_during_scheduling_ignored_during_execution,
        )
    });
    let pod_anti_affinity = a.pod_anti_affinity.as_ref().map(|p| {
        pod(
            &p.required_during_scheduling_ignored_during_execution,
            &p.preferred_during_scheduling_ignored_during_execution,
        )
    });
    // Pointers: omitted only when nil, so an empty struct still prints as {}.
    let mut object = GoObject::default();
    for (key, value) in [
        ("nodeAffinity", node),
        ("podAffinity", pod_affinity),
        ("podAntiAffinity", pod_anti_affinity),
    ] {
        if let Some(value) = value {
            object = object.put(key, value);
        }
    }
    object.build()
}

/// `corev1.NodeSelector` (`nodeSelectorTerms` has no `omitempty`).
fn node_selector(selector: &NodeSelector) -> Value {
    GoObject::default()
        .put(
            "nodeSelectorTerms",
            Value::Array(selector.node_selector_terms.iter().map(node_selector_term).collect()),
        )
        .build()
}

/// `corev1.NodeSelectorTerm`.
fn node_selector_term(term: &NodeSelectorTerm) -> Value {
    GoObject::default()
        .put_non_empty(
            "matchExpressions",
            list(&term.match_expressions, node_selector_requirement),
        )
        .put_non_empty("matchFields", list(&term.match_fields, node_selector_requirement))
        .build()
}

/// `corev1.NodeSelectorRequirement`.
fn node_selector_requirement(r: &NodeSelectorRequirement) -> Value {
    requirement(&r.key, &r.operator, &r.values)
}

/// A selector requirement (node or label): `key`, `operator`, then `values` when non-empty.
fn requirement(key: &str, operator: &str, values: &Option<Vec<String>>) -> Value {
    GoObject::default()
        .put("key", key)
        .put("operator", operator)
        .put_non_empty("values", strings(values))
        .build()
}

/// `corev1.PodAffinityTerm` (`topologyKey` has no `omitempty`).
fn pod_affinity_term(term: &PodAffinityTerm) -> Value {
    let selector = |s: &Option<LabelSelector>| s.as_ref().map(label_selector);
    let mut object = GoObject::default();
    if let Some(label_selector) = selector(&term.label_selector) {
        object = object.put("labelSelector", label_selector);
    }
    object = object
        .put_non_empty("namespaces", strings(&term.namespaces))
        .put("topologyKey", term.topology_key.clone());
    if let Some(namespace_selector) = selector(&term.namespace_selector) {
        object = object.put("namespaceSelector", namespace_selector);
    }
    object
        .put_non_empty("matchLabelKeys", strings(&term.match_label_keys))
        .put_non_empty("mismatchLabelKeys", strings(&term.mismatch_label_keys))
        .build()
}

/// `metav1.LabelSelector`.
fn label_selector(selector: &LabelSelector) -> Value {
    GoObject::default()
        .put_non_empty(
            "matchLabels",
            selector
                .match_labels
                .as_ref()
                .map(|m| Value::Object(m.iter().map(|(k, v)| (k.clone(), Value::from(v.clone()))).collect())),
        )
        .put_non_empty(
            "matchExpressions",
            list(&selector.match_expressions, label_selector_requirement),
        )
        .build()
}

/// `metav1.LabelSelectorRequirement`.
fn label_selector_requirement(r: &LabelSelectorRequirement) -> Value {
    requirement(&r.key, &r.operator, &r.values)
}

/// `corev1.Toleration`: key, operator, value, effect, tolerationSeconds (all `omitempty`).
pub(crate) fn toleration(t: &Toleration) -> Value {
    let text = |s: &Option<String>| s.as_ref().map(|v| Value::from(v.clone()));
    let mut object = GoObject::default()
        .put_non_empty("key", text(&t.key))
        .put_non_empty("operator", text(&t.operator))
        .put_non_empty("value", text(&t.value))
        .put_non_empty("effect", text(&t.effect));
    // A pointer: omitted only when nil, so 0 prints.
    if let Some(seconds) = t.toleration_seconds {
        object = object.put("tolerationSeconds", seconds);
    }
    object.build()
}
