//! One RayService pass: KubeRay's reconcile steps in order, asking [`super::plan`] for every
//! decision and doing the I/O in between: dangling-cluster cleanup, finalizer, validation,
//! suspension, initializing timeout, cluster create / in-place update ([`super::cluster_sync`]),
//! head pod serve labels and serve config submission ([`super::serve_sync`]), the Gateway and
//! HTTPRoute of an incremental upgrade ([`super::gateway_sync`]), the head and serve services
//! ([`super::service_sync`]), and the status.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::fair_controller::Action;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};
use ray_api::constants::RAY_SERVICE_FINALIZER;
use ray_api::validation::{validate_ray_service_metadata, validate_ray_service_spec};
use ray_api::{RayCluster, RayService, RayServiceStatuses};
use ray_podgen::names::serve_service_name;
use ray_podgen::rayservice::ray_cluster_name_for_service;

use super::controller::{RayServiceContext, ServiceKey};
use super::error::RayServiceError;
use super::gateway::route_weights;
use super::incremental::{Role, incremental_enabled, reconcile_rollback_state};
use super::plan::{
    DEFAULT_REQUEUE, FinalizerStep, IncrementalInputs, StatusInputs, SuspendStep, calculate_status,
    check_initializing_timeout, condition, event_reason, finalizer_step, is_initializing_timeout, managed_by_operator,
    plan_suspend, should_prepare_new_cluster, status_changed, suspend_progress, validation_failed_status,
};
use super::serve_sync::ServeOutcome;
use crate::conditions;
use crate::events::action;
use crate::finalizers::{FinalizerGuard, add_finalizer, remove_finalizer};
use crate::kube_errors::{is_conflict, is_not_found, ok_if_not_found};
use crate::status_writer::{StatusWrite, StatusWriteError, write_status};

/// Requeue after a status write conflict.
const CONFLICT_REQUEUE: Duration = Duration::from_millis(200);

/// Whether each cluster's serve applications are all running after this pass's serve step.
#[derive(Clone, Copy, Debug, Default)]
struct Readiness {
    /// The active cluster's.
    active: bool,
    /// The pending cluster's.
    pending: bool,
}

/// One pass over a RayService: the RayService and its namespace's APIs. The I/O of the steps is
/// split over [`super::cluster_sync`], [`super::serve_sync`], [`super::gateway_sync`] and
/// [`super::service_sync`], each adding methods to this type.
pub(super) struct Pass<'a> {
    /// Shared controller state.
    pub(super) ctx: &'a RayServiceContext,
    /// The RayService.
    pub(super) service: &'a RayService,
    /// Its name.
    pub(super) name: String,
    /// Its namespace.
    pub(super) namespace: String,
    /// `(namespace, name)`: the key of the controller's per-RayService state.
    pub(super) key: ServiceKey,
    /// RayClusters in the namespace.
    pub(super) clusters: Api<RayCluster>,
    /// Services in the namespace.
    pub(super) services: Api<Service>,
    /// Pods in the namespace.
    pub(super) pods: Api<Pod>,
}

/// One RayService pass (unless another controller manages the RayService).
#[tracing::instrument(skip_all, fields(rayservice = %service.name_any(), namespace = service.namespace().unwrap_or_default()))]
pub(super) async fn reconcile(
    service: Arc<RayService>,
    ctx: Arc<RayServiceContext>,
) -> Result<Action, RayServiceError> {
    if !managed_by_operator(&service) {
        return Ok(Action::await_change());
    }
    let name = service.name_any();
    let namespace = service
        .namespace()
        .ok_or_else(|| RayServiceError::NoNamespace(name.clone()))?;
    let client = ctx.client.clone();
    let pass = Pass {
        ctx: &ctx,
        service: &service,
        key: (namespace.clone(), name.clone()),
        clusters: Api::namespaced(client.clone(), &namespace),
        services: Api::namespaced(client.clone(), &namespace),
        pods: Api::namespaced(client, &namespace),
        name,
        namespace,
    };
    pass.run().await
}

