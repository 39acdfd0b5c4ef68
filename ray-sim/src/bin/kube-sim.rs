//! The `kube-sim` command. `kube-sim serve` runs the simulated API server, with the hollow Ray attached
//! unless `--no-hollow-ray`, until SIGINT / SIGTERM; `kube-sim bench` runs the scale benchmark against a
//! `kube-sim serve` child.
//!
//! It lives in the `ray-sim` package rather than in `kube-sim` because it attaches the hollow Ray, which
//! depends on `kube-sim`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use kube_sim::network::{Ipv4Cidr, PodNetworkConfig, PodNetworkMode};
use kube_sim::runtime::{ImageMapping, RuntimeConfig, UnmappedImages};
use kube_sim::{AgentConfig, FaultConfig, SimConfig, SimServer};
use ray_sim::{HollowRay, HollowRayOptions};

#[derive(Parser)]
#[command(
    name = "kube-sim",
    about = "A simulated Kubernetes API server with hollow agents and a hollow Ray"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API until interrupted.
    Serve(Box<ServeArgs>),
    /// Scale benchmark: concurrent clients create pods against a `kube-sim serve` child while watchers follow.
    Bench(BenchArgs),
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Pods to create.
    #[arg(long, default_value_t = 50_000)]
    pods: usize,
    /// Concurrent creating clients.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Watchers following the pods.
    #[arg(long, default_value_t = 10)]
    watchers: usize,
    /// Hollow nodes of the server.
    #[arg(long, default_value_t = 2_000)]
    nodes: usize,
    /// Run the server without hollow agents (API server only).
    #[arg(long)]
    no_agents: bool,
    /// Run the server without the EndpointSlice and Endpoints controllers.
    #[arg(long)]
    no_endpoints: bool,
    /// Give up waiting for the watchers (and, with agents, for every pod to run) after this many seconds.
    #[arg(long, default_value_t = 300)]
    timeout_secs: u64,
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
    /// Serve the API only: no hollow nodes, scheduler, kubelet or Job controller.
    #[arg(long)]
    no_agents: bool,
    /// Do not attach the hollow Ray (Ray heads behind head Services, submitter pods, hollow autoscaler).
    #[arg(long)]
    no_hollow_ray: bool,
    /// How long every hollow dashboard holds each request before answering, in milliseconds (a RayCluster's
    /// `ray-sim.kuberay-rs.io/dashboard-delay-ms` annotation overrides it).
    #[arg(long, default_value_t = 0)]
    dashboard_delay_ms: u64,
    /// Do not run the EndpointSlice and Endpoints controllers.
    #[arg(long)]
    no_endpoints: bool,
    /// Serve plain http instead of HTTPS with a generated CA (authentication and RBAC still apply).
    #[arg(long)]
    insecure_http: bool,
    /// Run containers of IMAGE as real processes on the host filesystem with DIR/bin first on PATH
    /// (`IMAGE=DIR`, repeatable; an IMAGE without a tag matches every tag).
    #[arg(long = "image-host", value_name = "IMAGE=DIR")]
    image_host: Vec<String>,
    /// Run containers of IMAGE as real processes with DIR (an unpacked OCI image: DIR/rootfs and
    /// DIR/config.json, or a bare root filesystem) as their root (`IMAGE=DIR`, repeatable).
    #[arg(long = "image-rootfs", value_name = "IMAGE=DIR")]
    image_rootfs: Vec<String>,
    /// What pods with an image no mapping covers do while mappings exist: run hollow, or fail with
    /// ErrImagePull / ImagePullBackOff.
    #[arg(long, value_enum, default_value = "hollow")]
    unmapped_images: UnmappedArg,
    /// Where the process runtime keeps pod state (volume files, overlay layers); stale state of killed runs
    /// is removed at start.
    #[arg(long)]
    runtime_state_dir: Option<PathBuf>,
    /// First CrashLoopBackOff delay of process pods, in seconds (doubles per restart up to 5 minutes).
    #[arg(long, default_value_t = 10.0)]
    crash_backoff_secs: f64,
    /// Network of process pods: `host` (share the host's) or `bridge` (a namespace and IP per pod on a
    /// bridge, ClusterIPs and cluster DNS; needs root). See docs/kube-sim.md#pod-network.
    #[arg(long, value_enum, default_value_t = PodNetworkFlag::Host)]
    pod_network: PodNetworkFlag,
    /// Pool of pod IPs (bridge mode takes the next free /24 of it per instance).
    #[arg(long, default_value = "10.250.0.0/16")]
    pod_cidr: Ipv4Cidr,
    /// Pool of Service ClusterIPs (bridge mode takes the next free /20 of it per instance).
    #[arg(long, default_value = "10.96.0.0/12")]
    service_cidr: Ipv4Cidr,
    /// Where bridge-mode instances record their slots and bind the pods' network namespaces.
    #[arg(long, default_value = "/run/kube-sim/net")]
    pod_network_state_dir: PathBuf,
}

/// `--pod-network` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PodNetworkFlag {
    /// Pods share the host's network.
    Host,
    /// A bridge, a namespace per pod, ClusterIPs and cluster DNS.
    Bridge,
}

/// `--unmapped-images`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum UnmappedArg {
    /// Run the pod hollow.
    Hollow,
    /// ErrImagePull, then ImagePullBackOff.
    Fail,
}

