//! Calling one webhook over HTTPS and reading its AdmissionReview answer.

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

use super::rules::{Endpoint, Webhook};
use crate::error::ApiError;

/// Largest answer read from a webhook.
const MAX_ANSWER_BYTES: usize = 3 * 1024 * 1024;

/// Posts `review` to the webhook within its timeout. `Ok((status, body))` when an HTTP answer came back;
/// `Err` is the reason the call failed, worded like the API server's (`Post "<url>?timeout=10s": ...`).
pub async fn post(webhook: &Webhook, review: Vec<u8>) -> Result<(u16, Bytes), String> {
    let url = match &webhook.endpoint {
        Endpoint::Url(url) => url.clone(),
        Endpoint::Service(service) => {
            return Err(format!(
                "kube-sim cannot reach clientConfig.service {service}; register the webhook with clientConfig.url"
            ));
        }
        Endpoint::Missing => return Err("the webhook has neither clientConfig.url nor clientConfig.service".into()),
    };
    let timeout = webhook.timeout;
    let target = format!("{url}?timeout={}s", timeout.as_secs());
    match tokio::time::timeout(timeout, exchange(&url, &target, &webhook.ca_bundle, review)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(format!("Post {target:?}: {e}")),
        Err(_) => Err(format!("Post {target:?}: context deadline exceeded")),
    }
}

/// Connects, shakes hands trusting only `ca_bundle` (PEM), sends one POST and reads the answer.
async fn exchange(url: &str, target: &str, ca_bundle: &[u8], review: Vec<u8>) -> Result<(u16, Bytes), String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("invalid url: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err("the webhook url must use https".into());
    }
    let host = uri.host().ok_or("the webhook url has no host")?.to_owned();
    let port = uri.port_u16().unwrap_or(443);
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_bundle) {
        let cert = cert.map_err(|e| format!("unreadable caBundle: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("unusable caBundle certificate: {e}"))?;
    }
    let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let bare_host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let server_name = ServerName::try_from(bare_host.clone()).map_err(|e| format!("invalid host {host}: {e}"))?;
    let tcp = TcpStream::connect((bare_host.as_str(), port))
        .await
        .map_err(|e| format!("dial tcp {host}:{port}: {e}"))?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(connection);
    let path = target
        .find("://")
        .and_then(|i| target[i + 3..].find('/').map(|j| &target[i + 3 + j..]))
        .unwrap_or("/");
    let request = Request::post(path)
        .header(header::HOST, format!("{host}:{port}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(review)))
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| format!("reading the answer: {e}"))?
        .to_bytes();
    driver.abort();
    Ok((status, body))
}

/// What a webhook's answer means: `Ok(None)` allowed, `Ok(Some(error))` denied (the error the API server
/// returns), `Err` an unusable answer (handled by the failure policy).
pub fn interpret(webhook: &str, uid: &str, status: u16, body: &[u8]) -> Result<Option<ApiError>, String> {
    if status != 200 {
        return Err(format!(
            "the server responded with status code {status}: {}",
            String::from_utf8_lossy(body).trim()
        ));
    }
    let review: Value = serde_json::from_slice(body).map_err(|e| format!("received invalid webhook response: {e}"))?;
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("received invalid webhook response: response is nil")?;
    let answered_uid = response["uid"].as_str().unwrap_or_default();
    if answered_uid != uid {
        return Err(format!(
            "received invalid webhook response: expected response.uid={uid:?}, got {answered_uid:?}"
        ));
    }
    if response["allowed"].as_bool() == Some(true) {
        return Ok(None);
    }
    Ok(Some(denial(webhook, &response["status"])))
}

/// `webhookerrors.ToStatusErr`: the webhook's Status with at least code 400, status `Failure` and the
/// message prefixed by `admission webhook "<name>" denied the request`.
fn denial(webhook: &str, status: &Value) -> ApiError {
    let denied_by = format!("admission webhook {webhook:?} denied the request");
    let code = status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let reason = status["reason"].as_str().unwrap_or_default();
    let message = match status["message"].as_str().unwrap_or_default() {
        "" if reason.is_empty() => format!("{denied_by} without explanation"),
        "" => format!("{denied_by}: {reason}"),
        message => format!("{denied_by}: {message}"),
    };
    let mut error = ApiError::new(code, reason, message);
    if status["details"].is_object() {
        error.details = status["details"].clone();
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn allowed_answers_pass() {
        let body = answer(json!({"response": {"uid": "u1", "allowed": true, "status": {"code": 200}}}));
        assert_eq!(interpret("w", "u1", 200, &body), Ok(None));
    }

    #[test]
    fn denials_keep_the_webhook_status_and_prefix_the_message() {
        let body = answer(json!({"response": {"uid": "u1", "allowed": false, "status": {
            "status": "Failure", "code": 422, "reason": "Invalid", "message": "RayCluster.ray.io \"x\" is invalid: boom",
            "details": {"name": "x", "group": "ray.io", "kind": "RayCluster"},
        }}}));
        let err = interpret("vraycluster.kb.io", "u1", 200, &body).unwrap().unwrap();
        assert_eq!(err.code, 422);
        assert_eq!(err.reason, "Invalid");
        assert_eq!(
            err.message,
            r#"admission webhook "vraycluster.kb.io" denied the request: RayCluster.ray.io "x" is invalid: boom"#
        );
        assert_eq!(err.details["kind"], "RayCluster");
    }

    #[test]
    fn denials_without_code_or_message_follow_the_api_server() {
        let body = answer(json!({"response": {"uid": "u1", "allowed": false}}));
        let err = interpret("w", "u1", 200, &body).unwrap().unwrap();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            r#"admission webhook "w" denied the request without explanation"#
        );
        let body =
            answer(json!({"response": {"uid": "u1", "allowed": false, "status": {"code": 200, "reason": "Nope"}}}));
        let err = interpret("w", "u1", 200, &body).unwrap().unwrap();
        assert_eq!(err.code, 400);
        assert_eq!(err.message, r#"admission webhook "w" denied the request: Nope"#);
    }

    #[test]
    fn unusable_answers_are_call_failures() {
        assert!(
            interpret("w", "u1", 500, b"oops")
                .unwrap_err()
                .contains("status code 500")
        );
        assert!(interpret("w", "u1", 200, b"{").is_err());
        assert!(
            interpret("w", "u1", 200, b"{}")
                .unwrap_err()
                .contains("response is nil")
        );
        let other_uid = answer(json!({"response": {"uid": "u2", "allowed": true}}));
        assert!(
            interpret("w", "u1", 200, &other_uid)
                .unwrap_err()
                .contains("expected response.uid")
        );
    }
}
