//! GCS fault tolerance: the Redis cleanup finalizer, handled right after validation and before any
//! child is reconciled.
//!
//! A cluster with external-Redis GCS FT gets `ray.io/gcs-ft-redis-cleanup-finalizer`; when it is
//! deleted its pods are removed first, then a Job built by `ray_podgen` deletes the cluster's
//! storage namespace in Redis, and the finalizer goes once the Job finished (or the deletion
//! timeout passed).

use super::error::{PassError, ReconcileError};
use super::executor::{Context, SHORT_REQUEUE, cluster_key};
use super::observed::PodRole;
use super::podgen::ClusterPods;
use crate::events::{EventSpec, action, reason};
use crate::fair_controller::Action;
use crate::finalizers::{self, FinalizerGuard};
use crate::kube_errors::is_already_exists;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Resource, ResourceExt};
use ray_api::RayCluster;
use ray_api::constants::{
    GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER, NODE_TYPE_HEAD, NODE_TYPE_REDIS_CLEANUP, NODE_TYPE_WORKER,
    RAY_CLUSTER_LABEL, RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION, RAY_NODE_TYPE_LABEL,
    RAYCLUSTER_GCS_FT_DELETION_TIMEOUT_DEFAULT_SECONDS,
};
use std::time::Duration;

/// How long to wait for the head to stop writing to Redis after its pods were deleted.
const HEAD_STOP_WAIT: Duration = Duration::from_secs(10);

fn has_finalizer(cluster: &RayCluster) -> bool {
    finalizers::has_finalizer(cluster, GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER)
}

/// The cluster's API; finalizer writes are guarded by the resourceVersion read (KubeRay uses an Update).
fn clusters(cluster: &RayCluster, ctx: &Context) -> Api<RayCluster> {
    Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default())
}

async fn add_finalizer(cluster: &RayCluster, ctx: &Context) -> Result<(), kube::Error> {
    finalizers::add_finalizer(
        &clusters(cluster, ctx),
        cluster,
        GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER,
        FinalizerGuard::ResourceVersion,
    )
    .await
    .map(drop)
}

async fn remove_finalizer(cluster: &RayCluster, ctx: &Context) -> Result<(), kube::Error> {
    finalizers::remove_finalizer(
        &clusters(cluster, ctx),
        cluster,
        GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER,
        FinalizerGuard::ResourceVersion,
    )
    .await
    .map(drop)
}

/// The deletion timeout: annotation `ray.io/gcs-ft-deletion-timeout` (a positive integer), else 300 s.
pub fn deletion_timeout(cluster: &RayCluster) -> Duration {
    let seconds = cluster
        .annotations()
        .get(RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION)
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .unwrap_or(RAYCLUSTER_GCS_FT_DELETION_TIMEOUT_DEFAULT_SECONDS);
    Duration::from_secs(seconds)
}

/// Whether a Job finished: `Complete`, `Failed` or `FailureTarget` True.
pub fn job_finished(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conds| {
            conds
                .iter()
                .any(|c| matches!(c.type_.as_str(), "Complete" | "Failed" | "FailureTarget") && c.status == "True")
        })
}

/// The finalizer step of a pass: `Some(action)` ends the pass early (finalizer added, cleanup in
/// progress or done).
pub async fn reconcile_finalizer(cluster: &RayCluster, ctx: &Context) -> Result<Option<Action>, ReconcileError> {
    let deleting = cluster.metadata.deletion_timestamp.is_some();
    let embedded = ray_podgen::cluster::gcs_ft_embedded(&cluster.spec);
    if deleting && embedded && has_finalizer(cluster) {
        remove_finalizer(cluster, ctx).await?;
        return Ok(Some(Action::await_change()));
    }
    let enabled = ctx.config.enable_gcs_ft_redis_cleanup
        && ray_podgen::cluster::gcs_ft_enabled(&cluster.spec, cluster.metadata.annotations.as_ref())
        && !embedded;
    if !enabled {
        return Ok(None);
    }
    if !deleting {
        if has_finalizer(cluster) {
            return Ok(None);
        }
        if let Err(e) = add_finalizer(cluster, ctx).await {
            return Err(PassError::plain(format!(
                "failed to add the finalizer {GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER} to the RayCluster: {e}"
            ))
            .into());
        }
        return Ok(Some(Action::requeue(SHORT_REQUEUE)));
    }
    cleanup(cluster, ctx).await.map(Some)
}

