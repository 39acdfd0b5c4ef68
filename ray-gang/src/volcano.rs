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
use kube_compat::go_strconv;
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

/// The PodGroup as created for `parent` with the given size (docs/gang-scheduling.md#volcano).
fn build(parent: Parent<'_>, size: &GangSize) -> Result<PodGroup, GangError> {
    let name = pod_group_name(parent.meta());
    let namespace = parent.namespace().to_owned();
    let network_topology = match parent.label(VOLCANO_NETWORK_TOPOLOGY_MODE_LABEL) {
        None => None,
        Some(mode) => {
            let highest_tier_allowed = match parent.label(VOLCANO_NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL) {
                None => None,
                Some(value) => Some(go_strconv::atoi(value).map_err(|err| GangError::HighestTierNotInt {
                    value: value.to_owned(),
                    reason: err.reason(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::{BatchScheduler, DesiredPodGroup};
    use crate::test_fixtures::*;
    use serde_json::json;

    fn volcano_cluster(cluster: &RayCluster) -> PodGroup {
        pod_group_for_cluster(cluster).unwrap().unwrap()
    }

    fn assert_size(pg: &PodGroup, min_member: i32, expected: &[(&str, &str)]) {
        assert_eq!(pg.spec.min_member, min_member, "minMember");
        assert_eq!(strings(&pg.spec.min_resources), map(expected), "minResources");
    }

    /// A job that has run: `status.rayClusterName` set.
    fn finished(mut job: RayJob, cluster_name: &str) -> RayJob {
        job.status = Some(serde_json::from_value(json!({"rayClusterName": cluster_name})).unwrap());
        job
    }

    /// A stale PodGroup as the API would return it.
    fn stale(job: &RayJob, min_member: i32, cpu: &str, memory: &str) -> PodGroup {
        let mut pg = pod_group_for_job(job).unwrap();
        pg.spec.min_member = min_member;
        pg.spec.min_resources = Some(BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
        ]));
        pg
    }

    /// The whole cleanup hook as the controller runs it: step, read, compute, plan.
    fn cleanup(job: &RayJob, live: LiveCluster<'_>, existing: Option<&PodGroup>) -> SyncPlan<PodGroup> {
        match cleanup_step(job) {
            CleanupStep::Skip => SyncPlan::Unchanged,
            CleanupStep::ReadCluster { name } => {
                assert_eq!(
                    Some(name.as_str()),
                    job.status.as_ref().unwrap().ray_cluster_name.as_deref()
                );
                plan_sync(existing, &cleanup_pod_group(job, live).unwrap())
            }
        }
    }

    #[test]
    fn golden_g01_cluster_without_autoscaling() {
        let pg = volcano_cluster(&t_cluster(1, &[]));
        assert_size(&pg, 3, &[("cpu", "768m"), ("memory", "768Mi"), ("nvidia.com/gpu", "2")]);
    }

    #[test]
    fn golden_g02_cluster_with_two_hosts() {
        let pg = volcano_cluster(&t_cluster(2, &[]));
        assert_size(
            &pg,
            5,
            &[("cpu", "1280m"), ("memory", "1280Mi"), ("nvidia.com/gpu", "4")],
        );
    }

    #[test]
    fn golden_g04_pod_group_names() {
        let sample = t_cluster(1, &[]);
        assert_eq!(pod_group_name(&sample.metadata), "ray-raycluster-sample-pg");
        assert_eq!(
            volcano_cluster(&sample).metadata.name.as_deref(),
            Some("ray-raycluster-sample-pg")
        );
        let job = t_job(1, Some("HTTPMode"));
        assert_eq!(pod_group_name(&job.metadata), "ray-rayjob-sample-pg");
        assert_eq!(
            pod_group_for_job(&job).unwrap().metadata.name.as_deref(),
            Some("ray-rayjob-sample-pg")
        );
        // The RayJob's cluster maps to the job's group and creates none itself.
        let job_cluster = cluster(
            "rayjob-sample-raycluster-abcde",
            &[
                ("ray.io/originated-from-crd", "RayJob"),
                ("ray.io/originated-from-cr-name", "rayjob-sample"),
            ],
            t_spec(1, false),
        );
        assert_eq!(pod_group_name(&job_cluster.metadata), "ray-rayjob-sample-pg");
        assert_eq!(pod_group_for_cluster(&job_cluster).unwrap(), None);
        // Only RayJob is substituted (a RayService cluster keeps its own name); an empty job name too.
        let service_cluster = cluster(
            "svc-raycluster-x",
            &[
                ("ray.io/originated-from-crd", "RayService"),
                ("ray.io/originated-from-cr-name", "svc"),
            ],
            t_spec(1, false),
        );
        assert_eq!(pod_group_name(&service_cluster.metadata), "ray-svc-raycluster-x-pg");
        let unnamed = cluster(
            "c",
            &[
                ("ray.io/originated-from-crd", "RayJob"),
                ("ray.io/originated-from-cr-name", ""),
            ],
            t_spec(1, false),
        );
        assert_eq!(pod_group_name(&unnamed.metadata), "ray-c-pg");
    }

    #[test]
    fn golden_g05_job_http_mode() {
        let job = t_job(1, Some("HTTPMode"));
        let pg = pod_group_for_job(&job).unwrap();
        assert_size(&pg, 3, &[("cpu", "768m"), ("memory", "768Mi")]);
        assert_eq!(pg.spec.queue, "test-queue");
        assert_eq!(pg.spec.priority_class_name, "test-priority");
        assert_eq!(pg.metadata.namespace.as_deref(), Some("default"));
        let owners = pg.metadata.owner_references.as_ref().unwrap();
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].kind, "RayJob");
        assert_eq!(owners[0].api_version, "ray.io/v1");
        assert_eq!(owners[0].name, "rayjob-sample");
        assert_eq!(owners[0].uid, "uid-rayjob-sample");
        assert_eq!(
            (owners[0].controller, owners[0].block_owner_deletion),
            (Some(true), Some(true))
        );
        assert_eq!(pg.status.as_ref().unwrap().phase, "Pending");
        assert_eq!(pg.metadata.labels, None);
        assert_eq!(pg.spec.min_task_member, None);
        assert_eq!(pg.spec.network_topology, None);
    }

    #[test]
    fn golden_g07_job_sidecar_mode() {
        let pg = pod_group_for_job(&t_job(1, Some("SidecarMode"))).unwrap();
        assert_size(&pg, 3, &[("cpu", "1268m"), ("memory", "968Mi")]);
    }

    #[test]
    fn golden_g08_job_two_hosts_by_mode() {
        for (mode, min_member, cpu, memory) in [
            ("HTTPMode", 5, "1280m", "1280Mi"),
            ("K8sJobMode", 5, "1780m", "1480Mi"),
            ("SidecarMode", 5, "1780m", "1480Mi"),
        ] {
            let pg = pod_group_for_job(&t_job(2, Some(mode))).unwrap();
            assert_eq!(pg.spec.min_member, min_member, "{mode}");
            assert_eq!(
                strings(&pg.spec.min_resources),
                map(&[("cpu", cpu), ("memory", memory)]),
                "{mode}"
            );
        }
    }

    #[test]
    fn job_modes_that_add_no_submitter() {
        for mode in [None, Some("HTTPMode"), Some("InteractiveMode")] {
            let pg = pod_group_for_job(&t_job(1, mode)).unwrap();
            assert_size(&pg, 3, &[("cpu", "768m"), ("memory", "768Mi")]);
        }
        // K8sJobMode with the default submitter adds 500m / 200Mi.
        let pg = pod_group_for_job(&t_job(1, Some("K8sJobMode"))).unwrap();
        assert_size(&pg, 3, &[("cpu", "1268m"), ("memory", "968Mi")]);
        // A user submitter template counts instead (requests win, limits fill).
        let mut job = t_job(1, Some("K8sJobMode"));
        job.spec.submitter_pod_template = Some(
            serde_json::from_value(template(
                "my-submitter",
                resources(&[("cpu", "100m")], &[("cpu", "1"), ("memory", "100Mi")]),
            ))
            .unwrap(),
        );
        assert_size(
            &pod_group_for_job(&job).unwrap(),
            3,
            &[("cpu", "868m"), ("memory", "868Mi")],
        );
    }

    #[test]
    fn job_in_cluster_selector_mode_is_an_error() {
        let mut job = t_job(1, Some("HTTPMode"));
        job.spec.ray_cluster_spec = None;
        job.spec.cluster_selector = Some(BTreeMap::from([("ray.io/cluster".to_owned(), "c".to_owned())]));
        let err = pod_group_for_job(&job).unwrap_err();
        assert_eq!(
            err.to_string(),
            "gang scheduling does not support RayJob default/rayjob-sample referencing an existing RayCluster"
        );
    }

    #[test]
    fn golden_g10_network_topology_mode_only() {
        let c = t_cluster(1, &[("volcano.sh/network-topology-mode", "hard")]);
        let topology = volcano_cluster(&c).spec.network_topology.unwrap();
        assert_eq!(topology.mode, "hard");
        assert_eq!(topology.highest_tier_allowed, None);
    }

    #[test]
    fn golden_g11_bad_highest_tier() {
        let c = t_cluster(
            1,
            &[
                ("volcano.sh/network-topology-mode", "soft"),
                ("volcano.sh/network-topology-highest-tier-allowed", "not-an-int"),
            ],
        );
        let err = pod_group_for_cluster(&c).unwrap_err().to_string();
        assert!(
            err.contains("failed to convert volcano.sh/network-topology-highest-tier-allowed label to int"),
            "{err}"
        );
        assert_eq!(
            err,
            "failed to convert volcano.sh/network-topology-highest-tier-allowed label to int: strconv.Atoi: \
             parsing \"not-an-int\": invalid syntax for podgroup ray-raycluster-sample-pg in namespace default"
        );
    }

    #[test]
    fn network_topology_with_tier_and_tier_without_mode() {
        let c = t_cluster(
            1,
            &[
                ("volcano.sh/network-topology-mode", "soft"),
                ("volcano.sh/network-topology-highest-tier-allowed", "2"),
            ],
        );
        let topology = volcano_cluster(&c).spec.network_topology.unwrap();
        assert_eq!(
            (topology.mode.as_str(), topology.highest_tier_allowed),
            ("soft", Some(2))
        );
        let c = t_cluster(1, &[("volcano.sh/network-topology-highest-tier-allowed", "x")]);
        assert_eq!(volcano_cluster(&c).spec.network_topology, None);
    }

    #[test]
    fn queue_priority_and_annotations_are_copied_at_creation() {
        let mut c = t_cluster(1, &[("volcano.sh/queue-name", ""), ("ray.io/priority-class-name", "p")]);
        c.metadata.annotations = Some(BTreeMap::from([("a".to_owned(), "b".to_owned())]));
        let pg = volcano_cluster(&c);
        assert_eq!(pg.spec.queue, "");
        assert_eq!(pg.spec.priority_class_name, "p");
        assert_eq!(pg.metadata.annotations, c.metadata.annotations);
        let owner = &pg.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("RayCluster", "raycluster-sample")
        );
        // The wire form: Volcano's group/version/kind and the spec keys.
        let value = serde_json::to_value(volcano_cluster(&t_cluster(1, &[]))).unwrap();
        assert_eq!(value["apiVersion"], "scheduling.volcano.sh/v1beta1");
        assert_eq!(value["kind"], "PodGroup");
        assert_eq!(
            value["spec"],
            json!({"minMember": 3, "minResources": {"cpu": "768m", "memory": "768Mi", "nvidia.com/gpu": "2"}})
        );
        assert_eq!(value["status"], json!({"phase": "Pending"}));
    }

    #[test]
    fn golden_g13_submitter_template_metadata() {
        let job = t_job(1, Some("K8sJobMode"));
        let mut template = pod_template();
        BatchScheduler::Volcano.decorate_pod_template(Parent::Job(&job), &mut template, "submittergroup");
        let meta = template.metadata.as_ref().unwrap();
        assert_eq!(
            meta.annotations.clone().unwrap(),
            map(&[
                ("scheduling.k8s.io/group-name", "ray-rayjob-sample-pg"),
                ("volcano.sh/task-spec", "submittergroup"),
            ])
        );
        assert_eq!(
            meta.labels.clone().unwrap(),
            map(&[
                ("ray.io/priority-class-name", "test-priority"),
                ("volcano.sh/queue-name", "test-queue")
            ])
        );
        let spec = template.spec.as_ref().unwrap();
        assert_eq!(spec.scheduler_name.as_deref(), Some("volcano"));
        assert_eq!(spec.priority_class_name, None, "no spec.priorityClassName on pods");
    }

    #[test]
    fn pods_of_a_job_cluster_join_the_job_group() {
        let job_cluster = cluster(
            "rayjob-sample-raycluster-abcde",
            &[
                ("ray.io/originated-from-crd", "RayJob"),
                ("ray.io/originated-from-cr-name", "rayjob-sample"),
            ],
            t_spec(1, false),
        );
        let mut head = pod(&[("app", "x")]);
        BatchScheduler::Volcano.decorate_pod(Parent::Cluster(&job_cluster), &mut head, "headgroup");
        assert_eq!(
            head.metadata.annotations.unwrap(),
            map(&[
                ("scheduling.k8s.io/group-name", "ray-rayjob-sample-pg"),
                ("volcano.sh/task-spec", "headgroup")
            ])
        );
        // Empty queue label: not copied.
        assert_eq!(head.metadata.labels.unwrap(), map(&[("app", "x")]));
        // The RayCluster child of a job: annotations with an empty task-spec, no schedulerName.
        let job = t_job(1, Some("K8sJobMode"));
        let mut child = cluster("rayjob-sample-raycluster-abcde", &[], t_spec(1, false));
        let before = child.spec.clone();
        BatchScheduler::Volcano.decorate_cluster(&job, &mut child);
        assert_eq!(child.spec, before);
        assert_eq!(child.metadata.annotations.unwrap()["volcano.sh/task-spec"], "");
    }

    #[test]
    fn golden_g14_cleanup_skips() {
        let c = t_cluster(1, &[]);
        assert_eq!(
            BatchScheduler::Volcano.cleanup_step(Parent::Cluster(&c)),
            CleanupStep::Skip
        );
        let mut selector = finished(t_job(1, Some("K8sJobMode")), "rayjob-sample-raycluster-abcde");
        selector.spec.cluster_selector = Some(BTreeMap::from([("ray.io/cluster".to_owned(), "c".to_owned())]));
        assert_eq!(
            BatchScheduler::Volcano.cleanup_step(Parent::Job(&selector)),
            CleanupStep::Skip
        );
        let no_cluster = finished(t_job(1, Some("K8sJobMode")), "");
        assert_eq!(
            BatchScheduler::Volcano.cleanup_step(Parent::Job(&no_cluster)),
            CleanupStep::Skip
        );
        assert_eq!(cleanup_step(&t_job(1, Some("K8sJobMode"))), CleanupStep::Skip);
        // Other schedulers never clean up.
        let job = finished(t_job(1, Some("K8sJobMode")), "c");
        assert_eq!(
            BatchScheduler::YuniKorn.cleanup_step(Parent::Job(&job)),
            CleanupStep::Skip
        );
        assert_eq!(
            BatchScheduler::YuniKorn
                .cleanup_pod_group(&job, LiveCluster::NotFound)
                .unwrap(),
            None
        );
    }

    #[test]
    fn golden_g16_cleanup_recomputes_from_the_live_cluster() {
        let job = finished(t_job(1, Some("K8sJobMode")), "rayjob-sample-raycluster-abcde");
        let live = cluster("rayjob-sample-raycluster-abcde", &[], t_spec(1, false));
        let existing = stale(&job, 10, "10", "10Gi");
        let SyncPlan::Update(pg) = cleanup(&job, LiveCluster::Found(&live), Some(&existing)) else {
            panic!("expected an update");
        };
        assert_size(&pg, 3, &[("cpu", "768m"), ("memory", "768Mi")]);
        // Only minMember and minResources change.
        assert_eq!(pg.metadata, existing.metadata);
        assert_eq!(pg.spec.queue, "test-queue");
    }

    #[test]
    fn golden_g17_cleanup_sidecar_mode_counts_the_head_submitter() {
        let job = finished(t_job(1, Some("SidecarMode")), "rayjob-sample-raycluster-abcde");
        let mut live = cluster("rayjob-sample-raycluster-abcde", &[], t_spec(1, false));
        let head = live.spec.head_group_spec.template.spec.as_mut().unwrap();
        let mut submitter = head.containers[0].clone();
        submitter.name = "submitter".to_owned();
        submitter.resources =
            Some(serde_json::from_value(resources(&[("cpu", "200m"), ("memory", "200Mi")], &[])).unwrap());
        head.containers.push(submitter);
        let existing = stale(&job, 10, "10", "10Gi");
        let plan = cleanup(&job, LiveCluster::Found(&live), Some(&existing));
        assert!(plan.changes());
        let SyncPlan::Update(pg) = plan else {
            panic!("expected an update")
        };
        assert_size(&pg, 3, &[("cpu", "968m"), ("memory", "968Mi")]);
    }

    #[test]
    fn golden_g19_cleanup_of_a_deleting_cluster_zeroes_the_group() {
        let job = finished(t_job(1, Some("K8sJobMode")), "rayjob-sample-raycluster-abcde");
        let mut live = cluster("rayjob-sample-raycluster-abcde", &[], t_spec(1, false));
        live.metadata.deletion_timestamp = Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap());
        let existing = pod_group_for_job(&job).unwrap();
        let SyncPlan::Update(pg) = cleanup(&job, LiveCluster::Found(&live), Some(&existing)) else {
            panic!("expected an update");
        };
        assert_eq!(pg.spec.min_member, 0);
        assert_eq!(pg.spec.min_resources, Some(BTreeMap::new()));
        let totals = parse_resource_list(pg.spec.min_resources.as_ref().unwrap()).unwrap();
        assert!(
            !totals.contains_key("cpu") && !totals.contains_key("memory"),
            "cpu and memory read as 0"
        );
        // On the wire: minMember omitted (omitempty), minResources {}.
        assert_eq!(
            serde_json::to_value(&pg.spec).unwrap(),
            json!({"queue": "test-queue", "priorityClassName": "test-priority", "minResources": {}})
        );
    }

    #[test]
    fn golden_g20_cleanup_twice_with_the_cluster_missing() {
        let job = finished(t_job(1, Some("K8sJobMode")), "rayjob-sample-raycluster-abcde");
        let mut stored = pod_group_for_job(&job).unwrap();
        let first = cleanup(&job, LiveCluster::NotFound, Some(&stored));
        assert!(first.changes(), "1st call: true");
        let SyncPlan::Update(pg) = first else {
            panic!("expected an update")
        };
        stored = pg;
        let second = cleanup(&job, LiveCluster::NotFound, Some(&stored));
        assert!(!second.changes(), "2nd call: false");
        assert_eq!(stored.spec.min_member, 0);
        assert_eq!(stored.spec.min_resources, Some(BTreeMap::new()));
        // A missing PodGroup is created with the zero values.
        let SyncPlan::Create(created) = cleanup(&job, LiveCluster::NotFound, None) else {
            panic!("expected a create");
        };
        assert_eq!(
            (created.spec.min_member, created.spec.min_resources),
            (0, Some(BTreeMap::new()))
        );
    }

    #[test]
    fn sync_updates_only_on_semantic_change() {
        let c = t_cluster(1, &[]);
        let desired = volcano_cluster(&c);
        assert_eq!(plan_sync(None, &desired), SyncPlan::Create(desired.clone()));
        assert_eq!(plan_sync(Some(&desired), &desired), SyncPlan::Unchanged);
        // 768Mi written as 805306368 and 0.768 as 768m: semantically equal, no write.
        let mut same = desired.clone();
        let list = same.spec.min_resources.as_mut().unwrap();
        list.insert("memory".to_owned(), Quantity("805306368".to_owned()));
        list.insert("cpu".to_owned(), Quantity("0.768".to_owned()));
        assert_eq!(plan_sync(Some(&same), &desired), SyncPlan::Unchanged);
        // Missing minResources, or a different key set, is an update.
        let mut none = desired.clone();
        none.spec.min_resources = None;
        assert!(plan_sync(Some(&none), &desired).changes());
        let mut extra = desired.clone();
        extra
            .spec
            .min_resources
            .as_mut()
            .unwrap()
            .insert("foo".to_owned(), Quantity("0".to_owned()));
        assert!(plan_sync(Some(&extra), &desired).changes());
        // Queue changes alone never update, and an update keeps the stored queue.
        let mut other_queue = desired.clone();
        other_queue.spec.queue = "q2".to_owned();
        assert_eq!(plan_sync(Some(&other_queue), &desired), SyncPlan::Unchanged);
        other_queue.spec.min_member = 9;
        let SyncPlan::Update(updated) = plan_sync(Some(&other_queue), &desired) else {
            panic!()
        };
        assert_eq!((updated.spec.min_member, updated.spec.queue.as_str()), (3, "q2"));
        // Through the scheduler enum.
        let d = DesiredPodGroup::Volcano(desired.clone());
        assert_eq!(BatchScheduler::Volcano.plan_sync(Some(&d), &d), SyncPlan::Unchanged);
        assert!(matches!(
            BatchScheduler::Volcano.plan_sync(None, &d),
            SyncPlan::Create(_)
        ));
    }

    #[test]
    fn autoscaling_uses_min_replicas() {
        let mut spec = t_spec(2, true);
        spec["enableInTreeAutoscaling"] = json!(true);
        let pg = volcano_cluster(&cluster("raycluster-sample", &[], spec));
        // 1 + min 1 × 2 hosts; head + 2 worker pods.
        assert_size(&pg, 3, &[("cpu", "768m"), ("memory", "768Mi"), ("nvidia.com/gpu", "2")]);
    }

    #[test]
    fn golden_g28_volcano_queue_sample() {
        let file = "ray-cluster.volcano-scheduler-queue.yaml";
        let c: RayCluster = sample(file, "RayCluster");
        let pg = volcano_cluster(&c);
        assert_eq!(pg.metadata.name.as_deref(), Some("ray-test-cluster-0-pg"));
        assert_size(&pg, 3, &[("cpu", "3"), ("memory", "4Gi")]);
        assert_eq!(pg.spec.queue, "kuberay-test-queue");
        let owner = &pg.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.api_version.as_str(), owner.kind.as_str(), owner.name.as_str()),
            ("ray.io/v1", "RayCluster", "test-cluster-0")
        );
        let queue: Queue = sample(file, "Queue");
        assert_eq!(queue.metadata.name.as_deref(), Some("kuberay-test-queue"));
        assert_eq!(queue.spec.weight, Some(1));
        assert_eq!(strings(&queue.spec.capability), map(&[("cpu", "4"), ("memory", "6Gi")]));
    }

    /// The gang-scheduling guide's walkthrough (002): `test-cluster-0` in `kuberay-test-queue`,
    /// head 1 CPU / 2Gi and two 1 CPU / 1Gi workers.
    #[test]
    fn walkthrough_volcano_guide_seed() {
        let spec = cluster_spec_json(
            resources(&[("cpu", "1"), ("memory", "2Gi")], &[("cpu", "1"), ("memory", "5Gi")]),
            vec![worker_group(
                "worker",
                Some(2),
                Some(2),
                Some(2),
                None,
                resources(&[("cpu", "1"), ("memory", "1Gi")], &[("cpu", "1"), ("memory", "1Gi")]),
            )],
        );
        let c = cluster(
            "test-cluster-0",
            &[("volcano.sh/queue-name", "kuberay-test-queue")],
            spec,
        );
        let Some(DesiredPodGroup::Volcano(pg)) = BatchScheduler::Volcano.pod_group_for_cluster(&c).unwrap() else {
            panic!("expected a Volcano PodGroup");
        };
        assert_eq!(pg.metadata.name.as_deref(), Some("ray-test-cluster-0-pg"));
        assert_eq!(pg.spec.queue, "kuberay-test-queue");
        assert_size(&pg, 3, &[("cpu", "3"), ("memory", "4Gi")]);
        // A second identical cluster gets its own group of the same size.
        let mut second = c.clone();
        second.metadata.name = Some("test-cluster-1".to_owned());
        let pg1 = volcano_cluster(&second);
        assert_eq!(pg1.metadata.name.as_deref(), Some("ray-test-cluster-1-pg"));
        assert_eq!(pg1.spec, pg.spec);
        // Its pods are tied to the group.
        let mut worker = pod(&[]);
        BatchScheduler::Volcano.decorate_pod(Parent::Cluster(&c), &mut worker, "worker");
        assert_eq!(
            worker.metadata.annotations.unwrap(),
            map(&[
                ("scheduling.k8s.io/group-name", "ray-test-cluster-0-pg"),
                ("volcano.sh/task-spec", "worker")
            ])
        );
        assert_eq!(
            worker.metadata.labels.unwrap(),
            map(&[("volcano.sh/queue-name", "kuberay-test-queue")])
        );
        assert_eq!(worker.spec.unwrap().scheduler_name.as_deref(), Some("volcano"));
    }

    #[test]
    fn golden_g29_head_only_sample() {
        let c: RayCluster = sample("ray-cluster.volcano-scheduler.yaml", "RayCluster");
        assert_size(&volcano_cluster(&c), 1, &[("cpu", "1"), ("memory", "2Gi")]);
    }

    fn quirk_cluster(replicas: Option<i32>, min: i32, max: i32) -> RayCluster {
        let spec = cluster_spec_json(
            resources(&[("cpu", "1"), ("memory", "2Gi")], &[]),
            vec![worker_group(
                "g",
                replicas,
                Some(min),
                Some(max),
                None,
                resources(&[("cpu", "1"), ("memory", "1Gi")], &[]),
            )],
        );
        cluster("quirk", &[], spec)
    }

    #[test]
    fn golden_g31_replicas_above_max_quirk() {
        let pg = volcano_cluster(&quirk_cluster(Some(5), 1, 3));
        assert_size(&pg, 4, &[("cpu", "6"), ("memory", "7Gi")]);
    }

    #[test]
    fn golden_g32_nil_replicas_quirk() {
        let pg = volcano_cluster(&quirk_cluster(None, 2, 5));
        assert_size(&pg, 3, &[("cpu", "1"), ("memory", "2Gi")]);
    }

    #[test]
    fn golden_g34_decimal_and_binary_memory() {
        let spec = cluster_spec_json(
            resources(&[("cpu", "500m"), ("memory", "1G")], &[]),
            vec![worker_group(
                "g",
                Some(1),
                Some(1),
                Some(1),
                None,
                resources(&[("cpu", "1"), ("memory", "1Gi")], &[]),
            )],
        );
        let pg = volcano_cluster(&cluster("mixed", &[], spec));
        assert_size(&pg, 2, &[("cpu", "1500m"), ("memory", "2073741824")]);
    }

    #[test]
    fn suspended_groups_drop_out() {
        let mut spec = t_spec(1, true);
        spec["workerGroupSpecs"][0]["suspend"] = json!(true);
        let pg = volcano_cluster(&cluster("raycluster-sample", &[], spec));
        assert_size(&pg, 1, &[("cpu", "256m"), ("memory", "256Mi")]);
    }
}
