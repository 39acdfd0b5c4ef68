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
