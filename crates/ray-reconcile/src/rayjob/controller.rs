//! The RayJob executor and kube-runtime controller: observes the RayCluster, the submitter Job and
//! the dashboard, runs [`plan_ray_job`] and carries its actions out. The controller owns RayClusters
//! and batch/v1 Jobs, so their changes (e.g. the cluster becoming `ready`) trigger the RayJob.
//!
//! Not yet carried out: Kubernetes events, the RayJob-owned head service
//! ([`RayJobAction::EnsureHeadService`]), `DeleteWorkers`, HTTPMode submission, batch schedulers.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use ray_api::constants::{KUBERAY_CONTROLLER, RAY_JOB_STOP_JOB_FINALIZER};
use ray_api::{RayCluster, RayJob, RayJobStatus};
use ray_podgen::PodGenConfig;
use ray_podgen::random::SeededSuffix;
use ray_podgen::rayjob::{build_ray_cluster_for_job, build_submitter_job};
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use super::dashboard::{DashboardClient, DashboardTarget};
use super::plan::{
    DashboardObservation, RayJobAction, RayJobObservation, RayJobPlanConfig, RayJobPlanError, SubmitterObservation,
    plan_ray_job,
};
use ray_api::JobDeploymentStatus;

/// Field manager of the RayJob controller's writes.
pub const FIELD_MANAGER: &str = "kuberay-operator";

/// Why a RayJob reconcile failed (requeue after backoff).
#[derive(Debug, thiserror::Error)]
pub enum RayJobError {
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// The plan reported a KubeRay error return.
    #[error("{0}")]
    Plan(#[from] RayJobPlanError),
    /// Building the cluster or submitter failed.
    #[error("{0}")]
    PodGen(#[from] ray_podgen::PodGenError),
    /// The RayJob has no namespace.
    #[error("RayJob {0} has no namespace")]
    NoNamespace(String),
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
}

/// Shared state of the reconciles.
pub struct RayJobContext {
    client: Client,
    config: RayJobControllerConfig,
    dashboard: DashboardClient,
    suffixes: Mutex<SeededSuffix>,
}

fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    }
}

/// Run the RayJob controller until `shutdown` resolves.
pub async fn run(client: Client, config: RayJobControllerConfig, shutdown: impl Future<Output = ()> + Send + 'static) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let shutdown_task = tokio::spawn(async move {
        shutdown.await;
        let _ = tx.send(true);
    });
    let scopes: Vec<Option<String>> = if config.watch_namespaces.is_empty() {
        vec![None]
    } else {
        config.watch_namespaces.iter().cloned().map(Some).collect()
    };
    let seed = u64::try_from(Timestamp::now().as_nanosecond()).unwrap_or(0) ^ u64::from(std::process::id());
    let ctx = Arc::new(RayJobContext {
        client: client.clone(),
        dashboard: DashboardClient::new(client.clone()),
        config: config.clone(),
        suffixes: Mutex::new(SeededSuffix::new(seed)),
    });
    let controllers = scopes.into_iter().map(|namespace| {
        let mut rx = rx.clone();
        let stop = async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
        let ns = namespace.as_deref();
        info!(namespace = ns.unwrap_or("<all>"), "starting RayJob controller");
        Controller::new(api::<RayJob>(client.clone(), ns), watcher::Config::default())
            .owns(api::<RayCluster>(client.clone(), ns), watcher::Config::default())
            .owns(api::<Job>(client.clone(), ns), watcher::Config::default())
            .with_config(kube::runtime::controller::Config::default().concurrency(config.concurrency))
            .graceful_shutdown_on(stop)
            .run(reconcile, error_policy, Arc::clone(&ctx))
            .for_each(|result| {
                if let Err(e) = result {
                    debug!(error = %e, "rayjob reconcile failed");
                }
                futures::future::ready(())
            })
    });
    futures::future::join_all(controllers).await;
    shutdown_task.abort();
}

fn error_policy(job: Arc<RayJob>, error: &RayJobError, _ctx: Arc<RayJobContext>) -> Action {
    warn!(rayjob = %job.name_any(), error = %error, "rayjob reconcile failed");
    Action::requeue(Duration::from_secs(3))
}

fn managed_externally(job: &RayJob) -> bool {
    job.spec.managed_by.as_deref().is_some_and(|m| m != KUBERAY_CONTROLLER)
}

/// The status as a JSON merge patch: fields present before and absent now become `null`.
fn status_patch(old: &RayJobStatus, new: &RayJobStatus) -> Value {
    let mut new_value = serde_json::to_value(new).unwrap_or(Value::Null);
    if let (Value::Object(new_map), Ok(Value::Object(old_map))) = (&mut new_value, serde_json::to_value(old)) {
        for key in old_map.keys() {
            new_map.entry(key.clone()).or_insert(Value::Null);
        }
    }
    json!({ "status": new_value })
}

