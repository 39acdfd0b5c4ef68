//! The Kubernetes permissions the operator uses: one table of every API call its controllers, its event
//! recorder and its leader election make, each with the feature that makes it. The Helm chart's RBAC is
//! generated from this table (`kuberay-operator rbac`), and tests check that it never grants more than
//! KubeRay's ClusterRole does.
//!
//! When a controller starts calling a new verb or resource, add it here: the chart then grants it, and the
//! missing permission shows up in tests rather than as a `Forbidden` in a user's cluster.

use k8s_openapi::api::rbac::v1::PolicyRule;
use ray_api::feature_gates::{
    FeatureGates, RAY_CLUSTER_MTLS_GATE, RAY_CLUSTER_NETWORK_POLICY_GATE, RAY_CRON_JOB_GATE,
    RAY_SERVICE_INCREMENTAL_UPGRADE_GATE,
};
use ray_gang::scheduler::BatchScheduler;

/// What makes the operator need a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleCondition {
    /// Needed whatever the configuration.
    Always,
    /// `--use-kubernetes-proxy`: Ray dashboards are reached through the API server's service proxy.
    UseKubernetesProxy,
    /// This batch scheduler is selected (`--batch-scheduler`, or Volcano by `--enable-batch-scheduler`).
    BatchScheduler(BatchScheduler),
    /// The `RayClusterMTLS` feature gate (the cert-manager mTLS controller).
    RayClusterMtlsGate,
    /// The `RayServiceIncrementalUpgrade` feature gate (Gateway API objects of RayServices).
    RayServiceIncrementalUpgradeGate,
    /// The `RayCronJob` feature gate (the RayCronJob controller).
    RayCronJobGate,
    /// The `RayClusterNetworkPolicy` feature gate (the NetworkPolicy controller).
    RayClusterNetworkPolicyGate,
}

/// One permission the operator uses, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperatorRule {
    /// The API group (`""` for the core group).
    pub api_group: &'static str,
    /// Resources (and subresources such as `rayclusters/status`).
    pub resources: &'static [&'static str],
    /// Verbs, sorted.
    pub verbs: &'static [&'static str],
    /// When the rule is needed.
    pub condition: RuleCondition,
}

const fn rule(
    api_group: &'static str,
    resources: &'static [&'static str],
    verbs: &'static [&'static str],
    condition: RuleCondition,
) -> OperatorRule {
    OperatorRule {
        api_group,
        resources,
        verbs,
        condition,
    }
}

