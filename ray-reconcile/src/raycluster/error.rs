//! Errors of a RayCluster reconcile pass. A pass error carries KubeRay's error marker so the
//! `ReplicaFailure` condition can name it.

use std::fmt;

/// KubeRay's pod error markers (`ReplicaFailure` reasons).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorMarker {
    /// Wiping all pods failed.
    FailedDeleteAllPods,
    /// Deleting the head pod failed.
    FailedDeleteHeadPod,
    /// Creating the head pod failed.
    FailedCreateHeadPod,
    /// Deleting a worker pod failed.
    FailedDeleteWorkerPod,
    /// Creating a worker pod failed.
    FailedCreateWorkerPod,
}

impl ErrorMarker {
    /// The marker's name, as used for the `ReplicaFailure` reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FailedDeleteAllPods => "FailedDeleteAllPods",
            Self::FailedDeleteHeadPod => "FailedDeleteHeadPod",
            Self::FailedCreateHeadPod => "FailedCreateHeadPod",
            Self::FailedDeleteWorkerPod => "FailedDeleteWorkerPod",
            Self::FailedCreateWorkerPod => "FailedCreateWorkerPod",
        }
    }
}

/// An error that ends a reconcile pass (the pass still computes and writes status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassError {
    /// The marker, when the failure was a pod create/delete.
    pub marker: Option<ErrorMarker>,
    /// Full error text.
    pub message: String,
}

impl PassError {
    /// An error without marker.
    pub fn plain(message: impl Into<String>) -> Self {
        Self {
            marker: None,
            message: message.into(),
        }
    }

    /// An error with a marker.
    pub fn marked(marker: ErrorMarker, message: impl Into<String>) -> Self {
        Self {
            marker: Some(marker),
            message: message.into(),
        }
    }
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PassError {}

/// Why a reconcile failed (drives the controller's backoff).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// A pass error (pods, services, RBAC, finalizer, status computation).
    #[error("{0}")]
    Pass(#[from] PassError),
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// The status could not be serialised.
    #[error("status serialisation failed: {0}")]
    Serialize(#[from] serde_json::Error),
    /// The cluster as the store keeps it did not decode again.
    #[error(transparent)]
    Stored(#[from] crate::stored::StoredDecodeError),
}

impl From<crate::status_writer::StatusWriteError> for ReconcileError {
    fn from(error: crate::status_writer::StatusWriteError) -> Self {
        match error {
            crate::status_writer::StatusWriteError::Api(e) => Self::Kube(e),
            crate::status_writer::StatusWriteError::Serialize(e) => Self::Serialize(e),
        }
    }
}
