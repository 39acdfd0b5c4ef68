//! What the end-to-end tests with real client tools share: a `kube-sim serve` child process, a private
//! directory, and running a tool against it (`tools` installs helm 4 and kubectl 1.35 on first use; `ray` installs
//! real Ray and runs a head on the host).
// Each test crate uses its own part of this module.
#![allow(dead_code)]

pub mod ray;
pub mod tools;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// Kills the simulator when the test ends, however it ends.
pub struct Server(Child);

impl Server {
    /// Stops the simulator with SIGTERM (a clean shutdown) and waits for it.
    pub fn terminate(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -TERM failed");
        let _ = self.0.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs one of our install scripts (`scripts/<script>`), which prints what it installed as its last stdout line,
/// and returns that path; a failure panics with the script's stderr and `unavailable` (what the tests lack then).
pub fn run_install_script(script: &str, unavailable: &str) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts").join(script);
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} failed, so {unavailable}:\n{stderr}",
        script.display()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(stdout.lines().last().unwrap_or_default().trim())
}

/// A fresh directory under the system temp dir, unique to this process and moment.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kube-sim-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether a `kubectl` is on PATH.
pub fn kubectl_available() -> bool {
    match Command::new("kubectl").args(["version", "--client"]).output() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("running kubectl: {e}"),
    }
}

/// Starts `kube-sim serve` writing its kubeconfig into `dir`; returns it once the kubeconfig is written.
pub fn start_server(dir: &Path) -> (Server, PathBuf) {
    start_server_with(dir, &[])
}

/// [`start_server`] with extra `serve` arguments.
pub fn start_server_with(dir: &Path, extra: &[&str]) -> (Server, PathBuf) {
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["serve", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(extra)
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
    assert!(url.starts_with("https://127.0.0.1:"), "unexpected first line {url:?}");
    assert!(kubeconfig.exists());
    (server, kubeconfig)
}

/// A client tool (kubectl, helm) run against one simulator with a private HOME and XDG directories, which keep
/// its discovery and OpenAPI caches and helm's configuration out of the user's.
pub struct Client {
    /// The tool.
    pub program: PathBuf,
    /// Arguments appended to every invocation.
    pub extra_args: Vec<String>,
    /// The private directory.
    pub dir: PathBuf,
    /// The simulator's kubeconfig.
    pub kubeconfig: PathBuf,
}

impl Client {
    /// Runs the tool and echoes the command and its output to the test's stderr.
    pub fn run(&self, args: &[&str]) -> Output {
        let out = Command::new(&self.program)
            .args(args)
            .args(&self.extra_args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.dir)
            .env("XDG_CACHE_HOME", self.dir.join(".cache"))
            .env("XDG_CONFIG_HOME", self.dir.join(".config"))
            .env("XDG_DATA_HOME", self.dir.join(".local/share"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        eprintln!(
            "$ {} {}\n{}{}",
            self.program.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Writes `yaml` to `file` in the private directory and `apply`s it; returns stdout.
    pub fn apply_manifest(&self, file: &str, yaml: &str) -> String {
        let path = self.dir.join(file);
        std::fs::write(&path, yaml).unwrap();
        self.ok(&["apply", "-f", path.to_str().unwrap()])
    }

    /// [`Client::ok`] with owned arguments.
    pub fn ok_args(&self, args: &[String]) -> String {
        self.ok(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Runs the tool, asserts success and an empty stderr, returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?} failed: {stderr}");
        assert!(stderr.trim().is_empty(), "{args:?} wrote to stderr: {stderr}");
        String::from_utf8(out.stdout).unwrap()
    }
}
