//! The kubelet's process runtime end to end: pods whose images are mapped run as real processes (/bin/sh,
//! sleep, python3 -m http.server) in their own mount namespace, and the pod status, logs and deletion follow
//! what the processes do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{Api, DeleteParams, LogParams, PostParams};
use kube_sim::runtime::{ImageMapping, RuntimeConfig, UnmappedImages};
use kube_sim::{AgentConfig, SimConfig, SimHandle, SimServer};
use serde_json::{Value, json};
use support::procs::processes_with;
use support::wait_for;

mod support;

/// The state directory of this test binary's runtimes.
fn state_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("process-pods-state")
}

/// A simulator whose kubelet runs `busybox` and `python` images as host processes (`/usr/bin` first on
/// PATH).
async fn sim(unmapped: UnmappedImages) -> SimHandle {
    sim_with(
        vec![
            ImageMapping::parse("busybox=/usr", false).unwrap(),
            ImageMapping::parse("python=/usr", false).unwrap(),
        ],
        unmapped,
    )
    .await
}

/// A simulator running `images` as processes, with a fast back-off.
async fn sim_with(images: Vec<ImageMapping>, unmapped: UnmappedImages) -> SimHandle {
    let mut rt = RuntimeConfig::new(images);
    rt.unmapped = unmapped;
    rt.state_dir = state_dir();
    rt.crash_backoff = Duration::from_millis(300);
    rt.poll = Duration::from_millis(20);
    SimServer::start(SimConfig {
        agents: AgentConfig {
            resync: Duration::from_millis(20),
            process_runtime: Some(rt),
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    })
    .await
    .expect("kube-sim starts")
}

async fn create(pods: &Api<Pod>, pod: Value) {
    let pod: Pod = serde_json::from_value(pod).unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

fn shell_pod(name: &str, script: &str, restart: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"restartPolicy": restart, "terminationGracePeriodSeconds": 2,
                    "containers": [{"name": "main", "image": "busybox:1.36", "command": ["/bin/sh", "-c", script]}]}})
}

async fn logs(pods: &Api<Pod>, name: &str) -> String {
    pods.logs(name, &LogParams::default()).await.unwrap()
}

/// Waits (bounded) until no process carries `marker`.
async fn no_process_with(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_with(marker).is_empty() {
        assert!(
            Instant::now() < deadline,
            "processes with {marker} left: {:?}",
            processes_with(marker)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Bad input must not take kube-sim down: after it, the API still answers and a new process pod still runs
/// to completion.
async fn still_runs_pods(pods: &Api<Pod>, name: &str) {
    create(pods, shell_pod(name, "echo still running pods", "Never")).await;
    wait_for(pods, name, "Succeeded", |v| v["status"]["phase"] == "Succeeded").await;
    assert_eq!(logs(pods, name).await, "still running pods\n");
}

#[tokio::test]
async fn exit_codes_give_phases_and_terminated_states() {
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    create(
        &pods,
        shell_pod("ok", "echo hello from $HOSTNAME; echo to-stderr >&2", "Never"),
    )
    .await;
    create(&pods, shell_pod("bad", "exit 3", "Never")).await;
    let ok = wait_for(&pods, "ok", "Succeeded", |v| v["status"]["phase"] == "Succeeded").await;
    let t = &ok["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(t["exitCode"], 0);
    assert_eq!(t["reason"], "Completed");
    assert!(t["startedAt"].is_string() && t["finishedAt"].is_string());
    assert_eq!(ok["status"]["podIP"], "127.0.0.1");
    let out = logs(&pods, "ok").await;
    assert!(out.contains("hello from ok\n") && out.contains("to-stderr\n"), "{out}");
    let bad = wait_for(&pods, "bad", "Failed", |v| v["status"]["phase"] == "Failed").await;
    let t = &bad["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!((t["exitCode"].as_i64(), t["reason"].as_str()), (Some(3), Some("Error")));
}

#[tokio::test]
async fn env_comes_from_field_refs_secrets_and_config_maps() {
    let sim = sim(UnmappedImages::Hollow).await;
    let client = sim.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "cfg"}, "data": {"mode": "fast"}})).unwrap();
    Api::<ConfigMap>::default_namespaced(client.clone())
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let s: Secret =
        serde_json::from_value(json!({"metadata": {"name": "sec"}, "stringData": {"pw": "hunter2"}})).unwrap();
    Api::<Secret>::default_namespaced(client)
        .create(&PostParams::default(), &s)
        .await
        .unwrap();
    create(&pods, json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "envy", "labels": {"app": "demo"}},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "main", "image": "busybox", "command": ["/bin/sh", "-c"],
            "args": ["echo name=$POD app=$APP pw=$PW mode=$CFG_mode mem=$MEM both=$(BOTH) k8s=$KUBERNETES_SERVICE_PORT; printf 'esc=%s\\n' \"$1\"",
                     "sh", "$$(POD)"],
            "resources": {"limits": {"memory": "64Mi"}},
            "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
            "env": [
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "pw"}}},
                {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "BOTH", "value": "$(POD)-$(CFG_mode)"}
            ]}]}})).await;
    wait_for(&pods, "envy", "Succeeded", |v| v["status"]["phase"] == "Succeeded").await;
    let out = logs(&pods, "envy").await;
    let port = sim.addr().port();
    assert_eq!(
        out,
        format!("name=envy app=demo pw=hunter2 mode=fast mem=64 both=envy-fast k8s={port}\nesc=$(POD)\n")
    );
}

