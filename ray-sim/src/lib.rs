//! The hollow Ray that plugs into `kube-sim`: a hollow Ray head per RayCluster with the Ray dashboard HTTP API
//! (jobs, serve applications, GCS health) that KubeRay's RayJob and RayService controllers talk to, served
//! through the simulated service proxy (`/api/v1/namespaces/{ns}/services/{head-svc}:dashboard/proxy/...`),
//! plus resource demand and a hollow autoscaler for clusters with `enableInTreeAutoscaling`.
//!
//! It uses only `kube-sim`'s public extension points: a [`kube_sim::ProxyBackend`] for the head Services, a
//! [`kube_sim::agents::PodExitHook`] for submitter pods, and the simulator's store (through
//! [`kube_sim::SimHandle::store`]) to watch RayClusters and Ray pods and to patch RayClusters. The `kube-sim`
//! command (`src/bin/kube-sim.rs`) lives in this package so that `kube-sim serve` can attach it.
//!
//! - [`HollowRayHead`] is one Ray head's state (jobs, serve applications, actors) and its HTTP API: the
//!   dashboard job API as KubeRay's RayJob controller and submitter pods call it (`/api/jobs/...`), the serve
//!   API as its RayService controller calls it (`/api/serve/applications/`), `/api/version` and
//!   `/api/gcs_healthz`, and the serve proxy's `/-/healthz` and `/-/routes`. It implements
//!   [`kube_sim::ProxyBackend`].
//! - [`HollowRay`] attaches heads to a running simulator: it watches RayClusters and Ray pods, keeps one
//!   [`HollowRayHead`] per RayCluster whose head pod is Running (a new head pod starts a fresh head, as a head
//!   restart without GCS fault tolerance would), tells each head which Ray nodes (Running head and worker pods)
//!   it has, routes every head Service (`ray.io/node-type=head`) to the head of the cluster its selector points
//!   at, and registers a [`kube_sim::agents::PodExitHook`] that plays the part of a submitter pod's
//!   `ray job submit` / `ray job logs --follow` (see [`submitter`]).
//! - A dashboard can be slow: [`HollowRayOptions::dashboard_delay`] (or a RayCluster's
//!   [`DASHBOARD_DELAY_ANNOTATION`]) holds every dashboard request that long, and [`DashboardLoad`] counts the
//!   requests in flight by kind ([`dashboard_load`]).
//! - Actors ([`actors`]) are resource demand as Ray sees it: created and ended through
//!   `/api/hollow/actors`, placed on a node with room or left pending.
//! - The hollow autoscaler ([`autoscaler`]) plays the head pod's `autoscaler` sidecar: every
//!   [`HollowAutoscalerOptions::interval`] it runs `ray_autoscale`'s planner over the pending actors and idle
//!   workers and patches the RayCluster's `replicas` / `scaleStrategy.workersToDelete`.
//!
//! Job and application progress is computed from the clock when asked (no background tasks per job):
//! a job is `PENDING` for [`HollowRayOptions::job_pending`], `RUNNING` for [`HollowRayOptions::job_run`] (or
//! `N` seconds when its entrypoint contains `sleep N`), then `SUCCEEDED`, or `FAILED` when the entrypoint
//! contains `exit N` with `N ≠ 0`. Serve applications are `DEPLOYING` for [`HollowRayOptions::serve_deploy`]
//! after each change of their config, then `RUNNING`.
//!
//! Node capacities and the autoscaler's decisions come from `ray_api` / `ray_autoscale` (the same logical
//! resources and planner the rest of the workspace uses); everything else here only speaks JSON.
//!
//! # Example
//!
//! Attach the hollow Ray to an in-process simulator. Heads come up as RayClusters' head pods start Running
//! (the watcher retries until the RayCluster CRD is installed, e.g. through [`kube_sim::SimConfig::crd_files`]);
//! a head can also be driven directly, without a cluster:
//!
//! ```
//! use ray_sim::{HollowRay, HollowRayHead, HollowRayOptions, JobStatus, JobSubmitRequest};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sim = kube_sim::SimServer::start(kube_sim::SimConfig::default()).await?;
//! let ray = HollowRay::attach(&sim, HollowRayOptions::default());
//! assert!(ray.clusters().is_empty()); // no RayCluster has a Running head pod yet
//! ray.detach(&sim);
//!
//! let head = HollowRayHead::new(HollowRayOptions::default());
//! let submitted = head.submit_job(JobSubmitRequest { entrypoint: "python job.py".into(), ..Default::default() })?;
//! let job = head.job(&submitted.submission_id).ok_or("job not found")?;
//! assert_eq!(job.status, JobStatus::Pending);
//! # Ok(())
//! # }
//! ```

pub mod actors;
pub mod autoscaler;
pub mod dashboard_load;
mod head;
mod manager;
pub mod submitter;
pub mod wire;

pub use actors::{ActorError, ActorInfo, ActorRequest, NodeInfo, RayNode};
pub use autoscaler::{AutoscalerClock, HollowAutoscalerOptions, ScaleEvent};
pub use dashboard_load::{CallCounts, DASHBOARD_DELAY_ANNOTATION, DashboardCall, DashboardLoad};
pub use head::{
    AppStatus, DEFAULT_DASHBOARD_PORT, DEFAULT_SERVE_PORT, DeploymentStatus, HollowRayHead, JobInfo, JobStatus,
    JobSubmitRequest, JobSubmitResponse, RayHeadError, entrypoint_exit_code, entrypoint_sleep,
};
pub use manager::{CLUSTER_LABEL, HollowRay, HollowRayOptions, NODE_TYPE_LABEL, RECORDED_RAY_VERSION, rayclusters_gvr};
