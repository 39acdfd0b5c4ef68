//! End to end: RayJobs through the real operator binary against an in-process kube-sim with hollow
//! Ray heads, dashboards reached through the API server's service proxy (`--use-kubernetes-proxy`).
//! Starts from KubeRay's `ray-job.sample.yaml` (K8sJobMode) and varies it: TTL cleanup, retries,
//! the active deadline, suspend, HTTPMode, and a transcript of the status pairs over time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube_sim::SimHandle;
use ray_api::quantity::{Qty, from_quantity};
use ray_api::{RayCluster, RayJob, RayJobStatus};
use ray_gang::volcano::PodGroup;
use ray_sim::{HollowRay, HollowRayOptions};
use serde_json::{Value, json};

use crate::common;
use common::{Operator, SimEnv, free_port};

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(50);
const SAMPLE_NAME: &str = "rayjob-sample";

/// At most this many simulated clusters + operators run at once: the timing assertions (TTL, deadlines)
/// need the machine not to be saturated by every test of this file starting together.
static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

/// One simulated cluster with hollow Ray heads and the operator running against it.
struct Env {
    /// Kept alive for the test's duration (dropping it stops the simulated API server).
    _sim: SimHandle,
    ray: HollowRay,
    client: kube::Client,
    metrics_port: u16,
    _operator: Operator,
    _slot: tokio::sync::SemaphorePermit<'static>,
}

impl Env {
    async fn start(tag: &str, options: HollowRayOptions) -> Env {
        Env::start_with(tag, options, &[], &[]).await
    }

    /// Like [`Env::start`], with `extra_crds` installed before the operator starts with `extra_flags`.
    async fn start_with(tag: &str, options: HollowRayOptions, extra_crds: &[Value], extra_flags: &[&str]) -> Env {
        let slot = SLOTS.acquire().await.unwrap();
        let SimEnv {
            sim,
            client,
            dir,
            kubeconfig,
        } = SimEnv::start(tag, kube_sim::SimConfig::default()).await;
        common::install_extra_crds(&client, extra_crds).await;
        let ray = HollowRay::attach(&sim, options);
        let metrics_port = free_port();
        let mut flags = vec!["--use-kubernetes-proxy", "--enable-metrics"];
        flags.extend_from_slice(extra_flags);
        let operator = Operator::start(&dir, &kubeconfig, NS, metrics_port, free_port(), &flags);
        Env {
            _sim: sim,
            ray,
            client,
            metrics_port,
            _operator: operator,
            _slot: slot,
        }
    }

    fn rayjobs(&self) -> Api<RayJob> {
        Api::namespaced(self.client.clone(), NS)
    }

    fn clusters(&self) -> Api<RayCluster> {
        Api::namespaced(self.client.clone(), NS)
    }

    fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), NS)
    }

    async fn create(&self, job: &RayJob) {
        self.rayjobs().create(&PostParams::default(), job).await.unwrap();
    }

    /// Waits until the RayJob's RayCluster exists; returns it.
    async fn wait_cluster(&self) -> RayCluster {
        wait_for("the RayCluster", || async {
            self.clusters()
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .next()
        })
        .await
    }

    async fn get(&self, name: &str) -> RayJob {
        self.rayjobs().get(name).await.unwrap()
    }

    /// Waits until the RayJob's `jobDeploymentStatus` is `deployment`; returns the RayJob.
    async fn wait_deployment(&self, name: &str, deployment: &str) -> RayJob {
        wait_for(&format!("{name} jobDeploymentStatus {deployment}"), || async {
            let job = self.rayjobs().get(name).await.unwrap();
            (deployment_of(&job) == deployment).then_some(job)
        })
        .await
    }

    /// Waits (as `what`) until the RayJob's `jobStatus` is `job_status`; returns the RayJob.
    async fn wait_job_status(&self, what: &str, name: &str, job_status: &str) -> RayJob {
        wait_for(what, || async {
            let job = self.get(name).await;
            (job_status_of(&job) == job_status).then_some(job)
        })
        .await
    }

    async fn patch_spec(&self, name: &str, spec: Value) {
        self.rayjobs()
            .patch(name, &PatchParams::default(), &Patch::Merge(&json!({ "spec": spec })))
            .await
            .unwrap();
    }

    /// Names of the RayClusters that exist and are not being deleted.
    async fn live_clusters(&self) -> Vec<String> {
        self.clusters()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .map(|c| c.name_any())
            .collect()
    }

    async fn cluster_live(&self, name: &str) -> bool {
        self.clusters()
            .get_opt(name)
            .await
            .unwrap()
            .is_some_and(|c| c.metadata.deletion_timestamp.is_none())
    }

    /// The operator's `/metrics` text.
    async fn metrics(&self) -> String {
        common::http_get(self.metrics_port, "/metrics").await.1
    }

    /// Reasons of the events published on the RayJob `name`.
    async fn event_reasons(&self, name: &str) -> Vec<String> {
        let events: Api<Event> = Api::namespaced(self.client.clone(), NS);
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .filter_map(|e| e.reason)
            .collect()
    }
}

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    common::wait_for(what, WAIT, Duration::from_millis(100), check).await
}

