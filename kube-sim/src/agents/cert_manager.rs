//! A hollow cert-manager: issues `cert-manager.io/v1` Certificates and marks Issuers ready, once the
//! cert-manager CRDs are installed (without them it never sees an object).
//!
//! Issuing a Certificate writes its `spec.secretName` Secret (`kubernetes.io/tls`, keys `tls.crt`, `tls.key`,
//! `ca.crt`) and sets `Ready=True` with `observedGeneration` = the Certificate's generation, `notBefore`,
//! `notAfter` (now + `spec.duration`, default 90 days) and `revision`. A spec change (new generation) is
//! re-issued; so is a Certificate whose Secret went missing or lost a key. The key material is fake: PEM-shaped
//! blocks whose body is the base64 of a small JSON document naming the certificate, its issuer and its SANs
//! (tests can read the IP SANs back), not a usable certificate or key. Secrets get no owner reference, as
//! cert-manager's default (`--enable-certificate-owner-ref=false`).

use std::collections::BTreeSet;
use std::time::Duration;

use base64::Engine as _;
use kube_compat::go_duration;
use serde_json::{Value, json};

use super::{Agent, Cache, Key, condition_true, is_terminating, now, status_patch};
use crate::kinds::Gvr;
use crate::patch::PatchKind;
use crate::store::Store;

/// cert-manager's API group.
pub const CERT_MANAGER_GROUP: &str = "cert-manager.io";
/// Keys of an issued Secret.
pub const TLS_SECRET_KEYS: [&str; 3] = ["tls.crt", "tls.key", "ca.crt"];
/// Validity when `spec.duration` is unset or unparsable (cert-manager's default, 90 days).
const DEFAULT_DURATION: Duration = Duration::from_secs(90 * 24 * 3600);
/// Retry of a failed write.
const RETRY: Duration = Duration::from_millis(50);

const CERTIFICATES: usize = 0;
const ISSUERS: usize = 1;

/// `cert-manager.io/v1` Certificates.
pub fn certificates() -> Gvr {
    Gvr::new(CERT_MANAGER_GROUP, "v1", "certificates")
}

/// `cert-manager.io/v1` Issuers.
pub fn issuers() -> Gvr {
    Gvr::new(CERT_MANAGER_GROUP, "v1", "issuers")
}

/// The hollow cert-manager: a cache of Certificates and Issuers and the ones to look at next.
pub(super) struct CertManager {
    cache: Cache,
    dirty: BTreeSet<(usize, Key)>,
}

impl CertManager {
    pub(super) fn new(store: &Store) -> Self {
        Self {
            cache: Cache::new(store, &[certificates(), issuers()]),
            dirty: BTreeSet::new(),
        }
    }
}

impl Agent for CertManager {
    fn pass(&mut self, store: &Store) -> Option<Duration> {
        for change in self.cache.sync() {
            if change.new.is_some() {
                self.dirty.insert((change.kind, change.key));
            }
        }
        let mut failed = BTreeSet::new();
        for (kind, key) in std::mem::take(&mut self.dirty) {
            let Some(object) = self.cache.maps[kind].get(&key).cloned() else {
                continue;
            };
            if is_terminating(&object.value()) {
                continue;
            }
            let result = match kind {
                CERTIFICATES => reconcile_certificate(store, &object),
                ISSUERS => reconcile_issuer(store, &object),
                _ => Ok(()),
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, name = %key.1, "hollow cert-manager: write failed; retrying");
                failed.insert((kind, key));
            }
        }
        let retry = !failed.is_empty();
        self.dirty = failed;
        retry.then_some(RETRY)
    }

    fn feed(&mut self) -> &mut super::Cache {
        &mut self.cache
    }
}

fn generation(object: &Value) -> i64 {
    object["metadata"]["generation"].as_i64().unwrap_or(1)
}

fn ready_condition(object: &Value) -> Option<&Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
}

/// Issued for the current spec: `Ready=True` observed at the current generation.
pub fn issued_for_current_spec(certificate: &Value) -> bool {
    ready_condition(certificate)
        .is_some_and(|c| c["status"] == "True" && c["observedGeneration"].as_i64() == Some(generation(certificate)))
}

fn secret_complete(secret: &Value) -> bool {
    TLS_SECRET_KEYS
        .iter()
        .all(|k| secret["data"].get(*k).is_some_and(|v| !v.is_null()))
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Standard base64 with padding, as Secret `data` values are written.
fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A PEM-shaped block of `label` around the base64 of `document`.
fn fake_pem(label: &str, document: &Value) -> String {
    let body = base64(document.to_string().as_bytes());
    let mut pem = format!("-----BEGIN {label}-----\n");
    for chunk in body.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(chunk));
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem
}

