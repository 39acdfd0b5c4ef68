//! One RayCluster watch for every controller. The RayCluster controller's watch publishes, for each
//! RayCluster it sees change or go, the cluster's owner references; the RayJob and RayService controllers
//! turn those into reconcile requests for their own objects instead of opening their own RayCluster watches.
//!
//! The feed also shares the RayCluster controller's stores, so that the RayJob controller reads its clusters
//! from them (as KubeRay reads them from its informer cache) instead of asking the API server each pass.
//!
//! Delivery is best effort: a subscriber that falls more than [`CLUSTER_FEED_CAPACITY`] changes behind skips
//! them (and logs it). That costs a prompt reaction, never correctness: both controllers requeue their active
//! objects on a timer, as KubeRay's do.

use std::sync::Arc;

use futures::Stream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use ray_api::RayCluster;
use tokio::sync::broadcast;
use tracing::warn;

use crate::scoped_stores::ScopedStores;
use crate::stored::Stored;

/// Changes a subscriber may fall behind before it skips some.
pub const CLUSTER_FEED_CAPACITY: usize = 1024;

/// The owners of one RayCluster that changed or went away.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterOwners {
    /// The RayCluster's namespace.
    pub namespace: String,
    /// Its owner references.
    pub owners: Vec<OwnerReference>,
}

/// The shared RayCluster change feed (cheap to clone: clones share the channel and the stores).
#[derive(Clone)]
pub struct ClusterFeed {
    sender: broadcast::Sender<Arc<ClusterOwners>>,
    stores: ScopedStores<Stored<RayCluster>>,
}

impl std::fmt::Debug for ClusterFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterFeed").finish_non_exhaustive()
    }
}

impl Default for ClusterFeed {
    fn default() -> Self {
        Self::new()
    }
}

