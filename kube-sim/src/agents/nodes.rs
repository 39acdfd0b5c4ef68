//! Hollow nodes: `kube-sim-node-{i}` Node objects, Ready, with the configured capacity.

use serde_json::{Map, Value, json};

use super::now;
use crate::config::AgentConfig;
use crate::kinds::Gvr;
use crate::store::Store;

/// The name of hollow node `i`.
pub(super) fn node_name(i: usize) -> String {
    format!("kube-sim-node-{i}")
}

/// The InternalIP of hollow node `i` (`172.18.x.y`).
pub(super) fn node_ip(i: usize) -> String {
    let n = i + 2;
    format!("172.18.{}.{}", (n / 250) % 256, n % 250)
}

/// The Node object of hollow node `i`.
fn node(i: usize, config: &AgentConfig) -> Value {
    let name = node_name(i);
    let ts = now();
    let mut labels = Map::new();
    for (k, v) in [
        ("kubernetes.io/hostname", name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", "amd64"),
        ("type", "kube-sim"),
    ] {
        labels.insert(k.into(), json!(v));
    }
    for (k, v) in &config.node_labels {
        labels.insert(k.clone(), json!(v));
    }
    let mut resources = Map::new();
    resources.insert("cpu".into(), json!(config.node_cpu));
    resources.insert("memory".into(), json!(config.node_memory));
    resources.insert("pods".into(), json!(config.node_pods.to_string()));
    for (k, v) in &config.node_extra_resources {
        resources.insert(k.clone(), json!(v));
    }
    let cond = |ty: &str, status: &str, reason: &str, message: &str| {
        json!({"type": ty, "status": status, "reason": reason, "message": message,
               "lastHeartbeatTime": ts, "lastTransitionTime": ts})
    };
    let cidr = format!("10.244.{}.0/24", i % 256);
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kube-sim.io/hollow": "true"},
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": {
            "phase": "Running",
            "capacity": resources.clone(),
            "allocatable": resources,
            "conditions": [
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": node_ip(i)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "kube-sim-v1.35.0",
                "kubeProxyVersion": "kube-sim-v1.35.0",
                "containerRuntimeVersion": "containerd://kube-sim",
                "kernelVersion": "kube-sim",
                "osImage": "kube-sim",
                "machineID": "", "systemUUID": "", "bootID": "",
            },
        },
    })
}

/// Creates the configured hollow nodes (existing ones are kept).
pub(super) fn create_nodes(store: &Store, config: &AgentConfig) {
    for i in 0..config.nodes {
        if let Err(e) = store.create(&Gvr::nodes(), None, node(i, config))
            && e.code != 409
        {
            tracing::warn!(error = %e, node = i, "hollow nodes: create failed");
        }
    }
}
