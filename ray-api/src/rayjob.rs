//! The `RayJob` kind (`ray.io/v1`): a Ray job submitted to a new or existing RayCluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::JsonNumber;
use crate::raycluster::{RayClusterSpec, RayClusterStatus};
use crate::schema_util;
use crate::string_enum::{closed_string_enum, open_string_enum};

/// Desired state of a RayJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "ray.io",
    version = "v1",
    kind = "RayJob",
    plural = "rayjobs",
    singular = "rayjob",
    namespaced,
    status = "RayJobStatus",
    category = "all",
    derive = "PartialEq",
    derive = "Default",
    doc = "RayJob is the Schema for the rayjobs API",
    printcolumn = r#"{"name":"job status","type":"string","jsonPath":".status.jobStatus"}"#,
    printcolumn = r#"{"name":"deployment status","type":"string","jsonPath":".status.jobDeploymentStatus"}"#,
    printcolumn = r#"{"name":"ray cluster name","type":"string","jsonPath":".status.rayClusterName"}"#,
    printcolumn = r#"{"name":"start time","type":"string","jsonPath":".status.startTime"}"#,
    printcolumn = r#"{"name":"end time","type":"string","jsonPath":".status.endTime"}"#,
    printcolumn = r#"{"name":"age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RayJobSpec {
    /// Seconds the job may run before it is failed with `DeadlineExceeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i32>,
    /// Retries of the whole RayJob (CRD default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub backoff_limit: Option<i32>,
    /// Spec of the RayCluster created for the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_cluster_spec: Option<RayClusterSpec>,
    /// Pod template of the submitter Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitter_pod_template: Option<PodTemplateSpec>,
    /// Job metadata passed to `ray job submit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    /// Selects an existing RayCluster (`ray.io/cluster: <name>`) instead of creating one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<BTreeMap<String, String>>,
    /// Settings of the submitter Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitter_config: Option<SubmitterConfig>,
    /// Which controller reconciles this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = schema_util::managed_by_validations()))]
    pub managed_by: Option<String>,
    /// What to delete when the job finishes (gate `RayJobDeletionPolicy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = schema_util::deletion_strategy_validations()))]
    pub deletion_strategy: Option<DeletionStrategy>,
    /// The job's entrypoint command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint: Option<String>,
    /// Runtime environment as a YAML string.
    #[serde(default, rename = "runtimeEnvYAML", skip_serializing_if = "Option::is_none")]
    pub runtime_env_yaml: Option<String>,
    /// Submission id; generated when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// How the job is submitted (CRD default `K8sJobMode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "K8sJobMode"))]
    pub submission_mode: Option<JobSubmissionMode>,
    /// Entrypoint custom resources as a JSON string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint_resources: Option<String>,
    /// CPUs reserved for the entrypoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_cpus: Option<JsonNumber>,
    /// GPUs reserved for the entrypoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_gpus: Option<JsonNumber>,
    /// Seconds after finishing before cleanup (CRD default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub ttl_seconds_after_finished: Option<i32>,
    /// Seconds allowed before the job reaches `Running` (minimum 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1))]
    pub pre_running_deadline_seconds: Option<i32>,
    /// Deletes the RayCluster when the job finishes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_after_job_finishes: Option<bool>,
    /// Suspends the job (deletes its cluster and submitter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

impl RayJobSpec {
    /// `shutdownAfterJobFinishes` with Go's zero value.
    pub fn shutdown_after_job_finishes(&self) -> bool {
        self.shutdown_after_job_finishes.unwrap_or(false)
    }

    /// `suspend` with Go's zero value.
    pub fn suspend(&self) -> bool {
        self.suspend.unwrap_or(false)
    }

    /// `submissionMode` with the CRD default.
    pub fn submission_mode(&self) -> JobSubmissionMode {
        self.submission_mode.clone().unwrap_or(JobSubmissionMode::K8sJobMode)
    }
}

/// `spec.submitterConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmitterConfig {
    /// `backoffLimit` of the submitter Job (KubeRay's default is 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
}

open_string_enum! {
    /// `spec.submissionMode` (the CRD field is a plain string with default `K8sJobMode`).
    pub enum JobSubmissionMode {
        /// A Kubernetes Job runs `ray job submit`.
        K8sJobMode = "K8sJobMode",
        /// The operator submits over the dashboard HTTP API.
        HttpMode = "HTTPMode",
        /// The user submits; the operator waits for `spec.jobId`.
        InteractiveMode = "InteractiveMode",
        /// A sidecar container in the head pod submits.
        SidecarMode = "SidecarMode",
    }
}

open_string_enum! {
    /// Ray job status as reported by the dashboard (`status.jobStatus`).
    pub enum JobStatus {
        /// Not yet known.
        New = "",
        /// Waiting to run.
        Pending = "PENDING",
        /// Running.
        Running = "RUNNING",
        /// Stopped by a user (terminal).
        Stopped = "STOPPED",
        /// Succeeded (terminal).
        Succeeded = "SUCCEEDED",
        /// Failed (terminal).
        Failed = "FAILED",
    }
}

