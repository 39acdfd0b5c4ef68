//! Server-side field validation (`?fieldValidation=Strict|Warn|Ignore`): fields a write carries that its kind
//! does not declare fail the request with 400 BadRequest under `Strict` (what kubectl and helm send by
//! default), are dropped with one `Warning` header per field under `Warn` (the default), or dropped silently
//! under `Ignore`. Built-in kinds are checked against the schemas kube-sim publishes (server-side apply is strict
//! whatever the directive says); custom resources against their CRD's structural schema, whose store-side
//! pruning drops the fields in any case.

use http::header::{HeaderValue, WARNING};
use hyper::Response;
use serde_json::Value;

use super::Body;
use crate::error::ApiError;
use crate::kinds::ResourceInfo;
use crate::patch::PatchKind;
use crate::store::Store;

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

/// The unknown fields of a write to a built-in kind (dropped from `body` unless `Strict`) under the directive:
/// `Err` with the strict decoding error for `Strict`, else the warnings to send. `decoding` names the kind for
/// a request body, which kube-apiserver's decoder reports against it; a patch's error is not.
fn check_builtin(
    info: &ResourceInfo,
    param: Option<&str>,
    body: &mut Value,
    decoding: bool,
) -> Result<Vec<String>, ApiError> {
    let directive = directive(param)?;
    if info.custom {
        return Ok(Vec::new());
    }
    let (group, version, kind) = (&info.gvr.group, &info.gvr.version, &info.kind);
    let prune = directive != Directive::Strict;
    let unknown = super::openapi::unknown_fields(group, version, kind, body, prune).unwrap_or_default();
    let unknown: Vec<String> = unknown.iter().map(|p| unknown_field(p)).collect();
    match directive {
        Directive::Strict if !unknown.is_empty() => {
            let strict = format!("strict decoding error: {}", unknown.join(", "));
            Err(ApiError::bad_request(if decoding {
                format!("{kind} in version {version:?} cannot be handled as a {kind}: {strict}")
            } else {
                strict
            }))
        }
        Directive::Warn => Ok(unknown),
        _ => Ok(Vec::new()),
    }
}

