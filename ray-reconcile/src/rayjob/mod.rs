//! The RayJob controller (behaviour: `docs/rayjob.md`), in the same shape as the RayCluster and
//! RayService controllers:
//!
//! - [`plan`] is the pure `jobDeploymentStatus` state machine: from the RayJob and what was
//!   observed, the actions of a pass and the new status.
//! - [`executor`] runs one pass (observe, plan, act, write the status); the objects the job owns
//!   are written in [`children`], the batch scheduler's hooks run in [`batch_scheduling`], and
//!   [`dashboard`] is the dashboard job API client, whose job-info queries [`job_info`] runs in the
//!   background so that a slow dashboard holds no reconcile worker.
//! - [`controller`] wires kube-runtime's `Controller`; [`error`] says why a pass failed,
//!   [`events`] holds the event reasons and notes, [`metrics`] the `kuberay_job_*` series.

pub mod batch_scheduling;
pub mod children;
pub mod controller;
pub mod dashboard;
pub mod error;
pub mod events;
pub mod executor;
pub mod job_info;
pub mod metrics;
pub mod plan;

pub use plan::{
    DashboardJobInfo, DashboardObservation, ExecutionDuration, RayJobAction, RayJobObservation, RayJobPlan,
    RayJobPlanConfig, RayJobPlanError, SidecarObservation, SubmitterObservation, execution_duration, plan_ray_job,
};
