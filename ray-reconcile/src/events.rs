//! The events the controllers emit: KubeRay's types, actions and note wording (and the RayCluster
//! controller's reasons), as plain values a plan returns and the executor publishes.

/// Event severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

/// One event about a RayCluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// Severity.
    pub severity: Severity,
    /// Reason (PascalCase).
    pub reason: &'static str,
    /// Action (PascalCase).
    pub action: &'static str,
    /// Human-readable note.
    pub note: String,
}

impl EventSpec {
    /// A `Normal` event.
    pub fn normal(reason: &'static str, action: &'static str, note: impl Into<String>) -> Self {
        Self {
            severity: Severity::Normal,
            reason,
            action,
            note: note.into(),
        }
    }

    /// A `Warning` event.
    pub fn warning(reason: &'static str, action: &'static str, note: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            reason,
            action,
            note: note.into(),
        }
    }
}

/// Event actions.
pub mod action {
    /// Validation.
    pub const VALIDATE: &str = "Validate";
    /// Object creation.
    pub const CREATE: &str = "Create";
    /// Object deletion.
    pub const DELETE: &str = "Delete";
    /// Object update.
    pub const UPDATE: &str = "Update";
    /// Finalizer cleanup.
    pub const CLEANUP: &str = "Cleanup";
    /// A reconcile pass as a whole (mTLS controller).
    pub const RECONCILE: &str = "Reconcile";
}

/// Event reasons.
pub mod reason {
    /// Invalid metadata.
    pub const INVALID_RAY_CLUSTER_METADATA: &str = "InvalidRayClusterMetadata";
    /// Invalid spec.
    pub const INVALID_RAY_CLUSTER_SPEC: &str = "InvalidRayClusterSpec";
    /// Invalid status.
    pub const INVALID_RAY_CLUSTER_STATUS: &str = "InvalidRayClusterStatus";
    /// Head pod created.
    pub const CREATED_HEAD_POD: &str = "CreatedHeadPod";
    /// Head pod creation failed.
    pub const FAILED_TO_CREATE_HEAD_POD: &str = "FailedToCreateHeadPod";
    /// Head pod deleted.
    pub const DELETED_HEAD_POD: &str = "DeletedHeadPod";
    /// Head pod deletion failed.
    pub const FAILED_TO_DELETE_HEAD_POD: &str = "FailedToDeleteHeadPod";
    /// Worker pod created.
    pub const CREATED_WORKER_POD: &str = "CreatedWorkerPod";
    /// Worker pod creation failed.
    pub const FAILED_TO_CREATE_WORKER_POD: &str = "FailedToCreateWorkerPod";
    /// Worker pod deleted.
    pub const DELETED_WORKER_POD: &str = "DeletedWorkerPod";
    /// Worker pod deletion failed.
    pub const FAILED_TO_DELETE_WORKER_POD: &str = "FailedToDeleteWorkerPod";
    /// Suspended worker group wipe failed.
    pub const FAILED_TO_DELETE_WORKER_POD_COLLECTION: &str = "FailedToDeleteWorkerPodCollection";
    /// Pods wiped.
    pub const DELETED_POD: &str = "DeletedPod";
    /// Pod wipe failed.
    pub const FAILED_TO_DELETE_POD_COLLECTION: &str = "FailedToDeletePodCollection";
    /// Service created.
    pub const CREATED_SERVICE: &str = "CreatedService";
    /// Service creation failed.
    pub const FAILED_TO_CREATE_SERVICE: &str = "FailedToCreateService";
    /// Autoscaler service account created.
    pub const CREATED_SERVICE_ACCOUNT: &str = "CreatedServiceAccount";
    /// Autoscaler service account creation failed.
    pub const FAILED_TO_CREATE_SERVICE_ACCOUNT: &str = "FailedToCreateServiceAccount";
    /// User-named autoscaler service account missing.
    pub const AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND: &str = "AutoscalerServiceAccountNotFound";
    /// Autoscaler role created.
    pub const CREATED_ROLE: &str = "CreatedRole";
    /// Autoscaler role creation failed.
    pub const FAILED_TO_CREATE_ROLE: &str = "FailedToCreateRole";
    /// Autoscaler role binding created.
    pub const CREATED_ROLE_BINDING: &str = "CreatedRoleBinding";
    /// Autoscaler role binding creation failed.
    pub const FAILED_TO_CREATE_ROLE_BINDING: &str = "FailedToCreateRoleBinding";
    /// Redis cleanup Job created.
    pub const CREATED_REDIS_CLEANUP_JOB: &str = "CreatedRedisCleanupJob";
    /// Redis cleanup Job creation failed.
    pub const FAILED_TO_CREATE_REDIS_CLEANUP_JOB: &str = "FailedToCreateRedisCleanupJob";
    /// Finalizer force-removed after the deletion timeout.
    pub const FORCE_DELETED_STUCK_CLUSTER: &str = "ForceDeletedStuckCluster";
    /// Dashboard Ingress created.
    pub const CREATED_INGRESS: &str = "CreatedIngress";
    /// Dashboard Ingress creation failed (or a foreign Ingress holds its name).
    pub const FAILED_TO_CREATE_INGRESS: &str = "FailedToCreateIngress";
    /// Drifted dashboard Ingress updated.
    pub const UPDATED_INGRESS: &str = "UpdatedIngress";
    /// Dashboard Ingress update failed.
    pub const FAILED_TO_UPDATE_INGRESS: &str = "FailedToUpdateIngress";
    /// Dashboard OpenShift Route created.
    pub const CREATED_ROUTE: &str = "CreatedRoute";
    /// Dashboard OpenShift Route creation failed.
    pub const FAILED_TO_CREATE_ROUTE: &str = "FailedToCreateRoute";
    /// GCS storage PVC created.
    pub const CREATED_PVC: &str = "CreatedPVC";
    /// GCS storage PVC creation failed, a user claim is missing, or the claim drifted.
    pub const FAILED_TO_CREATE_PVC: &str = "FailedToCreatePVC";
    /// Worker creation paused: as many of the cluster's worker pods as the limit allows wait for a node
    /// (ours; KubeRay has no such limit).
    pub const WAITING_FOR_NODES: &str = "WaitingForNodes";
}
