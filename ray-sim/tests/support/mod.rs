//! Running the real `kubectl` against a `kube-sim serve` child process: shared by the end-to-end tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// A file of the KubeRay reference tree (CRDs, samples).
pub fn reference(rel: &str) -> PathBuf {
    let p = kuberay_reference::kuberay_dir().join(rel);
    assert!(p.exists(), "missing reference file {}", p.display());
    p
}

/// Kills the simulator when the test ends, however it ends.
pub struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `kubectl` with a private HOME and the simulator's kubeconfig.
pub struct Kubectl {
    /// The test's scratch directory (also kubectl's HOME).
    pub dir: PathBuf,
    /// The kubeconfig `kube-sim serve` wrote.
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    /// Runs kubectl and echoes the command and its output to the test log.
    pub fn run(&self, args: &[&str]) -> Output {
        let out = Command::new("kubectl")
            .args(args)
            .arg("--request-timeout=20s")
            .env("KUBECONFIG", &self.kubeconfig)
            // A private HOME keeps kubectl's discovery/OpenAPI cache out of the user's.
            .env("HOME", &self.dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        eprintln!(
            "$ kubectl {}\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs kubectl, asserts success and an empty stderr, returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "kubectl {args:?} failed: {stderr}");
        assert!(stderr.trim().is_empty(), "kubectl {args:?} wrote to stderr: {stderr}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// Writes `yaml` to `file` in the scratch directory and returns its path.
    pub fn file(&self, file: &str, yaml: &str) -> String {
        let path = self.dir.join(file);
        std::fs::write(&path, yaml).unwrap();
        path.to_str().unwrap().to_string()
    }
}

/// Whether `kubectl` is on PATH.
pub fn kubectl_available() -> bool {
    match Command::new("kubectl").args(["version", "--client"]).output() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("running kubectl: {e}"),
    }
}

/// A fresh scratch directory for one test.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kube-sim-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts `kube-sim serve` writing its kubeconfig into `dir`; returns once it printed its URL.
pub fn start_server(dir: &Path) -> (Server, PathBuf) {
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["serve", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    // The server prints its URL once the kubeconfig is written.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("kube-sim did not start within 30 s");
    assert!(url.contains("://127.0.0.1:"), "unexpected first line {url:?}");
    assert!(kubeconfig.exists());
    (server, kubeconfig)
}

/// Starts a server and a kubectl for it, or `None` (with a loud message) when kubectl is missing.
pub fn kubectl_session(tag: &str) -> Option<(Server, Kubectl)> {
    if !kubectl_available() {
        eprintln!("\n\n!!!!! SKIPPING {tag}: `kubectl` is not on PATH !!!!!\n\n");
        return None;
    }
    let dir = scratch_dir(tag);
    let (server, kubeconfig) = start_server(&dir);
    Some((server, Kubectl { dir, kubeconfig }))
}
