//! End to end, the real operator binary against an in-process kube-sim: the NetworkPolicy controller (gate
//! `RayClusterNetworkPolicy`) on KubeRay's deny-all sample. The policies appear with KubeRay's names, labels,
//! selectors and rules, owned by the cluster; a hand edit is reverted, a removed worker group's policy is
//! deleted, a foreign policy in the way is reported and left alone, conflicting modes are refused with
//! KubeRay's message, and deleting the cluster garbage-collects its policies.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use ray_api::RayCluster;
use serde_json::{Value, json};

use crate::common;
use common::{Operator, SimEnv, free_port, sample_document};

const NS: &str = "default";
const CLUSTER: &str = "raycluster-deny-all";

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    common::wait_for(what, Duration::from_secs(60), Duration::from_millis(100), check).await
}

async fn policy_names(api: &Api<NetworkPolicy>, cluster: &str) -> Vec<String> {
    let mut names: Vec<String> = api
        .list(&ListParams::default().labels(&format!("ray.io/cluster={cluster}")))
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    names
}

async fn event_note(client: &Client, reason: &str, object: &str) -> Option<String> {
    common::events_about(client, NS, reason, object)
        .await
        .into_iter()
        .find_map(|e| e.note)
}

fn dns_egress() -> Value {
    json!({"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
        "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_all_sample_policies_converge_and_are_garbage_collected() {
    let env = SimEnv::start("networkpolicy", kube_sim::SimConfig::default()).await;
    let client = env.client.clone();
    let _operator = Operator::start(
        &env.dir,
        &env.kubeconfig,
        NS,
        free_port(),
        free_port(),
        &["--feature-gates=RayClusterNetworkPolicy=true"],
    );
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), NS);
    let sample: RayCluster = sample_document("ray-cluster.network-policy-deny-all.yaml", "RayCluster");
    let cluster = clusters.create(&PostParams::default(), &sample).await.unwrap();
    let head_name = format!("{CLUSTER}-head");
    let workers_name = format!("{CLUSTER}-workers-workergroup");

    wait_for("the head and worker-group policies", || async {
        (policy_names(&policies, CLUSTER).await == [head_name.clone(), workers_name.clone()]).then_some(())
    })
    .await;
    let head = serde_json::to_value(policies.get(&head_name).await.unwrap()).unwrap();
    assert_eq!(
        head["metadata"]["labels"],
        json!({"ray.io/cluster": CLUSTER, "ray.io/group": "headgroup", "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator"})
    );
    let owner = &head["metadata"]["ownerReferences"][0];
    assert_eq!(
        (
            owner["kind"].as_str(),
            owner["uid"].as_str(),
            owner["controller"].as_bool()
        ),
        (Some("RayCluster"), cluster.uid().as_deref(), Some(true))
    );
    let head_spec = json!({
        "podSelector": {"matchLabels": {"ray.io/cluster": CLUSTER, "ray.io/node-type": "head"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": CLUSTER}}}]}],
        "egress": [{"to": [{"podSelector": {"matchLabels": {"ray.io/cluster": CLUSTER}}}]}, dns_egress()]
    });
    assert_eq!(head["spec"], head_spec);
    let workers = serde_json::to_value(policies.get(&workers_name).await.unwrap()).unwrap();
    assert_eq!(
        workers["spec"]["podSelector"],
        json!({"matchLabels": {"ray.io/cluster": CLUSTER, "ray.io/node-type": "worker", "ray.io/group": "workergroup"}})
    );
    assert_eq!(workers["spec"]["egress"][1], dns_egress());
    let created = wait_for("the CreatedNetworkPolicy event", || async {
        event_note(&client, "CreatedNetworkPolicy", CLUSTER).await
    })
    .await;
    assert!(created.starts_with("Created NetworkPolicy default/"), "{created}");

    // A hand edit of an owned policy is reverted.
    policies
        .patch(
            &head_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"egress": null, "policyTypes": ["Ingress"]}})),
        )
        .await
        .unwrap();
    wait_for("the edited head policy to be restored", || async {
        let now = serde_json::to_value(policies.get(&head_name).await.unwrap()).unwrap();
        (now["spec"] == head_spec).then_some(())
    })
    .await;
    let updated = wait_for("the UpdatedNetworkPolicy event", || async {
        event_note(&client, "UpdatedNetworkPolicy", CLUSTER).await
    })
    .await;
    assert_eq!(updated, format!("Updated NetworkPolicy default/{head_name}"));

    // A new worker group gets a policy; removing it deletes that policy.
    let mut groups = serde_json::to_value(&cluster.spec.worker_group_specs).unwrap();
    let mut extra = groups[0].clone();
    extra["groupName"] = json!("extra");
    groups.as_array_mut().unwrap().push(extra);
    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workerGroupSpecs": groups}})),
        )
        .await
        .unwrap();
    let extra_name = format!("{CLUSTER}-workers-extra");
    wait_for("the new group's policy", || async {
        policy_names(&policies, CLUSTER)
            .await
            .contains(&extra_name)
            .then_some(())
    })
    .await;
    let original = serde_json::to_value(&cluster.spec.worker_group_specs).unwrap();
    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workerGroupSpecs": original}})),
        )
        .await
        .unwrap();
    wait_for("the removed group's policy to be deleted", || async {
        (!policy_names(&policies, CLUSTER).await.contains(&extra_name)).then_some(())
    })
    .await;
    let deleted = wait_for("the DeletedNetworkPolicy event", || async {
        event_note(&client, "DeletedNetworkPolicy", CLUSTER).await
    })
    .await;
    assert_eq!(deleted, format!("Deleted NetworkPolicy default/{extra_name}"));

    // A policy of someone else's holding the head policy's name: reported, never touched.
    let foreign: NetworkPolicy = serde_json::from_value(json!({
        "metadata": {"name": "collide-head", "labels": {"team": "net"}},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}
    }))
    .unwrap();
    policies.create(&PostParams::default(), &foreign).await.unwrap();
    let mut collide = sample.clone();
    collide.metadata.name = Some("collide".to_owned());
    clusters.create(&PostParams::default(), &collide).await.unwrap();
    let note = wait_for("the NetworkPolicyNameCollision event", || async {
        event_note(&client, "NetworkPolicyNameCollision", "collide").await
    })
    .await;
    assert_eq!(
        note,
        "NetworkPolicy default/collide-head already exists and is not owned by this RayCluster, network isolation will not be applied. Rename the existing NetworkPolicy or use a different RayCluster name to avoid the collision"
    );
    let untouched = policies.get("collide-head").await.unwrap();
    assert_eq!(untouched.labels().get("team").map(String::as_str), Some("net"));
    assert!(untouched.owner_references().is_empty());

    // Conflicting settings: the RayCluster controller refuses the spec with KubeRay's message.
    let mut conflicting = serde_json::to_value(&sample).unwrap();
    conflicting["metadata"] = json!({"name": "conflicting"});
    conflicting["spec"]["networkPolicy"] = json!({"mode": "DenyAllEgress",
        "head": {"ingressRules": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}});
    clusters
        .create(&PostParams::default(), &serde_json::from_value(conflicting).unwrap())
        .await
        .unwrap();
    let note = wait_for("the InvalidRayClusterSpec event", || async {
        event_note(&client, "InvalidRayClusterSpec", "conflicting").await
    })
    .await;
    assert_eq!(
        note,
        "The RayCluster spec is invalid default/conflicting: networkPolicy.head.ingressRules cannot be set when mode is \"DenyAllEgress\" (ingress is not restricted)"
    );

    // Deleting the cluster garbage-collects its policies through their owner references.
    clusters.delete(CLUSTER, &DeleteParams::default()).await.unwrap();
    wait_for("the policies to be garbage-collected", || async {
        policy_names(&policies, CLUSTER).await.is_empty().then_some(())
    })
    .await;
}
