//! Fidelity tests that need the hollow agents (F28, F37, F39-F42, F48) plus the Volcano queue walkthrough of
//! docs/gang-scheduling.md, each against its own in-process kube-sim driven by the real kube 5 client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams, WatchEvent, WatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube_sim::{AgentConfig, Gvr, SimConfig, SimHandle, SimServer};
use serde_json::{Value, json};
use support::{WAIT, wait_for};

use crate::support;

fn agents() -> AgentConfig {
    AgentConfig {
        pod_start_delay: Duration::from_millis(20),
        pod_kill_delay: Duration::from_millis(100),
        job_pod_run_duration: Duration::from_millis(50),
        crash_backoff: Duration::from_millis(50),
        resync: Duration::from_millis(20),
        ..AgentConfig::default()
    }
}

async fn start(agents: AgentConfig) -> SimHandle {
    SimServer::start(SimConfig {
        agents,
        ..SimConfig::default()
    })
    .await
    .expect("kube-sim starts")
}

fn pod_json(name: &str, annotations: Value, restart: &str, requests: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"restartPolicy": restart, "containers": [
            {"name": "main", "image": "busybox:1.36", "resources": {"requests": requests}}
        ]}
    })
}

fn pod(name: &str, annotations: Value, restart: &str) -> Pod {
    serde_json::from_value(pod_json(name, annotations, restart, json!({}))).unwrap()
}

fn cond<'a>(v: &'a Value, ty: &str) -> &'a Value {
    v["status"]["conditions"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["type"] == ty))
        .unwrap_or(&Value::Null)
}

#[tokio::test]
async fn f28_await_condition_pod_running() {
    let sim = start(agents()).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    pods.create(&PostParams::default(), &pod("p28", json!({}), "Always"))
        .await
        .unwrap();
    let running = tokio::time::timeout(WAIT, await_condition(pods.clone(), "p28", conditions::is_pod_running()))
        .await
        .expect("pod runs in time")
        .unwrap()
        .unwrap();
    assert_eq!(running.status.unwrap().phase.as_deref(), Some("Running"));
    let log = sim.request_log();
    assert!(
        log.iter()
            .any(|e| format!("{e:?}").contains("fieldSelector=metadata.name%3Dp28")),
        "await_condition's watch uses a metadata.name field selector"
    );
}

#[tokio::test]
async fn f37_graceful_pod_delete() {
    let sim = start(agents()).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    pods.create(&PostParams::default(), &pod("running", json!({}), "Always"))
        .await
        .unwrap();
    wait_for(&pods, "running", "Running", |v| v["status"]["phase"] == "Running").await;
    let mut stream = pods
        .watch(&WatchParams::default().fields("metadata.name=running"), "0")
        .await
        .unwrap()
        .boxed();
    let deleted = pods.delete("running", &DeleteParams::default()).await.unwrap();
    let marked = deleted.left().expect("a graceful delete returns the object");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(30));
    let saw_deleted = tokio::time::timeout(WAIT, async {
        while let Some(ev) = stream.next().await {
            if let Ok(WatchEvent::Deleted(_)) = ev {
                return true;
            }
        }
        false
    })
    .await
    .expect("DELETED arrives after the kill delay");
    assert!(saw_deleted);
    assert!(pods.get_opt("running").await.unwrap().is_none());

    // An unscheduled pod (the scheduler is off) is deleted at once.
    let sim = start(AgentConfig {
        scheduler: false,
        ..agents()
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    pods.create(&PostParams::default(), &pod("pending", json!({}), "Always"))
        .await
        .unwrap();
    let gone = pods.delete("pending", &DeleteParams::default()).await.unwrap();
    assert!(
        gone.left()
            .is_some_and(|p| p.metadata.name.as_deref() == Some("pending"))
    );
    assert!(pods.get_opt("pending").await.unwrap().is_none());
}

#[tokio::test]
async fn f39_kubelet_running_status() {
    let sim = start(agents()).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    pods.create(&PostParams::default(), &pod("p39", json!({}), "Always"))
        .await
        .unwrap();
    let v = wait_for(&pods, "p39", "Ready", |v| {
        v["status"]["phase"] == "Running" && cond(v, "Ready")["status"] == "True"
    })
    .await;
    for ty in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        assert_eq!(cond(&v, ty)["status"], "True", "{ty}");
        assert!(cond(&v, ty)["lastTransitionTime"].is_string(), "{ty}");
    }
    let st = &v["status"];
    assert!(st["podIP"].as_str().unwrap().starts_with("10.244."));
    assert!(st["hostIP"].is_string());
    assert!(st["startTime"].is_string());
    assert!(v["spec"]["nodeName"].as_str().unwrap().starts_with("kube-sim-node-"));
    for cs in st["containerStatuses"].as_array().unwrap() {
        assert_eq!(cs["ready"], true);
        assert_eq!(cs["started"], true);
        assert_eq!(cs["restartCount"], 0);
        assert!(cs["state"]["running"]["startedAt"].is_string());
        assert!(cs["containerID"].as_str().unwrap().starts_with("containerd://"));
        assert!(cs["imageID"].as_str().unwrap().contains("@sha256:"));
        assert_eq!(cs["image"], "busybox:1.36");
    }
}

