//! The Deployment controller, after upstream's: one ReplicaSet per pod template named
//! `<deployment>-<pod-template-hash>`, revisions in `deployment.kubernetes.io/revision`, RollingUpdate bounded
//! by `maxSurge`/`maxUnavailable` and Recreate, proportional scaling of a rollout in flight, `paused`,
//! `revisionHistoryLimit`, and the status with its `Available` and `Progressing` conditions.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::replicaset::replicasets;
use super::workload::{
    Extra, POD_TEMPLATE_HASH, Reconciler, by_creation, delete_child, generation, owner_ref, scaled_value, spec_i64,
    template_hash,
};
use super::{is_terminal, is_terminating, now};
use crate::error::ApiError;
use crate::kinds::Gvr;
use crate::patch::PatchKind;
use crate::store::{ListOptions, Store, StoredObject};

/// Annotation: the revision of a ReplicaSet (and of its Deployment, the newest one).
pub const ANN_REVISION: &str = "deployment.kubernetes.io/revision";
/// Annotation: the revisions a ReplicaSet had before a rollback made it the newest again.
pub const ANN_REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
/// Annotation: the Deployment's `spec.replicas` when the ReplicaSet was last scaled.
pub const ANN_DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// Annotation: `spec.replicas + maxSurge` when the ReplicaSet was last scaled.
pub const ANN_MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// Deployment annotations never copied to its ReplicaSets.
const NOT_COPIED: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    ANN_REVISION,
    ANN_REVISION_HISTORY,
    ANN_DESIRED_REPLICAS,
    ANN_MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];
/// How often a Recreate rollout checks whether the old pods are gone.
const RECREATE_POLL: Duration = Duration::from_millis(50);
/// `progressDeadlineSeconds` meaning "no deadline" (`math.MaxInt32`).
const NO_PROGRESS_DEADLINE: i64 = i32::MAX as i64;

/// The `apps/v1` Deployments resource.
pub(super) fn deployments() -> Gvr {
    Gvr::new("apps", "v1", "deployments")
}

/// The Deployment controller (stateless between passes).
pub(super) struct DeploymentController;

/// The settings of one Deployment a pass works with.
struct Spec {
    replicas: i64,
    rolling: bool,
    max_surge: i64,
    max_unavailable: i64,
    paused: bool,
    progress_deadline: i64,
    history_limit: i64,
}

/// Upstream's `ResolveFenceposts`: surge rounds up, unavailability down, and both zero means one unavailable.
fn resolve_fenceposts(surge: &Value, unavailable: &Value, replicas: i64) -> (i64, i64) {
    let s = scaled_value(surge, replicas, true);
    let u = scaled_value(unavailable, replicas, false);
    if s == 0 && u == 0 { (0, 1) } else { (s, u) }
}

impl Spec {
    fn of(d: &Value) -> Self {
        let spec = &d["spec"];
        let replicas = spec_i64(d, "replicas", 1);
        let rolling = spec["strategy"]["type"].as_str() != Some("Recreate");
        let ru = &spec["strategy"]["rollingUpdate"];
        let (max_surge, max_unavailable) = if rolling {
            let (s, u) = resolve_fenceposts(&ru["maxSurge"], &ru["maxUnavailable"], replicas);
            // `MaxUnavailable` caps at the replicas and is zero for an empty Deployment.
            // Bounded like the int32 fields they are upstream, so the sums below cannot overflow.
            let bound = |v: i64| v.clamp(0, i64::from(i32::MAX));
            (bound(s), if replicas == 0 { 0 } else { bound(u).min(replicas) })
        } else {
            (0, 0)
        };
        Self {
            replicas,
            rolling,
            max_surge,
            max_unavailable,
            paused: spec["paused"].as_bool() == Some(true),
            progress_deadline: spec_i64(d, "progressDeadlineSeconds", 600),
            history_limit: spec_i64(d, "revisionHistoryLimit", 10),
        }
    }
}

