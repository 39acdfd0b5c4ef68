//! The Gateway API objects of an incremental upgrade (see `docs/rayservice.md`): the RayService's
//! `<rs>-gateway` Gateway and `<rs>-httproute` HTTPRoute splitting traffic between the per-cluster
//! serve services of the active and pending clusters.
//!
//! `gateway.networking.k8s.io/v1` has no k8s-openapi type, so [`Gateway`] and [`HTTPRoute`] are
//! small typed custom resources holding only the fields the operator writes; fields a Gateway
//! controller adds (`status`, defaults) are ignored when they are read back.

use kube::CustomResource;
use ray_api::RayService;
use ray_podgen::names::{gateway_name, http_route_name, serve_service_name};
use serde::{Deserialize, Serialize};

use super::incremental::{IncrementalError, TrafficWeights};

/// API group of the Gateway API.
pub const GATEWAY_API_GROUP: &str = "gateway.networking.k8s.io";
/// Name of the Gateway's only listener (KubeRay's `GatewayListenerPortName`).
pub const GATEWAY_LISTENER_NAME: &str = "http";
/// Protocol of the Gateway's listener.
pub const GATEWAY_LISTENER_PROTOCOL: &str = "HTTP";
/// Port of the Gateway's listener (KubeRay's `DefaultGatewayListenerPort`).
pub const GATEWAY_LISTENER_PORT: i32 = 80;
/// Path match type of the HTTPRoute's only rule.
pub const ROUTE_PATH_MATCH_TYPE: &str = "PathPrefix";
/// Path the HTTPRoute matches (everything).
pub const ROUTE_PATH_PREFIX: &str = "/";

/// Spec of a Gateway (the fields KubeRay sets).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "gateway.networking.k8s.io",
    version = "v1",
    kind = "Gateway",
    plural = "gateways",
    namespaced,
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    /// The GatewayClass implementing this Gateway (`clusterUpgradeOptions.gatewayClassName`).
    #[serde(default)]
    pub gateway_class_name: String,
    /// Where the Gateway accepts traffic.
    #[serde(default)]
    pub listeners: Vec<Listener>,
}

/// One listener of a Gateway.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listener {
    /// Listener (section) name.
    #[serde(default)]
    pub name: String,
    /// `HTTP`, `HTTPS`, ...
    #[serde(default)]
    pub protocol: String,
    /// Port number.
    #[serde(default)]
    pub port: i32,
}

/// Spec of an HTTPRoute (the fields KubeRay sets).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "gateway.networking.k8s.io",
    version = "v1",
    kind = "HTTPRoute",
    plural = "httproutes",
    namespaced,
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteSpec {
    /// The Gateways the route attaches to.
    #[serde(default)]
    pub parent_refs: Vec<ParentReference>,
    /// Matching rules and their backends.
    #[serde(default)]
    pub rules: Vec<HTTPRouteRule>,
}

/// `spec.parentRefs[]` of an HTTPRoute.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentReference {
    /// Gateway name.
    #[serde(default)]
    pub name: String,
    /// Gateway namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// `spec.rules[]` of an HTTPRoute.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteRule {
    /// Request matches.
    #[serde(default)]
    pub matches: Vec<HTTPRouteMatch>,
    /// Weighted backends.
    #[serde(default)]
    pub backend_refs: Vec<HTTPBackendRef>,
}

/// `rules[].matches[]` of an HTTPRoute.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteMatch {
    /// Path match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<HTTPPathMatch>,
}

/// `matches[].path` of an HTTPRoute.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPPathMatch {
    /// `PathPrefix`, `Exact`, ...
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// `rules[].backendRefs[]` of an HTTPRoute (a Service on a port, with a weight).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPBackendRef {
    /// Service name.
    #[serde(default)]
    pub name: String,
    /// Service namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Service port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// Relative share of the traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

/// A cluster the HTTPRoute sends traffic to: its name and serve port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteBackend<'a> {
    /// RayCluster name (the backend is `<cluster>-serve-svc`).
    pub cluster: &'a str,
    /// The cluster's serve port.
    pub port: i32,
}

fn service_name(service: &RayService) -> &str {
    service.metadata.name.as_deref().unwrap_or_default()
}

/// `createGateway`: `<rs>-gateway` of class `gatewayClassName` with one `http` listener (HTTP, 80).
pub fn build_gateway(service: &RayService) -> Result<Gateway, IncrementalError> {
    let options = super::incremental::upgrade_options(service)?;
    let mut gateway = Gateway::new(
        &gateway_name(service_name(service)),
        GatewaySpec {
            gateway_class_name: options.gateway_class_name.clone(),
            listeners: vec![Listener {
                name: GATEWAY_LISTENER_NAME.to_owned(),
                protocol: GATEWAY_LISTENER_PROTOCOL.to_owned(),
                port: GATEWAY_LISTENER_PORT,
            }],
        },
    );
    gateway.metadata.namespace = service.metadata.namespace.clone();
    Ok(gateway)
}

/// `createHTTPRoute`: `<rs>-httproute` attached to the Gateway, matching prefix `/`, sending
/// `weights.active` to the active cluster's serve service and, when a pending cluster exists,
/// `weights.pending` to its serve service.
pub fn build_http_route(
    service: &RayService,
    active: &RouteBackend<'_>,
    pending: Option<&RouteBackend<'_>>,
    weights: TrafficWeights,
) -> HTTPRoute {
    let name = service_name(service);
    let namespace = service.metadata.namespace.clone();
    let backend = |b: &RouteBackend<'_>, weight: i32| HTTPBackendRef {
        name: serve_service_name(b.cluster),
        namespace: namespace.clone(),
        port: Some(b.port),
        weight: Some(weight),
    };
    let mut backend_refs = vec![backend(active, weights.active)];
    if let Some(pending) = pending {
        backend_refs.push(backend(pending, weights.pending));
    }
    let mut route = HTTPRoute::new(
        &http_route_name(name),
        HTTPRouteSpec {
            parent_refs: vec![ParentReference {
                name: gateway_name(name),
                namespace: namespace.clone(),
            }],
            rules: vec![HTTPRouteRule {
                matches: vec![HTTPRouteMatch {
                    path: Some(HTTPPathMatch {
                        type_: Some(ROUTE_PATH_MATCH_TYPE.to_owned()),
                        value: Some(ROUTE_PATH_PREFIX.to_owned()),
                    }),
                }],
                backend_refs,
            }],
        },
    );
    route.metadata.namespace = namespace;
    route
}

/// `GetWeightsFromHTTPRoute`: the weights the route gives the serve services of `active` and
/// `pending` (`None` for a cluster without a backend in the route).
pub fn route_weights(route: &HTTPRoute, active: Option<&str>, pending: Option<&str>) -> (Option<i32>, Option<i32>) {
    let weight_of = |cluster: Option<&str>| {
        let name = serve_service_name(cluster?);
        route
            .spec
            .rules
            .iter()
            .flat_map(|r| r.backend_refs.iter())
            .find(|b| b.name == name)
            .map(|b| b.weight.unwrap_or(1))
    };
    (weight_of(active), weight_of(pending))
}
