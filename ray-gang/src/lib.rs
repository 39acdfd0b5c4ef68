//! Gang-scheduling objects for Ray clusters: Volcano and scheduler-plugins PodGroups, YuniKorn task
//! groups and KAI queues, as pure functions of KubeRay's `ray.io/v1` objects (see
//! `docs/gang-scheduling.md`).
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
//!
//! With `--batch-scheduler volcano`, a cluster in a Volcano queue gets a PodGroup sized for its head and
//! workers, and its pods join it (the Volcano guide's example):
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use ray_gang::{BatchScheduler, DesiredPodGroup, Parent};
//!
//! let cluster: ray_api::RayCluster = ray_api::yaml::from_yaml_str(r#"
//! apiVersion: ray.io/v1
//! kind: RayCluster
//! metadata:
//!   name: test-cluster-0
//!   namespace: default
//!   labels: {volcano.sh/queue-name: kuberay-test-queue}
//! spec:
//!   headGroupSpec:
//!     rayStartParams: {}
//!     template:
//!       spec:
//!         containers:
//!         - name: ray-head
//!           image: rayproject/ray
//!           resources:
//!             requests: {cpu: "1", memory: 2Gi}
//!             limits: {cpu: "1", memory: 5Gi}
//!   workerGroupSpecs:
//!   - groupName: worker
//!     replicas: 2
//!     minReplicas: 2
//!     maxReplicas: 2
//!     rayStartParams: {}
//!     template:
//!       spec:
//!         containers:
//!         - name: ray-worker
//!           image: rayproject/ray
//!           resources:
//!             requests: {cpu: "1", memory: 1Gi}
//!             limits: {cpu: "1", memory: 1Gi}
//! "#)?;
//! let scheduler = BatchScheduler::Volcano;
//!
//! // Submission hook: the PodGroup to create (or to compare with the live one through `plan_sync`).
//! let Some(DesiredPodGroup::Volcano(pod_group)) = scheduler.pod_group_for_cluster(&cluster)? else {
//!     panic!("Volcano gives every standalone RayCluster a PodGroup");
//! };
//! assert_eq!(pod_group.metadata.name.as_deref(), Some("ray-test-cluster-0-pg"));
//! assert_eq!(pod_group.spec.queue, "kuberay-test-queue");
//! assert_eq!(pod_group.spec.min_member, 3); // the head and two workers
//! let min_resources = pod_group.spec.min_resources.clone().unwrap_or_default();
//! assert_eq!(min_resources["cpu"].0, "3");
//! assert_eq!(min_resources["memory"].0, "4Gi"); // requests: 2Gi + 2 × 1Gi
//!
//! // Child-metadata hook: the head pod joins the gang.
//! let mut head = Pod::default();
//! scheduler.decorate_pod(Parent::Cluster(&cluster), &mut head, ray_api::constants::HEAD_GROUP_NAME);
//! let annotations = head.metadata.annotations.clone().unwrap_or_default();
//! assert_eq!(annotations["scheduling.k8s.io/group-name"], "ray-test-cluster-0-pg");
//! assert_eq!(annotations["volcano.sh/task-spec"], "headgroup");
//! assert_eq!(head.spec.and_then(|s| s.scheduler_name).as_deref(), Some("volcano"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Pure: no I/O, no environment, no clock.

pub mod constants;
pub mod error;
mod go_struct_json;
pub mod kai;
pub mod parent;
pub mod scheduler;
pub mod scheduler_plugins;
pub mod selection;
pub mod sizing;
pub mod submitter;
#[cfg(test)]
mod test_fixtures;
pub mod volcano;
pub mod yunikorn;

pub use error::{GangError, SelectionError};
pub use parent::{Child, GangLog, GangLogLevel, Parent};
pub use scheduler::{BatchScheduler, DesiredPodGroup};
pub use selection::{SchedulerConfig, select_scheduler, validate_config};
pub use volcano::{CleanupStep, LiveCluster, SyncPlan};
