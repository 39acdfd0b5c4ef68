//! Unit tests of the RayJob plan, named after the KubeRay golden cases (by KubeRay's case numbers)
//! they cover.

use super::*;
use k8s_openapi::api::batch::v1::{JobCondition, JobStatus as BatchJobStatus};
use ray_api::{DeletionPolicy, DeletionStrategy, RayClusterStatus};

struct FixedSuffixes(Vec<&'static str>);

impl SuffixSource for FixedSuffixes {
    fn next_suffix(&mut self) -> String {
        if self.0.is_empty() {
            return "zzzzz".to_owned();
        }
        self.0.remove(0).to_owned()
    }
}

const SAMPLE: &str = r#"
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: rayjob-sample
  namespace: default
spec:
  entrypoint: python /home/ray/samples/sample_code.py
  rayClusterSpec:
    rayVersion: "2.46.0"
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.46.0
              ports:
                - containerPort: 6379
                  name: gcs-server
                - containerPort: 8265
                  name: dashboard
                - containerPort: 10001
                  name: client
"#;

fn sample() -> RayJob {
    ray_api::yaml::from_yaml_str(SAMPLE).unwrap()
}

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap()
}

fn with_status(mut job: RayJob, f: impl FnOnce(&mut RayJobStatus)) -> RayJob {
    let mut status = job.status.take().unwrap_or_default();
    f(&mut status);
    job.status = Some(status);
    job
}

fn cluster(name: &str, ready: bool) -> RayCluster {
    let job = sample();
    let mut c = RayCluster::new(name, job.spec.ray_cluster_spec.clone().unwrap());
    c.metadata.namespace = Some("default".to_owned());
    c.status = Some(RayClusterStatus {
        state: ready.then_some(ClusterState::Ready),
        ..RayClusterStatus::default()
    });
    c
}

fn observe<'a>(
    cluster: Option<&'a RayCluster>,
    submitter: Option<SubmitterObservation>,
    now: Timestamp,
) -> RayJobObservation<'a> {
    RayJobObservation {
        cluster,
        submitter,
        sidecar: None,
        dashboard: DashboardObservation::NotQueried,
        now,
    }
}

fn run(job: &RayJob, observed: &RayJobObservation<'_>) -> RayJobPlan {
    plan_ray_job(
        job,
        observed,
        &RayJobPlanConfig::default(),
        &mut FixedSuffixes(vec!["abcde", "b5rs7"]),
    )
    .unwrap()
}

fn running(job: RayJob) -> RayJob {
    with_status(job, |s| {
        s.job_deployment_status = Some(JobDeploymentStatus::Running);
        s.job_status = Some(JobStatus::Running);
        s.job_id = Some("rayjob-sample-abcde".to_owned());
        s.ray_cluster_name = Some("rayjob-sample-b5rs7".to_owned());
        s.dashboard_url = Some("rayjob-sample-b5rs7-head-svc.default.svc.cluster.local:8265".to_owned());
        s.start_time = Some(Time(t(0)));
        s.ray_cluster_status = Some(RayClusterStatus {
            state: Some(ClusterState::Ready),
            ..RayClusterStatus::default()
        });
    })
}

fn info(status: JobStatus, end_ms: u64) -> DashboardObservation {
    DashboardObservation::Info(DashboardJobInfo {
        status,
        message: "msg".to_owned(),
        start_time_ms: 1_700_000_000_000,
        end_time_ms: end_ms,
    })
}

fn finished_submitter(at: Timestamp) -> SubmitterObservation {
    SubmitterObservation {
        failed: None,
        finished_at: Some(at),
        deleting: false,
    }
}

fn deployment(plan: &RayJobPlan) -> JobDeploymentStatus {
    plan.status
        .job_deployment_status
        .clone()
        .unwrap_or(JobDeploymentStatus::New)
}

