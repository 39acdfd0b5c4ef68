//! `kuberay-bench scale`: many large RayClusters on many hollow nodes (the seed-003 shape: 10 × 5,000
//! workers on 2,000 nodes). For each client-rate setting it measures, from a fresh kube-sim and a fresh
//! operator, the time until every pod exists, is Running, and every status is `ready`; and in the same run a
//! bare client creating the very same pods (built by ray-podgen) gives the simulator's ceiling, so the
//! operator's creation rate is reported as a ratio of it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use kube_sim::SimHandle;
use ray_api::RayCluster;
use ray_podgen::{PodGenConfig, PodGenerator, WorkerReplica};
use serde::Serialize;

use crate::cpu_split::CpuSplit;
use crate::experiment;
use crate::operator::Operator;
use crate::progress::{FOLLOW_INTERVAL, Progress, ProgressFollower, Targets};
use crate::rounds::{self, SettingSpread};
use crate::run::{self, NAMESPACE};

/// How often progress is sampled.
const POLL: Duration = Duration::from_millis(250);
/// The experiment number the scale clusters are labelled with (outside KubeRay's 1-3).
const SCALE_EXPERIMENT: u8 = 9;
/// The identity the operator authenticates as, so that the simulator counts its writes apart from the
/// benchmark's own.
const OPERATOR_USER: &str = "kuberay-operator";

/// What one scale run does.
#[derive(Clone, Debug)]
pub struct ScaleOptions {
    /// RayClusters.
    pub clusters: usize,
    /// `small-group` workers per RayCluster.
    pub workers_per_cluster: usize,
    /// Hollow nodes.
    pub nodes: usize,
    /// The settings to run the operator with, in order.
    pub settings: Vec<Setting>,
    /// Concurrent creators of the bare-client ceiling run.
    pub bare_clients: usize,
    /// Longest wait for one phase.
    pub timeout: Duration,
    /// The operator binary.
    pub operator: PathBuf,
    /// Logs and kubeconfigs.
    pub work_dir: PathBuf,
    /// `--cpu-split`: the simulator and the clients on separate CPUs (already applied to this process's
    /// threads by `main`; the phases pin their client threads and the operator child with it).
    pub cpu_split: Option<CpuSplit>,
    /// Worker threads of the simulator's runtime (this process's).
    pub sim_threads: usize,
    /// How many times to run the bare clients and every setting (at least once).
    pub rounds: usize,
}

impl ScaleOptions {
    /// Ray pods in total (heads included).
    pub fn pods(&self) -> usize {
        total_pods(self.clusters, self.workers_per_cluster)
    }
}

/// The Ray pods of `clusters` RayClusters of `workers_per_cluster` workers each, heads included.
fn total_pods(clusters: usize, workers_per_cluster: usize) -> usize {
    clusters * (workers_per_cluster + 1)
}

/// One way of running the operator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setting {
    /// `--qps`; negative is unlimited.
    pub qps: f64,
    /// `--burst`.
    pub burst: i64,
    /// `--reconcile-concurrency`.
    pub concurrency: u16,
}

/// The timings of one phase (the bare client, or the operator at one setting).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseResult {
    /// What ran: `bare client (N creators)` or the operator's flags.
    pub label: String,
    /// Pods expected.
    pub pods: usize,
    /// Seconds from the first request until every pod existed.
    pub all_created_secs: f64,
    /// Seconds until every pod was Running.
    pub all_running_secs: f64,
    /// Seconds until every RayCluster status was `ready` with all workers (operator phases).
    pub all_ready_secs: Option<f64>,
    /// `pods / all_created_secs`.
    pub pods_per_sec: f64,
    /// The operator's resident memory at the end, bytes (operator phases).
    pub operator_rss_bytes: Option<u64>,
    /// The operator's peak resident memory, bytes (operator phases).
    pub operator_peak_rss_bytes: Option<u64>,
    /// The operator's CPU seconds (user + system) over the phase (operator phases).
    pub operator_cpu_secs: Option<f64>,
    /// This process's resident memory at the end (kube-sim lives in it), bytes.
    pub sim_rss_bytes: u64,
    /// This process's CPU seconds (user + system) from the start of the timed window to the end of the phase,
    /// less its client thread's: kube-sim, its hollow agents and the benchmark's progress polling. With the
    /// operator's and the client's CPU it shows how the machine's cores were shared.
    pub sim_cpu_secs: Option<f64>,
    /// The CPU seconds of the client thread, which runs in this process: the bare client's creators, or the
    /// RayCluster creates of an operator phase.
    pub client_cpu_secs: Option<f64>,
    /// The API traffic of the phase (operator phases).
    pub traffic: Option<Traffic>,
}

