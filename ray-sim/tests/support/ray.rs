//! Real Ray on the host, for the tests that hold the hollow head against it: `scripts/install-ray.sh` installs
//! the pinned `ray[default,serve]` into `target/ray-venv` on first use (so `cargo test` on a fresh machine needs
//! nothing installed by hand), and [`RealRayHead`] runs `ray start --head` on loopback ports of its own. A failed
//! install fails the test that needs Ray: it is never skipped.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kube_sim::network::ports::unused_loopback_port;

/// The virtualenv holding the pinned Ray, installing it if it is not there yet.
pub fn ray_venv() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = super::run_install_script(
            "install-ray.sh",
            "real Ray is not available (PyPI must be reachable on first use)",
        );
        assert!(dir.join("bin/ray").is_file(), "no bin/ray in {}", dir.display());
        dir
    })
}

/// One real Ray head (`ray start --head --block`) in its own session and temp dir, on loopback. Dropping it
/// stops Ray (SIGTERM, then SIGKILL to whatever of its session is left) and removes the temp dir.
pub struct RealRayHead {
    child: Child,
    dir: PathBuf,
    /// The dashboard's address.
    pub dashboard: SocketAddr,
    /// The port the test asks Serve's HTTP proxy to listen on (`http_options.port`).
    pub serve_port: u16,
    /// How long `ray start` took until `/api/gcs_healthz` answered `success`.
    pub startup: Duration,
}

impl RealRayHead {
    /// Starts a head with 2 CPUs whose Python path includes `python_path` (where the Serve test application
    /// lives) and waits up to 120 s for the dashboard's GCS health check.
    pub fn start(python_path: &Path) -> Self {
        let venv = ray_venv();
        // Short: Ray puts Unix sockets under it, whose paths are limited to 107 bytes.
        let dir = std::env::temp_dir().join(format!("kr-ray-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port_flags = [
            "--port",
            "--ray-client-server-port",
            "--dashboard-agent-listen-port",
            "--dashboard-agent-grpc-port",
            "--metrics-export-port",
            "--node-manager-port",
            "--object-manager-port",
            "--runtime-env-agent-port",
        ];
        let mut args: Vec<String> = vec!["--wait".into(), venv.join("bin/ray").display().to_string()];
        args.extend(
            [
                "start",
                "--head",
                "--block",
                "--disable-usage-stats",
                "--node-ip-address=127.0.0.1",
                "--dashboard-host=127.0.0.1",
                "--num-cpus=2",
                "--object-store-memory=100000000",
            ]
            .map(String::from),
        );
        // One port per flag, then the dashboard's and the Serve proxy's, all distinct (Ray refuses to start
        // when two of its components are given the same port).
        let ports: [u16; 10] = std::array::from_fn(|_| unused_loopback_port().unwrap());
        let (dashboard_port, serve_port) = (ports[8], ports[9]);
        args.push(format!("--dashboard-port={dashboard_port}"));
        args.push(format!("--temp-dir={}", dir.join("t").display()));
        args.extend(port_flags.iter().zip(ports).map(|(f, port)| format!("{f}={port}")));
        let log = std::fs::File::create(dir.join("ray-start.log")).unwrap();
        let started = Instant::now();
        // `setsid` (run from a non-leader, so it execs in place) gives Ray a session of its own, so every process
        // it starts, workers included, can be found and ended.
        let child = Command::new("setsid")
            .args(&args)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    venv.join("bin").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("PYTHONPATH", python_path)
            .env("RAY_USAGE_STATS_ENABLED", "0")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("running setsid (util-linux) to start Ray");
        let mut head = Self {
            child,
            dir,
            dashboard: SocketAddr::from(([127, 0, 0, 1], dashboard_port)),
            serve_port,
            startup: Duration::ZERO,
        };
        while started.elapsed() < Duration::from_secs(120) {
            if let Ok(Some(status)) = head.child.try_wait() {
                panic!("ray start exited with {status}:\n{}", head.log());
            }
            if http_try(head.dashboard, "GET", "/api/gcs_healthz", None).is_ok_and(|(c, b)| c == 200 && b == "success")
            {
                head.startup = started.elapsed();
                return head;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("Ray's dashboard did not answer within 120 s:\n{}", head.log());
    }

    /// `ray start`'s own output.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("ray-start.log")).unwrap_or_default()
    }

    /// One request to the dashboard: `(status, body)`.
    pub fn call(&self, method: &str, path: &str, body: Option<&[u8]>) -> (u16, String) {
        http_try(self.dashboard, method, path, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }
}

/// Processes whose session id is `sid` (read from `/proc`).
fn session_members(sid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // After `(comm)`: state ppid pgrp session ...
                let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                rest.split_whitespace().nth(3) == Some(sid.to_string().as_str())
            })
        })
        .collect()
}

fn signal(pids: &[u32], sig: &str) {
    if pids.is_empty() {
        return;
    }
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}

impl Drop for RealRayHead {
    fn drop(&mut self) {
        let sid = self.child.id();
        // `ray start --block` stops the processes it started on SIGTERM.
        signal(&[sid], "TERM");
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline && !session_members(sid).iter().all(|p| *p == sid) {
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = self.child.try_wait();
        signal(&session_members(sid), "KILL");
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One HTTP/1.1 request over a fresh connection: `(status, body)`.
pub fn http_try(addr: SocketAddr, method: &str, path: &str, body: Option<&[u8]>) -> Result<(u16, String), String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let body = body.unwrap_or_default();
    let content_type = if body.is_empty() {
        ""
    } else {
        "Content-Type: application/json\r\n"
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{content_type}Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    stream.write_all(body).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no header end in {text:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    Ok((status, if chunked { dechunk(rest) } else { rest.to_string() }))
}

/// The payload of a chunked body.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}
