//! Running the operator (no subcommand): KubeRay's flags, logging, the kube client, `/metrics`,
//! `/healthz` + `/readyz`, leader election on the `ray-operator-leader` Lease, the RayCluster
//! controller and graceful shutdown on SIGTERM/SIGINT.

use crate::config_file;
use crate::discovery::ServerApiGroups;
use crate::flags::{self, Flags, Parsed};
use crate::ratelimit::RateLimitLayer;
use anyhow::{Context as _, bail};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use ray_api::constants::{ENABLE_WEBHOOKS, USE_INGRESS_ON_OPENSHIFT};
use ray_gang::selection::{SchedulerConfig, select_scheduler};
use ray_podgen::{FeatureGates, PodGenConfig};
use ray_reconcile::ReconcileConfig;
use ray_reconcile::config::DashboardProxyClient;
use ray_reconcile::metrics::ControllerMetrics;
use ray_reconcile::networkpolicy::controller::{self as networkpolicy_controller, NetworkPolicyControllerConfig};
use ray_reconcile::raycluster::controller::{self, ControllerConfig};
use ray_reconcile::raycluster::podgen::PodGenSettings;
use ray_reconcile::raycronjob::controller::{self as raycronjob_controller, RayCronJobControllerConfig};
use ray_reconcile::rayjob::RayJobPlanConfig;
use ray_reconcile::rayjob::controller::{self as rayjob_controller, RayJobControllerConfig};
use ray_reconcile::rayjob::metrics::RayJobMetrics;
use ray_reconcile::rayjob::plan::{DEFAULT_TRANSITION_GRACE_PERIOD_SECONDS, status_check_timeout_from_env};
use ray_reconcile::rayservice::RayServicePlanConfig;
use ray_reconcile::rayservice::controller::{self as rayservice_controller, RayServiceControllerConfig};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{error, info, warn};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Layered, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer};

/// Testing only: seconds added to the RayCronJob controller's clock, so an end-to-end test reaches a tick
/// without waiting for it (`docs/raycronjob.md`). Unset in production.
pub const CRON_CLOCK_OFFSET_ENV: &str = "KUBERAY_TESTING_CRON_CLOCK_OFFSET_SECONDS";

/// Name of the leader election Lease.
pub const LEADER_ELECTION_ID: &str = "ray-operator-leader";

/// Parse the flags and run the operator until a signal stops it.
pub fn main(args: Vec<String>) -> anyhow::Result<ExitCode> {
    let flags = match flags::parse(&args) {
        Ok(Parsed::Run(flags)) => *flags,
        Ok(Parsed::Help) => {
            eprint!("{}", flags::usage());
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => {
            eprintln!("{e}");
            eprint!("{}", flags::usage());
            return Ok(ExitCode::from(2));
        }
    };
    for (name, encoder) in [
        ("log-stdout-encoder", &flags.log_stdout_encoder),
        ("log-file-encoder", &flags.log_file_encoder),
    ] {
        if encoder != "json" && encoder != "console" {
            bail!("invalid encoder {encoder:?} (must be 'json' or 'console') for --{name}");
        }
    }
    let (flags, file_config) = if flags.config.is_empty() {
        (flags, None)
    } else {
        let config = config_file::load(&flags.config)?;
        (config_file::apply(&config, &flags), Some(config))
    };
    init_logging(&flags)?;
    let runtime = build_runtime(flags.runtime_worker_threads)?;
    runtime.block_on(run(flags, file_config))?;
    Ok(ExitCode::SUCCESS)
}

type LogLayer = Box<dyn Layer<Layered<EnvFilter, tracing_subscriber::Registry>> + Send + Sync>;

fn log_layer<W>(encoder: &str, writer: W, ansi: bool) -> LogLayer
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let layer = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(ansi);
    if encoder == "json" {
        layer.json().flatten_event(true).with_current_span(true).boxed()
    } else {
        layer.boxed()
    }
}

/// Libraries whose info logs are noise for an operator's user. A directive matches every target that starts
/// with its name, so each is named in full: `kube=warn` would also silence `kuberay_operator`.
const QUIET_LIBRARIES: &str =
    "kube_client=warn,kube_runtime=warn,kube_lease_manager=warn,hyper=warn,hyper_util=warn,tower=warn";

