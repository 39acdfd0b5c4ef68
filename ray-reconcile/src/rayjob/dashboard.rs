//! The part of the Ray dashboard job API the RayJob controller uses:
//! `GET /api/jobs/<id>`, `POST /api/jobs/` (HTTPMode submission, body from [`job_submit_request`]) and
//! `POST /api/jobs/<id>/stop`, reached either directly (`http://<dashboardURL>`, 2 s timeout) or through
//! the API server's service proxy (`--use-kubernetes-proxy`, 10 s timeout).

use std::collections::BTreeMap;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ray_api::{JobStatus, RayJob};
use serde::{Deserialize, Serialize};

use super::plan::{DashboardJobInfo, DashboardObservation};

/// Timeout of a direct dashboard call.
pub const DIRECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Timeout of a dashboard call through the API server proxy.
pub const PROXY_TIMEOUT: Duration = Duration::from_secs(10);

/// A dashboard call failure.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    /// The call timed out.
    #[error("dashboard request timed out after {0:?}")]
    Timeout(Duration),
    /// Transport or API server failure.
    #[error("dashboard request failed: {0}")]
    Transport(String),
    /// The request could not be built.
    #[error("invalid dashboard request: {0}")]
    Request(#[from] http::Error),
    /// `runtimeEnvYAML` is not a YAML map.
    #[error("failed to unmarshal RuntimeEnvYAML: {yaml}: {reason}")]
    RuntimeEnv {
        /// The YAML text.
        yaml: String,
        /// The parser's message.
        reason: String,
    },
    /// `entrypointResources` is not a JSON map of numbers.
    #[error("json: cannot unmarshal entrypointResources {text} into map[string]float32: {reason}")]
    EntrypointResources {
        /// The JSON text.
        text: String,
        /// The parser's message.
        reason: String,
    },
    /// The dashboard already has a job with this submission id.
    #[error("submission ID '{0}' already used, Please use a different submission_id")]
    DuplicateSubmissionId(String),
    /// The dashboard refused the submission.
    #[error("SubmitJob fail: {status} {body}")]
    SubmitFailed {
        /// Go's `resp.Status`, e.g. `400 Bad Request`.
        status: String,
        /// The response body.
        body: String,
    },
    /// The submission answer was not JSON.
    #[error("SubmitJob fail: {0}")]
    SubmitBadResponse(String),
    /// `{"stopped": false}` and the job is not terminal.
    #[error("failed to stop job: {0}")]
    StopFailed(String),
    /// The stop answer was not JSON.
    #[error("StopJob fail: {0}")]
    StopBadResponse(String),
}

/// Ray's text in a 500 answer to a submission whose id is taken.
pub const DUPLICATE_SUBMISSION_ID_MARKER: &str = "Please use a different submission_id";

/// Body of `POST /api/jobs/` (KubeRay's `ConvertRayJobToReq`); empty fields are left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JobSubmitRequest {
    /// `runtimeEnvYAML` as a map.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_env: Option<serde_json::Value>,
    /// `spec.metadata`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// `entrypointResources` parsed as a map of numbers.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub entrypoint_resources: BTreeMap<String, f32>,
    /// `spec.entrypoint`.
    pub entrypoint: String,
    /// `status.jobId`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub submission_id: String,
    /// `entrypointNumCpus`.
    #[serde(skip_serializing_if = "is_zero")]
    pub entrypoint_num_cpus: f32,
    /// `entrypointNumGpus`.
    #[serde(skip_serializing_if = "is_zero")]
    pub entrypoint_num_gpus: f32,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(value: &f32) -> bool {
    *value == 0.0
}

