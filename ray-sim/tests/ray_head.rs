//! The hollow Ray head (`ray_sim`) driven through the simulated service proxy with the real kube client:
//! the job API, the serve API, head lifecycle, and a KubeRay-style submitter Job whose pod ends with its job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use http_body_util::BodyExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube_sim::{AgentConfig, SimConfig, SimHandle, SimServer};
use ray_sim::{HollowRay, HollowRayOptions};
use serde_json::{Value, json};

/// Upper bound for any single wait in these tests.
const WAIT: Duration = Duration::from_secs(10);

fn raycluster_crd() -> PathBuf {
    let p = kuberay_reference::crd_path("ray.io_rayclusters.yaml");
    assert!(p.exists(), "KubeRay CRD file missing: {}", p.display());
    p
}

fn options() -> HollowRayOptions {
    HollowRayOptions {
        // Long enough that a GET right after the submit still sees PENDING on a loaded machine.
        job_pending: Duration::from_secs(1),
        job_run: Duration::from_millis(300),
        serve_deploy: Duration::from_millis(300),
        ..HollowRayOptions::default()
    }
}

async fn start() -> (SimHandle, HollowRay) {
    let sim = SimServer::start(SimConfig {
        crd_files: vec![raycluster_crd()],
        agents: AgentConfig {
            pod_start_delay: Duration::from_millis(20),
            resync: Duration::from_millis(20),
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    })
    .await
    .expect("kube-sim starts");
    let ray = HollowRay::attach(&sim, options());
    (sim, ray)
}

/// Creates RayCluster `name` with its head Service `<name>-head-svc` (dashboard port `dashboard_port`) and its
/// head pod, labelled as KubeRay labels them, and waits for the hollow head to come up.
async fn ray_cluster(sim: &SimHandle, ray: &HollowRay, name: &str, dashboard_port: u16) {
    let client = sim.client();
    let rc_api: Api<DynamicObject> = Api::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("ray.io", "v1", "RayCluster"), "rayclusters"),
    );
    let rc: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"rayVersion": "2.46.0", "headGroupSpec": {"rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}}}}
    }))
    .unwrap();
    rc_api.create(&PostParams::default(), &rc).await.unwrap();
    let labels =
        json!({"ray.io/cluster": name, "ray.io/node-type": "head", "ray.io/identifier": format!("{name}-head")});
    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("{name}-head-svc"), "labels": labels},
        "spec": {"selector": labels, "ports": [
            {"name": "client", "port": 10001, "appProtocol": "tcp"},
            {"name": "dashboard", "port": dashboard_port, "appProtocol": "tcp"},
            {"name": "serve", "port": 8000, "appProtocol": "tcp"},
        ]}
    }))
    .unwrap();
    Api::<Service>::default_namespaced(client.clone())
        .create(&PostParams::default(), &svc)
        .await
        .unwrap();
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{name}-head-abcde"), "labels": labels},
        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}
    }))
    .unwrap();
    Api::<Pod>::default_namespaced(client)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    ray.wait_for_head("default", name, WAIT)
        .await
        .expect("the hollow head comes up once the head pod runs");
}