/// What one operator phase asked of the API server, divided by the number of RayClusters (read when the phase
/// ends: operator start-up included, event requests still queued in the operator not).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Traffic {
    /// Requests of every client and verb (watches, reads and the benchmark's RayCluster creates included).
    pub requests_per_cluster: f64,
    /// Watch events sent over HTTP (all of them to the operator: the simulator's agents read its store
    /// directly).
    pub watch_events_per_cluster: f64,
    /// The operator's writes by resource (`pods`, `events`, `rayclusters/status`, ...).
    pub operator_writes_per_cluster: BTreeMap<String, f64>,
    /// Of those, the ones the API server refused, by resource and HTTP status (`rayclusters/status 409`: a
    /// status written from a copy older than the cluster).
    pub operator_refusals_per_cluster: BTreeMap<String, f64>,
}

impl Traffic {
    /// The traffic of `clusters` RayClusters from the simulator's counters at the end of a phase.
    fn measure(sim: &SimHandle, clusters: usize) -> Self {
        let per_cluster = |n: u64| n as f64 / clusters.max(1) as f64;
        Traffic {
            requests_per_cluster: per_cluster(sim.requests_served()),
            watch_events_per_cluster: per_cluster(sim.watch_events_sent()),
            operator_writes_per_cluster: sim
                .writes_by_client()
                .into_iter()
                .filter(|((client, _), _)| client == OPERATOR_USER)
                .map(|((_, resource), n)| (resource, per_cluster(n)))
                .collect(),
            operator_refusals_per_cluster: sim
                .write_refusals_by_client()
                .into_iter()
                .filter(|((client, _, _), _)| client == OPERATOR_USER)
                .map(|((_, resource, code), n)| (format!("{resource} {code}"), per_cluster(n)))
                .collect(),
        }
    }

    /// The operator's writes per RayCluster, all resources together.
    fn operator_writes(&self) -> f64 {
        self.operator_writes_per_cluster.values().sum()
    }
}

/// One round of a scale run: both bare-client ceilings and every operator setting, each on a fresh kube-sim.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleRound {
    /// The bare-client ceiling: the pods alone, timed from the first pod create.
    pub bare: PhaseResult,
    /// The like-for-like ceiling: a bare client that creates what the operator phases time (the RayClusters,
    /// each one's head Service and its pods), timed from the first RayCluster create.
    pub bare_same_objects: PhaseResult,
    /// One per operator setting.
    pub operator: Vec<PhaseResult>,
    /// Whether the operator phases ran before the ceilings (even rounds) rather than after them.
    pub operator_first: bool,
}

/// A whole scale run.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleResult {
    /// RayClusters.
    pub clusters: usize,
    /// Workers per RayCluster.
    pub workers_per_cluster: usize,
    /// Hollow nodes.
    pub nodes: usize,
    /// How the machine's CPUs were shared (`--cpu-split`), or `None` when every process shared every core.
    pub cpu_split: Option<String>,
    /// Worker threads of the simulator's runtime.
    pub sim_threads: usize,
    /// Every round, in the order they ran.
    pub rounds: Vec<ScaleRound>,
    /// Each operator setting's ratios over the rounds.
    pub spreads: Vec<SettingSpread>,
}

/// Runs `options.rounds` rounds of the bare-client ceilings and the operator once per setting, each phase on a
/// fresh kube-sim. Odd rounds run the ceilings first and even rounds the operator first, so that a machine
/// slowing down (or speeding up) over the run favours neither side.
pub async fn run(options: &ScaleOptions) -> anyhow::Result<ScaleResult> {
    eprintln!(
        "kuberay-bench scale: {} RayClusters x {} workers = {} pods on {} hollow nodes",
        options.clusters,
        options.workers_per_cluster,
        options.pods(),
        options.nodes
    );
    if let Some(split) = &options.cpu_split {
        eprintln!("kuberay-bench scale: {}", split.describe());
    }
    eprintln!("kuberay-bench scale: {}", worker_threads(options.sim_threads));
    let count = options.rounds.max(1);
    let mut rounds = Vec::with_capacity(count);
    for number in 1..=count {
        if count > 1 {
            eprintln!("kuberay-bench scale: round {number} of {count}");
        }
        let operator_first = number.is_multiple_of(2);
        let mut operator = Vec::new();
        if operator_first {
            operator = operator_phases(options, None).await?;
        }
        let bare = bare_client_phase(options, Ceiling::PodsOnly).await?;
        print_phase(&bare, &[]);
        let bare_same_objects = bare_client_phase(options, Ceiling::SameObjects).await?;
        print_phase(&bare_same_objects, &[]);
        if operator_first {
            for phase in &operator {
                print_ratios(phase, &bare, &bare_same_objects);
            }
        } else {
            operator = operator_phases(options, Some((&bare, &bare_same_objects))).await?;
        }
        rounds.push(ScaleRound {
            bare,
            bare_same_objects,
            operator,
            operator_first,
        });
    }
    let spreads = rounds::summarize(&rounds);
    if count > 1 {
        for spread in &spreads {
            eprintln!(
                "{} over {count} rounds: median {} of the pods-only bare client's rate, {} of the same-objects one's",
                spread.label, spread.percent_of_pods_only, spread.percent_of_same_objects,
            );
        }
    }
    Ok(ScaleResult {
        clusters: options.clusters,
        workers_per_cluster: options.workers_per_cluster,
        nodes: options.nodes,
        cpu_split: options.cpu_split.as_ref().map(CpuSplit::describe),
        sim_threads: options.sim_threads,
        rounds,
        spreads,
    })
}

