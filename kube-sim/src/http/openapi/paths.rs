//! The `paths` of the OpenAPI documents: the operations kube-sim serves for each resource, with their query
//! parameters, bodies and responses referring to the published definitions.
//!
//! kubectl's and helm's default `--validate=strict` first ask whether the server validates fields itself: they
//! look up the PATCH operation of the kind in the OpenAPI v3 document (by `x-kubernetes-group-version-kind`)
//! and check that it declares the `fieldValidation` query parameter. These documents declare it, so clients
//! send `fieldValidation=Strict` and leave unknown fields to the server (`super::super::field_validation`). Built-in kinds do not advertise strategic merge patch here (the server accepts
//! it), so `kubectl apply` computes its patch from its own compiled-in types, which carry the list merge keys
//! the published schemas lack.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::Dialect;
use crate::kinds::ResourceInfo;

/// The definition names of the published kinds, by (group, version, kind).
pub(super) type DefinitionNames = BTreeMap<(String, String, String), String>;

/// `DeleteOptions`, the body of deletes.
pub(super) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
/// `Patch`, the body of patches.
pub(super) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// `Status`, the answer of deletes.
pub(super) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";

const PATCH_TYPES: [&str; 3] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

struct Param {
    name: &'static str,
    location: &'static str,
    description: &'static str,
    ty: &'static str,
}

const fn query(name: &'static str, description: &'static str, ty: &'static str) -> Param {
    Param {
        name,
        location: "query",
        description,
        ty,
    }
}

const FIELD_MANAGER: Param = query("fieldManager", "the name of the actor making the change", "string");
const FIELD_VALIDATION: Param = query("fieldValidation", "Ignore, Warn or Strict", "string");
const FORCE: Param = query("force", "force server-side apply", "boolean");
const LIST_PARAMS: [Param; 6] = [
    query("labelSelector", "a label selector", "string"),
    query("fieldSelector", "a field selector", "string"),
    query("limit", "page size", "integer"),
    query("continue", "continue token", "string"),
    query("resourceVersion", "resource version", "string"),
    query("watch", "watch instead of list", "boolean"),
];
const DELETE_PARAMS: [Param; 2] = [
    query("propagationPolicy", "Orphan, Background or Foreground", "string"),
    query("gracePeriodSeconds", "grace period", "integer"),
];

fn param(dialect: Dialect, p: &Param, required: bool) -> Value {
    let mut v = json!({"name": p.name, "in": p.location, "description": p.description});
    if required {
        v["required"] = json!(true);
    }
    match dialect {
        Dialect::V2 => {
            v["type"] = json!(p.ty);
            v["uniqueItems"] = json!(true);
        }
        Dialect::V3 => v["schema"] = json!({"type": p.ty, "uniqueItems": true}),
    }
    v
}

fn path_param(dialect: Dialect, name: &'static str) -> Value {
    let p = Param {
        name,
        location: "path",
        description: "name of the object or namespace",
        ty: "string",
    };
    param(dialect, &p, true)
}

/// One operation of one resource.
struct Op<'a> {
    info: &'a ResourceInfo,
    action: &'static str,
    verb: &'static str,
    params: &'a [&'a Param],
    body: Option<(&'a [&'a str], Value)>,
    response: Value,
}

impl Op<'_> {
    fn render(&self, dialect: Dialect) -> Value {
        let info = self.info;
        let mut op = Map::new();
        op.insert("operationId".into(), json!(format!("{}{}", self.verb, info.kind)));
        op.insert("x-kubernetes-action".into(), json!(self.action));
        op.insert(
            "x-kubernetes-group-version-kind".into(),
            json!({"group": info.gvr.group, "version": info.gvr.version, "kind": info.kind}),
        );
        let mut params: Vec<Value> = self.params.iter().map(|p| param(dialect, p, false)).collect();
        match dialect {
            Dialect::V2 => {
                if let Some((types, schema)) = &self.body {
                    op.insert("consumes".into(), json!(types));
                    params.push(json!({"name": "body", "in": "body", "required": true, "schema": schema}));
                }
                op.insert("produces".into(), json!(["application/json"]));
                op.insert(
                    "responses".into(),
                    json!({"200": {"description": "OK", "schema": self.response}}),
                );
            }
            Dialect::V3 => {
                if let Some((types, schema)) = &self.body {
                    let content: Map<String, Value> = types
                        .iter()
                        .map(|t| ((*t).to_string(), json!({"schema": schema})))
                        .collect();
                    op.insert("requestBody".into(), json!({"required": true, "content": content}));
                }
                op.insert(
                    "responses".into(),
                    json!({"200": {"description": "OK", "content": {"application/json": {"schema": self.response}}}}),
                );
            }
        }
        op.insert("parameters".into(), Value::Array(params));
        Value::Object(op)
    }
}

/// The paths of the given resources.
pub(super) fn paths(dialect: Dialect, infos: &[Arc<ResourceInfo>], names: &DefinitionNames) -> Map<String, Value> {
    let mut paths = Map::new();
    for info in infos {
        let key = (info.gvr.group.clone(), info.gvr.version.clone(), info.kind.clone());
        let name = names.get(&key);
        let schema = |suffix: &str| match name {
            Some(n) => dialect.reference(&format!("{n}{suffix}")),
            None => json!({"type": "object"}),
        };
        let base = format!("/{}", super::gv_path(info));
        let (collection, mut scope) = if info.namespaced {
            (
                format!("{base}/namespaces/{{namespace}}/{}", info.gvr.resource),
                vec![path_param(dialect, "namespace")],
            )
        } else {
            (format!("{base}/{}", info.gvr.resource), Vec::new())
        };
        let list_params: Vec<&Param> = LIST_PARAMS.iter().collect();
        let write_params = [&FIELD_MANAGER, &FIELD_VALIDATION];
        let patch_params = [&FIELD_MANAGER, &FIELD_VALIDATION, &FORCE];
        let delete_params: Vec<&Param> = DELETE_PARAMS.iter().collect();
        let op = |action, verb, params: &[&Param], body: Option<(&[&str], Value)>, response: Value| {
            Op {
                info,
                action,
                verb,
                params,
                body,
                response,
            }
            .render(dialect)
        };
        let json_body = ["application/json"];
        paths.insert(
            collection.clone(),
            json!({
                "get": op("list", "list", &list_params, None, schema("List")),
                "post": op("post", "create", &write_params, Some((&json_body, schema(""))), schema("")),
                "delete": op("deletecollection", "deletecollection", &list_params, None, dialect.reference(STATUS)),
                "parameters": scope.clone(),
            }),
        );
        scope.push(path_param(dialect, "name"));
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({
                "get": op("get", "read", &[], None, schema("")),
                "put": op("put", "replace", &write_params, Some((&json_body, schema(""))), schema("")),
                "patch": op("patch", "patch", &patch_params, Some((&PATCH_TYPES, dialect.reference(PATCH))), schema("")),
                "delete": op("delete", "delete", &delete_params, Some((&json_body, dialect.reference(DELETE_OPTIONS))), schema("")),
                "parameters": scope.clone(),
            }),
        );
        if info.status_subresource {
            paths.insert(
                format!("{collection}/{{name}}/status"),
                json!({
                    "get": op("get", "readStatus", &[], None, schema("")),
                    "put": op("put", "replaceStatus", &write_params, Some((&json_body, schema(""))), schema("")),
                    "patch": op("patch", "patchStatus", &patch_params, Some((&PATCH_TYPES, dialect.reference(PATCH))), schema("")),
                    "parameters": scope,
                }),
            );
        }
    }
    paths
}