/// The unknown fields of a custom resource (a request body, `request_body`, or the result of a patch) under the
/// directive: `Err` with the strict decoding error for `Strict`, else the warnings to send.
fn check_custom(
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

/// Checks the object a create or update sends: 400 `ConfigMap in version "v1" cannot be handled as a ConfigMap:
/// strict decoding error: unknown field "dataa"` for `Strict`, else the warnings to send (a built-in object's
/// unknown fields are dropped from `obj` unless `Strict`).
pub(super) fn check_object(
    store: &Store,
    info: &ResourceInfo,
    param: Option<&str>,
    obj: &mut Value,
) -> Result<Vec<String>, ApiError> {
    if info.custom {
        check_custom(store, info, param, obj, true)
    } else {
        check_builtin(info, param, obj, true)
    }
}

/// Checks a patch of `target` (namespace, name). Built-in kinds: merge and strategic patches carry the fields
/// they set at the paths they will be stored at; a JSON patch is a list of operations and is not checked; a
/// server-side apply patch is converted to its typed form first, whatever the directive, and a field the type
/// lacks gets structured-merge-diff's error, still an untyped 500 in kube-apiserver (paths through lists give
/// the element's index where kube-apiserver gives its merge key, `[name="c"]`: the published schemas carry no
/// list keys). Custom resources: merge and apply patches are checked as they will be stored; a JSON patch is
/// applied to `current` (the stored object) first, and a patch that does not apply is left to the store.
pub(super) fn check_patch(
    store: &Store,
    info: &ResourceInfo,
    param: Option<&str>,
    kind: &PatchKind,
    target: (Option<&str>, &str),
    body: &mut Value,
    current: impl FnOnce() -> Option<Value>,
) -> Result<Vec<String>, ApiError> {
    let directive = directive(param)?;
    if info.custom {
        if directive == Directive::Ignore || info.schema.is_none() {
            return Ok(Vec::new());
        }
        return match kind {
            PatchKind::Json => {
                let Some(mut doc) = current() else {
                    return Ok(Vec::new());
                };
                if crate::patch::json_patch(&mut doc, body).is_err() {
                    return Ok(Vec::new());
                }
                check_custom(store, info, param, &doc, false)
            }
            _ => check_custom(store, info, param, body, false),
        };
    }
    check_builtin_patch(info, param, kind, target, body)
}

/// [`check_patch`] for a built-in kind.
fn check_builtin_patch(
    info: &ResourceInfo,
    param: Option<&str>,
    kind: &PatchKind,
    target: (Option<&str>, &str),
    body: &mut Value,
) -> Result<Vec<String>, ApiError> {
    directive(param)?;
    match kind {
        PatchKind::Json => Ok(Vec::new()),
        PatchKind::Apply { .. } => check_apply(info, target, body).map(|()| Vec::new()),
        _ => check_builtin(info, param, body, false),
    }
}

fn check_apply(info: &ResourceInfo, (namespace, name): (Option<&str>, &str), body: &mut Value) -> Result<(), ApiError> {
    if info.custom {
        return Ok(());
    }
    let (group, version, kind) = (&info.gvr.group, &info.gvr.version, &info.kind);
    let unknown = super::openapi::unknown_fields(group, version, kind, body, false).unwrap_or_default();
    if unknown.is_empty() {
        return Ok(());
    }
    let errors: Vec<String> = unknown
        .iter()
        .map(|f| format!(".{f}: field not declared in schema"))
        .collect();
    Err(ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({}/{name}; {group}/{version}, Kind={kind}): {}",
            namespace.unwrap_or_default(),
            errors.join("\n")
        ),
    ))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use super::*;
    use crate::kinds::builtin_resources;

    fn configmaps() -> ResourceInfo {
        builtin_resources()
            .into_iter()
            .find(|r| r.gvr.resource == "configmaps")
            .unwrap()
    }

    fn body() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "dataa": {"a": "b"}})
    }

    fn message(e: &ApiError) -> Value {
        e.to_status()["message"].clone()
    }

    #[test]
    fn strict_rejects_unknown_fields_with_kube_apiservers_decoding_message() {
        let e = check_builtin(&configmaps(), Some("Strict"), &mut body(), true).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            message(&e),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"dataa\""
        );
        let e = check_builtin_patch(
            &configmaps(),
            Some("Strict"),
            &PatchKind::Merge,
            (Some("default"), "x"),
            &mut body(),
        )
        .unwrap_err();
        assert_eq!(message(&e), "strict decoding error: unknown field \"dataa\"");
    }

    #[test]
    fn apply_is_strict_whatever_the_directive_with_structured_merge_diffs_message() {
        let apply = PatchKind::Apply {
            field_manager: None,
            force: false,
        };
        for directive in [None, Some("Ignore")] {
            let e =
                check_builtin_patch(&configmaps(), directive, &apply, (Some("default"), "x"), &mut body()).unwrap_err();
            assert_eq!(e.code, 500);
            assert_eq!(
                message(&e),
                "failed to create typed patch object (default/x; /v1, Kind=ConfigMap): .dataa: field not declared in schema"
            );
        }
    }

    #[test]
    fn warn_is_the_default_and_drops_the_fields() {
        for directive in [None, Some("Warn")] {
            let mut b = body();
            assert_eq!(
                check_builtin(&configmaps(), directive, &mut b, true).unwrap(),
                ["unknown field \"dataa\""]
            );
            assert!(b.get("dataa").is_none());
        }
        let mut b = body();
        assert!(
            check_builtin(&configmaps(), Some("Ignore"), &mut b, true)
                .unwrap()
                .is_empty()
        );
        assert!(b.get("dataa").is_none());
        let e = check_builtin(&configmaps(), Some("Loose"), &mut body(), true).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            message(&e),
            "fieldValidation: Unsupported value: \"Loose\": supported values: \"Ignore\", \"Warn\", \"Strict\""
        );
    }
}
