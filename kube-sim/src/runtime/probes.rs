//! Container probes (startup, liveness, readiness) with their timing fields, run off the kubelet's thread:
//! each due probe runs on a short-lived thread and the next sync collects its result.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

/// What a probe does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeAction {
    /// Run a command in the container; success is exit code 0.
    Exec(Vec<String>),
    /// `GET http://host:port/path`; success is a status in 200..400.
    HttpGet {
        /// Target host (the pod IP unless the probe names one).
        host: IpAddr,
        /// Target port.
        port: u16,
        /// Path and query.
        path: String,
        /// Extra request headers.
        headers: Vec<(String, String)>,
    },
    /// A TCP connection to `host:port` succeeds.
    TcpSocket {
        /// Target host.
        host: IpAddr,
        /// Target port.
        port: u16,
    },
}

/// A probe's spec with Kubernetes' defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSpec {
    /// What to run.
    pub action: ProbeAction,
    /// `initialDelaySeconds` (default 0).
    pub initial_delay: Duration,
    /// `periodSeconds` (default 10).
    pub period: Duration,
    /// `timeoutSeconds` (default 1).
    pub timeout: Duration,
    /// `successThreshold` (default 1).
    pub success_threshold: u32,
    /// `failureThreshold` (default 3).
    pub failure_threshold: u32,
}

fn secs(v: &Value, default: u64) -> Duration {
    Duration::from_secs(v.as_u64().unwrap_or(default))
}

/// A port given as a number or as the name of one of the container's ports.
fn port_of(v: &Value, container: &Value) -> Option<u16> {
    if let Some(n) = v.as_u64() {
        return u16::try_from(n).ok();
    }
    let name = v.as_str()?;
    if let Ok(n) = name.parse() {
        return Some(n);
    }
    container["ports"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["containerPort"].as_u64())
        .and_then(|n| u16::try_from(n).ok())
}

impl ProbeSpec {
    /// Reads `container[field]` (`livenessProbe`, ...), `None` when absent or of an unsupported kind.
    pub fn parse(container: &Value, field: &str, pod_ip: IpAddr) -> Option<Self> {
        let p = container.get(field)?;
        let host = |h: &Value| h.as_str().and_then(|s| s.parse().ok()).unwrap_or(pod_ip);
        let action = if let Some(e) = p.get("exec") {
            ProbeAction::Exec(
                e["command"]
                    .as_array()?
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect(),
            )
        } else if let Some(h) = p.get("httpGet") {
            ProbeAction::HttpGet {
                host: host(&h["host"]),
                port: port_of(&h["port"], container)?,
                path: h["path"].as_str().unwrap_or("/").to_string(),
                headers: h["httpHeaders"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|x| Some((x["name"].as_str()?.to_string(), x["value"].as_str()?.to_string())))
                    .collect(),
            }
        } else if let Some(t) = p.get("tcpSocket") {
            ProbeAction::TcpSocket {
                host: host(&t["host"]),
                port: port_of(&t["port"], container)?,
            }
        } else {
            return None;
        };
        Some(Self {
            action,
            initial_delay: secs(&p["initialDelaySeconds"], 0),
            period: secs(&p["periodSeconds"], 10).max(Duration::from_secs(1)),
            timeout: secs(&p["timeoutSeconds"], 1).max(Duration::from_secs(1)),
            success_threshold: p["successThreshold"].as_u64().map_or(1, |n| n.max(1) as u32),
            failure_threshold: p["failureThreshold"].as_u64().map_or(3, |n| n.max(1) as u32),
        })
    }
}

/// Runs an exec probe's command in the container; returns whether it exited 0 within the timeout.
pub type ExecRunner = Arc<dyn Fn(&[String], Duration) -> bool + Send + Sync>;

/// One probe of one running container.
pub struct Prober {
    spec: ProbeSpec,
    next: Instant,
    in_flight: Option<Arc<Mutex<Option<bool>>>>,
    successes: u32,
    failures: u32,
}