/// Every permission the controllers use in the namespaces they watch: granted by a ClusterRole, or by a
/// Role in each watched namespace.
pub const OPERATOR_RULES: &[OperatorRule] = &[
    // Ray pods: created in slow-start rounds, deleted one by one or by selector (GCS fault tolerance
    // cleanup, suspension), watched by label, labels patched by the RayService serve sync.
    rule(
        "",
        &["pods"],
        &["create", "delete", "deletecollection", "get", "list", "patch", "watch"],
        RuleCondition::Always,
    ),
    // The autoscaler's Role grants in-place pod resizing, and the API server lets a client grant only
    // permissions it holds itself.
    rule("", &["pods/resize"], &["patch"], RuleCondition::Always),
    // Head, headless worker and serve Services: watched, created, replaced and patched by the RayService
    // and RayJob controllers, deleted with a RayService's old cluster.
    rule(
        "",
        &["services"],
        &["create", "delete", "get", "list", "patch", "update", "watch"],
        RuleCondition::Always,
    ),
    // The token-authentication Secret of a RayCluster; the RayService controller reads the token.
    rule("", &["secrets"], &["create", "get"], RuleCondition::Always),
    // The autoscaler sidecar's ServiceAccount, Role and RoleBinding.
    rule("", &["serviceaccounts"], &["create", "get"], RuleCondition::Always),
    rule(
        "rbac.authorization.k8s.io",
        &["rolebindings", "roles"],
        &["create", "get"],
        RuleCondition::Always,
    ),
    // The GCS fault tolerance PersistentVolumeClaim.
    rule(
        "",
        &["persistentvolumeclaims"],
        &["create", "get"],
        RuleCondition::Always,
    ),
    // RayJob submitter Jobs and the Redis cleanup Job of GCS fault tolerance.
    rule(
        "batch",
        &["jobs"],
        &["create", "delete", "get", "list", "watch"],
        RuleCondition::Always,
    ),
    // The dashboard Ingress (replaced when it drifts) and, on OpenShift, the Route.
    rule(
        "networking.k8s.io",
        &["ingresses"],
        &["create", "get", "update"],
        RuleCondition::Always,
    ),
    rule(
        "route.openshift.io",
        &["routes"],
        &["create", "get"],
        RuleCondition::Always,
    ),
    // The Events every controller records (kube-runtime's recorder writes events.k8s.io/v1 and patches a
    // repeated Event's series).
    rule(
        "events.k8s.io",
        &["events"],
        &["create", "patch"],
        RuleCondition::Always,
    ),
    // The custom resources: watched, RayJobs and RayServices create, replace and delete their clusters,
    // finalizers are merge-patched, and a finished RayJob may delete itself.
    rule(
        "ray.io",
        &["rayclusters", "rayjobs", "rayservices"],
        &["create", "delete", "get", "list", "patch", "update", "watch"],
        RuleCondition::Always,
    ),
    // Status is replaced or merge-patched.
    rule(
        "ray.io",
        &["rayclusters/status", "rayjobs/status", "rayservices/status"],
        &["patch", "update"],
        RuleCondition::Always,
    ),
    // Children carry owner references with blockOwnerDeletion, which the API server allows only to a
    // client that may update the owner's finalizers.
    rule(
        "ray.io",
        &["rayclusters/finalizers", "rayjobs/finalizers", "rayservices/finalizers"],
        &["update"],
        RuleCondition::Always,
    ),
    // Dashboard job and serve calls through `/api/v1/namespaces/<ns>/services/<svc>:dashboard/proxy`.
    rule(
        "",
        &["services/proxy"],
        &["create", "get"],
        RuleCondition::UseKubernetesProxy,
    ),
    // Volcano PodGroups of RayClusters and RayJobs, replaced when their size changes.
    rule(
        "scheduling.volcano.sh",
        &["podgroups"],
        &["create", "get", "update"],
        RuleCondition::BatchScheduler(BatchScheduler::Volcano),
    ),
    // scheduler-plugins PodGroups, created once and never updated.
    rule(
        "scheduling.x-k8s.io",
        &["podgroups"],
        &["create", "get"],
        RuleCondition::BatchScheduler(BatchScheduler::SchedulerPlugins),
    ),
    // The mTLS controller's cert-manager objects and the certificate Secrets it takes ownership of.
    rule(
        "cert-manager.io",
        &["certificates"],
        &["create", "get", "update"],
        RuleCondition::RayClusterMtlsGate,
    ),
    rule(
        "cert-manager.io",
        &["issuers"],
        &["create", "get"],
        RuleCondition::RayClusterMtlsGate,
    ),
    rule("", &["secrets"], &["update"], RuleCondition::RayClusterMtlsGate),
    // The Gateway and HTTPRoute of an incrementally upgraded RayService.
    rule(
        "gateway.networking.k8s.io",
        &["gateways", "httproutes"],
        &["create", "delete", "get", "update"],
        RuleCondition::RayServiceIncrementalUpgradeGate,
    ),
    // RayCronJobs are watched, their status replaced, and the RayJobs they create carry controller owner
    // references with blockOwnerDeletion (the RayJobs themselves are covered by the rule above).
    rule(
        "ray.io",
        &["raycronjobs"],
        &["list", "watch"],
        RuleCondition::RayCronJobGate,
    ),
    rule(
        "ray.io",
        &["raycronjobs/finalizers", "raycronjobs/status"],
        &["update"],
        RuleCondition::RayCronJobGate,
    ),
    // Each RayCluster's NetworkPolicies: watched, created, updated on drift, stale ones deleted.
    rule(
        "networking.k8s.io",
        &["networkpolicies"],
        &["create", "delete", "get", "list", "update", "watch"],
        RuleCondition::RayClusterNetworkPolicyGate,
    ),
];

/// Permissions of leader election, in the namespace of the `ray-operator-leader` Lease only
/// (the Lease is read, created, and renewed or taken over with patches).
pub const LEADER_ELECTION_RULES: &[OperatorRule] = &[rule(
    "coordination.k8s.io",
    &["leases"],
    &["create", "get", "patch"],
    RuleCondition::Always,
)];