/// stdout logs (`--log-stdout-encoder`) and, with `--log-file-path`, the same events appended to
/// that file (`--log-file-encoder`; no rotation).
fn init_logging(flags: &Flags) -> anyhow::Result<()> {
    let level = match flags.zap_log_level.as_str() {
        "" if flags.zap_devel => "debug".to_owned(),
        "" => "info".to_owned(),
        "debug" | "info" | "error" | "warn" => flags.zap_log_level.clone(),
        n if n.parse::<i64>().is_ok_and(|n| n > 0) => "debug".to_owned(),
        _ => "info".to_owned(),
    };
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(format!("{level},{QUIET_LIBRARIES}")));
    let mut layers: Vec<LogLayer> = vec![log_layer(&flags.log_stdout_encoder, std::io::stdout, false)];
    if !flags.log_file_path.is_empty() {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&flags.log_file_path)
            .with_context(|| format!("opening --log-file-path {}", flags.log_file_path))?;
        layers.push(log_layer(&flags.log_file_encoder, Mutex::new(file), false));
    }
    tracing_subscriber::registry().with(filter).with(layers).init();
    Ok(())
}

/// Go's `net.Listen` addresses: `:8080` listens on every interface; `0` disables the server.
fn listen_addr(addr: &str) -> anyhow::Result<Option<SocketAddr>> {
    if addr == "0" {
        return Ok(None);
    }
    let full = if addr.starts_with(':') {
        format!("0.0.0.0{addr}")
    } else {
        addr.to_owned()
    };
    Ok(Some(
        full.parse().with_context(|| format!("invalid bind address {addr:?}"))?,
    ))
}

fn reconcile_settings(
    flags: &Flags,
    file: Option<&config_file::Configuration>,
) -> anyhow::Result<(ReconcileConfig, PodGenSettings)> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let gates = FeatureGates::parse(&flags.feature_gates).context("--feature-gates")?;
    let mut podgen = PodGenConfig::from_env_map(&env);
    podgen.feature_gates = gates.clone();
    if let Some(file) = file {
        podgen.head_sidecar_containers = file.head_sidecar_containers.clone().unwrap_or_default();
        podgen.worker_sidecar_containers = file.worker_sidecar_containers.clone().unwrap_or_default();
        podgen.default_container_envs = file.default_container_envs.clone().unwrap_or_default();
        podgen.default_pod_annotations = file.default_pod_annotations.clone().unwrap_or_default();
        podgen.default_pod_labels = file.default_pod_labels.clone().unwrap_or_default();
    }
    let scheduler = select_scheduler(&SchedulerConfig {
        enable_batch_scheduler: flags.enable_batch_scheduler,
        batch_scheduler: flags.batch_scheduler.clone(),
        kubernetes_was_gate: gates.kubernetes_was,
    })?;
    let mut reconcile = ReconcileConfig::from_env(gates, |k| env.get(k).cloned());
    reconcile.batch_scheduler = flags.batch_scheduler.clone();
    // Gang scheduling places none of a group's pods until all exist, so it gets no limit.
    let gang = scheduler != ray_gang::scheduler::BatchScheduler::Default;
    reconcile.max_unscheduled_workers = usize::try_from(flags.max_unscheduled_worker_pods)
        .ok()
        .filter(|limit| *limit > 0 && !gang);
    Ok((
        reconcile,
        PodGenSettings {
            config: podgen,
            scheduler,
        },
    ))
}

/// The operator's API clients over one connection pool.
struct Clients {
    /// Every request to the API server, limited by `--qps` / `--burst` and `--max-requests-in-flight`.
    limited: kube::Client,
    /// Dashboard requests through the API server's service proxy (`--use-kubernetes-proxy`): KubeRay sends
    /// them over the manager's HTTP client, outside its REST client's rate limit.
    dashboard: kube::Client,
}

