//! `calculateStatus`: the RayCluster status a pass should leave behind,
//! computed from the cluster, the observed pods and services and the pass error. Pure.

use super::error::PassError;
use super::observed::{ObservedState, PodInfo, PodRole};
use crate::conditions::{self, FALSE, TRUE};
use crate::config::FeatureGates;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use ray_api::{ClusterState, HeadInfo, RayCluster, RayClusterStatus, WorkerGroupSpec};
use ray_autoscale::{GroupReplicas, PodPhase, cluster_desired_replicas, cluster_max_replicas, cluster_min_replicas};
use std::collections::BTreeMap;

/// The replica view of a worker group spec.
pub fn group_replicas(group: &WorkerGroupSpec) -> GroupReplicas {
    GroupReplicas {
        replicas: group.replicas,
        min_replicas: group.min_replicas,
        max_replicas: group.max_replicas,
        num_of_hosts: group
            .num_of_hosts
            .unwrap_or(ray_autoscale::replicas::DEFAULT_NUM_OF_HOSTS),
        suspend: group.suspend == Some(true),
    }
}

/// Replica views of every worker group, in spec order.
pub fn all_group_replicas(cluster: &RayCluster) -> Vec<GroupReplicas> {
    cluster
        .spec
        .worker_group_specs
        .iter()
        .flatten()
        .map(group_replicas)
        .collect()
}

/// `CheckAllPodsRunning`: some pods, all Running, none with a Ready condition other than True.
pub fn all_pods_running(pods: &[&PodInfo]) -> bool {
    !pods.is_empty()
        && pods
            .iter()
            .all(|p| p.pod.phase == PodPhase::Running && p.ready.as_ref().is_none_or(|r| r.status == TRUE))
}

/// `(readyWorkerReplicas, availableWorkerReplicas)`: worker pods Running and Ready, and worker pods Running.
pub fn worker_replica_counts(pods: &[&PodInfo]) -> (i32, i32) {
    let workers = pods.iter().filter(|p| p.role == PodRole::Worker);
    let ready = count(workers.clone().filter(|p| p.is_running_and_ready()));
    let available = count(workers.filter(|p| p.pod.phase == PodPhase::Running));
    (ready, available)
}

/// Which suspend condition is currently True (`RayClusterSuspending` wins, as KubeRay checks it first).
pub fn suspend_status(conditions: &[Condition]) -> Option<&'static str> {
    [conditions::RAY_CLUSTER_SUSPENDING, conditions::RAY_CLUSTER_SUSPENDED]
        .into_iter()
        .find(|t| conditions::is_true(conditions, t))
}

/// `desiredCPU` / `desiredMemory` / `desiredGPU` / `desiredTPU`: the head pod's requests plus each group's
/// times its raw `replicas` (KubeRay's `CalculateDesiredResources`), zeros included. A quantity that does not
/// parse was refused by validation before this point; the fields are then left as they were, not guessed.
fn set_desired_resources(status: &mut RayClusterStatus, spec: &ray_api::RayClusterSpec) {
    if let Ok(resources) = ray_autoscale::desired_status_resources(spec) {
        let quantity = |q: &ray_api::quantity::Qty| Some(Quantity(q.to_string()));
        status.desired_cpu = quantity(&resources.cpu);
        status.desired_memory = quantity(&resources.memory);
        status.desired_gpu = quantity(&resources.gpu);
        status.desired_tpu = quantity(&resources.tpu);
    }
}