/// G22 happy path, step by step (K8sJobMode, shutdownAfterJobFinishes=true).
#[test]
fn golden_g22_happy_path_k8s_job_mode() {
    let mut job = sample();
    job.spec.shutdown_after_job_finishes = Some(true);

    // New -> Initializing with finalizer, job id, cluster name, start time.
    let plan = run(&job, &observe(None, None, t(0)));
    assert_eq!(plan.actions, vec![RayJobAction::AddFinalizer]);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Initializing);
    assert_eq!(plan.status.job_id.as_deref(), Some("rayjob-sample-abcde"));
    assert_eq!(plan.status.ray_cluster_name.as_deref(), Some("rayjob-sample-b5rs7"));
    assert_eq!(plan.status.start_time, Some(Time(t(0))));
    assert!(plan.persist);
    assert_eq!(plan.status.failed, Some(0));
    assert_eq!(plan.status.succeeded, Some(0));
    job.status = Some(plan.status);
    job.metadata.finalizers = Some(vec![RAY_JOB_STOP_JOB_FINALIZER.to_owned()]);

    // Initializing, no cluster -> create it, stay.
    let plan = run(&job, &observe(None, None, t(1)));
    assert_eq!(
        plan.actions,
        vec![RayJobAction::CreateRayCluster {
            name: "rayjob-sample-b5rs7".to_owned()
        }]
    );
    assert_eq!(deployment(&plan), JobDeploymentStatus::Initializing);

    // Cluster not ready -> stay, copy status.
    let not_ready = cluster("rayjob-sample-b5rs7", false);
    let plan = run(&job, &observe(Some(&not_ready), None, t(2)));
    assert!(plan.actions.is_empty());
    assert_eq!(deployment(&plan), JobDeploymentStatus::Initializing);

    // Cluster ready -> dashboard URL, submitter Job, Running.
    let ready = cluster("rayjob-sample-b5rs7", true);
    let plan = run(&job, &observe(Some(&ready), None, t(3)));
    assert_eq!(plan.actions, vec![RayJobAction::CreateSubmitterJob]);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Running);
    assert_eq!(
        plan.status.dashboard_url.as_deref(),
        Some("rayjob-sample-b5rs7-head-svc.default.svc.cluster.local:8265")
    );
    job.status = Some(plan.status);

    // Dashboard SUCCEEDED but the submitter is not finished -> stays Running.
    let mut observed = observe(Some(&ready), Some(SubmitterObservation::default()), t(4));
    observed.dashboard = info(JobStatus::Succeeded, 1_700_000_004_000);
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Running);
    assert_eq!(plan.status.job_status, Some(JobStatus::Succeeded));
    job.status = Some(plan.status);

    // Submitter complete -> Complete, endTime set, succeeded counted.
    observed.submitter = Some(finished_submitter(t(5)));
    observed.now = t(6);
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Complete);
    assert_eq!(plan.status.end_time, Some(Time(t(6))));
    assert_eq!(plan.status.succeeded, Some(1));
    assert_eq!(plan.status.failed, Some(0));
    assert!(plan.persist);
    job.status = Some(plan.status);

    // Complete + shutdown (ttl 0) -> RayCluster deleted, submitter Job kept.
    observed.now = t(7);
    let plan = run(&job, &observed);
    assert_eq!(
        plan.actions,
        vec![
            RayJobAction::CleanupBatchScheduler,
            RayJobAction::DeleteRayCluster {
                name: "rayjob-sample-b5rs7".to_owned()
            }
        ]
    );
    assert!(!plan.persist);
    assert_eq!(plan.requeue, None);
}

#[test]
fn golden_g22_ttl_after_finished_waits() {
    let mut job = running(sample());
    job.spec.shutdown_after_job_finishes = Some(true);
    job.spec.ttl_seconds_after_finished = Some(10);
    let job = with_status(job, |s| {
        s.job_deployment_status = Some(JobDeploymentStatus::Complete);
        s.job_status = Some(JobStatus::Succeeded);
        s.end_time = Some(Time(t(100)));
    });
    let ready = cluster("rayjob-sample-b5rs7", true);
    let plan = run(&job, &observe(Some(&ready), None, t(104)));
    assert_eq!(plan.actions, vec![RayJobAction::CleanupBatchScheduler]);
    assert_eq!(plan.requeue, Some(Duration::from_secs(8)));
    let plan = run(&job, &observe(Some(&ready), None, t(110)));
    assert!(plan.actions.contains(&RayJobAction::DeleteRayCluster {
        name: "rayjob-sample-b5rs7".to_owned()
    }));
    // Without shutdownAfterJobFinishes nothing is deleted.
    let mut keep = job.clone();
    keep.spec.shutdown_after_job_finishes = None;
    keep.spec.ttl_seconds_after_finished = None;
    let plan = run(&keep, &observe(Some(&ready), None, t(110)));
    assert_eq!(plan.actions, vec![RayJobAction::CleanupBatchScheduler]);
}

#[test]
fn legacy_deletion_strategy_delete_self_on_success() {
    let mut job = running(sample());
    job.spec.deletion_strategy = Some(DeletionStrategy {
        on_success: Some(DeletionPolicy {
            policy: Some(DeletionPolicyType::DeleteSelf),
        }),
        on_failure: Some(DeletionPolicy {
            policy: Some(DeletionPolicyType::DeleteNone),
        }),
        deletion_rules: None,
    });
    let job = with_status(job, |s| {
        s.job_deployment_status = Some(JobDeploymentStatus::Complete);
        s.job_status = Some(JobStatus::Succeeded);
        s.end_time = Some(Time(t(100)));
    });
    let plan = run(&job, &observe(None, None, t(100)));
    assert_eq!(
        plan.actions,
        vec![RayJobAction::CleanupBatchScheduler, RayJobAction::DeleteSelf]
    );
}

/// G13: a message-only change is not persisted; with a deployment-status change it is.
#[test]
fn golden_g13_message_only_change_not_persisted() {
    let old = RayJobStatus {
        job_deployment_status: Some(JobDeploymentStatus::Running),
        job_status: Some(JobStatus::Running),
        message: Some("old message".to_owned()),
        ..RayJobStatus::default()
    };
    let mut new = old.clone();
    new.message = Some("new message".to_owned());
    assert!(!status_changed(&old, &new));
    new.job_deployment_status = Some(JobDeploymentStatus::Suspending);
    assert!(status_changed(&old, &new));
}