#[tokio::test]
async fn f40_failure_injection() {
    let sim = start(agents()).await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let crash = pod(
        "crash",
        json!({"kube-sim.io/failure": "crash", "kube-sim.io/exit-code": "3"}),
        "Never",
    );
    pods.create(&PostParams::default(), &crash).await.unwrap();
    let pull = pod("pull", json!({"kube-sim.io/failure": "image-pull"}), "Always");
    pods.create(&PostParams::default(), &pull).await.unwrap();
    let v = wait_for(&pods, "crash", "Failed", |v| v["status"]["phase"] == "Failed").await;
    let term = &v["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(term["exitCode"], 3);
    assert_eq!(term["reason"], "Error");
    let v = wait_for(&pods, "pull", "ImagePullBackOff", |v| {
        v["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
    })
    .await;
    assert_eq!(v["status"]["phase"], "Pending");
    assert_eq!(cond(&v, "Ready")["status"], "False");
    assert_eq!(cond(&v, "Ready")["reason"], "ContainersNotReady");

    // restartPolicy Always: CrashLoopBackOff with a growing restart count.
    let looping = pod("loop", json!({"kube-sim.io/exit-code": "2"}), "Always");
    pods.create(&PostParams::default(), &looping).await.unwrap();
    let v = wait_for(&pods, "loop", "restarts", |v| {
        v["status"]["containerStatuses"][0]["restartCount"].as_u64() >= Some(2)
    })
    .await;
    assert_eq!(v["status"]["phase"], "Running");
    assert_eq!(
        v["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"],
        2
    );
}

fn job(name: &str, completions: i32, backoff: i32, annotations: Value) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completions": completions, "parallelism": 1, "backoffLimit": backoff,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}
            }
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn f41_job_completes() {
    let sim = start(agents()).await;
    let client = sim.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    // Watch the Job's pods to see them created one at a time, with labels, owner and tracking finalizer. The
    // watch starts before the Job, so it sees every pod from its creation (a watch started after the Job could
    // begin with a pod that already finished, when the machine is busy).
    let mut stream = pods
        .watch(&WatchParams::default().labels("job-name=j41"), "0")
        .await
        .unwrap()
        .boxed();
    let created = jobs
        .create(&PostParams::default(), &job("j41", 2, 6, json!({})))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let done = tokio::time::timeout(
        WAIT,
        await_condition(jobs.clone(), "j41", conditions::is_job_completed()),
    )
    .await
    .expect("job completes in time")
    .unwrap()
    .unwrap();
    let mut added = Vec::new();
    let mut max_active = 0usize;
    let mut live = std::collections::BTreeSet::new();
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_millis(300), stream.next()).await {
        match ev.unwrap() {
            WatchEvent::Added(p) => {
                let l = p.metadata.labels.clone().unwrap();
                assert_eq!(l["batch.kubernetes.io/job-name"], "j41");
                assert_eq!(l["batch.kubernetes.io/controller-uid"], uid);
                let owner = &p.metadata.owner_references.as_ref().unwrap()[0];
                assert_eq!(owner.uid, uid);
                assert_eq!(owner.controller, Some(true));
                assert_eq!(owner.block_owner_deletion, Some(true));
                assert!(
                    p.metadata
                        .finalizers
                        .as_ref()
                        .unwrap()
                        .contains(&"batch.kubernetes.io/job-tracking".into())
                );
                live.insert(p.metadata.name.clone().unwrap());
                added.push(p.metadata.name.clone().unwrap());
            }
            WatchEvent::Modified(p)
                if matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded")) =>
            {
                live.remove(p.metadata.name.as_deref().unwrap());
            }
            _ => {}
        }
        max_active = max_active.max(live.len());
    }
    assert_eq!(added.len(), 2, "two pods created: {added:?}");
    assert_eq!(max_active, 1, "parallelism 1: pods are sequential");
    let st = done.status.unwrap();
    assert_eq!(st.succeeded, Some(2));
    assert!(st.completion_time.is_some());
    assert!(st.start_time.is_some());
    let types: Vec<String> = st.conditions.unwrap().iter().map(|c| c.type_.clone()).collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
    for p in pods.list(&Default::default()).await.unwrap() {
        let fins = p.metadata.finalizers.unwrap_or_default();
        assert!(
            !fins.contains(&"batch.kubernetes.io/job-tracking".to_string()),
            "finalizer removed"
        );
    }
}

