//! Which Services select which pods, kept current as both change.
//!
//! The EndpointSlice controller needs, for a pod change, the Services that select the pod and, for a Service,
//! the pods it selects. Scanning for them made each pod change cost one selector check per Service of the
//! namespace and each new Service one per pod: with a RayCluster's head Service per cluster, 1,000 clusters and
//! 10,000 pods in one namespace, that was most of the simulator's CPU. Here Services are indexed by one pair of
//! their selector, so a pod is checked only against the Services indexed under one of its own labels (and the
//! rare selectors with only null values, which cannot be indexed), and each Service's pods are kept as a set.
//! Selectors often share pairs (every RayCluster head Service selects
//! `app.kubernetes.io/created-by: kuberay-operator`), so a Service is indexed under the pair with the fewest
//! Services already indexed under it.
//!
//! The other way round, pods are indexed by their labels under the keys some selector of their namespace uses
//! (only those: a pod carries many labels no Service looks at), so a new Service's pods are found among the
//! pods under its pair with the fewest pods instead of by checking every pod of the namespace.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::Key;
use crate::store::StoredObject;

/// (namespace, label key, label value): one pair of a Service's selector, in its namespace.
type Pair = (String, String, String);

/// The Services' selectors and the pods each selects.
#[derive(Debug, Default)]
pub(super) struct ServiceSelection {
    /// `spec.selector` of every Service, and how it is indexed.
    selectors: BTreeMap<Key, (Value, Index)>,
    /// Services by one pair of their selector with a string value: a pod can be selected only by the Services
    /// indexed under one of its own labels, or by those in `unindexed`.
    by_pair: HashMap<Pair, BTreeSet<Key>>,
    /// Services whose selector has no pair to index by (only null values, which match pods *without* the
    /// label): checked against every pod change of their namespace.
    unindexed: BTreeSet<Key>,
    /// The pods each Service selects, by key.
    members: HashMap<Key, BTreeSet<Key>>,
    /// The label index of each namespace's pods (only namespaces where some selector uses a key).
    pod_labels: HashMap<String, NamespaceLabels>,
}

/// The pods of one namespace by their labels, under the keys its selectors use.
#[derive(Debug, Default)]
struct NamespaceLabels {
    /// The label keys of the namespace's indexed selectors' string pairs, with how many selectors use each.
    keys: HashMap<String, usize>,
    /// Pods by (key, value), for every key in `keys`.
    pods: HashMap<(String, String), BTreeSet<Key>>,
}

/// A Service a pod change concerns: whether it selected the pod before the change, and whether it does now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Selecting {
    /// The Service.
    pub service: Key,
    /// It selected the pod's version before the change.
    pub before: bool,
    /// It selects the pod's version after the change.
    pub now: bool,
}

/// The pods the selection reads labels from: every pod, by key (the EndpointSlice controller's cache).
pub(super) type Pods = BTreeMap<Key, Arc<StoredObject>>;

/// How a selector can be found from the pods it may select.
#[derive(Debug)]
enum Index {
    /// It matches nothing (not a map, empty, or a value that is neither a string nor null).
    Never,
    /// Under this pair.
    Pair(Pair),
    /// It has to be checked against every pod of its namespace.
    Unindexed,
}

impl ServiceSelection {
    /// Where a new Service of `namespace` with `selector` is indexed: under its string pair with the fewest
    /// Services indexed under it (the first such pair on ties).
    fn index_for(&self, namespace: &str, selector: &Value) -> Index {
        let Some(map) = selector.as_object().filter(|m| !m.is_empty()) else {
            return Index::Never;
        };
        if map.values().any(|v| !v.is_string() && !v.is_null()) {
            return Index::Never;
        }
        string_pairs(selector)
            .map(|(k, v)| (namespace.to_string(), k.to_string(), v.to_string()))
            .min_by_key(|pair| self.by_pair.get(pair).map_or(0, BTreeSet::len))
            .map_or(Index::Unindexed, Index::Pair)
    }
}

