//! Validating admission webhooks: ValidatingWebhookConfigurations (`admissionregistration.k8s.io/v1`) are
//! stored like any object, and every create, update, patch or delete of one object that a webhook's rules
//! match is first posted to that webhook as an `admission.k8s.io/v1` AdmissionReview over HTTPS
//! (`clientConfig.url`, trusting `clientConfig.caBundle`). A denial is returned to the client as the API
//! server returns it; a failed call obeys `failurePolicy` (`Fail` by default) within `timeoutSeconds`
//! (10 by default).
//!
//! Not modelled: `clientConfig.service` (a call to it fails), `namespaceSelector`, `objectSelector`,
//! `matchConditions`, `matchPolicy: Equivalent` (rules match the requested group/version only), mutating
//! webhooks and `deletecollection`. Webhooks are called one after another, in configuration-name order.

pub mod call;
pub mod rules;

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::kinds::{Gvr, ResourceInfo};
use crate::store::{ListOptions, Store};
pub use rules::{Attributes, FailurePolicy, Operation, Webhook, webhooks_of};

/// One request as the webhooks see it.
#[derive(Clone, Copy, Debug)]
pub struct AdmissionInput<'a> {
    /// The resource requested.
    pub info: &'a ResourceInfo,
    /// Its subresource, if any.
    pub subresource: Option<&'a str>,
    /// The operation.
    pub operation: Operation,
    /// The namespace of the object (namespaced resources).
    pub namespace: Option<&'a str>,
    /// The object's name (may be empty on a create with `generateName`).
    pub name: &'a str,
    /// The new object (create, update).
    pub object: Option<&'a Value>,
    /// The stored object (update, delete).
    pub old_object: Option<&'a Value>,
    /// Who asks (`userInfo.username`: the authenticated user the request acts as).
    pub username: &'a str,
}

/// The webhooks of every stored ValidatingWebhookConfiguration, in configuration-name order (empty, and
/// cheap, when none is stored: the common case).
pub fn configured_webhooks(store: &Store) -> Vec<Webhook> {
    let Ok(list) = store.list(&Gvr::validating_webhook_configurations(), None, &ListOptions::default()) else {
        return Vec::new();
    };
    list.items
        .iter()
        .flat_map(|config| webhooks_of(&config.value()))
        .collect()
}

/// The webhooks among `webhooks` whose rules match `attrs`.
pub fn select(webhooks: Vec<Webhook>, attrs: &Attributes<'_>) -> Vec<Webhook> {
    // Writes to the configurations themselves are never sent to webhooks (as the API server does), so a
    // broken webhook cannot lock its own configuration.
    if attrs.gvr.group == "admissionregistration.k8s.io" {
        return Vec::new();
    }
    webhooks.into_iter().filter(|webhook| webhook.matches(attrs)).collect()
}

/// Runs `webhooks` (from [`select`]) one after another; the first denial (or failed call under
/// `failurePolicy: Fail`) is the error the client gets.
pub async fn admit(webhooks: &[Webhook], input: &AdmissionInput<'_>) -> Result<(), ApiError> {
    for webhook in webhooks {
        let uid = new_uid();
        let body = serde_json::to_vec(&review(input, &uid)).map_err(|e| ApiError::internal(e.to_string()))?;
        let outcome = call::post(webhook, body)
            .await
            .and_then(|(status, answer)| call::interpret(&webhook.name, &uid, status, &answer));
        match outcome {
            Ok(None) => {}
            Ok(Some(denied)) => {
                tracing::debug!(webhook = %webhook.name, message = %denied.message, "admission webhook denied a request");
                return Err(denied);
            }
            Err(reason) if webhook.failure_policy == FailurePolicy::Ignore => {
                tracing::warn!(webhook = %webhook.name, %reason, "failed calling webhook, failing open (failurePolicy: Ignore)");
            }
            Err(reason) => {
                return Err(ApiError::internal(format!(
                    "failed calling webhook {:?}: failed to call webhook: {reason}",
                    webhook.name
                )));
            }
        }
    }
    Ok(())
}

/// A random RFC 4122 version-4 style identifier for `request.uid`.
fn new_uid() -> String {
    let hex: String = (0..32).map(|_| format!("{:x}", fastrand::u8(0..16))).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// The AdmissionReview sent for `input`.
pub fn review(input: &AdmissionInput<'_>, uid: &str) -> Value {
    let gvr = &input.info.gvr;
    let kind = json!({"group": gvr.group, "version": gvr.version, "kind": input.info.kind});
    let resource = json!({"group": gvr.group, "version": gvr.version, "resource": gvr.resource});
    let options = match input.operation {
        Operation::Create => json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}),
        Operation::Update => json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}),
        Operation::Delete => json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}),
    };
    let mut request = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": input.name,
        "operation": input.operation.as_str(),
        "userInfo": {"username": input.username},
        "object": input.object.cloned().unwrap_or(Value::Null),
        "oldObject": input.old_object.cloned().unwrap_or(Value::Null),
        "dryRun": false,
        "options": options,
    });
    if let Some(ns) = input.namespace {
        request["namespace"] = json!(ns);
    }
    if let Some(sub) = input.subresource {
        request["subResource"] = json!(sub);
        request["requestSubResource"] = json!(sub);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}
