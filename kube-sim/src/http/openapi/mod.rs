//! The OpenAPI documents: `/openapi/v2` (one Swagger 2.0 document of every served kind) and `/openapi/v3` (an
//! index of group-versions, then one OpenAPI 3.0 document per group-version), with the schemas of every
//! served kind: built-in kinds from `k8s-openapi`'s generated schemas, custom resources from their CRD's
//! `openAPIV3Schema`. Each kind's definition carries `x-kubernetes-group-version-kind`, as kube-apiserver's
//! do, so `kubectl explain` and schema-driven clients find them.
//!
//! The documents are big, so they are built once per set of served kinds and CRD versions and kept in an
//! [`OpenApiCache`]. Only JSON is served: a request that accepts only the protobuf encodings gets
//! kube-apiserver's answer to an unacceptable format, 406 with an empty body.

mod builtin;
mod crd;
mod paths;
mod unknown_fields;

pub(super) use unknown_fields::unknown_fields;

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::schemars::transform::RemoveRefSiblings;
use k8s_openapi::schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use super::{Body, HttpState, error_response, full, json_response};
use crate::error::ApiError;
use crate::kinds::{Gvr, ResourceInfo};
use crate::store::{ListOptions, StoredObject};
use paths::DefinitionNames;

/// The two OpenAPI dialects kube-sim publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// Swagger 2.0, `/openapi/v2`: definitions under `#/definitions/`.
    V2,
    /// OpenAPI 3.0, `/openapi/v3/...`: definitions under `#/components/schemas/`.
    V3,
}

impl Dialect {
    fn generator(self) -> SchemaGenerator {
        let settings = match self {
            Self::V2 => SchemaSettings::draft07().with(|s| s.transforms.clear()),
            // kube-apiserver's v3 documents wrap a `$ref` that has siblings (a description) in `allOf`.
            Self::V3 => SchemaSettings::openapi3()
                .with(|s| s.transforms.clear())
                .with_transform(RemoveRefSiblings::default()),
        };
        settings.with(|s| s.meta_schema = None).into_generator()
    }

    /// A `$ref` to the definition `name`.
    pub(super) fn reference(self, name: &str) -> Value {
        let prefix = match self {
            Self::V2 => "#/definitions/",
            Self::V3 => "#/components/schemas/",
        };
        json!({"$ref": format!("{prefix}{name}")})
    }

    /// A `$ref` to the definition `name` with a description, written as kube-apiserver writes it.
    pub(super) fn described_ref(self, name: &str, description: &str) -> Value {
        let mut v = match self {
            Self::V2 => self.reference(name),
            Self::V3 => json!({"allOf": [self.reference(name)]}),
        };
        v["description"] = json!(description);
        v
    }
}

/// `api/v1` or `apis/{group}/{version}`: the group-version's path prefix and its key in the v3 index.
fn gv_path(info: &ResourceInfo) -> String {
    if info.gvr.group.is_empty() {
        format!("api/{}", info.gvr.version)
    } else {
        format!("apis/{}/{}", info.gvr.group, info.gvr.version)
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "kind": kind, "version": version}])
}

fn schema_name<T: JsonSchema>() -> String {
    T::schema_name().into_owned()
}

/// The definitions of the given kinds (and of everything they refer to), their `List` kinds and the meta types
/// the operations refer to; returns them with the definition name of each kind.
fn definitions(
    dialect: Dialect,
    infos: &[Arc<ResourceInfo>],
    crds: &crd::CrdSchemas,
) -> (Map<String, Value>, DefinitionNames) {
    let mut generator = dialect.generator();
    generator.subschema_for::<meta::ObjectMeta>();
    generator.subschema_for::<meta::ListMeta>();
    generator.subschema_for::<meta::DeleteOptions>();
    generator.subschema_for::<meta::Status>();
    generator.subschema_for::<meta::Patch>();
    let mut names = DefinitionNames::new();
    let mut custom = Vec::new();
    for info in infos {
        let (group, version, kind) = (&info.gvr.group, &info.gvr.version, &info.kind);
        let key = (group.clone(), version.clone(), kind.clone());
        if info.custom {
            if let Some(schema) = crds.get(&key) {
                let name = crd::definition_name(group, version, kind);
                custom.push((name.clone(), schema));
                names.insert(key, name);
            }
        } else if let Some(b) = builtin::find(group, version, kind) {
            (b.generate)(&mut generator);
            names.insert(key, (b.definition)().into_owned());
        }
    }
    let mut defs = generator.take_definitions(true);
    let object_meta = schema_name::<meta::ObjectMeta>();
    for (name, schema) in custom {
        defs.insert(name, crd::definition(dialect, schema, &object_meta));
    }
    let list_meta = schema_name::<meta::ListMeta>();
    for ((group, version, kind), name) in &names {
        if let Some(def) = defs.get_mut(name).and_then(Value::as_object_mut) {
            def.insert("x-kubernetes-group-version-kind".into(), gvk(group, version, kind));
        }
        let list_kind = format!("{kind}List");
        defs.insert(
            format!("{name}List"),
            json!({
                "description": format!("{list_kind} is a list of {kind}."),
                "type": "object",
                "required": ["items"],
                "properties": {
                    "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
                    "items": {"type": "array", "description": format!("List of {kind} objects."), "items": dialect.reference(name)},
                    "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
                    "metadata": dialect.described_ref(&list_meta, "Standard list metadata."),
                },
                "x-kubernetes-group-version-kind": gvk(group, version, &list_kind),
            }),
        );
    }
    (defs, names)
}

