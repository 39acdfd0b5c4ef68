//! The NetworkPolicies of a RayCluster as pure values (behaviour: `docs/networkpolicy.md`): one for the head
//! and one per worker group, each selecting that part's pods, always allowing traffic within the cluster
//! (and, for a RayJob's cluster in `K8sJobMode`, the submitter's access to the dashboard), plus the user's
//! rules; whether an existing policy must be updated; which policies are stale.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use ray_api::constants::{
    APPLICATION_NAME, COMPONENT_NAME, CRD_KIND_RAY_JOB, DEFAULT_DASHBOARD_PORT, HEAD_GROUP_NAME, KUBERAY_CONTROLLER,
    KUBERNETES_APPLICATION_NAME_LABEL, KUBERNETES_CREATED_BY_LABEL, NODE_TYPE_HEAD, NODE_TYPE_WORKER,
    RAY_CLUSTER_LABEL, RAY_JOB_SUBMISSION_MODE_LABEL, RAY_NODE_GROUP_LABEL, RAY_NODE_TYPE_LABEL,
    RAY_ORIGINATED_FROM_CR_NAME_LABEL, RAY_ORIGINATED_FROM_CRD_LABEL,
};
use ray_api::{NetworkPolicyMode, NetworkPolicyOptions, RayCluster};
use ray_podgen::cluster::cluster_owner_reference;

/// Event reasons of the NetworkPolicy controller (actions are [`crate::events::action`]'s).
pub mod reason {
    /// A policy was created.
    pub const CREATED_NETWORK_POLICY: &str = "CreatedNetworkPolicy";
    /// Creating a policy failed.
    pub const FAILED_TO_CREATE_NETWORK_POLICY: &str = "FailedToCreateNetworkPolicy";
    /// A drifted policy was updated.
    pub const UPDATED_NETWORK_POLICY: &str = "UpdatedNetworkPolicy";
    /// Updating a policy failed.
    pub const FAILED_TO_UPDATE_NETWORK_POLICY: &str = "FailedToUpdateNetworkPolicy";
    /// A stale policy was deleted.
    pub const DELETED_NETWORK_POLICY: &str = "DeletedNetworkPolicy";
    /// Deleting a stale policy failed.
    pub const FAILED_TO_DELETE_NETWORK_POLICY: &str = "FailedToDeleteNetworkPolicy";
    /// A policy of the same name exists and belongs to someone else.
    pub const NETWORK_POLICY_NAME_COLLISION: &str = "NetworkPolicyNameCollision";
}

/// The `ray.io/job-submission-mode` value whose submitter Job reaches the head's dashboard.
const K8S_JOB_MODE: &str = "K8sJobMode";
/// The `dashboard-port` ray start parameter.
const DASHBOARD_PORT_PARAM: &str = "dashboard-port";
/// The protocol the API server fills in for a port without one.
const TCP: &str = "TCP";

/// What a pass does with a cluster.
#[derive(Clone, Debug, PartialEq)]
pub enum NetworkPolicyPass {
    /// Nothing: the cluster is being deleted or another controller manages it.
    Ignore,
    /// Create or update these policies (in order), then delete the cluster's other policies.
    Converge(Vec<NetworkPolicy>),
}

/// Decides a pass over `cluster`. Validation of `spec.networkPolicy` is the RayCluster controller's.
pub fn plan(cluster: &RayCluster) -> NetworkPolicyPass {
    let managed = cluster
        .spec
        .managed_by
        .as_deref()
        .is_none_or(|m| m == KUBERAY_CONTROLLER);
    if cluster.metadata.deletion_timestamp.is_some() || !managed {
        return NetworkPolicyPass::Ignore;
    }
    NetworkPolicyPass::Converge(desired_policies(cluster))
}

