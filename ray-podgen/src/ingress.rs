//! The dashboard Ingress (docs/podgen.md#services-ingress-and-route); on OpenShift [`crate::route`] replaces it.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule, IngressServiceBackend, IngressSpec,
    ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ray_api::RayCluster;
use ray_api::constants::{
    APPLICATION_NAME, COMPONENT_NAME, KUBERNETES_APPLICATION_NAME_LABEL, KUBERNETES_CREATED_BY_LABEL, NODE_TYPE_HEAD,
    RAY_CLUSTER_LABEL, RAY_ID_LABEL,
};

use crate::cluster::{cluster_name, cluster_namespace, head_service_name};
use crate::names::{check_label, check_name, identifier, ingress_name};
use crate::service::dashboard_port;

/// Annotation naming the ingress class (moved into `spec.ingressClassName`).
pub const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
/// Default ingress path.
pub const DEFAULT_INGRESS_PATH: &str = "/";
/// Default ingress path type.
pub const DEFAULT_INGRESS_PATH_TYPE: &str = "Prefix";

/// Whether the cluster asks for a dashboard Ingress (`headGroupSpec.enableIngress`).
pub fn ingress_enabled(cluster: &RayCluster) -> bool {
    cluster.spec.head_group_spec.enable_ingress == Some(true)
}

/// The four labels of the dashboard Ingress and of the OpenShift Route that replaces it:
/// `ray.io/cluster`, `ray.io/identifier=CheckLabel(<cluster>-head)`, `app.kubernetes.io/name`,
/// `app.kubernetes.io/created-by`.
pub fn dashboard_network_labels(cluster: &RayCluster) -> BTreeMap<String, String> {
    let name = cluster_name(cluster);
    BTreeMap::from([
        (RAY_CLUSTER_LABEL.to_owned(), name.to_owned()),
        (RAY_ID_LABEL.to_owned(), check_label(&identifier(name, NODE_TYPE_HEAD))),
        (
            KUBERNETES_APPLICATION_NAME_LABEL.to_owned(),
            APPLICATION_NAME.to_owned(),
        ),
        (KUBERNETES_CREATED_BY_LABEL.to_owned(), COMPONENT_NAME.to_owned()),
    ])
}

/// `BuildIngressForHeadService`.
pub fn build_ingress(cluster: &RayCluster) -> Ingress {
    let name = cluster_name(cluster);
    let mut annotations = cluster.metadata.annotations.clone().unwrap_or_default();
    let class = annotations.remove(INGRESS_CLASS_ANNOTATION);
    let options = cluster.spec.head_group_spec.ingress_options.as_ref();
    let labels = dashboard_network_labels(cluster);
    let path = HTTPIngressPath {
        path: Some(
            options
                .and_then(|o| o.path.clone())
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| DEFAULT_INGRESS_PATH.to_owned()),
        ),
        path_type: options
            .and_then(|o| o.path_type.as_ref())
            .map_or(DEFAULT_INGRESS_PATH_TYPE, |t| t.as_str())
            .to_owned(),
        backend: IngressBackend {
            service: Some(IngressServiceBackend {
                name: head_service_name(cluster),
                port: Some(ServiceBackendPort {
                    number: Some(dashboard_port(cluster)),
                    name: None,
                }),
            }),
            resource: None,
        },
    };
    Ingress {
        metadata: ObjectMeta {
            name: Some(check_name(&ingress_name(name))),
            namespace: Some(cluster_namespace(cluster).to_owned()),
            labels: Some(labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(IngressSpec {
            ingress_class_name: class,
            rules: Some(vec![IngressRule {
                host: options.and_then(|o| o.host.clone()).filter(|h| !h.is_empty()),
                http: Some(HTTPIngressRuleValue { paths: vec![path] }),
            }]),
            tls: options.and_then(|o| o.tls.clone()).filter(|t| !t.is_empty()),
            ..IngressSpec::default()
        }),
        status: None,
    }
}