fn info_block() -> Value {
    json!({
        "title": "Kubernetes",
        "version": format!("v{}.{}.0", super::discovery::EMULATED_MAJOR, super::discovery::EMULATED_MINOR),
    })
}

/// Bearer tokens in the `authorization` header, as kube-apiserver declares them.
fn security_schemes() -> Value {
    json!({"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}})
}

/// The Swagger 2.0 document of every served kind.
fn v2_document(infos: &[Arc<ResourceInfo>], crds: &crd::CrdSchemas) -> Value {
    let (definitions, names) = definitions(Dialect::V2, infos, crds);
    json!({
        "swagger": "2.0",
        "info": info_block(),
        "paths": paths::paths(Dialect::V2, infos, &names),
        "definitions": definitions,
        "securityDefinitions": security_schemes(),
        "security": [{"BearerToken": []}],
    })
}

/// The OpenAPI 3.0 document of one group-version.
fn v3_document(infos: &[Arc<ResourceInfo>], crds: &crd::CrdSchemas) -> Value {
    let (schemas, names) = definitions(Dialect::V3, infos, crds);
    json!({
        "openapi": "3.0.0",
        "info": info_block(),
        "paths": paths::paths(Dialect::V3, infos, &names),
        "components": {
            "schemas": schemas,
            "securitySchemes": security_schemes(),
        },
    })
}

fn to_bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}

fn content_hash(bytes: &[u8]) -> String {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    format!("{:016X}", h.finish())
}

/// The OpenAPI v3 index and documents, serialized.
struct V3Documents {
    index: Bytes,
    by_group_version: BTreeMap<String, Bytes>,
}

/// The documents of one set of served kinds, each built on first request.
struct Documents {
    key: u64,
    resources: Vec<Arc<ResourceInfo>>,
    crds: crd::CrdSchemas,
    v2: OnceLock<Bytes>,
    v3: OnceLock<V3Documents>,
}

impl Documents {
    fn v2(&self) -> &Bytes {
        self.v2
            .get_or_init(|| to_bytes(&v2_document(&self.resources, &self.crds)))
    }

    fn v3(&self) -> &V3Documents {
        self.v3.get_or_init(|| {
            let mut groups: BTreeMap<String, Vec<Arc<ResourceInfo>>> = BTreeMap::new();
            for r in &self.resources {
                groups.entry(gv_path(r)).or_default().push(r.clone());
            }
            let by_group_version: BTreeMap<String, Bytes> = groups
                .iter()
                .map(|(gv, infos)| (gv.clone(), to_bytes(&v3_document(infos, &self.crds))))
                .collect();
            let paths: Map<String, Value> = by_group_version
                .iter()
                .map(|(gv, doc)| {
                    let url = format!("/openapi/v3/{gv}?hash={}", content_hash(doc));
                    (gv.clone(), json!({"serverRelativeURL": url}))
                })
                .collect();
            V3Documents {
                index: to_bytes(&json!({"paths": paths})),
                by_group_version,
            }
        })
    }
}

/// The OpenAPI documents of the current set of served kinds, rebuilt when a kind or a CRD changes.
#[derive(Default)]
pub(super) struct OpenApiCache(Mutex<Option<Arc<Documents>>>);

impl OpenApiCache {
    fn documents(&self, state: &HttpState) -> Arc<Documents> {
        let resources = state.store.resources();
        let crd_objects: Vec<Arc<StoredObject>> = state
            .store
            .list(&Gvr::crds(), None, &ListOptions::default())
            .map(|l| l.items)
            .unwrap_or_default();
        let mut h = DefaultHasher::new();
        for r in &resources {
            (&r.gvr, &r.kind, r.namespaced, r.status_subresource, r.scale_subresource).hash(&mut h);
        }
        for c in &crd_objects {
            (c.name(), c.rv).hash(&mut h);
        }
        let key = h.finish();
        let mut cached = self.0.lock();
        if let Some(d) = cached.as_ref().filter(|d| d.key == key) {
            return d.clone();
        }
        let docs = Arc::new(Documents {
            key,
            resources,
            crds: crd::collect(crd_objects.iter().map(|c| c.value()).collect::<Vec<_>>().iter()),
            v2: OnceLock::new(),
            v3: OnceLock::new(),
        });
        *cached = Some(docs.clone());
        docs
    }
}

/// Whether an `Accept` header admits JSON (kube-openapi's negotiation: `application/json`, `application/*`,
/// `*/*` or no header at all).
fn accepts_json(accept: &str) -> bool {
    accept.trim().is_empty()
        || accept.split(',').any(|clause| {
            let media = clause.split(';').next().unwrap_or_default().trim();
            matches!(media, "application/json" | "application/*" | "*/*")
        })
}

fn not_acceptable() -> Response<Body> {
    let mut r = Response::new(full(Bytes::new()));
    *r.status_mut() = StatusCode::NOT_ACCEPTABLE;
    r
}

fn document_response(bytes: &Bytes) -> Response<Body> {
    let mut r = json_response(200, bytes.clone());
    r.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
    r
}

/// `GET /openapi/v2`, `GET /openapi/v3` and `GET /openapi/v3/{api/v1 | apis/g/v}` (`segs` after `openapi`).
pub(super) fn serve(state: &HttpState, segs: &[&str], accept: &str) -> Response<Body> {
    let known = matches!(segs, ["v2"] | ["v3", ..]);
    if !known {
        return error_response(&ApiError::no_route());
    }
    if !accepts_json(accept) {
        return not_acceptable();
    }
    let docs = state.openapi.documents(state);
    match segs {
        ["v2"] => document_response(docs.v2()),
        ["v3"] => document_response(&docs.v3().index),
        ["v3", rest @ ..] => match docs.v3().by_group_version.get(&rest.join("/")) {
            Some(doc) => document_response(doc),
            None => error_response(&ApiError::no_route()),
        },
        _ => error_response(&ApiError::no_route()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::kinds::{builtin_resources, resources_from_crd};

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer", "nullable": true}}}}}}}]}
        })
    }

    fn served() -> (Vec<Arc<ResourceInfo>>, crd::CrdSchemas) {
        let crd = crd();
        let mut infos: Vec<Arc<ResourceInfo>> = builtin_resources().into_iter().map(Arc::new).collect();
        infos.extend(resources_from_crd(&crd).into_iter().map(Arc::new));
        (infos, crd::collect([&crd]))
    }

    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    /// Every `$ref` of the document points at a definition of the same document.
    fn assert_refs_resolve(doc: &Value, prefix: &str, definitions: &Map<String, Value>) {
        let mut all = Vec::new();
        refs(doc, &mut all);
        assert!(!all.is_empty());
        for r in all {
            let name = r.strip_prefix(prefix).unwrap_or_else(|| panic!("{r} outside {prefix}"));
            assert!(definitions.contains_key(name), "dangling $ref {r}");
        }
    }

    #[test]
    fn v2_document_defines_every_served_kind_under_its_upstream_name() {
        let (infos, crds) = served();
        let doc = v2_document(&infos, &crds);
        assert_eq!(doc["swagger"], "2.0");
        let defs = doc["definitions"].as_object().unwrap();
        assert_refs_resolve(&doc, "#/definitions/", defs);
        let pod = &defs["io.k8s.api.core.v1.Pod"];
        assert_eq!(pod["x-kubernetes-group-version-kind"], gvk("", "v1", "Pod"));
        assert_eq!(
            pod["properties"]["spec"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.PodSpec"
        );
        assert_eq!(
            defs["io.k8s.api.core.v1.SecretList"]["x-kubernetes-group-version-kind"],
            gvk("", "v1", "SecretList")
        );
        for r in &infos {
            let tagged = defs
                .values()
                .any(|d| d["x-kubernetes-group-version-kind"] == gvk(&r.gvr.group, &r.gvr.version, &r.kind));
            assert!(tagged, "no definition for {}", r.gvr);
        }
        let widget = &defs["com.example.v1.Widget"];
        assert_eq!(widget["properties"]["spec"]["properties"]["size"], json!({}));
        assert!(!doc.to_string().contains("#/components/"));
    }

    #[test]
    fn v3_documents_carry_schemas_and_the_field_validation_parameter() {
        let (infos, crds) = served();
        let core: Vec<_> = infos.iter().filter(|r| gv_path(r) == "api/v1").cloned().collect();
        let doc = v3_document(&core, &crds);
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        assert_refs_resolve(&doc, "#/components/schemas/", schemas);
        let pod = &schemas["io.k8s.api.core.v1.Pod"];
        assert_eq!(pod["x-kubernetes-group-version-kind"], gvk("", "v1", "Pod"));
        assert_eq!(
            pod["properties"]["spec"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.PodSpec"
        );
        assert!(
            !schemas.contains_key("io.k8s.api.batch.v1.Job"),
            "one group-version per document"
        );
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );

        let custom: Vec<_> = infos.iter().filter(|r| r.custom).cloned().collect();
        let doc = v3_document(&custom, &crds);
        let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
        assert_eq!(
            widget["x-kubernetes-group-version-kind"],
            gvk("example.com", "v1", "Widget")
        );
        assert_eq!(
            widget["properties"]["spec"]["properties"]["size"],
            json!({"type": "integer", "nullable": true})
        );
        assert_eq!(
            widget["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
    }

    #[test]
    fn only_json_is_acceptable() {
        assert!(accepts_json(""));
        assert!(accepts_json("application/json"));
        assert!(accepts_json("application/json, */*"));
        assert!(accepts_json(
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, */*;q=0.1"
        ));
        assert!(!accepts_json(
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        ));
    }
}