/// A kube client that does not retry 503s (kube 5's default retries them with backoff for minutes, which is
/// what a Service without a ready endpoint answers).
fn no_retry_client(sim: &SimHandle) -> kube::Client {
    let mut config = sim.client_config();
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

/// One raw request through the service proxy: `(status, body)`.
async fn call(sim: &SimHandle, method: &str, svc_port: &str, path: &str, body: Option<Value>) -> (u16, String) {
    let uri = format!("/api/v1/namespaces/default/services/{svc_port}/proxy{path}");
    let mut b = http::Request::builder().method(method).uri(uri);
    let bytes = match body {
        Some(v) => {
            b = b.header("Content-Type", "application/json");
            serde_json::to_vec(&v).unwrap()
        }
        None => Vec::new(),
    };
    let req = b.body(kube::client::Body::from(bytes)).unwrap();
    let resp = no_retry_client(sim).send(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

async fn call_json(sim: &SimHandle, method: &str, svc_port: &str, path: &str, body: Option<Value>) -> Value {
    let (status, text) = call(sim, method, svc_port, path, body).await;
    assert_eq!(status, 200, "{method} {path}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"))
}

/// Polls `GET /api/jobs/{id}` until its status is `want` (bounded by [`WAIT`]).
async fn wait_job(sim: &SimHandle, svc_port: &str, id: &str, want: &str) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let job = call_json(sim, "GET", svc_port, &format!("/api/jobs/{id}"), None).await;
        if job["status"] == want {
            return job;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "job {id} never reached {want}: {job}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn job_api_over_the_service_proxy() {
    let (sim, ray) = start().await;
    ray_cluster(&sim, &ray, "rc", 8265).await;
    let sp = "rc-head-svc:dashboard";

    let (status, text) = call(&sim, "GET", sp, "/api/gcs_healthz", None).await;
    assert_eq!((status, text.as_str()), (200, "success"));
    // The port can be given by number too.
    let (status, _) = call(&sim, "GET", "rc-head-svc:8265", "/api/gcs_healthz", None).await;
    assert_eq!(status, 200);

    // Submit, exactly as KubeRay's HTTPMode client sends it.
    let req = json!({
        "entrypoint": "python /home/ray/samples/sample_code.py",
        "submission_id": "rayjob-sample-abcde",
        "runtime_env": {"pip": ["requests==2.26.0"], "env_vars": {"counter_name": "test_counter"}},
        "metadata": {"owner": "kuberay"},
        "entrypoint_num_cpus": 1.0,
        "entrypoint_num_gpus": 0.5,
        "entrypoint_resources": {"custom": 2.0},
    });
    let r = call_json(&sim, "POST", sp, "/api/jobs/", Some(req.clone())).await;
    assert_eq!(r["job_id"], "rayjob-sample-abcde");
    assert_eq!(r["submission_id"], "rayjob-sample-abcde");

    let job = call_json(&sim, "GET", sp, "/api/jobs/rayjob-sample-abcde", None).await;
    assert_eq!(job["status"], "PENDING", "{job}");
    assert!(job["job_id"].is_null(), "no driver yet: {job}");
    assert_eq!(job["submission_id"], "rayjob-sample-abcde");
    assert_eq!(job["entrypoint"], "python /home/ray/samples/sample_code.py");
    assert_eq!(job["metadata"], json!({"owner": "kuberay"}));
    assert_eq!(job["runtime_env"]["pip"], json!(["requests==2.26.0"]));
    // Ray's job details do not echo the entrypoint resources; the pending message says the job may wait for them.
    assert!(job.get("entrypoint_num_cpus").is_none(), "{job}");
    assert!(
        job["message"].as_str().unwrap().contains("waiting for resources"),
        "{job}"
    );
    assert!(job["start_time"].as_i64().unwrap() > 0);
    assert!(job["end_time"].is_null());

    // The same submission id again: Ray's 500 with the text KubeRay matches on.
    let (status, text) = call(&sim, "POST", sp, "/api/jobs/", Some(req)).await;
    assert_eq!(status, 500);
    assert!(text.contains("Please use a different submission_id"), "{text}");

    let running = wait_job(&sim, sp, "rayjob-sample-abcde", "RUNNING").await;
    assert!(running["job_id"].is_string(), "driver id once running: {running}");
    let done = wait_job(&sim, sp, "rayjob-sample-abcde", "SUCCEEDED").await;
    assert_eq!(done["message"], "Job finished successfully.");
    assert!(done["end_time"].as_i64().unwrap() >= done["start_time"].as_i64().unwrap());
    assert!(done["error_type"].is_null());

    let logs = call_json(&sim, "GET", sp, "/api/jobs/rayjob-sample-abcde/logs", None).await;
    assert!(logs["logs"].as_str().unwrap().contains("sample_code.py"), "{logs}");

    // A generated submission id; a long job is stopped.
    let r = call_json(&sim, "POST", sp, "/api/jobs/", Some(json!({"entrypoint": "sleep 30"}))).await;
    let id = r["submission_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("raysubmit_"), "{id}");
    wait_job(&sim, sp, &id, "RUNNING").await;
    // Not finished: cannot be deleted (Ray answers 500 with the job manager's error).
    let (status, text) = call(&sim, "DELETE", sp, &format!("/api/jobs/{id}"), None).await;
    assert_eq!(status, 500);
    assert!(text.contains("non-terminal state RUNNING"), "{text}");
    let stop = call_json(&sim, "POST", sp, &format!("/api/jobs/{id}/stop"), None).await;
    assert_eq!(stop, json!({"stopped": true}));
    let stopped = call_json(&sim, "GET", sp, &format!("/api/jobs/{id}"), None).await;
    assert_eq!(stopped["status"], "STOPPED");
    assert!(stopped["end_time"].is_i64());
    let stop = call_json(&sim, "POST", sp, &format!("/api/jobs/{id}/stop"), None).await;
    assert_eq!(stop, json!({"stopped": false}), "already terminal");

    let list = call_json(&sim, "GET", sp, "/api/jobs/", None).await;
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["submission_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["rayjob-sample-abcde", id.as_str()]);

    let del = call_json(&sim, "DELETE", sp, &format!("/api/jobs/{id}"), None).await;
    assert_eq!(del, json!({"deleted": true}));
    let (status, text) = call(&sim, "GET", sp, &format!("/api/jobs/{id}"), None).await;
    assert_eq!((status, text), (404, format!("Job {id} does not exist")));
    let (status, _) = call(&sim, "GET", sp, &format!("/api/jobs/{id}/logs"), None).await;
    assert_eq!(status, 404);
    let (status, _) = call(&sim, "POST", sp, "/api/jobs/nope/stop", None).await;
    assert_eq!(status, 404);
    let (status, _) = call(&sim, "POST", sp, "/api/jobs/", Some(json!({"no": "entrypoint"}))).await;
    assert_eq!(status, 400);

    // The same state is visible in-process.
    let head = ray.head("default", "rc").unwrap();
    assert_eq!(head.jobs().len(), 1);
}

#[tokio::test]
async fn failing_entrypoint_fails() {
    let (sim, ray) = start().await;
    ray_cluster(&sim, &ray, "rc", 8265).await;
    let sp = "rc-head-svc:dashboard";
    let req = json!({"entrypoint": "python -c 'import sys; print(1)' && exit 1", "submission_id": "bad"});
    call_json(&sim, "POST", sp, "/api/jobs/", Some(req)).await;
    let job = wait_job(&sim, sp, "bad", "FAILED").await;
    assert_eq!(job["error_type"], "JOB_ENTRYPOINT_COMMAND_ERROR");
    assert_eq!(job["driver_exit_code"], 1);
    assert!(
        job["message"]
            .as_str()
            .unwrap()
            .starts_with("Job entrypoint command failed with exit code 1"),
        "{job}"
    );
    assert!(job["end_time"].is_i64());
    // A finished job cannot be stopped again.
    let stop = call_json(&sim, "POST", sp, "/api/jobs/bad/stop", None).await;
    assert_eq!(stop["stopped"], false);
}

#[tokio::test]
async fn custom_dashboard_port_and_head_lifecycle() {
    let (sim, ray) = start().await;
    ray_cluster(&sim, &ray, "custom", 9999).await;
    let (status, _) = call(&sim, "GET", "custom-head-svc:dashboard", "/api/gcs_healthz", None).await;
    assert_eq!(status, 200);
    let (status, _) = call(&sim, "GET", "custom-head-svc:9999", "/api/gcs_healthz", None).await;
    assert_eq!(status, 200);
    // Not the dashboard: nothing answers HTTP there.
    let (status, _) = call(&sim, "GET", "custom-head-svc:client", "/api/gcs_healthz", None).await;
    assert_eq!(status, 502);
    // Not a port of the Service.
    let (status, _) = call(&sim, "GET", "custom-head-svc:8265", "/api/gcs_healthz", None).await;
    assert_eq!(status, 503);

    call_json(
        &sim,
        "POST",
        "custom-head-svc:dashboard",
        "/api/jobs/",
        Some(json!({"entrypoint": "echo hi", "submission_id": "j"})),
    )
    .await;

    // The head pod goes away: the dashboard is unreachable and the head's state is gone.
    Api::<Pod>::default_namespaced(sim.client())
        .delete("custom-head-abcde", &DeleteParams::default())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    while ray.head("default", "custom").is_some() {
        assert!(tokio::time::Instant::now() < deadline, "head never went down");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, _) = call(&sim, "GET", "custom-head-svc:dashboard", "/api/gcs_healthz", None).await;
    assert_eq!(status, 503);

    // A new head pod: a fresh head (no GCS fault tolerance), no jobs.
    let labels = json!({"ray.io/cluster": "custom", "ray.io/node-type": "head"});
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "custom-head-fghij", "labels": labels},
        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}
    }))
    .unwrap();
    Api::<Pod>::default_namespaced(sim.client())
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    ray.wait_for_head("default", "custom", WAIT).await.unwrap();
    let list = call_json(&sim, "GET", "custom-head-svc:dashboard", "/api/jobs/", None).await;
    assert_eq!(list, json!([]));
    assert_eq!(ray.clusters(), [("default".to_string(), "custom".to_string())]);
}

