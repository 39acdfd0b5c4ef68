//! KubeRay's samples are valid: every RayCluster, RayJob and RayService document under
//! KubeRay's sample directory passes our validation. The operator is assumed to
//! run with every feature gate on (several samples are for alpha features and say so).
//!
//! KubeRay validates what the API server stored, so before validating, each document gets what the
//! API server adds: a name for `generateName` objects and the CRD defaults validation depends on
//! (`minReplicas: 0`, `maxReplicas: 2147483647` on worker groups).

mod common;

use common::sample_docs;
use ray_api::validation::{ValidationOptions, validate_ray_cluster, validate_ray_job, validate_ray_service};
use ray_api::{RayCluster, RayJob, RayService};
use serde_json::{Value, json};

/// The worker groups of a RayCluster spec JSON get the CRD's replica defaults.
fn default_worker_groups(cluster_spec: Option<&mut Value>) {
    let Some(groups) = cluster_spec
        .and_then(|s| s.get_mut("workerGroupSpecs"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for group in groups.iter_mut().filter_map(Value::as_object_mut) {
        group.entry("minReplicas").or_insert(json!(0));
        group.entry("maxReplicas").or_insert(json!(2147483647));
    }
}

/// What the API server adds before KubeRay sees the object.
fn as_stored(mut doc: Value) -> Value {
    if doc["metadata"].get("name").is_none()
        && let Some(prefix) = doc["metadata"].get("generateName").and_then(Value::as_str)
    {
        doc["metadata"]["name"] = json!(format!("{prefix}x7k2p"));
    }
    let kind = doc["kind"].as_str().unwrap_or_default().to_owned();
    let spec = &mut doc["spec"];
    match kind.as_str() {
        "RayCluster" => default_worker_groups(Some(spec)),
        "RayJob" => default_worker_groups(spec.get_mut("rayClusterSpec")),
        "RayService" => default_worker_groups(spec.get_mut("rayClusterConfig")),
        _ => {}
    }
    doc
}

#[test]
fn every_kuberay_sample_passes_validation() {
    let options = ValidationOptions::all_enabled();
    let mut failures = Vec::new();
    let mut counts = [0usize; 3];
    for doc in sample_docs() {
        let kind = doc
            .value
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or_default()
            .to_owned();
        let result = match kind.as_str() {
            "RayCluster" => {
                counts[0] += 1;
                let cluster: RayCluster = serde_json::from_value(as_stored(doc.value)).unwrap();
                validate_ray_cluster(&cluster, &options)
            }
            "RayJob" => {
                counts[1] += 1;
                let job: RayJob = serde_json::from_value(as_stored(doc.value)).unwrap();
                validate_ray_job(&job, &options)
            }
            "RayService" => {
                counts[2] += 1;
                let service: RayService = serde_json::from_value(as_stored(doc.value)).unwrap();
                validate_ray_service(&service, &options)
            }
            _ => continue,
        };
        if let Err(e) = result {
            failures.push(format!("{} #{} ({kind}): {e}", doc.file, doc.index));
        }
    }
    assert!(
        counts.iter().all(|c| *c > 0),
        "expected RayCluster, RayJob and RayService samples, got {counts:?}"
    );
    assert!(
        failures.is_empty(),
        "{} invalid samples:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
