//! Keeping a gang-scheduling PodGroup (Volcano or scheduler-plugins) in step with what the batch
//! scheduler wants, for the RayCluster and RayJob controllers alike: read the stored PodGroup, let
//! the scheduler's pure plan decide, then create or update it.

use crate::kube_errors::is_already_exists;
use kube::api::{Api, PostParams};
use kube::{Resource, ResourceExt};
use ray_gang::volcano::SyncPlan;
use ray_gang::{DesiredPodGroup, scheduler_plugins, volcano};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// GET `desired`'s namesake, plan with `plan`, then CREATE / UPDATE. Returns whether it wrote.
async fn sync_object<K>(
    api: &Api<K>,
    desired: &K,
    plan: impl Fn(Option<&K>, &K) -> SyncPlan<K>,
) -> Result<bool, kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    let name = desired.meta().name.clone().unwrap_or_default();
    let existing = api.get_opt(&name).await?;
    match plan(existing.as_ref(), desired) {
        SyncPlan::Create(obj) => match api.create(&PostParams::default(), &obj).await {
            Ok(_) => Ok(true),
            Err(e) if is_already_exists(&e) => Ok(false),
            Err(e) => Err(e),
        },
        SyncPlan::Update(obj) => api.replace(&name, &PostParams::default(), &obj).await.map(|_| true),
        SyncPlan::Unchanged => Ok(false),
    }
}

/// The name of a desired PodGroup.
pub fn pod_group_name(desired: &DesiredPodGroup) -> String {
    match desired {
        DesiredPodGroup::Volcano(pg) => pg.name_any(),
        DesiredPodGroup::SchedulerPlugins(pg) => pg.name_any(),
    }
}

/// KubeRay's `syncPodGroup`: GET the PodGroup named
/// like `desired` in `namespace`, then CREATE it or UPDATE its size as the scheduler's plan says.
/// Returns whether it wrote (KubeRay's `changed`; an `AlreadyExists` create counts as unchanged).
pub async fn sync_pod_group(
    client: &kube::Client,
    namespace: &str,
    desired: &DesiredPodGroup,
) -> Result<bool, kube::Error> {
    match desired {
        DesiredPodGroup::Volcano(pg) => {
            sync_object(
                &Api::<volcano::PodGroup>::namespaced(client.clone(), namespace),
                pg,
                volcano::plan_sync,
            )
            .await
        }
        DesiredPodGroup::SchedulerPlugins(pg) => {
            sync_object(
                &Api::<scheduler_plugins::PodGroup>::namespaced(client.clone(), namespace),
                pg,
                scheduler_plugins::plan_sync,
            )
            .await
        }
    }
}
