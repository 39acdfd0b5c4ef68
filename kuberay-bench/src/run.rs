//! Replays one experiment: a fresh control plane (kube-sim, or a real cluster), a fresh operator, the
//! schedule's steps — each waited on until converged — and a memory sample after every step.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt as _};
use ray_api::RayCluster;
use serde::Serialize;
use serde_json::json;

use crate::experiment::{self, Action, EXPERIMENT_LABEL};
use crate::operator::{Memory, Operator};

/// How long after `/readyz` answers the idle sample is taken: past the operator's release of its startup
/// code, 3 s after it reports ready (`--release-startup-code`, docs/benchmarks.md), so idle is the steady state.
const IDLE_SETTLE: Duration = Duration::from_secs(5);

/// Namespace the RayClusters are created in.
pub const NAMESPACE: &str = "default";

/// Longest wait for one step to converge.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// How a run is set up.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The operator binary.
    pub operator: PathBuf,
    /// A real cluster's kubeconfig; `None` runs kube-sim in-process.
    pub kubeconfig: Option<PathBuf>,
    /// Flags appended to the operator's command line.
    pub operator_args: Vec<String>,
    /// Settle time after a step converged, before sampling.
    pub step_interval: Duration,
    /// Directory for logs, kubeconfigs, smaps copies and (with `private_binary`) the binary copies.
    pub work_dir: PathBuf,
    /// Faults the in-process kube-sim's API injects (none by default).
    pub faults: kube_sim::FaultConfig,
    /// Whether each experiment runs its own copy of the operator binary: when experiments run at the same
    /// time, so that no code page of one operator is shared with another's and PSS stays what a lone
    /// operator would have (a byte-identical file; RSS is the same either way).
    pub private_binary: bool,
}

/// One memory sample.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Step number (0 = idle, before any step).
    pub step: usize,
    /// RayClusters that existed.
    pub clusters: usize,
    /// Ray pods that existed (all Running).
    pub pods: usize,
    /// Time the step took to converge, ms.
    pub converge_ms: u64,
    /// Time since the operator was ready, ms.
    pub at_ms: u64,
    /// The operator's memory.
    #[serde(flatten)]
    pub memory: Memory,
}

/// The outcome of one experiment.
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentResult {
    /// Experiment number.
    pub experiment: u8,
    /// What it does.
    pub description: String,
    /// KubeRay's interval between steps, s (ours is "until converged" plus the step interval).
    pub published_interval_secs: u64,
    /// The idle sample followed by one per step.
    pub samples: Vec<Sample>,
    /// Wall time of the experiment (control plane and operator start included), ms.
    pub wall_ms: u64,
}

impl ExperimentResult {
    /// The sample taken with exactly `pods` pods.
    pub fn at_pods(&self, pods: usize) -> Option<&Sample> {
        self.samples.iter().find(|s| s.pods == pods)
    }
}

/// The control plane an experiment runs against.
enum ControlPlane {
    Sim(Box<kube_sim::SimHandle>),
    Real,
}

/// Runs experiment `experiment` from a fresh control plane and a fresh operator.
pub async fn run_experiment(experiment: u8, options: &RunOptions) -> anyhow::Result<ExperimentResult> {
    let started = Instant::now();
    let steps = experiment::schedule(experiment);
    if steps.is_empty() {
        bail!("unknown experiment {experiment}");
    }
    let (plane, client, kubeconfig) = control_plane(experiment, options).await?;
    install_crds(&client).await?;
    if matches!(plane, ControlPlane::Real) {
        cleanup(&client, experiment).await?;
    }

    let binary = if options.private_binary {
        private_copy(&options.operator, &options.work_dir, experiment)?
    } else {
        options.operator.clone()
    };
    let mut operator = Operator::spawn(
        &binary,
        &kubeconfig,
        &options.work_dir,
        &format!("e{experiment}"),
        &options.operator_args,
    )?;
    operator.wait_ready(Duration::from_secs(60)).await?;
    let ready_at = Instant::now();
    // Idle: let the informers' initial lists settle and the operator finish starting up.
    tokio::time::sleep(options.step_interval.max(IDLE_SETTLE)).await;
    let mut samples = vec![Sample {
        step: 0,
        clusters: 0,
        pods: 0,
        converge_ms: 0,
        at_ms: ready_at.elapsed().as_millis() as u64,
        memory: operator.memory().await?,
    }];
    progress(experiment, steps.len(), &samples[0]);
    save_smaps(&operator, &options.work_dir, experiment, "idle");

    let api: Api<RayCluster> = Api::namespaced(client.clone(), NAMESPACE);
    let mut expected: BTreeMap<String, i32> = BTreeMap::new();
    for (index, step) in steps.iter().enumerate() {
        let step_started = Instant::now();
        apply(&api, experiment, &step.action).await?;
        let (Action::Create { name, workers } | Action::Scale { name, workers }) = &step.action;
        expected.insert(name.clone(), *workers);
        wait_converged(&client, &mut operator, &expected, step.pods).await?;
        let converge_ms = step_started.elapsed().as_millis() as u64;
        tokio::time::sleep(options.step_interval).await;
        let sample = Sample {
            step: index + 1,
            clusters: step.clusters,
            pods: step.pods,
            converge_ms,
            at_ms: ready_at.elapsed().as_millis() as u64,
            memory: operator.memory().await?,
        };
        progress(experiment, steps.len(), &sample);
        samples.push(sample);
    }

    save_smaps(&operator, &options.work_dir, experiment, "last-step");
    operator.stop().await;
    match plane {
        ControlPlane::Sim(mut sim) => sim.shutdown(),
        ControlPlane::Real => cleanup(&client, experiment).await?,
    }
    Ok(ExperimentResult {
        experiment,
        description: experiment::describe(experiment).to_owned(),
        published_interval_secs: experiment::published_interval_secs(experiment),
        samples,
        wall_ms: started.elapsed().as_millis() as u64,
    })
}

