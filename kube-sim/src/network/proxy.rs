//! The service proxy (kube-proxy's job): every Service ClusterIP is an address on the instance's bridge, and
//! a userspace TCP proxy listens on each `ClusterIP:port` and forwards connections to the Service's ready
//! endpoints in turn. The bridge is the pods' default gateway, so the ClusterIPs answer from pods and from
//! the host alike.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::RwLock;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::host;
use super::view::ClusterView;

/// How long a proxied connection waits for its endpoint to accept.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The endpoints one listener forwards to, replaced as they change.
#[derive(Debug, Default)]
struct Backends {
    addrs: RwLock<Vec<SocketAddr>>,
    next: AtomicUsize,
}

impl Backends {
    fn pick(&self) -> Option<SocketAddr> {
        let addrs = self.addrs.read();
        if addrs.is_empty() {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % addrs.len();
        Some(addrs[i])
    }
}

struct Listener {
    backends: Arc<Backends>,
    task: JoinHandle<()>,
}

/// The listeners and ClusterIP addresses of one instance.
pub struct ServiceProxy {
    bridge: String,
    /// Where the `kubernetes` Service in `default` forwards: the API server itself.
    api_server: SocketAddr,
    listeners: BTreeMap<SocketAddr, Listener>,
    addresses: BTreeSet<Ipv4Addr>,
}

impl std::fmt::Debug for ServiceProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceProxy")
            .field("bridge", &self.bridge)
            .field("listeners", &self.listeners.len())
            .finish()
    }
}

impl ServiceProxy {
    /// A proxy putting ClusterIPs on `bridge`; the `kubernetes` Service forwards to `api_server`.
    pub fn new(bridge: &str, api_server: SocketAddr) -> Self {
        Self {
            bridge: bridge.to_string(),
            api_server,
            listeners: BTreeMap::new(),
            addresses: BTreeSet::new(),
        }
    }

    /// Makes the listeners and addresses match `view`: opens new `ClusterIP:port`s, updates endpoints,
    /// closes what no Service has any more.
    pub fn sync(&mut self, view: &ClusterView) {
        let mut wanted: BTreeMap<SocketAddr, Vec<SocketAddr>> = BTreeMap::new();
        for ((ns, name), svc) in view {
            let Some(ip) = svc.cluster_ip else { continue };
            for port in svc.ports.iter().filter(|p| p.protocol == "TCP") {
                let backends = if ns == "default" && name == super::KUBERNETES_SERVICE {
                    vec![self.api_server]
                } else {
                    svc.ready_backends(&port.name)
                };
                wanted.insert(SocketAddr::from((ip, port.port)), backends);
            }
        }
        let stale: Vec<SocketAddr> = self
            .listeners
            .keys()
            .filter(|a| !wanted.contains_key(a))
            .copied()
            .collect();
        for addr in stale {
            if let Some(l) = self.listeners.remove(&addr) {
                l.task.abort();
            }
        }
        let ips: BTreeSet<Ipv4Addr> = wanted
            .keys()
            .filter_map(|a| match a.ip() {
                std::net::IpAddr::V4(ip) => Some(ip),
                std::net::IpAddr::V6(_) => None,
            })
            .collect();
        for ip in self.addresses.difference(&ips).copied().collect::<Vec<_>>() {
            if let Err(e) = host::run("ip", &["addr", "del", &format!("{ip}/32"), "dev", &self.bridge]) {
                tracing::warn!(error = %e, "removing a ClusterIP");
            }
            self.addresses.remove(&ip);
        }
        for ip in ips.difference(&self.addresses.clone()) {
            match host::run("ip", &["addr", "add", &format!("{ip}/32"), "dev", &self.bridge]) {
                Ok(()) => {
                    self.addresses.insert(*ip);
                }
                Err(e) => tracing::warn!(error = %e, "adding a ClusterIP"),
            }
        }
        for (addr, backends) in wanted {
            match self.listeners.get(&addr) {
                Some(l) => *l.backends.addrs.write() = backends,
                None => match listen(addr) {
                    Ok(listener) => {
                        let shared = Arc::new(Backends::default());
                        *shared.addrs.write() = backends;
                        let task = tokio::spawn(serve(listener, shared.clone()));
                        self.listeners.insert(addr, Listener { backends: shared, task });
                    }
                    Err(e) => tracing::warn!(error = %e, %addr, "cannot listen on a ClusterIP"),
                },
            }
        }
    }

    /// Closes every listener and removes the ClusterIP addresses.
    pub fn stop(&mut self) {
        self.sync(&ClusterView::new());
    }
}

impl Drop for ServiceProxy {
    fn drop(&mut self) {
        for l in self.listeners.values() {
            l.task.abort();
        }
    }
}

fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let std = std::net::TcpListener::bind(addr)?;
    std.set_nonblocking(true)?;
    TcpListener::from_std(std)
}

async fn serve(listener: TcpListener, backends: Arc<Backends>) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                // No ready endpoint: the connection is closed at once, as a rejecting kube-proxy would.
                let Some(backend) = backends.pick() else { continue };
                conns.spawn(forward(client, backend));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

async fn forward(mut client: TcpStream, backend: SocketAddr) {
    match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(backend)).await {
        Ok(Ok(mut upstream)) => {
            let _ = client.set_nodelay(true);
            let _ = upstream.set_nodelay(true);
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        }
        Ok(Err(e)) => tracing::debug!(error = %e, %backend, "service endpoint refused"),
        Err(_) => tracing::debug!(%backend, "service endpoint timed out"),
    }
}
