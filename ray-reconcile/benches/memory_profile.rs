//! Memory profile of the RayCluster controller's hot paths, measured with dhat's heap counters (every
//! allocation of the process goes through `dhat::Alloc`):
//!
//! - one reconcile pass (pod plan and status) of KubeRay's benchmark cluster with 10, 1,000 and 5,000
//!   workers, in steady state and scaling up from zero: allocations, bytes allocated and peak live heap;
//! - one cached pod and one cached RayCluster: the heap each keeps while cached, and the transient peak of
//!   decoding it from the wire, for each form the operator could hold it in (a full k8s-openapi `Pod`, the
//!   slim pod the watch decodes, the compact `PodInfo` the index keeps).
//!
//! Run with `cargo bench -p ray-reconcile --bench memory_profile`; it prints Markdown tables. Counts are
//! deterministic for a given build (no timing is involved), so they can be compared across commits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::watcher::Event;
use ray_api::RayCluster;
use ray_reconcile::ReconcileConfig;
use ray_reconcile::decode::Decoded;
use ray_reconcile::raycluster::index::ClusterIndex;
use ray_reconcile::raycluster::observed::PodInfo;
use ray_reconcile::raycluster::plan::PodAction;
use ray_reconcile::raycluster::podgen::PodGenSettings;
use ray_reconcile::raycluster::slim::SlimPod;
use ray_reconcile::raycluster::{plan, status};
use ray_reconcile::stored::Stored;
use serde_json::{Value, json};

mod fixtures;
use fixtures::{SIZES, cluster, observed};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// How many objects the per-object measurements cache at once (the per-object figure is the total divided
/// by this, so one-off allocations such as a map's first buckets are spread thin).
const CACHED_OBJECTS: usize = 1_000;

/// What one measured piece of work did to the heap.
#[derive(Clone, Copy, Debug)]
struct HeapUse {
    /// Allocations made.
    allocations: u64,
    /// Bytes allocated in all (freed or not).
    allocated: u64,
    /// Peak of the bytes live at once, counting only blocks allocated during the work.
    peak: usize,
    /// Bytes still live when the work returned (blocks allocated during it).
    retained: usize,
}

/// Runs `work` under a fresh profiler; the result is kept alive until the counters are read, so what it
/// holds counts as retained.
fn measure<T>(work: impl FnOnce() -> T) -> (T, HeapUse) {
    let profiler = dhat::Profiler::builder().testing().trim_backtraces(Some(4)).build();
    let result = black_box(work());
    let stats = dhat::HeapStats::get();
    drop(profiler);
    (
        result,
        HeapUse {
            allocations: stats.total_blocks,
            allocated: stats.total_bytes,
            peak: stats.max_bytes,
            retained: stats.curr_bytes,
        },
    )
}

fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}

fn per_pass_table() {
    let config = ReconcileConfig::default();
    let settings = PodGenSettings::default();
    let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    println!("### One reconcile pass (pod plan + status)\n");
    println!("| workers | pass | allocations | bytes allocated | peak live heap | pods created |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for workers in SIZES {
        let cluster = cluster(workers);
        for (label, observed) in [("steady state", observed(workers)), ("scale-up from zero", observed(0))] {
            let ((pods, _status), used) = measure(|| {
                let mut suffix = || "abcde".to_owned();
                let plan = plan::plan_pods(&cluster, &observed, &config, &settings, &mut suffix);
                let status = status::calculate_status(&cluster, &observed, None, &config.gates, &now);
                let created = plan
                    .actions
                    .iter()
                    .filter(|a| matches!(a, PodAction::CreatePod { .. }))
                    .count();
                (created, status)
            });
            println!(
                "| {workers} | {label} | {} | {} | {} | {pods} |",
                used.allocations,
                kib(used.allocated as f64),
                kib(used.peak as f64),
            );
        }
    }
    println!();
}

/// A worker pod as the API server returns it once it runs: what the operator creates for the benchmark
/// cluster plus the fields the server, scheduler and kubelet fill in.
fn served_worker_pod(index: usize) -> Value {
    let cluster = cluster(1);
    let config = ReconcileConfig::default();
    let mut suffix = || "abcde".to_owned();
    let plan = plan::plan_pods(&cluster, &observed(0), &config, &PodGenSettings::default(), &mut suffix);
    let pod = plan
        .actions
        .into_iter()
        .find_map(|a| match a {
            PodAction::CreatePod { pod, group } if group == "small-group" => Some(pod),
            _ => None,
        })
        .expect("the scale-up plan creates a worker");
    let mut value = serde_json::to_value(&*pod).unwrap();
    let time = "2026-11-27T12:00:00Z";
    let metadata = value["metadata"].as_object_mut().unwrap();
    metadata.remove("generateName");
    metadata.insert("name".into(), json!(format!("bench-small-group-worker-{index:05}")));
    metadata.insert("uid".into(), json!(format!("6f1c0000-0000-4000-8000-{index:012}")));
    metadata.insert("resourceVersion".into(), json!((1000 + index).to_string()));
    metadata.insert("creationTimestamp".into(), json!(time));
    value["spec"]["nodeName"] = json!("node-0001");
    let condition = |kind: &str| json!({"type": kind, "status": "True", "lastTransitionTime": time});
    value["status"] = json!({
        "phase": "Running",
        "hostIP": "10.1.0.1",
        "podIP": "10.244.0.17",
        "podIPs": [{"ip": "10.244.0.17"}],
        "startTime": time,
        "qosClass": "Guaranteed",
        "conditions": [condition("PodReadyToStartContainers"), condition("Initialized"), condition("Ready"),
            condition("ContainersReady"), condition("PodScheduled")],
        "containerStatuses": [{"name": "ray-worker", "ready": true, "started": true, "restartCount": 0,
            "image": "rayproject/ray:2.52.0", "imageID": "", "containerID": "containerd://0001",
            "state": {"running": {"startedAt": time}}}],
    });
    value
}

