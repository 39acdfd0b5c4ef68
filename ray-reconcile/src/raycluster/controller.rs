//! Wires the RayCluster controller: a [`FairController`] over
//! RayClusters, plus label-selected Pod and Service watches that feed the compact
//! [`ClusterIndex`]es and trigger exactly the clusters whose children changed.
//!
//! Memory: RayClusters are the only full objects kept (in the controller's reflector store, with
//! `managedFields` stripped before they reach it); pods and services are reduced to
//! [`PodInfo`] / [`ServiceInfo`] as they arrive and only KubeRay-labelled ones are watched.

use super::error::ReconcileError;
use super::executor::{self, Context};
use super::index::{ClusterIndex, ClusterKey, Compact};
use super::observed::{PodInfo, ServiceInfo};
use super::podgen::PodGenSettings;
use super::slim::SlimPod;
use crate::cluster_feed::ClusterFeed;
use crate::config::ReconcileConfig;
use crate::decode::{Decoded, FromMetadata, UnreadableReporter, readable_events};
use crate::fair_controller::Action;
use crate::fair_controller::FairController;
use crate::metrics::ControllerMetrics;
use crate::mtls::MtlsFeed;
use crate::runtime_util::{
    StopSignal, custom_resource_watch_config, run_per_scope, scoped_api as api, strip_unread_metadata,
};
use crate::stored::Stored;
use futures::{Stream, StreamExt, TryStreamExt, future, stream};
use k8s_openapi::api::core::v1::Service;
use kube::runtime::controller;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::utils::{Predicate, predicates};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
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

/// Logged (at info, with the watched kind in `watch`) each time a watch starts a full list: once at
/// startup, then after every 410 `Expired` or other failure that forces a relist. Tests count it.
pub const WATCH_LIST_LOG: &str = "watch listing";

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
    /// Where this controller's RayCluster watch announces changes for the RayJob and RayService controllers.
    pub cluster_feed: ClusterFeed,
    /// Where the RayCluster and Pod watches hand TLS clusters and their pod IPs to the mTLS controller
    /// (`None`: the mTLS controller does not run).
    pub mtls_feed: Option<MtlsFeed>,
}

/// Run the RayCluster controller until `shutdown` resolves and every running reconcile finished.
///
/// With several watch namespaces one controller (with its own caches) runs per namespace.
pub async fn run(client: Client, config: ControllerConfig, shutdown: impl Future<Output = ()> + Send + 'static) {
    run_per_scope(&config.watch_namespaces, shutdown, |namespace, stop| {
        run_scope(client.clone(), &config, namespace, stop)
    })
    .await;
}

/// Watch one child kind through a label selector, index it and yield the clusters it touched.
///
/// Each child is decoded on its own: one that cannot be read is reported through `unreadable` and left out
/// of the index instead of failing the watch (see [`crate::decode`]).
fn child_triggers<T>(
    api: Api<Decoded<T::Source>>,
    selector: &str,
    index: ClusterIndex<T>,
    unreadable: UnreadableReporter,
    on_touched: impl Fn(&[ClusterKey], bool) + Send + 'static,
) -> impl Stream<Item = ObjectRef<Stored<RayCluster>>> + Send + 'static
where
    T: Compact,
    T::Source: kube::Resource + FromMetadata + Clone + DeserializeOwned + Debug + Send + 'static,
    <T::Source as kube::Resource>::DynamicType: Default,
{
    let wc = watcher::Config::default().labels(selector);
    let kind = <T::Source as kube::Resource>::plural(&Default::default()).into_owned();
    readable_events(watcher(api, wc).default_backoff(), unreadable)
        .map(move |event| {
            let touched = match event {
                Ok(event) => {
                    if matches!(event, watcher::Event::Init) {
                        info!(watch = %kind, "{WATCH_LIST_LOG}");
                    }
                    let touched = index.apply(&event);
                    on_touched(&touched, matches!(event, watcher::Event::InitDone));
                    touched
                }
                Err(e) => {
                    warn!(error = %e, "child watch failed; retrying");
                    Vec::new()
                }
            };
            stream::iter(touched.into_iter().map(cluster_ref))
        })
        .flatten()
}

fn cluster_ref(key: ClusterKey) -> ObjectRef<Stored<RayCluster>> {
    ObjectRef::new(&key.name).within(&key.namespace)
}

