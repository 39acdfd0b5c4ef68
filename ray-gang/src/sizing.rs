//! Gang sizes: how many pods and how many resources a Ray cluster needs (KubeRay's
//! `GetWorkerGroupDesiredReplicas`, `CalculateDesiredReplicas`, `CalculateMinReplicas`,
//! `CalculateDesiredResources`, `CalculateMinResources` and Volcano's `calculatePodGroupParams`).
//!
//! Pod counts use Go's `int32` arithmetic (wrapping), resource multipliers are `i64`.
//! The head always counts as one pod; `numOfHosts` (default 1) multiplies worker replicas; a
//! suspended worker group counts zero.
//!
//! Quirk kept: desired *resources* use the raw `replicas` (nil → 0), not the clamped value the
//! desired *pod count* uses (docs/gang-scheduling.md#quirks-we-keep, golden cases G31/G32).

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

/// Resources of one head pod: container requests, plus limits of resources without a request (head template).
pub fn head_pod_resources(spec: &RayClusterSpec) -> Result<ResourceTotals, QuantityError> {
    pod_resources(
        spec.head_group_spec
            .template
            .spec
            .as_ref()
            .unwrap_or(&Default::default()),
    )
}

/// Resources of one pod of a worker group: container requests, plus limits of resources without a request.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::*;
    use proptest::prelude::*;
    use ray_api::quantity::Qty;
    use serde_json::json;

    fn group(replicas: Option<i32>, min: i32, max: i32, hosts: i32) -> WorkerGroupSpec {
        serde_json::from_value(worker_group(
            "g",
            replicas,
            Some(min),
            Some(max),
            Some(hosts),
            resources(&[("cpu", "1")], &[]),
        ))
        .unwrap()
    }

    fn totals(t: &ResourceTotals) -> std::collections::BTreeMap<String, String> {
        t.iter().map(|(k, q)| (k.clone(), q.to_string())).collect()
    }

    #[test]
    fn golden_g49_worker_group_desired_replicas() {
        assert_eq!(worker_group_desired_replicas(&group(None, 1, 5, 1)), 1);
        assert_eq!(worker_group_desired_replicas(&group(Some(3), 1, 5, 1)), 3);
        assert_eq!(worker_group_desired_replicas(&group(Some(6), 1, 5, 1)), 5);
        assert_eq!(worker_group_desired_replicas(&group(Some(0), 1, 5, 1)), 1);
        let mut suspended = group(Some(3), 1, 5, 1);
        suspended.suspend = Some(true);
        assert_eq!(worker_group_desired_replicas(&suspended), 0);
        assert_eq!(worker_group_desired_replicas(&group(Some(5), 1, 5, 4)), 20);
    }

    #[test]
    fn golden_g50_desired_replicas_of_two_groups() {
        let spec = |a: WorkerGroupSpec, b: WorkerGroupSpec| RayClusterSpec {
            worker_group_specs: Some(vec![a, b]),
            ..Default::default()
        };
        assert_eq!(
            desired_worker_replicas(&spec(group(None, 1, 5, 1), group(None, 2, 5, 1))),
            3
        );
        assert_eq!(
            desired_worker_replicas(&spec(group(Some(0), 2, 5, 1), group(Some(6), 2, 5, 1))),
            7
        );
        assert_eq!(
            desired_worker_replicas(&spec(group(Some(6), 2, 5, 1), group(Some(3), 2, 5, 1))),
            8
        );
        assert_eq!(
            desired_worker_replicas(&spec(group(Some(3), 1, 6, 4), group(Some(3), 2, 5, 1))),
            15
        );
    }

    #[test]
    fn golden_g52_desired_and_min_resources() {
        let spec = cluster_spec(
            resources(&[("cpu", "1"), ("memory", "100Mi")], &[]),
            vec![worker_group(
                "g",
                Some(4),
                Some(3),
                Some(10),
                Some(2),
                resources(&[("cpu", "1"), ("memory", "200Mi")], &[]),
            )],
        );
        assert_eq!(
            totals(&desired_resources(&spec).unwrap()),
            map(&[("cpu", "9"), ("memory", "1700Mi")])
        );
        assert_eq!(
            totals(&min_resources(&spec).unwrap()),
            map(&[("cpu", "7"), ("memory", "1300Mi")])
        );
    }

    #[test]
    fn golden_g53_two_groups_resources() {
        let spec = cluster_spec(
            resources(&[("cpu", "1"), ("memory", "100Mi")], &[]),
            vec![
                worker_group(
                    "a",
                    Some(2),
                    Some(1),
                    Some(10),
                    Some(2),
                    resources(&[("cpu", "2"), ("memory", "100Mi")], &[]),
                ),
                worker_group(
                    "b",
                    Some(3),
                    Some(0),
                    Some(10),
                    Some(1),
                    resources(&[("cpu", "1"), ("memory", "200Mi")], &[]),
                ),
            ],
        );
        assert_eq!(
            totals(&desired_resources(&spec).unwrap()),
            map(&[("cpu", "12"), ("memory", "1100Mi")])
        );
        assert_eq!(
            totals(&min_resources(&spec).unwrap()),
            map(&[("cpu", "5"), ("memory", "300Mi")])
        );
    }

    #[test]
    fn golden_g55_max_int32_replicas_do_not_overflow() {
        let spec = cluster_spec(
            resources(&[("cpu", "1"), ("memory", "100Mi")], &[]),
            vec![worker_group(
                "g",
                Some(i32::MAX),
                Some(i32::MAX),
                Some(i32::MAX),
                None,
                resources(&[("cpu", "1"), ("memory", "0")], &[]),
            )],
        );
        let expected = map(&[("cpu", "2147483648"), ("memory", "100Mi")]);
        assert_eq!(totals(&desired_resources(&spec).unwrap()), expected);
        assert_eq!(totals(&min_resources(&spec).unwrap()), expected);
    }

    #[test]
    fn golden_g56_pod_resources_requests_win_limits_fill() {
        let group: WorkerGroupSpec = serde_json::from_value(worker_group(
            "g",
            Some(1),
            None,
            None,
            None,
            resources(&[("cpu", "1")], &[("cpu", "1"), ("memory", "200Mi")]),
        ))
        .unwrap();
        let before = group.clone();
        assert_eq!(
            totals(&worker_pod_resources(&group).unwrap()),
            map(&[("cpu", "1"), ("memory", "200Mi")])
        );
        assert_eq!(group, before, "input requests unchanged");
    }

    #[test]
    fn zero_replica_groups_keep_their_keys() {
        let spec = cluster_spec(
            resources(&[("cpu", "1")], &[]),
            vec![worker_group(
                "gpu",
                Some(0),
                Some(0),
                Some(1),
                None,
                resources(&[("cpu", "1"), ("nvidia.com/gpu", "1")], &[]),
            )],
        );
        assert_eq!(
            totals(&desired_resources(&spec).unwrap()),
            map(&[("cpu", "1"), ("nvidia.com/gpu", "0")])
        );
    }

    #[test]
    fn autoscaling_switches_to_minimums() {
        let mut value = cluster_spec_json(
            resources(&[("cpu", "1")], &[]),
            vec![worker_group(
                "g",
                Some(4),
                Some(1),
                Some(5),
                Some(2),
                resources(&[("cpu", "1")], &[]),
            )],
        );
        let spec: RayClusterSpec = serde_json::from_value(value.clone()).unwrap();
        let off = pod_group_params(&spec).unwrap();
        assert_eq!(
            (off.min_member, off.min_resources["cpu"].to_string()),
            (9, "9".to_owned())
        );
        value["enableInTreeAutoscaling"] = json!(true);
        let spec: RayClusterSpec = serde_json::from_value(value).unwrap();
        let on = pod_group_params(&spec).unwrap();
        assert_eq!(
            (on.min_member, on.min_resources["cpu"].to_string()),
            (3, "3".to_owned())
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// `minMember` is 1 + Σ clamped desired pods; `minResources` is head + Σ raw replicas ×
        /// hosts × per-pod (exact, in milli-CPU), whatever the group mix.
        #[test]
        fn pod_group_params_match_the_formulas(
            groups in proptest::collection::vec(
                (proptest::option::of(0i32..50), 0i32..10, 0i32..60, 1i32..5, 1i64..4000, any::<bool>()),
                0..6,
            ),
            head_milli in 1i64..8000,
        ) {
            let head = resources(&[("cpu", &format!("{head_milli}m"))], &[]);
            let specs: Vec<_> = groups
                .iter()
                .enumerate()
                .map(|(i, (replicas, min, max, hosts, milli, suspend))| {
                    let mut g = worker_group(
                        &format!("g{i}"),
                        *replicas,
                        Some(*min),
                        Some(*max),
                        Some(*hosts),
                        resources(&[("cpu", &format!("{milli}m"))], &[]),
                    );
                    g["suspend"] = json!(suspend);
                    g
                })
                .collect();
            let spec = cluster_spec(head, specs);
            let params = pod_group_params(&spec).unwrap();
            let mut pods = 1i32;
            let mut milli = head_milli;
            for (replicas, min, max, hosts, per_pod, suspend) in &groups {
                if *suspend {
                    continue;
                }
                let clamped = match replicas {
                    None => *min,
                    Some(r) if r < min => *min,
                    Some(r) if r > max => *max,
                    Some(r) => *r,
                };
                pods += clamped * hosts;
                milli += i64::from(replicas.unwrap_or(0)) * i64::from(*hosts) * per_pod;
            }
            prop_assert_eq!(params.min_member, pods);
            prop_assert_eq!(&params.min_resources["cpu"], &Qty::from_milli(milli, ray_api::quantity::QuantityFormat::DecimalSI));
        }
    }
}
