//! The boundaries between the kubelet's process runtime, the pod network and the API server's streaming
//! endpoints (`exec`, `port-forward`).
//!
//! Pods whose image is mapped to a directory run as real processes (the kubelet's process runtime); every
//! other pod stays hollow. Three parts meet here and are kept apart by these traits, so each can be tested
//! alone and swapped for a simpler one:
//!
//! - [`PodNetworking`] gives a pod its network: an IP and, on a real pod network, a network namespace plus the
//!   `resolv.conf` and `hosts` files its containers see. [`HostNetworking`] is the trivial one: every pod
//!   shares the host's loopback.
//! - [`ContainerExecutor`] starts a command inside a running container, for `kubectl exec`.
//! - Port-forwarding needs neither: it connects to the pod's IP from the host.

use std::fmt::Debug;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

/// Why a sandbox operation failed; the message is shown to the user (pod status or an API error).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The pod or container is not running in a sandbox of this runtime.
    #[error("{0}")]
    NotFound(String),
    /// The operation is not supported for this pod (for example exec into a hollow pod).
    #[error("{0}")]
    Unsupported(String),
    /// A system call or helper command failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// What the pod network needs to know of a pod to attach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodIdentity {
    /// `metadata.uid`: the key of the pod's sandbox.
    pub uid: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.hostname`, or the pod name when unset (what the pod's `hostname` command prints).
    pub hostname: String,
    /// `spec.subdomain`, for `<hostname>.<subdomain>.<ns>.svc.cluster.local` behind a headless Service.
    pub subdomain: Option<String>,
    /// `spec.hostNetwork`: the pod shares the host's network namespace and IP.
    pub host_network: bool,
}

/// A pod's network as its containers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodNet {
    /// The pod IP (`status.podIP`).
    pub ip: IpAddr,
    /// The network namespace to enter (a bind-mounted nsfs file), or `None` for the host's.
    pub netns: Option<PathBuf>,
    /// Contents for the containers' `/etc/resolv.conf`, or `None` to leave the host's.
    pub resolv_conf: Option<String>,
    /// Contents for the containers' `/etc/hosts`, or `None` to leave the host's.
    pub etc_hosts: Option<String>,
}

/// Gives pods their network; see the module documentation.
pub trait PodNetworking: Send + Sync + Debug {
    /// Creates (or returns the existing) network of a pod. Idempotent per `pod.uid`.
    fn attach(&self, pod: &PodIdentity) -> Result<PodNet, SandboxError>;
    /// Removes the pod's network (namespace, interfaces, address). Idempotent; never fails loudly, because it
    /// runs on deletion paths: problems are logged.
    fn detach(&self, pod_uid: &str);
}

/// Every pod on the host's network with IP 127.0.0.1: no isolation, no DNS. The default when no pod network
/// is configured, and enough for a single real process pod.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostNetworking;

impl PodNetworking for HostNetworking {
    fn attach(&self, _pod: &PodIdentity) -> Result<PodNet, SandboxError> {
        Ok(PodNet {
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            netns: None,
            resolv_conf: None,
            etc_hosts: None,
        })
    }

    fn detach(&self, _pod_uid: &str) {}
}

/// A `kubectl exec` request as the executor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// Namespace of the pod.
    pub namespace: String,
    /// Name of the pod.
    pub pod: String,
    /// Container name (already defaulted to the pod's first container by the caller when the request named
    /// none).
    pub container: String,
    /// `command` query parameters, in order.
    pub command: Vec<String>,
    /// Whether a terminal was asked for (`-t`).
    pub tty: bool,
    /// Whether the client sends stdin (`-i`).
    pub stdin: bool,
}

/// A byte stream into a running exec'd process.
pub type ExecInput = Pin<Box<dyn AsyncWrite + Send>>;
/// A byte stream out of a running exec'd process.
pub type ExecOutput = Pin<Box<dyn AsyncRead + Send>>;

/// A started exec'd process.
pub struct ExecProcess {
    /// Its stdin, when the request asked for it.
    pub stdin: Option<ExecInput>,
    /// Its stdout (with a tty, stdout and stderr together).
    pub stdout: ExecOutput,
    /// Its stderr, `None` with a tty.
    pub stderr: Option<ExecOutput>,
    /// Resolves to the exit code once the process ends.
    pub exit: tokio::sync::oneshot::Receiver<i32>,
}

impl Debug for ExecProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecProcess").finish_non_exhaustive()
    }
}

/// Starts commands inside running containers, for `kubectl exec`; see the module documentation.
pub trait ContainerExecutor: Send + Sync + Debug {
    /// Starts `request.command` in the container's namespaces, environment and working directory.
    fn exec(&self, request: &ExecRequest) -> Result<ExecProcess, SandboxError>;

    /// Whether the pod with this `metadata.uid` runs as real processes here, so its `status.podIP` answers
    /// from the host. Port-forwarding dials only such pods (and loopback pod IPs): a hollow pod's IP has
    /// nothing behind it.
    fn runs_pod(&self, pod_uid: &str) -> bool {
        let _ = pod_uid;
        false
    }
}
