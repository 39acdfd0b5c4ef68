//! The RayService executor and kube-runtime controller: one pass performs KubeRay's reconcile
//! steps in order (job-service spec §2.4), asking [`super::plan`] for every decision and doing the
//! I/O in between: dangling-cluster cleanup, finalizer, validation, suspension, initializing
//! timeout, cluster create / in-place update, head pod serve labels, serve config submission and status reads,
//! the head and serve services, and the status.
//!
//! The controller owns RayClusters and Services (watched only when labelled
//! `ray.io/originated-from-crd=RayService`); pod readiness and serve progress are picked up by the
//! 2 s requeue.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use ray_api::constants::{
    CRD_KIND_RAY_CLUSTER, CRD_KIND_RAY_SERVICE, NODE_TYPE_HEAD, RAY_CLUSTER_LABEL, RAY_CLUSTER_SERVING_SERVICE_LABEL,
    RAY_NODE_TYPE_LABEL, RAY_ORIGINATED_FROM_CR_NAME_LABEL, RAY_ORIGINATED_FROM_CRD_LABEL, RAY_SERVICE_FINALIZER,
    SERVING_PORT_NAME,
};
use ray_api::validation::{ValidationOptions, validate_ray_service_metadata, validate_ray_service_spec};
use ray_api::{AppStatus, RayCluster, RayService, RayServiceStatuses};
use ray_podgen::PodGenConfig;
use ray_podgen::cluster::{controller_reference, head_service_name};
use ray_podgen::env_names::RAY_AUTH_TOKEN_SECRET_KEY;
use ray_podgen::names::serve_service_name;
use ray_podgen::random::SeededSuffix;
use ray_podgen::rayservice::{build_ray_cluster_for_service, ray_cluster_name_for_service};
use ray_podgen::service::{ServeServiceOwner, build_rayservice_head_service, build_serve_service, service_ports};
use serde_json::json;
use tracing::{debug, info, warn};

use super::gateway::{Gateway, HTTPRoute, RouteBackend, build_gateway, build_http_route, route_weights};
use super::incremental::{
    IncrementalError, Role, incremental_enabled, reconcile_rollback_state, rolling_back, serve_body_with_capacity,
    set_target_capacity, target_capacity_step, traffic_weights, upgrade_options,
};
use super::plan::IncrementalInputs;
use super::plan::{
    ClusterAction, DEFAULT_REQUEUE, FinalizerStep, POD_READY_CONDITION, RayServicePlanConfig,
    SERVE_STATUS_FAILED_PREFIX, SUBMIT_FAILED_PREFIX, ServiceSync, StatusInputs, SuspendStep, application_statuses,
    applications_ready, auth_secret_name, calculate_status, check_initializing_timeout, condition,
    dangling_clusters_to_delete, event_reason, finalizer_step, head_serve_label, is_initializing_timeout,
    managed_by_operator, need_submit_serve_config, plan_cluster, plan_suspend, serve_config_json,
    should_prepare_new_cluster, status_changed, suspend_progress, sync_service, updated_cluster,
    validation_failed_status,
};
use super::serve_api::{ProxyHealthTarget, ServeClient, ServeTarget};
use crate::cluster_feed::ClusterFeed;
use crate::conditions::{self, HEAD_POD_READY, TRUE};
use crate::events::{EventSpec, action};
use crate::finalizers::{FinalizerGuard, add_finalizer, remove_finalizer};
use crate::kube_errors::{is_conflict, is_not_found, ok_if_not_found};
use crate::rayjob::dashboard::DashboardTarget;
use crate::rayjob::plan::dashboard_url;
use crate::runtime_util::{custom_resource_changes, note_failed_passes, owned_changes, publish_event, run_per_scope};
use crate::status_writer::{StatusWrite, StatusWriteError, write_status};

/// Create parameters carrying this controller's field manager.
fn create_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}

/// Field manager of the RayService controller's writes.
pub const FIELD_MANAGER: &str = "kuberay-operator";
/// Name the controller's events are reported under.
pub const EVENT_REPORTER: &str = "rayservice-controller";
/// Most RayServices whose submitted serve configs are remembered (KubeRay's LRU size).
pub const SERVE_CONFIG_CACHE_CAPACITY: usize = 1000;
/// Requeue after a status write conflict.
const CONFLICT_REQUEUE: Duration = Duration::from_millis(200);