/// A ReplicaSet as this pass plans it: the stored object and the replicas and annotations it should have.
struct Planned {
    obj: Arc<StoredObject>,
    replicas: i64,
    annotations: Map<String, Value>,
}

impl Planned {
    fn new(obj: Arc<StoredObject>) -> Self {
        Self {
            replicas: obj.value()["spec"]["replicas"].as_i64().unwrap_or(1),
            annotations: obj.value()["metadata"]["annotations"]
                .as_object()
                .cloned()
                .unwrap_or_default(),
            obj,
        }
    }
    fn available(&self) -> i64 {
        self.obj.value()["status"]["availableReplicas"].as_i64().unwrap_or(0)
    }
    fn actual(&self) -> i64 {
        self.obj.value()["status"]["replicas"].as_i64().unwrap_or(0)
    }
    fn ready(&self) -> i64 {
        self.obj.value()["status"]["readyReplicas"].as_i64().unwrap_or(0)
    }
    fn revision(&self) -> i64 {
        revision_of(&self.obj.value())
    }
    fn ann_i64(&self, key: &str) -> Option<i64> {
        self.annotations.get(key)?.as_str()?.parse().ok()
    }
    /// `scaleReplicaSet`: the new size and the replicas annotations.
    fn scale(&mut self, to: i64, spec: &Spec) {
        self.replicas = to.max(0);
        self.annotations
            .insert(ANN_DESIRED_REPLICAS.into(), json!(spec.replicas.to_string()));
        self.annotations.insert(
            ANN_MAX_REPLICAS.into(),
            json!((spec.replicas + spec.max_surge).to_string()),
        );
    }
    fn changed(&self) -> bool {
        self.replicas != self.obj.value()["spec"]["replicas"].as_i64().unwrap_or(1)
            || Some(&self.annotations) != self.obj.value()["metadata"]["annotations"].as_object()
    }
    fn write(&self, store: &Store) -> Result<(), ApiError> {
        if !self.changed() {
            return Ok(());
        }
        let body = json!({
            "metadata": {"resourceVersion": self.obj.rv.to_string(), "annotations": self.annotations},
            "spec": {"replicas": self.replicas},
        });
        store
            .patch(
                &replicasets(),
                self.obj.namespace(),
                self.obj.name(),
                &PatchKind::Merge,
                &body,
                None,
            )
            .map(|_| ())
    }
}

fn revision_of(v: &Value) -> i64 {
    v["metadata"]["annotations"][ANN_REVISION]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The template without the `pod-template-hash` label, for upstream's `EqualIgnoreHash`.
fn without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(labels) = t["metadata"]["labels"].as_object_mut() {
        labels.remove(POD_TEMPLATE_HASH);
        if labels.is_empty() {
            t["metadata"].as_object_mut().map(|m| m.remove("labels"));
        }
    }
    t
}

/// Copies the Deployment's annotations onto a ReplicaSet's and moves its revision forward to `revision`
/// (recording the one it had in the revision history), as upstream's `SetNewReplicaSetAnnotations`.
fn sync_new_rs_annotations(d: &Value, planned: &mut Planned, revision: i64) {
    for (k, v) in d["metadata"]["annotations"].as_object().into_iter().flatten() {
        if !NOT_COPIED.contains(&k.as_str()) {
            planned.annotations.insert(k.clone(), v.clone());
        }
    }
    let old = planned.revision();
    if old < revision {
        planned
            .annotations
            .insert(ANN_REVISION.into(), json!(revision.to_string()));
        if old > 0 {
            let history = match planned.annotations.get(ANN_REVISION_HISTORY).and_then(Value::as_str) {
                Some(h) if !h.is_empty() => format!("{h},{old}"),
                _ => old.to_string(),
            };
            planned.annotations.insert(ANN_REVISION_HISTORY.into(), json!(history));
        }
    }
}

