//! The pod network of process pods (docs/kube-sim.md#pod-network): with [`PodNetworkMode::Bridge`], every
//! pod gets a network namespace and IP on a Linux bridge of its own kube-sim instance, Service ClusterIPs
//! answer from pods and from the host (a userspace kube-proxy), and a cluster DNS serves `cluster.local`.
//! With [`PodNetworkMode::Host`] (the default) pods share the host's network and nothing is set up.
//!
//! - [`cidr`]: address blocks; each instance takes one pod block and one service block out of the pools.
//! - [`state`]: the state directory, slot claims and the sweep of what killed instances left.
//! - [`host`]: the `ip`/`unshare`/`nsenter` commands everything is made with.
//! - [`bridge`]: [`BridgeNetworking`], the [`crate::sandbox::PodNetworking`] the kubelet's process runtime
//!   calls.
//! - [`files`]: the pods' `resolv.conf` and `hosts`.
//! - [`view`], [`proxy`], `dns`: the Services as seen from the network, the service proxy, the DNS (with
//!   the crate's `cluster-dns` feature; without it bridge mode is refused, as its pods could not resolve
//!   Services).
//! - [`ports`]: free loopback ports for the programs started beside a simulator.

pub mod bridge;
pub mod cidr;
#[cfg(feature = "cluster-dns")]
pub mod dns;
pub mod files;
pub mod host;
pub mod ports;
pub mod proxy;
pub mod state;
pub mod view;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::task::JoinHandle;

pub use bridge::BridgeNetworking;
pub use cidr::{CidrError, Ipv4Cidr};

use crate::kinds::Gvr;
use crate::sandbox::{HostNetworking, PodNetworking, SandboxError};
use crate::store::Store;

/// The cluster's DNS domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";
/// The Service in `default` that fronts the API server.
pub const KUBERNETES_SERVICE: &str = "kubernetes";
/// The port of the `kubernetes` Service.
const KUBERNETES_SERVICE_PORT: u16 = 443;
/// Prefix length of the pod block each instance takes out of the pod CIDR (at most 253 pods).
const POD_BLOCK_PREFIX: u8 = 24;
/// Prefix length of the service block each instance takes out of the service CIDR (4093 Services).
const SERVICE_BLOCK_PREFIX: u8 = 20;
/// Most instances sharing one state directory.
const MAX_SLOTS: u64 = 1024;
/// Shortest pause between two rebuilds of the service view, to batch bursts of commits.
const VIEW_DEBOUNCE: Duration = Duration::from_millis(20);
/// Longest pause between two rebuilds of the service view.
const VIEW_RESYNC: Duration = Duration::from_secs(5);

/// How pods are networked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodNetworkMode {
    /// Pods share the host's network (IP 127.0.0.1); no DNS, no ClusterIPs.
    #[default]
    Host,
    /// A bridge, a namespace per pod, ClusterIPs and the cluster DNS. Needs root.
    Bridge,
}

/// Configuration of the pod network ([`crate::SimConfig::pod_network`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PodNetworkConfig {
    /// How pods are networked.
    pub mode: PodNetworkMode,
    /// The pool of pod IPs; each instance takes the next free /24 of it (the whole pool if it is smaller).
    pub pod_cidr: Ipv4Cidr,
    /// The pool of Service ClusterIPs; in bridge mode each instance takes the next free /20 of it (the
    /// whole pool if it is smaller), whose first address is the `kubernetes` Service's.
    pub service_cidr: Ipv4Cidr,
    /// Where instances record their slots and bind the pods' network namespaces.
    pub state_dir: PathBuf,
}

impl Default for PodNetworkConfig {
    fn default() -> Self {
        Self {
            mode: PodNetworkMode::Host,
            pod_cidr: Ipv4Cidr::v4([10, 250, 0, 0], 16),
            service_cidr: Ipv4Cidr::v4([10, 96, 0, 0], 12),
            state_dir: PathBuf::from("/run/kube-sim/net"),
        }
    }
}

