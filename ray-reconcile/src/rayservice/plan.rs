//! The pure decisions of one RayService reconcile pass (see `docs/rayservice.md`): which
//! cluster to create or update in place, whether a new (pending) cluster is needed, whether the
//! serve config must be submitted, which cluster the services point to, the new status and its
//! conditions, the initializing timeout and the deletion schedule of dangling clusters.
//!
//! Everything here is a function of the RayService, the observed objects and the time; the
//! executor in [`super::executor`] does the I/O in KubeRay's order and feeds the results back.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube_compat::go_duration;
use ray_api::constants::{
    DEFAULT_SERVE_APP_NAME, HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_ANNOTATION, KUBERAY_CONTROLLER,
    KUBERAY_VERSION, KUBERAY_VERSION_ANNOTATION, NUM_WORKER_GROUPS_ANNOTATION, RAY_CLUSTER_LABEL,
    RAY_SERVICE_FINALIZER, RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION,
};
use ray_api::{
    AppStatus, ApplicationStatus, RayCluster, RayService, RayServiceStatus, RayServiceStatuses, RayServiceUpgradeType,
    ServeDeploymentStatus, ServiceStatus,
};
use ray_podgen::cluster::auth_enabled;
use ray_podgen::hash::rayservice_cluster_hash;
use ray_podgen::names::check_name;
use serde::Deserialize;

use super::incremental::{
    FULL_PERCENT, complete_rollback, incremental_enabled, record_route_weights, rollback_complete, rolling_back,
    upgrade_complete,
};
use crate::conditions::{self, FALSE, TRUE};

/// KubeRay's `ServiceDefaultRequeueDuration`: every pass requeues after 2 s.
pub const DEFAULT_REQUEUE: Duration = Duration::from_secs(2);
/// `ENABLE_ZERO_DOWNTIME` value (any case) that turns zero-downtime upgrades off.
pub const ZERO_DOWNTIME_DISABLED: &str = "false";
/// `ray.io/serve` value of a pod the serve service selects.
pub const SERVE_LABEL_ENABLED: &str = "true";
/// `ray.io/serve` value of a pod the serve service leaves out.
pub const SERVE_LABEL_DISABLED: &str = "false";
/// The pod condition type that makes a pod a ready endpoint.
pub const POD_READY_CONDITION: &str = "Ready";
/// Default of `spec.rayClusterDeletionDelaySeconds`.
pub const DEFAULT_DELETION_DELAY_SECONDS: i64 = 60;

/// Condition types of a RayService.
pub mod condition {
    /// Serve endpoints exist.
    pub const READY: &str = "Ready";
    /// A pending cluster is being prepared next to the active one.
    pub const UPGRADE_IN_PROGRESS: &str = "UpgradeInProgress";
    /// An incremental upgrade is being rolled back (`True` from rollback detection, `False` by suspension).
    pub const ROLLBACK_IN_PROGRESS: &str = "RollbackInProgress";
    /// `spec.suspend` is being carried out.
    pub const SUSPENDING: &str = "Suspending";
    /// Everything the RayService owns was deleted for `spec.suspend`.
    pub const SUSPENDED: &str = "Suspended";
    /// `Unknown` status.
    pub const UNKNOWN: &str = "Unknown";
}

/// Condition reasons of a RayService.
pub mod reason {
    /// No condition yet / resumed.
    pub const INITIALIZING: &str = "Initializing";
    /// `ray.io/initializing-timeout` passed while initializing.
    pub const INITIALIZING_TIMEOUT: &str = "InitializingTimeout";
    /// Serve endpoints dropped to 0.
    pub const ZERO_SERVE_ENDPOINTS: &str = "ZeroServeEndpoints";
    /// At least one serve endpoint.
    pub const NON_ZERO_SERVE_ENDPOINTS: &str = "NonZeroServeEndpoints";
    /// Active and pending clusters both named.
    pub const BOTH_ACTIVE_PENDING_CLUSTERS_EXIST: &str = "BothActivePendingClustersExist";
    /// Only an active cluster.
    pub const NO_PENDING_CLUSTER: &str = "NoPendingCluster";
    /// No active cluster outside initialization.
    pub const NO_ACTIVE_CLUSTER: &str = "NoActiveCluster";
    /// Validation failed.
    pub const VALIDATION_FAILED: &str = "ValidationFailed";
    /// The goal spec left the pending cluster's during an incremental upgrade (rollback).
    pub const DESIRED_CLUSTER_SPEC_CHANGED: &str = "DesiredClusterSpecChanged";
    /// `spec.suspend` became true.
    pub const SUSPEND_REQUESTED: &str = "SuspendRequested";
    /// Owned resources are being deleted.
    pub const SUSPEND_IN_PROGRESS: &str = "SuspendInProgress";
    /// Owned resources are gone.
    pub const SUSPEND_COMPLETE: &str = "SuspendComplete";
    /// `spec.suspend` became false after a suspension.
    pub const RAY_SERVICE_RESUMED: &str = "RayServiceResumed";
}