/// Upstream's `SetDeploymentCondition`: a changed condition moves to the end; the transition time is kept
/// while the status stays.
fn set_condition(conds: &mut Vec<Value>, ty: &str, status: &str, reason: &str, message: &str) {
    let now = now();
    let mut cond = json!({
        "type": ty, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
        "reason": reason, "message": message,
    });
    if let Some(cur) = conds.iter().find(|c| c["type"] == ty) {
        if cur["status"] == status && cur["reason"] == reason {
            return;
        }
        if cur["status"] == status {
            cond["lastTransitionTime"] = cur["lastTransitionTime"].clone();
        }
    }
    conds.retain(|c| c["type"] != ty);
    conds.push(cond);
}

fn condition<'a>(conds: &'a [Value], ty: &str) -> Option<&'a Value> {
    conds.iter().find(|c| c["type"] == ty)
}

fn seconds_since(ts: &Value) -> Option<i64> {
    let t: jiff::Timestamp = ts.as_str()?.parse().ok()?;
    Some(jiff::Timestamp::now().duration_since(t).as_secs())
}

/// Upstream's `NewRSNewReplicas`: how far the new ReplicaSet may grow now.
fn new_rs_new_replicas(spec: &Spec, all_replicas: i64, new_replicas: i64) -> i64 {
    if !spec.rolling {
        return spec.replicas;
    }
    let max_total = spec.replicas + spec.max_surge;
    if all_replicas >= max_total {
        return new_replicas;
    }
    let up = (max_total - all_replicas).min(spec.replicas - new_replicas).max(0);
    new_replicas + up
}

impl Reconciler for DeploymentController {
    fn owner(&self) -> Gvr {
        deployments()
    }

