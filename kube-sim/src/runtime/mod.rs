//! The kubelet's process runtime: pods whose container images are all mapped to directories run as real
//! Linux processes, each pod in its own mount namespace with its volumes, its network from
//! [`crate::sandbox::PodNetworking`], its containers in cgroups; every other pod stays hollow. See
//! `docs/kube-sim.md` ("Process pods") for what is emulated and its limits.
//!
//! The hollow kubelet asks [`ProcessRuntime::sync`] for each bound pod; the runtime starts, watches, probes,
//! restarts and stops processes and answers with a [`view::PodView`] the kubelet turns into the pod status.

mod cgroups;
pub mod compose;
mod container;
mod executor;
pub mod images;
mod launcher;
mod pod;
mod pod_sandbox;
pub mod probes;
mod setup_script;
mod signals;
mod state_dir;
pub mod view;
pub mod volumes;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

use crate::kinds::Gvr;
use crate::logs::PodLogs;
use crate::sandbox::{ContainerExecutor, PodNet, PodNetworking, SandboxError};
use crate::store::Store;
pub use images::{ImageMapping, ImageRoot};
use pod::PodRun;
pub use view::PodView;

/// What happens to a pod with an image no mapping covers while process pods are enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnmappedImages {
    /// The pod runs hollow (so one cluster mixes both).
    #[default]
    Hollow,
    /// Its containers wait in `ErrImagePull`, then `ImagePullBackOff`.
    Fail,
}

/// Settings of the process runtime (part of [`crate::AgentConfig`]).
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Image mappings, first match wins.
    pub images: Vec<ImageMapping>,
    /// Pods with unmapped images.
    pub unmapped: UnmappedImages,
    /// Where the runtime keeps its state (a subdirectory per run; stale ones are swept at start).
    pub state_dir: PathBuf,
    /// First CrashLoopBackOff delay (the kubelet's is 10 s); doubles per restart up to 5 minutes.
    pub crash_backoff: Duration,
    /// How often running containers are checked for exits.
    pub poll: Duration,
    /// The pod network.
    pub networking: Arc<dyn PodNetworking>,
}

impl RuntimeConfig {
    /// Defaults: no mappings, unmapped pods hollow, state under the system temp directory, 10 s back-off,
    /// host networking.
    pub fn new(images: Vec<ImageMapping>) -> Self {
        Self {
            images,
            unmapped: UnmappedImages::Hollow,
            state_dir: std::env::temp_dir().join("kube-sim-runtime"),
            crash_backoff: Duration::from_secs(10),
            poll: Duration::from_millis(100),
            networking: Arc::new(crate::sandbox::HostNetworking),
        }
    }
}

/// Two configs are equal when their data are and they share the pod network.
impl PartialEq for RuntimeConfig {
    fn eq(&self, other: &Self) -> bool {
        self.images == other.images
            && self.unmapped == other.unmapped
            && self.state_dir == other.state_dir
            && self.crash_backoff == other.crash_backoff
            && self.poll == other.poll
            && std::ptr::addr_eq(Arc::as_ptr(&self.networking), Arc::as_ptr(&other.networking))
    }
}

/// What the runtime needs of the API server.
#[derive(Clone)]
pub struct RuntimeContext {
    /// The store (Secrets, ConfigMaps, Services, ServiceAccounts).
    pub store: Store,
    /// Token issuer and CA.
    pub auth: Arc<crate::auth::Auth>,
    /// The API server's address: what pods on the host's network get as `KUBERNETES_SERVICE_HOST` / `_PORT`
    /// (pods in a network namespace of their own get the `kubernetes` Service's, see
    /// [`compose::api_server_address`]).
    pub api: SocketAddr,
    /// Container log buffers.
    pub pod_logs: PodLogs,
}

impl std::fmt::Debug for RuntimeContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeContext")
            .field("api", &self.api)
            .finish_non_exhaustive()
    }
}

