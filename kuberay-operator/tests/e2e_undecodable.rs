//! End to end: objects the operator cannot read cost those objects alone. kube-sim does not validate custom
//! resources yet, so (like a server with CRD version skew, or objects stored before a CRD was tightened) it
//! stores RayClusters and RayJobs whose values do not fit our types. With 120 of them stored before the
//! operator starts, a valid cluster created afterwards still reaches ready; every bad object gets one Warning
//! Event naming the field, the `kuberay_undecodable_objects` gauge counts them by kind, and a bad object that
//! is fixed is reconciled like any other.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use ray_api::RayCluster;
use serde_json::{Value, json};

use crate::common;
use common::{Operator, SimEnv, free_port, http_get};

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(90);
const BAD_PER_KIND: usize = 60;

/// A value of the wrong type for a position, and the field path the operator must name.
struct Mutation {
    /// JSON pointer of the value replaced in the sample.
    pointer: &'static str,
    /// The field path as the Event names it.
    path: &'static str,
    /// The wrong value.
    value: fn() -> Value,
}

const CLUSTER_MUTATIONS: &[Mutation] = &[
    Mutation {
        pointer: "/spec/workerGroupSpecs/0/replicas",
        path: "spec.workerGroupSpecs[0].replicas",
        value: || json!("1Ei"),
    },
    Mutation {
        pointer: "/spec/headGroupSpec/template",
        path: "spec.headGroupSpec.template",
        value: || json!(1e308),
    },
    Mutation {
        pointer: "/spec/workerGroupSpecs",
        path: "spec.workerGroupSpecs",
        value: || json!({"groupName": "not-a-list"}),
    },
    Mutation {
        pointer: "/spec/enableInTreeAutoscaling",
        path: "spec.enableInTreeAutoscaling",
        value: || json!("yes"),
    },
    Mutation {
        pointer: "/spec/workerGroupSpecs/0/maxReplicas",
        path: "spec.workerGroupSpecs[0].maxReplicas",
        value: || json!(-1.5),
    },
];

const JOB_MUTATIONS: &[Mutation] = &[
    Mutation {
        pointer: "/spec/entrypoint",
        path: "spec.entrypoint",
        value: || json!(42),
    },
    Mutation {
        pointer: "/spec/shutdownAfterJobFinishes",
        path: "spec.shutdownAfterJobFinishes",
        value: || json!("maybe"),
    },
    Mutation {
        pointer: "/spec/rayClusterSpec/workerGroupSpecs/0/replicas",
        path: "spec.rayClusterSpec.workerGroupSpecs[0].replicas",
        value: || json!("three"),
    },
    Mutation {
        pointer: "/spec/rayClusterSpec",
        path: "spec.rayClusterSpec",
        value: || json!(1e308),
    },
];

/// The sample document of `kind`, renamed, with one mutation chosen by a seeded generator.
fn mutated(file: &str, kind: &str, name: &str, mutations: &[Mutation], seed: &mut u64) -> (Value, &'static str) {
    // A small LCG keeps the test reproducible without a random-number dependency.
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mutation = &mutations[usize::try_from(*seed >> 33).unwrap() % mutations.len()];
    let mut doc = common::sample_documents(file)
        .into_iter()
        .find(|d| d["kind"] == kind)
        .unwrap();
    doc["metadata"] = json!({"name": name, "namespace": NS});
    // Set the value on its parent, so a field the sample leaves out is added.
    let (parent, key) = mutation.pointer.rsplit_once('/').unwrap();
    let parent = doc
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{file} has no {parent}"));
    match parent {
        Value::Object(map) => {
            map.insert(key.to_owned(), (mutation.value)());
        }
        Value::Array(items) => items[key.parse::<usize>().unwrap()] = (mutation.value)(),
        other => panic!("{file}: {} is inside {other}", mutation.pointer),
    }
    (doc, mutation.path)
}

