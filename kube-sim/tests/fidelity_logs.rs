//! Fidelity tests for the pod `log` subresource with the real kube client: `limitBytes`, `sinceSeconds`,
//! `follow` (new lines stream in; the stream ends when the container stops), option validation, and lines
//! other simulated parties append through `PodLogs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, LogParams, PostParams};
use kube_sim::{AgentConfig, SimConfig, SimHandle, SimServer};
use serde_json::json;
use support::{WAIT, wait_for};

use crate::support;

async fn running_pod(name: &str) -> (SimHandle, Api<Pod>, String) {
    let sim = SimServer::start(SimConfig {
        agents: AgentConfig {
            pod_start_delay: Duration::from_millis(10),
            pod_kill_delay: Duration::from_millis(10),
            resync: Duration::from_millis(20),
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    })
    .await
    .expect("kube-sim starts");
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let v = wait_for(&pods, name, "Running", |v| v["status"]["phase"] == "Running").await;
    let uid = v["metadata"]["uid"].as_str().unwrap().to_string();
    (sim, pods, uid)
}

const STARTED: &str = "kube-sim: started container main (image \"busybox:1.36\", hollow: no process runs)\n";

#[tokio::test]
async fn pod_log_limit_bytes_truncates_the_log() {
    let (sim, pods, uid) = running_pod("limited").await;
    sim.agent_config().pod_logs.append(&uid, "main", "second line");
    let all = pods.logs("limited", &LogParams::default()).await.unwrap();
    assert_eq!(all, format!("{STARTED}second line\n"));
    let params = LogParams {
        limit_bytes: Some(8),
        ..LogParams::default()
    };
    assert_eq!(pods.logs("limited", &params).await.unwrap(), "kube-sim");
    let params = LogParams {
        tail_lines: Some(1),
        ..LogParams::default()
    };
    assert_eq!(pods.logs("limited", &params).await.unwrap(), "second line\n");
}

#[tokio::test]
async fn pod_log_since_seconds_keeps_only_recent_lines() {
    let (sim, pods, uid) = running_pod("recent").await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    sim.agent_config().pod_logs.append(&uid, "main", "fresh");
    let params = LogParams {
        since_seconds: Some(1),
        ..LogParams::default()
    };
    assert_eq!(pods.logs("recent", &params).await.unwrap(), "fresh\n");
}

#[tokio::test]
async fn pod_log_follow_streams_new_lines_until_the_container_stops() {
    let (sim, pods, uid) = running_pod("followed").await;
    let params = LogParams {
        follow: true,
        ..LogParams::default()
    };
    let mut lines = pods.log_stream("followed", &params).await.unwrap().lines();
    let first = tokio::time::timeout(WAIT, lines.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(format!("{first}\n"), STARTED);
    sim.agent_config().pod_logs.append(&uid, "main", "streamed");
    let next = tokio::time::timeout(WAIT, lines.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(next, "streamed");
    pods.delete("followed", &DeleteParams::default()).await.unwrap();
    let last = tokio::time::timeout(WAIT, lines.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(last, "kube-sim: container main exited with code 0 (Completed)");
    let end = tokio::time::timeout(WAIT, lines.next()).await.expect("the stream ends");
    assert!(end.is_none(), "nothing after the container stopped: {end:?}");
}

#[tokio::test]
async fn pod_log_options_are_validated_like_pod_log_options() {
    let (sim, pods, _) = running_pod("checked").await;
    let params = LogParams {
        limit_bytes: Some(0),
        ..LogParams::default()
    };
    let kube::Error::Api(status) = pods.logs("checked", &params).await.unwrap_err() else {
        panic!("expected a Status")
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "PodLogOptions \"checked\" is invalid: limitBytes: Invalid value: 0: must be greater than 0"
    );
    let client = sim.client();
    let req = http::Request::get("/api/v1/namespaces/default/pods/checked/log?tailLines=many")
        .body(Vec::new())
        .unwrap();
    let kube::Error::Api(status) = client.request_text(req).await.unwrap_err() else {
        panic!("expected a Status")
    };
    assert_eq!(status.code, 400);
    let req = http::Request::get("/api/v1/namespaces/default/pods/missing/log")
        .body(Vec::new())
        .unwrap();
    let kube::Error::Api(status) = client.request_text(req).await.unwrap_err() else {
        panic!("expected a Status")
    };
    assert_eq!(
        (status.code, status.message.as_str()),
        (404, "pods \"missing\" not found")
    );
}