/// Copies the operator binary to `operator-e<experiment>` in `dir` (replacing an older copy) and returns the
/// copy's path.
fn private_copy(binary: &Path, dir: &Path, experiment: u8) -> anyhow::Result<PathBuf> {
    let copy = dir.join(format!("operator-e{experiment}"));
    // Removed first: a previous run's copy may still be mapped by a process, and is then not writable.
    match std::fs::remove_file(&copy) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("removing {}", copy.display())),
    }
    std::fs::copy(binary, &copy).with_context(|| format!("copying {} to {}", binary.display(), copy.display()))?;
    Ok(copy)
}

/// Keeps a copy of the operator's `/proc/<pid>/smaps` as `smaps-e<experiment>-<when>.txt` in `dir`, for
/// finding where its memory goes (docs/benchmarks.md); a failure is reported, not fatal.
fn save_smaps(operator: &Operator, dir: &Path, experiment: u8, when: &str) {
    let target = dir.join(format!("smaps-e{experiment}-{when}.txt"));
    // Read and written rather than `fs::copy`, which may see a /proc file as empty.
    let copied =
        std::fs::read(format!("/proc/{}/smaps", operator.pid())).and_then(|text| std::fs::write(&target, text));
    if let Err(e) = copied {
        eprintln!("kuberay-bench: could not save {}: {e}", target.display());
    }
}

fn progress(experiment: u8, steps: usize, sample: &Sample) {
    let mib = |b: u64| b as f64 / 1_048_576.0;
    let metrics = sample
        .memory
        .metrics_rss_bytes
        .map(|b| format!("{:.1}", mib(b)))
        .unwrap_or_else(|| "-".into());
    let optional = |bytes: Option<u64>| bytes.map_or_else(|| "-".into(), |b| format!("{:.1}", mib(b)));
    eprintln!(
        "[exp {experiment}] step {:>3}/{steps}  clusters {:>3}  pods {:>3}  converged {:>5} ms  RSS {:>6.1} MiB  \
         anon {} MiB  PSS {} MiB  (metrics {metrics} MiB, peak {:.1} MiB, threads {})",
        sample.step,
        sample.clusters,
        sample.pods,
        sample.converge_ms,
        mib(sample.memory.rss_bytes),
        optional(sample.memory.anonymous_bytes),
        optional(sample.memory.pss_bytes),
        mib(sample.memory.hwm_bytes),
        sample.memory.threads.map_or_else(|| "-".into(), |t| t.to_string()),
    );
}

async fn control_plane(experiment: u8, options: &RunOptions) -> anyhow::Result<(ControlPlane, Client, PathBuf)> {
    if let Some(path) = &options.kubeconfig {
        let kubeconfig = kube::config::Kubeconfig::read_from(path)
            .with_context(|| format!("reading kubeconfig {}", path.display()))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default()).await?;
        let client = Client::try_from(config)?;
        return Ok((ControlPlane::Real, client, path.clone()));
    }
    let config = kube_sim::SimConfig {
        request_log: false,
        agents: kube_sim::AgentConfig {
            nodes: 16,
            node_cpu: "64".into(),
            node_memory: "256Gi".into(),
            ..kube_sim::AgentConfig::default()
        },
        faults: options.faults.clone(),
        ..kube_sim::SimConfig::default()
    };
    let sim = kube_sim::SimServer::start(config)
        .await
        .map_err(|e| anyhow::anyhow!("starting kube-sim: {e}"))?;
    let kubeconfig = options.work_dir.join(format!("kubeconfig-e{experiment}"));
    sim.write_kubeconfig(&kubeconfig)
        .with_context(|| format!("writing {}", kubeconfig.display()))?;
    let client = sim.client();
    Ok((ControlPlane::Sim(Box::new(sim)), client, kubeconfig))
}

