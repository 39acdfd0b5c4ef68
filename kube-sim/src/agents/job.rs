//! The Job controller: creates pods for `batch/v1` Jobs, tracks them with the
//! `batch.kubernetes.io/job-tracking` finalizer and `uncountedTerminatedPods`, and writes the terminal
//! conditions (`SuccessCriteriaMet` → `Complete`, `FailureTarget` → `Failed`).

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{
    Agent, Cache, JOB_TRACKING_FINALIZER, Key, condition_true, is_terminal, is_terminating, node_name, now, phase,
    set_condition, status_patch,
};
use crate::kinds::Gvr;
use crate::patch::PatchKind;
use crate::store::{DeleteOptions, Propagation, Store, StoredObject};

/// Annotation and label of an Indexed Job pod's completion index.
const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// The Job controller: a cache of Jobs and pods, pods indexed by controller uid, and the Jobs and pods to look
/// at next.
pub(super) struct JobController {
    cache: Cache,
    /// Controller uid → keys of the pods it controls.
    by_owner: HashMap<String, BTreeSet<Key>>,
    /// Live Job uid → key.
    jobs_by_uid: HashMap<String, Key>,
    dirty_jobs: BTreeSet<Key>,
    dirty_pods: BTreeSet<Key>,
    /// Job timers (deadlines, TTLs, retries).
    timers: BTreeMap<Key, Instant>,
}

const JOBS: usize = 0;
const PODS: usize = 1;

thread_local! {
    /// Set when a write of the current reconcile failed (the object is retried on the next pass).
    static WRITE_FAILED: Cell<bool> = const { Cell::new(false) };
}

fn write_failed() {
    WRITE_FAILED.with(|f| f.set(true));
}

fn take_write_failed() -> bool {
    WRITE_FAILED.with(|f| f.replace(false))
}

fn uid_set(status: &Value, which: &str) -> BTreeSet<String> {
    status["uncountedTerminatedPods"][which]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u.as_str().map(str::to_string))
        .collect()
}

fn seconds_since(ts: &str) -> Option<i64> {
    let t: jiff::Timestamp = ts.parse().ok()?;
    Some(jiff::Timestamp::now().duration_since(t).as_secs())
}

fn unindex(index: &mut HashMap<String, BTreeSet<Key>>, owner: &str, key: &Key) {
    if let Some(set) = index.get_mut(owner) {
        set.remove(key);
        if set.is_empty() {
            index.remove(owner);
        }
    }
}

impl JobController {
    pub(super) fn new(store: &Store) -> Self {
        Self {
            cache: Cache::new(store, &[Gvr::jobs(), Gvr::pods()]),
            by_owner: HashMap::new(),
            jobs_by_uid: HashMap::new(),
            dirty_jobs: BTreeSet::new(),
            dirty_pods: BTreeSet::new(),
            timers: BTreeMap::new(),
        }
    }

    fn sync(&mut self) {
        for ch in self.cache.sync() {
            if ch.kind == JOBS {
                if let Some(old) = &ch.old
                    && ch.new.as_ref().is_none_or(|n| n.uid() != old.uid())
                {
                    self.jobs_by_uid.remove(old.uid());
                    // Its pods may now be orphans.
                    if let Some(pods) = self.by_owner.get(old.uid()) {
                        self.dirty_pods.extend(pods.iter().cloned());
                    }
                }
                if let Some(new) = &ch.new {
                    self.jobs_by_uid.insert(new.uid().to_string(), ch.key.clone());
                } else {
                    self.timers.remove(&ch.key);
                }
                self.dirty_jobs.insert(ch.key);
                continue;
            }
            let old_owner = ch.old.as_ref().and_then(|o| o.controller_uid()).map(str::to_string);
            let new_owner = ch.new.as_ref().and_then(|o| o.controller_uid()).map(str::to_string);
            if let Some(u) = &old_owner
                && (ch.new.is_none() || old_owner != new_owner)
            {
                unindex(&mut self.by_owner, u, &ch.key);
            }
            if let Some(u) = &new_owner {
                if ch.new.is_some() {
                    self.by_owner.entry(u.clone()).or_default().insert(ch.key.clone());
                } else {
                    unindex(&mut self.by_owner, u, &ch.key);
                }
            }
            for u in [old_owner, new_owner].into_iter().flatten() {
                if let Some(k) = self.jobs_by_uid.get(&u) {
                    self.dirty_jobs.insert(k.clone());
                }
            }
            self.dirty_pods.insert(ch.key);
        }
    }

