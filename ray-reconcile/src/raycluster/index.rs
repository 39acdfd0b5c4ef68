//! Memory-lean caches of the pods and head services of Ray clusters (linkerd-style "index, don't
//! cache"): each watched object is reduced to a compact struct the moment it arrives, grouped by
//! namespace and owning cluster, and the full object is dropped.
//!
//! The index follows a watcher's event protocol (`Init` / `InitApply` / `InitDone` swap a fresh map
//! in, as kube's reflector `Writer` does) and reports which clusters an event touched so the
//! controller can trigger exactly those reconciles.

use kube::runtime::watcher::Event;
use std::collections::{BTreeMap, HashMap};
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

type ClusterObjects<T> = BTreeMap<String, Arc<T>>;

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