impl JobStatus {
    /// Whether the Ray job will not change status any more.
    pub fn is_terminal(&self) -> bool {
        matches!(self, JobStatus::Stopped | JobStatus::Succeeded | JobStatus::Failed)
    }
}

open_string_enum! {
    /// The RayJob controller's own state (`status.jobDeploymentStatus`).
    pub enum JobDeploymentStatus {
        /// Just created.
        New = "",
        /// Creating the cluster.
        Initializing = "Initializing",
        /// The job runs.
        Running = "Running",
        /// Finished (terminal).
        Complete = "Complete",
        /// Failed (terminal).
        Failed = "Failed",
        /// The spec is invalid.
        ValidationFailed = "ValidationFailed",
        /// Being suspended.
        Suspending = "Suspending",
        /// Suspended.
        Suspended = "Suspended",
        /// Retrying after a failure.
        Retrying = "Retrying",
        /// Waiting for a user-submitted job (InteractiveMode).
        Waiting = "Waiting",
    }
}

impl JobDeploymentStatus {
    /// `Complete` or `Failed` (KubeRay's terminal helper).
    pub fn is_terminal(&self) -> bool {
        matches!(self, JobDeploymentStatus::Complete | JobDeploymentStatus::Failed)
    }
}

open_string_enum! {
    /// `status.reason` of a failed RayJob.
    pub enum JobFailedReason {
        /// The submitter failed.
        SubmissionFailed = "SubmissionFailed",
        /// `activeDeadlineSeconds` passed.
        DeadlineExceeded = "DeadlineExceeded",
        /// `preRunningDeadlineSeconds` passed.
        PreRunningDeadlineExceeded = "PreRunningDeadlineExceeded",
        /// The Ray application failed.
        AppFailed = "AppFailed",
        /// The deployment-status transition grace period passed.
        JobDeploymentStatusTransitionGracePeriodExceeded = "JobDeploymentStatusTransitionGracePeriodExceeded",
        /// The job status could not be checked in time.
        JobStatusCheckTimeoutExceeded = "JobStatusCheckTimeoutExceeded",
        /// The spec failed validation.
        ValidationFailed = "ValidationFailed",
    }
}

closed_string_enum! {
    /// What a deletion policy deletes.
    pub enum DeletionPolicyType {
        /// Delete the RayCluster.
        DeleteCluster = "DeleteCluster",
        /// Delete the worker pods only.
        DeleteWorkers = "DeleteWorkers",
        /// Delete the RayJob itself.
        DeleteSelf = "DeleteSelf",
        /// Delete nothing.
        DeleteNone = "DeleteNone",
    }
}

/// `spec.deletionStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionStrategy {
    /// Legacy policy on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_success: Option<DeletionPolicy>,
    /// Legacy policy on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<DeletionPolicy>,
    /// Rules with conditions and TTLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub deletion_rules: Option<Vec<DeletionRule>>,
}

/// A legacy deletion policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionPolicy {
    /// What to delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<DeletionPolicyType>,
}

/// One deletion rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionRule {
    /// What to delete.
    pub policy: DeletionPolicyType,
    /// When to delete it.
    #[schemars(extend("x-kubernetes-validations" = schema_util::deletion_condition_validations()))]
    pub condition: DeletionCondition,
}

/// The condition of a deletion rule: exactly one of `jobStatus` / `jobDeploymentStatus`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionCondition {
    /// Ray job status that triggers the rule (`SUCCEEDED` or `FAILED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["SUCCEEDED", "FAILED"]))]
    pub job_status: Option<JobStatus>,
    /// Deployment status that triggers the rule (`Failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Failed"]))]
    pub job_deployment_status: Option<JobDeploymentStatus>,
    /// Seconds to wait after the condition (CRD default 0, minimum 0).
    #[serde(default, rename = "ttlSeconds", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0, "minimum" = 0))]
    pub ttl_seconds: Option<i32>,
}

/// Observed state of a RayJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RayJobStatus {
    /// Start/end times reported by the dashboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_job_info: Option<RayJobStatusInfo>,
    /// Submission id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// Name of the RayCluster running the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_cluster_name: Option<String>,
    /// Dashboard address.
    #[serde(default, rename = "dashboardURL", skip_serializing_if = "Option::is_none")]
    pub dashboard_url: Option<String>,
    /// Ray job status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_status: Option<JobStatus>,
    /// Controller state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_deployment_status: Option<JobDeploymentStatus>,
    /// Failure reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<JobFailedReason>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the RayJob started initializing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the RayJob reached Complete/Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<Time>,
    /// Successful attempts (CRD default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub succeeded: Option<i32>,
    /// Failed attempts (CRD default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub failed: Option<i32>,
    /// Copy of the RayCluster's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_cluster_status: Option<RayClusterStatus>,
    /// When job status checks started failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_status_check_failure_start_time: Option<Time>,
    /// Generation the status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// `status.rayJobInfo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RayJobStatusInfo {
    /// Job start time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// Job end time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<Time>,
}
