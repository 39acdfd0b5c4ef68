//! Volcano (`--batch-scheduler=volcano`, or the deprecated `--enable-batch-scheduler`).
//!
//! Every RayCluster and RayJob gets a `scheduling.volcano.sh/v1beta1` [`PodGroup`] named
//! `ray-<name>-pg` (a RayJob's cluster shares its job's group), and every pod is tied to it by
//! annotations. Hooks:
//! * [`pod_group_for_cluster`] / [`pod_group_for_job`]: the desired PodGroup (create form);
//! * [`plan_sync`]: what to write given the existing PodGroup (only `minMember` / `minResources`
//!   are ever updated);
//! * [`cleanup_step`] + [`cleanup_pod_group`]: shrinking the group when a RayJob finishes or is
//!   suspended;
//! * [`decorate`]: queue / priority labels, group annotations and `schedulerName` on children.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::CustomResource;
use ray_api::constants::{CRD_KIND_RAY_JOB, RAY_ORIGINATED_FROM_CR_NAME_LABEL, RAY_ORIGINATED_FROM_CRD_LABEL};
use ray_api::quantity::{ResourceTotals, parse_resource_list, resource_lists_equal, sum_resources, to_resource_list};
use ray_api::{RayCluster, RayJob};
use serde::{Deserialize, Serialize};

use crate::constants::{
    POD_GROUP_PHASE_PENDING, PRIORITY_CLASS_NAME_LABEL, VOLCANO_GROUP_NAME_ANNOTATION,
    VOLCANO_NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL, VOLCANO_NETWORK_TOPOLOGY_MODE_LABEL, VOLCANO_POD_GROUP_PREFIX,
    VOLCANO_POD_GROUP_SUFFIX, VOLCANO_QUEUE_LABEL, VOLCANO_SCHEDULER_NAME, VOLCANO_TASK_SPEC_ANNOTATION,
};
use crate::error::GangError;
use crate::parent::{Child, Parent};
use crate::sizing::{GangSize, pod_group_params};
use crate::submitter::volcano_submitter_resources;

/// Go `omitempty` for an `int32`.
fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// Spec of a Volcano PodGroup (the fields KubeRay reads or writes, with Go's `omitempty`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "scheduling.volcano.sh",
    version = "v1beta1",
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
    /// Per-task minimum members (never set by KubeRay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_task_member: Option<BTreeMap<String, i32>>,
    /// Queue name (`volcano.sh/queue-name` of the owner).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub queue: String,
    /// PriorityClass name (`ray.io/priority-class-name` of the owner).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
    /// Resources the whole gang needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_resources: Option<BTreeMap<String, Quantity>>,
    /// Network-topology constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_topology: Option<NetworkTopologySpec>,
}

/// `spec.networkTopology` of a Volcano PodGroup.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkTopologySpec {
    /// `hard` or `soft`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mode: String,
    /// Highest network tier the gang may span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_tier_allowed: Option<i64>,
}

/// Status of a Volcano PodGroup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    /// `Pending`, `Running`, `Unknown`, `Inqueue`, `Completed`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// Scheduling conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<PodGroupCondition>>,
    /// Running pods.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub running: i32,
    /// Succeeded pods.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub succeeded: i32,
    /// Failed pods.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: i32,
}

/// One `status.conditions` entry of a Volcano PodGroup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupCondition {
    /// `Scheduled`, `Unschedulable`, …
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// `True` / `False` / `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Id of the scheduling session that set the condition.
    #[serde(default, rename = "transitionID", skip_serializing_if = "Option::is_none")]
    pub transition_id: Option<String>,
    /// Last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Spec of a cluster-scoped Volcano Queue (used by samples and tests).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "scheduling.volcano.sh",
    version = "v1beta1",
    kind = "Queue",
    plural = "queues",
    schema = "disabled",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct QueueSpec {
    /// Share weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
    /// Upper bound of the queue's resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<BTreeMap<String, Quantity>>,
    /// Whether others may reclaim its resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaimable: Option<bool>,
}

/// The PodGroup name of an object: `ray-<name>-pg`, where a RayJob's cluster (labels
/// `ray.io/originated-from-crd=RayJob` and a non-empty `ray.io/originated-from-cr-name`) uses its
/// RayJob's name.
pub fn pod_group_name(meta: &ObjectMeta) -> String {
    let label = |key: &str| meta.labels.as_ref().and_then(|l| l.get(key)).map(String::as_str);
    let job_name = (label(RAY_ORIGINATED_FROM_CRD_LABEL) == Some(CRD_KIND_RAY_JOB))
        .then(|| label(RAY_ORIGINATED_FROM_CR_NAME_LABEL))
        .flatten()
        .filter(|name| !name.is_empty());
    let name = job_name.or(meta.name.as_deref()).unwrap_or_default();
    format!("{VOLCANO_POD_GROUP_PREFIX}{name}{VOLCANO_POD_GROUP_SUFFIX}")
}