/// The operator once per setting, each printed as it ends (with its ratios when the round's ceilings are
/// already known).
async fn operator_phases(
    options: &ScaleOptions,
    ceilings: Option<(&PhaseResult, &PhaseResult)>,
) -> anyhow::Result<Vec<PhaseResult>> {
    let mut phases = Vec::with_capacity(options.settings.len());
    for (index, setting) in options.settings.iter().enumerate() {
        let phase = operator_phase(options, index, setting).await?;
        match ceilings {
            Some((pods_only, same_objects)) => print_phase(&phase, &[pods_only, same_objects]),
            None => print_phase(&phase, &[]),
        }
        phases.push(phase);
    }
    Ok(phases)
}

/// The flags that give one setting, and its label.
fn setting_flags(setting: &Setting) -> (Vec<String>, String) {
    let Setting {
        qps,
        burst,
        concurrency,
    } = *setting;
    let flags = vec![
        format!("--qps={qps}"),
        format!("--burst={burst}"),
        format!("--reconcile-concurrency={concurrency}"),
    ];
    let mut label = if qps < 0.0 {
        "operator, unlimited (--qps=-1)".to_owned()
    } else {
        format!("operator, --qps {qps} --burst {burst}")
    };
    if concurrency != 1 {
        label.push_str(&format!(", --reconcile-concurrency {concurrency}"));
    }
    (flags, label)
}

async fn start_sim(options: &ScaleOptions) -> anyhow::Result<SimHandle> {
    let config = kube_sim::SimConfig {
        request_log: false,
        // Watch resumption needs only a short history here; the default 5 minutes of 50,000 pods' versions
        // would dominate the simulator's memory.
        history_age: Duration::from_secs(30),
        agents: kube_sim::AgentConfig {
            nodes: options.nodes,
            node_cpu: "64".into(),
            node_memory: "256Gi".into(),
            node_pods: 110,
            ..kube_sim::AgentConfig::default()
        },
        ..kube_sim::SimConfig::default()
    };
    kube_sim::SimServer::start(config)
        .await
        .map_err(|e| anyhow::anyhow!("starting kube-sim: {e}"))
}

fn scale_cluster(index: usize, workers: usize) -> anyhow::Result<RayCluster> {
    let name = format!("scale-{index:03}");
    let mut value = experiment::raycluster(&name, NAMESPACE, SCALE_EXPERIMENT, workers as i32);
    // The memory experiments cap the group at 200; here the group is as large as asked.
    value["spec"]["workerGroupSpecs"][0]["maxReplicas"] = serde_json::json!(workers);
    ray_reconcile::decode::decode_value(&value).context("building the scale RayCluster")
}

/// What a bare-client phase creates, and from when it is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ceiling {
    /// The pods alone, timed from the first pod create; the RayClusters (which own the pods) are created
    /// beforehand, untimed.
    PodsOnly,
    /// What an operator phase times: the RayClusters (created as the operator phases create them), then each
    /// one's head Service and its pods, timed from the first RayCluster create.
    SameObjects,
}

/// What [`on_client_thread`] returns: the work's result and the CPU seconds the thread used.
struct ClientWork<T> {
    result: T,
    cpu_secs: f64,
}

/// Runs `work` with a kube client on a thread and runtime of their own (under `--cpu-split`, on the clients'
/// CPUs): the client's connection tasks then run there too, not on the simulator's runtime, and the thread's
/// CPU time is told apart from the simulator's.
async fn on_client_thread<W, F, T>(
    options: &ScaleOptions,
    config: kube::Config,
    work: W,
) -> anyhow::Result<ClientWork<T>>
where
    W: FnOnce(kube::Client) -> F + Send + 'static,
    F: Future<Output = anyhow::Result<T>>,
    T: Send + 'static,
{
    let split = options.cpu_split.clone();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("bench-client".into())
        .spawn(move || {
            let result = (|| {
                if let Some(split) = &split {
                    split.pin_to_client()?;
                }
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                let result = runtime.block_on(async {
                    let client = kube::Client::try_from(config).context("building the client")?;
                    work(client).await
                })?;
                Ok(ClientWork {
                    result,
                    cpu_secs: thread_cpu_secs(),
                })
            })();
            // The receiver is gone only when the phase was dropped (a stop signal); nothing waits then.
            let _ = done_tx.send(result);
        })
        .context("starting the client thread")?;
    done_rx.await.context("the client thread stopped without an answer")?
}

