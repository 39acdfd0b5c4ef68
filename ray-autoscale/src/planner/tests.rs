//! Planner tests: the autoscaling guide's walkthrough, rate limits, multi-group choice, the
//! workersToDelete handshake, and properties.

use super::resources::{CPU, GPU};
use super::sim::World;
use super::*;
use proptest::prelude::*;

fn cpu(n: f64) -> ResourceSet {
    ResourceSet::new().with(CPU, n)
}

fn group(name: &str, pod: ResourceSet, replicas: i32, min: i32, max: i32) -> GroupState {
    GroupState {
        name: name.into(),
        pod_resources: pod,
        replicas: GroupReplicas {
            replicas: Some(replicas),
            min_replicas: Some(min),
            max_replicas: Some(max),
            num_of_hosts: 1,
            suspend: false,
        },
        idle_timeout: None,
        workers_to_delete: vec![],
        pods: vec![],
    }
}

fn input(groups: Vec<GroupState>) -> PlannerInput {
    PlannerInput {
        now: Duration::ZERO,
        // `num-cpus: 0` on the head: no CPU for tasks.
        head: HeadNode {
            resources: ResourceSet::new().with("memory", 2e9),
            used: ResourceSet::new(),
        },
        groups,
        demands: vec![],
        options: PlannerOptions::default(),
    }
}

/// The guide's `ray-cluster.autoscaler.yaml`: head `num-cpus: 0`, `small-group` 1-CPU workers,
/// replicas 0, min 0, max 10.
fn guide_world() -> World {
    World::new(input(vec![group("small-group", cpu(1.0), 0, 0, 10)]))
}

#[test]
fn walkthrough_autoscaling_guide() {
    let mut w = guide_world();
    // Nothing pending: nothing changes.
    let p = w.round();
    assert_eq!(p.groups[0].replicas, Some(0));
    assert_eq!(w.pods(0), 0);

    // actor1 (1 CPU) -> one worker.
    w.submit("actor1", cpu(1.0));
    let p = w.round();
    assert_eq!(p.groups[0].replicas, Some(1));
    assert_eq!(p.groups[0].launched_pods, 1);
    assert_eq!(w.pods(0), 1);
    assert!(w.input.demands.is_empty(), "actor1 runs on the new worker");

    // actor2 -> two workers.
    w.submit("actor2", cpu(1.0));
    assert_eq!(w.round().groups[0].replicas, Some(2));
    assert_eq!(w.pods(0), 2);
    assert!(w.input.demands.is_empty());

    // A 2-CPU actor fits no worker: reported infeasible, nothing launched.
    w.submit("big", cpu(2.0));
    let p = w.round();
    assert_eq!(p.infeasible, vec![cpu(2.0)]);
    assert_eq!(p.groups[0].replicas, Some(2));
    assert_eq!(p.groups[0].launched_pods, 0);
    assert_eq!(p.changes(&w.input).count(), 0);
    assert_eq!(w.pods(0), 2);
    w.finish("big");

    // actor1 ends at t=100 s: its worker idles.
    w.input.now = Duration::from_secs(100);
    let actor1_pod = match &w.tasks.iter().find(|t| t.name == "actor1").unwrap().placed {
        Some(Some((_, pod))) => pod.clone(),
        other => panic!("actor1 not on a worker: {other:?}"),
    };
    w.finish("actor1");

    // Before the idle timeout: nothing is removed (also exactly at 60 s: Ray needs "longer than").
    for secs in [130, 159, 160] {
        w.input.now = Duration::from_secs(secs);
        let p = plan(&w.input);
        assert_eq!(p.groups[0].replicas, Some(2), "t={secs}");
        assert!(p.groups[0].workers_to_delete.is_empty(), "t={secs}");
    }

    // After 60 s idle: that worker is listed and replicas drops to 1.
    w.input.now = Duration::from_secs(161);
    let p = plan(&w.input);
    assert_eq!(p.groups[0].replicas, Some(1));
    assert_eq!(p.groups[0].workers_to_delete, vec![actor1_pod.clone()]);
    assert_eq!(p.groups[0].terminated, vec![actor1_pod.clone()]);

    // The autoscaler writes it; until the operator deletes the pod, nothing else changes.
    w.apply(&p);
    let again = plan(&w.input);
    assert!(again.groups[0].waiting_for_deletion);
    assert_eq!(again.changes(&w.input).count(), 0);

    // The operator deletes the pod; the next iteration clears workersToDelete.
    w.operator();
    assert_eq!(w.pods(0), 1);
    let p = plan(&w.input);
    assert_eq!(p.groups[0].workers_to_delete, Vec::<String>::new());
    assert_eq!(p.groups[0].replicas, Some(1));
    w.apply(&p);
    assert_eq!(plan(&w.input).changes(&w.input).count(), 0);

    // actor2 ends at t=200 s: 60 s later its worker goes too (minReplicas 0).
    w.input.now = Duration::from_secs(200);
    w.finish("actor2");
    w.input.now = Duration::from_secs(260);
    assert_eq!(plan(&w.input).changes(&w.input).count(), 0, "exactly 60 s idle");
    w.input.now = Duration::from_secs(261);
    let p = plan(&w.input);
    assert_eq!(p.groups[0].replicas, Some(0));
    assert_eq!(p.groups[0].workers_to_delete.len(), 1);
    w.apply(&p);
    w.operator();
    assert_eq!(w.pods(0), 0);
}

