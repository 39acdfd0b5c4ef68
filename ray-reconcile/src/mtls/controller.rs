//! The mTLS controller's executor and wiring: a kube-runtime [`Controller`] over the TLS clusters
//! the [`MtlsFeed`] hands over (kept in a store of their own, so clusters without TLS are never
//! copied), triggered by those clusters' changes and by changes of their pod IPs.
//!
//! Intervals: a pass whose certificates are not issued yet comes back after 30 s, a ready PKI is
//! re-checked every minute; failed passes back off exponentially per cluster (controller-runtime
//! ignores `RequeueAfter` when a pass returns an error, and so does this port). KubeRay also watches
//! the Issuers and Certificates it owns; this port does not (the RayCluster controller polls
//! certificate readiness itself before creating pods), so a certificate issued between two passes is
//! reported by the next timed pass.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};

use crate::recorder::EventRecorder;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use ray_api::RayCluster;
use ray_podgen::cluster::cluster_owner_reference;
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::feed::{MtlsFeed, MtlsSignal};
use super::names::{
    CERT_MANAGER_API_VERSION, CERT_MANAGER_GROUP, CERTIFICATE_KIND, DEFAULT_REQUEUE, EXPIRY_WARNING, PERIODIC_CHECK,
    reason,
};
use super::plan::{self, CertManagerKind, Decision, DesiredObject, PodIps};
use crate::events::{EventSpec, action};
use crate::raycluster::executor::cluster_key;
use crate::raycluster::index::ClusterKey;
use crate::runtime_util::{backoff_delay, publish_event};

/// The controller name events are reported under.
pub const MTLS_CONTROLLER: &str = "raycluster-mtls-controller";

/// Retry of a pass that ran before the cluster's pod IPs were handed over.
const PODS_PENDING_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// Why an mTLS pass failed.
#[derive(Debug, thiserror::Error)]
pub enum MtlsError {
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
    recorder: EventRecorder,
    /// The operator's `CLUSTER_DOMAIN` (empty: `cluster.local`), for the head certificate's FQDN.
    cluster_domain: String,
    /// Latest pod IPs per tracked cluster (from the feed).
    pod_ips: Mutex<HashMap<ClusterKey, PodIps>>,
    failures: Mutex<HashMap<ClusterKey, u32>>,
}

