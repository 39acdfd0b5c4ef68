//! Validating admission webhooks: ValidatingWebhookConfigurations stored in kube-sim send matching writes
//! to a local HTTPS webhook server (a self-signed CA from rcgen), with the real kube client on the other
//! side.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube_sim::{SimConfig, SimHandle};
use parking_lot::Mutex;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::ring;

/// A CA and a serving certificate for `localhost` / `127.0.0.1` signed by it: (CA PEM, cert PEM, key PEM).
fn serving_certificate() -> (String, String, String) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kube-sim test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

/// A test webhook: `/allow` allows, `/deny` denies with a 422 Status, `/slow` answers after 3 s; every
/// AdmissionReview request received is recorded.
struct TestWebhook {
    port: u16,
    ca_pem: String,
    received: Arc<Mutex<Vec<Value>>>,
}

async fn answer(path: String, body: Bytes, received: Arc<Mutex<Vec<Value>>>) -> Value {
    let review: Value = serde_json::from_slice(&body).unwrap();
    let request = review["request"].clone();
    received.lock().push(request.clone());
    let uid = request["uid"].clone();
    match path.as_str() {
        "/deny" => json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
            "uid": uid, "allowed": false,
            "status": {"status": "Failure", "code": 422, "reason": "Invalid", "message": format!("{} is not welcome", request["name"].as_str().unwrap_or_default()),
                "details": {"name": request["name"], "kind": "ConfigMap", "causes": [{"reason": "FieldValueInvalid", "field": "metadata.name"}]}},
        }}),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": uid, "allowed": true}})
        }
        _ => {
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": uid, "allowed": true, "status": {"code": 200}}})
        }
    }
}

async fn start_webhook() -> TestWebhook {
    let (ca_pem, cert_pem, key_pem) = serving_certificate();
    let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
    let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (acceptor, log) = (acceptor.clone(), Arc::clone(&log));
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else { return };
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let log = Arc::clone(&log);
                    async move {
                        let path = req.uri().path().to_owned();
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let out = answer(path, body, log).await;
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from(
                            serde_json::to_vec(&out).unwrap(),
                        ))))
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
            });
        }
    });
    TestWebhook { port, ca_pem, received }
}

async fn sim() -> SimHandle {
    support::api_only_sim(SimConfig::default()).await
}

fn vwc_resource() -> ApiResource {
    ApiResource {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "admissionregistration.k8s.io/v1".into(),
        kind: "ValidatingWebhookConfiguration".into(),
        plural: "validatingwebhookconfigurations".into(),
    }
}

/// Registers one webhook for configmaps with `operations`, at `url`, trusting `ca_pem`.
async fn register(sim: &SimHandle, name: &str, url: &str, ca_pem: &str, operations: &[&str], extra: Value) {
    let mut webhook = json!({
        "name": format!("{name}.test.io"),
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {"url": url, "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem)},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": operations, "resources": ["configmaps"]}],
    });
    if let (Some(w), Some(e)) = (webhook.as_object_mut(), extra.as_object()) {
        w.extend(e.clone());
    }
    let config: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [webhook],
    }))
    .unwrap();
    Api::<DynamicObject>::all_with(sim.client(), &vwc_resource())
        .create(&PostParams::default(), &config)
        .await
        .unwrap();
}

fn config_map(name: &str, data: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": data}})).unwrap()
}

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other}"),
    }
}

#[tokio::test]
async fn denials_reach_the_client_with_the_webhook_status() {
    let sim = sim().await;
    let hook = start_webhook().await;
    let url = format!("https://127.0.0.1:{}/deny", hook.port);
    register(&sim, "deny", &url, &hook.ca_pem, &["CREATE"], json!({})).await;
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let status = api_error(
        cms.create(&PostParams::default(), &config_map("blocked", "v"))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
    assert_eq!(
        status.message,
        r#"admission webhook "deny.test.io" denied the request: blocked is not welcome"#
    );
    assert_eq!(status.details.unwrap().kind, "ConfigMap");
    assert!(
        cms.get_opt("blocked").await.unwrap().is_none(),
        "a denied object is not stored"
    );
    // Resources outside the rules are not sent.
    let secrets: Api<Secret> = Api::namespaced(sim.client(), "default");
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "s"}})).unwrap();
    secrets.create(&PostParams::default(), &secret).await.unwrap();
    assert_eq!(hook.received.lock().len(), 1);
}