/// `ConvertRayJobToReq`: the submission body for `job` (submission id = `status.jobId`).
pub fn job_submit_request(job: &RayJob) -> Result<JobSubmitRequest, DashboardError> {
    let spec = &job.spec;
    let yaml = spec.runtime_env_yaml.clone().unwrap_or_default();
    let runtime_env = if yaml.is_empty() {
        None
    } else {
        let map: serde_json::Map<String, serde_json::Value> =
            ray_api::yaml::from_yaml_str(&yaml).map_err(|e| DashboardError::RuntimeEnv {
                yaml: yaml.clone(),
                reason: e.to_string(),
            })?;
        Some(serde_json::Value::Object(map))
    };
    let resources_text = spec.entrypoint_resources.clone().unwrap_or_default();
    let entrypoint_resources = if resources_text.is_empty() {
        BTreeMap::new()
    } else {
        serde_json::from_str(&resources_text).map_err(|e| DashboardError::EntrypointResources {
            text: resources_text.clone(),
            reason: e.to_string(),
        })?
    };
    Ok(JobSubmitRequest {
        runtime_env,
        metadata: spec.metadata.clone().unwrap_or_default(),
        entrypoint_resources,
        entrypoint: spec.entrypoint.clone().unwrap_or_default(),
        submission_id: job.status.as_ref().and_then(|s| s.job_id.clone()).unwrap_or_default(),
        entrypoint_num_cpus: spec.entrypoint_num_cpus.as_ref().map_or(0.0, |n| n.as_f32()),
        entrypoint_num_gpus: spec.entrypoint_num_gpus.as_ref().map_or(0.0, |n| n.as_f32()),
    })
}

/// Reads the answer to `POST /api/jobs/`: the job id, or KubeRay's error for the status.
pub fn submit_outcome(code: u16, body: &str, submission_id: &str) -> Result<String, DashboardError> {
    if !(200..300).contains(&code) {
        if code == 500 && body.contains(DUPLICATE_SUBMISSION_ID_MARKER) {
            return Err(DashboardError::DuplicateSubmissionId(submission_id.to_owned()));
        }
        let reason = http::StatusCode::from_u16(code)
            .ok()
            .and_then(|c| c.canonical_reason())
            .unwrap_or_default();
        return Err(DashboardError::SubmitFailed {
            status: format!("{code} {reason}").trim_end().to_owned(),
            body: body.to_owned(),
        });
    }
    #[derive(Deserialize)]
    struct Answer {
        job_id: String,
    }
    serde_json::from_str::<Answer>(body)
        .map(|a| a.job_id)
        .map_err(|_| DashboardError::SubmitBadResponse(body.to_owned()))
}

/// `StopJob`'s verdict once `{"stopped": false}` came back: fine if the job is terminal anyway.
pub fn stop_outcome(stopped: bool, info: &DashboardObservation) -> Result<(), DashboardError> {
    if stopped {
        return Ok(());
    }
    match info {
        DashboardObservation::Info(i) if i.status.is_terminal() => Ok(()),
        other => Err(DashboardError::StopFailed(format!("{other:?}"))),
    }
}

/// Where the dashboard of one cluster is reached.
#[derive(Clone, Debug)]
pub enum DashboardTarget {
    /// `http://<host:port>` directly.
    Direct {
        /// `status.dashboardURL` (no scheme).
        address: String,
    },
    /// `/api/v1/namespaces/<ns>/services/<svc>:dashboard/proxy`.
    Proxy {
        /// Namespace of the head service.
        namespace: String,
        /// Name of the head service.
        service: String,
    },
}

#[derive(Deserialize)]
struct RawJobInfo {
    #[serde(default)]
    status: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    start_time: Option<u64>,
    #[serde(default)]
    end_time: Option<u64>,
}

/// A dashboard client over either transport.
#[derive(Clone)]
pub struct DashboardClient {
    kube: kube::Client,
    http: HttpClient<HttpConnector, Full<Bytes>>,
}

