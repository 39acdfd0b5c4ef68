//! The scale benchmark behind `kube-sim bench`: many concurrent clients create pods while watchers
//! follow, against a `kube-sim serve` child process (so its memory is measured on its own).
//!
//! It reports create throughput and latency, the server's resident memory, and checks correctness:
//! every pod is listed once, and every watcher saw every pod.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

/// Label every benchmark pod carries, so watchers and lists see only them.
pub const BENCH_LABEL: &str = "kube-sim.io/bench";

/// What to run.
#[derive(Clone, Debug)]
pub struct ScaleOptions {
    /// Pods to create.
    pub pods: usize,
    /// Concurrent creating clients.
    pub clients: usize,
    /// Concurrent watchers following the pods.
    pub watchers: usize,
    /// Namespace to create them in.
    pub namespace: String,
    /// Give up waiting for watchers after this long.
    pub settle_timeout: Duration,
    /// Also wait until every pod is Running (the hollow scheduler and kubelet are on).
    pub wait_running: bool,
}

/// Latency and throughput of a batch of creates.
#[derive(Clone, Debug)]
pub struct CreateStats {
    /// Pods created.
    pub created: usize,
    /// Creates that failed.
    pub errors: usize,
    /// Wall time of the whole batch.
    pub elapsed: Duration,
    /// Median create latency.
    pub p50: Duration,
    /// 99th percentile create latency.
    pub p99: Duration,
    /// Slowest create.
    pub max: Duration,
    /// The first failure's message, if any create failed.
    pub first_error: Option<String>,
}

impl CreateStats {
    /// Creates per second over the batch.
    pub fn per_second(&self) -> f64 {
        self.created as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }
}

/// The outcome of [`run`].
#[derive(Clone, Debug)]
pub struct ScaleReport {
    /// The creates.
    pub creates: CreateStats,
    /// Pods a final (paged) list returned.
    pub listed: usize,
    /// Distinct pods each watcher saw.
    pub watcher_counts: Vec<usize>,
    /// Time from the first create until every watcher had seen every pod.
    pub watch_settle: Option<Duration>,
    /// Pods the first watcher saw Running (only waited for when [`ScaleOptions::wait_running`]).
    pub running: usize,
    /// Time from the first create until every pod was Running, when waited for.
    pub all_running: Option<Duration>,
}

