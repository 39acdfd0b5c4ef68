//! What the EndpointSlice and Endpoints controllers read of a selected pod, decoded straight from the stored
//! JSON.
//!
//! Every change of a selected pod (creation, binding, each kubelet status write) is read here, and a pod
//! document is mostly what the controllers never read (environment, probes, volumes, resources). Decoding each
//! whole into a `serde_json::Value` (and the Service each time) was over a third of the controllers' CPU with a
//! head Service per RayCluster; this reads only the fields they use into a small document of the same shape, so
//! the controllers' readers are unchanged, and a change that leaves those fields alone reads the same.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::pod_facts::{ObjectOnly, PodParts};
use crate::store::StoredObject;

/// The fields of `pod` the EndpointSlice and Endpoints controllers read, as a document of the pod's own shape
/// (`metadata.deletionTimestamp`; `spec.nodeName`, `hostname`, `subdomain` and each container's `ports`;
/// `status.phase`, `podIP`, and of `conditions` only whether the pod is Ready, as one `Ready` condition). Two
/// versions of a pod that read alike then compare equal, whatever else changed (a condition's timestamps, a
/// container's state). A document that does not have the expected shape is decoded whole instead, so it reads
/// exactly as before (and two such versions compare equal only when the whole documents do).
pub(super) fn endpoint_fields(pod: &StoredObject) -> Value {
    match serde_json::from_slice::<ObjectOnly<PodView>>(&pod.json) {
        Ok(view) => into_document(view.0),
        Err(_) => pod.value(),
    }
}

/// The parts of a pod document the controllers read.
type PodView = PodParts<MetaView, SpecView, StatusView>;

/// The read part of `metadata`. A null value reads as absent, as the controllers' readers treat it.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct MetaView {
    deletion_timestamp: Option<Value>,
}

/// The read parts of `spec`; the values are kept as they are, whatever their JSON type (a null reads as
/// absent), but `containers` must be a list of objects, or the pod is decoded whole.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SpecView {
    node_name: Option<Value>,
    hostname: Option<Value>,
    subdomain: Option<Value>,
    containers: Option<Vec<ObjectOnly<ContainerView>>>,
}

/// The read part of a container.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ContainerView {
    ports: Option<Value>,
}

/// The read parts of `status`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct StatusView {
    phase: Option<Value>,
    #[serde(rename = "podIP")]
    pod_ip: Option<Value>,
    conditions: Option<Value>,
}

/// The read fields as a pod document; absent and null fields are left out.
fn into_document(view: PodView) -> Value {
    let (metadata, spec, status) = (view.metadata.0, view.spec.0, view.status.0);
    let mut meta = Map::new();
    put(&mut meta, "deletionTimestamp", metadata.deletion_timestamp);
    let mut spec_doc = Map::new();
    put(&mut spec_doc, "nodeName", spec.node_name);
    put(&mut spec_doc, "hostname", spec.hostname);
    put(&mut spec_doc, "subdomain", spec.subdomain);
    if let Some(containers) = spec.containers {
        let containers = containers
            .into_iter()
            .map(|c| {
                let mut container = Map::new();
                put(&mut container, "ports", c.0.ports);
                Value::Object(container)
            })
            .collect();
        spec_doc.insert("containers".into(), Value::Array(containers));
    }
    let mut status_doc = Map::new();
    put(&mut status_doc, "phase", status.phase);
    put(&mut status_doc, "podIP", status.pod_ip);
    if status.conditions.as_ref().is_some_and(is_ready) {
        status_doc.insert("conditions".into(), json!([{"type": "Ready", "status": "True"}]));
    }
    let mut doc = Map::new();
    doc.insert("metadata".into(), Value::Object(meta));
    doc.insert("spec".into(), Value::Object(spec_doc));
    doc.insert("status".into(), Value::Object(status_doc));
    Value::Object(doc)
}