#[tokio::test]
async fn reviews_carry_the_operation_and_the_objects() {
    let sim = sim().await;
    let hook = start_webhook().await;
    let url = format!("https://localhost:{}/allow", hook.port);
    register(&sim, "allow", &url, &hook.ca_pem, &["*"], json!({})).await;
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let created = cms
        .create(&PostParams::default(), &config_map("cm", "one"))
        .await
        .unwrap();
    let mut replaced = created.clone();
    replaced.data = Some([("k".to_owned(), "two".to_owned())].into());
    cms.replace("cm", &PostParams::default(), &replaced).await.unwrap();
    cms.patch(
        "cm",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "three"}})),
    )
    .await
    .unwrap();
    cms.delete("cm", &DeleteParams::default()).await.unwrap();
    let received = hook.received.lock().clone();
    let summary: Vec<(String, Value, Value)> = received
        .iter()
        .map(|r| {
            (
                r["operation"].as_str().unwrap().to_owned(),
                r["object"]["data"]["k"].clone(),
                r["oldObject"]["data"]["k"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("CREATE".to_owned(), json!("one"), Value::Null),
            ("UPDATE".to_owned(), json!("two"), json!("one")),
            ("UPDATE".to_owned(), json!("three"), json!("two")),
            ("DELETE".to_owned(), Value::Null, json!("three")),
        ]
    );
    let first = &received[0];
    assert_eq!(
        first["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        first["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(first["namespace"], "default");
    assert_eq!(first["name"], "cm");
    assert_eq!(first["object"]["metadata"]["namespace"], "default");
    assert!(!first["uid"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn failure_policy_decides_when_the_webhook_cannot_be_reached() {
    let sim = sim().await;
    let hook = start_webhook().await;
    // A port nothing listens on.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("https://127.0.0.1:{}/allow", closed.local_addr().unwrap().port());
    drop(closed);
    register(
        &sim,
        "ignored",
        &dead_url,
        &hook.ca_pem,
        &["CREATE"],
        json!({"failurePolicy": "Ignore"}),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    cms.create(&PostParams::default(), &config_map("through", "v"))
        .await
        .expect("failurePolicy Ignore lets the request through");
    register(&sim, "failing", &dead_url, &hook.ca_pem, &["CREATE"], json!({})).await;
    let status = api_error(
        cms.create(&PostParams::default(), &config_map("stopped", "v"))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 500);
    assert_eq!(status.reason, "InternalError");
    assert!(
        status.message.starts_with(&format!(
            r#"Internal error occurred: failed calling webhook "failing.test.io": failed to call webhook: Post "{dead_url}?timeout=10s": dial tcp"#
        )),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn a_slow_webhook_times_out_and_an_untrusted_one_fails() {
    let sim = sim().await;
    let hook = start_webhook().await;
    let url = format!("https://127.0.0.1:{}/slow", hook.port);
    register(
        &sim,
        "slow",
        &url,
        &hook.ca_pem,
        &["CREATE"],
        json!({"timeoutSeconds": 1}),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let started = Instant::now();
    let status = api_error(
        cms.create(&PostParams::default(), &config_map("late", "v"))
            .await
            .unwrap_err(),
    );
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(status.code, 500);
    assert!(
        status.message.ends_with("?timeout=1s\": context deadline exceeded"),
        "{}",
        status.message
    );

    let sim = self::sim().await;
    let (other_ca, _, _) = serving_certificate();
    let url = format!("https://127.0.0.1:{}/allow", hook.port);
    register(&sim, "untrusted", &url, &other_ca, &["CREATE"], json!({})).await;
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let status = api_error(
        cms.create(&PostParams::default(), &config_map("x", "v"))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 500);
    assert!(status.message.contains("tls: "), "{}", status.message);
}

#[tokio::test]
async fn service_references_are_reported_as_unsupported() {
    let sim = sim().await;
    let config: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "svc"},
        "webhooks": [{
            "name": "svc.test.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"service": {"namespace": "system", "name": "webhook-service", "path": "/validate"}},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}],
        }],
    }))
    .unwrap();
    Api::<DynamicObject>::all_with(sim.client(), &vwc_resource())
        .create(&PostParams::default(), &config)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let status = api_error(
        cms.create(&PostParams::default(), &config_map("x", "v"))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 500);
    assert!(
        status
            .message
            .contains("clientConfig.service system/webhook-service:443/validate"),
        "{}",
        status.message
    );
}