fn reconcile_certificate(store: &Store, certificate: &crate::store::StoredObject) -> Result<(), String> {
    let value = &certificate.value();
    let namespace = certificate.namespace();
    let Some(secret_name) = value["spec"]["secretName"].as_str().filter(|s| !s.is_empty()) else {
        return Ok(());
    };
    let secret = store.get(&Gvr::core("secrets"), namespace, secret_name).ok();
    if issued_for_current_spec(value) && secret.as_ref().is_some_and(|s| secret_complete(&s.value())) {
        return Ok(());
    }
    let spec = &value["spec"];
    let issuer = spec["issuerRef"]["name"].as_str().unwrap_or_default();
    let ip_sans = strings(&spec["ipAddresses"]);
    let dns_names = strings(&spec["dnsNames"]);
    let revision = value["status"]["revision"].as_i64().unwrap_or(0) + 1;
    let document = json!({
        "kubeSim": "hollow-cert-manager",
        "certificate": certificate.name(),
        "revision": revision,
        "issuer": issuer,
        "commonName": spec["commonName"],
        "isCA": spec["isCA"].as_bool().unwrap_or(false),
        "dnsNames": dns_names,
        "ipAddresses": ip_sans,
    });
    let data = json!({
        "tls.crt": base64(fake_pem("CERTIFICATE", &document).as_bytes()),
        "tls.key": base64(fake_pem("RSA PRIVATE KEY", &json!({"certificate": certificate.name(), "revision": revision})).as_bytes()),
        "ca.crt": base64(fake_pem("CERTIFICATE", &json!({"ca": issuer})).as_bytes()),
    });
    let annotations = json!({
        "cert-manager.io/certificate-name": certificate.name(),
        "cert-manager.io/issuer-name": issuer,
        "cert-manager.io/issuer-kind": spec["issuerRef"]["kind"].as_str().unwrap_or("Issuer"),
        "cert-manager.io/issuer-group": spec["issuerRef"]["group"].as_str().unwrap_or(CERT_MANAGER_GROUP),
        "cert-manager.io/alt-names": dns_names.join(","),
        "cert-manager.io/ip-sans": ip_sans.join(","),
    });
    match secret {
        Some(existing) => {
            let body = json!({
                "metadata": {"resourceVersion": existing.rv.to_string(), "annotations": annotations},
                "type": "kubernetes.io/tls",
                "data": data,
            });
            store
                .patch(
                    &Gvr::core("secrets"),
                    namespace,
                    secret_name,
                    &PatchKind::Merge,
                    &body,
                    None,
                )
                .map_err(|e| e.to_string())?;
        }
        None => {
            let body = json!({
                "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "metadata": {"name": secret_name, "namespace": namespace, "annotations": annotations},
                "data": data,
            });
            store
                .create(&Gvr::core("secrets"), namespace, body)
                .map_err(|e| e.to_string())?;
        }
    }
    let validity = spec["duration"]
        .as_str()
        .and_then(|text| go_duration::parse(text).ok())
        .unwrap_or(DEFAULT_DURATION);
    let issued_at = jiff::Timestamp::now();
    let not_after = jiff::SignedDuration::try_from(validity)
        .ok()
        .and_then(|d| issued_at.checked_add(d).ok())
        .unwrap_or(issued_at);
    let mut status = value["status"]
        .as_object()
        .cloned()
        .map(Value::Object)
        .unwrap_or(json!({}));
    status["conditions"] = json!([{
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "message": "Certificate is up to date and has not expired",
        "lastTransitionTime": now(),
        "observedGeneration": generation(value),
    }]);
    status["notBefore"] = json!(issued_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    status["notAfter"] = json!(not_after.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    status["revision"] = json!(revision);
    store
        .patch(
            &certificates(),
            namespace,
            certificate.name(),
            &PatchKind::Merge,
            &status_patch(certificate, &status),
            Some("status"),
        )
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn reconcile_issuer(store: &Store, issuer: &crate::store::StoredObject) -> Result<(), String> {
    if condition_true(&issuer.value(), "Ready") {
        return Ok(());
    }
    let status = json!({"conditions": [{
        "type": "Ready", "status": "True", "reason": "KeyPairVerified",
        "message": "Signing CA verified", "lastTransitionTime": now(),
        "observedGeneration": generation(&issuer.value()),
    }]});
    store
        .patch(
            &issuers(),
            issuer.namespace(),
            issuer.name(),
            &PatchKind::Merge,
            &status_patch(issuer, &status),
            Some("status"),
        )
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_means_ready_at_the_current_generation() {
        let cert = |observed: i64| {
            json!({"metadata": {"generation": 3},
                "status": {"conditions": [{"type": "Ready", "status": "True", "observedGeneration": observed}]}})
        };
        assert!(issued_for_current_spec(&cert(3)));
        assert!(!issued_for_current_spec(&cert(2)));
    }

    #[test]
    fn fake_pem_is_pem_shaped() {
        let pem = fake_pem("CERTIFICATE", &json!({"ipAddresses": ["10.0.0.1"]}));
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
        assert!(pem.ends_with("-----END CERTIFICATE-----\n"));
        assert!(pem.lines().all(|l| l.len() <= 64));
    }
}