/// Go's `strconv.Atoi` error reason for a non-integer.
fn atoi(value: &str) -> Result<i64, &'static str> {
    value.parse::<i64>().map_err(|err| match err.kind() {
        std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => "value out of range",
        _ => "invalid syntax",
    })
}

/// The PodGroup as created for `parent` with the given size (gang.md §1 "PodGroup object").
fn build(parent: Parent<'_>, size: &GangSize) -> Result<PodGroup, GangError> {
    let name = pod_group_name(parent.meta());
    let namespace = parent.namespace().to_owned();
    let network_topology = match parent.label(VOLCANO_NETWORK_TOPOLOGY_MODE_LABEL) {
        None => None,
        Some(mode) => {
            let highest_tier_allowed = match parent.label(VOLCANO_NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL) {
                None => None,
                Some(value) => Some(atoi(value).map_err(|reason| GangError::HighestTierNotInt {
                    value: value.to_owned(),
                    reason,
                    pod_group: name.clone(),
                    namespace: namespace.clone(),
                })?),
            };
            Some(NetworkTopologySpec {
                mode: mode.to_owned(),
                highest_tier_allowed,
            })
        }
    };
    // Go copies the owner's annotations into a non-nil map; an empty map is omitted on the wire.
    let annotations = parent.meta().annotations.clone().filter(|a| !a.is_empty());
    let mut pod_group = PodGroup::new(
        &name,
        PodGroupSpec {
            min_member: size.min_member,
            min_task_member: None,
            queue: parent.label(VOLCANO_QUEUE_LABEL).unwrap_or_default().to_owned(),
            priority_class_name: parent.label(PRIORITY_CLASS_NAME_LABEL).unwrap_or_default().to_owned(),
            min_resources: Some(to_resource_list(&size.min_resources)),
            network_topology,
        },
    );
    pod_group.metadata = ObjectMeta {
        name: Some(name),
        namespace: Some(namespace),
        annotations,
        owner_references: Some(vec![parent.owner_reference(true)]),
        ..Default::default()
    };
    pod_group.status = Some(PodGroupStatus {
        phase: POD_GROUP_PHASE_PENDING.to_owned(),
        ..Default::default()
    });
    Ok(pod_group)
}

/// The desired PodGroup of a RayCluster, or `None` for a cluster created by a RayJob (the job owns
/// the gang). Sized by [`pod_group_params`] on the cluster spec.
pub fn pod_group_for_cluster(cluster: &RayCluster) -> Result<Option<PodGroup>, GangError> {
    let parent = Parent::Cluster(cluster);
    if parent.is_cluster_of_job() {
        return Ok(None);
    }
    let size = pod_group_params(&cluster.spec)?;
    build(parent, &size).map(Some)
}

/// The gang size of a RayJob: the `rayClusterSpec` parameters, plus the submitter's resources
/// (cluster first) but not the submitter pod in `minMember`.
pub fn job_gang_size(job: &RayJob) -> Result<GangSize, GangError> {
    let Some(cluster_spec) = &job.spec.ray_cluster_spec else {
        return Err(GangError::JobWithExistingCluster {
            namespace: Parent::Job(job).namespace().to_owned(),
            name: Parent::Job(job).name().to_owned(),
        });
    };
    let cluster = pod_group_params(cluster_spec)?;
    let submitter = volcano_submitter_resources(&job.spec)?;
    Ok(GangSize {
        min_member: cluster.min_member,
        min_resources: sum_resources([&cluster.min_resources, &submitter]),
    })
}

/// The desired PodGroup of a RayJob (owner: the RayJob).
pub fn pod_group_for_job(job: &RayJob) -> Result<PodGroup, GangError> {
    build(Parent::Job(job), &job_gang_size(job)?)
}

/// What to write to make the PodGroup match.
#[derive(Clone, Debug, PartialEq)]
pub enum SyncPlan<T> {
    /// No PodGroup exists: create this one (an `AlreadyExists` reply counts as unchanged).
    Create(T),
    /// Update the existing PodGroup to this object (only `minMember` / `minResources` changed).
    Update(T),
    /// Nothing to write.
    Unchanged,
}