/// Creates the run's RayClusters with `creators` concurrent creators, returning them as stored (in index
/// order), as the operator phases' stand-in for the user does.
async fn create_clusters(
    client: kube::Client,
    options: &ScaleOptions,
    creators: usize,
) -> anyhow::Result<Vec<RayCluster>> {
    let api: Api<RayCluster> = Api::namespaced(client, NAMESPACE);
    let workers = options.workers_per_cluster;
    futures::stream::iter(0..options.clusters)
        .map(|index| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &scale_cluster(index, workers)?)
                    .await
                    .with_context(|| format!("creating RayCluster {index}"))
            }
        })
        .buffered(creators.max(1))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}

/// A bare client: the same head and worker pods the operator would create (ray-podgen, default configuration),
/// created directly with `bare_clients` concurrent creators; with [`Ceiling::SameObjects`] also the RayClusters
/// and head Services, inside the timed window.
async fn bare_client_phase(options: &ScaleOptions, ceiling: Ceiling) -> anyhow::Result<PhaseResult> {
    let mut sim = start_sim(options).await?;
    let client = sim.client();
    // The RayClusters exist (no operator watches them) so that the pods' owner references are real, as
    // the operator's are: kube-sim validates them and garbage-collects pods whose owner is missing.
    run::install_crds(&client).await?;
    let (pods, per_cluster, creators) = (options.pods(), options.workers_per_cluster + 1, options.bare_clients);
    let untimed_clusters = match ceiling {
        Ceiling::PodsOnly => {
            let for_thread = options.clone();
            let create = move |client| async move { create_clusters(client, &for_thread, creators).await };
            Some(on_client_thread(options, sim.client_config(), create).await?.result)
        }
        Ceiling::SameObjects => None,
    };
    let sim_cpu_before = own_cpu();
    let started = Instant::now();
    let timed_options = options.clone();
    let timed = on_client_thread(options, sim.client_config(), move |client| async move {
        let started = Instant::now();
        let clusters = match untimed_clusters {
            Some(clusters) => clusters,
            None => create_clusters(client.clone(), &timed_options, creators).await?,
        };
        let config = PodGenConfig::default();
        let mut templates = Vec::with_capacity(clusters.len());
        let mut services = Vec::new();
        for cluster in &clusters {
            let generator = PodGenerator::new(cluster, &config);
            let head = generator.head_pod().context("generating the head pod")?;
            let worker = generator.worker_template(0).context("generating the worker template")?;
            templates.push((head, worker));
            if ceiling == Ceiling::SameObjects {
                services.push(
                    ray_podgen::service::build_head_service(cluster, &config).context("generating the head Service")?,
                );
            }
        }
        let service_api: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
        let created: Vec<anyhow::Result<Service>> = futures::stream::iter(services)
            .map(|service| {
                let api = service_api.clone();
                async move {
                    api.create(&PostParams::default(), &service)
                        .await
                        .context("creating a head Service")
                }
            })
            .buffer_unordered(creators.max(1))
            .collect()
            .await;
        created.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
        let templates = Arc::new(templates);
        let stats = kube_sim::scale::create_each(&client, NAMESPACE, pods, creators, move |i| {
            let (head, worker) = &templates[i / per_cluster];
            match i % per_cluster {
                0 => head.clone(),
                n => worker.pod(&WorkerReplica::single(n as u32 - 1)),
            }
        })
        .await;
        Ok((stats, started.elapsed().as_secs_f64()))
    })
    .await?;
    let ((stats, timed_secs), client_cpu_secs) = (timed.result, timed.cpu_secs);
    if stats.created != options.pods() {
        bail!(
            "the bare client created {} of {} pods ({} errors, the first: {})",
            stats.created,
            options.pods(),
            stats.errors,
            stats.first_error.as_deref().unwrap_or("-")
        );
    }
    let all_created_secs = match ceiling {
        Ceiling::PodsOnly => stats.elapsed.as_secs_f64(),
        Ceiling::SameObjects => timed_secs,
    };
    // Followed only once the timed creates are done: the bare client has the simulator to itself.
    let follower = ProgressFollower::start(sim.store(), targets(options), started, options.cpu_split.as_ref())?;
    let all_running_secs = wait_running(&follower, options, started).await?;
    let follower_cpu_secs = follower.stop();
    let label = match ceiling {
        Ceiling::PodsOnly => format!("bare client, pods only ({} creators)", options.bare_clients),
        Ceiling::SameObjects => format!(
            "bare client, RayClusters + head Services + pods ({} creators)",
            options.bare_clients
        ),
    };
    let result = PhaseResult {
        label,
        pods: options.pods(),
        all_created_secs,
        all_running_secs,
        pods_per_sec: options.pods() as f64 / all_created_secs.max(f64::EPSILON),
        sim_rss_bytes: own_rss(),
        sim_cpu_secs: cpu_since(sim_cpu_before).map(|cpu| cpu - client_cpu_secs - follower_cpu_secs),
        client_cpu_secs: Some(client_cpu_secs),
        ..PhaseResult::default()
    };
    sim.shutdown();
    Ok(result)
}

