//! The OpenAPI documents over HTTP, as kube-apiserver serves them: content negotiation, the v3 index with
//! content hashes, documents rebuilt when a CRD adds a kind, and schemas that name the served kinds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use http::header::ACCEPT;
use http_body_util::BodyExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::PostParams;
use kube_sim::{SimConfig, SimHandle};
use serde_json::{Value, json};

async fn sim() -> SimHandle {
    support::api_only_sim(SimConfig::default()).await
}

/// `GET path` with an `Accept` header: status and body.
async fn get(sim: &SimHandle, path: &str, accept: &str) -> (u16, Vec<u8>) {
    let req = http::Request::get(path)
        .header(ACCEPT, accept)
        .body(Vec::new())
        .unwrap();
    let resp = sim.client().send(req.map(kube::client::Body::from)).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
    (status, body)
}

async fn get_json(sim: &SimHandle, path: &str) -> Value {
    let (status, body) = get(sim, path, "application/json").await;
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test]
async fn openapi_v2_is_served_as_json_and_a_protobuf_only_accept_gets_406_like_kube_openapi() {
    let sim = sim().await;
    let doc = get_json(&sim, "/openapi/v2").await;
    assert_eq!(doc["swagger"], "2.0");
    assert_eq!(
        doc["definitions"]["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
    );
    let (status, body) = get(
        &sim,
        "/openapi/v2",
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    )
    .await;
    assert_eq!((status, body.len()), (406, 0));
    let (status, _) = get(
        &sim,
        "/openapi/v2",
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, */*",
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = get(&sim, "/openapi/v4", "application/json").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn openapi_v3_index_hashes_change_when_a_crd_adds_a_kind() {
    let sim = sim().await;
    let index = get_json(&sim, "/openapi/v3").await;
    let core_url = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(core_url.starts_with("/openapi/v3/api/v1?hash="), "{core_url}");
    assert!(index["paths"].get("apis/example.com/v1").is_none());
    let core = get_json(&sim, &core_url).await;
    assert_eq!(core["openapi"], "3.0.0");
    assert!(core["components"]["schemas"]["io.k8s.api.core.v1.Pod"].is_object());
    let (status, _) = get(&sim, "/openapi/v3/apis/example.com/v1", "application/json").await;
    assert_eq!(status, 404);

    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(sim.client())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let index = get_json(&sim, "/openapi/v3").await;
    assert_eq!(
        index["paths"]["api/v1"]["serverRelativeURL"],
        core_url.as_str(),
        "unchanged group-version"
    );
    let url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    let doc = get_json(&sim, url).await;
    let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        widget["properties"]["spec"]["properties"]["size"],
        json!({"type": "integer"})
    );
    assert_eq!(
        widget["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "kind": "Widget", "version": "v1"}])
    );
    assert!(doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"].is_object());
}