async fn build_clients(flags: &Flags) -> anyhow::Result<Clients> {
    let config = kube::Config::infer()
        .await
        .context("no kubeconfig or in-cluster configuration")?;
    let unlimited = kube::client::ClientBuilder::try_from(config)?.build();
    let max_in_flight = usize::try_from(flags.max_requests_in_flight).context("--max-requests-in-flight")?;
    let through = crate::ratelimit::ThroughClient::with_max_in_flight(unlimited.clone(), max_in_flight);
    let namespace = unlimited.default_namespace().to_owned();
    let limited = match (RateLimitLayer::new(flags.qps, flags.burst), max_in_flight) {
        (Some(limit), _) => kube::Client::new(tower::Layer::layer(&limit, through), namespace),
        (None, 0) => unlimited.clone(),
        (None, _) => kube::Client::new(through, namespace),
    };
    Ok(Clients {
        limited,
        dashboard: unlimited,
    })
}

/// How long the controllers may drain their in-flight passes after the stop signal (controller-runtime's
/// default graceful shutdown timeout, which KubeRay keeps).
const GRACEFUL_SHUTDOWN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => info!("SIGINT received, shutting down"),
        () = term => info!("SIGTERM received, shutting down"),
    }
}

/// Stack size of the tokio worker threads (see where the runtime is built).
const WORKER_STACK_BYTES: usize = 16 << 20;

/// The async runtime for `--runtime-worker-threads`: 0 runs every task on the main thread, N > 0 runs them on
/// N worker threads. Either way the controllers and their reconciles (`--reconcile-concurrency`) run as
/// concurrent tasks; worker threads only add parallel CPU, and cost a stack and a malloc arena each.
fn build_runtime(worker_threads: i64) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = match usize::try_from(worker_threads) {
        Ok(0) | Err(_) => tokio::runtime::Builder::new_current_thread(),
        Ok(workers) => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(workers);
            builder
        }
    };
    // Unoptimised builds put the reconcile futures' large frames on the thread stacks: a RayCronJob's RayJob
    // reconciled on tokio's 2 MiB default overflowed in the debug end-to-end test. Stacks are reserved, not
    // committed: only the pages a thread touches count in the resident memory. (The main thread's stack,
    // which a current-thread runtime runs on, is the system's: 8 MiB by default.)
    builder.thread_stack_size(WORKER_STACK_BYTES);
    Ok(builder.enable_all().build()?)
}

/// First wait before retrying a failed Lease request at startup.
const LEASE_RETRY_MIN: std::time::Duration = std::time::Duration::from_millis(200);
/// Longest wait between Lease retries at startup.
const LEASE_RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(5);

