//! Helpers shared by the integration tests: loading KubeRay's samples and
//! CRDs, and walking CRD schemas.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

/// KubeRay v1.7.0's reference directory (panics when the reference tree is missing, so a missing tree
/// fails the test instead of skipping it).
pub fn kuberay_dir() -> PathBuf {
    kuberay_reference::kuberay_dir()
}

/// One YAML document of a sample file.
pub struct SampleDoc {
    /// File name.
    pub file: String,
    /// Index of the document inside the file.
    pub index: usize,
    /// The document as JSON.
    pub value: Value,
}

/// Every document of every sample file (all kinds), in file-name order.
pub fn sample_docs() -> Vec<SampleDoc> {
    let files = kuberay_reference::sample_files();
    let mut docs = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let values: Vec<Value> =
            ray_api::yaml::from_yaml_documents(&text).unwrap_or_else(|e| panic!("{}: YAML error: {e}", path.display()));
        for (index, value) in values.into_iter().enumerate() {
            if value.is_null() {
                continue;
            }
            docs.push(SampleDoc {
                file: path.file_name().unwrap().to_string_lossy().into_owned(),
                index,
                value,
            });
        }
    }
    docs
}

/// KubeRay's CRD for a kind, as JSON.
pub fn kuberay_crd(kind: &str) -> Value {
    let file = match kind {
        "RayCluster" => "ray.io_rayclusters.yaml",
        "RayJob" => "ray.io_rayjobs.yaml",
        "RayService" => "ray.io_rayservices.yaml",
        "RayCronJob" => "ray.io_raycronjobs.yaml",
        other => panic!("unknown kind {other}"),
    };
    let text = kuberay_reference::crd_text(file);
    ray_api::yaml::from_yaml_str(&text).unwrap()
}

/// Our generated CRD for a kind, as JSON. Generating the four CRDs takes seconds in a debug build, so
/// they are generated once per test binary.
pub fn our_crd(kind: &str) -> &'static Value {
    static CRDS: OnceLock<Vec<Value>> = OnceLock::new();
    CRDS.get_or_init(|| {
        ray_api::crds::all_crds()
            .iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect()
    })
    .iter()
    .find(|c| c["spec"]["names"]["kind"] == kind)
    .unwrap_or_else(|| panic!("no generated CRD for {kind}"))
}

/// The `openAPIV3Schema` of a CRD's first version.
pub fn root_schema(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

/// The schema of `key` inside an object schema (a property, or `additionalProperties`).
pub fn child_schema<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema
        .get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

/// The item schema of an array schema.
pub fn item_schema(schema: &Value) -> Option<&Value> {
    schema.get("items")
}

/// Whether the node is `x-kubernetes-int-or-string` (Quantity and IntOrString positions).
pub fn is_int_or_string(schema: &Value) -> bool {
    schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
}

/// Whether the node is `nullable: true` (the API server keeps explicit nulls only there).
pub fn is_nullable(schema: &Value) -> bool {
    schema.get("nullable") == Some(&Value::Bool(true))
}
