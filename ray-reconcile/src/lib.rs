//! The RayCluster controller: a pure plan (observed state to pod operations and status) and an
//! executor that carries the plan out through kube's `Api`, fed by memory-lean, label-selected
//! watches that keep one compact record per pod.
//!
//! Layout: [`plan`] and [`status`] decide (pure, tested without a server); [`executor`] acts;
//! [`index`] and [`observed`] are the caches; [`expectations`] prevents double creates/deletes;
//! [`controller`] wires watches, triggers and the kube-runtime `Controller`.

pub mod admission;
pub mod children;
pub mod cluster_feed;
pub mod conditions;
pub mod decode;
pub mod config;
pub mod controller;
pub mod error;
pub mod event_filter;
pub mod events;
pub mod executor;
pub mod expectations;
pub mod gcs_ft;
pub mod index;
pub mod metrics;
pub mod mtls;
pub mod observed;
pub mod plan;
pub mod podgen;
pub mod rayjob;
pub mod rayservice;
pub mod runtime_util;
pub mod slim;
pub mod status;
pub mod validate;

pub use config::{FeatureGates, ReconcileConfig};
