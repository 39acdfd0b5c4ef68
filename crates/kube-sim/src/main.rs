//! `kube-sim serve`: runs the simulated API server until SIGINT / SIGTERM.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use kube_sim::{AgentConfig, FaultConfig, SimConfig, SimServer};

#[derive(Parser)]
#[command(name = "kube-sim", about = "A simulated Kubernetes API server with hollow agents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API until interrupted.
    Serve(ServeArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: std::net::SocketAddr,
    /// Where to write the kubeconfig.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// Number of hollow nodes.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Allocatable CPU per node (quantity).
    #[arg(long, default_value = "1k")]
    node_cpu: String,
    /// Allocatable memory per node (quantity).
    #[arg(long, default_value = "1Ti")]
    node_memory: String,
    /// Delay before the hollow kubelet reports a bound pod Running, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pod_start_delay: u64,
    /// Fault injection spec, e.g. `error=5%:500,conflict=2%,watch-drop=2s,seed=42`.
    #[arg(long)]
    faults: Option<String>,
    /// CRD manifests to load at startup (repeatable).
    #[arg(long = "crds")]
    crds: Vec<PathBuf>,
    /// Extra namespaces to create (repeatable).
    #[arg(long = "namespace")]
    namespaces: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let Command::Serve(args) = Cli::parse().command;
    let faults = match &args.faults {
        Some(spec) => FaultConfig::parse(spec).context("--faults")?,
        None => FaultConfig::default(),
    };
    let config = SimConfig {
        listen: args.listen,
        faults,
        crd_files: args.crds,
        extra_namespaces: args.namespaces,
        request_log: false,
        agents: AgentConfig {
            nodes: args.nodes,
            node_cpu: args.node_cpu,
            node_memory: args.node_memory,
            pod_start_delay: Duration::from_millis(args.pod_start_delay),
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    };
    let handle = SimServer::start(config).await.context("starting kube-sim")?;
    handle
        .write_kubeconfig(&args.kubeconfig)
        .with_context(|| format!("writing {}", args.kubeconfig.display()))?;
    println!("{}", handle.url());
    eprintln!(
        "kube-sim listening on {} (kubeconfig: {})",
        handle.url(),
        args.kubeconfig.display()
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    drop(handle);
    eprintln!("kube-sim stopped");
    Ok(())
}
