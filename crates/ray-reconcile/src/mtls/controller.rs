//! The mTLS controller's executor and wiring: a kube-runtime [`Controller`] over the TLS clusters
//! the [`MtlsFeed`] hands over (kept in a store of their own, so clusters without TLS are never
//! copied), triggered by those clusters' changes and by changes of their pod IPs.
//!
//! Intervals: a pass whose certificates are not issued yet comes back after 30 s, a ready PKI is
//! re-checked every minute; failed passes back off exponentially per cluster (controller-runtime
//! ignores `RequeueAfter` when a pass returns an error, and so does this port).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use ray_api::RayCluster;
use ray_podgen::cluster::cluster_owner_reference;
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::feed::{MtlsFeed, MtlsSignal};
use super::names::{CERT_MANAGER_GROUP, DEFAULT_REQUEUE, MTLS_CLEANUP_FINALIZER, PERIODIC_CHECK, reason};
use super::plan::{self, CertManagerKind, Decision, DesiredObject};
use crate::events::{EventSpec, action};
use crate::executor::{backoff_delay, cluster_key};
use crate::index::ClusterKey;
use crate::runtime_util::publish_event;

/// The controller name events are reported under.
pub const MTLS_CONTROLLER: &str = "raycluster-mtls-controller";

/// Retry of a finalizer update that lost a race with another writer of the cluster.
const CONFLICT_RETRY: Duration = Duration::from_millis(200);

/// Why an mTLS pass failed.
#[derive(Debug, thiserror::Error)]
pub enum MtlsError {
    /// An API call failed.
    #[error("{0}")]
    Kube(#[from] kube::Error),
    /// A PKI step failed.
    #[error("failed to reconcile mTLS {step}: {source}")]
    Step {
        /// The step (`CA certificate`, ...).
        step: &'static str,
        /// The API error.
        source: kube::Error,
    },
}

/// Shared state of the mTLS controller.
pub struct MtlsContext {
    client: Client,
    recorder: Recorder,
    /// Latest pod IPs per tracked cluster (from the feed).
    pod_ips: Mutex<HashMap<ClusterKey, Vec<String>>>,
    failures: Mutex<HashMap<ClusterKey, u32>>,
}

impl MtlsContext {
    fn new(client: Client) -> Self {
        let reporter = Reporter {
            controller: MTLS_CONTROLLER.to_owned(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            pod_ips: Mutex::default(),
            failures: Mutex::default(),
        }
    }

    async fn publish(&self, cluster: &RayCluster, event: EventSpec) {
        publish_event(&self.recorder, &cluster.object_ref(&()), event).await;
    }

    fn pod_ips(&self, key: &ClusterKey) -> Vec<String> {
        self.pod_ips
            .lock()
            .ok()
            .and_then(|m| m.get(key).cloned())
            .unwrap_or_default()
    }

    /// Records new pod IPs; true when the normalized set changed.
    fn set_pod_ips(&self, key: ClusterKey, ips: Vec<String>) -> bool {
        let normalized = plan::normalize_ips(ips.iter().map(String::as_str));
        let Ok(mut map) = self.pod_ips.lock() else {
            return false;
        };
        let previous = map.insert(key, ips);
        previous.is_none_or(|p| plan::normalize_ips(p.iter().map(String::as_str)) != normalized)
    }

    fn forget(&self, key: &ClusterKey) {
        if let Ok(mut map) = self.pod_ips.lock() {
            map.remove(key);
        }
        if let Ok(mut failures) = self.failures.lock() {
            failures.remove(key);
        }
    }
}

fn resource(kind: CertManagerKind) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(CERT_MANAGER_GROUP, "v1", kind.as_str()))
}