/// Why a RayService reconcile failed (requeue after [`DEFAULT_REQUEUE`]).
#[derive(Debug, thiserror::Error)]
pub enum RayServiceError {
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// Building a cluster or service failed.
    #[error("{0}")]
    PodGen(#[from] ray_podgen::PodGenError),
    /// Reading the serve application statuses failed.
    #[error("{SERVE_STATUS_FAILED_PREFIX}{0}")]
    ServeDetails(super::serve_api::ServeApiError),
    /// Submitting the serve config failed.
    #[error("{SUBMIT_FAILED_PREFIX}{0}")]
    SubmitServeConfig(String),
    /// The cluster has no head pod (yet).
    #[error("found 0 head. cluster name {cluster}, namespace {namespace}")]
    NoHeadPod {
        /// Cluster name.
        cluster: String,
        /// Namespace.
        namespace: String,
    },
    /// The token-auth Secret could not be read.
    #[error("failed to get auth secret {namespace}/{name}: {source}")]
    AuthSecret {
        /// Namespace.
        namespace: String,
        /// Secret name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// The token-auth Secret has no `auth_token`.
    #[error("auth token key '\"{RAY_AUTH_TOKEN_SECRET_KEY}\"' not found in secret {namespace}/{name}")]
    AuthTokenMissing {
        /// Namespace.
        namespace: String,
        /// Secret name.
        name: String,
    },
    /// The cluster's head service has no dashboard port.
    #[error("{0}")]
    DashboardUrl(#[from] crate::rayjob::RayJobPlanError),
    /// The status could not be computed.
    #[error("{0}")]
    Status(#[from] super::plan::StatusError),
    /// The RayService has no namespace.
    #[error("RayService {0} has no namespace")]
    NoNamespace(String),
    /// An incremental-upgrade step failed.
    #[error("{0}")]
    Incremental(#[from] IncrementalError),
    /// The status could not be serialised.
    #[error("status serialisation failed: {0}")]
    Serialize(#[from] serde_json::Error),
}

impl From<StatusWriteError> for RayServiceError {
    fn from(error: StatusWriteError) -> Self {
        match error {
            StatusWriteError::Api(e) => Self::Kube(e),
            StatusWriteError::Serialize(e) => Self::Serialize(e),
        }
    }
}

/// Settings of [`run`].
#[derive(Clone, Debug)]
pub struct RayServiceControllerConfig {
    /// Plan settings.
    pub plan: RayServicePlanConfig,
    /// Object generation settings.
    pub podgen: PodGenConfig,
    /// Validation switches.
    pub validation: ValidationOptions,
    /// `--use-kubernetes-proxy`: reach dashboards and serve proxies through the API server.
    pub use_kubernetes_proxy: bool,
    /// Namespaces to watch; empty watches all.
    pub watch_namespaces: Vec<String>,
    /// Maximum concurrent reconciles (0 = unbounded).
    pub concurrency: u16,
    /// The RayCluster changes the RayCluster controller's watch publishes (one RayCluster watch for all).
    pub cluster_feed: ClusterFeed,
}

type ServiceKey = (String, String);

/// Shared state of the reconciles.
pub struct RayServiceContext {
    client: Client,
    config: RayServiceControllerConfig,
    serve: ServeClient,
    recorder: Recorder,
    suffixes: Mutex<SeededSuffix>,
    /// `<ns>/<rs>` → cluster → the last serveConfigV2 submitted to it.
    serve_configs: Mutex<HashMap<ServiceKey, BTreeMap<String, String>>>,
    /// `<ns>/<rs>` → dangling cluster → when to delete it.
    deletions: Mutex<HashMap<ServiceKey, BTreeMap<String, Timestamp>>>,
}

impl RayServiceContext {
    fn cached_config(&self, key: &ServiceKey, cluster: &str) -> String {
        let cache = self.serve_configs.lock().unwrap_or_else(PoisonError::into_inner);
        cache.get(key).and_then(|m| m.get(cluster)).cloned().unwrap_or_default()
    }

    fn cache_config(&self, key: &ServiceKey, cluster: &str, config: &str) {
        let mut cache = self.serve_configs.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= SERVE_CONFIG_CACHE_CAPACITY && !cache.contains_key(key) {
            // Over capacity: forget an arbitrary service; its next pass resubmits once.
            if let Some(victim) = cache.keys().next().cloned() {
                cache.remove(&victim);
            }
        }
        cache
            .entry(key.clone())
            .or_default()
            .insert(cluster.to_owned(), config.to_owned());
    }

    /// Step 2: drop cache entries of clusters that are neither active nor pending.
    fn prune_configs(&self, key: &ServiceKey, keep: &[Option<&str>]) {
        let mut cache = self.serve_configs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(clusters) = cache.get_mut(key) {
            clusters.retain(|name, _| keep.contains(&Some(name.as_str())));
        }
    }

    fn forget(&self, key: &ServiceKey) {
        self.serve_configs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
        self.deletions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    async fn publish(
        &self,
        service: &RayService,
        warning: bool,
        reason: &'static str,
        action: &'static str,
        note: String,
    ) {
        let event = if warning {
            warn!(rayservice = %service.name_any(), reason, %note, "event");
            EventSpec::warning(reason, action, note)
        } else {
            info!(rayservice = %service.name_any(), reason, %note, "event");
            EventSpec::normal(reason, action, note)
        };
        let regarding = service.object_ref(&());
        publish_event(&self.recorder, &regarding, event).await;
    }
}

/// Run the RayService controller until `shutdown` resolves.
pub async fn run(
    client: Client,
    config: RayServiceControllerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let seed =
        u64::try_from(Timestamp::now().as_nanosecond()).unwrap_or(0) ^ u64::from(std::process::id()).rotate_left(17);
    let reporter = Reporter {
        controller: EVENT_REPORTER.to_owned(),
        instance: None,
    };
    let ctx = Arc::new(RayServiceContext {
        client: client.clone(),
        serve: ServeClient::new(client.clone()),
        recorder: Recorder::new(client.clone(), reporter),
        config: config.clone(),
        suffixes: Mutex::new(SeededSuffix::new(seed)),
        serve_configs: Mutex::new(HashMap::new()),
        deletions: Mutex::new(HashMap::new()),
    });
    let owned_selector = format!("{RAY_ORIGINATED_FROM_CRD_LABEL}={CRD_KIND_RAY_SERVICE}");
    run_per_scope(&config.watch_namespaces, shutdown, |namespace, stop| {
        let ns = namespace.as_deref();
        info!(namespace = ns.unwrap_or("<all>"), "starting RayService controller");
        let owned = watcher::Config::default().labels(&owned_selector);
        // Like KubeRay's predicates, only spec (generation), label, annotation and deletion
        // changes trigger a pass; status writes do not (the 2 s requeue keeps passes coming).
        let (reader, writer) = reflector::store();
        let rayservices = custom_resource_changes::<RayService>(client.clone(), ns, writer)
            .predicate_filter(trigger_hash, Default::default());
        Controller::for_stream(rayservices, reader)
            .reconcile_on(config.cluster_feed.owners_of_kind::<RayService>(namespace.clone()))
            .owns_stream(owned_changes::<Service>(client.clone(), ns, owned))
            .with_config(kube::runtime::controller::Config::default().concurrency(config.concurrency))
            .graceful_shutdown_on(stop)
            .run(reconcile, error_policy, Arc::clone(&ctx))
            .for_each(note_failed_passes("rayservice"))
    })
    .await;
}

/// What a RayService change must touch to trigger a pass: generation, labels, annotations or
/// the deletion mark.
fn trigger_hash(service: &RayService) -> Option<u64> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    service.metadata.generation.hash(&mut hasher);
    service.metadata.labels.hash(&mut hasher);
    service.metadata.annotations.hash(&mut hasher);
    service.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    Some(hasher.finish())
}

fn error_policy(service: Arc<RayService>, error: &RayServiceError, _ctx: Arc<RayServiceContext>) -> Action {
    warn!(rayservice = %service.name_any(), error = %error, "rayservice reconcile failed");
    Action::requeue(DEFAULT_REQUEUE)
}

/// Results of the serve step for one cluster.
struct ServeOutcome {
    apps: BTreeMap<String, AppStatus>,
    ready: bool,
}

/// One pass over a RayService.
struct Pass<'a> {
    ctx: &'a RayServiceContext,
    service: &'a RayService,
    name: String,
    namespace: String,
    key: ServiceKey,
    clusters: Api<RayCluster>,
    services: Api<Service>,
    pods: Api<Pod>,
}

#[tracing::instrument(skip_all, fields(rayservice = %service.name_any(), namespace = service.namespace().unwrap_or_default()))]
async fn reconcile(service: Arc<RayService>, ctx: Arc<RayServiceContext>) -> Result<Action, RayServiceError> {
    if !managed_by_operator(&service) {
        return Ok(Action::await_change());
    }
    let name = service.name_any();
    let namespace = service
        .namespace()
        .ok_or_else(|| RayServiceError::NoNamespace(name.clone()))?;
    let client = ctx.client.clone();
    let pass = Pass {
        ctx: &ctx,
        service: &service,
        key: (namespace.clone(), name.clone()),
        clusters: Api::namespaced(client.clone(), &namespace),
        services: Api::namespaced(client.clone(), &namespace),
        pods: Api::namespaced(client, &namespace),
        name,
        namespace,
    };
    pass.run().await
}

impl Pass<'_> {
    fn rayservices(&self) -> Api<RayService> {
        Api::namespaced(self.ctx.client.clone(), &self.namespace)
    }

    async fn run(&self) -> Result<Action, RayServiceError> {
        let service = self.service;
        let now = Timestamp::now();
        let active_name = super::plan::active_cluster_name(service).map(str::to_owned);
        let pending_name = super::plan::pending_cluster_name(service).map(str::to_owned);
        self.ctx
            .prune_configs(&self.key, &[active_name.as_deref(), pending_name.as_deref()]);

        let remaining = self.clean_up_dangling_clusters(now).await?;

        match finalizer_step(service, remaining) {
            FinalizerStep::Proceed => {}
            FinalizerStep::WaitForClusters => return Ok(Action::requeue(DEFAULT_REQUEUE)),
            FinalizerStep::Remove => {
                self.set_finalizer(false).await?;
                self.ctx.forget(&self.key);
                return Ok(Action::await_change());
            }
            FinalizerStep::Add => {
                self.set_finalizer(true).await?;
                return Ok(Action::requeue(DEFAULT_REQUEUE));
            }
        }

        if let Some(action) = self.validate(now).await? {
            return Ok(action);
        }

        match plan_suspend(service, &Time(now)) {
            SuspendStep::Proceed => {}
            SuspendStep::Stop(None) => return Ok(Action::await_change()),
            SuspendStep::Stop(Some(status)) => return self.write_status(*status, now).await,
            SuspendStep::DeleteOwned => {
                let left = self.delete_owned().await?;
                self.ctx.forget(&self.key);
                return self
                    .write_status(suspend_progress(service, left, &Time(now)), now)
                    .await;
            }
        }

        if is_initializing_timeout(service) {
            // Terminal: only the cleanup above still has work while clusters remain.
            return Ok(if remaining > 0 {
                Action::requeue(DEFAULT_REQUEUE)
            } else {
                Action::await_change()
            });
        }
        if let Some(timeout) = check_initializing_timeout(service, now) {
            self.ctx
                .publish(
                    service,
                    true,
                    event_reason::RAY_SERVICE_INITIALIZING_TIMEOUT,
                    action::UPDATE,
                    timeout.event,
                )
                .await;
            return self.write_status(timeout.status, now).await;
        }

        let (active, pending) = self
            .reconcile_clusters(active_name.as_deref(), pending_name.as_deref())
            .await?;
        let incremental = incremental_enabled(service, &self.ctx.config.plan);
        let mut status = service.status.clone().unwrap_or_default();
        if incremental {
            // Step 9: rollback detection.
            reconcile_rollback_state(&mut status, service, active.as_ref(), pending.as_ref(), &Time(now));
        }

        for cluster in [active.as_ref(), pending.as_ref()].into_iter().flatten() {
            self.update_head_pod_serve_label(cluster).await?;
        }

        // Like KubeRay, each cluster's application statuses are this pass's reading, or none when
        // its serve step did not run (the active cluster's stay empty during a blue/green upgrade).
        let mut pending_ready = false;
        let mut pending_apps = BTreeMap::new();
        if let Some(cluster) = pending.as_ref() {
            let outcome = self
                .reconcile_serve(cluster, Role::Pending, &mut status, incremental)
                .await?;
            pending_ready = outcome.ready;
            pending_apps = outcome.apps;
        }
        let mut active_ready = false;
        let mut active_apps = BTreeMap::new();
        if let Some(cluster) = active.as_ref()
            && ((pending.is_none()
                && !should_prepare_new_cluster(service, Some(cluster), None, false, &self.ctx.config.plan))
                || (incremental && pending.is_some()))
        {
            let outcome = self
                .reconcile_serve(cluster, Role::Active, &mut status, incremental)
                .await?;
            active_ready = outcome.ready;
            active_apps = outcome.apps;
        }
        status
            .active_service_status
            .get_or_insert_with(Default::default)
            .application_statuses = Some(active_apps).filter(|a| !a.is_empty());
        status
            .pending_service_status
            .get_or_insert_with(Default::default)
            .application_statuses = Some(pending_apps).filter(|a| !a.is_empty());

        // Step 12: per-cluster serve services, Gateway and HTTPRoute.
        let route = if incremental {
            self.reconcile_gateway_objects(active.as_ref(), pending.as_ref(), &status, pending_ready, now)
                .await?
        } else {
            None
        };

        // Step 13: during an incremental upgrade the RayService's services stay on the active
        // cluster (traffic moves through the HTTPRoute instead).
        let upgrading_incrementally = incremental
            && conditions::is_true(
                status.conditions.as_deref().unwrap_or_default(),
                condition::UPGRADE_IN_PROGRESS,
            );
        let target = if pending_ready && !upgrading_incrementally {
            pending.as_ref()
        } else if pending_ready || active_ready {
            active.as_ref().or(pending.as_ref())
        } else {
            None
        };
        let services_cluster = match target {
            Some(cluster) => Some(self.reconcile_services(cluster).await?),
            None => None,
        };
        let num_serve_endpoints = if incremental {
            let mut total = 0;
            let names = match active.as_ref() {
                Some(cluster) => vec![serve_service_name(&cluster.name_any())],
                None => vec![self.serve_service_name()],
            };
            for name in names
                .into_iter()
                .chain(pending.as_ref().map(|c| serve_service_name(&c.name_any())))
            {
                total += self.count_serve_endpoints(&name).await?;
            }
            total
        } else {
            self.count_serve_endpoints(&self.serve_service_name()).await?
        };
        let new_cluster_name = {
            let mut suffixes = self.ctx.suffixes.lock().unwrap_or_else(PoisonError::into_inner);
            ray_cluster_name_for_service(service, &mut *suffixes)
        };
        let active_name_now = super::plan::active_cluster_name(service);
        let pending_name_now = super::plan::pending_cluster_name(service);
        let inputs = StatusInputs {
            active: active.as_ref(),
            pending: pending.as_ref(),
            services_cluster,
            num_serve_endpoints,
            new_cluster_name,
            now: Time(now),
            incremental: incremental.then(|| IncrementalInputs {
                route_weights: route
                    .as_ref()
                    .map_or((None, None), |r| route_weights(r, active_name_now, pending_name_now)),
                pending_healthy: pending.as_ref().map(|_| pending_ready),
            }),
        };
        let status = calculate_status(service, status, &inputs, &self.ctx.config.plan)?;
        self.write_status(status, now).await
    }

    /// Writes `status` when it differs from the stored one (with `lastUpdateTime = now`).
    async fn write_status(&self, mut status: RayServiceStatuses, now: Timestamp) -> Result<Action, RayServiceError> {
        let old = self.service.status.clone().unwrap_or_default();
        if !status_changed(&old, &status) {
            return Ok(Action::requeue(DEFAULT_REQUEUE));
        }
        status.last_update_time = Some(Time(now));
        match write_status(&self.rayservices(), self.service, &status, StatusWrite::Replace).await {
            Ok(()) => Ok(Action::requeue(DEFAULT_REQUEUE)),
            Err(StatusWriteError::Api(e)) if is_conflict(&e) => Ok(Action::requeue(CONFLICT_REQUEUE)),
            Err(StatusWriteError::Api(e)) if is_not_found(&e) => Ok(Action::await_change()),
            Err(e) => Err(e.into()),
        }
    }

    /// Adds (`present`) or removes `ray.io/rayservice-finalizer`; a RayService already gone is fine.
    async fn set_finalizer(&self, present: bool) -> Result<(), RayServiceError> {
        let api = self.rayservices();
        let written = if present {
            add_finalizer(&api, self.service, RAY_SERVICE_FINALIZER, FinalizerGuard::Unguarded).await
        } else {
            remove_finalizer(&api, self.service, RAY_SERVICE_FINALIZER, FinalizerGuard::Unguarded).await
        };
        ok_if_not_found(written)?;
        Ok(())
    }

    /// Step 3: schedules and performs the deletion of clusters that are neither active nor
    /// pending. Returns how many clusters this RayService still owns.
    async fn clean_up_dangling_clusters(&self, now: Timestamp) -> Result<usize, RayServiceError> {
        let selector = self.owned_selector();
        let owned: Vec<String> = self
            .clusters
            .list_metadata(&ListParams::default().labels(&selector))
            .await?
            .items
            .into_iter()
            .map(|c| c.name_any())
            .collect();
        let to_delete = {
            let mut deletions = self.ctx.deletions.lock().unwrap_or_else(PoisonError::into_inner);
            let schedule = deletions.entry(self.key.clone()).or_default();
            dangling_clusters_to_delete(self.service, &owned, schedule, now)
        };
        for cluster in to_delete {
            match self.clusters.delete(&cluster, &DeleteParams::background()).await {
                Ok(_) => {
                    self.ctx
                        .publish(
                            self.service,
                            false,
                            event_reason::DELETED_RAY_CLUSTER,
                            action::DELETE,
                            format!("Deleted the RayCluster {}/{cluster}", self.namespace),
                        )
                        .await;
                }
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    self.ctx
                        .publish(
                            self.service,
                            true,
                            event_reason::FAILED_TO_DELETE_RAY_CLUSTER,
                            action::DELETE,
                            format!("Failed to delete the RayCluster {}/{cluster}: {e}", self.namespace),
                        )
                        .await;
                    return Err(e.into());
                }
            }
        }
        Ok(owned.len())
    }

    /// Suspension: deletes every RayCluster and Service labelled for this RayService; returns how
    /// many were still there.
    async fn delete_owned(&self) -> Result<usize, RayServiceError> {
        let selector = self.owned_selector();
        let params = ListParams::default().labels(&selector);
        let clusters = self.clusters.list_metadata(&params).await?.items;
        let services = self.services.list_metadata(&params).await?.items;
        let mut left = clusters.len() + services.len();
        if incremental_enabled(self.service, &self.ctx.config.plan) {
            left += self
                .delete_if_present::<HTTPRoute>(&ray_podgen::names::http_route_name(&self.name))
                .await?;
            left += self
                .delete_if_present::<Gateway>(&ray_podgen::names::gateway_name(&self.name))
                .await?;
        }
        for cluster in clusters.iter().filter(|c| c.metadata.deletion_timestamp.is_none()) {
            ok_if_not_found(
                self.clusters
                    .delete(&cluster.name_any(), &DeleteParams::background())
                    .await,
            )?;
        }
        for service in services.iter().filter(|s| s.metadata.deletion_timestamp.is_none()) {
            ok_if_not_found(
                self.services
                    .delete(&service.name_any(), &DeleteParams::background())
                    .await,
            )?;
        }
        Ok(left)
    }

    /// The RayService's serve service name (custom `spec.serveService` name or `<rs>-serve-svc`).
    fn serve_service_name(&self) -> String {
        self.service
            .spec
            .serve_service
            .as_ref()
            .and_then(|s| s.object.metadata.name.clone())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| serve_service_name(&self.name))
    }

    fn owned_selector(&self) -> String {
        format!(
            "{RAY_ORIGINATED_FROM_CR_NAME_LABEL}={},{RAY_ORIGINATED_FROM_CRD_LABEL}={CRD_KIND_RAY_SERVICE}",
            self.name
        )
    }

    /// Deletes the named object if it exists; returns 1 when it was still there.
    async fn delete_if_present<K>(&self, name: &str) -> Result<usize, RayServiceError>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned,
    {
        let api: Api<K> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        let Some(existing) = api.get_opt(name).await? else {
            return Ok(0);
        };
        if existing.meta().deletion_timestamp.is_none() {
            ok_if_not_found(api.delete(name, &DeleteParams::background()).await)?;
        }
        Ok(1)
    }

    /// Step 5: on a validation failure writes `Ready=False/ValidationFailed` and stops.
    async fn validate(&self, now: Timestamp) -> Result<Option<Action>, RayServiceError> {
        let failure = validate_ray_service_metadata(&self.service.metadata)
            .map_err(|e| (event_reason::INVALID_RAY_SERVICE_METADATA, e.message))
            .and_then(|()| {
                validate_ray_service_spec(self.service, &self.ctx.config.validation)
                    .map_err(|e| (event_reason::INVALID_RAY_SERVICE_SPEC, e.message))
            });
        let Err((reason, message)) = failure else {
            return Ok(None);
        };
        self.ctx
            .publish(
                self.service,
                true,
                reason,
                action::VALIDATE,
                format!("{}/{}: {message}", self.namespace, self.name),
            )
            .await;
        let status = validation_failed_status(self.service, &message, &Time(now));
        self.write_status(status, now).await?;
        Ok(Some(Action::await_change()))
    }

    fn goal_cluster(&self, cluster_name: &str) -> Result<RayCluster, RayServiceError> {
        // The pending cluster of an incremental upgrade gets its worker replicas cleared.
        Ok(build_ray_cluster_for_service(
            self.service,
            cluster_name,
            &self.ctx.config.podgen,
        )?)
    }

    /// Step 8: `reconcileRayCluster`.
    async fn reconcile_clusters(
        &self,
        active_name: Option<&str>,
        pending_name: Option<&str>,
    ) -> Result<(Option<RayCluster>, Option<RayCluster>), RayServiceError> {
        let mut active = match active_name {
            Some(n) => self.clusters.get_opt(n).await?,
            None => None,
        };
        let mut pending = match pending_name {
            Some(n) => self.clusters.get_opt(n).await?,
            None => None,
        };
        match plan_cluster(self.service, active.as_ref(), pending.as_ref()) {
            ClusterAction::None => {}
            ClusterAction::CreatePending { name } => {
                let object = self.goal_cluster(&name)?;
                let pp = create_params();
                match self.clusters.create(&pp, &object).await {
                    Ok(created) => {
                        self.ctx
                            .publish(
                                self.service,
                                false,
                                event_reason::CREATED_RAY_CLUSTER,
                                action::CREATE,
                                format!("Created the RayCluster {}/{name}", self.namespace),
                            )
                            .await;
                        pending = Some(created);
                    }
                    Err(e) if is_conflict(&e) => pending = self.clusters.get_opt(&name).await?,
                    Err(e) => {
                        self.ctx
                            .publish(
                                self.service,
                                true,
                                event_reason::FAILED_TO_CREATE_RAY_CLUSTER,
                                action::CREATE,
                                format!("Failed to create the RayCluster {}/{name}: {e}", self.namespace),
                            )
                            .await;
                        return Err(e.into());
                    }
                }
            }
            ClusterAction::UpdateActive => {
                if let Some(existing) = active.take() {
                    active = Some(self.update_cluster(existing, "active").await?);
                }
            }
            ClusterAction::UpdatePending => {
                if let Some(existing) = pending.take() {
                    pending = Some(self.update_cluster(existing, "pending").await?);
                }
            }
        }
        Ok((active, pending))
    }

    async fn update_cluster(&self, existing: RayCluster, role: &str) -> Result<RayCluster, RayServiceError> {
        let name = existing.name_any();
        let goal = self.goal_cluster(&name)?;
        let updated = updated_cluster(&existing, goal);
        let pp = create_params();
        match self.clusters.replace(&name, &pp, &updated).await {
            Ok(stored) => {
                self.ctx
                    .publish(
                        self.service,
                        false,
                        event_reason::UPDATED_RAY_CLUSTER,
                        action::UPDATE,
                        format!("Updated the {role} RayCluster {}/{name}", self.namespace),
                    )
                    .await;
                Ok(stored)
            }
            Err(e) => {
                self.ctx
                    .publish(
                        self.service,
                        true,
                        event_reason::FAILED_TO_UPDATE_RAY_CLUSTER,
                        action::UPDATE,
                        format!("Failed to update the {role} RayCluster {}/{name}: {e}", self.namespace),
                    )
                    .await;
                Err(e.into())
            }
        }
    }

    async fn head_pod(&self, cluster: &RayCluster) -> Result<Option<Pod>, RayServiceError> {
        let selector = format!(
            "{RAY_CLUSTER_LABEL}={},{RAY_NODE_TYPE_LABEL}={NODE_TYPE_HEAD}",
            cluster.name_any()
        );
        let pods = self.pods.list(&ListParams::default().labels(&selector)).await?;
        Ok(pods.items.into_iter().find(|p| p.metadata.deletion_timestamp.is_none()))
    }

    /// Step 10: the head pod's `ray.io/serve` label follows its serve proxy's health.
    async fn update_head_pod_serve_label(&self, cluster: &RayCluster) -> Result<(), RayServiceError> {
        let Some(pod) = self.head_pod(cluster).await? else {
            return Err(RayServiceError::NoHeadPod {
                cluster: cluster.name_any(),
                namespace: self.namespace.clone(),
            });
        };
        let excluded = self.service.spec.exclude_head_pod_from_serve_svc.unwrap_or(false);
        let healthy = !excluded && self.proxy_healthy(cluster, &pod).await;
        let label = head_serve_label(self.service, healthy);
        let current = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(RAY_CLUSTER_SERVING_SERVICE_LABEL))
            .map(String::as_str);
        if current == Some(label) {
            return Ok(());
        }
        let pod_name = pod.name_any();
        let patch = json!({ "metadata": { "labels": { RAY_CLUSTER_SERVING_SERVICE_LABEL: label } } });
        match self
            .pods
            .patch(&pod_name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                self.ctx
                    .publish(
                        self.service,
                        false,
                        event_reason::UPDATED_HEAD_POD_SERVE_LABEL,
                        action::UPDATE,
                        format!(
                            "Updated the serve label to \"{label}\" for the Head Pod {}/{pod_name}",
                            self.namespace
                        ),
                    )
                    .await;
                Ok(())
            }
            Err(e) => {
                self.ctx
                    .publish(
                        self.service,
                        true,
                        event_reason::FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL,
                        action::UPDATE,
                        format!(
                            "Failed to update the serve label to \"{label}\" for the Head Pod {}/{pod_name}: {e}",
                            self.namespace
                        ),
                    )
                    .await;
                Err(e.into())
            }
        }
    }

