//! Fuzz, end to end: mutated KubeRay sample RayClusters and RayJobs stored in kube-sim (which does not
//! validate custom resources), next to the unmutated samples, with the operator running. The operator stays
//! alive (`/healthz`), the valid samples reach their goal (the RayCluster ready, the RayJob's RayCluster
//! created), and every bad object gets its Warning Event: `UndecodableObject` naming the field when it does
//! not fit our types, KubeRay's `Invalid...` reason when it decodes but fails validation. Each mutant is
//! classified first with our own decoding and validation; one that is still valid may reconcile normally.
//! The seed is printed; `KUBERAY_FUZZ_SEED=<n>` replays a run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use ray_api::validation::ValidationOptions;
use ray_api::{RayCluster, RayJob};
use serde_json::{Value, json};

mod common;
use common::fuzz::{self, Mutant, Rng, Scope, Verdict};
use common::{Operator, SimEnv, free_port, http_get};

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(90);
/// Mutated documents stored per kind.
const PER_KIND: usize = 100;

fn dynamic_api(client: &Client, kind: &str) -> Api<DynamicObject> {
    let plural = format!("{}s", kind.to_lowercase());
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("ray.io", "v1", kind), &plural);
    Api::namespaced_with(client.clone(), NS, &resource)
}

/// `doc` named `name` in the test namespace, keeping the sample's labels and annotations.
fn renamed(mut doc: Value, name: &str) -> Value {
    let meta = &doc["metadata"];
    let mut metadata = json!({"name": name, "namespace": NS});
    for key in ["labels", "annotations"] {
        if meta[key].is_object() {
            metadata[key] = meta[key].clone();
        }
    }
    doc["metadata"] = metadata;
    doc
}

/// A stored mutant and the Event it must get.
struct Stored {
    name: String,
    mutant: Mutant,
    verdict: Verdict,
}

/// The Event reasons KubeRay's validation gives a `kind`.
fn invalid_reasons(kind: &str) -> &'static [&'static str] {
    match kind {
        "RayCluster" => &[
            "InvalidRayClusterMetadata",
            "InvalidRayClusterSpec",
            "InvalidRayClusterStatus",
        ],
        _ => &["InvalidRayJobMetadata", "InvalidRayJobSpec", "InvalidRayJobStatus"],
    }
}

async fn events(client: &Client) -> Vec<Event> {
    common::namespace_events(client, NS).await
}

