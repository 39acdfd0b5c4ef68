//! `kuberay-bench scale`'s progress of a phase: how many Ray pods exist and are Running and how many
//! RayClusters are `ready`, read from the simulator store's change feed, and when each count first reached its
//! target.
//!
//! A [`ProgressFollower`] does this on a thread of its own, under `--cpu-split` on the clients' CPUs. Decoding
//! every pod and RayCluster write is the benchmark's work, not the simulator's: on the simulator's CPU it took
//! about 3% of that CPU, in the operator phases only (a bare client's rate is timed by its creators). The
//! follower reads the feed every [`FOLLOW_INTERVAL`], so a milestone is recorded at most that late, where the
//! phase loop's 250 ms polls recorded it up to 250 ms late (2-3% of a 10,000-pod phase).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kube_sim::store::{ChangeFeed, EventType};
use kube_sim::{Gvr, Store, StoredObject};
use tokio::sync::mpsc::error::TryRecvError;

use crate::cpu_split::CpuSplit;
use crate::run::NAMESPACE;

/// The label every Ray pod carries (ray-podgen stamps it).
const RAY_CLUSTER_LABEL: &str = ray_api::constants::RAY_CLUSTER_LABEL;

/// How often the follower reads the change feed: the resolution of the recorded milestones.
pub const FOLLOW_INTERVAL: Duration = Duration::from_millis(20);

/// What a phase waits for.
#[derive(Clone, Copy, Debug)]
pub struct Targets {
    /// Ray pods that must exist and be Running.
    pub pods: usize,
    /// RayClusters that must be `ready`.
    pub clusters: usize,
    /// Workers per RayCluster (a `ready` status must count them all).
    pub workers_per_cluster: usize,
}

/// A phase's progress so far: the latest counts, and the seconds from the phase's start at which each count
/// first reached its target.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    /// Ray pods that exist and are not terminating.
    pub existing: usize,
    /// Of those, the Running ones.
    pub running: usize,
    /// RayClusters whose status is `ready` with every worker ready.
    pub ready: usize,
    /// When every pod first existed.
    pub all_created: Option<f64>,
    /// When every pod was first Running.
    pub all_running: Option<f64>,
    /// When every RayCluster was first `ready`.
    pub all_ready: Option<f64>,
}

impl Progress {
    /// Takes in new counts read `elapsed` seconds into the phase, recording the targets they reach first.
    fn update(&mut self, (existing, running, ready): (usize, usize, usize), targets: &Targets, elapsed: f64) {
        (self.existing, self.running, self.ready) = (existing, running, ready);
        let reached = |count: usize, target: usize, at: &mut Option<f64>| {
            if at.is_none() && count >= target {
                *at = Some(elapsed);
            }
        };
        reached(existing, targets.pods, &mut self.all_created);
        reached(running, targets.pods, &mut self.all_running);
        reached(ready, targets.clusters, &mut self.all_ready);
    }
}