fn dynamic_api(client: &Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("ray.io", "v1", kind), plural);
    Api::namespaced_with(client.clone(), NS, &resource)
}

async fn store(api: &Api<DynamicObject>, doc: Value) {
    let object: DynamicObject = serde_json::from_value(doc).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    common::wait_for(what, WAIT, Duration::from_millis(100), check).await
}

async fn wait_ready(client: &Client, name: &str) {
    let api: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    wait_for(&format!("{name}: state ready"), || async {
        let status = api.get(name).await.ok()?.status?;
        (serde_json::to_value(status).unwrap()["state"] == "ready").then_some(())
    })
    .await;
}

/// Creates `ray-cluster.sample.yaml` as `name` and returns how long it took to reach ready.
async fn time_to_ready(client: &Client, name: &str) -> Duration {
    let mut cluster: RayCluster = common::sample_document("ray-cluster.sample.yaml", "RayCluster");
    cluster.metadata.name = Some(name.to_owned());
    let started = Instant::now();
    Api::<RayCluster>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    wait_ready(client, name).await;
    started.elapsed()
}

/// Clusters timed one after another on a running operator.
const WARM_CLUSTERS: usize = 3;

/// Creates [`WARM_CLUSTERS`] clusters `<prefix>-warm-<i>` one after another; their times to ready, sorted.
async fn warm_times(client: &Client, prefix: &str) -> Vec<Duration> {
    let mut times = Vec::new();
    for i in 0..WARM_CLUSTERS {
        times.push(time_to_ready(client, &format!("{prefix}-warm-{i}")).await);
    }
    times.sort();
    times
}

/// `kuberay_undecodable_objects{kind="<kind>"}` from the operator's metrics.
async fn undecodable_gauge(metrics_port: u16, kind: &str) -> Option<i64> {
    let (_, body) = http_get(metrics_port, "/metrics").await;
    let prefix = format!("kuberay_undecodable_objects{{kind=\"{kind}\"}} ");
    body.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|value| value.trim().parse().ok())
}