/// Our CRDs, generated on first use and shared by the whole run: generating them takes seconds of CPU
/// (kube's structural-schema rewriting), which experiments starting at the same time would otherwise each
/// pay before their operators start. `memory` starts the generation while the operator is being built.
pub fn our_crds() -> &'static [CustomResourceDefinition] {
    static CRDS: LazyLock<Vec<CustomResourceDefinition>> = LazyLock::new(ray_api::crds::all_crds);
    &CRDS
}

/// Creates our CRDs (an existing one is left alone).
pub async fn install_crds(client: &Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let ours = tokio::task::spawn_blocking(our_crds).await?;
    for crd in ours {
        match crds.create(&PostParams::default(), crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(e) => return Err(e).with_context(|| format!("creating CRD {}", crd.name_any())),
        }
    }
    Ok(())
}

async fn apply(api: &Api<RayCluster>, experiment: u8, action: &Action) -> anyhow::Result<()> {
    match action {
        Action::Create { name, workers } => {
            let cluster: RayCluster =
                ray_reconcile::decode::decode_value(&experiment::raycluster(name, NAMESPACE, experiment, *workers))?;
            api.create(&PostParams::default(), &cluster)
                .await
                .with_context(|| format!("creating RayCluster {name}"))?;
        }
        Action::Scale { name, workers } => {
            let patch = json!({"spec": {"workerGroupSpecs": [experiment::worker_group(*workers)]}});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("scaling RayCluster {name} to {workers} workers"))?;
        }
    }
    Ok(())
}

/// Waits until every expected pod exists and is Running, and every cluster's status is `ready` with its
/// desired and ready worker counts written.
async fn wait_converged(
    client: &Client,
    operator: &mut Operator,
    expected: &BTreeMap<String, i32>,
    pods: usize,
) -> anyhow::Result<()> {
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NAMESPACE);
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        operator.check_alive()?;
        let last = match converged(&clusters, &pod_api, expected, pods).await {
            Ok(None) => return Ok(()),
            Ok(Some(why)) => why,
            Err(e) => format!("{e:#}"),
        };
        if Instant::now() > deadline {
            bail!("not converged after {STEP_TIMEOUT:?}: {last}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// `None` when converged, else what is still missing.
async fn converged(
    clusters: &Api<RayCluster>,
    pods: &Api<Pod>,
    expected: &BTreeMap<String, i32>,
    want_pods: usize,
) -> anyhow::Result<Option<String>> {
    let selector = ListParams::default().labels("ray.io/cluster");
    let listed = pods.list(&selector).await?;
    let live: Vec<&Pod> = listed
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.labels()
                .get("ray.io/cluster")
                .is_some_and(|c| expected.contains_key(c))
        })
        .collect();
    let running = live
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .count();
    if live.len() != want_pods || running != want_pods {
        return Ok(Some(format!(
            "{} pods, {running} running, want {want_pods}",
            live.len()
        )));
    }
    let listed = clusters.list(&ListParams::default()).await?;
    let statuses: BTreeMap<String, serde_json::Value> = listed
        .items
        .iter()
        .map(|c| (c.name_any(), serde_json::to_value(&c.status).unwrap_or_default()))
        .collect();
    for (name, workers) in expected {
        let Some(status) = statuses.get(name) else {
            return Ok(Some(format!("RayCluster {name} missing")));
        };
        let count = |field: &str| status[field].as_i64().unwrap_or(0);
        let workers = i64::from(*workers);
        if status["state"] != "ready"
            || count("readyWorkerReplicas") != workers
            || count("desiredWorkerReplicas") != workers
        {
            return Ok(Some(format!("RayCluster {name} status not converged: {status}")));
        }
    }
    Ok(None)
}

/// Deletes this experiment's RayClusters (real clusters only) and waits for their pods to go.
async fn cleanup(client: &Client, experiment: u8) -> anyhow::Result<()> {
    let api: Api<RayCluster> = Api::namespaced(client.clone(), NAMESPACE);
    let selector = format!("{EXPERIMENT_LABEL}={experiment}");
    let names: Vec<String> = api
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    for name in &names {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        let left = pods
            .list(&ListParams::default().labels("ray.io/cluster"))
            .await?
            .items
            .iter()
            .filter(|p| p.labels().get("ray.io/cluster").is_some_and(|c| names.contains(c)))
            .count();
        if left == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    bail!("pods of experiment {experiment} still exist after 300 s")
}

/// Prints a run's Markdown table and writes it as `<stem>.md`, with the result as `<stem>.json`, under `dir`.
pub fn print_and_write<T: Serialize>(dir: &Path, stem: &str, markdown: &str, result: &T) -> anyhow::Result<()> {
    println!();
    println!("{markdown}");
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let md = dir.join(format!("{stem}.md"));
    std::fs::write(&md, markdown).with_context(|| format!("writing {}", md.display()))?;
    let json = dir.join(format!("{stem}.json"));
    std::fs::write(&json, serde_json::to_vec_pretty(result)?).with_context(|| format!("writing {}", json.display()))?;
    for path in [md, json] {
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Creates `dir` and returns it.
pub fn ensure_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir.to_path_buf())
}
