//! `kuberay-bench`: the operator's memory benchmark on kube-sim.
//!
//! `kuberay-bench memory` replays KubeRay's three memory experiments (`shared/bench/README.md`) against the
//! real `kuberay-operator` release binary and compares its resident memory with KubeRay's published v0.6.0
//! figures. With no arguments it runs `memory --experiment all`. `kuberay-bench scale` measures many large
//! RayClusters on many hollow nodes against a bare client's pod-creation ceiling. `kuberay-bench isolation`
//! measures RayCluster and RayJob create-to-ready with and without RayJobs on slow dashboards.

mod cpu_split;
mod experiment;
mod isolation;
mod operator;
mod progress;
mod published;
mod report;
mod rounds;
mod run;
mod scale;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};

/// The kuberay-rs benchmarks.
#[derive(Debug, Parser)]
#[command(name = "kuberay-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay KubeRay's operator memory experiments and compare with its published figures (the default).
    Memory(MemoryArgs),
    /// Many large RayClusters on many hollow nodes: convergence times, pods/s against a bare client, operator
    /// RSS and CPU.
    Scale(ScaleArgs),
    /// RayCluster create-to-ready and RayJob create-to-Complete p50/p99, without and with RayJobs whose
    /// dashboards answer slowly, side by side.
    Isolation(IsolationArgs),
}

#[derive(Debug, clap::Args)]
struct IsolationArgs {
    /// RayClusters measured per phase.
    #[arg(long, default_value_t = 20)]
    clusters: usize,
    /// RayJobs on healthy dashboards measured per phase.
    #[arg(long, default_value_t = 10)]
    healthy_jobs: usize,
    /// RayJobs on slow dashboards in the loaded phase.
    #[arg(long, default_value_t = 100)]
    slow_jobs: usize,
    /// How long a slow dashboard holds each request, in milliseconds.
    #[arg(long, default_value_t = 5_000)]
    dashboard_delay_ms: u64,
    /// How long the slow RayJobs run after all are Running before the settled phase, in seconds (0: no
    /// settled phase). Their request rate is measured over its second half: by default two of their job-info
    /// cycles (3 s requeue + 5 s dashboard).
    #[arg(long, default_value_t = 32)]
    settle_secs: u64,
    /// Longest wait for one phase, in seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// The operator's `--qps` (negative: unlimited); KubeRay's default.
    #[arg(long, allow_negative_numbers = true, default_value_t = KUBERAY_DEFAULT_QPS)]
    qps: f64,
    /// The operator's `--burst`; KubeRay's default.
    #[arg(long, default_value_t = KUBERAY_DEFAULT_BURST)]
    burst: i64,
    /// The operator binary (default: `kuberay-operator` next to this executable, built under `cargo run`).
    #[arg(long, value_name = "PATH")]
    operator: Option<PathBuf>,
    /// Where isolation.md and isolation.json go.
    #[arg(long, value_name = "DIR", default_value = "target/kuberay-bench")]
    output: PathBuf,
}

/// KubeRay's default client rate limits (`--qps`, `--burst`).
const KUBERAY_DEFAULT_QPS: f64 = 100.0;
/// See [`KUBERAY_DEFAULT_QPS`].
const KUBERAY_DEFAULT_BURST: i64 = 200;

/// A named scale run: a shape someone published figures for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Preset {
    /// KubeRay's own scale test (its clusterloader2 run on GKE): 10,000 RayClusters of 3 workers, 40,000
    /// pods, on 2,000 nodes, at unlimited client rate. KubeRay had them all ready after 1,515 s.
    KuberayScaleTest,
}

impl Preset {
    /// `(clusters, workers per cluster, nodes, qps)`.
    fn shape(self) -> (usize, usize, usize, f64) {
        match self {
            Preset::KuberayScaleTest => (10_000, 3, 2_000, -1.0),
        }
    }
}

