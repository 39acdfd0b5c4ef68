//! The ReplicaSet controller: keeps `spec.replicas` active pods named `<replicaset>-<5 random>` (controller
//! owner references), deletes surplus pods in upstream's order (unscheduled, pending, not ready, shortest ready,
//! most restarts, newest first) and reports `replicas`, `fullyLabeledReplicas`, `readyReplicas`,
//! `availableReplicas` and `observedGeneration`.

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::workload::{
    Extra, PodName, Reconciler, availability, delete_child, generation, is_active, is_ready, pod_from_template,
    spec_i64, write_status,
};
use super::{is_terminating, node_name, phase};
use crate::error::ApiError;
use crate::kinds::Gvr;
use crate::store::{Store, StoredObject};

/// Most pods created or deleted for one ReplicaSet in one pass (upstream's `BurstReplicas`).
const BURST_REPLICAS: usize = 500;

/// The `apps/v1` ReplicaSets resource.
pub(super) fn replicasets() -> Gvr {
    Gvr::new("apps", "v1", "replicasets")
}

/// The ReplicaSet controller (stateless between passes).
pub(super) struct ReplicaSetController;

fn phase_rank(pod: &Value) -> u8 {
    match phase(pod) {
        "Pending" => 0,
        "Unknown" => 1,
        _ => 2,
    }
}

fn restarts(pod: &Value) -> i64 {
    pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["restartCount"].as_i64().unwrap_or(0))
        .max()
        .unwrap_or(0)
}

fn deletion_cost(pod: &Value) -> i64 {
    pod["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn ready_time(pod: &Value) -> String {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn created(pod: &Value) -> &str {
    pod["metadata"]["creationTimestamp"].as_str().unwrap_or_default()
}

/// Upstream's `ActivePods` order: the pods to delete first sort first.
pub(super) fn deletion_order(a: &Value, b: &Value) -> Ordering {
    let assigned = |p: &Value| node_name(p).is_some();
    assigned(a)
        .cmp(&assigned(b))
        .then_with(|| phase_rank(a).cmp(&phase_rank(b)))
        .then_with(|| is_ready(a).cmp(&is_ready(b)))
        .then_with(|| deletion_cost(a).cmp(&deletion_cost(b)))
        .then_with(|| {
            if is_ready(a) && is_ready(b) {
                // Ready more recently goes first.
                ready_time(b).cmp(&ready_time(a))
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| restarts(b).cmp(&restarts(a)))
        .then_with(|| created(b).cmp(created(a)))
}

fn fully_labeled(pod: &Value, template_labels: &Value) -> bool {
    template_labels
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| pod["metadata"]["labels"][k] == *v)
}

impl Reconciler for ReplicaSetController {
    fn owner(&self) -> Gvr {
        replicasets()
    }

    fn owner_kind(&self) -> &'static str {
        "ReplicaSet"
    }

    fn child(&self) -> Gvr {
        Gvr::pods()
    }

    fn reconcile(
        &mut self,
        store: &Store,
        rs: &StoredObject,
        pods: &[Arc<StoredObject>],
        _extra: Extra<'_>,
    ) -> Result<Option<Duration>, ApiError> {
        if is_terminating(&rs.value()) {
            return Ok(None);
        }
        let spec = &rs.value()["spec"];
        let replicas = spec_i64(&rs.value(), "replicas", 1).max(0) as usize;
        let min_ready = spec_i64(&rs.value(), "minReadySeconds", 0);
        let mut active: Vec<Arc<StoredObject>> = pods.iter().filter(|p| is_active(&p.value())).cloned().collect();
        let mut result = Ok(());
        if active.len() < replicas {
            for _ in 0..(replicas - active.len()).min(BURST_REPLICAS) {
                let pod = pod_from_template(rs, "ReplicaSet", &spec["template"], PodName::Generate(rs.name()), &[]);
                if let Err(e) = store.create(&Gvr::pods(), rs.namespace(), pod) {
                    result = Err(e);
                    break;
                }
            }
        } else if active.len() > replicas {
            active.sort_by(|a, b| deletion_order(&a.value(), &b.value()));
            for pod in active.iter().take((active.len() - replicas).min(BURST_REPLICAS)) {
                if let Err(e) = delete_child(store, &Gvr::pods(), pod) {
                    result = Err(e);
                }
            }
        }
        let mut next: Option<Duration> = None;
        let (mut ready, mut available) = (0, 0);
        for p in &active {
            if is_ready(&p.value()) {
                ready += 1;
            }
            match availability(&p.value(), min_ready) {
                (true, _) => available += 1,
                (false, Some(wait)) => next = Some(next.map_or(wait, |n| n.min(wait))),
                (false, None) => {}
            }
        }
        let labels = &spec["template"]["metadata"]["labels"];
        let mut status = rs.value()["status"].as_object().cloned().unwrap_or_default();
        status.insert("replicas".into(), json!(active.len()));
        let fully = active.iter().filter(|p| fully_labeled(&p.value(), labels)).count();
        for (k, n) in [
            ("fullyLabeledReplicas", fully),
            ("readyReplicas", ready),
            ("availableReplicas", available),
        ] {
            if n > 0 {
                status.insert(k.into(), json!(n));
            } else {
                status.remove(k);
            }
        }
        status.insert("observedGeneration".into(), json!(generation(&rs.value())));
        write_status(store, &replicasets(), rs, &Value::Object(status))?;
        result.map(|()| next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicaset_scale_down_prefers_unscheduled_then_not_ready_then_newest() {
        let unscheduled = json!({"metadata": {"name": "a"}, "spec": {}, "status": {"phase": "Pending"}});
        let not_ready = json!({"metadata": {"name": "b"}, "spec": {"nodeName": "n"}, "status": {"phase": "Running"}});
        let ready_old = json!({
            "metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"nodeName": "n"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"}]}
        });
        let ready_new = json!({
            "metadata": {"name": "d", "creationTimestamp": "2026-01-01T00:00:05Z"}, "spec": {"nodeName": "n"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:06Z"}]}
        });
        let mut pods = [&ready_old, &ready_new, &not_ready, &unscheduled];
        pods.sort_by(|a, b| deletion_order(a, b));
        let names: Vec<&str> = pods.iter().map(|p| p["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a", "b", "d", "c"]);
    }
}