/// Condition messages of a RayService.
pub mod message {
    /// Initial Ready / UpgradeInProgress message.
    pub const INITIALIZING: &str = "RayService is initializing";
    /// Ready=True.
    pub const NON_ZERO_SERVE_ENDPOINTS: &str = "Number of serve endpoints is greater than 0";
    /// Ready True → False.
    pub const ZERO_SERVE_ENDPOINTS: &str = "Number of serve endpoints dropped to 0";
    /// UpgradeInProgress=True.
    pub const BOTH_ACTIVE_PENDING_CLUSTERS_EXIST: &str = "Both active and pending Ray clusters exist";
    /// UpgradeInProgress=False.
    pub const NO_PENDING_CLUSTER: &str = "Active Ray cluster exists and no pending Ray cluster";
    /// Suspending=True/SuspendRequested.
    pub const SUSPEND_REQUESTED: &str =
        "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.";
    /// Ready=False/SuspendInProgress.
    pub const SUSPENDING: &str = "RayService is suspending.";
    /// UpgradeInProgress=False while suspending or suspended.
    pub const NO_UPGRADE: &str = "No upgrade in progress.";
    /// RollbackInProgress=False while suspending or suspended.
    pub const NO_ROLLBACK: &str = "No rollback in progress.";
    /// Suspending=True/SuspendInProgress while owned resources remain (our wording).
    pub const SUSPEND_DELETING: &str = "Deleting the RayClusters and Services owned by this RayService.";
    /// Suspending=False and Suspended=True once everything is gone (our wording).
    pub const SUSPEND_COMPLETE: &str = "All RayClusters and Services owned by this RayService are deleted.";
    /// Ready=False/SuspendComplete (our wording).
    pub const SUSPENDED: &str = "RayService is suspended.";
    /// Suspended=False/RayServiceResumed (our wording).
    pub const RESUMED: &str = "Spec.Suspend is false; the RayService is resuming.";
    /// Ready / UpgradeInProgress re-added after resuming.
    pub const INITIALIZING_AFTER_RESUME: &str = "RayService is initializing after resuming from suspend.";
    /// UpgradeInProgress=Unknown.
    pub const NO_ACTIVE_CLUSTER: &str = "No active Ray cluster exists, and the RayService is not initializing. Please open a GitHub issue in the KubeRay repository.";
}

/// Event reasons of the RayService controller.
pub mod event_reason {
    /// The incremental-upgrade Gateway was created.
    pub const CREATED_GATEWAY: &str = "CreatedGateway";
    /// Creating the Gateway failed.
    pub const FAILED_TO_CREATE_GATEWAY: &str = "FailedToCreateGateway";
    /// The Gateway was updated.
    pub const UPDATED_GATEWAY: &str = "UpdatedGateway";
    /// Updating the Gateway failed.
    pub const FAILED_TO_UPDATE_GATEWAY: &str = "FailedToUpdateGateway";
    /// The incremental-upgrade HTTPRoute was created.
    pub const CREATED_HTTP_ROUTE: &str = "CreatedHTTPRoute";
    /// Creating the HTTPRoute failed.
    pub const FAILED_TO_CREATE_HTTP_ROUTE: &str = "FailedToCreateHTTPRoute";
    /// The HTTPRoute was updated (new weights).
    pub const UPDATED_HTTP_ROUTE: &str = "UpdatedHTTPRoute";
    /// Updating the HTTPRoute failed.
    pub const FAILED_TO_UPDATE_HTTP_ROUTE: &str = "FailedToUpdateHTTPRoute";
    /// Invalid metadata.
    pub const INVALID_RAY_SERVICE_METADATA: &str = "InvalidRayServiceMetadata";
    /// Invalid spec.
    pub const INVALID_RAY_SERVICE_SPEC: &str = "InvalidRayServiceSpec";
    /// A cluster was created.
    pub const CREATED_RAY_CLUSTER: &str = "CreatedRayCluster";
    /// Creating a cluster failed.
    pub const FAILED_TO_CREATE_RAY_CLUSTER: &str = "FailedToCreateRayCluster";
    /// A cluster was updated in place.
    pub const UPDATED_RAY_CLUSTER: &str = "UpdatedRayCluster";
    /// Updating a cluster failed.
    pub const FAILED_TO_UPDATE_RAY_CLUSTER: &str = "FailedToUpdateRayCluster";
    /// A dangling cluster was deleted.
    pub const DELETED_RAY_CLUSTER: &str = "DeletedRayCluster";
    /// Deleting a dangling cluster failed.
    pub const FAILED_TO_DELETE_RAY_CLUSTER: &str = "FailedToDeleteRayCluster";
    /// The serve config was submitted.
    pub const UPDATED_SERVE_APPLICATIONS: &str = "UpdatedServeApplications";
    /// Submitting the serve config failed.
    pub const FAILED_TO_UPDATE_SERVE_APPLICATIONS: &str = "FailedToUpdateServeApplications";
    /// The head pod's `ray.io/serve` label changed.
    pub const UPDATED_HEAD_POD_SERVE_LABEL: &str = "UpdatedHeadPodServeLabel";
    /// A RayService-owned service was created.
    pub const CREATED_SERVICE: &str = "CreatedService";
    /// Creating a service failed.
    pub const FAILED_TO_CREATE_SERVICE: &str = "FailedToCreateService";
    /// A RayService-owned service was pointed at another cluster.
    pub const UPDATED_SERVICE: &str = "UpdatedService";
    /// Updating a service failed.
    pub const FAILED_TO_UPDATE_SERVICE: &str = "FailedToUpdateService";
    /// Updating the head pod's serve label failed.
    pub const FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL: &str = "FailedToUpdateHeadPodServeLabel";
    /// The initializing timeout passed.
    pub const RAY_SERVICE_INITIALIZING_TIMEOUT: &str = "RayServiceInitializingTimeout";
}

