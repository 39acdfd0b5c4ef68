//! KubeRay's `ray.io/v1` API for Rust: the RayCluster, RayJob, RayService and RayCronJob types,
//! their CRD defaults and KubeRay's validation rules.
//!
//! Pure: no I/O, no environment reads. Other controllers can depend on this crate alone.

pub mod quantity;
