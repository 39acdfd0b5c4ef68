//! The part of the Ray dashboard serve API the RayService controller uses:
//! `GET /api/serve/applications/?api_type=declarative`, `PUT /api/serve/applications/`, and the
//! serve proxy's `/-/healthz`; reached directly or through the API server's service proxy
//! (`--use-kubernetes-proxy`), with the RayJob client's timeouts.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ray_api::constants::SERVING_PORT_NAME;

use super::plan::ServeDetails;
use crate::rayjob::dashboard::{DIRECT_TIMEOUT, DashboardTarget, PROXY_TIMEOUT};

/// Path of the serve applications API.
pub const SERVE_APPLICATIONS_PATH: &str = "/api/serve/applications/";
/// Query of the serve details request.
pub const DECLARATIVE_QUERY: &str = "?api_type=declarative";
/// Path of the serve proxy's health check.
pub const PROXY_HEALTH_PATH: &str = "/-/healthz";
/// Content type of every dashboard request.
pub const JSON_CONTENT_TYPE: &str = "application/json";
/// Header carrying the Ray token on dashboard calls (`authOptions.mode: token`).
pub const RAY_AUTHORIZATION_HEADER: &str = "x-ray-authorization";

/// The value of [`RAY_AUTHORIZATION_HEADER`] for a token.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A serve API call failure, worded like KubeRay's dashboard client.
#[derive(Debug, thiserror::Error)]
pub enum ServeApiError {
    /// The call timed out.
    #[error("dashboard request timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// Transport or API server failure.
    #[error("dashboard request failed: {0}")]
    Transport(String),
    /// The request could not be built.
    #[error("invalid dashboard request: {0}")]
    Request(#[from] http::Error),
    /// `GET` answered non-2xx.
    #[error("GetServeDetails fail: {status} {body}")]
    DetailsStatus {
        /// Status line (`400 Bad Request`).
        status: String,
        /// Response body.
        body: String,
    },
    /// `GET` answered something that is not serve details JSON.
    #[error("GetServeDetails failed. Failed to unmarshal bytes: {0}")]
    DetailsJson(String),
    /// `PUT` answered non-2xx.
    #[error("UpdateDeployments fail: {status} {body}")]
    UpdateStatus {
        /// Status line.
        status: String,
        /// Response body.
        body: String,
    },
}

/// Where a head pod's serve proxy is reached for its health check.
#[derive(Clone, Debug)]
pub enum ProxyHealthTarget {
    /// `http://<pod IP>:<serve port>` directly.
    Direct {
        /// Pod IP.
        pod_ip: String,
        /// The head container's `serve` port.
        port: i32,
    },
    /// Through the API server's service proxy on the cluster's own head service (which selects
    /// only the head pod), port `serve`.
    Proxy {
        /// Namespace.
        namespace: String,
        /// The cluster's head service.
        service: String,
    },
}

/// One cluster's dashboard, with the Ray token when the cluster uses token auth.
#[derive(Clone, Debug)]
pub struct ServeTarget {
    /// Where the dashboard is reached.
    pub dashboard: DashboardTarget,
    /// The `auth_token` of the cluster's auth Secret.
    pub token: Option<String>,
}

/// A serve API client over either transport.
#[derive(Clone)]
pub struct ServeClient {
    kube: kube::Client,
    http: HttpClient<HttpConnector, Full<Bytes>>,
}

fn status_line(code: u16) -> String {
    let reason = http::StatusCode::from_u16(code)
        .ok()
        .and_then(|c| c.canonical_reason())
        .unwrap_or_default();
    format!("{code} {reason}")
}

impl ServeClient {
    /// A client using `kube` for proxied calls and a plain HTTP client for direct ones.
    pub fn new(kube: kube::Client) -> Self {
        Self {
            kube,
            http: HttpClient::builder(TokioExecutor::new()).build_http(),
        }
    }

