//! The four generated CustomResourceDefinitions.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::Value;

use crate::{RayCluster, RayCronJob, RayJob, RayService};

/// The RayCluster, RayJob, RayService and RayCronJob CRDs, in that order, without schema descriptions.
///
/// KubeRay generates its CRDs with descriptions removed: the pod templates' documentation would make
/// each CRD over a megabyte, close to etcd's request limit and far over what `kubectl apply` can keep in
/// its last-applied annotation. Ours are trimmed the same way.
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    [RayCluster::crd(), RayJob::crd(), RayService::crd(), RayCronJob::crd()]
        .into_iter()
        .map(with_list_kind)
        .map(without_descriptions)
        .collect()
}

/// Sets `names.listKind` (`RayClusterList`) as KubeRay's CRDs do; kube's derive leaves it to the
/// API server's defaulting.
fn with_list_kind(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    if crd.spec.names.list_kind.is_none() {
        crd.spec.names.list_kind = Some(format!("{}List", crd.spec.names.kind));
    }
    crd
}

/// Removes every `description` from the CRD's schemas. Falls back to the untouched CRD if the
/// round-trip through JSON ever failed (it cannot for a CRD that serialised in the first place).
fn without_descriptions(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let Ok(mut value) = serde_json::to_value(&crd) else {
        return crd;
    };
    if let Some(versions) = value.pointer_mut("/spec/versions").and_then(Value::as_array_mut) {
        for version in versions {
            if let Some(schema) = version.pointer_mut("/schema/openAPIV3Schema") {
                strip_descriptions(schema);
            }
        }
    }
    // Read back through text, as kube-client reads CRDs: a decoder for JSON values would be one more copy of
    // the schema types' decoding code in every program that links this crate.
    serde_json::from_str(&value.to_string()).unwrap_or(crd)
}

/// Removes `description` keys from a schema node and everything under it. Only keys of schema
/// nodes are touched: a property that happens to be *named* `description` lives under `properties`
/// and is kept.
fn strip_descriptions(schema: &mut Value) {
    let Some(node) = schema.as_object_mut() else { return };
    if node.get("description").is_some_and(Value::is_string) {
        node.remove("description");
    }
    for (key, child) in node.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "definitions" => {
                if let Some(map) = child.as_object_mut() {
                    map.values_mut().for_each(strip_descriptions);
                }
            }
            "items" | "additionalProperties" | "not" => match child {
                Value::Array(list) => list.iter_mut().for_each(strip_descriptions),
                other => strip_descriptions(other),
            },
            "allOf" | "anyOf" | "oneOf" => {
                if let Some(list) = child.as_array_mut() {
                    list.iter_mut().for_each(strip_descriptions);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_removed_but_a_property_named_description_is_kept() {
        let mut schema = serde_json::json!({
            "type": "object",
            "description": "drop me",
            "properties": {
                "description": {"type": "string", "description": "drop me too"},
                "list": {"type": "array", "items": {"type": "string", "description": "x"}}
            }
        });
        strip_descriptions(&mut schema);
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "list": {"type": "array", "items": {"type": "string"}}
                }
            })
        );
    }

    #[test]
    fn generated_crds_carry_no_description_and_stay_small() {
        for crd in all_crds() {
            let json = serde_json::to_string(&crd).unwrap_or_default();
            assert!(
                !json.contains("\"description\":\""),
                "{} still has descriptions",
                crd.spec.names.kind
            );
            // KubeRay's largest (RayJob) is about 420 kB as JSON; etcd's request limit is 1.5 MiB.
            assert!(json.len() < 600_000, "{} is {} bytes", crd.spec.names.kind, json.len());
        }
    }
}
