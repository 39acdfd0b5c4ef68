//! Plumbing the controllers (RayCluster, RayJob, RayService, RayCronJob) share: one controller per
//! watch scope, all stopped by one shutdown signal; namespaced-or-cluster-wide `Api`s; their watches;
//! best-effort event publishing; the sink that drains a controller's results.

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::recorder::EventRecorder;
use futures::Stream;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::core::PartialObjectMeta;
use kube::runtime::events::{Event, EventType};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::hash::Hash;
use tracing::debug;

use crate::decode::{Decoded, FromMetadata, UnreadableReporter, readable_events};
use crate::events::{EventSpec, Severity};
use crate::scoped_stores::ScopedStores;

/// Resolves once the operator shuts down: a controller's `graceful_shutdown_on` trigger.
pub type StopSignal = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// The `Api` of `K` in `namespace`, or across all namespaces for `None`.
pub fn scoped_api<K>(client: Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    }
}

/// Objects per page of a custom resource watch's initial list (kube's default is 500). A page is decoded
/// whole while the store is being rebuilt beside it, and that startup peak, not the store, set the operator's
/// resident memory: with 150 RayClusters in one page the heap peaked at twice the store.
pub const CUSTOM_RESOURCE_LIST_PAGE_SIZE: u32 = 25;

/// The watch configuration of RayCluster, RayJob and RayService watches: paged initial lists.
pub fn custom_resource_watch_config() -> watcher::Config {
    watcher::Config::default().page_size(CUSTOM_RESOURCE_LIST_PAGE_SIZE)
}

/// kubectl's last-applied copy of an object, which reconcile never reads.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops what reconcile never reads before an object reaches a store: `managedFields` and kubectl's
/// last-applied annotation (a second, serialized copy of the whole spec on every `kubectl apply`-ed object).
pub fn strip_unread_metadata<K: kube::Resource>(object: &mut K) {
    let meta = object.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// A namespaced kind whose watches decode each object on its own ([`crate::decode`]) and keep it in a store.
pub trait DecodedKind:
    kube::Resource<Scope = NamespaceResourceScope> + FromMetadata + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}

impl<K> DecodedKind for K where
    K: kube::Resource<Scope = NamespaceResourceScope>
        + FromMetadata
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// The watch of a controller's own custom resource `K` in `namespace`: paged initial lists, each object
/// decoded on its own (one that cannot be read goes to `unreadable` instead of failing the watch; see
/// [`crate::decode`]), what reconcile never reads stripped before an object reaches `writer`'s store; yields
/// every applied object.
pub fn custom_resource_changes<K>(
    client: Client,
    namespace: Option<&str>,
    writer: reflector::store::Writer<K>,
    unreadable: UnreadableReporter,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: DecodedKind,
    K::DynamicType: Default + Eq + Hash + Clone + Send + Sync,
{
    let events = watcher(
        scoped_api::<Decoded<K>>(client, namespace),
        custom_resource_watch_config(),
    )
    .default_backoff();
    readable_events(events, unreadable)
        .modify(strip_unread_metadata)
        .reflect(writer)
        .applied_objects()
}

/// The changes of an owned kind `K` in `namespace` selected by `config`, metadata only: an owned object
/// only maps to its owner, so nothing else of it is decoded.
pub fn owned_changes<K>(
    client: Client,
    namespace: Option<&str>,
    config: watcher::Config,
) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: kube::Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default,
{
    watcher(scoped_api::<PartialObjectMeta<K>>(client, namespace), config)
        .default_backoff()
        .touched_objects()
}

/// The watch of the objects of kind `K` in `namespace` that `selector` selects (as KubeRay's cache selects
/// them), each reduced by `keep` to what a pass reads and kept in a store shared through `stores` for the
/// scope; yields every object that changed or went, whose owner is then triggered.
pub fn owned_changes_kept<K>(
    client: Client,
    namespace: Option<&str>,
    selector: &str,
    keep: fn(&mut K),
    (stores, scope): (&ScopedStores<K>, Option<String>),
    unreadable: UnreadableReporter,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: DecodedKind + kube::Resource<DynamicType = ()>,
{
    let (reader, writer) = reflector::store();
    stores.share(scope, reader);
    let events = watcher(
        scoped_api::<Decoded<K>>(client, namespace),
        watcher::Config::default().labels(selector),
    )
    .default_backoff();
    readable_events(events, unreadable)
        .modify(move |object| {
            strip_unread_metadata(object);
            keep(object);
        })
        .reflect(writer)
        .touched_objects()
}

/// The watch scopes of `--watch-namespace`: one per namespace, or one cluster-wide scope (`None`) when
/// no namespace is given.
pub fn watch_scopes(watch_namespaces: &[String]) -> Vec<Option<String>> {
    if watch_namespaces.is_empty() {
        vec![None]
    } else {
        watch_namespaces.iter().cloned().map(Some).collect()
    }
}

/// Runs `scope_controller` for every scope of [`watch_scopes`] side by side, each with a [`StopSignal`]
/// that fires once `shutdown` resolves; returns when all of them have returned.
pub async fn run_per_scope<F, Fut>(
    watch_namespaces: &[String],
    shutdown: impl Future<Output = ()> + Send + 'static,
    mut scope_controller: F,
) where
    F: FnMut(Option<String>, StopSignal) -> Fut,
    Fut: Future<Output = ()>,
{
    let (tx, rx) = tokio::sync::watch::channel(false);
    let shutdown_task = tokio::spawn(async move {
        shutdown.await;
        let _ = tx.send(true);
    });
    let controllers = watch_scopes(watch_namespaces).into_iter().map(|namespace| {
        let mut rx = rx.clone();
        let stop: StopSignal = Box::pin(async move {
            let _ = rx.wait_for(|stop| *stop).await;
        });
        scope_controller(namespace, stop)
    });
    futures::future::join_all(controllers).await;
    shutdown_task.abort();
}

/// controller-runtime's per-item backoff: 5 ms doubling per consecutive failure, capped at 1000 s.
pub fn backoff_delay(failures: u32) -> Duration {
    let factor = 1u32.checked_shl(failures.min(31)).unwrap_or(u32::MAX);
    Duration::from_millis(5)
        .saturating_mul(factor)
        .min(Duration::from_secs(1000))
}

/// Namespace and name of an object: the key of per-object controller state.
pub type ObjectKey = (String, String);

/// Consecutive failed passes per object, for controller-runtime's per-item exponential backoff
/// ([`backoff_delay`]): each failure doubles the next delay, a clean pass starts over.
#[derive(Debug, Default)]
pub struct FailureBackoff {
    failures: std::sync::Mutex<std::collections::HashMap<ObjectKey, u32>>,
}

impl FailureBackoff {
    /// Records one more failure of `key`; the delay before its retry.
    pub fn next_delay(&self, key: ObjectKey) -> Duration {
        let Ok(mut failures) = self.failures.lock() else {
            return backoff_delay(0);
        };
        let count = failures.entry(key).or_insert(0);
        let delay = backoff_delay(*count);
        *count = count.saturating_add(1);
        delay
    }

    /// Forgets the failures of `key` after a clean pass.
    pub fn reset(&self, key: &ObjectKey) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.remove(key);
        }
    }
}

