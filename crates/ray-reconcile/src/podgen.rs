//! The one place the controller asks for the objects it creates (head/worker pods, services).
//!
//! TEMPORARY: `ray_podgen`'s builders are being written; until they exist this module builds
//! minimal KubeRay-shaped objects (labels, names, owner reference, the user's template). Swapping
//! to `ray_podgen` only touches this file.

use k8s_openapi::api::core::v1::{Pod, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};
use ray_api::constants::*;
use ray_api::{RayCluster, WorkerGroupSpec};
use std::collections::BTreeMap;

/// Labels that place a new worker pod in a multi-host replica.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerPlacement {
    /// `ray.io/worker-group-replica-index`.
    pub replica_index: Option<i32>,
    /// `ray.io/worker-group-replica-name`.
    pub replica_name: Option<String>,
    /// `ray.io/replica-host-index`.
    pub host_index: Option<i32>,
}

/// Operator switches that change generated objects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodGenSettings {
    /// `ENABLE_DETERMINISTIC_HEAD_POD_NAME`.
    pub deterministic_head_pod_name: bool,
    /// `ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE`.
    pub head_cluster_ip_service: bool,
}

fn owner_reference(cluster: &RayCluster) -> OwnerReference {
    OwnerReference {
        api_version: RayCluster::api_version(&()).into_owned(),
        kind: RayCluster::kind(&()).into_owned(),
        name: cluster.name_any(),
        uid: cluster.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// KubeRay's `CheckLabel`: keep the last 63 chars; a leading punctuation char becomes `r`.
fn check_label(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    let kept: String = chars[chars.len().saturating_sub(63)..].iter().collect();
    match kept.chars().next() {
        Some(c) if c.is_ascii_punctuation() => format!("r{}", &kept[1..]),
        _ => kept,
    }
}

/// KubeRay's `PodName(prefix, type, generate)`.
fn pod_name(prefix: &str, node_type: &str, generate: bool) -> String {
    let cut: String = prefix.chars().take(50).collect();
    let name = format!("{cut}-{node_type}{}", if generate { "-" } else { "" });
    name.to_lowercase()
}

fn base_labels(cluster: &RayCluster, node_type: &str, group: &str) -> BTreeMap<String, String> {
    let name = cluster.name_any();
    BTreeMap::from([
        (RAY_CLUSTER_LABEL.to_owned(), name.clone()),
        (RAY_NODE_TYPE_LABEL.to_owned(), node_type.to_owned()),
        (RAY_NODE_GROUP_LABEL.to_owned(), group.to_owned()),
        (RAY_ID_LABEL.to_owned(), check_label(&format!("{name}-{node_type}"))),
        (RAY_IS_RAY_NODE_LABEL.to_owned(), RAY_IS_RAY_NODE_VALUE.to_owned()),
        (
            KUBERNETES_APPLICATION_NAME_LABEL.to_owned(),
            APPLICATION_NAME.to_owned(),
        ),
        (KUBERNETES_CREATED_BY_LABEL.to_owned(), COMPONENT_NAME.to_owned()),
    ])
}

fn pod_from_template(
    cluster: &RayCluster,
    template: &k8s_openapi::api::core::v1::PodTemplateSpec,
    labels: BTreeMap<String, String>,
    name: Option<String>,
    generate_name: Option<String>,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    let mut all_labels = meta.labels.unwrap_or_default();
    all_labels.extend(labels);
    Pod {
        metadata: ObjectMeta {
            name,
            generate_name,
            namespace: cluster.namespace(),
            labels: Some(all_labels),
            annotations: meta.annotations,
            owner_references: Some(vec![owner_reference(cluster)]),
            ..ObjectMeta::default()
        },
        spec: Some(template.spec.clone().unwrap_or_default()),
        status: None,
    }
}

/// The head pod to create.
pub fn head_pod(cluster: &RayCluster, settings: &PodGenSettings) -> Pod {
    let name = cluster.name_any();
    let generated = pod_name(&name, NODE_TYPE_HEAD, !settings.deterministic_head_pod_name);
    let (n, g) = if settings.deterministic_head_pod_name {
        (Some(generated), None)
    } else {
        (None, Some(generated))
    };
    let mut pod = pod_from_template(
        cluster,
        &cluster.spec.head_group_spec.template,
        base_labels(cluster, NODE_TYPE_HEAD, HEAD_GROUP_NAME),
        n,
        g,
    );
    pod.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(KUBERAY_VERSION_ANNOTATION.to_owned(), KUBERAY_VERSION.to_owned());
    pod
}

/// A worker pod of `group` to create.
pub fn worker_pod(cluster: &RayCluster, group: &WorkerGroupSpec, placement: &WorkerPlacement) -> Pod {
    let mut labels = base_labels(cluster, NODE_TYPE_WORKER, &group.group_name);
    if let Some(i) = placement.replica_index {
        labels.insert(RAY_WORKER_REPLICA_INDEX_LABEL.to_owned(), i.to_string());
    }
    if let Some(n) = &placement.replica_name {
        labels.insert(RAY_WORKER_REPLICA_NAME_LABEL.to_owned(), n.clone());
    }
    if let Some(h) = placement.host_index {
        labels.insert(RAY_HOST_INDEX_LABEL.to_owned(), h.to_string());
    }
    let prefix = format!("{}-{}", cluster.name_any(), group.group_name);
    pod_from_template(
        cluster,
        &group.template,
        labels,
        None,
        Some(pod_name(&prefix, NODE_TYPE_WORKER, true)),
    )
}

/// The head service to create.
pub fn head_service(cluster: &RayCluster, settings: &PodGenSettings) -> Service {
    let name = cluster.name_any();
    let mut labels = base_labels(cluster, NODE_TYPE_HEAD, HEAD_GROUP_NAME);
    labels.remove(RAY_NODE_GROUP_LABEL);
    labels.remove(RAY_IS_RAY_NODE_LABEL);
    let selector = BTreeMap::from([
        (RAY_CLUSTER_LABEL.to_owned(), name.clone()),
        (RAY_NODE_TYPE_LABEL.to_owned(), NODE_TYPE_HEAD.to_owned()),
    ]);
    let container_ports = cluster
        .spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.containers.get(RAY_CONTAINER_INDEX))
        .and_then(|c| c.ports.clone())
        .unwrap_or_default();
    let mut ports: BTreeMap<String, i32> = container_ports
        .iter()
        .map(|p| {
            (
                p.name.clone().unwrap_or_else(|| format!("{}-port", p.container_port)),
                p.container_port,
            )
        })
        .collect();
    if ports.is_empty() {
        for (n, p) in [
            (CLIENT_PORT_NAME, DEFAULT_CLIENT_PORT),
            (GCS_SERVER_PORT_NAME, DEFAULT_GCS_SERVER_PORT),
            (DASHBOARD_PORT_NAME, DEFAULT_DASHBOARD_PORT),
            (SERVING_PORT_NAME, DEFAULT_SERVING_PORT),
        ] {
            ports.insert(n.to_owned(), p);
        }
    }
    ports
        .entry(METRICS_PORT_NAME.to_owned())
        .or_insert(DEFAULT_METRICS_PORT);
    let service_type = cluster
        .spec
        .head_group_spec
        .service_type
        .clone()
        .filter(|t| !t.is_empty());
    let headless = matches!(service_type.as_deref(), None | Some("ClusterIP")) && !settings.head_cluster_ip_service;
    let svc_name = cluster
        .spec
        .head_group_spec
        .head_service
        .as_ref()
        .and_then(|s| s.metadata.name.clone())
        .unwrap_or_else(|| format!("{name}-head-svc"));
    Service {
        metadata: ObjectMeta {
            name: Some(svc_name),
            namespace: cluster.namespace(),
            labels: Some(labels),
            annotations: cluster.spec.head_service_annotations.clone(),
            owner_references: Some(vec![owner_reference(cluster)]),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(selector),
            type_: service_type,
            cluster_ip: headless.then(|| "None".to_owned()),
            publish_not_ready_addresses: headless.then_some(true),
            ports: Some(
                ports
                    .into_iter()
                    .map(|(n, p)| ServicePort {
                        name: Some(n),
                        port: p,
                        app_protocol: Some(DEFAULT_SERVICE_APP_PROTOCOL.to_owned()),
                        ..ServicePort::default()
                    })
                    .collect(),
            ),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}
