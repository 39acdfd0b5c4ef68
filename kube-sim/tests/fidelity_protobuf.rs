//! Fidelity tests of the protobuf paths (`application/vnd.kubernetes.protobuf`), over HTTP with the kube 5
//! client's raw requests. Request bodies are the bytes kubectl 1.33 sends; kubectl itself is exercised in
//! `ray-sim/tests/kubectl.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use kube::Client;
use kube_sim::http::protobuf::envelope::Envelope;
use kube_sim::http::protobuf::{PROTOBUF, PROTOBUF_WATCH, decode_watch_event, object_from_message};
use kube_sim::{AgentConfig, SimConfig, SimHandle, SimServer};
use serde_json::{Value, json};

/// `kubectl create configmap cm1 --from-literal=a=b` (kubectl 1.33, protobuf).
const KUBECTL_CONFIGMAP: &str =
    "6b3873000a0f0a0276311209436f6e6669674d6170121d0a130a03636d3112001a0022002a0032003800420012060a01611201621a002200";

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

async fn sim() -> SimHandle {
    let crd = kuberay_reference::crd_path("ray.io_rayclusters.yaml");
    SimServer::start(SimConfig {
        agents: AgentConfig {
            enabled: false,
            ..AgentConfig::default()
        },
        crd_files: vec![crd],
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

struct Reply {
    status: u16,
    content_type: String,
    body: Bytes,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }

    /// The object of a protobuf reply.
    fn object(&self) -> Value {
        assert_eq!(self.content_type, PROTOBUF);
        let envelope = Envelope::decode(&self.body).unwrap();
        object_from_message(&envelope.api_version, &envelope.kind, &envelope.raw).unwrap()
    }
}

async fn call(client: &Client, method: &str, path: &str, accept: &str, content_type: &str, body: Vec<u8>) -> Reply {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Accept", accept)
        .header("Content-Type", content_type)
        .body(kube::client::Body::from(body))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        content_type,
        body,
    }
}

const KUBECTL_ACCEPT: &str = "application/vnd.kubernetes.protobuf,application/json";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// Strips what the server assigns on each create.
fn without_server_fields(mut object: Value) -> Value {
    let meta = object["metadata"].as_object_mut().unwrap();
    for field in ["uid", "resourceVersion", "creationTimestamp", "managedFields", "name"] {
        meta.remove(field);
    }
    object
}

/// A simulator holding the ConfigMap kubectl's `create configmap` sends (as protobuf), and a client of it.
async fn sim_with_kubectl_configmap() -> (SimHandle, Client) {
    let sim = sim().await;
    let client = sim.client();
    call(
        &client,
        "POST",
        CONFIGMAPS,
        KUBECTL_ACCEPT,
        PROTOBUF,
        hex(KUBECTL_CONFIGMAP),
    )
    .await;
    (sim, client)
}

#[tokio::test]
async fn protobuf_create_stores_what_the_json_path_stores() {
    let sim = sim().await;
    let client = sim.client();
    let created = call(
        &client,
        "POST",
        CONFIGMAPS,
        KUBECTL_ACCEPT,
        PROTOBUF,
        hex(KUBECTL_CONFIGMAP),
    )
    .await;
    assert_eq!(created.status, 201);
    // kubectl asked for protobuf first, so the answer is protobuf.
    let from_protobuf = created.object();
    let as_json = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "cm2", "creationTimestamp": null},
        "data": {"a": "b"}});
    let json_created = call(
        &client,
        "POST",
        CONFIGMAPS,
        "application/json",
        "application/json",
        serde_json::to_vec(&as_json).unwrap(),
    )
    .await;
    assert_eq!(json_created.status, 201);
    assert_eq!(
        without_server_fields(from_protobuf.clone()),
        without_server_fields(json_created.json())
    );
    // What is stored is what a JSON GET shows.
    let got = call(
        &client,
        "GET",
        &format!("{CONFIGMAPS}/cm1"),
        "application/json",
        "",
        vec![],
    )
    .await;
    assert_eq!(got.json(), from_protobuf);
}

#[tokio::test]
async fn protobuf_accept_answers_objects_lists_and_status_errors_in_protobuf() {
    let (_sim, client) = sim_with_kubectl_configmap().await;
    let json_get = call(
        &client,
        "GET",
        &format!("{CONFIGMAPS}/cm1"),
        "application/json",
        "",
        vec![],
    )
    .await;
    let pb_get = call(&client, "GET", &format!("{CONFIGMAPS}/cm1"), PROTOBUF, "", vec![]).await;
    assert_eq!(pb_get.status, 200);
    assert!(pb_get.body.starts_with(b"k8s\0"));
    assert_eq!(pb_get.object(), json_get.json());

    let list = call(&client, "GET", CONFIGMAPS, KUBECTL_ACCEPT, "", vec![]).await;
    let list = list.object();
    assert_eq!(
        (list["kind"].as_str(), list["apiVersion"].as_str()),
        (Some("ConfigMapList"), Some("v1"))
    );
    assert_eq!(list["items"][0]["metadata"]["name"], "cm1");
    // Items carry no kind in protobuf, as upstream (the list's kind names them).
    assert!(list["items"][0].get("kind").is_none());

    let missing = call(
        &client,
        "GET",
        &format!("{CONFIGMAPS}/nope"),
        KUBECTL_ACCEPT,
        "",
        vec![],
    )
    .await;
    assert_eq!(missing.status, 404);
    let status = missing.object();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "configmaps \"nope\" not found");
    assert_eq!(status["code"], 404);

    // JSON stays the answer for clients that do not prefer protobuf.
    let json_first = call(
        &client,
        "GET",
        CONFIGMAPS,
        "application/json, application/vnd.kubernetes.protobuf",
        "",
        vec![],
    )
    .await;
    assert_eq!(json_first.content_type, "application/json");
}

