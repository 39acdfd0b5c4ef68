//! Configuration of the simulator: the API server ([`SimConfig`]) and the hollow agents ([`AgentConfig`]).

use std::time::Duration;

use crate::agents::PodHooks;
use crate::faults::FaultConfig;

/// Configuration of the hollow agents (nodes, scheduler, kubelet, Job controller, Volcano emulation).
///
/// The API server only carries this struct; the agents in [`crate::agents`] consume it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// Run any agents at all.
    pub enabled: bool,
    /// Number of hollow nodes (`kube-sim-node-{i}`).
    pub nodes: usize,
    /// Allocatable CPU per node (a Kubernetes quantity, e.g. `"1k"`).
    pub node_cpu: String,
    /// Allocatable memory per node (a Kubernetes quantity, e.g. `"1Ti"`).
    pub node_memory: String,
    /// Allocatable pods per node.
    pub node_pods: u64,
    /// Extra labels on every node.
    pub node_labels: Vec<(String, String)>,
    /// Extra allocatable resources on every node (e.g. `("nvidia.com/gpu", "8")`).
    pub node_extra_resources: Vec<(String, String)>,
    /// Delay between a pod being bound and the kubelet reporting it Running (per pod:
    /// annotation `kube-sim.io/start-delay`).
    pub pod_start_delay: Duration,
    /// Upper bound of the time the kubelet takes to finish a graceful pod deletion (the pod's grace period
    /// caps it).
    pub pod_kill_delay: Duration,
    /// How long a Job's pod runs before succeeding, unless an annotation or a [`PodHooks`] hook decides.
    pub job_pod_run_duration: Duration,
    /// First CrashLoopBackOff delay of a crashing `restartPolicy: Always/OnFailure` pod; doubles per restart,
    /// capped at 32×.
    pub crash_backoff: Duration,
    /// Longest an agent sleeps without a store change before it re-examines its objects.
    pub resync: Duration,
    /// Hooks that decide when running pods exit (e.g. a hollow application head finishing the pod of a Job
    /// that submitted work to it). Clones share the registry, so hooks registered after start through
    /// [`crate::SimHandle::agent_config`] take effect.
    pub pod_hooks: PodHooks,
    /// Container log buffers: the kubelet writes them, the pod `log` subresource reads them, other simulated
    /// parties append to them. Clones share the buffers.
    pub pod_logs: crate::logs::PodLogs,
    /// Run the scheduler.
    pub scheduler: bool,
    /// Run the hollow kubelet.
    pub kubelet: bool,
    /// Run the Job controller.
    pub job_controller: bool,
    /// Run the `apps/v1` controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet).
    pub workload_controllers: bool,
    /// Emulate Volcano gang scheduling and PodGroup status.
    pub volcano: bool,
    /// Run the hollow cert-manager (issues `cert-manager.io/v1` Certificates once their CRDs are installed).
    pub cert_manager: bool,
    /// Run pods whose images are mapped as real processes (the kubelet's process runtime); `None` keeps every
    /// pod hollow.
    pub process_runtime: Option<crate::runtime::RuntimeConfig>,
    /// Run the EndpointSlice and Endpoints controllers (the addresses behind every Service with a selector).
    pub endpoints: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            nodes: 3,
            node_cpu: "1k".into(),
            node_memory: "1Ti".into(),
            node_pods: 1_000_000,
            node_labels: Vec::new(),
            node_extra_resources: Vec::new(),
            pod_start_delay: Duration::ZERO,
            pod_kill_delay: Duration::ZERO,
            job_pod_run_duration: Duration::from_millis(100),
            crash_backoff: Duration::from_millis(100),
            resync: Duration::from_millis(100),
            pod_hooks: PodHooks::default(),
            pod_logs: crate::logs::PodLogs::default(),
            scheduler: true,
            kubelet: true,
            job_controller: true,
            workload_controllers: true,
            volcano: true,
            cert_manager: true,
            process_runtime: None,
            endpoints: true,
        }
    }
}

/// Default of [`SimConfig::history_max`]: upstream's largest watch cache (100×1024 events).
pub const DEFAULT_HISTORY_MAX: usize = 100 * 1024;

/// Configuration of the API server and its store.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Address to listen on; port 0 picks a free port.
    pub listen: std::net::SocketAddr,
    /// Bearer token of the kubeconfig's admin identity (user `kubernetes-admin` in group `system:masters`).
    pub token: String,
    /// Serve plain http instead of HTTPS (authentication and RBAC still apply). By default the server
    /// generates a CA and a serving certificate at start and writes the CA into the kubeconfig.
    pub insecure_http: bool,
    /// RNG seed for uids, generated names and fault injection.
    pub seed: u64,
    /// Events kept per resource for watch resumption (at least this many; see also `history_age`).
    pub history_len: usize,
    /// Events younger than this are kept for watch resumption even beyond `history_len` (spec W-8: the last
    /// 10,000 events or 5 min per kind, whichever is larger).
    pub history_age: Duration,
    /// Hard ceiling on the events kept per resource, whatever their age (upstream's watch cache holds at most
    /// 100×1024 events per kind), so a burst of writes cannot grow the window without bound; a resume from
    /// before the window gets 410 Gone.
    pub history_max: usize,
    /// Capacity of each resource's event fan-out channel; a watcher lagging further is disconnected.
    pub watch_channel_capacity: usize,
    /// Interval between periodic BOOKMARK events on watches that asked for them.
    pub bookmark_interval: Duration,
    /// Cap on a watch's lifetime (the request's `timeoutSeconds` is honoured when shorter).
    pub max_watch_timeout: Duration,
    /// Delay before the garbage collector acts on an owner change.
    pub gc_delay: Duration,
    /// Lifetime of list `continue` tokens.
    pub continue_ttl: Duration,
    /// Reject Pods whose ServiceAccount does not exist (403).
    pub service_account_admission: bool,
    /// Namespaces created at startup besides the four system ones.
    pub extra_namespaces: Vec<String>,
    /// CRD manifests (YAML, possibly multi-document) loaded at startup.
    pub crd_files: Vec<std::path::PathBuf>,
    /// Fault injection on the HTTP layer.
    pub faults: FaultConfig,
    /// Hollow agent settings.
    pub agents: AgentConfig,
    /// Keep a log of HTTP requests (see [`crate::SimHandle::request_log`]).
    pub request_log: bool,
    /// Prune, default and validate custom resources against their CRD's schema and CEL rules, as
    /// kube-apiserver does (on by default). Off stores any JSON object: only for tests that store malformed
    /// custom resources on purpose.
    pub validate_custom_resources: bool,
    /// The network of process pods: host (default) or a bridge with ClusterIPs and DNS
    /// (docs/kube-sim.md#pod-network). Its service CIDR is where ClusterIPs come from in either mode.
    pub pod_network: crate::network::PodNetworkConfig,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            token: "kube-sim-token".into(),
            insecure_http: false,
            seed: 42,
            history_len: 10_000,
            history_age: Duration::from_secs(300),
            history_max: DEFAULT_HISTORY_MAX,
            watch_channel_capacity: 16_384,
            bookmark_interval: Duration::from_secs(60),
            max_watch_timeout: Duration::from_secs(1800),
            gc_delay: Duration::ZERO,
            continue_ttl: Duration::from_secs(300),
            service_account_admission: true,
            extra_namespaces: Vec::new(),
            crd_files: Vec::new(),
            faults: FaultConfig::default(),
            agents: AgentConfig::default(),
            request_log: true,
            validate_custom_resources: true,
            pod_network: crate::network::PodNetworkConfig::default(),
        }
    }
}