/// A benchmark pod: tiny requests, the bench label, a fixed image. Built as a typed value rather than decoded
/// from JSON: decoding a `Pod` from a JSON value instantiates a second decoder for every type a pod holds,
/// about a tenth of this crate's compiled code.
pub fn bench_pod(name: &str, run_id: &str) -> Pod {
    let requests = [("cpu", "10m"), ("memory", "16Mi")]
        .into_iter()
        .map(|(resource, amount)| (resource.to_owned(), Quantity(amount.to_owned())))
        .collect();
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([(BENCH_LABEL.to_owned(), run_id.to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".to_owned(),
                image: Some("registry.k8s.io/pause:3.10".to_owned()),
                resources: Some(ResourceRequirements {
                    requests: Some(requests),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// Creates `count` pods named `<prefix>-<i>` with `clients` concurrent tasks and measures each create.
pub async fn create_pods(client: &Client, namespace: &str, prefix: &str, count: usize, clients: usize) -> CreateStats {
    let prefix = prefix.to_owned();
    create_each(client, namespace, count, clients, move |i| {
        bench_pod(&format!("{prefix}-{i}"), &prefix)
    })
    .await
}

/// Creates the pods `make_pod(0..count)` with `clients` concurrent tasks and measures each create; the
/// pods are built on the fly so a large run never holds them all.
pub async fn create_each<F>(client: &Client, namespace: &str, count: usize, clients: usize, make_pod: F) -> CreateStats
where
    F: Fn(usize) -> Pod + Send + Sync + 'static,
{
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let next = Arc::new(AtomicUsize::new(0));
    let make_pod = Arc::new(make_pod);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (api, next, make_pod) = (api.clone(), next.clone(), make_pod.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0;
            let mut first_error = None;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let pod = make_pod(i);
                let t = Instant::now();
                match api.create(&PostParams::default(), &pod).await {
                    Ok(_) => latencies.push(t.elapsed()),
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            (latencies, errors, first_error)
        }));
    }
    let (mut latencies, mut errors, mut first_error) = (Vec::with_capacity(count), 0, None);
    for task in tasks {
        if let Ok((l, e, first)) = task.await {
            latencies.extend(l);
            errors += e;
            first_error = first_error.or(first);
        }
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or_default()
    };
    CreateStats {
        created: latencies.len(),
        errors,
        elapsed,
        p50: pick(0.50),
        p99: pick(0.99),
        max: latencies.last().copied().unwrap_or_default(),
        first_error,
    }
}

/// Runs the benchmark against the server `client` talks to.
pub async fn run(client: &Client, options: &ScaleOptions) -> ScaleReport {
    let run_id = format!("run{}", std::process::id());
    let selector = format!("{BENCH_LABEL}={run_id}");
    let seen: Vec<Arc<AtomicUsize>> = (0..options.watchers.max(1))
        .map(|_| Arc::new(AtomicUsize::new(0)))
        .collect();
    let running = Arc::new(AtomicUsize::new(0));
    let mut watcher_tasks = Vec::new();
    for (index, counter) in seen.iter().enumerate() {
        // Pods followed as dynamic objects: only the name and phase are read, and a typed watch would compile
        // one more decoder for every type a pod holds.
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &options.namespace, &ApiResource::erase::<Pod>(&()));
        let config = watcher::Config::default().labels(&selector);
        let (counter, target) = (counter.clone(), options.pods);
        // The first watcher also follows the pods' phase when asked to.
        let running = (index == 0 && options.wait_running).then(|| running.clone());
        watcher_tasks.push(tokio::spawn(async move {
            let mut names = HashSet::with_capacity(target);
            let mut running_names = HashSet::new();
            let mut stream = watcher(api, config).applied_objects().boxed();
            while let Ok(Some(pod)) = stream.try_next().await {
                let is_running = pod.data["status"]["phase"].as_str() == Some("Running");
                let Some(name) = pod.metadata.name else { continue };
                if let Some(running) = &running
                    && is_running
                    && running_names.insert(name.clone())
                {
                    running.store(running_names.len(), Ordering::Relaxed);
                }
                if names.insert(name) {
                    counter.store(names.len(), Ordering::Relaxed);
                }
                let done_running = running.is_none() || running_names.len() >= target;
                if names.len() >= target && done_running {
                    break;
                }
            }
        }));
    }
    let started = Instant::now();
    let creates = create_pods(client, &options.namespace, &run_id, options.pods, options.clients).await;
    let deadline = Instant::now() + options.settle_timeout;
    let (mut watch_settle, mut all_running) = (None, None);
    while Instant::now() < deadline {
        if watch_settle.is_none() && seen.iter().all(|c| c.load(Ordering::Relaxed) >= creates.created) {
            watch_settle = Some(started.elapsed());
        }
        if options.wait_running && all_running.is_none() && running.load(Ordering::Relaxed) >= creates.created {
            all_running = Some(started.elapsed());
        }
        if watch_settle.is_some() && (all_running.is_some() || !options.wait_running) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for task in watcher_tasks {
        task.abort();
    }
    let api: Api<Pod> = Api::namespaced(client.clone(), &options.namespace);
    let mut listed = 0;
    let mut params = ListParams::default().labels(&selector).limit(5_000);
    loop {
        let Ok(page) = api.list_metadata(&params).await else {
            break;
        };
        listed += page.items.len();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    ScaleReport {
        creates,
        listed,
        watcher_counts: seen.iter().map(|c| c.load(Ordering::Relaxed)).collect(),
        watch_settle,
        running: running.load(Ordering::Relaxed),
        all_running,
    }
}

/// Resident and peak resident memory of a process, in bytes, from `/proc/<pid>/status`.
pub fn process_memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed pod serializes to exactly the document the benchmark always sent.
    #[test]
    fn bench_pod_is_the_documented_pod() {
        let expected = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p-1", "labels": {BENCH_LABEL: "run7"}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
        });
        assert_eq!(serde_json::to_value(bench_pod("p-1", "run7")).unwrap(), expected);
    }
}
