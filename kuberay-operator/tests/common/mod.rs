//! The harness the end-to-end tests share: the operator binary as a child process (killed on every exit
//! path, its log printed when a test fails), free ports, bounded polling, our CRDs installed, temp dirs.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use kube_sim::{SimConfig, SimHandle, SimServer};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub mod fuzz;
pub mod real_ray;

/// Runs one of our install scripts (`scripts/<script_name>`) and returns the directory it prints last; fails
/// the test with the script's stderr, naming `what` the test needed, when it cannot install.
pub fn installed_dir(script_name: &str, what: &str) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scripts")
        .join(script_name);
    let out = Command::new("bash").arg(&script).output().unwrap();
    assert!(
        out.status.success(),
        "{} failed, so {what} is not available:\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or_default()
            .trim(),
    )
}

/// The real operator binary, running; killed on drop.
pub struct Operator {
    child: Child,
    /// Where the operator's stdout and stderr go.
    pub log: PathBuf,
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

impl Operator {
    /// Starts the operator against `kubeconfig` with the given metrics and probe ports, JSON logs, the
    /// Lease in `namespace`, and `extra` flags. Operator switches from the developer's environment
    /// (`ENABLE_*`, `CLUSTER_DOMAIN`, `RAYJOB_*`, `USE_INGRESS_ON_OPENSHIFT`) are not inherited.
    pub fn start(
        dir: &Path,
        kubeconfig: &Path,
        namespace: &str,
        metrics_port: u16,
        probe_port: u16,
        extra: &[&str],
    ) -> Self {
        Self::start_with_env(dir, kubeconfig, namespace, metrics_port, probe_port, extra, &[])
    }

    /// [`Operator::start`] against `env` on free ports with `--use-kubernetes-proxy`: the operator reaches Ray
    /// dashboards through the API server's service proxy, as it must from outside the pod network.
    pub fn start_proxied(env: &SimEnv, namespace: &str) -> Self {
        Self::start(
            &env.dir,
            &env.kubeconfig,
            namespace,
            free_port(),
            free_port(),
            &["--use-kubernetes-proxy"],
        )
    }

    /// [`Operator::start`] with operator switches set in its environment (e.g. `ENABLE_WEBHOOKS=true`).
    pub fn start_with_env(
        dir: &Path,
        kubeconfig: &Path,
        namespace: &str,
        metrics_port: u16,
        probe_port: u16,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let log = dir.join("operator.log");
        let out = std::fs::File::create(&log).unwrap();
        let mut command = Command::new(operator_binary());
        command
            .args([
                "--metrics-addr",
                &format!("127.0.0.1:{metrics_port}"),
                "--health-probe-bind-address",
                &format!("127.0.0.1:{probe_port}"),
                "--leader-election-namespace",
                namespace,
                "--log-stdout-encoder",
                "json",
            ])
            .args(extra)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info,ray_reconcile=debug")
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out));
        let inherited_switch = |k: &str| {
            k.starts_with("ENABLE_")
                || k.starts_with("RAYJOB_")
                || k == "CLUSTER_DOMAIN"
                || k == "USE_INGRESS_ON_OPENSHIFT"
        };
        for (key, _) in std::env::vars().filter(|(k, _)| inherited_switch(k)) {
            command.env_remove(key);
        }
        command.envs(env.iter().copied());
        Operator {
            child: command.spawn().unwrap(),
            log,
        }
    }

    /// Waits (bounded) for the operator to exit on its own; its exit status.
    pub fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "operator still running after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then wait (bounded) for a clean exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "operator did not stop within 20 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `Some(())` once `name` no longer exists in `api`: a [`wait_for`] check.
pub async fn gone<K>(api: &Api<K>, name: &str) -> Option<()>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.unwrap().is_none().then_some(())
}

/// The operator binary under test: this package's build, or the one named by `E2E_OPERATOR_BINARY` (e.g.
/// the release build, to measure its memory under the same scenarios).
pub fn operator_binary() -> PathBuf {
    std::env::var_os("E2E_OPERATOR_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kuberay-operator")))
}

/// A free local TCP port, never the same one twice in a test process.
pub fn free_port() -> u16 {
    kube_sim::network::ports::unused_loopback_port().unwrap()
}

/// Polls `check` every `every` until it yields `Some`, failing after `timeout`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, every: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let polled = tokio::time::timeout(timeout, async {
        loop {
            if let Some(v) = check().await {
                return v;
            }
            tokio::time::sleep(every).await;
        }
    })
    .await;
    match polled {
        Ok(v) => v,
        Err(_) => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

/// Creates our four CRDs through the client.
/// Whether RayCluster `name` in `ns` reports `state: ready` (a [`wait_for`] check).
pub async fn cluster_ready(client: &Client, ns: &str, name: &str) -> Option<()> {
    let cluster = Api::<ray_api::RayCluster>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .ok()?;
    let state = cluster.status?.state?;
    (serde_json::to_value(&state).ok()? == "ready").then_some(())
}

/// Waits (bounded by `timeout`) until RayCluster `name` in `ns` is ready.
pub async fn wait_cluster_ready(client: &Client, ns: &str, name: &str, timeout: Duration) {
    wait_for(
        &format!("RayCluster {ns}/{name} to be ready"),
        timeout,
        Duration::from_secs(1),
        || cluster_ready(client, ns, name),
    )
    .await;
}

/// Waits (bounded by `timeout`) until no pod matching `labels` (every pod for `""`) is left in `ns`.
pub async fn wait_no_pods(client: &Client, ns: &str, labels: &str, timeout: Duration) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let what = format!("no pod matching {labels:?} in {ns}");
    wait_for(&what, timeout, Duration::from_millis(500), || {
        let pods = pods.clone();
        async move {
            pods.list(&ListParams::default().labels(labels))
                .await
                .ok()?
                .items
                .is_empty()
                .then_some(())
        }
    })
    .await;
}

