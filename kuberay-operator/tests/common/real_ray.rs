//! Helpers of the end-to-end tests that run real Ray (and Redis) in kube-sim's process pods: the pinned Ray
//! virtualenv and Debian's redis-server installed by our scripts, kube-sim configured with the bridge pod
//! network and image mappings, the dashboard read and written through the API server's service proxy,
//! `kubectl exec` without a client-side deadline, the processes and memory of a run's pods, and plain HTTP
//! to a pod-network address such as a ClusterIP.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kube::Client;
use kube_sim::network::{PodNetworkConfig, PodNetworkMode};
use kube_sim::runtime::{ImageMapping, RuntimeConfig};
use kube_sim::{AgentConfig, SimConfig, SimHandle};
use serde_json::Value;

use super::installed_dir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The pinned Ray virtualenv, installed by `scripts/install-ray.sh` on first use (needs PyPI then). The script
/// runs once per test binary: its tests run side by side, and a later run of it must not touch the venv while
/// another test's Ray runs from it.
pub fn ray_venv() -> PathBuf {
    static VENV: OnceLock<PathBuf> = OnceLock::new();
    VENV.get_or_init(|| installed_dir("install-ray.sh", "real Ray (PyPI must be reachable on first use)"))
        .clone()
}

/// At most this many real-Ray runs at once in one test binary, whatever the machine's CPU count (the test
/// harness runs one test per CPU): each Ray node takes about 1.5 GiB.
pub static REAL_RAY_RUNS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// The directory whose `bin/` holds Debian's redis-server, installed by `scripts/install-redis.sh` on first
/// use (needs root and the Debian archive then).
pub fn redis_image_dir() -> PathBuf {
    installed_dir(
        "install-redis.sh",
        "redis-server (root and the Debian archive are needed on first use)",
    )
}

/// kube-sim with the bridge pod network (cluster DNS, ClusterIPs) running pods whose images `mappings` cover
/// (`IMAGE=DIR`, run on the host filesystem with `DIR/bin` first on `PATH`) as real processes.
pub fn real_process_sim_config(mappings: &[(&str, &Path)]) -> SimConfig {
    let images = mappings
        .iter()
        .map(|(image, dir)| ImageMapping::parse(&format!("{image}={}", dir.display()), false).unwrap())
        .collect();
    SimConfig {
        pod_network: PodNetworkConfig {
            mode: PodNetworkMode::Bridge,
            ..PodNetworkConfig::default()
        },
        agents: AgentConfig {
            process_runtime: Some(RuntimeConfig::new(images)),
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    }
}

/// The image KubeRay's samples run; mapped to the Ray venv, whatever the tag.
pub const RAY_IMAGE: &str = "rayproject/ray";

/// [`real_process_sim_config`] with `rayproject/ray` pods run from the Ray venv `venv`.
pub fn real_ray_sim_config(venv: &Path) -> SimConfig {
    real_process_sim_config(&[(RAY_IMAGE, venv)])
}

/// Every process on the machine: (pid, command line with spaces for NULs).
fn all_processes() -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            Some((pid, String::from_utf8_lossy(&raw).replace('\0', " ")))
        })
        .collect()
}

/// The memory-cgroup prefix of the containers `sim`'s process runtime starts (`/kube-sim.<run id>/`, one
/// cgroup per container below it), so a process can be attributed to this run and no other.
pub fn run_cgroup_prefix(sim: &SimHandle) -> String {
    let runtime = sim.process_runtime().expect("kube-sim runs a process runtime");
    let run = runtime.state_path().file_name().unwrap().to_string_lossy().into_owned();
    format!("{ANY_RUN_CGROUP}{run}/")
}

/// Processes in the containers of the run whose cgroup prefix is `prefix`: (pid, command line).
pub fn run_processes(prefix: &str) -> Vec<(u32, String)> {
    all_processes()
        .into_iter()
        .filter(|(pid, _)| std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| c.contains(prefix)))
        .collect()
}

/// The memory-cgroup marker of every container any kube-sim process runtime starts (see [`run_cgroup_prefix`]).
const ANY_RUN_CGROUP: &str = ":memory:/kube-sim.";

