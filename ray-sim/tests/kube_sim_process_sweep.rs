//! `kube-sim serve` with process pods, killed with SIGKILL: its containers' children outlive it, and the next
//! start's sweep kills them and removes the dead run's state; a SIGTERM stop leaves nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use procs::processes_with;
use support::{Client, fresh_dir, kubectl_available, start_server_with};

#[path = "../../kube-sim/tests/support/procs.rs"]
mod procs;
mod support;

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn runs(state: &Path) -> Vec<String> {
    std::fs::read_dir(state)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_killed_servers_leftovers_are_swept_at_the_next_start() {
    assert!(kubectl_available(), "kubectl must be on PATH");
    let dir = fresh_dir("process-sweep");
    let state = dir.join("state");
    let args = [
        "--no-hollow-ray",
        "--image-host",
        "busybox=/usr",
        "--runtime-state-dir",
        state.to_str().unwrap(),
    ];
    let (server, kubeconfig) = start_server_with(&dir, &args);
    let kubectl = Client {
        program: "kubectl".into(),
        extra_args: Vec::new(),
        dir: dir.clone(),
        kubeconfig,
    };
    let marker = format!("7777.{}", std::process::id());
    let script = format!("sleep {marker} & sleep {marker}");
    kubectl.ok(&[
        "run",
        "sw",
        "--image=busybox",
        "--restart=Never",
        "--command",
        "--",
        "/bin/sh",
        "-c",
        &script,
    ]);
    wait_until("both sleeps run", || processes_with(&marker).len() >= 2);
    let dead_runs = runs(&state);
    assert_eq!(dead_runs.len(), 1, "one run directory: {dead_runs:?}");
    drop(server); // SIGKILL
    // The container's main process dies with kube-sim (PR_SET_PDEATHSIG); its background child does not.
    assert!(
        !processes_with(&marker).is_empty(),
        "a grandchild survives a SIGKILLed kube-sim"
    );
    let (server, _) = start_server_with(&dir, &args);
    wait_until("the sweep kills the leftovers", || processes_with(&marker).is_empty());
    let after = runs(&state);
    assert!(
        !after.contains(&dead_runs[0]),
        "the dead run's state is removed: {after:?}"
    );
    let cgroup = Path::new("/sys/fs/cgroup/memory").join(format!("kube-sim.{}", dead_runs[0]));
    assert!(!cgroup.exists(), "the dead run's cgroup is removed");
    server.terminate();
    assert!(
        runs(&state).is_empty(),
        "a clean stop removes its own run: {:?}",
        runs(&state)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
