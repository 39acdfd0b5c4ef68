//! The pod printer: READY, STATUS and RESTARTS computed as kube-apiserver's `printPod` does.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age;
use super::columns::{AGE, Col, NAME, Row};
use super::format::{NONE, created, name};

/// Pod columns (`kubectl get pods`, and with `-o wide`).
pub const COLUMNS: &[Col] = &[
    NAME,
    Col::string("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    Col::string("Status", "The aggregate status of the containers in this pod."),
    Col::string(
        "Restarts",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    Col::string("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.").wide(),
    Col::string("Node", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName.").wide(),
    Col::string("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.").wide(),
    Col::string("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates").wide(),
];

/// The reason kube marks pods on an unreachable node with.
const NODE_LOST: &str = "NodeLost";

fn has_condition(pod: &Value, ty: &str) -> bool {
    conditions(pod).any(|c| c["type"] == ty && c["status"] == "True")
}

fn conditions(pod: &Value) -> impl Iterator<Item = &Value> {
    pod["status"]["conditions"].as_array().into_iter().flatten()
}

fn is_restartable_init(spec: &Value, name: &str) -> bool {
    spec["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["name"] == name && c["restartPolicy"] == "Always")
}

/// The later of `current` and a container's last termination time.
fn later_termination(current: Option<Timestamp>, status: &Value) -> Option<Timestamp> {
    let finished = age::parse(&status["lastState"]["terminated"]["finishedAt"]);
    match (current, finished) {
        (Some(c), Some(f)) => Some(c.max(f)),
        (c, f) => c.or(f),
    }
}

/// A terminated state's reason, else `Signal:N` / `ExitCode:N`.
fn terminated_reason(t: &Value, prefix: &str) -> String {
    match t["reason"].as_str().filter(|r| !r.is_empty()) {
        Some(r) => format!("{prefix}{r}"),
        None => match t["signal"].as_i64().filter(|s| *s != 0) {
            Some(s) => format!("{prefix}Signal:{s}"),
            None => format!("{prefix}ExitCode:{}", t["exitCode"].as_i64().unwrap_or_default()),
        },
    }
}

/// `printPod`.
pub fn row(pod: &Value, now: Timestamp) -> Row {
    let spec = &pod["spec"];
    let status = &pod["status"];
    let init_specs = spec["initContainers"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut total = spec["containers"].as_array().map_or(0, Vec::len);
    total += init_specs.iter().filter(|c| c["restartPolicy"] == "Always").count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut restartable_restarts = 0i64;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_restartable_restart: Option<Timestamp> = None;

    let phase = status["phase"].as_str().unwrap_or_default();
    let mut reason = status["reason"]
        .as_str()
        .filter(|r| !r.is_empty())
        .unwrap_or(phase)
        .to_string();
    if conditions(pod).any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated") {
        reason = "SchedulingGated".into();
    }

    let mut initializing = false;
    let init_statuses = status["initContainerStatuses"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, c) in init_statuses.iter().enumerate() {
        restarts += c["restartCount"].as_i64().unwrap_or_default();
        last_restart = later_termination(last_restart, c);
        let restartable = is_restartable_init(spec, c["name"].as_str().unwrap_or_default());
        if restartable {
            restartable_restarts += c["restartCount"].as_i64().unwrap_or_default();
            last_restartable_restart = later_termination(last_restartable_restart, c);
        }
        let state = &c["state"];
        let terminated = state["terminated"].is_object();
        if terminated && state["terminated"]["exitCode"].as_i64().unwrap_or_default() == 0 {
            continue;
        }
        if restartable && c["started"] == true {
            if c["ready"] == true {
                ready += 1;
            }
            continue;
        }
        let waiting_reason = state["waiting"]["reason"].as_str().unwrap_or_default();
        reason = if terminated {
            terminated_reason(&state["terminated"], "Init:")
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    if !initializing || has_condition(pod, "Initialized") {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        let statuses = status["containerStatuses"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for c in statuses.iter().rev() {
            restarts += c["restartCount"].as_i64().unwrap_or_default();
            last_restart = later_termination(last_restart, c);
            let state = &c["state"];
            let waiting = state["waiting"]["reason"].as_str().unwrap_or_default();
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if state["terminated"].is_object() {
                reason = terminated_reason(&state["terminated"], "");
            } else if c["ready"] == true && state["running"].is_object() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if has_condition(pod, "Ready") {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }

    let deleting = pod["metadata"]["deletionTimestamp"].is_string();
    if deleting && status["reason"] == NODE_LOST {
        reason = "Unknown".into();
    } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
        reason = "Terminating".into();
    }

    let restarts_cell = match last_restart {
        Some(at) if restarts != 0 => format!("{restarts} ({} ago)", age::since_timestamp(at, now)),
        _ => restarts.to_string(),
    };

    let ip = status["podIPs"][0]["ip"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or(NONE);
    let node = spec["nodeName"].as_str().filter(|s| !s.is_empty()).unwrap_or(NONE);
    let nominated = status["nominatedNodeName"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or(NONE);
    let gates = spec["readinessGates"].as_array().map(Vec::as_slice).unwrap_or_default();
    let readiness_gates = if gates.is_empty() {
        NONE.to_string()
    } else {
        let true_count = gates
            .iter()
            .filter(|g| {
                conditions(pod)
                    .find(|c| c["type"] == g["conditionType"])
                    .is_some_and(|c| c["status"] == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };

    let conditions = match phase {
        "Succeeded" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
        ),
        "Failed" => {
            Some(json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]))
        }
        _ => None,
    };
    Row {
        cells: vec![
            name(pod),
            json!(format!("{ready}/{total}")),
            json!(reason),
            json!(restarts_cell),
            created(pod, now),
            json!(ip),
            json!(node),
            json!(nominated),
            json!(readiness_gates),
        ],
        conditions,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    use crate::http::table::test_clock::now;

    fn pod(status: Value) -> Value {
        json!({
            "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:56:40Z"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "node-1"},
            "status": status,
        })
    }

    fn cells(p: &Value) -> Vec<String> {
        row(p, now())
            .cells
            .iter()
            .map(|c| c.as_str().map(str::to_string).unwrap_or_else(|| c.to_string()))
            .collect()
    }

    #[test]
    fn print_pod_pending_without_statuses() {
        let p = pod(json!({"phase": "Pending"}));
        assert_eq!(
            cells(&p),
            [
                "p", "0/2", "Pending", "0", "3m20s", "<none>", "node-1", "<none>", "<none>"
            ]
        );
    }

    #[test]
    fn print_pod_container_creating_from_waiting_reason() {
        let p = pod(json!({"phase": "Pending", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}},
            {"name": "b", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}},
        ]}));
        assert_eq!(cells(&p)[2], "ContainerCreating");
    }

    #[test]
    fn print_pod_running_ready_with_ip() {
        let p = pod(
            json!({"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}], "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"running": {}}},
            ]}),
        );
        let c = cells(&p);
        assert_eq!(&c[1..4], ["1/2", "Running", "0"]);
        assert_eq!(c[5], "10.0.0.5");
    }

    #[test]
    fn print_pod_crash_loop_restarts_with_last_restart_age() {
        let p = pod(json!({"phase": "Running", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 5,
             "state": {"waiting": {"reason": "CrashLoopBackOff"}},
             "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-01-01T00:55:00Z"}}},
        ]}));
        let c = cells(&p);
        assert_eq!(&c[2..4], ["CrashLoopBackOff", "5 (5m ago)"]);
    }

    #[test]
    fn print_pod_completed_error_and_exit_codes() {
        let done = pod(json!({"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "ready": false, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}));
        assert_eq!(cells(&done)[2], "Completed");
        assert_eq!(row(&done, now()).conditions.unwrap()[0]["reason"], "Succeeded");
        let failed = pod(json!({"phase": "Failed", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}]}));
        assert_eq!(cells(&failed)[2], "Error");
        let coded = pod(json!({"phase": "Failed", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 3}}}]}));
        assert_eq!(cells(&coded)[2], "ExitCode:3");
        let signalled = pod(json!({"phase": "Failed", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 137, "signal": 9}}}]}));
        assert_eq!(cells(&signalled)[2], "Signal:9");
    }

    #[test]
    fn print_pod_init_containers_progress() {
        let mut p = pod(json!({"phase": "Pending", "initContainerStatuses": [
            {"name": "i0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "i1", "state": {"running": {}}},
        ]}));
        p["spec"]["initContainers"] = json!([{"name": "i0"}, {"name": "i1"}]);
        assert_eq!(cells(&p)[2], "Init:1/2");
        p["status"]["initContainerStatuses"][1]["state"] = json!({"waiting": {"reason": "CrashLoopBackOff"}});
        assert_eq!(cells(&p)[2], "Init:CrashLoopBackOff");
        p["status"]["initContainerStatuses"][1]["state"] = json!({"terminated": {"exitCode": 1, "reason": "Error"}});
        assert_eq!(cells(&p)[2], "Init:Error");
    }

    #[test]
    fn print_pod_sidecars_count_toward_ready_and_total() {
        let mut p = pod(json!({"phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{"name": "side", "started": true, "ready": true, "restartCount": 1,
                "state": {"running": {}}}],
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                {"name": "b", "ready": true, "restartCount": 0, "state": {"running": {}}}]}));
        p["spec"]["initContainers"] = json!([{"name": "side", "restartPolicy": "Always"}]);
        assert_eq!(&cells(&p)[1..4], ["3/3", "Running", "1"]);
    }

    #[test]
    fn print_pod_terminating_and_node_lost() {
        let mut p = pod(json!({"phase": "Running"}));
        p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:59:00Z");
        assert_eq!(cells(&p)[2], "Terminating");
        p["status"]["reason"] = json!("NodeLost");
        assert_eq!(cells(&p)[2], "Unknown");
        let mut done = pod(json!({"phase": "Succeeded"}));
        done["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:59:00Z");
        assert_eq!(cells(&done)[2], "Succeeded");
    }

    #[test]
    fn print_pod_scheduling_gated_and_readiness_gates() {
        let mut p = pod(json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"},
            {"type": "example.com/gate", "status": "True"}]}));
        p["spec"]["readinessGates"] = json!([{"conditionType": "example.com/gate"}, {"conditionType": "other"}]);
        let c = cells(&p);
        assert_eq!(c[2], "SchedulingGated");
        assert_eq!(c[8], "1/2");
    }
}
