//! Where a forwarded port leads: TCP to `status.podIP:port` for pods that really run (their runtime says so,
//! or their IP is on the loopback), or, for a hollow pod, an in-process HTTP server answering through the
//! [`ProxyBackend`] of a Service that selects the pod and targets that port. Hollow pod IPs are never dialled:
//! nothing listens there.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::http::HttpState;
use crate::http::proxy::{ProxyBackend, ProxyRequest};
use crate::kinds::Gvr;
use crate::store::{ListOptions, StoredObject};

/// A bidirectional byte stream to a pod port.
pub(super) trait PodConnection: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> PodConnection for T {}

/// Buffer of the in-process pipe to a hollow pod's backend.
const PIPE_BUFFER: usize = 64 * 1024;

/// The ports of one pod, as a port-forward session opens them.
pub(super) struct PodPorts {
    /// Server state (container executor, Services, proxy backends).
    pub(super) state: Arc<HttpState>,
    /// The pod.
    pub(super) pod: Arc<StoredObject>,
}

impl PodPorts {
    /// Opens `port`; the error is the message the client's error stream carries, worded as the kubelet's.
    pub(super) async fn open(&self, port: u16) -> Result<Box<dyn PodConnection>, String> {
        connect(&self.state, &self.pod, port).await.map_err(|e| {
            let uid = self.pod.uid();
            format!(
                "error forwarding port {port} to pod {}, uid {uid}: {e}",
                self.pod.name()
            )
        })
    }
}

/// Opens a connection to `port` of `pod`; the error says why not.
async fn connect(state: &HttpState, pod: &StoredObject, port: u16) -> Result<Box<dyn PodConnection>, String> {
    let pod_ip: Option<IpAddr> = pod.value()["status"]["podIP"].as_str().and_then(|ip| ip.parse().ok());
    let uid = pod.uid();
    let real = state.container_executor().is_some_and(|e| e.runs_pod(uid));
    if let Some(ip) = pod_ip
        && (real || ip.is_loopback())
    {
        let addr = SocketAddr::new(ip, port);
        return tokio::net::TcpStream::connect(addr)
            .await
            .map(|s| {
                let _ = s.set_nodelay(true);
                Box::new(s) as Box<dyn PodConnection>
            })
            .map_err(|e| format!("dial tcp {addr}: {e}"));
    }
    match hollow_backend(state, pod, port) {
        Some(backend) => Ok(Box::new(serve_hollow(backend))),
        None => Err(format!(
            "pod runs hollow and no in-process backend serves port {port} (no Service selecting the pod \
             targets it)"
        )),
    }
}

/// A Service backend reached through the forwarded port: which backend and how to address it.
struct HollowBackend {
    backend: Arc<dyn ProxyBackend>,
    namespace: String,
    service: String,
    service_port: String,
    service_object: Arc<Value>,
}

/// Whether Service port `sp` sends traffic to container port `port` of `pod`.
fn targets(sp: &Value, pod: &Value, port: u16) -> bool {
    let port = i64::from(port);
    match &sp["targetPort"] {
        Value::Number(n) => n.as_i64() == Some(port),
        Value::String(name) => pod["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["ports"].as_array().into_iter().flatten())
            .any(|p| p["name"] == name.as_str() && p["containerPort"].as_i64() == Some(port)),
        _ => sp["port"].as_i64() == Some(port),
    }
}

fn selects(service: &Value, pod: &Value) -> bool {
    let Some(selector) = service["spec"]["selector"].as_object().filter(|s| !s.is_empty()) else {
        return false;
    };
    selector
        .iter()
        .all(|(k, v)| pod["metadata"]["labels"][k.as_str()] == *v)
}

fn hollow_backend(state: &HttpState, pod: &StoredObject, port: u16) -> Option<HollowBackend> {
    let namespace = pod.namespace()?.to_string();
    let services = state
        .store
        .list(&Gvr::services(), Some(&namespace), &ListOptions::default())
        .ok()?;
    let pod = pod.value();
    services.items.iter().find_map(|svc| {
        let svc_value = svc.value();
        if !selects(&svc_value, &pod) {
            return None;
        }
        let sp = svc_value["spec"]["ports"]
            .as_array()?
            .iter()
            .find(|sp| targets(sp, &pod, port))?;
        let backend = state.proxies.find(&namespace, svc.name(), &svc_value)?;
        Some(HollowBackend {
            backend,
            namespace: namespace.clone(),
            service: svc.name().to_string(),
            service_port: sp["port"].as_i64().map(|p| p.to_string()).unwrap_or_default(),
            service_object: Arc::new(svc.value()),
        })
    })
}

/// An in-process HTTP/1.1 server over a pipe, answering each request through the backend; the other end of
/// the pipe is the forwarded connection.
fn serve_hollow(target: HollowBackend) -> tokio::io::DuplexStream {
    let (client_end, server_end) = tokio::io::duplex(PIPE_BUFFER);
    let target = Arc::new(target);
    tokio::spawn(async move {
        let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let target = target.clone();
            async move {
                let (parts, body) = req.into_parts();
                let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                let request = ProxyRequest {
                    method: parts.method,
                    namespace: target.namespace.clone(),
                    service: target.service.clone(),
                    port: target.service_port.clone(),
                    path: parts.uri.path().to_string(),
                    query: parts.uri.query().unwrap_or_default().to_string(),
                    headers: parts.headers,
                    body,
                    service_object: target.service_object.clone(),
                };
                let answer = target.backend.handle(request).await;
                let mut response = http::Response::new(Full::new(answer.body));
                *response.status_mut() = answer.status;
                if let Ok(v) = http::HeaderValue::from_str(&answer.content_type) {
                    response.headers_mut().insert(http::header::CONTENT_TYPE, v);
                }
                Ok::<_, Infallible>(response)
            }
        });
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(server_end), service)
            .await;
    });
    client_end
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn service_ports_target_container_ports_by_number_or_name() {
        let pod = json!({
            "metadata": {"labels": {"app": "ray"}},
            "spec": {"containers": [{"ports": [{"name": "dashboard", "containerPort": 8265}]}]},
        });
        assert!(targets(&json!({"port": 80, "targetPort": 8265}), &pod, 8265));
        assert!(targets(&json!({"port": 80, "targetPort": "dashboard"}), &pod, 8265));
        assert!(targets(&json!({"port": 8265}), &pod, 8265));
        assert!(!targets(&json!({"port": 80, "targetPort": "serve"}), &pod, 8265));
        assert!(selects(&json!({"spec": {"selector": {"app": "ray"}}}), &pod));
        assert!(!selects(&json!({"spec": {"selector": {}}}), &pod));
        assert!(!selects(&json!({"spec": {"selector": {"app": "other"}}}), &pod));
    }
}
