//! Wires the RayJob controller: a [`FairController`] over RayJobs, triggered also by the
//! RayClusters it owns (through the one RayCluster watch's [`ClusterFeed`]), by its batch/v1 submitter
//! Jobs and by its head services, so their changes (e.g. the cluster becoming `ready`) trigger the RayJob;
//! and the state the passes share. A pass reads its cluster, submitter Job and head service from these
//! watches' stores (reduced to what it reads), as KubeRay reads its informer cache, and asks the API
//! server only for one a store has not seen.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::fair_controller::Action;
use crate::fair_controller::FairController;
use crate::recorder::EventRecorder;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::api::core::v1::{Service, ServiceSpec};
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::api::PostParams;
use kube::runtime::events::Reporter;
use kube::runtime::reflector;
use kube::{Client, ResourceExt};
use ray_api::RayJob;
use ray_api::constants::{
    COMPONENT_NAME, CRD_KIND_RAY_JOB, KUBERNETES_CREATED_BY_LABEL, RAY_ORIGINATED_FROM_CRD_LABEL,
};
use ray_gang::BatchScheduler;
use ray_podgen::PodGenConfig;
use ray_podgen::random::SeededSuffix;
use std::fmt::Debug;
use tracing::{info, warn};

use super::dashboard::DashboardClient;
use super::error::RayJobError;
use super::events::RAYJOB_CONTROLLER;
use super::executor::{ReleasedRayJobs, reconcile};
use super::job_info::JobInfoQueries;
use super::metrics::RayJobMetrics;
use super::plan::RayJobPlanConfig;
use crate::cluster_feed::ClusterFeed;
use crate::config::DashboardProxyClient;
use crate::decode::{UndecodableGauge, UnreadableReporter};
use crate::events::{EventSpec, Severity};
use crate::runtime_util::{
    custom_resource_changes, note_failed_passes, owned_changes_kept, publish_event, run_per_scope,
};
use crate::scoped_stores::ScopedStores;

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
    /// The client of those proxied dashboard requests; `None`: the controller's client.
    pub dashboard_client: Option<DashboardProxyClient>,
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
    /// The submitter Jobs of every watch scope, as their watches keep them ([`owned_changes_kept`]).
    pub(super) submitters: ScopedStores<Job>,
    /// The RayJob head services of every watch scope, as their watches keep them.
    pub(super) head_services: ScopedStores<Service>,
    /// RayJobs whose finalizer a pass removed.
    pub(super) released: ReleasedRayJobs,
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
    let dashboard = DashboardClient::new(DashboardProxyClient::or_controller_client(
        config.dashboard_client.as_ref(),
        &client,
    ));
    let ctx = Arc::new(RayJobContext {
        client: client.clone(),
        job_info: JobInfoQueries::new(dashboard.clone()),
        dashboard,
        config: config.clone(),
        suffixes: Mutex::new(SeededSuffix::new(seed)),
        submitters: ScopedStores::default(),
        head_services: ScopedStores::default(),
        released: ReleasedRayJobs::default(),
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
        let submitters = owned_changes_kept(
            client.clone(),
            ns,
            &format!("{KUBERNETES_CREATED_BY_LABEL}={COMPONENT_NAME}"),
            keep_what_a_pass_reads_of_a_submitter,
            (&ctx.submitters, namespace.clone()),
            UnreadableReporter::new::<Job>(Some(ctx.recorder.clone()), config.undecodable.clone()),
        );
        let head_services = owned_changes_kept(
            client.clone(),
            ns,
            &format!("{RAY_ORIGINATED_FROM_CRD_LABEL}={CRD_KIND_RAY_JOB}"),
            keep_what_a_pass_reads_of_a_head_service,
            (&ctx.head_services, namespace.clone()),
            UnreadableReporter::new::<Service>(Some(ctx.recorder.clone()), config.undecodable.clone()),
        );
        FairController::for_stream(rayjobs, reader, config.concurrency)
            .reconcile_on(config.cluster_feed.owners_of_kind::<RayJob>(namespace.clone()))
            .reconcile_on(ctx.job_info.completions(namespace.clone()))
            .owns_stream(submitters)
            .owns_stream(head_services)
            .graceful_shutdown_on(stop)
            .run(reconcile, error_policy, Arc::clone(&ctx))
            .for_each(note_failed_passes("rayjob"))
    })
    .await;
}

/// A submitter Job reduced to what [`super::plan::SubmitterObservation`] reads: metadata and status conditions.
fn keep_what_a_pass_reads_of_a_submitter(job: &mut Job) {
    job.spec = None;
    if let Some(status) = job.status.as_mut() {
        *status = JobStatus {
            conditions: status.conditions.take(),
            ..JobStatus::default()
        };
    }
}

/// A RayJob head service reduced to what the pass compares: metadata and the selector.
fn keep_what_a_pass_reads_of_a_head_service(service: &mut Service) {
    service.status = None;
    if let Some(spec) = service.spec.as_mut() {
        *spec = ServiceSpec {
            selector: spec.selector.take(),
            ..ServiceSpec::default()
        };
    }
}

/// What the controller does after a failed pass: retry after 3 s.
fn error_policy(job: Arc<RayJob>, error: &RayJobError, _ctx: Arc<RayJobContext>) -> Action {
    warn!(rayjob = %job.name_any(), error = %error, "rayjob reconcile failed");
    Action::requeue(Duration::from_secs(3))
}
