//! Test fixtures shared by KubeRay's batch-scheduler golden cases (G01-G56): KubeRay's `T-cluster(h)` and
//! `T-job(h)`, small cluster builders, and KubeRay's samples (through `kuberay-reference`).
//!
//! Tests that read the reference material fail (not skip) when it is missing, like the other crates' tests.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use ray_api::{RayCluster, RayClusterSpec, RayJob};
use serde_json::{Value, json};

/// A container resource block: `requests` and `limits` given as `(name, quantity)` pairs.
pub(crate) fn resources(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Value {
    let map = |pairs: &[(&str, &str)]| Value::Object(pairs.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect());
    let mut out = serde_json::Map::new();
    if !requests.is_empty() {
        out.insert("requests".into(), map(requests));
    }
    if !limits.is_empty() {
        out.insert("limits".into(), map(limits));
    }
    Value::Object(out)
}

/// A pod template with one container of the given resources.
pub(crate) fn template(name: &str, res: Value) -> Value {
    json!({"spec": {"containers": [{"name": name, "image": "rayproject/ray:2.52.0", "resources": res}]}})
}

/// A worker group (as JSON) with a one-container template.
pub(crate) fn worker_group(
    name: &str,
    replicas: Option<i32>,
    min: Option<i32>,
    max: Option<i32>,
    hosts: Option<i32>,
    res: Value,
) -> Value {
    let mut g = json!({"groupName": name, "rayStartParams": {}, "template": template("ray-worker", res)});
    for (key, value) in [
        ("replicas", replicas),
        ("minReplicas", min),
        ("maxReplicas", max),
        ("numOfHosts", hosts),
    ] {
        if let Some(v) = value {
            g[key] = json!(v);
        }
    }
    g
}

/// A cluster spec (as JSON) from a head resource block and worker groups.
pub(crate) fn cluster_spec_json(head: Value, groups: Vec<Value>) -> Value {
    json!({
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head", head)},
        "workerGroupSpecs": groups,
    })
}

/// A typed cluster spec.
pub(crate) fn cluster_spec(head: Value, groups: Vec<Value>) -> RayClusterSpec {
    serde_json::from_value(cluster_spec_json(head, groups)).unwrap()
}

/// A RayCluster named `name` in `default` with the given labels and spec.
pub(crate) fn cluster(name: &str, labels: &[(&str, &str)], spec: Value) -> RayCluster {
    serde_json::from_value(json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "labels": label_map(labels)},
        "spec": spec,
    }))
    .unwrap()
}

/// A RayJob named `name` in `default` with the given labels and spec.
pub(crate) fn job(name: &str, labels: &[(&str, &str)], spec: Value) -> RayJob {
    serde_json::from_value(json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "labels": label_map(labels)},
        "spec": spec,
    }))
    .unwrap()
}

/// Labels as a JSON object.
fn label_map(labels: &[(&str, &str)]) -> Value {
    Value::Object(labels.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect())
}

/// KubeRay's `T-cluster(h)` spec: head 256m/256Mi (limits 500m/512Mi); one worker group with an
/// empty name, replicas 2, min 1, max 4, `numOfHosts` h, requests 256m/256Mi, limits
/// 500m/512Mi/`nvidia.com/gpu: 1` (with `gpu`) .
pub(crate) fn t_spec(hosts: i32, gpu: bool) -> Value {
    let mut worker_limits = vec![("cpu", "500m"), ("memory", "512Mi")];
    if gpu {
        worker_limits.push(("nvidia.com/gpu", "1"));
    }
    cluster_spec_json(
        resources(
            &[("cpu", "256m"), ("memory", "256Mi")],
            &[("cpu", "500m"), ("memory", "512Mi")],
        ),
        vec![worker_group(
            "",
            Some(2),
            Some(1),
            Some(4),
            Some(hosts),
            resources(&[("cpu", "256m"), ("memory", "256Mi")], &worker_limits),
        )],
    )
}

/// `T-cluster(h)`: RayCluster `raycluster-sample` in `default`.
pub(crate) fn t_cluster(hosts: i32, labels: &[(&str, &str)]) -> RayCluster {
    cluster("raycluster-sample", labels, t_spec(hosts, true))
}

/// `T-job(h)`: RayJob `rayjob-sample` with the queue and priority labels, the `T-cluster` spec
/// without the GPU, and the given submission mode (`None`: unset).
pub(crate) fn t_job(hosts: i32, mode: Option<&str>) -> RayJob {
    let mut spec =
        json!({"entrypoint": "python /home/ray/samples/sample_code.py", "rayClusterSpec": t_spec(hosts, false)});
    if let Some(mode) = mode {
        spec["submissionMode"] = json!(mode);
    }
    job(
        "rayjob-sample",
        &[
            ("volcano.sh/queue-name", "test-queue"),
            ("ray.io/priority-class-name", "test-priority"),
        ],
        spec,
    )
}

/// A bare pod with some labels (the object the child hooks decorate).
pub(crate) fn pod(labels: &[(&str, &str)]) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "pod", "namespace": "default", "labels": label_map(labels)},
        "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]},
    }))
    .unwrap()
}

/// A bare pod template.
pub(crate) fn pod_template() -> PodTemplateSpec {
    serde_json::from_value(template("ray-job-submitter", json!({}))).unwrap()
}

/// A resource list's values as canonical strings.
pub(crate) fn strings(list: &Option<BTreeMap<String, Quantity>>) -> BTreeMap<String, String> {
    list.iter().flatten().map(|(k, q)| (k.clone(), q.0.clone())).collect()
}

/// `[(name, value)]` as a string map (for comparing with [`strings`]).
pub(crate) fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// The documents of a KubeRay sample file, as JSON.
pub(crate) fn sample_documents(name: &str) -> Vec<Value> {
    let text = kuberay_reference::sample_text(name);
    ray_api::yaml::from_yaml_documents::<Value>(&text).unwrap()
}

/// The first document of `kind` in a sample file, typed.
pub(crate) fn sample<T: serde::de::DeserializeOwned>(name: &str, kind: &str) -> T {
    let doc = sample_documents(name)
        .into_iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {name}"));
    serde_json::from_value(doc).unwrap()
}
