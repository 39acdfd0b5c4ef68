//! Custom resources validated as kube-apiserver validates them, over HTTP with the real kube client: typed
//! garbage for every KubeRay CRD answered 422 `Invalid` with upstream's paths and messages and nothing
//! stored, every KubeRay sample accepted, defaults and pruning visible on read, `fieldValidation`, and the
//! switch that turns validation off.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use kube_sim::{AgentConfig, SimConfig, SimHandle, SimServer};
use serde_json::{Value, json};

/// `(file, kind, plural)` of the four KubeRay CRDs.
const KUBERAY: &[(&str, &str, &str)] = &[
    ("ray.io_rayclusters.yaml", "RayCluster", "rayclusters"),
    ("ray.io_rayjobs.yaml", "RayJob", "rayjobs"),
    ("ray.io_rayservices.yaml", "RayService", "rayservices"),
    ("ray.io_raycronjobs.yaml", "RayCronJob", "raycronjobs"),
];

async fn sim(validate: bool) -> SimHandle {
    SimServer::start(SimConfig {
        agents: AgentConfig {
            enabled: false,
            ..AgentConfig::default()
        },
        crd_files: KUBERAY.iter().map(|(f, _, _)| kuberay_reference::crd_path(f)).collect(),
        validate_custom_resources: validate,
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

fn api(client: &Client, kind: &str, version: &str) -> Api<DynamicObject> {
    let (_, _, plural) = KUBERAY.iter().find(|(_, k, _)| *k == kind).unwrap();
    let ar = ApiResource {
        group: "ray.io".into(),
        version: version.into(),
        api_version: format!("ray.io/{version}"),
        kind: kind.into(),
        plural: (*plural).into(),
    };
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn head_group() -> Value {
    json!({"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}}})
}

fn raycluster(name: &str) -> Value {
    json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
        "spec": {
            "headGroupSpec": head_group(),
            "workerGroupSpecs": [{"groupName": "small", "replicas": 1, "minReplicas": 0, "maxReplicas": 3, "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.46.0"}]}}}]
        }
    })
}

fn rayjob(name: &str) -> Value {
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
        "spec": {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": {"headGroupSpec": head_group()}}})
}

fn rayservice(name: &str) -> Value {
    json!({"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": name},
        "spec": {"rayClusterConfig": {"headGroupSpec": head_group()}}})
}

fn raycronjob(name: &str) -> Value {
    json!({"apiVersion": "ray.io/v1", "kind": "RayCronJob", "metadata": {"name": name},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"entrypoint": "python -c 'print(1)'",
            "rayClusterSpec": {"headGroupSpec": head_group()}}}})
}

/// Creates `obj` and returns the 422 Status it must be refused with; asserts nothing was stored.
async fn refused(client: &Client, obj: Value) -> kube::core::Status {
    let kind = obj["kind"].as_str().unwrap().to_string();
    let name = obj["metadata"]["name"].as_str().unwrap().to_string();
    let api = api(client, &kind, "v1");
    let dynamic: DynamicObject = serde_json::from_value(obj).unwrap();
    let err = match api.create(&PostParams::default(), &dynamic).await {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected a 422 for {kind}/{name}, got {other:?}"),
    };
    assert_eq!(err.code, 422, "{err:?}");
    assert_eq!(err.reason, "Invalid");
    assert!(api.get_opt(&name).await.unwrap().is_none(), "{kind}/{name} was stored");
    err
}

/// The exact Status body of a refused create (the kube client keeps only code, reason and message).
async fn refused_status(client: &Client, obj: &Value) -> Value {
    let kind = obj["kind"].as_str().unwrap();
    let req = http::Request::post(format!(
        "/apis/ray.io/v1/namespaces/default/{}",
        KUBERAY.iter().find(|(_, k, _)| *k == kind).unwrap().2
    ))
    .header("Content-Type", "application/json")
    .body(serde_json::to_vec(obj).unwrap())
    .unwrap();
    let resp = client.send(req.map(kube::client::Body::from)).await.unwrap();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test]
async fn crd_type_integer_rejects_string_with_upstream_status() {
    let sim = sim(true).await;
    let mut rc = raycluster("typed-garbage");
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = json!("string");
    let status = refused_status(&sim.client(), &rc).await;
    assert_eq!(
        status,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "RayCluster.ray.io \"typed-garbage\" is invalid: [spec.workerGroupSpecs[0].replicas: Invalid value: \"string\": spec.workerGroupSpecs[0].replicas in body must be of type integer: \"string\", <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]",
            "reason": "Invalid",
            "details": {"name": "typed-garbage", "group": "ray.io", "kind": "RayCluster", "causes": [
                {"reason": "FieldValueTypeInvalid", "message": "Invalid value: \"string\": spec.workerGroupSpecs[0].replicas in body must be of type integer: \"string\"", "field": "spec.workerGroupSpecs[0].replicas"},
                {"reason": "FieldValueInvalid", "message": "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation", "field": "<nil>"}
            ]},
            "code": 422
        })
    );
}