/// Compute the new status. An `Err` means KubeRay's `calculateStatus` failed: no status write.
pub fn calculate_status(
    cluster: &RayCluster,
    observed: &ObservedState,
    pass_error: Option<&PassError>,
    gates: &FeatureGates,
    now: &Time,
) -> Result<RayClusterStatus, PassError> {
    let old = cluster.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let mut conds = status.conditions.take().unwrap_or_default();
    let suspend = suspend_status(&conds);
    if gates.ray_cluster_status_conditions {
        match pass_error {
            Some(err) => {
                if let Some(marker) = err.marker {
                    conditions::set(
                        &mut conds,
                        conditions::REPLICA_FAILURE,
                        TRUE,
                        marker.as_str(),
                        &err.message,
                        now,
                    );
                }
            }
            None => conditions::remove(&mut conds, conditions::REPLICA_FAILURE),
        }
    }

    let pods: Vec<&PodInfo> = observed.pods.iter().map(AsRef::as_ref).collect();
    let (ready, available) = worker_replica_counts(&pods);
    status.ready_worker_replicas = Some(ready);
    status.available_worker_replicas = Some(available);
    let groups = all_group_replicas(cluster);
    let desired = cluster_desired_replicas(&groups);
    status.desired_worker_replicas = Some(desired);
    status.min_worker_replicas = Some(cluster_min_replicas(&groups));
    status.max_worker_replicas = Some(cluster_max_replicas(&groups));
    set_desired_resources(&mut status, &cluster.spec);
    status.observed_generation = cluster.metadata.generation;

    let pod_count = i64::try_from(pods.len()).unwrap_or(i64::MAX);
    if pass_error.is_none() && pod_count == i64::from(desired) + 1 && all_pods_running(&pods) {
        status.state = Some(ClusterState::Ready);
        status.reason = None;
    }
    if cluster.spec.suspend == Some(true) && pods.is_empty() {
        status.state = Some(ClusterState::Suspended);
    }

    let heads: Vec<&PodInfo> = pods.iter().copied().filter(|p| p.role == PodRole::Head).collect();
    if heads.len() > 1 {
        let names: Vec<&str> = heads.iter().map(|p| p.pod.name.as_str()).collect();
        return Err(PassError::plain(format!(
            "{} head pods found {names:?}. Please delete extra head pods",
            heads.len()
        )));
    }
    let head = heads.first().copied();

    if gates.ray_cluster_status_conditions {
        head_pod_ready_condition(&mut conds, head, now);
        if suspend != Some(conditions::RAY_CLUSTER_SUSPENDED)
            && !conditions::is_true(&conds, conditions::RAY_CLUSTER_PROVISIONED)
        {
            if all_pods_running(&pods) {
                conditions::set(
                    &mut conds,
                    conditions::RAY_CLUSTER_PROVISIONED,
                    TRUE,
                    conditions::REASON_ALL_POD_RUNNING_AND_READY_FIRST_TIME,
                    "All Ray Pods are ready for the first time",
                    now,
                );
            } else {
                conditions::set(
                    &mut conds,
                    conditions::RAY_CLUSTER_PROVISIONED,
                    FALSE,
                    conditions::REASON_RAY_CLUSTER_PODS_PROVISIONING,
                    "RayCluster Pods are being provisioned for first time",
                    now,
                );
            }
        }
        suspend_conditions(&mut conds, suspend, cluster.spec.suspend, pods.is_empty(), now);
    }
    super::upgrade_status::apply(
        &mut status,
        &mut conds,
        cluster,
        observed,
        gates.ray_multi_host_indexing,
        now,
    );
    status.conditions = (!conds.is_empty()).then_some(conds);

    update_endpoints(&mut status, observed);
    update_head_info(&mut status, cluster, observed, head)?;

    status.last_update_time = Some(now.clone());
    if status.state != old.state
        && let Some(state) = &status.state
    {
        status
            .state_transition_times
            .get_or_insert_with(BTreeMap::new)
            .insert(state.to_string(), now.clone());
    }
    Ok(status)
}

fn count<'a>(pods: impl Iterator<Item = &'a &'a PodInfo>) -> i32 {
    i32::try_from(pods.count()).unwrap_or(i32::MAX)
}

