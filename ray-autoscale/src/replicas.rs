//! Desired pod counts per worker group and the cluster-level replica totals written to the
//! RayCluster status (docs/autoscaling.md#desired-pods-and-status-totals).

/// CRD default of `maxReplicas` (and the value used when it is unset): `MaxInt32`.
pub const DEFAULT_MAX_REPLICAS: i32 = i32::MAX;
/// CRD default of `minReplicas` (and the value used when it is unset).
pub const DEFAULT_MIN_REPLICAS: i32 = 0;
/// CRD default of `numOfHosts`.
pub const DEFAULT_NUM_OF_HOSTS: i32 = 1;

/// The replica fields of one worker group, as plain numbers.
///
/// Built from a `ray_api` `WorkerGroupSpec` by the caller (see [`crate::from_api`]) or directly in
/// tests and benches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupReplicas {
    /// `replicas`; `None` is treated as "below the minimum".
    pub replicas: Option<i32>,
    /// `minReplicas`; `None` means 0.
    pub min_replicas: Option<i32>,
    /// `maxReplicas`; `None` means `MaxInt32`.
    pub max_replicas: Option<i32>,
    /// `numOfHosts`: pods per replica (NOT clamped: 0 drives the group to 0 pods).
    pub num_of_hosts: i32,
    /// `suspend == true`.
    pub suspend: bool,
}

impl Default for GroupReplicas {
    fn default() -> Self {
        Self {
            replicas: None,
            min_replicas: None,
            max_replicas: None,
            num_of_hosts: DEFAULT_NUM_OF_HOSTS,
            suspend: false,
        }
    }
}

impl GroupReplicas {
    /// `minReplicas` with the unset default applied.
    pub fn min_or_default(&self) -> i32 {
        self.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS)
    }

    /// `maxReplicas` with the unset default applied.
    pub fn max_or_default(&self) -> i32 {
        self.max_replicas.unwrap_or(DEFAULT_MAX_REPLICAS)
    }

    /// The replica count the operator works towards (`replicas` clamped to `[min, max]`, min winning
    /// when `min > max`; an unset `replicas` becomes `min`). Suspension is ignored here.
    pub fn clamped_replicas(&self) -> i32 {
        let min = self.min_or_default();
        match self.replicas {
            None => min,
            Some(r) if r < min => min,
            Some(r) if r > self.max_or_default() => self.max_or_default(),
            Some(r) => r,
        }
    }
}

/// KubeRay's `GetWorkerGroupDesiredReplicas`: the number of pods the operator wants for a group.
///
/// Exact (computed in 64 bits, so `MaxInt32 × numOfHosts` does not wrap as it does in Go) and never
/// negative: a negative `numOfHosts` or replica count yields 0 pods instead of Go's out-of-range
/// indexing during surplus deletion.
pub fn desired_pods(group: &GroupReplicas) -> i64 {
    if group.suspend {
        return 0;
    }
    (i64::from(group.clamped_replicas()) * i64::from(group.num_of_hosts)).max(0)
}

/// The desired replica count (pods / numOfHosts) of a group, i.e. `desired_pods` in replica units.
/// Used by the multi-host path, which creates and deletes whole replicas.
pub fn desired_replica_groups(group: &GroupReplicas) -> i64 {
    if group.suspend || group.num_of_hosts <= 0 {
        return 0;
    }
    i64::from(group.clamped_replicas()).max(0)
}

/// Go's int32 product of `desired replicas × numOfHosts` (wrapping), as summed into the status.
fn desired_pods_go_i32(group: &GroupReplicas) -> i32 {
    if group.suspend {
        return 0;
    }
    group.clamped_replicas().wrapping_mul(group.num_of_hosts)
}

/// `status.desiredWorkerReplicas` (`CalculateDesiredReplicas`): Σ desired pods over groups,
/// suspended groups contributing 0.
///
/// Quirk kept: int32 arithmetic that wraps on overflow, exactly like KubeRay, because the value is
/// observable in the status (use [`desired_pods`] for the exact per-group count).
pub fn cluster_desired_replicas(groups: &[GroupReplicas]) -> i32 {
    groups
        .iter()
        .fold(0i32, |acc, g| acc.wrapping_add(desired_pods_go_i32(g)))
}

/// `status.minWorkerReplicas` (`CalculateMinReplicas`): Σ `minReplicas × numOfHosts` over
/// non-suspended groups. Quirk kept: int32 wrapping arithmetic, as in KubeRay.
pub fn cluster_min_replicas(groups: &[GroupReplicas]) -> i32 {
    groups.iter().filter(|g| !g.suspend).fold(0i32, |acc, g| {
        acc.wrapping_add(g.min_or_default().wrapping_mul(g.num_of_hosts))
    })
}

/// `status.maxWorkerReplicas` (`CalculateMaxReplicas`): Σ `maxReplicas × numOfHosts` over
/// non-suspended groups, summed in 64 bits and saturated to the int32 range.
pub fn cluster_max_replicas(groups: &[GroupReplicas]) -> i32 {
    let total: i64 = groups
        .iter()
        .filter(|g| !g.suspend)
        .map(|g| i64::from(g.max_or_default()) * i64::from(g.num_of_hosts))
        .fold(0i64, i64::saturating_add);
    saturate_i32(total)
}