async fn operator_phase(options: &ScaleOptions, index: usize, setting: &Setting) -> anyhow::Result<PhaseResult> {
    let mut sim = start_sim(options).await?;
    let client = sim.client();
    run::install_crds(&client).await?;
    let kubeconfig = options.work_dir.join(format!("kubeconfig-scale-{index}"));
    std::fs::write(
        &kubeconfig,
        sim.kubeconfig_for(OPERATOR_USER, &[kube_sim::auth::GROUP_MASTERS]),
    )
    .with_context(|| format!("writing {}", kubeconfig.display()))?;
    let (flags, label) = setting_flags(setting);
    let spawn = || {
        Operator::spawn(
            &options.operator,
            &kubeconfig,
            &options.work_dir,
            &format!("scale-{index}"),
            &flags,
        )
    };
    let mut operator = match &options.cpu_split {
        Some(split) => split.start_client(spawn)??,
        None => spawn()?,
    };
    operator.wait_ready(Duration::from_secs(60)).await?;
    let cpu_before = operator.cpu_seconds().unwrap_or_default();

    let sim_cpu_before = own_cpu();
    let started = Instant::now();
    let follower = ProgressFollower::start(sim.store(), targets(options), started, options.cpu_split.as_ref())?;
    // Timed, unlike the pods-only bare client's: the operator cannot start before its RayClusters exist. They
    // are created on the client side with as many concurrent creators as the bare client has, so that 10,000
    // of them do not serialise on one connection's round trips; the follower times the milestones meanwhile.
    let for_thread = options.clone();
    let creates = on_client_thread(options, sim.client_config(), move |client| async move {
        create_clusters(client, &for_thread, for_thread.bare_clients).await
    });
    let mut creates = std::pin::pin!(creates);
    let mut created_clusters = false;
    let mut client_cpu_secs = 0.0;
    let deadline = started + options.timeout;
    let mut last_report = Instant::now();
    let progress = loop {
        operator.check_alive()?;
        if !created_clusters {
            tokio::select! {
                created = &mut creates => {
                    client_cpu_secs = created?.cpu_secs;
                    created_clusters = true;
                }
                () = tokio::time::sleep(POLL) => {}
            }
        }
        let progress = follower.progress()?;
        if created_clusters
            && progress.all_created.is_some()
            && progress.all_running.is_some()
            && progress.all_ready.is_some()
        {
            break progress;
        }
        let Progress {
            existing,
            running,
            ready,
            ..
        } = progress;
        if last_report.elapsed() >= Duration::from_secs(10) {
            eprintln!(
                "  [{label}] {:>6.1} s: {existing} pods, {running} running, {ready}/{} clusters ready",
                started.elapsed().as_secs_f64(),
                options.clusters
            );
            last_report = Instant::now();
        }
        if Instant::now() > deadline {
            bail!(
                "{label}: not converged after {:?}: {existing} pods, {running} running, {ready} clusters ready",
                options.timeout
            );
        }
        if created_clusters {
            tokio::time::sleep(POLL).await;
        }
    };
    let follower_cpu_secs = follower.stop();
    let memory = operator.memory().await?;
    let cpu = operator.cpu_seconds().map(|after| after - cpu_before);
    let all_created_secs = progress.all_created.unwrap_or_default();
    let result = PhaseResult {
        label,
        pods: options.pods(),
        all_created_secs,
        all_running_secs: progress.all_running.unwrap_or_default(),
        all_ready_secs: progress.all_ready,
        pods_per_sec: options.pods() as f64 / all_created_secs.max(f64::EPSILON),
        operator_rss_bytes: Some(memory.rss_bytes),
        operator_peak_rss_bytes: Some(memory.hwm_bytes),
        operator_cpu_secs: cpu,
        sim_rss_bytes: own_rss(),
        sim_cpu_secs: cpu_since(sim_cpu_before).map(|cpu| cpu - client_cpu_secs - follower_cpu_secs),
        client_cpu_secs: Some(client_cpu_secs),
        traffic: Some(Traffic::measure(&sim, options.clusters)),
    };
    operator.stop().await;
    sim.shutdown();
    Ok(result)
}

