//! What the service proxy and the cluster DNS need of the cluster: every Service with its ClusterIP, ports
//! and endpoints (from the EndpointSlices), rebuilt from the store whenever it changes.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;

use crate::agents::endpoints::{SERVICE_NAME_LABEL, endpoint_slices};
use crate::kinds::Gvr;
use crate::store::{ListOptions, Store};

/// The view the DNS answers from, replaced whenever the cluster changes.
pub type SharedView = Arc<RwLock<Arc<ClusterView>>>;

/// One port of a Service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServicePort {
    /// `name` (empty when unnamed).
    pub name: String,
    /// `port`.
    pub port: u16,
    /// `protocol` (`TCP`, `UDP`, `SCTP`).
    pub protocol: String,
}

/// One endpoint of a Service (an address of an EndpointSlice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The pod IP.
    pub ip: Ipv4Addr,
    /// `conditions.ready`.
    pub ready: bool,
    /// `hostname` (set for pods whose subdomain names the Service).
    pub hostname: Option<String>,
    /// The slice's ports: port name to the pod's port number.
    pub ports: BTreeMap<String, u16>,
}

/// A Service as the proxy and DNS see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceEntry {
    /// `spec.clusterIP`, `None` for headless and ExternalName Services.
    pub cluster_ip: Option<Ipv4Addr>,
    /// `spec.clusterIP: None`.
    pub headless: bool,
    /// `spec.ports`.
    pub ports: Vec<ServicePort>,
    /// The endpoints of all its EndpointSlices.
    pub endpoints: Vec<Endpoint>,
}

impl ServiceEntry {
    /// The ready endpoints' addresses for the Service port named `port_name`.
    pub fn ready_backends(&self, port_name: &str) -> Vec<std::net::SocketAddr> {
        self.endpoints
            .iter()
            .filter(|e| e.ready)
            .filter_map(|e| e.ports.get(port_name).map(|p| std::net::SocketAddr::from((e.ip, *p))))
            .collect()
    }
}

/// Every Service by (namespace, name).
pub type ClusterView = BTreeMap<(String, String), ServiceEntry>;

/// Builds the view from the store's Services and EndpointSlices.
pub fn build(store: &Store) -> ClusterView {
    let all = ListOptions::default();
    let mut view = ClusterView::new();
    if let Ok(services) = store.list(&Gvr::services(), None, &all) {
        for svc in &services.items {
            let key = (svc.namespace().unwrap_or_default().to_string(), svc.name().to_string());
            view.insert(key, service_entry(&svc.value()));
        }
    }
    if let Ok(slices) = store.list(&endpoint_slices(), None, &all) {
        for slice in &slices.items {
            let Some(svc) = slice.label(SERVICE_NAME_LABEL) else {
                continue;
            };
            let key = (slice.namespace().unwrap_or_default().to_string(), svc.to_string());
            if let Some(entry) = view.get_mut(&key) {
                entry.endpoints.extend(slice_endpoints(&slice.value()));
            }
        }
    }
    view
}

fn service_entry(svc: &Value) -> ServiceEntry {
    let spec = &svc["spec"];
    let ports = spec["ports"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    Some(ServicePort {
                        name: p["name"].as_str().unwrap_or_default().to_string(),
                        port: u16::try_from(p["port"].as_u64()?).ok()?,
                        protocol: p["protocol"].as_str().unwrap_or("TCP").to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    ServiceEntry {
        cluster_ip: spec["clusterIP"].as_str().and_then(|ip| ip.parse().ok()),
        headless: spec["clusterIP"] == "None",
        ports,
        endpoints: Vec::new(),
    }
}

fn slice_endpoints(slice: &Value) -> Vec<Endpoint> {
    let ports: BTreeMap<String, u16> = slice["ports"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    let port = u16::try_from(p["port"].as_u64()?).ok()?;
                    Some((p["name"].as_str().unwrap_or_default().to_string(), port))
                })
                .collect()
        })
        .unwrap_or_default();
    slice["endpoints"]
        .as_array()
        .map(|es| {
            es.iter()
                .filter_map(|e| {
                    Some(Endpoint {
                        ip: e["addresses"][0].as_str()?.parse().ok()?,
                        // A missing `ready` means ready (the API's documented default).
                        ready: e["conditions"]["ready"].as_bool() != Some(false),
                        hostname: e["hostname"].as_str().map(str::to_string),
                        ports: ports.clone(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}
