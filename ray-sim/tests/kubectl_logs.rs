//! The real `kubectl logs` against `kube-sim serve`: a pod's log, `-c`, `--tail`, `--timestamps`, `-f`,
//! `--previous`, `deploy/NAME` and `job/NAME`, and kube-apiserver's and the kubelet's errors.
//!
//! Skipped (with a loud message) only when `kubectl` is not on PATH.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/session.rs"]
mod session;
mod support;

use session::{kubectl_session, pod_yaml, workload_yaml, write_file};
use support::Client;

/// The pods of the test: plain, two containers, crash-looping, short-lived, slow to start, unpullable.
fn pods() -> String {
    let busybox = [("main", "busybox:1.36")];
    [
        pod_yaml("one", &[], "Always", &busybox),
        pod_yaml("two", &[], "Always", &[("app", "app:1"), ("sidecar", "proxy:2")]),
        pod_yaml(
            "crasher",
            &[("failure", "crash"), ("run-duration", "300ms")],
            "Always",
            &busybox,
        ),
        pod_yaml("brief", &[("run-duration", "2s")], "Never", &busybox),
        pod_yaml("slow", &[("start-delay", "10m")], "Always", &busybox),
        pod_yaml(
            "nopull",
            &[("failure", "image-pull")],
            "Always",
            &[("main", "missing:0")],
        ),
    ]
    .join("---\n")
}

const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata:
  name: batch
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox:1.36
";

fn started(container: &str, image: &str) -> String {
    format!("kube-sim: started container {container} (image \"{image}\", hollow: no process runs)\n")
}

/// Runs kubectl expecting failure; returns stderr.
fn fails(k: &Client, args: &[&str]) -> String {
    let out = k.run(args);
    assert!(!out.status.success(), "kubectl {args:?} should fail");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn kubectl_logs_reads_hollow_container_logs() {
    let Some((_server, k)) = kubectl_session("kubectl-logs") else {
        return;
    };
    let file = write_file(&k, "pods.yaml", &pods());
    k.ok(&["apply", "-f", &file]);
    for pod in ["one", "two", "brief"] {
        k.ok(&[
            "wait",
            "--for=jsonpath={.status.phase}=Running",
            &format!("pod/{pod}"),
            "--timeout=30s",
        ]);
    }

    assert_eq!(k.ok(&["logs", "one"]), started("main", "busybox:1.36"));
    assert_eq!(k.ok(&["logs", "two", "-c", "sidecar"]), started("sidecar", "proxy:2"));
    assert_eq!(k.ok(&["logs", "one", "--tail=1"]), started("main", "busybox:1.36"));
    assert_eq!(k.ok(&["logs", "one", "--tail=0"]), "");
    let stamped = k.ok(&["logs", "one", "--timestamps"]);
    let (stamp, rest) = stamped.split_once(' ').unwrap();
    assert!(
        stamp.parse::<jiff::Timestamp>().is_ok(),
        "RFC 3339 timestamp first: {stamped}"
    );
    assert_eq!(rest, started("main", "busybox:1.36"));

    // Without -c, kube-apiserver wants a container name when there are several (kubectl itself picks the first).
    let err = fails(&k, &["get", "--raw", "/api/v1/namespaces/default/pods/two/log"]);
    assert_eq!(
        err.trim(),
        "Error from server (BadRequest): a container name must be specified for pod two, choose one of: [app sidecar]"
    );
    let err = fails(&k, &["logs", "two", "-c", "nope"]);
    assert_eq!(err.trim(), "error: container nope is not valid for pod two");

    // Follow returns when the container stops.
    assert_eq!(
        k.ok(&["logs", "-f", "brief"]),
        format!(
            "{}kube-sim: container main exited with code 0 (Completed)\n",
            started("main", "busybox:1.36")
        )
    );

    // A restarted container keeps its previous log; a container that never restarted has none.
    k.ok(&[
        "wait",
        "--for=jsonpath={.status.containerStatuses[0].lastState.terminated.exitCode}=1",
        "pod/crasher",
        "--timeout=30s",
    ]);
    assert_eq!(
        k.ok(&["logs", "crasher", "--previous"]),
        format!(
            "{}kube-sim: container main exited with code 1 (Error)\n",
            started("main", "busybox:1.36")
        )
    );
    let err = fails(&k, &["logs", "one", "--previous"]);
    assert_eq!(
        err.trim(),
        "Error from server (BadRequest): previous terminated container \"main\" in pod \"one\" not found"
    );

    // Pods whose containers have not started answer the kubelet's errors.
    let err = fails(&k, &["logs", "slow"]);
    assert_eq!(
        err.trim(),
        "Error from server (BadRequest): container \"main\" in pod \"slow\" is waiting to start: ContainerCreating"
    );
    k.ok(&[
        "wait",
        "--for=jsonpath={.status.containerStatuses[0].state.waiting.reason}=ImagePullBackOff",
        "pod/nopull",
        "--timeout=30s",
    ]);
    let err = fails(&k, &["logs", "nopull"]);
    assert_eq!(
        err.trim(),
        "Error from server (BadRequest): container \"main\" in pod \"nopull\" is waiting to start: trying and failing to pull image"
    );

    // deploy/NAME and job/NAME resolve to one of their pods.
    let web = workload_yaml("Deployment", "web", Some(2), "nginx", "nginx:1.27");
    let file = write_file(&k, "workloads.yaml", &format!("{web}---\n{JOB}"));
    k.ok(&["apply", "-f", &file]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let out = k.run(&["logs", "deploy/web"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), started("nginx", "nginx:1.27"));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("Found 2 pods, using pod/web-"),
        "kubectl names the pod it picked: {stderr}"
    );
    k.ok(&["wait", "--for=condition=Complete", "job/batch", "--timeout=30s"]);
    assert_eq!(
        k.ok(&["logs", "job/batch"]),
        format!(
            "{}kube-sim: container work exited with code 0 (Completed)\n",
            started("work", "busybox:1.36")
        )
    );
    let _ = std::fs::remove_dir_all(&k.dir);
}
