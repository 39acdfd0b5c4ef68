//! What the `apps/v1` controllers share: an owner/child controller loop (a cache of owners and the children
//! they control, indexed by controller uid), pod readiness and availability, the pod-template hash, pods
//! stamped from a template, and int-or-percent resolution.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::{Agent, Cache, Key, condition_true, is_terminal, is_terminating};
use crate::error::ApiError;
use crate::kinds::Gvr;
use crate::store::{DeleteOptions, Propagation, Store, StoredObject};

/// Label carrying the pod-template hash on ReplicaSets and their pods.
pub(super) const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// Label carrying the revision hash on StatefulSet and DaemonSet pods.
pub(super) const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";
/// Delay before retrying an owner whose write failed.
const RETRY_DELAY: Duration = Duration::from_millis(50);

/// The objects of the extra resources a [`Reconciler`] watches, by key.
pub(super) type Extra<'a> = &'a [BTreeMap<Key, Arc<StoredObject>>];

/// One controller of the owner/child pattern (Deployment → ReplicaSet, ReplicaSet → Pod, ...).
pub(super) trait Reconciler: Send {
    /// The owner resource.
    fn owner(&self) -> Gvr;
    /// The `kind` in the children's controller owner reference.
    fn owner_kind(&self) -> &'static str;
    /// The child resource.
    fn child(&self) -> Gvr;
    /// More resources to watch; any change to them makes every owner dirty (nodes for DaemonSets).
    fn extra(&self) -> Vec<Gvr> {
        Vec::new()
    }
    /// One step towards the owner's desired state; returns when it needs a timer.
    fn reconcile(
        &mut self,
        store: &Store,
        owner: &StoredObject,
        children: &[Arc<StoredObject>],
        extra: Extra<'_>,
    ) -> Result<Option<Duration>, ApiError>;
}

/// Drives a [`Reconciler`]: keeps owners and children current and reconciles the owners whose owner, children
/// or timer changed.
pub(super) struct OwnerController<R> {
    reconciler: R,
    cache: Cache,
    owner_kind: &'static str,
    /// Controller uid → keys of the children it controls.
    by_owner: HashMap<String, BTreeSet<Key>>,
    /// Live owner uid → key.
    owners_by_uid: HashMap<String, Key>,
    dirty: BTreeSet<Key>,
    timers: BTreeMap<Key, Instant>,
}

const OWNERS: usize = 0;
const CHILDREN: usize = 1;

impl<R: Reconciler> OwnerController<R> {
    pub(super) fn new(store: &Store, reconciler: R) -> Self {
        let mut gvrs = vec![reconciler.owner(), reconciler.child()];
        gvrs.extend(reconciler.extra());
        Self {
            owner_kind: reconciler.owner_kind(),
            reconciler,
            cache: Cache::new(store, &gvrs),
            by_owner: HashMap::new(),
            owners_by_uid: HashMap::new(),
            dirty: BTreeSet::new(),
            timers: BTreeMap::new(),
        }
    }

    fn sync(&mut self) {
        let mut extra_changed = false;
        for ch in self.cache.sync() {
            match ch.kind {
                OWNERS => {
                    if let Some(old) = &ch.old
                        && ch.new.as_ref().is_none_or(|n| n.uid() != old.uid())
                    {
                        self.owners_by_uid.remove(old.uid());
                    }
                    match &ch.new {
                        Some(new) => {
                            self.owners_by_uid.insert(new.uid().to_string(), ch.key.clone());
                        }
                        None => {
                            self.timers.remove(&ch.key);
                        }
                    }
                    self.dirty.insert(ch.key);
                }
                CHILDREN => {
                    let kind = self.owner_kind;
                    let old_owner = ch.old.as_ref().and_then(|o| o.controller_of_kind(kind));
                    let new_owner = ch.new.as_ref().and_then(|o| o.controller_of_kind(kind));
                    if let Some(u) = old_owner
                        && (ch.new.is_none() || Some(u) != new_owner)
                        && let Some(set) = self.by_owner.get_mut(u)
                    {
                        set.remove(&ch.key);
                        if set.is_empty() {
                            self.by_owner.remove(u);
                        }
                    }
                    if let Some(u) = new_owner {
                        self.by_owner.entry(u.to_string()).or_default().insert(ch.key.clone());
                    }
                    for u in [old_owner, new_owner].into_iter().flatten() {
                        if let Some(k) = self.owners_by_uid.get(u) {
                            self.dirty.insert(k.clone());
                        }
                    }
                }
                _ => extra_changed = true,
            }
        }
        if extra_changed {
            self.dirty.extend(self.cache.maps[OWNERS].keys().cloned());
        }
    }

