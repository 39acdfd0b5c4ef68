//! Memory-lean caches of the pods and head services of Ray clusters (linkerd-style "index, don't
//! cache"): each watched object is reduced to a compact struct the moment it arrives, grouped by
//! namespace and owning cluster, and the full object is dropped.
//!
//! The index follows a watcher's event protocol (`Init` / `InitApply` / `InitDone` swap a fresh map
//! in, as kube's reflector `Writer` does) and reports which clusters an event touched so the
//! controller can trigger exactly those reconciles.

use kube::runtime::watcher::Event;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Namespace and cluster name: the key of everything a cluster owns.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterKey {
    /// Namespace.
    pub namespace: String,
    /// RayCluster name.
    pub name: String,
}

impl ClusterKey {
    /// Build a key.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

/// A compact view of a Kubernetes object, extracted once per watch event.
pub trait Compact: Sized + Send + Sync + 'static {
    /// The watched Kubernetes kind.
    type Source: kube::Resource;
    /// Namespace, object name and owning cluster of a source object (`None`: not indexed).
    fn locate(source: &Self::Source) -> Option<(String, String, String)>;
    /// The compact view.
    fn compact(source: &Self::Source) -> Self;
}

/// One cluster's objects, ordered by name.
///
/// A sorted vector rather than a `BTreeMap`: most clusters own a head Service and a few pods, and a B-tree's
/// first node takes about 370 bytes however few entries it holds (a head-only cluster's pod and Service: 0.7 of
/// the 8.5 KiB the operator grew per such cluster, measured with massif), where the vector takes 32 bytes per
/// entry. An insert into a 5,000-pod group moves about 80 KB, a few microseconds.
#[derive(Debug)]
struct ClusterObjects<T>(Vec<(String, Arc<T>)>);

