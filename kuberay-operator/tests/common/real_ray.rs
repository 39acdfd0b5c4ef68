//! What the real-Ray end-to-end tests share: the pinned Ray virtualenv (installed on first use), a kube-sim
//! configuration that runs `rayproject/ray` pods from it as process pods on the bridge network, the venv's
//! processes on the host (to prove none is left, and to sample their memory), and plain HTTP to a pod-network
//! address such as a ClusterIP.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use kube_sim::network::{PodNetworkConfig, PodNetworkMode};
use kube_sim::runtime::{ImageMapping, RuntimeConfig};
use kube_sim::{AgentConfig, SimConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The image KubeRay's samples run; mapped to the venv, whatever the tag.
pub const RAY_IMAGE: &str = "rayproject/ray";

/// The pinned Ray virtualenv, installed by our script on first use.
pub fn ray_venv() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install-ray.sh");
    let out = Command::new("bash").arg(&script).output().unwrap();
    assert!(
        out.status.success(),
        "{} failed, so real Ray is not available (PyPI must be reachable on first use):\n{}",
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

/// kube-sim with the bridge pod network (pod IPs, ClusterIPs, cluster DNS) and `rayproject/ray` pods run as
/// real processes from `venv`.
pub fn real_ray_sim_config(venv: &Path) -> SimConfig {
    SimConfig {
        pod_network: PodNetworkConfig {
            mode: PodNetworkMode::Bridge,
            ..PodNetworkConfig::default()
        },
        agents: AgentConfig {
            process_runtime: Some(RuntimeConfig::new(vec![
                ImageMapping::parse(&format!("{RAY_IMAGE}={}", venv.display()), false).unwrap(),
            ])),
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    }
}

/// The pids of the processes whose command line runs something from `venv` (Ray's GCS, raylet, dashboard,
/// workers, drivers, the `ray` CLI), with their command lines.
fn venv_processes(venv: &Path) -> Vec<(u32, String)> {
    let needle = venv.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            Some((pid, String::from_utf8_lossy(&raw).replace('\0', " ")))
        })
        .filter(|(_, cmd)| cmd.contains(&needle))
        .collect()
}

/// Command lines of the processes running something from `venv`.
pub fn processes_from(venv: &Path) -> Vec<String> {
    venv_processes(venv).into_iter().map(|(_, cmd)| cmd).collect()
}

/// Resident memory of one process (`VmRSS`), in bytes; 0 once it is gone.
fn resident_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// Samples, once a second on a thread of its own, the summed resident memory of the venv's processes and keeps
/// the peak. The sum counts pages shared between processes once per process, so it overstates the memory
/// actually used; it is the figure `ps` users compare.
pub struct VenvMemorySampler {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl VenvMemorySampler {
    /// Starts sampling the processes of `venv`.
    pub fn start(venv: &Path) -> Self {
        let (peak, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let thread = {
            let (peak, stop, venv) = (peak.clone(), stop.clone(), venv.to_path_buf());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let total: u64 = venv_processes(&venv).iter().map(|(pid, _)| resident_bytes(*pid)).sum();
                    peak.fetch_max(total, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_secs(1));
                }
            })
        };
        VenvMemorySampler {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    /// The highest sum seen so far, in bytes.
    pub fn peak_bytes(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for VenvMemorySampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
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