#[derive(Debug, clap::Args)]
struct ScaleArgs {
    /// A published shape; sets the clusters, workers, nodes and QPS (which may then not be given).
    #[arg(long, value_enum, conflicts_with_all = ["clusters", "workers_per_cluster", "nodes", "qps"])]
    preset: Option<Preset>,
    /// RayClusters to create.
    #[arg(long, default_value_t = 10)]
    clusters: usize,
    /// `small-group` workers per RayCluster.
    #[arg(long, default_value_t = 5_000)]
    workers_per_cluster: usize,
    /// Hollow nodes.
    #[arg(long, default_value_t = 2_000)]
    nodes: usize,
    /// The operator's `--qps` (negative: unlimited). Without `--qps`, the run covers both KubeRay's defaults
    /// (100 / 200) and unlimited.
    #[arg(long, allow_negative_numbers = true)]
    qps: Option<f64>,
    /// The operator's `--reconcile-concurrency`; a comma-separated list runs each value in turn (with every
    /// client-rate setting).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    reconcile_concurrency: Vec<u16>,
    /// The operator's `--burst` (default 200).
    #[arg(long, allow_negative_numbers = true)]
    burst: Option<i64>,
    /// Concurrent creators of the bare-client ceiling run.
    #[arg(long, default_value_t = 16)]
    bare_clients: usize,
    /// Longest wait for one phase, in seconds.
    #[arg(long, default_value_t = 1_800)]
    timeout: u64,
    /// The operator binary (default: the shipped build, `scripts/build-operator`, run under `cargo run`).
    #[arg(long, value_name = "PATH")]
    operator: Option<PathBuf>,
    /// Where scale.md and scale.json go.
    #[arg(long, value_name = "DIR", default_value = "target/kuberay-bench")]
    output: PathBuf,
    /// Run the simulator on the first half of this process's CPUs and the clients (the bare client, the
    /// RayCluster creates, the operator) on the second half, as the API server and the operator run on
    /// separate nodes in a cluster; without it every process shares every core.
    #[arg(long)]
    cpu_split: bool,
    /// Worker threads of the simulator's runtime (default: one per simulator CPU with `--cpu-split`, else 2).
    /// More threads than CPUs only adds wake-ups and context switches between them.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    sim_threads: Option<u16>,
    /// Run the bare clients and every setting this many times, alternating which goes first, and report each
    /// setting's median ratio to the bare clients of the same round with its lowest and highest: on a shared
    /// machine one round's ratio moves with the machine.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    rounds: u16,
}

impl ScaleArgs {
    /// `(clusters, workers per cluster, nodes)`, from the preset if one is given.
    fn shape(&self) -> (usize, usize, usize) {
        match self.preset.map(Preset::shape) {
            Some((clusters, workers, nodes, _)) => (clusters, workers, nodes),
            None => (self.clusters, self.workers_per_cluster, self.nodes),
        }
    }

    fn settings(&self) -> Vec<scale::Setting> {
        let rates = match self.qps.or(self.preset.map(|p| p.shape().3)) {
            Some(qps) => vec![(qps, self.burst.unwrap_or(KUBERAY_DEFAULT_BURST))],
            None => vec![(KUBERAY_DEFAULT_QPS, KUBERAY_DEFAULT_BURST), (-1.0, -1)],
        };
        self.reconcile_concurrency
            .iter()
            .flat_map(|&concurrency| {
                rates.iter().map(move |&(qps, burst)| scale::Setting {
                    qps,
                    burst,
                    concurrency,
                })
            })
            .collect()
    }
}

/// Which experiments to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Which {
    /// Experiment 1: 150 head-only RayClusters.
    #[value(name = "1")]
    One,
    /// Experiment 2: one RayCluster scaled to 150 pods.
    #[value(name = "2")]
    Two,
    /// Experiment 3: 30 five-pod RayClusters.
    #[value(name = "3")]
    Three,
    /// All three, each from a fresh control plane and operator.
    All,
}

impl Which {
    fn experiments(self) -> Vec<u8> {
        match self {
            Which::One => vec![1],
            Which::Two => vec![2],
            Which::Three => vec![3],
            Which::All => vec![1, 2, 3],
        }
    }
}