#[tokio::test]
async fn crd_typed_garbage_rejected_for_every_kuberay_kind() {
    let sim = sim(true).await;
    let client = sim.client();
    let pod_template_number = |mut obj: Value, pointer: &str| {
        *obj.pointer_mut(pointer).unwrap() = json!(1e308);
        obj
    };
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            pod_template_number(raycluster("rc-template"), "/spec/headGroupSpec/template"),
            "spec.headGroupSpec.template",
            "Invalid value: \"number\": spec.headGroupSpec.template in body must be of type object: \"number\"",
        ),
        (
            pod_template_number(rayjob("rj-template"), "/spec/rayClusterSpec/headGroupSpec/template"),
            "spec.rayClusterSpec.headGroupSpec.template",
            "Invalid value: \"number\": spec.rayClusterSpec.headGroupSpec.template in body must be of type object: \"number\"",
        ),
        (
            pod_template_number(
                rayservice("rs-template"),
                "/spec/rayClusterConfig/headGroupSpec/template",
            ),
            "spec.rayClusterConfig.headGroupSpec.template",
            "Invalid value: \"number\": spec.rayClusterConfig.headGroupSpec.template in body must be of type object: \"number\"",
        ),
        (
            pod_template_number(
                raycronjob("rcj-template"),
                "/spec/jobTemplate/rayClusterSpec/headGroupSpec/template",
            ),
            "spec.jobTemplate.rayClusterSpec.headGroupSpec.template",
            "Invalid value: \"number\": spec.jobTemplate.rayClusterSpec.headGroupSpec.template in body must be of type object: \"number\"",
        ),
        (
            {
                let mut o = rayjob("rj-string");
                o["spec"]["ttlSecondsAfterFinished"] = json!("ten");
                o
            },
            "spec.ttlSecondsAfterFinished",
            "Invalid value: \"string\": spec.ttlSecondsAfterFinished in body must be of type integer: \"string\"",
        ),
        (
            {
                let mut o = rayjob("rj-enum");
                o["spec"]["deletionStrategy"] =
                    json!({"onSuccess": {"policy": "Teleport"}, "onFailure": {"policy": "DeleteNone"}});
                o
            },
            "spec.deletionStrategy.onSuccess.policy",
            "Unsupported value: \"Teleport\": supported values: \"DeleteCluster\", \"DeleteWorkers\", \"DeleteSelf\", \"DeleteNone\"",
        ),
        (
            {
                let mut o = rayjob("rj-cel");
                o["spec"]["deletionStrategy"] = json!({"onSuccess": {"policy": "DeleteCluster"}});
                o
            },
            "spec.deletionStrategy",
            "Invalid value: \"object\": deletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)",
        ),
        (
            {
                let mut o = rayjob("rj-minimum");
                o["spec"]["deletionStrategy"] = json!({"deletionRules": [
                    {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "ttlSeconds": -1}}]});
                o
            },
            "spec.deletionStrategy.deletionRules[0].condition.ttlSeconds",
            "Invalid value: -1: spec.deletionStrategy.deletionRules[0].condition.ttlSeconds in body should be greater than or equal to 0",
        ),
        (
            {
                let mut o = rayservice("rs-int32");
                o["spec"]["rayClusterConfig"]["workerGroupSpecs"] = json!([{"groupName": "g", "replicas": 4_294_967_296_i64,
                    "rayStartParams": {}, "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}}]);
                o
            },
            "<nil>",
            "Invalid value: \"\": Checked value must be of type integer with format int32 in spec.rayClusterConfig.workerGroupSpecs[0].replicas",
        ),
        (
            {
                let mut o = raycronjob("rcj-required");
                o["spec"].as_object_mut().unwrap().remove("schedule");
                o
            },
            "spec.schedule",
            "Required value",
        ),
        (
            {
                let mut o = raycluster("rc-cel");
                o["spec"]["managedBy"] = json!("me");
                o
            },
            "spec.managedBy",
            "Invalid value: \"string\": the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'",
        ),
    ];
    for (obj, field, message) in cases {
        let status = refused_status(&client, &obj).await;
        assert_eq!(status["code"], 422, "{status}");
        let causes = status["details"]["causes"].as_array().unwrap();
        let hit = causes.iter().any(|c| {
            c.get("field").and_then(Value::as_str).unwrap_or_default() == field
                && c["message"].as_str().unwrap().starts_with(message)
        });
        assert!(hit, "no cause {field}: {message} in {status:#}");
        refused(&client, obj).await;
    }
}

#[tokio::test]
async fn crd_accepts_every_kuberay_sample_over_http() {
    let sim = sim(true).await;
    let client = sim.client();
    let mut created = 0;
    for path in kuberay_reference::sample_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        for (i, mut doc) in docs.into_iter().enumerate() {
            let Some(version) = doc["apiVersion"].as_str().and_then(|a| a.strip_prefix("ray.io/")) else {
                continue;
            };
            let version = version.to_string();
            let kind = doc["kind"].as_str().unwrap().to_string();
            // Samples reuse names across files: make each unique.
            let name = format!("s{created}-{i}");
            doc["metadata"]["name"] = json!(name);
            doc["metadata"].as_object_mut().unwrap().remove("namespace");
            let obj: DynamicObject = serde_json::from_value(doc).unwrap();
            let api = api(&client, &kind, &version);
            if let Err(e) = api.create(&PostParams::default(), &obj).await {
                panic!("{} ({kind}) refused: {e}", path.display());
            }
            created += 1;
        }
    }
    assert!(created >= 85, "only {created} KubeRay resources in the samples");
}