impl<T> Default for ClusterObjects<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<T> ClusterObjects<T> {
    /// Below this many entries the vector grows one entry at a time (a cluster's few pods), above it by
    /// doubling (a large group's scale-up).
    const EXACT_GROWTH_BELOW: usize = 8;

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(existing, _)| existing.as_str().cmp(name))
    }

    /// Adds or replaces the object called `name`.
    fn insert(&mut self, name: String, value: Arc<T>) {
        match self.position(&name) {
            Ok(found) => self.0[found].1 = value,
            Err(at) => {
                if self.0.len() == self.0.capacity() && self.0.len() < Self::EXACT_GROWTH_BELOW {
                    self.0.reserve_exact(1);
                }
                self.0.insert(at, (name, value));
            }
        }
    }

    /// Removes the object called `name`, if held; gives memory back once a quarter of it is in use (a large
    /// group scaled down).
    fn remove(&mut self, name: &str) {
        if let Ok(found) = self.position(name) {
            self.0.remove(found);
            if self.0.len() < self.0.capacity() / 4 {
                self.0.shrink_to(self.0.len() * 2);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The objects, ordered by name.
    fn values(&self) -> impl Iterator<Item = &Arc<T>> {
        self.0.iter().map(|(_, value)| value)
    }
}

#[derive(Debug)]
struct Maps<T> {
    /// (namespace, cluster) -> object name -> compact object.
    by_cluster: HashMap<ClusterKey, ClusterObjects<T>>,
    /// (namespace, object name) -> owning cluster (to move or remove objects).
    owner: HashMap<(String, String), String>,
}

impl<T> Default for Maps<T> {
    fn default() -> Self {
        Self {
            by_cluster: HashMap::new(),
            owner: HashMap::new(),
        }
    }
}

impl<T> Maps<T> {
    fn remove(&mut self, namespace: &str, name: &str) -> Option<ClusterKey> {
        let cluster = self.owner.remove(&(namespace.to_owned(), name.to_owned()))?;
        let key = ClusterKey::new(namespace, cluster);
        if let Some(objects) = self.by_cluster.get_mut(&key) {
            objects.remove(name);
            if objects.is_empty() {
                self.by_cluster.remove(&key);
            }
        }
        Some(key)
    }

    fn insert(&mut self, namespace: String, name: String, cluster: String, value: T) -> Option<ClusterKey> {
        let previous = self.remove(&namespace, &name).filter(|k| k.name != cluster);
        self.owner.insert((namespace.clone(), name.clone()), cluster.clone());
        self.by_cluster
            .entry(ClusterKey::new(namespace, cluster))
            .or_default()
            .insert(name, Arc::new(value));
        previous
    }
}

/// A shared index of compact objects grouped by cluster.
#[derive(Debug)]
pub struct ClusterIndex<T> {
    inner: Arc<RwLock<State<T>>>,
}

#[derive(Debug)]
struct State<T> {
    live: Maps<T>,
    /// The map being rebuilt between `Init` and `InitDone`.
    rebuilding: Option<Maps<T>>,
    ready: bool,
}

impl<T> Clone for ClusterIndex<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: Compact> Default for ClusterIndex<T> {
    fn default() -> Self {
        Self {
            inner: Arc::new(RwLock::new(State {
                live: Maps::default(),
                rebuilding: None,
                ready: false,
            })),
        }
    }
}

impl<T: Compact> ClusterIndex<T> {
    /// Apply one watcher event; returns the clusters whose objects changed.
    pub fn apply(&self, event: &Event<T::Source>) -> Vec<ClusterKey> {
        let Ok(mut state) = self.inner.write() else {
            return Vec::new();
        };
        let mut touched = Vec::new();
        match event {
            Event::Init => state.rebuilding = Some(Maps::default()),
            Event::InitApply(obj) => {
                if let Some((ns, name, cluster)) = T::locate(obj) {
                    touched.push(ClusterKey::new(ns.clone(), cluster.clone()));
                    let value = T::compact(obj);
                    state
                        .rebuilding
                        .get_or_insert_with(Maps::default)
                        .insert(ns, name, cluster, value);
                }
            }
            Event::InitDone => {
                let fresh = state.rebuilding.take().unwrap_or_default();
                // Clusters that lost objects while the watch was down need a pass too.
                touched.extend(
                    state
                        .live
                        .by_cluster
                        .keys()
                        .filter(|k| !fresh.by_cluster.contains_key(*k))
                        .cloned(),
                );
                state.live = fresh;
                state.ready = true;
            }
            Event::Apply(obj) => match T::locate(obj) {
                Some((ns, name, cluster)) => {
                    touched.push(ClusterKey::new(ns.clone(), cluster.clone()));
                    let value = T::compact(obj);
                    touched.extend(state.live.insert(ns, name, cluster, value));
                }
                None => touched.extend(remove_unlocated::<T>(&mut state.live, obj)),
            },
            Event::Delete(obj) => touched.extend(remove_unlocated::<T>(&mut state.live, obj)),
        }
        touched
    }

    /// The objects of one cluster, ordered by name.
    pub fn cluster(&self, key: &ClusterKey) -> Vec<Arc<T>> {
        self.inner
            .read()
            .map(|s| {
                s.live
                    .by_cluster
                    .get(key)
                    .map(|m| m.values().cloned().collect())
                    .unwrap_or_default()
            })
            .unwrap_or_default()
    }

    /// Whether an object with this name is indexed in the namespace.
    pub fn contains(&self, namespace: &str, name: &str) -> bool {
        self.inner
            .read()
            .map(|s| s.live.owner.contains_key(&(namespace.to_owned(), name.to_owned())))
            .unwrap_or(false)
    }

    /// Number of indexed objects.
    pub fn len(&self) -> usize {
        self.inner.read().map(|s| s.live.owner.len()).unwrap_or(0)
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the initial list has completed.
    pub fn is_ready(&self) -> bool {
        self.inner.read().map(|s| s.ready).unwrap_or(false)
    }
}

fn remove_unlocated<T: Compact>(maps: &mut Maps<T>, obj: &T::Source) -> Option<ClusterKey> {
    let meta = kube::Resource::meta(obj);
    maps.remove(meta.namespace.as_deref().unwrap_or_default(), meta.name.as_deref()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    /// A pod reduced to its name, located by a `cluster` label.
    #[derive(Debug, PartialEq)]
    struct Named(String);

    impl Compact for Named {
        type Source = Pod;

        fn locate(pod: &Pod) -> Option<(String, String, String)> {
            let cluster = pod.metadata.labels.as_ref()?.get("cluster")?.clone();
            Some((pod.metadata.namespace.clone()?, pod.metadata.name.clone()?, cluster))
        }

        fn compact(pod: &Pod) -> Self {
            Self(pod.metadata.name.clone().unwrap_or_default())
        }
    }

    fn pod(name: &str, cluster: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                labels: Some([("cluster".to_owned(), cluster.to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn names(index: &ClusterIndex<Named>, cluster: &str) -> Vec<String> {
        index
            .cluster(&ClusterKey::new("ns", cluster))
            .iter()
            .map(|named| named.0.clone())
            .collect()
    }

    #[test]
    fn cluster_objects_stay_sorted_by_name_and_replace_in_place() {
        let mut objects = ClusterObjects::default();
        for name in ["c", "a", "d", "b"] {
            objects.insert(name.to_owned(), Arc::new(name.to_owned()));
        }
        objects.insert("b".to_owned(), Arc::new("b again".to_owned()));
        let values: Vec<&str> = objects.values().map(|value| value.as_str()).collect();
        assert_eq!(values, ["a", "b again", "c", "d"]);
        assert_eq!(objects.0.capacity(), 4, "a few entries take exactly their room");
        objects.remove("c");
        objects.remove("not held");
        let values: Vec<&str> = objects.values().map(|value| value.as_str()).collect();
        assert_eq!(values, ["a", "b again", "d"]);
    }

    #[test]
    fn cluster_objects_give_memory_back_when_a_large_group_shrinks() {
        let mut objects = ClusterObjects::default();
        for i in 0..1_000 {
            objects.insert(format!("worker-{i:04}"), Arc::new(i));
        }
        assert!(objects.0.capacity() >= 1_000);
        for i in 10..1_000 {
            objects.remove(&format!("worker-{i:04}"));
        }
        assert_eq!(objects.values().count(), 10);
        assert!(
            objects.0.capacity() <= 40,
            "capacity {} for 10 entries",
            objects.0.capacity()
        );
        for i in 0..10 {
            objects.remove(&format!("worker-{i:04}"));
        }
        assert!(objects.is_empty());
    }

    #[test]
    fn the_index_follows_the_watch_protocol_and_moves_objects_between_clusters() {
        let index = ClusterIndex::<Named>::default();
        index.apply(&Event::Init);
        index.apply(&Event::InitApply(pod("w-2", "one")));
        index.apply(&Event::InitApply(pod("w-1", "one")));
        assert!(!index.is_ready());
        assert!(
            names(&index, "one").is_empty(),
            "the rebuilt map is not live before InitDone"
        );
        index.apply(&Event::InitDone);
        assert!(index.is_ready());
        assert_eq!(names(&index, "one"), ["w-1", "w-2"]);

        // Relabelled to another cluster: both clusters are touched and the object moves.
        let touched = index.apply(&Event::Apply(pod("w-1", "two")));
        assert_eq!(touched, [ClusterKey::new("ns", "two"), ClusterKey::new("ns", "one")]);
        assert_eq!(
            (names(&index, "one"), names(&index, "two")),
            (vec!["w-2".to_owned()], vec!["w-1".to_owned()])
        );

        let touched = index.apply(&Event::Delete(pod("w-2", "one")));
        assert_eq!(touched, [ClusterKey::new("ns", "one")]);
        assert!(names(&index, "one").is_empty());
        assert!(index.contains("ns", "w-1") && !index.contains("ns", "w-2"));
        assert_eq!(index.len(), 1);

        // A relist that no longer has cluster two's pod touches cluster two.
        index.apply(&Event::Init);
        let touched = index.apply(&Event::InitDone);
        assert_eq!(touched, [ClusterKey::new("ns", "two")]);
        assert!(index.is_empty());
    }
}
