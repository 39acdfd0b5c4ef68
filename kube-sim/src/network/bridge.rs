//! [`BridgeNetworking`]: a Linux bridge per kube-sim instance and a network namespace, veth pair and IP per
//! pod (docs/kube-sim.md#pod-network).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use super::cidr::Ipv4Cidr;
use super::files;
use super::host;
use super::state::{Slot, link_prefix};
use crate::sandbox::{PodIdentity, PodNet, PodNetworking, SandboxError};

/// A pod's attached network, kept to answer repeated attaches and to undo it.
#[derive(Debug, Clone)]
struct Attached {
    net: PodNet,
    /// Index of the pod IP in the pod block.
    ip_index: u64,
    /// The host end of the veth pair (`None` for host-network pods).
    host_link: Option<String>,
}

#[derive(Debug)]
struct Inner {
    slot: Slot,
    pod_block: Ipv4Cidr,
    gateway: Ipv4Addr,
    bridge: String,
    /// Attached pods by uid, and the next veth number.
    pods: Mutex<(HashMap<String, Attached>, u32)>,
    torn_down: Mutex<bool>,
}

/// Gives each pod a network namespace on the instance's bridge; see the module documentation. Clones share
/// the bridge; [`BridgeNetworking::teardown`] (or dropping the last clone) removes everything it created.
#[derive(Debug, Clone)]
pub struct BridgeNetworking {
    inner: Arc<Inner>,
}

impl BridgeNetworking {
    /// Creates the bridge of `slot` with the gateway (first host address of `pod_block`) on it.
    pub fn create(slot: Slot, pod_block: Ipv4Cidr) -> Result<Self, SandboxError> {
        let gateway = pod_block
            .nth(1)
            .ok_or_else(|| SandboxError::Unsupported(format!("pod CIDR {pod_block} has no room for a gateway")))?;
        let bridge = format!("{}br", link_prefix(slot.index));
        let inner = Inner {
            slot,
            pod_block,
            gateway,
            bridge,
            pods: Mutex::new((HashMap::new(), 0)),
            torn_down: Mutex::new(false),
        };
        // From here on, dropping `inner` on an error removes what was made.
        host::ip_batch(&format!(
            "link add {br} type bridge\naddr add {gateway}/{prefix} dev {br}\nlink set {br} up\n",
            br = inner.bridge,
            prefix = pod_block.prefix(),
        ))?;
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The bridge interface's name.
    pub fn bridge(&self) -> &str {
        &self.inner.bridge
    }

    /// The bridge's address: the pods' default gateway and the cluster DNS server.
    pub fn gateway(&self) -> Ipv4Addr {
        self.inner.gateway
    }

    /// The block pod IPs come from.
    pub fn pod_block(&self) -> Ipv4Cidr {
        self.inner.pod_block
    }

    /// The instance's state directory (`<state root>/slot-<n>`).
    pub fn state_dir(&self) -> PathBuf {
        self.inner.slot.dir.clone()
    }

    /// Removes every pod network, the bridge (with the addresses on it) and the state directory.
    /// Idempotent.
    pub fn teardown(&self) {
        self.inner.teardown();
    }
}

impl Inner {
    fn teardown(&self) {
        let mut done = self.torn_down.lock();
        if *done {
            return;
        }
        *done = true;
        let uids: Vec<String> = self.pods.lock().0.keys().cloned().collect();
        for uid in uids {
            self.detach(&uid);
        }
        self.slot.release();
    }

    fn detach(&self, uid: &str) {
        let Some(attached) = self.pods.lock().0.remove(uid) else {
            return;
        };
        if let Some(link) = &attached.host_link
            && let Err(e) = host::delete_link(link)
        {
            tracing::warn!(error = %e, pod_uid = uid, "removing a pod's veth");
        }
        if let Some(netns) = &attached.net.netns
            && let Err(e) = host::remove_netns(netns)
        {
            tracing::warn!(error = %e, pod_uid = uid, "removing a pod's network namespace");
        }
        tracing::debug!(pod_uid = uid, ip_index = attached.ip_index, "pod network detached");
    }

