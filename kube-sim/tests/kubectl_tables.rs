//! Server-side printing through the real `kubectl`: `kubectl get` of built-in kinds and KubeRay custom
//! resources prints kube-apiserver's columns, `-o wide` adds the priority-1 ones, `kubectl get all` lists the
//! `all` category, and `kubectl get pods -w` streams one-row Tables. Raw Table responses are checked too.
//!
//! The kubectl part is skipped (with a loud message) only when `kubectl` is not on PATH.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kube_sim::{SimConfig, SimHandle, SimServer};
use serde_json::Value;

const TABLE_V1: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const TABLE_V1BETA1: &str = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";

fn kubectl_available() -> bool {
    match Command::new("kubectl").args(["version", "--client"]).output() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("running kubectl: {e}"),
    }
}

struct Kubectl {
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.args(args)
            .arg("--request-timeout=20s")
            .env("KUBECONFIG", &self.kubeconfig)
            // A private HOME keeps kubectl's discovery cache out of the user's.
            .env("HOME", &self.dir)
            .stdin(Stdio::null());
        c
    }

    /// Runs kubectl, asserts success and an empty stderr, returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.command(args).output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("$ kubectl {}\n{stdout}{stderr}", args.join(" "));
        assert!(out.status.success(), "kubectl {args:?} failed: {stderr}");
        assert!(stderr.trim().is_empty(), "kubectl {args:?} wrote to stderr: {stderr}");
        stdout
    }

    fn apply_yaml(&self, name: &str, yaml: &str) {
        let file = self.dir.join(name);
        std::fs::write(&file, yaml).unwrap();
        self.ok(&["create", "-f", file.to_str().unwrap()]);
    }
}

/// A table line's cells: columns are separated by at least two spaces (names such as `NOMINATED NODE` hold one).
fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

fn is_age(cell: &str) -> bool {
    cell.strip_suffix('s')
        .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n < 120))
}

