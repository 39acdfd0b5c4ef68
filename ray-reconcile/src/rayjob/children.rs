//! The objects a RayJob owns: its RayCluster (created, deleted, or its worker groups suspended),
//! the RayJob head service and the K8sJobMode submitter Job, each written with KubeRay's events.

use k8s_openapi::api::core::v1::Service;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use ray_api::constants::RAY_CLUSTER_LABEL;
use ray_api::{JobSubmissionMode, RayCluster, RayJob};
use ray_gang::Parent;
use ray_gang::constants::SUBMITTER_GROUP_NAME;
use ray_podgen::rayjob::{build_ray_cluster_for_job, build_rayjob_head_service, build_submitter_job};
use serde_json::json;
use tracing::info;

use super::batch_scheduling::log_gang;
use super::controller::create_params;
use super::error::RayJobError;
use super::events::{self, reason};
use super::executor::Pass;
use crate::events::{EventSpec, action};
use crate::kube_errors::{is_conflict, is_not_found, ok_if_not_found};

impl Pass<'_> {
    /// Creates the job's RayCluster (decorated for the batch scheduler in K8sJobMode); one that
    /// already exists is fine.
    pub(super) async fn create_cluster(&self, cluster: &str) -> Result<(), RayJobError> {
        let mut object = build_ray_cluster_for_job(self.job, cluster, &self.ctx.config.podgen)?;
        if self.job.spec.submission_mode() == JobSubmissionMode::K8sJobMode {
            log_gang(
                &self.name,
                self.ctx.config.scheduler.decorate_cluster(self.job, &mut object),
            );
        }
        match self.clusters.create(&create_params(), &object).await {
            Ok(_) => {
                let note = events::created_cluster(&self.namespace, cluster);
                let event = EventSpec::normal(reason::CREATED_RAY_CLUSTER, action::CREATE, note);
                self.ctx.publish(self.job, event).await;
                Ok(())
            }
            Err(e) if is_conflict(&e) => Ok(()),
            Err(e) => {
                let note = events::failed_to_create_cluster(&self.namespace, cluster, &e);
                let event = EventSpec::warning(reason::FAILED_TO_CREATE_RAY_CLUSTER, action::CREATE, note);
                self.ctx.publish(self.job, event).await;
                Err(e.into())
            }
        }
    }

    /// Deletes the job's RayCluster in the background; one already gone is fine.
    pub(super) async fn delete_cluster(&self, cluster: &str) -> Result<(), RayJobError> {
        match self.clusters.delete(cluster, &DeleteParams::background()).await {
            Ok(_) => {
                let note = events::deleted_cluster(&self.namespace, cluster);
                let event = EventSpec::normal(reason::DELETED_RAY_CLUSTER, action::DELETE, note);
                self.ctx.publish(self.job, event).await;
                Ok(())
            }
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => {
                let note = events::failed_to_delete_cluster(&self.namespace, cluster, &e);
                let event = EventSpec::warning(reason::FAILED_TO_DELETE_RAY_CLUSTER, action::DELETE, note);
                self.ctx.publish(self.job, event).await;
                Err(e.into())
            }
        }
    }

    /// `DeleteWorkers`: sets `suspend: true` on every worker group of `cluster` (named `name` in the event),
    /// read again from the API server first: the pass may have read it from the store, and a replace of an
    /// older version would only conflict.
    pub(super) async fn suspend_worker_groups(&self, cluster: &RayCluster, name: &str) -> Result<(), RayJobError> {
        let live = self.clusters.get_opt(&cluster.name_any()).await?;
        let mut updated = live.unwrap_or_else(|| cluster.clone());
        for group in updated.spec.worker_group_specs.iter_mut().flatten() {
            group.suspend = Some(true);
        }
        ok_if_not_found(
            self.clusters
                .replace(&cluster.name_any(), &create_params(), &updated)
                .await,
        )?;
        let note = events::suspended_worker_groups(&self.namespace, name);
        let event = EventSpec::normal(reason::UPDATED_RAY_CLUSTER, action::UPDATE, note);
        self.ctx.publish(self.job, event).await;
        Ok(())
    }

    /// Creates the RayJob-owned head service `<rayjob>-head-svc`, or points it at `cluster` when its
    /// selector still names another cluster (its ClusterIP is kept).
    pub(super) async fn ensure_head_service(&self, cluster: &RayCluster) -> Result<(), RayJobError> {
        let services: Api<Service> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        let desired = build_rayjob_head_service(self.job, cluster, &self.ctx.config.podgen)?;
        let name = desired.name_any();
        let selector = desired
            .spec
            .as_ref()
            .and_then(|s| s.selector.clone())
            .unwrap_or_default();
        // From the controller's store of RayJob head services, as KubeRay reads its cache: one the store has not
        // seen is created, and "already exists" means the store lags; a later pass checks its selector. Asking
        // the API server first would add a request for every new service.
        match self.ctx.head_services.get(&self.namespace, &name) {
            None => match services.create(&create_params(), &desired).await {
                Ok(_) => info!(rayjob = %self.name, service = %name, "created the RayJob head service"),
                Err(e) if is_conflict(&e) => {}
                Err(e) => return Err(e.into()),
            },
            Some(existing) => {
                let current = existing
                    .spec
                    .as_ref()
                    .and_then(|s| s.selector.as_ref())
                    .and_then(|s| s.get(RAY_CLUSTER_LABEL).cloned());
                if current.as_ref() != selector.get(RAY_CLUSTER_LABEL) {
                    let patch = json!({ "spec": { "selector": selector } });
                    services
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await?;
                    info!(rayjob = %self.name, service = %name, "pointed the RayJob head service at the new cluster");
                }
            }
        }
        Ok(())
    }

    /// K8sJobMode: creates the submitter Job (its pod template decorated for the batch scheduler)
    /// from the job with its planned status; one that already exists is fine.
    pub(super) async fn create_submitter(&self, with_status: &RayJob, cluster: &RayCluster) -> Result<(), RayJobError> {
        let mut object = build_submitter_job(with_status, cluster, &self.ctx.config.podgen)?;
        if let Some(template) = object.spec.as_mut().map(|spec| &mut spec.template) {
            let logs =
                self.ctx
                    .config
                    .scheduler
                    .decorate_pod_template(Parent::Job(self.job), template, SUBMITTER_GROUP_NAME);
            log_gang(&self.name, logs);
        }
        match self.jobs.create(&create_params(), &object).await {
            Ok(_) => {
                let note = events::created_submitter(&self.namespace, &self.name);
                let event = EventSpec::normal(reason::CREATED_RAY_JOB_SUBMITTER, action::CREATE, note);
                self.ctx.publish(self.job, event).await;
                Ok(())
            }
            Err(e) if is_conflict(&e) => Ok(()),
            Err(e) => {
                let note = events::failed_to_create_submitter(&self.namespace, &self.name, &e);
                let event = EventSpec::warning(reason::FAILED_TO_CREATE_RAY_JOB_SUBMITTER, action::CREATE, note);
                self.ctx.publish(self.job, event).await;
                Err(e.into())
            }
        }
    }

    /// Deletes the submitter Job in the background; one already gone is fine.
    pub(super) async fn delete_submitter(&self) -> Result<(), RayJobError> {
        match self.jobs.delete(&self.name, &DeleteParams::background()).await {
            Ok(_) => {
                let note = events::deleted_submitter(&self.namespace, &self.name);
                let event = EventSpec::normal(reason::DELETED_RAY_JOB_SUBMITTER, action::DELETE, note);
                self.ctx.publish(self.job, event).await;
                Ok(())
            }
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => {
                let note = events::failed_to_delete_submitter(&self.namespace, &self.name, &e);
                let event = EventSpec::warning(reason::FAILED_TO_DELETE_RAY_JOB_SUBMITTER, action::DELETE, note);
                self.ctx.publish(self.job, event).await;
                Err(e.into())
            }
        }
    }
}