/// Clamp a 64-bit count into the int32 range of the status fields.
pub(crate) fn saturate_i32(value: i64) -> i32 {
    i32::try_from(value).unwrap_or(if value < 0 { i32::MIN } else { i32::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(replicas: Option<i32>, min: i32, max: i32, hosts: i32) -> GroupReplicas {
        GroupReplicas {
            replicas,
            min_replicas: Some(min),
            max_replicas: Some(max),
            num_of_hosts: hosts,
            suspend: false,
        }
    }

    #[test]
    fn golden_r1_nil_replicas_uses_min() {
        assert_eq!(desired_pods(&group(None, 1, 5, 1)), 1);
    }

    #[test]
    fn golden_r2_replicas_within_range() {
        assert_eq!(desired_pods(&group(Some(3), 1, 5, 1)), 3);
    }

    /// KubeRay's pod-generation case P91: min 1 / max 5, replicas nil → 1, 3 → 3, 6 → 5, 0 → 1;
    /// numOfHosts 4 × 5 → 20.
    #[test]
    fn golden_p91_desired_worker_pods() {
        assert_eq!(desired_pods(&group(None, 1, 5, 1)), 1);
        assert_eq!(desired_pods(&group(Some(3), 1, 5, 1)), 3);
        assert_eq!(desired_pods(&group(Some(6), 1, 5, 1)), 5);
        assert_eq!(desired_pods(&group(Some(0), 1, 5, 1)), 1);
        assert_eq!(desired_pods(&group(Some(5), 1, 5, 4)), 20);
    }

    #[test]
    fn golden_r4_replicas_below_min() {
        assert_eq!(desired_pods(&group(Some(0), 1, 5, 1)), 1);
    }

    #[test]
    fn golden_r5_suspended_group_with_min_above_max() {
        let g = GroupReplicas {
            suspend: true,
            ..group(Some(3), 5, 1, 1)
        };
        assert_eq!(desired_pods(&g), 0);
        // Not suspended, min wins over max.
        assert_eq!(desired_pods(&group(Some(3), 5, 1, 1)), 5);
    }

    #[test]
    fn golden_r7_min_max_times_hosts() {
        let one = [group(None, 2, 3, 1)];
        assert_eq!((cluster_min_replicas(&one), cluster_max_replicas(&one)), (2, 3));
        let four = [group(None, 2, 3, 4)];
        assert_eq!((cluster_min_replicas(&four), cluster_max_replicas(&four)), (8, 12));
    }

    #[test]
    fn golden_r8_two_groups_and_suspension() {
        let mut groups = vec![group(None, 4, 4, 1), group(None, 3, 3, 2)];
        assert_eq!((cluster_min_replicas(&groups), cluster_max_replicas(&groups)), (10, 10));
        for g in &mut groups {
            g.suspend = true;
        }
        assert_eq!((cluster_min_replicas(&groups), cluster_max_replicas(&groups)), (0, 0));
        assert_eq!(cluster_desired_replicas(&groups), 0);
    }

    #[test]
    fn golden_r10_max_replicas_saturation() {
        assert_eq!(cluster_max_replicas(&[group(None, 0, i32::MAX, 4)]), i32::MAX);
        assert_eq!(
            cluster_max_replicas(&[group(None, 0, 1_500_000_000, 2), group(None, 0, 1_000_000_000, 1)]),
            i32::MAX
        );
        assert_eq!(cluster_max_replicas(&[group(None, 0, 100, 4)]), 400);
        assert_eq!(cluster_max_replicas(&[group(None, 0, i32::MAX, 1)]), i32::MAX);
    }

    #[test]
    fn unset_min_and_max_use_defaults() {
        let g = GroupReplicas {
            replicas: Some(7),
            ..GroupReplicas::default()
        };
        assert_eq!(desired_pods(&g), 7);
        assert_eq!(cluster_max_replicas(std::slice::from_ref(&g)), i32::MAX);
        assert_eq!(cluster_min_replicas(&[g]), 0);
    }

    #[test]
    fn golden_r35_zero_hosts_gives_zero_pods() {
        assert_eq!(desired_pods(&group(Some(3), 0, 5, 0)), 0);
    }

    #[test]
    fn negative_hosts_never_give_negative_pods() {
        assert_eq!(desired_pods(&group(Some(3), 0, 5, -2)), 0);
        assert_eq!(desired_replica_groups(&group(Some(3), 0, 5, -2)), 0);
    }

    #[test]
    fn desired_total_wraps_like_go_but_per_group_is_exact() {
        let g = group(Some(i32::MAX), i32::MAX, i32::MAX, 4);
        assert_eq!(desired_pods(&g), i64::from(i32::MAX) * 4);
        assert_eq!(cluster_desired_replicas(&[g]), i32::MAX.wrapping_mul(4));
    }
}
