//! What a rolling worker upgrade reports (docs/rolling-upgrades.md#status-and-events): `status.workerGroupUpgrades`,
//! the `WorkerUpgradeInProgress` condition and the Event sent when the condition's reason changes. Derived
//! from the spec and the pods alone, like the upgrade itself.

use super::observed::ObservedState;
use super::rolling::{self, Progress, RolloutState};
use crate::conditions;
use crate::events::{EventSpec, action};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use ray_api::{RayCluster, RayClusterStatus, WorkerGroupUpgradeStatus};

/// Condition type: outdated worker pods are being replaced (`True`), or why not (`False`).
pub const WORKER_UPGRADE_IN_PROGRESS: &str = "WorkerUpgradeInProgress";
/// Reason (and Event reason): outdated worker pods are being replaced.
pub const REASON_ROLLING_UPDATE: &str = "RollingUpdate";
/// Reason (and Event reason): `rollingUpdate.suspend` holds the upgrade.
pub const REASON_PAUSED: &str = "RollingUpdatePaused";
/// Reason (and Event reason): an updated pod stayed unready past `progressDeadlineSeconds`.
pub const REASON_PROGRESS_DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";
/// Reason (and Event reason): every worker group runs its current template.
pub const REASON_COMPLETE: &str = "RollingUpdateComplete";
/// Reason (and Event reason): the `rollingUpdate` settings cannot make progress.
pub const REASON_INVALID: &str = "InvalidRollingUpdate";

struct GroupOutcome {
    name: String,
    progress: Progress,
    state: RolloutState,
}

fn to_i32(n: impl TryInto<i32>) -> i32 {
    n.try_into().unwrap_or(i32::MAX)
}

/// Sets `workerGroupUpgrades` and the condition on `status` (`conds` are its conditions, taken out by the
/// caller) for a cluster asking for `RollingUpdate`; clears both otherwise.
pub fn apply(
    status: &mut RayClusterStatus,
    conds: &mut Vec<Condition>,
    cluster: &RayCluster,
    observed: &ObservedState,
    multi_host_indexing: bool,
    now: &Time,
) {
    let Some(options) = rolling::rollout_options(&cluster.spec) else {
        status.worker_group_upgrades = None;
        conditions::remove(conds, WORKER_UPGRADE_IN_PROGRESS);
        return;
    };
    let options = match options {
        Ok(options) => options,
        Err(e) => {
            status.worker_group_upgrades = None;
            conditions::set(
                conds,
                WORKER_UPGRADE_IN_PROGRESS,
                conditions::FALSE,
                REASON_INVALID,
                &e.message,
                now,
            );
            return;
        }
    };
    let now_unix = now.0.as_second();
    let mut outcomes = Vec::new();
    for group in cluster.spec.worker_group_specs.iter().flatten() {
        let pods: Vec<_> = observed.group_pods(&group.group_name).collect();
        match rolling::group_step(&options, group, &pods, multi_host_indexing, now_unix) {
            None => {}
            Some(Ok(step)) => outcomes.push(GroupOutcome {
                name: group.group_name.clone(),
                progress: step.progress,
                state: step.state,
            }),
            Some(Err(e)) => {
                status.worker_group_upgrades = None;
                let message = format!("worker group {}: {}", group.group_name, e.message);
                conditions::set(
                    conds,
                    WORKER_UPGRADE_IN_PROGRESS,
                    conditions::FALSE,
                    REASON_INVALID,
                    &message,
                    now,
                );
                return;
            }
        }
    }
    status.worker_group_upgrades = Some(
        outcomes
            .iter()
            .map(|o| WorkerGroupUpgradeStatus {
                group_name: o.name.clone(),
                desired_replicas: to_i32(o.progress.desired),
                replicas: to_i32(o.progress.total),
                updated_replicas: to_i32(o.progress.updated),
                ready_replicas: to_i32(o.progress.ready),
                updated_ready_replicas: to_i32(o.progress.updated_ready),
            })
            .collect(),
    );
    let deadline = ray_api::validation::rolling_update::progress_deadline_seconds(&options);
    let (status_value, reason, message) = condition_for(&outcomes, cluster, deadline);
    conditions::set(conds, WORKER_UPGRADE_IN_PROGRESS, status_value, reason, &message, now);
}

fn summary(outcomes: &[GroupOutcome]) -> String {
    outcomes
        .iter()
        .filter(|o| o.state != RolloutState::Complete)
        .map(|o| {
            format!(
                "group {}: {} of {} replicas updated, {} ready",
                o.name, o.progress.updated, o.progress.desired, o.progress.ready
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn condition_for(
    outcomes: &[GroupOutcome],
    cluster: &RayCluster,
    deadline: i64,
) -> (&'static str, &'static str, String) {
    let ns = cluster.metadata.namespace.as_deref().unwrap_or_default();
    if let Some((group, pod)) = outcomes.iter().find_map(|o| match &o.state {
        RolloutState::Stuck { pod, .. } => Some((&o.name, pod)),
        _ => None,
    }) {
        return (
            conditions::TRUE,
            REASON_PROGRESS_DEADLINE_EXCEEDED,
            format!(
                "worker Pod {ns}/{pod} of group {group} built from the new template has not been ready within \
                 {deadline}s (spec.upgradeStrategy.rollingUpdate.progressDeadlineSeconds); no more outdated Pods \
                 are deleted until replacements get ready. {}",
                summary(outcomes)
            ),
        );
    }
    if outcomes.iter().any(|o| o.state == RolloutState::Paused) {
        return (
            conditions::TRUE,
            REASON_PAUSED,
            format!(
                "paused by spec.upgradeStrategy.rollingUpdate.suspend. {}",
                summary(outcomes)
            ),
        );
    }
    if outcomes.iter().any(|o| o.state == RolloutState::Progressing) {
        return (
            conditions::TRUE,
            REASON_ROLLING_UPDATE,
            format!("replacing outdated worker Pods. {}", summary(outcomes)),
        );
    }
    (
        conditions::FALSE,
        REASON_COMPLETE,
        "every worker Pod runs its group's current template".to_owned(),
    )
}

/// The Event for a change of the condition's reason between the stored status and the new one (none when the
/// reason stays, or when a cluster without rolling upgrades never had the condition).
pub fn transition_event(old: &[Condition], new: &[Condition], cluster: &RayCluster) -> Option<EventSpec> {
    let new = conditions::find(new, WORKER_UPGRADE_IN_PROGRESS)?;
    let old_reason = conditions::find(old, WORKER_UPGRADE_IN_PROGRESS).map(|c| c.reason.as_str());
    if old_reason == Some(new.reason.as_str()) {
        return None;
    }
    // A cluster that starts out complete says nothing.
    if old_reason.is_none() && new.reason == REASON_COMPLETE {
        return None;
    }
    let ns = cluster.metadata.namespace.as_deref().unwrap_or_default();
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    let note = format!("Rolling worker upgrade of RayCluster {ns}/{name}: {}", new.message);
    let reason = match new.reason.as_str() {
        REASON_ROLLING_UPDATE => REASON_ROLLING_UPDATE,
        REASON_PAUSED => REASON_PAUSED,
        REASON_PROGRESS_DEADLINE_EXCEEDED => REASON_PROGRESS_DEADLINE_EXCEEDED,
        REASON_COMPLETE => REASON_COMPLETE,
        _ => REASON_INVALID,
    };
    Some(match reason {
        REASON_ROLLING_UPDATE | REASON_COMPLETE | REASON_PAUSED => EventSpec::normal(reason, action::UPDATE, note),
        _ => EventSpec::warning(reason, action::UPDATE, note),
    })
}