#[tokio::test]
async fn missing_secret_is_a_config_error_that_heals() {
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    create(&pods, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nosec"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox",
            "command": ["true"], "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "later", "key": "k"}}}]}]}}))
    .await;
    let v = wait_for(&pods, "nosec", "CreateContainerConfigError", |v| {
        waiting_reason(v) == "CreateContainerConfigError"
    })
    .await;
    assert_eq!(
        v["status"]["containerStatuses"][0]["state"]["waiting"]["message"],
        "secret \"later\" not found"
    );
    let s: Secret = serde_json::from_value(json!({"metadata": {"name": "later"}, "stringData": {"k": "v"}})).unwrap();
    Api::<Secret>::default_namespaced(sim.client())
        .create(&PostParams::default(), &s)
        .await
        .unwrap();
    wait_for(&pods, "nosec", "Succeeded after the secret appears", |v| {
        v["status"]["phase"] == "Succeeded"
    })
    .await;
}

#[tokio::test]
async fn init_containers_run_in_order_with_a_sidecar_and_shared_volume() {
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let mount = json!([{"name": "work", "mountPath": "/work-kube-sim"}]);
    create(&pods, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "inits"},
        "spec": {"restartPolicy": "Never", "volumes": [{"name": "work", "emptyDir": {}}],
            "initContainers": [
                {"name": "one", "image": "busybox", "command": ["/bin/sh", "-c", "echo one >> /work-kube-sim/order"], "volumeMounts": mount},
                {"name": "side", "image": "busybox", "restartPolicy": "Always",
                 "command": ["/bin/sh", "-c", "echo side >> /work-kube-sim/order; exec sleep 600"], "volumeMounts": mount},
                {"name": "two", "image": "busybox", "command": ["/bin/sh", "-c", "sleep 0.2; echo two >> /work-kube-sim/order"], "volumeMounts": mount}
            ],
            "containers": [{"name": "main", "image": "busybox", "command": ["cat", "/work-kube-sim/order"], "volumeMounts": mount}]}}))
    .await;
    let v = wait_for(&pods, "inits", "Succeeded", |v| v["status"]["phase"] == "Succeeded").await;
    assert_eq!(logs(&pods, "inits").await, "one\nside\ntwo\n");
    let inits = v["status"]["initContainerStatuses"].as_array().unwrap();
    assert_eq!(inits.len(), 3);
    assert_eq!(inits[0]["state"]["terminated"]["reason"], "Completed");
    assert!(
        !PathBuf::from("/work-kube-sim").exists(),
        "the mountpoint is created inside the pod only"
    );
}

