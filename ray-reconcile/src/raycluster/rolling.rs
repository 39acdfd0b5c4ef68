//! Rolling worker upgrades (`upgradeStrategy.type: RollingUpdate`, beyond KubeRay; docs/rolling-upgrades.md):
//! the pure state machine that decides, for one worker group and one pass, which outdated replicas to delete
//! and how many extra replicas the group's normal scale step may create, plus the progress the status reports.
//!
//! Nothing is remembered between passes: every decision is a function of the spec, the group's pods (their
//! `ray.io/worker-template-hash`, readiness, creation time and whether they terminate) and the clock, so an
//! operator restart continues where the last one stopped.
//!
//! Units: a replica of a multi-host group (`numOfHosts > 1`, its pods share `ray.io/worker-group-replica-name`)
//! is replaced whole, and every bound counts replicas, not pods.

use super::observed::PodInfo;
use ray_api::validation::ValidationError;
use ray_api::validation::rolling_update::{self, RollingUpdateBounds};
use ray_api::{RollingUpdateOptions, WorkerGroupSpec};
use ray_autoscale::desired_pods;
use ray_autoscale::replicas::desired_replica_groups;
use std::collections::BTreeMap;

/// One replica of a group as the upgrade sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// Its pods (one for a single-host group).
    pub pods: Vec<String>,
    /// Every pod carries the group's current template hash.
    pub updated: bool,
    /// Every pod is running and ready, and no host is missing.
    pub ready: bool,
    /// Creation time of its newest pod (seconds since the Unix epoch).
    pub created_unix: Option<i64>,
}

/// A worker group's replicas, split for the upgrade.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupView {
    /// Desired replicas (after min/max and suspension).
    pub desired: i64,
    /// Replicas that exist and are not terminating, excluding those named in `workersToDelete` (the
    /// autoscaler already removes them).
    pub units: Vec<Unit>,
    /// Replicas with a terminating pod.
    pub terminating: usize,
}

/// Where a group's upgrade stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RolloutState {
    /// Every replica runs the current template.
    Complete,
    /// Outdated replicas remain and are being replaced.
    Progressing,
    /// Outdated replicas remain; `rollingUpdate.suspend` holds the upgrade.
    Paused,
    /// An updated replica has stayed unready past `progressDeadlineSeconds`; no more are deleted while the
    /// budget is spent.
    Stuck {
        /// A pod of the oldest unready updated replica.
        pod: String,
        /// How long it has been unready, in seconds.
        seconds: i64,
    },
}

/// The counts the status reports for one group, in replicas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Desired replicas.
    pub desired: i64,
    /// Existing, non-terminating replicas.
    pub total: usize,
    /// Of those, built from the current template.
    pub updated: usize,
    /// Of those, ready.
    pub ready: usize,
    /// Updated and ready.
    pub updated_ready: usize,
}

/// One pass of one group's upgrade.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RollingStep {
    /// Outdated replicas to delete now (unready ones first), each as its pods.
    pub delete: Vec<Vec<String>>,
    /// Replicas the scale step may keep or create above `desired`.
    pub surge: i64,
    /// Counts for the status.
    pub progress: Progress,
    /// State for the status condition.
    pub state: RolloutState,
}

/// Settings of a step besides the bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepSettings {
    /// `rollingUpdate.suspend`.
    pub paused: bool,
    /// The clock, seconds since the Unix epoch.
    pub now_unix: i64,
    /// `progressDeadlineSeconds`.
    pub progress_deadline_seconds: i64,
}

/// Groups a worker group's pods into replicas; `listed` are the `workersToDelete` names.
pub fn group_view(desired: i64, hosts: i32, pods: &[&PodInfo], listed: &[String], expected_hash: &str) -> GroupView {
    let mut replicas: BTreeMap<String, Vec<&PodInfo>> = BTreeMap::new();
    for pod in pods {
        let key = match (&pod.pod.replica_name, hosts > 1) {
            (Some(replica), true) => replica.clone(),
            _ => pod.pod.name.clone(),
        };
        replicas.entry(key).or_default().push(pod);
    }
    let hosts = usize::try_from(hosts.max(1)).unwrap_or(1);
    let mut view = GroupView {
        desired,
        ..GroupView::default()
    };
    for members in replicas.values() {
        if members.iter().any(|p| p.pod.deletion_timestamp_set) {
            view.terminating += 1;
            continue;
        }
        if members.iter().any(|p| listed.contains(&p.pod.name)) {
            continue;
        }
        view.units.push(Unit {
            pods: members.iter().map(|p| p.pod.name.clone()).collect(),
            updated: members.iter().all(|p| p.upgrade.worker_template_hash == expected_hash),
            ready: members.len() >= hosts && members.iter().all(|p| p.is_running_and_ready()),
            created_unix: members.iter().filter_map(|p| p.upgrade.created_unix).max(),
        });
    }
    view
}

fn progress(view: &GroupView) -> Progress {
    let count = |f: &dyn Fn(&Unit) -> bool| view.units.iter().filter(|u| f(u)).count();
    Progress {
        desired: view.desired,
        total: view.units.len(),
        updated: count(&|u| u.updated),
        ready: count(&|u| u.ready),
        updated_ready: count(&|u| u.updated && u.ready),
    }
}

