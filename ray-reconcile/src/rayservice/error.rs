//! Why a RayService pass fails; every failure requeues after the default 2 s.

use ray_podgen::env_names::RAY_AUTH_TOKEN_SECRET_KEY;

use super::incremental::IncrementalError;
use super::plan::{SERVE_STATUS_FAILED_PREFIX, SUBMIT_FAILED_PREFIX};
use crate::status_writer::StatusWriteError;

/// Why a RayService reconcile failed (requeue after [`DEFAULT_REQUEUE`](super::plan::DEFAULT_REQUEUE)).
#[derive(Debug, thiserror::Error)]
pub enum RayServiceError {
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// Building a cluster or service failed.
    #[error("{0}")]
    PodGen(#[from] ray_podgen::PodGenError),
    /// Reading the serve application statuses failed.
    #[error("{SERVE_STATUS_FAILED_PREFIX}{0}")]
    ServeDetails(super::serve_api::ServeApiError),
    /// Submitting the serve config failed.
    #[error("{SUBMIT_FAILED_PREFIX}{0}")]
    SubmitServeConfig(String),
    /// The cluster has no head pod (yet).
    #[error("found 0 head. cluster name {cluster}, namespace {namespace}")]
    NoHeadPod {
        /// Cluster name.
        cluster: String,
        /// Namespace.
        namespace: String,
    },
    /// The token-auth Secret could not be read.
    #[error("failed to get auth secret {namespace}/{name}: {source}")]
    AuthSecret {
        /// Namespace.
        namespace: String,
        /// Secret name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// The token-auth Secret has no `auth_token`.
    #[error("auth token key '\"{RAY_AUTH_TOKEN_SECRET_KEY}\"' not found in secret {namespace}/{name}")]
    AuthTokenMissing {
        /// Namespace.
        namespace: String,
        /// Secret name.
        name: String,
    },
    /// The cluster's head service has no dashboard port.
    #[error("{0}")]
    DashboardUrl(#[from] crate::rayjob::RayJobPlanError),
    /// The status could not be computed.
    #[error("{0}")]
    Status(#[from] super::plan::StatusError),
    /// The RayService has no namespace.
    #[error("RayService {0} has no namespace")]
    NoNamespace(String),
    /// An incremental-upgrade step failed.
    #[error("{0}")]
    Incremental(#[from] IncrementalError),
    /// The status could not be serialised.
    #[error("status serialisation failed: {0}")]
    Serialize(#[from] serde_json::Error),
}

impl From<StatusWriteError> for RayServiceError {
    fn from(error: StatusWriteError) -> Self {
        match error {
            StatusWriteError::Api(e) => Self::Kube(e),
            StatusWriteError::Serialize(e) => Self::Serialize(e),
        }
    }
}