/// A thread that follows a phase's progress (the module's doc says why a thread); [`ProgressFollower::stop`]
/// ends it.
pub struct ProgressFollower {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// What the follower thread and the phase share.
struct Shared {
    /// The latest progress, or why following stopped.
    progress: Mutex<Result<Progress, String>>,
    /// Set by [`ProgressFollower::stop`].
    stop: AtomicBool,
    /// The follower thread's CPU seconds, written as it ends.
    cpu_secs: Mutex<f64>,
}

impl ProgressFollower {
    /// Starts following `store` from its current pods and RayClusters; milestones are timed from `started`.
    /// Under a CPU split the thread runs on the clients' CPUs.
    pub fn start(store: &Store, targets: Targets, started: Instant, split: Option<&CpuSplit>) -> anyhow::Result<Self> {
        let mut counts = ProgressCounts::new(store, targets.workers_per_cluster);
        let shared = Arc::new(Shared {
            progress: Mutex::new(Ok(Progress::default())),
            stop: AtomicBool::new(false),
            cpu_secs: Mutex::new(0.0),
        });
        let for_thread = shared.clone();
        let split = split.cloned();
        let thread = std::thread::Builder::new()
            .name("bench-progress".into())
            .spawn(move || {
                let shared = for_thread;
                if let Some(split) = &split
                    && let Err(e) = split.pin_to_client()
                {
                    *lock(&shared.progress) = Err(format!("{e:#}"));
                    return;
                }
                loop {
                    // Read before the feed, so that the last pass after a stop sees every change before it.
                    let stopping = shared.stop.load(Ordering::Acquire);
                    let polled = counts.poll();
                    let elapsed = started.elapsed().as_secs_f64();
                    {
                        let mut progress = lock(&shared.progress);
                        match (polled, progress.as_mut()) {
                            (Ok(now), Ok(progress)) => progress.update(now, &targets, elapsed),
                            (Err(e), _) => *progress = Err(format!("{e:#}")),
                            (Ok(_), Err(_)) => {}
                        }
                        if stopping || progress.is_err() {
                            break;
                        }
                    }
                    std::thread::sleep(FOLLOW_INTERVAL);
                }
                *lock(&shared.cpu_secs) = crate::scale::thread_cpu_secs();
            })
            .context("starting the progress thread")?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// The progress so far; an error once the store's feed has stopped.
    pub fn progress(&self) -> anyhow::Result<Progress> {
        lock(&self.shared.progress).clone().map_err(anyhow::Error::msg)
    }

    /// Stops the thread after one last read of the feed; returns the CPU seconds it used.
    pub fn stop(mut self) -> f64 {
        self.finish();
        *lock(&self.shared.cpu_secs)
    }

    fn finish(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            // A panicking follower has nothing to report beyond what `progress` already says.
            let _ = thread.join();
        }
    }
}

impl Drop for ProgressFollower {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Locks `mutex`, also after a thread panicked while holding it (the data are plain counts).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The run's progress, counted from the simulator's change feed of pods and RayClusters: each poll reads only
/// the objects written since the last one. Listing and decoding every pod on each poll instead took a sixth
/// of the simulator process's CPU at 10,000 pods, during the operator phases only (the bare client's creation
/// rate is timed by its creators, not by polling), so it slowed the operator's runs against the bare client.
struct ProgressCounts {
    /// Pods and RayClusters written since the last poll.
    feed: ChangeFeed,
    /// Per Ray pod: (exists and is not terminating, is Running).
    pods: HashMap<(String, String), (bool, bool)>,
    /// RayClusters whose status is `ready` with every worker ready.
    ready_clusters: HashSet<(String, String)>,
    /// Workers per cluster of the run.
    workers: usize,
    /// Ray pods that exist and are not terminating.
    existing: usize,
    /// Of those, the Running ones.
    running: usize,
}

impl ProgressCounts {
    /// Index of pods among the feed's resources (RayClusters are the other).
    const PODS: usize = 0;

    /// Starts counting from the store's current pods and RayClusters.
    fn new(store: &Store, workers: usize) -> Self {
        let gvrs = [Gvr::pods(), Gvr::new("ray.io", "v1", "rayclusters")];
        let mut counts = Self {
            feed: store.change_feed(&gvrs),
            pods: HashMap::new(),
            ready_clusters: HashSet::new(),
            workers,
            existing: 0,
            running: 0,
        };
        for (kind, object) in std::mem::take(&mut counts.feed.snapshot) {
            counts.apply(kind, &object, false);
        }
        counts
    }

    /// Reads every change since the last call; returns (Ray pods that exist and are not terminating, Running
    /// ones, ready RayClusters).
    fn poll(&mut self) -> anyhow::Result<(usize, usize, usize)> {
        loop {
            match self.feed.rx.try_recv() {
                Ok((kind, event)) => self.apply(kind, &event.object, event.kind == EventType::Deleted),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => bail!("the simulator's store stopped"),
            }
        }
        Ok((self.existing, self.running, self.ready_clusters.len()))
    }

