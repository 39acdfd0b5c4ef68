//! The StatefulSet controller: pods `<statefulset>-<ordinal>` with stable hostnames, created in order and only
//! once every lower ordinal is Running and Ready (`OrderedReady`) or all at once (`Parallel`), removed from the
//! highest ordinal down, rolled to a new template from the highest ordinal down to `partition`, and the status
//! with `currentRevision`/`updateRevision`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::workload::{
    CONTROLLER_REVISION_HASH, Extra, PodName, Reconciler, availability, delete_child, generation, is_ready,
    pod_from_template, spec_i64, template_hash, write_status,
};
use super::{is_terminal, is_terminating, phase};
use crate::error::ApiError;
use crate::kinds::Gvr;
use crate::store::{Store, StoredObject};

/// Label: the pod's own name, for per-pod Services.
pub const LABEL_POD_NAME: &str = "statefulset.kubernetes.io/pod-name";
/// Label: the pod's ordinal.
pub const LABEL_POD_INDEX: &str = "apps.kubernetes.io/pod-index";

/// The `apps/v1` StatefulSets resource.
pub(super) fn statefulsets() -> Gvr {
    Gvr::new("apps", "v1", "statefulsets")
}

/// The StatefulSet controller (stateless between passes).
pub(super) struct StatefulSetController;

fn ordinal_of(set: &str, pod: &str) -> Option<usize> {
    let rest = pod.strip_prefix(set)?.strip_prefix('-')?;
    if rest.starts_with('0') && rest.len() > 1 {
        return None;
    }
    rest.parse().ok()
}

fn revision_of(pod: &Value) -> &str {
    pod["metadata"]["labels"][CONTROLLER_REVISION_HASH]
        .as_str()
        .unwrap_or_default()
}

fn running_and_ready(pod: &Value) -> bool {
    phase(pod) == "Running" && is_ready(pod)
}

impl Reconciler for StatefulSetController {
    fn owner(&self) -> Gvr {
        statefulsets()
    }

    fn owner_kind(&self) -> &'static str {
        "StatefulSet"
    }

    fn child(&self) -> Gvr {
        Gvr::pods()
    }

    fn reconcile(
        &mut self,
        store: &Store,
        set: &StoredObject,
        pods: &[Arc<StoredObject>],
        _extra: Extra<'_>,
    ) -> Result<Option<Duration>, ApiError> {
        if is_terminating(&set.value()) {
            return Ok(None);
        }
        let v = &set.value();
        let spec = &v["spec"];
        let replicas = spec_i64(v, "replicas", 1).max(0) as usize;
        let min_ready = spec_i64(v, "minReadySeconds", 0);
        let parallel = spec["podManagementPolicy"] == "Parallel";
        let on_delete = spec["updateStrategy"]["type"] == "OnDelete";
        let partition = spec["updateStrategy"]["rollingUpdate"]["partition"]
            .as_u64()
            .unwrap_or(0) as usize;
        // Upstream always hashes with a collision count, zero until a collision.
        let collisions = v["status"]["collisionCount"].as_u64().unwrap_or(0) as u32;
        let update_revision = format!("{}-{}", set.name(), template_hash(&spec["template"], Some(collisions)));
        let current_revision = v["status"]["currentRevision"]
            .as_str()
            .filter(|r| !r.is_empty())
            .unwrap_or(&update_revision)
            .to_string();
        let by_ordinal: BTreeMap<usize, &Arc<StoredObject>> = pods
            .iter()
            .filter_map(|p| ordinal_of(set.name(), p.name()).map(|o| (o, p)))
            .collect();
        let step = self.step(store, set, &by_ordinal, replicas, parallel, &update_revision);
        // Rolling update: once every pod is Running and Ready, replace the highest outdated ordinal.
        let mut step = step;
        if step.is_ok()
            && !on_delete
            && by_ordinal.len() == replicas
            && by_ordinal
                .values()
                .all(|p| running_and_ready(&p.value()) && !is_terminating(&p.value()))
            && let Some((_, p)) = by_ordinal
                .iter()
                .rev()
                .find(|(o, p)| **o >= partition && **o < replicas && revision_of(&p.value()) != update_revision)
        {
            step = delete_child(store, &Gvr::pods(), p);
        }
        let mut status = v["status"].as_object().cloned().unwrap_or_default();
        let (mut count, mut ready, mut available, mut current, mut updated) = (0, 0, 0, 0, 0);
        let mut next: Option<Duration> = None;
        for p in pods {
            count += 1;
            if running_and_ready(&p.value()) {
                ready += 1;
                match availability(&p.value(), min_ready) {
                    (true, _) => available += 1,
                    (false, Some(w)) => next = Some(next.map_or(w, |n| n.min(w))),
                    (false, None) => {}
                }
            }
            let value = p.value();
            if !is_terminating(&value) {
                let r = revision_of(&value);
                if r == current_revision {
                    current += 1;
                }
                if r == update_revision {
                    updated += 1;
                }
            }
        }
        let (current_revision, current) = if updated == replicas && count == replicas {
            (update_revision.clone(), updated)
        } else {
            (current_revision, current)
        };
        status.insert("observedGeneration".into(), json!(generation(v)));
        status.insert("replicas".into(), json!(count));
        status.insert("availableReplicas".into(), json!(available));
        for (k, n) in [
            ("readyReplicas", ready),
            ("currentReplicas", current),
            ("updatedReplicas", updated),
        ] {
            if n > 0 {
                status.insert(k.into(), json!(n));
            } else {
                status.remove(k);
            }
        }
        status.insert("currentRevision".into(), json!(current_revision));
        status.insert("updateRevision".into(), json!(update_revision));
        status.insert("collisionCount".into(), json!(collisions));
        write_status(store, &statefulsets(), set, &serde_json::Value::Object(status))?;
        step.map(|()| next)
    }
}

