//! The Gateway API objects of an incremental upgrade: the RayService's Gateway and the HTTPRoute that
//! splits traffic between the active and pending clusters, created owned by the RayService and
//! replaced when their spec drifted.

use k8s_openapi::jiff::Timestamp;
use kube::{Api, Resource, ResourceExt};
use ray_api::constants::{CRD_KIND_RAY_SERVICE, SERVING_PORT_NAME};
use ray_api::{RayCluster, RayServiceStatuses};
use ray_podgen::cluster::controller_reference;
use ray_podgen::service::service_ports;

use super::controller::create_params;
use super::error::RayServiceError;
use super::executor::Pass;
use super::gateway::{Gateway, HTTPRoute, RouteBackend, build_gateway, build_http_route};
use super::incremental::{rolling_back, traffic_weights};
use super::plan::event_reason;
use crate::events::action;

impl Pass<'_> {
    /// The per-cluster serve services of both clusters, the Gateway and (with an active
    /// cluster) the HTTPRoute carrying this pass's traffic weights; returns the HTTPRoute.
    pub(super) async fn reconcile_gateway_objects(
        &self,
        active: Option<&RayCluster>,
        pending: Option<&RayCluster>,
        status: &RayServiceStatuses,
        pending_ready: bool,
        now: Timestamp,
    ) -> Result<Option<HTTPRoute>, RayServiceError> {
        for cluster in [active, pending].into_iter().flatten() {
            self.sync_cluster_serve_service(cluster).await?;
        }
        let gateway = build_gateway(self.service)?;
        self.sync_gateway_api_object(
            gateway,
            |a: &Gateway, b: &Gateway| a.spec == b.spec,
            |mut existing: Gateway, desired: Gateway| {
                existing.spec = desired.spec;
                existing
            },
            (
                "Gateway",
                event_reason::CREATED_GATEWAY,
                event_reason::FAILED_TO_CREATE_GATEWAY,
            ),
            (event_reason::UPDATED_GATEWAY, event_reason::FAILED_TO_UPDATE_GATEWAY),
        )
        .await?;
        let Some(active) = active else {
            return Ok(None);
        };
        let weights = traffic_weights(self.service, status, pending_ready, rolling_back(status), now)?;
        let backend = |cluster: &RayCluster| {
            let port = service_ports(cluster)
                .get(SERVING_PORT_NAME)
                .copied()
                .unwrap_or(ray_api::constants::DEFAULT_SERVING_PORT);
            (cluster.name_any(), port)
        };
        let (active_cluster, active_port) = backend(active);
        let pending_backend = pending.map(backend);
        let route = build_http_route(
            self.service,
            &RouteBackend {
                cluster: &active_cluster,
                port: active_port,
            },
            pending_backend
                .as_ref()
                .map(|(cluster, port)| RouteBackend { cluster, port: *port })
                .as_ref(),
            weights,
        );
        let route = self
            .sync_gateway_api_object(
                route,
                |a: &HTTPRoute, b: &HTTPRoute| a.spec == b.spec,
                |mut existing: HTTPRoute, desired: HTTPRoute| {
                    existing.spec = desired.spec;
                    existing
                },
                (
                    "HTTPRoute",
                    event_reason::CREATED_HTTP_ROUTE,
                    event_reason::FAILED_TO_CREATE_HTTP_ROUTE,
                ),
                (
                    event_reason::UPDATED_HTTP_ROUTE,
                    event_reason::FAILED_TO_UPDATE_HTTP_ROUTE,
                ),
            )
            .await?;
        Ok(Some(route))
    }

    /// Creates `desired` (owned by the RayService) or replaces the stored object's spec when it
    /// differs; returns the object as it now stands.
    pub(super) async fn sync_gateway_api_object<K>(
        &self,
        mut desired: K,
        same: impl Fn(&K, &K) -> bool,
        merge: impl Fn(K, K) -> K,
        (kind, created, create_failed): (&str, &'static str, &'static str),
        (updated, update_failed): (&'static str, &'static str),
    ) -> Result<K, RayServiceError>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::Serialize
            + serde::de::DeserializeOwned,
    {
        let api: Api<K> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        let name = desired.meta().name.clone().unwrap_or_default();
        let pp = create_params();
        let Some(existing) = api.get_opt(&name).await? else {
            desired.meta_mut().owner_references = Some(vec![controller_reference(
                CRD_KIND_RAY_SERVICE,
                &self.name,
                self.service.metadata.uid.as_deref(),
            )]);
            return match api.create(&pp, &desired).await {
                Ok(stored) => {
                    let note = format!("Created {kind} for RayService {}/{name}", self.namespace);
                    self.ctx
                        .publish(self.service, false, created, action::CREATE, note)
                        .await;
                    Ok(stored)
                }
                Err(e) => {
                    let note = format!("Failed to create {kind} for RayService {}/{name}: {e}", self.namespace);
                    self.ctx
                        .publish(self.service, true, create_failed, action::CREATE, note)
                        .await;
                    Err(e.into())
                }
            };
        };
        if same(&existing, &desired) {
            return Ok(existing);
        }
        let mut replacement = merge(existing, desired);
        replacement.meta_mut().managed_fields = None;
        match api.replace(&name, &pp, &replacement).await {
            Ok(stored) => {
                let note = format!("Updated the {kind} {}/{name}", self.namespace);
                self.ctx
                    .publish(self.service, false, updated, action::UPDATE, note)
                    .await;
                Ok(stored)
            }
            Err(e) => {
                let note = format!("Failed to update the {kind} {}/{name}: {e}", self.namespace);
                self.ctx
                    .publish(self.service, true, update_failed, action::UPDATE, note)
                    .await;
                Err(e.into())
            }
        }
    }
}
