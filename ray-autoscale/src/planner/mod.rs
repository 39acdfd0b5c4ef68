//! The Ray autoscaler's planner as seen through KubeRay (docs/autoscaling.md): from pending resource
//! demands, the observed worker pods and how long each has been idle, compute the next
//! `replicas` and `scaleStrategy.workersToDelete` of every worker group.
//!
//! One call is one autoscaler iteration. The caller (the hollow autoscaler) patches the values
//! that changed into the RayCluster; the operator then creates or deletes pods (see
//! `docs/autoscaling.md`). Deterministic: pods are visited in name order, demands in Ray's
//! largest-first order (stable for equal demands), ties between groups resolved as Ray does.

mod binpack;
mod options;
pub mod resources;

pub use options::{
    AutoscalerVersion, CONSERVATIVE_UPSCALING_SPEED, DEFAULT_IDLE_TIMEOUT, DEFAULT_UPSCALING_SPEED, PlannerOptions,
    UPSCALING_INITIAL_NUM_NODES, UpscalingMode,
};
pub use resources::ResourceSet;

#[cfg(test)]
mod sim;
#[cfg(test)]
mod tests;

use crate::replicas::GroupReplicas;
use binpack::{LaunchCandidate, first_fit, nodes_for, sort_largest_first};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The head node's logical capacity and what is in use on it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeadNode {
    /// Logical resources of the head (empty CPU when started with `num-cpus: 0`).
    pub resources: ResourceSet,
    /// Resources currently held by tasks/actors on the head.
    pub used: ResourceSet,
}

/// State of one worker pod as the autoscaler sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkerState {
    /// The pod exists but its Ray node has not joined the cluster yet (no usage known).
    Pending,
    /// The Ray node is up.
    Running {
        /// Resources currently held by tasks/actors on it.
        used: ResourceSet,
        /// Clock instant (same clock as [`PlannerInput::now`]) since which it has had no tasks,
        /// actors or referenced objects; `None` while busy.
        idle_since: Option<Duration>,
    },
}

/// One worker pod of a group.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerPod {
    /// Pod name (what goes into `workersToDelete`).
    pub name: String,
    /// Pending or running, with usage.
    pub state: WorkerState,
    /// `ray.io/worker-group-replica-name` (multi-host groups terminate whole replicas).
    pub replica_name: Option<String>,
}

impl WorkerPod {
    /// A pod whose Ray node has not joined yet.
    pub fn pending(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            state: WorkerState::Pending,
            replica_name: None,
        }
    }

    /// A running pod holding `used`.
    pub fn busy(name: impl Into<String>, used: ResourceSet) -> Self {
        Self {
            name: name.into(),
            state: WorkerState::Running { used, idle_since: None },
            replica_name: None,
        }
    }

    /// A running pod idle since `since`.
    pub fn idle(name: impl Into<String>, since: Duration) -> Self {
        Self {
            name: name.into(),
            state: WorkerState::Running {
                used: ResourceSet::new(),
                idle_since: Some(since),
            },
            replica_name: None,
        }
    }
}

/// One worker group as the planner sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupState {
    /// `groupName`.
    pub name: String,
    /// Logical resources of one pod (host) of the group.
    pub pod_resources: ResourceSet,
    /// `replicas`, `minReplicas`, `maxReplicas`, `numOfHosts` (`suspend` is ignored: validation
    /// forbids suspending groups with autoscaling on).
    pub replicas: GroupReplicas,
    /// Per-group idle timeout (`idleTimeoutSeconds`, autoscaler v2); `None` uses the cluster one.
    pub idle_timeout: Option<Duration>,
    /// Current `scaleStrategy.workersToDelete`.
    pub workers_to_delete: Vec<String>,
    /// Pods of the group that are not terminating.
    pub pods: Vec<WorkerPod>,
}

/// Everything one planner iteration reads.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannerInput {
    /// The current instant (any fixed origin, same as the pods' `idle_since`).
    pub now: Duration,
    /// The head node.
    pub head: HeadNode,
    /// Worker groups in spec order.
    pub groups: Vec<GroupState>,
    /// Pending resource demands (tasks, actors, placement-group bundles) not yet scheduled.
    pub demands: Vec<ResourceSet>,
    /// Upscaling mode, idle timeout, autoscaler version.
    pub options: PlannerOptions,
}

