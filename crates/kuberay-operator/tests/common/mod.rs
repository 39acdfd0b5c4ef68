//! The harness the end-to-end tests share: the operator binary as a child process (killed on every exit
//! path, its log printed when a test fails), free ports, bounded polling, our CRDs installed, temp dirs.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kube::Client;
use kube::api::{Api, PostParams};

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
    /// (`ENABLE_*`, `CLUSTER_DOMAIN`, `RAYJOB_*`) are not inherited.
    pub fn start(
        dir: &Path,
        kubeconfig: &Path,
        namespace: &str,
        metrics_port: u16,
        probe_port: u16,
        extra: &[&str],
    ) -> Self {
        let log = dir.join("operator.log");
        let out = std::fs::File::create(&log).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_kuberay-operator"));
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
        let inherited_switch = |k: &str| k.starts_with("ENABLE_") || k.starts_with("RAYJOB_") || k == "CLUSTER_DOMAIN";
        for (key, _) in std::env::vars().filter(|(k, _)| inherited_switch(k)) {
            command.env_remove(key);
        }
        Operator {
            child: command.spawn().unwrap(),
            log,
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

/// A free local TCP port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
pub async fn install_crds(client: &Client) {
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    for crd in ray_api::crds::all_crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
}

/// A fresh temp directory for one test's files.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kuberay-e2e-{tag}-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
