//! `kuberay-bench`: the operator's memory benchmark on kube-sim.
//!
//! `kuberay-bench memory` replays KubeRay's three memory experiments (`shared/bench/README.md`) against the
//! real `kuberay-operator` release binary and compares its resident memory with KubeRay's published v0.6.0
//! figures. With no arguments it runs `memory --experiment all`.

mod experiment;
mod operator;
mod published;
mod report;
mod run;

use std::path::PathBuf;
use std::time::{Duration, Instant};

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
    #[arg(long, value_name = "MS", default_value_t = 200)]
    step_interval: u64,
    /// The operator binary (default: `kuberay-operator` next to this executable, built under `cargo run`).
    #[arg(long, value_name = "PATH")]
    operator: Option<PathBuf>,
    /// Run against the cluster of this kubeconfig instead of an in-process kube-sim.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Where report.md, results.json and memory.svg go.
    #[arg(long, value_name = "DIR", default_value = "target/kuberay-bench")]
    output: PathBuf,
    /// KubeRay's published figures (default: shared/bench/kuberay-v0.6.0-memory.csv beside the workspace).
    #[arg(long, value_name = "PATH")]
    reference: Option<PathBuf>,
}

impl Default for MemoryArgs {
    fn default() -> Self {
        Self {
            experiment: Which::All,
            step_interval: 200,
            operator: None,
            kubeconfig: None,
            output: PathBuf::from("target/kuberay-bench"),
            reference: None,
        }
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match cli.command {
        Some(Command::Memory(args)) => runtime.block_on(memory(args)),
        None => runtime.block_on(memory(MemoryArgs::default())),
    }
}

async fn memory(args: MemoryArgs) -> anyhow::Result<()> {
    let reference = published::locate(args.reference.as_deref())?;
    let published = published::Published::load(&reference)?;
    let operator = operator::resolve_binary(args.operator.as_deref())?;
    // Timed from here: the operator build above is not part of the benchmark.
    let started = Instant::now();
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
    let options = run::RunOptions {
        operator,
        kubeconfig: args.kubeconfig.clone(),
        step_interval: Duration::from_millis(args.step_interval),
        work_dir,
    };
    let mut results = Vec::new();
    for experiment in args.experiment.experiments() {
        results.push(run::run_experiment(experiment, &options).await?);
    }
    let wall_secs = started.elapsed().as_secs_f64();
    println!();
    for result in &results {
        println!("{}", report::text_table(result, &published));
    }
    let written = report::write_all(&args.output, &results, &published, wall_secs)?;
    println!("wall time {wall_secs:.1} s");
    for path in written {
        println!("wrote {}", path.display());
    }
    Ok(())
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
            None => panic!("memory subcommand"),
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
}
