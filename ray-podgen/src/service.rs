//! Head, serve and headless worker services, and the head and serve services a RayService owns
//! (docs/podgen.md#services-ingress-and-route).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ray_api::RayCluster;
use ray_api::constants::{
    APPLICATION_NAME, CLIENT_PORT_NAME, COMPONENT_NAME, CRD_KIND_RAY_CLUSTER, CRD_KIND_RAY_SERVICE,
    DASHBOARD_PORT_NAME, DEFAULT_CLIENT_PORT, DEFAULT_DASHBOARD_PORT, DEFAULT_GCS_SERVER_PORT, DEFAULT_METRICS_PORT,
    DEFAULT_SERVICE_APP_PROTOCOL, DEFAULT_SERVING_PORT, GCS_SERVER_PORT_NAME, KUBERNETES_APPLICATION_NAME_LABEL,
    KUBERNETES_CREATED_BY_LABEL, METRICS_PORT_NAME, NODE_TYPE_HEAD, NODE_TYPE_WORKER,
    RAY_CLUSTER_HEADLESS_SERVICE_LABEL, RAY_CLUSTER_LABEL, RAY_CLUSTER_SERVING_SERVICE_LABEL, RAY_ID_LABEL,
    RAY_NODE_TYPE_LABEL, RAY_ORIGINATED_FROM_CR_NAME_LABEL, RAY_ORIGINATED_FROM_CRD_LABEL, SERVING_PORT_NAME,
};

use crate::cluster::{cluster_name, cluster_namespace, head_service_name};
use crate::config::PodGenConfig;
use crate::error::PodGenError;
use crate::names::{
    check_label, default_head_service_name, headless_service_name, identifier, serve_service_label, serve_service_name,
};

/// Service type that is made headless by default.
pub const CLUSTER_IP_SERVICE_TYPE: &str = "ClusterIP";
/// `clusterIP` of a headless service.
pub const HEADLESS_CLUSTER_IP: &str = "None";

/// The Ray container (`containers[0]`) of the head template.
fn head_container(cluster: &RayCluster) -> Option<&Container> {
    cluster
        .spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
}

/// `getServicePorts`: head container ports by name (unnamed → `<port>-port`, last duplicate
/// wins), the five defaults when none, and `metrics: 8080` when missing.
pub fn service_ports(cluster: &RayCluster) -> BTreeMap<String, i32> {
    let mut ports: BTreeMap<String, i32> = BTreeMap::new();
    for port in head_container(cluster)
        .and_then(|c| c.ports.as_ref())
        .into_iter()
        .flatten()
    {
        let name = match port.name.as_deref() {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => format!("{}-port", port.container_port),
        };
        ports.insert(name, port.container_port);
    }
    if ports.is_empty() {
        ports.extend([
            (CLIENT_PORT_NAME.to_owned(), DEFAULT_CLIENT_PORT),
            (GCS_SERVER_PORT_NAME.to_owned(), DEFAULT_GCS_SERVER_PORT),
            (DASHBOARD_PORT_NAME.to_owned(), DEFAULT_DASHBOARD_PORT),
            (METRICS_PORT_NAME.to_owned(), DEFAULT_METRICS_PORT),
            (SERVING_PORT_NAME.to_owned(), DEFAULT_SERVING_PORT),
        ]);
    }
    ports
        .entry(METRICS_PORT_NAME.to_owned())
        .or_insert(DEFAULT_METRICS_PORT);
    ports
}

/// `isServingPort`: `serve` or a `serve-` prefix.
pub fn is_serving_port(name: &str) -> bool {
    name == SERVING_PORT_NAME || name.starts_with("serve-")
}

/// The dashboard port of the head service (`dashboard` entry, else 8265).
pub fn dashboard_port(cluster: &RayCluster) -> i32 {
    service_ports(cluster)
        .get(DASHBOARD_PORT_NAME)
        .copied()
        .unwrap_or(DEFAULT_DASHBOARD_PORT)
}

fn service_port(name: &str, port: i32, app_protocol: Option<&str>) -> ServicePort {
    ServicePort {
        name: Some(name.to_owned()),
        port,
        app_protocol: app_protocol.map(str::to_owned),
        ..ServicePort::default()
    }
}

fn non_empty(value: Option<&String>) -> Option<&str> {
    value.map(String::as_str).filter(|v| !v.is_empty())
}

/// The five head-service selector labels, with values taken from `labels` where present.
pub fn head_selector(cluster: &RayCluster, labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let name = cluster_name(cluster);
    let mut selector = BTreeMap::from([
        (RAY_CLUSTER_LABEL.to_owned(), name.to_owned()),
        (RAY_NODE_TYPE_LABEL.to_owned(), NODE_TYPE_HEAD.to_owned()),
        (RAY_ID_LABEL.to_owned(), check_label(&identifier(name, NODE_TYPE_HEAD))),
        (
            KUBERNETES_APPLICATION_NAME_LABEL.to_owned(),
            APPLICATION_NAME.to_owned(),
        ),
        (KUBERNETES_CREATED_BY_LABEL.to_owned(), COMPONENT_NAME.to_owned()),
    ]);
    for (key, value) in selector.iter_mut() {
        if let Some(given) = labels.get(key) {
            value.clone_from(given);
        }
    }
    selector
}

