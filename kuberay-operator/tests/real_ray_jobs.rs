//! End to end with real Ray: RayJobs and a RayService whose Python code comes from ConfigMap volumes, run by
//! the operator binary against kube-sim's process pods (the pinned Ray venv on the bridge network, as for the
//! sample cluster).
//!
//! - K8sJobMode: the submitter Job's pod runs the real `ray job submit`; the job SUCCEEDS and its output is in
//!   the submitter's `kubectl logs`.
//! - HTTPMode: the operator submits; the job SUCCEEDS.
//! - A failing entrypoint with `backoffLimit: 1`: two attempts on two clusters, then `Failed`.
//! - `activeDeadlineSeconds` with a sleeping entrypoint: `Failed` / `DeadlineExceeded`.
//! - A RayService with a Serve app: Ready, HTTP through the `<name>-serve-svc` ClusterIP answers; a serve config
//!   change rolls in place; a cluster spec change upgrades to a new cluster while requests sent in a loop are
//!   all answered.
//!
//! The scenarios run side by side in three lanes on one kube-sim and one operator to keep the wall time and the
//! peak memory (one Ray head is about 1.5 GiB) bounded. Deleting everything leaves no process of the run's pods.
//! The figures (create to SUCCEEDED / Ready, upgrade time, requests, peak memory) are printed on stderr.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::ListParams;
use ray_api::{RayCluster, RayJob, RayService};
use serde_json::{Value, json};

use crate::common;
use crate::common::real_ray::{
    PeakMemory, RAY_IMAGE, REAL_RAY_RUNS, assert_nothing_left, assert_run_has_processes, http_get_at, ray_venv,
    real_ray_sim_config, run_cgroup_prefix,
};
use crate::common::{Operator, SimEnv, kubectl};

const NS: &str = "default";
/// The Ray version the venv runs (`scripts/install-ray.sh`); the pods say so, which picks the HTTP probes.
const RAY_VERSION: &str = "2.60.0";

/// The ConfigMap holding the job scripts, mounted at [`JOB_SCRIPTS_DIR`].
const JOB_SCRIPTS: &str = "ray-job-scripts";
const JOB_SCRIPTS_DIR: &str = "/home/ray/samples";
/// The ConfigMap holding the Serve application, mounted at [`SERVE_APP_DIR`] and put on `PYTHONPATH`.
const SERVE_APP: &str = "serve-greeter";
const SERVE_APP_DIR: &str = "/home/ray/serve";

/// A job that connects to Ray and runs tasks: its last line is [`SUM_OF_SQUARES_LINE`].
const SUM_OF_SQUARES_PY: &str = r#"import ray

ray.init()


@ray.remote(num_cpus=0.5)
def square(x):
    return x * x


print("sum of squares:", sum(ray.get([square.remote(i) for i in range(8)])), flush=True)
"#;
const SUM_OF_SQUARES_LINE: &str = "sum of squares: 140";

/// An entrypoint that fails after saying so.
const FAIL_PY: &str = r#"import sys

print("failing on purpose", flush=True)
sys.exit(3)
"#;

/// An entrypoint that sleeps far longer than any deadline here.
const SLEEP_PY: &str = r#"import time

print("sleeping", flush=True)
time.sleep(600)
"#;

/// The Serve application: answers `<greeting> from <RayCluster name>`, so each answer names the cluster that
/// served it (`RAY_CLUSTER_NAME` comes from the pod's `ray.io/cluster` label and reaches the replica's process
/// through `ray start`). Replicas take no CPU, so an in-place update never waits for one.
const GREETER_PY: &str = r#"import os

from ray import serve


@serve.deployment(ray_actor_options={"num_cpus": 0})
class Greeter:
    def __init__(self, greeting):
        self.greeting = greeting
        self.cluster = os.environ.get("RAY_CLUSTER_NAME", "an unknown cluster")

    def __call__(self, request):
        return f"{self.greeting} from {self.cluster}"


def app(args):
    return Greeter.bind(args.get("greeting", "hello"))
"#;

