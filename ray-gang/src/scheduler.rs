//! [`BatchScheduler`]: the operator's one batch scheduler and KubeRay's four plugin hooks as pure
//! functions. The controller does the I/O around them:
//!
//! | KubeRay hook | here |
//! |---|---|
//! | `Name()` | [`BatchScheduler::plugin_name`] |
//! | `DoBatchSchedulingOnSubmission(cluster)` | [`BatchScheduler::pod_group_for_cluster`] then the variant's `plan_sync` |
//! | `DoBatchSchedulingOnSubmission(job)` | [`BatchScheduler::pod_group_for_job`] then `plan_sync` |
//! | `AddMetadataToChildResource` | [`BatchScheduler::decorate_pod`], [`BatchScheduler::decorate_pod_template`], [`BatchScheduler::decorate_cluster`] |
//! | `CleanupOnCompletion(job)` | [`BatchScheduler::cleanup_step`], then [`BatchScheduler::cleanup_pod_group`] and `plan_sync` |

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use ray_api::{RayCluster, RayJob};

use crate::constants::{
    DEFAULT_PLUGIN, KAI_PLUGIN, KAI_SCHEDULER_NAME, SCHEDULER_PLUGINS_SCHEDULER_NAME, VOLCANO_PLUGIN,
    VOLCANO_SCHEDULER_NAME, YUNIKORN_PLUGIN, YUNIKORN_SCHEDULER_NAME,
};
use crate::error::GangError;
use crate::parent::{Child, GangLog, Parent};
use crate::volcano::{CleanupStep, LiveCluster, SyncPlan};
use crate::{kai, scheduler_plugins, volcano, yunikorn};

/// The batch scheduler the operator runs with (exactly one per operator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BatchScheduler {
    /// No batch scheduler: every hook is a no-op and pods keep their template's `schedulerName`.
    #[default]
    Default,
    /// Volcano PodGroups for every RayCluster and RayJob.
    Volcano,
    /// YuniKorn labels and task-group annotations.
    YuniKorn,
    /// scheduler-plugins coscheduling PodGroups for gang-labelled RayClusters.
    SchedulerPlugins,
    /// KAI queue labels.
    Kai,
}

/// A scheduler object the operator creates or updates.
#[derive(Clone, Debug, PartialEq)]
pub enum DesiredPodGroup {
    /// `scheduling.volcano.sh/v1beta1` PodGroup (create, then update `minMember`/`minResources`).
    Volcano(volcano::PodGroup),
    /// `scheduling.x-k8s.io/v1alpha1` PodGroup (create only).
    SchedulerPlugins(scheduler_plugins::PodGroup),
}

impl DesiredPodGroup {
    /// The object as JSON (for rendering).
    pub fn to_json(&self) -> serde_json::Value {
        let value = match self {
            DesiredPodGroup::Volcano(pg) => serde_json::to_value(pg),
            DesiredPodGroup::SchedulerPlugins(pg) => serde_json::to_value(pg),
        };
        // Serialising these plain structs cannot fail; an error would only lose the rendering.
        value.unwrap_or_default()
    }
}

