//! Server-side field validation of built-in objects (the `fieldValidation` query parameter of create, update
//! and patch), as kube-apiserver does it: fields the kind's schema does not have are dropped with a warning
//! per field (`Warn`, the default), dropped silently (`Ignore`), or fail the request with 400 BadRequest
//! (`Strict`, what kubectl and helm send by default). Server-side apply is always strict. Custom resources are
//! left to their CRD's schema.

use http::{HeaderValue, Response, header};
use serde_json::Value;

use super::Body;
use crate::error::ApiError;
use crate::kinds::ResourceInfo;

/// The `fieldValidation` directive of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    Ignore,
    Warn,
    Strict,
}

impl Directive {
    fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value.unwrap_or_default() {
            "" | "Warn" => Ok(Self::Warn),
            "Ignore" => Ok(Self::Ignore),
            "Strict" => Ok(Self::Strict),
            other => Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: \"{other}\": supported values: \"Ignore\", \"Strict\", \"Warn\""
            ))),
        }
    }
}

/// Checks the body of a write to a built-in kind (the object, or a merge, strategic or apply patch) for unknown
/// fields and drops them; returns the warnings to send, or the Strict error.
pub(super) fn check(info: &ResourceInfo, directive: Option<&str>, body: &mut Value) -> Result<Vec<String>, ApiError> {
    let directive = Directive::parse(directive)?;
    if info.custom {
        return Ok(Vec::new());
    }
    let (group, version, kind) = (&info.gvr.group, &info.gvr.version, &info.kind);
    let prune = directive != Directive::Strict;
    let Some(unknown) = super::openapi::unknown_fields(group, version, kind, body, prune) else {
        return Ok(Vec::new());
    };
    let messages: Vec<String> = unknown.iter().map(|f| format!("unknown field \"{f}\"")).collect();
    match directive {
        Directive::Strict if !messages.is_empty() => Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            messages.join(", ")
        ))),
        Directive::Warn => Ok(messages),
        _ => Ok(Vec::new()),
    }
}

/// Checks a server-side apply patch of a built-in kind. Apply is strict whatever `fieldValidation` says:
/// kube-apiserver converts the patch to its typed form first and answers a field the type lacks with
/// structured-merge-diff's error, still an untyped 500. Paths through lists give the element's index where
/// kube-apiserver gives its merge key (`[name="c"]`): the published schemas carry no list keys.
pub(super) fn check_apply(
    info: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    body: &mut Value,
) -> Result<(), ApiError> {
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

/// Adds one `Warning` header per message, as kube-apiserver sends them.
pub(super) fn with_warnings(mut response: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            response.headers_mut().append(header::WARNING, v);
        }
    }
    response
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

    #[test]
    fn strict_rejects_unknown_fields_with_kube_apiservers_message() {
        let mut b = body();
        let e = check(&configmaps(), Some("Strict"), &mut b).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.to_status()["message"],
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"dataa\""
        );
    }

    #[test]
    fn apply_is_strict_whatever_the_directive_with_structured_merge_diffs_message() {
        let mut b = body();
        let e = check_apply(&configmaps(), Some("default"), "x", &mut b).unwrap_err();
        assert_eq!(e.code, 500);
        assert_eq!(
            e.to_status()["message"],
            "failed to create typed patch object (default/x; /v1, Kind=ConfigMap): .dataa: field not declared in schema"
        );
    }

    #[test]
    fn warn_is_the_default_and_drops_the_fields() {
        for directive in [None, Some("Warn")] {
            let mut b = body();
            assert_eq!(
                check(&configmaps(), directive, &mut b).unwrap(),
                ["unknown field \"dataa\""]
            );
            assert!(b.get("dataa").is_none());
        }
        let mut b = body();
        assert!(check(&configmaps(), Some("Ignore"), &mut b).unwrap().is_empty());
        assert!(b.get("dataa").is_none());
        let e = check(&configmaps(), Some("Loose"), &mut body()).unwrap_err();
        assert_eq!(e.code, 400);
    }
}
