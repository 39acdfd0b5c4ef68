//! Why a RayJob pass fails; every failure requeues after 3 s.

use super::plan::{RayJobPlanError, SidecarObservationError};
use crate::status_writer::StatusWriteError;

/// Why a RayJob reconcile failed (requeue after backoff).
#[derive(Debug, thiserror::Error)]
pub enum RayJobError {
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// The plan reported a KubeRay error return.
    #[error("{0}")]
    Plan(#[from] RayJobPlanError),
    /// Building the cluster or submitter failed.
    #[error("{0}")]
    PodGen(#[from] ray_podgen::PodGenError),
    /// The RayJob has no namespace.
    #[error("RayJob {0} has no namespace")]
    NoNamespace(String),
    /// The SidecarMode head pods could not be read.
    #[error("{0}")]
    Sidecar(#[from] SidecarObservationError),
    /// The batch scheduler refused the job or could not size its PodGroup.
    #[error("{0}")]
    Gang(#[from] ray_gang::GangError),
    /// The status could not be serialised.
    #[error("status serialisation failed: {0}")]
    Serialize(#[from] serde_json::Error),
}

impl From<StatusWriteError> for RayJobError {
    fn from(error: StatusWriteError) -> Self {
        match error {
            StatusWriteError::Api(e) => Self::Kube(e),
            StatusWriteError::Serialize(e) => Self::Serialize(e),
        }
    }
}