#[derive(Debug, clap::Args)]
struct MemoryArgs {
    /// The experiment to run.
    #[arg(long, value_enum, default_value = "all")]
    experiment: Which,
    /// Settle time after each converged step before the memory sample, in milliseconds.
    // 100 rather than 200: at 200, experiment 1's 150 steps were most of a first run's experiment time, and
    // the longer run read 0.0-0.12 MiB higher at 150 pods (docs/benchmarks.md, "Build time of a first result").
    #[arg(long, value_name = "MS", default_value_t = 100)]
    step_interval: u64,
    /// The operator binary (default: the shipped build, `scripts/build-operator`, run under `cargo run`).
    #[arg(long, value_name = "PATH")]
    operator: Option<PathBuf>,
    /// Run against the cluster of this kubeconfig instead of an in-process kube-sim.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// One more flag for the operator (repeatable), e.g. `--operator-arg=--runtime-worker-threads=2`.
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    operator_arg: Vec<String>,
    /// Where report.md, results.json and memory.svg go.
    #[arg(long, value_name = "DIR", default_value = "target/kuberay-bench")]
    output: PathBuf,
    /// KubeRay's published figures (default: shared/bench/kuberay-v0.6.0-memory.csv beside the workspace).
    #[arg(long, value_name = "PATH")]
    reference: Option<PathBuf>,
    /// Run the experiments one after the other. By default, on the in-process kube-sim, they run at the same
    /// time (each with its own kube-sim and its own copy of the operator binary), which takes the time of
    /// the longest instead of the sum; against a real cluster they always run one at a time.
    #[arg(long)]
    one_at_a_time: bool,
    /// Faults for the in-process kube-sim's API (its fault syntax, e.g. `error=3%:500@create/pods`), so the
    /// operator's error paths run too; scripts/profile-code-order uses it to profile them. The benchmark's own
    /// requests go through the same API, so restrict rules to what the operator alone sends.
    #[arg(long, value_name = "SPEC", conflicts_with = "kubeconfig")]
    kube_sim_faults: Option<String>,
}

impl Default for MemoryArgs {
    fn default() -> Self {
        Self {
            experiment: Which::All,
            step_interval: 100,
            operator: None,
            kubeconfig: None,
            operator_arg: Vec::new(),
            output: PathBuf::from("target/kuberay-bench"),
            reference: None,
            kube_sim_faults: None,
            one_at_a_time: false,
        }
    }
}

/// Worker threads of this process's runtime (the simulator's) when every process shares every core.
const DEFAULT_RUNTIME_THREADS: usize = 2;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Pinned before the runtime starts, so that every thread of the simulator inherits the pinning.
    let cpu_split = match &cli.command {
        Some(Command::Scale(args)) if args.cpu_split => {
            let split = cpu_split::CpuSplit::halves()?;
            split.pin_to_sim()?;
            Some(split)
        }
        _ => None,
    };
    let sim_threads = match &cli.command {
        Some(Command::Scale(args)) => args.sim_threads.map(usize::from).unwrap_or_else(|| {
            cpu_split
                .as_ref()
                .map_or(DEFAULT_RUNTIME_THREADS, cpu_split::CpuSplit::sim_cpus)
        }),
        _ => DEFAULT_RUNTIME_THREADS,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(sim_threads)
        .enable_all()
        .build()?;
    let stopped_by = runtime.block_on(async {
        let work = async {
            match cli.command {
                Some(Command::Memory(args)) => memory(args).await,
                Some(Command::Scale(args)) => scale(args, cpu_split, sim_threads).await,
                Some(Command::Isolation(args)) => isolation(args).await,
                None => memory(MemoryArgs::default()).await,
            }
        };
        // On a stop signal the run is dropped, and with it the operator child it started (which would
        // otherwise live on, and take CPU from whatever is measured next). `biased`: the run is polled first,
        // so the signals are watched only from its first wait on. The operator build it may start before
        // that (synchronous) is then still ended by a signal at once, as before; a signal sent to the
        // bench's process alone leaves that build's cargo to finish on its own (Ctrl-C reaches it too).
        tokio::select! {
            biased;
            result = work => result.map(|()| None),
            signal = stop_signal() => Ok(Some(signal)),
        }
    })?;
    match stopped_by {
        None => Ok(()),
        Some((name, number)) => {
            eprintln!("kuberay-bench: stopped by {name}; any operator it had started was stopped too");
            std::process::exit(128 + number)
        }
    }
}