fn sample() -> RayJob {
    let mut job: RayJob = common::sample_document("ray-job.sample.yaml", "RayJob");
    job.metadata.namespace = Some(NS.into());
    job
}

/// The sample renamed, with `entrypoint` replaced (the hollow head reads `sleep N` / `exit N` from it).
fn sample_named(name: &str, entrypoint: &str) -> RayJob {
    let mut job = sample();
    job.metadata.name = Some(name.to_owned());
    job.spec.entrypoint = Some(entrypoint.to_owned());
    job
}

/// One field of the RayJob's status as text (empty when the status or the field is unset).
fn status_text<T: ToString>(job: &RayJob, field: impl FnOnce(&RayJobStatus) -> Option<&T>) -> String {
    job.status
        .as_ref()
        .and_then(field)
        .map(ToString::to_string)
        .unwrap_or_default()
}

fn deployment_of(job: &RayJob) -> String {
    status_text(job, |s| s.job_deployment_status.as_ref())
}

fn job_status_of(job: &RayJob) -> String {
    status_text(job, |s| s.job_status.as_ref())
}

fn reason_of(job: &RayJob) -> String {
    status_text(job, |s| s.reason.as_ref())
}

fn fast_jobs() -> HollowRayOptions {
    HollowRayOptions::default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rayjob_sample_completes() {
    let env = Env::start("rayjob", fast_jobs()).await;
    env.create(&sample()).await;

    // The RayCluster `rayjob-sample-xxxxx`, owned by the RayJob.
    let cluster = env.wait_cluster().await;
    let name = cluster.name_any();
    assert!(name.starts_with("rayjob-sample-"), "{name}");
    assert_eq!(name.len(), "rayjob-sample-".len() + 5);
    assert_eq!(cluster.owner_references()[0].kind, "RayJob");

    // The submitter Job `rayjob-sample`.
    wait_for("the submitter Job", || async {
        env.jobs().get_opt(SAMPLE_NAME).await.unwrap()
    })
    .await;

    // SUCCEEDED / Complete.
    let job = env.wait_deployment(SAMPLE_NAME, "Complete").await;
    let status = job.status.unwrap();
    assert_eq!(status.job_status.map(|s| s.to_string()).as_deref(), Some("SUCCEEDED"));
    assert_eq!(status.ray_cluster_name.as_deref(), Some(name.as_str()));
    assert_eq!(
        status.dashboard_url,
        Some(format!("{name}-head-svc.default.svc.cluster.local:8265"))
    );
    assert_eq!(status.succeeded, Some(1));
    assert!(status.end_time.is_some());
    // shutdownAfterJobFinishes defaults to false: the cluster stays.
    assert!(env.clusters().get_opt(&name).await.unwrap().is_some());

    // The RayJob-owned head service points at the cluster's head.
    let services: Api<Service> = Api::namespaced(env.client.clone(), NS);
    let service = services.get("rayjob-sample-head-svc").await.unwrap();
    let selector = service.spec.unwrap().selector.unwrap();
    assert_eq!(selector["ray.io/cluster"], name);
    assert_eq!(service.metadata.labels.unwrap()["ray.io/originated-from-crd"], "RayJob");

    // KubeRay's events on the RayJob.
    let reasons = wait_for("the RayJob events", || async {
        let reasons = env.event_reasons(SAMPLE_NAME).await;
        (reasons.iter().any(|r| r == "CreatedRayCluster") && reasons.iter().any(|r| r == "CreatedRayJobSubmitter"))
            .then_some(reasons)
    })
    .await;
    assert!(!reasons.iter().any(|r| r.starts_with("Failed")), "{reasons:?}");
}

/// 1. `shutdownAfterJobFinishes: true`, `ttlSecondsAfterFinished: 5`: Complete, then the cluster is
/// deleted once `endTime + 5 s` has passed, not before; the submitter Job is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_after_finished_deletes_the_cluster() {
    let env = Env::start("rayjob-ttl", fast_jobs()).await;
    let mut job = sample();
    job.spec.shutdown_after_job_finishes = Some(true);
    job.spec.ttl_seconds_after_finished = Some(5);
    env.create(&job).await;

    let done = env.wait_deployment(SAMPLE_NAME, "Complete").await;
    let status = done.status.unwrap();
    let cluster = status.ray_cluster_name.clone().unwrap();
    let end: Timestamp = status.end_time.unwrap().0;
    let deadline = end + Duration::from_secs(5);

    // Until the deadline (minus a margin for clock reads) the cluster stays.
    loop {
        let now = Timestamp::now();
        if now + Duration::from_millis(300) >= deadline {
            break;
        }
        assert!(
            env.cluster_live(&cluster).await,
            "cluster deleted at {now}, before {deadline}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_for("the cluster's deletion", || async {
        (!env.cluster_live(&cluster).await).then_some(())
    })
    .await;
    let deleted_at = Timestamp::now();
    assert!(deleted_at >= deadline, "deleted at {deleted_at}, deadline {deadline}");
    assert!(
        env.jobs().get_opt(SAMPLE_NAME).await.unwrap().is_some(),
        "submitter Job kept for its logs"
    );
    assert_eq!(deployment_of(&env.get(SAMPLE_NAME).await), "Complete");
    wait_for("the DeletedRayCluster event", || async {
        env.event_reasons(SAMPLE_NAME)
            .await
            .iter()
            .any(|r| r == "DeletedRayCluster")
            .then_some(())
    })
    .await;
}

