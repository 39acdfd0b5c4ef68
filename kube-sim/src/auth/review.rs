//! The review APIs: `SelfSubjectAccessReview`, `SubjectAccessReview`, `LocalSubjectAccessReview` and
//! `SelfSubjectRulesReview` (`authorization.k8s.io/v1`, `kubectl auth can-i [--list]`), `SelfSubjectReview`
//! and `TokenReview` (`authentication.k8s.io/v1`, `kubectl auth whoami`), and the TokenRequest subresource
//! (`kubectl create token`). Each is a create that stores nothing and answers the request with its status.

use serde_json::{Value, json};

use super::attributes::RequestAttributes;
use super::{Auth, UserInfo, rbac, tokens, wire};
use crate::error::ApiError;
use crate::store::Store;

/// A request to one of the review endpoints.
#[derive(Debug, Clone, Copy)]
pub struct ReviewRequest<'a> {
    /// API group of the URL.
    pub group: &'a str,
    /// Plural resource of the URL.
    pub resource: &'a str,
    /// Namespace of the URL.
    pub namespace: Option<&'a str>,
    /// Object name of the URL (the ServiceAccount of a TokenRequest).
    pub name: Option<&'a str>,
    /// Subresource of the URL (`token`).
    pub subresource: Option<&'a str>,
    /// `Content-Type` of the body.
    pub content_type: &'a str,
    /// The body.
    pub body: &'a [u8],
}

impl ReviewRequest<'_> {
    /// Whether the URL is one of the review endpoints (or a ServiceAccount's `token` subresource).
    pub fn is_review(&self) -> bool {
        matches!(
            (self.group, self.resource, self.subresource),
            (
                "authorization.k8s.io",
                "selfsubjectaccessreviews"
                    | "subjectaccessreviews"
                    | "localsubjectaccessreviews"
                    | "selfsubjectrulesreviews",
                None
            ) | ("authentication.k8s.io", "selfsubjectreviews" | "tokenreviews", None)
                | ("", "serviceaccounts", Some("token"))
        )
    }

    fn parse(&self) -> Result<Value, ApiError> {
        if self.content_type.starts_with(wire::PROTOBUF) {
            return wire::decode(self.resource, self.body);
        }
        if self.body.is_empty() {
            return Ok(json!({}));
        }
        serde_json::from_slice(self.body)
            .map_err(|e| ApiError::bad_request(format!("unable to decode the request body: {e}")))
    }
}

fn attributes_of(spec: &Value) -> Result<RequestAttributes, ApiError> {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    if let Some(ra) = spec["resourceAttributes"].as_object() {
        let get = |k: &str| ra.get(k).map(&s).unwrap_or_default();
        return Ok(RequestAttributes {
            verb: get("verb"),
            resource_request: true,
            namespace: get("namespace"),
            api_group: get("group"),
            api_version: get("version"),
            resource: get("resource"),
            subresource: get("subresource"),
            name: get("name"),
            path: String::new(),
        });
    }
    if let Some(nra) = spec["nonResourceAttributes"].as_object() {
        let get = |k: &str| nra.get(k).map(&s).unwrap_or_default();
        return Ok(RequestAttributes::non_resource(&get("verb"), &get("path")));
    }
    Err(ApiError::new(
        422,
        "Invalid",
        "spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
    ))
}

fn review_response(kind: &str, api_version: &str, spec: Value, status: Value) -> Value {
    json!({"kind": kind, "apiVersion": api_version, "metadata": {"creationTimestamp": null}, "spec": spec, "status": status})
}

fn access_status(store: &Store, user: &UserInfo, attrs: &RequestAttributes) -> Value {
    let decision = rbac::authorize(store, user, attrs);
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    status
}

/// The `SelfSubjectRulesReview` status: every rule `user` holds in `namespace`.
fn rules_status(store: &Store, user: &UserInfo, namespace: &str) -> Value {
    let (grants, errors) = rbac::grants(store, user, namespace);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in grants.iter().flat_map(|g| g.rules.iter()) {
        if rule["nonResourceURLs"].is_array() {
            non_resource_rules.push(json!({"verbs": rule["verbs"], "nonResourceURLs": rule["nonResourceURLs"]}));
        } else {
            let mut r = json!({"verbs": rule["verbs"], "apiGroups": rule["apiGroups"], "resources": rule["resources"]});
            if rule["resourceNames"].is_array() {
                r["resourceNames"] = rule["resourceNames"].clone();
            }
            resource_rules.push(r);
        }
    }
    let mut status = json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": !errors.is_empty()});
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors.join(", "));
    }
    status
}

/// Answers a review request by `user` (already authorized to create it).
pub fn serve(auth: &Auth, store: &Store, user: &UserInfo, req: &ReviewRequest<'_>) -> Result<Value, ApiError> {
    let body = req.parse()?;
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    const AUTHZ: &str = "authorization.k8s.io/v1";
    const AUTHN: &str = "authentication.k8s.io/v1";
    match req.resource {
        "selfsubjectaccessreviews" => {
            let attrs = attributes_of(&spec)?;
            let status = access_status(store, user, &attrs);
            Ok(review_response("SelfSubjectAccessReview", AUTHZ, spec, status))
        }
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            let mut attrs = attributes_of(&spec)?;
            if let Some(ns) = req.namespace {
                attrs.namespace = ns.to_owned();
            }
            let groups: Vec<String> = spec["groups"]
                .as_array()
                .map(|g| g.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default();
            let subject = UserInfo {
                name: spec["user"].as_str().unwrap_or_default().to_owned(),
                uid: spec["uid"].as_str().unwrap_or_default().to_owned(),
                groups,
                ..UserInfo::default()
            };
            let kind = if req.namespace.is_some() {
                "LocalSubjectAccessReview"
            } else {
                "SubjectAccessReview"
            };
            let status = access_status(store, &subject, &attrs);
            Ok(review_response(kind, AUTHZ, spec, status))
        }
        "selfsubjectrulesreviews" => {
            let ns = spec["namespace"].as_str().unwrap_or_default().to_owned();
            let status = rules_status(store, user, &ns);
            Ok(review_response("SelfSubjectRulesReview", AUTHZ, spec, status))
        }
        "selfsubjectreviews" => Ok(json!({
            "kind": "SelfSubjectReview",
            "apiVersion": AUTHN,
            "metadata": {"creationTimestamp": null},
            "status": {"userInfo": user.to_json()},
        })),
        "tokenreviews" => {
            let token = spec["token"].as_str().unwrap_or_default();
            let mut headers = http::HeaderMap::new();
            let status = match http::HeaderValue::from_str(&format!("Bearer {token}")) {
                Ok(v) => {
                    headers.insert(http::header::AUTHORIZATION, v);
                    match auth.authenticate(store, &headers) {
                        Ok(u) => json!({"authenticated": true, "user": u.to_json(), "audiences": [tokens::ISSUER]}),
                        Err(_) => json!({"user": {}, "error": "invalid bearer token"}),
                    }
                }
                Err(_) => json!({"user": {}, "error": "invalid bearer token"}),
            };
            Ok(review_response("TokenReview", AUTHN, spec, status))
        }
        _ => tokens::token_request(
            auth.issuer(),
            store,
            req.namespace.unwrap_or_default(),
            req.name.unwrap_or_default(),
            &body,
        ),
    }
}