/// The process runtime settings of `kube-sim serve`, `None` without image mappings.
fn runtime_config(args: &ServeArgs) -> anyhow::Result<Option<RuntimeConfig>> {
    let mut images = Vec::new();
    for (list, rootfs) in [(&args.image_host, false), (&args.image_rootfs, true)] {
        for arg in list {
            images.push(ImageMapping::parse(arg, rootfs)?);
        }
    }
    if images.is_empty() {
        return Ok(None);
    }
    let mut config = RuntimeConfig::new(images);
    config.unmapped = match args.unmapped_images {
        UnmappedArg::Hollow => UnmappedImages::Hollow,
        UnmappedArg::Fail => UnmappedImages::Fail,
    };
    if let Some(dir) = &args.runtime_state_dir {
        config.state_dir = dir.clone();
    }
    config.crash_backoff = Duration::try_from_secs_f64(args.crash_backoff_secs).context("--crash-backoff-secs")?;
    Ok(Some(config))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = match Cli::parse().command {
        Command::Serve(args) => *args,
        Command::Bench(args) => return bench(args).await,
    };
    let faults = match &args.faults {
        Some(spec) => FaultConfig::parse(spec).context("--faults")?,
        None => FaultConfig::default(),
    };
    let process_runtime = runtime_config(&args)?;
    let config = SimConfig {
        listen: args.listen,
        faults,
        crd_files: args.crds,
        extra_namespaces: args.namespaces,
        request_log: false,
        insecure_http: args.insecure_http,
        pod_network: PodNetworkConfig {
            mode: match args.pod_network {
                PodNetworkFlag::Host => PodNetworkMode::Host,
                PodNetworkFlag::Bridge => PodNetworkMode::Bridge,
            },
            pod_cidr: args.pod_cidr,
            service_cidr: args.service_cidr,
            state_dir: args.pod_network_state_dir,
        },
        agents: AgentConfig {
            enabled: !args.no_agents,
            nodes: args.nodes,
            node_cpu: args.node_cpu,
            node_memory: args.node_memory,
            pod_start_delay: Duration::from_millis(args.pod_start_delay),
            process_runtime,
            endpoints: !args.no_endpoints,
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    };
    let handle = SimServer::start(config).await.context("starting kube-sim")?;
    let ray_options = HollowRayOptions {
        dashboard_delay: Duration::from_millis(args.dashboard_delay_ms),
        ..HollowRayOptions::default()
    };
    let hollow_ray = (!args.no_hollow_ray).then(|| HollowRay::attach(&handle, ray_options));
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
    drop(hollow_ray);
    drop(handle);
    eprintln!("kube-sim stopped");
    Ok(())
}

/// `kube-sim bench`: starts `kube-sim serve` as a child (so its memory is its own), runs the scale
/// benchmark against it and prints the figures.
async fn bench(args: BenchArgs) -> anyhow::Result<()> {
    use std::io::BufRead;
    let dir = std::env::temp_dir().join(format!("kube-sim-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = dir.join("kubeconfig");
    let mut command = std::process::Command::new(std::env::current_exe()?);
    // The benchmark measures the API server and its agents; the hollow Ray would only add its watches.
    command
        .args(["serve", "--no-hollow-ray", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--nodes", &args.nodes.to_string()]);
    if args.no_endpoints {
        command.arg("--no-endpoints");
    }
    if args.no_agents {
        command.arg("--no-agents");
    }
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("starting kube-sim serve")?;
    let mut url = String::new();
    if let Some(stdout) = child.stdout.take() {
        std::io::BufReader::new(stdout).read_line(&mut url)?;
    }
    anyhow::ensure!(url.starts_with("http"), "kube-sim serve did not print its address");
    let result = async {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&kubeconfig)?,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        let client = kube::Client::try_from(config)?;
        let before = kube_sim::scale::process_memory(child.id());
        let options = kube_sim::scale::ScaleOptions {
            pods: args.pods,
            clients: args.clients,
            watchers: args.watchers,
            namespace: "default".into(),
            settle_timeout: Duration::from_secs(args.timeout_secs),
            wait_running: !args.no_agents,
        };
        println!(
            "kube-sim bench: {} pods, {} clients, {} watchers, {} hollow nodes{}",
            args.pods,
            args.clients,
            args.watchers,
            args.nodes,
            if args.no_agents { ", no agents" } else { "" }
        );
        let report = kube_sim::scale::run(&client, &options).await;
        // Let the agents catch up before sampling, so the figure includes their state.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let after = kube_sim::scale::process_memory(child.id());
        let c = &report.creates;
        println!(
            "creates:    {} ok, {} errors in {:.1} s = {:.0} creates/s",
            c.created,
            c.errors,
            c.elapsed.as_secs_f64(),
            c.per_second()
        );
        println!(
            "latency:    p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            ms(c.p50),
            ms(c.p99),
            ms(c.max)
        );
        println!("listed:     {} pods (expected {})", report.listed, args.pods);
        println!(
            "watchers:   saw {:?} pods; all caught up after {:?}",
            report.watcher_counts, report.watch_settle
        );
        if !args.no_agents {
            println!(
                "running:    {} pods Running; all Running after {:?}",
                report.running, report.all_running
            );
        }
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        if let (Some((rss0, _)), Some((rss, peak))) = (before, after) {
            println!(
                "server RSS: {:.1} MiB idle, {:.1} MiB after, peak {:.1} MiB",
                mib(rss0),
                mib(rss),
                mib(peak)
            );
        }
        let correct =
            c.errors == 0 && report.listed == args.pods && report.watcher_counts.iter().all(|n| *n == args.pods);
        println!("correct:    {correct}");
        anyhow::ensure!(correct, "the server lost or duplicated pods, or a watcher fell behind");
        anyhow::Ok(())
    }
    .await;
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