/// Resolves with the signal's name and number when SIGINT, SIGTERM or SIGHUP arrives (never, if none can be
/// watched).
async fn stop_signal() -> (&'static str, i32) {
    use tokio::signal::unix::{SignalKind, signal};
    let watched = [
        (SignalKind::interrupt(), "SIGINT"),
        (SignalKind::terminate(), "SIGTERM"),
        (SignalKind::hangup(), "SIGHUP"),
    ];
    let arrivals = watched.into_iter().filter_map(|(kind, name)| {
        let mut stream = signal(kind).ok()?;
        Some(Box::pin(async move {
            stream.recv().await;
            (name, kind.as_raw_value())
        }))
    });
    let arrivals: Vec<_> = arrivals.collect();
    if arrivals.is_empty() {
        return std::future::pending().await;
    }
    futures::future::select_all(arrivals).await.0
}

async fn memory(args: MemoryArgs) -> anyhow::Result<()> {
    let reference = published::locate(args.reference.as_deref())?;
    let published = published::Published::load(&reference)?;
    // The CRDs are generated beside the operator's build, which would otherwise leave them to the
    // experiments' start.
    std::thread::spawn(run::our_crds);
    let operator = operator::resolve_binary(args.operator.as_deref())?;
    // Timed from here: the operator build above is not part of the benchmark.
    let started = Instant::now();
    let reclaimed_before = operator::kernel_reclaimed_pages();
    let work_dir = run::ensure_dir(&args.output.join("work"))?;
    eprintln!(
        "kuberay-bench memory: operator {}, published figures {}, {}",
        operator.display(),
        reference.display(),
        match &args.kubeconfig {
            Some(path) => format!("cluster {}", path.display()),
            None => "in-process kube-sim".to_owned(),
        }
    );
    let together = args.kubeconfig.is_none() && !args.one_at_a_time && args.experiment.experiments().len() > 1;
    let options = run::RunOptions {
        operator,
        kubeconfig: args.kubeconfig.clone(),
        operator_args: args.operator_arg.clone(),
        step_interval: Duration::from_millis(args.step_interval),
        work_dir,
        faults: match &args.kube_sim_faults {
            Some(spec) => kube_sim::FaultConfig::parse(spec).map_err(|e| anyhow::anyhow!("--kube-sim-faults: {e}"))?,
            None => kube_sim::FaultConfig::default(),
        },
        private_binary: together,
    };
    let results = if together {
        let options = &options;
        futures::future::try_join_all(args.experiment.experiments().into_iter().map(|experiment| async move {
            // The three progress streams interleave: say whose error it is.
            run::run_experiment(experiment, options)
                .await
                .with_context(|| format!("experiment {experiment}"))
        }))
        .await?
    } else {
        let mut results = Vec::new();
        for experiment in args.experiment.experiments() {
            results.push(run::run_experiment(experiment, &options).await?);
        }
        results
    };
    let summary = report::RunSummary {
        wall_secs: started.elapsed().as_secs_f64(),
        together,
        reclaimed_pages: reclaimed_before
            .zip(operator::kernel_reclaimed_pages())
            .map(|(before, after)| after.saturating_sub(before)),
    };
    println!();
    for result in &results {
        println!("{}", report::text_table(result, &published));
    }
    let written = report::write_all(&args.output, &results, &published, &summary)?;
    println!("wall time {:.1} s", summary.wall_secs);
    if let Some(note) = summary.reclaim_note() {
        println!("{note}");
    }
    for path in written {
        println!("wrote {}", path.display());
    }
    Ok(())
}

async fn scale(args: ScaleArgs, cpu_split: Option<cpu_split::CpuSplit>, sim_threads: usize) -> anyhow::Result<()> {
    let operator = operator::resolve_binary(args.operator.as_deref())?;
    let work_dir = run::ensure_dir(&args.output.join("work"))?;
    let (clusters, workers_per_cluster, nodes) = args.shape();
    let options = scale::ScaleOptions {
        clusters,
        workers_per_cluster,
        nodes,
        settings: args.settings(),
        bare_clients: args.bare_clients,
        timeout: Duration::from_secs(args.timeout),
        operator,
        work_dir,
        cpu_split,
        sim_threads,
        rounds: usize::from(args.rounds),
    };
    let result = scale::run(&options).await?;
    run::print_and_write(&args.output, "scale", &scale::markdown(&result), &result)
}