/// How the kubelet runs a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// As a hollow pod.
    Hollow,
    /// As processes.
    Process,
    /// Not at all: these images have no mapping ([`UnmappedImages::Fail`]).
    Unmapped(Vec<String>),
}

/// Everything the parts of the runtime share.
pub(crate) struct Shared {
    config: RuntimeConfig,
    ctx: RuntimeContext,
    launcher: launcher::Launcher,
    cgroups: Option<cgroups::CgroupRoot>,
    state: state_dir::StateDir,
}

/// Reads Secrets, ConfigMaps and tokens from the store.
pub(crate) struct StoreObjects<'a> {
    shared: &'a Shared,
}

impl StoreObjects<'_> {
    /// The `resource` object `namespace/name`, `None` when it does not exist.
    fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        let o = self
            .shared
            .ctx
            .store
            .get(&Gvr::core(resource), Some(namespace), name)
            .ok()?;
        Some(o.value())
    }
}

impl compose::ObjectSource for StoreObjects<'_> {
    fn secret(&self, namespace: &str, name: &str) -> Option<BTreeMap<String, String>> {
        self.get("secrets", namespace, name).map(|v| compose::secret_data(&v))
    }

    fn config_map(&self, namespace: &str, name: &str) -> Option<BTreeMap<String, String>> {
        self.get("configmaps", namespace, name)
            .map(|v| compose::config_map_data(&v))
    }
}

impl volumes::TokenSource for StoreObjects<'_> {
    fn projected_token(
        &self,
        namespace: &str,
        pod: &str,
        audiences: &[String],
        seconds: u64,
    ) -> Result<String, String> {
        crate::auth::tokens::pod_projected_token(
            self.shared.ctx.auth.issuer(),
            &self.shared.ctx.store,
            namespace,
            pod,
            audiences,
            Duration::from_secs(seconds),
        )
        .map_err(|e| e.to_string())
    }

    fn root_ca(&self) -> String {
        self.shared
            .ctx
            .auth
            .tls()
            .map(|t| t.ca_pem().to_string())
            .unwrap_or_default()
    }
}

/// A memory quantity in bytes, `None` when absent or invalid.
fn quantity_of(v: &Value) -> Option<i128> {
    crate::agents::quantity::parse_value(v).ok().map(|m| m / 1000)
}

/// `NAME_SERVICE_HOST`-style name of a Service.
fn service_env_name(name: &str) -> String {
    name.to_uppercase().replace('-', "_")
}

impl Shared {
    fn mapping(&self, image: &str) -> Option<&ImageMapping> {
        images::lookup(&self.config.images, image)
    }

    fn objects(&self) -> StoreObjects<'_> {
        StoreObjects { shared: self }
    }

    /// Pod IP, host IP and the variables every container gets: the API server's `KUBERNETES_SERVICE_*` and,
    /// unless `enableServiceLinks: false`, those of the namespace's Services with a cluster IP.
    fn node_facts(&self, pod: &Value, net: &PodNet) -> compose::NodeFacts {
        let kubernetes_service = self
            .ctx
            .store
            .get(&Gvr::services(), Some("default"), crate::network::KUBERNETES_SERVICE)
            .ok()
            .map(|svc| svc.value());
        let (host, port) = compose::api_server_address(net.netns.is_some(), kubernetes_service.as_ref(), self.ctx.api);
        let port = port.to_string();
        let mut env = Vec::new();
        if pod["spec"]["enableServiceLinks"] != false {
            let ns = pod["metadata"]["namespace"].as_str().unwrap_or("default");
            let services = self
                .ctx
                .store
                .list(&Gvr::services(), Some(ns), &crate::store::ListOptions::default())
                .map(|l| l.items)
                .unwrap_or_default();
            for svc in services {
                let value = svc.value();
                let ip = value["spec"]["clusterIP"].as_str().unwrap_or_default();
                if ip.is_empty() || ip == "None" {
                    continue;
                }
                let prefix = service_env_name(svc.name());
                let ports = value["spec"]["ports"].as_array().cloned().unwrap_or_default();
                let Some(first) = ports.first() else { continue };
                env.push((format!("{prefix}_SERVICE_HOST"), ip.to_string()));
                env.push((format!("{prefix}_SERVICE_PORT"), first["port"].to_string()));
                for p in &ports {
                    if let Some(pn) = p["name"].as_str() {
                        env.push((
                            format!("{prefix}_SERVICE_PORT_{}", service_env_name(pn)),
                            p["port"].to_string(),
                        ));
                    }
                }
            }
        }
        env.push(("KUBERNETES_SERVICE_HOST".into(), host.clone()));
        env.push(("KUBERNETES_SERVICE_PORT".into(), port.clone()));
        env.push(("KUBERNETES_SERVICE_PORT_HTTPS".into(), port.clone()));
        env.push(("KUBERNETES_PORT".into(), format!("tcp://{host}:{port}")));
        compose::NodeFacts {
            pod_ip: net.ip.to_string(),
            host_ip: self.ctx.api.ip().to_string(),
            base_env: env,
        }
    }
}