#[tokio::test]
async fn serve_applications_reach_running() {
    let (sim, ray) = start().await;
    ray_cluster(&sim, &ray, "rc", 8265).await;
    let sp = "rc-head-svc:dashboard";

    let details = call_json(&sim, "GET", sp, "/api/serve/applications/?api_type=declarative", None).await;
    // Before the first deploy Ray answers only these four fields.
    assert_eq!(
        details,
        json!({"controller_info": {}, "proxies": {}, "applications": {}, "target_capacity": null})
    );
    // The serve proxy is not up before any application.
    let (status, _) = call(&sim, "GET", "rc-head-svc:serve", "/-/healthz", None).await;
    assert_eq!(status, 502);

    let config = json!({"applications": [
        {"name": "fruit_app", "import_path": "fruit.deployment_graph", "route_prefix": "/fruit",
         "runtime_env": {"working_dir": "https://github.com/ray-project/test_dag/archive/x.zip"},
         "deployments": [{"name": "MangoStand", "num_replicas": 2}, {"name": "FruitMarket", "num_replicas": 1}]},
        {"name": "math_app", "import_path": "conditional_dag.serve_dag", "route_prefix": "/calc",
         "deployments": [{"name": "Adder"}]},
    ]});
    let (status, _) = call(&sim, "PUT", sp, "/api/serve/applications/", Some(config.clone())).await;
    assert_eq!(status, 200);
    let details = call_json(&sim, "GET", sp, "/api/serve/applications/?api_type=declarative", None).await;
    assert_eq!(details["proxy_location"], "EveryNode");
    let fruit = &details["applications"]["fruit_app"];
    assert_eq!(fruit["name"], "fruit_app");
    assert_eq!(fruit["status"], "DEPLOYING");
    assert_eq!(fruit["route_prefix"], "/fruit");
    assert!(fruit["message"].is_string());
    assert_eq!(fruit["deployments"]["MangoStand"]["status"], "UPDATING");
    assert_eq!(fruit["deployments"]["MangoStand"]["name"], "MangoStand");
    assert!(fruit["deployments"]["MangoStand"]["message"].is_string());

    let deadline = tokio::time::Instant::now() + WAIT;
    let details = loop {
        let d = call_json(&sim, "GET", sp, "/api/serve/applications/?api_type=declarative", None).await;
        let apps = d["applications"].as_object().unwrap();
        if apps.values().all(|a| a["status"] == "RUNNING") {
            break d;
        }
        assert!(tokio::time::Instant::now() < deadline, "apps never RUNNING: {d}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        details["applications"]["math_app"]["deployments"]["Adder"]["status"],
        "HEALTHY"
    );
    assert_eq!(
        details["applications"]["fruit_app"]["deployments"]["FruitMarket"]["status"],
        "HEALTHY"
    );
    let (status, text) = call(&sim, "GET", "rc-head-svc:serve", "/-/healthz", None).await;
    assert_eq!((status, text.as_str()), (200, "success"));

    // The same config again changes nothing; a changed application redeploys, a dropped one disappears.
    call(&sim, "PUT", sp, "/api/serve/applications/", Some(config.clone())).await;
    let d = call_json(&sim, "GET", sp, "/api/serve/applications/", None).await;
    assert_eq!(d["applications"]["fruit_app"]["status"], "RUNNING");
    let mut changed = config.clone();
    changed["applications"][0]["deployments"][0]["num_replicas"] = json!(3);
    changed["applications"].as_array_mut().unwrap().pop();
    call(&sim, "PUT", sp, "/api/serve/applications/", Some(changed)).await;
    let d = call_json(&sim, "GET", sp, "/api/serve/applications/", None).await;
    assert_eq!(d["applications"]["fruit_app"]["status"], "DEPLOYING");
    assert!(d["applications"].get("math_app").is_none(), "{d}");

    // Invalid configs are rejected with a 4xx, as KubeRay expects non-2xx on failure.
    let dup = json!({"applications": [
        {"name": "a", "import_path": "x.y", "route_prefix": "/a"},
        {"name": "a", "import_path": "x.z", "route_prefix": "/b"},
    ]});
    let (status, text) = call(&sim, "PUT", sp, "/api/serve/applications/", Some(dup)).await;
    assert_eq!(status, 400, "{text}");

    // Test control: pin an application unhealthy.
    let head = ray.head("default", "rc").unwrap();
    assert!(head.force_app_status("fruit_app", ray_sim::AppStatus::Unhealthy, "replica died"));
    let d = call_json(&sim, "GET", sp, "/api/serve/applications/", None).await;
    assert_eq!(d["applications"]["fruit_app"]["status"], "UNHEALTHY");
    assert_eq!(d["applications"]["fruit_app"]["message"], "replica died");
}

/// KubeRay's K8sJobMode submitter script (the shell script its RayJob controller gives the submitter Job's
/// container) for `address` and `id`, around `entrypoint`.
fn submitter_script(address: &str, id: &str, entrypoint: &str) -> String {
    let health = format!(
        "python -c \"import urllib.request; r=urllib.request.urlopen('{address}/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)\""
    );
    format!(
        "until {health} >/dev/null 2>&1 ; do echo \"Waiting for Ray Dashboard GCS to become healthy at {address} ...\" ; sleep 2 ; done ; \
         if ! ray job status --address {address} {id} >/dev/null 2>&1 ; then \
         ray job submit --address {address} --no-wait --runtime-env-json \"{{\\\"pip\\\":[\\\"requests\\\"]}}\" --submission-id {id} -- {entrypoint} ; \
         fi ; ray job logs --address {address} --follow {id}"
    )
}

fn submitter_job(name: &str, script: &str) -> Job {
    let labels = json!({
        "ray.io/originated-from-cr-name": name,
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "kuberay-operator",
    });
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {"backoffLimit": 0, "template": {
            "metadata": {"labels": labels},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "ray-job-submitter", "image": "rayproject/ray:2.46.0",
                "command": ["/bin/bash", "-ce", "--"], "args": [script],
                "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}]
            }]}
        }}
    }))
    .unwrap()
}

