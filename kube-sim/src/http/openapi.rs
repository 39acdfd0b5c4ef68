//! A minimal OpenAPI v3 surface for `kubectl`: `/openapi/v3` (the index of group-versions) and
//! `/openapi/v3/api/v1`, `/openapi/v3/apis/{g}/{v}` (paths and operations only, no schemas).
//!
//! kubectl's default `--validate=strict` first asks whether the server validates fields itself: it looks up the
//! PATCH operation of the kind (by `x-kubernetes-group-version-kind`) and checks that it declares the
//! `fieldValidation` query parameter. These documents declare it, so kubectl sends `fieldValidation=Strict`
//! and does not download schemas. kube-sim accepts the parameter but does not detect unknown or duplicate fields;
//! the documents say so in `info.description`. Built-in kinds do not advertise strategic merge patch here (the
//! server accepts it), so `kubectl apply` computes its patch from its own compiled-in types instead of looking for
//! schemas these documents do not carry.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::kinds::ResourceInfo;

/// The path prefix of a group-version in the OpenAPI v3 index: `api/v1` or `apis/{g}/{v}`.
fn gv_key(info: &ResourceInfo) -> String {
    if info.gvr.group.is_empty() {
        format!("api/{}", info.gvr.version)
    } else {
        format!("apis/{}/{}", info.gvr.group, info.gvr.version)
    }
}

fn by_group_version(all: &[Arc<ResourceInfo>]) -> BTreeMap<String, Vec<Arc<ResourceInfo>>> {
    let mut m: BTreeMap<String, Vec<Arc<ResourceInfo>>> = BTreeMap::new();
    for r in all {
        m.entry(gv_key(r)).or_default().push(r.clone());
    }
    m
}

fn query_param(name: &str, description: &str, ty: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": ty, "uniqueItems": true}})
}

fn path_param(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}})
}

fn write_params() -> Vec<Value> {
    vec![
        query_param("fieldManager", "the name of the actor making the change", "string"),
        query_param(
            "fieldValidation",
            "Ignore, Warn or Strict; accepted, but kube-sim does not detect unknown or duplicate fields",
            "string",
        ),
    ]
}

fn operation(info: &ResourceInfo, action: &str, verb: &str, params: Vec<Value>, body_types: &[&str]) -> Value {
    let mut op = Map::new();
    op.insert("operationId".into(), json!(format!("{verb}{}", info.kind)));
    op.insert("x-kubernetes-action".into(), json!(action));
    op.insert(
        "x-kubernetes-group-version-kind".into(),
        json!({"group": info.gvr.group, "version": info.gvr.version, "kind": info.kind}),
    );
    if !body_types.is_empty() {
        let content: Map<String, Value> = body_types
            .iter()
            .map(|t| ((*t).to_string(), json!({"schema": {"type": "object"}})))
            .collect();
        op.insert("requestBody".into(), json!({"required": true, "content": content}));
    }
    op.insert("parameters".into(), Value::Array(params));
    op.insert(
        "responses".into(),
        json!({"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}}),
    );
    Value::Object(op)
}

/// The OpenAPI v3 document of one group-version.
fn gv_document(infos: &[Arc<ResourceInfo>]) -> Value {
    let mut paths = Map::new();
    for info in infos {
        let base = if info.gvr.group.is_empty() {
            format!("/api/{}", info.gvr.version)
        } else {
            format!("/apis/{}/{}", info.gvr.group, info.gvr.version)
        };
        let (collection, mut scope_params) = if info.namespaced {
            (
                format!("{base}/namespaces/{{namespace}}/{}", info.gvr.resource),
                vec![path_param("namespace")],
            )
        } else {
            (format!("{base}/{}", info.gvr.resource), Vec::new())
        };
        paths.insert(
            collection.clone(),
            json!({
                "get": operation(info, "list", "list", vec![
                    query_param("labelSelector", "a label selector", "string"),
                    query_param("fieldSelector", "a field selector", "string"),
                    query_param("limit", "page size", "integer"),
                    query_param("continue", "continue token", "string"),
                    query_param("resourceVersion", "resource version", "string"),
                    query_param("watch", "watch instead of list", "boolean"),
                ], &[]),
                "post": operation(info, "post", "create", write_params(), &["application/json"]),
                "delete": operation(info, "deletecollection", "deletecollection", vec![], &[]),
                "parameters": scope_params.clone(),
            }),
        );
        scope_params.push(path_param("name"));
        let patch_types = [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ];
        let mut patch_params = write_params();
        patch_params.push(query_param("force", "force server-side apply", "boolean"));
        let item_ops = json!({
            "get": operation(info, "get", "read", vec![], &[]),
            "put": operation(info, "put", "replace", write_params(), &["application/json"]),
            "patch": operation(info, "patch", "patch", patch_params, &patch_types),
            "delete": operation(info, "delete", "delete", vec![
                query_param("propagationPolicy", "Orphan, Background or Foreground", "string"),
                query_param("gracePeriodSeconds", "grace period", "integer"),
            ], &["application/json"]),
            "parameters": scope_params.clone(),
        });
        paths.insert(format!("{collection}/{{name}}"), item_ops);
        if info.status_subresource {
            let status = json!({
                "get": operation(info, "get", "readStatus", vec![], &[]),
                "put": operation(info, "put", "replaceStatus", write_params(), &["application/json"]),
                "patch": operation(info, "patch", "patchStatus", write_params(), &patch_types),
                "parameters": scope_params,
            });
            paths.insert(format!("{collection}/{{name}}/status"), status);
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {
            "title": "Kubernetes (kube-sim)",
            "version": format!("v{}.{}.0", super::discovery::EMULATED_MAJOR, super::discovery::EMULATED_MINOR),
            "description": "kube-sim publishes paths, operations and query parameters only (no schemas). \
                            fieldValidation detects unknown fields of custom resources, not duplicate fields."
        },
        "paths": paths,
        "components": {"schemas": {}}
    })
}

fn hash_of(v: &Value) -> String {
    let mut h = DefaultHasher::new();
    v.to_string().hash(&mut h);
    format!("{:016X}", h.finish())
}

/// `GET /openapi/v3` and `GET /openapi/v3/{api/v1 | apis/g/v}`; `None` for an unknown group-version.
pub(super) fn serve(all: &[Arc<ResourceInfo>], rest: &[&str]) -> Option<Value> {
    let gvs = by_group_version(all);
    if rest.is_empty() {
        let paths: Map<String, Value> = gvs
            .iter()
            .map(|(key, infos)| {
                let url = format!("/openapi/v3/{key}?hash={}", hash_of(&gv_document(infos)));
                (key.clone(), json!({"serverRelativeURL": url}))
            })
            .collect();
        return Some(json!({"paths": paths}));
    }
    let key = rest.join("/");
    gvs.get(&key).map(|infos| gv_document(infos))
}
