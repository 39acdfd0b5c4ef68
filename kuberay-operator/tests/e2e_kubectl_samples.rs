//! End to end as a newcomer runs it: the real `kubectl` applies KubeRay's three samples to kube-sim with the
//! hollow Ray attached (as `kube-sim serve` does by default), the operator binary reconciles them, and
//! `kubectl get` prints KubeRay's printer columns: the RayCluster becomes ready, the RayJob SUCCEEDED /
//! Complete, the RayService Running with its Serve endpoints. The operator runs outside the cluster, so it
//! reaches the Ray dashboards through the API server's service proxy (`--use-kubernetes-proxy`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use ray_sim::{HollowRay, HollowRayOptions};

use crate::common;
use common::{Operator, SimEnv, kubectl};

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(120);

/// The header line of `kubectl get <resource>`, with runs of spaces folded.
fn header(output: &str) -> String {
    output
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_the_three_samples_and_they_reach_their_end_states() {
    let env = SimEnv::start("kubectl-samples", kube_sim::SimConfig::default()).await;
    let _ray = HollowRay::attach(&env.sim, HollowRayOptions::default());
    let _operator = Operator::start_proxied(&env, NS);
    let run = |args: &[&str]| kubectl(&env.dir, &env.kubeconfig, args);
    for sample in [
        "ray-cluster.sample.yaml",
        "ray-job.sample.yaml",
        "ray-service.sample.yaml",
    ] {
        let path = common::sample_path(sample);
        let (ok, _, stderr) = run(&["apply", "-f", path.to_str().unwrap()]);
        assert!(ok, "{sample}: {stderr}");
    }

    let started = Instant::now();
    let jsonpath = |resource: &str, path: &str| run(&["get", resource, "-o", &format!("jsonpath={path}")]).1;
    loop {
        let cluster = jsonpath("raycluster/raycluster-kuberay", "{.status.state}");
        let job = jsonpath(
            "rayjob/rayjob-sample",
            "{.status.jobStatus}/{.status.jobDeploymentStatus}",
        );
        let service = jsonpath(
            "rayservice/rayservice-sample",
            "{.status.serviceStatus}/{.status.numServeEndpoints}",
        );
        if cluster == "ready"
            && job == "SUCCEEDED/Complete"
            && service.starts_with("Running/")
            && service != "Running/0"
        {
            break;
        }
        assert!(
            started.elapsed() < WAIT,
            "not there after {WAIT:?}: cluster {cluster:?}, job {job:?}, service {service:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "all three samples reached their end states in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // KubeRay's printer columns, served by kube-sim as kube-apiserver serves a CRD's columns.
    let (_, clusters, _) = run(&["get", "rayclusters"]);
    assert_eq!(
        header(&clusters),
        "NAME DESIRED WORKERS AVAILABLE WORKERS CPUS MEMORY GPUS STATUS AGE"
    );
    let line = clusters.lines().find(|l| l.starts_with("raycluster-kuberay ")).unwrap();
    let cells: Vec<&str> = line.split_whitespace().collect();
    // The sample's head asks for 1 CPU / 5Gi (limits 1 / 5Gi), its one worker for 1 CPU / 1Gi.
    assert_eq!(
        cells[..7],
        ["raycluster-kuberay", "1", "1", "2", "6Gi", "0", "ready"],
        "{line}"
    );
    let (_, jobs, _) = run(&["get", "rayjobs"]);
    assert_eq!(
        header(&jobs),
        "NAME JOB STATUS DEPLOYMENT STATUS RAY CLUSTER NAME START TIME END TIME AGE"
    );
    assert!(
        jobs.lines()
            .any(|l| l.starts_with("rayjob-sample ") && l.contains(" SUCCEEDED ") && l.contains(" Complete ")),
        "{jobs}"
    );
    let (_, services, _) = run(&["get", "rayservices"]);
    assert_eq!(header(&services), "NAME SERVICE STATUS NUM SERVE ENDPOINTS");
    assert!(
        services
            .lines()
            .any(|l| l.starts_with("rayservice-sample ") && l.contains(" Running ")),
        "{services}"
    );
}
