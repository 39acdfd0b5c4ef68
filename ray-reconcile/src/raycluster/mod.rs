//! The RayCluster controller. Like the RayJob and RayService controllers it is a pure plan, a thin
//! executor and the wiring: [`plan`] (which pods to create or delete, with KubeRay's events and
//! errors) and [`status`] (the status a pass leaves behind) decide without any server; [`executor`]
//! carries one pass out through kube's `Api`: [`desired`] builds, once per pass and without a server,
//! everything the pass wants to exist besides the pod changes (autoscaler RBAC, dashboard Ingress
//! or Route, auth Secret, services, GCS PVC, PodGroup, and the pods' generator), [`children`]
//! compares that with what exists and writes the difference, and
//! [`gcs_ft`] the Redis cleanup finalizer; [`controller`] wires kube-runtime's `Controller` to the
//! label-selected Pod and Service watches; [`error`] is the error of a pass (with KubeRay's
//! `ReplicaFailure` markers) and [`validate`] the checks a pass runs first.
//!
//! The caches: [`index`] keeps one compact record per pod and head service ([`observed`]), decoded
//! from the lean pod of [`slim`]; [`expectations`] prevents double creates and deletes while the
//! watch catches up. [`podgen`] is the one place the controller asks `ray_podgen` for pods.

pub mod children;
pub mod controller;
pub mod desired;
pub mod error;
pub mod executor;
pub mod expectations;
pub mod gcs_ft;
pub mod index;
pub mod observed;
pub mod plan;
pub mod podgen;
pub mod recreate;
pub mod rolling;
pub mod slim;
pub mod status;
#[cfg(test)]
mod test_fixtures;
pub mod upgrade_status;
pub mod validate;