/// G14: setting or clearing `jobStatusCheckFailureStartTime` is persisted.
#[test]
fn golden_g14_failure_start_time_change_persisted() {
    let old = RayJobStatus {
        job_deployment_status: Some(JobDeploymentStatus::Running),
        job_status: Some(JobStatus::Running),
        ..RayJobStatus::default()
    };
    let mut new = old.clone();
    new.job_status_check_failure_start_time = Some(Time(t(0)));
    assert!(status_changed(&old, &new));
    assert!(status_changed(&new, &old));

    // Through the plan: the first dashboard error records the timer and persists it.
    let job = running(sample());
    let ready = cluster("rayjob-sample-b5rs7", true);
    let mut observed = observe(Some(&ready), Some(SubmitterObservation::default()), t(10));
    observed.dashboard = DashboardObservation::Error("connection refused".to_owned());
    let plan = run(&job, &observed);
    assert!(plan.persist);
    assert_eq!(plan.status.job_status_check_failure_start_time, Some(Time(t(10))));
    // A later success clears it (persisted as nil).
    let job = with_status(job, |s| s.job_status_check_failure_start_time = Some(Time(t(10))));
    observed.dashboard = info(JobStatus::Running, 0);
    observed.now = t(20);
    let plan = run(&job, &observed);
    assert!(plan.persist);
    assert_eq!(plan.status.job_status_check_failure_start_time, None);
}

/// G17: `RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS` parsing.
#[test]
fn golden_g17_status_check_timeout_env() {
    assert_eq!(status_check_timeout_from_env(Some("120")), 120);
    assert_eq!(status_check_timeout_from_env(Some("invalid")), 300);
    assert_eq!(status_check_timeout_from_env(Some("0")), 300);
    assert_eq!(status_check_timeout_from_env(None), 300);
}

/// G19: the status-check timeout fails the RayJob with `JobStatusCheckTimeoutExceeded`.
#[test]
fn golden_g19_status_check_timeout() {
    let ready = cluster("rayjob-sample-b5rs7", true);
    let config = RayJobPlanConfig {
        status_check_timeout_seconds: 1,
        ..RayJobPlanConfig::default()
    };
    let mut observed = observe(Some(&ready), Some(SubmitterObservation::default()), t(100));
    observed.dashboard = info(JobStatus::Running, 0);
    // No timestamp / timestamp now: no failure.
    for since in [None, Some(t(100))] {
        let job = with_status(running(sample()), |s| {
            s.job_status_check_failure_start_time = since.map(Time)
        });
        let plan = plan_ray_job(&job, &observed, &config, &mut FixedSuffixes(vec![])).unwrap();
        assert_eq!(deployment(&plan), JobDeploymentStatus::Running);
    }
    let job = with_status(running(sample()), |s| {
        s.job_status_check_failure_start_time = Some(Time(t(98)))
    });
    let plan = plan_ray_job(&job, &observed, &config, &mut FixedSuffixes(vec![])).unwrap();
    assert_eq!(deployment(&plan), JobDeploymentStatus::Failed);
    assert_eq!(plan.status.reason, Some(JobFailedReason::JobStatusCheckTimeoutExceeded));
    let message = plan.status.message.unwrap();
    assert!(message.contains("exceeded timeout of 1s"), "{message}");
    assert_eq!(
        message,
        "Job status checks have been failing since 2023-11-14 22:14:58; exceeded timeout of 1s"
    );
}

