//! KubeRay's RayJob hooks of a batch scheduler (Volcano): the submission hook syncs the job's
//! PodGroup on every `Initializing` pass before the cluster is created, and the completion hook
//! shrinks the PodGroup when the job is suspended, retried or finished. (The RayCluster, in
//! K8sJobMode, and the submitter pod template are decorated where they are built.)

use kube::{Api, ResourceExt};
use ray_api::{JobDeploymentStatus, JobSubmissionMode, RayCluster, RayJob, RayJobStatus};
use ray_gang::scheduler::{
    CLEANED_UP_EVENT_REASON, CLEANUP_FAILED_EVENT_REASON, cleaned_up_event_message, cleanup_failed_event_message,
};
use ray_gang::{CleanupStep, GangLog, GangLogLevel, LiveCluster, Parent};
use tracing::{debug, info, warn};

use super::controller::RayJobContext;
use super::error::RayJobError;
use crate::events::{EventSpec, action};
use crate::pod_group_sync::{pod_group_name, sync_pod_group};

/// Whether this pass runs the batch scheduler's submission hook: every `Initializing` pass that
/// KubeRay's switch reaches the hook in, i.e. not when the job is being suspended or has just
/// failed (deadline or validation) instead.
pub fn batch_scheduling_due(job: &RayJob, old: &RayJobStatus, planned: &RayJobStatus) -> bool {
    old.job_deployment_status == Some(JobDeploymentStatus::Initializing)
        && !job.spec.suspend()
        && !matches!(
            planned.job_deployment_status,
            Some(JobDeploymentStatus::Suspending | JobDeploymentStatus::Failed)
        )
}

/// Whether the completion hook runs after the pass with its errors only reported (KubeRay's deferred
/// call in `Complete` / `Failed`) rather than in place, failing the pass (`Suspending` / `Retrying`).
pub fn cleanup_deferred(old: &RayJobStatus) -> bool {
    matches!(
        old.job_deployment_status,
        Some(JobDeploymentStatus::Complete | JobDeploymentStatus::Failed)
    )
}

/// The job with the CRD's `submissionMode` default (`K8sJobMode`) filled in when unset, as an API
/// server that applies schema defaults would store it: the gang's size depends on the mode.
pub fn with_mode_default(job: &RayJob) -> RayJob {
    let mut job = job.clone();
    job.spec.submission_mode.get_or_insert(JobSubmissionMode::K8sJobMode);
    job
}

/// The submission hook: create or resize the job's PodGroup before its cluster is created. An
/// error fails the pass (requeue).
pub(super) async fn submit_to_batch_scheduler(
    ctx: &RayJobContext,
    job: &RayJob,
    namespace: &str,
) -> Result<(), RayJobError> {
    let Some(desired) = ctx.config.scheduler.pod_group_for_job(&with_mode_default(job))? else {
        return Ok(());
    };
    if sync_pod_group(&ctx.client, namespace, &desired).await? {
        debug!(rayjob = %job.name_any(), podgroup = %pod_group_name(&desired), "synced the RayJob's PodGroup");
    }
    Ok(())
}

/// The completion hook with its events: `BatchSchedulerCleanedUp` when it changed the PodGroup,
/// `FailedToCleanupBatchScheduler` (and the error) when it failed.
pub(super) async fn cleanup_batch_scheduler(
    ctx: &RayJobContext,
    job: &RayJob,
    clusters: &Api<RayCluster>,
) -> Result<(), RayJobError> {
    let namespace = job.namespace().unwrap_or_default();
    let name = job.name_any();
    match shrink_pod_group(ctx, job, clusters, &namespace).await {
        Ok(false) => Ok(()),
        Ok(true) => {
            let note = cleaned_up_event_message(&namespace, &name);
            ctx.publish(job, EventSpec::normal(CLEANED_UP_EVENT_REASON, action::CLEANUP, note))
                .await;
            Ok(())
        }
        Err(e) => {
            let note = cleanup_failed_event_message(&namespace, &name, &e.to_string());
            ctx.publish(
                job,
                EventSpec::warning(CLEANUP_FAILED_EVENT_REASON, action::CLEANUP, note),
            )
            .await;
            Err(e)
        }
    }
}

