//! Bridges between `ray_api` RayCluster types and this crate's plain inputs/outputs: replica
//! fields, planner options and input, and writing a plan back into a spec.

use crate::logical::{LogicalResourceError, head_logical_resources, worker_logical_resources};
use crate::planner::{
    AutoscalerVersion, GroupState, HeadNode, Plan, PlannerInput, PlannerOptions, ResourceSet, UpscalingMode, WorkerPod,
};
use crate::replicas::{DEFAULT_NUM_OF_HOSTS, GroupReplicas};
use ray_api::{RayClusterSpec, ScaleStrategy, WorkerGroupSpec};
use std::collections::BTreeMap;
use std::time::Duration;

/// The replica fields of a worker group (`numOfHosts` unset = 1; `suspend` unset = false).
pub fn group_replicas(group: &WorkerGroupSpec) -> GroupReplicas {
    GroupReplicas {
        replicas: group.replicas,
        min_replicas: group.min_replicas,
        max_replicas: group.max_replicas,
        num_of_hosts: group.num_of_hosts.unwrap_or(DEFAULT_NUM_OF_HOSTS),
        suspend: group.suspend == Some(true),
    }
}

/// The replica fields of every worker group, in spec order.
pub fn cluster_group_replicas(spec: &RayClusterSpec) -> Vec<GroupReplicas> {
    spec.worker_group_specs.iter().flatten().map(group_replicas).collect()
}

/// `scaleStrategy.workersToDelete` of a group (empty when unset).
pub fn workers_to_delete(group: &WorkerGroupSpec) -> &[String] {
    group
        .scale_strategy
        .as_ref()
        .and_then(|s| s.workers_to_delete.as_deref())
        .unwrap_or_default()
}

/// `enableInTreeAutoscaling == true`.
pub fn autoscaling_enabled(spec: &RayClusterSpec) -> bool {
    spec.enable_in_tree_autoscaling == Some(true)
}

/// Planner options from `spec.autoscalerOptions` (unset mode = Default, unset timeout = 60 s,
/// unset version = v2 as in Ray ≥ 2.47).
pub fn planner_options(spec: &RayClusterSpec) -> PlannerOptions {
    let opts = spec.autoscaler_options.as_ref();
    let mut options = PlannerOptions::from_fields(None, opts.and_then(|o| o.idle_timeout_seconds), None);
    options.upscaling_mode = match opts.and_then(|o| o.upscaling_mode) {
        Some(ray_api::UpscalingMode::Conservative) => UpscalingMode::Conservative,
        Some(ray_api::UpscalingMode::Aggressive) => UpscalingMode::Aggressive,
        Some(ray_api::UpscalingMode::Default) | None => UpscalingMode::Default,
    };
    options.version = match opts.and_then(|o| o.version) {
        Some(ray_api::AutoscalerVersion::V1) => AutoscalerVersion::V1,
        Some(ray_api::AutoscalerVersion::V2) | None => AutoscalerVersion::V2,
    };
    options
}

/// Planner view of one worker group with its observed pods.
pub fn planner_group(group: &WorkerGroupSpec, pods: Vec<WorkerPod>) -> Result<GroupState, LogicalResourceError> {
    Ok(GroupState {
        name: group.group_name.clone(),
        pod_resources: worker_logical_resources(group)?,
        replicas: group_replicas(group),
        idle_timeout: group
            .idle_timeout_seconds
            .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0))),
        workers_to_delete: workers_to_delete(group).to_vec(),
        pods,
    })
}

