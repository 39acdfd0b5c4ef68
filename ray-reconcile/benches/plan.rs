//! Benchmarks of the pure RayCluster pass: the pod plan and the status for one worker group of 10, 1,000
//! and 5,000 workers, both in steady state (every worker exists and is Running: the pass the operator runs
//! most) and for a scale-up from zero (the plan builds every worker pod).

use std::collections::HashSet;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use ray_api::RayCluster;
use ray_autoscale::ObservedPod;
use ray_reconcile::ReconcileConfig;
use ray_reconcile::raycluster::observed::{ObservedState, PodInfo, PodRole, ReadyCondition};
use ray_reconcile::raycluster::podgen::PodGenSettings;
use ray_reconcile::raycluster::{plan, status};

const SIZES: [usize; 3] = [10, 1_000, 5_000];

/// KubeRay's benchmark RayCluster shape: a head and one `small-group` of `workers` workers.
fn cluster(workers: usize) -> RayCluster {
    let resources = serde_json::json!({"cpu": "1", "memory": "1Gi"});
    let container = |name: &str| {
        serde_json::json!({"name": name, "image": "rayproject/ray:2.52.0",
        "resources": {"limits": resources, "requests": resources}})
    };
    serde_json::from_value(serde_json::json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "bench", "namespace": "default", "uid": "00000000-0000-0000-0000-000000000001"},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container("ray-head")]}}},
            "workerGroupSpecs": [{"groupName": "small-group", "replicas": workers, "minReplicas": 0,
                "maxReplicas": workers, "rayStartParams": {},
                "template": {"spec": {"containers": [container("ray-worker")]}}}]
        }
    }))
    .unwrap_or_else(|e| panic!("bench RayCluster: {e}"))
}

fn running_pod(name: String, role: PodRole, group: &str) -> Arc<PodInfo> {
    Arc::new(PodInfo {
        pod: ObservedPod::running(name),
        role,
        group: group.to_owned(),
        pod_ip: "10.0.0.1".to_owned(),
        ready: Some(ReadyCondition {
            status: "True".to_owned(),
            ..ReadyCondition::default()
        }),
        container_problem: None,
        awaiting_node: false,
        upgrade: Default::default(),
    })
}

/// The head and `workers` Running workers.
fn observed(workers: usize) -> ObservedState {
    let mut pods = vec![running_pod("bench-head-abcde".to_owned(), PodRole::Head, "headgroup")];
    pods.extend((0..workers).map(|i| {
        running_pod(
            format!("bench-small-group-worker-{i:05}"),
            PodRole::Worker,
            "small-group",
        )
    }));
    ObservedState {
        pods,
        head_services: Vec::new(),
        unsatisfied_groups: HashSet::new(),
        tls_block: None,
    }
}

fn bench_plan(c: &mut Criterion) {
    let config = ReconcileConfig::default();
    let settings = PodGenSettings::default();
    let mut group = c.benchmark_group("plan_pods");
    for workers in SIZES {
        let cluster = cluster(workers);
        let steady = observed(workers);
        group.bench_with_input(BenchmarkId::new("steady_state", workers), &workers, |b, _| {
            let mut suffix = || "abcde".to_owned();
            b.iter(|| {
                black_box(plan::plan_pods(
                    &cluster,
                    black_box(&steady),
                    &config,
                    &settings,
                    &mut suffix,
                ))
            })
        });
        let head_only = observed(0);
        group.bench_with_input(BenchmarkId::new("scale_up_from_zero", workers), &workers, |b, _| {
            let mut suffix = || "abcde".to_owned();
            b.iter(|| {
                black_box(plan::plan_pods(
                    &cluster,
                    black_box(&head_only),
                    &config,
                    &settings,
                    &mut suffix,
                ))
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("calculate_status");
    let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    for workers in SIZES {
        let cluster = cluster(workers);
        let steady = observed(workers);
        group.bench_with_input(BenchmarkId::new("steady_state", workers), &workers, |b, _| {
            b.iter(|| {
                black_box(status::calculate_status(
                    &cluster,
                    black_box(&steady),
                    None,
                    &config.gates,
                    &now,
                ))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_plan);
criterion_main!(benches);