#[tokio::test]
async fn protobuf_metadata_only_lists_for_metadata_informers() {
    let (_sim, client) = sim_with_kubectl_configmap().await;
    let list = call(
        &client,
        "GET",
        CONFIGMAPS,
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        "",
        vec![],
    )
    .await;
    let list = list.object();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["metadata"]["name"], "cm1");
    assert!(list["items"][0].get("data").is_none());
}

#[tokio::test]
async fn protobuf_watch_streams_length_prefixed_watch_events() {
    let sim = sim().await;
    let client = sim.client();
    let list = call(&client, "GET", CONFIGMAPS, "application/json", "", vec![]).await;
    let rv = list.json()["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let req = http::Request::builder()
        .uri(format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}&timeoutSeconds=5"))
        .header("Accept", format!("{PROTOBUF_WATCH}, {PROTOBUF}"))
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.headers()["content-type"], PROTOBUF_WATCH);
    call(
        &client,
        "POST",
        CONFIGMAPS,
        KUBECTL_ACCEPT,
        PROTOBUF,
        hex(KUBECTL_CONFIGMAP),
    )
    .await;
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let frame = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if buf.len() >= 4 {
                let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if buf.len() >= 4 + len {
                    return buf[4..4 + len].to_vec();
                }
            }
            let frame = body.frame().await.unwrap().unwrap();
            if let Ok(data) = frame.into_data() {
                buf.extend_from_slice(&data);
            }
        }
    })
    .await
    .expect("no watch frame within 10 s");
    let (event_type, object) = decode_watch_event(&frame).unwrap();
    assert_eq!(event_type, "ADDED");
    assert_eq!(object["metadata"]["name"], "cm1");
    assert_eq!(object["data"], json!({"a": "b"}));
}

#[tokio::test]
async fn custom_resources_refuse_protobuf_with_415_and_406() {
    let sim = sim().await;
    let client = sim.client();
    let path = "/apis/ray.io/v1/namespaces/default/rayclusters";
    let body = Envelope {
        api_version: "ray.io/v1".into(),
        kind: "RayCluster".into(),
        raw: vec![],
        ..Envelope::default()
    }
    .encode();
    let refused = call(&client, "POST", path, KUBECTL_ACCEPT, PROTOBUF, body).await;
    assert_eq!(refused.status, 415);
    let status = refused.json();
    assert_eq!(status["reason"], "UnsupportedMediaType");
    assert_eq!(
        status["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
    );
    let not_acceptable = call(&client, "GET", path, PROTOBUF, "", vec![]).await;
    assert_eq!(not_acceptable.status, 406);
    assert_eq!(
        not_acceptable.json()["message"],
        "only the following media types are accepted: application/json, application/yaml"
    );
    // A client that also accepts JSON gets JSON.
    let listed = call(&client, "GET", path, KUBECTL_ACCEPT, "", vec![]).await;
    assert_eq!((listed.status, listed.content_type.as_str()), (200, "application/json"));
    assert_eq!(listed.json()["items"], json!([]));
}

#[tokio::test]
async fn undecodable_bodies_get_400_or_415_and_store_nothing() {
    let sim = sim().await;
    let client = sim.client();
    let garbage = call(
        &client,
        "POST",
        CONFIGMAPS,
        KUBECTL_ACCEPT,
        PROTOBUF,
        b"\x00\x01garbage".to_vec(),
    )
    .await;
    assert_eq!(garbage.status, 400);
    let status = garbage.object();
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a \
         protobuf message, expected prefix [107 56 115 0] (000167617262616765)"
    );
    let mut truncated = hex(KUBECTL_CONFIGMAP);
    truncated.truncate(truncated.len() - 5);
    let truncated = call(&client, "POST", CONFIGMAPS, "application/json", PROTOBUF, truncated).await;
    assert_eq!(truncated.status, 400);
    for content_type in ["application/cbor", "text/plain"] {
        let refused = call(
            &client,
            "POST",
            CONFIGMAPS,
            "application/json",
            content_type,
            b"a: b".to_vec(),
        )
        .await;
        assert_eq!(refused.status, 415, "{content_type}");
        assert_eq!(
            refused.json()["message"],
            "the body of the request was in an unknown format - accepted media types include: application/json, \
             application/yaml, application/vnd.kubernetes.protobuf"
        );
    }
    let list = call(&client, "GET", CONFIGMAPS, "application/json", "", vec![]).await;
    assert_eq!(list.json()["items"], json!([]), "nothing stored");
}