/// Why the serve config is (not) submitted (`checkIfNeedSubmitServeApplications`).
pub mod submit_reason {
    /// Nothing cached for the cluster.
    pub const NOTHING_CACHED: &str = "Nothing has been cached for the cluster.";
    /// The cluster runs no application.
    pub const NO_APPLICATION: &str = "No Serve application found in the RayCluster. A possible reason is that the head Pod crashed and GCS FT was not enabled.";
    /// The spec changed since the last submission.
    pub const CONFIG_CHANGED: &str = "Current V2 Serve config doesn't match cached Serve config.";
    /// Nothing to do.
    pub const CONFIG_MATCHES: &str = "Current V2 Serve config matches cached Serve config.";
}

/// Prefix of a failed serve status read.
pub const SERVE_STATUS_FAILED_PREFIX: &str = "failed to get Serve application statuses from the dashboard. If you observe this error consistently, please check https://docs.ray.io/en/latest/cluster/kubernetes/troubleshooting/rayservice-troubleshooting.html for more details. err: ";

/// Prefix of a failed serve-config submission error.
pub const SUBMIT_FAILED_PREFIX: &str = "fail to create / update Serve applications. If you observe this error consistently, please check \"Issue 5: Fail to create / update Serve applications.\" in https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting/rayservice-troubleshooting.html#kuberay-raysvc-troubleshoot for more details. err: ";

/// Operator settings the plan reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RayServicePlanConfig {
    /// The `ENABLE_ZERO_DOWNTIME` environment variable, when set.
    pub enable_zero_downtime: Option<String>,
    /// Gate `RayServiceIncrementalUpgrade`.
    pub incremental_upgrade_gate: bool,
}

/// `ShouldReconcile` for `spec.managedBy`: absent or `ray.io/kuberay-operator`.
pub fn managed_by_operator(service: &RayService) -> bool {
    service
        .spec
        .managed_by
        .as_deref()
        .is_none_or(|m| m == KUBERAY_CONTROLLER)
}

/// What the finalizer step of a pass does, right after the dangling-cluster cleanup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalizerStep {
    /// Nothing: the finalizer is present and the RayService is not being deleted.
    Proceed,
    /// Add `ray.io/rayservice-finalizer` and requeue.
    Add,
    /// Being deleted with clusters left: requeue until they are gone.
    WaitForClusters,
    /// Being deleted, no cluster left: remove the finalizer.
    Remove,
}

/// The finalizer step, given how many RayClusters this RayService still owns.
pub fn finalizer_step(service: &RayService, owned_clusters: usize) -> FinalizerStep {
    let has_finalizer = service
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == RAY_SERVICE_FINALIZER));
    if service.metadata.deletion_timestamp.is_some() {
        if owned_clusters > 0 {
            FinalizerStep::WaitForClusters
        } else {
            FinalizerStep::Remove
        }
    } else if has_finalizer {
        FinalizerStep::Proceed
    } else {
        FinalizerStep::Add
    }
}

/// `isZeroDowntimeUpgradeEnabled`: an explicit `upgradeStrategy.type` decides (the env var is then
/// ignored); without one, only `ENABLE_ZERO_DOWNTIME=false` (any case) turns it off.
pub fn zero_downtime_enabled(service: &RayService, config: &RayServicePlanConfig) -> bool {
    match service.spec.upgrade_strategy.as_ref().and_then(|s| s.type_.as_ref()) {
        Some(RayServiceUpgradeType::NewCluster) => true,
        Some(RayServiceUpgradeType::NewClusterWithIncrementalUpgrade) => config.incremental_upgrade_gate,
        Some(_) => false,
        None => !config
            .enable_zero_downtime
            .as_deref()
            .is_some_and(|v| v.eq_ignore_ascii_case(ZERO_DOWNTIME_DISABLED)),
    }
}

fn annotation<'a>(cluster: &'a RayCluster, key: &str) -> Option<&'a str> {
    cluster.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

/// `isClusterSpecHashEqual`: whether the goal `rayClusterConfig` hashes like `cluster`'s annotation.
/// With `only_appended`, the goal's worker groups are first cut to the cluster's
/// `ray.io/num-worker-groups` (worker groups appended at the end do not count); like KubeRay, an
/// unreadable count answers `true` and a goal with fewer groups than the cluster answers `false`.
pub fn cluster_hash_equal(service: &RayService, cluster: &RayCluster, only_appended: bool) -> bool {
    let cluster_hash = annotation(cluster, HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_ANNOTATION).unwrap_or_default();
    let mut goal = service.spec.ray_cluster_config.clone();
    if only_appended {
        let Some(count) = annotation(cluster, NUM_WORKER_GROUPS_ANNOTATION).and_then(|n| n.parse::<usize>().ok())
        else {
            return true;
        };
        let groups = goal.worker_group_specs.get_or_insert_with(Vec::new);
        if groups.len() < count {
            return false;
        }
        groups.truncate(count);
        if count == 0 {
            goal.worker_group_specs = None;
        }
    }
    rayservice_cluster_hash(&goal) == cluster_hash
}

