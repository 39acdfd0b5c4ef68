//! End to end: KubeRay's `ray-job.sample.yaml` (K8sJobMode) through the real operator binary
//! against an in-process kube-sim with a hollow Ray head, dashboard reached through the API
//! server's service proxy (`--use-kubernetes-proxy`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube_sim::ray::{HollowRay, HollowRayOptions};
use ray_api::{RayCluster, RayJob};
use serde_json::Value;

mod common;
use common::{Operator, free_port, install_crds};

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(90);

fn start_operator(dir: &Path, kubeconfig: &Path) -> Operator {
    Operator::start(
        dir,
        kubeconfig,
        NS,
        free_port(),
        free_port(),
        &["--use-kubernetes-proxy"],
    )
}

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    common::wait_for(what, WAIT, Duration::from_millis(200), check).await
}

fn sample() -> RayJob {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/kuberay-v1.7.0/samples/ray-job.sample.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let docs: Vec<Value> = ray_api::yaml::from_yaml_documents(&text).unwrap();
    let doc = docs.into_iter().find(|d| d["kind"] == "RayJob").unwrap();
    let mut job: RayJob = serde_json::from_value(doc).unwrap();
    job.metadata.namespace = Some(NS.into());
    job
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rayjob_sample_completes() {
    let sim = kube_sim::SimServer::start(kube_sim::SimConfig::default())
        .await
        .unwrap();
    let _ray = HollowRay::attach(&sim, HollowRayOptions::default());
    let client = sim.client();
    install_crds(&client).await;

    let dir = common::temp_dir("rayjob");
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let _operator = start_operator(&dir, &kubeconfig);

    let rayjobs: Api<RayJob> = Api::namespaced(client.clone(), NS);
    rayjobs.create(&PostParams::default(), &sample()).await.unwrap();

    // The RayCluster `rayjob-sample-xxxxx`, owned by the RayJob.
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    let cluster = wait_for("the RayCluster", || async {
        clusters
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .next()
    })
    .await;
    let name = cluster.name_any();
    assert!(name.starts_with("rayjob-sample-"), "{name}");
    assert_eq!(name.len(), "rayjob-sample-".len() + 5);
    assert_eq!(cluster.owner_references()[0].kind, "RayJob");

    // The submitter Job `rayjob-sample`.
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    wait_for("the submitter Job", || async {
        jobs.get_opt("rayjob-sample").await.unwrap()
    })
    .await;

    // SUCCEEDED / Complete.
    let status = wait_for("jobDeploymentStatus Complete", || async {
        let job = rayjobs.get("rayjob-sample").await.unwrap();
        let status = job.status?;
        (status.job_deployment_status.as_ref().map(|s| s.to_string()).as_deref() == Some("Complete")).then_some(status)
    })
    .await;
    assert_eq!(status.job_status.map(|s| s.to_string()).as_deref(), Some("SUCCEEDED"));
    assert_eq!(status.ray_cluster_name.as_deref(), Some(name.as_str()));
    assert_eq!(
        status.dashboard_url,
        Some(format!("{name}-head-svc.default.svc.cluster.local:8265"))
    );
    assert_eq!(status.succeeded, Some(1));
    assert!(status.end_time.is_some());
    // shutdownAfterJobFinishes defaults to false: the cluster stays.
    assert!(clusters.get_opt(&name).await.unwrap().is_some());
}
