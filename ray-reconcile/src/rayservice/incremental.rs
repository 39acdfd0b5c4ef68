//! The pure decisions of `NewClusterWithIncrementalUpgrade` (see `docs/rayservice.md`): the traffic
//! step (how the HTTPRoute weights move every `intervalSeconds`), the `target_capacity` step
//! (how each cluster's Serve capacity moves by `maxSurgePercent`), completion, and rollback
//! detection / completion.
//!
//! During a rollback the same steps run with the roles swapped: traffic and capacity move back
//! from the pending cluster to the active one.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use ray_api::{ClusterUpgradeOptions, RayCluster, RayService, RayServiceStatus, RayServiceStatuses};

use super::plan::{RayServicePlanConfig, cluster_hash_equal, condition, reason};
use crate::conditions::{self, TRUE};

/// Full capacity / all traffic, in percent.
pub const FULL_PERCENT: i32 = 100;
/// `maxSurgePercent` when unset (CRD default).
pub const DEFAULT_MAX_SURGE_PERCENT: i32 = 100;
/// Key of the Serve config carrying a cluster's target capacity.
pub const TARGET_CAPACITY_KEY: &str = "target_capacity";
/// `RollbackInProgress=True` message (our wording; KubeRay's is not part of the spec).
pub const ROLLBACK_MESSAGE: &str =
    "The RayService spec no longer matches the pending RayCluster; rolling traffic back to the active RayCluster";
/// `UpgradeInProgress=False` message once a rollback completed.
pub const ROLLBACK_COMPLETE_MESSAGE: &str = "Rollback complete, active Ray cluster exists and no pending Ray cluster";

/// Why an incremental-upgrade object could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IncrementalError {
    /// `upgradeStrategy.clusterUpgradeOptions` is missing.
    #[error("Missing RayService ClusterUpgradeOptions during upgrade.")]
    MissingOptions,
    /// The serve config is not valid YAML.
    #[error("invalid serveConfigV2: {0}")]
    ServeConfig(String),
}

/// Whether the RayService upgrades incrementally (`IsIncrementalUpgradeEnabled`: gate on and type
/// `NewClusterWithIncrementalUpgrade`).
pub fn incremental_enabled(service: &RayService, config: &RayServicePlanConfig) -> bool {
    config.incremental_upgrade_gate
        && service.spec.upgrade_strategy.as_ref().and_then(|s| s.type_.as_ref())
            == Some(&ray_api::RayServiceUpgradeType::NewClusterWithIncrementalUpgrade)
}

/// `spec.upgradeStrategy.clusterUpgradeOptions`, required by every incremental step.
pub fn upgrade_options(service: &RayService) -> Result<&ClusterUpgradeOptions, IncrementalError> {
    service
        .spec
        .upgrade_strategy
        .as_ref()
        .and_then(|u| u.cluster_upgrade_options.as_ref())
        .ok_or(IncrementalError::MissingOptions)
}

/// The HTTPRoute weights of the active and pending clusters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrafficWeights {
    /// Weight of `<active>-serve-svc`.
    pub active: i32,
    /// Weight of `<pending>-serve-svc`.
    pub pending: i32,
}

/// Which of the two clusters a step concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The active cluster.
    Active,
    /// The pending cluster.
    Pending,
}

fn side(status: &RayServiceStatuses, role: Role) -> Option<&RayServiceStatus> {
    match role {
        Role::Active => status.active_service_status.as_ref(),
        Role::Pending => status.pending_service_status.as_ref(),
    }
}

/// A cluster's `targetCapacity` (active defaults to 100, pending to 0).
pub fn target_capacity(status: &RayServiceStatuses, role: Role) -> i32 {
    let default = if role == Role::Active { FULL_PERCENT } else { 0 };
    side(status, role).and_then(|s| s.target_capacity).unwrap_or(default)
}

/// A cluster's `trafficRoutedPercent` (active defaults to 100, pending to 0).
pub fn traffic_percent(status: &RayServiceStatuses, role: Role) -> i32 {
    let default = if role == Role::Active { FULL_PERCENT } else { 0 };
    side(status, role)
        .and_then(|s| s.traffic_routed_percent)
        .unwrap_or(default)
}

/// The cluster traffic and capacity move to: the pending one, or the active one during a rollback.
fn gaining(rolling_back: bool) -> Role {
    if rolling_back { Role::Active } else { Role::Pending }
}