fn head_pod_ready_condition(conds: &mut Vec<Condition>, head: Option<&PodInfo>, now: &Time) {
    let Some(head) = head else {
        conditions::set(
            conds,
            conditions::HEAD_POD_READY,
            FALSE,
            conditions::REASON_HEAD_POD_NOT_FOUND,
            "Head Pod not found",
            now,
        );
        return;
    };
    let Some(ready) = &head.ready else {
        conditions::set(
            conds,
            conditions::HEAD_POD_READY,
            FALSE,
            conditions::REASON_UNKNOWN,
            "",
            now,
        );
        return;
    };
    let mut reason = ready.reason.clone();
    let mut message = ready.message.clone();
    if ready.status == TRUE && reason.is_empty() {
        reason = conditions::REASON_HEAD_POD_RUNNING_AND_READY.to_owned();
    }
    if reason == conditions::REASON_CONTAINERS_NOT_READY
        && let Some(problem) = &head.container_problem
    {
        reason = problem.reason.clone();
        let detail = format!("{}: {}", problem.container, problem.message);
        message = if message.is_empty() {
            detail
        } else {
            format!("{message}; {detail}")
        };
    }
    conditions::set(conds, conditions::HEAD_POD_READY, &ready.status, &reason, &message, now);
}

fn suspend_conditions(
    conds: &mut Vec<Condition>,
    current: Option<&'static str>,
    spec_suspend: Option<bool>,
    no_pods: bool,
    now: &Time,
) {
    use conditions::{RAY_CLUSTER_PROVISIONED, RAY_CLUSTER_SUSPENDED, RAY_CLUSTER_SUSPENDING};
    match current {
        Some(RAY_CLUSTER_SUSPENDING) => {
            if no_pods {
                conditions::set(
                    conds,
                    RAY_CLUSTER_PROVISIONED,
                    FALSE,
                    conditions::REASON_RAY_CLUSTER_PODS_PROVISIONING,
                    "RayCluster has been suspended",
                    now,
                );
                conditions::set(conds, RAY_CLUSTER_SUSPENDING, FALSE, RAY_CLUSTER_SUSPENDING, "", now);
                conditions::set(conds, RAY_CLUSTER_SUSPENDED, TRUE, RAY_CLUSTER_SUSPENDED, "", now);
            }
        }
        Some(_) => {
            if spec_suspend == Some(false) {
                conditions::set(conds, RAY_CLUSTER_SUSPENDED, FALSE, RAY_CLUSTER_SUSPENDED, "", now);
            }
        }
        None => {
            conditions::set(conds, RAY_CLUSTER_SUSPENDED, FALSE, RAY_CLUSTER_SUSPENDED, "", now);
            let suspending = if spec_suspend == Some(true) { TRUE } else { FALSE };
            conditions::set(
                conds,
                RAY_CLUSTER_SUSPENDING,
                suspending,
                RAY_CLUSTER_SUSPENDING,
                "",
                now,
            );
        }
    }
}

fn update_endpoints(status: &mut RayClusterStatus, observed: &ObservedState) {
    let Some(svc) = observed.head_services.first() else {
        return;
    };
    let endpoints = status.endpoints.get_or_insert_with(BTreeMap::new);
    for port in &svc.ports {
        let value = if port.node_port != 0 {
            port.node_port.to_string()
        } else {
            match &port.target_port {
                Some(IntOrString::Int(p)) if *p != 0 => p.to_string(),
                Some(IntOrString::String(s)) if !s.is_empty() => s.clone(),
                _ => continue,
            }
        };
        endpoints.insert(port.name.clone(), value);
    }
    if endpoints.is_empty() {
        status.endpoints = None;
    }
}

fn update_head_info(
    status: &mut RayClusterStatus,
    cluster: &RayCluster,
    observed: &ObservedState,
    head: Option<&PodInfo>,
) -> Result<(), PassError> {
    let (ns, name) = (
        cluster.metadata.namespace.as_deref().unwrap_or_default(),
        cluster.metadata.name.as_deref().unwrap_or_default(),
    );
    let head_ip = head.map(|h| h.pod_ip.clone()).unwrap_or_default();
    let (service_ip, service_name) = match observed.head_services.as_slice() {
        [] => {
            return Err(PassError::plain(format!(
                "no head service found for RayCluster {ns}/{name}"
            )));
        }
        [svc] if svc.cluster_ip == "None" => (head_ip.clone(), svc.name.clone()),
        [svc] if svc.cluster_ip.is_empty() => {
            return Err(PassError::plain(format!(
                "head service {ns}/{} has no cluster IP",
                svc.name
            )));
        }
        [svc] => (svc.cluster_ip.clone(), svc.name.clone()),
        many => {
            let names: Vec<&str> = many.iter().map(|s| s.name.as_str()).collect();
            return Err(PassError::plain(format!("{} head service found {names:?}", many.len())));
        }
    };
    let non_empty = |s: String| (!s.is_empty()).then_some(s);
    status.head = Some(HeadInfo {
        pod_ip: non_empty(head_ip),
        pod_name: head.map(|h| h.pod.name.clone()).and_then(non_empty),
        service_ip: non_empty(service_ip),
        service_name: non_empty(service_name),
    });
    Ok(())
}