/// Why the pod network could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// A CIDR flag is malformed or too small.
    #[error("{0}")]
    Cidr(#[from] CidrError),
    /// A host command or file operation failed.
    #[error("pod network: {0}")]
    Sandbox(#[from] SandboxError),
    /// Bridge mode needs the cluster DNS, which this build of kube-sim does not have.
    #[error("the bridge pod network needs the cluster DNS: kube-sim was built without its cluster-dns feature")]
    NoClusterDns,
    /// The DNS server could not bind.
    #[error("cluster DNS on {addr}: {source}")]
    Dns {
        /// The address.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// A running pod network: the bridge (in bridge mode) and the tasks serving ClusterIPs and DNS.
#[derive(Debug)]
pub struct PodNetwork {
    bridge: Option<BridgeNetworking>,
    service_block: Ipv4Cidr,
    tasks: Vec<JoinHandle<()>>,
}

impl PodNetwork {
    /// Claims a slot and creates the bridge (bridge mode); nothing in host mode. Sweeps what killed
    /// instances left in the state directory first.
    pub fn prepare(config: &PodNetworkConfig) -> Result<Self, NetworkError> {
        if config.mode == PodNetworkMode::Host {
            return Ok(Self {
                bridge: None,
                service_block: config.service_cidr,
                tasks: Vec::new(),
            });
        }
        if !cfg!(feature = "cluster-dns") {
            return Err(NetworkError::NoClusterDns);
        }
        let pod_prefix = POD_BLOCK_PREFIX.max(config.pod_cidr.prefix());
        let svc_prefix = SERVICE_BLOCK_PREFIX.max(config.service_cidr.prefix());
        let slots = config
            .pod_cidr
            .subnet_count(pod_prefix)
            .min(config.service_cidr.subnet_count(svc_prefix))
            .min(MAX_SLOTS);
        let slot = state::claim(&config.state_dir, u32::try_from(slots).unwrap_or(1))?;
        let index = u64::from(slot.index);
        let pod_block = config.pod_cidr.subnet(pod_prefix, index);
        let service_block = config.service_cidr.subnet(svc_prefix, index);
        let (pod_block, service_block) = match (pod_block, service_block) {
            (Ok(p), Ok(s)) => (p, s),
            (Err(e), _) | (_, Err(e)) => {
                slot.release();
                return Err(e.into());
            }
        };
        let bridge = BridgeNetworking::create(slot, pod_block)?;
        tracing::info!(bridge = bridge.bridge(), %pod_block, %service_block, "pod network ready");
        Ok(Self {
            bridge: Some(bridge),
            service_block,
            tasks: Vec::new(),
        })
    }

    /// The block the API server allocates ClusterIPs from.
    pub fn service_block(&self) -> Ipv4Cidr {
        self.service_block
    }

    /// The `kubernetes` Service's ClusterIP (bridge mode), a name the serving certificate must carry.
    pub fn kubernetes_service_ip(&self) -> Option<Ipv4Addr> {
        self.bridge.as_ref().and_then(|_| self.service_block.nth(1))
    }

    /// The cluster DNS server's address (bridge mode).
    pub fn dns_ip(&self) -> Option<Ipv4Addr> {
        self.bridge.as_ref().map(BridgeNetworking::gateway)
    }

    /// The bridge (bridge mode).
    pub fn bridge(&self) -> Option<&BridgeNetworking> {
        self.bridge.as_ref()
    }

    /// What the kubelet's process runtime attaches pods with.
    pub fn networking(&self) -> Arc<dyn PodNetworking> {
        match &self.bridge {
            Some(b) => Arc::new(b.clone()),
            None => Arc::new(HostNetworking),
        }
    }

    /// Bridge mode: creates the `kubernetes` Service (forwarding to the API server at `api_server`) and
    /// starts the service proxy and the DNS.
    pub fn start(&mut self, store: &Store, api_server: SocketAddr) -> Result<(), NetworkError> {
        let (Some(bridge), Some(k8s_ip)) = (&self.bridge, self.kubernetes_service_ip()) else {
            return Ok(());
        };
        let svc = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": KUBERNETES_SERVICE, "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": k8s_ip.to_string(),
                     "ports": [{"name": "https", "port": KUBERNETES_SERVICE_PORT, "protocol": "TCP",
                                "targetPort": api_server.port()}]},
        });
        if let Err(e) = store.create(&Gvr::services(), Some("default"), svc)
            && e.code != 409
        {
            tracing::warn!(error = %e, "creating the kubernetes Service");
        }
        let shared: view::SharedView = Arc::default();
        #[cfg(feature = "cluster-dns")]
        {
            let dns_addr = SocketAddr::from((bridge.gateway(), dns::DNS_PORT));
            let dns_tasks =
                dns::serve(dns_addr, shared.clone()).map_err(|source| NetworkError::Dns { addr: dns_addr, source })?;
            self.tasks.extend(dns_tasks);
        }
        let proxy = proxy::ServiceProxy::new(bridge.bridge(), api_server);
        self.tasks.push(tokio::spawn(follow(store.clone(), proxy, shared)));
        Ok(())
    }

    /// Stops the proxy and DNS and removes everything the network created. Idempotent.
    pub fn teardown(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
        if let Some(b) = &self.bridge {
            b.teardown();
        }
    }
}

impl Drop for PodNetwork {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Rebuilds the service view whenever the store changes, and brings the proxy and DNS up to date.
async fn follow(store: Store, mut proxy: proxy::ServiceProxy, shared: view::SharedView) {
    let mut seen = None;
    loop {
        let rv = store.current_rv();
        if seen != Some(rv) {
            seen = Some(rv);
            let view = Arc::new(view::build(&store));
            proxy.sync(&view);
            *shared.write() = view;
            tokio::time::sleep(VIEW_DEBOUNCE).await;
        }
        store.changed(VIEW_RESYNC).await;
    }
}

#[cfg(all(test, not(feature = "cluster-dns")))]
mod without_cluster_dns {
    use super::*;

    #[test]
    fn bridge_mode_is_refused_before_anything_is_set_up() {
        let state_dir = std::env::temp_dir().join(format!("kube-sim-no-dns-{}", std::process::id()));
        let config = PodNetworkConfig {
            mode: PodNetworkMode::Bridge,
            state_dir: state_dir.clone(),
            ..PodNetworkConfig::default()
        };
        let refused = PodNetwork::prepare(&config).unwrap_err();
        assert!(matches!(refused, NetworkError::NoClusterDns), "{refused}");
        // No slot was claimed.
        assert!(!state_dir.exists());
        // Host mode needs no DNS.
        assert!(PodNetwork::prepare(&PodNetworkConfig::default()).is_ok());
    }
}
