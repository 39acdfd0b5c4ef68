//! Writing a custom resource's status, the same way for RayClusters, RayJobs and RayServices: through
//! the status subresource, with the default field manager, in one of the three request shapes the
//! controllers use (see [`StatusWrite`]). Whether a status changed enough to be written, and what a
//! 404 or 409 answer means for the pass, stay with each controller.

use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use ray_api::raycronjob::RayCronJobStatus;
use ray_api::{RayCluster, RayClusterStatus, RayCronJob, RayJob, RayJobStatus, RayService, RayServiceStatuses};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt::Debug;

/// A resource with a status subresource whose status the controller computes.
pub trait StatusResource: Resource + Clone + Serialize + DeserializeOwned + Debug {
    /// The status type.
    type Status: Serialize + Clone + Default;
    /// The stored status (`None` before the first write).
    fn status(&self) -> Option<&Self::Status>;
    /// Replaces the status.
    fn set_status(&mut self, status: Self::Status);
}

impl StatusResource for RayCluster {
    type Status = RayClusterStatus;
    fn status(&self) -> Option<&RayClusterStatus> {
        self.status.as_ref()
    }
    fn set_status(&mut self, status: RayClusterStatus) {
        self.status = Some(status);
    }
}

impl StatusResource for RayJob {
    type Status = RayJobStatus;
    fn status(&self) -> Option<&RayJobStatus> {
        self.status.as_ref()
    }
    fn set_status(&mut self, status: RayJobStatus) {
        self.status = Some(status);
    }
}

impl StatusResource for RayService {
    type Status = RayServiceStatuses;
    fn status(&self) -> Option<&RayServiceStatuses> {
        self.status.as_ref()
    }
    fn set_status(&mut self, status: RayServiceStatuses) {
        self.status = Some(status);
    }
}

impl StatusResource for RayCronJob {
    type Status = RayCronJobStatus;
    fn status(&self) -> Option<&RayCronJobStatus> {
        self.status.as_ref()
    }
    fn set_status(&mut self, status: RayCronJobStatus) {
        self.status = Some(status);
    }
}

/// The request a status write sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusWrite {
    /// A JSON merge patch of the status subresource, shaped as [`MergeShape`] says, with the object's
    /// `resourceVersion` as a precondition: a pass that read the object before its last write gets 409
    /// Conflict (which each controller retries) instead of overwriting that write. KubeRay writes these statuses with an
    /// update, which conflicts the same way. Without it, a patch of only what changed, computed against an
    /// older status, can undo a newer one: a RayCluster read before its write of `RayClusterProvisioned`
    /// True wrote it back to False while keeping the newer `state: ready`; a RayJob pass behind the cache
    /// could draw its cluster name and job id a second time, leaving the first cluster orphaned.
    Merge(MergeShape),
    /// A PUT of the whole object (without `managedFields`) to the status subresource; the server
    /// answers 409 when the object changed since it was read (the RayService controller).
    Replace,
}

/// What a status merge patch carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeShape {
    /// Only what changed: fields gone from the new status become `null`, at every depth (the
    /// RayCluster controller).
    Changes,
    /// The whole new status, with the top-level fields it no longer has set to `null` (the RayJob
    /// controller).
    Whole,
}

