//! The real `kubectl` driving `apps/v1` workloads on `kube-sim serve`: apply, `rollout status|history|undo`,
//! `set image`, `scale` (the scale subresource), `get deploy,rs,sts,ds`, a StatefulSet and a DaemonSet.
//!
//! Skipped (with a loud message) only when `kubectl` is not on PATH.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/session.rs"]
mod session;
mod support;

use serde_json::Value;
use session::{kubectl_session, workload_yaml, write_file};
use support::Client;

fn last_line(out: &str) -> &str {
    out.trim_end().lines().last().unwrap_or_default()
}

fn json(k: &Client, args: &[&str]) -> Value {
    serde_json::from_str(&k.ok(args)).unwrap()
}

fn rollout_status(k: &Client, target: &str) -> String {
    k.ok(&["rollout", "status", target, "--timeout=60s"])
}

#[test]
fn kubectl_rollout_status_undo_scale_on_apps_workloads() {
    let Some((_server, k)) = kubectl_session("kubectl-workloads") else {
        return;
    };
    let file = write_file(
        &k,
        "web.yaml",
        &workload_yaml("Deployment", "web", Some(3), "nginx", "nginx:1.27"),
    );
    assert_eq!(k.ok(&["apply", "-f", &file]).trim(), "deployment.apps/web created");
    assert_eq!(
        last_line(&rollout_status(&k, "deployment/web")),
        "deployment \"web\" successfully rolled out"
    );

    // A new image rolls out revision 2.
    assert_eq!(
        k.ok(&["set", "image", "deployment/web", "nginx=nginx:1.28"]).trim(),
        "deployment.apps/web image updated"
    );
    assert_eq!(
        last_line(&rollout_status(&k, "deployment/web")),
        "deployment \"web\" successfully rolled out"
    );
    assert_eq!(
        k.ok(&["rollout", "history", "deployment/web"]),
        "deployment.apps/web \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n"
    );
    let rs = json(&k, &["get", "rs", "-l", "app=web", "-o", "json"]);
    let rs = rs["items"].as_array().unwrap();
    assert_eq!(rs.len(), 2, "one ReplicaSet per template");
    for r in rs {
        let hash = r["metadata"]["labels"]["pod-template-hash"].as_str().unwrap();
        assert_eq!(r["metadata"]["name"], format!("web-{hash}"));
        let replicas = match r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
            .as_str()
            .unwrap()
        {
            "1" => 0,
            "2" => 3,
            other => panic!("unexpected revision {other}"),
        };
        assert_eq!(r["spec"]["replicas"], replicas);
    }

    // Undo goes back to revision 1's template as revision 3.
    assert_eq!(
        k.ok(&["rollout", "undo", "deployment/web"]).trim(),
        "deployment.apps/web rolled back"
    );
    assert_eq!(
        last_line(&rollout_status(&k, "deployment/web")),
        "deployment \"web\" successfully rolled out"
    );
    assert_eq!(
        k.ok(&["get", "deployment", "web", "-o",
            "jsonpath={.spec.template.spec.containers[0].image} {.metadata.annotations.deployment\\.kubernetes\\.io/revision}"]),
        "nginx:1.27 3"
    );
    assert_eq!(
        k.ok(&["rollout", "history", "deployment/web"]),
        "deployment.apps/web \nREVISION  CHANGE-CAUSE\n2         <none>\n3         <none>\n\n"
    );

    // Scale through the scale subresource.
    assert_eq!(
        k.ok(&["scale", "deployment/web", "--replicas=5"]).trim(),
        "deployment.apps/web scaled"
    );
    assert_eq!(
        last_line(&rollout_status(&k, "deployment/web")),
        "deployment \"web\" successfully rolled out"
    );
    let d = json(&k, &["get", "deploy", "web", "-o", "json"]);
    let s = &d["status"];
    assert_eq!(
        [
            &s["replicas"],
            &s["updatedReplicas"],
            &s["readyReplicas"],
            &s["availableReplicas"]
        ],
        [5, 5, 5, 5]
    );
    assert_eq!(s["observedGeneration"], d["metadata"]["generation"]);
    assert_eq!(
        k.ok(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[*].status.phase}"
        ]),
        "Running Running Running Running Running"
    );

    // A StatefulSet and a DaemonSet reach ready.
    let file = write_file(
        &k,
        "db.yaml",
        &workload_yaml("StatefulSet", "db", Some(2), "db", "postgres:17"),
    );
    assert_eq!(k.ok(&["apply", "-f", &file]).trim(), "statefulset.apps/db created");
    let file = write_file(
        &k,
        "agent.yaml",
        &workload_yaml("DaemonSet", "agent", None, "agent", "fluent-bit:3"),
    );
    assert_eq!(k.ok(&["apply", "-f", &file]).trim(), "daemonset.apps/agent created");
    // The defaulted `rollingUpdate.partition: 0` makes kubectl report a partitioned roll out, as on any cluster.
    assert_eq!(
        last_line(&rollout_status(&k, "statefulset/db")),
        "partitioned roll out complete: 2 new pods have been updated..."
    );
    assert_eq!(
        last_line(&rollout_status(&k, "daemonset/agent")),
        "daemon set \"agent\" successfully rolled out"
    );
    assert_eq!(
        k.ok(&["get", "pods", "-l", "app=db", "-o", "name"]),
        "pod/db-0\npod/db-1\n"
    );

    // One listing of every apps kind.
    let all = json(&k, &["get", "deploy,rs,sts,ds", "-o", "json"]);
    let mut kinds: Vec<(String, String)> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap().to_string(),
                i["metadata"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    kinds.sort();
    let names: Vec<&str> = kinds.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        ["DaemonSet", "Deployment", "ReplicaSet", "ReplicaSet", "StatefulSet"]
    );
    let ds = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "DaemonSet")
        .unwrap();
    assert_eq!(ds["status"]["desiredNumberScheduled"], 3);
    assert_eq!(ds["status"]["numberReady"], 3);
    let sts = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "StatefulSet")
        .unwrap();
    assert_eq!(sts["status"]["readyReplicas"], 2);
    assert_eq!(sts["status"]["currentRevision"], sts["status"]["updateRevision"]);

    // Deleting the Deployment takes its ReplicaSets and pods along (garbage collection by owner).
    assert_eq!(
        k.ok(&["delete", "deployment", "web", "--wait=true", "--timeout=30s"])
            .trim(),
        "deployment.apps \"web\" deleted"
    );
    let out = k.ok(&["wait", "--for=delete", "pods", "-l", "app=web", "--timeout=30s"]);
    assert!(out.is_empty() || out.contains("condition met"), "{out}");
    assert_eq!(k.ok(&["get", "rs", "-l", "app=web", "-o", "name"]), "");
    let _ = std::fs::remove_dir_all(&k.dir);
}

/// `kubectl create deployment` sends its body as protobuf: the generator's Deployment rolls out.
#[test]
fn kubectl_create_deployment_generator_rolls_out() {
    let Some((_server, k)) = kubectl_session("kubectl-create-deployment") else {
        return;
    };
    assert_eq!(
        k.ok(&["create", "deployment", "gen", "--image=nginx", "--replicas=3"])
            .trim(),
        "deployment.apps/gen created"
    );
    assert_eq!(
        last_line(&rollout_status(&k, "deployment/gen")),
        "deployment \"gen\" successfully rolled out"
    );
    let _ = std::fs::remove_dir_all(&k.dir);
}
