//! Benchmarks: the autoscaler planner with 1,000 pending demands, and the operator-side replica
//! math (per-group decisions + status totals) for 5,000 worker pods.

use criterion::{Criterion, criterion_group, criterion_main};
use ray_autoscale::planner::resources::{CPU, GPU};
use ray_autoscale::planner::{GroupState, HeadNode, PlannerInput, PlannerOptions, ResourceSet, WorkerPod};
use ray_autoscale::{
    GroupReplicas, ObservedPod, WorkerGroupInput, cluster_desired_replicas, cluster_max_replicas, cluster_min_replicas,
    plan, plan_worker_group,
};
use std::hint::black_box;
use std::time::Duration;

/// Three groups (small CPU, large CPU, GPU) with 50 busy and 50 idle pods each, and 1,000 mixed
/// demands.
fn planner_input() -> PlannerInput {
    let shapes = [
        ("cpu-small", ResourceSet::new().with(CPU, 1.0)),
        ("cpu-large", ResourceSet::new().with(CPU, 8.0)),
        ("gpu", ResourceSet::new().with(CPU, 8.0).with(GPU, 1.0)),
    ];
    let groups = shapes
        .into_iter()
        .map(|(name, pod)| {
            let mut pods: Vec<WorkerPod> = (0..50)
                .map(|i| WorkerPod::busy(format!("{name}-busy-{i:04}"), pod.clone()))
                .collect();
            pods.extend((0..50).map(|i| WorkerPod::idle(format!("{name}-idle-{i:04}"), Duration::from_secs(i))));
            GroupState {
                name: name.to_string(),
                pod_resources: pod,
                replicas: GroupReplicas {
                    replicas: Some(100),
                    min_replicas: Some(0),
                    max_replicas: Some(2000),
                    num_of_hosts: 1,
                    suspend: false,
                },
                idle_timeout: None,
                workers_to_delete: vec![],
                pods,
            }
        })
        .collect();
    let demands = (0..1000)
        .map(|i| match i % 4 {
            0 => ResourceSet::new().with(CPU, 2.0),
            1 => ResourceSet::new().with(CPU, 1.0).with(GPU, 1.0),
            _ => ResourceSet::new().with(CPU, 1.0),
        })
        .collect();
    PlannerInput {
        now: Duration::from_secs(30),
        head: HeadNode::default(),
        groups,
        demands,
        options: PlannerOptions::default(),
    }
}

fn bench_planner(c: &mut Criterion) {
    let input = planner_input();
    c.bench_function("planner_1000_demands", |b| b.iter(|| plan(black_box(&input))));
}

/// Five groups of 1,000 workers (5,000 pods): 600 busy and 400 idle per group, some idle past the
/// 60 s timeout, and 1,000 pending 1-CPU demands that mostly fit on the busy pods' spare capacity.
fn planner_input_5000_workers() -> PlannerInput {
    let groups = (0..5)
        .map(|g| {
            let name = format!("group-{g}");
            let pod = ResourceSet::new().with(CPU, 4.0);
            let mut pods: Vec<WorkerPod> = (0..600)
                .map(|i| WorkerPod::busy(format!("{name}-busy-{i:04}"), ResourceSet::new().with(CPU, 3.0)))
                .collect();
            pods.extend((0..400).map(|i| WorkerPod::idle(format!("{name}-idle-{i:04}"), Duration::from_secs(i % 120))));
            GroupState {
                name,
                pod_resources: pod,
                replicas: GroupReplicas {
                    replicas: Some(1000),
                    min_replicas: Some(100),
                    max_replicas: Some(2000),
                    num_of_hosts: 1,
                    suspend: false,
                },
                idle_timeout: None,
                workers_to_delete: vec![],
                pods,
            }
        })
        .collect();
    PlannerInput {
        now: Duration::from_secs(120),
        head: HeadNode::default(),
        groups,
        demands: (0..1000).map(|_| ResourceSet::new().with(CPU, 1.0)).collect(),
        options: PlannerOptions::default(),
    }
}

fn bench_planner_5000_workers(c: &mut Criterion) {
    let input = planner_input_5000_workers();
    c.bench_function("planner_5000_workers", |b| b.iter(|| plan(black_box(&input))));
}

/// Ten groups of 500 workers; each group lists 20 pods in workersToDelete, has one failed pod in
/// half the groups, and a replicas target that is sometimes above and sometimes below.
fn bench_operator_math(c: &mut Criterion) {
    let groups: Vec<(GroupReplicas, Vec<String>, Vec<ObservedPod>)> = (0..10)
        .map(|g| {
            let replicas = GroupReplicas {
                replicas: Some(if g % 2 == 0 { 450 } else { 550 }),
                min_replicas: Some(0),
                max_replicas: Some(1000),
                num_of_hosts: 1,
                suspend: false,
            };
            let pods: Vec<ObservedPod> = (0..500)
                .map(|i| ObservedPod {
                    replica_index: Some(i),
                    ..ObservedPod::running(format!("g{g}-w{i:04}"))
                })
                .collect();
            let wtd = (0..20).map(|i| format!("g{g}-w{:04}", i * 7)).collect();
            (replicas, wtd, pods)
        })
        .collect();
    let replica_fields: Vec<GroupReplicas> = groups.iter().map(|(r, _, _)| r.clone()).collect();
    c.bench_function("operator_math_5000_workers", |b| {
        b.iter(|| {
            let plans: Vec<_> = groups
                .iter()
                .map(|(replicas, wtd, pods)| {
                    plan_worker_group(&WorkerGroupInput {
                        replicas,
                        workers_to_delete: wtd,
                        pods,
                        surplus_deletion: true,
                        multi_host_indexing: true,
                        create_limit: usize::MAX,
                    })
                })
                .collect();
            black_box((
                plans,
                cluster_desired_replicas(&replica_fields),
                cluster_min_replicas(&replica_fields),
                cluster_max_replicas(&replica_fields),
            ))
        })
    });
}

criterion_group!(benches, bench_planner, bench_planner_5000_workers, bench_operator_math);
criterion_main!(benches);
