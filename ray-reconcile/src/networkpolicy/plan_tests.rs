//! The NetworkPolicy plan: names, labels, selectors, rules and modes (2.5), updates (2.6), stale policies
//! (2.7), numbered after `docs/networkpolicy.md`'s sections.

use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{Value, json};

fn cluster(network_policy: Value) -> RayCluster {
    serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ns", "uid": "uid-rc"},
        "spec": {
            "networkPolicy": network_policy,
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "i"}]}}},
            "workerGroupSpecs": [
                {"groupName": "small", "rayStartParams": {}, "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}},
                {"groupName": "gpu", "rayStartParams": {}, "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}}
            ]
        }
    }))
    .unwrap()
}

fn json_of(policies: &[NetworkPolicy]) -> Vec<Value> {
    policies.iter().map(|p| serde_json::to_value(p).unwrap()).collect()
}

const DNS_EGRESS: &str = r#"{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}], "ports": [{"port": 53, "protocol": "UDP"}]}"#;

#[test]
fn golden_2_5_deny_all_head_and_one_policy_per_group() {
    let dns: Value = serde_json::from_str(DNS_EGRESS).unwrap();
    let c = cluster(json!({"mode": "DenyAll", "head": {"egressRules": [dns]}, "worker": {"egressRules": [dns]}}));
    let policies = json_of(&desired_policies(&c));
    let names: Vec<&str> = policies
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rc-head", "rc-workers-small", "rc-workers-gpu"]);
    let head = &policies[0];
    assert_eq!(
        head["metadata"]["labels"],
        json!({"ray.io/cluster": "rc", "ray.io/group": "headgroup", "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator"})
    );
    assert_eq!(
        head["metadata"]["ownerReferences"],
        json!([{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc", "uid": "uid-rc",
            "controller": true, "blockOwnerDeletion": true}])
    );
    assert_eq!(
        head["spec"],
        json!({
            "podSelector": {"matchLabels": {"ray.io/cluster": "rc", "ray.io/node-type": "head"}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": "rc"}}}]}],
            "egress": [{"to": [{"podSelector": {"matchLabels": {"ray.io/cluster": "rc"}}}]}, dns]
        })
    );
    assert_eq!(
        policies[2]["spec"]["podSelector"],
        json!({"matchLabels": {"ray.io/cluster": "rc", "ray.io/node-type": "worker", "ray.io/group": "gpu"}})
    );
    assert_eq!(policies[2]["metadata"]["labels"]["ray.io/group"], "gpu");
    assert_eq!(policies[1]["spec"]["egress"][1], dns);
}

#[test]
fn golden_2_5_modes_choose_policy_types_and_drop_the_other_rules() {
    let rule = json!({"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]});
    let ingress_only = cluster(json!({"mode": "DenyAllIngress", "head": {"ingressRules": [rule]}}));
    let head = &json_of(&desired_policies(&ingress_only))[0];
    assert_eq!(head["spec"]["policyTypes"], json!(["Ingress"]));
    assert_eq!(head["spec"]["ingress"][1], rule);
    assert!(head["spec"].get("egress").is_none());
    let egress_only = cluster(json!({"mode": "DenyAllEgress", "head": {"ingressRules": [rule]}}));
    let head = &json_of(&desired_policies(&egress_only))[0];
    assert_eq!(head["spec"]["policyTypes"], json!(["Egress"]));
    assert!(head["spec"].get("ingress").is_none());
    // No mode is DenyAll.
    let default = &json_of(&desired_policies(&cluster(json!({}))))[0];
    assert_eq!(default["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
}

#[test]
fn golden_2_5_group_entry_replaces_worker_rules() {
    let worker_rule = json!({"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]});
    let gpu_rule = json!({"from": [{"ipBlock": {"cidr": "192.168.0.0/16"}}]});
    let c = cluster(json!({
        "worker": {"ingressRules": [worker_rule]},
        "workerGroups": [{"groupName": "gpu", "ingressRules": [gpu_rule]}]
    }));
    let policies = json_of(&desired_policies(&c));
    assert_eq!(
        policies[1]["spec"]["ingress"],
        json!([
        {"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": "rc"}}}]}, worker_rule])
    );
    assert_eq!(
        policies[2]["spec"]["ingress"],
        json!([
        {"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": "rc"}}}]}, gpu_rule])
    );
    // The head never takes worker rules.
    assert_eq!(policies[0]["spec"]["ingress"].as_array().unwrap().len(), 1);
}