/// 2. A failing entrypoint with `backoffLimit: 2`: three attempts, each on a new cluster, then
/// Failed with reason `AppFailed`; `failed` = 3, `succeeded` = 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_entrypoint_retries_then_fails() {
    let env = Env::start("rayjob-retry", fast_jobs()).await;
    let name = "rayjob-fail";
    let mut job = sample_named(name, "python /home/ray/samples/sample_code.py; exit 1");
    job.spec.backoff_limit = Some(2);
    env.create(&job).await;

    // Record every cluster the RayJob uses while waiting for the final Failed.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let failed = wait_for("Failed after the retries", || {
        let rayjobs = env.rayjobs();
        let seen = seen.clone();
        async move {
            let job = rayjobs.get(name).await.unwrap();
            if let Some(c) = job.status.as_ref().and_then(|s| s.ray_cluster_name.clone()) {
                let mut seen = seen.lock().unwrap();
                if !seen.contains(&c) {
                    seen.push(c);
                }
            }
            (deployment_of(&job) == "Failed").then_some(job)
        }
    })
    .await;
    let clusters = seen.lock().unwrap().clone();
    let status = failed.status.clone().unwrap();
    assert_eq!(reason_of(&failed), "AppFailed");
    assert_eq!(job_status_of(&failed), "FAILED");
    assert_eq!(status.failed, Some(3));
    assert_eq!(status.succeeded, Some(0));
    assert_eq!(clusters.len(), 3, "one new cluster per attempt: {clusters:?}");
    let unique: std::collections::BTreeSet<_> = clusters.iter().collect();
    assert_eq!(unique.len(), 3, "{clusters:?}");
    // Failed is final: nothing more happens.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let later = env.get(name).await;
    assert_eq!(deployment_of(&later), "Failed");
    assert_eq!(later.status.unwrap().failed, Some(3));
}

/// 3. `activeDeadlineSeconds` exceeded while the Ray job runs: Failed / `DeadlineExceeded`, with
/// KubeRay's message, and no retry even with a backoff limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_deadline_fails_the_job() {
    let env = Env::start("rayjob-deadline", fast_jobs()).await;
    let name = "rayjob-deadline";
    let mut job = sample_named(name, "python -c 'import time' && sleep 60");
    job.spec.active_deadline_seconds = Some(6);
    job.spec.backoff_limit = Some(1);
    env.create(&job).await;

    env.wait_deployment(name, "Running").await;
    let failed = env.wait_deployment(name, "Failed").await;
    assert_eq!(reason_of(&failed), "DeadlineExceeded");
    let status = failed.status.unwrap();
    let message = status.message.unwrap_or_default();
    assert!(
        message.starts_with("The RayJob has passed the activeDeadlineSeconds. StartTime: ")
            && message.ends_with(". ActiveDeadlineSeconds: 6"),
        "{message}"
    );
    let start = status.start_time.unwrap().0;
    let end = status.end_time.unwrap().0;
    assert!(
        end >= start + Duration::from_secs(6),
        "failed at {end}, started {start}"
    );
    assert_eq!(status.failed, Some(1));
}

