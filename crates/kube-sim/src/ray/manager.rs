//! [`HollowRay`]: keeps one [`HollowRayHead`] per RayCluster whose head pod is Running, routes head Services to
//! them and drives submitter pods.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use http::StatusCode;
use parking_lot::Mutex;
use serde_json::Value;

use super::head::{HollowRayHead, text};
use super::submitter::SubmitterHook;
use crate::http::proxy::{ProxyBackend, ProxyFuture, ProxyRequest, ProxyTarget};
use crate::kinds::Gvr;
use crate::select::{LabelRequirement, LabelSelector};
use crate::server::SimHandle;
use crate::store::{ListOptions, Store, WatchEvent, WatchOptions};

/// Label naming a Ray pod's / Service's RayCluster.
pub const CLUSTER_LABEL: &str = "ray.io/cluster";
/// Label naming a Ray pod's node type (`head` / `worker`).
pub const NODE_TYPE_LABEL: &str = "ray.io/node-type";

/// The RayCluster resource (`ray.io/v1`, `rayclusters`).
pub fn rayclusters_gvr() -> Gvr {
    Gvr::new("ray.io", "v1", "rayclusters")
}

/// How hollow Ray heads behave.
#[derive(Debug, Clone, PartialEq)]
pub struct HollowRayOptions {
    /// How long a submitted job stays `PENDING`.
    pub job_pending: Duration,
    /// How long a job stays `RUNNING` before it ends (unless its entrypoint says `sleep N`).
    pub job_run: Duration,
    /// How long a new or changed serve application stays `DEPLOYING` before `RUNNING`.
    pub serve_deploy: Duration,
    /// The `ray_version` reported by `/api/version`.
    pub ray_version: String,
}

impl Default for HollowRayOptions {
    fn default() -> Self {
        Self {
            job_pending: Duration::from_millis(100),
            job_run: Duration::from_millis(500),
            serve_deploy: Duration::from_millis(500),
            ray_version: "2.52.0".into(),
        }
    }
}

/// The head of one RayCluster, tied to the head pod it runs in.
struct Active {
    pod_uid: String,
    head: Arc<HollowRayHead>,
}

pub(super) struct Shared {
    pub(super) store: Store,
    options: HollowRayOptions,
    /// (namespace, cluster) → its live head.
    heads: Mutex<HashMap<(String, String), Active>>,
}

impl Shared {
    /// The live head of a cluster.
    pub(super) fn head(&self, namespace: &str, cluster: &str) -> Option<Arc<HollowRayHead>> {
        self.heads
            .lock()
            .get(&(namespace.to_string(), cluster.to_string()))
            .map(|a| a.head.clone())
    }

    /// The head a Service routes to: the cluster its selector (else its labels) names with `ray.io/cluster`.
    pub(super) fn head_for_service(&self, namespace: &str, service: &Value) -> Option<Arc<HollowRayHead>> {
        let cluster = service["spec"]["selector"][CLUSTER_LABEL]
            .as_str()
            .or_else(|| service["metadata"]["labels"][CLUSTER_LABEL].as_str())?;
        self.head(namespace, cluster)
    }

    /// Brings the head of one cluster in line with the store.
    fn reconcile(&self, namespace: &str, cluster: &str) {
        let running_pod = self.running_head_pod(namespace, cluster);
        let key = (namespace.to_string(), cluster.to_string());
        let mut heads = self.heads.lock();
        match running_pod {
            Some(uid) => {
                if heads.get(&key).is_none_or(|a| a.pod_uid != uid) {
                    tracing::debug!(namespace, cluster, pod_uid = %uid, "hollow ray head up");
                    let head = Arc::new(HollowRayHead::new(self.options.clone()));
                    heads.insert(key, Active { pod_uid: uid, head });
                }
            }
            None => {
                if heads.remove(&key).is_some() {
                    tracing::debug!(namespace, cluster, "hollow ray head down");
                }
            }
        }
    }

    /// The uid of the cluster's Running, not deleting head pod, when the RayCluster exists.
    fn running_head_pod(&self, namespace: &str, cluster: &str) -> Option<String> {
        let rc = self.store.get(&rayclusters_gvr(), Some(namespace), cluster).ok()?;
        if rc.value["metadata"]["deletionTimestamp"].is_string() {
            return None;
        }
        let opts = ListOptions {
            label_selector: LabelSelector(vec![
                LabelRequirement::Equal(CLUSTER_LABEL.into(), cluster.into()),
                LabelRequirement::Equal(NODE_TYPE_LABEL.into(), "head".into()),
            ]),
            ..ListOptions::default()
        };
        let pods = self
            .store
            .list(&crate::kinds::Gvr::pods(), Some(namespace), &opts)
            .ok()?;
        pods.items
            .iter()
            .find(|p| p.value["status"]["phase"] == "Running" && p.value["metadata"]["deletionTimestamp"].is_null())
            .map(|p| p.uid().to_string())
    }

    fn reconcile_all(&self) {
        let mut keys: Vec<(String, String)> = self.heads.lock().keys().cloned().collect();
        if let Ok(list) = self.store.list(&rayclusters_gvr(), None, &ListOptions::default()) {
            keys.extend(
                list.items
                    .iter()
                    .map(|o| (o.namespace().unwrap_or_default().to_string(), o.name().to_string())),
            );
        }
        keys.sort();
        keys.dedup();
        for (ns, c) in keys {
            self.reconcile(&ns, &c);
        }
    }

