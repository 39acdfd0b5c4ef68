//! Reflector stores of several watch scopes (one per `--watch-namespace`, or one for all namespaces), shared
//! so that one controller reads what another's watch keeps, by namespace and name.

use std::hash::Hash;
use std::sync::{Arc, PoisonError, RwLock};

use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};

/// A watch scope's namespace (`None`: all namespaces) and its store.
type ScopeStore<K> = (Option<String>, Store<K>);

/// The store of each watch scope (`None`: all namespaces). Cheap to clone: clones share the stores.
pub struct ScopedStores<K>
where
    K: Resource + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    stores: Arc<RwLock<Vec<ScopeStore<K>>>>,
}

impl<K> Clone for ScopedStores<K>
where
    K: Resource + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    fn clone(&self) -> Self {
        Self {
            stores: Arc::clone(&self.stores),
        }
    }
}

impl<K> Default for ScopedStores<K>
where
    K: Resource + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    fn default() -> Self {
        Self { stores: Arc::default() }
    }
}

impl<K> ScopedStores<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone + Default,
{
    /// Shares the store of the watch scope `namespace`, replacing the scope's previous one.
    pub fn share(&self, namespace: Option<String>, store: Store<K>) {
        let mut stores = self.stores.write().unwrap_or_else(PoisonError::into_inner);
        stores.retain(|(scope, _)| *scope != namespace);
        stores.push((namespace, store));
    }

    /// The object `namespace/name` from the store of a scope that covers `namespace`; `None` when none
    /// holds it. A store may lag the API server by a watch event, as an informer cache does.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        let key = ObjectRef::new(name).within(namespace);
        let stores = self.stores.read().unwrap_or_else(PoisonError::into_inner);
        stores
            .iter()
            .filter(|(scope, _)| scope.as_deref().is_none_or(|scope| scope == namespace))
            .find_map(|(_, store)| store.get(&key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;
    use kube::runtime::{reflector, watcher};

    fn config_map(namespace: &str, name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn objects_are_read_from_a_store_whose_scope_covers_their_namespace() {
        let stores = ScopedStores::<ConfigMap>::default();
        assert!(stores.get("team-a", "c").is_none(), "no store shared yet");
        let (reader, mut writer) = reflector::store::<ConfigMap>();
        writer.apply_watcher_event(&watcher::Event::Apply(config_map("team-a", "c")));
        stores.share(Some("team-b".into()), reader.clone());
        assert!(
            stores.get("team-a", "c").is_none(),
            "the team-b scope does not cover team-a"
        );
        stores.share(Some("team-a".into()), reader.clone());
        assert_eq!(stores.get("team-a", "c").as_deref(), Some(&config_map("team-a", "c")));
        assert!(stores.get("team-a", "other").is_none());
        let everywhere = ScopedStores::<ConfigMap>::default();
        everywhere.share(None, reader);
        assert!(
            everywhere.get("team-a", "c").is_some(),
            "the all-namespaces scope covers every namespace"
        );
    }
}
