//! The service proxy (`/api/v1/namespaces/{ns}/services/{name}[:{port}]/proxy/{path}`), routed to in-process
//! backends (e.g. a hollow application head from another crate) registered on the [`crate::SimHandle`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;

use crate::select::LabelSelector;

/// A request forwarded to a proxy backend.
#[derive(Debug, Clone)]
pub struct ProxyRequest {
    /// HTTP method.
    pub method: http::Method,
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub service: String,
    /// The port part of `{name}:{port}` (a name or number), empty when absent.
    pub port: String,
    /// The path after `/proxy`, starting with `/`.
    pub path: String,
    /// The raw query string (without `?`).
    pub query: String,
    /// Request headers.
    pub headers: http::HeaderMap,
    /// Request body.
    pub body: Bytes,
    /// The Service object as stored.
    pub service_object: Arc<serde_json::Value>,
}

/// A backend's answer.
#[derive(Debug, Clone)]
pub struct ProxyResponse {
    /// HTTP status.
    pub status: http::StatusCode,
    /// Content type of `body`.
    pub content_type: String,
    /// Response body.
    pub body: Bytes,
}

impl ProxyResponse {
    /// A JSON response with status 200.
    pub fn json(value: &serde_json::Value) -> Self {
        Self {
            status: http::StatusCode::OK,
            content_type: "application/json".into(),
            body: Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
        }
    }
}

/// Future returned by a [`ProxyBackend`].
pub type ProxyFuture = Pin<Box<dyn Future<Output = ProxyResponse> + Send>>;

/// An in-process HTTP backend behind a Service (what a pod would serve on a real cluster).
pub trait ProxyBackend: Send + Sync {
    /// Handles one proxied request.
    fn handle(&self, request: ProxyRequest) -> ProxyFuture;
}

/// Which Services a backend serves.
#[derive(Debug, Clone)]
pub enum ProxyTarget {
    /// A Service by namespace and name.
    Name {
        /// Namespace.
        namespace: String,
        /// Service name.
        name: String,
    },
    /// Every Service whose labels match this selector (e.g. `app.kubernetes.io/component=head`).
    Labels(LabelSelector),
}

impl ProxyTarget {
    fn matches(&self, namespace: &str, name: &str, service: &serde_json::Value) -> bool {
        match self {
            Self::Name { namespace: ns, name: n } => ns == namespace && n == name,
            Self::Labels(sel) => sel.matches(service),
        }
    }
}

/// One registered backend: its id, what it serves, and the handler.
type ProxyEntry = (u64, ProxyTarget, Arc<dyn ProxyBackend>);

/// Registered backends, most recent first.
#[derive(Default)]
pub struct ProxyRegistry {
    entries: parking_lot::RwLock<Vec<ProxyEntry>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for ProxyRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyRegistry")
            .field("backends", &self.entries.read().len())
            .finish()
    }
}

impl ProxyRegistry {
    /// Registers a backend; returns an id for [`ProxyRegistry::unregister`].
    pub fn register(&self, target: ProxyTarget, backend: Arc<dyn ProxyBackend>) -> u64 {
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.entries.write().insert(0, (id, target, backend));
        id
    }

    /// Removes a backend.
    pub fn unregister(&self, id: u64) {
        self.entries.write().retain(|(i, _, _)| *i != id);
    }

    /// The backend for a Service, if any.
    pub fn find(&self, namespace: &str, name: &str, service: &serde_json::Value) -> Option<Arc<dyn ProxyBackend>> {
        self.entries
            .read()
            .iter()
            .find(|(_, t, _)| t.matches(namespace, name, service))
            .map(|(_, _, b)| b.clone())
    }
}

/// How long the API server's proxy waits for a pod's answer.
const ENDPOINT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Request headers not passed on to a pod: hop-by-hop ones and the caller's credentials for the API server.
const DROPPED_HEADERS: [&str; 5] = ["authorization", "connection", "host", "transfer-encoding", "upgrade"];

fn unavailable(message: String) -> crate::ApiError {
    crate::ApiError::new(503, "ServiceUnavailable", message)
}

