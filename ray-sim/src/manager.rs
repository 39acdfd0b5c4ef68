//! [`HollowRay`]: keeps one [`HollowRayHead`] per RayCluster whose head pod is Running, routes head Services to
//! them and drives submitter pods.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use http::StatusCode;
use parking_lot::Mutex;
use serde_json::Value;

use crate::actors::RayNode;
use crate::autoscaler::{self, HollowAutoscalerOptions, ScaleEvent, ScaleLog};
use crate::dashboard_load::{DashboardLoad, annotated_delay};
use crate::head::{HollowRayHead, text};
use crate::submitter::SubmitterHook;
use kube_sim::http::proxy::{ProxyBackend, ProxyFuture, ProxyRequest, ProxyTarget};
use kube_sim::kinds::Gvr;
use kube_sim::select::{LabelRequirement, LabelSelector};
use kube_sim::server::SimHandle;
use kube_sim::store::{ListOptions, Store, WatchEvent, WatchOptions};

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
    /// How long a stopped job stays in its status before it turns `STOPPED` (Ray's job supervisor ends the
    /// entrypoint asynchronously after the stop API answers).
    pub job_stop: Duration,
    /// How long a new or changed serve application stays `DEPLOYING` with no deployments listed (Ray imports
    /// and builds the application first).
    pub serve_build: Duration,
    /// How long a new or changed serve application then stays `DEPLOYING` with its deployments `UPDATING`
    /// before `RUNNING`.
    pub serve_deploy: Duration,
    /// The `ray_version` reported by `/api/version`.
    pub ray_version: String,
    /// The hollow autoscaler (clusters whose head pod has the `autoscaler` sidecar).
    pub autoscaler: HollowAutoscalerOptions,
    /// How long every head's dashboard holds each request before answering (zero: answers at once). A
    /// RayCluster's [`crate::DASHBOARD_DELAY_ANNOTATION`] overrides it for that cluster.
    pub dashboard_delay: Duration,
}

impl Default for HollowRayOptions {
    fn default() -> Self {
        Self {
            job_pending: Duration::from_millis(100),
            job_run: Duration::from_millis(500),
            job_stop: Duration::ZERO,
            serve_build: Duration::ZERO,
            serve_deploy: Duration::from_millis(500),
            ray_version: "2.52.0".into(),
            autoscaler: HollowAutoscalerOptions::default(),
            dashboard_delay: Duration::ZERO,
        }
    }
}

/// The Ray version the hollow head's answers were last compared with (`scripts/install-ray.sh` pins it; the
/// `real_ray` test fails when the two part, until the comparison is redone).
pub const RECORDED_RAY_VERSION: &str = "2.60.0";

impl HollowRayOptions {
    /// The timings measured on real Ray ([`RECORDED_RAY_VERSION`], one head on a 2-core machine; see
    /// docs/ray-fidelity.md): a job is `PENDING` for about 1 s (supervisor actor and runtime env), a quick
    /// entrypoint is `RUNNING` for about 0.1 s, a stop takes about 2 s, a serve application builds for about 1 s and deploys its
    /// replicas in about 1 s more.
    pub fn recorded() -> Self {
        Self {
            job_pending: Duration::from_millis(1000),
            job_run: Duration::from_millis(100),
            job_stop: Duration::from_millis(2000),
            serve_build: Duration::from_millis(1100),
            serve_deploy: Duration::from_millis(1000),
            ray_version: RECORDED_RAY_VERSION.into(),
            ..Self::default()
        }
    }
}

/// The head of one RayCluster, tied to the head pod it runs in.
struct Active {
    pod_uid: String,
    head: Arc<HollowRayHead>,
}

pub(crate) struct Shared {
    pub(crate) store: Store,
    /// Container logs, where each head writes its own.
    pod_logs: kube_sim::PodLogs,
    options: HollowRayOptions,
    /// (namespace, cluster) → its live head.
    heads: Mutex<HashMap<(String, String), Active>>,
    /// Dashboard requests in flight across every head.
    dashboard_load: Arc<DashboardLoad>,
}

impl Shared {
    /// The live head of a cluster.
    pub(crate) fn head(&self, namespace: &str, cluster: &str) -> Option<Arc<HollowRayHead>> {
        self.heads
            .lock()
            .get(&(namespace.to_string(), cluster.to_string()))
            .map(|a| a.head.clone())
    }

    /// The head a Service routes to: the cluster its selector (else its labels) names with `ray.io/cluster`.
    pub(crate) fn head_for_service(&self, namespace: &str, service: &Value) -> Option<Arc<HollowRayHead>> {
        let cluster = service["spec"]["selector"][CLUSTER_LABEL]
            .as_str()
            .or_else(|| service["metadata"]["labels"][CLUSTER_LABEL].as_str())?;
        self.head(namespace, cluster)
    }