#[tokio::test]
async fn crd_defaults_and_pruning_visible_on_read() {
    let sim = sim(true).await;
    let api = api(&sim.client(), "RayCluster", "v1");
    let mut rc = raycluster("defaulted");
    rc["spec"]["notAField"] = json!({"x": 1});
    rc["spec"]["workerGroupSpecs"][0]["alsoNot"] = json!(true);
    let obj: DynamicObject = serde_json::from_value(rc).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    let got = api.get("defaulted").await.unwrap();
    let spec = &got.data["spec"];
    assert!(spec.get("notAField").is_none(), "{spec}");
    assert!(spec["workerGroupSpecs"][0].get("alsoNot").is_none());
    assert_eq!(spec["workerGroupSpecs"][0]["numOfHosts"], 1, "default applied");
}

#[tokio::test]
async fn crd_strict_field_validation_rejects_unknown_field() {
    let sim = sim(true).await;
    let client = sim.client();
    let mut rc = raycluster("strict");
    rc["spec"]["foo"] = json!(1);
    let req = http::Request::post("/apis/ray.io/v1/namespaces/default/rayclusters?fieldValidation=Strict")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&rc).unwrap())
        .unwrap();
    let resp = client.send(req.map(kube::client::Body::from)).await.unwrap();
    assert_eq!(resp.status(), 400);
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        "RayCluster in version \"v1\" cannot be handled as a RayCluster: strict decoding error: unknown field \"spec.foo\""
    );
    assert!(
        api(&client, "RayCluster", "v1")
            .get_opt("strict")
            .await
            .unwrap()
            .is_none()
    );

    // Warn (the default) stores the pruned object and says why in a Warning header.
    let req = http::Request::post("/apis/ray.io/v1/namespaces/default/rayclusters")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&rc).unwrap())
        .unwrap();
    let resp = client.send(req.map(kube::client::Body::from)).await.unwrap();
    assert_eq!(resp.status(), 201);
    let warning = resp.headers().get("Warning").unwrap().to_str().unwrap();
    assert_eq!(warning, "299 - \"unknown field \\\"spec.foo\\\"\"");
    let stored = api(&client, "RayCluster", "v1").get("strict").await.unwrap();
    assert!(stored.data["spec"].get("foo").is_none());

    // A merge patch is validated after it is applied.
    let api = api(&client, "RayCluster", "v1");
    let patch = json!({"spec": {"workerGroupSpecs": [{"groupName": "small", "replicas": -1, "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}, "numOfHosts": "two"}]}});
    match api
        .patch("strict", &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422);
            assert!(
                s.message.contains("spec.workerGroupSpecs[0].numOfHosts: Invalid value: \"string\": spec.workerGroupSpecs[0].numOfHosts in body must be of type integer: \"string\""),
                "{}",
                s.message
            );
        }
        other => panic!("expected 422, got {other:?}"),
    }
    let after = api.get("strict").await.unwrap();
    assert_eq!(after.resource_version(), stored.resource_version(), "nothing stored");
}

#[tokio::test]
async fn crd_status_subresource_write_validated() {
    let sim = sim(true).await;
    let api = api(&sim.client(), "RayCluster", "v1");
    let obj: DynamicObject = serde_json::from_value(raycluster("with-status")).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    let bad = json!({"status": {"readyWorkerReplicas": "many"}});
    match api
        .patch_status("with-status", &PatchParams::default(), &Patch::Merge(&bad))
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422);
            assert!(
                s.message
                    .contains("status.readyWorkerReplicas: Invalid value: \"string\""),
                "{}",
                s.message
            );
        }
        other => panic!("expected 422, got {other:?}"),
    }
    let good = json!({"status": {"readyWorkerReplicas": 1}});
    api.patch_status("with-status", &PatchParams::default(), &Patch::Merge(&good))
        .await
        .unwrap();
}

#[tokio::test]
async fn crd_validation_off_stores_garbage() {
    let sim = sim(false).await;
    let api = api(&sim.client(), "RayCluster", "v1");
    let mut rc = raycluster("garbage");
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = json!("string");
    rc["spec"]["headGroupSpec"]["template"] = json!(1e308);
    let obj: DynamicObject = serde_json::from_value(rc).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    let got = api.get("garbage").await.unwrap();
    assert_eq!(got.data["spec"]["workerGroupSpecs"][0]["replicas"], "string");
}
