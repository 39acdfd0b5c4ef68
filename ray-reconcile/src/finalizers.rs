//! Adding and removing a controller's finalizer, the same way for RayClusters, RayJobs and
//! RayServices: one JSON merge patch of `metadata.finalizers` carrying the whole new list (a merge
//! patch replaces a list as a whole), with the default field manager. A controller that must not
//! act on a stale read also sends the `resourceVersion` it read, so the server refuses the write
//! with a 409 when the object changed in between.

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt::Debug;

/// Whether a finalizer write only applies to the version of the object the controller read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalizerGuard {
    /// The list is written whatever changed since the read.
    Unguarded,
    /// The patch carries the `resourceVersion` read: a changed object answers 409.
    ResourceVersion,
}

/// Whether `object` carries `finalizer`.
pub fn has_finalizer<K: Resource>(object: &K, finalizer: &str) -> bool {
    object.finalizers().iter().any(|f| f == finalizer)
}

/// `object`'s finalizers with `finalizer` appended (callers add it only when it is missing).
pub fn finalizers_with<K: Resource>(object: &K, finalizer: &str) -> Vec<String> {
    let mut finalizers = object.finalizers().to_vec();
    finalizers.push(finalizer.to_owned());
    finalizers
}

/// `object`'s finalizers without any `finalizer` entry.
pub fn finalizers_without<K: Resource>(object: &K, finalizer: &str) -> Vec<String> {
    object
        .finalizers()
        .iter()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect()
}

/// The merge patch that sets `object`'s finalizer list to `finalizers`.
pub fn finalizers_patch<K: Resource>(object: &K, finalizers: Vec<String>, guard: FinalizerGuard) -> Value {
    match guard {
        FinalizerGuard::Unguarded => json!({ "metadata": { "finalizers": finalizers } }),
        FinalizerGuard::ResourceVersion => json!({
            "metadata": { "finalizers": finalizers, "resourceVersion": object.resource_version() }
        }),
    }
}

/// Appends `finalizer` to `object`'s finalizers on the server; returns the `resourceVersion` the object has
/// after the write (a later write in the same pass that sends a version must send this one).
pub async fn add_finalizer<K>(
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    guard: FinalizerGuard,
) -> Result<Option<String>, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    write_finalizers(api, object, finalizers_with(object, finalizer), guard).await
}

/// Removes `finalizer` from `object`'s finalizers on the server; returns the object's new `resourceVersion`.
pub async fn remove_finalizer<K>(
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    guard: FinalizerGuard,
) -> Result<Option<String>, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    write_finalizers(api, object, finalizers_without(object, finalizer), guard).await
}

async fn write_finalizers<K>(
    api: &Api<K>,
    object: &K,
    finalizers: Vec<String>,
    guard: FinalizerGuard,
) -> Result<Option<String>, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let patch = finalizers_patch(object, finalizers, guard);
    let written = api
        .patch(&object.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(written.meta().resource_version.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ray_api::RayService;

    fn service(finalizers: &[&str]) -> RayService {
        let mut service = RayService::new("rs", Default::default());
        service.metadata.resource_version = Some("7".into());
        service.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
        service
    }

    #[test]
    fn the_whole_list_is_written_with_the_read_version_only_when_guarded() {
        let s = service(&["other"]);
        assert!(!has_finalizer(&s, "mine"));
        let added = finalizers_with(&s, "mine");
        assert_eq!(
            finalizers_patch(&s, added.clone(), FinalizerGuard::Unguarded),
            json!({"metadata": {"finalizers": ["other", "mine"]}})
        );
        assert_eq!(
            finalizers_patch(&s, added, FinalizerGuard::ResourceVersion),
            json!({"metadata": {"finalizers": ["other", "mine"], "resourceVersion": "7"}})
        );
    }

    #[test]
    fn removing_drops_every_entry_of_the_finalizer() {
        let s = service(&["mine", "other", "mine"]);
        assert!(has_finalizer(&s, "mine"));
        assert_eq!(finalizers_without(&s, "mine"), vec!["other".to_owned()]);
    }
}
