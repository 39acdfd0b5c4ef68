//! `exec` and `port-forward` through real clients: kubectl 1.32 (on PATH), kubectl 1.35 (installed by
//! `scripts/install-tools.sh`) and kube 5's client. Commands run on the host through a test
//! `ContainerExecutor`; forwarded ports lead to TCP servers of the test on the loopback, or, for a hollow
//! pod, to the in-process backend of its Service.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, Patch, PatchParams, PostParams};
use kube_sim::sandbox::{ContainerExecutor, ExecInput, ExecOutput, ExecProcess, ExecRequest, SandboxError};
use kube_sim::{ProxyBackend, ProxyRequest, ProxyResponse, SimConfig, SimHandle};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::process::Command;

use crate::support;

/// Runs exec'd commands on the host, as a process runtime would in the container.
#[derive(Debug)]
struct HostExecutor;

impl ContainerExecutor for HostExecutor {
    fn exec(&self, request: &ExecRequest) -> Result<ExecProcess, SandboxError> {
        let (program, args) = request.command.split_first().expect("a command");
        let mut child = Command::new(program)
            .args(args)
            .stdin(if request.stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SandboxError::Io {
                context: format!("starting {program}"),
                source,
            })?;
        let stdin = child.stdin.take().map(|s| Box::pin(s) as ExecInput);
        let stdout = Box::pin(child.stdout.take().unwrap()) as ExecOutput;
        let stderr = child.stderr.take().map(|s| Box::pin(s) as ExecOutput);
        let (tx, exit) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let code = child.wait().await.ok().and_then(|s| s.code()).unwrap_or(-1);
            let _ = tx.send(code);
        });
        Ok(ExecProcess {
            stdin,
            stdout,
            stderr,
            exit,
        })
    }

    fn runs_pod(&self, _pod_uid: &str) -> bool {
        true
    }
}