const RAYSERVICE: &str = "greeter";
const SERVE_SVC: &str = "greeter-serve-svc";
/// The port Serve's proxy listens on in the head, named `serve` (what `<name>-serve-svc` exposes).
const SERVE_PORT: u16 = 8000;
/// The old cluster outlives the switch by this long, so requests already routed to it finish.
const DELETION_DELAY_SECONDS: i64 = 10;
/// Short enough to pass while the job sleeps, long enough for a head to start first on a loaded 2-core machine
/// (where a head has been seen to need a restart and 90 s before it was ready).
const ACTIVE_DEADLINE_SECONDS: i64 = 150;
/// How long the lane that starts second waits, so that two heads do not start at the same moment (under load a
/// head starting next to others has been seen to time out registering its node and restart).
const LANE_STAGGER: Duration = Duration::from_secs(25);

/// The kube-sim every scenario shares, with its kubeconfig for `kubectl`.
struct Sim {
    env: SimEnv,
}

impl Sim {
    /// The real `kubectl` against the sim.
    fn kubectl(&self, args: &[&str]) -> (bool, String, String) {
        kubectl(&self.env.dir, &self.env.kubeconfig, args)
    }

    /// `kubectl create -f` of `object` (written as JSON under the test's dir); the moment it returned.
    fn create(&self, object: &Value) -> Instant {
        let name = object["metadata"]["name"].as_str().unwrap();
        let kind = object["kind"].as_str().unwrap().to_lowercase();
        let file = self.env.dir.join(format!("{kind}-{name}.json"));
        std::fs::write(&file, serde_json::to_vec_pretty(object).unwrap()).unwrap();
        let (ok, _, stderr) = self.kubectl(&["create", "-f", file.to_str().unwrap()]);
        assert!(ok, "kubectl create {kind} {name}: {stderr}");
        Instant::now()
    }

    /// The status of the RayJob `name`, as JSON (`null` before the first write).
    async fn rayjob_status(&self, name: &str) -> Value {
        let jobs: Api<RayJob> = Api::namespaced(self.env.client.clone(), NS);
        serde_json::to_value(jobs.get(name).await.unwrap().status).unwrap()
    }