    fn owner_kind(&self) -> &'static str {
        "Deployment"
    }

    fn child(&self) -> Gvr {
        replicasets()
    }

    fn reconcile(
        &mut self,
        store: &Store,
        d: &StoredObject,
        rss: &[Arc<StoredObject>],
        _extra: Extra<'_>,
    ) -> Result<Option<Duration>, ApiError> {
        if is_terminating(&d.value()) {
            return Ok(None);
        }
        let spec = Spec::of(&d.value());
        let template = &d.value()["spec"]["template"];
        let mut rss = rss.to_vec();
        by_creation(&mut rss);
        let (mut new_rs, mut old): (Option<Planned>, Vec<Planned>) = (None, Vec::new());
        for rs in rss {
            if new_rs.is_none() && without_hash(&rs.value()["spec"]["template"]) == *template {
                new_rs = Some(Planned::new(rs));
            } else {
                old.push(Planned::new(rs));
            }
        }
        let mut status = d.value()["status"].as_object().cloned().unwrap_or_default();
        let mut conds: Vec<Value> = status
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let has_deadline = spec.progress_deadline != NO_PROGRESS_DEADLINE;
        let revision = old.iter().map(Planned::revision).max().unwrap_or(0) + 1;
        let mut d_annotations = d.value()["metadata"]["annotations"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let old_scaled_down = old.iter().all(|o| o.replicas == 0 && o.actual() == 0);
        // Recreate waits until the old pods are gone, terminating ones included, as upstream's `oldPodsRunning`.
        let old_pods_running = !spec.rolling && old_scaled_down && old_pods_running(store, d, &old)?;
        let old_all_down = old_scaled_down && !old_pods_running;
        let may_create = !spec.paused && (spec.rolling || old_all_down);
        match &mut new_rs {
            None if may_create => {
                let collisions = status.get("collisionCount").and_then(Value::as_u64).map(|c| c as u32);
                let hash = template_hash(template, collisions);
                let all: i64 = old.iter().map(|o| o.replicas).sum();
                let replicas = new_rs_new_replicas(&spec, all, 0);
                match create_rs(store, d, &hash, replicas, &spec, revision) {
                    Ok(created) => {
                        if has_deadline {
                            let msg = format!("Created new replica set {:?}", created.name());
                            set_condition(&mut conds, "Progressing", "True", "NewReplicaSetCreated", &msg);
                        }
                        d_annotations.insert(ANN_REVISION.into(), json!(revision.to_string()));
                        new_rs = Some(Planned::new(created));
                    }
                    Err(e) if e.code == 409 => {
                        // A ReplicaSet of that name with another template: a hash collision.
                        status.insert("collisionCount".into(), json!(collisions.unwrap_or(0) + 1));
                        return write_deployment(store, d, status, conds, d_annotations).map(|()| None);
                    }
                    Err(e) => return Err(e),
                }
            }
            Some(n) => {
                sync_new_rs_annotations(&d.value(), n, revision);
                if n.obj.value()["spec"]["minReadySeconds"] != d.value()["spec"]["minReadySeconds"] {
                    let body = json!({"metadata": {"resourceVersion": n.obj.rv.to_string()},
                        "spec": {"minReadySeconds": d.value()["spec"]["minReadySeconds"]}});
                    store.patch(
                        &replicasets(),
                        n.obj.namespace(),
                        n.obj.name(),
                        &PatchKind::Merge,
                        &body,
                        None,
                    )?;
                    return Ok(None);
                }
                if let Some(r) = n.annotations.get(ANN_REVISION) {
                    d_annotations.insert(ANN_REVISION.into(), r.clone());
                }
                if has_deadline && condition(&conds, "Progressing").is_none() {
                    let msg = format!("Found new replica set {:?}", n.obj.name());
                    set_condition(&mut conds, "Progressing", "True", "FoundNewReplicaSet", &msg);
                }
            }
            None => {}
        }
        let scaling_event = new_rs
            .iter()
            .chain(old.iter())
            .filter(|p| p.replicas > 0)
            .any(|p| p.ann_i64(ANN_DESIRED_REPLICAS).is_some_and(|r| r != spec.replicas));
        let stored_complete = complete(&spec, &d.value()["status"], generation(&d.value()));
        if spec.paused || scaling_event {
            scale(&spec, &d.value(), new_rs.as_mut(), &mut old);
        } else if spec.rolling {
            if !rolling_step(&spec, new_rs.as_mut(), &mut old) && stored_complete {
                cleanup(store, &spec, &old)?;
            }
        } else if let Some(n) = new_rs.as_mut()
            && old_all_down
            && n.replicas != spec.replicas
        {
            n.scale(spec.replicas, &spec);
        } else {
            for o in old.iter_mut().filter(|o| o.replicas > 0) {
                o.scale(0, &spec);
            }
        }
        if spec.paused || scaling_event {
            cleanup(store, &spec, &old)?;
        }
        for p in new_rs.iter().chain(old.iter()) {
            p.write(store)?;
        }
        let mut next = sync_status(&spec, &d.value(), new_rs.as_ref(), &old, &mut status, &mut conds);
        write_deployment(store, d, status, conds, d_annotations)?;
        if old_pods_running {
            // Pod deletions do not touch the ReplicaSets, so poll until the old pods are gone.
            next = Some(next.map_or(RECREATE_POLL, |n| n.min(RECREATE_POLL)));
        }
        Ok(next)
    }
}

/// Whether pods of the old ReplicaSets still exist and have not finished.
fn old_pods_running(store: &Store, d: &StoredObject, old: &[Planned]) -> Result<bool, ApiError> {
    if old.is_empty() {
        return Ok(false);
    }
    let uids: Vec<&str> = old.iter().map(|o| o.obj.uid()).collect();
    let pods = store.list(&Gvr::pods(), d.namespace(), &ListOptions::default())?;
    Ok(pods
        .items
        .iter()
        .any(|p| p.controller_uid().is_some_and(|u| uids.contains(&u)) && !is_terminal(&p.value())))
}