/// A simulator (API only: pod statuses are written by the test) and a kubeconfig for kubectl.
struct Cluster {
    sim: SimHandle,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

async fn cluster(tag: &str, with_executor: bool) -> Cluster {
    let sim = support::api_only_sim(SimConfig::default()).await;
    if with_executor {
        sim.set_container_executor(Arc::new(HostExecutor));
    }
    let dir = std::env::temp_dir().join(format!("kube-sim-streaming-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    Cluster { sim, dir, kubeconfig }
}

impl Cluster {
    fn pods(&self) -> Api<Pod> {
        Api::default_namespaced(self.sim.client())
    }

    /// Creates a pod bound to a node and reports it `phase` with container `main` running (when `Running`),
    /// at `pod_ip`.
    async fn pod(&self, name: &str, phase: &str, pod_ip: &str, labels: serde_json::Value) {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels},
            "spec": {"nodeName": "node-1", "containers": [
                {"name": "main", "image": "busybox:1.36", "ports": [{"name": "http", "containerPort": 8265}]},
            ]},
        });
        self.pods()
            .create(&PostParams::default(), &serde_json::from_value(pod).unwrap())
            .await
            .unwrap();
        let state = if phase == "Running" {
            json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}})
        } else {
            json!({"terminated": {"exitCode": 0, "reason": "Completed"}})
        };
        let status = json!({"status": {
            "phase": phase, "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
            "containerStatuses": [{"name": "main", "image": "busybox:1.36", "imageID": "", "ready": true,
                "restartCount": 0, "state": state}],
        }});
        self.pods()
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
    }

    fn kubectl(&self, kubectl: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(kubectl);
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            // A private HOME keeps kubectl's caches out of the user's.
            .env("HOME", &self.dir)
            .kill_on_drop(true);
        c
    }

    /// Runs kubectl to completion with `stdin` piped in.
    async fn run(&self, kubectl: &Path, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = self
            .kubectl(kubectl, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin).await.unwrap();
        drop(input);
        let out = tokio::time::timeout(support::WAIT, child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .unwrap();
        eprintln!(
            "$ {} {}\n{}{}(exit {:?})",
            kubectl.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            out.status.code()
        );
        out
    }

    /// Starts `kubectl port-forward TARGET :PORT`; returns the process and the local port it listens on.
    async fn port_forward(&self, kubectl: &Path, target: &str, port: u16) -> (tokio::process::Child, u16) {
        let remote = format!(":{port}");
        let mut child = self
            .kubectl(kubectl, &["port-forward", target, &remote])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(support::WAIT, lines.next_line())
            .await
            .expect("kubectl port-forward prints its local port")
            .unwrap()
            .expect("a Forwarding line");
        // "Forwarding from 127.0.0.1:41234 -> 8265"
        let local = line
            .split_once("127.0.0.1:")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected port-forward output {line:?}"));
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        (child, local)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// kubectl 1.32 from PATH and kubectl 1.35 from `scripts/install-tools.sh` (installed on first use; a failed
/// install fails the test).
fn kubectls() -> Vec<PathBuf> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install-tools.sh");
        let out = std::process::Command::new("bash").arg(&script).output().unwrap();
        assert!(
            out.status.success(),
            "{} failed: {}",
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
    });
    vec![PathBuf::from("kubectl"), dir.join("kubectl")]
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_relays_stdout_stderr_stdin_and_exit_codes() {
    let c = cluster("exec", true).await;
    c.pod("runner", "Running", "127.0.0.1", json!({})).await;
    for kubectl in kubectls() {
        let out = c
            .run(
                &kubectl,
                &["exec", "runner", "--", "sh", "-c", "echo out; echo err >&2"],
                b"",
            )
            .await;
        assert!(out.status.success());
        assert_eq!(text(&out.stdout), "out\n");
        assert!(text(&out.stderr).contains("err\n"), "stderr kept apart");

        let out = c
            .run(&kubectl, &["exec", "runner", "--", "sh", "-c", "exit 3"], b"")
            .await;
        assert_eq!(out.status.code(), Some(3), "kubectl exits with the command's code");

        let out = c
            .run(
                &kubectl,
                &["exec", "-i", "runner", "--", "sh", "-c", "tr a-z A-Z; echo done"],
                b"piped line\n",
            )
            .await;
        assert!(out.status.success());
        assert_eq!(text(&out.stdout), "PIPED LINE\ndone\n");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_errors_name_the_cause() {
    let c = cluster("exec-errors", true).await;
    c.pod("runner", "Running", "127.0.0.1", json!({})).await;
    let hollow = cluster("exec-hollow", false).await;
    hollow.pod("hollow", "Running", "10.244.0.9", json!({})).await;
    for kubectl in kubectls() {
        let cases: [(&Cluster, &[&str], &str); 3] = [
            (&c, &["exec", "nope", "--", "true"], "pods \"nope\" not found"),
            (
                &c,
                &["exec", "runner", "-c", "side", "--", "true"],
                "container side is not valid for pod runner",
            ),
            (&hollow, &["exec", "hollow", "--", "true"], "it runs hollow"),
        ];
        for (cluster, args, message) in cases {
            let out = cluster.run(&kubectl, args, b"").await;
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            assert!(text(&out.stderr).contains(message), "{args:?}: {}", text(&out.stderr));
        }
    }
}

/// An HTTP server on the loopback that answers only once two connections are open at the same time, so a
/// response proves both forwarded connections were up together.
async fn paired_http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let barrier = Arc::new(tokio::sync::Barrier::new(2));
            for _ in 0..2 {
                let (mut stream, _) = listener.accept().await.unwrap();
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let path = text(&request).split_whitespace().nth(1).unwrap_or_default().to_string();
                    barrier.wait().await;
                    let body = format!("served {path}");
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        }
    });
    port
}