#[test]
fn head_capacity_is_used_unless_num_cpus_is_zero() {
    let mut i = input(vec![group("g", cpu(1.0), 0, 0, 10)]);
    i.head.resources = cpu(2.0);
    i.demands = vec![cpu(1.0), cpu(1.0)];
    let p = plan(&i);
    assert_eq!(p.groups[0].replicas, Some(0), "both fit on the head");
    i.demands.push(cpu(1.0));
    assert_eq!(plan(&i).groups[0].replicas, Some(1));
}

#[test]
fn conservative_mode_caps_pending_launches() {
    let mut i = input(vec![group("g", cpu(1.0), 0, 0, 1000)]);
    i.demands = vec![cpu(1.0); 50];
    i.options.upscaling_mode = UpscalingMode::Conservative;
    // No running pods: max(5, floor(1 × max(0, 1))) = 5.
    assert_eq!(plan(&i).groups[0].replicas, Some(5));
    // Default mode: 50 at once.
    i.options.upscaling_mode = UpscalingMode::Default;
    assert_eq!(plan(&i).groups[0].replicas, Some(50));

    // Conservative with 8 running busy pods and 2 pending: 8 - 2 = 6 more.
    i.options.upscaling_mode = UpscalingMode::Conservative;
    i.groups[0].replicas.replicas = Some(10);
    i.groups[0].pods = (0..8).map(|n| WorkerPod::busy(format!("p{n}"), cpu(1.0))).collect();
    i.groups[0]
        .pods
        .extend((8..10).map(|n| WorkerPod::pending(format!("p{n}"))));
    let p = plan(&i);
    // 2 demands land on the pending pods; 48 remain; cap allows 6.
    assert_eq!(p.groups[0].replicas, Some(16));
}

#[test]
fn launches_stop_at_max_replicas_and_leave_demands_unfulfilled() {
    let mut i = input(vec![group("g", cpu(1.0), 0, 0, 3)]);
    i.demands = vec![cpu(1.0); 5];
    let p = plan(&i);
    assert_eq!(p.groups[0].replicas, Some(3));
    assert_eq!(p.unfulfilled.len(), 2);
    assert!(p.infeasible.is_empty());
}

#[test]
fn gpu_demands_go_to_the_gpu_group_and_cpu_demands_avoid_it() {
    let gpu_pod = cpu(4.0).with(GPU, 1.0);
    let mut i = input(vec![group("cpu", cpu(4.0), 0, 0, 10), group("gpu", gpu_pod, 0, 0, 10)]);
    i.demands = vec![cpu(1.0).with(GPU, 1.0)];
    let p = plan(&i);
    assert_eq!((p.groups[0].replicas, p.groups[1].replicas), (Some(0), Some(1)));
    i.demands = vec![cpu(1.0)];
    let p = plan(&i);
    assert_eq!((p.groups[0].replicas, p.groups[1].replicas), (Some(1), Some(0)));
}

#[test]
fn several_small_demands_share_one_new_pod() {
    let mut i = input(vec![group("g", cpu(4.0), 0, 0, 10)]);
    i.demands = vec![cpu(1.0); 6];
    assert_eq!(plan(&i).groups[0].replicas, Some(2));
}

#[test]
fn idle_pods_at_min_replicas_are_kept() {
    let mut i = input(vec![group("g", cpu(1.0), 2, 2, 10)]);
    i.groups[0].pods = vec![
        WorkerPod::idle("a", Duration::ZERO),
        WorkerPod::idle("b", Duration::ZERO),
    ];
    i.now = Duration::from_secs(1000);
    assert_eq!(plan(&i).changes(&i).count(), 0);
    // One above min: the least recently used idle pod goes.
    i.groups[0].replicas.min_replicas = Some(1);
    i.groups[0].pods[1] = WorkerPod::idle("b", Duration::from_secs(10));
    let p = plan(&i);
    assert_eq!(p.groups[0].workers_to_delete, vec!["a".to_string()]);
    assert_eq!(p.groups[0].replicas, Some(1));
}