/// Run the mTLS controller until `shutdown` resolves. It takes the feed's receiver; without it (a
/// second call) it returns at once.
pub async fn run(client: Client, feed: MtlsFeed, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let Some(mut signals) = feed.take_receiver() else {
        warn!("mTLS controller already running; not starting a second one");
        return;
    };
    let ctx = Arc::new(MtlsContext::new(client));
    let (reader, mut writer) = reflector::store::<RayCluster>();
    // The store starts empty and complete: clusters arrive one by one from the feed.
    writer.apply_watcher_event(&watcher::Event::Init);
    writer.apply_watcher_event(&watcher::Event::InitDone);
    let (objects_tx, objects_rx) = mpsc::unbounded_channel::<RayCluster>();
    let (refs_tx, refs_rx) = mpsc::unbounded_channel::<ObjectRef<RayCluster>>();
    let hand_over_ctx = Arc::clone(&ctx);
    let store = reader.clone();
    let hand_over = tokio::spawn(async move {
        while let Some(signal) = signals.recv().await {
            match signal {
                MtlsSignal::Apply(cluster) => {
                    writer.apply_watcher_event(&watcher::Event::Apply((*cluster).clone()));
                    let _ = objects_tx.send(*cluster);
                }
                MtlsSignal::Forget(key) => {
                    let reference = ObjectRef::<RayCluster>::new(&key.name).within(&key.namespace);
                    if let Some(cluster) = store.get(&reference) {
                        writer.apply_watcher_event(&watcher::Event::Delete((*cluster).clone()));
                    }
                    hand_over_ctx.forget(&key);
                }
                MtlsSignal::Pods { key, ips } => {
                    if hand_over_ctx.set_pod_ips(key.clone(), ips) {
                        let _ = refs_tx.send(ObjectRef::new(&key.name).within(&key.namespace));
                    }
                }
            }
        }
    });
    let objects = futures::stream::unfold(objects_rx, |mut rx| async move { rx.recv().await.map(|c| (Ok(c), rx)) });
    let refs = futures::stream::unfold(refs_rx, |mut rx| async move { rx.recv().await.map(|r| (r, rx)) });
    info!("starting RayCluster mTLS controller");
    Controller::for_stream(objects, reader)
        .reconcile_on(refs)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| {
            if let Err(e) = result {
                debug!(error = %e, "mTLS reconcile failed");
            }
            futures::future::ready(())
        })
        .await;
    hand_over.abort();
    info!("RayCluster mTLS controller stopped");
}

fn error_policy(cluster: Arc<RayCluster>, error: &MtlsError, ctx: Arc<MtlsContext>) -> Action {
    let key = cluster_key(&cluster);
    let delay = ctx
        .failures
        .lock()
        .map(|mut f| {
            let n = f.entry(key).or_insert(0);
            let delay = backoff_delay(*n);
            *n = n.saturating_add(1);
            delay
        })
        .unwrap_or(DEFAULT_REQUEUE);
    warn!(raycluster = %cluster.name_any(), error = %error, retry_in = ?delay, "mTLS reconcile failed");
    Action::requeue(delay)
}

/// One mTLS pass over a cluster.
#[tracing::instrument(skip_all, fields(raycluster = %cluster.name_any(), namespace = cluster.namespace().unwrap_or_default()))]
async fn reconcile(cluster: Arc<RayCluster>, ctx: Arc<MtlsContext>) -> Result<Action, MtlsError> {
    let action = match plan::decide(&cluster) {
        Decision::Ignore => Action::await_change(),
        Decision::Cleanup { secrets } => cleanup(&cluster, &ctx, &secrets).await?,
        Decision::AddFinalizer => {
            let mut finalizers = cluster.finalizers().to_vec();
            finalizers.push(MTLS_CLEANUP_FINALIZER.to_owned());
            match set_finalizers(&cluster, &ctx, finalizers).await {
                // The watch event of the update brings the next pass; this is the fallback.
                Ok(()) => Action::requeue(CONFLICT_RETRY),
                Err(kube::Error::Api(s)) if s.code == 409 => Action::requeue(CONFLICT_RETRY),
                Err(e) => return Err(e.into()),
            }
        }
        Decision::Reconcile => ensure_pki(&cluster, &ctx).await?,
    };
    if let Ok(mut failures) = ctx.failures.lock() {
        failures.remove(&cluster_key(&cluster));
    }
    Ok(action)
}

