//! KubeRay's ValidatingWebhookConfiguration (`config/webhook/manifests.yaml`) for the operator's webhooks:
//! three webhooks (`vraycluster.kb.io`, `vrayjob.kb.io`, `vrayservice.kb.io`) on CREATE and UPDATE of
//! `ray.io/v1` resources, `failurePolicy: Fail`, `sideEffects: None`, reached through a Service or a URL.

use base64::Engine as _;
use ray_api::constants::{
    RAY_API_GROUP, RAY_CLUSTER_WEBHOOK_NAME, RAY_CLUSTER_WEBHOOK_PATH, RAY_JOB_WEBHOOK_NAME, RAY_JOB_WEBHOOK_PATH,
    RAY_SERVICE_WEBHOOK_NAME, RAY_SERVICE_WEBHOOK_PATH, VALIDATING_WEBHOOK_CONFIGURATION_NAME,
};
use serde_json::{Value, json};

/// Namespace of the webhook Service in KubeRay's manifests (kustomize rewrites it on install).
pub const DEFAULT_SERVICE_NAMESPACE: &str = "system";
/// Name of the webhook Service in KubeRay's manifests.
pub const DEFAULT_SERVICE_NAME: &str = "webhook-service";

/// Where the API server reaches the webhook server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookEndpoint {
    /// `clientConfig.service`: a Service in front of the operator (the in-cluster way).
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
    },
    /// `clientConfig.url`: `https://host:port`, the webhook paths appended (outside the cluster, tests).
    Url(String),
}

/// The ValidatingWebhookConfiguration for `endpoint`; `ca_bundle` (PEM) goes into every `clientConfig`.
pub fn validating_webhook_configuration(endpoint: &WebhookEndpoint, ca_bundle: Option<&[u8]>) -> Value {
    let webhook = |name: &str, path: &str, plural: &str| {
        let mut client_config = match endpoint {
            WebhookEndpoint::Service { namespace, name } => {
                json!({"service": {"name": name, "namespace": namespace, "path": path}})
            }
            WebhookEndpoint::Url(base) => json!({"url": format!("{}{path}", base.trim_end_matches('/'))}),
        };
        if let Some(ca) = ca_bundle {
            client_config["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(ca));
        }
        json!({
            "admissionReviewVersions": ["v1"],
            "clientConfig": client_config,
            "failurePolicy": "Fail",
            "name": name,
            "rules": [{
                "apiGroups": [RAY_API_GROUP],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": [plural],
            }],
            "sideEffects": "None",
        })
    };
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING_WEBHOOK_CONFIGURATION_NAME},
        "webhooks": [
            webhook(RAY_CLUSTER_WEBHOOK_NAME, RAY_CLUSTER_WEBHOOK_PATH, "rayclusters"),
            webhook(RAY_JOB_WEBHOOK_NAME, RAY_JOB_WEBHOOK_PATH, "rayjobs"),
            webhook(RAY_SERVICE_WEBHOOK_NAME, RAY_SERVICE_WEBHOOK_PATH, "rayservices"),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_form_matches_kuberays_manifest() {
        let config = validating_webhook_configuration(
            &WebhookEndpoint::Service {
                namespace: DEFAULT_SERVICE_NAMESPACE.into(),
                name: DEFAULT_SERVICE_NAME.into(),
            },
            None,
        );
        assert_eq!(config["metadata"]["name"], "validating-webhook-configuration");
        let names: Vec<&str> = config["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["vraycluster.kb.io", "vrayjob.kb.io", "vrayservice.kb.io"]);
        assert_eq!(
            config["webhooks"][0],
            json!({
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": "/validate-ray-io-v1-raycluster"}},
                "failurePolicy": "Fail",
                "name": "vraycluster.kb.io",
                "rules": [{"apiGroups": ["ray.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["rayclusters"]}],
                "sideEffects": "None",
            })
        );
        assert_eq!(config["webhooks"][2]["rules"][0]["resources"], json!(["rayservices"]));
    }

    #[test]
    fn url_form_appends_the_paths_and_carries_the_ca() {
        let config =
            validating_webhook_configuration(&WebhookEndpoint::Url("https://127.0.0.1:9443/".into()), Some(b"hello"));
        assert_eq!(
            config["webhooks"][1]["clientConfig"],
            json!({"url": "https://127.0.0.1:9443/validate-ray-io-v1-rayjob", "caBundle": "aGVsbG8="})
        );
    }
}
