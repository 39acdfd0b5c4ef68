//! End to end, the real operator binary against an in-process kube-sim: RayCluster upgrade strategies.
//! `Recreate` (KubeRay's): a pod-template edit made with kubectl recreates every pod once, a replicas edit
//! recreates none. `RollingUpdate` (ours, docs/rolling-upgrades.md): a 20-worker group changes image with
//! `maxUnavailable: 2`, `maxSurge: 0`; a pod watch samples every change and no moment has more than 2 workers
//! missing. The time to finish is recorded in docs/rolling-upgrades.md.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use ray_api::RayCluster;
use serde_json::json;

use crate::common;
use common::{Operator, SimEnv, free_port, node_type, running};

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(60);
/// The image [`WORKER_IMAGE_PATCH`] sets.
const EDITED_IMAGE: &str = "rayproject/ray:edited";
/// A JSON patch giving the first worker group [`EDITED_IMAGE`].
const WORKER_IMAGE_PATCH: &str = r#"[{"op":"replace","path":"/spec/workerGroupSpecs/0/template/spec/containers/0/image","value":"rayproject/ray:edited"}]"#;

/// kube-sim and the operator, with one RayCluster created and settled.
struct Env {
    _sim: kube_sim::SimHandle,
    _operator: Operator,
    client: Client,
    dir: PathBuf,
    kubeconfig: PathBuf,
    clusters: Api<RayCluster>,
    name: &'static str,
}

impl Env {
    /// Starts kube-sim and the operator, creates `name` with `workers` workers under `strategy` and waits until
    /// all its pods are ready; returns them too.
    async fn start(name: &'static str, workers: usize, strategy: serde_json::Value) -> (Env, Vec<Pod>) {
        let SimEnv {
            sim,
            client,
            dir,
            kubeconfig,
        } = SimEnv::start(&format!("upgrade-{name}"), kube_sim::SimConfig::default()).await;
        let operator = Operator::start(&dir, &kubeconfig, NS, free_port(), free_port(), &[]);
        let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
        clusters
            .create(&PostParams::default(), &cluster(name, workers, strategy))
            .await
            .unwrap();
        let env = Env {
            _sim: sim,
            _operator: operator,
            client,
            dir,
            kubeconfig,
            clusters,
            name,
        };
        let pods = wait_settled(&env.client, name, workers).await;
        (env, pods)
    }

    /// `kubectl patch raycluster <name> --type=json -p <patch>`; panics on failure.
    fn kubectl_patch(&self, patch: &str) {
        let (ok, stdout, stderr) = common::kubectl(
            &self.dir,
            &self.kubeconfig,
            &["patch", "raycluster", self.name, "--type=json", "-p", patch],
        );
        assert!(ok, "kubectl patch failed: {stdout}{stderr}");
    }

    /// The cluster's live pods.
    async fn pods(&self) -> Vec<Pod> {
        common::live_cluster_pods(&self.client, NS, self.name).await
    }

    /// Events with `reason`.
    async fn events(&self, reason: &str) -> Vec<Event> {
        common::namespace_events(&self.client, NS)
            .await
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .collect()
    }

    /// Waits until there is an event with `reason` (events are published in the background, a moment after
    /// what they report), and returns every one.
    async fn wait_events(&self, reason: &str) -> Vec<Event> {
        common::wait_for(
            &format!("{reason} events"),
            WAIT,
            Duration::from_millis(100),
            || async {
                let found = self.events(reason).await;
                (!found.is_empty()).then_some(found)
            },
        )
        .await
    }

    /// Waits for the first event with `reason`.
    async fn wait_event(&self, reason: &str) -> Event {
        common::wait_for(&format!("{reason} event"), WAIT, Duration::from_millis(100), || async {
            self.events(reason).await.into_iter().next()
        })
        .await
    }