/// Replace the finalizer list, guarded by the resourceVersion (KubeRay uses an Update).
async fn set_finalizers(cluster: &RayCluster, ctx: &MtlsContext, finalizers: Vec<String>) -> Result<(), kube::Error> {
    let api: Api<RayCluster> = Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    let patch = serde_json::json!({
        "metadata": {"finalizers": finalizers, "resourceVersion": cluster.resource_version()}
    });
    api.patch(&cluster.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Deletion: the generated Secrets go (cert-manager may not own them), then the finalizer.
async fn cleanup(cluster: &RayCluster, ctx: &MtlsContext, secrets: &[String]) -> Result<Action, MtlsError> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    for secret in secrets {
        match api.delete(secret, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(e) => {
                ctx.publish(
                    cluster,
                    EventSpec::warning(
                        reason::MTLS_FAILED_TO_CLEANUP_SECRETS,
                        action::CLEANUP,
                        format!("Failed to clean up mTLS secrets: {e}"),
                    ),
                )
                .await;
                return Err(e.into());
            }
        }
    }
    ctx.publish(
        cluster,
        EventSpec::normal(
            reason::MTLS_SECRETS_CLEANED_UP,
            action::CLEANUP,
            "Auto-generated mTLS secrets deleted",
        ),
    )
    .await;
    let rest = cluster
        .finalizers()
        .iter()
        .filter(|f| *f != MTLS_CLEANUP_FINALIZER)
        .cloned()
        .collect();
    set_finalizers(cluster, ctx, rest).await?;
    info!("removed the mTLS finalizer after the secret cleanup");
    Ok(Action::await_change())
}

/// The PKI steps in order, then the readiness report.
async fn ensure_pki(cluster: &RayCluster, ctx: &MtlsContext) -> Result<Action, MtlsError> {
    let namespace = cluster.namespace().unwrap_or_default();
    let ips = ctx.pod_ips(&cluster_key(cluster));
    let mut leaves = Vec::new();
    for desired in plan::desired_objects(cluster, ips.iter().map(String::as_str)) {
        match ensure_object(cluster, ctx, &namespace, &desired).await {
            Ok(object) => {
                if desired.leaf.is_some() {
                    leaves.push(object);
                }
            }
            Err(source) => {
                ctx.publish(
                    cluster,
                    EventSpec::warning(
                        reason::MTLS_FAILED_TO_RECONCILE,
                        action::UPDATE,
                        format!("Failed to reconcile mTLS {}: {source}", desired.step),
                    ),
                )
                .await;
                return Err(MtlsError::Step {
                    step: desired.step,
                    source,
                });
            }
        }
    }
    let ready = leaves
        .iter()
        .all(|object| serde_json::to_value(object).is_ok_and(|v| plan::certificate_ready(&v)));
    if !ready {
        debug!("TLS certificates not ready yet");
        ctx.publish(
            cluster,
            EventSpec::normal(
                reason::MTLS_CERTS_NOT_READY,
                action::UPDATE,
                "Waiting for cert-manager to issue mTLS certificates",
            ),
        )
        .await;
        return Ok(Action::requeue(DEFAULT_REQUEUE));
    }
    ctx.publish(
        cluster,
        EventSpec::normal(
            reason::MTLS_PKI_READY,
            action::UPDATE,
            "mTLS PKI is ready: CA, head, and worker certificates issued",
        ),
    )
    .await;
    log_expiring(&leaves);
    Ok(Action::requeue(PERIODIC_CHECK))
}

/// Logs leaf certificates that expire within a day (KubeRay's `checkTLSCertificateExpiry`).
fn log_expiring(leaves: &[DynamicObject]) {
    let now = k8s_openapi::jiff::Timestamp::now();
    for leaf in leaves {
        let not_after = leaf
            .data
            .pointer("/status/notAfter")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok());
        if let Some(not_after) = not_after
            && not_after.duration_since(now).as_secs() < 24 * 3600
        {
            info!(certificate = %leaf.name_any(), expires_at = %not_after, "TLS certificate expiring soon");
        }
    }
}

/// Create `desired` when missing, update it when it drifted; returns the object as it now is.
async fn ensure_object(
    cluster: &RayCluster,
    ctx: &MtlsContext,
    namespace: &str,
    desired: &DesiredObject,
) -> Result<DynamicObject, kube::Error> {
    let ar = resource(desired.kind);
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), namespace, &ar);
    let owner = cluster_owner_reference(cluster);
    let Some(mut existing) = api.get_opt(&desired.name).await? else {
        let mut object = DynamicObject::new(&desired.name, &ar)
            .within(namespace)
            .data(serde_json::json!({"spec": desired.spec}));
        object.metadata.labels = Some(desired.labels.clone());
        object.metadata.owner_references = Some(vec![owner]);
        return api.create(&PostParams::default(), &object).await;
    };
    let labels: BTreeMap<String, String> = existing.metadata.labels.clone().unwrap_or_default();
    let spec = existing.data.get("spec").cloned().unwrap_or(Value::Null);
    if !plan::needs_update(desired, &labels, &spec) {
        return Ok(existing);
    }
    if let Some(leaf) = desired.leaf {
        let ips: Vec<String> = desired
            .spec
            .get("ipAddresses")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        info!(certificate = %desired.name, ip_addresses = ?ips, "updating {} certificate", leaf.as_str());
        ctx.publish(
            cluster,
            EventSpec::normal(
                reason::MTLS_CERTIFICATES_UPDATED,
                action::UPDATE,
                format!(
                    "Updated {} certificate SANs (IPs: {})",
                    leaf.as_str(),
                    plan::go_list(&ips)
                ),
            ),
        )
        .await;
    }
    existing.metadata.labels = Some(desired.labels.clone());
    set_spec(&mut existing.data, desired.spec.clone());
    let owners = existing.metadata.owner_references.get_or_insert_with(Vec::new);
    owners.retain(|o| o.uid != owner.uid && o.controller != Some(true));
    owners.push(owner);
    api.replace(&desired.name, &PostParams::default(), &existing).await
}

fn set_spec(data: &mut Value, spec: Value) {
    match data {
        Value::Object(map) => {
            map.insert("spec".to_owned(), spec);
        }
        other => *other = serde_json::json!({"spec": spec}),
    }
}