impl ClusterFeed {
    /// A feed with no subscribers yet.
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(CLUSTER_FEED_CAPACITY);
        Self {
            sender,
            stores: ScopedStores::default(),
        }
    }

    /// Shares the RayCluster store of the watch scope `namespace` (`None`: all namespaces).
    pub fn share_store(&self, namespace: Option<String>, store: Store<Stored<RayCluster>>) {
        self.stores.share(namespace, store);
    }

    /// The RayCluster `namespace/name` as the shared stores hold it: `None` when no store holds it (not
    /// watched yet, or not in a store at all). A store may lag the API server by a watch event, as an
    /// informer cache does; callers that must tell "missing" from "not seen yet" ask the API server on
    /// `None`.
    pub fn cached_cluster(&self, namespace: &str, name: &str) -> Option<RayCluster> {
        let stored = self.stores.get(namespace, name)?;
        stored
            .decode()
            .inspect_err(|e| warn!(raycluster = %name, %namespace, error = %e, "cannot decode the stored RayCluster"))
            .ok()
    }

    /// Announces that `cluster` changed or was deleted. Clusters without owners are not announced: no
    /// other controller cares about them.
    pub fn publish<K: Resource>(&self, cluster: &K) {
        if let Some(change) = owners_of(cluster.meta()) {
            // No subscriber is not an error: the feed outlives controllers that stopped.
            let _ = self.sender.send(change);
        }
    }

    /// What a RayCluster watch publishes of each event it applied to the store subscribers read: changes and
    /// deletions at once, a relist's clusters once the store holds the whole list (at `InitDone`), so that a
    /// subscriber triggered by the feed finds the cluster as announced in [`ClusterFeed::cached_cluster`].
    pub fn publisher<K: Resource>(&self) -> impl FnMut(&watcher::Event<K>) + Send + 'static {
        let feed = self.clone();
        let mut relisted: Vec<Arc<ClusterOwners>> = Vec::new();
        move |event| match event {
            watcher::Event::Apply(cluster) | watcher::Event::Delete(cluster) => feed.publish(cluster),
            watcher::Event::Init => relisted.clear(),
            watcher::Event::InitApply(cluster) => relisted.extend(owners_of(cluster.meta())),
            watcher::Event::InitDone => {
                for change in relisted.drain(..) {
                    let _ = feed.sender.send(change);
                }
            }
        }
    }

    /// Reconcile requests for the owners of kind `K` of the clusters that change, limited to `namespace`
    /// when given (one watch scope of `--watch-namespace`).
    pub fn owners_of_kind<K>(&self, namespace: Option<String>) -> impl Stream<Item = ObjectRef<K>> + Send + 'static
    where
        K: Resource<DynamicType = ()> + 'static,
    {
        let receiver = self.sender.subscribe();
        let changes = futures::stream::unfold(receiver, |mut receiver| async move {
            loop {
                match receiver.recv().await {
                    Ok(change) => return Some((change, receiver)),
                    Err(broadcast::error::RecvError::Lagged(skipped)) => {
                        warn!(skipped, kind = %K::kind(&()), "RayCluster feed fell behind; relying on requeues");
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        });
        futures::StreamExt::flat_map(changes, move |change| {
            futures::stream::iter(owner_refs::<K>(&change, namespace.as_deref()))
        })
    }
}

/// The owners of the cluster with `metadata`, if it has any.
fn owners_of(metadata: &ObjectMeta) -> Option<Arc<ClusterOwners>> {
    let owners = metadata.owner_references.as_ref().filter(|o| !o.is_empty())?;
    Some(Arc::new(ClusterOwners {
        namespace: metadata.namespace.clone().unwrap_or_default(),
        owners: owners.clone(),
    }))
}

/// The owners of kind `K` in a change, as object references (outside `namespace`: none).
fn owner_refs<K>(change: &ClusterOwners, namespace: Option<&str>) -> Vec<ObjectRef<K>>
where
    K: Resource<DynamicType = ()>,
{
    if namespace.is_some_and(|ns| ns != change.namespace) {
        return Vec::new();
    }
    let (kind, api_version) = (K::kind(&()), K::api_version(&()));
    change
        .owners
        .iter()
        .filter(|o| o.kind == kind && o.api_version == api_version)
        .map(|o| ObjectRef::new(&o.name).within(&change.namespace))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt as _;
    use ray_api::{RayJob, RayService};

    fn owned_cluster(namespace: &str, owners: &[(&str, &str)]) -> RayCluster {
        let mut cluster: RayCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "c", "namespace": namespace},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": []}}}}
        }))
        .unwrap();
        cluster.metadata.owner_references = Some(
            owners
                .iter()
                .map(|(kind, name)| OwnerReference {
                    api_version: "ray.io/v1".into(),
                    kind: (*kind).into(),
                    name: (*name).into(),
                    uid: format!("uid-{name}"),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                })
                .collect(),
        );
        cluster
    }

    #[tokio::test]
    async fn subscribers_get_their_own_kind_in_their_scope() {
        let feed = ClusterFeed::new();
        let mut jobs = Box::pin(feed.owners_of_kind::<RayJob>(None));
        let mut services = Box::pin(feed.owners_of_kind::<RayService>(Some("team-a".into())));
        feed.publish(&owned_cluster("team-b", &[("RayService", "svc-b")]));
        feed.publish(&owned_cluster("team-a", &[("RayJob", "job-a")]));
        feed.publish(&owned_cluster("team-a", &[("RayService", "svc-a")]));
        assert_eq!(jobs.next().await, Some(ObjectRef::new("job-a").within("team-a")));
        // The team-b RayService is outside the subscriber's scope.
        assert_eq!(services.next().await, Some(ObjectRef::new("svc-a").within("team-a")));
    }

    #[test]
    fn shared_clusters_are_read_decoded() {
        let feed = ClusterFeed::new();
        assert_eq!(feed.cached_cluster("team-a", "c"), None, "no store shared yet");
        let (reader, mut writer) = kube::runtime::reflector::store::<Stored<RayCluster>>();
        let cluster = owned_cluster("team-a", &[("RayJob", "job-a")]);
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(
            Stored::new(cluster.clone()).unwrap(),
        ));
        feed.share_store(Some("team-a".into()), reader);
        assert_eq!(feed.cached_cluster("team-a", "c"), Some(cluster));
    }

    #[test]
    fn a_relist_is_announced_once_the_store_holds_it() {
        let feed = ClusterFeed::new();
        let mut receiver = feed.sender.subscribe();
        let mut publish = feed.publisher::<RayCluster>();
        publish(&watcher::Event::Init);
        publish(&watcher::Event::InitApply(owned_cluster("ns", &[("RayJob", "a")])));
        publish(&watcher::Event::InitApply(owned_cluster("ns", &[])));
        assert!(receiver.try_recv().is_err(), "not before InitDone");
        publish(&watcher::Event::InitDone);
        assert_eq!(receiver.try_recv().unwrap().owners[0].name, "a");
        assert!(
            receiver.try_recv().is_err(),
            "clusters without owners are not announced"
        );
        publish(&watcher::Event::Apply(owned_cluster("ns", &[("RayJob", "b")])));
        assert_eq!(receiver.try_recv().unwrap().owners[0].name, "b");
        publish(&watcher::Event::Delete(owned_cluster("ns", &[("RayJob", "c")])));
        assert_eq!(receiver.try_recv().unwrap().owners[0].name, "c");
    }

    #[test]
    fn clusters_without_owners_are_not_announced() {
        let feed = ClusterFeed::new();
        let mut receiver = feed.sender.subscribe();
        feed.publish(&owned_cluster("ns", &[]));
        assert!(receiver.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_lagging_subscriber_skips_and_continues() {
        let feed = ClusterFeed::new();
        let mut jobs = Box::pin(feed.owners_of_kind::<RayJob>(None));
        for i in 0..CLUSTER_FEED_CAPACITY + 10 {
            feed.publish(&owned_cluster("ns", &[("RayJob", &format!("job-{i}"))]));
        }
        let first = jobs.next().await.unwrap();
        assert_eq!(first.name, "job-10");
    }
}