#[tokio::test]
async fn volumes_are_at_their_mount_paths_inside_the_pod_only() {
    let sim = sim(UnmappedImages::Hollow).await;
    let client = sim.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "files"}, "data": {"a.txt": "alpha", "b.txt": "beta"}}))
            .unwrap();
    Api::<ConfigMap>::default_namespaced(client)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let script = "cat /etc/kube-sim-test/cfg/renamed; echo; ls /etc/kube-sim-test/cfg; \
                  cat /etc/kube-sim-test/labels; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; \
                  grep -q 'BEGIN CERTIFICATE' /var/run/secrets/kubernetes.io/serviceaccount/ca.crt && echo ca-ok; \
                  stat -c %a /etc/kube-sim-test/cfg/renamed; grep ' /dev/shm ' /proc/self/mounts | tail -n1 | cut -d' ' -f3; \
                  echo scratch > /tmp/kube-sim-scratch-file; cat /tmp/kube-sim-scratch-file";
    create(&pods, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "vols", "labels": {"tier": "x"}},
        "spec": {"restartPolicy": "Never", "volumes": [
                {"name": "cfg", "configMap": {"name": "files", "items": [{"key": "b.txt", "path": "renamed"}], "defaultMode": 0o600}},
                {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "shm", "emptyDir": {"medium": "Memory"}}],
            "containers": [{"name": "main", "image": "busybox", "command": ["/bin/sh", "-c", script],
                "volumeMounts": [{"name": "cfg", "mountPath": "/etc/kube-sim-test/cfg"},
                                 {"name": "info", "mountPath": "/etc/kube-sim-test"},
                                 {"name": "shm", "mountPath": "/dev/shm"}]}]}}))
    .await;
    wait_for(&pods, "vols", "Succeeded", |v| v["status"]["phase"] == "Succeeded").await;
    assert_eq!(
        logs(&pods, "vols").await,
        "beta\nrenamed\ntier=\"x\"\ndefault\nca-ok\n600\ntmpfs\nscratch\n"
    );
    assert!(!PathBuf::from("/etc/kube-sim-test").exists());
    assert!(
        !PathBuf::from("/tmp/kube-sim-scratch-file").exists(),
        "writes stay in the pod's overlay"
    );
}

#[tokio::test]
async fn projected_token_authenticates_against_the_api() {
    if std::process::Command::new("curl").arg("--version").output().is_err() {
        panic!("curl is required by this test (apt-get install curl)");
    }
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let sa = "/var/run/secrets/kubernetes.io/serviceaccount";
    let script = format!(
        "curl -sS --cacert {sa}/ca.crt -H \"Authorization: Bearer $(cat {sa}/token)\" \
         https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api/v1/namespaces/default/secrets"
    );
    create(&pods, shell_pod("curl", &script, "Never")).await;
    wait_for(&pods, "curl", "Succeeded", |v| v["status"]["phase"] == "Succeeded").await;
    let out = logs(&pods, "curl").await;
    assert!(
        out.contains("system:serviceaccount:default:default"),
        "the token names the pod's account: {out}"
    );
    assert!(out.contains("Forbidden"), "authenticated, then refused by RBAC: {out}");
}

#[tokio::test]
async fn crash_loop_backs_off_and_keeps_the_last_state() {
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    create(&pods, shell_pod("crashy", "echo run; exit 2", "Always")).await;
    let v = wait_for(&pods, "crashy", "three restarts", |v| {
        v["status"]["containerStatuses"][0]["restartCount"].as_u64() >= Some(3)
    })
    .await;
    let c = &v["status"]["containerStatuses"][0];
    assert_eq!(c["lastState"]["terminated"]["exitCode"], 2);
    let prev = pods
        .logs(
            "crashy",
            &LogParams {
                previous: true,
                ..LogParams::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(prev, "run\n");
    let v = wait_for(&pods, "crashy", "CrashLoopBackOff", |v| {
        waiting_reason(v) == "CrashLoopBackOff"
    })
    .await;
    let msg = v["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.starts_with("back-off ") && msg.contains("restarting failed container=main pod=crashy_default("),
        "{msg}"
    );
    still_runs_pods(&pods, "after-crash-loop").await;
}

#[tokio::test]
async fn liveness_failure_restarts_and_readiness_follows_http() {
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    create(
        &pods,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "web", "image": "python:3.12",
            "command": ["python3", "-m", "http.server", "--bind", "127.0.0.1", port.to_string()],
            "ports": [{"name": "http", "containerPort": port}],
            "readinessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 1},
            "livenessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1}}]}}),
    )
    .await;
    let v = wait_for(&pods, "web", "Ready", |v| {
        v["status"]["conditions"]
            .as_array()
            .is_some_and(|a| a.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
    })
    .await;
    assert_eq!(v["status"]["containerStatuses"][0]["restartCount"], 0);
    create(&pods, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sick"},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "600"],
            "livenessProbe": {"exec": {"command": ["test", "-e", "/never-there"]}, "periodSeconds": 1, "failureThreshold": 1}}]}}))
    .await;
    let v = wait_for(&pods, "sick", "a liveness restart", |v| {
        v["status"]["containerStatuses"][0]["restartCount"].as_u64() >= Some(1)
    })
    .await;
    assert_eq!(
        v["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"],
        143
    );
    let ready = v["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    assert!(!ready || v["status"]["containerStatuses"][0]["state"]["running"].is_object());
}