    async fn proxy_healthy(&self, cluster: &RayCluster, pod: &Pod) -> bool {
        let target = if self.ctx.config.use_kubernetes_proxy {
            ProxyHealthTarget::Proxy {
                namespace: self.namespace.clone(),
                service: head_service_name(cluster),
            }
        } else {
            let Some(pod_ip) = pod.status.as_ref().and_then(|s| s.pod_ip.clone()) else {
                return false;
            };
            let port = service_ports(cluster)
                .get(SERVING_PORT_NAME)
                .copied()
                .unwrap_or(ray_api::constants::DEFAULT_SERVING_PORT);
            ProxyHealthTarget::Direct { pod_ip, port }
        };
        self.ctx.serve.proxy_healthy(&target).await
    }

    /// Whether the cluster's head pod is running and ready (`HeadPodReady` with the status
    /// conditions gate, else the pod's own `Ready` condition).
    async fn head_ready(&self, cluster: &RayCluster) -> Result<bool, RayServiceError> {
        if self.ctx.config.podgen.feature_gates.ray_cluster_status_conditions {
            return Ok(conditions::is_true(
                conditions::cluster_conditions(cluster),
                HEAD_POD_READY,
            ));
        }
        Ok(self.head_pod(cluster).await?.is_some_and(|p| pod_ready(&p)))
    }