/// `shouldUpdateCluster`: the active cluster (not during an upgrade) when its operator version
/// differs; either cluster when the spec differs from it only by worker groups appended at the end.
pub fn should_update_cluster(service: &RayService, cluster: &RayCluster, active: bool) -> bool {
    if active {
        let upgrading = service
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .is_some_and(|c| conditions::is_true(c, condition::UPGRADE_IN_PROGRESS));
        if upgrading {
            return false;
        }
        if annotation(cluster, KUBERAY_VERSION_ANNOTATION) != Some(KUBERAY_VERSION) {
            return true;
        }
    }
    !cluster_hash_equal(service, cluster, false) && cluster_hash_equal(service, cluster, true)
}

/// `shouldPrepareNewCluster`: a fresh RayService, or a cluster spec change (not only appended
/// worker groups) with zero-downtime upgrades enabled. Never while the pending cluster serves.
pub fn should_prepare_new_cluster(
    service: &RayService,
    active: Option<&RayCluster>,
    pending: Option<&RayCluster>,
    pending_serving: bool,
    config: &RayServicePlanConfig,
) -> bool {
    if pending_serving {
        return false;
    }
    let Some(cluster) = pending.or(active) else {
        return true;
    };
    if cluster_hash_equal(service, cluster, false) || cluster_hash_equal(service, cluster, true) {
        return false;
    }
    zero_downtime_enabled(service, config)
}

/// What `reconcileRayCluster` does to the clusters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterAction {
    /// Nothing.
    None,
    /// Create the pending cluster named in the status.
    CreatePending {
        /// Its name.
        name: String,
    },
    /// Rebuild the active cluster in place (operator version changed or worker groups appended).
    UpdateActive,
    /// Rebuild the pending cluster in place (worker groups appended).
    UpdatePending,
}

fn pending_name(status: &RayServiceStatuses) -> Option<&str> {
    status
        .pending_service_status
        .as_ref()
        .and_then(|s| s.ray_cluster_name.as_deref())
        .filter(|n| !n.is_empty())
}

fn active_name(status: &RayServiceStatuses) -> Option<&str> {
    status
        .active_service_status
        .as_ref()
        .and_then(|s| s.ray_cluster_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// The active cluster named in the status, if any.
pub fn active_cluster_name(service: &RayService) -> Option<&str> {
    service.status.as_ref().and_then(active_name)
}

/// The pending cluster named in the status, if any.
pub fn pending_cluster_name(service: &RayService) -> Option<&str> {
    service.status.as_ref().and_then(pending_name)
}

/// `reconcileRayCluster`'s decision given the active and pending clusters found by name.
pub fn plan_cluster(service: &RayService, active: Option<&RayCluster>, pending: Option<&RayCluster>) -> ClusterAction {
    if let Some(name) = pending_cluster_name(service)
        && pending.is_none()
    {
        return ClusterAction::CreatePending { name: name.to_owned() };
    }
    if active.is_some_and(|c| should_update_cluster(service, c, true)) {
        return ClusterAction::UpdateActive;
    }
    if pending.is_some_and(|c| should_update_cluster(service, c, false)) {
        return ClusterAction::UpdatePending;
    }
    ClusterAction::None
}

/// The in-place update of `existing` to `goal` (built from the spec): spec, labels and annotations
/// replaced, the existing `suspend` kept, everything else of the stored object kept.
pub fn updated_cluster(existing: &RayCluster, goal: RayCluster) -> RayCluster {
    let mut updated = existing.clone();
    let suspend = existing.spec.suspend;
    updated.spec = goal.spec;
    updated.spec.suspend = suspend;
    updated.metadata.labels = goal.metadata.labels;
    updated.metadata.annotations = goal.metadata.annotations;
    updated
}

/// `checkIfNeedSubmitServeApplications(cached, current, apps)`: whether to PUT, and why.
pub fn need_submit_serve_config(
    cached: &str,
    current: &str,
    apps: &BTreeMap<String, AppStatus>,
) -> (bool, &'static str) {
    if cached.is_empty() {
        (true, submit_reason::NOTHING_CACHED)
    } else if apps.is_empty() {
        (true, submit_reason::NO_APPLICATION)
    } else if cached != current {
        (true, submit_reason::CONFIG_CHANGED)
    } else {
        (false, submit_reason::CONFIG_MATCHES)
    }
}

/// The body of `PUT /api/serve/applications/`: `serveConfigV2` (YAML) as JSON.
pub fn serve_config_json(serve_config_v2: &str) -> Result<serde_json::Value, String> {
    ray_api::yaml::from_yaml_str::<serde_json::Value>(serve_config_v2).map_err(|e| e.to_string())
}

/// One deployment of `GET /api/serve/applications/?api_type=declarative`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ServeDeploymentDetails {
    /// Deployment status.
    #[serde(default)]
    pub status: String,
    /// Message.
    #[serde(default)]
    pub message: String,
}

/// One application of the serve details.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ServeApplicationDetails {
    /// Application status.
    #[serde(default)]
    pub status: String,
    /// Message.
    #[serde(default)]
    pub message: String,
    /// Deployments by name.
    #[serde(default)]
    pub deployments: BTreeMap<String, ServeDeploymentDetails>,
}

/// The part of the serve details document the controller reads.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ServeDetails {
    /// Applications by name (`""` is the default application).
    #[serde(default)]
    pub applications: BTreeMap<String, ServeApplicationDetails>,
}

