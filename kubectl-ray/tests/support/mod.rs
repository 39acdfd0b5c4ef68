//! What the plugin's end-to-end tests share: kube-sim in-process with our CRDs and the hollow Ray, the real
//! operator binary against it, and the real `kubectl` on PATH running `kubectl ray ...` from this crate's build.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube_sim::{SimConfig, SimHandle, SimServer};
use ray_sim::{HollowRay, HollowRayOptions};

/// The operator binary of this workspace, built (once per test process) with the same profile as the tests.
/// `cargo test -p kubectl-ray` does not build other packages' binaries, so the harness asks cargo for it;
/// when the build fails the test fails with cargo's output. It asks as `cargo test --workspace` would (test
/// mode, every member selected, so dev-dependency features resolve the same), naming one of the operator's
/// integration tests, which makes cargo build the operator binary: under CI's `cargo test --workspace` it is
/// already fresh. `cargo build -p kuberay-operator` resolved features differently and rebuilt much of the
/// graph (32 minutes on a loaded 2-core machine).
pub fn operator_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let plugin = PathBuf::from(env!("CARGO_BIN_EXE_kubectl-ray"));
        let bin_dir = plugin.parent().unwrap().to_path_buf();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let profile = bin_dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut command = Command::new(cargo);
        command
            .args(["test", "--no-run", "--quiet", "--workspace", "--test", "e2e_rbac"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile == "release" {
            command.arg("--release");
        }
        // The test process has the variables cargo sets for a test run (this package's name, manifest dir,
        // ...). ring's build script tracks some of them, so passing them on would make this cargo rebuild
        // ring and everything above it, and the next plain `cargo test` rebuild it all back.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if is_cargo_test_variable(&key) {
                command.env_remove(key.as_ref());
            }
        }
        let out = command.output().expect("running cargo to build the operator");
        assert!(
            out.status.success(),
            "building kuberay-operator failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let binary = bin_dir.join("kuberay-operator");
        assert!(binary.is_file(), "no operator binary at {}", binary.display());
        binary
    })
}

/// Variables cargo sets for the test binary it runs (not the user's cargo configuration).
fn is_cargo_test_variable(key: &str) -> bool {
    key == "OUT_DIR"
        || key.starts_with("CARGO_PKG_")
        || key.starts_with("CARGO_MANIFEST_")
        || key.starts_with("CARGO_CFG_")
        || key.starts_with("CARGO_BIN_")
        || matches!(
            key,
            "CARGO_CRATE_NAME" | "CARGO_PRIMARY_PACKAGE" | "CARGO_RUSTC_CURRENT_DIR" | "CARGO_TARGET_TMPDIR"
        )
}

/// A free local TCP port, never the same one twice in a test process.
pub fn free_port() -> u16 {
    kube_sim::network::ports::unused_loopback_port().unwrap()
}

/// The operator, running; killed on drop (its log printed if the test failed).
pub struct Operator {
    child: Child,
    log: PathBuf,
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(60).collect();
            eprintln!("---- operator log (last 60 lines) ----");
            for line in tail.into_iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

/// kube-sim with our CRDs and the hollow Ray, the operator, and a private directory with the kubeconfig.
pub struct Env {
    /// The simulated API server.
    pub sim: SimHandle,
    /// The hollow Ray attached to it.
    pub ray: HollowRay,
    /// The operator.
    pub operator: Operator,
    /// The test's directory (HOME of the tools).
    pub dir: PathBuf,
    /// Its kubeconfig.
    pub kubeconfig: PathBuf,
}

impl Env {
    /// Starts everything; `tag` names the directory.
    pub async fn start(tag: &str) -> Env {
        let sim = SimServer::start(SimConfig::default()).await.unwrap();
        let crds: Api<CustomResourceDefinition> = Api::all(sim.client());
        // Generated once per test binary (seconds in a debug build), off the runtime's threads.
        static OURS: std::sync::LazyLock<Vec<CustomResourceDefinition>> =
            std::sync::LazyLock::new(ray_api::crds::all_crds);
        let ours = tokio::task::spawn_blocking(|| &*OURS).await.unwrap();
        for crd in ours {
            crds.create(&PostParams::default(), crd).await.unwrap();
        }
        let ray = HollowRay::attach(&sim, HollowRayOptions::default());
        let dir = std::env::temp_dir().join(format!("kubectl-ray-{tag}-{}-{}", std::process::id(), free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).unwrap();
        let log = dir.join("operator.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(operator_binary())
            .args([
                "--metrics-addr",
                &format!("127.0.0.1:{}", free_port()),
                "--health-probe-bind-address",
                &format!("127.0.0.1:{}", free_port()),
                "--leader-election-namespace",
                "default",
                "--use-kubernetes-proxy",
            ])
            .env("KUBECONFIG", &kubeconfig)
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out))
            .spawn()
            .unwrap();
        Env {
            sim,
            ray,
            operator: Operator { child, log },
            dir,
            kubeconfig,
        }
    }

    /// Runs `kubectl <args>` (the real kubectl, with the plugin's directory first on PATH), feeding `stdin`.
    pub fn kubectl_with_input(&self, args: &[&str], stdin: &str) -> Output {
        let plugin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-ray")).parent().unwrap();
        let path = std::env::join_paths(
            std::iter::once(plugin_dir.to_path_buf())
                .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
        )
        .unwrap();
        let mut child = Command::new("kubectl")
            .args(args)
            .env("PATH", path)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.dir)
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl must be on PATH (see README)");
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        eprintln!(
            "$ kubectl {} (exit {:?})\n{}{}",
            args.join(" "),
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs `kubectl <args>` with empty stdin.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with_input(args, "")
    }

    /// Runs `kubectl <args>`, asserts exit 0 and returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs `kubectl <args>`, asserts exit 1 and returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert_eq!(out.status.code(), Some(1), "kubectl {args:?} should exit 1");
        String::from_utf8(out.stderr).unwrap()
    }

    /// Runs `kubectl <args>` until its stdout satisfies `check`, failing after `timeout`.
    pub async fn ok_eventually(&self, args: &[&str], timeout: Duration, check: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let out = self.ok(args);
            if check(&out) {
                return out;
            }
            assert!(
                started.elapsed() < timeout,
                "kubectl {args:?} never matched within {timeout:?}:\n{out}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

/// The whitespace-separated cells of each line of a table.
pub fn cells(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// The header line of a table with runs of spaces folded.
pub fn header(table: &str) -> String {
    table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
