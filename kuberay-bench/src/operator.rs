//! The operator under test: the real `kuberay-operator` release binary, run as a child process with
//! KubeRay's flags, free ports and `KUBECONFIG`; its memory read from `/proc` and from its `/metrics`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kube_sim::network::ports::unused_loopback_port;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The script that builds the operator exactly as it is shipped (release profile, static glibc) and prints
/// its path; `scripts/build-image` packs the same binary.
const BUILD_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/build-operator");

/// Where `scripts/build-operator` leaves the shipped binary, relative to the cargo target directory.
const SHIPPED_BINARY: &str = "shipped/kuberay-operator";

/// Resolves the operator binary: `explicit`, else the shipped build of `kuberay-operator`.
///
/// Under `cargo run` (`$CARGO` set) that binary is (re)built with `scripts/build-operator` first — always
/// when missing, and also when present so a stale binary is never measured (cargo makes that a no-op when it
/// is fresh). Otherwise it is looked up at `target/shipped/kuberay-operator` beside this executable's
/// `target/release/`.
pub fn resolve_binary(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        if !path.is_file() {
            bail!("operator binary {} does not exist", path.display());
        }
        return Ok(path.to_path_buf());
    }
    let path = match std::env::var_os("CARGO") {
        Some(_) => build_shipped_binary()?,
        None => {
            let exe = std::env::current_exe().context("locating the current executable")?;
            let target_dir = exe
                .parent()
                .and_then(Path::parent)
                .context("the current executable is not in a cargo target directory")?;
            let path = target_dir.join(SHIPPED_BINARY);
            if !path.is_file() {
                bail!(
                    "{} is missing: build it with `scripts/build-operator` or pass --operator PATH",
                    path.display()
                );
            }
            path
        }
    };
    if !path.is_file() {
        bail!("{} is still missing after the build", path.display());
    }
    Ok(path)
}

/// Runs `scripts/build-operator` and returns the path it printed.
fn build_shipped_binary() -> anyhow::Result<PathBuf> {
    eprintln!("kuberay-bench: building the shipped operator binary with `scripts/build-operator`");
    let mut command = Command::new("bash");
    command.arg(BUILD_SCRIPT).stderr(Stdio::inherit());
    // `cargo run` exports the bench's own package variables; build scripts (ring's) track some of them, so
    // passing them on would rebuild the whole TLS stack on every run.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if is_cargo_run_variable(&key) {
            command.env_remove(key.as_ref());
        }
    }
    let output = command.output().context("running scripts/build-operator")?;
    if !output.status.success() {
        bail!("scripts/build-operator failed: {}", output.status);
    }
    let printed = String::from_utf8(output.stdout).context("scripts/build-operator printed a non-UTF-8 path")?;
    let path = printed.lines().last().map(str::trim).unwrap_or_default();
    if path.is_empty() {
        bail!("scripts/build-operator printed no path");
    }
    Ok(PathBuf::from(path))
}

/// Variables `cargo run` sets for the program it runs (not the user's cargo configuration).
pub fn is_cargo_run_variable(key: &str) -> bool {
    key == "OUT_DIR"
        || key.starts_with("CARGO_PKG_")
        || key.starts_with("CARGO_MANIFEST_")
        || key.starts_with("CARGO_CFG_")
        || matches!(
            key,
            "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE" | "CARGO_RUSTC_CURRENT_DIR"
        )
}

/// Clock ticks per second of `/proc/<pid>/stat`'s times (`USER_HZ`, 100 on every Linux ABI we run on).
const USER_HZ: f64 = 100.0;

/// User + system CPU seconds of process `pid`, from fields 14 and 15 of `/proc/<pid>/stat`.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; the fields after it start past the last ')'.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // after_name starts at field 3 (state), so utime (14) and stime (15) are at 11 and 12.
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / USER_HZ)
}