/// Whether a pod's `status.conditions` has a `Ready` condition with status `True` (as the controllers'
/// `condition_true` reads it).
fn is_ready(conditions: &Value) -> bool {
    conditions
        .as_array()
        .is_some_and(|all| all.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        map.insert(key.into(), value);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::endpoints::resolve_target_port;
    use super::super::{condition_true, is_terminal, is_terminating, node_name};
    use super::*;

    fn stored(pod: Value) -> std::sync::Arc<StoredObject> {
        StoredObject::new(pod, 7)
    }

    /// Everything the controllers read of a pod, read through their own readers.
    fn reads(pod: &Value) -> Value {
        let ports = [
            json!({"port": 80}),
            json!({"port": 80, "targetPort": 8265}),
            json!({"port": 80, "targetPort": "dashboard"}),
            json!({"port": 80, "targetPort": "gcs"}),
            json!({"port": 80, "targetPort": "6379"}),
        ];
        json!({
            "terminating": is_terminating(pod),
            "terminal": is_terminal(pod),
            "node": node_name(pod),
            "ready": condition_true(pod, "Ready"),
            "ip": pod["status"]["podIP"],
            "hostname": pod["spec"]["hostname"],
            "subdomain": pod["spec"]["subdomain"],
            "ports": ports.iter().map(|p| resolve_target_port(p, pod)).collect::<Vec<_>>(),
        })
    }

    /// The partial read gives the controllers' readers what the whole document does, over the shapes pods
    /// take, including fields of unexpected types and nulls.
    #[test]
    fn partial_read_matches_the_decoded_document() {
        let pods = [
            json!({"metadata": {"name": "a", "namespace": "ns"}}),
            json!({
                "metadata": {"name": "head", "namespace": "ns", "labels": {"app": "ray"},
                             "deletionTimestamp": "2026-12-07T00:00:00Z"},
                "spec": {"nodeName": "node-1", "hostname": "h", "subdomain": "head-svc",
                         "containers": [
                             {"name": "ray", "image": "ray", "env": [{"name": "A", "value": "1"}],
                              "ports": [{"name": "dashboard", "containerPort": 8265},
                                        {"name": "gcs", "containerPort": 6379}]},
                             {"name": "side"}]},
                "status": {"phase": "Running", "podIP": "10.0.0.7",
                           "conditions": [{"type": "Ready", "status": "True"}]},
            }),
            json!({
                "metadata": {"name": "b", "deletionTimestamp": null},
                "spec": {"nodeName": "", "hostname": 7, "containers": [{"ports": [{"name": "dashboard"}]}]},
                "status": {"phase": "Succeeded", "podIP": null, "conditions": [{"type": "Ready", "status": "False"}]},
            }),
            json!({"metadata": {"name": "c"}, "spec": {"nodeName": null, "containers": []}, "status": {"podIP": ""}}),
        ];
        for pod in pods {
            let object = stored(pod.clone());
            let partial = endpoint_fields(&object);
            // The partial read ran (a whole document would carry the name).
            assert_eq!(partial["metadata"].get("name"), None, "{pod}");
            assert_eq!(reads(&partial), reads(&object.value()), "{pod}");
        }
    }

    /// A document the partial read cannot take (a container that is not an object, `status` that is not an
    /// object) is decoded whole.
    #[test]
    fn unexpected_shapes_are_decoded_whole() {
        for pod in [
            json!({"metadata": {"name": "d"}, "spec": {"containers": ["not an object"]}}),
            json!({"metadata": {"name": "e"}, "spec": {"containers": {"ports": []}}}),
            json!({"metadata": {"name": "f"}, "status": "Running"}),
        ] {
            let object = stored(pod.clone());
            assert_eq!(endpoint_fields(&object), object.value(), "{pod}");
        }
    }

    /// Only the read fields are kept.
    #[test]
    fn the_rest_of_the_pod_is_left_out() {
        let object = stored(json!({
            "metadata": {"name": "g", "labels": {"app": "ray"}},
            "spec": {"nodeName": "n", "containers": [{"name": "ray", "env": [], "ports": [{"containerPort": 1}]}]},
            "status": {"podIP": "10.0.0.9", "hostIP": "10.1.0.1"},
        }));
        assert_eq!(
            endpoint_fields(&object),
            json!({"metadata": {}, "spec": {"nodeName": "n", "containers": [{"ports": [{"containerPort": 1}]}]},
                   "status": {"podIP": "10.0.0.9"}})
        );
    }
}