    fn on_event(&self, ev: &WatchEvent, is_pod: bool) {
        let Some(obj) = ev.object() else { return };
        let ns = obj.namespace().unwrap_or_default();
        if is_pod {
            if let Some(c) = obj.value["metadata"]["labels"][CLUSTER_LABEL].as_str() {
                self.reconcile(ns, c);
            }
        } else {
            self.reconcile(ns, obj.name());
        }
    }
}

/// Routes head Services to the head of the cluster their selector points at (like kube-proxy would to the
/// head pod). Holds the manager weakly: once the [`HollowRay`] is dropped it answers 503.
struct Dispatcher(Weak<Shared>);

impl ProxyBackend for Dispatcher {
    fn handle(&self, request: ProxyRequest) -> ProxyFuture {
        let head = self
            .0
            .upgrade()
            .and_then(|s| s.head_for_service(&request.namespace, &request.service_object));
        match head {
            Some(h) => h.handle(request),
            None => Box::pin(std::future::ready(text(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("no endpoints available for service \"{}\"", request.service),
            ))),
        }
    }
}

/// Hollow Ray heads attached to a simulator (see the [module documentation](super)). Dropping it stops the
/// watcher; the proxy route and pod hook it registered then answer 503 / leave pods to the default rules.
pub struct HollowRay {
    shared: Arc<Shared>,
    proxy_id: u64,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for HollowRay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HollowRay")
            .field("heads", &self.shared.heads.lock().len())
            .finish()
    }
}

impl HollowRay {
    /// Attaches hollow Ray heads to a running simulator: registers a service-proxy backend for every Service
    /// labelled `ray.io/node-type=head`, a submitter [`crate::agents::PodExitHook`] in the simulator's
    /// [`crate::AgentConfig::pod_hooks`], and spawns the task that watches RayClusters and head pods (it retries
    /// until the RayCluster CRD is installed). Must be called inside a tokio runtime.
    pub fn attach(handle: &SimHandle, options: HollowRayOptions) -> Self {
        let shared = Arc::new(Shared {
            store: handle.store().clone(),
            options,
            heads: Mutex::new(HashMap::new()),
        });
        let target = ProxyTarget::Labels(head_selector());
        let proxy_id = handle.register_proxy(target, Arc::new(Dispatcher(Arc::downgrade(&shared))));
        handle
            .agent_config()
            .pod_hooks
            .register(Arc::new(SubmitterHook::new(Arc::downgrade(&shared))));
        let task = tokio::spawn(run(shared.clone()));
        Self { shared, proxy_id, task }
    }

    /// The live head of a RayCluster, if its head pod is Running.
    pub fn head(&self, namespace: &str, cluster: &str) -> Option<Arc<HollowRayHead>> {
        self.shared.head(namespace, cluster)
    }

    /// `(namespace, cluster)` of every live head, sorted.
    pub fn clusters(&self) -> Vec<(String, String)> {
        let mut v: Vec<_> = self.shared.heads.lock().keys().cloned().collect();
        v.sort();
        v
    }

    /// Waits (up to `timeout`) until a RayCluster's head is live.
    pub async fn wait_for_head(&self, namespace: &str, cluster: &str, timeout: Duration) -> Option<Arc<HollowRayHead>> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(h) = self.head(namespace, cluster) {
                return Some(h);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops the watcher and removes the proxy route (the pod hook stays registered but inert).
    pub fn detach(self, handle: &SimHandle) {
        handle.unregister_proxy(self.proxy_id);
    }
}

impl Drop for HollowRay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn head_selector() -> LabelSelector {
    LabelSelector(vec![LabelRequirement::Equal(NODE_TYPE_LABEL.into(), "head".into())])
}

/// Waits for the next event of an optional watch (forever when there is none).
async fn next_opt(w: &mut Option<crate::store::WatchReceiver>) -> Option<WatchEvent> {
    match w {
        Some(w) => w.next().await,
        None => std::future::pending().await,
    }
}

/// The watch loop: (re)opens watches on head pods and RayClusters, reconciles the clusters they touch, and
/// re-reconciles everything whenever a watch ends.
async fn run(shared: Arc<Shared>) {
    loop {
        let pod_opts = WatchOptions {
            label_selector: head_selector(),
            ..WatchOptions::default()
        };
        let mut pods = match shared.store.watch(&Gvr::pods(), None, pod_opts) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "hollow ray: cannot watch pods");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let mut clusters = shared
            .store
            .watch(&rayclusters_gvr(), None, WatchOptions::default())
            .ok();
        let retry_crd = clusters.is_none();
        shared.reconcile_all();
        let retry = tokio::time::sleep(Duration::from_millis(500));
        tokio::pin!(retry);
        loop {
            tokio::select! {
                ev = pods.next() => match ev {
                    Some(WatchEvent::Error(_)) | None => break,
                    Some(ev) => shared.on_event(&ev, true),
                },
                ev = next_opt(&mut clusters) => match ev {
                    Some(WatchEvent::Error(_)) | None => break,
                    Some(ev) => shared.on_event(&ev, false),
                },
                () = &mut retry, if retry_crd => break,
            }
        }
    }
}