/// `getAndCheckServeStatus`: application statuses by name (`""` renamed `default`).
pub fn application_statuses(details: &ServeDetails) -> BTreeMap<String, AppStatus> {
    details
        .applications
        .iter()
        .map(|(name, app)| {
            let name = if name.is_empty() {
                DEFAULT_SERVE_APP_NAME.to_owned()
            } else {
                name.clone()
            };
            let deployments = app
                .deployments
                .iter()
                .map(|(dep, d)| {
                    (
                        dep.clone(),
                        ServeDeploymentStatus {
                            status: Some(d.status.as_str().into()),
                            message: Some(d.message.clone()),
                        },
                    )
                })
                .collect();
            (
                name,
                AppStatus {
                    serve_deployment_statuses: Some(deployments),
                    status: Some(app.status.as_str().into()),
                    message: Some(app.message.clone()),
                },
            )
        })
        .collect()
}

/// A cluster serves when it runs at least one application and all are `RUNNING`.
pub fn applications_ready(apps: &BTreeMap<String, AppStatus>) -> bool {
    !apps.is_empty()
        && apps
            .values()
            .all(|a| a.status.as_ref() == Some(&ApplicationStatus::Running))
}

/// The cluster a RayService-owned service selects (`ray.io/cluster` of its selector).
pub fn selected_cluster(service: &Service) -> Option<&str> {
    service
        .spec
        .as_ref()?
        .selector
        .as_ref()?
        .get(RAY_CLUSTER_LABEL)
        .map(String::as_str)
}

/// What to do with one RayService-owned service (`reconcileServices`).
#[derive(Clone, Debug, PartialEq)]
pub enum ServiceSync {
    /// Create it.
    Create(Service),
    /// Replace the stored service's spec (the cluster changed).
    Update(Service),
    /// Keep it (it already selects the goal cluster).
    Unchanged(Service),
}

/// `reconcileServices`: create a missing service; update only when the selected cluster changes
/// (whole spec replaced, the stored `clusterIP` kept); otherwise leave the stored one alone.
pub fn sync_service(desired: Service, existing: Option<&Service>) -> ServiceSync {
    let Some(existing) = existing else {
        return ServiceSync::Create(desired);
    };
    if selected_cluster(&desired) == selected_cluster(existing) {
        return ServiceSync::Unchanged(existing.clone());
    }
    let mut spec = desired.spec.unwrap_or_default();
    spec.cluster_ip = existing.spec.as_ref().and_then(|s| s.cluster_ip.clone());
    let mut updated = existing.clone();
    updated.spec = Some(spec);
    ServiceSync::Update(updated)
}

fn set_condition(status: &mut RayServiceStatuses, type_: &str, value: &str, reason: &str, message: &str, now: &Time) {
    let generation = status.observed_generation;
    let list = status.conditions.get_or_insert_with(Vec::new);
    conditions::set(list, type_, value, reason, message, now);
    if let Some(c) = list.iter_mut().find(|c| c.type_ == type_) {
        c.observed_generation = generation;
    }
}

fn find_condition<'a>(status: &'a RayServiceStatuses, type_: &str) -> Option<&'a Condition> {
    status.conditions.as_deref().and_then(|c| conditions::find(c, type_))
}

/// `calculateConditions`: `Ready` from `numServeEndpoints`, `UpgradeInProgress` from the cluster
/// names, `serviceStatus` mirroring `Ready`.
pub fn calculate_conditions(status: &mut RayServiceStatuses, now: &Time) {
    if status.conditions.as_ref().is_none_or(Vec::is_empty) {
        set_condition(
            status,
            condition::READY,
            FALSE,
            reason::INITIALIZING,
            message::INITIALIZING,
            now,
        );
        set_condition(
            status,
            condition::UPGRADE_IN_PROGRESS,
            FALSE,
            reason::INITIALIZING,
            message::INITIALIZING,
            now,
        );
    }
    if status.num_serve_endpoints.unwrap_or(0) > 0 {
        set_condition(
            status,
            condition::READY,
            TRUE,
            reason::NON_ZERO_SERVE_ENDPOINTS,
            message::NON_ZERO_SERVE_ENDPOINTS,
            now,
        );
    } else if find_condition(status, condition::READY).is_some_and(|c| c.status == TRUE) {
        set_condition(
            status,
            condition::READY,
            FALSE,
            reason::ZERO_SERVE_ENDPOINTS,
            message::ZERO_SERVE_ENDPOINTS,
            now,
        );
    }
    match (active_name(status).is_some(), pending_name(status).is_some()) {
        (true, true) => set_condition(
            status,
            condition::UPGRADE_IN_PROGRESS,
            TRUE,
            reason::BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            message::BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            now,
        ),
        (true, false) => set_condition(
            status,
            condition::UPGRADE_IN_PROGRESS,
            FALSE,
            reason::NO_PENDING_CLUSTER,
            message::NO_PENDING_CLUSTER,
            now,
        ),
        (false, _) => {
            let initializing = find_condition(status, condition::UPGRADE_IN_PROGRESS)
                .is_some_and(|c| c.reason == reason::INITIALIZING || c.reason == reason::INITIALIZING_TIMEOUT);
            if !initializing {
                set_condition(
                    status,
                    condition::UPGRADE_IN_PROGRESS,
                    condition::UNKNOWN,
                    reason::NO_ACTIVE_CLUSTER,
                    message::NO_ACTIVE_CLUSTER,
                    now,
                );
            }
        }
    }
    let ready = status
        .conditions
        .as_deref()
        .is_some_and(|c| conditions::is_true(c, condition::READY));
    status.service_status = Some(if ready {
        ServiceStatus::Running
    } else {
        ServiceStatus::NotRunning
    });
}

