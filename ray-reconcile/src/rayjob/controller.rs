//! Wires the RayJob controller: kube-runtime's `Controller` over RayJobs, triggered also by the
//! RayClusters it owns (through the one RayCluster watch's [`ClusterFeed`]) and by its batch/v1
//! submitter Jobs (metadata only), so their changes (e.g. the cluster becoming `ready`) trigger the
//! RayJob; and the state the passes share.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::recorder::EventRecorder;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::api::PostParams;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::Reporter;
use kube::runtime::{reflector, watcher};
use kube::{Client, ResourceExt};
use ray_api::RayJob;
use ray_gang::BatchScheduler;
use ray_podgen::PodGenConfig;
use ray_podgen::random::SeededSuffix;
use tracing::{info, warn};

use super::dashboard::DashboardClient;
use super::error::RayJobError;
use super::events::RAYJOB_CONTROLLER;
use super::executor::reconcile;
use super::job_info::JobInfoQueries;
use super::metrics::RayJobMetrics;
use super::plan::RayJobPlanConfig;
use crate::cluster_feed::ClusterFeed;
use crate::decode::{UndecodableGauge, UnreadableReporter};
use crate::events::{EventSpec, Severity};
use crate::runtime_util::{custom_resource_changes, note_failed_passes, owned_changes, publish_event, run_per_scope};

/// Field manager of the RayJob controller's writes.
pub const FIELD_MANAGER: &str = "kuberay-operator";

/// Create parameters carrying this controller's field manager.
pub(super) fn create_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}

/// Settings of [`run`].
#[derive(Clone, Debug)]
pub struct RayJobControllerConfig {
    /// Plan settings.
    pub plan: RayJobPlanConfig,
    /// Object generation settings.
    pub podgen: PodGenConfig,
    /// `--use-kubernetes-proxy`: reach dashboards through the API server's service proxy.
    pub use_kubernetes_proxy: bool,
    /// Namespaces to watch; empty watches all.
    pub watch_namespaces: Vec<String>,
    /// Maximum concurrent reconciles (0 = unbounded).
    pub concurrency: u16,
    /// The `kuberay_job_*` metrics (`None` records nothing).
    pub metrics: Option<Arc<RayJobMetrics>>,
    /// The operator's batch scheduler (`--batch-scheduler`), whose RayJob hooks the controller runs.
    pub scheduler: BatchScheduler,
    /// The RayCluster changes the RayCluster controller's watch publishes (one RayCluster watch for all).
    pub cluster_feed: ClusterFeed,
    /// The gauge of objects the operator cannot read (shared with the other controllers).
    pub undecodable: UndecodableGauge,
}

/// Shared state of the reconciles.
pub struct RayJobContext {
    /// API client.
    pub(super) client: Client,
    /// Settings.
    pub(super) config: RayJobControllerConfig,
    /// The dashboard job API client (submissions and stops, made by the pass).
    pub(super) dashboard: DashboardClient,
    /// Job-info queries, made in the background (a slow dashboard holds no reconcile worker).
    pub(super) job_info: Arc<JobInfoQueries>,
    /// Random suffixes of generated cluster names.
    pub(super) suffixes: Mutex<SeededSuffix>,
    /// Event recorder (`rayjob-controller`).
    pub(super) recorder: EventRecorder,
}

impl RayJobContext {
    /// Publishes an event on the RayJob (failures to publish are only logged).
    pub(super) async fn publish(&self, job: &RayJob, event: EventSpec) {
        match event.severity {
            Severity::Normal => info!(rayjob = %job.name_any(), reason = event.reason, note = %event.note, "event"),
            Severity::Warning => warn!(rayjob = %job.name_any(), reason = event.reason, note = %event.note, "event"),
        }
        let regarding = job.object_ref(&());
        publish_event(&self.recorder, &regarding, event).await;
    }
}

/// Run the RayJob controller until `shutdown` resolves.
pub async fn run(client: Client, config: RayJobControllerConfig, shutdown: impl Future<Output = ()> + Send + 'static) {
    let seed = u64::try_from(Timestamp::now().as_nanosecond()).unwrap_or(0) ^ u64::from(std::process::id());
    let dashboard = DashboardClient::new(client.clone());
    let ctx = Arc::new(RayJobContext {
        client: client.clone(),
        job_info: JobInfoQueries::new(dashboard.clone()),
        dashboard,
        config: config.clone(),
        suffixes: Mutex::new(SeededSuffix::new(seed)),
        recorder: EventRecorder::new(
            client.clone(),
            Reporter {
                controller: RAYJOB_CONTROLLER.to_owned(),
                instance: std::env::var("POD_NAME").ok(),
            },
        ),
    });
    run_per_scope(&config.watch_namespaces, shutdown, |namespace, stop| {
        let ns = namespace.as_deref();
        info!(namespace = ns.unwrap_or("<all>"), "starting RayJob controller");
        let (reader, writer) = reflector::store();
        let unreadable = UnreadableReporter::new::<RayJob>(Some(ctx.recorder.clone()), config.undecodable.clone());
        let rayjobs = custom_resource_changes::<RayJob>(client.clone(), ns, writer, unreadable);
        Controller::for_stream(rayjobs, reader)
            .reconcile_on(config.cluster_feed.owners_of_kind::<RayJob>(namespace.clone()))
            .reconcile_on(ctx.job_info.completions(namespace.clone()))
            .owns_stream(owned_changes::<Job>(client.clone(), ns, watcher::Config::default()))
            .with_config(kube::runtime::controller::Config::default().concurrency(config.concurrency))
            .graceful_shutdown_on(stop)
            .run(reconcile, error_policy, Arc::clone(&ctx))
            .for_each(note_failed_passes("rayjob"))
    })
    .await;
}

/// What the controller does after a failed pass: retry after 3 s.
fn error_policy(job: Arc<RayJob>, error: &RayJobError, _ctx: Arc<RayJobContext>) -> Action {
    warn!(rayjob = %job.name_any(), error = %error, "rayjob reconcile failed");
    Action::requeue(Duration::from_secs(3))
}
