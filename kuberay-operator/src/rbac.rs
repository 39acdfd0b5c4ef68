//! `kuberay-operator rbac`: the permissions the operator uses (`ray_reconcile::rbac`) for a set of flags, as a
//! ClusterRole and a leader election Role; with `--helm-template`, the same table as the Helm chart's
//! `templates/_rbac_rules.tpl`, the one place the chart's RBAC rules come from.

use std::fmt::Write as _;

use anyhow::Context as _;
use clap::Args;
use ray_api::feature_gates::FeatureGates;
use ray_gang::constants::{SCHEDULER_PLUGINS_PLUGIN, VOLCANO_PLUGIN};
use ray_gang::scheduler::BatchScheduler;
use ray_gang::selection::{SchedulerConfig, select_scheduler};
use ray_reconcile::rbac::{
    LEADER_ELECTION_RULES, OPERATOR_RULES, OperatorRule, RbacFeatures, RuleCondition, rules_for,
};
use serde_json::{Value, json};

/// Arguments of `kuberay-operator rbac`: the operator flags that change which permissions it needs.
#[derive(Debug, Args)]
pub struct RbacArgs {
    /// `--feature-gates` as the operator takes it (`Name=bool,...`).
    #[arg(long, default_value = "")]
    feature_gates: String,
    /// `--batch-scheduler` as the operator takes it.
    #[arg(long, default_value = "")]
    batch_scheduler: String,
    /// `--enable-batch-scheduler` (Volcano).
    #[arg(long)]
    enable_batch_scheduler: bool,
    /// `--use-kubernetes-proxy`.
    #[arg(long)]
    use_kubernetes_proxy: bool,
    /// Print the Helm chart's rules template instead (every rule, each under its chart condition).
    #[arg(long, conflicts_with_all = ["feature_gates", "batch_scheduler", "enable_batch_scheduler", "use_kubernetes_proxy"])]
    helm_template: bool,
}

/// Prints the ClusterRole and leader election Role, or the chart template.
pub fn run(args: &RbacArgs) -> anyhow::Result<()> {
    let text = if args.helm_template {
        helm_template()
    } else {
        let features = features(args)?;
        let cluster_role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "kuberay-operator"},
            "rules": rules_for(OPERATOR_RULES, &features),
        });
        let leader_election = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "kuberay-operator-leader-election"},
            "rules": rules_for(LEADER_ELECTION_RULES, &features),
        });
        yaml_stream(&[cluster_role, leader_election])?
    };
    print!("{text}");
    Ok(())
}

fn features(args: &RbacArgs) -> anyhow::Result<RbacFeatures> {
    let gates = FeatureGates::parse(&args.feature_gates).context("--feature-gates")?;
    let batch_scheduler = select_scheduler(&SchedulerConfig {
        enable_batch_scheduler: args.enable_batch_scheduler,
        batch_scheduler: args.batch_scheduler.clone(),
        kubernetes_was_gate: gates.kubernetes_was,
    })?;
    Ok(RbacFeatures {
        use_kubernetes_proxy: args.use_kubernetes_proxy,
        batch_scheduler,
        ray_cluster_mtls: gates.ray_cluster_mtls,
        ray_service_incremental_upgrade: gates.ray_service_incremental_upgrade,
        ray_cron_job: gates.ray_cron_job,
        ray_cluster_network_policy: gates.ray_cluster_network_policy,
    })
}

fn yaml_stream(docs: &[Value]) -> anyhow::Result<String> {
    let mut out = String::new();
    for doc in docs {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(doc).context("serialising RBAC to YAML")?);
    }
    Ok(out)
}

/// The chart expression that is true when `condition` holds (`None`: always), over the helpers in
/// `templates/_helpers.tpl`.
fn helm_condition(condition: RuleCondition) -> Option<String> {
    if let Some((gate, default)) = condition.feature_gate() {
        return Some(format!(
            "include \"kuberay-operator.featureGateEnabled\" (list . \"{gate}\" {default})"
        ));
    }
    let scheduler = |name: &str| format!("eq (include \"kuberay-operator.batchScheduler\" .) \"{name}\"");
    match condition {
        RuleCondition::UseKubernetesProxy => Some("include \"kuberay-operator.useKubernetesProxy\" .".to_owned()),
        RuleCondition::BatchScheduler(BatchScheduler::Volcano) => Some(scheduler(VOLCANO_PLUGIN)),
        RuleCondition::BatchScheduler(BatchScheduler::SchedulerPlugins) => Some(scheduler(SCHEDULER_PLUGINS_PLUGIN)),
        // Only Volcano and scheduler-plugins have objects of their own; the other conditions hold always
        // or are gates, answered above.
        _ => None,
    }
}

fn write_rules(out: &mut String, rules: &[OperatorRule]) {
    for rule in rules {
        let condition = helm_condition(rule.condition);
        if let Some(condition) = &condition {
            let _ = writeln!(out, "{{{{- if {condition} }}}}");
        }
        let _ = writeln!(out, "- apiGroups:\n  - {:?}", rule.api_group);
        out.push_str("  resources:\n");
        for resource in rule.resources {
            let _ = writeln!(out, "  - {resource}");
        }
        out.push_str("  verbs:\n");
        for verb in rule.verbs {
            let _ = writeln!(out, "  - {verb}");
        }
        if condition.is_some() {
            out.push_str("{{- end }}\n");
        }
    }
}

/// The chart's `templates/_rbac_rules.tpl`: the named templates `kuberay-operator.operatorRules` and
/// `kuberay-operator.leaderElectionRules`.
pub fn helm_template() -> String {
    let mut out = String::from(
        "{{/* Generated by `kuberay-operator rbac --helm-template` from the operator's table of the API calls it\n\
         makes (ray-reconcile/src/rbac.rs); do not edit: kuberay-operator/tests/helm_chart.rs fails on drift. */}}\n",
    );
    out.push_str("{{- define \"kuberay-operator.operatorRules\" }}\n");
    write_rules(&mut out, OPERATOR_RULES);
    out.push_str("{{- end }}\n");
    out.push_str("{{- define \"kuberay-operator.leaderElectionRules\" }}\n");
    write_rules(&mut out, LEADER_ELECTION_RULES);
    out.push_str("{{- end }}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_condition_has_a_chart_expression() {
        for rule in OPERATOR_RULES.iter().chain(LEADER_ELECTION_RULES) {
            assert_eq!(
                helm_condition(rule.condition).is_none(),
                rule.condition == RuleCondition::Always,
                "{rule:?}"
            );
        }
    }

    #[test]
    fn template_guards_each_conditional_rule() {
        let text = helm_template();
        assert!(text.contains("{{- if eq (include \"kuberay-operator.batchScheduler\" .) \"volcano\" }}"));
        assert!(text.contains("(list . \"RayClusterMTLS\" false)"));
        assert_eq!(text.matches("{{- if").count(), text.matches("{{- end }}").count() - 2);
    }
}