/// Processes running something from `venv` that are in no kube-sim run's cgroups: a Ray process that left its
/// pod's cgroup (or was started outside one) and that a check of one run's cgroups would not see. Checked
/// beside [`run_processes`], since other tests' Ray may run from the same venv in their own cgroups. A
/// process counts only if it is still outside every run's cgroups a second later: a container's setup shell
/// joins its cgroup only after it starts, and another test may be starting one.
pub fn stray_venv_processes(venv: &Path) -> Vec<(u32, String)> {
    let needle = venv.to_string_lossy().into_owned();
    let outside = || -> Vec<(u32, String)> {
        all_processes()
            .into_iter()
            .filter(|(_, cmd)| cmd.contains(&needle))
            .filter(|(pid, _)| {
                std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|c| !c.contains(ANY_RUN_CGROUP))
            })
            .collect()
    };
    let first = outside();
    if first.is_empty() {
        return first;
    }
    std::thread::sleep(Duration::from_secs(1));
    let second = outside();
    first.into_iter().filter(|p| second.contains(p)).collect()
}

/// Fails unless some process runs in the run's cgroups under `prefix`: a later check that none is left is only
/// worth something if the run's processes are found through their cgroups at all.
pub fn assert_run_has_processes(prefix: &str) {
    assert!(
        !run_processes(prefix).is_empty(),
        "no process found in the run's cgroups ({prefix}) while its pods run"
    );
}

/// Fails if a process of the run's pods (cgroups under `prefix`) is left, or a process from `venv` runs outside
/// every run's cgroups (see [`stray_venv_processes`]).
pub fn assert_nothing_left(prefix: &str, venv: &Path) {
    let left = run_processes(prefix);
    assert!(left.is_empty(), "processes of the run's pods left: {left:#?}");
    let stray = stray_venv_processes(venv);
    assert!(
        stray.is_empty(),
        "Ray processes from the venv outside every run's pods: {stray:#?}"
    );
}

