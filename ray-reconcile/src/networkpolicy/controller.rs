//! The NetworkPolicy controller's executor and wiring (gate `RayClusterNetworkPolicy`): one kube-runtime
//! [`Controller`] per watch scope over RayClusters, triggered when a cluster's generation changes (label or
//! status edits do not count) and when a NetworkPolicy it owns changes, so hand edits are reverted. It keeps
//! a RayCluster store of its own, which exists only while the gate is on. No timed requeue; failed passes
//! back off per cluster (5 ms doubling, at most 1000 s).
//!
//! A pass creates each desired policy (create first; on `AlreadyExists` the stored one is compared and
//! updated), in order, stopping at the first failure, then deletes the cluster's policies that are no longer
//! desired. Policies that the cluster does not control are never touched.

use std::future::Future;
use std::sync::Arc;

use crate::recorder::EventRecorder;
use futures::StreamExt;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::Reporter;
use kube::runtime::{WatchStreamExt, predicates, reflector, watcher};
use kube::{Client, Resource, ResourceExt};
use ray_api::RayCluster;
use ray_api::constants::RAY_CLUSTER_LABEL;
use tracing::{info, warn};

use super::plan::{self, NetworkPolicyPass, reason};
use crate::decode::{UndecodableGauge, UnreadableReporter};
use crate::events::{EventSpec, action};
use crate::kube_errors::{is_already_exists, is_not_found};
use crate::runtime_util::{
    FailureBackoff, custom_resource_changes, note_failed_passes, object_key, owned_changes, publish_event,
    run_per_scope,
};

/// The controller name events are reported under.
pub const NETWORKPOLICY_CONTROLLER: &str = "networkpolicy-controller";

/// Settings of the NetworkPolicy controller.
#[derive(Clone)]
pub struct NetworkPolicyControllerConfig {
    /// `--watch-namespace`, split (empty: all namespaces).
    pub watch_namespaces: Vec<String>,
    /// Passes run side by side.
    pub concurrency: u16,
}

/// Why a NetworkPolicy pass failed.
#[derive(Debug, thiserror::Error)]
pub enum NetworkPolicyError {
    /// An API call failed.
    #[error("{what} NetworkPolicy {namespace}/{name}: {source}")]
    Api {
        /// What was being done (`failed to create`, ...).
        what: &'static str,
        /// Namespace.
        namespace: String,
        /// Policy name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// A policy of the desired name belongs to someone else.
    #[error("NetworkPolicy {namespace}/{name} already exists and is not owned by this RayCluster")]
    NameCollision {
        /// Namespace.
        namespace: String,
        /// Policy name.
        name: String,
    },
}

/// Shared state of the controller.
pub struct NetworkPolicyContext {
    client: Client,
    recorder: EventRecorder,
    failures: FailureBackoff,
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    client: Client,
    config: NetworkPolicyControllerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let ctx = Arc::new(NetworkPolicyContext {
        recorder: EventRecorder::new(
            client.clone(),
            Reporter {
                controller: NETWORKPOLICY_CONTROLLER.to_owned(),
                instance: std::env::var("POD_NAME").ok(),
            },
        ),
        client: client.clone(),
        failures: FailureBackoff::default(),
    });
    run_per_scope(&config.watch_namespaces, shutdown, |namespace, stop| {
        let ns = namespace.as_deref();
        info!(namespace = ns.unwrap_or("<all>"), "starting NetworkPolicy controller");
        let (reader, writer) = reflector::store();
        // The RayCluster controller reports unreadable clusters (event and gauge); this watch skips them quietly.
        let unreadable = UnreadableReporter::new::<RayCluster>(None, UndecodableGauge::default());
        let clusters = custom_resource_changes::<RayCluster>(client.clone(), ns, writer, unreadable)
            .predicate_filter(predicates::generation, Default::default());
        let policies =
            owned_changes::<NetworkPolicy>(client.clone(), ns, watcher::Config::default().labels(RAY_CLUSTER_LABEL));
        Controller::for_stream(clusters, reader)
            .owns_stream(policies)
            .with_config(kube::runtime::controller::Config::default().concurrency(config.concurrency))
            .graceful_shutdown_on(stop)
            .run(reconcile, error_policy, Arc::clone(&ctx))
            .for_each(note_failed_passes("networkpolicy"))
    })
    .await;
}

fn error_policy(cluster: Arc<RayCluster>, error: &NetworkPolicyError, ctx: Arc<NetworkPolicyContext>) -> Action {
    let delay = ctx.failures.next_delay(object_key(cluster.as_ref()));
    warn!(raycluster = %cluster.name_any(), error = %error, retry_in = ?delay, "networkpolicy reconcile failed");
    Action::requeue(delay)
}

/// One pass over a RayCluster's NetworkPolicies.
#[tracing::instrument(skip_all, fields(raycluster = %cluster.name_any(), namespace = cluster.namespace().unwrap_or_default()))]
async fn reconcile(cluster: Arc<RayCluster>, ctx: Arc<NetworkPolicyContext>) -> Result<Action, NetworkPolicyError> {
    if let NetworkPolicyPass::Converge(desired) = plan::plan(&cluster) {
        let namespace = cluster.namespace().unwrap_or_default();
        let api: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), &namespace);
        for policy in &desired {
            ensure(&ctx, &api, &cluster, policy).await?;
        }
        delete_stale(&ctx, &api, &cluster, &desired).await?;
    }
    ctx.failures.reset(&object_key(cluster.as_ref()));
    Ok(Action::await_change())
}

