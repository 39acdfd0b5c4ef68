//! The DaemonSet controller: one pod per eligible node (the template's `nodeSelector` matches the node's
//! labels), bound to its node with upstream's `matchFields` node affinity and tolerations, old pods replaced
//! within `maxUnavailable` on a template change, and the status counts (`desiredNumberScheduled`,
//! `currentNumberScheduled`, `numberReady`, `updatedNumberScheduled`, `numberAvailable`, ...).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::workload::{
    CONTROLLER_REVISION_HASH, Extra, PodName, Reconciler, availability, delete_child, generation, is_active, is_ready,
    pod_from_template, scaled_value, spec_i64, template_hash, write_status,
};
use super::{is_terminal, is_terminating, node_name};
use crate::error::ApiError;
use crate::kinds::Gvr;
use crate::store::{Store, StoredObject};

/// Label: the DaemonSet generation a pod was created from.
const POD_TEMPLATE_GENERATION: &str = "pod-template-generation";

/// The `apps/v1` DaemonSets resource.
pub(super) fn daemonsets() -> Gvr {
    Gvr::new("apps", "v1", "daemonsets")
}

/// The DaemonSet controller (stateless between passes).
pub(super) struct DaemonSetController;

/// Taint tolerations every daemon pod gets, as upstream's `AddOrUpdateDaemonPodTolerations`.
fn daemon_tolerations() -> Vec<Value> {
    let mut t = vec![
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}),
        json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}),
    ];
    for key in ["disk-pressure", "memory-pressure", "pid-pressure", "unschedulable"] {
        t.push(json!({"key": format!("node.kubernetes.io/{key}"), "operator": "Exists", "effect": "NoSchedule"}));
    }
    t
}

/// Whether the daemon pod template may run on `node`: its `nodeSelector` matches and every NoSchedule or
/// NoExecute taint is tolerated.
fn eligible(template: &Value, node: &Value) -> bool {
    let labels = &node["metadata"]["labels"];
    let selected = template["spec"]["nodeSelector"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels[k] == *v);
    let tolerations: Vec<Value> = template["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .chain(daemon_tolerations())
        .collect();
    let tolerated = |taint: &Value| {
        tolerations.iter().any(|t| {
            let key_ok = t["key"].is_null() || t["key"] == taint["key"];
            let effect_ok = t["effect"].is_null() || t["effect"] == taint["effect"];
            let value_ok = t["operator"] == "Exists" || t["value"] == taint["value"];
            key_ok && effect_ok && value_ok
        })
    };
    let taints_ok = node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["effect"] != "PreferNoSchedule")
        .all(tolerated);
    selected && taints_ok
}

impl Reconciler for DaemonSetController {
    fn owner(&self) -> Gvr {
        daemonsets()
    }

