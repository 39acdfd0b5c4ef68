//! Benchmarks: the pods of KubeRay's `ray-cluster.sample.yaml`. Per worker pod, both stamping one
//! more pod from a prepared [`WorkerPodTemplate`] and building one from scratch with
//! [`PodGenerator::worker_pod`]; and the head pod.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ray_api::RayCluster;
use ray_podgen::{PodGenConfig, PodGenerator, WorkerPodTemplate, WorkerReplica};

/// The sample RayCluster shipped with KubeRay v1.7.0, read from the shared reference tree.
fn sample_cluster() -> RayCluster {
    let path = "ray-cluster.sample.yaml";
    let text = kuberay_reference::sample_text(path);
    let mut documents: Vec<RayCluster> =
        ray_api::yaml::from_yaml_documents(&text).unwrap_or_else(|e| panic!("parsing {path}: {e}"));
    assert_eq!(documents.len(), 1, "{path} holds one RayCluster");
    let mut cluster = documents.remove(0);
    cluster.metadata.namespace.get_or_insert_with(|| "default".to_owned());
    cluster
}

fn bench_pods(c: &mut Criterion) {
    let cluster = sample_cluster();
    let config = PodGenConfig::default();
    let generator = PodGenerator::new(&cluster, &config);
    let template: WorkerPodTemplate = generator.worker_template(0).unwrap_or_else(|e| panic!("{e}"));

    let mut index = 0u32;
    c.bench_function("worker_pod/stamp_from_template", |b| {
        b.iter(|| {
            index = index.wrapping_add(1);
            black_box(template.pod(&WorkerReplica::single(black_box(index))))
        })
    });
    let mut index = 0u32;
    c.bench_function("worker_pod/from_scratch", |b| {
        b.iter(|| {
            index = index.wrapping_add(1);
            black_box(generator.worker_pod(0, &WorkerReplica::single(black_box(index))))
        })
    });
    c.bench_function("head_pod", |b| b.iter(|| black_box(generator.head_pod())));
    c.bench_function("head_pod/with_new_generator", |b| {
        b.iter(|| black_box(PodGenerator::new(black_box(&cluster), &config).head_pod()))
    });
}

criterion_group!(benches, bench_pods);
criterion_main!(benches);