async fn publish(ctx: &NetworkPolicyContext, cluster: &RayCluster, event: EventSpec) {
    publish_event(&ctx.recorder, &cluster.object_ref(&()), event).await;
}

/// Creates `desired`, or brings the stored policy of its name up to date.
async fn ensure(
    ctx: &NetworkPolicyContext,
    api: &Api<NetworkPolicy>,
    cluster: &RayCluster,
    desired: &NetworkPolicy,
) -> Result<(), NetworkPolicyError> {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = desired.name_any();
    let failed = |what, source| NetworkPolicyError::Api {
        what,
        namespace: namespace.clone(),
        name: name.clone(),
        source,
    };
    match api.create(&PostParams::default(), desired).await {
        Ok(_) => {
            let note = format!("Created NetworkPolicy {namespace}/{name}");
            publish(
                ctx,
                cluster,
                EventSpec::normal(reason::CREATED_NETWORK_POLICY, action::CREATE, note),
            )
            .await;
            return Ok(());
        }
        Err(e) if is_already_exists(&e) => {}
        Err(e) => {
            let note = format!("Failed to create NetworkPolicy {namespace}/{name}: {e}");
            let event = EventSpec::warning(reason::FAILED_TO_CREATE_NETWORK_POLICY, action::CREATE, note);
            publish(ctx, cluster, event).await;
            return Err(failed("failed to create", e));
        }
    }
    let existing = api.get(&name).await.map_err(|e| failed("failed to get", e))?;
    if !plan::controlled_by(&existing.metadata, cluster) {
        let note = format!(
            "NetworkPolicy {namespace}/{name} already exists and is not owned by this RayCluster, network isolation will not be applied. Rename the existing NetworkPolicy or use a different RayCluster name to avoid the collision"
        );
        let event = EventSpec::warning(reason::NETWORK_POLICY_NAME_COLLISION, action::VALIDATE, note);
        publish(ctx, cluster, event).await;
        return Err(NetworkPolicyError::NameCollision { namespace, name });
    }
    let Some(update) = plan::updated(&existing, desired) else {
        return Ok(());
    };
    match api.replace(&name, &PostParams::default(), &update).await {
        Ok(_) => {
            let note = format!("Updated NetworkPolicy {namespace}/{name}");
            publish(
                ctx,
                cluster,
                EventSpec::normal(reason::UPDATED_NETWORK_POLICY, action::UPDATE, note),
            )
            .await;
            Ok(())
        }
        Err(e) => {
            let note = format!("Failed to update NetworkPolicy {namespace}/{name}: {e}");
            let event = EventSpec::warning(reason::FAILED_TO_UPDATE_NETWORK_POLICY, action::UPDATE, note);
            publish(ctx, cluster, event).await;
            Err(failed("failed to update", e))
        }
    }
}

/// Deletes the cluster's policies that are no longer desired.
async fn delete_stale(
    ctx: &NetworkPolicyContext,
    api: &Api<NetworkPolicy>,
    cluster: &RayCluster,
    desired: &[NetworkPolicy],
) -> Result<(), NetworkPolicyError> {
    let namespace = cluster.namespace().unwrap_or_default();
    let selector = format!("{RAY_CLUSTER_LABEL}={}", cluster.name_any());
    let existing = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|source| NetworkPolicyError::Api {
            what: "failed to list",
            namespace: namespace.clone(),
            name: String::new(),
            source,
        })?;
    for name in plan::stale(&existing.items, desired, cluster) {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                let note = format!("Deleted NetworkPolicy {namespace}/{name}");
                publish(
                    ctx,
                    cluster,
                    EventSpec::normal(reason::DELETED_NETWORK_POLICY, action::DELETE, note),
                )
                .await;
            }
            Err(e) if is_not_found(&e) => {}
            Err(e) => {
                let note = format!("Failed to delete NetworkPolicy {namespace}/{name}: {e}");
                let event = EventSpec::warning(reason::FAILED_TO_DELETE_NETWORK_POLICY, action::DELETE, note);
                publish(ctx, cluster, event).await;
                return Err(NetworkPolicyError::Api {
                    what: "failed to delete",
                    namespace: namespace.clone(),
                    name: name.to_owned(),
                    source: e,
                });
            }
        }
    }
    Ok(())
}