/// KubeRay's `CleanupOnCompletion`: resize the PodGroup to what the job's cluster still holds
/// (nothing once it is gone). Returns whether the PodGroup was written.
async fn shrink_pod_group(
    ctx: &RayJobContext,
    job: &RayJob,
    clusters: &Api<RayCluster>,
    namespace: &str,
) -> Result<bool, RayJobError> {
    let scheduler = ctx.config.scheduler;
    let CleanupStep::ReadCluster { name } = scheduler.cleanup_step(Parent::Job(job)) else {
        return Ok(false);
    };
    let live = clusters.get_opt(&name).await?;
    let cluster = live.as_ref().map_or(LiveCluster::NotFound, LiveCluster::Found);
    let Some(desired) = scheduler.cleanup_pod_group(job, cluster)? else {
        return Ok(false);
    };
    Ok(sync_pod_group(&ctx.client, namespace, &desired).await?)
}

/// Logs what a batch scheduler's decoration reported.
pub(super) fn log_gang(rayjob: &str, logs: Vec<GangLog>) {
    for log in logs {
        match log.level {
            GangLogLevel::Info => info!(rayjob, message = %log.message, "batch scheduler"),
            GangLogLevel::Error => warn!(rayjob, message = %log.message, "batch scheduler"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ray_gang::BatchScheduler;
    use serde_json::json;

    fn status(deployment: JobDeploymentStatus) -> RayJobStatus {
        RayJobStatus {
            job_deployment_status: Some(deployment),
            ..RayJobStatus::default()
        }
    }

    fn job(suspend: bool) -> RayJob {
        let mut job = RayJob::new("rayjob-sample", Default::default());
        job.spec.suspend = Some(suspend);
        job
    }

    #[test]
    fn submission_hook_runs_on_initializing_passes_only() {
        use JobDeploymentStatus::*;
        let initializing = status(Initializing);
        // Every Initializing pass, also the one that moves on to Running.
        assert!(batch_scheduling_due(&job(false), &initializing, &status(Initializing)));
        assert!(batch_scheduling_due(&job(false), &initializing, &status(Running)));
        // Not when the pass suspends or fails the job instead.
        assert!(!batch_scheduling_due(&job(true), &initializing, &status(Suspending)));
        assert!(!batch_scheduling_due(&job(false), &initializing, &status(Failed)));
        // Not in any other state.
        for other in [New, Running, Complete, Failed, Suspending, Suspended, Retrying, Waiting] {
            assert!(!batch_scheduling_due(
                &job(false),
                &status(other.clone()),
                &status(other)
            ));
        }
    }

    #[test]
    fn completion_hook_is_deferred_only_for_finished_jobs() {
        use JobDeploymentStatus::*;
        assert!(cleanup_deferred(&status(Complete)));
        assert!(cleanup_deferred(&status(Failed)));
        assert!(!cleanup_deferred(&status(Suspending)));
        assert!(!cleanup_deferred(&status(Retrying)));
        assert!(!cleanup_deferred(&RayJobStatus::default()));
    }

    #[test]
    fn unset_submission_mode_sizes_the_gang_as_k8s_job_mode() {
        let mut job: RayJob = serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rayjob-sample", "namespace": "default"},
            "spec": {"rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                "containers": [{"name": "ray-head", "resources": {"requests": {"cpu": "1"}}}]
            }}}}}
        }))
        .unwrap();
        let cpu = |job: &RayJob| match BatchScheduler::Volcano.pod_group_for_job(job).unwrap() {
            Some(ray_gang::DesiredPodGroup::Volcano(pg)) => pg.spec.min_resources.unwrap()["cpu"].0.clone(),
            other => panic!("expected a Volcano PodGroup, got {other:?}"),
        };
        // The default submitter's 500m joins the head's CPU, as for an explicit K8sJobMode.
        let defaulted = cpu(&with_mode_default(&job));
        job.spec.submission_mode = Some(JobSubmissionMode::K8sJobMode);
        assert_eq!(defaulted, cpu(&job));
        assert_ne!(defaulted, "1");
        // An explicit mode is kept.
        job.spec.submission_mode = Some(JobSubmissionMode::HttpMode);
        assert_eq!(cpu(&with_mode_default(&job)), "1");
    }
}