/// Waits until every pod of the run is Running; returns when that was, in seconds from `started`.
async fn wait_running(follower: &ProgressFollower, options: &ScaleOptions, started: Instant) -> anyhow::Result<f64> {
    let deadline = started + options.timeout;
    loop {
        let progress = follower.progress()?;
        if let Some(at) = progress.all_running {
            return Ok(at);
        }
        if Instant::now() > deadline {
            bail!(
                "bare client: {} of {} pods Running after {:?}",
                progress.running,
                options.pods(),
                options.timeout
            );
        }
        tokio::time::sleep(FOLLOW_INTERVAL).await;
    }
}

/// What a phase of `options` waits for.
fn targets(options: &ScaleOptions) -> Targets {
    Targets {
        pods: options.pods(),
        clusters: options.clusters,
        workers_per_cluster: options.workers_per_cluster,
    }
}

fn own_rss() -> u64 {
    kube_sim::scale::process_memory(std::process::id()).map_or(0, |(rss, _)| rss)
}

/// This process's CPU seconds so far.
fn own_cpu() -> Option<f64> {
    crate::operator::process_cpu_seconds(std::process::id())
}

/// The calling thread's CPU seconds so far.
pub(crate) fn thread_cpu_secs() -> f64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    now.tv_sec as f64 + now.tv_nsec as f64 / 1e9
}

/// This process's CPU seconds since `before` (a reading of [`own_cpu`]).
fn cpu_since(before: Option<f64>) -> Option<f64> {
    Some(own_cpu()? - before?)
}

/// `bytes` in MiB.
pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// `phase`'s rate as a percentage of `ceiling`'s.
pub(crate) fn percent_of(phase: &PhaseResult, ceiling: &PhaseResult) -> f64 {
    100.0 * phase.pods_per_sec / ceiling.pods_per_sec
}

fn print_phase(phase: &PhaseResult, ceilings: &[&PhaseResult]) {
    let ratio = match ceilings {
        [pods_only, same_objects] => format!(
            ", {:.0}% of the pods-only bare client's rate, {:.0}% of the same-objects one's",
            percent_of(phase, pods_only),
            percent_of(phase, same_objects)
        ),
        _ => String::new(),
    };
    eprintln!(
        "{}: {} pods created in {:.1} s ({:.0} pods/s{ratio}), all Running at {:.1} s{}{}",
        phase.label,
        phase.pods,
        phase.all_created_secs,
        phase.pods_per_sec,
        phase.all_running_secs,
        phase
            .all_ready_secs
            .map(|s| format!(", all ready at {s:.1} s"))
            .unwrap_or_default(),
        match (phase.operator_rss_bytes, phase.operator_cpu_secs) {
            (Some(rss), Some(cpu)) => format!("; operator RSS {:.1} MiB, {cpu:.1} CPU s", mib(rss)),
            _ => String::new(),
        },
    );
}

/// The ratios of an operator phase that ran before its round's ceilings, once they are known.
fn print_ratios(phase: &PhaseResult, pods_only: &PhaseResult, same_objects: &PhaseResult) {
    eprintln!(
        "{}: {:.0}% of the pods-only bare client's rate, {:.0}% of the same-objects one's",
        phase.label,
        percent_of(phase, pods_only),
        percent_of(phase, same_objects)
    );
}

/// `1 worker thread`, `2 worker threads`.
fn worker_threads(n: usize) -> String {
    match n {
        1 => "1 worker thread".to_owned(),
        n => format!("{n} worker threads"),
    }
}

/// The Markdown report of a run: the spread over the rounds (when there are several), then each round's table.
pub fn markdown(result: &ScaleResult) -> String {
    let cpus = match &result.cpu_split {
        Some(split) => format!("CPUs split: {split}."),
        None => "Every process shared every core.".to_owned(),
    };
    let threads = format!("The simulator's runtime had {}.", worker_threads(result.sim_threads));
    let pods = total_pods(result.clusters, result.workers_per_cluster);
    let mut out = format!(
        "## Scale: {} RayClusters × {} workers = {pods} pods on {} hollow nodes\n\n{cpus} {threads} Rates are pods \
         over the time until every pod existed; the operator phases and the same-objects bare client are timed \
         from the first RayCluster create, the pods-only bare client from its first pod create.\n\n",
        result.clusters, result.workers_per_cluster, result.nodes
    );
    out.push_str(&rounds::markdown(&result.spreads, result.rounds.len()));
    let count = result.rounds.len();
    for (index, round) in result.rounds.iter().enumerate() {
        if count > 1 {
            let order = if round.operator_first {
                "operator first"
            } else {
                "bare clients first"
            };
            out.push_str(&format!("### Round {} of {count} ({order})\n\n", index + 1));
        }
        out.push_str(&round_markdown(round));
    }
    out
}