/// Build a full planner input from a RayCluster spec: `pods_by_group` holds each group's
/// non-terminating pods (missing groups have none), `head_used` what runs on the head.
pub fn planner_input(
    spec: &RayClusterSpec,
    now: Duration,
    mut pods_by_group: BTreeMap<String, Vec<WorkerPod>>,
    head_used: ResourceSet,
    demands: Vec<ResourceSet>,
) -> Result<PlannerInput, LogicalResourceError> {
    let groups = spec
        .worker_group_specs
        .iter()
        .flatten()
        .map(|g| planner_group(g, pods_by_group.remove(&g.group_name).unwrap_or_default()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PlannerInput {
        now,
        head: HeadNode {
            resources: head_logical_resources(&spec.head_group_spec)?,
            used: head_used,
        },
        groups,
        demands,
        options: planner_options(spec),
    })
}

/// Write a plan's `replicas` and `workersToDelete` into the spec (groups matched by name).
/// Returns whether anything changed, i.e. whether a patch is needed.
pub fn apply_plan(spec: &mut RayClusterSpec, plan: &Plan) -> bool {
    let mut changed = false;
    for group in spec.worker_group_specs.iter_mut().flatten() {
        let Some(decision) = plan.groups.iter().find(|d| d.name == group.group_name) else {
            continue;
        };
        if group.replicas != decision.replicas {
            group.replicas = decision.replicas;
            changed = true;
        }
        if workers_to_delete(group) != decision.workers_to_delete.as_slice() {
            group.scale_strategy = Some(ScaleStrategy {
                workers_to_delete: Some(decision.workers_to_delete.clone()),
            });
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::resources::CPU;
    use crate::planner::{WorkerState, plan};
    use ray_api::RayCluster;

    /// A KubeRay sample's RayCluster; tests that read the reference material fail (not skip) when it is missing.
    fn sample(name: &str) -> RayCluster {
        let text = kuberay_reference::sample_text(name);
        // The sample file also holds a ConfigMap; take the RayCluster document.
        let doc = text
            .split("\n---")
            .find(|d| d.contains("kind: RayCluster"))
            .unwrap_or_else(|| panic!("no RayCluster in {name}"));
        // Kubernetes YAML is YAML 1.1: `defaultMode: 0777` is octal.
        let mut options = serde_saphyr::Options::default();
        options.legacy_octal_numbers = true;
        serde_saphyr::from_str_with_options(doc, options).unwrap()
    }

    #[test]
    fn guide_sample_gives_the_walkthrough_inputs() {
        let cluster = sample("ray-cluster.autoscaler.yaml");
        let spec = &cluster.spec;
        assert!(autoscaling_enabled(spec));
        let input = planner_input(spec, Duration::ZERO, BTreeMap::new(), ResourceSet::new(), vec![]).unwrap();
        // Head `num-cpus: "0"`: no CPU for tasks.
        assert_eq!(input.head.resources.get(CPU), 0.0);
        let g = &input.groups[0];
        assert_eq!(g.name, "small-group");
        assert_eq!(g.pod_resources.get(CPU), 1.0);
        assert_eq!(
            (g.replicas.replicas, g.replicas.min_replicas, g.replicas.max_replicas),
            (Some(0), Some(0), Some(10))
        );
    }

    #[test]
    fn walkthrough_on_the_sample_cluster() {
        let mut cluster = sample("ray-cluster.autoscaler.yaml");
        let cpu1 = ResourceSet::new().with(CPU, 1.0);
        let run = |spec: &RayClusterSpec, now: u64, pods: Vec<WorkerPod>, demands: Vec<ResourceSet>| {
            let by_group = BTreeMap::from([("small-group".to_string(), pods)]);
            plan(&planner_input(spec, Duration::from_secs(now), by_group, ResourceSet::new(), demands).unwrap())
        };
        // actor1 -> replicas 1.
        let p = run(&cluster.spec, 0, vec![], vec![cpu1.clone()]);
        assert!(apply_plan(&mut cluster.spec, &p));
        assert_eq!(cluster.spec.worker_group_specs.as_ref().unwrap()[0].replicas, Some(1));
        // Same state again: no patch.
        let p = run(&cluster.spec, 1, vec![], vec![cpu1.clone()]);
        assert!(!apply_plan(&mut cluster.spec, &p));
        // actor1 on w1, actor2 pending -> replicas 2.
        let p = run(
            &cluster.spec,
            2,
            vec![WorkerPod::busy("w1", cpu1.clone())],
            vec![cpu1.clone()],
        );
        assert!(apply_plan(&mut cluster.spec, &p));
        assert_eq!(cluster.spec.worker_group_specs.as_ref().unwrap()[0].replicas, Some(2));
        // 2-CPU actor: infeasible, no patch.
        let busy = vec![WorkerPod::busy("w1", cpu1.clone()), WorkerPod::busy("w2", cpu1.clone())];
        let p = run(&cluster.spec, 3, busy.clone(), vec![ResourceSet::new().with(CPU, 2.0)]);
        assert_eq!(p.infeasible.len(), 1);
        assert!(!apply_plan(&mut cluster.spec, &p));
        // actor1 ends at t=10; at t=71 w1 goes.
        let idle = vec![WorkerPod::idle("w1", Duration::from_secs(10)), busy[1].clone()];
        let p = run(&cluster.spec, 70, idle.clone(), vec![]);
        assert!(!apply_plan(&mut cluster.spec, &p));
        let p = run(&cluster.spec, 71, idle, vec![]);
        assert!(apply_plan(&mut cluster.spec, &p));
        let g = &cluster.spec.worker_group_specs.as_ref().unwrap()[0];
        assert_eq!(g.replicas, Some(1));
        assert_eq!(workers_to_delete(g), ["w1".to_string()]);
        assert!(matches!(busy[1].state, WorkerState::Running { .. }));
    }

    #[test]
    fn options_follow_autoscaler_options() {
        let mut spec = RayClusterSpec::default();
        assert_eq!(planner_options(&spec), PlannerOptions::default());
        spec.autoscaler_options = Some(ray_api::AutoscalerOptions {
            upscaling_mode: Some(ray_api::UpscalingMode::Conservative),
            idle_timeout_seconds: Some(30),
            version: Some(ray_api::AutoscalerVersion::V1),
            ..Default::default()
        });
        let o = planner_options(&spec);
        assert_eq!(o.upscaling_mode, UpscalingMode::Conservative);
        assert_eq!(o.idle_timeout, Duration::from_secs(30));
        assert_eq!(o.version, AutoscalerVersion::V1);
    }

    #[test]
    fn group_replicas_defaults() {
        let g = WorkerGroupSpec {
            group_name: "g".into(),
            ..Default::default()
        };
        assert_eq!(group_replicas(&g), GroupReplicas::default());
        assert!(workers_to_delete(&g).is_empty());
    }
}