    /// Brings the head of one cluster in line with the store.
    fn reconcile(&self, namespace: &str, cluster: &str) {
        let running_pod = self.running_head_pod(namespace, cluster);
        let key = (namespace.to_string(), cluster.to_string());
        let live = {
            let mut heads = self.heads.lock();
            match running_pod {
                Some((uid, container, annotated)) => {
                    if heads.get(&key).is_none_or(|a| a.pod_uid != uid) {
                        tracing::debug!(namespace, cluster, pod_uid = %uid, "hollow ray head up");
                        let delay = annotated.unwrap_or(self.options.dashboard_delay);
                        let head = Arc::new(HollowRayHead::for_cluster(
                            self.options.clone(),
                            delay,
                            Some(self.dashboard_load.clone()),
                        ));
                        head.attach_log(self.pod_logs.clone(), &uid, &container);
                        heads.insert(key.clone(), Active { pod_uid: uid, head });
                    }
                    heads.get(&key).map(|a| a.head.clone())
                }
                None => {
                    if heads.remove(&key).is_some() {
                        tracing::debug!(namespace, cluster, "hollow ray head down");
                    }
                    None
                }
            }
        };
        if let Some(head) = live {
            head.set_ray_nodes(self.ray_nodes(namespace, cluster));
        }
    }

    /// `(namespace, cluster)` of every live head, sorted.
    pub(crate) fn live_clusters(&self) -> Vec<(String, String)> {
        let mut v: Vec<_> = self.heads.lock().keys().cloned().collect();
        v.sort();
        v
    }

    /// The cluster's Ray nodes: its Running, not deleting head and worker pods, each with the logical
    /// resources KubeRay's `ray start` flags give it (`num-cpus`, else the Ray container's CPU limit, ...; see
    /// `ray_autoscale::logical`). A group whose resources cannot be derived contributes nodes without resources.
    fn ray_nodes(&self, namespace: &str, cluster: &str) -> Vec<RayNode> {
        let Ok(stored) = self.store.get(&rayclusters_gvr(), Some(namespace), cluster) else {
            return Vec::new();
        };
        let spec = match stored_ray_cluster(&stored) {
            Ok(rc) => rc.spec,
            Err(e) => {
                tracing::warn!(namespace, cluster, error = %e, "hollow ray: RayCluster does not decode");
                return Vec::new();
            }
        };
        let opts = ListOptions {
            label_selector: LabelSelector(vec![LabelRequirement::Equal(CLUSTER_LABEL.into(), cluster.into())]),
            ..ListOptions::default()
        };
        let Ok(pods) = self.store.list(&Gvr::pods(), Some(namespace), &opts) else {
            return Vec::new();
        };
        let resources_of = |pod: &Value| {
            let logical = match pod["metadata"]["labels"][NODE_TYPE_LABEL].as_str() {
                Some("head") => Some(ray_autoscale::head_logical_resources(&spec.head_group_spec)),
                Some("worker") => {
                    let group = pod["metadata"]["labels"][ray_api::constants::RAY_NODE_GROUP_LABEL].as_str();
                    spec.worker_group_specs
                        .iter()
                        .flatten()
                        .find(|g| Some(g.group_name.as_str()) == group)
                        .map(ray_autoscale::worker_logical_resources)
                }
                _ => None,
            }?;
            Some(logical.unwrap_or_else(|e| {
                tracing::warn!(namespace, cluster, error = %e, "hollow ray: no logical resources");
                Default::default()
            }))
        };
        pods.items
            .iter()
            .map(|p| p.value())
            .filter(|p| p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null())
            .filter_map(|p| {
                Some(RayNode {
                    name: p["metadata"]["name"].as_str()?.to_string(),
                    is_head: p["metadata"]["labels"][NODE_TYPE_LABEL] == "head",
                    resources: resources_of(&p)?,
                })
            })
            .collect()
    }