async fn cleanup(cluster: &RayCluster, ctx: &Context) -> Result<Action, ReconcileError> {
    let key = cluster_key(cluster);
    let (ns, name) = (key.namespace.as_str(), key.name.as_str());
    let had_heads = ctx.pods.cluster(&key).iter().any(|p| p.role == PodRole::Head);
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    for node_type in [NODE_TYPE_HEAD, NODE_TYPE_WORKER] {
        let live = ctx
            .pods
            .cluster(&key)
            .iter()
            .filter(|p| {
                let role = if node_type == NODE_TYPE_HEAD {
                    PodRole::Head
                } else {
                    PodRole::Worker
                };
                p.role == role && !p.pod.deletion_timestamp_set
            })
            .count();
        if live > 0 {
            let selector = format!("{RAY_CLUSTER_LABEL}={name},{RAY_NODE_TYPE_LABEL}={node_type}");
            pods.delete_collection(&DeleteParams::default(), &ListParams::default().labels(&selector))
                .await?;
        }
    }
    if had_heads {
        return Ok(Action::requeue(HEAD_STOP_WAIT));
    }

    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), ns);
    let selector = format!("{RAY_CLUSTER_LABEL}={name},{RAY_NODE_TYPE_LABEL}={NODE_TYPE_REDIS_CLEANUP}");
    let existing = jobs.list(&ListParams::default().labels(&selector)).await?.items;

    if has_finalizer(cluster)
        && let Some(ts) = &cluster.metadata.deletion_timestamp
    {
        let elapsed = k8s_openapi::jiff::Timestamp::now().duration_since(ts.0);
        let timeout = deletion_timeout(cluster);
        if elapsed.as_secs_f64() >= timeout.as_secs_f64() {
            remove_finalizer(cluster, ctx).await?;
            let note = format!(
                "RayCluster {ns}/{name} is stuck in deletion for {}s; removed the finalizer \
                 {GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER} without cleaning up Redis. The Redis storage \
                 namespace may need manual cleanup",
                timeout.as_secs()
            );
            ctx.publish(
                cluster,
                EventSpec::warning(reason::FORCE_DELETED_STUCK_CLUSTER, action::CLEANUP, note),
            )
            .await;
            return Ok(Action::await_change());
        }
    }

    if let Some(job) = existing.first() {
        if job_finished(job) {
            if has_finalizer(cluster) {
                remove_finalizer(cluster, ctx).await?;
            }
            return Ok(Action::await_change());
        }
        return Ok(Action::requeue(SHORT_REQUEUE));
    }

    let head = ClusterPods::new(cluster, &ctx.podgen)
        .head_pod()
        .map_err(|e| PassError::plain(e.to_string()))?;
    let job = ray_podgen::gcs_ft::build_redis_cleanup_job(cluster, &head, &ctx.podgen.config);
    let job_name = job.meta().name.clone().unwrap_or_default();
    match jobs.create(&PostParams::default(), &job).await {
        Ok(_) => {
            ctx.publish(
                cluster,
                EventSpec::normal(
                    reason::CREATED_REDIS_CLEANUP_JOB,
                    action::CREATE,
                    format!("Created Redis cleanup Job {ns}/{job_name}"),
                ),
            )
            .await;
            Ok(Action::requeue(SHORT_REQUEUE))
        }
        Err(e) if is_already_exists(&e) => Ok(Action::requeue(SHORT_REQUEUE)),
        Err(e) => {
            let note = format!("Failed to create Redis cleanup Job {ns}/{job_name}, {e}");
            ctx.publish(
                cluster,
                EventSpec::warning(reason::FAILED_TO_CREATE_REDIS_CLEANUP_JOB, action::CREATE, note),
            )
            .await;
            Err(e.into())
        }
    }
}
