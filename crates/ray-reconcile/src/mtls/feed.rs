//! How the mTLS controller learns about clusters and pod IPs without watches of its own: the
//! RayCluster controller's RayCluster and Pod watches already see everything it needs, so they hand
//! over (a) every change of a cluster that wants mTLS or still holds the mTLS finalizer and (b) the
//! pod IPs of those clusters whenever their pods change. Clusters without TLS cost one set lookup per
//! event and nothing is copied for them.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

use ray_api::RayCluster;
use tokio::sync::mpsc;

use crate::executor::cluster_key;
use crate::index::{ClusterIndex, ClusterKey};
use crate::observed::PodInfo;

/// One hand-over from the RayCluster controller.
#[derive(Clone, Debug)]
pub enum MtlsSignal {
    /// A cluster that wants mTLS (or holds the finalizer) was created or changed.
    Apply(Box<RayCluster>),
    /// A tracked cluster went away or no longer concerns the mTLS controller.
    Forget(ClusterKey),
    /// The pod IPs of a tracked cluster (unsorted, empties included).
    Pods {
        /// The cluster.
        key: ClusterKey,
        /// `status.podIP` of each of its pods.
        ips: Vec<String>,
    },
}

/// The shared hand-over channel (cheap to clone: clones share it).
#[derive(Clone, Debug)]
pub struct MtlsFeed {
    sender: mpsc::UnboundedSender<MtlsSignal>,
    receiver: Arc<Mutex<Option<mpsc::UnboundedReceiver<MtlsSignal>>>>,
    tracked: Arc<RwLock<HashSet<ClusterKey>>>,
}

impl Default for MtlsFeed {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether the mTLS controller cares about `cluster`.
pub fn concerns_mtls(cluster: &RayCluster) -> bool {
    super::tls_requested(cluster) || super::has_mtls_finalizer(cluster)
}

impl MtlsFeed {
    /// A feed whose receiver is not taken yet.
    pub fn new() -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Self {
            sender,
            receiver: Arc::new(Mutex::new(Some(receiver))),
            tracked: Arc::default(),
        }
    }

    /// The receiving end, once (the mTLS controller takes it).
    pub fn take_receiver(&self) -> Option<mpsc::UnboundedReceiver<MtlsSignal>> {
        self.receiver.lock().ok().and_then(|mut r| r.take())
    }

    fn is_tracked(&self, key: &ClusterKey) -> bool {
        self.tracked.read().is_ok_and(|t| t.contains(key))
    }

    fn send(&self, signal: MtlsSignal) {
        // A closed channel means the mTLS controller stopped; nothing is waiting for the signal.
        let _ = self.sender.send(signal);
    }

    /// A RayCluster watch event (`deleted`: the cluster is gone). `pods` is the watch scope's pod
    /// index, so a cluster that starts to concern the controller arrives with its current pod IPs.
    pub fn publish_cluster(&self, cluster: &RayCluster, deleted: bool, pods: &ClusterIndex<PodInfo>) {
        let key = cluster_key(cluster);
        if deleted || !concerns_mtls(cluster) {
            let was_tracked = self.tracked.write().is_ok_and(|mut t| t.remove(&key));
            if was_tracked {
                self.send(MtlsSignal::Forget(key));
            }
            return;
        }
        let newly = self.tracked.write().is_ok_and(|mut t| t.insert(key.clone()));
        self.send(MtlsSignal::Apply(Box::new(cluster.clone())));
        if newly {
            self.publish_pods(&key, pods);
        }
    }

    /// Pods of `key` changed: hand over its pod IPs when the cluster is tracked.
    pub fn publish_pods(&self, key: &ClusterKey, pods: &ClusterIndex<PodInfo>) {
        if !self.is_tracked(key) {
            return;
        }
        let ips = pods.cluster(key).iter().map(|p| p.pod_ip.clone()).collect();
        self.send(MtlsSignal::Pods { key: key.clone(), ips });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(tls: bool) -> RayCluster {
        let mut c: RayCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": []}}}}
        }))
        .unwrap();
        if tls {
            c.spec.tls_options = Some(ray_api::TlsOptions { enabled: Some(true) });
        }
        c
    }

    #[test]
    fn only_tls_clusters_are_handed_over() {
        let feed = MtlsFeed::new();
        let mut rx = feed.take_receiver().unwrap();
        assert!(feed.take_receiver().is_none());
        let pods = ClusterIndex::<PodInfo>::default();
        feed.publish_cluster(&cluster(false), false, &pods);
        feed.publish_pods(&ClusterKey::new("ns", "c"), &pods);
        assert!(rx.try_recv().is_err());

        feed.publish_cluster(&cluster(true), false, &pods);
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Apply(_)));
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Pods { ips, .. } if ips.is_empty()));
        feed.publish_pods(&ClusterKey::new("ns", "c"), &pods);
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Pods { .. }));

        // TLS switched off (no finalizer): forgotten once.
        feed.publish_cluster(&cluster(false), false, &pods);
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Forget(_)));
        feed.publish_cluster(&cluster(false), true, &pods);
        assert!(rx.try_recv().is_err());
    }
}