    /// The uid and Ray container (KubeRay's first) of the cluster's Running, not deleting head pod, when the
    /// RayCluster exists, with the dashboard delay the RayCluster's annotation asks for.
    fn running_head_pod(&self, namespace: &str, cluster: &str) -> Option<(String, String, Option<Duration>)> {
        let rc = self.store.get(&rayclusters_gvr(), Some(namespace), cluster).ok()?;
        if rc.value()["metadata"]["deletionTimestamp"].is_string() {
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
            .list(&kube_sim::kinds::Gvr::pods(), Some(namespace), &opts)
            .ok()?;
        let delay = annotated_delay(&rc.value());
        pods.items.iter().find_map(|p| {
            let pod = p.value();
            let running = pod["status"]["phase"] == "Running" && pod["metadata"]["deletionTimestamp"].is_null();
            let container = pod["spec"]["containers"][0]["name"].as_str().unwrap_or_default();
            running.then(|| (p.uid().to_string(), container.to_string(), delay))
        })
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
            if let Some(c) = obj.value()["metadata"]["labels"][CLUSTER_LABEL].as_str() {
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

/// Hollow Ray heads attached to a simulator (see the [crate documentation](crate)). Dropping it stops the
/// watcher; the proxy route and pod hook it registered then answer 503 / leave pods to the default rules.
pub struct HollowRay {
    shared: Arc<Shared>,
    proxy_id: u64,
    task: tokio::task::JoinHandle<()>,
    /// The hollow autoscaler loop, when enabled.
    autoscaler_task: Option<tokio::task::JoinHandle<()>>,
    /// What the hollow autoscaler patched.
    scale_log: Arc<ScaleLog>,
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
    /// labelled `ray.io/node-type=head`, a submitter [`kube_sim::agents::PodExitHook`] in the simulator's
    /// [`kube_sim::AgentConfig::pod_hooks`], spawns the task that watches RayClusters and Ray pods (it retries
    /// until the RayCluster CRD is installed) and, unless disabled, the hollow autoscaler's loop. Must be called
    /// inside a tokio runtime.
    pub fn attach(handle: &SimHandle, options: HollowRayOptions) -> Self {
        let autoscaler_options = options.autoscaler.clone();
        let shared = Arc::new(Shared {
            store: handle.store().clone(),
            pod_logs: handle.agent_config().pod_logs.clone(),
            options,
            heads: Mutex::new(HashMap::new()),
            dashboard_load: Arc::default(),
        });
        let target = ProxyTarget::Labels(head_selector());
        let proxy_id = handle.register_proxy(target, Arc::new(Dispatcher(Arc::downgrade(&shared))));
        handle
            .agent_config()
            .pod_hooks
            .register(Arc::new(SubmitterHook::new(Arc::downgrade(&shared))));
        let task = tokio::spawn(run(shared.clone()));
        // SidecarMode submitters; the task ends by itself once the manager is dropped (it holds it weakly).
        tokio::spawn(crate::submitter::run_sidecars(Arc::downgrade(&shared)));
        let scale_log = Arc::new(ScaleLog::default());
        let autoscaler_task = autoscaler_options.enabled.then(|| {
            tokio::spawn(autoscaler::run(
                Arc::downgrade(&shared),
                scale_log.clone(),
                autoscaler_options,
            ))
        });
        Self {
            shared,
            proxy_id,
            task,
            autoscaler_task,
            scale_log,
        }
    }

    /// Dashboard requests in flight across every head, by kind (a head's own are in
    /// [`HollowRayHead::dashboard_load`]).
    pub fn dashboard_load(&self) -> &DashboardLoad {
        &self.shared.dashboard_load
    }

    /// The scale requests the hollow autoscaler patched into a RayCluster, oldest first (the last
    /// [`crate::autoscaler::SCALE_EVENT_HISTORY`] of all clusters are kept).
    pub fn scale_events(&self, namespace: &str, cluster: &str) -> Vec<ScaleEvent> {
        self.scale_log.of(namespace, cluster)
    }

    /// The live head of a RayCluster, if its head pod is Running.
    pub fn head(&self, namespace: &str, cluster: &str) -> Option<Arc<HollowRayHead>> {
        self.shared.head(namespace, cluster)
    }

    /// `(namespace, cluster)` of every live head, sorted.
    pub fn clusters(&self) -> Vec<(String, String)> {
        self.shared.live_clusters()
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
        if let Some(t) = &self.autoscaler_task {
            t.abort();
        }
    }
}

fn head_selector() -> LabelSelector {
    LabelSelector(vec![LabelRequirement::Equal(NODE_TYPE_LABEL.into(), "head".into())])
}

/// Every Ray pod (head or worker): their phases decide which Ray nodes a head has.
fn ray_pod_selector() -> LabelSelector {
    LabelSelector(vec![LabelRequirement::Exists(NODE_TYPE_LABEL.into())])
}

/// Waits for the next event of an optional watch (forever when there is none).
async fn next_opt(w: &mut Option<kube_sim::store::WatchReceiver>) -> Option<WatchEvent> {
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
            label_selector: ray_pod_selector(),
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

/// Decodes a stored RayCluster from its JSON text. Read as text, as kube-client reads its responses, rather
/// than from a decoded JSON value: a second decoder for the RayCluster and every pod type it embeds would
/// compile for the value, here and in the benchmark that links this crate.
pub(crate) fn stored_ray_cluster(stored: &kube_sim::store::StoredObject) -> serde_json::Result<ray_api::RayCluster> {
    // The store serialized the bytes from a JSON value, so they are UTF-8; should they ever not be, the
    // object is unreadable rather than silently altered.
    let text = std::str::from_utf8(&stored.json).map_err(<serde_json::Error as serde::de::Error>::custom)?;
    serde_json::from_str(text)
}