/// The table of one round: every phase against the round's two ceilings, then the operator phases' traffic.
fn round_markdown(round: &ScaleRound) -> String {
    let mut out = "| run | pods created (s) | pods/s | % of bare client, pods only | % of bare client, same objects | \
                   all Running (s) | all ready (s) | operator RSS end / peak (MiB) | operator CPU (s) | client thread \
                   CPU (s) | kube-sim CPU (s) | kube-sim process RSS (MiB) |\n\
                   |---|---|---|---|---|---|---|---|---|---|---|---|\n"
        .to_owned();
    let phases = [&round.bare, &round.bare_same_objects]
        .into_iter()
        .chain(&round.operator);
    for phase in phases {
        let opt = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
        let rss = match (phase.operator_rss_bytes, phase.operator_peak_rss_bytes) {
            (Some(end), Some(peak)) => format!("{:.1} / {:.1}", mib(end), mib(peak)),
            _ => "-".to_owned(),
        };
        out.push_str(&format!(
            "| {} | {:.1} | {:.0} | {:.0}% | {:.0}% | {:.1} | {} | {rss} | {} | {} | {} | {:.0} |\n",
            phase.label,
            phase.all_created_secs,
            phase.pods_per_sec,
            percent_of(phase, &round.bare),
            percent_of(phase, &round.bare_same_objects),
            phase.all_running_secs,
            opt(phase.all_ready_secs),
            opt(phase.operator_cpu_secs),
            opt(phase.client_cpu_secs),
            opt(phase.sim_cpu_secs),
            mib(phase.sim_rss_bytes),
        ));
    }
    out.push_str(&traffic_markdown(&round.operator));
    out.push('\n');
    out
}