/// `BuildServiceForHeadPod(cluster, labels, annotations)`.
pub fn build_service_for_head_pod(
    cluster: &RayCluster,
    labels: &BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    config: &PodGenConfig,
) -> Result<Service, PodGenError> {
    let head = &cluster.spec.head_group_spec;
    let selector = head_selector(cluster, labels);
    let ports = service_ports(cluster);
    let generated: Vec<ServicePort> = ports
        .iter()
        .map(|(name, port)| service_port(name, *port, Some(DEFAULT_SERVICE_APP_PROTOCOL)))
        .collect();
    let default_type = non_empty(head.service_type.as_ref()).map(str::to_owned);
    let namespace = cluster_namespace(cluster).to_owned();
    let service = match &head.head_service {
        Some(user) => {
            let mut service = user.object.clone();
            let mut spec = service.spec.take().unwrap_or_default();
            spec.selector = Some(selector.clone());
            let mut merged_annotations = service.metadata.annotations.take().unwrap_or_default();
            merged_annotations.extend(annotations);
            service.metadata.annotations = Some(merged_annotations);
            spec.ports.get_or_insert_with(Vec::new).extend(generated);
            let mut merged_labels = service.metadata.labels.take().unwrap_or_default();
            merged_labels.extend(selector);
            service.metadata.labels = Some(merged_labels);
            if non_empty(service.metadata.name.as_ref()).is_none() {
                service.metadata.name = Some(default_head_service_name(cluster_name(cluster)));
            }
            service.metadata.namespace = Some(namespace);
            if non_empty(spec.type_.as_ref()).is_none() {
                spec.type_ = default_type;
            }
            service.spec = Some(spec);
            service
        }
        None => {
            let headless =
                !config.head_cluster_ip_service && default_type.as_deref().is_none_or(|t| t == CLUSTER_IP_SERVICE_TYPE);
            Service {
                metadata: ObjectMeta {
                    name: Some(head_service_name(cluster)),
                    namespace: Some(namespace),
                    labels: Some(selector.clone()),
                    annotations: Some(annotations),
                    ..ObjectMeta::default()
                },
                spec: Some(ServiceSpec {
                    selector: Some(selector),
                    ports: Some(generated),
                    type_: default_type,
                    cluster_ip: headless.then(|| HEADLESS_CLUSTER_IP.to_owned()),
                    publish_not_ready_addresses: headless.then_some(true),
                    ..ServiceSpec::default()
                }),
                status: None,
            }
        }
    };
    if service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .is_none_or(Vec::is_empty)
    {
        return Err(PodGenError::NoHeadServicePorts);
    }
    Ok(service)
}

/// The head service the RayCluster controller creates: labels = the head template's
/// `app.kubernetes.io/name` if set, annotations = `spec.headServiceAnnotations`.
pub fn build_head_service(cluster: &RayCluster, config: &PodGenConfig) -> Result<Service, PodGenError> {
    let mut labels = BTreeMap::new();
    if let Some(app) = cluster
        .spec
        .head_group_spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref())
        .and_then(|l| l.get(KUBERNETES_APPLICATION_NAME_LABEL))
    {
        labels.insert(KUBERNETES_APPLICATION_NAME_LABEL.to_owned(), app.clone());
    }
    let annotations = cluster.spec.head_service_annotations.clone().unwrap_or_default();
    build_service_for_head_pod(cluster, &labels, annotations, config)
}

/// The head service a RayService owns (`<rayservice>-head-svc`), pointing at `cluster`.
pub fn build_rayservice_head_service(
    rayservice_name: &str,
    rayservice_namespace: &str,
    cluster: &RayCluster,
    config: &PodGenConfig,
) -> Result<Service, PodGenError> {
    let mut service = build_head_service(cluster, config)?;
    service.metadata.name = Some(default_head_service_name(rayservice_name));
    service.metadata.namespace = Some(rayservice_namespace.to_owned());
    service.metadata.labels = Some(BTreeMap::from([
        (RAY_ORIGINATED_FROM_CR_NAME_LABEL.to_owned(), rayservice_name.to_owned()),
        (
            RAY_ORIGINATED_FROM_CRD_LABEL.to_owned(),
            CRD_KIND_RAY_SERVICE.to_owned(),
        ),
        (RAY_NODE_TYPE_LABEL.to_owned(), NODE_TYPE_HEAD.to_owned()),
        (
            RAY_ID_LABEL.to_owned(),
            check_label(&identifier(rayservice_name, NODE_TYPE_HEAD)),
        ),
    ]));
    Ok(service)
}