/// The process runtime; see the module documentation. Dropping it (or [`ProcessRuntime::shutdown`]) kills
/// every process, removes every sandbox and the run's state directory and cgroups.
pub struct ProcessRuntime {
    shared: Shared,
    pods: Mutex<HashMap<String, PodRun>>,
    /// The last pod object seen per uid (for the teardown at shutdown).
    last_pod: Mutex<HashMap<String, Value>>,
}

impl std::fmt::Debug for ProcessRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessRuntime")
            .field("pods", &self.pods.lock().len())
            .finish_non_exhaustive()
    }
}

impl ProcessRuntime {
    /// Sweeps what killed runs left, creates this run's state directory and cgroups, starts the launcher.
    pub fn start(config: RuntimeConfig, ctx: RuntimeContext) -> Result<Arc<Self>, SandboxError> {
        let io = |context: &str| {
            let context = context.to_string();
            move |source| SandboxError::Io { context, source }
        };
        let run = state_dir::RunId::next();
        let state = state_dir::StateDir::create(&config.state_dir, &run).map_err(io(&format!(
            "creating the runtime state directory under {}",
            config.state_dir.display()
        )))?;
        let launcher = launcher::Launcher::start().map_err(io("starting the launcher thread"))?;
        let cgroups = cgroups::CgroupRoot::create(&run);
        Ok(Arc::new(Self {
            shared: Shared {
                config,
                ctx,
                launcher,
                cgroups,
                state,
            },
            pods: Mutex::new(HashMap::new()),
            last_pod: Mutex::new(HashMap::new()),
        }))
    }

    /// Whether `pod` runs as processes, hollow, or not at all (unmapped images under
    /// [`UnmappedImages::Fail`]).
    pub fn placement(&self, pod: &Value) -> Placement {
        let images: Vec<String> = ["initContainers", "containers"]
            .iter()
            .flat_map(|k| pod["spec"][*k].as_array().cloned().unwrap_or_default())
            .map(|c| c["image"].as_str().unwrap_or_default().to_string())
            .collect();
        let unmapped: Vec<String> = images
            .iter()
            .filter(|i| self.shared.mapping(i).is_none())
            .cloned()
            .collect();
        match (unmapped.is_empty(), self.shared.config.unmapped) {
            (true, _) => Placement::Process,
            (false, UnmappedImages::Hollow) => Placement::Hollow,
            (false, UnmappedImages::Fail) => Placement::Unmapped(unmapped),
        }
    }