fn create_rs(
    store: &Store,
    d: &StoredObject,
    hash: &str,
    replicas: i64,
    spec: &Spec,
    revision: i64,
) -> Result<Arc<StoredObject>, ApiError> {
    let mut template = d.value()["spec"]["template"].clone();
    template["metadata"]["labels"][POD_TEMPLATE_HASH] = json!(hash);
    let mut selector = d.value()["spec"]["selector"].clone();
    selector["matchLabels"][POD_TEMPLATE_HASH] = json!(hash);
    let mut annotations = Map::new();
    for (k, v) in d.value()["metadata"]["annotations"].as_object().into_iter().flatten() {
        if !NOT_COPIED.contains(&k.as_str()) {
            annotations.insert(k.clone(), v.clone());
        }
    }
    annotations.insert(ANN_REVISION.into(), json!(revision.to_string()));
    annotations.insert(ANN_DESIRED_REPLICAS.into(), json!(spec.replicas.to_string()));
    annotations.insert(
        ANN_MAX_REPLICAS.into(),
        json!((spec.replicas + spec.max_surge).to_string()),
    );
    let mut rs_spec = json!({"replicas": replicas, "selector": selector, "template": template});
    if let Some(m) = d.value()["spec"].get("minReadySeconds") {
        rs_spec["minReadySeconds"] = m.clone();
    }
    let body = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{hash}", d.name()),
            "namespace": d.namespace(),
            "labels": template["metadata"]["labels"],
            "annotations": annotations,
            "ownerReferences": [owner_ref(d, "Deployment")],
        },
        "spec": rs_spec,
    });
    store.create(&replicasets(), d.namespace(), body)
}

/// Upstream's `DeploymentComplete` over a status.
fn complete(spec: &Spec, status: &Value, generation: i64) -> bool {
    let n = |k: &str| status[k].as_i64().unwrap_or(0);
    n("updatedReplicas") == spec.replicas
        && n("replicas") == spec.replicas
        && n("availableReplicas") == spec.replicas
        && n("observedGeneration") >= generation
}

/// One rolling-update step (`rolloutRolling`): grow the new ReplicaSet within `maxSurge`, else shrink the old
/// ones within `maxUnavailable`. Returns whether it scaled anything.
fn rolling_step(spec: &Spec, new_rs: Option<&mut Planned>, old: &mut [Planned]) -> bool {
    let all: i64 = new_rs.as_ref().map_or(0, |n| n.replicas) + old.iter().map(|o| o.replicas).sum::<i64>();
    let (new_replicas, new_unavailable, new_available) = match new_rs {
        Some(n) => {
            let target = if n.replicas > spec.replicas {
                spec.replicas
            } else {
                new_rs_new_replicas(spec, all, n.replicas)
            };
            if target != n.replicas {
                n.scale(target, spec);
                return true;
            }
            (n.replicas, n.replicas - n.available(), n.available())
        }
        None => (0, 0, 0),
    };
    let old_pods: i64 = old.iter().map(|o| o.replicas).sum();
    if old_pods == 0 {
        return false;
    }
    let all = new_replicas + old_pods;
    let min_available = spec.replicas - spec.max_unavailable;
    let mut max_scaled_down = all - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return false;
    }
    let mut scaled = false;
    // Old pods that are not available go first: removing them costs no availability.
    for o in old.iter_mut() {
        if max_scaled_down <= 0 {
            break;
        }
        let unhealthy = o.replicas - o.available();
        if o.replicas == 0 || unhealthy <= 0 {
            continue;
        }
        let down = unhealthy.min(max_scaled_down);
        o.scale(o.replicas - down, spec);
        max_scaled_down -= down;
        scaled = true;
    }
    let available: i64 = new_available + old.iter().map(Planned::available).sum::<i64>();
    if available > min_available {
        let mut budget = available - min_available;
        for o in old.iter_mut() {
            if budget <= 0 {
                break;
            }
            if o.replicas == 0 {
                continue;
            }
            let down = o.replicas.min(budget);
            o.scale(o.replicas - down, spec);
            budget -= down;
            scaled = true;
        }
    }
    scaled
}

