//! The Services of a RayService: its head service and serve service follow the cluster that serves,
//! each cluster of an incremental upgrade gets its own serve service, and the serve endpoints are
//! counted for the status.

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::api::ListParams;
use ray_api::RayCluster;
use ray_api::constants::{CRD_KIND_RAY_CLUSTER, CRD_KIND_RAY_SERVICE};
use ray_podgen::cluster::controller_reference;
use ray_podgen::names::serve_service_name;
use ray_podgen::service::{ServeServiceOwner, build_rayservice_head_service, build_serve_service};

use super::controller::create_params;
use super::error::RayServiceError;
use super::executor::Pass;
use super::plan::{ServiceSync, event_reason, sync_service};
use super::serve_sync::pod_ready;
use crate::events::action;
use crate::kube_errors::is_conflict;

impl Pass<'_> {
    /// The RayService's serve service name (custom `spec.serveService` name or `<rs>-serve-svc`).
    pub(super) fn serve_service_name(&self) -> String {
        self.service
            .spec
            .serve_service
            .as_ref()
            .and_then(|s| s.object.metadata.name.clone())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| serve_service_name(&self.name))
    }

    /// `reconcilePerClusterServeService`: `<cluster>-serve-svc`, the RayService's serve service
    /// for one cluster, owned by the cluster (so it goes with it). Created once, never updated.
    pub(super) async fn sync_cluster_serve_service(&self, cluster: &RayCluster) -> Result<(), RayServiceError> {
        let cluster_name = cluster.name_any();
        let mut desired = build_serve_service(cluster, self.serve_service_owner())?;
        let name = serve_service_name(&cluster_name);
        if self.services.get_opt(&name).await?.is_some() {
            return Ok(());
        }
        desired.metadata.name = Some(name.clone());
        desired.metadata.owner_references = Some(vec![controller_reference(
            CRD_KIND_RAY_CLUSTER,
            &cluster_name,
            cluster.metadata.uid.as_deref(),
        )]);
        let pp = create_params();
        match self.services.create(&pp, &desired).await {
            Ok(_) => {
                self.ctx
                    .publish(
                        self.service,
                        false,
                        event_reason::CREATED_SERVICE,
                        action::CREATE,
                        format!("Created the service {}/{name}", self.namespace),
                    )
                    .await;
                Ok(())
            }
            Err(e) if is_conflict(&e) => Ok(()),
            Err(e) => {
                self.ctx
                    .publish(
                        self.service,
                        true,
                        event_reason::FAILED_TO_CREATE_SERVICE,
                        action::CREATE,
                        format!("Failed to create the service {}/{name}, {e}", self.namespace),
                    )
                    .await;
                Err(e.into())
            }
        }
    }

    /// This RayService as the owner of a serve service (its name, namespace, `spec.serveService` and the
    /// head group's service type).
    pub(super) fn serve_service_owner(&self) -> ServeServiceOwner<'_> {
        ServeServiceOwner::RayService {
            name: &self.name,
            namespace: &self.namespace,
            custom: self.service.spec.serve_service.as_ref().map(|s| &s.object),
            service_type: self
                .service
                .spec
                .ray_cluster_config
                .head_group_spec
                .service_type
                .as_deref(),
        }
    }

    /// Point `<rs>-head-svc` and the serve service at `cluster`; returns the cluster
    /// both select afterwards.
    pub(super) async fn reconcile_services(&self, cluster: &RayCluster) -> Result<String, RayServiceError> {
        let head = build_rayservice_head_service(&self.name, &self.namespace, cluster, &self.ctx.config.podgen)?;
        let serve = build_serve_service(cluster, self.serve_service_owner())?;
        for desired in [head, serve] {
            self.sync_one_service(desired).await?;
        }
        Ok(cluster.name_any())
    }

    /// Creates `desired` (owned by the RayService) or updates the stored Service as
    /// [`sync_service`] says, with KubeRay's events.
    pub(super) async fn sync_one_service(&self, mut desired: Service) -> Result<(), RayServiceError> {
        let name = desired.metadata.name.clone().unwrap_or_default();
        let existing = self.services.get_opt(&name).await?;
        let pp = create_params();
        desired.metadata.owner_references = Some(vec![controller_reference(
            CRD_KIND_RAY_SERVICE,
            &self.name,
            self.service.metadata.uid.as_deref(),
        )]);
        let note = |verb: &str| format!("{verb} the service {}/{name}", self.namespace);
        match sync_service(desired, existing.as_ref()) {
            ServiceSync::Unchanged(_) => Ok(()),
            ServiceSync::Create(service) => match self.services.create(&pp, &service).await {
                Ok(_) => {
                    let event = note("Created");
                    self.ctx
                        .publish(
                            self.service,
                            false,
                            event_reason::CREATED_SERVICE,
                            action::CREATE,
                            event,
                        )
                        .await;
                    Ok(())
                }
                Err(e) if is_conflict(&e) => Ok(()),
                Err(e) => {
                    let event = format!("{}, {e}", note("Failed to create"));
                    self.ctx
                        .publish(
                            self.service,
                            true,
                            event_reason::FAILED_TO_CREATE_SERVICE,
                            action::CREATE,
                            event,
                        )
                        .await;
                    Err(e.into())
                }
            },
            ServiceSync::Update(service) => match self.services.replace(&name, &pp, &service).await {
                Ok(_) => {
                    let event = note("Updated");
                    self.ctx
                        .publish(
                            self.service,
                            false,
                            event_reason::UPDATED_SERVICE,
                            action::UPDATE,
                            event,
                        )
                        .await;
                    Ok(())
                }
                Err(e) => {
                    let event = format!("{}, {e}", note("Failed to update"));
                    self.ctx
                        .publish(
                            self.service,
                            true,
                            event_reason::FAILED_TO_UPDATE_SERVICE,
                            action::UPDATE,
                            event,
                        )
                        .await;
                    Err(e.into())
                }
            },
        }
    }

    /// `numServeEndpoints`: distinct ready, not terminating pods the serve service selects (what
    /// its EndpointSlices would list as ready).
    pub(super) async fn count_serve_endpoints(&self, name: &str) -> Result<i32, RayServiceError> {
        let Some(serve) = self.services.get_opt(name).await? else {
            return Ok(0);
        };
        let Some(selector) = serve
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .filter(|s| !s.is_empty())
        else {
            return Ok(0);
        };
        let selector = selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let pods = self.pods.list(&ListParams::default().labels(&selector)).await?;
        let ready = pods
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none() && pod_ready(p))
            .filter_map(|p| p.metadata.uid.as_deref())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        Ok(i32::try_from(ready).unwrap_or(i32::MAX))
    }
}
