//! Replica math for Ray worker groups (desired pods, `workersToDelete`, surplus deletion) and the
//! Ray autoscaler's demand-to-replicas planner. Pure: the clock is an input.
//!
//! Operator side (what the RayCluster controller decides from the spec and the observed pods):
//! [`replicas`] (desired pod counts and status totals), [`pod_health`] (`shouldDeletePod`),
//! [`head`], [`worker_group`] and [`multi_host`] (per-group delete/create decisions).
//!
//! Autoscaler side: [`planner`] turns pending resource demands and idle times into new
//! `replicas` / `workersToDelete` values; [`idle`] turns per-iteration usage samples into the
//! idle-since instants it needs.

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