/// The planner's decision for one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupDecision {
    /// `groupName`.
    pub name: String,
    /// The `replicas` value to write (equal to the input when nothing changes).
    pub replicas: Option<i32>,
    /// The `workersToDelete` value to write (cleared once the listed pods are gone).
    pub workers_to_delete: Vec<String>,
    /// Pods (hosts) launched this iteration.
    pub launched_pods: i64,
    /// Pods newly scheduled for termination this iteration (also in `workers_to_delete`).
    pub terminated: Vec<String>,
    /// Listed `workersToDelete` pods still exist: the group is left untouched until they are gone.
    pub waiting_for_deletion: bool,
}

/// The result of one planner iteration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// One decision per input group, in input order.
    pub groups: Vec<GroupDecision>,
    /// Demands no node type can ever hold (e.g. 2 CPU on 1-CPU workers): they launch nothing.
    pub infeasible: Vec<ResourceSet>,
    /// Feasible demands left unplaced because groups are at `maxReplicas` (or frozen).
    pub unfulfilled: Vec<ResourceSet>,
    /// Autoscaler v1 only: some group still has listed `workersToDelete` pods, so the whole
    /// iteration made no scale request.
    pub blocked: bool,
}

impl Plan {
    /// Decisions whose `replicas` or `workersToDelete` differ from the input (what to patch).
    pub fn changes<'a>(&'a self, input: &'a PlannerInput) -> impl Iterator<Item = &'a GroupDecision> + 'a {
        self.groups.iter().zip(&input.groups).filter_map(|(d, g)| {
            (d.replicas != g.replicas.replicas || d.workers_to_delete != g.workers_to_delete).then_some(d)
        })
    }
}

/// Per-group bookkeeping while planning.
struct GroupWork {
    /// Listed pods still present (`workersToDelete` in flight).
    frozen: bool,
    /// Pods per replica (`numOfHosts`), 0 when the group can have no pods.
    hosts: i64,
    /// Pods that exist (not listed for deletion), in name order.
    live: Vec<usize>,
    /// Live pods whose Ray node is up.
    running: i64,
    /// Live pending pods plus pods requested by `replicas` but not created yet.
    pending: i64,
    /// All nodes of the group the autoscaler counts (existing + not yet created).
    nodes: i64,
    /// Upper bound on pods (`maxReplicas × numOfHosts`).
    max_pods: i64,
    /// Pods to launch.
    launch: i64,
}

/// A demand with its index in the input.
type Demand<'d> = (usize, &'d ResourceSet);
/// `(group index, pod index)` of running or pending pods that received a demand.
type PlacedOn = BTreeSet<(usize, usize)>;

/// Where a capacity slot comes from.
#[derive(Clone, Copy)]
enum Slot {
    Head,
    Pod { group: usize, pod: usize },
    Unborn,
}