/// The configuration that decides which conditional rules apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RbacFeatures {
    /// `--use-kubernetes-proxy`.
    pub use_kubernetes_proxy: bool,
    /// The selected batch scheduler.
    pub batch_scheduler: BatchScheduler,
    /// The `RayClusterMTLS` gate.
    pub ray_cluster_mtls: bool,
    /// The `RayServiceIncrementalUpgrade` gate.
    pub ray_service_incremental_upgrade: bool,
    /// The `RayCronJob` gate.
    pub ray_cron_job: bool,
    /// The `RayClusterNetworkPolicy` gate.
    pub ray_cluster_network_policy: bool,
}

impl RuleCondition {
    /// The feature gate behind the condition, with the gate's default when `--feature-gates` leaves it out.
    pub fn feature_gate(self) -> Option<(&'static str, bool)> {
        let defaults = FeatureGates::default();
        match self {
            Self::RayClusterMtlsGate => Some((RAY_CLUSTER_MTLS_GATE, defaults.ray_cluster_mtls)),
            Self::RayServiceIncrementalUpgradeGate => Some((
                RAY_SERVICE_INCREMENTAL_UPGRADE_GATE,
                defaults.ray_service_incremental_upgrade,
            )),
            Self::RayCronJobGate => Some((RAY_CRON_JOB_GATE, defaults.ray_cron_job)),
            Self::RayClusterNetworkPolicyGate => {
                Some((RAY_CLUSTER_NETWORK_POLICY_GATE, defaults.ray_cluster_network_policy))
            }
            Self::Always | Self::UseKubernetesProxy | Self::BatchScheduler(_) => None,
        }
    }

    /// Whether the rule is needed with `features`.
    pub fn holds(self, features: &RbacFeatures) -> bool {
        match self {
            Self::Always => true,
            Self::UseKubernetesProxy => features.use_kubernetes_proxy,
            Self::BatchScheduler(scheduler) => features.batch_scheduler == scheduler,
            Self::RayClusterMtlsGate => features.ray_cluster_mtls,
            Self::RayServiceIncrementalUpgradeGate => features.ray_service_incremental_upgrade,
            Self::RayCronJobGate => features.ray_cron_job,
            Self::RayClusterNetworkPolicyGate => features.ray_cluster_network_policy,
        }
    }
}

impl OperatorRule {
    /// The rule as a Kubernetes `PolicyRule`.
    pub fn policy_rule(&self) -> PolicyRule {
        PolicyRule {
            api_groups: Some(vec![self.api_group.to_owned()]),
            resources: Some(self.resources.iter().map(|r| (*r).to_owned()).collect()),
            verbs: self.verbs.iter().map(|v| (*v).to_owned()).collect(),
            ..PolicyRule::default()
        }
    }
}

/// The rules of `table` that `features` need, in table order.
pub fn rules_for(table: &[OperatorRule], features: &RbacFeatures) -> Vec<PolicyRule> {
    table
        .iter()
        .filter(|r| r.condition.holds(features))
        .map(OperatorRule::policy_rule)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_are_sorted_and_unique() {
        for r in OPERATOR_RULES.iter().chain(LEADER_ELECTION_RULES) {
            assert!(
                r.verbs.windows(2).all(|w| w[0] < w[1]),
                "{}/{:?}: {:?}",
                r.api_group,
                r.resources,
                r.verbs
            );
        }
    }

    #[test]
    fn conditional_rules_follow_their_features() {
        let base = rules_for(OPERATOR_RULES, &RbacFeatures::default());
        let groups = |rules: &[PolicyRule]| -> Vec<String> {
            rules
                .iter()
                .flat_map(|r| r.api_groups.clone().unwrap_or_default())
                .collect()
        };
        assert!(!groups(&base).contains(&"scheduling.volcano.sh".to_owned()));
        assert!(!groups(&base).contains(&"cert-manager.io".to_owned()));
        let volcano = rules_for(
            OPERATOR_RULES,
            &RbacFeatures {
                batch_scheduler: BatchScheduler::Volcano,
                ..RbacFeatures::default()
            },
        );
        assert_eq!(volcano.len(), base.len() + 1);
        assert!(groups(&volcano).contains(&"scheduling.volcano.sh".to_owned()));
        let yunikorn = rules_for(
            OPERATOR_RULES,
            &RbacFeatures {
                batch_scheduler: BatchScheduler::YuniKorn,
                ..RbacFeatures::default()
            },
        );
        assert_eq!(yunikorn, base, "YuniKorn needs no objects of its own");
    }
}