/// One traffic step for the gaining cluster: `stepSizePercent` more once `intervalSeconds` passed
/// since the last migration (or none happened), capped at its target capacity and 100; nothing
/// once its weight equals its capacity.
pub fn step_gain(
    weight: i32,
    capacity: i32,
    last_migrated: Option<Timestamp>,
    options: &ClusterUpgradeOptions,
    now: Timestamp,
) -> i32 {
    if weight == capacity {
        return weight;
    }
    let interval = SignedDuration::from_secs(i64::from(options.interval_seconds.unwrap_or(0)));
    let due = last_migrated.is_none_or(|t| now.duration_since(t) >= interval);
    if !due {
        return weight;
    }
    let step = options.step_size_percent.unwrap_or(0);
    FULL_PERCENT.min(weight.saturating_add(step)).min(capacity)
}

/// `calculateTrafficRoutedPercent`: the HTTPRoute weights of this pass. Forward, traffic moves
/// to the pending cluster only while it is ready; during a rollback it moves back to the active
/// cluster. `status` is this pass's (in-memory) status. Without options during an upgrade ⇒ [`IncrementalError::MissingOptions`].
pub fn traffic_weights(
    service: &RayService,
    status: &RayServiceStatuses,
    pending_ready: bool,
    rolling_back: bool,
    now: Timestamp,
) -> Result<TrafficWeights, IncrementalError> {
    let current = TrafficWeights {
        active: traffic_percent(status, Role::Active),
        pending: traffic_percent(status, Role::Pending),
    };
    if !pending_ready && !rolling_back {
        return Ok(current);
    }
    let options = upgrade_options(service)?;
    let role = gaining(rolling_back);
    let last = side(status, role)
        .and_then(|s| s.last_traffic_migrated_time.as_ref())
        .map(|t| t.0);
    let gained = step_gain(
        traffic_percent(status, role),
        target_capacity(status, role),
        last,
        options,
        now,
    );
    if gained == traffic_percent(status, role) {
        return Ok(current);
    }
    Ok(match role {
        Role::Pending => TrafficWeights {
            active: FULL_PERCENT - gained,
            pending: gained,
        },
        Role::Active => TrafficWeights {
            active: gained,
            pending: FULL_PERCENT - gained,
        },
    })
}

/// `reconcileServeTargetCapacity` for the cluster `reconciling`: the new target capacity to PUT,
/// or `None`. Deferred until the gaining cluster's traffic equals its capacity; then while the
/// total exceeds 100 the losing cluster drops by `maxSurgePercent` (floor 0), else the gaining
/// cluster rises by it (cap 100). Only while both clusters are named.
pub fn target_capacity_step(
    status: &RayServiceStatuses,
    options: &ClusterUpgradeOptions,
    reconciling: Role,
    rolling_back: bool,
) -> Option<i32> {
    let named = |role| {
        side(status, role)
            .and_then(|s| s.ray_cluster_name.as_deref())
            .is_some_and(|n| !n.is_empty())
    };
    if !named(Role::Active) || !named(Role::Pending) {
        return None;
    }
    let gain = gaining(rolling_back);
    let lose = if gain == Role::Pending {
        Role::Active
    } else {
        Role::Pending
    };
    if target_capacity(status, gain) != traffic_percent(status, gain) {
        return None;
    }
    let surge = options.max_surge_percent.unwrap_or(DEFAULT_MAX_SURGE_PERCENT);
    let total = target_capacity(status, Role::Active) + target_capacity(status, Role::Pending);
    let (role, goal) = if total > FULL_PERCENT {
        (lose, 0.max(target_capacity(status, lose) - surge))
    } else {
        (gain, FULL_PERCENT.min(target_capacity(status, gain) + surge))
    };
    (role == reconciling && goal != target_capacity(status, role)).then_some(goal)
}

/// Records a new target capacity for `role` in `status`.
pub fn set_target_capacity(status: &mut RayServiceStatuses, role: Role, capacity: i32) {
    let side = match role {
        Role::Active => &mut status.active_service_status,
        Role::Pending => &mut status.pending_service_status,
    };
    side.get_or_insert_with(Default::default).target_capacity = Some(capacity);
}

/// The Serve config body with `target_capacity` added (when `capacity` is set).
pub fn serve_body_with_capacity(
    serve_config_v2: &str,
    capacity: Option<i32>,
) -> Result<serde_json::Value, IncrementalError> {
    let mut body = super::plan::serve_config_json(serve_config_v2).map_err(IncrementalError::ServeConfig)?;
    if let Some(capacity) = capacity {
        if !body.is_object() {
            body = serde_json::Value::Object(serde_json::Map::new());
        }
        if let Some(map) = body.as_object_mut() {
            map.insert(TARGET_CAPACITY_KEY.to_owned(), capacity.into());
        }
    }
    Ok(body)
}