async fn run(flags: Flags, file: Option<config_file::Configuration>) -> anyhow::Result<()> {
    if flags.forced_cluster_upgrade {
        info!("--forced-cluster-upgrade is deprecated and has no effect");
    }
    let (mut reconcile, podgen) = reconcile_settings(&flags, file.as_ref())?;
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every replica serves the webhooks, leader or not (controller-runtime starts its webhook server
    // outside leader election), and a missing certificate stops the operator before anything else.
    if std::env::var(ENABLE_WEBHOOKS).is_ok_and(|v| v == "true") {
        let settings = crate::webhook::WebhookSettings {
            port: u16::try_from(flags.webhook_port).context("--webhook-port")?,
            cert_dir: flags.webhook_cert_dir.clone().into(),
        };
        crate::webhook::start(&settings, stop_rx.clone()).await?;
    }
    let Clients {
        limited: client,
        dashboard: dashboard_client,
    } = build_clients(&flags).await?;
    let api_groups = ServerApiGroups::discover(&client).await?;
    reconcile.use_openshift_route = ray_reconcile::config::use_openshift_route(
        api_groups.is_openshift(),
        std::env::var(USE_INGRESS_ON_OPENSHIFT).ok().as_deref(),
    );
    reconcile.cert_manager_available = api_groups.has_cert_manager();
    info!(
        openshift = api_groups.is_openshift(),
        use_openshift_route = reconcile.use_openshift_route,
        cert_manager = reconcile.cert_manager_available,
        "discovered the API server's capabilities"
    );

    let mut registry = Registry::default();
    let metrics = Arc::new(ControllerMetrics::new(&mut registry, flags.enable_metrics));
    let job_metrics = Arc::new(RayJobMetrics::new(&mut registry, flags.enable_metrics));
    let rss = Gauge::<i64>::default();
    registry.register(
        "process_resident_memory_bytes",
        "Resident memory size in bytes",
        rss.clone(),
    );
    let registry = Arc::new(registry);

    let ready = Arc::new(AtomicBool::new(false));
    if let Some(addr) = listen_addr(&flags.metrics_addr)? {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding metrics server on {addr}"))?;
        info!(addr = %listener.local_addr()?, "serving metrics");
        let (registry, rss) = (Arc::clone(&registry), rss.clone());
        tokio::spawn(serve(listener, stop_rx.clone(), move |path| match path {
            "/metrics" => {
                rss.set(resident_memory_bytes().unwrap_or(0));
                let mut text = String::new();
                match prometheus_client::encoding::text::encode(&mut text, &registry) {
                    Ok(()) => (StatusCode::OK, text),
                    Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
                }
            }
            _ => (StatusCode::NOT_FOUND, "404 page not found\n".to_owned()),
        }));
    }
    if let Some(addr) = listen_addr(&flags.probe_addr)? {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding probe server on {addr}"))?;
        info!(addr = %listener.local_addr()?, "serving health probes");
        let ready = Arc::clone(&ready);
        tokio::spawn(serve(listener, stop_rx.clone(), move |path| match path {
            "/healthz" => (StatusCode::OK, "ok".to_owned()),
            "/readyz" if ready.load(Ordering::Relaxed) => (StatusCode::OK, "ok".to_owned()),
            "/readyz" => (StatusCode::SERVICE_UNAVAILABLE, "not ready".to_owned()),
            _ => (StatusCode::NOT_FOUND, "404 page not found\n".to_owned()),
        }));
    }

    let concurrency = u16::try_from(flags.reconcile_concurrency.max(1)).unwrap_or(u16::MAX);
    // One RayCluster watch for all three controllers: the RayCluster controller's, whose changes reach the
    // RayJob and RayService controllers through this feed.
    let cluster_feed = ray_reconcile::cluster_feed::ClusterFeed::new();
    // The mTLS controller runs only with the gate on and cert-manager discovered (docs/operator.md); it
    // gets TLS clusters and their pod IPs from the RayCluster controller's watches.
    let mtls_feed =
        (reconcile.gates.ray_cluster_mtls && reconcile.cert_manager_available).then(ray_reconcile::mtls::MtlsFeed::new);
    let config = ControllerConfig {
        reconcile,
        podgen,
        watch_namespaces: if flags.watch_namespace.is_empty() {
            Vec::new()
        } else {
            flags.watch_namespace.split(',').map(str::to_owned).collect()
        },
        concurrency,
        metrics,
        cluster_feed: cluster_feed.clone(),
        mtls_feed,
    };
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let job_config = RayJobControllerConfig {
        plan: RayJobPlanConfig {
            transition_grace_period_seconds: env
                .get("RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS")
                .and_then(|v| v.trim().parse::<i64>().ok())
                .unwrap_or(DEFAULT_TRANSITION_GRACE_PERIOD_SECONDS),
            status_check_timeout_seconds: status_check_timeout_from_env(
                env.get("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS").map(String::as_str),
            ),
            delete_ray_job_cr_after_job_finishes: env
                .get("DELETE_RAYJOB_CR_AFTER_JOB_FINISHES")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            cluster_domain: config.podgen.config.cluster_domain.clone(),
            validation: config.reconcile.gates.validation_options(),
        },
        podgen: config.podgen.config.clone(),
        use_kubernetes_proxy: flags.use_kubernetes_proxy,
        dashboard_client: Some(DashboardProxyClient(dashboard_client.clone())),
        watch_namespaces: config.watch_namespaces.clone(),
        concurrency,
        metrics: Some(job_metrics),
        scheduler: config.podgen.scheduler,
        cluster_feed: cluster_feed.clone(),
        undecodable: config.metrics.undecodable.clone(),
    };
    let service_config = RayServiceControllerConfig {
        plan: RayServicePlanConfig {
            enable_zero_downtime: env.get(ray_api::constants::ENABLE_ZERO_DOWNTIME).cloned(),
            incremental_upgrade_gate: config.reconcile.gates.ray_service_incremental_upgrade,
        },
        podgen: config.podgen.config.clone(),
        validation: config.reconcile.gates.validation_options(),
        use_kubernetes_proxy: flags.use_kubernetes_proxy,
        dashboard_client: Some(DashboardProxyClient(dashboard_client)),
        watch_namespaces: config.watch_namespaces.clone(),
        concurrency,
        cluster_feed,
        undecodable: config.metrics.undecodable.clone(),
    };
    let cron_config = config.reconcile.gates.ray_cron_job.then(|| RayCronJobControllerConfig {
        validation: config.reconcile.gates.validation_options(),
        watch_namespaces: config.watch_namespaces.clone(),
        concurrency,
        clock_offset: cron_clock_offset(env.get(CRON_CLOCK_OFFSET_ENV).map(String::as_str)),
        undecodable: config.metrics.undecodable.clone(),
    });
    let network_policy_config =
        config
            .reconcile
            .gates
            .ray_cluster_network_policy
            .then(|| NetworkPolicyControllerConfig {
                watch_namespaces: config.watch_namespaces.clone(),
                concurrency,
            });
    let optional = OptionalControllers {
        cron: cron_config,
        network_policy: network_policy_config,
    };
    let mut signal = Box::pin(shutdown_signal());
    ready.store(true, Ordering::Relaxed);
    if flags.release_startup_code {
        tokio::spawn(crate::code_pages::release_after_startup());
    }

    if flags.enable_leader_election {
        let namespace = leader_election_namespace(&flags);
        let identity = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| "kuberay-operator".to_owned());
        let identity = format!("{identity}_{}", std::process::id());
        // The first Lease request can fail like any other (a 500 from an overloaded API server); retry it
        // with a capped backoff instead of exiting, as client-go's leader elector does.
        let mut retry_in = LEASE_RETRY_MIN;
        let manager = loop {
            let built = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), LEADER_ELECTION_ID)
                .with_namespace(&namespace)
                .with_identity(&identity)
                .with_duration(15)
                .with_grace(5)
                .build()
                .await;
            match built {
                Ok(manager) => break manager,
                Err(e) => {
                    warn!(error = %e, retry_in = ?retry_in, "leader election: cannot read or create the Lease");
                    tokio::select! {
                        () = &mut signal => {
                            let _ = stop_tx.send(true);
                            return Ok(());
                        }
                        () = tokio::time::sleep(retry_in) => {}
                    }
                    retry_in = (retry_in * 2).min(LEASE_RETRY_MAX);
                }
            }
        };
        let (mut leader, handle) = manager.watch().await;
        info!(lease = LEADER_ELECTION_ID, %namespace, %identity, "waiting for leadership");
        let acquired = tokio::select! {
            () = &mut signal => false,
            r = leader.wait_for(|l| *l) => { r.context("leader election stopped")?; true }
        };
        if !acquired {
            drop(leader);
            let _ = handle.await;
            let _ = stop_tx.send(true);
            return Ok(());
        }
        info!(lease = LEADER_ELECTION_ID, "became leader");
        let mut lost = leader.clone();
        let lost_leadership = Arc::new(AtomicBool::new(false));
        let lost_flag = Arc::clone(&lost_leadership);
        let stop = async move {
            tokio::select! {
                () = signal => {}
                _ = lost.wait_for(|l| !*l) => {
                    lost_flag.store(true, Ordering::Relaxed);
                    error!("leader election lost");
                }
            }
        };
        run_controllers(client, config, job_config, service_config, optional, stop).await;
        drop(leader);
        if let Err(e) = handle.await {
            warn!(error = %e, "lease manager task failed");
        }
        let _ = stop_tx.send(true);
        if lost_leadership.load(Ordering::Relaxed) {
            bail!("leader election lost");
        }
    } else {
        run_controllers(client, config, job_config, service_config, optional, signal).await;
        let _ = stop_tx.send(true);
    }
    info!("operator stopped");
    Ok(())
}