/// 4. `suspend: true` at creation: Suspended without a cluster; resumed it runs to Complete.
/// Suspending a Running job deletes its cluster and submitter and ends Suspended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspend_and_resume() {
    let env = Env::start("rayjob-suspend", fast_jobs()).await;
    let mut job = sample();
    job.spec.suspend = Some(true);
    job.spec.shutdown_after_job_finishes = Some(true);
    env.create(&job).await;

    let suspended = env.wait_deployment(SAMPLE_NAME, "Suspended").await;
    assert_eq!(suspended.status.unwrap().ray_cluster_name, None);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(env.live_clusters().await.is_empty(), "no cluster while suspended");
    assert_eq!(deployment_of(&env.get(SAMPLE_NAME).await), "Suspended");

    env.patch_spec(SAMPLE_NAME, json!({ "suspend": false })).await;
    let done = env.wait_deployment(SAMPLE_NAME, "Complete").await;
    assert_eq!(job_status_of(&done), "SUCCEEDED");

    // Suspend while Running.
    let name = "rayjob-long";
    let mut long = sample_named(name, "python /home/ray/samples/sample_code.py && sleep 60");
    long.spec.shutdown_after_job_finishes = Some(true);
    env.create(&long).await;
    let running = env.wait_job_status("the long job RUNNING", name, "RUNNING").await;
    let cluster = running.status.unwrap().ray_cluster_name.unwrap();
    assert!(env.cluster_live(&cluster).await);
    env.patch_spec(name, json!({ "suspend": true })).await;
    let suspended = env.wait_deployment(name, "Suspended").await;
    let status = suspended.status.unwrap();
    assert_eq!(status.ray_cluster_name, None);
    assert_eq!(status.job_id, None);
    assert!(
        env.clusters().get_opt(&cluster).await.unwrap().is_none(),
        "cluster deleted"
    );
    assert!(
        env.jobs().get_opt(name).await.unwrap().is_none(),
        "submitter Job deleted"
    );
}

/// 5. HTTPMode: the operator submits the job through the dashboard; no submitter Job exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_mode_submits_through_the_dashboard() {
    let env = Env::start("rayjob-http", fast_jobs()).await;
    let name = "rayjob-http";
    let mut job = sample_named(name, "python /home/ray/samples/sample_code.py");
    job.spec.submission_mode = Some(ray_api::JobSubmissionMode::HttpMode);
    env.create(&job).await;

    let done = env.wait_deployment(name, "Complete").await;
    assert_eq!(job_status_of(&done), "SUCCEEDED");
    let status = done.status.unwrap();
    assert_eq!(status.succeeded, Some(1));
    assert!(env.jobs().get_opt(name).await.unwrap().is_none(), "no submitter Job");

    // The hollow head got the job under the RayJob's id, with the spec's entrypoint and runtime env.
    let cluster = status.ray_cluster_name.unwrap();
    let head = env.ray.head(NS, &cluster).expect("the cluster's head is up");
    let job_id = status.job_id.unwrap();
    let info = head.job(&job_id).expect("the job was submitted under status.jobId");
    assert_eq!(info.entrypoint, "python /home/ray/samples/sample_code.py");
    let runtime_env = info.runtime_env.expect("the RayJob's runtime env reached the job");
    assert_eq!(runtime_env["env_vars"]["counter_name"], "test_counter");
    assert_eq!(runtime_env["pip"], json!(["requests==2.26.0", "pendulum==2.1.2"]));

    // The kuberay_job_* metrics (--enable-metrics).
    let uid = done.metadata.uid.clone().unwrap();
    let labels = format!("name=\"{name}\",namespace=\"{NS}\",uid=\"{uid}\"");
    let complete = format!("kuberay_job_deployment_status{{{labels},deployment_status=\"Complete\"}} 1");
    let metrics = wait_for("the RayJob metrics", || async {
        let text = env.metrics().await;
        text.contains(&complete).then_some(text)
    })
    .await;
    assert!(
        metrics.contains(&format!("kuberay_job_info{{{labels}}} 1")),
        "{metrics}"
    );
    assert!(
        !metrics.contains("deployment_status=\"Running\""),
        "one status series per RayJob: {metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "kuberay_job_execution_duration_seconds_count{{{labels},job_deployment_status=\"Complete\",retry_count=\"0\"}} 1"
        )),
        "{metrics}"
    );
}

