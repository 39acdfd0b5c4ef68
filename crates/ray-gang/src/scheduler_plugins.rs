//! scheduler-plugins coscheduling (`--batch-scheduler=scheduler-plugins`; pods get
//! `schedulerName: scheduler-plugins-scheduler`).
//!
//! A RayCluster with the `ray.io/gang-scheduling-enabled` label (any value) gets a
//! `scheduling.x-k8s.io/v1alpha1` [`PodGroup`] named after the cluster, created once and never
//! updated; its pods get the `scheduling.x-k8s.io/pod-group` label. RayJobs are rejected.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::CustomResource;
use ray_api::RayCluster;
use ray_api::quantity::to_resource_list;
use serde::{Deserialize, Serialize};

use crate::constants::{
    GANG_SCHEDULING_ENABLED_LABEL, SCHEDULER_PLUGINS_POD_GROUP_LABEL, SCHEDULER_PLUGINS_SCHEDULER_NAME,
};
use crate::error::GangError;
use crate::parent::{Child, Parent};
use crate::sizing::{desired_resources, desired_worker_replicas};
use crate::volcano::SyncPlan;

/// Go `omitempty` for an `int32`.
fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// Spec of a scheduler-plugins PodGroup.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "scheduling.x-k8s.io",
    version = "v1alpha1",
    kind = "PodGroup",
    plural = "podgroups",
    namespaced,
    status = "PodGroupStatus",
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// Pods that must be schedulable together.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_member: i32,
    /// Resources the whole gang needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_resources: Option<BTreeMap<String, Quantity>>,
    /// Scheduling timeout (never set by KubeRay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_timeout_seconds: Option<i32>,
}

/// Status of a scheduler-plugins PodGroup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    /// Phase (`Pending`, `Scheduling`, `Scheduled`, `Running`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The owner that occupies the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occupied_by: Option<String>,
    /// Running pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<i32>,
    /// Succeeded pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded: Option<i32>,
    /// Failed pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<i32>,
    /// When scheduling started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_start_time: Option<Time>,
}

/// Whether the parent has the gang label key (any value).
pub fn gang_enabled(parent: Parent<'_>) -> bool {
    parent.label(GANG_SCHEDULING_ENABLED_LABEL).is_some()
}

/// The PodGroup of a gang-enabled RayCluster (`None` without the label): name and namespace of the
/// cluster, one non-controller owner reference, `minMember = 1 + desired workers` (autoscaling is
/// ignored), `minResources` = desired resources.
pub fn pod_group_for_cluster(cluster: &RayCluster) -> Result<Option<PodGroup>, GangError> {
    let parent = Parent::Cluster(cluster);
    if !gang_enabled(parent) {
        return Ok(None);
    }
    let mut pod_group = PodGroup::new(
        parent.name(),
        PodGroupSpec {
            min_member: desired_worker_replicas(&cluster.spec).wrapping_add(1),
            min_resources: Some(to_resource_list(&desired_resources(&cluster.spec)?)),
            schedule_timeout_seconds: None,
        },
    );
    pod_group.metadata = ObjectMeta {
        name: Some(parent.name().to_owned()),
        namespace: Some(parent.namespace().to_owned()),
        owner_references: Some(vec![parent.owner_reference(false)]),
        ..Default::default()
    };
    Ok(Some(pod_group))
}

/// Create-only sync: create when the GET returned NotFound, never update.
pub fn plan_sync(existing: Option<&PodGroup>, desired: &PodGroup) -> SyncPlan<PodGroup> {
    match existing {
        None => SyncPlan::Create(desired.clone()),
        Some(_) => SyncPlan::Unchanged,
    }
}

/// scheduler-plugins' `AddMetadataToChildResource`: the pod-group label when the parent has the
/// gang label, and always `schedulerName: scheduler-plugins-scheduler`.
pub fn decorate(parent: Parent<'_>, child: &mut Child<'_>) {
    if gang_enabled(parent) {
        child.set_label(SCHEDULER_PLUGINS_POD_GROUP_LABEL, parent.name());
    }
    child.set_scheduler_name(SCHEDULER_PLUGINS_SCHEDULER_NAME);
}