/// Whether `events` hold the Event `stored` must get.
fn has_its_event(stored: &Stored, events: &[Event]) -> bool {
    events.iter().any(|e| {
        let about = e.regarding.as_ref();
        let reason = e.reason.as_deref().unwrap_or_default();
        about.and_then(|r| r.name.as_deref()) == Some(stored.name.as_str())
            && about.and_then(|r| r.kind.as_deref()) == Some(stored.mutant.kind.as_str())
            && e.type_.as_deref() == Some("Warning")
            && match &stored.verdict {
                Verdict::Undecodable(path) => {
                    reason == "UndecodableObject"
                        && e.note.as_deref().unwrap_or_default().contains(&format!("{path}: "))
                }
                Verdict::Invalid(_) => invalid_reasons(&stored.mutant.kind).contains(&reason),
                Verdict::NotManaged | Verdict::Valid => true,
            }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_samples_get_their_events_and_valid_ones_still_reconcile() {
    let started = Instant::now();
    let seed = fuzz::seed("e2e_fuzz");
    let mut rng = Rng::new(seed);
    let samples = fuzz::samples();
    let options = ValidationOptions::default();
    let env = SimEnv::start("fuzz", kube_sim::SimConfig::default()).await;

    let mut stored = Vec::new();
    let mut refused = 0;
    for (kind, prefix) in [("RayCluster", "fuzz-cluster"), ("RayJob", "fuzz-job")] {
        let of_kind: Vec<_> = samples.iter().filter(|s| s.kind == kind).cloned().collect();
        let api = dynamic_api(&env.client, kind);
        for (i, mutant) in fuzz::mutants(&of_kind, PER_KIND, Scope::Spec, &mut rng)
            .into_iter()
            .enumerate()
        {
            let name = format!("{prefix}-{i:03}");
            let doc = renamed(mutant.doc.clone(), &name);
            let verdict = fuzz::classify(kind, &doc, &options);
            let object: DynamicObject = serde_json::from_value(doc.clone()).unwrap();
            if api.create(&PostParams::default(), &object).await.is_err() {
                // The API server refusing a document is a fine outcome too; it never reaches the operator.
                refused += 1;
                continue;
            }
            stored.push(Stored {
                name,
                mutant: Mutant { doc, ..mutant },
                verdict,
            });
        }
    }
    let count = |f: fn(&Verdict) -> bool| stored.iter().filter(|s| f(&s.verdict)).count();
    println!(
        "e2e_fuzz: {} stored ({} undecodable, {} invalid, {} not managed, {} still valid), {refused} refused by the API server",
        stored.len(),
        count(|v| matches!(v, Verdict::Undecodable(_))),
        count(|v| matches!(v, Verdict::Invalid(_))),
        count(|v| matches!(v, Verdict::NotManaged)),
        count(|v| matches!(v, Verdict::Valid)),
    );

    // The unmutated samples, stored next to the mutants.
    let cluster = renamed(
        common::sample_documents("ray-cluster.sample.yaml").remove(0),
        "valid-cluster",
    );
    assert_eq!(fuzz::classify("RayCluster", &cluster, &options), Verdict::Valid);
    let job = common::sample_documents("ray-job.sample.yaml")
        .into_iter()
        .find(|d| d["kind"] == "RayJob")
        .unwrap();
    let job = renamed(job, "valid-job");
    assert_eq!(fuzz::classify("RayJob", &job, &options), Verdict::Valid);
    for (kind, doc) in [("RayCluster", cluster), ("RayJob", job)] {
        let object: DynamicObject = serde_json::from_value(doc).unwrap();
        dynamic_api(&env.client, kind)
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
    }

    let probe_port = free_port();
    let operator = Operator::start(&env.dir, &env.kubeconfig, NS, free_port(), probe_port, &[]);

    let clusters: Api<RayCluster> = Api::namespaced(env.client.clone(), NS);
    common::wait_for(
        "valid-cluster: state ready",
        WAIT,
        Duration::from_millis(200),
        || async {
            let status = clusters.get("valid-cluster").await.ok()?.status?;
            (serde_json::to_value(status).unwrap()["state"] == "ready").then_some(())
        },
    )
    .await;
    let jobs: Api<RayJob> = Api::namespaced(env.client.clone(), NS);
    common::wait_for(
        "valid-job: its RayCluster created",
        WAIT,
        Duration::from_millis(200),
        || async {
            let name = jobs.get("valid-job").await.ok()?.status?.ray_cluster_name?;
            clusters.get(&name).await.ok().map(|_| ())
        },
    )
    .await;

    let bad: Vec<&Stored> = stored
        .iter()
        .filter(|s| matches!(s.verdict, Verdict::Undecodable(_) | Verdict::Invalid(_)))
        .collect();
    let waited = tokio::time::timeout(WAIT, async {
        loop {
            let events = events(&env.client).await;
            let missing: Vec<&&Stored> = bad.iter().filter(|s| !has_its_event(s, &events)).collect();
            if missing.is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
    .await;
    if waited.is_err() {
        let events = events(&env.client).await;
        let missing: Vec<String> = bad
            .iter()
            .filter(|s| !has_its_event(s, &events))
            .map(|s| {
                let theirs: Vec<String> = events
                    .iter()
                    .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(s.name.as_str()))
                    .map(|e| {
                        format!(
                            "{:?}: {}",
                            e.reason,
                            fuzz::clip(e.note.as_deref().unwrap_or_default(), 200)
                        )
                    })
                    .collect();
                format!(
                    "{} ({}) expected {:?}; events: {theirs:?}",
                    s.name,
                    s.mutant.describe(),
                    s.verdict
                )
            })
            .collect();
        panic!(
            "seed {seed}: {} bad objects without their event (replay with {}={seed}):\n{}",
            missing.len(),
            fuzz::SEED_VAR,
            missing.join("\n")
        );
    }

    assert_eq!(http_get(probe_port, "/healthz").await.0, 200, "the operator is alive");
    println!(
        "e2e_fuzz: {} bad objects got their events; {:.1} s",
        bad.len(),
        started.elapsed().as_secs_f64()
    );
    drop(operator);
}
