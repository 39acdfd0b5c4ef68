//! The RayJob controller (job-service spec §1): [`plan`] is the pure `jobDeploymentStatus` state
//! machine, [`dashboard`] the
//! dashboard job API client and [`controller`] the executor and kube-runtime controller.

pub mod controller;
pub mod dashboard;
pub mod plan;

pub use plan::{
    DashboardJobInfo, DashboardObservation, RayJobAction, RayJobObservation, RayJobPlan, RayJobPlanConfig,
    RayJobPlanError, SubmitterObservation, plan_ray_job,
};