    fn pass(&mut self, store: &Store) -> Option<Duration> {
        self.sync();
        let now_i = Instant::now();
        self.dirty.extend(super::take_due(&mut self.timers, now_i));
        for key in std::mem::take(&mut self.dirty) {
            let Some(owner) = self.cache.maps[OWNERS].get(&key).cloned() else {
                continue;
            };
            let children: Vec<Arc<StoredObject>> = self
                .by_owner
                .get(owner.uid())
                .into_iter()
                .flatten()
                .filter_map(|k| self.cache.maps[CHILDREN].get(k).cloned())
                .collect();
            let extra = &self.cache.maps[2..];
            match self.reconciler.reconcile(store, &owner, &children, extra) {
                Ok(Some(d)) => {
                    self.timers.insert(key, now_i + d);
                }
                Ok(None) => {
                    self.timers.remove(&key);
                }
                Err(e) => {
                    tracing::debug!(error = %e, owner = owner.name(), kind = self.owner_kind, "write failed, retrying");
                    self.timers.insert(key, now_i + RETRY_DELAY);
                }
            }
        }
        self.timers.values().min().map(|at| at.saturating_duration_since(now_i))
    }
}

impl<R: Reconciler> Agent for OwnerController<R> {
    fn pass(&mut self, store: &Store) -> Option<Duration> {
        OwnerController::pass(self, store)
    }

    fn feed(&mut self) -> &mut super::Cache {
        &mut self.cache
    }
}

/// Whether a pod counts as active for its controller: not finished and not being deleted.
pub(super) fn is_active(pod: &Value) -> bool {
    !is_terminal(pod) && !is_terminating(pod)
}

/// Whether a pod is Ready (its `Ready` condition is True).
pub(super) fn is_ready(pod: &Value) -> bool {
    condition_true(pod, "Ready")
}

fn ready_since(pod: &Value) -> Option<jiff::Timestamp> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready" && c["status"] == "True")?["lastTransitionTime"]
        .as_str()?
        .parse()
        .ok()
}

/// Whether a pod is available: Ready for at least `min_ready_seconds`. When it is Ready but not yet
/// available, the second value is how long until it will be.
pub(super) fn availability(pod: &Value, min_ready_seconds: i64) -> (bool, Option<Duration>) {
    if !is_ready(pod) {
        return (false, None);
    }
    if min_ready_seconds <= 0 {
        return (true, None);
    }
    let Some(since) = ready_since(pod) else {
        return (true, None);
    };
    let ready_for = jiff::Timestamp::now().duration_since(since).as_secs();
    if ready_for >= min_ready_seconds {
        (true, None)
    } else {
        (false, Some(Duration::from_secs((min_ready_seconds - ready_for) as u64)))
    }
}

/// 32-bit FNV-1a.
fn fnv32a(chunks: &[&[u8]]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for chunk in chunks {
        for b in *chunk {
            h ^= u32::from(*b);
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    h
}

/// Kubernetes' `rand.SafeEncodeString`: maps each byte onto an alphabet without vowels or confusable digits.
pub(super) fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// The pod-template hash as upstream's `ComputeHash`: FNV-32a over the template, then the collision count's
/// four little-endian bytes when there is one, printed in decimal and safe-encoded. Upstream feeds the hasher
/// Go's `spew` dump of the typed template; here it is the template's canonical JSON, so the values have the
/// upstream shape but differ from a real cluster's.
pub(super) fn template_hash(template: &Value, collision_count: Option<u32>) -> String {
    // Keys sorted, so the hash of a template does not depend on key order.
    let text = kube_compat::go_json::to_string_sorted(template);
    let count = collision_count.map(u32::to_le_bytes);
    let mut chunks: Vec<&[u8]> = vec![text.as_bytes()];
    if let Some(c) = &count {
        chunks.push(c);
    }
    safe_encode(&fnv32a(&chunks).to_string())
}

/// Upstream's `GetScaledValueFromIntOrPercent`: an int as is, `N%` of `total` rounded up or down.
pub(super) fn scaled_value(v: &Value, total: i64, round_up: bool) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => {
            let Some(p) = s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) else {
                return s.parse().unwrap_or(0);
            };
            let num = p.saturating_mul(total);
            if round_up {
                (num + 99).div_euclid(100)
            } else {
                num.div_euclid(100)
            }
        }
        _ => 0,
    }
}

