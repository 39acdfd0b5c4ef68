//! Benchmarks of the pure RayCluster pass: the pod plan and the status for one worker group of 10, 1,000
//! and 5,000 workers, both in steady state (every worker exists and is Running: the pass the operator runs
//! most) and for a scale-up from zero (the plan builds every worker pod).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use ray_reconcile::ReconcileConfig;
use ray_reconcile::raycluster::podgen::PodGenSettings;
use ray_reconcile::raycluster::{plan, status};

mod fixtures;
use fixtures::{SIZES, cluster, observed};

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