/// Why a status write failed.
#[derive(Debug, thiserror::Error)]
pub enum StatusWriteError {
    /// The API server refused the write (or could not be reached).
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// The status could not be serialised.
    #[error("status serialisation failed: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// Writes `status` as `object`'s status the way `how` says, and returns the object's `resourceVersion`
/// after the write (for a [`crate::stale_status::StaleStatusGuard`]).
pub async fn write_status<K>(
    api: &Api<K>,
    object: &K,
    status: &K::Status,
    how: StatusWrite,
) -> Result<Option<String>, StatusWriteError>
where
    K: StatusResource,
{
    let name = object.name_any();
    let shape = match how {
        StatusWrite::Merge(shape) => shape,
        StatusWrite::Replace => {
            let mut replacement = object.clone();
            replacement.set_status(status.clone());
            replacement.meta_mut().managed_fields = None;
            let written = api.replace_status(&name, &PostParams::default(), &replacement).await?;
            return Ok(written.meta().resource_version.clone());
        }
    };
    let old = serde_json::to_value(object.status().cloned().unwrap_or_default())?;
    let new = serde_json::to_value(status)?;
    let patch = status_patch(&old, new, shape, object.meta().resource_version.as_deref());
    let written = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(written.meta().resource_version.clone())
}

/// The whole body of a status merge patch from `old` to `new`: [`status_merge_patch`], plus the
/// `resourceVersion` the object was read at, which the API server checks.
pub fn status_patch(old: &Value, new: Value, shape: MergeShape, resource_version: Option<&str>) -> Value {
    let mut patch = status_merge_patch(old, new, shape);
    if let Some(version) = resource_version {
        patch["metadata"] = json!({ "resourceVersion": version });
    }
    patch
}

/// The body of a status merge patch from `old` to `new`: `{"status": ...}` shaped as `shape` says.
pub fn status_merge_patch(old: &Value, new: Value, shape: MergeShape) -> Value {
    match shape {
        MergeShape::Changes => json!({ "status": merge_patch(old, &new) }),
        MergeShape::Whole => json!({ "status": with_removed_fields_nulled(old, new) }),
    }
}

/// `new` with every top-level field of `old` it lacks set to `null`.
fn with_removed_fields_nulled(old: &Value, mut new: Value) -> Value {
    if let (Value::Object(new_map), Value::Object(old_map)) = (&mut new, old) {
        for key in old_map.keys() {
            new_map.entry(key.clone()).or_insert(Value::Null);
        }
    }
    new
}

/// A JSON merge patch turning `old` into `new` (removed keys become `null`).
pub fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = serde_json::Map::new();
            for (k, v) in n {
                match o.get(k) {
                    Some(ov) if ov == v => {}
                    Some(ov) => {
                        patch.insert(k.clone(), merge_patch(ov, v));
                    }
                    None => {
                        patch.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in o.keys().filter(|k| !n.contains_key(*k)) {
                patch.insert(k.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_nulls_removed_keys_and_recurses() {
        let old = json!({"a": 1, "head": {"podIP": "1.2.3.4", "podName": "h"}, "conditions": [1]});
        let new = json!({"a": 1, "head": {"podName": "h2"}, "conditions": [2]});
        assert_eq!(
            merge_patch(&old, &new),
            json!({"head": {"podIP": null, "podName": "h2"}, "conditions": [2]})
        );
    }

    #[test]
    fn the_two_merge_shapes_differ_in_depth_and_in_what_they_repeat() {
        let old = json!({"a": 1, "gone": true, "head": {"podIP": "1.2.3.4", "podName": "h"}});
        let new = json!({"a": 1, "head": {"podName": "h"}});
        assert_eq!(
            status_merge_patch(&old, new.clone(), MergeShape::Changes),
            json!({"status": {"gone": null, "head": {"podIP": null}}})
        );
        assert_eq!(
            status_merge_patch(&old, new, MergeShape::Whole),
            json!({"status": {"a": 1, "gone": null, "head": {"podName": "h"}}})
        );
    }

    #[test]
    fn both_shapes_carry_the_resource_version_read() {
        let (old, new) = (json!({"jobId": ""}), json!({"jobId": "j-1"}));
        for shape in [MergeShape::Whole, MergeShape::Changes] {
            assert_eq!(
                status_patch(&old, new.clone(), shape, Some("42")),
                json!({"status": {"jobId": "j-1"}, "metadata": {"resourceVersion": "42"}})
            );
            assert_eq!(
                status_patch(&old, new.clone(), shape, None),
                json!({"status": {"jobId": "j-1"}})
            );
        }
    }
}
