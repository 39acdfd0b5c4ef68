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

/// Go `omitempty` for a (non-pointer) `ResourceList`: nil and empty maps are both left out.
fn is_none_or_empty(value: &Option<BTreeMap<String, Quantity>>) -> bool {
    value.as_ref().is_none_or(BTreeMap::is_empty)
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
    #[serde(default, skip_serializing_if = "is_none_or_empty")]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::{BatchScheduler, DesiredPodGroup};
    use crate::test_fixtures::*;

    const GANG: (&str, &str) = ("ray.io/gang-scheduling-enabled", "true");

    fn desired(c: &RayCluster) -> PodGroup {
        match BatchScheduler::SchedulerPlugins.pod_group_for_cluster(c).unwrap() {
            Some(DesiredPodGroup::SchedulerPlugins(pg)) => pg,
            other => panic!("expected a scheduler-plugins PodGroup, got {other:?}"),
        }
    }

    #[test]
    fn golden_g44_t_cluster_sizes() {
        for (hosts, min_member, cpu, memory, gpu) in [(1, 3, "768m", "768Mi", "2"), (2, 5, "1280m", "1280Mi", "4")] {
            let pg = desired(&t_cluster(hosts, &[GANG]));
            assert_eq!(pg.spec.min_member, min_member);
            assert_eq!(
                strings(&pg.spec.min_resources),
                map(&[("cpu", cpu), ("memory", memory), ("nvidia.com/gpu", gpu)])
            );
            assert_eq!(pg.metadata.name.as_deref(), Some("raycluster-sample"));
            assert_eq!(pg.metadata.namespace.as_deref(), Some("default"));
            let owners = pg.metadata.owner_references.unwrap();
            assert_eq!(owners.len(), 1);
            assert_eq!(
                (owners[0].kind.as_str(), owners[0].name.as_str()),
                ("RayCluster", "raycluster-sample")
            );
            assert_eq!((owners[0].controller, owners[0].block_owner_deletion), (None, None));
        }
    }

    #[test]
    fn golden_g46_sample() {
        let c: RayCluster = sample("ray-cluster.scheduler-plugins.yaml", "RayCluster");
        let pg = desired(&c);
        assert_eq!(pg.metadata.name.as_deref(), Some("test-podgroup-0"));
        assert_eq!(pg.spec.min_member, 3);
        assert_eq!(strings(&pg.spec.min_resources), map(&[("cpu", "3"), ("memory", "4Gi")]));
        let value = serde_json::to_value(&pg).unwrap();
        assert_eq!(value["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
        assert_eq!(
            value["spec"],
            serde_json::json!({"minMember": 3, "minResources": {"cpu": "3", "memory": "4Gi"}})
        );
        // An empty list is left out, as Go's `omitempty` on a map does.
        let mut empty = pg.spec.clone();
        empty.min_resources = Some(BTreeMap::new());
        assert_eq!(
            serde_json::to_value(&empty).unwrap(),
            serde_json::json!({"minMember": 3})
        );
    }

    #[test]
    fn no_label_no_group_never_updated_and_jobs_rejected() {
        assert_eq!(
            BatchScheduler::SchedulerPlugins
                .pod_group_for_cluster(&t_cluster(1, &[]))
                .unwrap(),
            None
        );
        let pg = desired(&t_cluster(1, &[GANG]));
        let mut stale = pg.clone();
        stale.spec.min_member = 99;
        assert_eq!(plan_sync(Some(&stale), &pg), SyncPlan::Unchanged);
        assert_eq!(plan_sync(None, &pg), SyncPlan::Create(pg.clone()));
        let err = BatchScheduler::SchedulerPlugins
            .pod_group_for_job(&t_job(1, Some("K8sJobMode")))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "currently only RayCluster is supported, got *v1.RayJob"
        );
        // Autoscaling is ignored: desired replicas and resources.
        let mut spec = t_spec(1, true);
        spec["enableInTreeAutoscaling"] = serde_json::json!(true);
        let pg = desired(&cluster("raycluster-sample", &[GANG], spec));
        assert_eq!(pg.spec.min_member, 3);
    }

    #[test]
    fn pod_metadata() {
        let c = t_cluster(1, &[GANG]);
        let mut p = pod(&[("app", "x")]);
        BatchScheduler::SchedulerPlugins.decorate_pod(Parent::Cluster(&c), &mut p, "headgroup");
        assert_eq!(
            p.metadata.labels.unwrap(),
            map(&[("app", "x"), ("scheduling.x-k8s.io/pod-group", "raycluster-sample")])
        );
        assert_eq!(
            p.spec.unwrap().scheduler_name.as_deref(),
            Some("scheduler-plugins-scheduler")
        );
        let plain = t_cluster(1, &[]);
        let mut p = pod(&[]);
        BatchScheduler::SchedulerPlugins.decorate_pod(Parent::Cluster(&plain), &mut p, "headgroup");
        assert!(p.metadata.labels.unwrap_or_default().is_empty());
        assert_eq!(
            p.spec.unwrap().scheduler_name.as_deref(),
            Some("scheduler-plugins-scheduler")
        );
        assert_eq!(
            BatchScheduler::SchedulerPlugins.plugin_name(),
            "scheduler-plugins-scheduler"
        );
    }
}
