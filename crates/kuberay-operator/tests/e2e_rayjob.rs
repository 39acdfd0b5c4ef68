//! End to end: KubeRay's `ray-job.sample.yaml` (K8sJobMode) through the real operator binary
//! against an in-process kube-sim with a hollow Ray head, dashboard reached through the API
//! server's service proxy (`--use-kubernetes-proxy`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use kube_sim::ray::{HollowRay, HollowRayOptions};
use ray_api::{RayCluster, RayJob};
use serde_json::Value;

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(90);

struct Operator {
    child: Child,
    log: PathBuf,
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() || std::env::var_os("E2E_OPERATOR_LOG").is_some() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(80).collect();
            eprintln!("---- operator log (last 80 lines) ----");
            for line in tail.into_iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_operator(dir: &Path, kubeconfig: &Path) -> Operator {
    let log = dir.join("operator.log");
    let out = std::fs::File::create(&log).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_kuberay-operator"));
    command
        .args([
            "--metrics-addr",
            &format!("127.0.0.1:{}", free_port()),
            "--health-probe-bind-address",
            &format!("127.0.0.1:{}", free_port()),
            "--leader-election-namespace",
            NS,
            "--log-stdout-encoder",
            "json",
            "--use-kubernetes-proxy",
        ])
        .env("KUBECONFIG", kubeconfig)
        .env("RUST_LOG", "info,ray_reconcile=debug")
        .stdout(Stdio::from(out.try_clone().unwrap()))
        .stderr(Stdio::from(out));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("ENABLE_") || k.starts_with("RAYJOB_")) {
        command.env_remove(key);
    }
    Operator {
        child: command.spawn().unwrap(),
        log,
    }
}

async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let polled = tokio::time::timeout(WAIT, async {
        loop {
            if let Some(v) = check().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    match polled {
        Ok(v) => v,
        Err(_) => panic!("timed out after {WAIT:?} waiting for {what}"),
    }
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

async fn install_crds(client: &Client) {
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    for crd in ray_api::crds::all_crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rayjob_sample_completes() {
    let sim = kube_sim::SimServer::start(kube_sim::SimConfig::default())
        .await
        .unwrap();
    let _ray = HollowRay::attach(&sim, HollowRayOptions::default());
    let client = sim.client();
    install_crds(&client).await;

    let dir = std::env::temp_dir().join(format!("kuberay-e2e-rayjob-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
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
