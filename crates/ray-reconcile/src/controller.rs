//! Wires the RayCluster controller (reconcile spec §1.7, §7): kube-runtime's [`Controller`] over
//! RayClusters, plus label-selected Pod and Service watches that feed the compact
//! [`ClusterIndex`]es and trigger exactly the clusters whose children changed.
//!
//! Memory: RayClusters are the only full objects kept (in the controller's reflector store, with
//! `managedFields` stripped before they reach it); pods and services are reduced to
//! [`PodInfo`] / [`ServiceInfo`] as they arrive and only KubeRay-labelled ones are watched.

use crate::config::ReconcileConfig;
use crate::error::ReconcileError;
use crate::executor::{self, Context};
use crate::index::{ClusterIndex, ClusterKey, Compact};
use crate::metrics::ControllerMetrics;
use crate::observed::{PodInfo, ServiceInfo};
use crate::podgen::PodGenSettings;
use futures::{Stream, StreamExt, TryStreamExt, future, stream};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::utils::{Predicate, predicates};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use ray_api::RayCluster;
use ray_api::constants::RAY_CLUSTER_LABEL;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, info, warn};

/// Pods the operator looks at (KubeRay's cache filter): Ray head/worker pods and Redis cleanup pods.
pub const POD_SELECTOR: &str = "ray.io/node-type in (head,worker,redis-cleanup)";

/// How long a reconcile waits for the child indexes' initial lists before retrying.
const SYNC_RETRY: Duration = Duration::from_millis(200);

/// Settings of [`run`].
#[derive(Clone, Debug)]
pub struct ControllerConfig {
    /// Reconcile settings (feature gates, requeue, environment switches).
    pub reconcile: ReconcileConfig,
    /// Object generation settings.
    pub podgen: PodGenSettings,
    /// Namespaces to watch (`--watch-namespace`); empty watches all namespaces.
    pub watch_namespaces: Vec<String>,
    /// Maximum concurrent reconciles (`--reconcile-concurrency`; 0 means unbounded).
    pub concurrency: u16,
    /// Metrics the reconciles record.
    pub metrics: Arc<ControllerMetrics>,
}

/// Run the RayCluster controller until `shutdown` resolves and every running reconcile finished.
///
/// With several watch namespaces one controller (with its own caches) runs per namespace.
pub async fn run(client: Client, config: ControllerConfig, shutdown: impl Future<Output = ()> + Send + 'static) {
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
    let controllers = scopes.into_iter().map(|namespace| {
        let mut rx = rx.clone();
        let stop = async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
        run_scope(client.clone(), &config, namespace, stop)
    });
    future::join_all(controllers).await;
    shutdown_task.abort();
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

/// Watch one child kind through a label selector, index it and yield the clusters it touched.
fn child_triggers<T>(
    api: Api<T::Source>,
    selector: &str,
    index: ClusterIndex<T>,
) -> impl Stream<Item = ObjectRef<RayCluster>> + Send + 'static
where
    T: Compact,
    T::Source: kube::Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let wc = watcher::Config::default().labels(selector);
    watcher(api, wc)
        .default_backoff()
        .map(move |event| {
            let touched = match event {
                Ok(event) => index.apply(&event),
                Err(e) => {
                    warn!(error = %e, "child watch failed; retrying");
                    Vec::new()
                }
            };
            stream::iter(touched.into_iter().map(cluster_ref))
        })
        .flatten()
}

fn cluster_ref(key: ClusterKey) -> ObjectRef<RayCluster> {
    ObjectRef::new(&key.name).within(&key.namespace)
}

async fn run_scope(
    client: Client,
    config: &ControllerConfig,
    namespace: Option<String>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let ns = namespace.as_deref();
    let ctx = Arc::new(Context::new(
        client.clone(),
        config.reconcile.clone(),
        config.podgen.clone(),
        Arc::clone(&config.metrics),
    ));
    let pod_triggers = child_triggers::<PodInfo>(api(client.clone(), ns), POD_SELECTOR, ctx.pods.clone());
    let service_triggers =
        child_triggers::<ServiceInfo>(api(client.clone(), ns), RAY_CLUSTER_LABEL, ctx.services.clone());

    let (reader, writer) = reflector::store();
    let forget = Arc::clone(&ctx);
    // For(RayCluster) with OR(GenerationChanged, LabelChanged, AnnotationChanged), plus the deletion
    // mark: status writes do not trigger.
    let clusters = watcher(api::<RayCluster>(client, ns), watcher::Config::default())
        .default_backoff()
        .modify(|cluster: &mut RayCluster| cluster.managed_fields_mut().clear())
        .reflect(writer)
        .inspect_ok(move |event| {
            if let watcher::Event::Delete(cluster) = event {
                forget.forget_cluster(cluster);
            }
        })
        .applied_objects()
        .predicate_filter(
            predicates::generation
                .combine(predicates::labels)
                .combine(predicates::annotations)
                .combine(deletion_marked),
            Default::default(),
        );

    info!(
        namespace = ns.unwrap_or("<all>"),
        concurrency = config.concurrency,
        "starting RayCluster controller"
    );
    Controller::for_stream(clusters, reader)
        .with_config(controller::Config::default().concurrency(config.concurrency))
        .reconcile_on(pod_triggers)
        .reconcile_on(service_triggers)
        .graceful_shutdown_on(shutdown)
        .run(reconcile_when_synced, executor::error_policy, ctx)
        .for_each(|result| {
            match result {
                Ok((obj, action)) => debug!(raycluster = %obj, ?action, "reconciled"),
                Err(controller::Error::ReconcilerFailed(e, obj)) => {
                    debug!(raycluster = %obj, error = %e, "reconcile failed")
                }
                Err(controller::Error::ObjectNotFound(obj)) => debug!(raycluster = %obj, "cluster is gone"),
                Err(e) => warn!(error = %e, "controller error"),
            }
            future::ready(())
        })
        .await;
    info!(namespace = ns.unwrap_or("<all>"), "RayCluster controller stopped");
}

/// Whether deletion started (a finalizer-held cluster must be reconciled when it is marked even if
/// the server does not bump its generation).
fn deletion_marked(cluster: &RayCluster) -> Option<u64> {
    Some(u64::from(cluster.metadata.deletion_timestamp.is_some()))
}

/// Reconcile once the child indexes hold their initial lists (planning from a partial pod list
/// would create duplicate pods).
async fn reconcile_when_synced(cluster: Arc<RayCluster>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    if !ctx.pods.is_ready() || !ctx.services.is_ready() {
        return Ok(Action::requeue(SYNC_RETRY));
    }
    // `executor::reconcile` opens the per-reconcile span (raycluster, namespace).
    executor::reconcile(cluster, ctx).await
}