async fn run_scope(client: Client, config: &ControllerConfig, namespace: Option<String>, shutdown: StopSignal) {
    let ns = namespace.as_deref();
    let ctx = Arc::new(Context::new(
        client.clone(),
        config.reconcile.clone(),
        config.podgen.clone(),
        Arc::clone(&config.metrics),
    ));
    let mtls_pods = config.mtls_feed.clone().map(|feed| (feed, ctx.pods.clone()));
    // Objects that cannot be read are reported with the controller's recorder and counted in one gauge.
    let (recorder, gauge) = (Some(ctx.recorder.clone()), config.metrics.undecodable.clone());
    let pod_triggers = child_triggers::<PodInfo>(
        api(client.clone(), ns),
        POD_SELECTOR,
        ctx.pods.clone(),
        UnreadableReporter::new::<SlimPod>(recorder.clone(), gauge.clone()),
        move |touched, relisted| {
            if let Some((feed, pods)) = &mtls_pods {
                if relisted {
                    // A (re)list swaps the whole index in: every TLS cluster's IPs may have changed.
                    feed.publish_all_pods(pods);
                } else {
                    for key in touched {
                        feed.publish_pods(key, pods);
                    }
                }
            }
        },
    );
    let service_triggers = child_triggers::<ServiceInfo>(
        api(client.clone(), ns),
        RAY_CLUSTER_LABEL,
        ctx.services.clone(),
        UnreadableReporter::new::<Service>(recorder.clone(), gauge.clone()),
        |_, _| {},
    );

    let (reader, writer) = reflector::store::<Stored<RayCluster>>();
    config.cluster_feed.share_store(namespace.clone(), reader.clone());
    // A status write triggers no pass, except for a cluster whose pass left its status step because the
    // cache had not shown its previous status write yet: it runs again as soon as the store does.
    let (caught_up_tx, caught_up_rx) = futures::channel::mpsc::unbounded::<ObjectRef<Stored<RayCluster>>>();
    let guard = Arc::clone(&ctx);
    let forget = Arc::clone(&ctx);
    let mtls = config.mtls_feed.clone().map(|feed| (feed, ctx.pods.clone()));
    // For(RayCluster) with OR(GenerationChanged, LabelChanged, AnnotationChanged), plus the deletion
    // mark: status writes do not trigger.
    let cluster_events =
        watcher(api::<Decoded<RayCluster>>(client, ns), custom_resource_watch_config()).default_backoff();
    let clusters = readable_events(cluster_events, UnreadableReporter::new::<RayCluster>(recorder, gauge))
        .modify(strip_unread_metadata)
        .inspect_ok(move |event| match event {
            watcher::Event::Delete(cluster) => {
                forget.forget_cluster(cluster);
                if let Some((mtls, pods)) = &mtls {
                    mtls.publish_cluster(cluster, true, pods);
                }
            }
            watcher::Event::Apply(cluster) | watcher::Event::InitApply(cluster) => {
                if let Some((mtls, pods)) = &mtls {
                    mtls.publish_cluster(cluster, false, pods);
                }
            }
            watcher::Event::Init => info!(watch = "rayclusters", "{WATCH_LIST_LOG}"),
            watcher::Event::InitDone => {}
        })
        .try_filter_map(|event| future::ready(Ok(stored_event(event))))
        .reflect(writer)
        // After the store write: the RayJob and RayService passes this triggers read the store.
        .inspect_ok(config.cluster_feed.publisher())
        .inspect_ok(move |event| {
            if let watcher::Event::Apply(cluster) = event {
                let meta = cluster.meta();
                let key = ClusterKey::new(
                    meta.namespace.clone().unwrap_or_default(),
                    meta.name.clone().unwrap_or_default(),
                );
                if guard.stale_status.caught_up(&key, meta.resource_version.as_deref()) {
                    // The receiver lives as long as the controller that reads it.
                    let _ = caught_up_tx.unbounded_send(cluster_ref(key));
                }
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
    FairController::for_stream(clusters, reader, config.concurrency)
        .reconcile_on(pod_triggers)
        .reconcile_on(service_triggers)
        .reconcile_on(caught_up_rx)
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
fn deletion_marked(cluster: &Stored<RayCluster>) -> Option<u64> {
    Some(u64::from(cluster.meta().deletion_timestamp.is_some()))
}

/// A watch event with its cluster in the compact form the store keeps ([`Stored`]). A deletion always
/// passes (its metadata is all the store needs to drop the cluster); a cluster that cannot be re-serialised
/// (not expected: it was just decoded) is left out with a warning, as an unreadable one is.
fn stored_event(event: watcher::Event<RayCluster>) -> Option<watcher::Event<Stored<RayCluster>>> {
    let keep = |cluster: RayCluster| {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        Stored::new(cluster)
            .inspect_err(|e| warn!(raycluster = %name, error = %e, "cannot keep the RayCluster in the store"))
            .ok()
    };
    Some(match event {
        watcher::Event::Apply(cluster) => watcher::Event::Apply(keep(cluster)?),
        watcher::Event::InitApply(cluster) => watcher::Event::InitApply(keep(cluster)?),
        watcher::Event::Delete(cluster) => watcher::Event::Delete(Stored::deleted(cluster)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    })
}

/// Reconcile once the child indexes hold their initial lists (planning from a partial pod list
/// would create duplicate pods).
async fn reconcile_when_synced(cluster: Arc<Stored<RayCluster>>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    if !ctx.pods.is_ready() || !ctx.services.is_ready() {
        return Ok(Action::requeue(SYNC_RETRY));
    }
    // The pass works on the whole cluster, decoded for it alone. `executor::reconcile` opens the
    // per-reconcile span (raycluster, namespace).
    executor::reconcile(Arc::new(cluster.decode()?), ctx).await
}
