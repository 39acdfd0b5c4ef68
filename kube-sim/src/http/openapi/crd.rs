//! The schemas of custom resources, from each CRD version's `schema.openAPIV3Schema`, published as
//! kube-apiserver publishes them: under the reversed-group definition name (`io.ray.v1.RayCluster` for
//! `ray.io/v1`), with `metadata` referring to `ObjectMeta`, and reduced to OpenAPI v2's vocabulary in the v2
//! document.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::Dialect;

/// The schema of one served CRD version, keyed by (group, version, kind) in [`CrdSchemas`].
pub(super) type CrdSchemas = BTreeMap<(String, String, String), Value>;

/// The `openAPIV3Schema` of every served version of the given CRD objects.
pub(super) fn collect<'a>(crds: impl IntoIterator<Item = &'a Value>) -> CrdSchemas {
    let mut out = CrdSchemas::new();
    for crd in crds {
        let spec = &crd["spec"];
        let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str()) else {
            continue;
        };
        for v in spec["versions"].as_array().into_iter().flatten() {
            let schema = &v["schema"]["openAPIV3Schema"];
            if let (Some(version), true) = (v["name"].as_str(), schema.is_object())
                && v["served"].as_bool().unwrap_or(true)
            {
                out.insert((group.into(), version.into(), kind.into()), schema.clone());
            }
        }
    }
    out
}

/// kube-apiserver's definition name of a custom kind: the group's DNS labels reversed, then version and kind.
pub(super) fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// The published definition of a custom kind: the CRD's schema with typed `apiVersion`, `kind` and `metadata`.
pub(super) fn definition(dialect: Dialect, schema: &Value, object_meta: &str) -> Value {
    let mut schema = schema.clone();
    if dialect == Dialect::V2 {
        to_v2(&mut schema);
    }
    let Some(obj) = schema.as_object_mut() else {
        return schema;
    };
    obj.entry("type").or_insert_with(|| json!("object"));
    let props = obj.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    if let Some(props) = props.as_object_mut() {
        props.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": API_VERSION_DOC}),
        );
        props.insert("kind".into(), json!({"type": "string", "description": KIND_DOC}));
        props.insert("metadata".into(), dialect.described_ref(object_meta, METADATA_DOC));
    }
    schema
}

const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Reduces a structural schema to what OpenAPI v2 can say, as kube-apiserver does for its v2 document:
/// `nullable` schemas lose their type and structure (v2 cannot express null), and the v3-only keywords
/// (`oneOf`, `anyOf`, `not`, `nullable`) and CEL rules are dropped.
fn to_v2(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if obj.remove("nullable").and_then(|n| n.as_bool()) == Some(true) {
        for k in ["type", "properties", "items", "additionalProperties"] {
            obj.remove(k);
        }
    }
    for k in ["oneOf", "anyOf", "not", "x-kubernetes-validations"] {
        obj.remove(k);
    }
    if obj.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        obj.remove("type");
    }
    for (k, v) in obj.iter_mut() {
        match k.as_str() {
            "properties" | "patternProperties" | "definitions" => {
                if let Some(m) = v.as_object_mut() {
                    m.values_mut().for_each(to_v2);
                }
            }
            "items" | "additionalProperties" => to_v2(v),
            "allOf" => {
                if let Some(a) = v.as_array_mut() {
                    a.iter_mut().for_each(to_v2);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn definition_names_reverse_the_group() {
        assert_eq!(definition_name("ray.io", "v1", "RayCluster"), "io.ray.v1.RayCluster");
        assert_eq!(
            definition_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
    }

    #[test]
    fn v2_definitions_drop_what_v2_cannot_express() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "nullable": true},
                "b": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "c": {"type": "array", "items": {"type": "object", "x-kubernetes-validations": [{"rule": "true"}],
                      "properties": {"d": {"type": "integer", "nullable": false}}}},
                "metadata": {"type": "object"}
            }
        });
        let v2 = definition(Dialect::V2, &schema, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        assert_eq!(v2["properties"]["a"], json!({}));
        assert_eq!(v2["properties"]["b"], json!({"x-kubernetes-int-or-string": true}));
        assert_eq!(
            v2["properties"]["c"]["items"],
            json!({"type": "object", "properties": {"d": {"type": "integer"}}})
        );
        assert_eq!(
            v2["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        let v3 = definition(Dialect::V3, &schema, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        assert_eq!(v3["properties"]["a"], json!({"type": "string", "nullable": true}));
        assert_eq!(
            v3["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
    }
}