/// Who a serve service is built for.
#[derive(Clone, Copy, Debug)]
pub enum ServeServiceOwner<'a> {
    /// The RayCluster itself (annotation `ray.io/enable-serve-service: "true"`).
    RayCluster,
    /// A RayService.
    RayService {
        /// RayService name.
        name: &'a str,
        /// RayService namespace.
        namespace: &'a str,
        /// `spec.serveService`, if any.
        custom: Option<&'a Service>,
        /// `spec.rayClusterConfig.headGroupSpec.serviceType`.
        service_type: Option<&'a str>,
    },
}

/// `BuildServeService`: the service selecting serving pods, with the head's serving ports.
pub fn build_serve_service(cluster: &RayCluster, owner: ServeServiceOwner<'_>) -> Result<Service, PodGenError> {
    let detected: Vec<ServicePort> = service_ports(cluster)
        .iter()
        .filter(|(name, _)| is_serving_port(name))
        .map(|(name, port)| service_port(name, *port, None))
        .collect();
    let (base_name, namespace, kind, custom, service_type) = match owner {
        ServeServiceOwner::RayCluster => (
            cluster_name(cluster),
            cluster_namespace(cluster),
            CRD_KIND_RAY_CLUSTER,
            None,
            non_empty(cluster.spec.head_group_spec.service_type.as_ref()),
        ),
        ServeServiceOwner::RayService {
            name,
            namespace,
            custom,
            service_type,
        } => (
            name,
            namespace,
            CRD_KIND_RAY_SERVICE,
            custom,
            service_type.filter(|t| !t.is_empty()),
        ),
    };
    let labels = BTreeMap::from([
        (RAY_ORIGINATED_FROM_CR_NAME_LABEL.to_owned(), base_name.to_owned()),
        (RAY_ORIGINATED_FROM_CRD_LABEL.to_owned(), kind.to_owned()),
        (
            RAY_CLUSTER_SERVING_SERVICE_LABEL.to_owned(),
            serve_service_label(base_name),
        ),
    ]);
    let mut selector = BTreeMap::from([(RAY_CLUSTER_LABEL.to_owned(), cluster_name(cluster).to_owned())]);
    if kind == CRD_KIND_RAY_SERVICE {
        selector.insert(RAY_CLUSTER_SERVING_SERVICE_LABEL.to_owned(), "true".to_owned());
    }
    if let Some(user) = custom {
        let mut service = user.clone();
        let mut spec = service.spec.take().unwrap_or_default();
        spec.selector = Some(selector);
        service.metadata.annotations.get_or_insert_with(BTreeMap::new);
        if !detected.is_empty() {
            let user_ports = spec.ports.take().unwrap_or_default();
            spec.ports = Some(
                detected
                    .into_iter()
                    .map(|port| user_ports.iter().find(|u| u.name == port.name).cloned().unwrap_or(port))
                    .collect(),
            );
        }
        let mut merged_labels = service.metadata.labels.take().unwrap_or_default();
        merged_labels.extend(labels);
        service.metadata.labels = Some(merged_labels);
        if non_empty(service.metadata.name.as_ref()).is_none() {
            service.metadata.name = Some(serve_service_name(base_name));
        }
        service.metadata.namespace = Some(namespace.to_owned());
        if non_empty(spec.type_.as_ref()).is_none() {
            spec.type_ = service_type.map(str::to_owned);
        }
        service.spec = Some(spec);
        return Ok(service);
    }
    if detected.is_empty() {
        return Err(PodGenError::NoServePort);
    }
    Ok(Service {
        metadata: ObjectMeta {
            name: Some(serve_service_name(base_name)),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(selector),
            ports: Some(detected),
            type_: service_type.map(str::to_owned),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// Whether a worker group runs several hosts per replica (a headless service is needed).
pub fn needs_headless_service(cluster: &RayCluster) -> bool {
    cluster
        .spec
        .worker_group_specs
        .iter()
        .flatten()
        .any(|g| g.num_of_hosts.unwrap_or(1) > 1)
}

/// `BuildHeadlessServiceForRayCluster`: `<cluster>-headless` over the worker pods.
pub fn build_headless_service(cluster: &RayCluster) -> Service {
    let name = cluster_name(cluster);
    Service {
        metadata: ObjectMeta {
            name: Some(headless_service_name(name)),
            namespace: Some(cluster_namespace(cluster).to_owned()),
            labels: Some(BTreeMap::from([(
                RAY_CLUSTER_HEADLESS_SERVICE_LABEL.to_owned(),
                name.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(BTreeMap::from([
                (RAY_CLUSTER_LABEL.to_owned(), name.to_owned()),
                (RAY_NODE_TYPE_LABEL.to_owned(), NODE_TYPE_WORKER.to_owned()),
            ])),
            cluster_ip: Some(HEADLESS_CLUSTER_IP.to_owned()),
            type_: Some(CLUSTER_IP_SERVICE_TYPE.to_owned()),
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}
