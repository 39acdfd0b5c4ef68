//! Kubernetes `Status` errors with the exact `reason` strings kube-client classifies by.

use serde_json::{Map, Value, json};

/// An API error, rendered on the wire as a `kind: Status` body whose `code` equals the HTTP status.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code (also the Status `code`).
    pub code: u16,
    /// Machine-readable reason (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// The Status `details` object (may be empty).
    pub details: Value,
    /// Seconds for a `Retry-After` header, when the client should back off.
    pub retry_after: Option<u64>,
    /// Extra `metadata` for the Status body (e.g. a fresh `continue` token on 410).
    pub list_meta: Option<Value>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// Where an error is about: the resource's group, its plural, and the object name.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// API group ("" for core).
    pub group: &'a str,
    /// Plural resource name (`pods`).
    pub plural: &'a str,
    /// Kind (`Pod`).
    pub kind: &'a str,
    /// Object name.
    pub name: &'a str,
}

impl Target<'_> {
    /// `plural` for core resources, `plural.group` otherwise (upstream's qualified resource).
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `Kind` for core resources, `Kind.group` otherwise.
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.to_string()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    fn details(&self, kind_field: &str) -> Value {
        let mut details = Map::new();
        details.insert("name".into(), json!(self.name));
        if !self.group.is_empty() {
            details.insert("group".into(), json!(self.group));
        }
        details.insert("kind".into(), json!(kind_field));
        Value::Object(details)
    }
}

/// One field-level validation failure (a Status `details.causes[]` entry).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`, ...
    pub reason: &'static str,
    /// Field path (`metadata.name`).
    pub field: String,
    /// Message after the field path, e.g. `Invalid value: "x": must be ...`.
    pub message: String,
}

impl FieldError {
    /// A `FieldValueInvalid` cause for `value` at `field`.
    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> Self {
        Self {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: {}: {detail}", json!(value)),
        }
    }

    /// A `FieldValueRequired` cause.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        Self {
            reason: "FieldValueRequired",
            field: field.into(),
            message: format!("Required value: {detail}"),
        }
    }

    /// A `FieldValueForbidden` cause.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Self {
            reason: "FieldValueForbidden",
            field: field.into(),
            message: format!("Forbidden: {detail}"),
        }
    }
}

impl ApiError {
    /// A generic error with empty details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: json!({}),
            retry_after: None,
            list_meta: None,
        }
    }

    /// 404 for an object that does not exist.
    pub fn not_found(t: Target<'_>) -> Self {
        let mut e = Self::new(
            404,
            "NotFound",
            format!("{} {:?} not found", t.qualified_resource(), t.name),
        );
        e.details = t.details(t.plural);
        e
    }

    /// 404 for a namespace that does not exist (on create).
    pub fn namespace_not_found(ns: &str) -> Self {
        let mut e = Self::new(404, "NotFound", format!("namespaces {ns:?} not found"));
        e.details = json!({"name": ns, "kind": "namespaces"});
        e
    }

    /// 404 for an unknown path or a subresource that is not served.
    pub fn no_route() -> Self {
        Self::new(404, "NotFound", "the server could not find the requested resource")
    }

    /// 409 for a create whose name is taken.
    pub fn already_exists(t: Target<'_>) -> Self {
        let mut e = Self::new(
            409,
            "AlreadyExists",
            format!("{} {:?} already exists", t.qualified_resource(), t.name),
        );
        e.details = t.details(t.plural);
        e
    }

    /// 409 for a stale resourceVersion.
    pub fn conflict(t: Target<'_>) -> Self {
        Self::conflict_msg(
            t,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 with a custom explanation after "Operation cannot be fulfilled on ...".
    pub fn conflict_msg(t: Target<'_>, why: &str) -> Self {
        let mut e = Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {:?}: {why}",
                t.qualified_resource(),
                t.name
            ),
        );
        e.details = t.details(t.plural);
        e
    }

    /// 422 with field causes.
    pub fn invalid(t: Target<'_>, causes: &[FieldError]) -> Self {
        // Upstream's aggregate drops repeated messages (the causes keep them).
        let mut rendered: Vec<String> = Vec::with_capacity(causes.len());
        for c in causes {
            let line = format!("{}: {}", c.field, c.message);
            if !rendered.contains(&line) {
                rendered.push(line);
            }
        }
        let body = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{} {:?} is invalid: {body}", t.qualified_kind(), t.name),
        );
        let mut details = t.details(t.kind);
        if let Value::Object(map) = &mut details {
            map.insert(
                "causes".into(),
                Value::Array(
                    causes
                        .iter()
                        .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                        .collect(),
                ),
            );
        }
        e.details = details;
        e
    }

    /// 422 for a patch that could not be applied.
    pub fn patch_failed() -> Self {
        Self::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        )
    }

    /// 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 403 Forbidden with a cause.
    pub fn forbidden(t: Target<'_>, why: &str, cause: Option<(&str, &str)>) -> Self {
        let mut e = Self::new(
            403,
            "Forbidden",
            format!("{} {:?} is forbidden: {why}", t.qualified_resource(), t.name),
        );
        let mut details = t.details(t.plural);
        if let (Some((reason, field)), Value::Object(map)) = (cause, &mut details) {
            map.insert(
                "causes".into(),
                json!([{"reason": reason, "message": why, "field": field}]),
            );
        }
        e.details = details;
        e
    }

    /// 410 Expired.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        let mut e = Self::new(500, "InternalError", format!("Internal error occurred: {message}"));
        e.details = json!({"causes": [{"message": message}]});
        e
    }

    /// 415 for a strategic merge patch on a resource that does not support it.
    pub fn unsupported_media_type() -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        )
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// The `kind: Status` JSON body.
    pub fn to_status(&self) -> Value {
        let mut metadata = self.list_meta.clone().unwrap_or_else(|| json!({}));
        if !metadata.is_object() {
            metadata = json!({});
        }
        let mut details = self.details.clone();
        if let (Some(secs), Value::Object(map)) = (self.retry_after, &mut details) {
            map.insert("retryAfterSeconds".into(), json!(secs));
        }
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": metadata,
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": details,
            "code": self.code,
        })
    }
}