/// Resident memory of the operator at one instant.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Memory {
    /// `VmRSS` from `/proc/<pid>/status`, bytes.
    pub rss_bytes: u64,
    /// `VmHWM` (peak RSS so far), bytes.
    pub hwm_bytes: u64,
    /// `process_resident_memory_bytes` from the operator's `/metrics`, when it answered.
    pub metrics_rss_bytes: Option<u64>,
    /// Anonymous memory (heap, stacks, written data pages): `Anonymous` of `/proc/<pid>/smaps_rollup`, bytes.
    /// Unlike RSS it excludes the code and read-only data paged in from the binary and shared libraries.
    pub anonymous_bytes: Option<u64>,
    /// Proportional set size: `Pss` of `/proc/<pid>/smaps_rollup`, bytes (shared pages divided among the
    /// processes that map them).
    pub pss_bytes: Option<u64>,
    /// Threads of the process (`Threads` of `/proc/<pid>/status`).
    pub threads: Option<u64>,
}

/// The summed figures of `/proc/<pid>/smaps_rollup` the report uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SmapsRollup {
    /// `Anonymous`, bytes.
    pub anonymous_bytes: Option<u64>,
    /// `Pss`, bytes.
    pub pss_bytes: Option<u64>,
}

/// Reads the `Anonymous` and `Pss` lines (in kB) of a `smaps_rollup` text.
pub fn parse_smaps_rollup(text: &str) -> SmapsRollup {
    SmapsRollup {
        anonymous_bytes: kib_field(text, "Anonymous:"),
        pss_bytes: kib_field(text, "Pss:"),
    }
}

/// The value of the `name` line of a `/proc` text whose values are in kB, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// Pages the kernel has reclaimed since boot (`/proc/vmstat`), if readable.
pub fn kernel_reclaimed_pages() -> Option<u64> {
    std::fs::read_to_string("/proc/vmstat")
        .ok()
        .map(|text| reclaimed_pages(&text))
}

/// Reclaimed pages from `/proc/vmstat` text: `pgsteal_anon + pgsteal_file` (every reclaim, cgroup reclaim
/// included) where the kernel has them (5.8 and later), else the sum of the per-reclaimer `pgsteal_*`
/// counters (which the two above would count twice).
fn reclaimed_pages(vmstat: &str) -> u64 {
    let counter = |name: &str| {
        vmstat.lines().find_map(|line| {
            let (key, value) = line.split_once(' ')?;
            (key == name).then(|| value.trim().parse::<u64>().ok()).flatten()
        })
    };
    match (counter("pgsteal_anon"), counter("pgsteal_file")) {
        (Some(anon), Some(file)) => anon + file,
        _ => vmstat
            .lines()
            .filter_map(|line| line.strip_prefix("pgsteal_"))
            .filter_map(|rest| rest.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum(),
    }
}

/// A plain number field of `/proc/<pid>/status` (such as `Threads:`).
fn status_count(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.trim().parse().ok())
}

/// A running operator child; killed on drop.
pub struct Operator {
    child: Child,
    metrics_port: u16,
    probe_port: u16,
    /// The operator's combined stdout/stderr.
    pub log: PathBuf,
}

impl Operator {
    /// Starts `binary` against `kubeconfig` with `extra` flags appended, logging to `dir/operator-<tag>.log`.
    pub fn spawn(binary: &Path, kubeconfig: &Path, dir: &Path, tag: &str, extra: &[String]) -> anyhow::Result<Self> {
        let (metrics_port, probe_port) = (unused_loopback_port()?, unused_loopback_port()?);
        let log = dir.join(format!("operator-{tag}.log"));
        let out = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut command = Command::new(binary);
        command
            .args([
                "--metrics-addr",
                &format!("127.0.0.1:{metrics_port}"),
                "--health-probe-bind-address",
                &format!("127.0.0.1:{probe_port}"),
                "--enable-leader-election=false",
                "--log-stdout-encoder",
                "json",
            ])
            .args(extra)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out));
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("ENABLE_") || k == "CLUSTER_DOMAIN") {
            command.env_remove(key);
        }
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        Ok(Self {
            child,
            metrics_port,
            probe_port,
            log,
        })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails if the child has exited.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("the operator exited ({status}); see {}", self.log.display());
        }
        Ok(())
    }

    /// Waits until `/readyz` answers 200.
    pub async fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_alive()?;
            if let Ok((200, _)) = http_get(self.probe_port, "/readyz").await {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the operator was not ready within {timeout:?}; see {}",
                    self.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// CPU time (user + system) the operator has used so far, from `/proc/<pid>/stat`.
    pub fn cpu_seconds(&self) -> Option<f64> {
        process_cpu_seconds(self.pid())
    }

    /// Samples the operator's memory.
    pub async fn memory(&mut self) -> anyhow::Result<Memory> {
        self.check_alive()?;
        let (rss_bytes, hwm_bytes) =
            kube_sim::scale::process_memory(self.pid()).context("reading /proc/<pid>/status of the operator")?;
        let metrics_rss_bytes = match http_get(self.metrics_port, "/metrics").await {
            Ok((200, body)) => parse_metric(&body, "process_resident_memory_bytes").map(|v| v as u64),
            _ => None,
        };
        let pid = self.pid();
        let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .map(|text| parse_smaps_rollup(&text))
            .unwrap_or_default();
        let threads = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|text| status_count(&text, "Threads:"));
        Ok(Memory {
            rss_bytes,
            hwm_bytes,
            metrics_rss_bytes,
            anonymous_bytes: rollup.anonymous_bytes,
            pss_bytes: rollup.pss_bytes,
            threads,
        })
    }

    /// SIGTERM, a bounded wait for a clean exit, then SIGKILL. The wait yields to the runtime, so that
    /// experiments running beside this one go on meanwhile.
    pub async fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of an unlabelled Prometheus sample `name` in a text exposition.