    /// Advances a process pod (creating it on first sight); returns its view and when to call again.
    pub fn sync(&self, pod: &Value) -> (PodView, Instant) {
        let now = Instant::now();
        let uid = pod["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        self.last_pod.lock().insert(uid.clone(), pod.clone());
        let mut pods = self.pods.lock();
        let run = pods.entry(uid).or_insert_with(|| PodRun::new(pod, now));
        let next = run.step(&self.shared, pod, now);
        (run.view(), next)
    }

    /// Gracefully stops a deleted pod: `None` with the final view once every process is gone and the sandbox
    /// removed, else when to call again.
    pub fn terminate(&self, pod: &Value) -> (PodView, Option<Instant>) {
        let now = Instant::now();
        let uid = pod["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let mut pods = self.pods.lock();
        let Some(run) = pods.get_mut(&uid) else {
            return (PodRun::new(pod, now).view(), None);
        };
        let next = run.terminate(&self.shared, pod, now);
        (run.view(), next)
    }

    /// Forgets a pod that is gone from the API (killing whatever it still runs).
    pub fn remove(&self, uid: &str) {
        let run = self.pods.lock().remove(uid);
        let pod = self.last_pod.lock().remove(uid).unwrap_or(Value::Null);
        if let Some(mut run) = run {
            run.destroy(&self.shared, &pod);
        }
    }

    /// This run's state directory (removed at shutdown).
    pub fn state_path(&self) -> &std::path::Path {
        self.shared.state.path()
    }

    /// Whether the runtime manages pod `uid`.
    pub fn has_pod(&self, uid: &str) -> bool {
        self.pods.lock().contains_key(uid)
    }

    /// Kills every process and removes every sandbox, the state directory and the cgroups. Idempotent.
    pub fn shutdown(&self) {
        let uids: Vec<String> = self.pods.lock().keys().cloned().collect();
        for uid in uids {
            self.remove(&uid);
        }
        if let Some(cg) = &self.shared.cgroups {
            cg.destroy();
        }
        self.shared.state.remove();
    }

    /// The `kubectl exec` backend for this runtime's containers.
    pub fn executor(self: &Arc<Self>) -> Arc<dyn ContainerExecutor> {
        Arc::new(executor::ProcessExecutor::new(Arc::downgrade(self)))
    }

    /// The nsenter command line prefix, environment and working directory of a running container.
    /// Whether the pod with this uid has a live sandbox here (so its IP answers from the host).
    fn runs_pod(&self, uid: &str) -> bool {
        self.pods.lock().get(uid).is_some_and(|run| run.sandbox().is_some())
    }

    fn exec_target(&self, namespace: &str, pod: &str, container: &str) -> Result<ExecTarget, SandboxError> {
        let pods = self.pods.lock();
        let last = self.last_pod.lock();
        let uid = last
            .iter()
            .find(|(_, v)| v["metadata"]["namespace"] == namespace && v["metadata"]["name"] == pod)
            .map(|(u, _)| u.clone())
            .ok_or_else(|| SandboxError::NotFound(format!("pod {namespace}/{pod} is not a process pod")))?;
        let run = pods
            .get(&uid)
            .ok_or_else(|| SandboxError::NotFound(format!("pod {namespace}/{pod} is not running")))?;
        let sandbox = run
            .sandbox()
            .ok_or_else(|| SandboxError::NotFound(format!("pod {namespace}/{pod} has no running sandbox")))?;
        let c = run
            .container(container)
            .ok_or_else(|| SandboxError::NotFound(format!("container {container} is not valid for pod {pod}")))?;
        let (composed, user) = c.exec_context().ok_or_else(|| {
            SandboxError::Unsupported(format!("container {container} is not running in pod {namespace}/{pod}"))
        })?;
        let prefix = sandbox
            .nsenter_args(container, &composed.working_dir, user)
            .ok_or_else(|| SandboxError::NotFound(format!("container {container} has no root")))?;
        Ok(ExecTarget {
            prefix,
            env: composed.env,
        })
    }
}

/// How to run a command in a container.
struct ExecTarget {
    prefix: Vec<String>,
    env: Vec<(String, String)>,
}

impl Drop for ProcessRuntime {
    fn drop(&mut self) {
        self.shutdown();
    }
}
