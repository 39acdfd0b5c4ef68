//! The mTLS controller (KubeRay's `raycluster_mtls_controller.go`, auto-generated PKI only): for
//! every RayCluster with `tlsOptions.enabled` (gate `RayClusterMTLS`, cert-manager discovered) it
//! keeps a cert-manager PKI in the cluster's namespace, owned by the RayCluster:
//! self-signed Issuer -> CA Certificate -> CA Issuer -> head and worker leaf Certificates whose IP
//! SANs follow the cluster's pod IPs. A finalizer deletes the Secrets cert-manager wrote, which
//! garbage collection would not reach.
//!
//! Layout: [`names`] (names, labels, reasons, intervals), [`plan`] (pure: desired objects, update
//! and readiness decisions), [`readiness`] (what the RayCluster controller checks before creating
//! pods), [`feed`] (how the RayCluster controller's watches reach this controller),
//! [`controller`] (the kube-runtime controller and its executor).

pub mod controller;
pub mod feed;
pub mod names;
pub mod plan;
pub mod readiness;

pub use feed::MtlsFeed;

use ray_api::RayCluster;

/// `IsTLSEnabled` without the gate: `tlsOptions.enabled == true` (callers check the gate).
pub fn tls_requested(cluster: &RayCluster) -> bool {
    cluster.spec.tls_options.as_ref().and_then(|t| t.enabled) == Some(true)
}

/// Whether the cluster holds the mTLS cleanup finalizer.
pub fn has_mtls_finalizer(cluster: &RayCluster) -> bool {
    cluster
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == names::MTLS_CLEANUP_FINALIZER)
}