/// Upstream's `scale`: a scaling event or a paused Deployment resizes its ReplicaSets, proportionally when a
/// rollout is in flight.
fn scale(spec: &Spec, d: &Value, new_rs: Option<&mut Planned>, old: &mut [Planned]) {
    let mut all: Vec<&mut Planned> = old.iter_mut().collect();
    let new_index = new_rs.map(|n| {
        all.push(n);
        all.len() - 1
    });
    let active: Vec<usize> = (0..all.len()).filter(|i| all[*i].replicas > 0).collect();
    let target = match active.len() {
        0 => new_index.or_else(|| all.len().checked_sub(usize::from(new_index.is_some()) + 1)),
        1 => Some(active[0]),
        _ => None,
    };
    if let Some(i) = target {
        if all[i].replicas != spec.replicas || all[i].ann_i64(ANN_DESIRED_REPLICAS) != Some(spec.replicas) {
            all[i].scale(spec.replicas, spec);
        }
        return;
    }
    if let Some(i) = new_index {
        let n = &all[i];
        if n.replicas == spec.replicas
            && n.ann_i64(ANN_DESIRED_REPLICAS) == Some(spec.replicas)
            && n.available() == spec.replicas
        {
            for (j, o) in all.iter_mut().enumerate() {
                if j != i && o.replicas > 0 {
                    o.scale(0, spec);
                }
            }
            return;
        }
    }
    if !spec.rolling {
        return;
    }
    let mut active: Vec<&mut Planned> = all.into_iter().filter(|p| p.replicas > 0).collect();
    let current: i64 = active.iter().map(|p| p.replicas).sum();
    let allowed = if spec.replicas > 0 {
        spec.replicas + spec.max_surge
    } else {
        0
    };
    let to_add = allowed - current;
    let created = |p: &Planned| {
        p.obj.value()["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    if to_add > 0 {
        active.sort_by(|a, b| b.replicas.cmp(&a.replicas).then_with(|| created(b).cmp(&created(a))));
    } else {
        active.sort_by(|a, b| b.replicas.cmp(&a.replicas).then_with(|| created(a).cmp(&created(b))));
    }
    let max_now = spec.replicas + spec.max_surge;
    let status_replicas = d["status"]["replicas"].as_i64().unwrap_or(0);
    let mut added = 0;
    let mut sizes: Vec<i64> = Vec::with_capacity(active.len());
    for p in &active {
        let proportion = if to_add == 0 || to_add == added {
            0
        } else {
            let fraction = if spec.replicas == 0 {
                -p.replicas
            } else {
                let before = p
                    .ann_i64(ANN_MAX_REPLICAS)
                    .filter(|m| *m > 0)
                    .unwrap_or(status_replicas);
                if before == 0 {
                    0
                } else {
                    (p.replicas as f64 * max_now as f64 / before as f64).round() as i64 - p.replicas
                }
            };
            let allowed = to_add - added;
            if to_add > 0 {
                fraction.min(allowed)
            } else {
                fraction.max(allowed)
            }
        };
        sizes.push(p.replicas + proportion);
        added += proportion;
    }
    for (i, p) in active.iter_mut().enumerate() {
        let mut size = sizes[i];
        if i == 0 && to_add != 0 {
            size = (size + to_add - added).max(0);
        }
        p.scale(size, spec);
    }
}

/// Deletes the oldest scaled-down ReplicaSets beyond `revisionHistoryLimit`.
fn cleanup(store: &Store, spec: &Spec, old: &[Planned]) -> Result<(), ApiError> {
    let mut alive: Vec<&Planned> = old.iter().filter(|o| !is_terminating(&o.obj.value())).collect();
    let surplus = alive.len() as i64 - spec.history_limit.max(0);
    if surplus <= 0 {
        return Ok(());
    }
    alive.sort_by_key(|o| o.revision());
    for o in alive.into_iter().take(surplus as usize) {
        let observed = o.obj.value()["status"]["observedGeneration"].as_i64().unwrap_or(0);
        if o.actual() != 0 || o.replicas != 0 || generation(&o.obj.value()) > observed {
            continue;
        }
        delete_child(store, &replicasets(), &o.obj)?;
    }
    Ok(())
}

/// `calculateStatus` and `syncRolloutStatus`: the counts, `Available`, and `Progressing`. Returns when the
/// progress deadline needs checking.
fn sync_status(
    spec: &Spec,
    d: &Value,
    new_rs: Option<&Planned>,
    old: &[Planned],
    status: &mut Map<String, Value>,
    conds: &mut Vec<Value>,
) -> Option<Duration> {
    let all = || new_rs.into_iter().chain(old.iter());
    let available: i64 = all().map(Planned::available).sum();
    let total_spec: i64 = all()
        .map(|p| p.obj.value()["spec"]["replicas"].as_i64().unwrap_or(0))
        .sum();
    let counts = [
        ("observedGeneration", generation(d)),
        ("replicas", all().map(Planned::actual).sum()),
        ("updatedReplicas", new_rs.map_or(0, Planned::actual)),
        ("readyReplicas", all().map(Planned::ready).sum()),
        ("availableReplicas", available),
        ("unavailableReplicas", (total_spec - available).max(0)),
    ];
    let old_status = &d["status"];
    for (k, n) in counts {
        if n != 0 {
            status.insert(k.into(), json!(n));
        } else {
            status.remove(k);
        }
    }
    if available >= spec.replicas - spec.max_unavailable {
        set_condition(
            conds,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        );
    } else {
        set_condition(
            conds,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        );
    }
    let new_status = Value::Object(status.clone());
    let n = |s: &Value, k: &str| s[k].as_i64().unwrap_or(0);
    let mut next = None;
    if spec.paused {
        if condition(conds, "Progressing").is_none_or(|c| c["reason"] != "DeploymentPaused") {
            set_condition(
                conds,
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused",
            );
        }
    } else if spec.progress_deadline == NO_PROGRESS_DEADLINE {
        conds.retain(|c| c["type"] != "Progressing");
    } else {
        if condition(conds, "Progressing").is_some_and(|c| c["reason"] == "DeploymentPaused") {
            set_condition(
                conds,
                "Progressing",
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed",
            );
        }
        let cur = condition(conds, "Progressing").cloned();
        let rs_name = new_rs.map(|r| r.obj.name().to_string());
        let subject = |d_name: &str| match &rs_name {
            Some(r) => format!("ReplicaSet {r:?}"),
            None => format!("Deployment {d_name:?}"),
        };
        let d_name = d["metadata"]["name"].as_str().unwrap_or_default();
        let already_complete = n(&new_status, "replicas") == n(&new_status, "updatedReplicas")
            && cur.as_ref().is_some_and(|c| c["reason"] == "NewReplicaSetAvailable");
        if !already_complete {
            let progressing = n(&new_status, "updatedReplicas") > n(old_status, "updatedReplicas")
                || n(&new_status, "replicas") - n(&new_status, "updatedReplicas")
                    < n(old_status, "replicas") - n(old_status, "updatedReplicas")
                || n(&new_status, "readyReplicas") > n(old_status, "readyReplicas")
                || n(&new_status, "availableReplicas") > n(old_status, "availableReplicas");
            if complete(spec, &new_status, generation(d)) {
                let msg = format!("{} has successfully progressed.", subject(d_name));
                set_condition(conds, "Progressing", "True", "NewReplicaSetAvailable", &msg);
            } else if progressing {
                let msg = format!("{} is progressing.", subject(d_name));
                let mut cond = json!({
                    "type": "Progressing", "status": "True", "lastUpdateTime": now(), "lastTransitionTime": now(),
                    "reason": "ReplicaSetUpdated", "message": msg,
                });
                if let Some(c) = &cur
                    && c["status"] == "True"
                {
                    cond["lastTransitionTime"] = c["lastTransitionTime"].clone();
                }
                conds.retain(|c| c["type"] != "Progressing");
                conds.push(cond);
                next = Some(Duration::from_secs(spec.progress_deadline.max(1) as u64));
            } else if let Some(c) = cur.filter(|c| c["reason"] != "ProgressDeadlineExceeded") {
                let elapsed = seconds_since(&c["lastUpdateTime"]).unwrap_or(0);
                if elapsed > spec.progress_deadline {
                    let msg = format!("{} has timed out progressing.", subject(d_name));
                    set_condition(conds, "Progressing", "False", "ProgressDeadlineExceeded", &msg);
                } else {
                    next = Some(Duration::from_secs((spec.progress_deadline - elapsed + 1) as u64));
                }
            }
        }
    }
    next
}

/// Writes the Deployment's status and revision annotation through the status subresource (which, as
/// upstream's, takes metadata changes along).
fn write_deployment(
    store: &Store,
    d: &StoredObject,
    mut status: Map<String, Value>,
    conds: Vec<Value>,
    annotations: Map<String, Value>,
) -> Result<(), ApiError> {
    if conds.is_empty() {
        status.remove("conditions");
    } else {
        status.insert("conditions".into(), json!(conds));
    }
    let status = Value::Object(status);
    let same_annotations = Some(&annotations) == d.value()["metadata"]["annotations"].as_object()
        || (annotations.is_empty() && d.value()["metadata"]["annotations"].is_null());
    if status == d.value()["status"] && same_annotations {
        return Ok(());
    }
    let mut body = super::status_patch(d, &status);
    if !same_annotations {
        body["metadata"]["annotations"] = json!(annotations);
    }
    store
        .patch(
            &deployments(),
            d.namespace(),
            d.name(),
            &PatchKind::Merge,
            &body,
            Some("status"),
        )
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(replicas: i64, surge: Value, unavailable: Value) -> Spec {
        Spec::of(
            &json!({"spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}}}),
        )
    }

    #[test]
    fn deployment_fenceposts_round_surge_up_and_unavailable_down() {
        let s = spec(10, json!("25%"), json!("25%"));
        assert_eq!((s.max_surge, s.max_unavailable), (3, 2));
        let s = spec(3, json!(0), json!(0));
        assert_eq!((s.max_surge, s.max_unavailable), (0, 1));
        let s = spec(1, json!("25%"), json!("25%"));
        assert_eq!((s.max_surge, s.max_unavailable), (1, 0));
    }

    #[test]
    fn deployment_new_replicaset_grows_within_max_surge() {
        let s = spec(4, json!(1), json!(0));
        assert_eq!(new_rs_new_replicas(&s, 4, 0), 1);
        assert_eq!(new_rs_new_replicas(&s, 5, 1), 1);
        assert_eq!(new_rs_new_replicas(&s, 4, 3), 4);
        let recreate = Spec::of(&json!({"spec": {"replicas": 4, "strategy": {"type": "Recreate"}}}));
        assert_eq!(new_rs_new_replicas(&recreate, 4, 0), 4);
    }

    #[test]
    fn deployment_conditions_move_to_the_end_when_they_change() {
        let mut conds = Vec::new();
        set_condition(&mut conds, "Progressing", "True", "NewReplicaSetCreated", "x");
        set_condition(&mut conds, "Available", "False", "MinimumReplicasUnavailable", "y");
        set_condition(&mut conds, "Progressing", "True", "NewReplicaSetAvailable", "z");
        let types: Vec<&str> = conds.iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["Available", "Progressing"]);
    }
}
