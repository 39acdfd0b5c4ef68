//! The pod status of a process pod, from the process runtime's view: phase, IPs, container statuses and
//! the conditions the kubelet derives from them.

use serde_json::{Map, Value, json};

use super::kubelet::{order_conditions, readiness_gates_ok};
use super::set_condition;
use crate::runtime::PodView;
use crate::runtime::view::ContainerView;

/// Whether `phase` is final.
pub(super) fn is_terminal_phase(phase: &str) -> bool {
    matches!(phase, "Succeeded" | "Failed")
}

fn names(list: &[ContainerView], pick: impl Fn(&ContainerView) -> bool) -> String {
    let n: Vec<&str> = list.iter().filter(|c| pick(c)).map(|c| c.name.as_str()).collect();
    n.join(" ")
}

/// Writes `view` into `st` (the pod's status with the kubelet's base fields already set).
pub(super) fn apply(st: &mut Map<String, Value>, pod: &Value, view: &PodView) {
    st.insert("phase".into(), json!(view.phase));
    if !view.pod_ip.is_empty() {
        st.insert("podIP".into(), json!(view.pod_ip));
        st.insert("podIPs".into(), json!([{"ip": view.pod_ip}]));
    }
    st.insert(
        "containerStatuses".into(),
        json!(view.main.iter().map(ContainerView::to_json).collect::<Vec<_>>()),
    );
    if view.init.is_empty() {
        st.remove("initContainerStatuses");
    } else {
        st.insert(
            "initContainerStatuses".into(),
            json!(view.init.iter().map(ContainerView::to_json).collect::<Vec<_>>()),
        );
    }
    let mut conds: Vec<Value> = st
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let terminal = is_terminal_phase(view.phase);
    let sandbox_ready = !view.pod_ip.is_empty() && !terminal;
    set_condition(
        &mut conds,
        "PodReadyToStartContainers",
        if sandbox_ready { "True" } else { "False" },
        None,
        None,
    );
    if view.initialized {
        set_condition(&mut conds, "Initialized", "True", None, None);
    } else {
        let msg = format!(
            "containers with incomplete status: [{}]",
            names(&view.init, |c| !(c.started && c.container_id.is_some()))
        );
        set_condition(
            &mut conds,
            "Initialized",
            "False",
            Some("ContainersNotInitialized"),
            Some(&msg),
        );
    }
    set_condition(&mut conds, "PodScheduled", "True", None, None);
    let unready = names(&view.main, |c| !c.ready);
    if terminal {
        set_condition(&mut conds, "ContainersReady", "False", Some("PodCompleted"), None);
        set_condition(&mut conds, "Ready", "False", Some("PodCompleted"), None);
    } else if unready.is_empty() && !view.main.is_empty() {
        set_condition(&mut conds, "ContainersReady", "True", None, None);
        if readiness_gates_ok(pod, &conds) {
            set_condition(&mut conds, "Ready", "True", None, None);
        } else {
            set_condition(
                &mut conds,
                "Ready",
                "False",
                Some("ReadinessGatesNotReady"),
                Some("the status of pod readiness gate is not \"True\""),
            );
        }
    } else {
        let msg = format!("containers with unready status: [{unready}]");
        set_condition(
            &mut conds,
            "ContainersReady",
            "False",
            Some("ContainersNotReady"),
            Some(&msg),
        );
        set_condition(&mut conds, "Ready", "False", Some("ContainersNotReady"), Some(&msg));
    }
    order_conditions(&mut conds);
    st.insert("conditions".into(), json!(conds));
}