/// The pairs of a selector with a string value (null values select pods *without* the label).
fn string_pairs(selector: &Value) -> impl Iterator<Item = (&str, &str)> {
    selector
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
}

/// Whether a non-empty Service selector matches the labels read through `label` (a key's value, if set).
pub(super) fn selector_matches_with<'a>(selector: &Value, label: impl Fn(&str) -> Option<&'a str>) -> bool {
    let Some(sel) = selector.as_object().filter(|m| !m.is_empty()) else {
        return false;
    };
    sel.iter()
        .all(|(k, v)| label(k) == v.as_str() && (v.is_string() || v.is_null()))
}

/// Whether a Service selector matches a stored pod, read from its indexed labels (no decoding).
pub(super) fn selector_matches_labels(selector: &Value, pod: &StoredObject) -> bool {
    selector_matches_with(selector, |k| pod.label(k))
}

impl ServiceSelection {
    /// Records Service `svc`'s selector (`None`: the Service is gone) and finds its pods among `pods`.
    pub fn service_changed(&mut self, svc: &Key, selector: Option<Value>, pods: &Pods) {
        // Most Service writes leave the selector alone (status, finalizers, a deletion timestamp): keep what
        // is known instead of matching it again.
        if let (Some(new), Some((known, _))) = (&selector, self.selectors.get(svc))
            && new == known
        {
            return;
        }
        // The old selector's keys are released after the new one's are counted, so a key both use is not
        // dropped from the index and scanned for again.
        let mut release = None;
        if let Some((old, index)) = self.selectors.remove(svc) {
            match index {
                Index::Pair(pair) => {
                    if let Some(set) = self.by_pair.get_mut(&pair) {
                        set.remove(svc);
                        if set.is_empty() {
                            self.by_pair.remove(&pair);
                        }
                    }
                    release = Some(old);
                }
                Index::Unindexed => {
                    self.unindexed.remove(svc);
                    release = Some(old);
                }
                Index::Never => {}
            }
        }
        self.members.remove(svc);
        if let Some(selector) = selector {
            let index = self.index_for(&svc.0, &selector);
            match &index {
                Index::Never => {}
                Index::Pair(pair) => {
                    self.by_pair.entry(pair.clone()).or_default().insert(svc.clone());
                }
                Index::Unindexed => {
                    self.unindexed.insert(svc.clone());
                }
            }
            if !matches!(index, Index::Never) {
                self.use_keys(&svc.0, &selector, pods);
                let selected: BTreeSet<Key> = self
                    .candidates(&svc.0, &selector, pods)
                    .filter(|(_, pod)| selector_matches_labels(&selector, pod))
                    .map(|(key, _)| key.clone())
                    .collect();
                if !selected.is_empty() {
                    self.members.insert(svc.clone(), selected);
                }
            }
            self.selectors.insert(svc.clone(), (selector, index));
        }
        if let Some(old) = release {
            self.release_keys(&svc.0, &old);
        }
    }