    /// Counts one object's new state (`deleted`: it is gone).
    fn apply(&mut self, kind: usize, object: &StoredObject, deleted: bool) {
        if object.namespace() != Some(NAMESPACE) {
            return;
        }
        let key = (NAMESPACE.to_string(), object.name().to_string());
        if kind == Self::PODS {
            // A pod that is gone, lost its Ray label or does not decode counts as neither existing nor Running.
            let now = match object.label(RAY_CLUSTER_LABEL) {
                Some(_) if !deleted => serde_json::from_slice::<ProgressFields>(&object.json)
                    .ok()
                    .map(|progress| {
                        let exists = progress.metadata.deletion_timestamp.is_none();
                        (exists, exists && progress.status.phase.as_deref() == Some("Running"))
                    }),
                _ => None,
            };
            let before = match now {
                Some(state) => self.pods.insert(key, state),
                None => self.pods.remove(&key),
            };
            let (now, before) = (now.unwrap_or_default(), before.unwrap_or_default());
            self.existing = self.existing + usize::from(now.0) - usize::from(before.0);
            self.running = self.running + usize::from(now.1) - usize::from(before.1);
        } else {
            let ready = !deleted
                && serde_json::from_slice::<ProgressFields>(&object.json).is_ok_and(|progress| {
                    progress.status.state.as_deref() == Some("ready")
                        && progress.status.ready_worker_replicas == Some(self.workers as u64)
                });
            if ready {
                self.ready_clusters.insert(key);
            } else {
                self.ready_clusters.remove(&key);
            }
        }
    }
}

/// The few fields the progress counts read from a stored object's JSON. Decoding only these (serde skips the
/// rest without allocating) instead of the whole object as a `serde_json::Value` matters: polling 10,000
/// pods four times a second that way took a quarter of the process's CPU, taken from the simulator measured.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ProgressFields {
    metadata: ProgressMetadata,
    status: ProgressStatus,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ProgressMetadata {
    deletion_timestamp: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ProgressStatus {
    /// A pod's phase.
    phase: Option<String>,
    /// A RayCluster's state.
    state: Option<String>,
    /// A RayCluster's ready workers.
    ready_worker_replicas: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_phase_deletion_and_cluster_state_from_the_json() {
        let pod: ProgressFields = serde_json::from_str(
            r#"{"metadata":{"name":"p","deletionTimestamp":"2026-11-28T00:00:00Z","labels":{"a":"b"}},
                "spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running"}}"#,
        )
        .unwrap();
        assert!(pod.metadata.deletion_timestamp.is_some());
        assert_eq!(pod.status.phase.as_deref(), Some("Running"));
        let pending: ProgressFields = serde_json::from_str(r#"{"metadata":{"name":"p"}}"#).unwrap();
        assert!(pending.metadata.deletion_timestamp.is_none());
        assert_eq!(pending.status.phase, None);
        let cluster: ProgressFields =
            serde_json::from_str(r#"{"status":{"state":"ready","readyWorkerReplicas":9,"conditions":[]}}"#).unwrap();
        assert_eq!(
            (cluster.status.state.as_deref(), cluster.status.ready_worker_replicas),
            (Some("ready"), Some(9))
        );
    }

    #[test]
    fn progress_counts_follow_ray_pods_through_the_change_feed() {
        use kube_sim::DeleteOptions;
        use kube_sim::store::StoreConfig;
        let store = Store::new(StoreConfig::default());
        // `NAMESPACE` is `default`, which the store starts with.
        let pod = |name: &str, labels: serde_json::Value| {
            serde_json::json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": labels},
                "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]},
            })
        };
        let ray = serde_json::json!({RAY_CLUSTER_LABEL: "c"});
        store
            .create(&Gvr::pods(), Some(NAMESPACE), pod("before", ray.clone()))
            .unwrap();
        // Counted from the snapshot.
        let mut counts = ProgressCounts::new(&store, 1);
        assert_eq!(counts.poll().unwrap(), (1, 0, 0));
        store
            .create(&Gvr::pods(), Some(NAMESPACE), pod("after", ray.clone()))
            .unwrap();
        store
            .create(
                &Gvr::pods(),
                Some(NAMESPACE),
                pod("not-ray", serde_json::json!({"app": "x"})),
            )
            .unwrap();
        store.create_namespace("other").unwrap();
        store
            .create(&Gvr::pods(), Some("other"), pod("elsewhere", ray.clone()))
            .unwrap();
        assert_eq!(
            counts.poll().unwrap(),
            (2, 0, 0),
            "only Ray pods of the run's namespace count"
        );
        let mut running = pod("after", ray);
        running["status"] = serde_json::json!({"phase": "Running"});
        store
            .update(&Gvr::pods(), Some(NAMESPACE), running, Some("status"))
            .unwrap();
        assert_eq!(counts.poll().unwrap(), (2, 1, 0));
        store
            .delete(&Gvr::pods(), Some(NAMESPACE), "after", &DeleteOptions::default())
            .unwrap();
        assert_eq!(
            counts.poll().unwrap(),
            (1, 0, 0),
            "a terminating or deleted pod no longer counts"
        );
        let mut relabelled = store.get(&Gvr::pods(), Some(NAMESPACE), "before").unwrap().value();
        relabelled["metadata"]["labels"] = serde_json::json!({"app": "x"});
        store.update(&Gvr::pods(), Some(NAMESPACE), relabelled, None).unwrap();
        assert_eq!(
            counts.poll().unwrap(),
            (0, 0, 0),
            "a pod that lost its Ray label no longer counts"
        );
    }