impl<T> SyncPlan<T> {
    /// Whether the plan writes anything (`changed` in KubeRay, barring `AlreadyExists`).
    pub fn changes(&self) -> bool {
        !matches!(self, SyncPlan::Unchanged)
    }
}

/// Whether an existing PodGroup needs an update: `minMember` differs, `minResources` is unset, or
/// the lists are not semantically equal (same names, equal values; `1Gi` == `1024Mi`). A list that
/// cannot be parsed counts as different.
pub fn needs_update(existing: &PodGroupSpec, desired: &PodGroupSpec) -> bool {
    if existing.min_member != desired.min_member {
        return true;
    }
    let Some(have) = &existing.min_resources else {
        return true;
    };
    let no_resources = BTreeMap::new();
    let want = desired.min_resources.as_ref().unwrap_or(&no_resources);
    match (parse_resource_list(have), parse_resource_list(want)) {
        (Ok(have), Ok(want)) => !resource_lists_equal(&have, &want),
        _ => true,
    }
}

/// Plans the sync of `desired` against the PodGroup read from the API (`None` = NotFound). An
/// update keeps everything of the existing object except `minMember` and `minResources`: queue,
/// priority, topology, annotations and owner references are never updated.
pub fn plan_sync(existing: Option<&PodGroup>, desired: &PodGroup) -> SyncPlan<PodGroup> {
    let Some(existing) = existing else {
        return SyncPlan::Create(desired.clone());
    };
    if !needs_update(&existing.spec, &desired.spec) {
        return SyncPlan::Unchanged;
    }
    let mut updated = existing.clone();
    updated.spec.min_member = desired.spec.min_member;
    updated.spec.min_resources = desired.spec.min_resources.clone();
    SyncPlan::Update(updated)
}

/// First step of `CleanupOnCompletion` for a RayJob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CleanupStep {
    /// Nothing to clean (`didCleanup = false`): clusterSelector mode, or no cluster recorded.
    Skip,
    /// Read this RayCluster (the job's `status.rayClusterName`) and call [`cleanup_pod_group`].
    ReadCluster {
        /// Name of the RayCluster, in the job's namespace.
        name: String,
    },
}

/// Decides whether a finished or suspending RayJob's PodGroup needs shrinking.
pub fn cleanup_step(job: &RayJob) -> CleanupStep {
    if job.spec.cluster_selector.as_ref().is_some_and(|s| !s.is_empty()) {
        return CleanupStep::Skip;
    }
    match job.status.as_ref().and_then(|s| s.ray_cluster_name.as_deref()) {
        Some(name) if !name.is_empty() => CleanupStep::ReadCluster { name: name.to_owned() },
        _ => CleanupStep::Skip,
    }
}

/// What the controller found when reading the job's RayCluster.
#[derive(Clone, Copy, Debug)]
pub enum LiveCluster<'a> {
    /// The GET returned NotFound.
    NotFound,
    /// The cluster exists (a deletion timestamp is detected from its metadata).
    Found(&'a RayCluster),
}

/// The PodGroup a finished RayJob should have: `minMember 0` and an empty `minResources` when its
/// cluster is gone or being deleted, otherwise sized from the **live** cluster spec (suspended
/// groups drop out; a SidecarMode head counts its submitter container). Feed the result to
/// [`plan_sync`]; `didCleanup` is whether that plan changes anything.
pub fn cleanup_pod_group(job: &RayJob, cluster: LiveCluster<'_>) -> Result<PodGroup, GangError> {
    let size = match cluster {
        LiveCluster::Found(live) if live.metadata.deletion_timestamp.is_none() => pod_group_params(&live.spec)?,
        _ => GangSize {
            min_member: 0,
            min_resources: ResourceTotals::new(),
        },
    };
    build(Parent::Job(job), &size)
}

/// Volcano's `AddMetadataToChildResource`: queue and priority labels (when non-empty on the
/// parent), the group-name and task-spec annotations, and `schedulerName: volcano`.
/// No `spec.priorityClassName` is set on pods.
pub fn decorate(parent: Parent<'_>, child: &mut Child<'_>, group_name: &str) {
    for key in [VOLCANO_QUEUE_LABEL, PRIORITY_CLASS_NAME_LABEL] {
        if let Some(value) = parent.non_empty_label(key) {
            child.set_label(key, value);
        }
    }
    child.set_annotation(VOLCANO_GROUP_NAME_ANNOTATION, &pod_group_name(parent.meta()));
    child.set_annotation(VOLCANO_TASK_SPEC_ANNOTATION, group_name);
    child.set_scheduler_name(VOLCANO_SCHEDULER_NAME);
}
