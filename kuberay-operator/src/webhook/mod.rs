//! KubeRay's validating admission webhooks (`ENABLE_WEBHOOKS=true`): an HTTPS server on every replica
//! (leader or not, as controller-runtime's webhook server) answering AdmissionReviews at
//! `/validate-ray-io-v1-raycluster`, `/validate-ray-io-v1-rayjob` and `/validate-ray-io-v1-rayservice`.
//!
//! The certificate and key come from `<cert dir>/tls.crt` and `<cert dir>/tls.key` ([`certs`]): a missing or
//! unreadable file stops the operator at start-up with an error naming it; later changes are picked up.

pub mod certs;
pub mod config;

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use certs::ServingCertificate;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use ray_reconcile::admission::{WebhookKind, review};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::ring;
use tracing::{debug, info, warn};

/// Largest AdmissionReview body read (the API server's own request size limit is 3 MiB of object; a
/// review carries the object twice on update).
const MAX_REVIEW_BYTES: usize = 7 * 1024 * 1024;
/// How long a client gets to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the webhook server listens and finds its certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookSettings {
    /// TCP port on every interface (`--webhook-port`, default 9443).
    pub port: u16,
    /// Directory with `tls.crt` and `tls.key` (`--webhook-cert-dir`).
    pub cert_dir: PathBuf,
}

/// The TLS configuration serving `<cert_dir>/tls.crt` (PEM chain) and `<cert_dir>/tls.key` (PEM key),
/// re-read when they change.
pub fn load_tls(cert_dir: &Path) -> anyhow::Result<Arc<ServerConfig>> {
    let provider = Arc::new(ring::default_provider());
    let certificate = ServingCertificate::load(cert_dir, Arc::clone(&provider))?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("webhook TLS protocol versions")?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(certificate));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Loads the certificate, binds the port and serves the webhooks until `stop` turns true.
pub async fn start(settings: &WebhookSettings, stop: watch::Receiver<bool>) -> anyhow::Result<()> {
    let tls = load_tls(&settings.cert_dir)?;
    let listener = TcpListener::bind(("0.0.0.0", settings.port))
        .await
        .with_context(|| format!("binding the webhook server on port {}", settings.port))?;
    info!(addr = %listener.local_addr()?, cert_dir = %settings.cert_dir.display(), "serving validating webhooks");
    tokio::spawn(serve(listener, TlsAcceptor::from(tls), stop));
    Ok(())
}

/// Accepts TLS connections until `stop` turns true; each connection is served on its own task.
async fn serve(listener: TcpListener, acceptor: TlsAcceptor, mut stop: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                warn!(error = %e, "webhook server: accept failed");
                continue;
            }
        };
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    debug!(%peer, error = %e, "webhook server: TLS handshake failed");
                    return;
                }
                Err(_) => {
                    debug!(%peer, "webhook server: TLS handshake timed out");
                    return;
                }
            };
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service_fn(handle))
                .await
            {
                debug!(%peer, error = %e, "webhook connection ended with an error");
            }
        });
    }
}

/// One HTTP request: a review at a webhook path, 404 elsewhere.
async fn handle(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let Some(kind) = WebhookKind::from_path(request.uri().path()) else {
        return Ok(plain(StatusCode::NOT_FOUND, "404 page not found\n"));
    };
    if request.method() != Method::POST {
        return Ok(plain(StatusCode::METHOD_NOT_ALLOWED, "only POST is served\n"));
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match Limited::new(request.into_body(), MAX_REVIEW_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            warn!(error = %e, "webhook server: cannot read the request body");
            Bytes::new()
        }
    };
    let answer = review(kind, content_type.as_deref(), &body);
    let json = match serde_json::to_vec(&answer) {
        Ok(json) => json,
        Err(e) => return Ok(plain(StatusCode::INTERNAL_SERVER_ERROR, &format!("{e}\n"))),
    };
    let mut response = Response::new(Full::new(Bytes::from(json)));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())));
    *response.status_mut() = status;
    response
}