async fn reconcile(job: Arc<RayJob>, ctx: Arc<RayJobContext>) -> Result<Action, RayJobError> {
    if managed_externally(&job) {
        return Ok(Action::await_change());
    }
    let name = job.name_any();
    let ns = job.namespace().ok_or_else(|| RayJobError::NoNamespace(name.clone()))?;
    let clusters: Api<RayCluster> = Api::namespaced(ctx.client.clone(), &ns);
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &ns);
    let rayjobs: Api<RayJob> = Api::namespaced(ctx.client.clone(), &ns);
    let old = job.status.clone().unwrap_or_default();

    let cluster_name = old.ray_cluster_name.clone().unwrap_or_default();
    let cluster = if cluster_name.is_empty() {
        None
    } else {
        clusters.get_opt(&cluster_name).await?
    };
    let submitter = jobs.get_opt(&name).await?;
    let target = cluster.as_ref().map(|c| dashboard_target(&ctx, c, &old));
    let running = old.job_deployment_status == Some(JobDeploymentStatus::Running);
    let job_id = old.job_id.clone().unwrap_or_default();
    let dashboard = match (&target, running && !job_id.is_empty()) {
        (Some(target), true) => ctx.dashboard.job_info(target, &job_id).await,
        _ => DashboardObservation::NotQueried,
    };
    let observed = RayJobObservation {
        cluster: cluster.as_ref(),
        submitter: submitter.as_ref().map(SubmitterObservation::from_job),
        dashboard,
        now: Timestamp::now(),
    };
    let plan = {
        let mut suffixes = ctx.suffixes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        plan_ray_job(&job, &observed, &ctx.config.plan, &mut *suffixes)?
    };
    let pp = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    let mut with_status = (*job).clone();
    with_status.status = Some(plan.status.clone());
    for action in &plan.actions {
        debug!(rayjob = %name, ?action, "rayjob action");
        match action {
            RayJobAction::AddFinalizer | RayJobAction::RemoveFinalizer => {
                let mut finalizers: Vec<String> = job.finalizers().to_vec();
                if matches!(action, RayJobAction::AddFinalizer) {
                    finalizers.push(RAY_JOB_STOP_JOB_FINALIZER.to_owned());
                } else {
                    finalizers.retain(|f| f != RAY_JOB_STOP_JOB_FINALIZER);
                }
                let patch = json!({ "metadata": { "finalizers": finalizers } });
                match rayjobs
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 => return Ok(Action::await_change()),
                    Err(e) => return Err(e.into()),
                }
            }
            RayJobAction::StopJob { job_id, .. } => {
                if let Some(target) = &target
                    && let Err(e) = ctx.dashboard.stop_job(target, job_id).await
                {
                    warn!(rayjob = %name, error = %e, "failed to stop the Ray job");
                }
            }
            RayJobAction::ValidationFailedEvent { reason, message } => {
                warn!(rayjob = %name, %reason, %message, "invalid RayJob");
            }
            RayJobAction::CreateRayCluster { name: cluster } => {
                let object = build_ray_cluster_for_job(&job, cluster, &ctx.config.podgen)?;
                match clusters.create(&pp, &object).await {
                    Ok(_) => info!(rayjob = %name, "Created RayCluster {ns}/{cluster}"),
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(e) => return Err(e.into()),
                }
            }
            RayJobAction::DeleteRayCluster { name: cluster } => {
                match clusters.delete(cluster, &DeleteParams::background()).await {
                    Ok(_) => info!(rayjob = %name, "Deleted cluster {ns}/{cluster}"),
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => return Err(e.into()),
                }
            }
            RayJobAction::CreateSubmitterJob => {
                let Some(cluster) = cluster.as_ref() else {
                    continue;
                };
                let object = build_submitter_job(&with_status, cluster, &ctx.config.podgen)?;
                match jobs.create(&pp, &object).await {
                    Ok(_) => info!(rayjob = %name, "Created Kubernetes Job {ns}/{name}"),
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(e) => return Err(e.into()),
                }
            }
            RayJobAction::DeleteSubmitterJob => match jobs.delete(&name, &DeleteParams::background()).await {
                Ok(_) => info!(rayjob = %name, "Deleted submitter K8s Job {ns}/{name}"),
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            },
            RayJobAction::DeleteSelf => match rayjobs.delete(&name, &DeleteParams::background()).await {
                Ok(_) => return Ok(Action::await_change()),
                Err(kube::Error::Api(e)) if e.code == 404 => return Ok(Action::await_change()),
                Err(e) => return Err(e.into()),
            },
            RayJobAction::EnsureHeadService { .. }
            | RayJobAction::SuspendWorkerGroups { .. }
            | RayJobAction::SubmitJob { .. }
            | RayJobAction::CleanupBatchScheduler => {}
        }
    }
    if plan.persist {
        let patch = status_patch(&old, &plan.status);
        match rayjobs
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(Action::await_change()),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(plan.requeue.map_or_else(Action::await_change, Action::requeue))
}

fn dashboard_target(ctx: &RayJobContext, cluster: &RayCluster, status: &RayJobStatus) -> DashboardTarget {
    if ctx.config.use_kubernetes_proxy {
        let service = cluster
            .status
            .as_ref()
            .and_then(|s| s.head.as_ref())
            .and_then(|h| h.service_name.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| ray_podgen::cluster::head_service_name(cluster));
        DashboardTarget::Proxy {
            namespace: cluster.namespace().unwrap_or_default(),
            service,
        }
    } else {
        DashboardTarget::Direct {
            address: status.dashboard_url.clone().unwrap_or_default(),
        }
    }
}
