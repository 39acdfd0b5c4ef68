//! Reading ValidatingWebhookConfigurations (`admissionregistration.k8s.io/v1`) and deciding which of
//! their webhooks a request matches — pure, no I/O.

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

use crate::kinds::Gvr;

/// `timeoutSeconds` when a webhook does not set it (the API server's default).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// Largest `timeoutSeconds` the API server accepts.
pub const MAX_TIMEOUT_SECONDS: u64 = 30;

/// The admission operation of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// POST, or an apply patch that creates the object.
    Create,
    /// PUT or PATCH of an existing object.
    Update,
    /// DELETE of one object.
    Delete,
}

impl Operation {
    /// The name rules and AdmissionRequests use (`CREATE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
        }
    }
}

/// What a rule is matched against.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    /// The resource requested.
    pub gvr: &'a Gvr,
    /// Its subresource (`status`), if any.
    pub subresource: Option<&'a str>,
    /// The operation.
    pub operation: Operation,
    /// Whether the resource is namespaced (for a rule's `scope`).
    pub namespaced: bool,
}

/// `failurePolicy`: what a failed call (unreachable, timeout, unreadable answer) means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Reject the request (the default).
    Fail,
    /// Let the request through.
    Ignore,
}

/// Where the API server sends the AdmissionReview.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service` (namespace, name, port, path): not reachable from the simulator.
    Service(String),
    /// Neither is set.
    Missing,
}

/// One entry of a rule (`apiGroups` x `apiVersions` x `resources` x `operations`, `scope`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// `apiGroups` (`""` is the core group, `*` any).
    pub api_groups: Vec<String>,
    /// `apiVersions` (`*` any).
    pub api_versions: Vec<String>,
    /// `resources`: `pods`, `pods/status`, `pods/*`, `*`, `*/status`, `*/*`.
    pub resources: Vec<String>,
    /// `operations` (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`, `*`).
    pub operations: Vec<String>,
    /// `scope`: `Cluster`, `Namespaced` or `*` (the default).
    pub scope: String,
}

impl Rule {
    /// Whether a request with `attrs` falls under this rule.
    pub fn matches(&self, attrs: &Attributes<'_>) -> bool {
        let any = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
        let scope_ok = match self.scope.as_str() {
            "Cluster" => !attrs.namespaced,
            "Namespaced" => attrs.namespaced,
            _ => true,
        };
        scope_ok
            && any(&self.operations, attrs.operation.as_str())
            && any(&self.api_groups, &attrs.gvr.group)
            && any(&self.api_versions, &attrs.gvr.version)
            && self
                .resources
                .iter()
                .any(|r| resource_matches(r, &attrs.gvr.resource, attrs.subresource))
    }
}

/// A `resources` entry against a resource and subresource: `*` is every resource but no subresource,
/// `*/*` everything, `pods/*` every subresource of pods, `*/status` the status of everything.
fn resource_matches(pattern: &str, resource: &str, subresource: Option<&str>) -> bool {
    let (res_pattern, sub_pattern) = match pattern.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (pattern, None),
    };
    let resource_ok = res_pattern == "*" || res_pattern == resource;
    let sub_ok = match (sub_pattern, subresource) {
        (None, None) => true,
        (None, Some(_)) | (Some(_), None) => false,
        (Some(p), Some(s)) => p == "*" || p == s,
    };
    resource_ok && sub_ok
}

/// One webhook of a ValidatingWebhookConfiguration, with the API server's defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Webhook {
    /// `name` (e.g. `vpod.example.com`), quoted in denials.
    pub name: String,
    /// Where to call.
    pub endpoint: Endpoint,
    /// `clientConfig.caBundle`, decoded from base64: the PEM certificates that sign the server's.
    pub ca_bundle: Vec<u8>,
    /// `rules`.
    pub rules: Vec<Rule>,
    /// `failurePolicy` (default `Fail`).
    pub failure_policy: FailurePolicy,
    /// `timeoutSeconds` (default 10, at most 30).
    pub timeout: Duration,
}

