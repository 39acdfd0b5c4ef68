//! One AdmissionReview in, one AdmissionReview out: the request side of KubeRay's validating webhooks,
//! without I/O (the operator binary serves it over HTTPS; another controller can mount it in its own server).
//!
//! Like controller-runtime's admission handler the answer always travels in an HTTP 200 body: a denial is
//! `allowed: false` with the Status the API server relays (422 `Invalid` for a failed check, 400 for a
//! request that cannot be read).

use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::core::response::{StatusCause, StatusDetails};
use kube::core::{DynamicObject, Status};
use ray_api::constants::{RAY_CLUSTER_WEBHOOK_PATH, RAY_JOB_WEBHOOK_PATH, RAY_SERVICE_WEBHOOK_PATH};
use ray_api::validation::{
    FIELD_VALUE_INVALID, WebhookRejection, webhook_validate_ray_cluster, webhook_validate_ray_job,
    webhook_validate_ray_service,
};
use ray_api::{RayCluster, RayJob, RayService};
use serde::de::DeserializeOwned;

/// HTTP status of a request the webhook cannot read (`http.StatusBadRequest`).
const BAD_REQUEST: u16 = 400;
/// HTTP status of an allowed request, as controller-runtime reports it.
const OK: u16 = 200;
/// HTTP status of `apierrors.NewInvalid`.
const UNPROCESSABLE_ENTITY: u16 = 422;
/// `metav1.StatusReasonInvalid`.
const REASON_INVALID: &str = "Invalid";
/// `metav1.StatusReasonBadRequest`.
const REASON_BAD_REQUEST: &str = "BadRequest";

/// Which of KubeRay's validating webhooks a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookKind {
    /// RayClusters, at `/validate-ray-io-v1-raycluster`.
    Cluster,
    /// RayJobs, at `/validate-ray-io-v1-rayjob`.
    Job,
    /// RayServices, at `/validate-ray-io-v1-rayservice`.
    Service,
}

impl WebhookKind {
    /// The webhook served at `path`, if any.
    pub fn from_path(path: &str) -> Option<Self> {
        match path {
            RAY_CLUSTER_WEBHOOK_PATH => Some(Self::Cluster),
            RAY_JOB_WEBHOOK_PATH => Some(Self::Job),
            RAY_SERVICE_WEBHOOK_PATH => Some(Self::Service),
            _ => None,
        }
    }
}

/// Answers one AdmissionReview body (`content_type` is the request's `Content-Type`). The result is the
/// AdmissionReview to send back with HTTP 200.
pub fn review(kind: WebhookKind, content_type: Option<&str>, body: &[u8]) -> AdmissionReview<DynamicObject> {
    if body.is_empty() {
        return unreadable("request body is empty");
    }
    if content_type.is_none_or(|c| !c.starts_with("application/json")) {
        return unreadable(&format!(
            "contentType={}, expected application/json",
            content_type.unwrap_or_default()
        ));
    }
    let parsed: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(parsed) => parsed,
        Err(e) => return unreadable(&format!("couldn't decode the AdmissionReview: {e}")),
    };
    let request: AdmissionRequest<DynamicObject> = match parsed.try_into() {
        Ok(request) => request,
        Err(e) => return unreadable(&format!("the AdmissionReview has no request: {e}")),
    };
    decide(kind, &request).into_review()
}

/// The verdict on a readable request: CREATE and UPDATE validate the new object; DELETE and CONNECT pass.
fn decide(kind: WebhookKind, request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return allowed(response);
    }
    let Some(object) = request.object.as_ref() else {
        return bad_request(response, "there is no content to decode");
    };
    let verdict = match kind {
        WebhookKind::Cluster => typed::<RayCluster>(object).map(|c| webhook_validate_ray_cluster(&c)),
        WebhookKind::Job => typed::<RayJob>(object).map(|j| webhook_validate_ray_job(&j)),
        WebhookKind::Service => typed::<RayService>(object).map(|s| webhook_validate_ray_service(&s)),
    };
    match verdict {
        Err(e) => bad_request(response, &e),
        Ok(Ok(())) => {
            tracing::debug!(?kind, name = %request.name, operation = ?request.operation, "admitted");
            allowed(response)
        }
        Ok(Err(rejection)) => {
            tracing::info!(?kind, name = %request.name, operation = ?request.operation, reason = %rejection, "denied");
            denied(response, &rejection)
        }
    }
}