pub fn parse_metric(body: &str, name: &str) -> Option<f64> {
    body.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let value = rest.strip_prefix(' ')?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// A minimal HTTP/1.1 GET against 127.0.0.1: status code and body.
async fn http_get(port: u16, path: &str) -> anyhow::Result<(u16, String)> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())
            .await?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await?;
        anyhow::Ok(response)
    };
    let response = tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .context("HTTP GET timed out")??;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_only_cargo_run_variables() {
        for key in ["CARGO_PKG_NAME", "CARGO_MANIFEST_DIR", "OUT_DIR", "CARGO_CRATE_NAME"] {
            assert!(is_cargo_run_variable(key), "{key}");
        }
        for key in ["CARGO", "CARGO_HOME", "CARGO_TARGET_DIR", "CARGO_BUILD_JOBS", "PATH"] {
            assert!(!is_cargo_run_variable(key), "{key}");
        }
    }

    #[test]
    fn reads_anonymous_and_pss_from_smaps_rollup() {
        let text = "55d0c0a00000-7ffd5b9fe000 ---p 00000000 00:00 0                          [rollup]\n\
                    Rss:               11776 kB\n\
                    Pss:                9876 kB\n\
                    Pss_Anon:           1500 kB\n\
                    Anonymous:          1536 kB\n";
        let rollup = parse_smaps_rollup(text);
        assert_eq!(rollup.pss_bytes, Some(9876 * 1024));
        assert_eq!(rollup.anonymous_bytes, Some(1536 * 1024));
        assert_eq!(parse_smaps_rollup("Rss: 1 kB\n"), SmapsRollup::default());
    }

    #[test]
    fn reads_the_thread_count_from_status() {
        let text = "Name:\tkuberay-operator\nThreads:\t3\nVmRSS:\t 11776 kB\n";
        assert_eq!(status_count(text, "Threads:"), Some(3));
        assert_eq!(status_count(text, "Nope:"), None);
    }

    #[test]
    fn finds_unlabelled_metric_values() {
        let body = "# HELP process_resident_memory_bytes x\n\
                    process_resident_memory_bytes_total 1\n\
                    process_resident_memory_bytes 1.2345e7\n";
        assert_eq!(parse_metric(body, "process_resident_memory_bytes"), Some(12_345_000.0));
        assert_eq!(parse_metric(body, "nope"), None);
    }

    #[test]
    fn reclaimed_pages_are_counted_once() {
        let old_kernel =
            "nr_free_pages 100\npgsteal_kswapd 40\npgsteal_direct 2\npgscan_kswapd 99\npgsteal_khugepaged 0\n";
        assert_eq!(reclaimed_pages(old_kernel), 42);
        // Newer kernels split the same reclaim both ways (plus cgroup reclaim in anon/file only).
        let new_kernel = "pgsteal_kswapd 40\npgsteal_direct 2\npgsteal_khugepaged 0\npgsteal_proactive 0\n\
                          pgsteal_anon 5\npgsteal_file 40\n";
        assert_eq!(reclaimed_pages(new_kernel), 45);
    }
}