impl MtlsContext {
    fn new(client: Client, cluster_domain: String) -> Self {
        let reporter = Reporter {
            controller: MTLS_CONTROLLER.to_owned(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: EventRecorder::new(client.clone(), reporter),
            client,
            cluster_domain,
            pod_ips: Mutex::default(),
            failures: Mutex::default(),
        }
    }

    async fn publish(&self, cluster: &RayCluster, event: EventSpec) {
        publish_event(&self.recorder, &cluster.object_ref(&()), event).await;
    }

    /// The cluster's pod IPs; `None` until the RayCluster controller's pod index handed them over.
    fn pod_ips(&self, key: &ClusterKey) -> Option<PodIps> {
        self.pod_ips.lock().ok().and_then(|m| m.get(key).cloned())
    }

    /// Records new pod IPs; true when a certificate's IP set changes with them.
    fn set_pod_ips(&self, key: ClusterKey, ips: PodIps) -> bool {
        let normalized = |ips: &PodIps| {
            (
                plan::normalize_ips(ips.head.iter().map(String::as_str)),
                plan::normalize_ips(ips.worker.iter().map(String::as_str)),
            )
        };
        let Ok(mut map) = self.pod_ips.lock() else {
            return false;
        };
        let now = normalized(&ips);
        map.insert(key, ips).is_none_or(|previous| normalized(&previous) != now)
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

/// Run the mTLS controller until `shutdown` resolves. It takes the feed's receiver; without it (a
/// second call) it returns at once. `cluster_domain` is the operator's `CLUSTER_DOMAIN`.
pub async fn run(
    client: Client,
    feed: MtlsFeed,
    cluster_domain: String,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let Some(mut signals) = feed.take_receiver() else {
        warn!("mTLS controller already running; not starting a second one");
        return;
    };
    let ctx = Arc::new(MtlsContext::new(client, cluster_domain));
    let (reader, mut writer) = reflector::store::<RayCluster>();
    // The store starts empty and complete: clusters arrive one by one from the feed.
    writer.apply_watcher_event(&watcher::Event::Init);
    writer.apply_watcher_event(&watcher::Event::InitDone);
    // Boxed: the channel allocates its slots 32 at a time, 181 KiB with a RayCluster inline in each.
    let (objects_tx, objects_rx) = mpsc::unbounded_channel::<Box<RayCluster>>();
    let (refs_tx, refs_rx) = mpsc::unbounded_channel::<ObjectRef<RayCluster>>();
    let hand_over_ctx = Arc::clone(&ctx);
    let store = reader.clone();
    let hand_over = tokio::spawn(async move {
        while let Some(signal) = signals.recv().await {
            match signal {
                MtlsSignal::Apply(cluster) => {
                    writer.apply_watcher_event(&watcher::Event::Apply((*cluster).clone()));
                    let _ = objects_tx.send(cluster);
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
    let objects = futures::stream::unfold(
        objects_rx,
        |mut rx| async move { rx.recv().await.map(|c| (Ok(*c), rx)) },
    );
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
        Decision::Reconcile => ensure_pki(&cluster, &ctx).await?,
    };
    if let Ok(mut failures) = ctx.failures.lock() {
        failures.remove(&cluster_key(&cluster));
    }
    Ok(action)
}

/// The PKI steps in order, then the readiness report.
async fn ensure_pki(cluster: &RayCluster, ctx: &MtlsContext) -> Result<Action, MtlsError> {
    let namespace = cluster.namespace().unwrap_or_default();
    let Some(ips) = ctx.pod_ips(&cluster_key(cluster)) else {
        // Planning without the pod list would strip the IP SANs of running pods (after an operator
        // restart): wait for the hand-over, which also triggers the next pass.
        debug!("pod IPs not handed over yet");
        return Ok(Action::requeue(PODS_PENDING_RETRY));
    };
    let mut certificates = Vec::new();
    for desired in plan::desired_objects(cluster, &ips, &ctx.cluster_domain) {
        match ensure_object(cluster, ctx, &namespace, &desired).await {
            Ok(object) => {
                if desired.kind == CertManagerKind::Certificate {
                    certificates.push((desired.leaf.is_some(), object));
                }
            }
            Err(source) => {
                ctx.publish(
                    cluster,
                    EventSpec::warning(
                        reason::MTLS_FAILED_TO_RECONCILE,
                        action::RECONCILE,
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
    let ready = certificates
        .iter()
        .filter(|(leaf, _)| *leaf)
        .all(|(_, object)| serde_json::to_value(object).is_ok_and(|v| plan::certificate_ready(&v)));
    if !ready {
        debug!("TLS certificates not ready yet");
        ctx.publish(
            cluster,
            EventSpec::normal(
                reason::MTLS_CERTS_NOT_READY,
                action::RECONCILE,
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
            action::RECONCILE,
            "mTLS PKI is ready: CA, head, and worker certificates issued",
        ),
    )
    .await;
    // KubeRay checks head, worker, then CA.
    certificates.rotate_left(1);
    for (_, certificate) in &certificates {
        warn_if_expiring(cluster, ctx, certificate).await;
    }
    Ok(Action::requeue(PERIODIC_CHECK))
}

/// `checkTLSCertificateExpiry`: a warning event for a certificate that expires within a day (Ray
/// reads its certificates once, so its pods need a restart after the renewal).
async fn warn_if_expiring(cluster: &RayCluster, ctx: &MtlsContext, certificate: &DynamicObject) {
    let not_after = certificate
        .data
        .pointer("/status/notAfter")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok());
    let Some(not_after) = not_after else {
        return;
    };
    let remaining = not_after
        .duration_since(k8s_openapi::jiff::Timestamp::now())
        .as_secs_f64();
    if remaining < EXPIRY_WARNING.as_secs_f64() {
        let note = format!(
            "TLS certificate {} expires in {:.1} hours; Ray does not hot-reload certs so a pod restart will be needed after renewal",
            certificate.name_any(),
            remaining / 3600.0
        );
        ctx.publish(
            cluster,
            EventSpec::warning(reason::MTLS_CERTIFICATE_EXPIRING_SOON, action::RECONCILE, note),
        )
        .await;
    }
}

/// Create `desired` when missing, update it when it drifted; returns the object as it now is.
async fn ensure_object(
    cluster: &RayCluster,
    ctx: &MtlsContext,
    namespace: &str,
    desired: &DesiredObject,
) -> Result<DynamicObject, kube::Error> {
    let ar = super::cert_manager_resource(desired.kind.as_str());
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
        if desired.kind == CertManagerKind::Certificate {
            ensure_secret_owned_by_certificate(ctx, namespace, &existing).await?;
        }
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
    let updated = api.replace(&desired.name, &PostParams::default(), &existing).await?;
    ensure_secret_owned_by_certificate(ctx, namespace, &updated).await?;
    Ok(updated)
}

/// `ensureSecretOwnedByCertificate`: the Secret cert-manager wrote for `certificate` gets an owner
/// reference to it (`blockOwnerDeletion`), so deleting the RayCluster deletes Certificates and then
/// their Secrets. A Secret not issued yet is left for a later pass; one already owned is not written.
async fn ensure_secret_owned_by_certificate(
    ctx: &MtlsContext,
    namespace: &str,
    certificate: &DynamicObject,
) -> Result<(), kube::Error> {
    let Some(secret_name) = certificate.data.pointer("/spec/secretName").and_then(Value::as_str) else {
        return Ok(());
    };
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), namespace);
    let Some(mut secret) = api.get_opt(secret_name).await? else {
        return Ok(());
    };
    let owner = OwnerReference {
        api_version: CERT_MANAGER_API_VERSION.to_owned(),
        kind: CERTIFICATE_KIND.to_owned(),
        name: certificate.name_any(),
        uid: certificate.uid().unwrap_or_default(),
        controller: None,
        block_owner_deletion: Some(true),
    };
    let owners = secret.metadata.owner_references.get_or_insert_with(Vec::new);
    let same_owner = |o: &OwnerReference| {
        o.kind == owner.kind && o.name == owner.name && o.api_version.split('/').next() == Some(CERT_MANAGER_GROUP)
    };
    match owners.iter_mut().find(|o| same_owner(o)) {
        Some(existing) if *existing == owner => return Ok(()),
        Some(existing) => *existing = owner,
        None => owners.push(owner),
    }
    api.replace(secret_name, &PostParams::default(), &secret).await?;
    Ok(())
}

fn set_spec(data: &mut Value, spec: Value) {
    match data {
        Value::Object(map) => {
            map.insert("spec".to_owned(), spec);
        }
        other => *other = serde_json::json!({"spec": spec}),
    }
}
