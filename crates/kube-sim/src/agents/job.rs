//! The Job controller (spec §4.4): creates pods for `batch/v1` Jobs, tracks them with the
//! `batch.kubernetes.io/job-tracking` finalizer and `uncountedTerminatedPods`, and writes the terminal
//! conditions (`SuccessCriteriaMet` → `Complete`, `FailureTarget` → `Failed`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{
    JOB_TRACKING_FINALIZER, condition_true, controller_uid, has_finalizer, is_terminal, is_terminating, list_all,
    node_name, now, phase, set_condition, status_patch,
};
use crate::kinds::Gvr;
use crate::patch::PatchKind;
use crate::store::{DeleteOptions, Propagation, Store, StoredObject};

/// Annotation and label of an Indexed Job pod's completion index.
const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// The Job controller (stateless between passes).
#[derive(Debug, Default)]
pub(super) struct JobController;

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

impl JobController {
    pub(super) fn new() -> Self {
        Self
    }

    /// One pass over every Job.
    pub(super) fn pass(&mut self, store: &Store) -> Option<Duration> {
        let pods = list_all(store, &Gvr::pods());
        let jobs = list_all(store, &Gvr::jobs());
        // Orphans (no controller, or their Job is gone) lose the tracking finalizer, as upstream.
        let job_uids: BTreeSet<&str> = jobs.iter().map(|j| j.uid()).collect();
        for p in &pods {
            if has_finalizer(&p.value, JOB_TRACKING_FINALIZER)
                && controller_uid(&p.value).is_none_or(|u| !job_uids.contains(u))
            {
                remove_tracking_finalizer(store, p);
            }
        }
        let mut next = None;
        for job in jobs {
            let owned: Vec<&Arc<StoredObject>> = pods
                .iter()
                .filter(|p| controller_uid(&p.value) == Some(job.uid()))
                .collect();
            if let Some(d) = reconcile(store, &job, &owned) {
                next = Some(next.map_or(d, |n: Duration| n.min(d)));
            }
        }
        next
    }
}

fn remove_tracking_finalizer(store: &Store, pod: &StoredObject) {
    let fins: Vec<Value> = pod.value["metadata"]["finalizers"]
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
        tracing::debug!(error = %e, pod = pod.name(), "job controller: finalizer removal failed");
    }
}

fn delete_pod(store: &Store, pod: &StoredObject) {
    let opts = DeleteOptions {
        propagation: Some(Propagation::Background),
        precondition_uid: Some(pod.uid().to_string()),
        ..DeleteOptions::default()
    };
    let _ = store.delete(&Gvr::pods(), pod.namespace(), pod.name(), &opts);
}

fn new_pod(job: &StoredObject, index: Option<usize>) -> Value {
    let spec = &job.value["spec"];
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
    let v = &job.value;
    let spec = &v["spec"];
    let old = &v["status"];
    let finished = condition_true(v, "Complete") || condition_true(v, "Failed");
    if finished {
        for p in pods
            .iter()
            .filter(|p| is_terminal(&p.value) && has_finalizer(&p.value, JOB_TRACKING_FINALIZER))
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
                let _ = store.delete(&Gvr::jobs(), job.namespace(), job.name(), &opts);
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
        set.retain(|u| find(u).is_some_and(|p| has_finalizer(&p.value, JOB_TRACKING_FINALIZER)));
        (before - set.len()) as u64
    };
    succeeded += counted(&mut unc_s);
    failed += counted(&mut unc_f);
    // Newly finished pods become uncounted.
    for p in pods.iter().filter(|p| has_finalizer(&p.value, JOB_TRACKING_FINALIZER)) {
        let uid = p.uid().to_string();
        if unc_s.contains(&uid) || unc_f.contains(&uid) {
            continue;
        }
        match phase(&p.value) {
            "Succeeded" => {
                unc_s.insert(uid);
            }
            "Failed" => {
                unc_f.insert(uid);
            }
            _ if is_terminating(&p.value) && node_name(&p.value).is_none() => {
                unc_f.insert(uid);
            }
            _ => {}
        }
    }
    let active: Vec<&&Arc<StoredObject>> = pods
        .iter()
        .filter(|p| !is_terminal(&p.value) && !is_terminating(&p.value))
        .collect();
    let terminating = pods
        .iter()
        .filter(|p| !is_terminal(&p.value) && is_terminating(&p.value))
        .count();
    let ready = active
        .iter()
        .filter(|p| super::condition_true(&p.value, "Ready"))
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
                .filter(|p| !is_terminating(&p.value) && phase(&p.value) != "Failed")
                .filter_map(|p| p.value["metadata"]["labels"][COMPLETION_INDEX].as_str()?.parse().ok())
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
        .filter(|p| !is_terminal(&p.value) && !is_terminating(&p.value))
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