/// A pod (or other child) body stamped from `template`: its labels and annotations, the extra `labels`, a
/// controller owner reference to `owner` (of kind `owner_kind` in `apps/v1`), and `name` or a `generateName`.
pub(super) fn pod_from_template(
    owner: &StoredObject,
    owner_kind: &str,
    template: &Value,
    name: PodName<'_>,
    labels: &[(&str, String)],
) -> Value {
    let tmeta = &template["metadata"];
    let mut l: Map<String, Value> = tmeta["labels"].as_object().cloned().unwrap_or_default();
    for (k, v) in labels {
        l.insert((*k).to_string(), json!(v));
    }
    let mut meta = json!({
        "namespace": owner.namespace(),
        "labels": l,
        "ownerReferences": [owner_ref(owner, owner_kind)],
    });
    if let Some(a) = tmeta["annotations"].as_object().filter(|a| !a.is_empty()) {
        meta["annotations"] = json!(a);
    }
    if let Some(f) = tmeta["finalizers"].as_array().filter(|f| !f.is_empty()) {
        meta["finalizers"] = json!(f);
    }
    match name {
        PodName::Fixed(n) => meta["name"] = json!(n),
        PodName::Generate(prefix) => meta["generateName"] = json!(format!("{prefix}-")),
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"].clone()})
}

/// How a new pod is named.
pub(super) enum PodName<'a> {
    /// Exactly this name (StatefulSet ordinals).
    Fixed(&'a str),
    /// `<prefix>-` plus five random characters from the API server.
    Generate(&'a str),
}

/// A controller owner reference to an `apps/v1` owner.
pub(super) fn owner_ref(owner: &StoredObject, kind: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": kind, "name": owner.name(), "uid": owner.uid(),
        "controller": true, "blockOwnerDeletion": true,
    })
}

/// Deletes a child, guarded by its uid, letting the garbage collector take its dependents.
pub(super) fn delete_child(store: &Store, gvr: &Gvr, child: &StoredObject) -> Result<(), ApiError> {
    let opts = DeleteOptions {
        propagation: Some(Propagation::Background),
        precondition_uid: Some(child.uid().to_string()),
        ..DeleteOptions::default()
    };
    match store.delete(gvr, child.namespace(), child.name(), &opts) {
        Err(e) if e.code == 404 => Ok(()),
        other => other.map(|_| ()),
    }
}

/// Writes `desired` as the owner's status when it differs, guarded by the owner's resourceVersion.
pub(super) fn write_status(store: &Store, gvr: &Gvr, owner: &StoredObject, desired: &Value) -> Result<(), ApiError> {
    if owner.value()["status"] == *desired {
        return Ok(());
    }
    store
        .patch(
            gvr,
            owner.namespace(),
            owner.name(),
            &crate::patch::PatchKind::Merge,
            &super::status_patch(owner, desired),
            Some("status"),
        )
        .map(|_| ())
}

/// The owner's `spec.<field>` as an integer, or `default`.
pub(super) fn spec_i64(owner: &Value, field: &str, default: i64) -> i64 {
    owner["spec"][field].as_i64().unwrap_or(default)
}

/// The owner's `metadata.generation`.
pub(super) fn generation(owner: &Value) -> i64 {
    owner["metadata"]["generation"].as_i64().unwrap_or(0)
}

/// Sorts objects oldest first (creation time, then name), as upstream's `ByCreationTimestamp`.
pub(super) fn by_creation(objs: &mut [Arc<StoredObject>]) {
    objs.sort_by(|a, b| {
        let ts = |o: &StoredObject| {
            o.value()["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        (ts(a), a.name()).cmp(&(ts(b), b.name()))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv32a_matches_reference_vectors() {
        assert_eq!(fnv32a(&[b""]), 0x811c_9dc5);
        assert_eq!(fnv32a(&[b"a"]), 0xe40c_292c);
        assert_eq!(fnv32a(&[b"foo", b"bar"]), fnv32a(&[b"foobar"]));
    }

    #[test]
    fn safe_encode_avoids_vowels() {
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
        assert!(safe_encode("abc").chars().all(|c| !"aeiou".contains(c)));
    }

    #[test]
    fn template_hash_ignores_key_order_and_varies_with_collisions() {
        let a = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
        let b = json!({"spec": {"containers": [{"image": "x", "name": "c"}]}, "metadata": {"labels": {"app": "web"}}});
        assert_eq!(template_hash(&a, None), template_hash(&b, None));
        assert_ne!(template_hash(&a, None), template_hash(&a, Some(1)));
        assert!(template_hash(&a, None).len() <= 10);
    }

    #[test]
    fn percentages_round_as_upstream() {
        assert_eq!(scaled_value(&json!("25%"), 10, true), 3);
        assert_eq!(scaled_value(&json!("25%"), 10, false), 2);
        assert_eq!(scaled_value(&json!(2), 10, false), 2);
        assert_eq!(scaled_value(&json!("0%"), 3, true), 0);
    }
}