async fn isolation(args: IsolationArgs) -> anyhow::Result<()> {
    let operator = operator::resolve_binary(args.operator.as_deref())?;
    let work_dir = run::ensure_dir(&args.output.join("work"))?;
    let options = isolation::IsolationOptions {
        clusters: args.clusters,
        healthy_jobs: args.healthy_jobs,
        slow_jobs: args.slow_jobs,
        dashboard_delay: Duration::from_millis(args.dashboard_delay_ms),
        settle: Duration::from_secs(args.settle_secs),
        qps: args.qps,
        burst: args.burst,
        timeout: Duration::from_secs(args.timeout),
        operator,
        work_dir,
    };
    let result = isolation::run(&options).await?;
    run::print_and_write(&args.output, "isolation", &isolation::markdown(&result), &result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_arguments_means_memory_all() {
        let cli = Cli::try_parse_from(["kuberay-bench"]).unwrap();
        assert!(cli.command.is_none());
        let defaults = MemoryArgs::default();
        let parsed = match Cli::try_parse_from(["kuberay-bench", "memory"]).unwrap().command {
            Some(Command::Memory(args)) => args,
            _ => panic!("memory subcommand"),
        };
        assert_eq!(parsed.experiment, defaults.experiment);
        assert_eq!(parsed.step_interval, defaults.step_interval);
        assert_eq!(parsed.output, defaults.output);
        assert_eq!(Which::All.experiments(), vec![1, 2, 3]);
    }

    #[test]
    fn flags_parse() {
        let cli = Cli::try_parse_from([
            "kuberay-bench",
            "memory",
            "--experiment",
            "2",
            "--step-interval",
            "50",
            "--operator",
            "/bin/op",
            "--output",
            "/tmp/out",
        ])
        .unwrap();
        let Some(Command::Memory(args)) = cli.command else {
            panic!("memory subcommand")
        };
        assert_eq!(args.experiment.experiments(), vec![2]);
        assert_eq!(args.step_interval, 50);
        assert_eq!(args.operator, Some(PathBuf::from("/bin/op")));
        assert!(Cli::try_parse_from(["kuberay-bench", "memory", "--experiment", "4"]).is_err());
    }

    #[test]
    fn scale_runs_both_settings_unless_one_is_given() {
        let Some(Command::Scale(args)) = Cli::try_parse_from(["kuberay-bench", "scale"]).unwrap().command else {
            panic!("scale subcommand")
        };
        assert_eq!(
            (args.clusters, args.workers_per_cluster, args.nodes),
            (10, 5_000, 2_000)
        );
        let setting = |qps, burst, concurrency| scale::Setting {
            qps,
            burst,
            concurrency,
        };
        assert_eq!(args.settings(), vec![setting(100.0, 200, 1), setting(-1.0, -1, 1)]);
        let Some(Command::Scale(args)) = Cli::try_parse_from(["kuberay-bench", "scale", "--qps", "-1"])
            .unwrap()
            .command
        else {
            panic!("scale subcommand")
        };
        assert_eq!(args.settings(), vec![setting(-1.0, 200, 1)]);
        let Some(Command::Scale(args)) = Cli::try_parse_from([
            "kuberay-bench",
            "scale",
            "--qps",
            "-1",
            "--reconcile-concurrency",
            "1,16",
        ])
        .unwrap()
        .command
        else {
            panic!("scale subcommand")
        };
        assert_eq!(args.settings(), vec![setting(-1.0, 200, 1), setting(-1.0, 200, 16)]);
    }

    #[test]
    fn the_kuberay_scale_test_preset_is_its_published_shape() {
        let Some(Command::Scale(args)) =
            Cli::try_parse_from(["kuberay-bench", "scale", "--preset", "kuberay-scale-test"])
                .unwrap()
                .command
        else {
            panic!("scale subcommand")
        };
        assert_eq!(args.shape(), (10_000, 3, 2_000));
        assert_eq!(
            args.settings(),
            vec![scale::Setting {
                qps: -1.0,
                burst: 200,
                concurrency: 1
            }]
        );
        assert!(
            Cli::try_parse_from([
                "kuberay-bench",
                "scale",
                "--preset",
                "kuberay-scale-test",
                "--clusters",
                "5"
            ])
            .is_err(),
            "a preset fixes the shape"
        );
    }
}