    /// The `WorkerUpgradeInProgress` condition's status and reason.
    async fn upgrade_condition(&self) -> (String, String) {
        let condition = self
            .clusters
            .get(self.name)
            .await
            .unwrap()
            .status
            .and_then(|s| s.conditions)
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "WorkerUpgradeInProgress")
            .unwrap();
        (condition.status, condition.reason)
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `ray-cluster.sample.yaml` named `name` with `workers` workers and `strategy` as `spec.upgradeStrategy`.
fn cluster(name: &str, workers: usize, strategy: serde_json::Value) -> RayCluster {
    let mut doc = common::sample_documents("ray-cluster.sample.yaml").remove(0);
    doc["metadata"]["name"] = json!(name);
    doc["metadata"]["namespace"] = json!(NS);
    doc["spec"]["upgradeStrategy"] = strategy;
    let group = &mut doc["spec"]["workerGroupSpecs"][0];
    group["replicas"] = json!(workers);
    group["maxReplicas"] = json!(workers.max(5) + 5);
    serde_json::from_value(doc).unwrap()
}

fn ready(pod: &Pod) -> bool {
    running(pod)
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn image(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.as_deref())
        .unwrap_or_default()
}

/// Waits until the cluster's live pods are one head and `workers` workers, all running and ready.
async fn wait_settled(client: &Client, name: &str, workers: usize) -> Vec<Pod> {
    common::wait_for(
        &format!("{name}: 1 head + {workers} ready workers"),
        WAIT,
        Duration::from_millis(100),
        || async {
            let pods = common::live_cluster_pods(client, NS, name).await;
            (common::one_head_and_running_workers(&pods, workers) && pods.iter().all(ready)).then_some(pods)
        },
    )
    .await
}

fn uids(pods: &[Pod]) -> BTreeSet<String> {
    pods.iter().filter_map(|p| p.metadata.uid.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreate_replaces_every_pod_on_a_template_edit_and_none_on_a_replicas_edit() {
    let (env, before) = Env::start("recreate", 2, json!({"type": "Recreate"})).await;

    // Replicas 2 -> 3 with kubectl: the three old pods stay, one worker is added.
    env.kubectl_patch(r#"[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":3}]"#);
    let scaled = wait_settled(&env.client, env.name, 3).await;
    assert!(uids(&before).is_subset(&uids(&scaled)), "a replicas edit replaced pods");
    assert!(env.events("DeletedPod").await.is_empty());

    // A template edit with kubectl: every pod is deleted and recreated, once.
    env.kubectl_patch(WORKER_IMAGE_PATCH);
    let after = common::wait_for("all pods recreated", WAIT, Duration::from_millis(100), || async {
        let pods = env.pods().await;
        (common::one_head_and_running_workers(&pods, 3)
            && pods.iter().all(ready)
            && uids(&pods).is_disjoint(&uids(&scaled)))
        .then_some(pods)
    })
    .await;
    let deleted = env.wait_events("DeletedPod").await;
    for e in &deleted {
        assert_eq!(
            e.note.as_deref(),
            Some("Deleted all Pods for RayCluster default/recreate due to spec change with Recreate upgradeStrategy")
        );
    }
    assert!(
        after
            .iter()
            .filter(|p| node_type(p) == "worker")
            .all(|p| image(p) == EDITED_IMAGE)
    );
    // Once: the new pods stay.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(uids(&env.pods().await), uids(&after), "pods were recreated again");
}

/// What the pod watch saw during the rolling upgrade.
#[derive(Default)]
struct Samples {
    /// Samples taken (one per watch event).
    count: usize,
    /// The most workers not ready (or terminating) in one sample.
    max_missing: usize,
    /// The most worker pods in one sample.
    max_pods: usize,
    /// Samples in which ready workers of both the old and the new template served together.
    mixed: usize,
}

/// Applies [`WORKER_IMAGE_PATCH`] and samples the group's worker pods after every watch event until all
/// `workers` run the new image and are ready; returns the time that took and what was seen.
async fn roll_and_sample(env: &Env, workers: usize) -> (Duration, Samples) {
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), NS);
    let config = watcher::Config::default().labels(&format!("ray.io/cluster={},ray.io/node-type=worker", env.name));
    let mut stream = watcher(pods, config).boxed();
    let mut live: BTreeMap<String, Pod> = BTreeMap::new();
    loop {
        match stream.next().await.unwrap().unwrap() {
            watcher::Event::InitApply(p) => {
                live.insert(p.name_any(), p);
            }
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    let started = Instant::now();
    env.kubectl_patch(WORKER_IMAGE_PATCH);
    let mut samples = Samples::default();
    loop {
        let event = tokio::time::timeout(WAIT.saturating_sub(started.elapsed()), stream.next())
            .await
            .expect("rolling upgrade did not finish in time")
            .unwrap()
            .unwrap();
        match event {
            watcher::Event::Apply(p) | watcher::Event::InitApply(p) => {
                live.insert(p.name_any(), p);
            }
            watcher::Event::Delete(p) => {
                live.remove(&p.name_any());
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
        let serving: Vec<&Pod> = live
            .values()
            .filter(|p| p.metadata.deletion_timestamp.is_none() && ready(p))
            .collect();
        let serving_new = serving.iter().filter(|p| image(p) == EDITED_IMAGE).count();
        samples.count += 1;
        samples.max_missing = samples.max_missing.max(workers.saturating_sub(serving.len()));
        samples.max_pods = samples.max_pods.max(live.len());
        if serving_new > 0 && serving_new < serving.len() {
            samples.mixed += 1;
        }
        if live.len() == workers && serving.len() == workers && serving.iter().all(|p| image(p) == EDITED_IMAGE) {
            return (started.elapsed(), samples);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_update_with_surge_creates_before_it_deletes() {
    const WORKERS: usize = 6;
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 2}});
    let (env, _) = Env::start("surge", WORKERS, strategy).await;
    let (finished, samples) = roll_and_sample(&env, WORKERS).await;
    eprintln!(
        "rolling upgrade of {WORKERS} workers (maxUnavailable 0, maxSurge 2): finished in {:.1}s, max missing {}, max pods {}",
        finished.as_secs_f64(),
        samples.max_missing,
        samples.max_pods
    );
    assert_eq!(samples.max_missing, 0, "maxUnavailable 0 but workers went missing");
    assert!(
        samples.max_pods <= WORKERS + 2,
        "maxSurge 2 but {} worker pods",
        samples.max_pods
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_update_replaces_twenty_workers_never_more_than_two_missing() {
    const WORKERS: usize = 20;
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2, "maxSurge": 0}});
    let (env, before) = Env::start("rolling", WORKERS, strategy).await;
    let head_uid = before.iter().find(|p| node_type(p) == "head").unwrap().uid();

    let (finished, samples) = roll_and_sample(&env, WORKERS).await;
    eprintln!(
        "rolling upgrade of {WORKERS} workers (maxUnavailable 2, maxSurge 0): finished in {:.1}s, {} samples ({} with \
         old and new workers serving together), max missing {}, max pods {}",
        finished.as_secs_f64(),
        samples.count,
        samples.mixed,
        samples.max_missing,
        samples.max_pods
    );
    // The watch saw the upgrade under way, not only its end: every old pod's deletion and every new pod's
    // start are events, and old and new workers served side by side.
    assert!(samples.count >= 2 * WORKERS, "only {} samples", samples.count);
    assert!(
        samples.mixed > 0,
        "no sample caught old and new workers serving together"
    );
    assert!(
        samples.max_missing <= 2,
        "{} workers missing at once",
        samples.max_missing
    );
    assert!(
        samples.max_pods <= WORKERS,
        "maxSurge 0 but {} worker pods",
        samples.max_pods
    );

    // The head was left alone; status and events tell the story.
    let pods = env.pods().await;
    assert_eq!(pods.iter().find(|p| node_type(p) == "head").unwrap().uid(), head_uid);
    // The condition turns complete once no outdated pod is left; the pass that deletes the last ones reports
    // their replacements before they exist, so the counts can catch up a pass later.
    let status = common::wait_for(
        "upgrade reported complete with every replica updated and ready",
        WAIT,
        Duration::from_millis(100),
        || async {
            let status = env.clusters.get(env.name).await.unwrap().status?;
            let complete = status
                .conditions
                .as_ref()?
                .iter()
                .any(|c| c.type_ == "WorkerUpgradeInProgress" && c.reason == "RollingUpdateComplete");
            let settled =
                status.worker_group_upgrades.as_ref()?.iter().all(|g| {
                    g.updated_replicas == g.desired_replicas && g.updated_ready_replicas == g.desired_replicas
                });
            (complete && settled).then_some(status)
        },
    )
    .await;
    let groups = status.worker_group_upgrades.unwrap();
    assert_eq!(groups.len(), 1);
    let group = &groups[0];
    assert_eq!(
        (
            group.desired_replicas,
            group.updated_replicas,
            group.updated_ready_replicas
        ),
        (20, 20, 20)
    );
    env.wait_events("RollingUpdate").await;
    env.wait_events("RollingUpdateComplete").await;
    // Repeats of a reason are folded into one Event with a count.
    let deleted = env.wait_events("DeletedWorkerPod").await;
    assert!(
        deleted
            .iter()
            .any(|e| e.note.as_deref().is_some_and(|n| n.contains("for the rolling upgrade"))),
        "{deleted:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_update_that_cannot_progress_is_reported_and_deletes_nothing() {
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}});
    let (env, before) = Env::start("invalid", 3, strategy).await;
    env.kubectl_patch(WORKER_IMAGE_PATCH);
    let note = env.wait_event("InvalidRollingUpdate").await.note.unwrap();
    assert!(
        note.contains("spec.upgradeStrategy.rollingUpdate.maxUnavailable 10% of 3 replicas rounds to 0"),
        "{note}"
    );
    assert_eq!(
        env.upgrade_condition().await,
        ("False".to_owned(), "InvalidRollingUpdate".to_owned())
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        uids(&env.pods().await),
        uids(&before),
        "a rolling update that cannot progress deleted pods"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_update_whose_new_pods_never_get_ready_is_reported_stuck_and_deletes_no_more() {
    const WORKERS: usize = 6;
    let strategy = json!({"type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 2, "progressDeadlineSeconds": 1}});
    let (env, before) = Env::start("never-ready", WORKERS, strategy).await;
    // The new template's pods are bound but never start.
    env.kubectl_patch(
        r#"[{"op":"add","path":"/spec/workerGroupSpecs/0/template/metadata","value":{"annotations":{"kube-sim.io/start-delay":"1h"}}}]"#,
    );
    let event = env.wait_event("ProgressDeadlineExceeded").await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let note = event.note.unwrap();
    assert!(note.contains("progressDeadlineSeconds"), "{note}");
    // Two old workers were replaced, no more: four old ones still serve.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let old = uids(&before);
    let old_workers = env
        .pods()
        .await
        .iter()
        .filter(|p| node_type(p) == "worker" && old.contains(&p.uid().unwrap()) && ready(p))
        .count();
    assert_eq!(old_workers, WORKERS - 2, "a stuck upgrade went on deleting");
    assert_eq!(
        env.upgrade_condition().await,
        ("True".to_owned(), "ProgressDeadlineExceeded".to_owned())
    );
}