    /// One pass over the Jobs and pods that changed, whose timer fell due or whose last write failed.
    pub(super) fn pass(&mut self, store: &Store) -> Option<Duration> {
        self.sync();
        let now_i = Instant::now();
        self.dirty_jobs.extend(super::take_due(&mut self.timers, now_i));
        // Orphans (no controller, or their Job is gone) lose the tracking finalizer, as upstream.
        let mut retry_pods = BTreeSet::new();
        for key in std::mem::take(&mut self.dirty_pods) {
            let Some(p) = self.cache.maps[PODS].get(&key) else {
                continue;
            };
            if p.has_finalizer(JOB_TRACKING_FINALIZER)
                && p.controller_uid().is_none_or(|u| !self.jobs_by_uid.contains_key(u))
            {
                take_write_failed();
                remove_tracking_finalizer(store, p);
                if take_write_failed() {
                    retry_pods.insert(key);
                }
            }
        }
        self.dirty_pods = retry_pods;
        let mut retry_jobs = BTreeSet::new();
        for key in std::mem::take(&mut self.dirty_jobs) {
            let Some(job) = self.cache.maps[JOBS].get(&key).cloned() else {
                continue;
            };
            let owned: Vec<&Arc<StoredObject>> = self
                .by_owner
                .get(job.uid())
                .into_iter()
                .flatten()
                .filter_map(|k| self.cache.maps[PODS].get(k))
                .collect();
            take_write_failed();
            match reconcile(store, &job, &owned) {
                Some(d) => {
                    self.timers.insert(key.clone(), now_i + d);
                }
                None => {
                    self.timers.remove(&key);
                }
            }
            if take_write_failed() {
                retry_jobs.insert(key);
            }
        }
        self.dirty_jobs = retry_jobs;
        self.timers.values().min().map(|at| at.saturating_duration_since(now_i))
    }
}

impl Agent for JobController {
    fn pass(&mut self, store: &Store) -> Option<Duration> {
        JobController::pass(self, store)
    }

    fn feed(&mut self) -> &mut super::Cache {
        &mut self.cache
    }
}