/// Prints one row: what holding every object of `objects` decoded by `decode` retains per object, and the
/// transient peak and allocations of decoding one.
fn row<T>(label: &str, objects: &[Vec<u8>], decode: impl Fn(&[u8]) -> T) {
    let (_one_object, one) = measure(|| decode(&objects[0]));
    let (_all_objects, all) = measure(|| objects.iter().map(|o| decode(o)).collect::<Vec<T>>());
    print_row(label, objects.len(), one, all);
}

fn print_row(label: &str, count: usize, one: HeapUse, all: HeapUse) {
    println!(
        "| {label} | {} | {} | {} |",
        kib(all.retained as f64 / count as f64),
        kib(one.peak as f64),
        one.allocations,
    );
}

fn readable(pod: &[u8]) -> SlimPod {
    match serde_json::from_slice::<Decoded<SlimPod>>(pod).unwrap() {
        Decoded::Readable(pod) => *pod,
        Decoded::Unreadable(u) => panic!("bench pod unreadable: {}", u.error),
    }
}

/// The cluster index holding `pods`, each read as the watch reads it.
fn index_of(pods: &[Vec<u8>]) -> ClusterIndex<PodInfo> {
    let index = ClusterIndex::<PodInfo>::default();
    for pod in pods {
        index.apply(&Event::Apply(readable(pod)));
    }
    index
}

fn per_object_table() {
    let pods: Vec<Vec<u8>> = (0..CACHED_OBJECTS)
        .map(|i| serde_json::to_vec(&served_worker_pod(i)).unwrap())
        .collect();
    let wire = pods.iter().map(Vec::len).sum::<usize>() as f64 / CACHED_OBJECTS as f64;
    println!("### One cached object ({CACHED_OBJECTS} held at once; retained heap per object)\n");
    println!("| object, as held | retained heap | peak live heap while decoding one | allocations to decode one |");
    println!("| --- | --- | --- | --- |");
    println!("| worker pod, JSON on the wire | {} | - | - |", kib(wire));
    row("worker pod as a k8s-openapi `Pod`, fully decoded", &pods, |p| {
        serde_json::from_slice::<Pod>(p).unwrap()
    });
    row("worker pod as a `serde_json::Value`", &pods, |p| {
        serde_json::from_slice::<Value>(p).unwrap()
    });
    row("worker pod as a `SlimPod`, decoded directly", &pods, |p| {
        serde_json::from_slice::<SlimPod>(p).unwrap()
    });
    row(
        "worker pod as a `SlimPod` through per-object decoding (`Decoded`, as the watch reads it)",
        &pods,
        readable,
    );
    let (_one_index, one) = measure(|| index_of(&pods[..1]));
    let (index, all) = measure(|| index_of(&pods));
    assert_eq!(index.len(), CACHED_OBJECTS);
    print_row(
        "worker pod as a `PodInfo` in the cluster index (what the operator keeps)",
        pods.len(),
        one,
        all,
    );

    let clusters: Vec<Vec<u8>> = (0..CACHED_OBJECTS)
        .map(|i| {
            let mut value = serde_json::to_value(cluster(5)).unwrap();
            value["metadata"]["name"] = json!(format!("bench-{i:05}"));
            serde_json::to_vec(&value).unwrap()
        })
        .collect();
    let wire = clusters.iter().map(Vec::len).sum::<usize>() as f64 / CACHED_OBJECTS as f64;
    println!(
        "| RayCluster (benchmark shape), JSON on the wire | {} | - | - |",
        kib(wire)
    );
    row("RayCluster, fully decoded", &clusters, |c| {
        serde_json::from_slice::<RayCluster>(c).unwrap()
    });
    row(
        "RayCluster as the store keeps it (`Stored`: metadata decoded, spec and status as text)",
        &clusters,
        |c| Stored::new(serde_json::from_slice::<RayCluster>(c).unwrap()).unwrap(),
    );
    println!();
}

fn main() {
    println!("## Memory profile (dhat heap counters)\n");
    per_pass_table();
    per_object_table();
}