#[tokio::test]
async fn graceful_delete_sends_sigterm_then_sigkill_after_the_grace_period() {
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let marker = format!("86400.{}1", std::process::id());
    create(
        &pods,
        shell_pod(
            "stubborn",
            &format!("trap 'echo got TERM' TERM; sleep {marker} & while true; do wait; done"),
            "Always",
        ),
    )
    .await;
    create(&pods, shell_pod("polite", "exec sleep 86400.2", "Always")).await;
    wait_for(&pods, "stubborn", "Running", |v| v["status"]["phase"] == "Running").await;
    wait_for(&pods, "polite", "Running", |v| v["status"]["phase"] == "Running").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the background sleep starts");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    pods.delete("polite", &DeleteParams::default()).await.unwrap();
    pods.delete("stubborn", &DeleteParams::default()).await.unwrap();
    wait_gone(&pods, "polite").await;
    let polite = started.elapsed();
    wait_gone(&pods, "stubborn").await;
    let stubborn = started.elapsed();
    assert!(
        polite < Duration::from_millis(1500),
        "SIGTERM ends a plain process at once: {polite:?}"
    );
    assert!(
        stubborn >= Duration::from_secs(2),
        "SIGKILL waits for the 2 s grace period: {stubborn:?}"
    );
    no_process_with(&marker).await;
}

async fn wait_gone(pods: &Api<Pod>, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pods.get_opt(name).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "{name} was not deleted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn nothing_is_left_after_the_server_stops() {
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let marker = format!("86400.{}3", std::process::id());
    create(
        &pods,
        shell_pod("daemon", &format!("sleep {marker} & sleep {marker}"), "Always"),
    )
    .await;
    wait_for(&pods, "daemon", "Running", |v| v["status"]["phase"] == "Running").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(&marker).len() < 2 {
        assert!(Instant::now() < deadline, "both sleeps start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let run_dir = sim.process_runtime().unwrap().state_path().to_path_buf();
    assert!(
        run_dir.join("pods").read_dir().unwrap().next().is_some(),
        "the pod has state"
    );
    let cgroup = PathBuf::from("/sys/fs/cgroup/memory")
        .join(format!("kube-sim.{}", run_dir.file_name().unwrap().to_string_lossy()));
    drop(sim);
    no_process_with(&marker).await;
    assert!(!run_dir.exists(), "the run's state directory is removed");
    assert!(!cgroup.exists(), "the run's cgroups are removed");
}

/// A pod whose image no mapping covers.
fn unmapped_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "main", "image": "example.com/unknown:1"}]}})
}

/// The waiting reason of a pod's first container.
fn waiting_reason(v: &Value) -> &str {
    v["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn unmapped_images_fail_to_pull_in_strict_mode_and_run_hollow_otherwise() {
    let strict = sim(UnmappedImages::Fail).await;
    let pods: Api<Pod> = Api::default_namespaced(strict.client());
    create(&pods, unmapped_pod("nomap")).await;
    wait_for(&pods, "nomap", "ErrImagePull", |v| waiting_reason(v) == "ErrImagePull").await;
    wait_for(&pods, "nomap", "ImagePullBackOff", |v| {
        waiting_reason(v) == "ImagePullBackOff"
    })
    .await;
    let lenient = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(lenient.client());
    create(&pods, unmapped_pod("hollow")).await;
    wait_for(&pods, "hollow", "Running hollow", |v| v["status"]["phase"] == "Running").await;
    assert!(logs(&pods, "hollow").await.contains("hollow: no process runs"));
    let pods: Api<Pod> = Api::default_namespaced(strict.client());
    still_runs_pods(&pods, "after-pull-failure").await;
}

#[tokio::test]
async fn a_missing_command_is_a_create_error_and_a_missing_shell_command_exits_127() {
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    create(&pods, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nocmd"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "command": ["no-such-command-kube-sim"]}]}}))
    .await;
    let v = wait_for(&pods, "nocmd", "CreateContainerError", |v| {
        waiting_reason(v) == "CreateContainerError"
    })
    .await;
    let msg = v["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        .as_str()
        .unwrap();
    assert!(
        msg.contains("exec: \"no-such-command-kube-sim\": executable file not found in $PATH"),
        "{msg}"
    );
    assert_eq!(v["status"]["phase"], "Pending");
    create(&pods, shell_pod("sh127", "no-such-command-kube-sim", "Never")).await;
    let v = wait_for(&pods, "sh127", "Failed", |v| v["status"]["phase"] == "Failed").await;
    assert_eq!(
        v["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        127
    );
    still_runs_pods(&pods, "after-missing-commands").await;
}

#[tokio::test]
async fn a_container_over_its_memory_limit_is_oom_killed() {
    assert!(
        PathBuf::from("/sys/fs/cgroup/memory").is_dir(),
        "this test needs the cgroup v1 memory controller at /sys/fs/cgroup/memory"
    );
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    create(
        &pods,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hog"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "python",
            "command": ["python3", "-c", "b = bytearray(256 * 1024 * 1024); print(len(b))"],
            "resources": {"limits": {"memory": "48Mi"}}}]}}),
    )
    .await;
    let v = wait_for(&pods, "hog", "Failed", |v| v["status"]["phase"] == "Failed").await;
    let t = &v["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(
        (t["reason"].as_str(), t["exitCode"].as_i64()),
        (Some("OOMKilled"), Some(137))
    );
}

