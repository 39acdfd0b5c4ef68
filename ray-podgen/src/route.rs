//! The dashboard Route on OpenShift (docs/operator.md#openshift): what `headGroupSpec.enableIngress` builds
//! instead of the Ingress when the operator runs on OpenShift.
//!
//! `route.openshift.io/v1` has no k8s-openapi type, so [`Route`] is a small typed custom resource
//! holding only the fields the operator writes; fields OpenShift adds (`spec.host`, `status`) are
//! ignored when a Route is read back.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use ray_api::RayCluster;
use serde::{Deserialize, Serialize};

use crate::cluster::{cluster_name, cluster_namespace, head_service_name};
use crate::ingress::dashboard_network_labels;
use crate::names::route_name;
use crate::service::dashboard_port;

/// API group of OpenShift Routes.
pub const ROUTE_GROUP: &str = "route.openshift.io";
/// Kind of the object a dashboard Route sends traffic to.
pub const ROUTE_TARGET_KIND_SERVICE: &str = "Service";
/// Share of the traffic going to the head service (all of it).
pub const ROUTE_TARGET_WEIGHT: i32 = 100;
/// `spec.wildcardPolicy` of the dashboard Route: no wildcard host.
pub const ROUTE_WILDCARD_POLICY_NONE: &str = "None";

/// Spec of an OpenShift Route (the fields KubeRay sets, with Go's `omitempty`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "route.openshift.io",
    version = "v1",
    kind = "Route",
    plural = "routes",
    namespaced,
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct RouteSpec {
    /// The backend the Route sends traffic to.
    #[serde(default)]
    pub to: RouteTargetReference,
    /// Which port of the backend receives the traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<RoutePort>,
    /// `None` or `Subdomain`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub wildcard_policy: String,
}

/// `spec.to` of a Route.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteTargetReference {
    /// Kind of the backend (`Service`).
    #[serde(default)]
    pub kind: String,
    /// Name of the backend.
    #[serde(default)]
    pub name: String,
    /// Relative share of the traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

/// `spec.port` of a Route.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutePort {
    /// Port number or name on the backend.
    pub target_port: IntOrString,
}

