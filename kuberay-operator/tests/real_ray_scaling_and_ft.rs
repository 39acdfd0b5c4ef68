//! End to end with real Ray, beyond a static cluster: the in-tree autoscaler and GCS fault tolerance.
//!
//! - **Autoscaling** (the Ray autoscaler walkthrough, KubeRay's `ray-cluster.autoscaler.yaml` with a shorter
//!   idle timeout): the head pod's `autoscaler` sidecar runs the real `ray kuberay-autoscaler` from the pinned
//!   venv, talking to kube-sim's API over HTTPS (`kubernetes.default` through the cluster DNS and the
//!   `kubernetes` Service, verified with the pod's CA) with its projected service-account token, authorised by
//!   the Role and RoleBinding the operator generates. Three detached actors of one CPU each, created with
//!   `kubectl exec` into the head, make it scale the worker group 0 -> 3 through `replicas`; once they are
//!   killed and `idleTimeoutSeconds` pass it scales back to 0 through `workersToDelete`.
//! - **GCS fault tolerance** (KubeRay's `ray-cluster.external-redis.yaml`, its `redis` image mapped to Debian's
//!   redis-server from `scripts/install-redis.sh`): a job is submitted, the head's GCS process is killed, the
//!   head container restarts as the kubelet restarts it, and the recovered GCS still lists the job.
//! - After each, deleting everything leaves no process of the run's pods (no Ray, no redis-server).
//!
//! Each test runs its own kube-sim (its own pod network slot and cgroups), so they may run beside the other
//! real-Ray tests. Needs root (namespaces, cgroups), PyPI and the Debian archive on first use; without them the
//! tests fail, they never skip.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use ray_api::RayCluster;
use serde_json::{Value, json};

use crate::common;
use crate::common::real_ray::{
    PeakMemory, REAL_RAY_RUNS, alive, assert_nothing_left, assert_run_has_processes, dashboard_nodes, dashboard_path,
    get_json, kubectl_exec, own_peak_rss_mib, post_json, ray_venv, real_process_sim_config, redis_image_dir,
    run_cgroup_prefix, run_processes,
};
use crate::common::{Operator, SimEnv, kubectl, live_cluster_pods, node_type, running, sample_documents, wait_for};

const NS: &str = "default";
/// The Ray container of the head pod, as podgen names it (the samples' name).
const HEAD_CONTAINER: &str = "ray-head";
/// Idle timeout given to the autoscaler (the sample's 60 s, halved to keep the test short).
const IDLE_TIMEOUT_SECONDS: u64 = 30;
/// Workers the walkthrough's detached actors need (one CPU each, one CPU per worker).
const WANTED_WORKERS: usize = 3;

/// Writes `docs` as a YAML stream (one JSON document each) into the test's directory and `kubectl create`s
/// it; returns the file.
fn create_documents(env: &SimEnv, file: &str, docs: &[Value]) -> std::path::PathBuf {
    let path = env.dir.join(file);
    let stream: Vec<String> = docs.iter().map(|d| serde_json::to_string_pretty(d).unwrap()).collect();
    std::fs::write(&path, stream.join("\n---\n")).unwrap();
    let (ok, _, stderr) = kubectl(&env.dir, &env.kubeconfig, &["create", "-f", path.to_str().unwrap()]);
    assert!(ok, "kubectl create -f {file}: {stderr}");
    path
}

/// The `RayCluster` document of a sample's documents.
fn raycluster_doc(docs: &mut [Value]) -> &mut Value {
    docs.iter_mut().find(|d| d["kind"] == "RayCluster").unwrap()
}

/// Waits (bounded) for RayCluster `name` to report `ready`.
async fn wait_ready(client: &Client, name: &str, timeout: Duration) {
    common::wait_cluster_ready(client, NS, name, timeout).await;
}

/// The running head pod of `cluster`.
async fn head_pod(client: &Client, cluster: &str) -> Pod {
    wait_for(
        "a running head pod",
        Duration::from_secs(60),
        Duration::from_secs(1),
        || async {
            live_cluster_pods(client, NS, cluster)
                .await
                .into_iter()
                .find(|p| node_type(p) == "head" && running(p))
        },
    )
    .await
}