/// The cluster's policies: none without `spec.networkPolicy`, else the head's, then one per worker group in
/// spec order.
pub fn desired_policies(cluster: &RayCluster) -> Vec<NetworkPolicy> {
    let Some(options) = cluster.spec.network_policy.as_ref() else {
        return Vec::new();
    };
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    let mut policies = vec![head_policy(cluster, options)];
    for group in cluster.spec.worker_group_specs.iter().flatten() {
        let rules = options
            .worker_groups
            .iter()
            .flatten()
            .find(|g| g.group_name == group.group_name)
            .map(|g| (g.ingress_rules.as_ref(), g.egress_rules.as_ref()))
            .or_else(|| {
                options
                    .worker
                    .as_ref()
                    .map(|w| (w.ingress_rules.as_ref(), w.egress_rules.as_ref()))
            })
            .unwrap_or((None, None));
        policies.push(policy(
            cluster,
            options,
            Part {
                policy_name: format!("{name}-workers-{}", group.group_name),
                group: &group.group_name,
                node_type: NODE_TYPE_WORKER,
                submitter_access: None,
                custom_ingress: rules.0,
                custom_egress: rules.1,
            },
        ));
    }
    policies
}

/// One part of the cluster a policy covers.
struct Part<'a> {
    policy_name: String,
    group: &'a str,
    node_type: &'a str,
    submitter_access: Option<NetworkPolicyIngressRule>,
    custom_ingress: Option<&'a Vec<NetworkPolicyIngressRule>>,
    custom_egress: Option<&'a Vec<NetworkPolicyEgressRule>>,
}

fn head_policy(cluster: &RayCluster, options: &NetworkPolicyOptions) -> NetworkPolicy {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    policy(
        cluster,
        options,
        Part {
            policy_name: format!("{name}-head"),
            group: HEAD_GROUP_NAME,
            node_type: NODE_TYPE_HEAD,
            submitter_access: submitter_access(cluster),
            custom_ingress: options.head.as_ref().and_then(|h| h.ingress_rules.as_ref()),
            custom_egress: options.head.as_ref().and_then(|h| h.egress_rules.as_ref()),
        },
    )
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels(pairs)),
        match_expressions: None,
    }
}

fn pod_peer(pairs: &[(&str, &str)]) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        pod_selector: Some(selector(pairs)),
        ..NetworkPolicyPeer::default()
    }
}

/// For the cluster of a RayJob in `K8sJobMode`: the submitter's pods may reach the head's dashboard port.
fn submitter_access(cluster: &RayCluster) -> Option<NetworkPolicyIngressRule> {
    let labels = cluster.metadata.labels.as_ref()?;
    if labels.get(RAY_JOB_SUBMISSION_MODE_LABEL).map(String::as_str) != Some(K8S_JOB_MODE) {
        return None;
    }
    let job =
        cluster.metadata.owner_references.iter().flatten().find(|o| {
            o.kind == CRD_KIND_RAY_JOB && o.controller == Some(true) && o.api_version.starts_with("ray.io/")
        })?;
    let port = cluster
        .spec
        .head_group_spec
        .ray_start_params
        .as_ref()
        .and_then(|p| p.get(DASHBOARD_PORT_PARAM))
        .and_then(|p| p.parse::<i32>().ok())
        .unwrap_or(DEFAULT_DASHBOARD_PORT);
    Some(NetworkPolicyIngressRule {
        from: Some(vec![pod_peer(&[
            (RAY_ORIGINATED_FROM_CR_NAME_LABEL, job.name.as_str()),
            (RAY_ORIGINATED_FROM_CRD_LABEL, CRD_KIND_RAY_JOB),
        ])]),
        ports: Some(vec![NetworkPolicyPort {
            protocol: Some(TCP.to_owned()),
            port: Some(IntOrString::Int(port)),
            end_port: None,
        }]),
    })
}

