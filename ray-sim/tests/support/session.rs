//! A kubectl session against a fresh `kube-sim serve`, for the end-to-end tests of kube-sim's own APIs
//! (workloads, logs). Included by those tests next to `support` (`#[path = "support/session.rs"] mod session;`).
// Each test crate uses its own part of this module.
#![allow(dead_code)]

use crate::support::{Client, Server, fresh_dir, kubectl_available, start_server};

/// Starts a server and the installed kubectl for it, or `None` (with a loud message) when kubectl is missing.
pub fn kubectl_session(tag: &str) -> Option<(Server, Client)> {
    if !kubectl_available() {
        eprintln!("\n\n!!!!! SKIPPING {tag}: `kubectl` is not on PATH !!!!!\n\n");
        return None;
    }
    let dir = fresh_dir(tag);
    let (server, kubeconfig) = start_server(&dir);
    let client = Client {
        program: "kubectl".into(),
        extra_args: vec!["--request-timeout=20s".into()],
        dir,
        kubeconfig,
    };
    Some((server, client))
}

/// Writes `text` to `name` in the session's directory and returns the path, for `kubectl apply -f`.
pub fn write_file(client: &Client, name: &str, text: &str) -> String {
    let path = client.dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// An `apps/v1` workload manifest (`kind` Deployment, StatefulSet or DaemonSet) selecting `app: <name>`, with one
/// container; `replicas` is left out when `None` (DaemonSets).
pub fn workload_yaml(kind: &str, name: &str, replicas: Option<u32>, container: &str, image: &str) -> String {
    let replicas = replicas.map(|r| format!("  replicas: {r}\n")).unwrap_or_default();
    let service = if kind == "StatefulSet" {
        format!("  serviceName: {name}\n")
    } else {
        String::new()
    };
    format!(
        "apiVersion: apps/v1\nkind: {kind}\nmetadata:\n  name: {name}\nspec:\n{service}{replicas}  selector:\n    \
         matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n      \
         containers:\n      - name: {container}\n        image: {image}\n"
    )
}

/// A pod manifest with one container and the given `kube-sim.io/...` annotations and restart policy.
pub fn pod_yaml(name: &str, annotations: &[(&str, &str)], restart: &str, containers: &[(&str, &str)]) -> String {
    let annotations: String = annotations
        .iter()
        .map(|(k, v)| format!("    kube-sim.io/{k}: {v}\n"))
        .collect();
    let annotations = if annotations.is_empty() {
        String::new()
    } else {
        format!("  annotations:\n{annotations}")
    };
    let containers: String = containers
        .iter()
        .map(|(c, image)| format!("  - name: {c}\n    image: {image}\n"))
        .collect();
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{annotations}spec:\n  restartPolicy: {restart}\n  \
         containers:\n{containers}"
    )
}