/// A probe's verdict after its thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not decided yet (initial delay, or thresholds not reached).
    Unknown,
    /// Reached `successThreshold` consecutive successes.
    Success,
    /// Reached `failureThreshold` consecutive failures.
    Failure,
}

impl Prober {
    /// A prober for a container that started at `started`.
    pub fn new(spec: ProbeSpec, started: Instant) -> Self {
        Self {
            next: started + spec.initial_delay,
            spec,
            in_flight: None,
            successes: 0,
            failures: 0,
        }
    }

    /// Collects a finished probe and starts a due one; returns the verdict so far and when to look again.
    pub fn tick(&mut self, now: Instant, exec: &ExecRunner) -> (Verdict, Instant) {
        let mut verdict = Verdict::Unknown;
        if let Some(slot) = &self.in_flight {
            let result = slot.lock().take();
            if let Some(ok) = result {
                self.in_flight = None;
                if ok {
                    self.successes += 1;
                    self.failures = 0;
                } else {
                    self.failures += 1;
                    self.successes = 0;
                }
            }
        }
        if self.successes >= self.spec.success_threshold {
            verdict = Verdict::Success;
        } else if self.failures >= self.spec.failure_threshold {
            verdict = Verdict::Failure;
        }
        if self.in_flight.is_none() && now >= self.next {
            self.next = now + self.spec.period;
            let slot = Arc::new(Mutex::new(None));
            self.in_flight = Some(slot.clone());
            let action = self.spec.action.clone();
            let timeout = self.spec.timeout;
            let exec = exec.clone();
            let spawned = std::thread::Builder::new()
                .name("kube-sim-probe".into())
                .spawn(move || {
                    let ok = run(&action, timeout, &exec);
                    *slot.lock() = Some(ok);
                });
            if spawned.is_err() {
                self.in_flight = None;
            }
        }
        let poll = now + Duration::from_millis(50);
        let again = if self.in_flight.is_some() { poll } else { self.next };
        (verdict, again)
    }

    /// Forgets the counts after a verdict was acted on (a liveness restart).
    pub fn reset(&mut self, now: Instant) {
        self.successes = 0;
        self.failures = 0;
        self.next = now + self.spec.initial_delay;
    }
}

fn run(action: &ProbeAction, timeout: Duration, exec: &ExecRunner) -> bool {
    match action {
        ProbeAction::Exec(cmd) => exec(cmd, timeout),
        ProbeAction::TcpSocket { host, port } => {
            TcpStream::connect_timeout(&SocketAddr::new(*host, *port), timeout).is_ok()
        }
        ProbeAction::HttpGet {
            host,
            port,
            path,
            headers,
        } => http_get(SocketAddr::new(*host, *port), path, headers, timeout).is_some_and(|s| (200..400).contains(&s)),
    }
}

/// The status code of `GET path`, as the kubelet's prober sends it.
fn http_get(addr: SocketAddr, path: &str, headers: &[(String, String)], timeout: Duration) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: kube-probe/1.32\r\nAccept: */*\r\nConnection: close\r\n"
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while !got.contains(&b'\n') && got.len() < 64 {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&got);
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_named_ports() {
        let c = json!({"ports": [{"name": "http", "containerPort": 8080}],
                       "readinessProbe": {"httpGet": {"port": "http", "path": "/ok"}}});
        let p = ProbeSpec::parse(&c, "readinessProbe", IpAddr::from([127, 0, 0, 1])).unwrap();
        assert_eq!(p.period, Duration::from_secs(10));
        assert_eq!(p.failure_threshold, 3);
        assert!(matches!(p.action, ProbeAction::HttpGet { port: 8080, .. }));
        assert!(ProbeSpec::parse(&c, "livenessProbe", IpAddr::from([127, 0, 0, 1])).is_none());
    }
}