/// The table of each operator phase's API traffic per RayCluster (empty when no phase has it).
fn traffic_markdown(phases: &[PhaseResult]) -> String {
    let measured: Vec<(&str, &Traffic)> = phases
        .iter()
        .filter_map(|phase| Some((phase.label.as_str(), phase.traffic.as_ref()?)))
        .collect();
    if measured.is_empty() {
        return String::new();
    }
    let mut out = "\nAPI traffic per RayCluster (the simulator's counters over the whole phase, operator start-up \
                   included):\n\n\
                   | run | requests (all clients) | watch events sent | operator writes | operator writes by resource | \
                   of which refused |\n\
                   |---|---|---|---|---|---|\n"
        .to_owned();
    let listed = |counts: &BTreeMap<String, f64>| {
        if counts.is_empty() {
            return "-".to_owned();
        }
        counts
            .iter()
            .map(|(what, n)| format!("{what} {n:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (label, traffic) in measured {
        let (by_resource, refused) = (
            listed(&traffic.operator_writes_per_cluster),
            listed(&traffic.operator_refusals_per_cluster),
        );
        out.push_str(&format!(
            "| {label} | {:.1} | {:.1} | {:.1} | {by_resource} | {refused} |\n",
            traffic.requests_per_cluster,
            traffic.watch_events_per_cluster,
            traffic.operator_writes(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn settings_are_labelled_with_their_flags() {
        let setting = |qps, burst, concurrency| Setting {
            qps,
            burst,
            concurrency,
        };
        let (flags, label) = setting_flags(&setting(100.0, 200, 1));
        assert_eq!(flags, vec!["--qps=100", "--burst=200", "--reconcile-concurrency=1"]);
        assert_eq!(label, "operator, --qps 100 --burst 200");
        let (flags, label) = setting_flags(&setting(-1.0, -1, 16));
        assert_eq!(flags, vec!["--qps=-1", "--burst=-1", "--reconcile-concurrency=16"]);
        assert_eq!(label, "operator, unlimited (--qps=-1), --reconcile-concurrency 16");
    }

    #[test]
    fn scale_clusters_lift_the_group_cap() {
        let cluster = scale_cluster(3, 5_000).unwrap();
        assert_eq!(cluster.metadata.name.as_deref(), Some("scale-003"));
        let group = &cluster.spec.worker_group_specs.unwrap()[0];
        assert_eq!(group.replicas, Some(5_000));
        assert_eq!(group.max_replicas, Some(5_000));
    }

    /// A phase that created `pods` pods in `secs` seconds.
    fn timed_phase(label: &str, pods: usize, secs: f64) -> PhaseResult {
        PhaseResult {
            label: label.into(),
            pods,
            all_created_secs: secs,
            pods_per_sec: pods as f64 / secs,
            ..PhaseResult::default()
        }
    }

    #[test]
    fn the_table_reports_rates_against_both_bare_clients() {
        let bare = timed_phase("bare client, pods only (16 creators)", 100, 1.0);
        let bare_same_objects = timed_phase(
            "bare client, RayClusters + head Services + pods (16 creators)",
            100,
            1.5,
        );
        let operator = PhaseResult {
            operator_rss_bytes: Some(10 * 1_048_576),
            operator_peak_rss_bytes: Some(12 * 1_048_576),
            ..timed_phase("operator, unlimited (--qps=-1)", 100, 2.0)
        };
        let rounds = vec![ScaleRound {
            bare,
            bare_same_objects,
            operator: vec![operator],
            operator_first: false,
        }];
        let table = markdown(&ScaleResult {
            clusters: 1,
            workers_per_cluster: 99,
            nodes: 2,
            cpu_split: Some("simulator on CPU 0, clients on CPU 1".into()),
            sim_threads: 1,
            spreads: rounds::summarize(&rounds),
            rounds,
        });
        assert!(table.contains("| 100% | 150% |"), "{table}");
        assert!(table.contains("| 67% | 100% |"), "{table}");
        assert!(table.contains("| 50% | 75% |"), "{table}");
        assert!(
            table.contains(
                "CPUs split: simulator on CPU 0, clients on CPU 1. The simulator's runtime had 1 worker thread."
            ),
            "{table}"
        );
        assert!(table.contains("10.0 / 12.0"), "{table}");
        assert!(!table.contains("API traffic"), "no phase measured its traffic: {table}");
        assert!(
            !table.contains("Round") && !table.contains("rounds"),
            "one round has no spread: {table}"
        );
    }

    #[test]
    fn several_rounds_get_their_spread_and_a_table_each() {
        let round = |operator_secs, operator_first| ScaleRound {
            bare: timed_phase("bare client, pods only (16 creators)", 100, 1.0),
            bare_same_objects: timed_phase(
                "bare client, RayClusters + head Services + pods (16 creators)",
                100,
                1.0,
            ),
            operator: vec![timed_phase("operator, unlimited (--qps=-1)", 100, operator_secs)],
            operator_first,
        };
        let rounds = vec![round(1.0, false), round(2.0, true), round(4.0, false)];
        let table = markdown(&ScaleResult {
            clusters: 1,
            workers_per_cluster: 99,
            nodes: 2,
            cpu_split: None,
            sim_threads: 2,
            spreads: rounds::summarize(&rounds),
            rounds,
        });
        assert!(
            table.contains("| operator, unlimited (--qps=-1) | 50% (25-100%) | 50% (25-100%) | - |"),
            "{table}"
        );
        for heading in [
            "### Round 1 of 3 (bare clients first)",
            "### Round 2 of 3 (operator first)",
            "### Round 3 of 3 (bare clients first)",
        ] {
            assert!(table.contains(heading), "{heading}: {table}");
        }
        assert_eq!(
            table.matches("\n| operator, unlimited (--qps=-1) | 1.0 |").count(),
            1,
            "{table}"
        );
        assert_eq!(
            table.matches("| bare client, pods only (16 creators) |").count(),
            3,
            "{table}"
        );
    }

    #[test]
    fn traffic_is_reported_per_cluster_by_resource() {
        let traffic = Traffic {
            requests_per_cluster: 30.0,
            watch_events_per_cluster: 45.5,
            operator_writes_per_cluster: BTreeMap::from([
                ("events".to_owned(), 11.0),
                ("pods".to_owned(), 10.0),
                ("rayclusters/status".to_owned(), 2.5),
            ]),
            operator_refusals_per_cluster: BTreeMap::from([("rayclusters/status 409".to_owned(), 0.5)]),
        };
        let phase = PhaseResult {
            label: "operator, unlimited (--qps=-1)".into(),
            traffic: Some(traffic),
            ..PhaseResult::default()
        };
        let table = traffic_markdown(&[PhaseResult::default(), phase]);
        assert!(
            table.contains(
                "| operator, unlimited (--qps=-1) | 30.0 | 45.5 | 23.5 | events 11.00, pods 10.00, rayclusters/status 2.50 \
                 | rayclusters/status 409 0.50 |"
            ),
            "{table}"
        );
        assert_eq!(
            table.matches("\n| operator").count(),
            1,
            "a phase without traffic has no row: {table}"
        );
    }
}
