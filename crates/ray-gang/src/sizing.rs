//! Gang sizes: how many pods and how many resources a Ray cluster needs (KubeRay's
//! `GetWorkerGroupDesiredReplicas`, `CalculateDesiredReplicas`, `CalculateMinReplicas`,
//! `CalculateDesiredResources`, `CalculateMinResources` and Volcano's `calculatePodGroupParams`).
//!
//! Pod counts use Go's `int32` arithmetic (wrapping), resource multipliers are `i64`.
//! The head always counts as one pod; `numOfHosts` (default 1) multiplies worker replicas; a
//! suspended worker group counts zero.
//!
//! Quirk kept: desired *resources* use the raw `replicas` (nil → 0), not the clamped value the
//! desired *pod count* uses (gang.md §1, G31/G32).

use ray_api::quantity::{QuantityError, ResourceTotals, pod_resources, scale_resources, sum_resources};
use ray_api::{RayClusterSpec, WorkerGroupSpec};

/// Default of `maxReplicas` when unset (CRD default).
const DEFAULT_MAX_REPLICAS: i32 = i32::MAX;

/// Whether in-tree autoscaling is on (`enableInTreeAutoscaling == true`).
pub fn autoscaling_enabled(spec: &RayClusterSpec) -> bool {
    spec.enable_in_tree_autoscaling == Some(true)
}

/// `numOfHosts` with its CRD default of 1.
pub fn num_of_hosts(group: &WorkerGroupSpec) -> i32 {
    group.num_of_hosts.unwrap_or(1)
}

/// Whether the group is suspended.
fn suspended(group: &WorkerGroupSpec) -> bool {
    group.suspend == Some(true)
}

/// The worker groups (none when unset).
fn groups(spec: &RayClusterSpec) -> &[WorkerGroupSpec] {
    spec.worker_group_specs.as_deref().unwrap_or_default()
}

/// Desired pods of one group: `replicas` clamped to `[minReplicas, maxReplicas]` (nil replicas →
/// minReplicas) × `numOfHosts`; 0 when suspended.
pub fn worker_group_desired_replicas(group: &WorkerGroupSpec) -> i32 {
    if suspended(group) {
        return 0;
    }
    let min = group.min_replicas.unwrap_or(0);
    let max = group.max_replicas.unwrap_or(DEFAULT_MAX_REPLICAS);
    let replicas = match group.replicas {
        None => min,
        Some(r) if r < min => min,
        Some(r) if r > max => max,
        Some(r) => r,
    };
    replicas.wrapping_mul(num_of_hosts(group))
}

/// Desired worker pods of the cluster (sum over groups, head excluded).
pub fn desired_worker_replicas(spec: &RayClusterSpec) -> i32 {
    groups(spec)
        .iter()
        .fold(0i32, |sum, g| sum.wrapping_add(worker_group_desired_replicas(g)))
}

/// Minimum worker pods: Σ over non-suspended groups of `minReplicas × numOfHosts`.
pub fn min_worker_replicas(spec: &RayClusterSpec) -> i32 {
    groups(spec).iter().filter(|g| !suspended(g)).fold(0i32, |sum, g| {
        sum.wrapping_add(g.min_replicas.unwrap_or(0).wrapping_mul(num_of_hosts(g)))
    })
}

/// Resources of one head pod (§6 rule on the head template).
pub fn head_pod_resources(spec: &RayClusterSpec) -> Result<ResourceTotals, QuantityError> {
    pod_resources(
        spec.head_group_spec
            .template
            .spec
            .as_ref()
            .unwrap_or(&Default::default()),
    )
}

/// Resources of one pod of a worker group (§6 rule on its template).
pub fn worker_pod_resources(group: &WorkerGroupSpec) -> Result<ResourceTotals, QuantityError> {
    pod_resources(group.template.spec.as_ref().unwrap_or(&Default::default()))
}

/// Head + Σ non-suspended groups of per-pod resources × `pods(group)`.
fn cluster_resources(
    spec: &RayClusterSpec,
    pods: impl Fn(&WorkerGroupSpec) -> i64,
) -> Result<ResourceTotals, QuantityError> {
    let mut lists = vec![head_pod_resources(spec)?];
    for group in groups(spec).iter().filter(|g| !suspended(g)) {
        lists.push(scale_resources(&worker_pod_resources(group)?, pods(group)));
    }
    Ok(sum_resources(&lists))
}

/// Desired resources: head + Σ non-suspended groups × raw `replicas`(nil → 0) × `numOfHosts`.
pub fn desired_resources(spec: &RayClusterSpec) -> Result<ResourceTotals, QuantityError> {
    cluster_resources(spec, |g| {
        i64::from(g.replicas.unwrap_or(0)) * i64::from(num_of_hosts(g))
    })
}

/// Minimum resources: head + Σ non-suspended groups × `minReplicas`(nil → 0) × `numOfHosts`.
pub fn min_resources(spec: &RayClusterSpec) -> Result<ResourceTotals, QuantityError> {
    cluster_resources(spec, |g| {
        i64::from(g.min_replicas.unwrap_or(0)) * i64::from(num_of_hosts(g))
    })
}

/// The size of a gang: its minimum pod count and the resources it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GangSize {
    /// Pods that must be schedulable together (head included).
    pub min_member: i32,
    /// Resources the whole gang needs.
    pub min_resources: ResourceTotals,
}

/// Volcano's gang size for a cluster spec: with autoscaling the minimum (`1 + min workers`, min
/// resources), otherwise the desired size (`1 + desired workers`, desired resources).
pub fn pod_group_params(spec: &RayClusterSpec) -> Result<GangSize, QuantityError> {
    if autoscaling_enabled(spec) {
        Ok(GangSize {
            min_member: min_worker_replicas(spec).wrapping_add(1),
            min_resources: min_resources(spec)?,
        })
    } else {
        Ok(GangSize {
            min_member: desired_worker_replicas(spec).wrapping_add(1),
            min_resources: desired_resources(spec)?,
        })
    }
}
