//! End to end: slow dashboards and `--reconcile-concurrency`, with the real operator binary against an
//! in-process kube-sim whose hollow Ray heads hold dashboard requests (ray-sim's dashboard delay), dashboards
//! reached through the API server's service proxy. Nothing here is timed: the hollow dashboards count the
//! requests they hold at once, and the isolation test only checks that healthy work finishes while the slow
//! dashboards still hold their requests.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use ray_api::{RayCluster, RayJob};
use ray_sim::{DASHBOARD_DELAY_ANNOTATION, DashboardCall, HollowRay, HollowRayOptions};
use serde_json::json;

mod common;
use common::{Operator, SimEnv, free_port};

const NS: &str = "default";
/// Longest wait for any one step (the steps are not timed, only bounded).
const WAIT: Duration = Duration::from_secs(240);
/// How long the slow RayJobs may take to start (many RayJobs at once on a debug build and a shared machine).
const SETUP_WAIT: Duration = Duration::from_secs(540);

/// The simulator, its hollow Ray and the operator with `flags`.
struct Env {
    _sim: kube_sim::SimHandle,
    ray: HollowRay,
    client: kube::Client,
    _operator: Operator,
}

impl Env {
    /// The operator gets `flags` and, so that slow dashboards' failed queries do not fail their RayJobs while
    /// the test runs, a status-check timeout of an hour.
    async fn start(tag: &str, options: HollowRayOptions, flags: &[&str]) -> Env {
        let started = SimEnv::start(tag, kube_sim::SimConfig::default()).await;
        let ray = HollowRay::attach(&started.sim, options);
        let mut all = vec!["--use-kubernetes-proxy"];
        all.extend_from_slice(flags);
        let operator = Operator::start_with_env(
            &started.dir,
            &started.kubeconfig,
            NS,
            free_port(),
            free_port(),
            &all,
            &[("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", "3600")],
        );
        Env {
            client: started.client.clone(),
            _sim: started.sim,
            ray,
            _operator: operator,
        }
    }

    fn rayjobs(&self) -> Api<RayJob> {
        Api::namespaced(self.client.clone(), NS)
    }

    async fn rayjob_status(&self, name: &str) -> (String, String) {
        let job = self.rayjobs().get(name).await.unwrap();
        let status = job.status.unwrap_or_default();
        (
            status.job_deployment_status.map(|s| s.to_string()).unwrap_or_default(),
            status.job_status.map(|s| s.to_string()).unwrap_or_default(),
        )
    }

    /// Waits until every RayJob of `names` is `Running`.
    async fn wait_running(&self, names: &[String]) {
        common::wait_for(
            &format!("{} RayJobs Running", names.len()),
            SETUP_WAIT,
            Duration::from_millis(500),
            || async {
                let listed = self.rayjobs().list(&ListParams::default()).await.ok()?;
                let running = listed
                    .items
                    .iter()
                    .filter(|j| names.contains(&j.name_any()))
                    .filter(|j| {
                        j.status
                            .as_ref()
                            .and_then(|s| s.job_deployment_status.as_ref())
                            .map(|d| d.to_string())
                            == Some("Running".to_owned())
                    })
                    .count();
                (running == names.len()).then_some(())
            },
        )
        .await;
    }

    /// The hollow heads of the RayClusters of the RayJobs `names`.
    async fn heads_of(&self, names: &[String]) -> Vec<std::sync::Arc<ray_sim::HollowRayHead>> {
        let mut heads = Vec::new();
        for name in names {
            let job = self.rayjobs().get(name).await.unwrap();
            let cluster = job.status.and_then(|s| s.ray_cluster_name).unwrap();
            heads.push(self.ray.wait_for_head(NS, &cluster, WAIT).await.unwrap());
        }
        heads
    }
}

/// A K8sJobMode RayJob with a head-only cluster whose Ray job runs `entrypoint`; `dashboard_delay_ms`, when
/// given, is copied onto its RayCluster (the hollow dashboard then holds each request that long).
fn rayjob(name: &str, entrypoint: &str, dashboard_delay_ms: Option<u64>) -> RayJob {
    let mut job: RayJob = common::sample_document("ray-job.sample.yaml", "RayJob");
    job.metadata.name = Some(name.to_owned());
    job.metadata.namespace = Some(NS.to_owned());
    if let Some(ms) = dashboard_delay_ms {
        job.annotations_mut()
            .insert(DASHBOARD_DELAY_ANNOTATION.to_owned(), ms.to_string());
    }
    let mut value = serde_json::to_value(&job).unwrap();
    value["spec"]["entrypoint"] = json!(entrypoint);
    value["spec"]["rayClusterSpec"]["workerGroupSpecs"] = json!([]);
    serde_json::from_value(value).unwrap()
}