#[tokio::test]
async fn f42_job_fails() {
    let sim = start(agents()).await;
    let jobs: Api<Job> = Api::default_namespaced(sim.client());
    jobs.create(
        &PostParams::default(),
        &job("j42", 1, 1, json!({"kube-sim.io/exit-code": "1"})),
    )
    .await
    .unwrap();
    let v = wait_for(&jobs, "j42", "Failed", |v| cond(v, "Failed")["status"] == "True").await;
    let failed = cond(&v, "Failed");
    assert_eq!(failed["reason"], "BackoffLimitExceeded");
    assert_eq!(cond(&v, "FailureTarget")["status"], "True");
    assert_eq!(cond(&v, "FailureTarget")["reason"], "BackoffLimitExceeded");
    let types: Vec<&str> = v["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["FailureTarget", "Failed"]);
    assert_eq!(v["status"]["failed"], 2);
    assert!(v["status"]["completionTime"].is_null());
}

fn podgroup_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "podgroups.scheduling.volcano.sh"},
        "spec": {
            "group": "scheduling.volcano.sh", "scope": "Namespaced",
            "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup", "listKind": "PodGroupList", "shortNames": ["pg"]},
            "versions": [{"name": "v1beta1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}

fn queue_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "queues.scheduling.volcano.sh"},
        "spec": {
            "group": "scheduling.volcano.sh", "scope": "Cluster",
            "names": {"plural": "queues", "singular": "queue", "kind": "Queue", "listKind": "QueueList", "shortNames": ["q"]},
            "versions": [{"name": "v1beta1", "served": true, "storage": true,
                          "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}

async fn volcano_sim() -> (SimHandle, Api<DynamicObject>, Api<Pod>) {
    let sim = start(agents()).await;
    sim.store().create(&Gvr::crds(), None, podgroup_crd()).unwrap();
    sim.store().create(&Gvr::crds(), None, queue_crd()).unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("scheduling.volcano.sh", "v1beta1", "PodGroup"),
        "podgroups",
    );
    let pgs = Api::namespaced_with(sim.client(), "default", &ar);
    let pods = Api::default_namespaced(sim.client());
    (sim, pgs, pods)
}

fn podgroup(name: &str, min: u32, queue: Option<&str>) -> DynamicObject {
    let mut spec = json!({"minMember": min});
    if let Some(q) = queue {
        spec["queue"] = json!(q);
    }
    serde_json::from_value(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

fn gang_pod(name: &str, group: &str, cpu: &str, memory: &str) -> Pod {
    let mut v = pod_json(
        name,
        json!({"scheduling.k8s.io/group-name": group}),
        "Always",
        json!({"cpu": cpu, "memory": memory}),
    );
    v["spec"]["schedulerName"] = json!("volcano");
    serde_json::from_value(v).unwrap()
}

async fn node_name(pods: &Api<Pod>, name: &str) -> Option<String> {
    pods.get(name).await.unwrap().spec.unwrap().node_name
}

#[tokio::test]
async fn f48_volcano_gang() {
    let (_sim, pgs, pods) = volcano_sim().await;
    pgs.create(&PostParams::default(), &podgroup("pg48", 3, None))
        .await
        .unwrap();
    for n in ["g1", "g2"] {
        pods.create(&PostParams::default(), &gang_pod(n, "pg48", "100m", "64Mi"))
            .await
            .unwrap();
    }
    // Held: the PodGroup says Pending and the pods are unscheduled with a gang message.
    let v = wait_for(&pods, "g1", "gang Unschedulable", |v| {
        cond(v, "PodScheduled")["status"] == "False"
    })
    .await;
    assert!(
        cond(&v, "PodScheduled")["message"]
            .as_str()
            .unwrap()
            .contains("tasks in gang unschedulable")
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    for n in ["g1", "g2"] {
        assert_eq!(node_name(&pods, n).await, None, "{n} stays unscheduled");
    }
    let pg = wait_for(&pgs, "pg48", "Pending", |v| v["status"]["phase"] == "Pending").await;
    assert_eq!(cond(&pg, "Unschedulable")["status"], "True");
    pods.create(&PostParams::default(), &gang_pod("g3", "pg48", "100m", "64Mi"))
        .await
        .unwrap();
    let pg = wait_for(&pgs, "pg48", "Running with 3", |v| {
        v["status"]["phase"] == "Running" && v["status"]["running"] == 3
    })
    .await;
    assert_eq!(cond(&pg, "Scheduled")["status"], "True");
    for n in ["g1", "g2", "g3"] {
        assert!(node_name(&pods, n).await.is_some(), "{n} bound");
    }
}

#[tokio::test]
async fn volcano_walkthrough_second_cluster_waits_for_the_first() {
    let (sim, pgs, pods) = volcano_sim().await;
    let qar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("scheduling.volcano.sh", "v1beta1", "Queue"),
        "queues",
    );
    let queues: Api<DynamicObject> = Api::all_with(sim.client(), &qar);
    let queue: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": "kuberay-test-queue"},
        "spec": {"weight": 1, "capability": {"cpu": 4, "memory": "6Gi"}}
    }))
    .unwrap();
    queues.create(&PostParams::default(), &queue).await.unwrap();
    // Each "cluster": head 1 CPU / 2Gi + two workers 1 CPU / 1Gi = 3 CPU / 4Gi.
    let cluster = |i: u32| {
        let pg = format!("ray-test-cluster-{i}-pg");
        (
            podgroup(&pg, 3, Some("kuberay-test-queue")),
            vec![
                gang_pod(&format!("test-cluster-{i}-head"), &pg, "1", "2Gi"),
                gang_pod(&format!("test-cluster-{i}-worker-a"), &pg, "1", "1Gi"),
                gang_pod(&format!("test-cluster-{i}-worker-b"), &pg, "1", "1Gi"),
            ],
        )
    };
    let (pg0, pods0) = cluster(0);
    pgs.create(&PostParams::default(), &pg0).await.unwrap();
    for p in &pods0 {
        pods.create(&PostParams::default(), p).await.unwrap();
    }
    wait_for(&pgs, "ray-test-cluster-0-pg", "Running", |v| {
        v["status"]["phase"] == "Running"
    })
    .await;
    let q = wait_for(&queues, "kuberay-test-queue", "running 1", |v| {
        v["status"]["running"] == 1
    })
    .await;
    assert_eq!(q["status"]["state"], "Open");

    let (pg1, pods1) = cluster(1);
    pgs.create(&PostParams::default(), &pg1).await.unwrap();
    for p in &pods1 {
        pods.create(&PostParams::default(), p).await.unwrap();
    }
    let pg = wait_for(&pgs, "ray-test-cluster-1-pg", "Unschedulable", |v| {
        cond(v, "Unschedulable")["status"] == "True"
    })
    .await;
    assert_eq!(pg["status"]["phase"], "Pending");
    assert_eq!(cond(&pg, "Unschedulable")["reason"], "NotEnoughResources");
    tokio::time::sleep(Duration::from_millis(300)).await;
    for p in &pods1 {
        let name = p.metadata.name.as_deref().unwrap();
        assert_eq!(node_name(&pods, name).await, None, "{name}: no partial placement");
    }
    // Deleting the first cluster frees the queue; the second gang then schedules as a whole.
    for p in &pods0 {
        pods.delete(p.metadata.name.as_deref().unwrap(), &DeleteParams::default())
            .await
            .unwrap();
    }
    let pg = wait_for(&pgs, "ray-test-cluster-1-pg", "Running", |v| {
        v["status"]["phase"] == "Running" && v["status"]["running"] == 3
    })
    .await;
    assert_eq!(cond(&pg, "Scheduled")["status"], "True");
    for p in &pods1 {
        let name = p.metadata.name.as_deref().unwrap();
        wait_for(&pods, name, "Running", |v| v["status"]["phase"] == "Running").await;
    }
}

#[tokio::test]
async fn namespace_deletion_finishes_job_pods() {
    let sim = start(AgentConfig {
        job_pod_run_duration: Duration::from_secs(3600),
        ..agents()
    })
    .await;
    let client = sim.client();
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap();
    nss.create(&PostParams::default(), &ns).await.unwrap();
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(client.clone(), "doomed");
    wait_for(&sas, "default", "default SA", |_| true).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "doomed");
    jobs.create(&PostParams::default(), &job("long", 1, 6, json!({})))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "doomed");
    tokio::time::timeout(WAIT, async {
        loop {
            let l = pods.list(&Default::default()).await.unwrap();
            if l.items
                .iter()
                .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("job pod runs");
    nss.delete("doomed", &DeleteParams::default()).await.unwrap();
    tokio::time::timeout(WAIT, async {
        while nss.get_opt("doomed").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("namespace with a running Job is emptied and removed");
}

/// The [`kube_sim::agents::PodHooks`] extension point: a hook holds a Job's pod running until it says exit.
#[tokio::test]
async fn pod_hook_decides_when_a_job_pod_finishes() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use kube_sim::agents::{PodExit, PodExitHook};

    #[derive(Debug, Default)]
    struct Gate(AtomicBool);
    impl PodExitHook for Gate {
        fn decide(&self, pod: &Value) -> Option<PodExit> {
            if pod["metadata"]["labels"]["job-name"] != "gated" {
                return None;
            }
            Some(if self.0.load(Ordering::SeqCst) {
                PodExit::Exit(0)
            } else {
                PodExit::KeepRunning
            })
        }
    }
    let sim = start(agents()).await;
    let gate = Arc::new(Gate::default());
    sim.agent_config().pod_hooks.register(gate.clone());
    let jobs: Api<Job> = Api::default_namespaced(sim.client());
    jobs.create(&PostParams::default(), &job("gated", 1, 6, json!({})))
        .await
        .unwrap();
    wait_for(&jobs, "gated", "active", |v| {
        v["status"]["active"] == 1 && v["status"]["ready"] == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let v = serde_json::to_value(jobs.get("gated").await.unwrap()).unwrap();
    assert!(
        v["status"]["succeeded"].is_null(),
        "held by the hook beyond the default run time"
    );
    gate.0.store(true, Ordering::SeqCst);
    wait_for(&jobs, "gated", "Complete", |v| cond(v, "Complete")["status"] == "True").await;
}

fn certificate_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "certificates.cert-manager.io"},
        "spec": {
            "group": "cert-manager.io", "scope": "Namespaced",
            "names": {"plural": "certificates", "singular": "certificate", "kind": "Certificate", "listKind": "CertificateList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}

/// The hollow cert-manager issues a Certificate (Secret + Ready at its generation) and re-issues it when its
/// spec changes.
#[tokio::test]
async fn hollow_cert_manager_issues_and_reissues_certificates() {
    let sim = start(agents()).await;
    sim.store().create(&Gvr::crds(), None, certificate_crd()).unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cert-manager.io", "v1", "Certificate"),
        "certificates",
    );
    let certs: Api<DynamicObject> = Api::namespaced_with(sim.client(), "default", &ar);
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::default_namespaced(sim.client());
    let mut cert = DynamicObject::new("web", &ar).data(json!({"spec": {
        "secretName": "web-tls", "duration": "2h0m0s", "ipAddresses": ["10.0.0.1"],
        "issuerRef": {"name": "ca", "kind": "Issuer", "group": "cert-manager.io"}
    }}));
    cert.metadata.namespace = Some("default".into());
    certs.create(&PostParams::default(), &cert).await.unwrap();

    let issued = |generation: i64| {
        move |v: &Value| {
            v["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True" && c["observedGeneration"] == generation)
            })
        }
    };
    let v = wait_for(&certs, "web", "issued at generation 1", issued(1)).await;
    assert_eq!(v["status"]["revision"], 1);
    let not_after: jiff::Timestamp = v["status"]["notAfter"].as_str().unwrap().parse().unwrap();
    let hours = not_after.duration_since(jiff::Timestamp::now()).as_secs() / 3600;
    assert!((1..=2).contains(&hours), "notAfter about 2 h ahead, got {hours} h");
    let secret = wait_for(&secrets, "web-tls", "secret", |_| true).await;
    assert_eq!(secret["type"], "kubernetes.io/tls");
    for key in ["tls.crt", "tls.key", "ca.crt"] {
        assert!(secret["data"][key].is_string(), "missing {key}");
    }
    assert_eq!(secret["metadata"]["annotations"]["cert-manager.io/ip-sans"], "10.0.0.1");

    // A spec change is a new generation, re-issued.
    let patch = json!({"spec": {"ipAddresses": ["10.0.0.1", "10.0.0.2"]}});
    certs
        .patch(
            "web",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    let v = wait_for(&certs, "web", "re-issued at generation 2", issued(2)).await;
    assert_eq!(v["status"]["revision"], 2);
    wait_for(&secrets, "web-tls", "secret with both IPs", |s| {
        s["metadata"]["annotations"]["cert-manager.io/ip-sans"] == "10.0.0.1,10.0.0.2"
    })
    .await;
}

/// `kube-sim bench`'s measurement (`scale::run`): every pod created, listed and seen by every watcher, and,
/// with the agents on, seen Running by the first watcher (which reads the phase from dynamic objects).
#[tokio::test]
async fn scale_run_sees_every_pod_created_and_running() {
    let sim = start(agents()).await;
    let options = kube_sim::scale::ScaleOptions {
        pods: 40,
        clients: 4,
        watchers: 2,
        namespace: "default".into(),
        settle_timeout: WAIT,
        wait_running: true,
    };
    let report = kube_sim::scale::run(&sim.client(), &options).await;
    assert_eq!(
        (report.creates.created, report.creates.errors),
        (40, 0),
        "{:?}",
        report.creates.first_error
    );
    assert_eq!(report.listed, 40);
    assert_eq!(report.watcher_counts, vec![40, 40]);
    assert!(report.watch_settle.is_some(), "watchers settled");
    assert_eq!(report.running, 40);
    assert!(report.all_running.is_some(), "every pod ran");
}