/// 6. Transcript of rayjob-sample: every distinct (jobDeploymentStatus, jobStatus) pair, with the
/// time since creation; the order must follow the spec's state machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rayjob_sample_transcript() {
    let options = HollowRayOptions {
        job_pending: Duration::from_millis(3500),
        job_run: Duration::from_secs(4),
        ..HollowRayOptions::default()
    };
    let env = Env::start("rayjob-transcript", options).await;
    // A watch sees every status write, however short-lived (Initializing lasts one pass); polling can miss one.
    let mut changes = Box::pin(kube::runtime::WatchStreamExt::applied_objects(kube::runtime::watcher(
        env.rayjobs(),
        kube::runtime::watcher::Config::default(),
    )));
    let created = Instant::now();
    env.create(&sample()).await;

    let mut transcript: Vec<(Duration, String, String)> = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let next = tokio::time::timeout_at(deadline, futures::StreamExt::next(&mut changes)).await;
        let Ok(Some(Ok(job))) = next else {
            break;
        };
        if job.name_any() != SAMPLE_NAME {
            continue;
        }
        let pair = (deployment_of(&job), job_status_of(&job));
        if transcript.last().is_none_or(|(_, d, s)| (d, s) != (&pair.0, &pair.1)) {
            transcript.push((created.elapsed(), pair.0.clone(), pair.1.clone()));
        }
        if pair.0 == "Complete" {
            break;
        }
    }
    eprintln!("rayjob-sample transcript (time since creation, jobDeploymentStatus, jobStatus):");
    for (at, deployment, status) in &transcript {
        eprintln!(
            "  {:>7.3}s  {:<14} {}",
            at.as_secs_f64(),
            if deployment.is_empty() { "\"\"" } else { deployment },
            if status.is_empty() { "\"\"" } else { status }
        );
    }

    // The spec's order: New → Initializing → Running → Complete; "" → PENDING → RUNNING → SUCCEEDED.
    let deployment_rank = |d: &str| ["", "Initializing", "Running", "Complete"].iter().position(|x| *x == d);
    let status_rank = |s: &str| ["", "PENDING", "RUNNING", "SUCCEEDED"].iter().position(|x| *x == s);
    let mut last = (0, 0);
    for (_, deployment, status) in &transcript {
        let rank = (
            deployment_rank(deployment).unwrap_or_else(|| panic!("unexpected deployment status {deployment}")),
            status_rank(status).unwrap_or_else(|| panic!("unexpected job status {status}")),
        );
        assert!(rank.0 >= last.0 && rank.1 >= last.1, "out of order: {transcript:?}");
        // The Ray job has a status only once the RayJob is Running.
        assert!(rank.1 == 0 || rank.0 >= 2, "job status before Running: {transcript:?}");
        last = rank;
    }
    let pairs: Vec<(&str, &str)> = transcript.iter().map(|(_, d, s)| (d.as_str(), s.as_str())).collect();
    assert_eq!(pairs.last(), Some(&("Complete", "SUCCEEDED")), "{transcript:?}");
    for expected in [("Initializing", ""), ("Running", "RUNNING")] {
        assert!(pairs.contains(&expected), "missing {expected:?}: {transcript:?}");
    }
}

/// SidecarMode: the submitter runs as the `ray-job-submitter` container of the head pod; the RayJob
/// completes once the Ray job SUCCEEDED and that container exited 0. No submitter Job exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecar_mode_completes() {
    let env = Env::start("rayjob-sidecar", fast_jobs()).await;
    let name = "rayjob-sidecar";
    let mut job = sample_named(name, "python /home/ray/samples/sample_code.py");
    job.spec.submission_mode = Some(ray_api::JobSubmissionMode::SidecarMode);
    env.create(&job).await;

    let done = env.wait_deployment(name, "Complete").await;
    assert_eq!(job_status_of(&done), "SUCCEEDED");
    assert!(env.jobs().get_opt(name).await.unwrap().is_none(), "no submitter Job");
    let cluster = done.status.unwrap().ray_cluster_name.unwrap();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(env.client.clone(), NS);
    let heads = pods
        .list(&ListParams::default().labels(&format!("ray.io/cluster={cluster},ray.io/node-type=head")))
        .await
        .unwrap();
    assert_eq!(heads.items.len(), 1);
    let status = heads.items[0].status.clone().unwrap();
    let submitter = status
        .container_statuses
        .unwrap()
        .into_iter()
        .find(|c| c.name == "ray-job-submitter")
        .expect("the head pod has the submitter container");
    let terminated = submitter.state.unwrap().terminated.expect("the submitter exited");
    assert_eq!(terminated.exit_code, 0);
    assert_eq!(status.phase.as_deref(), Some("Running"), "the head keeps running");
}

/// InteractiveMode: the RayJob waits in `Waiting` with a ready cluster until the user sets `spec.jobId`
/// to a job they submitted; then it follows that job to Complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_mode_waits_for_the_job_id() {
    let env = Env::start("rayjob-interactive", fast_jobs()).await;
    let name = "rayjob-interactive";
    let mut job = sample_named(name, "python /home/ray/samples/sample_code.py");
    job.spec.submission_mode = Some(ray_api::JobSubmissionMode::InteractiveMode);
    env.create(&job).await;

    let waiting = env.wait_deployment(name, "Waiting").await;
    let status = waiting.status.unwrap();
    assert_eq!(status.job_id, None, "no job id until the user sets one");
    assert!(env.jobs().get_opt(name).await.unwrap().is_none(), "no submitter Job");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(deployment_of(&env.get(name).await), "Waiting");

    // The user submits a job to the cluster's head and names it in the spec.
    let cluster = status.ray_cluster_name.unwrap();
    let head = env.ray.wait_for_head(NS, &cluster, WAIT).await.unwrap();
    head.submit_job(ray_sim::JobSubmitRequest {
        entrypoint: "python my_script.py".to_owned(),
        submission_id: Some("my-interactive-job".to_owned()),
        ..Default::default()
    })
    .unwrap();
    env.patch_spec(name, json!({ "jobId": "my-interactive-job" })).await;
    let done = env.wait_deployment(name, "Complete").await;
    assert_eq!(job_status_of(&done), "SUCCEEDED");
    assert_eq!(done.status.unwrap().job_id.as_deref(), Some("my-interactive-job"));
}

