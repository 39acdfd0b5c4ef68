//! How the mTLS controller learns about clusters and pod IPs without watches of its own: the
//! RayCluster controller's RayCluster and Pod watches already see everything it needs, so they hand
//! over (a) every change of a cluster that wants mTLS and (b) the head and worker pod IPs of those
//! clusters whenever their pods change. Clusters without TLS cost one set lookup per event and nothing
//! is copied for them.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

use ray_api::RayCluster;
use tokio::sync::mpsc;

use crate::raycluster::executor::cluster_key;
use crate::raycluster::index::{ClusterIndex, ClusterKey};
use crate::raycluster::observed::{PodInfo, PodRole};
use ray_autoscale::PodPhase;

use super::plan::PodIps;

/// One hand-over from the RayCluster controller.
#[derive(Clone, Debug)]
pub enum MtlsSignal {
    /// A cluster that wants mTLS was created or changed.
    Apply(Box<RayCluster>),
    /// A tracked cluster went away or no longer concerns the mTLS controller.
    Forget(ClusterKey),
    /// The pod IPs of a tracked cluster.
    Pods {
        /// The cluster.
        key: ClusterKey,
        /// IPs of its live head and worker pods.
        ips: PodIps,
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
    super::tls_requested(cluster)
}

/// KubeRay's `getPodIPs` per node type: pods that are not terminating, not finished and have an IP.
pub fn pod_ips<'a>(pods: impl IntoIterator<Item = &'a PodInfo>) -> PodIps {
    let mut ips = PodIps::default();
    for pod in pods {
        let finished = matches!(pod.pod.phase, PodPhase::Succeeded | PodPhase::Failed);
        if pod.pod.deletion_timestamp_set || finished || pod.pod_ip.is_empty() {
            continue;
        }
        match pod.role {
            PodRole::Head => ips.head.push(pod.pod_ip.clone()),
            PodRole::Worker => ips.worker.push(pod.pod_ip.clone()),
            PodRole::Other => {}
        }
    }
    ips
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

    /// Pods of `key` changed: hand over its pod IPs when the cluster is tracked and the pod index holds
    /// its initial list (before that, "no pods" would only mean "not listed yet").
    pub fn publish_pods(&self, key: &ClusterKey, pods: &ClusterIndex<PodInfo>) {
        if !pods.is_ready() || !self.is_tracked(key) {
            return;
        }
        let ips = pod_ips(pods.cluster(key).iter().map(AsRef::as_ref));
        self.send(MtlsSignal::Pods { key: key.clone(), ips });
    }

    /// The pod index was (re)listed: hand over the pod IPs of every tracked cluster.
    pub fn publish_all_pods(&self, pods: &ClusterIndex<PodInfo>) {
        let tracked: Vec<ClusterKey> = self
            .tracked
            .read()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        for key in &tracked {
            self.publish_pods(key, pods);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ray_autoscale::ObservedPod;

    fn pod(role: PodRole, ip: &str, phase: PodPhase, terminating: bool) -> PodInfo {
        let mut observed = ObservedPod::running(format!("p-{ip}"));
        observed.phase = phase;
        observed.deletion_timestamp_set = terminating;
        PodInfo {
            pod: observed,
            role,
            group: String::new(),
            pod_ip: ip.to_owned(),
            ready: None,
            container_problem: None,
            awaiting_node: false,
            upgrade: Default::default(),
        }
    }

    #[test]
    fn only_live_head_and_worker_pods_count() {
        let pods = [
            pod(PodRole::Head, "10.0.0.1", PodPhase::Running, false),
            pod(PodRole::Worker, "10.0.0.2", PodPhase::Running, false),
            pod(PodRole::Worker, "10.0.0.3", PodPhase::Running, true),
            pod(PodRole::Worker, "10.0.0.4", PodPhase::Failed, false),
            pod(PodRole::Worker, "", PodPhase::Pending, false),
            pod(PodRole::Other, "10.0.0.5", PodPhase::Running, false),
        ];
        let ips = pod_ips(&pods);
        assert_eq!(ips.head, ["10.0.0.1"]);
        assert_eq!(ips.worker, ["10.0.0.2"]);
    }

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
        // Before the pod index is listed nothing about pods is handed over.
        feed.publish_cluster(&cluster(true), false, &pods);
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Apply(_)));
        assert!(rx.try_recv().is_err());
        feed.publish_cluster(&cluster(false), false, &pods);
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Forget(_)));
        pods.apply(&kube::runtime::watcher::Event::Init);
        pods.apply(&kube::runtime::watcher::Event::InitDone);
        feed.publish_cluster(&cluster(false), false, &pods);
        feed.publish_pods(&ClusterKey::new("ns", "c"), &pods);
        assert!(rx.try_recv().is_err());

        feed.publish_cluster(&cluster(true), false, &pods);
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Apply(_)));
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Pods { ips, .. } if ips == PodIps::default()));
        feed.publish_pods(&ClusterKey::new("ns", "c"), &pods);
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Pods { .. }));

        // A relist hands over every tracked cluster.
        feed.publish_all_pods(&pods);
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Pods { .. }));
        assert!(rx.try_recv().is_err());

        // TLS switched off: forgotten once.
        feed.publish_cluster(&cluster(false), false, &pods);
        assert!(matches!(rx.try_recv().unwrap(), MtlsSignal::Forget(_)));
        feed.publish_cluster(&cluster(false), true, &pods);
        assert!(rx.try_recv().is_err());
    }
}
