//! The `RayService` kind (`ray.io/v1`): Ray Serve applications on a RayCluster with zero-downtime
//! upgrades.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::raycluster::{RayClusterSpec, RayClusterStatus};
use crate::schema_util;
use crate::string_enum::open_string_enum;

/// Desired state of a RayService.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "ray.io",
    version = "v1",
    kind = "RayService",
    plural = "rayservices",
    singular = "rayservice",
    namespaced,
    status = "RayServiceStatuses",
    category = "all",
    derive = "PartialEq",
    derive = "Default",
    doc = "RayService is the Schema for the rayservices API",
    printcolumn = r#"{"name":"service status","type":"string","jsonPath":".status.serviceStatus"}"#,
    printcolumn = r#"{"name":"num serve endpoints","type":"string","jsonPath":".status.numServeEndpoints"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RayServiceSpec {
    /// Deprecated and unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_unhealthy_second_threshold: Option<i32>,
    /// Deprecated and unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_unhealthy_second_threshold: Option<i32>,
    /// Custom serve service template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve_service: Option<crate::Embedded<Service>>,
    /// Upgrade strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_strategy: Option<RayServiceUpgradeStrategy>,
    /// Serve multi-application config (YAML string).
    #[serde(default, rename = "serveConfigV2", skip_serializing_if = "Option::is_none")]
    pub serve_config_v2: Option<String>,
    /// Seconds before old clusters are deleted (default 60 in code, minimum 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub ray_cluster_deletion_delay_seconds: Option<i32>,
    /// Which controller reconciles this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = schema_util::managed_by_validations()))]
    pub managed_by: Option<String>,
    /// Template of the RayClusters this service creates.
    pub ray_cluster_config: RayClusterSpec,
    /// Labels the head pod `ray.io/serve=false` so it gets no serve traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_head_pod_from_serve_svc: Option<bool>,
    /// Deletes every owned resource while true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

open_string_enum! {
    /// `upgradeStrategy.type` of a RayService (a plain string in the CRD; checked by validation).
    pub enum RayServiceUpgradeType {
        /// Blue/green with gradual traffic shifting through the Gateway API.
        NewClusterWithIncrementalUpgrade = "NewClusterWithIncrementalUpgrade",
        /// Blue/green: a new cluster, then switch.
        NewCluster = "NewCluster",
        /// No zero-downtime upgrade.
        None = "None",
    }
}

/// `spec.upgradeStrategy` of a RayService.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RayServiceUpgradeStrategy {
    /// The strategy type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<RayServiceUpgradeType>,
    /// Options of the incremental upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_upgrade_options: Option<ClusterUpgradeOptions>,
}

/// `upgradeStrategy.clusterUpgradeOptions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = schema_util::require_cluster_upgrade_options)]
pub struct ClusterUpgradeOptions {
    /// Maximum capacity percent added per step (CRD default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 100))]
    pub max_surge_percent: Option<i32>,
    /// Traffic percent moved per step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_size_percent: Option<i32>,
    /// Seconds between steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_seconds: Option<i32>,
    /// Gateway class of the generated Gateway.
    #[serde(default)]
    pub gateway_class_name: String,
}

open_string_enum! {
    /// `status.serviceStatus` (deprecated mirror of the Ready condition).
    pub enum ServiceStatus {
        /// Not ready.
        NotRunning = "",
        /// Ready.
        Running = "Running",
    }
}

/// Observed state of a RayService.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RayServiceStatuses {
    /// Standard conditions (`Ready`, `UpgradeInProgress`, `RollbackInProgress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// Last status update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// Deprecated: `Running` when Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_status: Option<ServiceStatus>,
    /// The cluster serving traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_service_status: Option<RayServiceStatus>,
    /// The cluster being prepared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_service_status: Option<RayServiceStatus>,
    /// Ready serve endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_serve_endpoints: Option<i32>,
    /// Generation the status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Status of one of the RayService's clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RayServiceStatus {
    /// Serve applications by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_statuses: Option<BTreeMap<String, AppStatus>>,
    /// Serve target capacity percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_capacity: Option<i32>,
    /// Percent of traffic routed to this cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_routed_percent: Option<i32>,
    /// Last traffic migration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_traffic_migrated_time: Option<Time>,
    /// Cluster name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_cluster_name: Option<String>,
    /// Copy of the cluster's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_cluster_status: Option<RayClusterStatus>,
}

open_string_enum! {
    /// Serve application status.
    pub enum ApplicationStatus {
        /// Not started.
        NotStarted = "NOT_STARTED",
        /// Deploying.
        Deploying = "DEPLOYING",
        /// Running.
        Running = "RUNNING",
        /// Deployment failed.
        DeployFailed = "DEPLOY_FAILED",
        /// Being deleted.
        Deleting = "DELETING",
        /// Unhealthy.
        Unhealthy = "UNHEALTHY",
    }
}

open_string_enum! {
    /// Serve deployment status.
    pub enum DeploymentStatus {
        /// Updating.
        Updating = "UPDATING",
        /// Healthy.
        Healthy = "HEALTHY",
        /// Unhealthy.
        Unhealthy = "UNHEALTHY",
    }
}

/// Status of one Serve application.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppStatus {
    /// Deployments by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve_deployment_statuses: Option<BTreeMap<String, ServeDeploymentStatus>>,
    /// Application status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ApplicationStatus>,
    /// Status message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Status of one Serve deployment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServeDeploymentStatus {
    /// Deployment status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DeploymentStatus>,
    /// Status message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