/// `--reconcile-concurrency N` bounds the RayJob passes running at once to N, each on a different RayJob:
/// deleting RayJobs whose Ray job still runs makes each pass stop it through the dashboard (in the pass),
/// and the hollow dashboards, holding every request for a while, count how many stops are held at once.
async fn deletions_in_flight(concurrency: usize) {
    const JOBS: usize = 6;
    let options = HollowRayOptions {
        dashboard_delay: Duration::from_secs(3),
        ..HollowRayOptions::default()
    };
    let flag = concurrency.to_string();
    let env = Env::start(
        &format!("isolation-concurrency-{concurrency}"),
        options,
        &["--reconcile-concurrency", &flag],
    )
    .await;
    let names: Vec<String> = (0..JOBS).map(|i| format!("held-{i}")).collect();
    for name in &names {
        env.rayjobs()
            .create(&PostParams::default(), &rayjob(name, "sleep 3600", None))
            .await
            .unwrap();
    }
    env.wait_running(&names).await;
    let heads = env.heads_of(&names).await;
    for name in &names {
        env.rayjobs().delete(name, &DeleteParams::default()).await.unwrap();
    }
    let rayjobs = env.rayjobs();
    for name in &names {
        common::wait_for(&format!("RayJob {name} gone"), WAIT, Duration::from_millis(250), || {
            common::gone(&rayjobs, name)
        })
        .await;
    }
    let stops = env.ray.dashboard_load().counts(DashboardCall::JobStop);
    assert_eq!(stops.total, JOBS, "one stop per deleted RayJob: {stops:?}");
    assert_eq!(
        stops.peak,
        concurrency.min(JOBS),
        "RayJob passes stopping a job at once: {stops:?}"
    );
    for head in heads {
        for call in [DashboardCall::JobStop, DashboardCall::JobInfo] {
            let counts = head.dashboard_load().counts(call);
            assert!(
                counts.peak <= 1,
                "one RayJob had {call:?} calls in flight at once: {counts:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_concurrency_one_runs_one_rayjob_pass_at_a_time() {
    deletions_in_flight(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_concurrency_four_runs_four_rayjob_passes_at_once() {
    deletions_in_flight(4).await;
}

/// At reconcile concurrency 1, RayJobs whose dashboards never answer (within the test) hold no reconcile
/// worker: a RayCluster and a RayJob on a healthy dashboard created after them get ready and complete, while
/// the slow RayJobs still wait for their first job info.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_dashboards_do_not_hold_up_other_objects() {
    /// The load. A pass waiting out each slow dashboard inline (2 s each, as before job-info queries ran
    /// in the background) failed this test with 40. With kube-runtime's own concurrency limit, which hands the
    /// one slot to whichever due object its hash set yields first, the release operator had 75 of 100 Running
    /// after 600 s (`kuberay-bench isolation`); with first-come-first-served slots this test passes in about
    /// a minute.
    const SLOW: usize = 100;
    /// Far longer than the test: the slow dashboards answer nothing while it runs.
    const HOLD_MS: u64 = 3_600_000;
    let env = Env::start("isolation-slow", HollowRayOptions::default(), &[]).await;
    let slow: Vec<String> = (0..SLOW).map(|i| format!("slow-{i:03}")).collect();
    for name in &slow {
        env.rayjobs()
            .create(&PostParams::default(), &rayjob(name, "sleep 3600", Some(HOLD_MS)))
            .await
            .unwrap();
    }
    env.wait_running(&slow).await;
    // Every slow dashboard has been asked for its job's info and has answered nothing.
    let slow_heads = env.heads_of(&slow).await;
    common::wait_for(
        "a job-info query held by every slow dashboard",
        WAIT,
        Duration::from_millis(500),
        || async {
            slow_heads
                .iter()
                .all(|h| h.dashboard_load().counts(DashboardCall::JobInfo).total >= 1)
                .then_some(())
        },
    )
    .await;

    // Created after the slow RayJobs, on healthy dashboards.
    let clusters: Api<RayCluster> = Api::namespaced(env.client.clone(), NS);
    let plain = rayjob("unused", "", None).spec.ray_cluster_spec.unwrap();
    let mut cluster = RayCluster::new("plain", plain);
    cluster.metadata.namespace = Some(NS.to_owned());
    clusters.create(&PostParams::default(), &cluster).await.unwrap();
    env.rayjobs()
        .create(&PostParams::default(), &rayjob("healthy", "python ok.py", None))
        .await
        .unwrap();
    common::wait_cluster_ready(&env.client, NS, "plain", WAIT).await;
    // Waits for either end, so that a failure shows at once with its status.
    let finished = common::wait_for(
        "the healthy RayJob Complete or Failed",
        WAIT,
        Duration::from_millis(500),
        || async {
            let status = env.rayjob_status("healthy").await;
            ["Complete", "Failed"].contains(&status.0.as_str()).then_some(status)
        },
    )
    .await;
    assert_eq!(finished, ("Complete".to_owned(), "SUCCEEDED".to_owned()));

    // The slow ones are still waiting: Running, no job status read from their dashboards (the operator's
    // client gives up on a held query after its timeout and asks again later; the dashboards answer none).
    for name in &slow {
        assert_eq!(
            env.rayjob_status(name).await,
            ("Running".to_owned(), String::new()),
            "{name}"
        );
    }
}