async fn undecodable_events(client: &Client) -> Vec<Event> {
    common::namespace_events(client, NS)
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("UndecodableObject"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_objects_cost_only_themselves() {
    // Baseline: the same cluster on an empty simulated cluster.
    let empty = SimEnv::start("undecodable-baseline", kube_sim::SimConfig::default()).await;
    let baseline_operator = Operator::start(&empty.dir, &empty.kubeconfig, NS, free_port(), free_port(), &[]);
    let baseline = time_to_ready(&empty.client, "baseline").await;
    let baseline_warm = warm_times(&empty.client, "baseline").await;
    drop(baseline_operator);
    drop(empty);

    // Undecodable objects are stored on purpose (as they could be after a CRD schema change): CR validation,
    // which would refuse them, is off for this cluster.
    let no_cr_validation = kube_sim::SimConfig {
        validate_custom_resources: false,
        ..kube_sim::SimConfig::default()
    };
    let env = SimEnv::start("undecodable", no_cr_validation).await;
    let clusters = dynamic_api(&env.client, "RayCluster", "rayclusters");
    let jobs = dynamic_api(&env.client, "RayJob", "rayjobs");
    let mut seed = 0x5eed_u64;
    let mut expected_paths = BTreeSet::new();
    for i in 0..BAD_PER_KIND {
        let name = format!("bad-cluster-{i:03}");
        let (doc, path) = mutated(
            "ray-cluster.sample.yaml",
            "RayCluster",
            &name,
            CLUSTER_MUTATIONS,
            &mut seed,
        );
        expected_paths.insert((name, path));
        store(&clusters, doc).await;
        let name = format!("bad-job-{i:03}");
        let (doc, path) = mutated("ray-job.sample.yaml", "RayJob", &name, JOB_MUTATIONS, &mut seed);
        expected_paths.insert((name, path));
        store(&jobs, doc).await;
    }
    // Every mutation kind is exercised.
    let paths: BTreeSet<&str> = expected_paths.iter().map(|(_, p)| *p).collect();
    assert_eq!(paths.len(), CLUSTER_MUTATIONS.len() + JOB_MUTATIONS.len(), "{paths:?}");

    let metrics_port = free_port();
    let operator = Operator::start(
        &env.dir,
        &env.kubeconfig,
        NS,
        metrics_port,
        free_port(),
        &["--enable-metrics"],
    );
    let with_bad_objects = time_to_ready(&env.client, "valid").await;
    println!(
        "time to ready of the first cluster, created as the operator starts: {:.2} s on an empty cluster, {:.2} s \
         with {} undecodable objects stored (the operator also reads and reports those then)",
        baseline.as_secs_f64(),
        with_bad_objects.as_secs_f64(),
        2 * BAD_PER_KIND
    );

    // One Warning Event per bad object, naming the field and the reason.
    let events = wait_for("an UndecodableObject event for each bad object", || async {
        let events = undecodable_events(&env.client).await;
        (events.len() >= 2 * BAD_PER_KIND).then_some(events)
    })
    .await;
    assert_eq!(
        events.len(),
        2 * BAD_PER_KIND,
        "one event per object and resourceVersion"
    );
    for (name, path) in &expected_paths {
        let event = events
            .iter()
            .find(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name.as_str()))
            .unwrap_or_else(|| panic!("no UndecodableObject event for {name}"));
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        let note = event.note.as_deref().unwrap_or_default();
        assert!(note.contains(&format!("{path}: ")), "{name}: {note}");
        assert!(
            note.contains("invalid type") || note.contains("invalid value"),
            "{name}: {note}"
        );
    }
    let first = &events[0];
    println!("example event: {}", first.note.as_deref().unwrap_or_default());

    // Once the operator runs, clusters created one after another take as long as on an empty cluster.
    let with_bad_warm = warm_times(&env.client, "valid").await;
    let seconds = |times: &[Duration]| {
        times
            .iter()
            .map(|t| format!("{:.2}", t.as_secs_f64()))
            .collect::<Vec<_>>()
    };
    println!(
        "time to ready of {WARM_CLUSTERS} clusters created one after another on a running operator: {:?} s on an \
         empty cluster, {:?} s with {} undecodable objects stored",
        seconds(&baseline_warm),
        seconds(&with_bad_warm),
        2 * BAD_PER_KIND
    );
    let median = |times: &[Duration]| times[times.len() / 2];
    assert!(
        median(&with_bad_warm) <= median(&baseline_warm) * 2 + Duration::from_millis(500),
        "the bad objects slow valid clusters down: {with_bad_warm:?} against {baseline_warm:?}"
    );

    assert_eq!(
        undecodable_gauge(metrics_port, "RayCluster").await,
        Some(BAD_PER_KIND as i64)
    );
    assert_eq!(
        undecodable_gauge(metrics_port, "RayJob").await,
        Some(BAD_PER_KIND as i64)
    );

    // Fixing one bad cluster makes it an ordinary cluster: reconciled to ready, no longer counted.
    let mut fixed: Value = serde_json::to_value(common::sample_document::<RayCluster>(
        "ray-cluster.sample.yaml",
        "RayCluster",
    ))
    .unwrap();
    let current = clusters.get("bad-cluster-000").await.unwrap();
    fixed["metadata"] = json!({"name": "bad-cluster-000", "namespace": NS,
        "resourceVersion": current.metadata.resource_version});
    clusters
        .replace(
            "bad-cluster-000",
            &PostParams::default(),
            &serde_json::from_value(fixed).unwrap(),
        )
        .await
        .unwrap();
    wait_ready(&env.client, "bad-cluster-000").await;
    wait_for("the gauge to drop by one", || async {
        (undecodable_gauge(metrics_port, "RayCluster").await == Some(BAD_PER_KIND as i64 - 1)).then_some(())
    })
    .await;
    drop(operator);
}
