//! Replica math for Ray worker groups (desired pods, `workersToDelete`, surplus deletion) and the
//! Ray autoscaler's demand-to-replicas planner. Pure: the clock is an input.
//!
//! Operator side (what the RayCluster controller decides from the spec and the observed pods):
//! [`replicas`] (desired pod counts and status totals), [`pod_health`] (`shouldDeletePod`),
//! [`head`], [`worker_group`] and [`multi_host`] (per-group delete/create decisions).
//!
//! Autoscaler side: [`planner`] turns pending resource demands and idle times into new
//! `replicas` / `workersToDelete` values; [`idle`] turns per-iteration usage samples into the
//! idle-since instants it needs. [`from_api`] bridges both to `ray_api` types. How the two sides share
//! the spec is described in `docs/autoscaling.md`.
//!
//! # Example
//!
//! The operator's decision for one worker group: `replicas` 8 is clamped to `maxReplicas` 5, the pod
//! named in `workersToDelete` goes, and without autoscaling the surplus is trimmed too.
//!
//! ```
//! use ray_autoscale::{ObservedPod, WorkerGroupInput, WorkerGroupPlan};
//! use ray_autoscale::{desired_pods, from_api, plan_worker_group, surplus_deletion_enabled};
//!
//! let cluster: ray_api::RayCluster = ray_api::yaml::from_yaml_str(r#"
//! apiVersion: ray.io/v1
//! kind: RayCluster
//! metadata: {name: demo}
//! spec:
//!   headGroupSpec:
//!     rayStartParams: {}
//!     template: {spec: {containers: [{name: ray-head, image: rayproject/ray}]}}
//!   workerGroupSpecs:
//!   - groupName: small-group
//!     replicas: 8
//!     minReplicas: 1
//!     maxReplicas: 5
//!     scaleStrategy: {workersToDelete: [worker-a]}
//!     rayStartParams: {}
//!     template: {spec: {containers: [{name: ray-worker, image: rayproject/ray}]}}
//! "#)?;
//! let group = &cluster.spec.worker_group_specs.as_deref().unwrap_or_default()[0];
//! let replicas = from_api::group_replicas(group);
//! assert_eq!(desired_pods(&replicas), 5);
//!
//! // Seven pods are running.
//! let pods: Vec<ObservedPod> = ["worker-a", "worker-b", "worker-c", "worker-d", "worker-e", "worker-f", "worker-g"]
//!     .into_iter()
//!     .map(ObservedPod::running)
//!     .collect();
//! let input = WorkerGroupInput {
//!     replicas: &replicas,
//!     workers_to_delete: from_api::workers_to_delete(group),
//!     pods: &pods,
//!     surplus_deletion: surplus_deletion_enabled(from_api::autoscaling_enabled(&cluster.spec), false),
//!     multi_host_indexing: true,
//!     create_limit: usize::MAX,
//! };
//! let WorkerGroupPlan::Scale(step) = plan_worker_group(&input) else {
//!     panic!("a healthy single-host group scales");
//! };
//! assert_eq!(step.delete_by_name, ["worker-a"]);
//! assert_eq!(step.running, 6);
//! assert_eq!(step.surplus, ["worker-b"]); // the first pod in list order
//! assert!(step.create.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cluster_resources;
pub mod from_api;
pub mod head;
pub mod idle;
pub mod logical;
pub mod multi_host;
pub mod observed;
pub mod planner;
pub mod pod_health;
pub mod replicas;
pub mod worker_group;

pub use cluster_resources::{StatusResources, desired_resources, desired_status_resources, min_resources};
pub use from_api::{apply_plan, group_replicas, planner_input};
pub use head::{HeadPlan, head_restart_disabled, plan_head};
pub use idle::IdleTracker;
pub use logical::{LogicalResourceError, head_logical_resources, worker_logical_resources};
pub use multi_host::{MultiHostOutcome, MultiHostPlan, NewReplica};
pub use observed::{ObservedPod, PodPhase, RestartPolicy};
pub use planner::{Plan, PlannerInput, plan};
pub use pod_health::{NodeType, UnhealthyReason, should_delete_pod};
pub use replicas::{GroupReplicas, cluster_desired_replicas, cluster_max_replicas, cluster_min_replicas, desired_pods};
pub use worker_group::{
    DeletionReason, NewWorker, PodDeletion, ScalePlan, WorkerGroupInput, WorkerGroupPlan, plan_worker_group,
    random_pod_delete_flag, scale_step, surplus_deletion_enabled,
};