/// The address of a ready endpoint behind port `port` (a port name or number, or empty for the only/first
/// port) of Service `service` in `namespace`, from its EndpointSlices.
pub fn service_endpoint(
    store: &crate::Store,
    namespace: &str,
    service: &serde_json::Value,
    port: &str,
) -> Result<std::net::SocketAddr, crate::ApiError> {
    let name = service["metadata"]["name"].as_str().unwrap_or_default();
    let no_endpoints = || unavailable(format!("no endpoints available for service \"{name}\""));
    let ports = service["spec"]["ports"].as_array().cloned().unwrap_or_default();
    let svc_port = if port.is_empty() {
        ports.first()
    } else {
        ports
            .iter()
            .find(|p| p["name"] == port || p["port"].as_u64().is_some_and(|n| n.to_string() == port))
    }
    .ok_or_else(no_endpoints)?;
    let port_name = svc_port["name"].as_str().unwrap_or_default();
    let selector = format!("{}={name}", crate::agents::endpoints::SERVICE_NAME_LABEL);
    let slices = store.list(
        &crate::agents::endpoints::endpoint_slices(),
        Some(namespace),
        &crate::ListOptions::labels(&selector)?,
    )?;
    slices
        .items
        .iter()
        .find_map(|slice| {
            let number = slice.value()["ports"]
                .as_array()?
                .iter()
                .find(|p| p["name"].as_str().unwrap_or_default() == port_name)?["port"]
                .as_u64()
                .and_then(|n| u16::try_from(n).ok())?;
            let ip = slice.value()["endpoints"]
                .as_array()?
                .iter()
                .filter(|e| e["conditions"]["ready"].as_bool() != Some(false))
                .find_map(|e| e["addresses"][0].as_str()?.parse::<std::net::IpAddr>().ok())?;
            Some(std::net::SocketAddr::from((ip, number)))
        })
        .ok_or_else(no_endpoints)
}

/// The address of port `port` (a number, a container port's name, or empty for the first container port)
/// of a running pod.
pub fn pod_endpoint(pod: &serde_json::Value, port: &str) -> Result<std::net::SocketAddr, crate::ApiError> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let ip: std::net::IpAddr = pod["status"]["podIP"]
        .as_str()
        .and_then(|ip| ip.parse().ok())
        .ok_or_else(|| unavailable(format!("pod \"{name}\" has no IP address")))?;
    let container_ports = || {
        pod["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["ports"].as_array())
            .flatten()
    };
    let number = match port.parse::<u16>() {
        Ok(n) => Some(n),
        Err(_) if port.is_empty() => container_ports()
            .find_map(|p| p["containerPort"].as_u64())
            .and_then(|n| u16::try_from(n).ok()),
        Err(_) => container_ports()
            .find(|p| p["name"] == port)
            .and_then(|p| p["containerPort"].as_u64())
            .and_then(|n| u16::try_from(n).ok()),
    };
    let number = number.ok_or_else(|| unavailable(format!("pod \"{name}\" has no port {port:?}")))?;
    Ok(std::net::SocketAddr::from((ip, number)))
}

/// Forwards `request` over plain HTTP/1.1 to `target` and returns the pod's answer (status, headers, body).
pub async fn forward_http(
    target: std::net::SocketAddr,
    request: &ProxyRequest,
) -> Result<http::Response<Bytes>, crate::ApiError> {
    use http_body_util::{BodyExt as _, Full};
    let failed = |e: &dyn std::fmt::Display| unavailable(format!("error trying to reach {target}: {e}"));
    let exchange = async {
        let stream = tokio::net::TcpStream::connect(target).await.map_err(|e| failed(&e))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| failed(&e))?;
        let conn_task = tokio::spawn(conn);
        let uri = if request.query.is_empty() {
            request.path.clone()
        } else {
            format!("{}?{}", request.path, request.query)
        };
        let mut builder = http::Request::builder().method(request.method.clone()).uri(uri);
        for (k, v) in &request.headers {
            if !DROPPED_HEADERS.contains(&k.as_str()) {
                builder = builder.header(k, v);
            }
        }
        let outgoing = builder
            .header(http::header::HOST, target.to_string())
            .body(Full::new(request.body.clone()))
            .map_err(|e| failed(&e))?;
        let response = sender.send_request(outgoing).await.map_err(|e| failed(&e))?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(|e| failed(&e))?.to_bytes();
        conn_task.abort();
        Ok(http::Response::from_parts(parts, body))
    };
    tokio::time::timeout(ENDPOINT_TIMEOUT, exchange)
        .await
        .map_err(|_| failed(&"timed out"))?
}