/// Run one autoscaler iteration.
pub fn plan(input: &PlannerInput) -> Plan {
    let speed = input.options.upscaling_mode.upscaling_speed();
    let mut plan = Plan::default();

    // In-flight workersToDelete: v1 refuses every scale request, v2 freezes the group.
    let in_flight: Vec<bool> = input
        .groups
        .iter()
        .map(|g| {
            let names: BTreeSet<&str> = g.pods.iter().map(|p| p.name.as_str()).collect();
            g.workers_to_delete.iter().any(|n| names.contains(n.as_str()))
        })
        .collect();

    // Node types and infeasible demands.
    let type_capacity = |g: &GroupState| g.replicas.num_of_hosts >= 1 && g.replicas.max_or_default() > 0;
    let feasible: Vec<(usize, &ResourceSet)> = input
        .demands
        .iter()
        .enumerate()
        .filter(|(_, d)| {
            let fits = input.head.resources.fits(d)
                || input.groups.iter().any(|g| type_capacity(g) && g.pod_resources.fits(d));
            if !fits {
                plan.infeasible.push((*d).clone());
            }
            fits
        })
        .collect();

    if input.options.version == AutoscalerVersion::V1 && in_flight.iter().any(|f| *f) {
        plan.blocked = true;
        plan.groups = input.groups.iter().map(unchanged).collect();
        return plan;
    }

    let mut work: Vec<GroupWork> = input
        .groups
        .iter()
        .enumerate()
        .map(|(gi, g)| {
            let listed: BTreeSet<&str> = g.workers_to_delete.iter().map(String::as_str).collect();
            let mut live: Vec<usize> = (0..g.pods.len())
                .filter(|&i| !listed.contains(g.pods[i].name.as_str()))
                .collect();
            live.sort_by(|&a, &b| g.pods[a].name.cmp(&g.pods[b].name));
            let hosts = i64::from(g.replicas.num_of_hosts.max(0));
            let target = i64::from(g.replicas.clamped_replicas().max(0)) * hosts;
            let existing = i64::try_from(live.len()).unwrap_or(i64::MAX);
            let unborn = (target - existing).max(0);
            let running = live
                .iter()
                .filter(|&&pi| g.pods[pi].state != WorkerState::Pending)
                .count();
            let running = i64::try_from(running).unwrap_or(i64::MAX);
            GroupWork {
                frozen: in_flight[gi],
                hosts,
                live,
                running,
                pending: existing - running + unborn,
                nodes: existing + unborn,
                max_pods: i64::from(g.replicas.max_or_default().max(0)) * hosts,
                launch: 0,
            }
        })
        .collect();
    let mut ordered = feasible;
    sort_largest_first(&mut ordered);

    // Place demands on free capacity, launch pods for the rest, and repeat with the launched pods
    // counted as capacity until nothing more is launched. The result is what the next iteration
    // would see, so calling the planner again after applying its plan launches nothing more.
    let global_max = work.iter().map(|w| w.max_pods).fold(0i64, i64::saturating_add);
    let (placed_on, unfulfilled) = loop {
        let (placed_on, residual) = place(input, &work, &ordered);
        let candidates: Vec<(usize, LaunchCandidate<'_>)> = input
            .groups
            .iter()
            .enumerate()
            .filter(|(gi, g)| !work[*gi].frozen && type_capacity(g))
            .map(|(gi, g)| {
                let room = (work[gi].max_pods - work[gi].nodes - work[gi].launch).max(0);
                (
                    gi,
                    LaunchCandidate {
                        name: g.name.as_str(),
                        capacity: &g.pod_resources,
                        room,
                    },
                )
            })
            .collect();
        let max_to_add = global_max.saturating_sub(work.iter().map(|w| w.nodes + w.launch).sum::<i64>());
        let launch_candidates: Vec<LaunchCandidate<'_>> = candidates
            .iter()
            .map(|(_, c)| LaunchCandidate {
                name: c.name,
                capacity: c.capacity,
                room: c.room,
            })
            .collect();
        let (added, unfulfilled) = nodes_for(&launch_candidates, max_to_add, residual);
        let mut launched_more = false;
        for ((gi, c), wanted) in candidates.iter().zip(added) {
            let w = &mut work[*gi];
            // Rate limit: at most max(5, speed × running) pending pods per group.
            let running_basis = w.running.max(1) as f64;
            let max_pending = (UPSCALING_INITIAL_NUM_NODES as f64).max((speed * running_basis).floor()) as i64;
            let upper = max_pending - w.pending - w.launch;
            let pods = wanted.min(upper.max(0));
            // Whole replicas only (multi-host), within maxReplicas.
            let extra = ((pods + w.hosts - 1) / w.hosts * w.hosts).min(c.room / w.hosts * w.hosts);
            if extra > 0 {
                w.launch += extra;
                launched_more = true;
            }
        }
        if !launched_more {
            break (placed_on, unfulfilled);
        }
    };
    plan.unfulfilled = unfulfilled.into_iter().map(|(_, d)| d.clone()).collect();

    plan.groups = input
        .groups
        .iter()
        .enumerate()
        .map(|(gi, g)| decide_group(input, g, &work[gi], gi, &placed_on))
        .collect();
    plan
}

/// First-fit the ordered demands onto the free capacity, in a fixed order: head, then per group
/// running pods, pending pods and pods requested or launched but not created yet. Returns the
/// pods that received a demand and the demands left over.
fn place<'d>(input: &PlannerInput, work: &[GroupWork], ordered: &[Demand<'d>]) -> (PlacedOn, Vec<Demand<'d>>) {
    let mut capacity: Vec<ResourceSet> = Vec::new();
    let mut slots: Vec<Slot> = Vec::new();
    let mut head_free = input.head.resources.clone();
    head_free.subtract(&input.head.used);
    capacity.push(head_free);
    slots.push(Slot::Head);
    for (gi, (g, w)) in input.groups.iter().zip(work).enumerate() {
        for &pi in &w.live {
            if let WorkerState::Running { used, .. } = &g.pods[pi].state {
                let mut free = g.pod_resources.clone();
                free.subtract(used);
                capacity.push(free);
                slots.push(Slot::Pod { group: gi, pod: pi });
            }
        }
        for &pi in &w.live {
            if g.pods[pi].state == WorkerState::Pending {
                capacity.push(g.pod_resources.clone());
                slots.push(Slot::Pod { group: gi, pod: pi });
            }
        }
        let existing = i64::try_from(w.live.len()).unwrap_or(i64::MAX);
        let unborn = w.nodes - existing + w.launch;
        for _ in 0..unborn.min(MAX_UNBORN_SLOTS) {
            capacity.push(g.pod_resources.clone());
            slots.push(Slot::Unborn);
        }
    }
    let placements = first_fit(&mut capacity, ordered);
    let mut placed_on = BTreeSet::new();
    let mut residual = Vec::new();
    for (demand, slot) in ordered.iter().zip(placements) {
        match slot.map(|s| slots[s]) {
            Some(Slot::Pod { group, pod }) => {
                placed_on.insert((group, pod));
            }
            Some(Slot::Head | Slot::Unborn) => {}
            None => residual.push(*demand),
        }
    }
    (placed_on, residual)
}