    fn owner_kind(&self) -> &'static str {
        "DaemonSet"
    }

    fn child(&self) -> Gvr {
        Gvr::pods()
    }

    fn extra(&self) -> Vec<Gvr> {
        vec![Gvr::nodes()]
    }

    fn reconcile(
        &mut self,
        store: &Store,
        ds: &StoredObject,
        pods: &[Arc<StoredObject>],
        extra: Extra<'_>,
    ) -> Result<Option<Duration>, ApiError> {
        if is_terminating(&ds.value()) {
            return Ok(None);
        }
        let v = &ds.value();
        let template = &v["spec"]["template"];
        let min_ready = spec_i64(v, "minReadySeconds", 0);
        let collisions = v["status"]["collisionCount"].as_u64().map(|c| c as u32);
        let hash = template_hash(template, collisions);
        let nodes: Vec<&Arc<StoredObject>> = extra.first().into_iter().flat_map(|m| m.values()).collect();
        let mut on_node: BTreeMap<String, Vec<&Arc<StoredObject>>> = BTreeMap::new();
        for p in pods {
            let value = p.value();
            if (is_active(&value) || is_terminal(&value))
                && let Some(n) = node_name(&value)
            {
                on_node.entry(n.to_string()).or_default().push(p);
            }
        }
        let mut result: Result<(), ApiError> = Ok(());
        let mut remember = |r: Result<(), ApiError>| {
            if let Err(e) = r {
                result = Err(e);
            }
        };
        let (mut desired, mut current, mut misscheduled, mut ready, mut updated, mut available) = (0, 0, 0, 0, 0, 0);
        let mut next: Option<Duration> = None;
        let mut outdated: Vec<&Arc<StoredObject>> = Vec::new();
        let mut unavailable_now = 0;
        for node in &nodes {
            let wanted = eligible(template, &node.value());
            let here = on_node.get(node.name()).cloned().unwrap_or_default();
            if !wanted {
                if here.iter().any(|p| is_active(&p.value())) {
                    misscheduled += 1;
                }
                for p in here.iter().filter(|p| !is_terminating(&p.value())) {
                    remember(delete_child(store, &Gvr::pods(), p));
                }
                continue;
            }
            desired += 1;
            let live: Vec<&&Arc<StoredObject>> = here.iter().filter(|p| is_active(&p.value())).collect();
            for p in here
                .iter()
                .filter(|p| is_terminal(&p.value()) && !is_terminating(&p.value()))
            {
                remember(delete_child(store, &Gvr::pods(), p));
            }
            let Some(pod) = live.first() else {
                if !here.iter().any(|p| is_terminating(&p.value())) {
                    remember(
                        store
                            .create(&Gvr::pods(), ds.namespace(), new_pod(ds, node.name(), &hash))
                            .map(|_| ()),
                    );
                }
                unavailable_now += 1;
                continue;
            };
            current += 1;
            for extra_pod in live.iter().skip(1) {
                remember(delete_child(store, &Gvr::pods(), extra_pod));
            }
            if is_ready(&pod.value()) {
                ready += 1;
            }
            match availability(&pod.value(), min_ready) {
                (true, _) => available += 1,
                (false, wait) => {
                    unavailable_now += 1;
                    if let Some(w) = wait {
                        next = Some(next.map_or(w, |n| n.min(w)));
                    }
                }
            }
            if pod.value()["metadata"]["labels"][CONTROLLER_REVISION_HASH] == hash.as_str() {
                updated += 1;
            } else {
                outdated.push(pod);
            }
        }
        if v["spec"]["updateStrategy"]["type"] != "OnDelete" {
            let max_unavailable = scaled_value(
                &v["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"],
                desired,
                true,
            )
            .max(1);
            let budget = (max_unavailable - unavailable_now).max(0) as usize;
            // Unavailable outdated pods go first: replacing them costs nothing.
            outdated.sort_by_key(|p| availability(&p.value(), min_ready).0);
            for p in outdated.into_iter().take(budget) {
                remember(delete_child(store, &Gvr::pods(), p));
            }
        }
        let mut status = v["status"].as_object().cloned().unwrap_or_default();
        let counts = [
            ("currentNumberScheduled", current, true),
            ("numberMisscheduled", misscheduled, true),
            ("desiredNumberScheduled", desired, true),
            ("numberReady", ready, true),
            ("observedGeneration", generation(v), false),
            ("updatedNumberScheduled", updated, false),
            ("numberAvailable", available, false),
            ("numberUnavailable", (desired - available).max(0), false),
        ];
        for (k, n, always) in counts {
            if always || n != 0 {
                status.insert(k.into(), json!(n));
            } else {
                status.remove(k);
            }
        }
        write_status(store, &daemonsets(), ds, &Value::Object(status))?;
        result.map(|()| next)
    }
}

fn new_pod(ds: &StoredObject, node: &str, hash: &str) -> Value {
    let labels = [
        (CONTROLLER_REVISION_HASH, hash.to_string()),
        (POD_TEMPLATE_GENERATION, generation(&ds.value()).to_string()),
    ];
    let template = &ds.value()["spec"]["template"];
    let mut pod = pod_from_template(ds, "DaemonSet", template, PodName::Generate(ds.name()), &labels);
    let spec = &mut pod["spec"];
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    });
    let mut tolerations = spec["tolerations"].as_array().cloned().unwrap_or_default();
    for t in daemon_tolerations() {
        if !tolerations
            .iter()
            .any(|x| x["key"] == t["key"] && x["effect"] == t["effect"])
        {
            tolerations.push(t);
        }
    }
    spec["tolerations"] = json!(tolerations);
    // The hollow scheduler does not read `matchFields`, so the pod is bound here, to the node it names.
    spec["nodeName"] = json!(node);
    pod
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemonset_runs_only_on_nodes_its_selector_and_tolerations_allow() {
        let template = json!({"spec": {"nodeSelector": {"pool": "gpu"}}});
        let gpu = json!({"metadata": {"labels": {"pool": "gpu"}}, "spec": {}});
        let cpu = json!({"metadata": {"labels": {"pool": "cpu"}}, "spec": {}});
        let tainted = json!({"metadata": {"labels": {"pool": "gpu"}},
            "spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}});
        let cordoned = json!({"metadata": {"labels": {"pool": "gpu"}},
            "spec": {"taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}});
        assert!(eligible(&template, &gpu));
        assert!(!eligible(&template, &cpu));
        assert!(!eligible(&template, &tainted));
        assert!(eligible(&template, &cordoned));
    }
}