/// The validation failure status: `Ready=False/ValidationFailed` with the error as message.
pub fn validation_failed_status(service: &RayService, error: &str, now: &Time) -> RayServiceStatuses {
    let mut status = service.status.clone().unwrap_or_default();
    status.observed_generation = service.metadata.generation;
    set_condition(
        &mut status,
        condition::READY,
        FALSE,
        reason::VALIDATION_FAILED,
        error,
        now,
    );
    status
}

/// Everything [`calculate_status`] reads besides the RayService (status already carrying this
/// pass's application statuses).
#[derive(Clone, Debug)]
pub struct StatusInputs<'a> {
    /// The active cluster object.
    pub active: Option<&'a RayCluster>,
    /// The pending cluster object.
    pub pending: Option<&'a RayCluster>,
    /// The cluster both services select after this pass's service reconcile (`None` when they
    /// were not reconciled: no cluster ready).
    pub services_cluster: Option<String>,
    /// Ready serve endpoints.
    pub num_serve_endpoints: i32,
    /// The name a new pending cluster gets if one is needed (`<rs>-<5 random>`).
    pub new_cluster_name: String,
    /// The time of this pass.
    pub now: Time,
    /// What the incremental-upgrade steps observed (`None` when not upgrading incrementally).
    pub incremental: Option<IncrementalInputs>,
}

/// The incremental-upgrade observations [`calculate_status`] reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IncrementalInputs {
    /// The HTTPRoute's weights of the active and pending serve services after this pass.
    pub route_weights: (Option<i32>, Option<i32>),
    /// Whether the pending cluster's Serve applications are healthy (`None`: no pending cluster).
    pub pending_healthy: Option<bool>,
}

/// Why [`calculate_status`] could not finish.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StatusError {
    /// The services select a cluster that is neither active nor pending.
    #[error("the services point to RayCluster {0}, which is neither the active nor the pending cluster")]
    ServicesPointElsewhere(String),
}

/// `calculateStatus`: observed generation, cluster statuses, promotion of the pending cluster
/// once the services select it, a new pending cluster when needed, `numServeEndpoints`,
/// conditions and `serviceStatus`.
pub fn calculate_status(
    service: &RayService,
    mut status: RayServiceStatuses,
    inputs: &StatusInputs<'_>,
    config: &RayServicePlanConfig,
) -> Result<RayServiceStatuses, StatusError> {
    status.observed_generation = service.metadata.generation;
    status
        .active_service_status
        .get_or_insert_with(Default::default)
        .ray_cluster_status = inputs.active.and_then(|c| c.status.clone());
    status
        .pending_service_status
        .get_or_insert_with(Default::default)
        .ray_cluster_status = inputs.pending.and_then(|c| c.status.clone());
    let incremental = inputs
        .incremental
        .as_ref()
        .filter(|_| incremental_enabled(service, config));
    let mut pending_serving = false;
    if let Some(cluster) = inputs.services_cluster.as_deref()
        && active_name(&status) != Some(cluster)
        && pending_name(&status) != Some(cluster)
    {
        return Err(StatusError::ServicesPointElsewhere(cluster.to_owned()));
    }
    if let Some(cluster) = inputs.services_cluster.as_deref() {
        pending_serving = pending_name(&status) == Some(cluster);
        let promote = match incremental {
            // Incremental: promoted once the traffic moved completely (or, fresh, once serving).
            Some(observed) => {
                record_route_weights(&mut status, observed.route_weights, &inputs.now);
                if is_condition_true(&status, condition::UPGRADE_IN_PROGRESS) {
                    pending_name(&status).is_some() && upgrade_complete(&status)
                } else {
                    active_name(&status).is_none() && pending_name(&status).is_some()
                }
            }
            None => active_name(&status) != Some(cluster),
        };
        if promote {
            status.active_service_status = status.pending_service_status.take();
            status.pending_service_status = Some(RayServiceStatus::default());
        }
    }
    let mut pending_cluster = inputs.pending;
    let rollback_done = incremental.is_some_and(|observed| {
        rolling_back(&status) && active_name(&status).is_some() && rollback_complete(&status, observed.pending_healthy)
    });
    if rollback_done {
        status.pending_service_status = Some(RayServiceStatus::default());
        pending_cluster = None;
    }
    if !rolling_back(&status)
        && should_prepare_new_cluster(service, inputs.active, pending_cluster, pending_serving, config)
    {
        let capacity = incremental.map(|_| {
            if active_name(&status).is_some() {
                0
            } else {
                FULL_PERCENT
            }
        });
        status.pending_service_status = Some(RayServiceStatus {
            ray_cluster_name: Some(inputs.new_cluster_name.clone()),
            target_capacity: capacity,
            ..RayServiceStatus::default()
        });
    }
    status.num_serve_endpoints = Some(inputs.num_serve_endpoints);
    calculate_conditions(&mut status, &inputs.now);
    if rollback_done {
        complete_rollback(&mut status, &inputs.now);
    }
    Ok(status)
}