/// Cap on not-yet-created pods materialised as capacity slots (`replicas` may be huge).
const MAX_UNBORN_SLOTS: i64 = 100_000;

/// The decision that changes nothing.
fn unchanged(g: &GroupState) -> GroupDecision {
    GroupDecision {
        name: g.name.clone(),
        replicas: g.replicas.replicas,
        workers_to_delete: g.workers_to_delete.clone(),
        launched_pods: 0,
        terminated: Vec::new(),
        waiting_for_deletion: true,
    }
}

/// Sort class of a termination unit: most recently used first, unconnected last (as Ray).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Recency {
    /// Some pod has not joined the Ray cluster yet.
    Unconnected,
    /// All pods idle; the latest instant any became idle.
    Idle(Duration),
    /// Some pod is busy or was just given a demand.
    Busy,
}

/// Idle termination and the new replica count of one group.
fn decide_group(
    input: &PlannerInput,
    g: &GroupState,
    w: &GroupWork,
    gi: usize,
    placed_on: &BTreeSet<(usize, usize)>,
) -> GroupDecision {
    if w.frozen {
        return unchanged(g);
    }
    let mut decision = GroupDecision {
        name: g.name.clone(),
        replicas: g.replicas.replicas,
        workers_to_delete: Vec::new(),
        launched_pods: 0,
        terminated: Vec::new(),
        waiting_for_deletion: false,
    };
    if w.hosts == 0 {
        return decision;
    }

    // Termination units: single pods, or whole replicas of a multi-host group.
    let mut units: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for &pi in &w.live {
        let pod = &g.pods[pi];
        let key = match (&pod.replica_name, w.hosts > 1) {
            (Some(replica), true) => replica.clone(),
            _ => pod.name.clone(),
        };
        units.entry(key).or_default().push(pi);
    }
    let recency = |pods: &[usize]| -> Recency {
        let mut latest_idle = Duration::ZERO;
        for &pi in pods {
            match &g.pods[pi].state {
                WorkerState::Pending => return Recency::Unconnected,
                WorkerState::Running {
                    idle_since: Some(t), ..
                } if !placed_on.contains(&(gi, pi)) => {
                    latest_idle = latest_idle.max(*t);
                }
                WorkerState::Running { .. } => return Recency::Busy,
            }
        }
        Recency::Idle(latest_idle)
    };
    let mut ranked: Vec<(Recency, &String, &Vec<usize>)> =
        units.iter().map(|(name, pods)| (recency(pods), name, pods)).collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));

    let timeout = g.idle_timeout.unwrap_or(input.options.idle_timeout);
    let min_units = i64::from(g.replicas.min_or_default().max(0));
    let max_units = i64::from(g.replicas.max_or_default().max(0));
    let mut terminated_units = 0i64;
    for (kept, (recency, _, pods)) in ranked.iter().enumerate() {
        let count = i64::try_from(kept).unwrap_or(i64::MAX) + 1;
        let terminate = if count <= min_units {
            false
        } else if count > max_units {
            true
        } else {
            matches!(recency, Recency::Idle(since) if input.now.saturating_sub(*since) > timeout)
        };
        if terminate {
            terminated_units += 1;
            let mut names: Vec<String> = pods.iter().map(|&pi| g.pods[pi].name.clone()).collect();
            names.sort();
            decision.terminated.extend(names);
        }
    }
    decision.workers_to_delete = decision.terminated.clone();

    let launch_units = w.launch / w.hosts;
    if launch_units > 0 || terminated_units > 0 {
        let existing_units = (i64::try_from(w.live.len()).unwrap_or(i64::MAX) + w.hosts - 1) / w.hosts;
        let base = i64::from(g.replicas.clamped_replicas()).max(existing_units);
        let new = (base + launch_units - terminated_units).clamp(min_units.min(max_units), max_units);
        decision.replicas = Some(crate::replicas::saturate_i32(new));
        decision.launched_pods = (new - (base - terminated_units)).max(0) * w.hosts;
    }
    decision
}