impl StatefulSetController {
    /// Creates missing ordinals and removes surplus and failed ones, in the order the policy allows.
    fn step(
        &self,
        store: &Store,
        set: &StoredObject,
        by_ordinal: &BTreeMap<usize, &Arc<StoredObject>>,
        replicas: usize,
        parallel: bool,
        revision: &str,
    ) -> Result<(), ApiError> {
        for ordinal in 0..replicas {
            match by_ordinal.get(&ordinal) {
                None => {
                    store.create(&Gvr::pods(), set.namespace(), new_pod(set, ordinal, revision))?;
                    if !parallel {
                        return Ok(());
                    }
                }
                Some(p) if is_terminal(&p.value()) && !is_terminating(&p.value()) => {
                    // A failed or finished pod is replaced under the same name.
                    delete_child(store, &Gvr::pods(), p)?;
                    if !parallel {
                        return Ok(());
                    }
                }
                Some(p) if !parallel && (!running_and_ready(&p.value()) || is_terminating(&p.value())) => return Ok(()),
                Some(_) => {}
            }
        }
        let surplus: Vec<&&Arc<StoredObject>> = by_ordinal.range(replicas..).rev().map(|(_, p)| p).collect();
        for p in surplus {
            if is_terminating(&p.value()) {
                if parallel {
                    continue;
                }
                return Ok(());
            }
            delete_child(store, &Gvr::pods(), p)?;
            if !parallel {
                return Ok(());
            }
        }
        Ok(())
    }
}

fn new_pod(set: &StoredObject, ordinal: usize, revision: &str) -> Value {
    let name = format!("{}-{ordinal}", set.name());
    let labels = [
        (CONTROLLER_REVISION_HASH, revision.to_string()),
        (LABEL_POD_NAME, name.clone()),
        (LABEL_POD_INDEX, ordinal.to_string()),
    ];
    let template = &set.value()["spec"]["template"];
    let mut pod = pod_from_template(set, "StatefulSet", template, PodName::Fixed(&name), &labels);
    pod["spec"]["hostname"] = json!(name);
    if let Some(svc) = set.value()["spec"]["serviceName"].as_str().filter(|s| !s.is_empty()) {
        pod["spec"]["subdomain"] = json!(svc);
    }
    pod
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statefulset_ordinals_parse_only_canonical_numbers() {
        assert_eq!(ordinal_of("web", "web-0"), Some(0));
        assert_eq!(ordinal_of("web", "web-12"), Some(12));
        assert_eq!(ordinal_of("web", "web-01"), None);
        assert_eq!(ordinal_of("web", "webx-1"), None);
        assert_eq!(ordinal_of("web", "web-a"), None);
    }
}
