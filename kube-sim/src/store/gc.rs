//! The garbage collector (owner references: background, foreground, orphan) and the namespace controller (a
//! deleted namespace's objects are removed before the namespace goes). Both act through the store's public write
//! pipeline, so each of their changes gets its own resourceVersion and watch event.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{
    DeleteOptions, FOREGROUND_FINALIZER, NAMESPACE_FINALIZER, ORPHAN_FINALIZER, ObjRef, Propagation, Store,
    StoredObject, finalizers, is_terminating,
};
use crate::kinds::Gvr;
use crate::patch::PatchKind;

/// How often the namespace controller re-checks a namespace that still has content.
const NAMESPACE_POLL: Duration = Duration::from_millis(50);

/// Work for the garbage collector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GcTask {
    /// The object with this uid is gone: collect or fix its dependents.
    OwnerGone(String),
    /// The owner is being deleted with `Orphan`: strip references to it, then drop its `orphan` finalizer.
    Orphan(String),
    /// The owner is being deleted with `Foreground`: delete dependents, then drop `foregroundDeletion`.
    Foreground(String),
    /// Something about this owner changed (a dependent vanished, or it is terminating): re-evaluate.
    Recheck(String),
    /// This namespace is terminating: empty it, then remove it.
    Namespace(String),
}

pub(super) async fn run(store: Store, mut rx: mpsc::UnboundedReceiver<GcTask>) {
    while let Some(task) = rx.recv().await {
        let delay = store.config().gc_delay;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        match task {
            GcTask::OwnerGone(uid) => owner_gone(&store, &uid),
            GcTask::Orphan(uid) => orphan(&store, &uid),
            GcTask::Foreground(uid) | GcTask::Recheck(uid) => foreground(&store, &uid),
            GcTask::Namespace(ns) => {
                let s = store.clone();
                tokio::spawn(async move { finalize_namespace(s, ns).await });
            }
        }
    }
}

fn gvr_of(store: &Store, r: &ObjRef) -> Option<Gvr> {
    store.resource_by_plural(&r.group, &r.resource).map(|i| i.gvr.clone())
}

/// The resource at the object's own `apiVersion` (writes through another served version of a CRD are rejected
/// with 400 because the stored `apiVersion` does not match), else any served version.
fn gvr_of_obj(store: &Store, r: &ObjRef, obj: &StoredObject) -> Option<Gvr> {
    let value = obj.value();
    let version = value["apiVersion"].as_str().map(|v| v.rsplit('/').next().unwrap_or(v));
    version
        .map(|v| Gvr::new(&r.group, v, &r.resource))
        .filter(|g| store.resource(g).is_some())
        .or_else(|| gvr_of(store, r))
}

fn ns_of(r: &ObjRef) -> Option<&str> {
    (!r.namespace.is_empty()).then_some(r.namespace.as_str())
}

fn dependents(store: &Store, uid: &str) -> Vec<ObjRef> {
    let g = store.shared.inner.lock();
    g.dependents
        .get(uid)
        .map(|s| s.iter().cloned().collect())
        .unwrap_or_default()
}

fn lookup(store: &Store, r: &ObjRef) -> Option<std::sync::Arc<StoredObject>> {
    store.shared.inner.lock().lookup(r)
}

fn by_uid(store: &Store, uid: &str) -> Option<(ObjRef, std::sync::Arc<StoredObject>)> {
    let g = store.shared.inner.lock();
    let r = g.uids.get(uid)?.clone();
    let o = g.lookup(&r)?;
    Some((r, o))
}

/// An owner reference is live when its uid exists and, for a namespaced dependent, lives in the same namespace
/// or is cluster-scoped.
fn owner_alive(store: &Store, dependent: &ObjRef, uid: &str) -> bool {
    match by_uid(store, uid) {
        Some((owner, _)) => owner.namespace.is_empty() || owner.namespace == dependent.namespace,
        None => false,
    }
}

fn remove_owner_refs(store: &Store, r: &ObjRef, obj: &StoredObject, drop: &dyn Fn(&str) -> bool) {
    let Some(gvr) = gvr_of_obj(store, r, obj) else { return };
    let refs: Vec<Value> = obj.value()["metadata"]["ownerReferences"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|o| !drop(o["uid"].as_str().unwrap_or_default()))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let patch = json!({"metadata": {"ownerReferences": if refs.is_empty() { Value::Null } else { Value::Array(refs) }, "resourceVersion": obj.rv.to_string()}});
    if let Err(e) = store.patch(&gvr, ns_of(r), &r.name, &PatchKind::Merge, &patch, None) {
        tracing::debug!(error = %e, object = %r.name, "gc: could not strip owner references");
    }
}