    /// The lowest free host address of the pod block (after the gateway).
    fn free_ip_index(&self, pods: &HashMap<String, Attached>) -> Result<u64, SandboxError> {
        let used: std::collections::HashSet<u64> = pods.values().map(|a| a.ip_index).collect();
        (2..self.pod_block.size().saturating_sub(1))
            .find(|i| !used.contains(i))
            .ok_or_else(|| SandboxError::Unsupported(format!("pod CIDR {} is exhausted", self.pod_block)))
    }

    fn attach_isolated(&self, pod: &PodIdentity, ip: Ipv4Addr, link_no: u32) -> Result<Attached, SandboxError> {
        let netns = self.slot.netns_dir().join(&pod.uid);
        let host_link = format!("{}{link_no}", link_prefix(self.slot.index));
        let peer = format!("{host_link}p");
        let attached = Attached {
            net: PodNet {
                ip: IpAddr::V4(ip),
                netns: Some(netns.clone()),
                resolv_conf: Some(files::resolv_conf(&pod.namespace, self.gateway)),
                etc_hosts: Some(files::etc_hosts(pod, IpAddr::V4(ip))),
            },
            ip_index: self.pod_block.index_of(ip).unwrap_or_default(),
            host_link: Some(host_link.clone()),
        };
        let setup = || -> Result<(), SandboxError> {
            host::create_netns(&netns)?;
            host::ip_batch(&format!(
                "link add {host_link} type veth peer name {peer}\nlink set {peer} netns {netns}\n\
                 link set {host_link} master {br} up\n",
                netns = netns.display(),
                br = self.bridge,
            ))?;
            host::ip_batch_in(
                &netns,
                &format!(
                    "link set lo up\nlink set {peer} name eth0\naddr add {ip}/{prefix} dev eth0\nlink set eth0 up\n\
                     route add default via {gw}\n",
                    prefix = self.pod_block.prefix(),
                    gw = self.gateway,
                ),
            )
        };
        match setup() {
            Ok(()) => Ok(attached),
            Err(e) => {
                let _ = host::delete_link(&host_link);
                let _ = host::remove_netns(&netns);
                Err(e)
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.teardown();
    }
}

impl PodNetworking for BridgeNetworking {
    fn attach(&self, pod: &PodIdentity) -> Result<PodNet, SandboxError> {
        let inner = &self.inner;
        if *inner.torn_down.lock() {
            return Err(SandboxError::Unsupported("the pod network is shut down".into()));
        }
        let mut pods = inner.pods.lock();
        if let Some(a) = pods.0.get(&pod.uid) {
            return Ok(a.net.clone());
        }
        let attached = if pod.host_network {
            // A host-network pod shares the host's namespace; the gateway is the host's address on the pod
            // network, the one pods reach it at.
            Attached {
                net: PodNet {
                    ip: IpAddr::V4(inner.gateway),
                    netns: None,
                    resolv_conf: None,
                    etc_hosts: None,
                },
                ip_index: 1,
                host_link: None,
            }
        } else {
            let index = inner.free_ip_index(&pods.0)?;
            let ip = inner
                .pod_block
                .nth(index)
                .ok_or_else(|| SandboxError::Unsupported(format!("pod CIDR {} is exhausted", inner.pod_block)))?;
            let link_no = pods.1;
            pods.1 = pods.1.wrapping_add(1) % 100_000;
            inner.attach_isolated(pod, ip, link_no)?
        };
        tracing::debug!(pod = %pod.name, namespace = %pod.namespace, ip = %attached.net.ip, "pod network attached");
        let net = attached.net.clone();
        pods.0.insert(pod.uid.clone(), attached);
        Ok(net)
    }

    fn detach(&self, pod_uid: &str) {
        self.inner.detach(pod_uid);
    }
}