/// `BuildRouteForHeadService`: the dashboard Route of a cluster (without its owner reference).
///
/// Named `<cluster>-head-route` with no truncation (no `CheckName`, unlike the Ingress); labelled like the Ingress;
/// carries every cluster annotation (the Ingress drops `kubernetes.io/ingress.class`, the Route keeps it).
pub fn build_route(cluster: &RayCluster) -> Route {
    let annotations = cluster.metadata.annotations.clone().unwrap_or_default();
    let mut route = Route::new(
        &route_name(cluster_name(cluster)),
        RouteSpec {
            to: RouteTargetReference {
                kind: ROUTE_TARGET_KIND_SERVICE.to_owned(),
                name: head_service_name(cluster),
                weight: Some(ROUTE_TARGET_WEIGHT),
            },
            port: Some(RoutePort {
                target_port: IntOrString::Int(dashboard_port(cluster)),
            }),
            wildcard_policy: ROUTE_WILDCARD_POLICY_NONE.to_owned(),
        },
    );
    route.metadata.namespace = Some(cluster_namespace(cluster).to_owned());
    route.metadata.labels = Some(dashboard_network_labels(cluster));
    route.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    route
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::cluster_s;
    use kube::Resource;
    use serde_json::json;
    use std::collections::BTreeMap;

    /// KubeRay `route_test.go` `TestBuildRouteForHeadService`: a cluster with the ingress-class
    /// annotation and no dashboard port on its head container.
    fn route_test_cluster() -> RayCluster {
        let mut cluster = cluster_s();
        cluster.metadata.annotations = Some(BTreeMap::from([(
            "kubernetes.io/ingress.class".to_owned(),
            "nginx".to_owned(),
        )]));
        cluster.spec.head_group_spec.enable_ingress = Some(true);
        for container in &mut cluster
            .spec
            .head_group_spec
            .template
            .spec
            .get_or_insert_default()
            .containers
        {
            container.ports = None;
        }
        cluster
    }

    #[test]
    fn route_test_name_target_service_and_default_dashboard_port() {
        let route = build_route(&route_test_cluster());
        assert_eq!(route.metadata.name.as_deref(), Some("raycluster-sample-head-route"));
        assert_eq!(route.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(route.spec.to.kind, "Service");
        assert_eq!(route.spec.to.name, "raycluster-sample-head-svc");
        assert_eq!(route.spec.to.weight, Some(100));
        assert_eq!(
            route.spec.port.as_ref().map(|p| &p.target_port),
            Some(&IntOrString::Int(8265))
        );
        assert_eq!(route.spec.wildcard_policy, "None");
    }

    #[test]
    fn route_keeps_every_annotation_including_the_ingress_class() {
        let route = build_route(&route_test_cluster());
        assert_eq!(
            route.metadata.annotations,
            Some(BTreeMap::from([(
                "kubernetes.io/ingress.class".to_owned(),
                "nginx".to_owned()
            )]))
        );
        let mut plain = route_test_cluster();
        plain.metadata.annotations = None;
        assert_eq!(build_route(&plain).metadata.annotations, None);
    }

    #[test]
    fn route_has_the_ingress_labels() {
        let route = build_route(&route_test_cluster());
        assert_eq!(
            route.metadata.labels,
            Some(BTreeMap::from([
                ("ray.io/cluster".to_owned(), "raycluster-sample".to_owned()),
                ("ray.io/identifier".to_owned(), "raycluster-sample-head".to_owned()),
                ("app.kubernetes.io/name".to_owned(), "kuberay".to_owned()),
                ("app.kubernetes.io/created-by".to_owned(), "kuberay-operator".to_owned()),
            ]))
        );
        assert_eq!(
            route.metadata.labels,
            crate::ingress::build_ingress(&route_test_cluster()).metadata.labels
        );
    }

    #[test]
    fn route_port_follows_the_dashboard_container_port_and_user_head_service_name() {
        let mut cluster = route_test_cluster();
        cluster
            .spec
            .head_group_spec
            .template
            .spec
            .get_or_insert_default()
            .containers[0]
            .ports = Some(vec![k8s_openapi::api::core::v1::ContainerPort {
            name: Some("dashboard".to_owned()),
            container_port: 9999,
            ..Default::default()
        }]);
        cluster.spec.head_group_spec.head_service = Some(
            serde_json::from_value(json!({
                "metadata": {"name": "custom-head"}
            }))
            .unwrap(),
        );
        let route = build_route(&cluster);
        assert_eq!(
            route.spec.port.as_ref().map(|p| &p.target_port),
            Some(&IntOrString::Int(9999))
        );
        assert_eq!(route.spec.to.name, "custom-head");
    }

    #[test]
    fn long_cluster_names_are_not_truncated() {
        // The Route name is `<cluster>-head-route` with no CheckName / CheckRouteName.
        let mut cluster = route_test_cluster();
        let name = "r".repeat(53);
        cluster.metadata.name = Some(name.clone());
        assert_eq!(build_route(&cluster).metadata.name, Some(format!("{name}-head-route")));
    }

    #[test]
    fn route_serializes_as_openshift_route_v1() {
        let route = build_route(&route_test_cluster());
        assert_eq!(Route::group(&()), ROUTE_GROUP);
        assert_eq!(Route::plural(&()), "routes");
        let value = serde_json::to_value(&route).unwrap();
        assert_eq!(value["apiVersion"], "route.openshift.io/v1");
        assert_eq!(value["kind"], "Route");
        assert_eq!(
            value["spec"],
            json!({
                "to": {"kind": "Service", "name": "raycluster-sample-head-svc", "weight": 100},
                "port": {"targetPort": 8265},
                "wildcardPolicy": "None"
            })
        );
        // What OpenShift adds on read-back (host, status) does not break decoding.
        let mut live = value.clone();
        live["spec"]["host"] = json!("raycluster-sample-head-route-default.apps.example.com");
        live["status"] = json!({"ingress": [{"host": "x"}]});
        let decoded: Route = serde_json::from_value(live).unwrap();
        assert_eq!(decoded.spec, route.spec);
    }
}