fn service_status_differs(old: Option<&RayServiceStatus>, new: Option<&RayServiceStatus>) -> bool {
    let (old, new) = (old.cloned().unwrap_or_default(), new.cloned().unwrap_or_default());
    old.ray_cluster_name.unwrap_or_default() != new.ray_cluster_name.unwrap_or_default()
        || old.application_statuses.unwrap_or_default() != new.application_statuses.unwrap_or_default()
        || old.target_capacity != new.target_capacity
        || old.traffic_routed_percent != new.traffic_routed_percent
}

/// `inconsistentRayServiceStatuses`: whether `new` must be written (cluster status copies and
/// `lastUpdateTime` alone do not count).
pub fn status_changed(old: &RayServiceStatuses, new: &RayServiceStatuses) -> bool {
    old.service_status.clone().unwrap_or(ServiceStatus::NotRunning)
        != new.service_status.clone().unwrap_or(ServiceStatus::NotRunning)
        || old.num_serve_endpoints.unwrap_or(0) != new.num_serve_endpoints.unwrap_or(0)
        || old.observed_generation != new.observed_generation
        || old.conditions.clone().unwrap_or_default() != new.conditions.clone().unwrap_or_default()
        || service_status_differs(old.active_service_status.as_ref(), new.active_service_status.as_ref())
        || service_status_differs(old.pending_service_status.as_ref(), new.pending_service_status.as_ref())
}

/// Parses `ray.io/initializing-timeout`: a Go duration (`30m`, `1h30m`, `1.5s`) or integer seconds;
/// `None` unless it is positive.
pub fn parse_timeout(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<i64>() {
        return u64::try_from(seconds).ok().filter(|s| *s > 0).map(Duration::from_secs);
    }
    go_duration::parse(value).ok().filter(|d| !d.is_zero())
}

/// The outcome of the initializing-timeout check.
#[derive(Clone, Debug, PartialEq)]
pub struct InitializingTimeout {
    /// The status with both cluster names cleared and `Ready=False/InitializingTimeout`.
    pub status: RayServiceStatuses,
    /// The Warning event note.
    pub event: String,
}

/// `checkIfInitializingTimeout`: with the annotation set and `Ready=False/Initializing` for at
/// least the timeout, the RayService gives up (terminal).
pub fn check_initializing_timeout(service: &RayService, now: Timestamp) -> Option<InitializingTimeout> {
    let raw = service
        .metadata
        .annotations
        .as_ref()?
        .get(RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION)?;
    let timeout = parse_timeout(raw)?;
    let status = service.status.as_ref()?;
    let ready = find_condition(status, condition::READY)?;
    if ready.status != FALSE || ready.reason != reason::INITIALIZING {
        return None;
    }
    let since = ready.last_transition_time.0;
    let elapsed = since.duration_until(now);
    if elapsed < SignedDuration::try_from(timeout).ok()? {
        return None;
    }
    let elapsed = Duration::from_secs(u64::try_from(elapsed.as_secs()).unwrap_or(0));
    let (t, d) = (go_duration::format_secs(timeout), go_duration::format_secs(elapsed));
    let mut status = status.clone();
    status.active_service_status = Some(RayServiceStatus::default());
    status.pending_service_status = Some(RayServiceStatus::default());
    set_condition(
        &mut status,
        condition::READY,
        FALSE,
        reason::INITIALIZING_TIMEOUT,
        &format!(
            "RayService failed to become ready within the configured timeout of {t}. Time spent initializing: {d}"
        ),
        &Time(now),
    );
    Some(InitializingTimeout {
        status,
        event: format!("RayService initializing timeout exceeded after {d} (configured timeout: {t})"),
    })
}

/// `isInitializingTimeout`: `Ready=False/InitializingTimeout`.
pub fn is_initializing_timeout(service: &RayService) -> bool {
    service
        .status
        .as_ref()
        .and_then(|s| find_condition(s, condition::READY))
        .is_some_and(|c| c.status == FALSE && c.reason == reason::INITIALIZING_TIMEOUT)
}

/// What the suspend step of a pass does (`spec.suspend`, after validation).
#[derive(Clone, Debug, PartialEq)]
pub enum SuspendStep {
    /// Not suspending and not suspended: reconcile normally.
    Proceed,
    /// Write this status and stop the pass (suspension staged, resumed, or already suspended
    /// and unchanged when `None`).
    Stop(Option<Box<RayServiceStatuses>>),
    /// Suspending: delete every RayCluster and Service this RayService owns, then call
    /// [`suspend_progress`] with how many are left.
    DeleteOwned,
}

fn is_condition_true(status: &RayServiceStatuses, type_: &str) -> bool {
    find_condition(status, type_).is_some_and(|c| c.status == TRUE)
}

