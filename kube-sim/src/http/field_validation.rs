//! Server-side field validation (`?fieldValidation=Strict|Warn|Ignore`) of custom resources: the fields a
//! write carries that the CRD's schema does not declare are pruned in any case; `Strict` (what kubectl sends
//! by default) rejects the request instead, `Warn` (the default) answers with one `Warning` header per field.

use http::header::{HeaderValue, WARNING};
use hyper::Response;
use serde_json::Value;

use super::Body;
use crate::error::ApiError;
use crate::kinds::ResourceInfo;
use crate::store::{PatchKind, Store};

/// The `fieldValidation` directive of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop them and warn (the default).
    Warn,
    /// Reject the request.
    Strict,
}

fn directive(param: Option<&str>) -> Result<Directive, ApiError> {
    match param {
        None | Some("" | "Warn") => Ok(Directive::Warn),
        Some("Ignore") => Ok(Directive::Ignore),
        Some("Strict") => Ok(Directive::Strict),
        Some(other) => Err(ApiError::bad_request(format!(
            "fieldValidation: Unsupported value: {}: supported values: \"Ignore\", \"Warn\", \"Strict\"",
            kube_compat::go_strconv::quote(other)
        ))),
    }
}

fn unknown_field(path: &str) -> String {
    format!("unknown field {}", kube_compat::go_strconv::quote(path))
}

/// Checks the unknown fields of the object a create or update sends under the request's `fieldValidation`:
/// `Err` (400 `RayCluster in version "v1" cannot be handled as a RayCluster: strict decoding error: unknown
/// field "spec.foo"`) for `Strict`, else the warnings to send.
pub(super) fn check_object(
    store: &Store,
    info: &ResourceInfo,
    param: Option<&str>,
    obj: &Value,
) -> Result<Vec<String>, ApiError> {
    check(store, info, param, obj, true)
}

/// [`check_object`] for any object: a request body (`request_body`) or the result of a patch.
fn check(
    store: &Store,
    info: &ResourceInfo,
    param: Option<&str>,
    obj: &Value,
    request_body: bool,
) -> Result<Vec<String>, ApiError> {
    let directive = directive(param)?;
    let Some(validator) = info.schema.as_deref() else {
        return Ok(Vec::new());
    };
    if directive == Directive::Ignore || !info.custom || !store.config().validate_custom_resources {
        return Ok(Vec::new());
    }
    let unknown: Vec<String> = validator.unknown_fields(obj).iter().map(|p| unknown_field(p)).collect();
    if directive == Directive::Strict && !unknown.is_empty() {
        let strict = format!("strict decoding error: {}", unknown.join(", "));
        // A request body that fails to decode is reported against the kind it names; a patch's result is not.
        return Err(ApiError::bad_request(if request_body {
            format!(
                "{kind} in version {:?} cannot be handled as a {kind}: {strict}",
                info.gvr.version,
                kind = info.kind
            )
        } else {
            strict
        }));
    }
    Ok(unknown)
}

/// [`check_object`] for a patch: merge and apply patches carry the fields they set as they will be stored, a JSON
/// patch is applied to the stored object first (a patch the store cannot apply is left to the store).
pub(super) fn check_patch(
    store: &Store,
    info: &ResourceInfo,
    param: Option<&str>,
    kind: &PatchKind,
    body: &Value,
    current: impl FnOnce() -> Option<Value>,
) -> Result<Vec<String>, ApiError> {
    if directive(param)? == Directive::Ignore || info.schema.is_none() {
        return Ok(Vec::new());
    }
    match kind {
        PatchKind::Json => {
            let Some(mut doc) = current() else {
                return Ok(Vec::new());
            };
            if crate::patch::json_patch(&mut doc, body).is_err() {
                return Ok(Vec::new());
            }
            check(store, info, param, &doc, false)
        }
        _ => check(store, info, param, body, false),
    }
}

/// Adds one `Warning: 299 - "..."` header per warning.
pub(super) fn add_warnings(resp: &mut Response<Body>, warnings: &[String]) {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            resp.headers_mut().append(WARNING, v);
        }
    }
}