impl BatchScheduler {
    /// KubeRay's `Name()`: `default`, `volcano`, `yunikorn`, `scheduler-plugins-scheduler`,
    /// `kai-scheduler`.
    pub fn plugin_name(&self) -> &'static str {
        match self {
            BatchScheduler::Default => DEFAULT_PLUGIN,
            BatchScheduler::Volcano => VOLCANO_PLUGIN,
            BatchScheduler::YuniKorn => YUNIKORN_PLUGIN,
            BatchScheduler::SchedulerPlugins => SCHEDULER_PLUGINS_SCHEDULER_NAME,
            BatchScheduler::Kai => KAI_PLUGIN,
        }
    }

    /// The `schedulerName` set on pods (`None`: left as in the template).
    pub fn scheduler_name(&self) -> Option<&'static str> {
        match self {
            BatchScheduler::Default => None,
            BatchScheduler::Volcano => Some(VOLCANO_SCHEDULER_NAME),
            BatchScheduler::YuniKorn => Some(YUNIKORN_SCHEDULER_NAME),
            BatchScheduler::SchedulerPlugins => Some(SCHEDULER_PLUGINS_SCHEDULER_NAME),
            BatchScheduler::Kai => Some(KAI_SCHEDULER_NAME),
        }
    }

    /// Whether the RayCluster controller owns (watches) a PodGroup kind under this scheduler.
    pub fn owns_pod_groups(&self) -> bool {
        matches!(self, BatchScheduler::Volcano)
    }

    /// Submission hook for a RayCluster: the PodGroup it should have, if any. Called on every
    /// reconcile before pods are created, except while the cluster is suspending or suspended.
    pub fn pod_group_for_cluster(&self, cluster: &RayCluster) -> Result<Option<DesiredPodGroup>, GangError> {
        Ok(match self {
            BatchScheduler::Volcano => volcano::pod_group_for_cluster(cluster)?.map(DesiredPodGroup::Volcano),
            BatchScheduler::SchedulerPlugins => {
                scheduler_plugins::pod_group_for_cluster(cluster)?.map(DesiredPodGroup::SchedulerPlugins)
            }
            BatchScheduler::Default | BatchScheduler::YuniKorn | BatchScheduler::Kai => None,
        })
    }

    /// Submission hook for a RayJob (every `Initializing` pass; an error requeues).
    pub fn pod_group_for_job(&self, job: &RayJob) -> Result<Option<DesiredPodGroup>, GangError> {
        match self {
            BatchScheduler::Volcano => Ok(Some(DesiredPodGroup::Volcano(volcano::pod_group_for_job(job)?))),
            BatchScheduler::SchedulerPlugins => Err(GangError::SchedulerPluginsRayJob),
            BatchScheduler::Kai => kai::check_job(job).map(|()| None),
            BatchScheduler::Default | BatchScheduler::YuniKorn => Ok(None),
        }
    }

    /// Plans the write of `desired` given the object read back (`None` = NotFound). The existing
    /// object must be of the same kind; a mismatch plans a create.
    pub fn plan_sync(
        &self,
        existing: Option<&DesiredPodGroup>,
        desired: &DesiredPodGroup,
    ) -> SyncPlan<DesiredPodGroup> {
        let map = |plan: SyncPlan<_>, wrap: fn(_) -> DesiredPodGroup| match plan {
            SyncPlan::Create(pg) => SyncPlan::Create(wrap(pg)),
            SyncPlan::Update(pg) => SyncPlan::Update(wrap(pg)),
            SyncPlan::Unchanged => SyncPlan::Unchanged,
        };
        match desired {
            DesiredPodGroup::Volcano(want) => {
                let have = match existing {
                    Some(DesiredPodGroup::Volcano(have)) => Some(have),
                    _ => None,
                };
                map(volcano::plan_sync(have, want), DesiredPodGroup::Volcano)
            }
            DesiredPodGroup::SchedulerPlugins(want) => {
                let have = match existing {
                    Some(DesiredPodGroup::SchedulerPlugins(have)) => Some(have),
                    _ => None,
                };
                match scheduler_plugins::plan_sync(have, want) {
                    SyncPlan::Create(pg) => SyncPlan::Create(DesiredPodGroup::SchedulerPlugins(pg)),
                    SyncPlan::Update(pg) => SyncPlan::Update(DesiredPodGroup::SchedulerPlugins(pg)),
                    SyncPlan::Unchanged => SyncPlan::Unchanged,
                }
            }
        }
    }

    /// Child-metadata hook on any child.
    pub fn decorate(&self, parent: Parent<'_>, child: &mut Child<'_>, group_name: &str) -> Vec<GangLog> {
        match self {
            BatchScheduler::Default => Vec::new(),
            BatchScheduler::Volcano => {
                volcano::decorate(parent, child, group_name);
                Vec::new()
            }
            BatchScheduler::YuniKorn => yunikorn::decorate(parent, child, group_name),
            BatchScheduler::SchedulerPlugins => {
                scheduler_plugins::decorate(parent, child);
                Vec::new()
            }
            BatchScheduler::Kai => kai::decorate(parent, child),
        }
    }

    /// Decorates a head (`group_name = "headgroup"`) or worker (`group_name` = its group) pod.
    pub fn decorate_pod(&self, parent: Parent<'_>, pod: &mut Pod, group_name: &str) -> Vec<GangLog> {
        self.decorate(parent, &mut Child::Pod(pod), group_name)
    }

    /// Decorates a pod template (the RayJob submitter's, with `group_name = "submittergroup"`).
    pub fn decorate_pod_template(
        &self,
        parent: Parent<'_>,
        template: &mut PodTemplateSpec,
        group_name: &str,
    ) -> Vec<GangLog> {
        self.decorate(parent, &mut Child::PodTemplate(template), group_name)
    }

    /// Decorates the RayCluster a RayJob creates (K8sJobMode only; group name `""`, no
    /// `schedulerName`).
    pub fn decorate_cluster(&self, job: &RayJob, cluster: &mut RayCluster) -> Vec<GangLog> {
        self.decorate(Parent::Job(job), &mut Child::Cluster(cluster), "")
    }

    /// First step of the completion hook: whether a live-cluster read and a PodGroup sync follow.
    /// Only Volcano cleans up, and only for RayJobs.
    pub fn cleanup_step(&self, parent: Parent<'_>) -> CleanupStep {
        match (self, parent) {
            (BatchScheduler::Volcano, Parent::Job(job)) => volcano::cleanup_step(job),
            _ => CleanupStep::Skip,
        }
    }

    /// Second step of the completion hook: the PodGroup the job should now have (see
    /// [`volcano::cleanup_pod_group`]); `None` for schedulers that never clean up.
    pub fn cleanup_pod_group(
        &self,
        job: &RayJob,
        cluster: LiveCluster<'_>,
    ) -> Result<Option<DesiredPodGroup>, GangError> {
        match self {
            BatchScheduler::Volcano => Ok(Some(DesiredPodGroup::Volcano(volcano::cleanup_pod_group(
                job, cluster,
            )?))),
            _ => Ok(None),
        }
    }
}

/// Reason of the Normal event emitted when the completion hook changed something.
pub const CLEANED_UP_EVENT_REASON: &str = "BatchSchedulerCleanedUp";
/// Reason of the Warning event emitted when the completion hook failed.
pub const CLEANUP_FAILED_EVENT_REASON: &str = "FailedToCleanupBatchScheduler";

/// Message of the [`CLEANED_UP_EVENT_REASON`] event.
pub fn cleaned_up_event_message(namespace: &str, name: &str) -> String {
    format!("Cleaned up batch scheduler resources for RayJob {namespace}/{name}")
}

/// Message of the [`CLEANUP_FAILED_EVENT_REASON`] event.
pub fn cleanup_failed_event_message(namespace: &str, name: &str, error: &str) -> String {
    format!("Failed to cleanup batch scheduler resources for RayJob {namespace}/{name}: {error}")
}