/// The request's object as a KubeRay type, decoded from its JSON text as the watches decode objects (so a
/// misfit names its field, and no second deserializer of each type is compiled).
fn typed<T: DeserializeOwned>(object: &DynamicObject) -> Result<T, String> {
    let text = serde_json::to_string(object).map_err(|e| format!("couldn't decode the object: {e}"))?;
    crate::decode::decode_json(&text).map_err(|e| format!("couldn't decode the object: {e}"))
}

fn allowed(mut response: AdmissionResponse) -> AdmissionResponse {
    response.allowed = true;
    response.result = Status {
        code: OK,
        ..Status::default()
    };
    response
}

/// `apierrors.NewInvalid` as an admission denial.
fn denied(mut response: AdmissionResponse, rejection: &WebhookRejection) -> AdmissionResponse {
    response.allowed = false;
    response.result = Status::failure(&rejection.message(), REASON_INVALID)
        .with_code(UNPROCESSABLE_ENTITY)
        .with_details(StatusDetails {
            name: rejection.name.clone(),
            group: rejection.group().to_owned(),
            kind: rejection.kind.to_owned(),
            uid: String::new(),
            causes: rejection
                .causes
                .iter()
                .map(|cause| StatusCause {
                    reason: FIELD_VALUE_INVALID.to_owned(),
                    message: cause.body(),
                    field: cause.field.clone(),
                })
                .collect(),
            retry_after_seconds: 0,
        });
    response
}

fn bad_request(mut response: AdmissionResponse, message: &str) -> AdmissionResponse {
    response.allowed = false;
    response.result = Status::failure(message, REASON_BAD_REQUEST).with_code(BAD_REQUEST);
    response
}