/// G25: InteractiveMode waits for `spec.jobId`.
#[test]
fn golden_g25_interactive_mode() {
    let mut job = sample();
    job.spec.submission_mode = Some(JobSubmissionMode::InteractiveMode);
    let plan = run(&job, &observe(None, None, t(0)));
    assert_eq!(plan.status.job_id, None);
    let job = with_status(job, |s| *s = plan.status);
    let ready = cluster("rayjob-sample-abcde", true);
    let plan = run(&job, &observe(Some(&ready), None, t(1)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::Waiting);
    assert!(plan.actions.is_empty());
    let mut job = with_status(job, |s| *s = plan.status);
    let plan = run(&job, &observe(Some(&ready), None, t(2)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::Waiting);
    assert!(!plan.persist);
    job.spec.job_id = Some("fake-id".to_owned());
    let plan = run(&job, &observe(Some(&ready), None, t(3)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::Running);
    assert_eq!(plan.status.job_id.as_deref(), Some("fake-id"));
}

/// G26: suspend on create, resume, Suspending waits for deletion, Suspended with suspend=true.
#[test]
fn golden_g26_suspend() {
    let mut job = sample();
    job.spec.suspend = Some(true);
    job.spec.shutdown_after_job_finishes = Some(true);
    let plan = run(&job, &observe(None, None, t(0)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::Initializing);
    let job = with_status(job, |s| *s = plan.status);
    let plan = run(&job, &observe(None, None, t(1)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::Suspending);
    assert!(plan.actions.is_empty());
    let job = with_status(job, |s| *s = plan.status);
    let plan = run(&job, &observe(None, None, t(2)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::Suspended);
    assert_eq!(plan.status.ray_cluster_name, None);
    assert_eq!(plan.status.job_status, Some(JobStatus::New));
    let mut job = with_status(job, |s| *s = plan.status);

    // Suspended + suspend=true: no requeue, no write.
    let plan = run(&job, &observe(None, None, t(3)));
    assert_eq!(plan.requeue, None);
    assert!(!plan.persist);
    assert!(plan.actions.is_empty());

    // Resume -> New.
    job.spec.suspend = Some(false);
    let plan = run(&job, &observe(None, None, t(4)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::New);
    assert_eq!(plan.status.job_status, Some(JobStatus::New));

    // Suspending with a cluster held by a finalizer stays Suspending even when suspend flips.
    let mut held = cluster("rayjob-sample-b5rs7", true);
    held.metadata.deletion_timestamp = Some(Time(t(5)));
    let suspending = with_status(running(job.clone()), |s| {
        s.job_deployment_status = Some(JobDeploymentStatus::Suspending);
    });
    let plan = run(
        &suspending,
        &observe(Some(&held), Some(SubmitterObservation::default()), t(6)),
    );
    assert_eq!(plan.actions, vec![RayJobAction::DeleteSubmitterJob]);
    assert!(!plan.persist);
    let plan = run(&suspending, &observe(None, None, t(7)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::Suspended);
}

#[test]
fn running_suspend_deletes_cluster_and_submitter() {
    let mut job = running(sample());
    job.spec.suspend = Some(true);
    job.spec.shutdown_after_job_finishes = Some(true);
    let ready = cluster("rayjob-sample-b5rs7", true);
    let plan = run(
        &job,
        &observe(Some(&ready), Some(SubmitterObservation::default()), t(1)),
    );
    assert_eq!(deployment(&plan), JobDeploymentStatus::Suspending);
    let job = with_status(job, |s| *s = plan.status);
    let plan = run(
        &job,
        &observe(Some(&ready), Some(SubmitterObservation::default()), t(2)),
    );
    assert_eq!(
        plan.actions,
        vec![
            RayJobAction::DeleteRayCluster {
                name: "rayjob-sample-b5rs7".to_owned()
            },
            RayJobAction::DeleteSubmitterJob
        ]
    );
}

/// G28 (status part): Waiting outside InteractiveMode fails validation.
#[test]
fn golden_g28_waiting_without_interactive_mode_is_invalid() {
    let job = with_status(sample(), |s| {
        s.job_deployment_status = Some(JobDeploymentStatus::Waiting)
    });
    let plan = run(&job, &observe(None, None, t(0)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::ValidationFailed);
    assert_eq!(plan.status.reason, Some(JobFailedReason::ValidationFailed));
    assert_eq!(
        plan.status.message.as_deref(),
        Some(
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not InteractiveMode"
        )
    );
    assert!(matches!(
        &plan.actions[..],
        [RayJobAction::ValidationFailedEvent {
            reason: "InvalidRayJobStatus",
            ..
        }]
    ));
    assert_eq!(plan.requeue, None);
}

#[test]
fn spec_validation_failure_is_reported() {
    let mut job = sample();
    job.spec.suspend = Some(true);
    let plan = run(&job, &observe(None, None, t(0)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::ValidationFailed);
    assert_eq!(
        plan.status.message.as_deref(),
        Some(
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended"
        )
    );
    assert!(matches!(
        &plan.actions[..],
        [RayJobAction::ValidationFailedEvent { reason: "InvalidRayJobSpec", message }] if message.starts_with("default/rayjob-sample: ")
    ));
}

#[test]
fn active_deadline_fails_without_retry() {
    let mut job = running(sample());
    job.spec.active_deadline_seconds = Some(5);
    job.spec.backoff_limit = Some(2);
    let ready = cluster("rayjob-sample-b5rs7", true);
    let plan = run(
        &job,
        &observe(Some(&ready), Some(SubmitterObservation::default()), t(5)),
    );
    assert_eq!(deployment(&plan), JobDeploymentStatus::Failed);
    assert_eq!(plan.status.reason, Some(JobFailedReason::DeadlineExceeded));
    assert_eq!(
        plan.status.message.as_deref(),
        Some(
            "The RayJob has passed the activeDeadlineSeconds. StartTime: 2023-11-14 22:13:20 +0000 UTC. ActiveDeadlineSeconds: 5"
        )
    );
    assert_eq!(plan.status.failed, Some(1));
    assert_eq!(plan.status.end_time, Some(Time(t(5))));
}

#[test]
fn pre_running_deadline_fails_in_initializing() {
    let mut job = with_status(running(sample()), |s| {
        s.job_deployment_status = Some(JobDeploymentStatus::Initializing);
        s.dashboard_url = None;
    });
    job.spec.pre_running_deadline_seconds = Some(10);
    let plan = run(&job, &observe(None, None, t(10)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::Failed);
    assert_eq!(plan.status.reason, Some(JobFailedReason::PreRunningDeadlineExceeded));
    assert!(plan.actions.is_empty());
}

/// Retries: backoffLimit 1, first attempt FAILED -> Retrying -> New with a fresh cluster; second
/// attempt SUCCEEDED -> Complete with succeeded=1, failed=1.
#[test]
fn backoff_limit_retries_then_completes() {
    let mut job = running(sample());
    job.spec.backoff_limit = Some(1);
    let ready = cluster("rayjob-sample-b5rs7", true);
    let mut observed = observe(Some(&ready), Some(finished_submitter(t(9))), t(10));
    observed.dashboard = info(JobStatus::Failed, 1_700_000_009_000);
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Retrying);
    assert_eq!(plan.status.reason, Some(JobFailedReason::AppFailed));
    assert_eq!(plan.status.failed, Some(1));
    assert_eq!(plan.status.end_time, None);
    let job = with_status(job, |s| *s = plan.status);

    // Retrying tears the attempt down, then resets to New.
    let plan = run(&job, &observe(Some(&ready), Some(finished_submitter(t(9))), t(11)));
    assert_eq!(plan.actions.len(), 2);
    let plan = run(&job, &observe(None, None, t(12)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::New);
    assert_eq!(plan.status.job_id, None);
    let job = with_status(job, |s| *s = plan.status);
    let plan = plan_ray_job(
        &job,
        &observe(None, None, t(13)),
        &RayJobPlanConfig::default(),
        &mut FixedSuffixes(vec!["qqqqq", "wwwww"]),
    )
    .unwrap();
    assert_eq!(plan.status.ray_cluster_name.as_deref(), Some("rayjob-sample-wwwww"));
    let job = running(with_status(job, |s| *s = plan.status));

    // Second attempt succeeds; the failed counter survives.
    let mut observed = observe(Some(&ready), Some(finished_submitter(t(19))), t(20));
    observed.dashboard = info(JobStatus::Succeeded, 1_700_000_019_000);
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Complete);
    assert_eq!(plan.status.succeeded, Some(1));
    assert_eq!(plan.status.failed, Some(1));
}

#[test]
fn submitter_failure_is_submission_failed() {
    let job = running(sample());
    let ready = cluster("rayjob-sample-b5rs7", true);
    let submitter = SubmitterObservation {
        failed: Some((
            "BackoffLimitExceeded".to_owned(),
            "Job has reached the specified backoff limit".to_owned(),
        )),
        finished_at: Some(t(10)),
        deleting: false,
    };
    let plan = run(&job, &observe(Some(&ready), Some(submitter), t(11)));
    assert_eq!(deployment(&plan), JobDeploymentStatus::Failed);
    assert_eq!(plan.status.reason, Some(JobFailedReason::SubmissionFailed));
    assert_eq!(
        plan.status.message.as_deref(),
        Some(
            "Job submission has failed. Reason: BackoffLimitExceeded. Message: Job has reached the specified backoff limit"
        )
    );
}

#[test]
fn submitter_finished_timeout_and_job_not_found() {
    let job = running(sample());
    let ready = cluster("rayjob-sample-b5rs7", true);
    let mut observed = observe(Some(&ready), Some(finished_submitter(t(0))), t(31));
    observed.dashboard = info(JobStatus::Running, 0);
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Failed);
    assert_eq!(plan.status.job_status, Some(JobStatus::Failed));
    assert_eq!(
        plan.status.reason,
        Some(JobFailedReason::JobDeploymentStatusTransitionGracePeriodExceeded)
    );
    assert_eq!(
        plan.status.message.as_deref(),
        Some(
            "The RayJob submitter finished at 2023-11-14 22:13:20 but the ray job did not reach terminal state within 30s"
        )
    );

    observed.now = t(5);
    observed.dashboard = DashboardObservation::NotFound;
    let plan = run(&job, &observed);
    assert_eq!(plan.status.reason, Some(JobFailedReason::AppFailed));
    assert_eq!(plan.status.message.as_deref(), Some(SUBMITTER_COMPLETED_JOB_NOT_FOUND));

    observed.submitter = Some(SubmitterObservation::default());
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Running);
    assert!(!plan.persist);
}

#[test]
fn transition_grace_period() {
    let job = with_status(running(sample()), |s| {
        s.job_status = Some(JobStatus::Succeeded);
        s.ray_job_info = Some(RayJobStatusInfo {
            start_time: None,
            end_time: Some(Time(t(0))),
        });
    });
    let ready = cluster("rayjob-sample-b5rs7", true);
    let plan = run(
        &job,
        &observe(Some(&ready), Some(SubmitterObservation::default()), t(300)),
    );
    assert_eq!(deployment(&plan), JobDeploymentStatus::Complete);
    assert_eq!(
        plan.status.reason,
        Some(JobFailedReason::JobDeploymentStatusTransitionGracePeriodExceeded)
    );
    assert_eq!(plan.status.message.as_deref(), Some(GRACE_PERIOD_MESSAGE));
}

#[test]
fn deletion_stops_non_terminal_job_and_removes_finalizer() {
    let mut job = running(sample());
    job.metadata.deletion_timestamp = Some(Time(t(1)));
    let plan = run(&job, &observe(None, None, t(1)));
    assert_eq!(
        plan.actions,
        vec![
            RayJobAction::StopJob {
                dashboard_url: "rayjob-sample-b5rs7-head-svc.default.svc.cluster.local:8265".to_owned(),
                job_id: "rayjob-sample-abcde".to_owned(),
            },
            RayJobAction::RemoveFinalizer
        ]
    );
}

#[test]
fn http_mode_submits_on_not_found() {
    let mut job = running(sample());
    job.spec.submission_mode = Some(JobSubmissionMode::HttpMode);
    let ready = cluster("rayjob-sample-b5rs7", true);
    let mut observed = observe(Some(&ready), None, t(1));
    observed.dashboard = DashboardObservation::NotFound;
    let plan = run(&job, &observed);
    assert!(plan.actions.iter().any(|a| matches!(a, RayJobAction::SubmitJob { .. })));
    observed.dashboard = info(JobStatus::Succeeded, 1_700_000_001_000);
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Complete);
}

#[test]
fn submitter_observation_from_job_conditions() {
    let job = Job {
        status: Some(BatchJobStatus {
            conditions: Some(vec![
                JobCondition {
                    type_: "Failed".to_owned(),
                    status: "True".to_owned(),
                    reason: Some("BackoffLimitExceeded".to_owned()),
                    message: Some("boom".to_owned()),
                    last_transition_time: Some(Time(t(3))),
                    ..JobCondition::default()
                },
                JobCondition {
                    type_: "Complete".to_owned(),
                    status: "True".to_owned(),
                    last_transition_time: Some(Time(t(9))),
                    ..JobCondition::default()
                },
            ]),
            ..BatchJobStatus::default()
        }),
        ..Job::default()
    };
    let observed = SubmitterObservation::from_job(&job);
    assert_eq!(observed.finished_at, Some(t(3)));
    assert_eq!(
        observed.failed,
        Some(("BackoffLimitExceeded".to_owned(), "boom".to_owned()))
    );
}

fn finished(job: RayJob, job_status: JobStatus, deployment: JobDeploymentStatus, end: i64) -> RayJob {
    with_status(running(job), |s| {
        s.job_deployment_status = Some(deployment);
        s.job_status = Some(job_status);
        s.end_time = Some(Time(t(end)));
    })
}

fn rule(policy: DeletionPolicyType, job_status: Option<JobStatus>, ttl: i32) -> ray_api::DeletionRule {
    ray_api::DeletionRule {
        policy,
        condition: ray_api::DeletionCondition {
            job_deployment_status: job_status.is_none().then_some(JobDeploymentStatus::Failed),
            job_status,
            ttl_seconds: Some(ttl),
        },
    }
}

fn with_rules(mut job: RayJob, rules: Vec<ray_api::DeletionRule>) -> RayJob {
    job.spec.deletion_strategy = Some(DeletionStrategy {
        on_success: None,
        on_failure: None,
        deletion_rules: Some(rules),
    });
    job
}

fn with_worker_group(mut c: RayCluster, suspended: bool) -> RayCluster {
    let group: ray_api::WorkerGroupSpec = serde_json::from_value(serde_json::json!({
        "groupName": "small-group",
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.46.0"}]}},
    }))
    .unwrap();
    let mut group = group;
    group.suspend = suspended.then_some(true);
    c.spec.worker_group_specs = Some(vec![group]);
    c
}

/// `deletionRules` mode: only the most impactful overdue rule runs; future rules set the requeue.
#[test]
fn deletion_rules_most_impactful_overdue_rule_runs() {
    let job = with_rules(
        sample(),
        vec![
            rule(DeletionPolicyType::DeleteWorkers, Some(JobStatus::Succeeded), 10),
            rule(DeletionPolicyType::DeleteCluster, Some(JobStatus::Succeeded), 20),
            rule(DeletionPolicyType::DeleteSelf, Some(JobStatus::Succeeded), 30),
            rule(DeletionPolicyType::DeleteSelf, Some(JobStatus::Failed), 0),
        ],
    );
    let job = finished(job, JobStatus::Succeeded, JobDeploymentStatus::Complete, 100);
    let live = with_worker_group(cluster("rayjob-sample-b5rs7", true), false);

    // Before any TTL: nothing, requeue at the first deadline + 2 s.
    let plan = run(&job, &observe(Some(&live), None, t(105)));
    assert_eq!(plan.actions, vec![RayJobAction::CleanupBatchScheduler]);
    assert_eq!(plan.requeue, Some(Duration::from_secs(7)));

    // Workers rule overdue: suspend worker groups; next deadline is the cluster rule.
    let plan = run(&job, &observe(Some(&live), None, t(112)));
    assert_eq!(
        plan.actions,
        vec![
            RayJobAction::CleanupBatchScheduler,
            RayJobAction::SuspendWorkerGroups {
                name: "rayjob-sample-b5rs7".to_owned()
            }
        ]
    );
    assert_eq!(plan.requeue, Some(Duration::from_secs(10)));

    // Workers already suspended: nothing to do for that rule.
    let suspended = with_worker_group(cluster("rayjob-sample-b5rs7", true), true);
    let plan = run(&job, &observe(Some(&suspended), None, t(112)));
    assert_eq!(plan.actions, vec![RayJobAction::CleanupBatchScheduler]);

    // Workers and cluster overdue: only the cluster is deleted.
    let plan = run(&job, &observe(Some(&live), None, t(125)));
    assert_eq!(
        plan.actions,
        vec![
            RayJobAction::CleanupBatchScheduler,
            RayJobAction::DeleteRayCluster {
                name: "rayjob-sample-b5rs7".to_owned()
            }
        ]
    );

    // Everything overdue, cluster gone: the RayJob deletes itself.
    let plan = run(&job, &observe(None, None, t(131)));
    assert_eq!(
        plan.actions,
        vec![RayJobAction::CleanupBatchScheduler, RayJobAction::DeleteSelf]
    );
}

/// A `jobDeploymentStatus: Failed` rule matches a Failed RayJob whatever its Ray job status.
#[test]
fn deletion_rules_match_deployment_status() {
    let job = with_rules(sample(), vec![rule(DeletionPolicyType::DeleteCluster, None, 0)]);
    let failed = finished(job.clone(), JobStatus::Running, JobDeploymentStatus::Failed, 100);
    let live = cluster("rayjob-sample-b5rs7", true);
    let plan = run(&failed, &observe(Some(&live), None, t(100)));
    assert!(plan.actions.contains(&RayJobAction::DeleteRayCluster {
        name: "rayjob-sample-b5rs7".to_owned()
    }));
    let complete = finished(job, JobStatus::Succeeded, JobDeploymentStatus::Complete, 100);
    let plan = run(&complete, &observe(Some(&live), None, t(100)));
    assert_eq!(plan.actions, vec![RayJobAction::CleanupBatchScheduler]);
    assert_eq!(plan.requeue, None);
}

/// G16 (plan part): every pass over a Complete or Failed RayJob asks for batch-scheduler cleanup.
#[test]
fn golden_g16_finished_jobs_clean_up_batch_scheduler() {
    for (job_status, deployment) in [
        (JobStatus::Succeeded, JobDeploymentStatus::Complete),
        (JobStatus::Failed, JobDeploymentStatus::Failed),
    ] {
        let job = finished(sample(), job_status, deployment, 100);
        let plan = run(&job, &observe(None, None, t(101)));
        assert_eq!(plan.actions.first(), Some(&RayJobAction::CleanupBatchScheduler));
        assert!(!plan.persist);
    }
}

fn submitter_status(
    restart_count: i32,
    last_exit: Option<i32>,
    exit: Option<i32>,
) -> k8s_openapi::api::core::v1::ContainerStatus {
    let terminated = |code: i32| k8s_openapi::api::core::v1::ContainerState {
        terminated: Some(k8s_openapi::api::core::v1::ContainerStateTerminated {
            exit_code: code,
            reason: Some(if code == 0 { "Completed" } else { "Error" }.to_owned()),
            finished_at: Some(Time(t(50))),
            ..Default::default()
        }),
        ..Default::default()
    };
    k8s_openapi::api::core::v1::ContainerStatus {
        name: "ray-job-submitter".to_owned(),
        restart_count,
        last_state: last_exit.map(terminated),
        state: exit.map(terminated),
        ..Default::default()
    }
}

/// G11: `checkIsRestartCountExceeded` with limit 2.
#[test]
fn golden_g11_restart_count_exceeded() {
    assert!(!restart_count_exceeded(&submitter_status(1, Some(1), None), 2));
    assert!(restart_count_exceeded(&submitter_status(2, Some(1), None), 2));
    assert!(!restart_count_exceeded(&submitter_status(3, Some(1), Some(0)), 2));
    // Never restarted: not exceeded whatever the count says.
    assert!(!restart_count_exceeded(&submitter_status(5, None, Some(1)), 2));
}

fn head_pod(status: k8s_openapi::api::core::v1::ContainerStatus) -> k8s_openapi::api::core::v1::Pod {
    k8s_openapi::api::core::v1::Pod {
        status: Some(k8s_openapi::api::core::v1::PodStatus {
            container_statuses: Some(vec![status]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// SidecarMode: no head pod → Failed/AppFailed; submitter exit ≠ 0 → SubmissionFailed with
/// KubeRay's message; clean exit + SUCCEEDED → Complete.
#[test]
fn sidecar_mode_submitter_container() {
    let mut job = running(sample());
    job.spec.submission_mode = Some(JobSubmissionMode::SidecarMode);
    let ready = cluster("rayjob-sample-b5rs7", true);

    let none = SidecarObservation::from_head_pods(&[], false, None).unwrap();
    assert_eq!(none, SidecarObservation::HeadPodNotFound);
    let mut observed = observe(Some(&ready), None, t(10));
    observed.sidecar = Some(none);
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Failed);
    assert_eq!(plan.status.reason, Some(JobFailedReason::AppFailed));
    assert_eq!(plan.status.message.as_deref(), Some(SIDECAR_HEAD_POD_NOT_FOUND));

    let failed =
        SidecarObservation::from_head_pods(&[head_pod(submitter_status(0, None, Some(1)))], false, None).unwrap();
    observed.sidecar = Some(failed);
    observed.dashboard = DashboardObservation::NotFound;
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Failed);
    assert_eq!(plan.status.reason, Some(JobFailedReason::SubmissionFailed));
    assert_eq!(
        plan.status.message.as_deref(),
        Some("Ray head pod container ray-job-submitter terminated with exit code 1: Error")
    );

    // Gate on: restarts below the limit are not a failure; at the limit they are.
    let below =
        SidecarObservation::from_head_pods(&[head_pod(submitter_status(1, Some(1), None))], true, None).unwrap();
    assert!(matches!(below, SidecarObservation::Submitter { failure: None, .. }));
    let at = SidecarObservation::from_head_pods(&[head_pod(submitter_status(2, Some(1), None))], true, None).unwrap();
    assert!(matches!(at, SidecarObservation::Submitter { failure: Some(m), .. }
        if m == "Ray head pod submitter container ray-job-submitter terminated after exceeding the maximum restart count"));

    // Clean exit and SUCCEEDED: Complete.
    let done =
        SidecarObservation::from_head_pods(&[head_pod(submitter_status(0, None, Some(0)))], false, None).unwrap();
    observed.sidecar = Some(done);
    observed.dashboard = info(JobStatus::Succeeded, 1_700_000_050_000);
    observed.now = t(55);
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Complete);

    // Still running: SUCCEEDED alone does not finish a SidecarMode job.
    let running_pod =
        SidecarObservation::from_head_pods(&[head_pod(submitter_status(0, None, None))], false, None).unwrap();
    observed.sidecar = Some(running_pod);
    let plan = run(&job, &observed);
    assert_eq!(deployment(&plan), JobDeploymentStatus::Running);

    let two = [
        head_pod(submitter_status(0, None, None)),
        head_pod(submitter_status(0, None, None)),
    ];
    assert!(SidecarObservation::from_head_pods(&two, false, None).is_err());
}

/// G20: execution-duration observations.
#[test]
fn golden_g20_execution_duration() {
    let status = |deployment: JobDeploymentStatus, failed: i32| RayJobStatus {
        job_deployment_status: Some(deployment),
        start_time: Some(Time(t(0))),
        failed: Some(failed),
        ..RayJobStatus::default()
    };
    let complete = execution_duration(
        &status(JobDeploymentStatus::Running, 0),
        &status(JobDeploymentStatus::Complete, 0),
        t(60),
    )
    .unwrap();
    assert_eq!(complete.retry_count, 0);
    assert!((complete.seconds - 60.0).abs() < 1e-9);
    assert_eq!(complete.job_deployment_status, JobDeploymentStatus::Complete);
    let failed = execution_duration(
        &status(JobDeploymentStatus::Running, 0),
        &status(JobDeploymentStatus::Failed, 1),
        t(60),
    )
    .unwrap();
    assert_eq!(failed.job_deployment_status, JobDeploymentStatus::Failed);
    let retrying = execution_duration(
        &status(JobDeploymentStatus::Running, 2),
        &status(JobDeploymentStatus::Retrying, 3),
        t(60),
    )
    .unwrap();
    assert_eq!(retrying.retry_count, 2);
    assert_eq!(
        execution_duration(
            &status(JobDeploymentStatus::Initializing, 0),
            &status(JobDeploymentStatus::Running, 0),
            t(60)
        ),
        None
    );
    // Already terminal: no second observation.
    assert_eq!(
        execution_duration(
            &status(JobDeploymentStatus::Complete, 0),
            &status(JobDeploymentStatus::Complete, 0),
            t(90)
        ),
        None
    );
}

/// HTTPMode and SidecarMode reach Running without a submitter Job (the `Initializing` transitions).
#[test]
fn http_and_sidecar_modes_create_no_submitter_job() {
    for mode in [JobSubmissionMode::HttpMode, JobSubmissionMode::SidecarMode] {
        let mut job = sample();
        job.spec.submission_mode = Some(mode);
        let job = with_status(job, |s| {
            s.job_deployment_status = Some(JobDeploymentStatus::Initializing);
            s.ray_cluster_name = Some("rayjob-sample-b5rs7".to_owned());
            s.job_id = Some("rayjob-sample-abcde".to_owned());
            s.start_time = Some(Time(t(0)));
        });
        let ready = cluster("rayjob-sample-b5rs7", true);
        let plan = run(&job, &observe(Some(&ready), None, t(1)));
        assert_eq!(deployment(&plan), JobDeploymentStatus::Running);
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    }
}

/// Running (not clusterSelector): the RayJob-owned head service is ensured every pass.
#[test]
fn running_ensures_rayjob_head_service() {
    let job = running(sample());
    let ready = cluster("rayjob-sample-b5rs7", true);
    let mut observed = observe(Some(&ready), Some(SubmitterObservation::default()), t(5));
    observed.dashboard = info(JobStatus::Running, 0);
    let plan = run(&job, &observed);
    assert_eq!(
        plan.actions,
        vec![RayJobAction::EnsureHeadService {
            cluster_name: "rayjob-sample-b5rs7".to_owned()
        }]
    );
}

/// G34: `FetchHeadServiceURL` for `test-cluster` in `ray` whose head exposes `dashboard` on 9999;
/// `CLUSTER_DOMAIN` replaces `cluster.local`.
#[test]
fn golden_g34_dashboard_url() {
    let mut c = cluster("test-cluster", true);
    c.metadata.namespace = Some("ray".to_owned());
    let pod = c.spec.head_group_spec.template.spec.as_mut().unwrap();
    for port in pod.containers[0].ports.iter_mut().flatten() {
        if port.name.as_deref() == Some("dashboard") {
            port.container_port = 9999;
        }
    }
    assert_eq!(
        dashboard_url(&c, "").unwrap(),
        "test-cluster-head-svc.ray.svc.cluster.local:9999"
    );
    assert_eq!(
        dashboard_url(&c, "abc.com").unwrap(),
        "test-cluster-head-svc.ray.svc.abc.com:9999"
    );
}