fn timestamp_ago(secs: i64) -> String {
    let ts = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(secs);
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

async fn start() -> SimHandle {
    tokio::time::timeout(Duration::from_secs(20), SimServer::start(SimConfig::default()))
        .await
        .expect("sim start timed out")
        .expect("sim start")
}

fn temp_dir(tag: &str) -> PathBuf {
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

async fn raw(sim: &SimHandle, accept: &str, path: &str) -> Result<String, kube::Error> {
    let req = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .unwrap();
    sim.client().request_text(req).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_responses_follow_kube_apiserver_table_convertor() {
    let sim = start().await;
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::default_namespaced(sim.client());
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "raw", "labels": {"app": "raw"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap();
    pods.create(&Default::default(), &pod).await.unwrap();

    // A list: v1 Table, PartialObjectMetadata rows by default, the list's resourceVersion.
    let list: Value =
        serde_json::from_str(&raw(&sim, TABLE_V1, "/api/v1/namespaces/default/pods").await.unwrap()).unwrap();
    assert_eq!(list["kind"], "Table");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert!(
        list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .is_ok()
    );
    let names: Vec<&str> = list["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    let priorities: Vec<i64> = list["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["priority"].as_i64().unwrap())
        .collect();
    assert_eq!(priorities, [0, 0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(list["columnDefinitions"][0]["format"], "name");
    let row = &list["rows"][0];
    assert_eq!(row["cells"][0], "raw");
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(row["object"]["metadata"]["labels"]["app"], "raw");

    // v1beta1 with the whole object; parameters in any order; a single object.
    let one: Value = serde_json::from_str(
        &raw(
            &sim,
            "application/json;g=meta.k8s.io;v=v1beta1;as=Table",
            "/api/v1/namespaces/default/pods/raw?includeObject=Object",
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(one["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(one["rows"].as_array().unwrap().len(), 1);
    assert_eq!(one["rows"][0]["object"]["kind"], "Pod");
    assert_eq!(one["rows"][0]["object"]["spec"]["containers"][0]["image"], "busybox");
    let none: Value = serde_json::from_str(
        &raw(
            &sim,
            TABLE_V1BETA1,
            "/api/v1/namespaces/default/pods/raw?includeObject=None",
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(none["rows"][0]["object"], Value::Null);

    // Kinds without a printer get kube's default table: Name and an RFC 3339 Created At.
    let roles: Value = serde_json::from_str(
        &raw(
            &sim,
            TABLE_V1,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(roles["columnDefinitions"][1]["name"], "Created At");
    assert_eq!(roles["columnDefinitions"][1]["type"], "date");

    // Plain JSON is untouched; bad includeObject is a 400; an unservable Table version alone is a 406.
    let plain: Value = serde_json::from_str(
        &raw(&sim, "application/json", "/api/v1/namespaces/default/pods")
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(plain["kind"], "PodList");
    match raw(&sim, TABLE_V1, "/api/v1/namespaces/default/pods?includeObject=All").await {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 400);
            assert_eq!(e.message, "unrecognized includeObject value: \"All\"");
        }
        other => panic!("expected a 400, got {other:?}"),
    }
    match raw(
        &sim,
        "application/json;as=Table;v=v2;g=meta.k8s.io",
        "/api/v1/namespaces/default/pods",
    )
    .await
    {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 406);
            assert_eq!(e.reason, "NotAcceptable");
        }
        other => panic!("expected a 406, got {other:?}"),
    }

    // A Table watch: every event a one-row Table, the column definitions on the first event only.
    let mut second = pod.clone();
    second.metadata.name = Some("raw2".into());
    pods.create(&Default::default(), &second).await.unwrap();
    // A page of a list carries the list's continue token and remaining count.
    let page: Value = serde_json::from_str(
        &raw(&sim, TABLE_V1, "/api/v1/namespaces/default/pods?limit=1")
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(page["rows"].as_array().unwrap().len(), 1);
    assert!(!page["metadata"]["continue"].as_str().unwrap().is_empty());
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let stream = raw(
        &sim,
        TABLE_V1,
        "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1",
    )
    .await
    .unwrap();
    let events: Vec<Value> = stream.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(events.len() >= 2, "{stream}");
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["kind"], "Table");
    assert_eq!(events[0]["object"]["columnDefinitions"].as_array().unwrap().len(), 9);
    assert_eq!(events[0]["object"]["rows"][0]["cells"][0], "raw");
    for e in &events[1..] {
        assert_eq!(e["object"]["kind"], "Table");
        assert_eq!(e["object"]["columnDefinitions"], Value::Null);
        assert_eq!(e["object"]["rows"].as_array().unwrap().len(), 1);
    }
}

fn wait_for_pod_running(k: &Kubectl, name: &str) {
    k.ok(&["wait", "--for=condition=Ready", &format!("pod/{name}"), "--timeout=30s"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_prints_kube_apiserver_columns() {
    if !kubectl_available() {
        eprintln!("\n\n!!!!! SKIPPING kubectl_get_prints_kube_apiserver_columns: `kubectl` is not on PATH !!!!!\n\n");
        return;
    }
    let sim = start().await;
    let dir = temp_dir("kubectl-tables");
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let k = Kubectl { dir, kubeconfig };
    tokio::task::spawn_blocking(move || kubectl_session(&k)).await.unwrap();
    drop(sim);
}

fn kubectl_session(k: &Kubectl) {
    k.apply_yaml(
        "web.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {app: web}\nspec:\n  containers:\n  - name: c\n    image: nginx\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports: [{port: 80}, {port: 53, protocol: UDP}]\n",
    );
    wait_for_pod_running(k, "web");

    // Pods: kube-apiserver's printPod columns; -o wide adds IP, NODE, NOMINATED NODE, READINESS GATES.
    let out = k.ok(&["get", "pods"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "NAME   READY   STATUS    RESTARTS   AGE");
    let row = cells(lines[1]);
    assert_eq!(row[..4], ["web", "1/1", "Running", "0"]);
    assert!(is_age(&row[4]), "{row:?}");
    let out = k.ok(&["get", "pods", "-o", "wide"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        cells(lines[0]),
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ]
    );
    let row = cells(lines[1]);
    assert!(row[5].starts_with("10.244."), "{row:?}");
    assert!(row[6].starts_with("kube-sim-node-"), "{row:?}");
    assert_eq!(row[7..], ["<none>", "<none>"]);

    // Services: TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S); SELECTOR with -o wide.
    let out = k.ok(&["get", "svc"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        cells(lines[0]),
        ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    );
    let row = cells(lines[1]);
    assert_eq!(row[..2], ["web", "ClusterIP"]);
    assert!(row[2].starts_with("10.96."), "{row:?}");
    assert_eq!(row[3..5], ["<none>", "80/TCP,53/UDP"]);
    let out = k.ok(&["get", "svc", "-o", "wide"]);
    assert_eq!(cells(out.lines().nth(1).unwrap())[6], "app=web");

    // Events: LAST SEEN TYPE REASON OBJECT MESSAGE; the wide set adds SUBOBJECT SOURCE FIRST SEEN COUNT NAME.
    k.apply_yaml(
        "event.yaml",
        &format!(
            "apiVersion: v1\nkind: Event\nmetadata:\n  name: web.1\ninvolvedObject: {{kind: Pod, name: web, namespace: default, fieldPath: 'spec.containers{{c}}'}}\nreason: Pulled\nmessage: Container image pulled\ntype: Normal\nsource: {{component: kubelet, host: kube-sim-node-0}}\ncount: 3\nfirstTimestamp: {}\nlastTimestamp: {}\n",
            timestamp_ago(50 * 3600),
            timestamp_ago(30 * 60)
        ),
    );
    let out = k.ok(&["get", "events"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "LAST SEEN   TYPE     REASON   OBJECT    MESSAGE");
    assert_eq!(
        cells(lines[1]),
        ["30m", "Normal", "Pulled", "pod/web", "Container image pulled"]
    );
    let out = k.ok(&["get", "events", "-o", "wide"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        cells(lines[0]),
        [
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST SEEN",
            "COUNT",
            "NAME"
        ]
    );
    assert_eq!(
        cells(lines[1]),
        [
            "30m",
            "Normal",
            "Pulled",
            "pod/web",
            "spec.containers{c}",
            "kubelet, kube-sim-node-0",
            "Container image pulled",
            "2d2h",
            "3",
            "web.1"
        ]
    );

    // Nodes and namespaces.
    let out = k.ok(&["get", "nodes"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "NAME              STATUS   ROLES    AGE   VERSION");
    let row = cells(lines[1]);
    assert_eq!(row[..3], ["kube-sim-node-0", "Ready", "<none>"]);
    assert_eq!(row[4], "kube-sim-v1.35.0");
    let out = k.ok(&["get", "nodes", "-o", "wide"]);
    assert_eq!(
        cells(out.lines().next().unwrap()),
        [
            "NAME",
            "STATUS",
            "ROLES",
            "AGE",
            "VERSION",
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION",
            "CONTAINER-RUNTIME"
        ]
    );
    let out = k.ok(&["get", "ns", "default"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "NAME      STATUS   AGE");
    assert_eq!(cells(lines[1])[..2], ["default", "Active"]);

    // KubeRay custom resources: each CRD version's additionalPrinterColumns.
    for plural in ["rayclusters", "rayjobs", "rayservices", "raycronjobs"] {
        let crd = kuberay_reference::crd_path(&format!("ray.io_{plural}.yaml"));
        k.ok(&["create", "-f", crd.to_str().unwrap()]);
    }
    for sample in [
        "ray-cluster.sample.yaml",
        "ray-job.sample.yaml",
        "ray-service.sample.yaml",
    ] {
        let path = kuberay_reference::sample_path(sample);
        k.ok(&["create", "-f", path.to_str().unwrap()]);
    }
    let out = k.ok(&["get", "rayclusters"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "NAME                 DESIRED WORKERS   AVAILABLE WORKERS   CPUS   MEMORY   GPUS   STATUS   AGE"
    );
    // No status yet: the status columns are empty, as kube prints missing values.
    let row = cells(lines[1]);
    assert_eq!(row[0], "raycluster-kuberay");
    assert!(is_age(&row[1]), "{row:?}");
    k.ok(&[
        "patch", "raycluster", "raycluster-kuberay", "--subresource=status", "--type=merge", "-p",
        r#"{"status":{"desiredWorkerReplicas":1,"availableWorkerReplicas":1,"desiredCPU":"2","desiredMemory":"3G","desiredGPU":"0","desiredTPU":"0","state":"ready","head":{"podIP":"10.244.0.9","serviceIP":"10.96.0.9"}}}"#,
    ]);
    let out = k.ok(&["get", "rayclusters"]);
    let row = cells(out.lines().nth(1).unwrap());
    assert_eq!(row[..7], ["raycluster-kuberay", "1", "1", "2", "3G", "0", "ready"]);
    let out = k.ok(&["get", "rayclusters", "-o", "wide"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        cells(lines[0]),
        [
            "NAME",
            "DESIRED WORKERS",
            "AVAILABLE WORKERS",
            "CPUS",
            "MEMORY",
            "GPUS",
            "TPUS",
            "STATUS",
            "AGE",
            "HEAD POD IP",
            "HEAD SERVICE IP"
        ]
    );
    let row = cells(lines[1]);
    assert_eq!(row[6..8], ["0", "ready"]);
    assert_eq!(row[9..], ["10.244.0.9", "10.96.0.9"]);

    let out = k.ok(&["get", "rayjobs"]);
    assert_eq!(
        out.lines().next().unwrap(),
        "NAME            JOB STATUS   DEPLOYMENT STATUS   RAY CLUSTER NAME   START TIME   END TIME   AGE"
    );
    k.ok(&[
        "patch", "rayjob", "rayjob-sample", "--subresource=status", "--type=merge", "-p",
        r#"{"status":{"jobStatus":"RUNNING","jobDeploymentStatus":"Running","rayClusterName":"rayjob-sample-abc","startTime":"2026-01-01T00:00:00Z"}}"#,
    ]);
    let out = k.ok(&["get", "rayjobs"]);
    let row = cells(out.lines().nth(1).unwrap());
    assert_eq!(
        row[..5],
        [
            "rayjob-sample",
            "RUNNING",
            "Running",
            "rayjob-sample-abc",
            "2026-01-01T00:00:00Z"
        ]
    );
    // v1alpha1 declares no columns: Name and Age.
    let out = k.ok(&["get", "rayjobs.v1alpha1.ray.io"]);
    assert_eq!(out.lines().next().unwrap(), "NAME            AGE");

    let out = k.ok(&["get", "rayservices"]);
    assert_eq!(
        out.lines().next().unwrap(),
        "NAME                SERVICE STATUS   NUM SERVE ENDPOINTS"
    );
    k.ok(&[
        "patch",
        "rayservice",
        "rayservice-sample",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"serviceStatus":"Running","numServeEndpoints":2}}"#,
    ]);
    let out = k.ok(&["get", "rayservices"]);
    assert_eq!(
        cells(out.lines().nth(1).unwrap()),
        ["rayservice-sample", "Running", "2"]
    );

    // `kubectl get all`: the `all` category of discovery, built-in kinds and the KubeRay CRDs' categories.
    let out = k.ok(&["get", "all"]);
    let headers: Vec<&str> = out
        .split("\n\n")
        .map(|section| section.lines().next().unwrap_or_default())
        .collect();
    assert_eq!(headers[0], "NAME      READY   STATUS    RESTARTS   AGE");
    assert!(out.contains("\npod/web "), "{out}");
    assert!(out.contains("\nservice/web "), "{out}");
    assert!(out.contains("\nraycluster.ray.io/raycluster-kuberay "), "{out}");
    assert!(out.contains("\nrayjob.ray.io/rayjob-sample "), "{out}");
    assert!(out.contains("\nrayservice.ray.io/rayservice-sample "), "{out}");
    let out = k.ok(&["get", "all", "-A"]);
    assert!(
        out.starts_with("NAMESPACE   NAME      READY   STATUS    RESTARTS   AGE\ndefault     pod/web "),
        "{out}"
    );

    // `kubectl get pods -w`: the current list, then one-row Tables as events arrive.
    let mut watch = k
        .command(&["get", "pods", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = watch.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = vec![rx.recv_timeout(Duration::from_secs(20)).unwrap()];
    lines.push(rx.recv_timeout(Duration::from_secs(20)).unwrap());
    k.apply_yaml(
        "w2.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: w2\nspec:\n  containers:\n  - name: c\n    image: busybox\n",
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lines
        .iter()
        .any(|l| cells(l).get(2).is_some_and(|s| s == "Running") && l.starts_with("w2 "))
        && Instant::now() < deadline
    {
        if let Ok(l) = rx.recv_timeout(Duration::from_secs(1)) {
            lines.push(l);
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    eprintln!("kubectl get pods -w:\n{}", lines.join("\n"));
    assert_eq!(lines[0], "NAME   READY   STATUS    RESTARTS   AGE");
    assert_eq!(cells(&lines[1])[..4], ["web", "1/1", "Running", "0"]);
    let w2: Vec<Vec<String>> = lines[2..].iter().map(|l| cells(l)).collect();
    assert!(w2.len() >= 2, "{lines:?}");
    assert!(w2.iter().all(|c| c[0] == "w2" && c.len() == 5), "{w2:?}");
    assert_eq!(w2[0][..4], ["w2", "0/1", "Pending", "0"]);
    assert_eq!(w2.last().unwrap()[..4], ["w2", "1/1", "Running", "0"]);
    let _ = std::fs::remove_dir_all(&k.dir);
}