#[test]
fn per_group_idle_timeout_overrides_the_cluster_one() {
    let mut i = input(vec![group("g", cpu(1.0), 1, 0, 10)]);
    i.groups[0].pods = vec![WorkerPod::idle("a", Duration::ZERO)];
    i.now = Duration::from_secs(30);
    assert_eq!(plan(&i).changes(&i).count(), 0);
    i.groups[0].idle_timeout = Some(Duration::from_secs(20));
    assert_eq!(plan(&i).groups[0].workers_to_delete, vec!["a".to_string()]);
}

#[test]
fn idle_pod_that_receives_a_demand_is_kept() {
    let mut i = input(vec![group("g", cpu(1.0), 1, 0, 10)]);
    i.groups[0].pods = vec![WorkerPod::idle("a", Duration::ZERO)];
    i.now = Duration::from_secs(1000);
    i.demands = vec![cpu(1.0)];
    assert_eq!(plan(&i).changes(&i).count(), 0);
}

#[test]
fn v1_blocks_every_group_while_a_listed_pod_exists_and_v2_only_that_group() {
    // The autoscaler already lowered `a` to 0 and listed its pod; the operator has not acted yet.
    let mut i = input(vec![group("a", cpu(1.0), 0, 0, 10), group("b", cpu(1.0), 0, 0, 10)]);
    i.groups[0].pods = vec![WorkerPod::busy("a-1", cpu(1.0))];
    i.groups[0].workers_to_delete = vec!["a-1".into()];
    i.demands = vec![ResourceSet::new().with(CPU, 1.0)];
    i.options.version = AutoscalerVersion::V1;
    let p = plan(&i);
    assert!(p.blocked);
    assert_eq!(p.changes(&i).count(), 0);
    i.options.version = AutoscalerVersion::V2;
    let p = plan(&i);
    assert!(!p.blocked && p.groups[0].waiting_for_deletion);
    assert_eq!(p.groups[0].workers_to_delete, vec!["a-1".to_string()]);
    assert_eq!(p.groups[1].replicas, Some(1));
}

#[test]
fn stale_workers_to_delete_is_cleared_once_pods_are_gone() {
    for version in [AutoscalerVersion::V1, AutoscalerVersion::V2] {
        let mut i = input(vec![group("a", cpu(1.0), 1, 0, 10)]);
        i.options.version = version;
        i.groups[0].pods = vec![WorkerPod::busy("a-2", cpu(1.0))];
        i.groups[0].workers_to_delete = vec!["a-1".into()];
        let p = plan(&i);
        assert!(!p.blocked);
        assert!(p.groups[0].workers_to_delete.is_empty());
        assert_eq!(p.groups[0].replicas, Some(1));
    }
}

#[test]
fn requested_but_not_created_pods_absorb_demands() {
    let mut i = input(vec![group("g", cpu(1.0), 3, 0, 10)]);
    i.demands = vec![cpu(1.0); 3];
    assert_eq!(plan(&i).changes(&i).count(), 0);
    i.demands.push(cpu(1.0));
    assert_eq!(plan(&i).groups[0].replicas, Some(4));
}

#[test]
fn multi_host_groups_launch_and_terminate_whole_replicas() {
    let mut g = group("tpu", ResourceSet::new().with("TPU", 4.0), 0, 0, 4);
    g.replicas.num_of_hosts = 2;
    let mut w = World::new(input(vec![g]));
    w.submit("t1", ResourceSet::new().with("TPU", 4.0));
    let p = w.round();
    assert_eq!(p.groups[0].replicas, Some(1));
    assert_eq!(p.groups[0].launched_pods, 2);
    assert_eq!(w.pods(0), 2);
    w.input.now = Duration::from_secs(10);
    w.finish("t1");
    w.input.now = Duration::from_secs(100);
    let p = plan(&w.input);
    assert_eq!(p.groups[0].replicas, Some(0));
    assert_eq!(p.groups[0].workers_to_delete.len(), 2);
}

#[test]
fn same_input_same_plan() {
    let mut i = input(vec![group("a", cpu(2.0), 0, 0, 10), group("b", cpu(2.0), 0, 0, 10)]);
    i.demands = vec![cpu(1.0), cpu(2.0), cpu(0.5)];
    assert_eq!(plan(&i), plan(&i));
}

// ------------------------------------------------------------------------------------------------
// Properties
// ------------------------------------------------------------------------------------------------

fn arb_group(idx: usize) -> impl Strategy<Value = GroupState> {
    (1u32..=4, 0u32..=2, 0i32..=3, 0i32..=4, 1i32..=3, 0i32..=6).prop_map(
        move |(cpus, gpus, min, extra, hosts, replicas)| {
            let mut pod = cpu(f64::from(cpus));
            if gpus > 0 {
                pod.set(GPU, f64::from(gpus));
            }
            let mut g = group(&format!("g{idx}"), pod, replicas, min, min + extra);
            g.replicas.num_of_hosts = hosts;
            g
        },
    )
}