/// Our four CRDs, generated once per test binary: generating them takes seconds in a debug build, and
/// every test installs them.
pub fn our_crds()
-> &'static [k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition] {
    static CRDS: std::sync::LazyLock<
        Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>,
    > = std::sync::LazyLock::new(ray_api::crds::all_crds);
    &CRDS
}

pub async fn install_crds(client: &Client) {
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    // Generated off the runtime's threads: the first test to get here waits, the others find them made.
    let ours = tokio::task::spawn_blocking(our_crds).await.unwrap();
    for crd in ours {
        crds.create(&PostParams::default(), crd).await.unwrap();
    }
}

/// Creates further CRDs (e.g. Volcano's), given as JSON values.
pub async fn install_extra_crds(client: &Client, crds: &[serde_json::Value]) {
    let api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    for crd in crds {
        api.create(&PostParams::default(), &serde_json::from_value(crd.clone()).unwrap())
            .await
            .unwrap();
    }
}

/// Runs the real `kubectl` against `kubeconfig` with a private HOME and echoes the command and its output;
/// returns (success, stdout, stderr).
pub fn kubectl(dir: &Path, kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new("kubectl")
        .args(args)
        .arg("--request-timeout=20s")
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", dir)
        .stdin(Stdio::null())
        .output()
        .expect("kubectl is installed (see README)");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    eprintln!("$ kubectl {}\n{stdout}{stderr}", args.join(" "));
    (out.status.success(), stdout, stderr)
}

/// A fresh temp directory for one test's files.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kuberay-e2e-{tag}-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// kube-sim started with our CRDs installed, plus a fresh temp dir holding its kubeconfig: the setup every
/// single-operator test begins with.
pub struct SimEnv {
    /// The simulated API server (dropping it stops the server).
    pub sim: SimHandle,
    /// A client of `sim`.
    pub client: Client,
    /// The test's temp dir (the operator's log goes here too).
    pub dir: PathBuf,
    /// `dir/kubeconfig`, pointing at `sim`.
    pub kubeconfig: PathBuf,
}

impl SimEnv {
    /// Starts kube-sim with `config` and our CRDs, and writes its kubeconfig into a temp dir named after `tag`.
    pub async fn start(tag: &str, config: SimConfig) -> Self {
        let sim = start_sim(config).await;
        let client = sim.client();
        let dir = temp_dir(tag);
        let kubeconfig = dir.join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).unwrap();
        SimEnv {
            sim,
            client,
            dir,
            kubeconfig,
        }
    }
}

/// Starts kube-sim with `config` and installs our CRDs.
pub async fn start_sim(config: SimConfig) -> SimHandle {
    let sim = SimServer::start(config).await.unwrap();
    install_crds(&sim.client()).await;
    sim
}

/// Sends `GET path` over HTTP/1.1 to `127.0.0.1:port`; returns the whole response (status line, headers, body).
pub async fn http_get_response(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response)
}

/// `GET path` on `127.0.0.1:port`: the status code (0 when unreadable) and the body.
pub async fn http_get(port: u16, path: &str) -> (u16, String) {
    let response = http_get_response(port, path).await.unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// `process_resident_memory_bytes` from a `/metrics` text.
pub fn resident_memory_bytes(metrics: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
        .and_then(|v| v.trim().parse().ok())
        .expect("process_resident_memory_bytes")
}

/// The path of a KubeRay sample file (from the reference tree, never copied into the repo).
pub fn sample_path(file: &str) -> PathBuf {
    kuberay_reference::sample_path(file)
}

/// The documents of a KubeRay sample file, as JSON.
pub fn sample_documents(file: &str) -> Vec<Value> {
    let path = sample_path(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ray_api::yaml::from_yaml_documents(&text).unwrap()
}

/// The first document of `kind` in a KubeRay sample file, decoded.
pub fn sample_document<T: serde::de::DeserializeOwned>(file: &str, kind: &str) -> T {
    let doc = sample_documents(file).into_iter().find(|d| d["kind"] == kind).unwrap();
    serde_json::from_value(doc).unwrap()
}

/// Every Event (`events.k8s.io/v1`, as the operator writes them) in `ns`.
pub async fn namespace_events(client: &Client, ns: &str) -> Vec<k8s_openapi::api::events::v1::Event> {
    Api::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

/// The Events in `ns` with `reason` about the object named `object`.
pub async fn events_about(
    client: &Client,
    ns: &str,
    reason: &str,
    object: &str,
) -> Vec<k8s_openapi::api::events::v1::Event> {
    namespace_events(client, ns)
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(object))
        .collect()
}

/// Live (not terminating) pods of the RayCluster `cluster` in `ns`.
pub async fn live_cluster_pods(client: &Client, ns: &str, cluster: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    pods.list(&ListParams::default().labels(&format!("ray.io/cluster={cluster}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

/// A pod's `ray.io/node-type` label (empty when unset).
pub fn node_type(pod: &Pod) -> &str {
    pod.labels()
        .get("ray.io/node-type")
        .map(String::as_str)
        .unwrap_or_default()
}

/// Whether a pod's phase is `Running`.
pub fn running(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// Whether `pods` are exactly one head and `workers` workers, all running.
pub fn one_head_and_running_workers(pods: &[Pod], workers: usize) -> bool {
    let heads = pods.iter().filter(|p| node_type(p) == "head").count();
    let ws = pods.iter().filter(|p| node_type(p) == "worker").count();
    heads == 1 && ws == workers && pods.iter().all(running)
}