    /// The pods of `namespace` that `selector` may select: those under its string pair with the fewest pods,
    /// or every pod of the namespace when it has none (only null values).
    fn candidates<'a>(
        &'a self,
        namespace: &'a str,
        selector: &Value,
        pods: &'a Pods,
    ) -> Box<dyn Iterator<Item = (&'a Key, &'a StoredObject)> + 'a> {
        let indexed = self.pod_labels.get(namespace);
        let rarest = string_pairs(selector)
            .map(|(k, v)| indexed.and_then(|ns| ns.pods.get(&(k.to_string(), v.to_string()))))
            .min_by_key(|set| set.map_or(0, BTreeSet::len));
        match rarest {
            Some(set) => Box::new(
                set.into_iter()
                    .flatten()
                    .filter_map(|key| pods.get_key_value(key).map(|(k, p)| (k, p.as_ref()))),
            ),
            None => Box::new(
                pods.range((namespace.to_string(), String::new())..)
                    .take_while(move |(k, _)| k.0 == namespace)
                    .map(|(k, p)| (k, p.as_ref())),
            ),
        }
    }

    /// Counts the keys of `selector`'s string pairs as used in `namespace`; the pods of the namespace are
    /// indexed under a key when its first user arrives.
    fn use_keys(&mut self, namespace: &str, selector: &Value, pods: &Pods) {
        if string_pairs(selector).next().is_none() {
            return;
        }
        let indexed = self.pod_labels.entry(namespace.to_string()).or_default();
        let mut new_keys = Vec::new();
        for (k, _) in string_pairs(selector) {
            let users = indexed.keys.entry(k.to_string()).or_insert(0);
            *users += 1;
            if *users == 1 {
                new_keys.push(k.to_string());
            }
        }
        if new_keys.is_empty() {
            return;
        }
        let in_namespace = pods
            .range((namespace.to_string(), String::new())..)
            .take_while(|(k, _)| k.0 == namespace);
        for (pod, object) in in_namespace {
            for k in &new_keys {
                if let Some(v) = object.label(k) {
                    indexed
                        .pods
                        .entry((k.clone(), v.to_string()))
                        .or_default()
                        .insert(pod.clone());
                }
            }
        }
    }

    /// Undoes [`Self::use_keys`] for a selector that is gone; a key no selector uses any more stops being
    /// indexed.
    fn release_keys(&mut self, namespace: &str, selector: &Value) {
        let Some(indexed) = self.pod_labels.get_mut(namespace) else {
            return;
        };
        let mut unused = Vec::new();
        for (k, _) in string_pairs(selector) {
            if let Some(users) = indexed.keys.get_mut(k) {
                *users -= 1;
                if *users == 0 {
                    indexed.keys.remove(k);
                    unused.push(k.to_string());
                }
            }
        }
        if indexed.keys.is_empty() {
            self.pod_labels.remove(namespace);
        } else if !unused.is_empty() {
            indexed.pods.retain(|(k, _), _| !unused.contains(k));
        }
    }

    /// Moves a changed pod between the label index's sets (only for labels that changed, under keys in use).
    fn reindex_pod(&mut self, pod: &Key, old: Option<&StoredObject>, new: Option<&StoredObject>) {
        let Some(indexed) = self.pod_labels.get_mut(&pod.0) else {
            return;
        };
        for (k, v) in old.into_iter().flat_map(StoredObject::labels) {
            if indexed.keys.contains_key(k) && new.and_then(|n| n.label(k)) != Some(v) {
                let pair = (k.to_string(), v.to_string());
                if let Some(set) = indexed.pods.get_mut(&pair) {
                    set.remove(pod);
                    if set.is_empty() {
                        indexed.pods.remove(&pair);
                    }
                }
            }
        }
        for (k, v) in new.into_iter().flat_map(StoredObject::labels) {
            if indexed.keys.contains_key(k) && old.and_then(|o| o.label(k)) != Some(v) {
                indexed
                    .pods
                    .entry((k.to_string(), v.to_string()))
                    .or_default()
                    .insert(pod.clone());
            }
        }
    }

    /// Records a pod change (`old` and `new` versions, `None` when absent); returns the Services that selected
    /// the pod before or select it now, in key order, with which of the two.
    pub fn pod_changed(&mut self, pod: &Key, old: Option<&StoredObject>, new: Option<&StoredObject>) -> Vec<Selecting> {
        self.reindex_pod(pod, old, new);
        let namespace = &pod.0;
        let mut candidates: BTreeSet<&Key> = self
            .unindexed
            .range((namespace.clone(), String::new())..)
            .take_while(|k| &k.0 == namespace)
            .collect();
        for version in [old, new].into_iter().flatten() {
            for (k, v) in version.labels() {
                if let Some(set) = self.by_pair.get(&(namespace.clone(), k.to_string(), v.to_string())) {
                    candidates.extend(set);
                }
            }
        }
        let mut hits = Vec::new();
        for svc in candidates {
            let Some((selector, _)) = self.selectors.get(svc) else {
                continue;
            };
            let selected_before = old.is_some_and(|p| selector_matches_labels(selector, p));
            let selected_now = new.is_some_and(|p| selector_matches_labels(selector, p));
            if selected_now {
                self.members.entry(svc.clone()).or_default().insert(pod.clone());
            } else if let Some(set) = self.members.get_mut(svc) {
                set.remove(pod);
                if set.is_empty() {
                    self.members.remove(svc);
                }
            }
            if selected_before || selected_now {
                hits.push(Selecting {
                    service: svc.clone(),
                    before: selected_before,
                    now: selected_now,
                });
            }
        }
        hits
    }

    /// The pods Service `svc` selects, in key order.
    pub fn members(&self, svc: &Key) -> impl Iterator<Item = &Key> {
        self.members.get(svc).into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn pod(namespace: &str, name: &str, labels: &[(&str, &str)]) -> Arc<StoredObject> {
        let labels: serde_json::Map<String, Value> = labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        StoredObject::new(
            json!({"metadata": {"name": name, "namespace": namespace, "labels": labels}}),
            1,
        )
    }

    fn key(namespace: &str, name: &str) -> Key {
        (namespace.to_string(), name.to_string())
    }

    /// The Services of a pod change's hits, in order.
    fn services(hits: Vec<Selecting>) -> Vec<Key> {
        hits.into_iter().map(|hit| hit.service).collect()
    }

    /// The pod map of the given pods.
    fn pods(of: &[&Arc<StoredObject>]) -> Pods {
        of.iter().map(|p| (super::super::key_of(p), Arc::clone(p))).collect()
    }

    #[test]
    fn a_pod_finds_the_services_selecting_it_before_and_after() {
        let mut selection = ServiceSelection::default();
        let head = pod("ns", "head", &[("ray.io/cluster", "a"), ("ray.io/node-type", "head")]);
        selection.service_changed(
            &key("ns", "a-head-svc"),
            Some(json!({"ray.io/cluster": "a", "ray.io/node-type": "head"})),
            &pods(&[&head]),
        );
        selection.service_changed(
            &key("ns", "b-head-svc"),
            Some(json!({"ray.io/cluster": "b"})),
            &Pods::new(),
        );
        selection.service_changed(
            &key("other", "a-head-svc"),
            Some(json!({"ray.io/cluster": "a"})),
            &Pods::new(),
        );
        assert_eq!(
            selection.members(&key("ns", "a-head-svc")).collect::<Vec<_>>(),
            [&key("ns", "head")]
        );

        // Relabelled from cluster a to b: both Services are touched; only b selects it now.
        let moved = pod("ns", "head", &[("ray.io/cluster", "b"), ("ray.io/node-type", "head")]);
        let hits = selection.pod_changed(&key("ns", "head"), Some(&head), Some(&moved));
        assert_eq!(
            hits,
            [
                Selecting {
                    service: key("ns", "a-head-svc"),
                    before: true,
                    now: false
                },
                Selecting {
                    service: key("ns", "b-head-svc"),
                    before: false,
                    now: true
                }
            ]
        );
        assert_eq!(selection.members(&key("ns", "a-head-svc")).count(), 0);
        assert_eq!(selection.members(&key("ns", "b-head-svc")).count(), 1);

        // Deleted: b is touched and loses it.
        let hits = selection.pod_changed(&key("ns", "head"), Some(&moved), None);
        assert_eq!(services(hits), [key("ns", "b-head-svc")]);
        assert_eq!(selection.members(&key("ns", "b-head-svc")).count(), 0);

        // A Service that is gone selects nothing.
        selection.service_changed(&key("ns", "b-head-svc"), None, &Pods::new());
        assert!(selection.pod_changed(&key("ns", "x"), None, Some(&moved)).is_empty());
    }

    #[test]
    fn services_sharing_a_pair_are_indexed_under_their_own() {
        let mut selection = ServiceSelection::default();
        for cluster in ["a", "b", "c"] {
            selection.service_changed(
                &key("ns", &format!("{cluster}-head-svc")),
                Some(json!({"app.kubernetes.io/created-by": "kuberay-operator", "ray.io/cluster": cluster})),
                &Pods::new(),
            );
        }
        let shared = (
            "ns".to_string(),
            "app.kubernetes.io/created-by".to_string(),
            "kuberay-operator".to_string(),
        );
        assert_eq!(
            selection.by_pair[&shared].len(),
            1,
            "only the first Service is under the shared pair"
        );
        let head = pod(
            "ns",
            "c-head",
            &[
                ("app.kubernetes.io/created-by", "kuberay-operator"),
                ("ray.io/cluster", "c"),
            ],
        );
        assert_eq!(
            services(selection.pod_changed(&key("ns", "c-head"), None, Some(&head))),
            [key("ns", "c-head-svc")]
        );
    }

    #[test]
    fn an_unchanged_selector_keeps_its_pods_without_a_scan() {
        let mut selection = ServiceSelection::default();
        let head = pod("ns", "head", &[("ray.io/cluster", "a")]);
        let svc = key("ns", "a-head-svc");
        selection.service_changed(&svc, Some(json!({"ray.io/cluster": "a"})), &pods(&[&head]));
        // The same selector again, with no pods offered: the members stay.
        selection.service_changed(&svc, Some(json!({"ray.io/cluster": "a"})), &Pods::new());
        assert_eq!(selection.members(&svc).collect::<Vec<_>>(), [&key("ns", "head")]);
        // A new selector is matched against the pods offered.
        selection.service_changed(&svc, Some(json!({"ray.io/cluster": "b"})), &pods(&[&head]));
        assert_eq!(selection.members(&svc).count(), 0);
    }

    #[test]
    fn a_new_service_checks_only_the_pods_under_its_rarest_pair() {
        let mut selection = ServiceSelection::default();
        let a_head = pod("ns", "a-head", &[("app", "ray"), ("ray.io/cluster", "a")]);
        let b_head = pod("ns", "b-head", &[("app", "ray"), ("ray.io/cluster", "b")]);
        let mut all = pods(&[&a_head]);
        selection.service_changed(
            &key("ns", "a-svc"),
            Some(json!({"app": "ray", "ray.io/cluster": "a"})),
            &all,
        );
        assert_eq!(selection.members(&key("ns", "a-svc")).count(), 1);
        // Pod changes reach the label index: b-head is found under `ray.io/cluster: b`.
        selection.pod_changed(&key("ns", "b-head"), None, Some(&b_head));
        all.insert(key("ns", "b-head"), Arc::clone(&b_head));
        let b_selector = json!({"app": "ray", "ray.io/cluster": "b"});
        // Two pods are under `app: ray`, one under `ray.io/cluster: b`: only that one is checked.
        assert_eq!(selection.candidates("ns", &b_selector, &all).count(), 1);
        selection.service_changed(&key("ns", "b-svc"), Some(b_selector), &all);
        assert_eq!(
            selection.members(&key("ns", "b-svc")).collect::<Vec<_>>(),
            [&key("ns", "b-head")]
        );
        // A pod in the map that the selection was never told about is not looked at: the Service's pods come
        // from the index, not from checking every pod of the namespace. (In the EndpointSlice controller such
        // a pod's own change is still to be noted, and adds it then.)
        let unseen = pod("ns", "c-head", &[("app", "ray"), ("ray.io/cluster", "c")]);
        all.insert(key("ns", "c-head"), unseen);
        selection.service_changed(
            &key("ns", "c-svc"),
            Some(json!({"app": "ray", "ray.io/cluster": "c"})),
            &all,
        );
        assert_eq!(selection.members(&key("ns", "c-svc")).count(), 0);
        // When the last selector using a key goes, pods stop being indexed under it.
        for svc in ["a-svc", "b-svc", "c-svc"] {
            selection.service_changed(&key("ns", svc), None, &all);
        }
        assert!(selection.pod_labels.is_empty());
    }

    #[test]
    fn null_values_select_pods_without_the_label() {
        let mut selection = ServiceSelection::default();
        selection.service_changed(&key("ns", "s"), Some(json!({"tier": null})), &Pods::new());
        let plain = pod("ns", "p", &[("app", "x")]);
        assert_eq!(
            services(selection.pod_changed(&key("ns", "p"), None, Some(&plain))),
            [key("ns", "s")]
        );
        let tiered = pod("ns", "p", &[("tier", "web")]);
        assert_eq!(
            selection.pod_changed(&key("ns", "p"), Some(&plain), Some(&tiered)),
            [Selecting {
                service: key("ns", "s"),
                before: true,
                now: false
            }],
            "selected before the change"
        );
        assert_eq!(selection.members(&key("ns", "s")).count(), 0);
    }

    /// A pod change of the model test: labels `k<key>: v<value>`, `None` for a deletion.
    type PodChange = (u8, Option<Vec<(u8, u8)>>);

    /// An operation of the model test: a Service or a pod of one of two namespaces changes.
    #[derive(Debug, Clone)]
    enum Op {
        Service {
            ns: u8,
            name: u8,
            /// Pairs `k<key>`: `v0`/`v1` (0, 1), the number 2 (2, which selects nothing) or null (`None`).
            selector: Option<Vec<(u8, Option<u8>)>>,
            /// A pod change of the namespace that reaches the pod map before the Service is noted and is
            /// noted after it, as when the EndpointSlice controller's cache applies a batch of events first.
            ahead: Option<PodChange>,
        },
        Pod {
            ns: u8,
            change: PodChange,
        },
    }

    fn pod_change() -> impl Strategy<Value = PodChange> {
        let labels = prop::collection::vec((0u8..3, 0u8..2), 0..3);
        (0u8..6, prop::option::weighted(0.8, labels))
    }

    fn op() -> impl Strategy<Value = Op> {
        let pairs = prop::collection::vec((0u8..3, prop::option::weighted(0.8, 0u8..3)), 0..3);
        prop_oneof![
            (
                0u8..2,
                0u8..4,
                prop::option::weighted(0.8, pairs),
                prop::option::weighted(0.3, pod_change())
            )
                .prop_map(|(ns, name, selector, ahead)| Op::Service {
                    ns,
                    name,
                    selector,
                    ahead
                }),
            (0u8..2, pod_change()).prop_map(|(ns, change)| Op::Pod { ns, change }),
        ]
    }

    fn selector_value(pairs: Vec<(u8, Option<u8>)>) -> Value {
        Value::Object(
            pairs
                .into_iter()
                .map(|(k, v)| {
                    let value = match v {
                        None => Value::Null,
                        Some(2) => json!(2),
                        Some(v) => json!(format!("v{v}")),
                    };
                    (format!("k{k}"), value)
                })
                .collect(),
        )
    }

    /// The pod key and new version (`None`: deleted) of a model pod change in `namespace`.
    fn changed_pod(namespace: &str, (name, labels): PodChange) -> (Key, Option<Arc<StoredObject>>) {
        let pod_key = key(namespace, &format!("pod{name}"));
        let new = labels.map(|labels| {
            let labels: Vec<(String, String)> = labels
                .into_iter()
                .map(|(k, v)| (format!("k{k}"), format!("v{v}")))
                .collect();
            let refs: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            pod(namespace, &pod_key.1, &refs)
        });
        (pod_key, new)
    }

    /// The Services of `namespace` that select `old` or `new`, by checking each.
    fn selecting(
        services: &BTreeMap<Key, Value>,
        namespace: &str,
        old: Option<&StoredObject>,
        new: Option<&StoredObject>,
    ) -> Vec<Selecting> {
        services
            .iter()
            .filter(|(svc, _)| svc.0 == namespace)
            .map(|(svc, s)| Selecting {
                service: svc.clone(),
                before: old.is_some_and(|p| selector_matches_labels(s, p)),
                now: new.is_some_and(|p| selector_matches_labels(s, p)),
            })
            .filter(|hit| hit.before || hit.now)
            .collect()
    }

    /// One namespace's label index, comparable: the keys with their users, and the pods by (key, value).
    type LabelIndex = (BTreeMap<String, usize>, BTreeMap<(String, String), BTreeSet<Key>>);

    /// The label index as it should be: per namespace, the string keys of its indexed selectors with their
    /// users, and the pods under each (key, value) of those keys.
    fn expected_index(services: &BTreeMap<Key, Value>, pods: &Pods) -> BTreeMap<String, LabelIndex> {
        let mut expected: BTreeMap<String, LabelIndex> = BTreeMap::new();
        for (svc, selector) in services {
            let map = selector.as_object().filter(|m| !m.is_empty());
            let indexed = map.is_some_and(|m| m.values().all(|v| v.is_string() || v.is_null()));
            if !indexed {
                continue;
            }
            for (k, _) in string_pairs(selector) {
                *expected
                    .entry(svc.0.clone())
                    .or_default()
                    .0
                    .entry(k.to_string())
                    .or_insert(0) += 1;
            }
        }
        for (namespace, (keys, by_label)) in &mut expected {
            for (pod_key, pod) in pods.iter().filter(|(k, _)| &k.0 == namespace) {
                for k in keys.keys() {
                    if let Some(v) = pod.label(k) {
                        by_label
                            .entry((k.clone(), v.to_string()))
                            .or_default()
                            .insert(pod_key.clone());
                    }
                }
            }
        }
        expected
    }

    proptest! {
        /// After any sequence of changes, also when the pod map is ahead of the changes noted, the indexes agree
        /// with checking every selector against every pod, and each pod change reports exactly the Services that
        /// selected the pod before or after it, and which of the two.
        #[test]
        fn the_index_agrees_with_scanning(ops in prop::collection::vec(op(), 1..40)) {
            let mut selection = ServiceSelection::default();
            let mut services: BTreeMap<Key, Value> = BTreeMap::new();
            let mut pods: BTreeMap<Key, Arc<StoredObject>> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Service { ns, name, selector, ahead } => {
                        let namespace = format!("ns{ns}");
                        let svc = key(&namespace, &format!("svc{name}"));
                        let selector = selector.map(selector_value);
                        let ahead = ahead.map(|change| {
                            let (pod_key, new) = changed_pod(&namespace, change);
                            let old = match &new {
                                Some(p) => pods.insert(pod_key.clone(), Arc::clone(p)),
                                None => pods.remove(&pod_key),
                            };
                            (pod_key, old, new)
                        });
                        selection.service_changed(&svc, selector.clone(), &pods);
                        match selector {
                            Some(s) => services.insert(svc, s),
                            None => services.remove(&svc),
                        };
                        if let Some((pod_key, old, new)) = ahead {
                            let hits = selection.pod_changed(&pod_key, old.as_deref(), new.as_deref());
                            prop_assert_eq!(hits, selecting(&services, &namespace, old.as_deref(), new.as_deref()));
                        }
                    }
                    Op::Pod { ns, change } => {
                        let namespace = format!("ns{ns}");
                        let (pod_key, new) = changed_pod(&namespace, change);
                        let old = pods.get(&pod_key).cloned();
                        let hits = selection.pod_changed(&pod_key, old.as_deref(), new.as_deref());
                        prop_assert_eq!(hits, selecting(&services, &namespace, old.as_deref(), new.as_deref()));
                        match new {
                            Some(p) => pods.insert(pod_key, p),
                            None => pods.remove(&pod_key),
                        };
                    }
                }
                let index: BTreeMap<_, _> = selection
                    .pod_labels
                    .iter()
                    .map(|(ns, labels)| {
                        let keys: BTreeMap<String, usize> = labels.keys.clone().into_iter().collect();
                        let by_label: BTreeMap<_, _> = labels.pods.clone().into_iter().collect();
                        (ns.clone(), (keys, by_label))
                    })
                    .collect();
                prop_assert_eq!(index, expected_index(&services, &pods));
                for (svc, selector) in &services {
                    let scanned: Vec<&Key> = pods
                        .iter()
                        .filter(|(k, p)| k.0 == svc.0 && selector_matches_labels(selector, p))
                        .map(|(k, _)| k)
                        .collect();
                    prop_assert_eq!(selection.members(svc).collect::<Vec<_>>(), scanned);
                }
            }
        }
    }
}
