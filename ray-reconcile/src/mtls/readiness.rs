//! The RayCluster controller's mTLS gate: before it creates head or
//! worker pods of a TLS cluster, both leaf Certificates must be issued for their current spec and
//! both Secrets must hold `tls.crt`, `tls.key` and `ca.crt`. Only TLS clusters pay for the four
//! GETs; nothing is watched for them.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject};
use kube::{Client, ResourceExt};
use ray_api::RayCluster;
use ray_podgen::names::tls_secret_name;

use super::names::{CERTIFICATE_KIND, TLS_SECRET_KEYS, leaf_certificate_name};
use super::plan::certificate_ready;

/// The error text when a Secret lacks a key.
pub fn missing_key_message(namespace: &str, secret: &str, key: &str) -> String {
    format!("mTLS secret {namespace}/{secret} is missing key {key}")
}

/// Whether `secret` holds every key pods need; the first missing key otherwise.
pub fn missing_secret_key(secret: &Secret) -> Option<&'static str> {
    TLS_SECRET_KEYS
        .into_iter()
        .find(|key| !secret.data.as_ref().is_some_and(|d| d.contains_key(*key)))
}

/// `Ok(())` when pods of `cluster` may be created; otherwise the reason, which ends the pass as an
/// error (retried with backoff).
pub async fn check(client: &Client, cluster: &RayCluster) -> Result<(), String> {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let certificates: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &namespace,
        &super::cert_manager_resource(CERTIFICATE_KIND),
    );
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    for head in [true, false] {
        let certificate = leaf_certificate_name(&name, head);
        match certificates.get_opt(&certificate).await {
            Ok(Some(object)) => {
                let value = serde_json::to_value(&object).map_err(|e| e.to_string())?;
                if !certificate_ready(&value) {
                    return Err(format!("mTLS certificate {namespace}/{certificate} is not ready"));
                }
            }
            Ok(None) => return Err(format!("mTLS certificate {namespace}/{certificate} not found")),
            Err(e) => return Err(format!("failed to get mTLS certificate {namespace}/{certificate}: {e}")),
        }
    }
    for head in [true, false] {
        let secret_name = tls_secret_name(&name, head);
        match secrets.get_opt(&secret_name).await {
            Ok(Some(secret)) => {
                if let Some(key) = missing_secret_key(&secret) {
                    return Err(missing_key_message(&namespace, &secret_name, key));
                }
            }
            Ok(None) => return Err(format!("mTLS secret {namespace}/{secret_name} not found")),
            Err(e) => return Err(format!("failed to get mTLS secret {namespace}/{secret_name}: {e}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use std::collections::BTreeMap;

    #[test]
    fn secret_needs_all_three_keys() {
        let with = |keys: &[&str]| Secret {
            data: Some(
                keys.iter()
                    .map(|k| ((*k).to_owned(), ByteString(b"x".to_vec())))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..Secret::default()
        };
        assert_eq!(missing_secret_key(&with(&["tls.crt", "tls.key", "ca.crt"])), None);
        assert_eq!(missing_secret_key(&with(&["tls.crt", "ca.crt"])), Some("tls.key"));
        assert_eq!(missing_secret_key(&Secret::default()), Some("tls.crt"));
    }
}