/// A denial for a body that is not an AdmissionReview (no uid to echo).
fn unreadable(message: &str) -> AdmissionReview<DynamicObject> {
    tracing::warn!(%message, "unreadable admission request");
    let mut response = AdmissionResponse::invalid(message);
    response.result = Status::failure(message, REASON_BAD_REQUEST).with_code(BAD_REQUEST);
    response.into_review()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const JSON: Option<&str> = Some("application/json");

    fn cluster(name: &str, groups: &[&str]) -> Value {
        json!({
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}}},
                "workerGroupSpecs": groups.iter().map(|g| json!({
                    "groupName": g, "replicas": 1, "minReplicas": 1, "maxReplicas": 1, "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.46.0"}]}},
                })).collect::<Vec<_>>(),
            },
        })
    }

    fn request(operation: &str, resource: &str, kind: &str, object: Value, old: Value) -> Vec<u8> {
        let body = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "ray.io", "version": "v1", "kind": kind},
                "resource": {"group": "ray.io", "version": "v1", "resource": resource},
                "name": object["metadata"]["name"].clone(),
                "namespace": "default",
                "operation": operation,
                "userInfo": {"username": "admin"},
                "object": object,
                "oldObject": old,
                "dryRun": false,
            },
        });
        serde_json::to_vec(&body).unwrap()
    }

    fn answer(kind: WebhookKind, content_type: Option<&str>, body: &[u8]) -> Value {
        serde_json::to_value(review(kind, content_type, body)).unwrap()
    }

    #[test]
    fn paths_select_the_webhook() {
        assert_eq!(
            WebhookKind::from_path("/validate-ray-io-v1-raycluster"),
            Some(WebhookKind::Cluster)
        );
        assert_eq!(
            WebhookKind::from_path("/validate-ray-io-v1-rayjob"),
            Some(WebhookKind::Job)
        );
        assert_eq!(
            WebhookKind::from_path("/validate-ray-io-v1-rayservice"),
            Some(WebhookKind::Service)
        );
        assert_eq!(WebhookKind::from_path("/mutate-v1-pod"), None);
    }

    #[test]
    fn p65_create_with_duplicate_group_names_is_denied_with_422() {
        let body = request(
            "CREATE",
            "rayclusters",
            "RayCluster",
            cluster("dup", &["small", "small"]),
            Value::Null,
        );
        let out = answer(WebhookKind::Cluster, JSON, &body);
        assert_eq!(out["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(out["kind"], "AdmissionReview");
        let response = &out["response"];
        assert_eq!(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(response["allowed"], false);
        let status = &response["status"];
        assert_eq!(status["code"], 422);
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["status"], "Failure");
        assert_eq!(
            status["message"],
            r#"RayCluster.ray.io "dup" is invalid: spec.workerGroupSpecs[1]: Invalid value: {"groupName":"small"}: worker group names must be unique"#
        );
        assert_eq!(
            status["details"],
            json!({"name": "dup", "group": "ray.io", "kind": "RayCluster", "causes": [{
                "reason": "FieldValueInvalid",
                "message": r#"Invalid value: {"groupName":"small"}: worker group names must be unique"#,
                "field": "spec.workerGroupSpecs[1]",
            }]})
        );
    }

    #[test]
    fn valid_create_is_allowed() {
        let body = request(
            "CREATE",
            "rayclusters",
            "RayCluster",
            cluster("ok", &["small", "large"]),
            Value::Null,
        );
        let response = &answer(WebhookKind::Cluster, JSON, &body)["response"];
        assert_eq!(response["allowed"], true);
        assert_eq!(response["status"]["code"], 200);
    }

    #[test]
    fn update_validates_the_new_object_not_the_old_one() {
        let body = request(
            "UPDATE",
            "rayclusters",
            "RayCluster",
            cluster("c", &["a", "a"]),
            cluster("c", &["a"]),
        );
        assert_eq!(answer(WebhookKind::Cluster, JSON, &body)["response"]["allowed"], false);
        let body = request(
            "UPDATE",
            "rayclusters",
            "RayCluster",
            cluster("c", &["a"]),
            cluster("c", &["a", "a"]),
        );
        assert_eq!(answer(WebhookKind::Cluster, JSON, &body)["response"]["allowed"], true);
    }

    #[test]
    fn delete_is_allowed() {
        let body = request(
            "DELETE",
            "rayclusters",
            "RayCluster",
            Value::Null,
            cluster("c", &["a", "a"]),
        );
        let mut review: Value = serde_json::from_slice(&body).unwrap();
        review["request"]["name"] = json!("c");
        let body = serde_json::to_vec(&review).unwrap();
        assert_eq!(answer(WebhookKind::Cluster, JSON, &body)["response"]["allowed"], true);
    }

    #[test]
    fn rayjob_with_a_48_character_name_is_denied() {
        let name = "j".repeat(48);
        let job = json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name}, "spec": {"entrypoint": "python x.py"}});
        let out = answer(
            WebhookKind::Job,
            JSON,
            &request("CREATE", "rayjobs", "RayJob", job, Value::Null),
        );
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(
            out["response"]["status"]["message"],
            format!(
                r#"RayJob.ray.io "{name}" is invalid: metadata.name: Invalid value: "{name}": The RayJob metadata is invalid: RayJob name should be no more than 47 characters"#
            )
        );
    }

    #[test]
    fn rayservice_metadata_is_checked() {
        let service = json!({"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "1svc"}, "spec": {"rayClusterConfig": cluster("x", &[])["spec"].clone()}});
        let out = answer(
            WebhookKind::Service,
            JSON,
            &request("CREATE", "rayservices", "RayService", service, Value::Null),
        );
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(out["response"]["status"]["details"]["kind"], "RayService");
    }

    #[test]
    fn malformed_bodies_are_answered_with_400() {
        for (content_type, body) in [
            (JSON, &b"{not json"[..]),
            (JSON, b""),
            (Some("text/plain"), b"{}"),
            (
                JSON,
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
            ),
        ] {
            let out = answer(WebhookKind::Cluster, content_type, body);
            let response = &out["response"];
            assert_eq!(response["allowed"], false, "{out}");
            assert_eq!(response["status"]["code"], 400, "{out}");
            assert_eq!(response["status"]["reason"], "BadRequest", "{out}");
        }
        let mut review: Value = serde_json::from_slice(&request(
            "CREATE",
            "rayclusters",
            "RayCluster",
            cluster("c", &["a"]),
            Value::Null,
        ))
        .unwrap();
        review["request"]["object"]["spec"]["workerGroupSpecs"] = json!("not a list");
        let out = answer(WebhookKind::Cluster, JSON, &serde_json::to_vec(&review).unwrap());
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(out["response"]["status"]["code"], 400);
        assert_eq!(out["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(
            out["response"]["status"]["message"],
            "couldn't decode the object: spec.workerGroupSpecs: invalid type: string \"not a list\", expected a sequence"
        );
    }
}