/// `deletionStrategy.deletionRules`: `DeleteWorkers` on SUCCEEDED right away, `DeleteCluster` 4 s later.
/// The worker groups are suspended first, then the cluster goes; the RayJob stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_rules_suspend_workers_then_delete_the_cluster() {
    let env = Env::start("rayjob-rules", fast_jobs()).await;
    let name = "rayjob-rules";
    let mut job = sample_named(name, "python /home/ray/samples/sample_code.py");
    job.spec.deletion_strategy = Some(
        serde_json::from_value(json!({"deletionRules": [
            {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
            {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 4}},
        ]}))
        .unwrap(),
    );
    env.create(&job).await;

    let done = env.wait_deployment(name, "Complete").await;
    let status = done.status.unwrap();
    let cluster = status.ray_cluster_name.unwrap();
    let end = status.end_time.unwrap().0;
    let suspended = wait_for("the worker groups suspended", || async {
        let c = env.clusters().get_opt(&cluster).await.unwrap()?;
        let groups = c.spec.worker_group_specs.clone().unwrap_or_default();
        groups.iter().all(|g| g.suspend == Some(true)).then_some(c)
    })
    .await;
    assert!(
        suspended.metadata.deletion_timestamp.is_none(),
        "only the workers go first"
    );
    wait_for("the cluster's deletion", || async {
        (!env.cluster_live(&cluster).await).then_some(())
    })
    .await;
    assert!(
        Timestamp::now() >= end + Duration::from_secs(4),
        "cluster deleted before its rule's TTL"
    );
    assert!(env.rayjobs().get_opt(name).await.unwrap().is_some(), "the RayJob stays");
    let reasons = env.event_reasons(name).await;
    assert!(reasons.iter().any(|r| r == "UpdatedRayCluster"), "{reasons:?}");
}

/// An invalid RayJob (suspended without `shutdownAfterJobFinishes`): ValidationFailed with KubeRay's
/// message and a Warning event `InvalidRayJobSpec`; no cluster is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_rayjob_is_reported() {
    let env = Env::start("rayjob-invalid", fast_jobs()).await;
    let name = "rayjob-invalid";
    let mut job = sample_named(name, "python /home/ray/samples/sample_code.py");
    job.spec.suspend = Some(true);
    env.create(&job).await;

    let invalid = env.wait_deployment(name, "ValidationFailed").await;
    assert_eq!(reason_of(&invalid), "ValidationFailed");
    assert_eq!(
        invalid.status.unwrap().message.as_deref(),
        Some(
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended"
        )
    );
    wait_for("the InvalidRayJobSpec event", || async {
        env.event_reasons(name)
            .await
            .iter()
            .any(|r| r == "InvalidRayJobSpec")
            .then_some(())
    })
    .await;
    assert!(env.live_clusters().await.is_empty());
}

/// Deleting a RayJob whose Ray job still runs: the operator stops the job through the dashboard, then
/// removes its finalizer; the RayJob goes away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_running_rayjob_stops_its_ray_job() {
    let env = Env::start("rayjob-delete", fast_jobs()).await;
    let name = "rayjob-delete";
    env.create(&sample_named(
        name,
        "python /home/ray/samples/sample_code.py && sleep 60",
    ))
    .await;
    let running = env.wait_job_status("the job RUNNING", name, "RUNNING").await;
    assert_eq!(running.finalizers(), ["ray.io/rayjob-finalizer"]);
    let status = running.status.unwrap();
    let head = env.ray.head(NS, &status.ray_cluster_name.unwrap()).unwrap();
    let job_id = status.job_id.unwrap();

    env.rayjobs().delete(name, &Default::default()).await.unwrap();
    let rayjobs = env.rayjobs();
    wait_for("the RayJob gone", || common::gone(&rayjobs, name)).await;
    assert_eq!(head.job(&job_id).unwrap().status, ray_sim::JobStatus::Stopped);
}