/// `handleSuspend`: staging when `spec.suspend` turns true, deleting while `Suspending` (even if
/// `spec.suspend` flips back: the suspension completes first), resuming when `Suspended` and
/// `spec.suspend` is false.
pub fn plan_suspend(service: &RayService, now: &Time) -> SuspendStep {
    let mut status = service.status.clone().unwrap_or_default();
    let requested = service.spec.suspend.unwrap_or(false);
    if is_condition_true(&status, condition::SUSPENDING) {
        return SuspendStep::DeleteOwned;
    }
    if is_condition_true(&status, condition::SUSPENDED) {
        if requested {
            return SuspendStep::Stop(None);
        }
        status.observed_generation = service.metadata.generation;
        set_condition(
            &mut status,
            condition::SUSPENDED,
            FALSE,
            reason::RAY_SERVICE_RESUMED,
            message::RESUMED,
            now,
        );
        let list = status.conditions.get_or_insert_with(Vec::new);
        conditions::remove(list, condition::READY);
        conditions::remove(list, condition::UPGRADE_IN_PROGRESS);
        for type_ in [condition::READY, condition::UPGRADE_IN_PROGRESS] {
            set_condition(
                &mut status,
                type_,
                FALSE,
                reason::INITIALIZING,
                message::INITIALIZING_AFTER_RESUME,
                now,
            );
        }
        return SuspendStep::Stop(Some(Box::new(status)));
    }
    if !requested {
        return SuspendStep::Proceed;
    }
    status.observed_generation = service.metadata.generation;
    set_condition(
        &mut status,
        condition::SUSPENDING,
        TRUE,
        reason::SUSPEND_REQUESTED,
        message::SUSPEND_REQUESTED,
        now,
    );
    for (type_, text) in [
        (condition::READY, message::SUSPENDING),
        (condition::UPGRADE_IN_PROGRESS, message::NO_UPGRADE),
        (condition::ROLLBACK_IN_PROGRESS, message::NO_ROLLBACK),
    ] {
        set_condition(&mut status, type_, FALSE, reason::SUSPEND_IN_PROGRESS, text, now);
    }
    status.active_service_status = Some(RayServiceStatus::default());
    status.pending_service_status = Some(RayServiceStatus::default());
    status.num_serve_endpoints = Some(0);
    status.service_status = Some(ServiceStatus::NotRunning);
    SuspendStep::Stop(Some(Box::new(status)))
}

/// The status while suspending, given how many owned RayClusters and Services are left.
pub fn suspend_progress(service: &RayService, remaining: usize, now: &Time) -> RayServiceStatuses {
    let mut status = service.status.clone().unwrap_or_default();
    status.observed_generation = service.metadata.generation;
    if remaining > 0 {
        set_condition(
            &mut status,
            condition::SUSPENDING,
            TRUE,
            reason::SUSPEND_IN_PROGRESS,
            message::SUSPEND_DELETING,
            now,
        );
        return status;
    }
    for (type_, value, text) in [
        (condition::SUSPENDING, FALSE, message::SUSPEND_COMPLETE),
        (condition::SUSPENDED, TRUE, message::SUSPEND_COMPLETE),
        (condition::READY, FALSE, message::SUSPENDED),
        (condition::UPGRADE_IN_PROGRESS, FALSE, message::NO_UPGRADE),
        (condition::ROLLBACK_IN_PROGRESS, FALSE, message::NO_ROLLBACK),
    ] {
        set_condition(&mut status, type_, value, reason::SUSPEND_COMPLETE, text, now);
    }
    status
}

/// Seconds old clusters wait before deletion: `rayClusterDeletionDelaySeconds` (default 60), 0
/// while the RayService is being deleted.
pub fn deletion_delay(service: &RayService) -> SignedDuration {
    if service.metadata.deletion_timestamp.is_some() {
        return SignedDuration::ZERO;
    }
    let seconds = service
        .spec
        .ray_cluster_deletion_delay_seconds
        .map_or(DEFAULT_DELETION_DELAY_SECONDS, i64::from);
    SignedDuration::from_secs(seconds.max(0))
}

/// The dangling-cluster cleanup: `owned` are the clusters labelled for this RayService; any that
/// is neither active nor pending (any, while the RayService is being deleted) gets a deletion time `now + delay` in `schedule` the first time it
/// is seen and is returned for deletion once that time passed. Entries of clusters no longer
/// owned are dropped from `schedule`.
pub fn dangling_clusters_to_delete(
    service: &RayService,
    owned: &[String],
    schedule: &mut BTreeMap<String, Timestamp>,
    now: Timestamp,
) -> Vec<String> {
    // While the RayService is being deleted every cluster it owns goes, active and pending too.
    let (active, pending) = if service.metadata.deletion_timestamp.is_some() {
        (None, None)
    } else {
        (active_cluster_name(service), pending_cluster_name(service))
    };
    schedule.retain(|name, _| owned.contains(name) && Some(name.as_str()) != active && Some(name.as_str()) != pending);
    let delay = deletion_delay(service);
    let mut delete = Vec::new();
    for name in owned {
        if Some(name.as_str()) == active || Some(name.as_str()) == pending {
            continue;
        }
        match schedule.get(name) {
            None => {
                schedule.insert(name.clone(), now.checked_add(delay).unwrap_or(now));
            }
            Some(at) if now > *at => delete.push(name.clone()),
            Some(_) => {}
        }
    }
    delete
}

/// The Secret holding a token-auth cluster's `auth_token` (`authOptions.secretName`, else the
/// cluster's name); `None` without token auth.
pub fn auth_secret_name(cluster: &RayCluster) -> Option<String> {
    if !auth_enabled(&cluster.spec) {
        return None;
    }
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    Some(
        cluster
            .spec
            .auth_options
            .as_ref()
            .and_then(|a| a.secret_name.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| check_name(name)),
    )
}

/// The `ray.io/serve` value the head pod should carry: `"false"` when excluded, else whether the
/// serve proxy answered its health check.
pub fn head_serve_label(service: &RayService, proxy_healthy: bool) -> &'static str {
    if service.spec.exclude_head_pod_from_serve_svc.unwrap_or(false) || !proxy_healthy {
        SERVE_LABEL_DISABLED
    } else {
        SERVE_LABEL_ENABLED
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
