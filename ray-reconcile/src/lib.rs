//! KubeRay's controllers: RayCluster, RayJob and RayService, plus the cert-manager mTLS controller
//! and the validating-webhook answers.
//!
//! # Layout
//!
//! Each controller lives in its own module and has the same shape: a pure `plan` (what a pass
//! should do and which status it leaves behind, tested without a server), an `executor` that
//! carries one pass out through kube's `Api`, and a `controller` that wires kube-runtime's
//! `Controller` to its watches and holds the shared context.
//!
//! - [`raycluster`]: pods, services, autoscaler RBAC, ingress, auth secret, GCS PVC and PodGroups
//!   of a RayCluster, fed by memory-lean, label-selected watches that keep one compact record per
//!   pod; its watch also feeds the other controllers ([`cluster_feed`], [`mtls::feed`]).
//! - [`rayjob`]: the `jobDeploymentStatus` state machine, the dashboard job client.
//! - [`rayservice`]: blue/green and incremental upgrades, the serve config, the serve API client.
//! - [`mtls`]: the cert-manager PKI of RayClusters with `tlsOptions.enabled`.
//! - [`networkpolicy`]: NetworkPolicies per RayCluster (gate `RayClusterNetworkPolicy`).
//! - [`raycronjob`]: RayJobs on a cron schedule (gate `RayCronJob`).
//! - [`admission`]: KubeRay's validating webhooks, one AdmissionReview in and out, without I/O.
//!
//! What the controllers share stays at the root: settings ([`config`]), events ([`events`],
//! [`event_filter`], [`recorder`]), metrics ([`metrics`]), status conditions ([`conditions`]), the runtime
//! plumbing ([`runtime_util`]), what an API error means ([`kube_errors`]), the one way to write
//! finalizers ([`finalizers`]) and status ([`status_writer`], waiting for the cache to show it: [`stale_status`]), PodGroup sync ([`pod_group_sync`]), how
//! watches read objects ([`decode`]) and how stores keep them ([`stored`]).

pub mod admission;
pub mod cluster_feed;
pub mod conditions;
pub mod config;
pub mod decode;
pub mod event_filter;
pub mod events;
pub mod fair_controller;
pub mod finalizers;
mod json_path;
pub mod kube_errors;
pub mod metrics;
pub mod mtls;
pub mod networkpolicy;
pub mod pod_group_sync;
pub mod raycluster;
pub mod raycronjob;
pub mod rayjob;
pub mod rayservice;
pub mod rbac;
pub mod recorder;
pub mod runtime_util;
pub mod scoped_stores;
pub mod stale_status;
pub mod status_writer;
pub mod stored;

pub use config::{FeatureGates, ReconcileConfig};
