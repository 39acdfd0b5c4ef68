//! The compact pod and head-service records the RayCluster controller keeps per cluster, and the
//! observed state a reconcile pass plans from.

use super::index::Compact;
use super::slim::SlimPod;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use ray_api::constants::{
    KUBERAY_VERSION_ANNOTATION, NODE_TYPE_HEAD, NODE_TYPE_WORKER, RAY_CLUSTER_LABEL, RAY_ID_LABEL,
    RAY_NODE_GROUP_LABEL, RAY_NODE_TYPE_LABEL, UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION,
    WORKER_TEMPLATE_HASH_ANNOTATION,
};
use ray_autoscale::ObservedPod;
use std::collections::HashSet;
use std::sync::Arc;

/// `ray.io/node-type` of a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodRole {
    /// `head`.
    Head,
    /// `worker`.
    Worker,
    /// Anything else (`redis-cleanup`, missing).
    Other,
}

/// The pod's `Ready` condition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadyCondition {
    /// `True` / `False` / `Unknown`.
    pub status: String,
    /// Condition reason.
    pub reason: String,
    /// Condition message.
    pub message: String,
}

/// The first container that is waiting or terminated (for the `HeadPodReady` condition).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerProblem {
    /// Container name.
    pub container: String,
    /// Waiting/terminated reason.
    pub reason: String,
    /// Waiting/terminated message.
    pub message: String,
}

/// Everything reconcile reads from a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodInfo {
    /// Phase, restart policy, Ray container state, deletion and multi-host labels.
    pub pod: ObservedPod,
    /// Node type.
    pub role: PodRole,
    /// `ray.io/group` label.
    pub group: String,
    /// `status.podIP`.
    pub pod_ip: String,
    /// `Ready` condition, if reported.
    pub ready: Option<ReadyCondition>,
    /// First waiting/terminated container (head pods only).
    pub container_problem: Option<ContainerProblem>,
    /// Pending without a `PodScheduled=True` condition: the pod waits for a node.
    pub awaiting_node: bool,
    /// What upgrades read from the pod.
    pub upgrade: UpgradeMarks,
}

/// The annotations and age upgrades compare (empty strings when absent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpgradeMarks {
    /// `ray.io/upgrade-strategy-recreate-hash` (head pods).
    pub recreate_hash: String,
    /// `ray.io/kuberay-version` (head pods).
    pub kuberay_version: String,
    /// `ray.io/worker-template-hash` (worker pods created under `RollingUpdate`).
    pub worker_template_hash: String,
    /// `metadata.creationTimestamp` as seconds since the Unix epoch.
    pub created_unix: Option<i64>,
}

impl PodInfo {
    /// Phase Running and Ready=True.
    pub fn is_running_and_ready(&self) -> bool {
        self.pod.phase == ray_autoscale::PodPhase::Running && self.ready.as_ref().is_some_and(|r| r.status == "True")
    }
}

fn label<'a>(meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref().and_then(|l| l.get(key)).map(String::as_str)
}

impl Compact for PodInfo {
    type Source = SlimPod;

    fn locate(pod: &SlimPod) -> Option<(String, String, String)> {
        let meta = &pod.0.metadata;
        Some((
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone()?,
            label(meta, RAY_CLUSTER_LABEL)?.to_owned(),
        ))
    }

    fn compact(pod: &SlimPod) -> Self {
        let pod = &pod.0;
        let meta = &pod.metadata;
        let role = match label(meta, RAY_NODE_TYPE_LABEL) {
            Some(NODE_TYPE_HEAD) => PodRole::Head,
            Some(NODE_TYPE_WORKER) => PodRole::Worker,
            _ => PodRole::Other,
        };
        let status = pod.status.as_ref();
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .map(|c| ReadyCondition {
                status: c.status.clone(),
                reason: c.reason.clone().unwrap_or_default(),
                message: c.message.clone().unwrap_or_default(),
            });
        let container_problem = (role == PodRole::Head)
            .then(|| {
                status.and_then(|s| s.container_statuses.as_ref()).and_then(|statuses| {
                    statuses.iter().find_map(|cs| {
                        let state = cs.state.as_ref()?;
                        let (reason, message) = match (&state.waiting, &state.terminated) {
                            (Some(w), _) => (w.reason.clone(), w.message.clone()),
                            (None, Some(t)) => (t.reason.clone(), t.message.clone()),
                            (None, None) => return None,
                        };
                        Some(ContainerProblem {
                            container: cs.name.clone(),
                            reason: reason.unwrap_or_default(),
                            message: message.unwrap_or_default(),
                        })
                    })
                })
            })
            .flatten();
        let scheduled = status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "PodScheduled" && c.status == "True"));
        let annotation = |key: &str| {
            meta.annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .cloned()
                .unwrap_or_default()
        };
        let upgrade = UpgradeMarks {
            recreate_hash: annotation(UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION),
            kuberay_version: annotation(KUBERAY_VERSION_ANNOTATION),
            worker_template_hash: annotation(WORKER_TEMPLATE_HASH_ANNOTATION),
            created_unix: meta.creation_timestamp.as_ref().map(|t| t.0.as_second()),
        };
        let pod = ObservedPod::from_pod(pod);
        Self {
            upgrade,
            awaiting_node: pod.phase == ray_autoscale::PodPhase::Pending && !scheduled,
            pod,
            role,
            group: label(meta, RAY_NODE_GROUP_LABEL).unwrap_or_default().to_owned(),
            pod_ip: status.and_then(|s| s.pod_ip.clone()).unwrap_or_default(),
            ready,
            container_problem,
        }
    }
}