    /// Polls the RayJob `name` every second until its `jobDeploymentStatus` is `Complete`, or `Failed` for good
    /// (after `attempts` failed attempts, `Failed` being passing while retries are left); every status seen, in
    /// order, without repeats.
    async fn follow_rayjob(&self, name: &str, attempts: i64, timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        let mut seen: Vec<Value> = Vec::new();
        loop {
            let status = self.rayjob_status(name).await;
            let summary = json!({
                "jobDeploymentStatus": status["jobDeploymentStatus"],
                "jobStatus": status["jobStatus"],
                "rayClusterName": status["rayClusterName"],
                "jobId": status["jobId"],
                "failed": status["failed"],
                "succeeded": status["succeeded"],
                "reason": status["reason"],
                "message": status["message"],
            });
            if seen.last() != Some(&summary) {
                eprintln!("[rayjob {name}] {summary}");
                seen.push(summary);
            }
            let deployment = status["jobDeploymentStatus"].as_str().unwrap_or_default();
            let failed = status["failed"].as_i64().unwrap_or(0);
            let final_failure = deployment == "Failed" && (attempts <= 1 || failed >= attempts);
            if deployment == "Complete" || final_failure {
                return seen;
            }
            assert!(
                Instant::now() < deadline,
                "RayJob {name} did not finish within {timeout:?}; statuses seen: {seen:#?}"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// A ConfigMap holding `files` (name, content).
fn config_map(name: &str, files: &[(&str, &str)]) -> Value {
    let data: serde_json::Map<String, Value> = files.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": data})
}

/// A container `name` of the Ray image (so it runs from the venv) mounting the volume `code` at `mount_path`.
fn ray_container(name: &str, mount_path: &str) -> Value {
    json!({
        "name": name,
        "image": format!("{RAY_IMAGE}:{RAY_VERSION}"),
        "volumeMounts": [{"name": "code", "mountPath": mount_path}],
    })
}

/// The ConfigMap `config_map` as the volume `code`.
fn code_volume(config_map: &str) -> Value {
    json!({"name": "code", "configMap": {"name": config_map}})
}

/// A head-only cluster spec: one CPU for Ray, the ConfigMap `config_map` at `mount_path` in the head, and the
/// head container's extra `env` and `ports`. The memory limit sizes Ray's `/dev/shm` and leaves room for a
/// head, its dashboard modules and a few workers.
fn head_only_cluster(config_map: &str, mount_path: &str, env: Value, ports: Value) -> Value {
    let mut head = ray_container("ray-head", mount_path);
    head["env"] = env;
    head["ports"] = ports;
    head["resources"] = json!({"limits": {"memory": "3Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}});
    json!({
        "rayVersion": RAY_VERSION,
        "headGroupSpec": {
            "rayStartParams": {"num-cpus": "1"},
            "template": {"spec": {"containers": [head], "volumes": [code_volume(config_map)]}},
        },
    })
}

/// A RayJob running `entrypoint` on a head-only cluster with the job scripts mounted, deleting its cluster as
/// soon as it is over; `extra` is merged into the spec.
fn rayjob(name: &str, entrypoint: &str, extra: Value) -> Value {
    let mut spec = json!({
        "entrypoint": entrypoint,
        "shutdownAfterJobFinishes": true,
        "ttlSecondsAfterFinished": 0,
        "rayClusterSpec": head_only_cluster(JOB_SCRIPTS, JOB_SCRIPTS_DIR, json!([]), json!([])),
    });
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name, "namespace": NS}, "spec": spec})
}

/// The entrypoint running the job script `file` from the mounted ConfigMap.
fn script(file: &str) -> String {
    format!("python {JOB_SCRIPTS_DIR}/{file}")
}

/// K8sJobMode with the scripts mounted in the submitter too: SUCCEEDED, output in the submitter's logs.
/// Returns the time from `kubectl create` to `SUCCEEDED`.
async fn k8s_job_mode(sim: &Sim) -> Duration {
    const NAME: &str = "sum-k8s-job-mode";
    let submitter = json!({"spec": {
        "restartPolicy": "Never",
        "containers": [ray_container("ray-job-submitter", JOB_SCRIPTS_DIR)],
        "volumes": [code_volume(JOB_SCRIPTS)],
    }});
    let created = sim.create(&rayjob(
        NAME,
        &script("sum_of_squares.py"),
        json!({"submissionMode": "K8sJobMode", "submitterPodTemplate": submitter}),
    ));
    let seen = sim.follow_rayjob(NAME, 1, Duration::from_secs(360)).await;
    let took = created.elapsed();
    let last = seen.last().unwrap();
    assert_eq!(
        (&last["jobStatus"], &last["jobDeploymentStatus"]),
        (&json!("SUCCEEDED"), &json!("Complete")),
        "{seen:#?}"
    );
    let (ok, logs, stderr) = sim.kubectl(&["logs", &format!("job/{NAME}")]);
    assert!(ok, "kubectl logs job/{NAME}: {stderr}");
    assert!(
        logs.contains(SUM_OF_SQUARES_LINE),
        "the submitter's log lacks the job's output {SUM_OF_SQUARES_LINE:?}:\n{logs}"
    );
    eprintln!("[figure] K8sJobMode RayJob: kubectl create -> SUCCEEDED/Complete in {took:.1?}");
    took
}

/// HTTPMode: the operator submits to the real dashboard; SUCCEEDED.
async fn http_mode(sim: &Sim) -> Duration {
    const NAME: &str = "sum-http-mode";
    let created = sim.create(&rayjob(
        NAME,
        &script("sum_of_squares.py"),
        json!({"submissionMode": "HTTPMode"}),
    ));
    let seen = sim.follow_rayjob(NAME, 1, Duration::from_secs(360)).await;
    let took = created.elapsed();
    let last = seen.last().unwrap();
    assert_eq!(
        (&last["jobStatus"], &last["jobDeploymentStatus"]),
        (&json!("SUCCEEDED"), &json!("Complete")),
        "{seen:#?}"
    );
    eprintln!("[figure] HTTPMode RayJob: kubectl create -> SUCCEEDED/Complete in {took:.1?}");
    took
}

/// A failing entrypoint with `backoffLimit: 1`: two attempts, each on a cluster of its own, then `Failed`.
async fn failing_with_one_retry(sim: &Sim) -> Duration {
    const NAME: &str = "fails-twice";
    let created = sim.create(&rayjob(NAME, &script("fail.py"), json!({"backoffLimit": 1})));
    let seen = sim.follow_rayjob(NAME, 2, Duration::from_secs(480)).await;
    let took = created.elapsed();
    let last = seen.last().unwrap();
    assert_eq!(last["jobDeploymentStatus"], "Failed", "{seen:#?}");
    assert_eq!(last["jobStatus"], "FAILED", "{seen:#?}");
    assert_eq!(last["reason"], "AppFailed", "{seen:#?}");
    assert_eq!(
        (&last["failed"], &last["succeeded"]),
        (&json!(2), &json!(0)),
        "{seen:#?}"
    );
    // The first attempt's `Failed` and `Retrying` pass within a reconcile or two, too fast for a 1 s poll to be
    // sure to see them; each attempt has its own cluster and job id.
    for field in ["rayClusterName", "jobId"] {
        let mut values: Vec<&str> = seen
            .iter()
            .filter_map(|s| s[field].as_str())
            .filter(|v| !v.is_empty())
            .collect();
        values.dedup();
        assert_eq!(values.len(), 2, "one {field} per attempt: {seen:#?}");
    }
    eprintln!("[figure] failing RayJob, backoffLimit 1: kubectl create -> Failed after 2 attempts in {took:.1?}");
    took
}

/// `activeDeadlineSeconds` passing while the entrypoint sleeps: `Failed` with `DeadlineExceeded`.
async fn deadline_exceeded(sim: &Sim) -> Duration {
    const NAME: &str = "sleeps-past-deadline";
    let created = sim.create(&rayjob(
        NAME,
        &script("sleep.py"),
        json!({"activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS}),
    ));
    let seen = sim.follow_rayjob(NAME, 1, Duration::from_secs(300)).await;
    let took = created.elapsed();
    let last = seen.last().unwrap();
    assert_eq!(
        (&last["jobDeploymentStatus"], &last["reason"]),
        (&json!("Failed"), &json!("DeadlineExceeded")),
        "{seen:#?}"
    );
    assert!(
        last["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("The RayJob has passed the activeDeadlineSeconds."),
        "{seen:#?}"
    );
    assert!(
        seen.iter().any(|s| s["jobStatus"] == "RUNNING"),
        "the deadline passed before the Ray job ran (the head took longer than {ACTIVE_DEADLINE_SECONDS} s?): \
         {seen:#?}"
    );
    // `startTime` has whole seconds and is written by the operator's first pass, which may come before `kubectl
    // create` returns here: the deadline may pass up to about a second before `took` says so, never earlier.
    assert!(
        took + Duration::from_secs(2) >= Duration::from_secs(ACTIVE_DEADLINE_SECONDS as u64),
        "failed after {took:?}"
    );
    eprintln!(
        "[figure] activeDeadlineSeconds {ACTIVE_DEADLINE_SECONDS}: kubectl create -> DeadlineExceeded in {took:.1?}"
    );
    took
}

/// The Serve config: the greeter application at `/`, greeting with `greeting`.
fn serve_config(greeting: &str) -> String {
    format!(
        "applications:\n  - name: greeter\n    import_path: greeter:app\n    route_prefix: /\n    args:\n      greeting: {greeting}\n"
    )
}

/// The RayService: a head-only cluster with the greeter on `PYTHONPATH` and the serve port, serving `hello`.
fn rayservice() -> Value {
    let ports = json!([
        {"containerPort": 6379, "name": "gcs-server"},
        {"containerPort": 8265, "name": "dashboard"},
        {"containerPort": 10001, "name": "client"},
        {"containerPort": SERVE_PORT, "name": "serve"},
    ]);
    let env = json!([{"name": "PYTHONPATH", "value": SERVE_APP_DIR}]);
    json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": RAYSERVICE, "namespace": NS},
        "spec": {
            "rayClusterDeletionDelaySeconds": DELETION_DELAY_SECONDS,
            "serveConfigV2": serve_config("hello"),
            "rayClusterConfig": head_only_cluster(SERVE_APP, SERVE_APP_DIR, env, ports),
        },
    })
}

/// The RayService's status as JSON.
async fn rayservice_status(sim: &Sim) -> Value {
    let services: Api<RayService> = Api::namespaced(sim.env.client.clone(), NS);
    serde_json::to_value(services.get(RAYSERVICE).await.unwrap().status).unwrap()
}

/// Whether a RayService status has `Ready=True`.
fn ready(status: &Value) -> bool {
    status["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// The active cluster's name in a RayService status (empty when none).
fn active_cluster(status: &Value) -> &str {
    status["activeServiceStatus"]["rayClusterName"]
        .as_str()
        .unwrap_or_default()
}

/// The pending cluster's name in a RayService status (empty when none).
fn pending_cluster(status: &Value) -> &str {
    status["pendingServiceStatus"]["rayClusterName"]
        .as_str()
        .unwrap_or_default()
}

/// Polls the RayService every second until `done` holds for its status, failing with the last status after
/// `timeout`.
async fn wait_rayservice(sim: &Sim, what: &str, timeout: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        let status = rayservice_status(sim).await;
        if done(&status) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}; RayService status: {status:#}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `<name>-serve-svc`'s ClusterIP and serve port, reachable from the host on the bridge.
async fn serve_address(sim: &Sim) -> SocketAddr {
    let services: Api<Service> = Api::namespaced(sim.env.client.clone(), NS);
    let service = services.get(SERVE_SVC).await.unwrap();
    let ip = service.spec.unwrap().cluster_ip.unwrap();
    SocketAddr::new(ip.parse().unwrap(), SERVE_PORT)
}

/// Asks the serve Service every `every` until `answer` comes back, failing with the last answer after
/// `timeout`.
async fn wait_answer(addr: SocketAddr, answer: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let got = http_get_at(addr, "/", Duration::from_secs(10)).await;
        if matches!(&got, Ok((200, body)) if body.contains(answer)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{SERVE_SVC} ({addr}) did not answer {answer:?} within {timeout:?}; last answer: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// What the request loop saw while the cluster was replaced.
#[derive(Debug, Default)]
struct Traffic {
    sent: usize,
    /// Requests that got no answer or a status other than 200, with what went wrong.
    failed: Vec<String>,
    /// The answers' bodies, in order, without repeats.
    answers: Vec<String>,
}

/// Sends `GET /` to `addr` every 100 ms until `stop`.
async fn send_requests(addr: SocketAddr, stop: Arc<AtomicBool>) -> Traffic {
    let mut traffic = Traffic::default();
    while !stop.load(Ordering::Relaxed) {
        traffic.sent += 1;
        match http_get_at(addr, "/", Duration::from_secs(10)).await {
            Ok((200, body)) => {
                if traffic.answers.last() != Some(&body) {
                    traffic.answers.push(body);
                }
            }
            other => traffic.failed.push(format!("request {}: {other:?}", traffic.sent)),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    traffic
}

/// The RayClusters of the RayService, by name.
async fn rayservice_clusters(sim: &Sim) -> Vec<String> {
    let clusters: Api<RayCluster> = Api::namespaced(sim.env.client.clone(), NS);
    let lp = ListParams::default().labels(&format!("ray.io/originated-from-cr-name={RAYSERVICE}"));
    clusters
        .list(&lp)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect()
}

/// The RayService: Ready and answering, a serve config change in place, a cluster spec change with traffic
/// answered throughout. Returns (create -> Ready, upgrade duration).
async fn rayservice_flow(sim: &Sim) -> (Duration, Duration) {
    let created = sim.create(&rayservice());
    let status = wait_rayservice(sim, "the RayService to be Ready", Duration::from_secs(360), ready).await;
    let to_ready = created.elapsed();
    let first = active_cluster(&status).to_owned();
    assert!(first.starts_with("greeter-"), "{status:#}");
    let addr = serve_address(sim).await;
    wait_answer(addr, &format!("hello from {first}"), Duration::from_secs(60)).await;
    let to_answer = created.elapsed();
    eprintln!(
        "[figure] RayService: kubectl create -> Ready in {to_ready:.1?}, -> first answer through {SERVE_SVC} in \
         {to_answer:.1?}"
    );

    // A serve config change rolls in place: same cluster, new answer.
    let patch = json!({"spec": {"serveConfigV2": serve_config("bonjour")}}).to_string();
    let (ok, _, stderr) = sim.kubectl(&["patch", "rayservice", RAYSERVICE, "--type=merge", "-p", &patch]);
    assert!(ok, "kubectl patch: {stderr}");
    let patched = Instant::now();
    wait_answer(addr, &format!("bonjour from {first}"), Duration::from_secs(120)).await;
    eprintln!(
        "[figure] RayService serve config change: in place in {:.1?}",
        patched.elapsed()
    );
    let status = rayservice_status(sim).await;
    assert_eq!(active_cluster(&status), first, "{status:#}");
    assert_eq!(pending_cluster(&status), "", "{status:#}");
    assert_eq!(rayservice_clusters(sim).await, [first.as_str()]);

    // A cluster spec change: a new cluster, traffic answered throughout.
    let stop = Arc::new(AtomicBool::new(false));
    let requests = tokio::spawn(send_requests(addr, Arc::clone(&stop)));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let patch = json!([{
        "op": "add",
        "path": "/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/env/-",
        "value": {"name": "CLUSTER_GENERATION", "value": "2"},
    }])
    .to_string();
    let (ok, _, stderr) = sim.kubectl(&["patch", "rayservice", RAYSERVICE, "--type=json", "-p", &patch]);
    assert!(ok, "kubectl patch: {stderr}");
    let upgrade_started = Instant::now();
    let status = wait_rayservice(sim, "the new cluster to become active", Duration::from_secs(360), |s| {
        !active_cluster(s).is_empty() && active_cluster(s) != first && pending_cluster(s).is_empty() && ready(s)
    })
    .await;
    let upgrade = upgrade_started.elapsed();
    let second = active_cluster(&status).to_owned();
    // Keep sending until the old cluster is gone, then a little longer.
    let started_waiting = Instant::now();
    while rayservice_clusters(sim).await.contains(&first) {
        assert!(
            started_waiting.elapsed() < Duration::from_secs(120),
            "the old cluster {first} was not deleted within 120 s of the switch"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let old_gone_after = upgrade_started.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let traffic = requests.await.unwrap();
    eprintln!(
        "[figure] RayService cluster spec change: new cluster {second} active in {upgrade:.1?}, old cluster deleted \
         after {old_gone_after:.1?}; requests sent {}, failed {}; answers in order: {:?}",
        traffic.sent,
        traffic.failed.len(),
        traffic.answers
    );
    assert!(
        traffic.failed.is_empty(),
        "requests failed during the upgrade: {traffic:#?}"
    );
    assert!(traffic.sent >= 20, "too few requests to say anything: {traffic:#?}");
    assert_eq!(
        traffic.answers.first(),
        Some(&format!("bonjour from {first}")),
        "{traffic:#?}"
    );
    assert_eq!(
        traffic.answers.last(),
        Some(&format!("bonjour from {second}")),
        "{traffic:#?}"
    );
    assert_eq!(rayservice_clusters(sim).await, [second]);
    (to_ready, upgrade)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rayjobs_and_a_rayservice_run_real_ray_code_from_config_maps() {
    let _one_of_two = REAL_RAY_RUNS.acquire().await.unwrap();
    let venv = ray_venv();
    let started = Instant::now();
    let env = SimEnv::start("real-ray-jobs", real_ray_sim_config(&venv)).await;
    let _operator = Operator::start_proxied(&env, NS);
    let cgroup_prefix = run_cgroup_prefix(&env.sim);
    let memory = PeakMemory::start(cgroup_prefix.clone());
    let sim = Sim { env };
    sim.create(&config_map(
        JOB_SCRIPTS,
        &[
            ("sum_of_squares.py", SUM_OF_SQUARES_PY),
            ("fail.py", FAIL_PY),
            ("sleep.py", SLEEP_PY),
        ],
    ));
    sim.create(&config_map(SERVE_APP, &[("greeter.py", GREETER_PY)]));

    // Three lanes: at most three clusters at once (four during the RayService's upgrade), the second RayJob lane
    // staggered. The deadline lane is the longest wait, so it starts at once.
    let deadline_lane = async {
        let deadline = deadline_exceeded(&sim).await;
        let http = http_mode(&sim).await;
        (deadline, http)
    };
    let jobs_lane = async {
        tokio::time::sleep(LANE_STAGGER).await;
        let k8s = k8s_job_mode(&sim).await;
        let retried = failing_with_one_retry(&sim).await;
        (k8s, retried)
    };
    let ((deadline, http), (k8s, retried), (to_ready, upgrade)) =
        tokio::join!(deadline_lane, jobs_lane, rayservice_flow(&sim));

    // The RayService's cluster still runs.
    assert_run_has_processes(&cgroup_prefix);
    for kind in ["rayjob", "rayservice"] {
        let (ok, _, stderr) = sim.kubectl(&["delete", kind, "--all", "--wait=false"]);
        assert!(ok, "kubectl delete {kind}: {stderr}");
    }
    common::wait_no_pods(&sim.env.client, NS, "", Duration::from_secs(180)).await;
    assert_nothing_left(&cgroup_prefix, &venv);
    eprintln!(
        "[figure] summary: K8sJobMode {k8s:.1?}, HTTPMode {http:.1?}, deadline {deadline:.1?}, retried {retried:.1?}, \
         RayService Ready {to_ready:.1?}, upgrade {upgrade:.1?}; pods' processes peak summed PSS {} MiB, peak \
         summed RSS {} MiB; whole test {:.1?}",
        memory.peak_pss_mib(),
        memory.peak_rss_mib(),
        started.elapsed()
    );
}
