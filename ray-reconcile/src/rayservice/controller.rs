//! Wires the RayService controller: a [`FairController`] over RayServices (a pass only for
//! spec, label, annotation and deletion changes), the RayClusters and Services it owns (the owned
//! Services watched only when labelled `ray.io/originated-from-crd=RayService`; pod readiness and
//! serve progress are picked up by the 2 s requeue), and the state the passes share: the serve
//! configs submitted per cluster and the deletion schedule of dangling clusters.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use crate::config::DashboardProxyClient;
use crate::fair_controller::Action;
use crate::fair_controller::FairController;
use crate::recorder::EventRecorder;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::runtime::events::Reporter;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, Resource, ResourceExt};
use ray_api::RayService;
use ray_api::constants::{CRD_KIND_RAY_SERVICE, RAY_ORIGINATED_FROM_CRD_LABEL};
use ray_api::validation::ValidationOptions;
use ray_podgen::PodGenConfig;
use ray_podgen::random::SeededSuffix;
use tracing::{info, warn};

use super::error::RayServiceError;
use super::executor::reconcile;
use super::plan::{DEFAULT_REQUEUE, RayServicePlanConfig};
use super::serve_api::ServeClient;
use crate::cluster_feed::ClusterFeed;
use crate::decode::{UndecodableGauge, UnreadableReporter};
use crate::events::EventSpec;
use crate::runtime_util::{custom_resource_changes, note_failed_passes, owned_changes, publish_event, run_per_scope};

/// Create parameters carrying this controller's field manager.
pub(super) fn create_params() -> PostParams {
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
    /// The client of those proxied requests; `None`: the controller's client.
    pub dashboard_client: Option<DashboardProxyClient>,
    /// Namespaces to watch; empty watches all.
    pub watch_namespaces: Vec<String>,
    /// Maximum concurrent reconciles (0 = unbounded).
    pub concurrency: u16,
    /// The RayCluster changes the RayCluster controller's watch publishes (one RayCluster watch for all).
    pub cluster_feed: ClusterFeed,
    /// The gauge of objects the operator cannot read (shared with the other controllers).
    pub undecodable: UndecodableGauge,
}

/// Namespace and name of a RayService.
pub(super) type ServiceKey = (String, String);

/// Shared state of the reconciles.
pub struct RayServiceContext {
    pub(super) client: Client,
    pub(super) config: RayServiceControllerConfig,
    pub(super) serve: ServeClient,
    pub(super) recorder: EventRecorder,
    pub(super) suffixes: Mutex<SeededSuffix>,
    /// `<ns>/<rs>` → cluster → the last serveConfigV2 submitted to it.
    pub(super) serve_configs: Mutex<HashMap<ServiceKey, BTreeMap<String, String>>>,
    /// `<ns>/<rs>` → dangling cluster → when to delete it.
    pub(super) deletions: Mutex<HashMap<ServiceKey, BTreeMap<String, Timestamp>>>,
}

impl RayServiceContext {
    /// The serve config last submitted to `cluster` of the RayService `key` (empty: none).
    pub(super) fn cached_config(&self, key: &ServiceKey, cluster: &str) -> String {
        let cache = self.serve_configs.lock().unwrap_or_else(PoisonError::into_inner);
        cache.get(key).and_then(|m| m.get(cluster)).cloned().unwrap_or_default()
    }

    /// Remembers `config` as submitted to `cluster` of the RayService `key`.
    pub(super) fn cache_config(&self, key: &ServiceKey, cluster: &str, config: &str) {
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

    /// Drops the cache entries of clusters that are neither active nor pending.
    pub(super) fn prune_configs(&self, key: &ServiceKey, keep: &[Option<&str>]) {
        let mut cache = self.serve_configs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(clusters) = cache.get_mut(key) {
            clusters.retain(|name, _| keep.contains(&Some(name.as_str())));
        }
    }

    /// Forgets everything about the RayService `key` (deleted or suspended).
    pub(super) fn forget(&self, key: &ServiceKey) {
        self.serve_configs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
        self.deletions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// Publishes an event on the RayService (failures to publish are only logged).
    pub(super) async fn publish(
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
        serve: ServeClient::new(DashboardProxyClient::or_controller_client(
            config.dashboard_client.as_ref(),
            &client,
        )),
        recorder: EventRecorder::new(client.clone(), reporter),
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
        let unreadable = UnreadableReporter::new::<RayService>(Some(ctx.recorder.clone()), config.undecodable.clone());
        let rayservices = custom_resource_changes::<RayService>(client.clone(), ns, writer, unreadable)
            .predicate_filter(trigger_hash, Default::default());
        FairController::for_stream(rayservices, reader, config.concurrency)
            .reconcile_on(config.cluster_feed.owners_of_kind::<RayService>(namespace.clone()))
            .owns_stream(owned_changes::<Service>(client.clone(), ns, owned))
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

/// What the controller does after a failed pass: retry after the default requeue.
fn error_policy(service: Arc<RayService>, error: &RayServiceError, _ctx: Arc<RayServiceContext>) -> Action {
    warn!(rayservice = %service.name_any(), error = %error, "rayservice reconcile failed");
    Action::requeue(DEFAULT_REQUEUE)
}