#[test]
fn golden_2_5_rayjob_submitter_reaches_the_dashboard() {
    let mut c = cluster(json!({}));
    c.metadata.labels = Some(BTreeMap::from([(
        "ray.io/job-submission-mode".into(),
        "K8sJobMode".into(),
    )]));
    c.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "ray.io/v1".into(),
        kind: "RayJob".into(),
        name: "job1".into(),
        uid: "uid-job".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    let head = &json_of(&desired_policies(&c))[0];
    assert_eq!(
        head["spec"]["ingress"][1],
        json!({"from": [{"podSelector": {"matchLabels": {"ray.io/originated-from-cr-name": "job1",
            "ray.io/originated-from-crd": "RayJob"}}}], "ports": [{"protocol": "TCP", "port": 8265}]})
    );
    c.spec.head_group_spec.ray_start_params = Some(BTreeMap::from([("dashboard-port".into(), "9000".into())]));
    assert_eq!(
        json_of(&desired_policies(&c))[0]["spec"]["ingress"][1]["ports"][0]["port"],
        9000
    );
    // Workers never get it, nor does a cluster in another mode.
    assert_eq!(
        json_of(&desired_policies(&c))[1]["spec"]["ingress"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    c.metadata.labels = Some(BTreeMap::from([(
        "ray.io/job-submission-mode".into(),
        "HTTPMode".into(),
    )]));
    assert_eq!(
        json_of(&desired_policies(&c))[0]["spec"]["ingress"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn golden_2_4_nothing_without_network_policy_deleted_or_unmanaged_clusters_ignored() {
    let mut c = cluster(json!({}));
    c.spec.network_policy = None;
    assert_eq!(plan(&c), NetworkPolicyPass::Converge(Vec::new()));
    c.spec.managed_by = Some("kueue.x-k8s.io/multikueue".into());
    assert_eq!(plan(&c), NetworkPolicyPass::Ignore);
    let mut deleting = cluster(json!({}));
    deleting.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2024-01-01T00:00:00Z".parse().unwrap(),
    ));
    assert_eq!(plan(&deleting), NetworkPolicyPass::Ignore);
}

#[test]
fn golden_2_6_update_only_on_drift_with_tcp_defaulted_and_annotations_kept() {
    let rule = json!({"ports": [{"port": 53}]});
    let c = cluster(json!({"head": {"egressRules": [rule]}}));
    let desired = desired_policies(&c).remove(0);
    let mut stored = desired.clone();
    default_port_protocols(stored.spec.as_mut().unwrap());
    stored.metadata.annotations = Some(BTreeMap::from([("note".into(), "kept".into())]));
    assert_eq!(updated(&stored, &desired), None);
    let mut drifted = stored.clone();
    drifted.spec.as_mut().unwrap().egress = None;
    drifted
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("extra".into(), "x".into());
    let update = updated(&drifted, &desired).unwrap();
    assert_eq!(update.spec, stored.spec);
    assert_eq!(update.metadata.labels, desired.metadata.labels);
    assert_eq!(update.metadata.annotations, stored.metadata.annotations);
}

#[test]
fn golden_2_7_stale_policies_are_the_clusters_own_undesired_ones() {
    let c = cluster(json!({}));
    let desired = desired_policies(&c);
    let mut gone_group = desired[1].clone();
    gone_group.metadata.name = Some("rc-workers-old".into());
    let mut foreign = gone_group.clone();
    foreign.metadata.name = Some("rc-workers-foreign".into());
    foreign.metadata.owner_references = None;
    let existing = vec![desired[0].clone(), gone_group, foreign];
    assert_eq!(stale(&existing, &desired, &c), ["rc-workers-old"]);
    assert!(controlled_by(&desired[0].metadata, &c));
}
