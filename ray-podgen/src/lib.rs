//! Deterministic generation of the Kubernetes objects a Ray cluster is made of: pods, services,
//! the autoscaler sidecar and its RBAC, from a RayCluster spec. Pure: same input, byte-identical output.
//!
//! Entry points: [`PodGenerator`] (head and worker pods), [`service`] (head, serve, headless
//! services), [`ingress`] (or the OpenShift [`route`]), [`autoscaler::build_autoscaler_rbac`], [`gcs_ft`] (PVC, Redis cleanup
//! Job), [`rayjob`] and [`rayservice`] (what those controllers create), [`names`] (name rules).
//! Operator switches arrive as one [`PodGenConfig`]; randomness through [`random::SuffixSource`].

pub mod auth;
pub mod autoscaler;
pub mod cluster;
pub mod config;
pub mod containers;
pub mod env_names;
pub mod error;
pub mod gcs_ft;
pub mod hash;
pub mod ingress;
pub mod names;
pub mod pod;
pub mod probes;
pub mod random;
pub mod rayjob;
pub mod rayservice;
pub mod route;
pub mod service;
pub mod start_params;
pub mod tls;

pub use config::{FeatureGates, PodGenConfig};
pub use error::PodGenError;
pub use pod::{PodGenerator, WorkerPodTemplate, WorkerReplica, build_head_pod, build_worker_pod};

#[cfg(test)]
mod test_fixtures;
#[cfg(test)]
mod tests_pod;
#[cfg(test)]
mod tests_service;
#[cfg(test)]
mod tests_tls;