/// `IsIncrementalUpgradeComplete`: the active cluster has no capacity left and the pending one
/// receives all traffic.
pub fn upgrade_complete(status: &RayServiceStatuses) -> bool {
    target_capacity(status, Role::Active) == 0 && traffic_percent(status, Role::Pending) == FULL_PERCENT
}

/// Records the route's weights in the status; a changed weight stamps `lastTrafficMigratedTime`.
pub fn record_route_weights(status: &mut RayServiceStatuses, weights: (Option<i32>, Option<i32>), now: &Time) {
    for (role, weight) in [(Role::Active, weights.0), (Role::Pending, weights.1)] {
        let Some(weight) = weight else { continue };
        let side = match role {
            Role::Active => &mut status.active_service_status,
            Role::Pending => &mut status.pending_service_status,
        };
        let side = side.get_or_insert_with(Default::default);
        if side.traffic_routed_percent != Some(weight) {
            side.last_traffic_migrated_time = Some(now.clone());
        }
        side.traffic_routed_percent = Some(weight);
    }
}

/// Whether the goal spec asks for a rollback: during an upgrade (both cluster objects present) the
/// goal hash is the active cluster's again, or matches neither (a third spec).
pub fn rollback_wanted(service: &RayService, active: Option<&RayCluster>, pending: Option<&RayCluster>) -> bool {
    let (Some(active), Some(pending)) = (active, pending) else {
        return false;
    };
    cluster_hash_equal(service, active, false) || !cluster_hash_equal(service, pending, false)
}

/// `reconcileRollbackState`: sets `RollbackInProgress=True/DesiredClusterSpecChanged` when a
/// rollback is wanted, removes the condition once the goal matches the pending cluster again.
pub fn reconcile_rollback_state(
    status: &mut RayServiceStatuses,
    service: &RayService,
    active: Option<&RayCluster>,
    pending: Option<&RayCluster>,
    now: &Time,
) {
    if active.is_none() || pending.is_none() {
        return;
    }
    let list = status.conditions.get_or_insert_with(Vec::new);
    if rollback_wanted(service, active, pending) {
        let generation = status.observed_generation;
        conditions::set(
            list,
            condition::ROLLBACK_IN_PROGRESS,
            TRUE,
            reason::DESIRED_CLUSTER_SPEC_CHANGED,
            ROLLBACK_MESSAGE,
            now,
        );
        if let Some(c) = list.iter_mut().find(|c| c.type_ == condition::ROLLBACK_IN_PROGRESS) {
            c.observed_generation = generation;
        }
    } else {
        conditions::remove(list, condition::ROLLBACK_IN_PROGRESS);
    }
}

/// Whether `RollbackInProgress` is true.
pub fn rolling_back(status: &RayServiceStatuses) -> bool {
    status
        .conditions
        .as_deref()
        .is_some_and(|c| conditions::is_true(c, condition::ROLLBACK_IN_PROGRESS))
}

/// `shouldCompleteIncrementalRollback`: the active cluster is back at full capacity and traffic,
/// and the pending cluster is gone, unhealthy, or drained (capacity and traffic 0).
pub fn rollback_complete(status: &RayServiceStatuses, pending_healthy: Option<bool>) -> bool {
    let active_full =
        target_capacity(status, Role::Active) == FULL_PERCENT && traffic_percent(status, Role::Active) == FULL_PERCENT;
    let pending_done = match pending_healthy {
        None | Some(false) => true,
        Some(true) => target_capacity(status, Role::Pending) == 0 && traffic_percent(status, Role::Pending) == 0,
    };
    active_full && pending_done
}

/// Finishes a rollback: pending status cleared, `RollbackInProgress` removed and
/// `UpgradeInProgress=False/NoPendingCluster` "Rollback complete, ...".
pub fn complete_rollback(status: &mut RayServiceStatuses, now: &Time) {
    status.pending_service_status = Some(RayServiceStatus::default());
    let generation = status.observed_generation;
    let list = status.conditions.get_or_insert_with(Vec::new);
    conditions::remove(list, condition::ROLLBACK_IN_PROGRESS);
    conditions::set(
        list,
        condition::UPGRADE_IN_PROGRESS,
        conditions::FALSE,
        reason::NO_PENDING_CLUSTER,
        ROLLBACK_COMPLETE_MESSAGE,
        now,
    );
    if let Some(c) = list.iter_mut().find(|c| c.type_ == condition::UPGRADE_IN_PROGRESS) {
        c.observed_generation = generation;
    }
}

#[cfg(test)]
#[path = "incremental_tests.rs"]
mod tests;