impl Pass<'_> {
    /// RayServices in the namespace.
    pub(super) fn rayservices(&self) -> Api<RayService> {
        Api::namespaced(self.ctx.client.clone(), &self.namespace)
    }

    /// The pass in KubeRay's order: every step up to the clusters may end it with its own action;
    /// past them the pass always ends with the status write.
    pub(super) async fn run(&self) -> Result<Action, RayServiceError> {
        let now = Timestamp::now();
        let active_name = super::plan::active_cluster_name(self.service).map(str::to_owned);
        let pending_name = super::plan::pending_cluster_name(self.service).map(str::to_owned);
        self.ctx
            .prune_configs(&self.key, &[active_name.as_deref(), pending_name.as_deref()]);

        let remaining = self.clean_up_dangling_clusters(now).await?;
        if let Some(action) = self.finalize(remaining).await? {
            return Ok(action);
        }
        if let Some(action) = self.validate(now).await? {
            return Ok(action);
        }
        if let Some(action) = self.suspend(now).await? {
            return Ok(action);
        }
        if let Some(action) = self.stop_on_initializing_timeout(remaining, now).await? {
            return Ok(action);
        }
        let (active, pending) = self
            .reconcile_clusters(active_name.as_deref(), pending_name.as_deref())
            .await?;
        self.converge(active.as_ref(), pending.as_ref(), now).await
    }

    /// The finalizer: added to a live RayService, removed once a deleted one owns no cluster.
    async fn finalize(&self, remaining_clusters: usize) -> Result<Option<Action>, RayServiceError> {
        match finalizer_step(self.service, remaining_clusters) {
            FinalizerStep::Proceed => Ok(None),
            FinalizerStep::WaitForClusters => Ok(Some(Action::requeue(DEFAULT_REQUEUE))),
            FinalizerStep::Remove => {
                self.set_finalizer(false).await?;
                self.ctx.forget(&self.key);
                Ok(Some(Action::await_change()))
            }
            FinalizerStep::Add => {
                self.set_finalizer(true).await?;
                Ok(Some(Action::requeue(DEFAULT_REQUEUE)))
            }
        }
    }

    /// `spec.suspend`: delete everything the RayService owns and report the progress.
    async fn suspend(&self, now: Timestamp) -> Result<Option<Action>, RayServiceError> {
        match plan_suspend(self.service, &Time(now)) {
            SuspendStep::Proceed => Ok(None),
            SuspendStep::Stop(None) => Ok(Some(Action::await_change())),
            SuspendStep::Stop(Some(status)) => self.write_status(*status, now).await.map(Some),
            SuspendStep::DeleteOwned => {
                let left = self.delete_owned().await?;
                self.ctx.forget(&self.key);
                self.write_status(suspend_progress(self.service, left, &Time(now)), now)
                    .await
                    .map(Some)
            }
        }
    }

    /// The initializing timeout: once reached the RayService is failed for good, and only the
    /// dangling-cluster cleanup still has work while clusters remain.
    async fn stop_on_initializing_timeout(
        &self,
        remaining_clusters: usize,
        now: Timestamp,
    ) -> Result<Option<Action>, RayServiceError> {
        if is_initializing_timeout(self.service) {
            return Ok(Some(if remaining_clusters > 0 {
                Action::requeue(DEFAULT_REQUEUE)
            } else {
                Action::await_change()
            }));
        }
        let Some(timeout) = check_initializing_timeout(self.service, now) else {
            return Ok(None);
        };
        self.ctx
            .publish(
                self.service,
                true,
                event_reason::RAY_SERVICE_INITIALIZING_TIMEOUT,
                action::UPDATE,
                timeout.event,
            )
            .await;
        self.write_status(timeout.status, now).await.map(Some)
    }

    /// With the clusters in place: rollback detection, serve, the Gateway API objects, the
    /// services, and the status.
    async fn converge(
        &self,
        active: Option<&RayCluster>,
        pending: Option<&RayCluster>,
        now: Timestamp,
    ) -> Result<Action, RayServiceError> {
        let incremental = incremental_enabled(self.service, &self.ctx.config.plan);
        let mut status = self.service.status.clone().unwrap_or_default();
        if incremental {
            reconcile_rollback_state(&mut status, self.service, active, pending, &Time(now));
        }
        for cluster in [active, pending].into_iter().flatten() {
            self.update_head_pod_serve_label(cluster).await?;
        }
        let readiness = self.serve_clusters(active, pending, &mut status, incremental).await?;
        let route = if incremental {
            self.reconcile_gateway_objects(active, pending, &status, readiness.pending, now)
                .await?
        } else {
            None
        };
        let services_cluster = self
            .point_services(active, pending, &status, readiness, incremental)
            .await?;
        let num_serve_endpoints = self.serve_endpoints(active, pending, incremental).await?;
        let new_cluster_name = {
            let mut suffixes = self.ctx.suffixes.lock().unwrap_or_else(PoisonError::into_inner);
            ray_cluster_name_for_service(self.service, &mut *suffixes)
        };
        let active_name_now = super::plan::active_cluster_name(self.service);
        let pending_name_now = super::plan::pending_cluster_name(self.service);
        let inputs = StatusInputs {
            active,
            pending,
            services_cluster,
            num_serve_endpoints,
            new_cluster_name,
            now: Time(now),
            incremental: incremental.then(|| IncrementalInputs {
                route_weights: route
                    .as_ref()
                    .map_or((None, None), |r| route_weights(r, active_name_now, pending_name_now)),
                pending_healthy: pending.map(|_| readiness.pending),
            }),
        };
        let status = calculate_status(self.service, status, &inputs, &self.ctx.config.plan)?;
        self.write_status(status, now).await
    }

    /// Serve on both clusters. Like KubeRay, each cluster's application statuses are this pass's
    /// reading, or none when its serve step did not run (the active cluster's stay empty during a
    /// blue/green upgrade).
    async fn serve_clusters(
        &self,
        active: Option<&RayCluster>,
        pending: Option<&RayCluster>,
        status: &mut RayServiceStatuses,
        incremental: bool,
    ) -> Result<Readiness, RayServiceError> {
        let mut pending_outcome = ServeOutcome::default();
        if let Some(cluster) = pending {
            pending_outcome = self
                .reconcile_serve(cluster, Role::Pending, status, incremental)
                .await?;
        }
        let mut active_outcome = ServeOutcome::default();
        if let Some(cluster) = active
            && ((pending.is_none()
                && !should_prepare_new_cluster(self.service, Some(cluster), None, false, &self.ctx.config.plan))
                || (incremental && pending.is_some()))
        {
            active_outcome = self.reconcile_serve(cluster, Role::Active, status, incremental).await?;
        }
        let readiness = Readiness {
            active: active_outcome.ready,
            pending: pending_outcome.ready,
        };
        status
            .active_service_status
            .get_or_insert_with(Default::default)
            .application_statuses = Some(active_outcome.apps).filter(|a| !a.is_empty());
        status
            .pending_service_status
            .get_or_insert_with(Default::default)
            .application_statuses = Some(pending_outcome.apps).filter(|a| !a.is_empty());
        Ok(readiness)
    }

    /// Points the RayService's head and serve services at the cluster that serves; returns that
    /// cluster. During an incremental upgrade they stay on the active cluster (traffic moves
    /// through the HTTPRoute instead).
    async fn point_services(
        &self,
        active: Option<&RayCluster>,
        pending: Option<&RayCluster>,
        status: &RayServiceStatuses,
        readiness: Readiness,
        incremental: bool,
    ) -> Result<Option<String>, RayServiceError> {
        let upgrading_incrementally = incremental
            && conditions::is_true(
                status.conditions.as_deref().unwrap_or_default(),
                condition::UPGRADE_IN_PROGRESS,
            );
        let target = if readiness.pending && !upgrading_incrementally {
            pending
        } else if readiness.pending || readiness.active {
            active.or(pending)
        } else {
            None
        };
        match target {
            Some(cluster) => Ok(Some(self.reconcile_services(cluster).await?)),
            None => Ok(None),
        }
    }

    /// The ready serve endpoints behind the RayService: its serve service's, or during an
    /// incremental upgrade those of both clusters' own serve services.
    async fn serve_endpoints(
        &self,
        active: Option<&RayCluster>,
        pending: Option<&RayCluster>,
        incremental: bool,
    ) -> Result<i32, RayServiceError> {
        if !incremental {
            return self.count_serve_endpoints(&self.serve_service_name()).await;
        }
        let first = match active {
            Some(cluster) => serve_service_name(&cluster.name_any()),
            None => self.serve_service_name(),
        };
        let mut total = 0;
        for name in std::iter::once(first).chain(pending.map(|c| serve_service_name(&c.name_any()))) {
            total += self.count_serve_endpoints(&name).await?;
        }
        Ok(total)
    }

    /// Writes `status` when it differs from the stored one (with `lastUpdateTime = now`).
    pub(super) async fn write_status(
        &self,
        mut status: RayServiceStatuses,
        now: Timestamp,
    ) -> Result<Action, RayServiceError> {
        let old = self.service.status.clone().unwrap_or_default();
        if !status_changed(&old, &status) {
            return Ok(Action::requeue(DEFAULT_REQUEUE));
        }
        status.last_update_time = Some(Time(now));
        match write_status(&self.rayservices(), self.service, &status, StatusWrite::Replace).await {
            Ok(_) => Ok(Action::requeue(DEFAULT_REQUEUE)),
            Err(StatusWriteError::Api(e)) if is_conflict(&e) => Ok(Action::requeue(CONFLICT_REQUEUE)),
            Err(StatusWriteError::Api(e)) if is_not_found(&e) => Ok(Action::await_change()),
            Err(e) => Err(e.into()),
        }
    }

    /// Adds (`present`) or removes `ray.io/rayservice-finalizer`; a RayService already gone is fine.
    pub(super) async fn set_finalizer(&self, present: bool) -> Result<(), RayServiceError> {
        let api = self.rayservices();
        let written = if present {
            add_finalizer(&api, self.service, RAY_SERVICE_FINALIZER, FinalizerGuard::Unguarded).await
        } else {
            remove_finalizer(&api, self.service, RAY_SERVICE_FINALIZER, FinalizerGuard::Unguarded).await
        };
        ok_if_not_found(written)?;
        Ok(())
    }

    /// Validation: on a failure writes `Ready=False/ValidationFailed` and stops.
    pub(super) async fn validate(&self, now: Timestamp) -> Result<Option<Action>, RayServiceError> {
        let failure = validate_ray_service_metadata(&self.service.metadata)
            .map_err(|e| (event_reason::INVALID_RAY_SERVICE_METADATA, e.message))
            .and_then(|()| {
                validate_ray_service_spec(self.service, &self.ctx.config.validation)
                    .map_err(|e| (event_reason::INVALID_RAY_SERVICE_SPEC, e.message))
            });
        let Err((reason, message)) = failure else {
            return Ok(None);
        };
        self.ctx
            .publish(
                self.service,
                true,
                reason,
                action::VALIDATE,
                format!("{}/{}: {message}", self.namespace, self.name),
            )
            .await;
        let status = validation_failed_status(self.service, &message, &Time(now));
        self.write_status(status, now).await?;
        Ok(Some(Action::await_change()))
    }
}
