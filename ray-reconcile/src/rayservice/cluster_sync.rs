//! The RayClusters of a RayService: creating the pending cluster, updating the active or pending one
//! in place, deleting dangling clusters after their delay, and deleting everything the RayService
//! owns when it is suspended.

use std::sync::PoisonError;

use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Resource, ResourceExt};
use ray_api::RayCluster;
use ray_api::constants::{CRD_KIND_RAY_SERVICE, RAY_ORIGINATED_FROM_CR_NAME_LABEL, RAY_ORIGINATED_FROM_CRD_LABEL};
use ray_podgen::rayservice::build_ray_cluster_for_service;

use super::controller::create_params;
use super::error::RayServiceError;
use super::executor::Pass;
use super::gateway::{Gateway, HTTPRoute};
use super::incremental::incremental_enabled;
use super::plan::{ClusterAction, dangling_clusters_to_delete, event_reason, plan_cluster, updated_cluster};
use crate::events::action;
use crate::kube_errors::{is_conflict, is_not_found, ok_if_not_found};

impl Pass<'_> {
    /// Schedules and performs the deletion of clusters that are neither active nor
    /// pending. Returns how many clusters this RayService still owns.
    pub(super) async fn clean_up_dangling_clusters(&self, now: Timestamp) -> Result<usize, RayServiceError> {
        let selector = self.owned_selector();
        let owned: Vec<String> = self
            .clusters
            .list_metadata(&ListParams::default().labels(&selector))
            .await?
            .items
            .into_iter()
            .map(|c| c.name_any())
            .collect();
        let to_delete = {
            let mut deletions = self.ctx.deletions.lock().unwrap_or_else(PoisonError::into_inner);
            let schedule = deletions.entry(self.key.clone()).or_default();
            dangling_clusters_to_delete(self.service, &owned, schedule, now)
        };
        for cluster in to_delete {
            match self.clusters.delete(&cluster, &DeleteParams::background()).await {
                Ok(_) => {
                    self.ctx
                        .publish(
                            self.service,
                            false,
                            event_reason::DELETED_RAY_CLUSTER,
                            action::DELETE,
                            format!("Deleted the RayCluster {}/{cluster}", self.namespace),
                        )
                        .await;
                }
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    self.ctx
                        .publish(
                            self.service,
                            true,
                            event_reason::FAILED_TO_DELETE_RAY_CLUSTER,
                            action::DELETE,
                            format!("Failed to delete the RayCluster {}/{cluster}: {e}", self.namespace),
                        )
                        .await;
                    return Err(e.into());
                }
            }
        }
        Ok(owned.len())
    }

    /// Suspension: deletes every RayCluster and Service labelled for this RayService; returns how
    /// many were still there.
    pub(super) async fn delete_owned(&self) -> Result<usize, RayServiceError> {
        let selector = self.owned_selector();
        let params = ListParams::default().labels(&selector);
        let clusters = self.clusters.list_metadata(&params).await?.items;
        let services = self.services.list_metadata(&params).await?.items;
        let mut left = clusters.len() + services.len();
        if incremental_enabled(self.service, &self.ctx.config.plan) {
            left += self
                .delete_if_present::<HTTPRoute>(&ray_podgen::names::http_route_name(&self.name))
                .await?;
            left += self
                .delete_if_present::<Gateway>(&ray_podgen::names::gateway_name(&self.name))
                .await?;
        }
        for cluster in clusters.iter().filter(|c| c.metadata.deletion_timestamp.is_none()) {
            ok_if_not_found(
                self.clusters
                    .delete(&cluster.name_any(), &DeleteParams::background())
                    .await,
            )?;
        }
        for service in services.iter().filter(|s| s.metadata.deletion_timestamp.is_none()) {
            ok_if_not_found(
                self.services
                    .delete(&service.name_any(), &DeleteParams::background())
                    .await,
            )?;
        }
        Ok(left)
    }

    /// The label selector of everything this RayService created.
    pub(super) fn owned_selector(&self) -> String {
        format!(
            "{RAY_ORIGINATED_FROM_CR_NAME_LABEL}={},{RAY_ORIGINATED_FROM_CRD_LABEL}={CRD_KIND_RAY_SERVICE}",
            self.name
        )
    }

    /// Deletes the named object if it exists; returns 1 when it was still there.
    pub(super) async fn delete_if_present<K>(&self, name: &str) -> Result<usize, RayServiceError>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned,
    {
        let api: Api<K> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        let Some(existing) = api.get_opt(name).await? else {
            return Ok(0);
        };
        if existing.meta().deletion_timestamp.is_none() {
            ok_if_not_found(api.delete(name, &DeleteParams::background()).await)?;
        }
        Ok(1)
    }

    /// The RayCluster `cluster_name` as this RayService's spec builds it now.
    pub(super) fn goal_cluster(&self, cluster_name: &str) -> Result<RayCluster, RayServiceError> {
        // The pending cluster of an incremental upgrade gets its worker replicas cleared.
        Ok(build_ray_cluster_for_service(
            self.service,
            cluster_name,
            &self.ctx.config.podgen,
        )?)
    }

    /// `reconcileRayCluster`: reads the active and pending clusters and creates the pending one or
    /// updates one in place, as [`plan_cluster`] says.
    pub(super) async fn reconcile_clusters(
        &self,
        active_name: Option<&str>,
        pending_name: Option<&str>,
    ) -> Result<(Option<RayCluster>, Option<RayCluster>), RayServiceError> {
        let mut active = match active_name {
            Some(n) => self.clusters.get_opt(n).await?,
            None => None,
        };
        let mut pending = match pending_name {
            Some(n) => self.clusters.get_opt(n).await?,
            None => None,
        };
        match plan_cluster(self.service, active.as_ref(), pending.as_ref()) {
            ClusterAction::None => {}
            ClusterAction::CreatePending { name } => {
                let object = self.goal_cluster(&name)?;
                let pp = create_params();
                match self.clusters.create(&pp, &object).await {
                    Ok(created) => {
                        self.ctx
                            .publish(
                                self.service,
                                false,
                                event_reason::CREATED_RAY_CLUSTER,
                                action::CREATE,
                                format!("Created the RayCluster {}/{name}", self.namespace),
                            )
                            .await;
                        pending = Some(created);
                    }
                    Err(e) if is_conflict(&e) => pending = self.clusters.get_opt(&name).await?,
                    Err(e) => {
                        self.ctx
                            .publish(
                                self.service,
                                true,
                                event_reason::FAILED_TO_CREATE_RAY_CLUSTER,
                                action::CREATE,
                                format!("Failed to create the RayCluster {}/{name}: {e}", self.namespace),
                            )
                            .await;
                        return Err(e.into());
                    }
                }
            }
            ClusterAction::UpdateActive => {
                if let Some(existing) = active.take() {
                    active = Some(self.update_cluster(existing, "active").await?);
                }
            }
            ClusterAction::UpdatePending => {
                if let Some(existing) = pending.take() {
                    pending = Some(self.update_cluster(existing, "pending").await?);
                }
            }
        }
        Ok((active, pending))
    }

    /// Updates the `role` (active / pending) cluster in place to the spec's goal, with an event.
    pub(super) async fn update_cluster(&self, existing: RayCluster, role: &str) -> Result<RayCluster, RayServiceError> {
        let name = existing.name_any();
        let goal = self.goal_cluster(&name)?;
        let updated = updated_cluster(&existing, goal);
        let pp = create_params();
        match self.clusters.replace(&name, &pp, &updated).await {
            Ok(stored) => {
                self.ctx
                    .publish(
                        self.service,
                        false,
                        event_reason::UPDATED_RAY_CLUSTER,
                        action::UPDATE,
                        format!("Updated the {role} RayCluster {}/{name}", self.namespace),
                    )
                    .await;
                Ok(stored)
            }
            Err(e) => {
                self.ctx
                    .publish(
                        self.service,
                        true,
                        event_reason::FAILED_TO_UPDATE_RAY_CLUSTER,
                        action::UPDATE,
                        format!("Failed to update the {role} RayCluster {}/{name}: {e}", self.namespace),
                    )
                    .await;
                Err(e.into())
            }
        }
    }
}
