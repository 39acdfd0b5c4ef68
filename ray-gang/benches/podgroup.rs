//! Benchmarks: the Volcano PodGroup of a RayCluster with 100 worker groups (build, then plan the
//! sync against an up-to-date stored copy), and the YuniKorn task-groups annotation of the same
//! cluster.

use criterion::{Criterion, criterion_group, criterion_main};
use ray_api::RayCluster;
use ray_gang::{BatchScheduler, volcano, yunikorn};
use serde_json::{Value, json};
use std::hint::black_box;

/// One container with requests (and a GPU in limits for every tenth group).
fn template(i: usize) -> Value {
    let mut limits = json!({"cpu": format!("{}", 1 + i % 8), "memory": format!("{}Gi", 2 + i % 16)});
    if i.is_multiple_of(10) {
        limits["nvidia.com/gpu"] = json!("1");
    }
    json!({"spec": {"containers": [{
        "name": "ray-worker",
        "image": "rayproject/ray:2.52.0",
        "resources": {
            "requests": {"cpu": format!("{}m", 250 * (1 + i % 8)), "memory": format!("{}Mi", 512 * (1 + i % 16))},
            "limits": limits,
        },
    }]}})
}

/// A RayCluster with a 1 CPU / 2Gi head and 100 worker groups of mixed shapes and sizes
/// (replicas 0-19, some above `maxReplicas`, some multi-host, a few suspended), labelled for a
/// Volcano queue and priority.
fn cluster_with_100_groups() -> RayCluster {
    let groups: Vec<Value> = (0..100)
        .map(|i| {
            json!({
                "groupName": format!("group-{i:03}"),
                "replicas": i % 20,
                "minReplicas": i % 3,
                "maxReplicas": 15,
                "numOfHosts": 1 + i % 4,
                "suspend": i % 25 == 24,
                "rayStartParams": {},
                "template": template(i),
            })
        })
        .collect();
    let value = json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "bench-cluster",
            "namespace": "default",
            "uid": "0b5d7c4e-0000-4000-8000-000000000000",
            "labels": {"volcano.sh/queue-name": "bench-queue", "ray.io/priority-class-name": "high"},
            "annotations": {"team": "ray"},
        },
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{
                "name": "ray-head",
                "image": "rayproject/ray:2.52.0",
                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "5Gi"}},
            }]}}},
            "workerGroupSpecs": groups,
        },
    });
    match serde_json::from_value(value) {
        Ok(cluster) => cluster,
        Err(err) => panic!("bench cluster does not parse: {err}"),
    }
}

fn bench_volcano(c: &mut Criterion) {
    let cluster = cluster_with_100_groups();
    let stored = match volcano::pod_group_for_cluster(&cluster) {
        Ok(Some(pg)) => pg,
        other => panic!("no PodGroup: {other:?}"),
    };
    c.bench_function("volcano_podgroup_100_groups", |b| {
        b.iter(|| volcano::pod_group_for_cluster(black_box(&cluster)))
    });
    c.bench_function("volcano_podgroup_100_groups_build_and_plan_sync", |b| {
        b.iter(|| {
            let scheduler = BatchScheduler::Volcano;
            let desired = match volcano::pod_group_for_cluster(black_box(&cluster)) {
                Ok(Some(pg)) => pg,
                other => panic!("no PodGroup: {other:?}"),
            };
            black_box(volcano::plan_sync(Some(&stored), &desired).changes() || scheduler.owns_pod_groups())
        })
    });
}

fn bench_yunikorn(c: &mut Criterion) {
    let cluster = cluster_with_100_groups();
    c.bench_function("yunikorn_task_groups_100_groups", |b| {
        b.iter(|| {
            yunikorn::task_groups_for_cluster(black_box(&cluster.spec))
                .map(|groups| yunikorn::task_groups_json(&groups))
        })
    });
}

criterion_group!(benches, bench_volcano, bench_yunikorn);
criterion_main!(benches);