    /// The dashboard of `cluster` and, with token auth, its token.
    async fn serve_target(&self, cluster: &RayCluster) -> Result<ServeTarget, RayServiceError> {
        let dashboard = self.dashboard_target(cluster)?;
        let Some(name) = auth_secret_name(cluster) else {
            return Ok(ServeTarget { dashboard, token: None });
        };
        let secrets: Api<Secret> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        let secret = secrets.get(&name).await.map_err(|source| RayServiceError::AuthSecret {
            namespace: self.namespace.clone(),
            name: name.clone(),
            source,
        })?;
        let token = secret
            .data
            .as_ref()
            .and_then(|d| d.get(RAY_AUTH_TOKEN_SECRET_KEY))
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
            .ok_or_else(|| RayServiceError::AuthTokenMissing {
                namespace: self.namespace.clone(),
                name,
            })?;
        Ok(ServeTarget {
            dashboard,
            token: Some(token),
        })
    }

    fn dashboard_target(&self, cluster: &RayCluster) -> Result<DashboardTarget, RayServiceError> {
        if self.ctx.config.use_kubernetes_proxy {
            let service = cluster
                .status
                .as_ref()
                .and_then(|s| s.head.as_ref())
                .and_then(|h| h.service_name.clone())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| head_service_name(cluster));
            Ok(DashboardTarget::Proxy {
                namespace: self.namespace.clone(),
                service,
            })
        } else {
            Ok(DashboardTarget::Direct {
                address: dashboard_url(cluster, &self.ctx.config.podgen.cluster_domain)?,
            })
        }
    }

    /// Step 11: `reconcileServe` for one cluster: read application statuses, submit the serve
    /// config when it changed (or nothing runs), report readiness.
    async fn reconcile_serve(
        &self,
        cluster: &RayCluster,
        role: Role,
        status: &mut RayServiceStatuses,
        incremental: bool,
    ) -> Result<ServeOutcome, RayServiceError> {
        let not_ready = ServeOutcome {
            apps: BTreeMap::new(),
            ready: false,
        };
        if !self.head_ready(cluster).await? {
            return Ok(not_ready);
        }
        let cluster_name = cluster.name_any();
        let target = self.serve_target(cluster).await?;
        let details = self
            .ctx
            .serve
            .serve_details(&target)
            .await
            .map_err(RayServiceError::ServeDetails)?;
        let apps = application_statuses(&details);
        let current = self.service.spec.serve_config_v2.clone().unwrap_or_default();
        let cached = self.ctx.cached_config(&self.key, &cluster_name);
        let (submit, why) = need_submit_serve_config(&cached, &current, &apps);
        debug!(rayservice = %self.name, cluster = %cluster_name, submit, reason = why, "serve config check");
        // Incremental: the config carries the cluster's target capacity.
        let capacity = if incremental {
            match role {
                Role::Active => status.active_service_status.as_ref(),
                Role::Pending => status.pending_service_status.as_ref(),
            }
            .and_then(|s| s.target_capacity)
        } else {
            None
        };
        if submit {
            let body = if incremental {
                serve_body_with_capacity(&current, capacity).map_err(|e| e.to_string())
            } else {
                serve_config_json(&current)
            };
            let result = match body {
                Ok(body) => self
                    .ctx
                    .serve
                    .update_deployments(&target, &body)
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => {
                    // An empty config is never cached (so it is resubmitted), as in KubeRay.
                    if !current.is_empty() {
                        self.ctx.cache_config(&self.key, &cluster_name, &current);
                    }
                    self.ctx
                        .publish(
                            self.service,
                            false,
                            event_reason::UPDATED_SERVE_APPLICATIONS,
                            action::UPDATE,
                            format!(
                                "Updated serve applications to the RayCluster {}/{cluster_name}",
                                self.namespace
                            ),
                        )
                        .await;
                }
                Err(e) => {
                    let error = RayServiceError::SubmitServeConfig(e);
                    self.ctx
                        .publish(
                            self.service,
                            true,
                            event_reason::FAILED_TO_UPDATE_SERVE_APPLICATIONS,
                            action::UPDATE,
                            format!(
                                "Failed to update serve applications to the RayCluster {}/{cluster_name}: {error}",
                                self.namespace
                            ),
                        )
                        .await;
                    return Err(error);
                }
            }
        }
        let ready = applications_ready(&apps);
        if incremental && ready {
            self.reconcile_target_capacity(&target, &cluster_name, role, status, &current)
                .await?;
        }
        Ok(ServeOutcome { apps, ready })
    }

    /// `reconcileServeTargetCapacity`: moves this cluster's Serve `target_capacity` by
    /// `maxSurgePercent` when the plan says so, PUTting the config with the new capacity.
    async fn reconcile_target_capacity(
        &self,
        target: &ServeTarget,
        cluster_name: &str,
        role: Role,
        status: &mut RayServiceStatuses,
        serve_config: &str,
    ) -> Result<(), RayServiceError> {
        let options = upgrade_options(self.service)?;
        let Some(goal) = target_capacity_step(status, options, role, rolling_back(status)) else {
            return Ok(());
        };
        let body = serve_body_with_capacity(serve_config, Some(goal))?;
        if let Err(e) = self.ctx.serve.update_deployments(target, &body).await {
            let error = RayServiceError::SubmitServeConfig(e.to_string());
            self.ctx
                .publish(
                    self.service,
                    true,
                    event_reason::FAILED_TO_UPDATE_SERVE_APPLICATIONS,
                    action::UPDATE,
                    format!(
                        "Failed to update serve applications to the RayCluster {}/{cluster_name}: {error}",
                        self.namespace
                    ),
                )
                .await;
            return Err(error);
        }
        info!(rayservice = %self.name, cluster = cluster_name, target_capacity = goal, "updated target_capacity");
        set_target_capacity(status, role, goal);
        Ok(())
    }

    /// Step 12: the per-cluster serve services of both clusters, the Gateway and (with an active
    /// cluster) the HTTPRoute carrying this pass's traffic weights; returns the HTTPRoute.
    async fn reconcile_gateway_objects(
        &self,
        active: Option<&RayCluster>,
        pending: Option<&RayCluster>,
        status: &RayServiceStatuses,
        pending_ready: bool,
        now: Timestamp,
    ) -> Result<Option<HTTPRoute>, RayServiceError> {
        for cluster in [active, pending].into_iter().flatten() {
            self.sync_cluster_serve_service(cluster).await?;
        }
        let gateway = build_gateway(self.service)?;
        self.sync_gateway_api_object(
            gateway,
            |a: &Gateway, b: &Gateway| a.spec == b.spec,
            |mut existing: Gateway, desired: Gateway| {
                existing.spec = desired.spec;
                existing
            },
            (
                "Gateway",
                event_reason::CREATED_GATEWAY,
                event_reason::FAILED_TO_CREATE_GATEWAY,
            ),
            (event_reason::UPDATED_GATEWAY, event_reason::FAILED_TO_UPDATE_GATEWAY),
        )
        .await?;
        let Some(active) = active else {
            return Ok(None);
        };
        let weights = traffic_weights(self.service, status, pending_ready, rolling_back(status), now)?;
        let backend = |cluster: &RayCluster| {
            let port = service_ports(cluster)
                .get(SERVING_PORT_NAME)
                .copied()
                .unwrap_or(ray_api::constants::DEFAULT_SERVING_PORT);
            (cluster.name_any(), port)
        };
        let (active_cluster, active_port) = backend(active);
        let pending_backend = pending.map(backend);
        let route = build_http_route(
            self.service,
            &RouteBackend {
                cluster: &active_cluster,
                port: active_port,
            },
            pending_backend
                .as_ref()
                .map(|(cluster, port)| RouteBackend { cluster, port: *port })
                .as_ref(),
            weights,
        );
        let route = self
            .sync_gateway_api_object(
                route,
                |a: &HTTPRoute, b: &HTTPRoute| a.spec == b.spec,
                |mut existing: HTTPRoute, desired: HTTPRoute| {
                    existing.spec = desired.spec;
                    existing
                },
                (
                    "HTTPRoute",
                    event_reason::CREATED_HTTP_ROUTE,
                    event_reason::FAILED_TO_CREATE_HTTP_ROUTE,
                ),
                (
                    event_reason::UPDATED_HTTP_ROUTE,
                    event_reason::FAILED_TO_UPDATE_HTTP_ROUTE,
                ),
            )
            .await?;
        Ok(Some(route))
    }

    /// `reconcilePerClusterServeService`: `<cluster>-serve-svc`, the RayService's serve service
    /// for one cluster, owned by the cluster (so it goes with it). Created once, never updated.
    async fn sync_cluster_serve_service(&self, cluster: &RayCluster) -> Result<(), RayServiceError> {
        let cluster_name = cluster.name_any();
        let mut desired = build_serve_service(cluster, self.serve_service_owner())?;
        let name = serve_service_name(&cluster_name);
        if self.services.get_opt(&name).await?.is_some() {
            return Ok(());
        }
        desired.metadata.name = Some(name.clone());
        desired.metadata.owner_references = Some(vec![controller_reference(
            CRD_KIND_RAY_CLUSTER,
            &cluster_name,
            cluster.metadata.uid.as_deref(),
        )]);
        let pp = create_params();
        match self.services.create(&pp, &desired).await {
            Ok(_) => {
                self.ctx
                    .publish(
                        self.service,
                        false,
                        event_reason::CREATED_SERVICE,
                        action::CREATE,
                        format!("Created the service {}/{name}", self.namespace),
                    )
                    .await;
                Ok(())
            }
            Err(e) if is_conflict(&e) => Ok(()),
            Err(e) => {
                self.ctx
                    .publish(
                        self.service,
                        true,
                        event_reason::FAILED_TO_CREATE_SERVICE,
                        action::CREATE,
                        format!("Failed to create the service {}/{name}, {e}", self.namespace),
                    )
                    .await;
                Err(e.into())
            }
        }
    }

    /// Creates `desired` (owned by the RayService) or replaces the stored object's spec when it
    /// differs; returns the object as it now stands.
    async fn sync_gateway_api_object<K>(
        &self,
        mut desired: K,
        same: impl Fn(&K, &K) -> bool,
        merge: impl Fn(K, K) -> K,
        (kind, created, create_failed): (&str, &'static str, &'static str),
        (updated, update_failed): (&'static str, &'static str),
    ) -> Result<K, RayServiceError>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::Serialize
            + serde::de::DeserializeOwned,
    {
        let api: Api<K> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        let name = desired.meta().name.clone().unwrap_or_default();
        let pp = create_params();
        let Some(existing) = api.get_opt(&name).await? else {
            desired.meta_mut().owner_references = Some(vec![controller_reference(
                CRD_KIND_RAY_SERVICE,
                &self.name,
                self.service.metadata.uid.as_deref(),
            )]);
            return match api.create(&pp, &desired).await {
                Ok(stored) => {
                    let note = format!("Created {kind} for RayService {}/{name}", self.namespace);
                    self.ctx
                        .publish(self.service, false, created, action::CREATE, note)
                        .await;
                    Ok(stored)
                }
                Err(e) => {
                    let note = format!("Failed to create {kind} for RayService {}/{name}: {e}", self.namespace);
                    self.ctx
                        .publish(self.service, true, create_failed, action::CREATE, note)
                        .await;
                    Err(e.into())
                }
            };
        };
        if same(&existing, &desired) {
            return Ok(existing);
        }
        let mut replacement = merge(existing, desired);
        replacement.meta_mut().managed_fields = None;
        match api.replace(&name, &pp, &replacement).await {
            Ok(stored) => {
                let note = format!("Updated the {kind} {}/{name}", self.namespace);
                self.ctx
                    .publish(self.service, false, updated, action::UPDATE, note)
                    .await;
                Ok(stored)
            }
            Err(e) => {
                let note = format!("Failed to update the {kind} {}/{name}: {e}", self.namespace);
                self.ctx
                    .publish(self.service, true, update_failed, action::UPDATE, note)
                    .await;
                Err(e.into())
            }
        }
    }

    /// This RayService as the owner of a serve service (its name, namespace, `spec.serveService` and the
    /// head group's service type).
    fn serve_service_owner(&self) -> ServeServiceOwner<'_> {
        ServeServiceOwner::RayService {
            name: &self.name,
            namespace: &self.namespace,
            custom: self.service.spec.serve_service.as_ref().map(|s| &s.object),
            service_type: self
                .service
                .spec
                .ray_cluster_config
                .head_group_spec
                .service_type
                .as_deref(),
        }
    }

    /// Step 13: point `<rs>-head-svc` and the serve service at `cluster`; returns the cluster
    /// both select afterwards.
    async fn reconcile_services(&self, cluster: &RayCluster) -> Result<String, RayServiceError> {
        let head = build_rayservice_head_service(&self.name, &self.namespace, cluster, &self.ctx.config.podgen)?;
        let serve = build_serve_service(cluster, self.serve_service_owner())?;
        for desired in [head, serve] {
            self.sync_one_service(desired).await?;
        }
        Ok(cluster.name_any())
    }

    async fn sync_one_service(&self, mut desired: Service) -> Result<(), RayServiceError> {
        let name = desired.metadata.name.clone().unwrap_or_default();
        let existing = self.services.get_opt(&name).await?;
        let pp = create_params();
        desired.metadata.owner_references = Some(vec![controller_reference(
            CRD_KIND_RAY_SERVICE,
            &self.name,
            self.service.metadata.uid.as_deref(),
        )]);
        let note = |verb: &str| format!("{verb} the service {}/{name}", self.namespace);
        match sync_service(desired, existing.as_ref()) {
            ServiceSync::Unchanged(_) => Ok(()),
            ServiceSync::Create(service) => match self.services.create(&pp, &service).await {
                Ok(_) => {
                    let event = note("Created");
                    self.ctx
                        .publish(
                            self.service,
                            false,
                            event_reason::CREATED_SERVICE,
                            action::CREATE,
                            event,
                        )
                        .await;
                    Ok(())
                }
                Err(e) if is_conflict(&e) => Ok(()),
                Err(e) => {
                    let event = format!("{}, {e}", note("Failed to create"));
                    self.ctx
                        .publish(
                            self.service,
                            true,
                            event_reason::FAILED_TO_CREATE_SERVICE,
                            action::CREATE,
                            event,
                        )
                        .await;
                    Err(e.into())
                }
            },
            ServiceSync::Update(service) => match self.services.replace(&name, &pp, &service).await {
                Ok(_) => {
                    let event = note("Updated");
                    self.ctx
                        .publish(
                            self.service,
                            false,
                            event_reason::UPDATED_SERVICE,
                            action::UPDATE,
                            event,
                        )
                        .await;
                    Ok(())
                }
                Err(e) => {
                    let event = format!("{}, {e}", note("Failed to update"));
                    self.ctx
                        .publish(
                            self.service,
                            true,
                            event_reason::FAILED_TO_UPDATE_SERVICE,
                            action::UPDATE,
                            event,
                        )
                        .await;
                    Err(e.into())
                }
            },
        }
    }

    /// `numServeEndpoints`: distinct ready, not terminating pods the serve service selects (what
    /// its EndpointSlices would list as ready).
    async fn count_serve_endpoints(&self, name: &str) -> Result<i32, RayServiceError> {
        let Some(serve) = self.services.get_opt(name).await? else {
            return Ok(0);
        };
        let Some(selector) = serve
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .filter(|s| !s.is_empty())
        else {
            return Ok(0);
        };
        let selector = selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let pods = self.pods.list(&ListParams::default().labels(&selector)).await?;
        let ready = pods
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none() && pod_ready(p))
            .filter_map(|p| p.metadata.uid.as_deref())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        Ok(i32::try_from(ready).unwrap_or(i32::MAX))
    }
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == POD_READY_CONDITION && c.status == TRUE))
}
