//! The `RayCronJob` kind (`ray.io/v1`): creates RayJobs on a cron schedule.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rayjob::RayJobSpec;

/// Desired state of a RayCronJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "ray.io",
    version = "v1",
    kind = "RayCronJob",
    plural = "raycronjobs",
    singular = "raycronjob",
    namespaced,
    status = "RayCronJobStatus",
    category = "all",
    derive = "PartialEq",
    derive = "Default",
    doc = "RayCronJob is the Schema for the raycronjobs API",
    printcolumn = r#"{"name":"schedule","type":"string","jsonPath":".spec.schedule"}"#,
    printcolumn = r#"{"name":"timezone","type":"string","jsonPath":".spec.timeZone"}"#,
    printcolumn = r#"{"name":"last schedule","type":"date","jsonPath":".status.lastScheduleTime"}"#,
    printcolumn = r#"{"name":"age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"suspend","type":"boolean","jsonPath":".spec.suspend"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RayCronJobSpec {
    /// Spec of every RayJob created.
    pub job_template: RayJobSpec,
    /// Cron schedule.
    pub schedule: String,
    /// Stops creating RayJobs while true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Time zone of the schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

/// Observed state of a RayCronJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RayCronJobStatus {
    /// When a RayJob was last created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,
}
