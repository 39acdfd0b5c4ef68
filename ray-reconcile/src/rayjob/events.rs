//! The Kubernetes events the RayJob controller publishes on the RayJob (cluster and submitter
//! lifecycle, validation, cleanup), with KubeRay's reasons and note wording. Severity and actions
//! reuse [`crate::events`].

/// Controller name in the events' `reportingController`.
pub const RAYJOB_CONTROLLER: &str = "rayjob-controller";

/// Event reasons.
pub mod reason {
    /// The RayJob's metadata is invalid.
    pub const INVALID_RAY_JOB_METADATA: &str = "InvalidRayJobMetadata";
    /// The RayJob's spec is invalid.
    pub const INVALID_RAY_JOB_SPEC: &str = "InvalidRayJobSpec";
    /// The RayJob's status is invalid.
    pub const INVALID_RAY_JOB_STATUS: &str = "InvalidRayJobStatus";
    /// The RayCluster was created.
    pub const CREATED_RAY_CLUSTER: &str = "CreatedRayCluster";
    /// Creating the RayCluster failed.
    pub const FAILED_TO_CREATE_RAY_CLUSTER: &str = "FailedToCreateRayCluster";
    /// The RayCluster was deleted.
    pub const DELETED_RAY_CLUSTER: &str = "DeletedRayCluster";
    /// Deleting the RayCluster failed.
    pub const FAILED_TO_DELETE_RAY_CLUSTER: &str = "FailedToDeleteRayCluster";
    /// The RayCluster was updated (worker groups suspended by `DeleteWorkers`).
    pub const UPDATED_RAY_CLUSTER: &str = "UpdatedRayCluster";
    /// The clusterSelector names a RayCluster that does not exist.
    pub const RAY_CLUSTER_NOT_FOUND: &str = "RayClusterNotFound";
    /// The submitter Job was created.
    pub const CREATED_RAY_JOB_SUBMITTER: &str = "CreatedRayJobSubmitter";
    /// Creating the submitter Job failed.
    pub const FAILED_TO_CREATE_RAY_JOB_SUBMITTER: &str = "FailedToCreateRayJobSubmitter";
    /// The submitter Job was deleted.
    pub const DELETED_RAY_JOB_SUBMITTER: &str = "DeletedRayJobSubmitter";
    /// Deleting the submitter Job failed.
    pub const FAILED_TO_DELETE_RAY_JOB_SUBMITTER: &str = "FailedToDeleteRayJobSubmitter";
}

/// `Created RayCluster <ns>/<name>`.
pub fn created_cluster(namespace: &str, name: &str) -> String {
    format!("Created RayCluster {namespace}/{name}")
}

/// `Failed to create RayCluster <ns>/<name>: <err>`.
pub fn failed_to_create_cluster(namespace: &str, name: &str, error: &dyn std::fmt::Display) -> String {
    format!("Failed to create RayCluster {namespace}/{name}: {error}")
}

/// `Deleted cluster <ns>/<name>`.
pub fn deleted_cluster(namespace: &str, name: &str) -> String {
    format!("Deleted cluster {namespace}/{name}")
}

/// `Failed to delete cluster <ns>/<name>: <err>`.
pub fn failed_to_delete_cluster(namespace: &str, name: &str, error: &dyn std::fmt::Display) -> String {
    format!("Failed to delete cluster {namespace}/{name}: {error}")
}

/// The `DeleteWorkers` note.
pub fn suspended_worker_groups(namespace: &str, name: &str) -> String {
    format!("Set the `suspend` field to true for all worker groups in cluster {namespace}/{name}")
}

/// The clusterSelector note.
pub fn selected_cluster_not_found(namespace: &str, name: &str) -> String {
    format!("RayCluster {namespace}/{name} set in the clusterSelector is not found. It must be created manually")
}

/// `Created Kubernetes Job <ns>/<name>`.
pub fn created_submitter(namespace: &str, name: &str) -> String {
    format!("Created Kubernetes Job {namespace}/{name}")
}

/// `Failed to create new Kubernetes Job <ns>/<name>: <err>`.
pub fn failed_to_create_submitter(namespace: &str, name: &str, error: &dyn std::fmt::Display) -> String {
    format!("Failed to create new Kubernetes Job {namespace}/{name}: {error}")
}

/// `Deleted submitter K8s Job <ns>/<name>`.
pub fn deleted_submitter(namespace: &str, name: &str) -> String {
    format!("Deleted submitter K8s Job {namespace}/{name}")
}

/// `Failed to delete submitter K8s Job <ns>/<name>: <err>`.
pub fn failed_to_delete_submitter(namespace: &str, name: &str, error: &dyn std::fmt::Display) -> String {
    format!("Failed to delete submitter K8s Job {namespace}/{name}: {error}")
}