    async fn direct(
        &self,
        method: http::Method,
        url: String,
        body: Vec<u8>,
        token: Option<&str>,
    ) -> Result<(u16, String), ServeApiError> {
        let mut builder = http::Request::builder()
            .method(method)
            .uri(url)
            .header(http::header::CONTENT_TYPE, JSON_CONTENT_TYPE);
        if let Some(token) = token {
            builder = builder.header(RAY_AUTHORIZATION_HEADER, bearer(token));
        }
        let request = builder.body(Full::new(Bytes::from(body)))?;
        let call = async {
            let response = self
                .http
                .request(request)
                .await
                .map_err(|e| ServeApiError::Transport(e.to_string()))?;
            let code = response.status().as_u16();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| ServeApiError::Transport(e.to_string()))?
                .to_bytes();
            Ok((code, String::from_utf8_lossy(&bytes).into_owned()))
        };
        tokio::time::timeout(DIRECT_TIMEOUT, call)
            .await
            .map_err(|_| ServeApiError::Timeout(DIRECT_TIMEOUT))?
    }

    async fn proxied(
        &self,
        method: http::Method,
        uri: String,
        body: Vec<u8>,
        token: Option<&str>,
    ) -> Result<(u16, String), ServeApiError> {
        let mut builder = http::Request::builder()
            .method(method)
            .uri(uri)
            .header(http::header::CONTENT_TYPE, JSON_CONTENT_TYPE);
        if let Some(token) = token {
            builder = builder.header(RAY_AUTHORIZATION_HEADER, bearer(token));
        }
        let request = builder.body(body)?;
        let call = async {
            match self.kube.request_text(request).await {
                Ok(text) => Ok((200, text)),
                Err(kube::Error::Api(status)) => Ok((status.code, status.message)),
                Err(e) => Err(ServeApiError::Transport(e.to_string())),
            }
        };
        tokio::time::timeout(PROXY_TIMEOUT, call)
            .await
            .map_err(|_| ServeApiError::Timeout(PROXY_TIMEOUT))?
    }

    async fn dashboard(
        &self,
        target: &ServeTarget,
        method: http::Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(u16, String), ServeApiError> {
        let token = target.token.as_deref();
        match &target.dashboard {
            DashboardTarget::Direct { address } => {
                self.direct(method, format!("http://{address}{path}"), body, token)
                    .await
            }
            DashboardTarget::Proxy { namespace, service } => {
                let uri = format!("/api/v1/namespaces/{namespace}/services/{service}:dashboard/proxy{path}");
                self.proxied(method, uri, body, token).await
            }
        }
    }

    /// `GetServeDetails`.
    pub async fn serve_details(&self, target: &ServeTarget) -> Result<ServeDetails, ServeApiError> {
        let path = format!("{SERVE_APPLICATIONS_PATH}{DECLARATIVE_QUERY}");
        let (code, body) = self.dashboard(target, http::Method::GET, &path, Vec::new()).await?;
        if !(200..300).contains(&code) {
            return Err(ServeApiError::DetailsStatus {
                status: status_line(code),
                body,
            });
        }
        serde_json::from_str(&body).map_err(|_| ServeApiError::DetailsJson(body))
    }

    /// `UpdateDeployments`: PUT the serve config (JSON).
    pub async fn update_deployments(
        &self,
        target: &ServeTarget,
        config: &serde_json::Value,
    ) -> Result<(), ServeApiError> {
        let body = serde_json::to_vec(config).unwrap_or_default();
        let (code, text) = self
            .dashboard(target, http::Method::PUT, SERVE_APPLICATIONS_PATH, body)
            .await?;
        if (200..300).contains(&code) {
            Ok(())
        } else {
            Err(ServeApiError::UpdateStatus {
                status: status_line(code),
                body: text,
            })
        }
    }

    /// `CheckProxyActorHealth`: HTTP 200 from `/-/healthz`.
    pub async fn proxy_healthy(&self, target: &ProxyHealthTarget) -> bool {
        let result = match target {
            ProxyHealthTarget::Direct { pod_ip, port } => {
                self.direct(
                    http::Method::GET,
                    format!("http://{pod_ip}:{port}{PROXY_HEALTH_PATH}"),
                    Vec::new(),
                    None,
                )
                .await
            }
            ProxyHealthTarget::Proxy { namespace, service } => {
                let uri = format!(
                    "/api/v1/namespaces/{namespace}/services/{service}:{SERVING_PORT_NAME}/proxy{PROXY_HEALTH_PATH}"
                );
                self.proxied(http::Method::GET, uri, Vec::new(), None).await
            }
        };
        matches!(result, Ok((200, _)))
    }
}