/// KubeRay's `InconsistentRayClusterStatus`: whether the new status differs from the old one in a
/// field worth writing (resources, timestamps and observedGeneration alone are not).
pub fn status_changed(old: Option<&RayClusterStatus>, new: &RayClusterStatus) -> bool {
    let empty = RayClusterStatus::default();
    let old = old.unwrap_or(&empty);
    old.state != new.state
        || old.reason != new.reason
        || old.ready_worker_replicas != new.ready_worker_replicas
        || old.available_worker_replicas != new.available_worker_replicas
        || old.desired_worker_replicas != new.desired_worker_replicas
        || old.min_worker_replicas != new.min_worker_replicas
        || old.max_worker_replicas != new.max_worker_replicas
        || old.endpoints != new.endpoints
        || old.head != new.head
        || old.conditions != new.conditions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raycluster::observed::ReadyCondition;
    use ray_autoscale::ObservedPod;

    fn pod(role: PodRole, phase: PodPhase, ready: Option<&str>) -> PodInfo {
        PodInfo {
            pod: ObservedPod {
                phase,
                ..ObservedPod::running("p")
            },
            role,
            group: "small-group".into(),
            pod_ip: String::new(),
            ready: ready.map(|status| ReadyCondition {
                status: status.into(),
                reason: String::new(),
                message: String::new(),
            }),
            container_problem: None,
            awaiting_node: false,
            upgrade: Default::default(),
        }
    }

    /// KubeRay's case 17: head Running; worker Running+Ready; worker Pending not ready; worker Failed
    /// → available 1, ready 1.
    #[test]
    fn golden_r17_available_and_ready_workers() {
        let pods = [
            pod(PodRole::Head, PodPhase::Running, Some("True")),
            pod(PodRole::Worker, PodPhase::Running, Some("True")),
            pod(PodRole::Worker, PodPhase::Pending, Some("False")),
            pod(PodRole::Worker, PodPhase::Failed, None),
        ];
        let refs: Vec<&PodInfo> = pods.iter().collect();
        assert_eq!(worker_replica_counts(&refs), (1, 1));
    }

    /// The desired resources: head 1 CPU / 5Gi requested, three workers of 500m / 1Gi / one GPU by limits.
    #[test]
    fn status_carries_the_desired_resources() {
        let cluster: RayCluster = ray_api::yaml::from_yaml_documents(
            r#"
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: demo, namespace: ns}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - {name: ray-head, image: ray, resources: {requests: {cpu: "1", memory: 5Gi}}}
  workerGroupSpecs:
  - groupName: small
    replicas: 3
    minReplicas: 0
    maxReplicas: 5
    rayStartParams: {}
    template:
      spec:
        containers:
        - {name: ray-worker, image: ray, resources: {limits: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: "1"}}}
"#,
        )
        .unwrap()
        .remove(0);
        let mut status = RayClusterStatus::default();
        set_desired_resources(&mut status, &cluster.spec);
        let text = |q: Option<Quantity>| q.map(|q| q.0).unwrap_or_default();
        assert_eq!(text(status.desired_cpu), "2500m");
        assert_eq!(text(status.desired_memory), "8Gi");
        assert_eq!(text(status.desired_gpu), "3");
        assert_eq!(text(status.desired_tpu), "0");
    }
}