    #[test]
    fn targets_are_timed_when_first_reached_and_kept() {
        let targets = Targets {
            pods: 10,
            clusters: 1,
            workers_per_cluster: 9,
        };
        let mut progress = Progress::default();
        progress.update((5, 0, 0), &targets, 0.5);
        assert_eq!(
            (progress.all_created, progress.all_running, progress.all_ready),
            (None, None, None)
        );
        progress.update((10, 4, 0), &targets, 1.0);
        progress.update((10, 10, 1), &targets, 1.5);
        // A pod deleted and recreated later does not move the milestones already reached.
        progress.update((9, 9, 1), &targets, 2.0);
        progress.update((10, 10, 1), &targets, 2.5);
        assert_eq!(
            progress,
            Progress {
                existing: 10,
                running: 10,
                ready: 1,
                all_created: Some(1.0),
                all_running: Some(1.5),
                all_ready: Some(1.5),
            }
        );
    }

    #[test]
    fn the_follower_times_milestones_from_its_own_thread() {
        use kube_sim::store::StoreConfig;
        let store = Store::new(StoreConfig::default());
        let targets = Targets {
            pods: 1,
            clusters: 0,
            workers_per_cluster: 0,
        };
        let follower = ProgressFollower::start(&store, targets, Instant::now(), None).unwrap();
        assert_eq!(follower.progress().unwrap().all_created, None);
        let pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "head", "labels": {RAY_CLUSTER_LABEL: "c"}},
            "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]},
        });
        store.create(&Gvr::pods(), Some(NAMESPACE), pod).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while follower.progress().unwrap().all_created.is_none() {
            assert!(Instant::now() < deadline, "the follower never saw the pod");
            std::thread::sleep(FOLLOW_INTERVAL);
        }
        let progress = follower.progress().unwrap();
        assert_eq!((progress.existing, progress.running), (1, 0));
        assert!(follower.stop() > 0.0, "the follower reports its own CPU time");
    }
}