/// clusterSelector: the RayJob runs on an existing RayCluster, creates no cluster and no head service of
/// its own, and leaves the cluster alone when done (even with `shutdownAfterJobFinishes`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_selector_uses_an_existing_cluster() {
    let env = Env::start("rayjob-selector", fast_jobs()).await;
    let spec = sample().spec.ray_cluster_spec.unwrap();
    let mut existing = RayCluster::new("shared-cluster", spec);
    existing.metadata.namespace = Some(NS.to_owned());
    env.clusters().create(&PostParams::default(), &existing).await.unwrap();

    let name = "rayjob-selector";
    let mut job = sample_named(name, "python /home/ray/samples/sample_code.py");
    job.spec.ray_cluster_spec = None;
    job.spec.cluster_selector = Some([("ray.io/cluster".to_owned(), "shared-cluster".to_owned())].into());
    job.spec.shutdown_after_job_finishes = Some(true);
    env.create(&job).await;

    let done = env.wait_deployment(name, "Complete").await;
    assert_eq!(job_status_of(&done), "SUCCEEDED");
    assert_eq!(done.status.unwrap().ray_cluster_name.as_deref(), Some("shared-cluster"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(env.live_clusters().await, ["shared-cluster"]);
    let services: Api<Service> = Api::namespaced(env.client.clone(), NS);
    assert!(services.get_opt("rayjob-selector-head-svc").await.unwrap().is_none());
}

/// Volcano's PodGroup CRD as Volcano installs it (namespaced, no status subresource).
fn volcano_pod_group_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "podgroups.scheduling.volcano.sh"},
        "spec": {
            "group": "scheduling.volcano.sh", "scope": "Namespaced",
            "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup", "listKind": "PodGroupList"},
            "versions": [{
                "name": "v1beta1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

/// Whether the PodGroup's `minResources` has exactly the `want` quantities (compared by value).
fn min_resources_are(pg: &PodGroup, want: &[(&str, &str)]) -> bool {
    let have = pg.spec.min_resources.clone().unwrap_or_default();
    have.len() == want.len()
        && want.iter().all(|(name, value)| {
            have.get(*name)
                .is_some_and(|q| from_quantity(q).unwrap().eq_value(&Qty::parse(value).unwrap()))
        })
}

/// The rayjob-sample under `--batch-scheduler volcano` (docs/rayjob.md#batch-scheduling): the RayJob owns one
/// PodGroup `ray-rayjob-sample-pg` sized head + workers (minMember) with the default submitter's
/// 500m / 200Mi added to minResources; the cluster and every pod (submitter included) join it;
/// after completion the cleanup hook drops the submitter's share (the cluster stays alive) and
/// reports `BatchSchedulerCleanedUp`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volcano_gang_for_the_rayjob_sample() {
    let env = Env::start_with(
        "rayjob-volcano",
        fast_jobs(),
        &[volcano_pod_group_crd()],
        &["--batch-scheduler", "volcano"],
    )
    .await;
    env.create(&sample()).await;
    let pgs: Api<PodGroup> = Api::namespaced(env.client.clone(), NS);
    let pg_name = "ray-rayjob-sample-pg";

    // Created while Initializing: head (1 CPU, 2Gi) + 1 worker (200m), plus the submitter's 500m / 200Mi.
    let pg = wait_for("the RayJob's PodGroup", || async {
        pgs.get_opt(pg_name).await.unwrap()
    })
    .await;
    assert_eq!(pg.spec.min_member, 2, "head + 1 worker; the submitter is not a member");
    assert!(
        min_resources_are(&pg, &[("cpu", "1700m"), ("memory", "2248Mi")]),
        "{:?}",
        pg.spec.min_resources
    );
    let owner = &pg.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("RayJob", SAMPLE_NAME, Some(true))
    );

    // The cluster is decorated (K8sJobMode) and gets no PodGroup of its own.
    let cluster = env.wait_cluster().await;
    assert_eq!(cluster.annotations()["scheduling.k8s.io/group-name"], pg_name);
    assert_eq!(cluster.annotations()["volcano.sh/task-spec"], "");

    let job = env.wait_deployment(SAMPLE_NAME, "Complete").await;
    assert_eq!(job_status_of(&job), "SUCCEEDED");
    let all_pgs = pgs.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(
        all_pgs.iter().map(ResourceExt::name_any).collect::<Vec<_>>(),
        vec![pg_name.to_owned()]
    );

    // Head, worker and submitter pods all run under Volcano in the RayJob's group.
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), NS);
    let pods = pods.list(&ListParams::default()).await.unwrap().items;
    let mut task_specs: Vec<String> = pods
        .iter()
        .map(|pod| {
            assert_eq!(pod.spec.as_ref().unwrap().scheduler_name.as_deref(), Some("volcano"));
            assert_eq!(pod.annotations()["scheduling.k8s.io/group-name"], pg_name);
            pod.annotations()["volcano.sh/task-spec"].clone()
        })
        .collect();
    task_specs.sort();
    assert_eq!(task_specs, ["headgroup", "small-group", "submittergroup"]);

    // CleanupOnCompletion: the cluster is alive, so the PodGroup keeps its members and drops the
    // submitter's resources.
    wait_for("the BatchSchedulerCleanedUp event", || async {
        env.event_reasons(SAMPLE_NAME)
            .await
            .iter()
            .any(|r| r == "BatchSchedulerCleanedUp")
            .then_some(())
    })
    .await;
    let pg = pgs.get(pg_name).await.unwrap();
    assert_eq!(pg.spec.min_member, 2);
    assert!(
        min_resources_are(&pg, &[("cpu", "1200m"), ("memory", "2Gi")]),
        "{:?}",
        pg.spec.min_resources
    );
    let reasons = env.event_reasons(SAMPLE_NAME).await;
    assert!(!reasons.iter().any(|r| r.starts_with("Failed")), "{reasons:?}");
}

