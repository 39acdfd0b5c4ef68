//! End to end under RBAC: the operator binary authenticates as its ServiceAccount, holding only the permissions
//! `kuberay-operator rbac` says it uses (what the Helm chart grants), against kube-sim enforcing RBAC as an API
//! server does (including the escalation check on the autoscaler's Role). With those permissions a RayCluster
//! with an autoscaler becomes ready; with one permission taken away, the operator keeps running and says what
//! is missing in its log and in an Event on the RayCluster.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use ray_api::RayCluster;
use serde_json::{Value, json};
use tokio::sync::Mutex;

mod common;
use common::{Operator, SimEnv, free_port};
use kube_sim::SimConfig;

const NS: &str = "default";
/// The identity a pod of the chart's Deployment gets.
const USER: &str = "system:serviceaccount:default:kuberay-operator";
const WAIT: Duration = Duration::from_secs(60);

/// Both tests run an operator; one at a time keeps them within the CI machine's two cores.
static SERIAL: Mutex<()> = Mutex::const_new(());

/// The operator's ClusterRole rules and leader election Role rules, from `kuberay-operator rbac`.
fn generated_rules() -> (Vec<PolicyRule>, Vec<PolicyRule>) {
    let out = Command::new(common::operator_binary()).arg("rbac").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let docs: Vec<Value> = ray_api::yaml::from_yaml_documents(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let rules = |doc: &Value| serde_json::from_value(doc["rules"].clone()).unwrap();
    (rules(&docs[0]), rules(&docs[1]))
}

/// Grants `USER` the given rules (cluster-wide) and leader election rules (in `NS`), as the chart's RBAC
/// objects do, and writes a kubeconfig authenticating as `USER`.
async fn grant(env: &SimEnv, rules: Vec<PolicyRule>, leader_rules: Vec<PolicyRule>) -> std::path::PathBuf {
    let admin = &env.client;
    let subjects = json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": USER}]);
    let pp = PostParams::default();
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "kuberay-operator"}, "rules": rules,
    }))
    .unwrap();
    Api::<ClusterRole>::all(admin.clone()).create(&pp, &role).await.unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "kuberay-operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kuberay-operator"},
        "subjects": subjects,
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&pp, &binding)
        .await
        .unwrap();
    let leader: Role = serde_json::from_value(json!({
        "metadata": {"name": "kuberay-operator-leader-election"}, "rules": leader_rules,
    }))
    .unwrap();
    Api::<Role>::namespaced(admin.clone(), NS)
        .create(&pp, &leader)
        .await
        .unwrap();
    let leader_binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "kuberay-operator-leader-election"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kuberay-operator-leader-election"},
        "subjects": subjects,
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), NS)
        .create(&pp, &leader_binding)
        .await
        .unwrap();
    let kubeconfig = env.dir.join("kubeconfig-operator");
    std::fs::write(&kubeconfig, env.sim.kubeconfig_for(USER, &["system:serviceaccounts"])).unwrap();
    kubeconfig
}

fn start_operator(env: &SimEnv, kubeconfig: &Path) -> Operator {
    Operator::start(&env.dir, kubeconfig, NS, free_port(), free_port(), &[])
}

async fn create_sample(client: &Client, file: &str) -> String {
    let cluster: RayCluster = common::sample_document(file, "RayCluster");
    let api: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    api.create(&PostParams::default(), &cluster).await.unwrap().name_any()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_only_its_generated_rbac_the_operator_makes_an_autoscaled_cluster_ready() {
    let _serial = SERIAL.lock().await;
    let env = SimEnv::start("rbac-ok", SimConfig::default()).await;
    let (rules, leader_rules) = generated_rules();
    let kubeconfig = grant(&env, rules, leader_rules).await;
    let operator = start_operator(&env, &kubeconfig);
    let name = create_sample(&env.client, "ray-cluster.autoscaler.yaml").await;
    let api: Api<RayCluster> = Api::namespaced(env.client.clone(), NS);
    common::wait_for("the RayCluster ready", WAIT, Duration::from_millis(200), || async {
        let status = serde_json::to_value(api.get(&name).await.unwrap().status).unwrap();
        (status["state"] == "ready").then_some(())
    })
    .await;
    // The autoscaler's ServiceAccount, Role and RoleBinding were created (the Role only because the operator
    // holds every permission it grants).
    let roles: Api<Role> = Api::namespaced(env.client.clone(), NS);
    assert!(roles.get_opt(&name).await.unwrap().is_some(), "the autoscaler Role");
    let log = std::fs::read_to_string(&operator.log).unwrap();
    assert!(!log.contains("forbidden"), "a request was forbidden:\n{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_permission_is_a_clear_log_line_and_an_event() {
    let _serial = SERIAL.lock().await;
    let env = SimEnv::start("rbac-missing", SimConfig::default()).await;
    let (mut rules, leader_rules) = generated_rules();
    let pods = rules
        .iter_mut()
        .find(|r| r.resources.as_deref() == Some(&["pods".to_owned()][..]))
        .unwrap();
    pods.verbs.retain(|v| v != "create");
    let kubeconfig = grant(&env, rules, leader_rules).await;
    let mut operator = start_operator(&env, &kubeconfig);
    let name = create_sample(&env.client, "ray-cluster.sample.yaml").await;
    let event = common::wait_for(
        "a Warning Event naming the denied request",
        WAIT,
        Duration::from_millis(200),
        || async {
            common::namespace_events(&env.client, NS).await.into_iter().find(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name.as_str())
                    && e.type_.as_deref() == Some("Warning")
                    && e.note.as_deref().is_some_and(|n| n.contains("forbidden"))
            })
        },
    )
    .await;
    let note = event.note.unwrap_or_default();
    assert!(
        note.contains(&format!("User \"{USER}\" cannot create resource \"pods\"")),
        "the Event names who may not do what: {note}"
    );
    let log = std::fs::read_to_string(&operator.log).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("cannot create resource") && l.contains("pods"))
        .unwrap_or_else(|| panic!("no log line names the denied request:\n{log}"));
    assert!(line.contains(&name), "the log line names the RayCluster: {line}");
    // The operator was still up (no crash loop): it stops cleanly on SIGTERM.
    assert!(operator.terminate().success(), "the operator had failed:\n{log}");
}
