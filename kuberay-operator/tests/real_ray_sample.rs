//! End to end with real Ray: KubeRay's `ray-cluster.sample.yaml`, applied unchanged with the real `kubectl`,
//! becomes a real two-node Ray cluster. kube-sim runs the `rayproject/ray` pods the operator generates as real
//! processes from the pinned Ray virtualenv (`scripts/install-ray.sh`, installed on first use), each pod in its
//! own network namespace on kube-sim's bridge with cluster DNS, so the worker's `wait-gcs-ready` init
//! container and `ray start --address=<head service>` resolve the head Service as in a cluster. The operator
//! runs on the host and reaches the dashboard through the API server's service proxy. Deleting the RayCluster
//! leaves no process of its pods behind.

use std::time::{Duration, Instant};

use crate::common::real_ray::{
    REAL_RAY_RUNS, assert_nothing_left, assert_run_has_processes, ray_venv, real_process_sim_config, run_cgroup_prefix,
};
use crate::common::{Operator, SimEnv, kubectl, sample_path, wait_cluster_ready, wait_for, wait_no_pods};

const NS: &str = "default";
const CLUSTER: &str = "raycluster-kuberay";
const DASHBOARD_NODES: &str =
    "/api/v1/namespaces/default/services/raycluster-kuberay-head-svc:dashboard/proxy/api/v0/nodes";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_raycluster_becomes_a_real_two_node_ray_cluster() {
    let _one_of_two = REAL_RAY_RUNS.acquire().await.unwrap();
    let venv = ray_venv();
    let config = real_process_sim_config(&[("rayproject/ray", &venv)]);
    let env = SimEnv::start("real-ray", config).await;
    let cgroup_prefix = run_cgroup_prefix(&env.sim);
    let _operator = Operator::start_proxied(&env, NS);

    let created = Instant::now();
    let sample = sample_path("ray-cluster.sample.yaml");
    let (ok, _, stderr) = kubectl(&env.dir, &env.kubeconfig, &["create", "-f", sample.to_str().unwrap()]);
    assert!(ok, "kubectl create: {stderr}");

    wait_cluster_ready(&env.client, NS, CLUSTER, Duration::from_secs(240)).await;
    let ready_after = created.elapsed();

    let client = env.client.clone();
    let alive = wait_for(
        "the dashboard to list 2 alive nodes",
        Duration::from_secs(120),
        Duration::from_secs(2),
        || {
            let client = client.clone();
            async move {
                let request = http::Request::get(DASHBOARD_NODES).body(Vec::new()).unwrap();
                let body = client.request_text(request).await.ok()?;
                let doc: serde_json::Value = serde_json::from_str(&body).ok()?;
                let nodes = doc["data"]["result"]["result"].as_array()?.clone();
                let alive = nodes.iter().filter(|n| n["state"] == "ALIVE").count();
                (alive == 2).then_some(nodes)
            }
        },
    )
    .await;
    let two_nodes_after = created.elapsed();
    assert_eq!(
        alive.iter().filter(|n| n["is_head_node"] == true).count(),
        1,
        "{alive:?}"
    );
    eprintln!("ready after {ready_after:?}, 2 alive nodes after {two_nodes_after:?}");
    assert_run_has_processes(&cgroup_prefix);

    let (ok, _, stderr) = kubectl(
        &env.dir,
        &env.kubeconfig,
        &["delete", "raycluster", CLUSTER, "--wait=false"],
    );
    assert!(ok, "kubectl delete: {stderr}");
    wait_no_pods(&env.client, NS, "", Duration::from_secs(120)).await;
    assert_nothing_left(&cgroup_prefix, &venv);
}