async fn wait_job_condition(jobs: &Api<Job>, name: &str) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let j = serde_json::to_value(jobs.get(name).await.unwrap()).unwrap();
        let done = j["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True");
        if let Some(c) = done {
            return c["type"].as_str().unwrap().to_string();
        }
        assert!(tokio::time::Instant::now() < deadline, "job {name} never finished: {j}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn submitter_pod_ends_with_its_ray_job() {
    let (sim, ray) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(sim.client());
    let address = "http://rc-head-svc.default.svc.cluster.local:8265";

    // The submitter starts before the cluster is ready: it waits (the script's health loop) and submits later.
    let script = submitter_script(address, "rayjob-ok-x1", "python /home/ray/samples/sample_code.py");
    jobs.create(&PostParams::default(), &submitter_job("rayjob-ok", &script))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let j = serde_json::to_value(jobs.get("rayjob-ok").await.unwrap()).unwrap();
    assert_eq!(j["status"]["active"], 1, "still waiting for the dashboard: {j}");

    ray_cluster(&sim, &ray, "rc", 8265).await;
    assert_eq!(wait_job_condition(&jobs, "rayjob-ok").await, "Complete");
    let head = ray.head("default", "rc").unwrap();
    let info = head.job("rayjob-ok-x1").expect("the submitter submitted its job");
    assert_eq!(info.status, ray_sim::JobStatus::Succeeded);
    assert_eq!(info.entrypoint, "python /home/ray/samples/sample_code.py");
    assert_eq!(info.runtime_env, Some(json!({"pip": ["requests"]})));

    // A failing entrypoint: the Ray job FAILED, but `ray job logs --follow` exits 0 whatever the job's
    // status (KubeRay #3216), so the submitter pod succeeds and the Job completes.
    let script = submitter_script(address, "rayjob-bad-x2", "python -c \"import sys; sys.exit(1)\"");
    jobs.create(&PostParams::default(), &submitter_job("rayjob-bad", &script))
        .await
        .unwrap();
    assert_eq!(wait_job_condition(&jobs, "rayjob-bad").await, "Complete");
    let info = head.job("rayjob-bad-x2").unwrap();
    assert_eq!(info.status, ray_sim::JobStatus::Failed);
    let pods = Api::<Pod>::default_namespaced(sim.client())
        .list(&kube::api::ListParams::default().labels("job-name=rayjob-bad"))
        .await
        .unwrap();
    let pod = serde_json::to_value(&pods.items[0]).unwrap();
    assert_eq!(pod["status"]["phase"], "Succeeded", "{pod}");

    // Ray's own pods are left alone.
    assert_eq!(ray.clusters().len(), 1);
}

