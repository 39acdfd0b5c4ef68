//! Gang-scheduling objects for Ray clusters: Volcano and scheduler-plugins PodGroups, YuniKorn task
//! groups and KAI queues, as pure functions of KubeRay's `ray.io/v1` objects (gang.md).
//!
//! # Overview
//! * [`selection`]: from the operator flags to one [`BatchScheduler`] (with KubeRay's error texts).
//! * [`BatchScheduler`]: KubeRay's four plugin hooks (submission, child metadata, completion
//!   cleanup, name) as pure methods; the controller performs the GET / CREATE / UPDATE they plan.
//! * Per scheduler: [`volcano`], [`yunikorn`], [`scheduler_plugins`], [`kai`] (typed foreign
//!   resources `volcano::PodGroup`, `volcano::Queue`, `scheduler_plugins::PodGroup`).
//! * [`sizing`]: replica and resource totals of a cluster (exact quantities from
//!   [`ray_api::quantity`]); [`submitter`]: the RayJob submitter's resources.
//!
//! # Typical use (RayCluster controller)
//! ```
//! use ray_gang::{BatchScheduler, Parent};
//! # fn demo(cluster: &ray_api::RayCluster, head: &mut k8s_openapi::api::core::v1::Pod) -> Result<(), ray_gang::GangError> {
//! let scheduler = BatchScheduler::Volcano;
//! if let Some(desired) = scheduler.pod_group_for_cluster(cluster)? {
//!     // GET the existing object, then: scheduler.plan_sync(existing.as_ref(), &desired)
//!     let _ = desired;
//! }
//! scheduler.decorate_pod(Parent::Cluster(cluster), head, ray_api::constants::HEAD_GROUP_NAME);
//! # Ok(()) }
//! ```
//!
//! Pure: no I/O, no environment, no clock.

pub mod constants;
pub mod error;
#[cfg(test)]
mod fixtures;
mod go_struct_json;
pub mod kai;
pub mod parent;
pub mod scheduler;
pub mod scheduler_plugins;
pub mod selection;
pub mod sizing;
pub mod submitter;
pub mod volcano;
pub mod yunikorn;

pub use error::{GangError, SelectionError};
pub use parent::{Child, GangLog, GangLogLevel, Parent};
pub use scheduler::{BatchScheduler, DesiredPodGroup};
pub use selection::{SchedulerConfig, select_scheduler, validate_config};
pub use volcano::{CleanupStep, LiveCluster, SyncPlan};