fn arb_demand() -> impl Strategy<Value = ResourceSet> {
    (1u32..=8, 0u32..=2).prop_map(|(half_cpus, gpus)| {
        let mut d = cpu(f64::from(half_cpus) / 2.0);
        if gpus > 0 {
            d.set(GPU, f64::from(gpus));
        }
        d
    })
}

fn arb_input() -> impl Strategy<Value = (PlannerInput, Vec<ResourceSet>)> {
    (
        proptest::collection::vec(any::<prop::sample::Index>(), 1..=3),
        proptest::collection::vec(arb_demand(), 0..12),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|(ids, demands, conservative, v1)| {
            let groups: Vec<_> = (0..ids.len()).map(arb_group).collect();
            (groups, Just(demands), Just(conservative), Just(v1))
        })
        .prop_map(|(groups, demands, conservative, v1)| {
            let mut i = input(groups);
            i.options.upscaling_mode = if conservative {
                UpscalingMode::Conservative
            } else {
                UpscalingMode::Default
            };
            i.options.version = if v1 {
                AutoscalerVersion::V1
            } else {
                AutoscalerVersion::V2
            };
            (i, demands)
        })
}

fn with_large_max(mut i: PlannerInput) -> PlannerInput {
    for g in &mut i.groups {
        g.replicas.max_replicas = Some(g.replicas.min_or_default() + 100);
    }
    i
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every written `replicas` lies within [min, max], pods never exceed `maxReplicas × numOfHosts`,
    /// busy pods are never terminated, the plan is deterministic, and a second call after applying
    /// a plan (nothing else changed) changes nothing.
    #[test]
    fn planner_stays_within_bounds_and_is_stable((start, demands) in arb_input(), finish_mask in any::<u32>()) {
        let mut w = World::new(start);
        for (n, d) in demands.iter().enumerate() {
            w.submit(&format!("t{n}"), d.clone());
        }
        for round in 0..30u64 {
            w.input.now = Duration::from_secs(round * 15);
            let p = plan(&w.input);
            prop_assert_eq!(&p, &plan(&w.input), "deterministic");
            for (gi, (g, d)) in w.input.groups.iter().zip(&p.groups).enumerate() {
                if d.replicas != g.replicas.replicas {
                    let r = d.replicas.unwrap_or(-1);
                    prop_assert!(r >= g.replicas.min_or_default() && r <= g.replicas.max_or_default(), "{:?} for {:?}", d, g.replicas);
                }
                let max_pods = i64::from(g.replicas.max_or_default()) * i64::from(g.replicas.num_of_hosts);
                prop_assert!(w.pods(gi) as i64 <= max_pods, "too many pods in {}", g.name);
                for name in &d.terminated {
                    let busy = w.tasks.iter().any(|t| t.placed == Some(Some((gi, name.clone()))));
                    prop_assert!(!busy, "busy pod {} terminated", name);
                }
            }
            let before = w.input.clone();
            w.apply(&p);
            let again = plan(&w.input);
            prop_assert_eq!(again.changes(&w.input).count(), 0, "second call changed something: {:?}\nfirst plan {:?}\ninput {:?}", again, p, before);
            w.operator();
            w.ray();
            if round == 10 {
                let names: Vec<String> = w.tasks.iter().map(|t| t.name.clone()).collect();
                for (n, name) in names.iter().enumerate() {
                    if finish_mask & (1 << (n % 32)) != 0 {
                        w.finish(name);
                    }
                }
            }
        }
    }

    /// With room to grow, every feasible demand ends up running (plan -> pods start -> plan ...),
    /// infeasible ones are reported and never placed on a worker.
    #[test]
    fn feasible_demands_are_eventually_placed((start, demands) in arb_input()) {
        let mut w = World::new(with_large_max(start));
        for (n, d) in demands.iter().enumerate() {
            w.submit(&format!("t{n}"), d.clone());
        }
        let mut last = Plan::default();
        for round in 0..20u64 {
            w.input.now = Duration::from_secs(round * 5);
            last = w.round();
        }
        for task in &w.tasks {
            let feasible = w.input.groups.iter().any(|g| g.pod_resources.fits(&task.demand));
            prop_assert_eq!(task.placed.is_some(), feasible, "task {} {}", task.name, task.demand);
            if !feasible {
                prop_assert!(last.infeasible.contains(&task.demand));
            }
        }
        prop_assert!(last.unfulfilled.is_empty());
    }
}