/// Builds a minimal unpacked image (`umoci unpack` layout): `rootfs/` holding only `/bin/sh` and the
/// libraries it links, and a `config.json` with entrypoint, cmd, env and working directory.
fn tiny_image() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tiny-image-{}", std::process::id()));
    let rootfs = dir.join("rootfs");
    let shell = std::fs::canonicalize("/bin/sh").unwrap();
    let ldd = std::process::Command::new("ldd")
        .arg(&shell)
        .output()
        .expect("ldd runs");
    let mut files = vec![shell.clone()];
    files.extend(
        String::from_utf8_lossy(&ldd.stdout)
            .split_whitespace()
            .filter(|w| w.starts_with('/'))
            .map(PathBuf::from),
    );
    for f in files {
        let target = rootfs.join(f.strip_prefix("/").unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&f, &target).unwrap();
    }
    std::fs::create_dir_all(rootfs.join("bin")).unwrap();
    let sh = rootfs.join("bin/sh");
    if !sh.exists() {
        std::fs::copy(&shell, &sh).unwrap();
    }
    let config = json!({"config": {"Entrypoint": ["/bin/sh", "-c"],
        "Cmd": ["echo $GREETING from $(pwd); [ -e /work ] || echo no-host-files; [ -e /proc/self ] && echo has-proc"],
        "Env": ["GREETING=hi", "PATH=/bin"], "WorkingDir": "/srv"}});
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    dir
}

#[tokio::test]
async fn rootfs_images_run_in_their_own_root_with_their_config() {
    let image = tiny_image();
    let mapping = ImageMapping::parse(&format!("tiny={}", image.display()), true).unwrap();
    let sim = sim_with(vec![mapping], UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    create(
        &pods,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tiny"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "tiny:latest"}]}}),
    )
    .await;
    wait_for(&pods, "tiny", "Succeeded", |v| v["status"]["phase"] == "Succeeded").await;
    assert_eq!(logs(&pods, "tiny").await, "hi from /srv\nno-host-files\nhas-proc\n");
    assert!(!image.join("rootfs/srv").exists(), "the image itself is not modified");
    drop(sim);
    std::fs::remove_dir_all(&image).unwrap();
}

#[tokio::test]
async fn exec_runs_commands_inside_a_running_container() {
    use tokio::io::AsyncReadExt as _;
    let sim = sim(UnmappedImages::Hollow).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    create(
        &pods,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "target"},
        "spec": {"volumes": [{"name": "scratch", "emptyDir": {}}],
            "containers": [{"name": "main", "image": "busybox", "workingDir": "/scratch-kube-sim",
                "env": [{"name": "WHO", "value": "exec"}],
                "command": ["/bin/sh", "-c", "echo inside > /scratch-kube-sim/f; exec sleep 600"],
                "volumeMounts": [{"name": "scratch", "mountPath": "/scratch-kube-sim"}]}]}}),
    )
    .await;
    wait_for(&pods, "target", "Running", |v| v["status"]["phase"] == "Running").await;
    let exec = sim.process_executor().expect("the runtime is enabled");
    let request = |command: &[&str]| kube_sim::sandbox::ExecRequest {
        namespace: "default".into(),
        pod: "target".into(),
        container: "main".into(),
        command: command.iter().map(|s| s.to_string()).collect(),
        tty: false,
        stdin: false,
    };
    let mut p = exec
        .exec(&request(&["/bin/sh", "-c", "echo $WHO $(pwd); echo oops >&2; exit 4"]))
        .unwrap();
    let mut out = String::new();
    p.stdout.read_to_string(&mut out).await.unwrap();
    let mut err = String::new();
    p.stderr.as_mut().unwrap().read_to_string(&mut err).await.unwrap();
    assert_eq!(out, "exec /scratch-kube-sim\n", "stderr: {err}");
    assert_eq!(err, "oops\n");
    assert_eq!(p.exit.await.unwrap(), 4);
    let missing = exec.exec(&kube_sim::sandbox::ExecRequest {
        container: "nope".into(),
        ..request(&["true"])
    });
    assert!(missing.is_err());
}
