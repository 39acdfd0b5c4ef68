//! KubeRay's `ray.io/v1` API for Rust: the RayCluster, RayJob, RayService and RayCronJob types,
//! their CRD defaults and KubeRay's validation rules.
//!
//! Pure: no I/O, no environment reads. Other controllers can depend on this crate alone.

pub mod constants;
pub mod quantity;

pub mod common;
pub mod crds;
pub mod defaults;
pub mod feature_gates;
pub mod raycluster;
pub mod raycronjob;
pub mod rayjob;
pub mod rayservice;
mod schema_util;
pub mod strict;
mod string_enum;
pub mod validation;
pub mod yaml;

pub use common::*;
pub use raycluster::*;
pub use raycronjob::*;
pub use rayjob::*;
pub use rayservice::*;
