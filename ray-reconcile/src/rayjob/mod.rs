//! The RayJob controller (job-service spec §1): [`plan`] is the pure `jobDeploymentStatus` state
//! machine, [`dashboard`] the
//! dashboard job API client, [`events`] the event reasons, [`metrics`] the `kuberay_job_*` series and
//! [`controller`] the executor and kube-runtime controller.

pub mod controller;
pub mod dashboard;
pub mod events;
pub mod metrics;
pub mod plan;

pub use plan::{
    DashboardJobInfo, DashboardObservation, ExecutionDuration, RayJobAction, RayJobObservation, RayJobPlan,
    RayJobPlanConfig, RayJobPlanError, SidecarObservation, SubmitterObservation, execution_duration, plan_ray_job,
};