/// The [`ObjectKey`] of `object`.
pub fn object_key<K: kube::Resource>(object: &K) -> ObjectKey {
    let meta = object.meta();
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// Publishes `spec` as an event about `regarding` through `recorder`, in the background: the caller does not
/// wait for the API server, and events are best effort (a failure to publish is only logged).
pub async fn publish_event(recorder: &EventRecorder, regarding: &ObjectReference, spec: EventSpec) {
    let event = Event {
        type_: match spec.severity {
            Severity::Normal => EventType::Normal,
            Severity::Warning => EventType::Warning,
        },
        reason: spec.reason.to_owned(),
        note: Some(spec.note),
        action: spec.action.to_owned(),
        secondary: None,
    };
    recorder.enqueue(event, regarding.clone());
}

/// The `for_each` sink of a controller's results that only notes failed passes at debug level (the
/// error policy already logged them as warnings); `kind` names the reconciled kind in the message.
pub fn note_failed_passes<T, E: Display>(kind: &'static str) -> impl FnMut(Result<T, E>) -> futures::future::Ready<()> {
    move |result| {
        if let Err(e) = result {
            debug!(error = %e, "{kind} reconcile failed");
        }
        futures::future::ready(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ray_api::RayCluster;

    #[test]
    fn stored_clusters_lose_managed_fields_and_the_last_applied_copy_only() {
        let mut cluster: RayCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "c", "namespace": "default",
                "annotations": {LAST_APPLIED_ANNOTATION: "{\"spec\":{}}", "ray.io/ft-enabled": "true"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": []}}}}
        }))
        .unwrap();
        strip_unread_metadata(&mut cluster);
        assert!(cluster.metadata.managed_fields.is_none());
        let annotations = cluster.metadata.annotations.unwrap();
        assert_eq!(annotations.len(), 1);
        assert_eq!(annotations["ray.io/ft-enabled"], "true");
    }

    #[test]
    fn backoff_doubles_from_5ms_up_to_1000s() {
        assert_eq!(backoff_delay(0), Duration::from_millis(5));
        assert_eq!(backoff_delay(3), Duration::from_millis(40));
        assert_eq!(backoff_delay(20), Duration::from_secs(1000));
        assert_eq!(backoff_delay(u32::MAX), Duration::from_secs(1000));
    }

    #[test]
    fn failure_backoff_doubles_per_object_and_resets() {
        let backoff = FailureBackoff::default();
        let a = ("ns".to_owned(), "a".to_owned());
        assert_eq!(backoff.next_delay(a.clone()), Duration::from_millis(5));
        assert_eq!(backoff.next_delay(a.clone()), Duration::from_millis(10));
        assert_eq!(
            backoff.next_delay(("ns".to_owned(), "b".to_owned())),
            Duration::from_millis(5)
        );
        backoff.reset(&a);
        assert_eq!(backoff.next_delay(a), Duration::from_millis(5));
    }

    #[test]
    fn no_watch_namespace_is_one_cluster_wide_scope() {
        assert_eq!(watch_scopes(&[]), vec![None]);
        let namespaces = ["team-a".to_owned(), "team-b".to_owned()];
        assert_eq!(
            watch_scopes(&namespaces),
            vec![Some("team-a".to_owned()), Some("team-b".to_owned())]
        );
    }

    #[tokio::test]
    async fn every_scope_runs_and_stops_on_shutdown() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = rx.await;
        };
        let started = std::sync::Mutex::new(Vec::new());
        let namespaces = ["a".to_owned(), "b".to_owned()];
        let run = run_per_scope(&namespaces, shutdown, |namespace, stop| {
            started.lock().unwrap().push(namespace);
            stop
        });
        tx.send(()).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(5), run)
            .await
            .expect("every scope stops once shutdown resolves");
        assert_eq!(
            *started.lock().unwrap(),
            vec![Some("a".to_owned()), Some("b".to_owned())]
        );
    }
}