/// Decides one pass of a group's upgrade.
///
/// With `R` desired replicas, `P` existing non-terminating ones and `U` updated-but-unready ones, at most
/// `P - (R - maxUnavailable) - U` outdated replicas are deleted, unready ones first: deleting ready ones never
/// leaves fewer than `R - maxUnavailable` ready, and replicas still starting count as unavailable, so a
/// template whose pods never get ready stops the upgrade after one budget. The scale step may hold up to
/// `R + maxSurge` replicas while outdated or terminating ones remain, which is how new replicas are made
/// before old ones go.
pub fn step(view: &GroupView, bounds: RollingUpdateBounds, settings: StepSettings) -> RollingStep {
    let progress = progress(view);
    let outdated: Vec<&Unit> = view.units.iter().filter(|u| !u.updated).collect();
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    // Surge stays reserved while replaced replicas terminate, so the scale step never sees a surplus of its
    // own making.
    let mut surge = bounds
        .max_surge
        .min(count(outdated.len()) + count(view.terminating))
        .max(0);
    if outdated.is_empty() {
        return RollingStep {
            delete: Vec::new(),
            surge,
            progress,
            state: RolloutState::Complete,
        };
    }
    if settings.paused {
        // Keep what exists, create nothing above the desired count.
        let existing = count(view.units.len() + view.terminating);
        surge = surge.min((existing - view.desired).max(0));
        return RollingStep {
            delete: Vec::new(),
            surge,
            progress,
            state: RolloutState::Paused,
        };
    }
    let unready_updated: Vec<&Unit> = view.units.iter().filter(|u| u.updated && !u.ready).collect();
    let budget = count(view.units.len()) - (view.desired - bounds.max_unavailable) - count(unready_updated.len());
    let budget = usize::try_from(budget.max(0)).unwrap_or(0);
    let mut candidates = outdated;
    // Unready first (deleting them costs no availability), then by name for a stable order.
    candidates.sort_by(|a, b| a.ready.cmp(&b.ready).then_with(|| a.pods.cmp(&b.pods)));
    let delete: Vec<Vec<String>> = candidates.iter().take(budget).map(|u| u.pods.clone()).collect();
    let stuck = unready_updated
        .iter()
        .filter_map(|u| {
            let age = settings.now_unix - u.created_unix?;
            (age > settings.progress_deadline_seconds).then(|| (age, u.pods.first().cloned().unwrap_or_default()))
        })
        .max();
    let state = match stuck {
        Some((seconds, pod)) if delete.is_empty() => RolloutState::Stuck { pod, seconds },
        _ => RolloutState::Progressing,
    };
    RollingStep {
        delete,
        surge,
        progress,
        state,
    }
}

/// Where the rollout of a cluster's worker groups is configured: `rollingUpdate` of a spec asking for
/// `RollingUpdate` whose static checks pass.
pub fn rollout_options(spec: &ray_api::RayClusterSpec) -> Option<Result<RollingUpdateOptions, ValidationError>> {
    let options = rolling_update::rolling_update_options(spec)?;
    Some(rolling_update::validate_rolling_update(spec).map(|()| options))
}

/// One worker group's step: `None` for a suspended group (its pods are deleted anyway), an error naming the
/// field when the bounds resolve to nothing for this group's size.
pub fn group_step(
    options: &RollingUpdateOptions,
    group: &WorkerGroupSpec,
    pods: &[&PodInfo],
    multi_host_indexing: bool,
    now_unix: i64,
) -> Option<Result<RollingStep, ValidationError>> {
    let replicas = super::status::group_replicas(group);
    if replicas.suspend {
        return None;
    }
    let multi_host = replicas.num_of_hosts > 1 && multi_host_indexing;
    let (desired, hosts) = if multi_host {
        (desired_replica_groups(&replicas), replicas.num_of_hosts)
    } else {
        (desired_pods(&replicas), 1)
    };
    let bounds = match rolling_update::resolve_rolling_update(options, desired) {
        Ok(bounds) => bounds,
        Err(e) => return Some(Err(e)),
    };
    let listed = group
        .scale_strategy
        .as_ref()
        .and_then(|s| s.workers_to_delete.as_deref())
        .unwrap_or_default();
    let expected = ray_podgen::hash::worker_group_hash(group);
    let view = group_view(desired, hosts, pods, listed, &expected);
    let settings = StepSettings {
        paused: options.suspend == Some(true),
        now_unix,
        progress_deadline_seconds: rolling_update::progress_deadline_seconds(options),
    };
    Some(Ok(step(&view, bounds, settings)))
}

/// Whether a worker pod was built from another template than `expected_hash` (for ordering surplus pods).
pub fn is_outdated(pod: &PodInfo, expected_hash: &str) -> bool {
    pod.upgrade.worker_template_hash != expected_hash
}

#[cfg(test)]
#[path = "rolling_tests.rs"]
mod tests;