/// Suspending a running RayJob under Volcano: once its cluster and submitter are gone the cleanup
/// hook empties the PodGroup (`minMember 0`, no resources) with `BatchSchedulerCleanedUp`; resuming
/// restores the gang's full size on the next `Initializing` pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volcano_gang_is_emptied_on_suspend_and_restored_on_resume() {
    let env = Env::start_with(
        "rayjob-volcano-suspend",
        fast_jobs(),
        &[volcano_pod_group_crd()],
        &["--batch-scheduler", "volcano"],
    )
    .await;
    let name = "rayjob-long";
    let pg_name = "ray-rayjob-long-pg";
    let mut job = sample_named(name, "python /home/ray/samples/sample_code.py && sleep 60");
    job.spec.shutdown_after_job_finishes = Some(true);
    env.create(&job).await;
    let pgs: Api<PodGroup> = Api::namespaced(env.client.clone(), NS);
    env.wait_job_status("the long job RUNNING", name, "RUNNING").await;
    let full = pgs.get(pg_name).await.unwrap();
    assert_eq!(full.spec.min_member, 2);
    assert!(
        env.event_reasons(name)
            .await
            .iter()
            .all(|r| r != "BatchSchedulerCleanedUp")
    );

    env.patch_spec(name, json!({ "suspend": true })).await;
    env.wait_deployment(name, "Suspended").await;
    wait_for("the BatchSchedulerCleanedUp event", || async {
        env.event_reasons(name)
            .await
            .iter()
            .any(|r| r == "BatchSchedulerCleanedUp")
            .then_some(())
    })
    .await;
    let emptied = pgs.get(pg_name).await.unwrap();
    assert_eq!(emptied.spec.min_member, 0);
    assert!(min_resources_are(&emptied, &[]), "{:?}", emptied.spec.min_resources);

    env.patch_spec(name, json!({ "suspend": false })).await;
    let restored = wait_for("the PodGroup restored", || async {
        let pg = pgs.get(pg_name).await.unwrap();
        (pg.spec.min_member == 2).then_some(pg)
    })
    .await;
    assert_eq!(restored.spec.min_resources, full.spec.min_resources);
}

/// The RayJob controller's status write carries the resourceVersion it read: a write from a read that an
/// earlier write has overtaken gets 409 from the API server instead of overwriting it (a pass behind the
/// cache must not draw the cluster name and job id a second time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rayjob_status_write_from_a_stale_read_conflicts() {
    use ray_reconcile::status_writer::{MergeShape, StatusWrite, StatusWriteError, write_status};
    let sim = common::start_sim(kube_sim::SimConfig::default()).await;
    let jobs: Api<RayJob> = Api::namespaced(sim.client(), NS);
    let read = jobs
        .create(&PostParams::default(), &sample_named("stale", "exit 0"))
        .await
        .unwrap();
    let first = RayJobStatus {
        job_id: Some("stale-aaaaa".into()),
        ray_cluster_name: Some("stale-aaaaa".into()),
        ..RayJobStatus::default()
    };
    write_status(&jobs, &read, &first, StatusWrite::Merge(MergeShape::Whole))
        .await
        .unwrap();
    // A second pass that still holds the object as created draws other names.
    let second = RayJobStatus {
        job_id: Some("stale-bbbbb".into()),
        ray_cluster_name: Some("stale-bbbbb".into()),
        ..RayJobStatus::default()
    };
    match write_status(&jobs, &read, &second, StatusWrite::Merge(MergeShape::Whole)).await {
        Err(StatusWriteError::Api(kube::Error::Api(status))) => assert_eq!(status.code, 409, "{status:?}"),
        other => panic!("expected 409 Conflict, got {other:?}"),
    }
    let stored = jobs.get("stale").await.unwrap();
    assert_eq!(status_text(&stored, |s| s.job_id.as_ref()), "stale-aaaaa");
    // A pass that writes the finalizer first must write the status at the version that write returned (the
    // executor keeps it); the version it read would conflict with its own write.
    let version = ray_reconcile::finalizers::add_finalizer(
        &jobs,
        &stored,
        "ray.io/rayjob-finalizer",
        ray_reconcile::finalizers::FinalizerGuard::Unguarded,
    )
    .await
    .unwrap()
    .expect("the written object's resourceVersion");
    assert!(matches!(
        write_status(&jobs, &stored, &first, StatusWrite::Merge(MergeShape::Whole)).await,
        Err(StatusWriteError::Api(kube::Error::Api(ref status))) if status.code == 409
    ));
    let mut stored = stored;
    stored.metadata.resource_version = Some(version);
    // A pass that read the written object writes fine.
    write_status(&jobs, &stored, &second, StatusWrite::Merge(MergeShape::Whole))
        .await
        .unwrap();
    assert_eq!(
        status_text(&jobs.get("stale").await.unwrap(), |s| s.job_id.as_ref()),
        "stale-bbbbb"
    );
}