/// One named port of the head service, for `status.endpoints`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServicePortInfo {
    /// Port name.
    pub name: String,
    /// `nodePort` (0 when unset).
    pub node_port: i32,
    /// `targetPort`.
    pub target_port: Option<IntOrString>,
}

/// Everything reconcile reads from a head service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceInfo {
    /// Service name.
    pub name: String,
    /// `ray.io/identifier` label.
    pub identifier: String,
    /// `spec.clusterIP`.
    pub cluster_ip: String,
    /// Named ports.
    pub ports: Vec<ServicePortInfo>,
}

impl Compact for ServiceInfo {
    type Source = Service;

    fn locate(svc: &Service) -> Option<(String, String, String)> {
        let meta = &svc.metadata;
        Some((
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone()?,
            label(meta, RAY_CLUSTER_LABEL)?.to_owned(),
        ))
    }

    fn compact(svc: &Service) -> Self {
        let spec = svc.spec.as_ref();
        Self {
            name: svc.metadata.name.clone().unwrap_or_default(),
            identifier: label(&svc.metadata, RAY_ID_LABEL).unwrap_or_default().to_owned(),
            cluster_ip: spec.and_then(|s| s.cluster_ip.clone()).unwrap_or_default(),
            ports: spec
                .and_then(|s| s.ports.as_ref())
                .map(|ports| {
                    ports
                        .iter()
                        .filter_map(|p| {
                            Some(ServicePortInfo {
                                name: p.name.clone()?,
                                node_port: p.node_port.unwrap_or(0),
                                target_port: p.target_port.clone(),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// What a reconcile pass sees of one cluster's children.
#[derive(Clone, Debug, Default)]
pub struct ObservedState {
    /// Every pod labelled with the cluster (any node type, including terminating ones).
    pub pods: Vec<Arc<PodInfo>>,
    /// Head services labelled with the cluster.
    pub head_services: Vec<Arc<ServiceInfo>>,
    /// Groups whose scale expectations are not yet satisfied (`""` is the head).
    pub unsatisfied_groups: HashSet<String>,
    /// Worker pods this controller created that `pods` does not hold yet (the watch has not delivered
    /// them). They are Pending and wait for a node as far as any limit on such pods is concerned.
    pub unobserved_worker_creates: usize,
    /// mTLS clusters only: why no pod may be created yet (certificates not issued, Secrets
    /// incomplete); `None` when pods may be created or TLS is off.
    pub tls_block: Option<String>,
}

impl ObservedState {
    /// Head pods.
    pub fn heads(&self) -> impl Iterator<Item = &PodInfo> {
        self.pods.iter().map(Arc::as_ref).filter(|p| p.role == PodRole::Head)
    }

    /// Pods of a worker group (by `ray.io/group`, any node type, as KubeRay lists them).
    pub fn group_pods(&self, group: &str) -> impl Iterator<Item = &PodInfo> {
        self.pods
            .iter()
            .map(Arc::as_ref)
            .filter(move |p| p.group == group && p.role != PodRole::Head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compact(status: serde_json::Value) -> PodInfo {
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "w", "namespace": "ns", "labels": {RAY_NODE_TYPE_LABEL: NODE_TYPE_WORKER}},
            "status": status,
        }))
        .unwrap();
        PodInfo::compact(&SlimPod(pod))
    }

    /// A pod waits for a node while it is Pending and not `PodScheduled=True`: just created (no
    /// conditions), or marked unschedulable; a scheduled pod pulling its image does not.
    #[test]
    fn a_pending_pod_awaits_a_node_until_it_is_scheduled() {
        assert!(compact(serde_json::json!({"phase": "Pending"})).awaiting_node);
        let unschedulable = serde_json::json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]});
        assert!(compact(unschedulable).awaiting_node);
        let pulling = serde_json::json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "True"}]});
        assert!(!compact(pulling).awaiting_node);
        assert!(!compact(serde_json::json!({"phase": "Running"})).awaiting_node);
    }
}