/// The testing-only clock offset of [`CRON_CLOCK_OFFSET_ENV`] (zero when unset or unreadable).
fn cron_clock_offset(value: Option<&str>) -> k8s_openapi::jiff::SignedDuration {
    value.and_then(|v| v.trim().parse::<i64>().ok()).map_or(
        k8s_openapi::jiff::SignedDuration::ZERO,
        k8s_openapi::jiff::SignedDuration::from_secs,
    )
}

/// The controllers behind feature gates that are off by default: `None` when the gate is off.
struct OptionalControllers {
    /// Gate `RayCronJob`.
    cron: Option<RayCronJobControllerConfig>,
    /// Gate `RayClusterNetworkPolicy`.
    network_policy: Option<NetworkPolicyControllerConfig>,
}

/// The RayCluster, RayJob and RayService controllers side by side (and the gated ones that are on), all
/// stopped by `stop`.
async fn run_controllers(
    client: kube::Client,
    config: ControllerConfig,
    job_config: RayJobControllerConfig,
    service_config: RayServiceControllerConfig,
    optional: OptionalControllers,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let (tx, rx) = watch::channel(false);
    let relay = tokio::spawn(async move {
        stop.await;
        let _ = tx.send(true);
    });
    let waiter = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let mtls = config.mtls_feed.clone().map(|feed| {
        let (client, stop) = (client.clone(), waiter(rx.clone()));
        let cluster_domain = config.podgen.config.cluster_domain.clone();
        tokio::spawn(ray_reconcile::mtls::controller::run(client, feed, cluster_domain, stop))
    });
    let cron = optional.cron.map(|cron_config| {
        let (client, stop) = (client.clone(), waiter(rx.clone()));
        tokio::spawn(raycronjob_controller::run(client, cron_config, stop))
    });
    let network_policy = optional.network_policy.map(|np_config| {
        let (client, stop) = (client.clone(), waiter(rx.clone()));
        tokio::spawn(networkpolicy_controller::run(client, np_config, stop))
    });
    let mut stopping = rx.clone();
    let controllers = async move {
        tokio::join!(
            controller::run(client.clone(), config, waiter(rx.clone())),
            rayjob_controller::run(client.clone(), job_config, waiter(rx.clone())),
            rayservice_controller::run(client, service_config, waiter(rx)),
        );
        if let Some(mtls) = mtls
            && let Err(e) = mtls.await
        {
            warn!(error = %e, "mTLS controller task failed");
        }
        for (name, task) in [("RayCronJob", cron), ("NetworkPolicy", network_policy)] {
            if let Some(task) = task
                && let Err(e) = task.await
            {
                warn!(error = %e, "{name} controller task failed");
            }
        }
    };
    // A controller drains its in-flight passes after the stop signal; one stuck on an unreachable API server
    // or dashboard must not keep the process alive until the kubelet's SIGKILL, so the drain is bounded.
    let drain_deadline = async move {
        let _ = stopping.wait_for(|stop| *stop).await;
        tokio::time::sleep(GRACEFUL_SHUTDOWN_TIMEOUT).await;
    };
    tokio::select! {
        () = controllers => {}
        () = drain_deadline => {
            warn!(timeout = ?GRACEFUL_SHUTDOWN_TIMEOUT, "controllers did not stop within the graceful shutdown timeout; exiting anyway");
        }
    }
    relay.abort();
}

