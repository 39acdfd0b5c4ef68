//! The part of the Ray dashboard job API the RayJob controller uses (job-service spec §3.2):
//! `GET /api/jobs/<id>`, `POST /api/jobs/<id>/stop`, reached either directly (`http://<dashboardURL>`,
//! 2 s timeout) or through the API server's service proxy (`--use-kubernetes-proxy`, 10 s timeout).

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ray_api::JobStatus;
use serde::Deserialize;

use super::plan::{DashboardJobInfo, DashboardObservation};

/// Timeout of a direct dashboard call.
pub const DIRECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Timeout of a dashboard call through the API server proxy.
pub const PROXY_TIMEOUT: Duration = Duration::from_secs(10);

/// A dashboard call failure.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    /// The call timed out.
    #[error("dashboard request timed out after {0:?}")]
    Timeout(Duration),
    /// Transport or API server failure.
    #[error("dashboard request failed: {0}")]
    Transport(String),
    /// The request could not be built.
    #[error("invalid dashboard request: {0}")]
    Request(#[from] http::Error),
}

/// Where the dashboard of one cluster is reached.
#[derive(Clone, Debug)]
pub enum DashboardTarget {
    /// `http://<host:port>` directly.
    Direct {
        /// `status.dashboardURL` (no scheme).
        address: String,
    },
    /// `/api/v1/namespaces/<ns>/services/<svc>:dashboard/proxy`.
    Proxy {
        /// Namespace of the head service.
        namespace: String,
        /// Name of the head service.
        service: String,
    },
}

#[derive(Deserialize)]
struct RawJobInfo {
    #[serde(default)]
    status: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    start_time: Option<u64>,
    #[serde(default)]
    end_time: Option<u64>,
}

/// A dashboard client over either transport.
#[derive(Clone)]
pub struct DashboardClient {
    kube: kube::Client,
    http: HttpClient<HttpConnector, Full<Bytes>>,
}

impl DashboardClient {
    /// A client using `kube` for proxied calls and a plain HTTP client for direct ones.
    pub fn new(kube: kube::Client) -> Self {
        Self {
            kube,
            http: HttpClient::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// One call: `(status code, body)`.
    async fn call(
        &self,
        target: &DashboardTarget,
        method: http::Method,
        path: &str,
    ) -> Result<(u16, String), DashboardError> {
        match target {
            DashboardTarget::Direct { address } => {
                let request = http::Request::builder()
                    .method(method)
                    .uri(format!("http://{address}{path}"))
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(Full::new(Bytes::new()))?;
                let fut = async {
                    let response = self
                        .http
                        .request(request)
                        .await
                        .map_err(|e| DashboardError::Transport(e.to_string()))?;
                    let code = response.status().as_u16();
                    let body = response
                        .into_body()
                        .collect()
                        .await
                        .map_err(|e| DashboardError::Transport(e.to_string()))?
                        .to_bytes();
                    Ok((code, String::from_utf8_lossy(&body).into_owned()))
                };
                tokio::time::timeout(DIRECT_TIMEOUT, fut)
                    .await
                    .map_err(|_| DashboardError::Timeout(DIRECT_TIMEOUT))?
            }
            DashboardTarget::Proxy { namespace, service } => {
                let request = http::Request::builder()
                    .method(method)
                    .uri(format!(
                        "/api/v1/namespaces/{namespace}/services/{service}:dashboard/proxy{path}"
                    ))
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(Vec::new())?;
                let fut = async {
                    match self.kube.request_text(request).await {
                        Ok(body) => Ok((200, body)),
                        Err(kube::Error::Api(status)) => Ok((status.code, status.message)),
                        Err(e) => Err(DashboardError::Transport(e.to_string())),
                    }
                };
                tokio::time::timeout(PROXY_TIMEOUT, fut)
                    .await
                    .map_err(|_| DashboardError::Timeout(PROXY_TIMEOUT))?
            }
        }
    }

    /// `GetJobInfo`: 404 → [`DashboardObservation::NotFound`], bad JSON or transport → `Error`.
    pub async fn job_info(&self, target: &DashboardTarget, job_id: &str) -> DashboardObservation {
        match self
            .call(target, http::Method::GET, &format!("/api/jobs/{job_id}"))
            .await
        {
            Ok((404, _)) => DashboardObservation::NotFound,
            Ok((_, body)) => match serde_json::from_str::<RawJobInfo>(&body) {
                Ok(raw) => DashboardObservation::Info(DashboardJobInfo {
                    status: JobStatus::from(raw.status.as_str()),
                    message: raw.message,
                    start_time_ms: raw.start_time.unwrap_or(0),
                    end_time_ms: raw.end_time.unwrap_or(0),
                }),
                Err(_) => DashboardObservation::Error(format!("GetJobInfo fail: {body}")),
            },
            Err(e) => DashboardObservation::Error(e.to_string()),
        }
    }

    /// `StopJob` (errors are returned; the caller only logs them).
    pub async fn stop_job(&self, target: &DashboardTarget, job_id: &str) -> Result<(), DashboardError> {
        self.call(target, http::Method::POST, &format!("/api/jobs/{job_id}/stop"))
            .await
            .map(|_| ())
    }
}