impl Webhook {
    /// Whether any rule matches.
    pub fn matches(&self, attrs: &Attributes<'_>) -> bool {
        self.rules.iter().any(|r| r.matches(attrs))
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The webhooks of one ValidatingWebhookConfiguration object, in order. A malformed entry is kept with
/// what can be read: a webhook without rules matches nothing, an undecodable caBundle makes calls fail.
pub fn webhooks_of(config: &Value) -> Vec<Webhook> {
    let Some(list) = config["webhooks"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .map(|w| {
            let client = &w["clientConfig"];
            let endpoint = if let Some(url) = client["url"].as_str() {
                Endpoint::Url(url.to_owned())
            } else if client["service"].is_object() {
                let s = &client["service"];
                Endpoint::Service(format!(
                    "{}/{}:{}{}",
                    s["namespace"].as_str().unwrap_or_default(),
                    s["name"].as_str().unwrap_or_default(),
                    s["port"].as_u64().unwrap_or(443),
                    s["path"].as_str().unwrap_or_default()
                ))
            } else {
                Endpoint::Missing
            };
            let ca_bundle = client["caBundle"]
                .as_str()
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .unwrap_or_default();
            let rules = w["rules"]
                .as_array()
                .map(|rules| {
                    rules
                        .iter()
                        .map(|r| Rule {
                            api_groups: strings(&r["apiGroups"]),
                            api_versions: strings(&r["apiVersions"]),
                            resources: strings(&r["resources"]),
                            operations: strings(&r["operations"]),
                            scope: r["scope"].as_str().unwrap_or("*").to_owned(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let failure_policy = match w["failurePolicy"].as_str() {
                Some("Ignore") => FailurePolicy::Ignore,
                _ => FailurePolicy::Fail,
            };
            let timeout = w["timeoutSeconds"]
                .as_u64()
                .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
                .clamp(1, MAX_TIMEOUT_SECONDS);
            Webhook {
                name: w["name"].as_str().unwrap_or_default().to_owned(),
                endpoint,
                ca_bundle,
                rules,
                failure_policy,
                timeout: Duration::from_secs(timeout),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs<'a>(gvr: &'a Gvr, subresource: Option<&'a str>, operation: Operation) -> Attributes<'a> {
        Attributes {
            gvr,
            subresource,
            operation,
            namespaced: true,
        }
    }

    fn kuberay_config() -> Value {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "validating-webhook-configuration"},
            "webhooks": [{
                "name": "vraycluster.kb.io",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"url": "https://127.0.0.1:9443/validate-ray-io-v1-raycluster", "caBundle": "aGVsbG8="},
                "rules": [{"apiGroups": ["ray.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["rayclusters"]}],
            }, {
                "name": "svc.example.com",
                "clientConfig": {"service": {"namespace": "system", "name": "webhook-service", "path": "/v"}},
                "failurePolicy": "Ignore",
                "timeoutSeconds": 3,
                "rules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*/*"], "scope": "Cluster"}],
            }],
        })
    }

    #[test]
    fn defaults_and_fields_are_read() {
        let hooks = webhooks_of(&kuberay_config());
        assert_eq!(hooks.len(), 2);
        assert_eq!(hooks[0].name, "vraycluster.kb.io");
        assert_eq!(
            hooks[0].endpoint,
            Endpoint::Url("https://127.0.0.1:9443/validate-ray-io-v1-raycluster".into())
        );
        assert_eq!(hooks[0].ca_bundle, b"hello");
        assert_eq!(hooks[0].failure_policy, FailurePolicy::Fail);
        assert_eq!(hooks[0].timeout, Duration::from_secs(10));
        assert_eq!(
            hooks[1].endpoint,
            Endpoint::Service("system/webhook-service:443/v".into())
        );
        assert_eq!(hooks[1].failure_policy, FailurePolicy::Ignore);
        assert_eq!(hooks[1].timeout, Duration::from_secs(3));
        assert!(webhooks_of(&json!({"metadata": {"name": "empty"}})).is_empty());
    }

    #[test]
    fn kuberay_rules_match_create_and_update_of_rayclusters_only() {
        let hook = &webhooks_of(&kuberay_config())[0];
        let clusters = Gvr::new("ray.io", "v1", "rayclusters");
        assert!(hook.matches(&attrs(&clusters, None, Operation::Create)));
        assert!(hook.matches(&attrs(&clusters, None, Operation::Update)));
        assert!(!hook.matches(&attrs(&clusters, None, Operation::Delete)));
        assert!(
            !hook.matches(&attrs(&clusters, Some("status"), Operation::Update)),
            "the operator's status writes are not sent to the webhook"
        );
        assert!(!hook.matches(&attrs(&Gvr::new("ray.io", "v1", "rayjobs"), None, Operation::Create)));
        assert!(!hook.matches(&attrs(
            &Gvr::new("ray.io", "v1alpha1", "rayclusters"),
            None,
            Operation::Create
        )));
        assert!(!hook.matches(&attrs(&Gvr::pods(), None, Operation::Create)));
    }

    #[test]
    fn wildcards_and_scope() {
        let hook = &webhooks_of(&kuberay_config())[1];
        let nodes = Gvr::nodes();
        let cluster_scoped = Attributes {
            namespaced: false,
            ..attrs(&nodes, Some("status"), Operation::Delete)
        };
        assert!(
            hook.matches(&cluster_scoped),
            "*/* covers subresources and every operation"
        );
        assert!(
            !hook.matches(&attrs(&Gvr::pods(), None, Operation::Create)),
            "scope Cluster"
        );
        assert!(resource_matches("*", "pods", None));
        assert!(!resource_matches("*", "pods", Some("status")));
        assert!(resource_matches("pods/*", "pods", Some("log")));
        assert!(!resource_matches("pods/*", "pods", None));
        assert!(resource_matches("*/status", "rayclusters", Some("status")));
        assert!(!resource_matches("*/status", "rayclusters", Some("scale")));
        assert!(resource_matches("rayclusters/status", "rayclusters", Some("status")));
    }
}