/// The first worker group's `replicas` and `scaleStrategy.workersToDelete`.
async fn worker_group_scale(clusters: &Api<RayCluster>, name: &str) -> Option<(i64, Vec<String>)> {
    let doc = serde_json::to_value(clusters.get(name).await.ok()?).ok()?;
    let group = &doc["spec"]["workerGroupSpecs"][0];
    let to_delete = group["scaleStrategy"]["workersToDelete"]
        .as_array()
        .map(|names| names.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    Some((group["replicas"].as_i64()?, to_delete))
}

/// Deletes what `files` created, waits for every pod to be gone or finished and no process of the run's pods to
/// be left, and checks that no process from `venv` runs outside every run's pods.
async fn delete_everything(env: &SimEnv, files: &[&Path], venv: &Path, cgroup_prefix: &str) {
    assert_run_has_processes(cgroup_prefix);
    for file in files {
        let (ok, _, stderr) = kubectl(
            &env.dir,
            &env.kubeconfig,
            &[
                "delete",
                "-f",
                file.to_str().unwrap(),
                "--wait=false",
                "--ignore-not-found",
            ],
        );
        assert!(ok, "kubectl delete: {stderr}");
    }
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), NS);
    wait_for(
        "every pod to be gone (or finished) and no process of the run's pods left",
        Duration::from_secs(180),
        Duration::from_secs(1),
        || {
            let pods = pods.clone();
            async move {
                let live = pods
                    .list(&ListParams::default())
                    .await
                    .ok()?
                    .items
                    .into_iter()
                    .any(|p| {
                        !matches!(
                            p.status.as_ref().and_then(|s| s.phase.as_deref()),
                            Some("Succeeded" | "Failed")
                        )
                    });
                (!live && run_processes(cgroup_prefix).is_empty()).then_some(())
            }
        },
    )
    .await;
    assert_nothing_left(cgroup_prefix, venv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_autoscaler_scales_a_worker_group_0_to_3_and_back_to_0() {
    let _one_of_two = REAL_RAY_RUNS.acquire().await.unwrap();
    let venv = ray_venv();
    let env = SimEnv::start(
        "real-ray-autoscale",
        real_process_sim_config(&[("rayproject/ray", &venv)]),
    )
    .await;
    let cgroup_prefix = run_cgroup_prefix(&env.sim);
    let memory = PeakMemory::start(cgroup_prefix.clone());
    let _operator = Operator::start_proxied(&env, NS);

    let mut docs = sample_documents("ray-cluster.autoscaler.yaml");
    let cluster = raycluster_doc(&mut docs);
    cluster["spec"]["autoscalerOptions"]["idleTimeoutSeconds"] = json!(IDLE_TIMEOUT_SECONDS);
    let name = cluster["metadata"]["name"].as_str().unwrap().to_owned();
    assert_eq!(
        cluster["spec"]["workerGroupSpecs"][0]["replicas"], 0,
        "the walkthrough starts without workers"
    );
    let file = create_documents(&env, "autoscaler.yaml", &docs);
    wait_ready(&env.client, &name, Duration::from_secs(240)).await;
    let head = head_pod(&env.client, &name).await.name_any();

    // The autoscaler's view of the worker group, sampled through the whole run: every `workersToDelete` entry
    // and the highest `replicas` it set.
    let clusters: Api<RayCluster> = Api::namespaced(env.client.clone(), NS);
    let seen_to_delete = Arc::new(Mutex::new(BTreeSet::<String>::new()));
    let sampler = {
        let (clusters, name, seen) = (clusters.clone(), name.clone(), seen_to_delete.clone());
        tokio::spawn(async move {
            loop {
                if let Some((_, to_delete)) = worker_group_scale(&clusters, &name).await {
                    seen.lock().unwrap().extend(to_delete);
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };

    let asked = Instant::now();
    for i in 1..=WANTED_WORKERS {
        let actor = format!("actor{i}");
        let (ok, _, stderr) = kubectl_exec(
            &env.dir,
            &env.kubeconfig,
            &head,
            HEAD_CONTAINER,
            &["python", "/home/ray/samples/detached_actor.py", &actor],
            Duration::from_secs(120),
        )
        .await;
        assert!(ok, "creating detached actor {actor}: {stderr}");
    }
    let replicas_after = {
        let clusters = clusters.clone();
        let name = name.clone();
        wait_for(
            "the autoscaler to set replicas to 3",
            Duration::from_secs(180),
            Duration::from_secs(1),
            || {
                let (clusters, name) = (clusters.clone(), name.clone());
                async move {
                    let (replicas, _) = worker_group_scale(&clusters, &name).await?;
                    (replicas == WANTED_WORKERS as i64).then_some(())
                }
            },
        )
        .await;
        asked.elapsed()
    };
    let client = env.client.clone();
    let workers: Vec<String> = wait_for(
        "3 running workers and 4 alive Ray nodes",
        Duration::from_secs(240),
        Duration::from_secs(2),
        || {
            let (client, name) = (client.clone(), name.clone());
            async move {
                let pods = live_cluster_pods(&client, NS, &name).await;
                let workers: Vec<&Pod> = pods.iter().filter(|p| node_type(p) == "worker").collect();
                if workers.len() != WANTED_WORKERS || !workers.iter().all(|p| running(p)) {
                    return None;
                }
                let nodes = dashboard_nodes(&client, NS, &name).await?;
                (alive(&nodes) == WANTED_WORKERS + 1).then(|| workers.iter().map(|p| p.name_any()).collect())
            }
        },
    )
    .await;
    let scaled_up_after = asked.elapsed();
    eprintln!(
        "scale-up: replicas 0 -> 3 set {replicas_after:?} after the first actor was asked for, 3 workers \
         running and 4 alive Ray nodes after {scaled_up_after:?}"
    );

    let released = Instant::now();
    for i in 1..=WANTED_WORKERS {
        let actor = format!("actor{i}");
        let (ok, _, stderr) = kubectl_exec(
            &env.dir,
            &env.kubeconfig,
            &head,
            HEAD_CONTAINER,
            &["python", "/home/ray/samples/terminate_detached_actor.py", &actor],
            Duration::from_secs(120),
        )
        .await;
        assert!(ok, "killing detached actor {actor}: {stderr}");
    }
    let actors_killed_after = released.elapsed();
    let client = env.client.clone();
    wait_for(
        "the worker group to scale back to 0 and its pods to be gone",
        Duration::from_secs(IDLE_TIMEOUT_SECONDS + 180),
        Duration::from_secs(1),
        || {
            let (client, clusters, name) = (client.clone(), clusters.clone(), name.clone());
            async move {
                let (replicas, _) = worker_group_scale(&clusters, &name).await?;
                let pods: Api<Pod> = Api::namespaced(client, NS);
                let workers = pods
                    .list(&ListParams::default().labels(&format!("ray.io/cluster={name},ray.io/node-type=worker")))
                    .await
                    .ok()?;
                (replicas == 0 && workers.items.is_empty()).then_some(())
            }
        },
    )
    .await;
    let scaled_down_after = released.elapsed();
    sampler.abort();
    let seen_to_delete = seen_to_delete.lock().unwrap().clone();
    let expected: BTreeSet<String> = workers.iter().cloned().collect();
    assert_eq!(
        seen_to_delete, expected,
        "the autoscaler names exactly the idle workers in workersToDelete"
    );
    eprintln!(
        "scale-down: actors killed {actors_killed_after:?} after the first kill was sent; replicas 0 and the 3 \
         worker pods gone {scaled_down_after:?} after it (idleTimeoutSeconds {IDLE_TIMEOUT_SECONDS})"
    );

    delete_everything(&env, &[&file], &venv, &cgroup_prefix).await;
    report_memory(&memory);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_gcs_fault_tolerance_a_killed_head_recovers_and_keeps_its_job_history() {
    let _one_of_two = REAL_RAY_RUNS.acquire().await.unwrap();
    let venv = ray_venv();
    let redis = redis_image_dir();
    let env = SimEnv::start(
        "real-ray-gcs-ft",
        real_process_sim_config(&[("rayproject/ray", &venv), ("redis", &redis)]),
    )
    .await;
    let cgroup_prefix = run_cgroup_prefix(&env.sim);
    let memory = PeakMemory::start(cgroup_prefix.clone());
    let _operator = Operator::start_proxied(&env, NS);

    let mut docs = sample_documents("ray-cluster.external-redis.yaml");
    // The redis image declares `/data` a volume, so it exists in a container; the host filesystem the mapping
    // runs on has no `/data`, so the test gives redis an emptyDir there (the sample's `dir /data`).
    let redis_deployment = docs.iter_mut().find(|d| d["kind"] == "Deployment").unwrap();
    let pod_spec = &mut redis_deployment["spec"]["template"]["spec"];
    pod_spec["volumes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "data", "emptyDir": {}}));
    pod_spec["containers"][0]["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "data", "mountPath": "/data"}));
    let redis_conf = docs.iter().find(|d| d["metadata"]["name"] == "redis-config").unwrap()["data"]["redis.conf"]
        .as_str()
        .unwrap()
        .to_owned();
    let redis_password = redis_conf
        .lines()
        .find_map(|l| l.strip_prefix("requirepass "))
        .unwrap()
        .trim()
        .to_owned();
    let cluster = raycluster_doc(&mut docs);
    let name = cluster["metadata"]["name"].as_str().unwrap().to_owned();
    let file = create_documents(&env, "external-redis.yaml", &docs);
    wait_ready(&env.client, &name, Duration::from_secs(240)).await;
    let client = env.client.clone();
    wait_for(
        "2 alive Ray nodes",
        Duration::from_secs(120),
        Duration::from_secs(2),
        || {
            let (client, name) = (client.clone(), name.clone());
            async move { (alive(&dashboard_nodes(&client, NS, &name).await?) == 2).then_some(()) }
        },
    )
    .await;

    // A job, finished before the head is killed: the history the recovered GCS must still hold.
    let job_id = "before-the-head-was-killed";
    // The job API answers once the head's dashboard agent is up, which can be after the nodes are listed.
    let submission = json!({
        "entrypoint": "python -c \"import ray; ray.init(); print('alive nodes:', sum(n['Alive'] for n in ray.nodes()))\"",
        "submission_id": job_id,
    });
    let client = env.client.clone();
    wait_for(
        "the job API to accept the job",
        Duration::from_secs(120),
        Duration::from_secs(3),
        || {
            let (client, name, submission) = (client.clone(), name.clone(), submission.clone());
            async move {
                match post_json(&client, &dashboard_path(NS, &name, "/api/jobs/"), &submission).await {
                    Ok(answer) => {
                        assert_eq!(answer["submission_id"], job_id, "{answer}");
                        Some(())
                    }
                    Err(e) => {
                        eprintln!("job submission not accepted yet: {e}");
                        None
                    }
                }
            }
        },
    )
    .await;
    let job_path = dashboard_path(NS, &name, &format!("/api/jobs/{job_id}"));
    let client = env.client.clone();
    let status = wait_for(
        "the job to finish",
        Duration::from_secs(120),
        Duration::from_secs(2),
        || {
            let (client, job_path) = (client.clone(), job_path.clone());
            async move {
                let job = get_json(&client, &job_path).await?;
                let status = job["status"].as_str()?.to_owned();
                matches!(status.as_str(), "SUCCEEDED" | "FAILED" | "STOPPED").then_some(status)
            }
        },
    )
    .await;
    assert_eq!(status, "SUCCEEDED");

    let head = head_pod(&env.client, &name).await;
    let head_uid = head.uid().unwrap();
    let restarts_before = head_restarts(&head);
    let gcs: Vec<(u32, String)> = run_processes(&cgroup_prefix)
        .into_iter()
        .filter(|(_, cmd)| cmd.contains("gcs_server"))
        .collect();
    assert_eq!(gcs.len(), 1, "one GCS process in the run's pods: {gcs:#?}");
    let killed = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-KILL", &gcs[0].0.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -KILL {}", gcs[0].0);

    let client = env.client.clone();
    let how = wait_for(
        "the head to come back (container restarted or pod replaced)",
        Duration::from_secs(180),
        Duration::from_secs(1),
        || {
            let (client, name, head_uid) = (client.clone(), name.clone(), head_uid.clone());
            async move {
                let head = live_cluster_pods(&client, NS, &name)
                    .await
                    .into_iter()
                    .find(|p| node_type(p) == "head")?;
                if head.uid().as_deref() != Some(head_uid.as_str()) {
                    return Some("head pod replaced".to_owned());
                }
                let restarts = head_restarts(&head);
                (restarts > restarts_before).then(|| format!("head container restarted ({restarts} restarts)"))
            }
        },
    )
    .await;
    let restarted_after = killed.elapsed();
    let client = env.client.clone();
    let history = wait_for(
        "the recovered head to list the earlier job and 2 alive nodes",
        Duration::from_secs(180),
        Duration::from_secs(2),
        || {
            let (client, name) = (client.clone(), name.clone());
            async move {
                let jobs = get_json(&client, &dashboard_path(NS, &name, "/api/jobs/")).await?;
                let listed = jobs.as_array()?.iter().find(|j| j["submission_id"] == job_id)?.clone();
                (alive(&dashboard_nodes(&client, NS, &name).await?) == 2).then_some(listed)
            }
        },
    )
    .await;
    let recovered_after = killed.elapsed();
    assert_eq!(history["status"], "SUCCEEDED", "{history:#}");
    wait_ready(&env.client, &name, Duration::from_secs(120)).await;
    eprintln!(
        "GCS FT: {how} {restarted_after:?} after the GCS was killed; the job history and 2 alive nodes back \
         {recovered_after:?} after it"
    );

    // The GCS keeps its tables in Redis; the operator's cleanup Job must delete them when the RayCluster goes.
    let redis_pod = live_pods_labelled(&env.client, "app=redis").await;
    assert_eq!(redis_pod.len(), 1, "one redis pod");
    let redis_pod = redis_pod[0].name_any();
    let keys_before = redis_key_count(&env, &redis_pod, &redis_password).await;
    assert!(keys_before > 0, "the GCS stores its tables in Redis");
    // The RayCluster first: its Redis cleanup Job needs Redis, which goes with the rest of the sample.
    let (ok, _, stderr) = kubectl(
        &env.dir,
        &env.kubeconfig,
        &["delete", "raycluster", &name, "--wait=false"],
    );
    assert!(ok, "kubectl delete raycluster: {stderr}");
    let clusters: Api<RayCluster> = Api::namespaced(env.client.clone(), NS);
    wait_for(
        "the RayCluster (its finalizer released) to be gone",
        Duration::from_secs(180),
        Duration::from_secs(1),
        || common::gone(&clusters, &name),
    )
    .await;
    let keys_after = redis_key_count(&env, &redis_pod, &redis_password).await;
    assert_eq!(
        keys_after, 0,
        "the Redis cleanup Job deleted the GCS tables ({keys_before} keys before)"
    );
    eprintln!("Redis: {keys_before} keys while the cluster ran, {keys_after} after the RayCluster was deleted");
    delete_everything(&env, &[&file], &venv, &cgroup_prefix).await;
    report_memory(&memory);
}

/// Live pods in the test namespace matching `selector`.
async fn live_pods_labelled(client: &Client, selector: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    pods.list(&ListParams::default().labels(selector))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none() && running(p))
        .collect()
}

/// The number of keys in the Redis of pod `redis_pod` (`redis-cli DBSIZE` through `kubectl exec`).
async fn redis_key_count(env: &SimEnv, redis_pod: &str, password: &str) -> u64 {
    let (ok, stdout, stderr) = kubectl_exec(
        &env.dir,
        &env.kubeconfig,
        redis_pod,
        "redis",
        &["redis-cli", "-a", password, "--no-auth-warning", "DBSIZE"],
        Duration::from_secs(60),
    )
    .await;
    assert!(ok, "redis-cli DBSIZE: {stderr}");
    stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("redis-cli DBSIZE answered {stdout:?}"))
}

/// Prints the run's peak memory figures.
fn report_memory(memory: &PeakMemory) {
    eprintln!(
        "memory: pods' processes peak summed PSS {} MiB, peak summed RSS {} MiB; the test process (the kube-sims of \
         the real-Ray tests that ran in it so far) peak RSS {} MiB",
        memory.peak_pss_mib(),
        memory.peak_rss_mib(),
        own_peak_rss_mib()
    );
}

/// The head pod's Ray container restart count.
fn head_restarts(head: &Pod) -> i32 {
    head.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == HEAD_CONTAINER))
        .map_or(0, |c| c.restart_count)
}
