//! A hollow Ray head: the Ray dashboard HTTP API (jobs, serve applications, GCS health) that KubeRay's RayJob
//! and RayService controllers talk to, served through the simulated service proxy
//! (`/api/v1/namespaces/{ns}/services/{head-svc}:dashboard/proxy/...`).
//!
//! - [`HollowRayHead`] is one Ray head's state (jobs, serve applications) and its HTTP API
//!   (spec `job-service.md` §3). It implements [`crate::ProxyBackend`].
//! - [`HollowRay`] attaches heads to a running simulator: it watches RayClusters and head pods, keeps one
//!   [`HollowRayHead`] per RayCluster whose head pod is Running (a new head pod starts a fresh head, as a head
//!   restart without GCS fault tolerance would), routes every head Service (`ray.io/node-type=head`) to the head
//!   of the cluster its selector points at, and registers a [`crate::agents::PodExitHook`] that plays the part
//!   of a submitter pod's `ray job submit` / `ray job logs --follow` (see [`submitter`]).
//!
//! Job and application progress is computed from the clock when asked (no background tasks per job):
//! a job is `PENDING` for [`HollowRayOptions::job_pending`], `RUNNING` for [`HollowRayOptions::job_run`] (or
//! `N` seconds when its entrypoint contains `sleep N`), then `SUCCEEDED`, or `FAILED` when the entrypoint
//! contains `exit N` with `N ≠ 0`. Serve applications are `DEPLOYING` for [`HollowRayOptions::serve_deploy`]
//! after each change of their config, then `RUNNING`.
//!
//! This module depends on no Ray or operator crate; it only speaks JSON.

mod head;
mod manager;
pub mod submitter;

pub use head::{
    AppStatus, DEFAULT_DASHBOARD_PORT, DEFAULT_SERVE_PORT, DeploymentStatus, HollowRayHead, JobInfo, JobStatus,
    JobSubmitRequest, JobSubmitResponse, RayHeadError, entrypoint_exit_code, entrypoint_sleep,
};
pub use manager::{CLUSTER_LABEL, HollowRay, HollowRayOptions, NODE_TYPE_LABEL, rayclusters_gvr};