impl DashboardClient {
    /// A client using `kube` for proxied calls and a plain HTTP client for direct ones.
    pub fn new(kube: kube::Client) -> Self {
        Self {
            kube,
            http: HttpClient::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// One call: `(status code, body)`.
    async fn call(
        &self,
        target: &DashboardTarget,
        method: http::Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(u16, String), DashboardError> {
        match target {
            DashboardTarget::Direct { address } => {
                let request = http::Request::builder()
                    .method(method)
                    .uri(format!("http://{address}{path}"))
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(Full::new(Bytes::from(body)))?;
                let fut = async {
                    let response = self
                        .http
                        .request(request)
                        .await
                        .map_err(|e| DashboardError::Transport(e.to_string()))?;
                    let code = response.status().as_u16();
                    let body = response
                        .into_body()
                        .collect()
                        .await
                        .map_err(|e| DashboardError::Transport(e.to_string()))?
                        .to_bytes();
                    Ok((code, String::from_utf8_lossy(&body).into_owned()))
                };
                tokio::time::timeout(DIRECT_TIMEOUT, fut)
                    .await
                    .map_err(|_| DashboardError::Timeout(DIRECT_TIMEOUT))?
            }
            DashboardTarget::Proxy { namespace, service } => {
                let request = http::Request::builder()
                    .method(method)
                    .uri(format!(
                        "/api/v1/namespaces/{namespace}/services/{service}:dashboard/proxy{path}"
                    ))
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(body)?;
                let fut = async {
                    match self.kube.request_text(request).await {
                        Ok(body) => Ok((200, body)),
                        Err(kube::Error::Api(status)) => Ok((status.code, status.message)),
                        Err(e) => Err(DashboardError::Transport(e.to_string())),
                    }
                };
                tokio::time::timeout(PROXY_TIMEOUT, fut)
                    .await
                    .map_err(|_| DashboardError::Timeout(PROXY_TIMEOUT))?
            }
        }
    }

    /// `GetJobInfo`: 404 → [`DashboardObservation::NotFound`], bad JSON or transport → `Error`.
    pub async fn job_info(&self, target: &DashboardTarget, job_id: &str) -> DashboardObservation {
        match self
            .call(target, http::Method::GET, &format!("/api/jobs/{job_id}"), Vec::new())
            .await
        {
            Ok((404, _)) => DashboardObservation::NotFound,
            Ok((_, body)) => match serde_json::from_str::<RawJobInfo>(&body) {
                Ok(raw) => DashboardObservation::Info(DashboardJobInfo {
                    status: JobStatus::from(raw.status.as_str()),
                    message: raw.message,
                    start_time_ms: raw.start_time.unwrap_or(0),
                    end_time_ms: raw.end_time.unwrap_or(0),
                }),
                Err(_) => DashboardObservation::Error(format!("GetJobInfo fail: {body}")),
            },
            Err(e) => DashboardObservation::Error(e.to_string()),
        }
    }

    /// `StopJob` (errors are returned; the caller only logs them): `{"stopped": false}` is an error
    /// only while the job is not terminal.
    pub async fn stop_job(&self, target: &DashboardTarget, job_id: &str) -> Result<(), DashboardError> {
        #[derive(Deserialize)]
        struct Answer {
            stopped: bool,
        }
        let (_, body) = self
            .call(
                target,
                http::Method::POST,
                &format!("/api/jobs/{job_id}/stop"),
                Vec::new(),
            )
            .await?;
        let answer: Answer = serde_json::from_str(&body).map_err(|_| DashboardError::StopBadResponse(body))?;
        if answer.stopped {
            return Ok(());
        }
        let info = self.job_info(target, job_id).await;
        stop_outcome(false, &info)
    }

    /// `SubmitJob` (`POST /api/jobs/`): returns the job id the dashboard answered with.
    pub async fn submit_job(
        &self,
        target: &DashboardTarget,
        request: &JobSubmitRequest,
    ) -> Result<String, DashboardError> {
        let body = serde_json::to_vec(request).map_err(|e| DashboardError::Transport(e.to_string()))?;
        let (code, text) = self.call(target, http::Method::POST, "/api/jobs/", body).await?;
        submit_outcome(code, &text, &request.submission_id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::rayjob::DashboardJobInfo;

    fn job(yaml: &str) -> RayJob {
        ray_api::yaml::from_yaml_str(yaml).unwrap()
    }

    const BASE: &str = "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: j\nspec:\n  entrypoint: python x.py\n";

    /// G32: four runtime-env keys, resources and CPU/GPU counts carried over; bad resources rejected.
    #[test]
    fn golden_g32_convert_ray_job_to_request() {
        let mut j = job(&format!(
            "{BASE}  runtimeEnvYAML: |\n    working_dir: ./\n    pip: [requests]\n    conda: {{dependencies: [x]}}\n    eager_install: false\n  entrypointResources: '{{\"r1\": 0.1, \"r2\": 0.2}}'\n  entrypointNumCpus: 1.1\n  entrypointNumGpus: 2.2\n"
        ));
        j.status = Some(ray_api::RayJobStatus {
            job_id: Some("j-abcde".to_owned()),
            ..Default::default()
        });
        let request = job_submit_request(&j).unwrap();
        let env = request.runtime_env.as_ref().unwrap().as_object().unwrap();
        assert_eq!(env.len(), 4);
        assert_eq!(env["working_dir"], "./");
        assert!((request.entrypoint_num_cpus - 1.1).abs() < 1e-6);
        assert!((request.entrypoint_num_gpus - 2.2).abs() < 1e-6);
        assert_eq!(
            request.entrypoint_resources,
            BTreeMap::from([("r1".to_owned(), 0.1), ("r2".to_owned(), 0.2)])
        );
        assert_eq!(request.submission_id, "j-abcde");
        assert_eq!(request.entrypoint, "python x.py");

        let bad = job(&format!("{BASE}  entrypointResources: '{{\"r1\": \"string\"}}'\n"));
        let err = job_submit_request(&bad).unwrap_err().to_string();
        assert!(err.contains("json: cannot unmarshal"), "{err}");
    }

    /// Empty fields are left out of the JSON body, as Go's `omitempty` does.
    #[test]
    fn submit_request_omits_empty_fields() {
        let body = serde_json::to_value(job_submit_request(&job(BASE)).unwrap()).unwrap();
        assert_eq!(body, serde_json::json!({"entrypoint": "python x.py"}));
    }

    #[test]
    fn submit_outcome_errors() {
        assert_eq!(
            submit_outcome(200, r#"{"job_id":"a","submission_id":"a"}"#, "a").unwrap(),
            "a"
        );
        let dup = submit_outcome(
            500,
            "Job with submission_id a already exists. Please use a different submission_id.",
            "a",
        );
        assert_eq!(
            dup.unwrap_err().to_string(),
            "submission ID 'a' already used, Please use a different submission_id"
        );
        assert_eq!(
            submit_outcome(400, "bad", "a").unwrap_err().to_string(),
            "SubmitJob fail: 400 Bad Request bad"
        );
        assert_eq!(
            submit_outcome(200, "nope", "a").unwrap_err().to_string(),
            "SubmitJob fail: nope"
        );
    }

    /// G31: stopped → fine; not stopped but the job already SUCCEEDED → fine; still running → error.
    #[test]
    fn golden_g31_stop_job() {
        let info = |status| {
            DashboardObservation::Info(DashboardJobInfo {
                status,
                message: String::new(),
                start_time_ms: 0,
                end_time_ms: 0,
            })
        };
        assert!(stop_outcome(true, &DashboardObservation::NotQueried).is_ok());
        assert!(stop_outcome(false, &info(JobStatus::Succeeded)).is_ok());
        let err = stop_outcome(false, &info(JobStatus::Running)).unwrap_err();
        assert!(err.to_string().starts_with("failed to stop job: "), "{err}");
    }
}