async fn curl(port: u16, path: &str) -> String {
    let url = format!("http://127.0.0.1:{port}{path}");
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "15", &url])
        .output()
        .await
        .expect("curl runs");
    assert!(out.status.success(), "curl {url}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_port_forward_carries_two_connections_at_once() {
    let c = cluster("pf", true).await;
    let server = paired_http_server().await;
    c.pod("web", "Running", "127.0.0.1", json!({})).await;
    for kubectl in kubectls() {
        let (mut child, local) = c.port_forward(&kubectl, "pod/web", server).await;
        let (a, b) = tokio::join!(curl(local, "/a"), curl(local, "/b"));
        assert_eq!((a.as_str(), b.as_str()), ("served /a", "served /b"));
        child.kill().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_client_exec_and_portforward() {
    let c = cluster("kube-client", true).await;
    let server = paired_http_server().await;
    c.pod("web", "Running", "127.0.0.1", json!({})).await;
    let pods = c.pods();

    tokio::time::timeout(support::WAIT, kube_client_exec(&pods))
        .await
        .expect("exec ends");
    tokio::time::timeout(support::WAIT, kube_client_portforward(&pods, server))
        .await
        .expect("forwarding ends");
}

async fn kube_client_exec(pods: &Api<Pod>) {
    let params = AttachParams::default().stdin(true).stderr(true);
    let mut attached = pods
        .exec("web", ["sh", "-c", "cat; echo oops >&2; exit 4"], &params)
        .await
        .unwrap();
    let mut stdin = attached.stdin().unwrap();
    stdin.write_all(b"to cat\n").await.unwrap();
    // The end of stdin reaches the command as the v5 close signal.
    stdin.shutdown().await.unwrap();
    let (mut stdout, mut stderr) = (attached.stdout().unwrap(), attached.stderr().unwrap());
    let status = attached.take_status().unwrap();
    let (mut out, mut err) = (String::new(), String::new());
    let (o, e) = tokio::join!(stdout.read_to_string(&mut out), stderr.read_to_string(&mut err));
    o.unwrap();
    e.unwrap();
    let status = status.await.unwrap();
    assert_eq!((out.as_str(), err.as_str()), ("to cat\n", "oops\n"));
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    assert_eq!(status.details.unwrap().causes.unwrap()[0].message.as_deref(), Some("4"));
}

async fn kube_client_portforward(pods: &Api<Pod>, server: u16) {
    // kube's client opens one connection per port and forwarder: two forwarders, two connections at once.
    let mut forwarder = pods.portforward("web", &[server]).await.unwrap();
    let mut first = forwarder.take_stream(server).unwrap();
    let mut second_forwarder = pods.portforward("web", &[server]).await.unwrap();
    let mut second = second_forwarder.take_stream(server).unwrap();
    first.write_all(b"GET /one HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    second.write_all(b"GET /two HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let (mut r1, mut r2) = (String::new(), String::new());
    tokio::try_join!(first.read_to_string(&mut r1), second.read_to_string(&mut r2)).unwrap();
    assert!(r1.ends_with("served /one"), "{r1}");
    assert!(r2.ends_with("served /two"), "{r2}");
    forwarder.abort();
    second_forwarder.abort();
}

/// A hollow application: answers every request with its path.
struct EchoBackend;

impl ProxyBackend for EchoBackend {
    fn handle(&self, request: ProxyRequest) -> kube_sim::http::proxy::ProxyFuture {
        let body = json!({"service": request.service, "port": request.port, "path": request.path});
        Box::pin(std::future::ready(ProxyResponse::json(&body)))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_port_forward_to_a_hollow_pod_reaches_its_service_backend() {
    let c = cluster("pf-hollow", false).await;
    c.pod("head", "Running", "10.244.0.7", json!({"app": "head"})).await;
    let svc = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "head-svc"},
        "spec": {"selector": {"app": "head"}, "ports": [{"name": "dashboard", "port": 8265, "targetPort": "http"}]},
    });
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::default_namespaced(c.sim.client());
    services
        .create(&PostParams::default(), &serde_json::from_value(svc).unwrap())
        .await
        .unwrap();
    c.sim.register_proxy(
        kube_sim::http::proxy::ProxyTarget::Name {
            namespace: "default".into(),
            name: "head-svc".into(),
        },
        Arc::new(EchoBackend),
    );
    for kubectl in kubectls() {
        let (mut child, local) = c.port_forward(&kubectl, "svc/head-svc", 8265).await;
        let answer: serde_json::Value = serde_json::from_str(&curl(local, "/api/version").await).unwrap();
        assert_eq!(
            answer,
            json!({"service": "head-svc", "port": "8265", "path": "/api/version"})
        );
        child.kill().await.unwrap();
    }
    // A port no Service targets: the error names why.
    let (mut child, local) = c.port_forward(&kubectls()[0], "pod/head", 9999).await;
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10", &format!("http://127.0.0.1:{local}/")])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success(), "nothing answers on an unserved port");
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_exec_needs_create_on_pods_exec() {
    let c = cluster("exec-rbac", true).await;
    c.pod("runner", "Running", "127.0.0.1", json!({})).await;
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "exec-get"},
        "rules": [{"apiGroups": [""], "resources": ["pods", "pods/exec"], "verbs": ["get", "list"]}],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "exec-get"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "exec-get"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}],
    });
    let client = c.sim.client();
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = Api::default_namespaced(client.clone());
    roles
        .create(&PostParams::default(), &serde_json::from_value(role).unwrap())
        .await
        .unwrap();
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> = Api::default_namespaced(client);
    bindings
        .create(&PostParams::default(), &serde_json::from_value(binding).unwrap())
        .await
        .unwrap();
    let viewer: Api<Pod> = Api::default_namespaced(c.sim.client_for("viewer", &[]).await.unwrap());
    let Err(err) = viewer.exec("runner", ["true"], &AttachParams::default()).await else {
        panic!("get alone must not allow exec");
    };
    let message = err.to_string();
    assert!(message.contains("cannot create resource \"pods/exec\""), "{message}");
}