fn remove_tracking_finalizer(store: &Store, pod: &StoredObject) {
    let fins: Vec<Value> = pod.value()["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f.as_str() != Some(JOB_TRACKING_FINALIZER))
        .cloned()
        .collect();
    let body = json!({"metadata": {"resourceVersion": pod.rv.to_string(), "finalizers": fins}});
    if let Err(e) = store.patch(
        &Gvr::pods(),
        pod.namespace(),
        pod.name(),
        &PatchKind::Merge,
        &body,
        None,
    ) {
        write_failed();
        tracing::debug!(error = %e, pod = pod.name(), "job controller: finalizer removal failed");
    }
}

fn delete_pod(store: &Store, pod: &StoredObject) {
    let opts = DeleteOptions {
        propagation: Some(Propagation::Background),
        precondition_uid: Some(pod.uid().to_string()),
        ..DeleteOptions::default()
    };
    if store.delete(&Gvr::pods(), pod.namespace(), pod.name(), &opts).is_err() {
        write_failed();
    }
}

fn new_pod(job: &StoredObject, index: Option<usize>) -> Value {
    let spec = &job.value()["spec"];
    let tmeta = &spec["template"]["metadata"];
    let mut labels = tmeta["labels"].as_object().cloned().unwrap_or_default();
    let mut annotations = tmeta["annotations"].as_object().cloned().unwrap_or_default();
    let mut pod_spec = spec["template"]["spec"].clone();
    let mut generate = format!("{}-", job.name());
    if let Some(i) = index {
        labels.insert(COMPLETION_INDEX.into(), json!(i.to_string()));
        annotations.insert(COMPLETION_INDEX.into(), json!(i.to_string()));
        generate = format!("{}-{i}-", job.name());
        pod_spec["hostname"] = json!(format!("{}-{i}", job.name()));
    }
    let mut fins = tmeta["finalizers"].as_array().cloned().unwrap_or_default();
    fins.push(json!(JOB_TRACKING_FINALIZER));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": generate,
            "namespace": job.namespace(),
            "labels": labels,
            "annotations": annotations,
            "finalizers": fins,
            "ownerReferences": [{
                "apiVersion": "batch/v1", "kind": "Job", "name": job.name(), "uid": job.uid(),
                "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": pod_spec,
    })
}

/// One step for one Job; returns when it next needs a timer (deadline, TTL).
fn reconcile(store: &Store, job: &StoredObject, pods: &[&Arc<StoredObject>]) -> Option<Duration> {
    let v = &job.value();
    let spec = &v["spec"];
    let old = &v["status"];
    let finished = condition_true(v, "Complete") || condition_true(v, "Failed");
    if finished {
        for p in pods
            .iter()
            .filter(|p| p.has_finalizer(JOB_TRACKING_FINALIZER) && is_terminal(&p.value()))
        {
            remove_tracking_finalizer(store, p);
        }
        if let Some(ttl) = spec["ttlSecondsAfterFinished"].as_i64() {
            let done = old["completionTime"].as_str().or_else(|| {
                old["conditions"].as_array()?.iter().find(|c| c["type"] == "Failed")?["lastTransitionTime"].as_str()
            });
            let elapsed = done.and_then(seconds_since).unwrap_or(0);
            if elapsed >= ttl {
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Background),
                    precondition_uid: Some(job.uid().to_string()),
                    ..DeleteOptions::default()
                };
                if store.delete(&Gvr::jobs(), job.namespace(), job.name(), &opts).is_err() {
                    write_failed();
                }
                return None;
            }
            return Some(Duration::from_secs((ttl - elapsed).max(1) as u64));
        }
        return None;
    }
    let find = |uid: &str| pods.iter().find(|p| p.uid() == uid);
    let mut succeeded = old["succeeded"].as_u64().unwrap_or(0);
    let mut failed = old["failed"].as_u64().unwrap_or(0);
    let mut unc_s = uid_set(old, "succeeded");
    let mut unc_f = uid_set(old, "failed");
    // Uncounted pods whose finalizer is gone are now counted.
    let counted = |set: &mut BTreeSet<String>| {
        let before = set.len();
        set.retain(|u| find(u).is_some_and(|p| p.has_finalizer(JOB_TRACKING_FINALIZER)));
        (before - set.len()) as u64
    };
    succeeded += counted(&mut unc_s);
    failed += counted(&mut unc_f);
    // Newly finished pods become uncounted.
    for p in pods.iter().filter(|p| p.has_finalizer(JOB_TRACKING_FINALIZER)) {
        let uid = p.uid().to_string();
        if unc_s.contains(&uid) || unc_f.contains(&uid) {
            continue;
        }
        match phase(&p.value()) {
            "Succeeded" => {
                unc_s.insert(uid);
            }
            "Failed" => {
                unc_f.insert(uid);
            }
            _ if is_terminating(&p.value()) && node_name(&p.value()).is_none() => {
                unc_f.insert(uid);
            }
            _ => {}
        }
    }
    let active: Vec<&&Arc<StoredObject>> = pods
        .iter()
        .filter(|p| !is_terminal(&p.value()) && !is_terminating(&p.value()))
        .collect();
    let terminating = pods
        .iter()
        .filter(|p| !is_terminal(&p.value()) && is_terminating(&p.value()))
        .count();
    let ready = active
        .iter()
        .filter(|p| super::condition_true(&p.value(), "Ready"))
        .count();
    let succ_total = succeeded + unc_s.len() as u64;
    let fail_total = failed + unc_f.len() as u64;
    let mut status = old.as_object().cloned().unwrap_or_default();
    let mut conds: Vec<Value> = old["conditions"].as_array().cloned().unwrap_or_default();
    let mut next = None;
    let suspended = spec["suspend"].as_bool() == Some(true);
    if suspended {
        for p in &active {
            delete_pod(store, p);
        }
        set_condition(
            &mut conds,
            "Suspended",
            "True",
            Some("JobSuspended"),
            Some("Job suspended"),
        );
    } else {
        if conds.iter().any(|c| c["type"] == "Suspended" && c["status"] == "True") {
            set_condition(
                &mut conds,
                "Suspended",
                "False",
                Some("JobResumed"),
                Some("Job resumed"),
            );
            status.insert("startTime".into(), json!(now()));
        }
        if status.get("startTime").is_none_or(Value::is_null) {
            status.insert("startTime".into(), json!(now()));
        }
        let has = |conds: &[Value], t: &str| conds.iter().any(|c| c["type"] == t && c["status"] == "True");
        if !has(&conds, "FailureTarget") {
            let backoff = spec["backoffLimit"].as_u64().unwrap_or(6);
            if fail_total > backoff {
                set_condition(
                    &mut conds,
                    "FailureTarget",
                    "True",
                    Some("BackoffLimitExceeded"),
                    Some("Job has reached the specified backoff limit"),
                );
            } else if let Some(ads) = spec["activeDeadlineSeconds"].as_i64() {
                let elapsed = status
                    .get("startTime")
                    .and_then(Value::as_str)
                    .and_then(seconds_since)
                    .unwrap_or(0);
                if elapsed >= ads {
                    set_condition(
                        &mut conds,
                        "FailureTarget",
                        "True",
                        Some("DeadlineExceeded"),
                        Some("Job was active longer than specified deadline"),
                    );
                } else {
                    next = Some(Duration::from_secs((ads - elapsed).max(1) as u64));
                }
            }
        }
        let completions = spec["completions"].as_u64();
        let parallelism = spec["parallelism"].as_u64().unwrap_or(1);
        let all_quiet = active.is_empty() && terminating == 0 && unc_s.is_empty() && unc_f.is_empty();
        if let Some(target) = conds
            .iter()
            .find(|c| c["type"] == "FailureTarget" && c["status"] == "True")
            .cloned()
        {
            for p in &active {
                delete_pod(store, p);
            }
            if active.is_empty() && terminating == 0 && unc_s.is_empty() && unc_f.is_empty() {
                set_condition(
                    &mut conds,
                    "Failed",
                    "True",
                    target["reason"].as_str(),
                    target["message"].as_str(),
                );
            }
        } else if completions.is_some_and(|c| succ_total >= c) || (completions.is_none() && succ_total > 0) {
            set_condition(
                &mut conds,
                "SuccessCriteriaMet",
                "True",
                Some("CompletionsReached"),
                Some("Reached expected number of succeeded pods"),
            );
            if completions.is_some() {
                for p in &active {
                    delete_pod(store, p);
                }
            }
            if all_quiet {
                set_condition(
                    &mut conds,
                    "Complete",
                    "True",
                    Some("CompletionsReached"),
                    Some("Reached expected number of succeeded pods"),
                );
                status.insert("completionTime".into(), json!(now()));
            }
        } else {
            let want = match completions {
                Some(c) => parallelism.min(c.saturating_sub(succ_total)),
                None => parallelism,
            };
            let indexed = spec["completionMode"] == "Indexed";
            let mut taken: BTreeSet<usize> = pods
                .iter()
                .filter(|p| !is_terminating(&p.value()) && phase(&p.value()) != "Failed")
                .filter_map(|p| p.value()["metadata"]["labels"][COMPLETION_INDEX].as_str()?.parse().ok())
                .collect();
            for _ in (active.len() as u64)..want {
                let index = if indexed {
                    let i = (0..).find(|i| !taken.contains(i)).unwrap_or(0);
                    taken.insert(i);
                    Some(i)
                } else {
                    None
                };
                if let Err(e) = store.create(&Gvr::pods(), job.namespace(), new_pod(job, index)) {
                    write_failed();
                    tracing::debug!(error = %e, job = job.name(), "job controller: pod create failed");
                    break;
                }
            }
        }
    }
    let set_count = |status: &mut serde_json::Map<String, Value>, k: &str, n: u64, keep_zero: bool| {
        if n > 0 || keep_zero {
            status.insert(k.into(), json!(n));
        } else {
            status.remove(k);
        }
    };
    let active_now = pods
        .iter()
        .filter(|p| !is_terminal(&p.value()) && !is_terminating(&p.value()))
        .count() as u64;
    set_count(&mut status, "active", active_now, false);
    set_count(&mut status, "succeeded", succeeded, false);
    set_count(&mut status, "failed", failed, false);
    set_count(&mut status, "ready", ready as u64, true);
    set_count(&mut status, "terminating", terminating as u64, true);
    let mut unc = serde_json::Map::new();
    if !unc_s.is_empty() {
        unc.insert("succeeded".into(), json!(unc_s));
    }
    if !unc_f.is_empty() {
        unc.insert("failed".into(), json!(unc_f));
    }
    status.insert("uncountedTerminatedPods".into(), json!(unc));
    if !conds.is_empty() {
        status.insert("conditions".into(), json!(conds));
    }
    let desired = Value::Object(status);
    if desired != *old
        && let Err(e) = store.patch(
            &Gvr::jobs(),
            job.namespace(),
            job.name(),
            &PatchKind::Merge,
            &status_patch(job, &desired),
            Some("status"),
        )
    {
        tracing::debug!(error = %e, job = job.name(), "job controller: status write failed");
        return Some(Duration::ZERO);
    }
    // Only once the status records them as uncounted may their finalizers go.
    for uid in unc_s.iter().chain(unc_f.iter()) {
        if let Some(p) = find(uid) {
            remove_tracking_finalizer(store, p);
        }
    }
    next
}
