//! The mTLS controller (KubeRay v1.7.0's `raycluster_mtls_controller.go`): for every RayCluster with
//! `tlsOptions.enabled` (gate `RayClusterMTLS`, cert-manager discovered) it keeps a cert-manager PKI in
//! the cluster's namespace, owned by the RayCluster: self-signed Issuer -> CA Certificate -> CA Issuer ->
//! head and worker leaf Certificates whose IP SANs follow the head and worker pod IPs. The Secrets
//! cert-manager writes get an owner reference to their Certificate, so deleting the RayCluster
//! garbage-collects the whole chain (no finalizer).
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

use kube::api::{ApiResource, GroupVersionKind};
use ray_api::RayCluster;

/// `IsTLSEnabled` without the gate: `tlsOptions.enabled == true` (callers check the gate).
pub fn tls_requested(cluster: &RayCluster) -> bool {
    cluster.spec.tls_options.as_ref().and_then(|t| t.enabled) == Some(true)
}

/// The `cert-manager.io/v1` resource of `kind` (`Issuer`, `Certificate`).
pub fn cert_manager_resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(names::CERT_MANAGER_GROUP, "v1", kind))
}