fn leader_election_namespace(flags: &Flags) -> String {
    if !flags.leader_election_namespace.is_empty() {
        return flags.leader_election_namespace.clone();
    }
    std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .unwrap_or_else(|| "default".to_owned())
}

/// `VmRSS` of this process, in bytes.
fn resident_memory_bytes() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A minimal HTTP/1 server answering GETs by path until `stop` turns true.
async fn serve<F>(listener: TcpListener, mut stop: watch::Receiver<bool>, handler: F)
where
    F: Fn(&str) -> (StatusCode, String) + Send + Sync + 'static,
{
    let handler = Arc::new(handler);
    loop {
        let accepted = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            a = listener.accept() => a,
        };
        let (stream, _) = match accepted {
            Ok(a) => a,
            Err(e) => {
                warn!(error = %e, "accept failed");
                continue;
            }
        };
        let handler = Arc::clone(&handler);
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let (status, body) = handler(req.uri().path());
                let mut response = Response::new(Full::new(Bytes::from(body)));
                *response.status_mut() = status;
                std::future::ready(Ok::<_, std::convert::Infallible>(response))
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "http connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quieted_libraries_do_not_silence_the_operators_own_logs() {
        for directive in QUIET_LIBRARIES.split(',') {
            let (target, _) = directive.split_once('=').unwrap();
            for ours in ["kuberay_operator", "ray_reconcile", "ray_podgen"] {
                assert!(!ours.starts_with(target), "{directive} also matches {ours}");
            }
        }
    }
}