fn owner_gone(store: &Store, uid: &str) {
    for r in dependents(store, uid) {
        let Some(obj) = lookup(store, &r) else { continue };
        let owners: Vec<String> = obj.owner_uids().map(str::to_string).collect();
        let alive: Vec<&String> = owners.iter().filter(|u| owner_alive(store, &r, u)).collect();
        if alive.is_empty() {
            let Some(gvr) = gvr_of(store, &r) else { continue };
            let opts = DeleteOptions {
                propagation: Some(Propagation::Background),
                precondition_uid: Some(obj.uid().to_string()),
                ..DeleteOptions::default()
            };
            if let Err(e) = store.delete(&gvr, ns_of(&r), &r.name, &opts) {
                tracing::debug!(error = %e, object = %r.name, "gc: delete failed");
            }
        } else {
            remove_owner_refs(store, &r, &obj, &|u| !alive.iter().any(|a| a.as_str() == u));
        }
    }
}

fn drop_finalizer(store: &Store, r: &ObjRef, finalizer: &str) {
    let Some(obj) = lookup(store, r) else { return };
    let Some(gvr) = gvr_of_obj(store, r, &obj) else { return };
    let fins: Vec<String> = finalizers(&obj.value())
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    let patch = json!({"metadata": {"finalizers": if fins.is_empty() { Value::Null } else { json!(fins) }, "resourceVersion": obj.rv.to_string()}});
    if let Err(e) = store.patch(&gvr, ns_of(r), &r.name, &PatchKind::Merge, &patch, None) {
        tracing::debug!(error = %e, object = %r.name, "gc: could not remove finalizer");
    }
}

fn orphan(store: &Store, uid: &str) {
    let Some((owner_ref, _)) = by_uid(store, uid) else {
        return;
    };
    for r in dependents(store, uid) {
        if let Some(obj) = lookup(store, &r) {
            remove_owner_refs(store, &r, &obj, &|u| u == uid);
        }
    }
    drop_finalizer(store, &owner_ref, ORPHAN_FINALIZER);
}

fn foreground(store: &Store, uid: &str) {
    let Some((owner_ref, owner)) = by_uid(store, uid) else {
        return;
    };
    if !is_terminating(&owner.value()) || !finalizers(&owner.value()).iter().any(|f| f == FOREGROUND_FINALIZER) {
        return;
    }
    let mut blocking = 0;
    for r in dependents(store, uid) {
        let Some(obj) = lookup(store, &r) else { continue };
        let blocks = obj.value()["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|a| a.iter().any(|o| o["uid"] == uid && o["blockOwnerDeletion"] == true));
        if blocks {
            blocking += 1;
        }
        if !is_terminating(&obj.value())
            && let Some(gvr) = gvr_of(store, &r)
        {
            let policy = if blocks {
                Propagation::Foreground
            } else {
                Propagation::Background
            };
            let opts = DeleteOptions {
                propagation: Some(policy),
                ..DeleteOptions::default()
            };
            if let Err(e) = store.delete(&gvr, ns_of(&r), &r.name, &opts) {
                tracing::debug!(error = %e, object = %r.name, "gc: foreground delete failed");
            }
        }
    }
    if blocking == 0 {
        drop_finalizer(store, &owner_ref, FOREGROUND_FINALIZER);
    }
}

/// Deletes everything in a terminating namespace, waits for it to drain, then removes the namespace.
async fn finalize_namespace(store: Store, ns: String) {
    loop {
        let namespaced: Vec<Gvr> = {
            let mut seen = std::collections::HashSet::new();
            store
                .resources()
                .into_iter()
                .filter(|r| r.namespaced && seen.insert((r.gvr.group.clone(), r.gvr.resource.clone())))
                .map(|r| r.gvr.clone())
                .collect()
        };
        let mut remaining = 0;
        for gvr in namespaced {
            let Ok(items) = store.list(&gvr, Some(&ns), &super::ListOptions::default()) else {
                continue;
            };
            for obj in items.items {
                remaining += 1;
                if !is_terminating(&obj.value()) {
                    let opts = DeleteOptions {
                        propagation: Some(Propagation::Background),
                        ..DeleteOptions::default()
                    };
                    let _ = store.delete(&gvr, Some(&ns), obj.name(), &opts);
                }
            }
        }
        if remaining == 0 {
            break;
        }
        store.changed(NAMESPACE_POLL).await;
    }
    let Ok(nsobj) = store.get(&Gvr::namespaces(), None, &ns) else {
        return;
    };
    let spec_fins: Vec<Value> = nsobj.value()["spec"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|f| f.as_str() != Some(NAMESPACE_FINALIZER))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut updated = nsobj.value();
    updated["spec"]["finalizers"] = json!(spec_fins);
    if let Err(e) = store.update(&Gvr::namespaces(), None, updated, None) {
        tracing::debug!(error = %e, namespace = %ns, "namespace controller: finalize failed");
    }
}