#[tokio::test]
async fn head_pod_log_tells_what_the_hollow_head_did() {
    let (sim, ray) = start().await;
    ray_cluster(&sim, &ray, "rc", 8265).await;
    let sp = "rc-head-svc:dashboard";
    let req = json!({"entrypoint": "python job.py", "submission_id": "logged-job"});
    call_json(&sim, "POST", sp, "/api/jobs/", Some(req)).await;
    wait_job(&sim, sp, "logged-job", "SUCCEEDED").await;
    let config = json!({"applications": [{"name": "fruit_app", "import_path": "fruit.deployment_graph"}]});
    let (status, _) = call(&sim, "PUT", sp, "/api/serve/applications/", Some(config)).await;
    assert_eq!(status, 200);
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let params = kube::api::LogParams {
        container: Some("ray-head".into()),
        ..Default::default()
    };
    let log = pods.logs("rc-head-abcde", &params).await.unwrap();
    let version = HollowRayOptions::default().ray_version;
    assert_eq!(
        log,
        format!(
            "kube-sim: started container ray-head (image \"rayproject/ray:2.46.0\", hollow: no process runs)\n\
             hollow-ray: Ray {version} head started (GCS, dashboard on :8265, serve on :8000)\n\
             Ray runtime started.\n\
             hollow-ray: job logged-job submitted, entrypoint: python job.py\n\
             hollow-ray: job logged-job finished: SUCCEEDED\n\
             hollow-ray: serve: deploying applications fruit_app\n"
        )
    );
}
