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
