//! KAI scheduler (`--batch-scheduler=kai-scheduler`): no objects are created (KAI's PodGrouper
//! does that); children get `schedulerName: kai-scheduler` and the parent's
//! `kai.scheduler/queue` label. RayJobs in `K8sJobMode` are rejected.

use ray_api::{JobSubmissionMode, RayJob};

use crate::constants::{KAI_QUEUE_LABEL, KAI_SCHEDULER_NAME};
use crate::error::GangError;
use crate::parent::{Child, GangLog, GangLogLevel, Parent};

/// KAI's `DoBatchSchedulingOnSubmission` for a RayJob: an error in `K8sJobMode` (the submitter
/// starts after the cluster is ready, so the gang could never form); otherwise nothing.
/// An unset mode is Go's empty string and passes; apply the CRD default first if wanted.
pub fn check_job(job: &RayJob) -> Result<(), GangError> {
    match job.spec.submission_mode {
        Some(JobSubmissionMode::K8sJobMode) => Err(GangError::KaiK8sJobMode),
        _ => Ok(()),
    }
}

/// KAI's `AddMetadataToChildResource`: `schedulerName: kai-scheduler`, and the queue label when the
/// parent has a non-empty one (otherwise an info log: the pod will stay pending in KAI).
pub fn decorate(parent: Parent<'_>, child: &mut Child<'_>) -> Vec<GangLog> {
    child.set_scheduler_name(KAI_SCHEDULER_NAME);
    match parent.non_empty_label(KAI_QUEUE_LABEL) {
        Some(queue) => {
            child.set_label(KAI_QUEUE_LABEL, queue);
            Vec::new()
        }
        None => vec![GangLog {
            level: GangLogLevel::Info,
            message: format!("Queue label missing from parent; pod will remain pending ({KAI_QUEUE_LABEL})"),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::BatchScheduler;
    use crate::test_fixtures::*;
    use serde_json::json;

    #[test]
    fn golden_g47_queue_label_is_copied() {
        let c = t_cluster(1, &[(KAI_QUEUE_LABEL, "test-queue")]);
        let j = job("j", &[(KAI_QUEUE_LABEL, "test-queue")], json!({"entrypoint": "x"}));
        for parent in [Parent::Cluster(&c), Parent::Job(&j)] {
            let mut p = pod(&[("existing-label", "value"), ("app", "ray")]);
            let logs = BatchScheduler::Kai.decorate_pod(parent, &mut p, "headgroup");
            assert!(logs.is_empty());
            assert_eq!(
                p.metadata.labels.unwrap(),
                map(&[
                    ("app", "ray"),
                    ("existing-label", "value"),
                    (KAI_QUEUE_LABEL, "test-queue")
                ])
            );
            assert_eq!(p.spec.unwrap().scheduler_name.as_deref(), Some("kai-scheduler"));
        }
    }

    #[test]
    fn missing_queue_logs_and_k8s_job_mode_is_rejected() {
        let c = t_cluster(1, &[(KAI_QUEUE_LABEL, "")]);
        let mut p = pod(&[]);
        let logs = BatchScheduler::Kai.decorate_pod(Parent::Cluster(&c), &mut p, "headgroup");
        assert_eq!(logs.len(), 1);
        assert_eq!(logs[0].level, GangLogLevel::Info);
        assert!(p.metadata.labels.unwrap_or_default().is_empty());
        assert_eq!(p.spec.unwrap().scheduler_name.as_deref(), Some("kai-scheduler"));

        let err = BatchScheduler::Kai
            .pod_group_for_job(&t_job(1, Some("K8sJobMode")))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "KAI-Scheduler does not support RayJob with K8sJobMode: the submitter pod is created after RayCluster \
             is ready, preventing proper gang scheduling"
        );
        for mode in [None, Some("HTTPMode"), Some("SidecarMode"), Some("InteractiveMode")] {
            assert_eq!(BatchScheduler::Kai.pod_group_for_job(&t_job(1, mode)), Ok(None));
        }
        assert_eq!(BatchScheduler::Kai.pod_group_for_cluster(&t_cluster(1, &[])), Ok(None));
    }
}