/// The value in kB of the line starting with `field` in a `/proc` file, in bytes; 0 when absent (process gone).
fn proc_kib_field(path: &str, field: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// Samples, once a second on a thread of its own, the memory of a run's pod processes and keeps the peaks of
/// two sums: PSS (each shared page split among its users: the memory the pods really take) and RSS (each
/// process' resident set, shared pages counted once per process).
pub struct PeakMemory {
    peak_pss: Arc<AtomicU64>,
    peak_rss: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakMemory {
    /// Starts sampling the processes in cgroups under `prefix` (see [`run_cgroup_prefix`]).
    pub fn start(prefix: String) -> Self {
        let peak_pss = Arc::new(AtomicU64::new(0));
        let peak_rss = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (pss, rss, s) = (peak_pss.clone(), peak_rss.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let pids: Vec<u32> = run_processes(&prefix).into_iter().map(|(pid, _)| pid).collect();
                let sum = |file: &str, field: &str| -> u64 {
                    pids.iter()
                        .map(|pid| proc_kib_field(&format!("/proc/{pid}/{file}"), field))
                        .sum()
                };
                pss.fetch_max(sum("smaps_rollup", "Pss:"), Ordering::Relaxed);
                rss.fetch_max(sum("status", "VmRSS:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_secs(1));
            }
        });
        PeakMemory {
            peak_pss,
            peak_rss,
            stop,
            thread: Some(thread),
        }
    }

    /// The highest summed PSS seen so far, in MiB.
    pub fn peak_pss_mib(&self) -> u64 {
        self.peak_pss.load(Ordering::Relaxed) / (1024 * 1024)
    }

    /// The highest summed RSS seen so far, in MiB.
    pub fn peak_rss_mib(&self) -> u64 {
        self.peak_rss.load(Ordering::Relaxed) / (1024 * 1024)
    }
}

impl Drop for PeakMemory {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// This process' peak resident set (`VmHWM`: the test binary with the kube-sims of its tests), in MiB.
pub fn own_peak_rss_mib() -> u64 {
    proc_kib_field("/proc/self/status", "VmHWM:") / (1024 * 1024)
}

/// The API server's proxy path to `path` on the dashboard port of `cluster`'s head Service in `ns`.
pub fn dashboard_path(ns: &str, cluster: &str, path: &str) -> String {
    format!("/api/v1/namespaces/{ns}/services/{cluster}-head-svc:dashboard/proxy{path}")
}

/// `GET` through the API server (e.g. a [`dashboard_path`]), decoded as JSON; `None` on any failure.
pub async fn get_json(client: &Client, path: &str) -> Option<Value> {
    let request = http::Request::get(path).body(Vec::new()).ok()?;
    let body = client.request_text(request).await.ok()?;
    serde_json::from_str(&body).ok()
}

/// `POST` of a JSON body through the API server, decoded as JSON; the error, as text, on any failure.
pub async fn post_json(client: &Client, path: &str, body: &Value) -> Result<Value, String> {
    let request = http::Request::post(path)
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(body).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let answer = client
        .request_text(request)
        .await
        .map_err(|e| format!("POST {path}: {e}"))?;
    serde_json::from_str(&answer).map_err(|e| format!("POST {path} answered {answer:?}: {e}"))
}

/// The nodes the real dashboard (`/api/v0/nodes`) of `cluster` lists, or `None` while it does not answer.
pub async fn dashboard_nodes(client: &Client, ns: &str, cluster: &str) -> Option<Vec<Value>> {
    let doc = get_json(client, &dashboard_path(ns, cluster, "/api/v0/nodes")).await?;
    doc["data"]["result"]["result"].as_array().cloned()
}

/// How many of `nodes` are `ALIVE`.
pub fn alive(nodes: &[Value]) -> usize {
    nodes.iter().filter(|n| n["state"] == "ALIVE").count()
}

/// Runs `kubectl exec POD -c CONTAINER -- COMMAND` with a private HOME and no client-side request timeout
/// (a Ray driver can take longer than the harness' 20 s); echoes it; returns (success, stdout, stderr).
/// Bounded by `timeout`: kubectl is killed after it.
pub async fn kubectl_exec(
    dir: &Path,
    kubeconfig: &Path,
    pod: &str,
    container: &str,
    command: &[&str],
    timeout: Duration,
) -> (bool, String, String) {
    let run = tokio::process::Command::new("kubectl")
        .args(["exec", pod, "-c", container, "--"])
        .args(command)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", dir)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(timeout, run)
        .await
        .unwrap_or_else(|_| panic!("kubectl exec {pod} -- {command:?} still running after {timeout:?}"))
        .expect("kubectl is installed (see README)");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    eprintln!(
        "$ kubectl exec {pod} -c {container} -- {}\n{stdout}{stderr}",
        command.join(" ")
    );
    (out.status.success(), stdout, stderr)
}

/// `GET path` over HTTP/1.1 to `addr` (a ClusterIP or pod IP on the bridge), bounded by `timeout`: the status
/// code and the body, or what went wrong.
pub async fn http_get_at(addr: SocketAddr, path: &str, timeout: Duration) -> Result<(u16, String), String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
            .await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&response).into_owned())
    };
    let response = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| format!("no answer from {addr} within {timeout:?}"))?
        .map_err(|e| format!("{addr}: {e}"))?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{addr}: not an HTTP response: {response:?}"))?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let chunked = head
        .lines()
        .any(|l| l.to_ascii_lowercase().replace(' ', "") == "transfer-encoding:chunked");
    let body = if chunked {
        dechunk(body).ok_or_else(|| format!("{addr}: a chunked body cut short: {body:?}"))?
    } else {
        body.to_owned()
    };
    Ok((status, body))
}

/// The payload of a `Transfer-Encoding: chunked` body (Serve's proxy answers that way); `None` when it is cut
/// short.
fn dechunk(mut body: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size_line, rest) = body.split_once("\r\n")?;
        let size = usize::from_str_radix(size_line.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..size)?);
        body = rest.get(size..)?.strip_prefix("\r\n")?;
    }
}