fn policy(cluster: &RayCluster, options: &NetworkPolicyOptions, part: Part<'_>) -> NetworkPolicy {
    let cluster_name = cluster.metadata.name.as_deref().unwrap_or_default();
    let mode = options.mode.unwrap_or(NetworkPolicyMode::DenyAll);
    let (restrict_ingress, restrict_egress) = match mode {
        NetworkPolicyMode::DenyAll => (true, true),
        NetworkPolicyMode::DenyAllIngress => (true, false),
        NetworkPolicyMode::DenyAllEgress => (false, true),
    };
    let same_cluster = || pod_peer(&[(RAY_CLUSTER_LABEL, cluster_name)]);
    let ingress = restrict_ingress.then(|| {
        let mut rules = vec![NetworkPolicyIngressRule {
            from: Some(vec![same_cluster()]),
            ports: None,
        }];
        rules.extend(part.submitter_access.clone());
        rules.extend(part.custom_ingress.into_iter().flatten().cloned());
        rules
    });
    let egress = restrict_egress.then(|| {
        let mut rules = vec![NetworkPolicyEgressRule {
            to: Some(vec![same_cluster()]),
            ports: None,
        }];
        rules.extend(part.custom_egress.into_iter().flatten().cloned());
        rules
    });
    let policy_types = [(restrict_ingress, "Ingress"), (restrict_egress, "Egress")]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, t)| t.to_owned())
        .collect();
    let mut pod_selector = vec![(RAY_CLUSTER_LABEL, cluster_name), (RAY_NODE_TYPE_LABEL, part.node_type)];
    if part.node_type == NODE_TYPE_WORKER {
        pod_selector.push((RAY_NODE_GROUP_LABEL, part.group));
    }
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(part.policy_name),
            namespace: cluster.metadata.namespace.clone(),
            labels: Some(labels(&[
                (RAY_CLUSTER_LABEL, cluster_name),
                (RAY_NODE_GROUP_LABEL, part.group),
                (KUBERNETES_APPLICATION_NAME_LABEL, APPLICATION_NAME),
                (KUBERNETES_CREATED_BY_LABEL, COMPONENT_NAME),
            ])),
            owner_references: Some(vec![cluster_owner_reference(cluster)]),
            ..ObjectMeta::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(selector(&pod_selector)),
            policy_types: Some(policy_types),
            ingress,
            egress,
        }),
    }
}

/// Whether `meta` names `cluster` (by uid) as its controller.
pub fn controlled_by(meta: &ObjectMeta, cluster: &RayCluster) -> bool {
    let uid = cluster.metadata.uid.as_deref();
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && Some(o.uid.as_str()) == uid)
}

/// `existing` with `desired`'s spec and labels when either differs (ports without a protocol compare as
/// `TCP`, which the API server fills in); `None` when it is up to date. Annotations and everything else of
/// `existing` stay.
pub fn updated(existing: &NetworkPolicy, desired: &NetworkPolicy) -> Option<NetworkPolicy> {
    let mut spec = desired.spec.clone();
    if let Some(spec) = spec.as_mut() {
        default_port_protocols(spec);
    }
    if existing.spec == spec && existing.metadata.labels == desired.metadata.labels {
        return None;
    }
    let mut update = existing.clone();
    update.spec = spec;
    update.metadata.labels = desired.metadata.labels.clone();
    Some(update)
}

fn default_port_protocols(spec: &mut NetworkPolicySpec) {
    let ingress_ports = spec
        .ingress
        .iter_mut()
        .flatten()
        .flat_map(|r| r.ports.iter_mut().flatten());
    let egress_ports = spec
        .egress
        .iter_mut()
        .flatten()
        .flat_map(|r| r.ports.iter_mut().flatten());
    for port in ingress_ports.chain(egress_ports) {
        port.protocol.get_or_insert_with(|| TCP.to_owned());
    }
}

/// The names among `existing` (the namespace's policies labelled with the cluster) that are not desired and
/// that the cluster controls: the ones to delete. Policies of others are left alone.
pub fn stale<'a>(existing: &'a [NetworkPolicy], desired: &[NetworkPolicy], cluster: &RayCluster) -> Vec<&'a str> {
    existing
        .iter()
        .filter(|p| controlled_by(&p.metadata, cluster))
        .filter_map(|p| p.metadata.name.as_deref())
        .filter(|name| !desired.iter().any(|d| d.metadata.name.as_deref() == Some(name)))
        .collect()
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
