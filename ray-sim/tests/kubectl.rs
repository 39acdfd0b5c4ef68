//! The real `kubectl` against `kube-sim serve`: CRDs, the KubeRay sample, get/patch/wait/delete/apply.
//!
//! Skipped (with a loud message) only when `kubectl` is not on PATH.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

use support::{Client, fresh_dir, kubectl_available, start_server};

fn reference(rel: &str) -> PathBuf {
    let p = kuberay_reference::kuberay_dir().join(rel);
    assert!(p.exists(), "missing reference file {}", p.display());
    p
}

#[test]
fn kubectl_against_kube_sim_serve() {
    if !kubectl_available() {
        eprintln!("\n\n!!!!! SKIPPING kubectl_against_kube_sim_serve: `kubectl` is not on PATH !!!!!\n\n");
        return;
    }
    let started = Instant::now();
    let dir = fresh_dir("kubectl");
    let (_server, kubeconfig) = start_server(&dir);
    let k = Client {
        program: "kubectl".into(),
        extra_args: vec!["--request-timeout=20s".into()],
        dir: dir.clone(),
        kubeconfig,
    };

    // The four KubeRay CRDs (kubectl's default --validate=strict asks the OpenAPI v3 documents first).
    for plural in ["rayclusters", "rayjobs", "rayservices", "raycronjobs"] {
        let crd = reference(&format!("crds/ray.io_{plural}.yaml"));
        let out = k.ok(&["create", "-f", crd.to_str().unwrap()]);
        assert_eq!(
            out.trim(),
            format!("customresourcedefinition.apiextensions.k8s.io/{plural}.ray.io created")
        );
    }
    let crds = k.ok(&["get", "crds", "-o", "name"]);
    let mut crds: Vec<&str> = crds.lines().collect();
    crds.sort_unstable();
    assert_eq!(
        crds,
        [
            "customresourcedefinition.apiextensions.k8s.io/rayclusters.ray.io",
            "customresourcedefinition.apiextensions.k8s.io/raycronjobs.ray.io",
            "customresourcedefinition.apiextensions.k8s.io/rayjobs.ray.io",
            "customresourcedefinition.apiextensions.k8s.io/rayservices.ray.io",
        ]
    );

    // The sample RayCluster.
    let sample_path = reference("samples/ray-cluster.sample.yaml");
    let sample: Value = serde_saphyr::from_str(&std::fs::read_to_string(&sample_path).unwrap()).unwrap();
    let name = sample["metadata"]["name"].as_str().unwrap().to_string();
    let ray_version = sample["spec"]["rayVersion"].as_str().unwrap().to_string();
    let out = k.ok(&["create", "-f", sample_path.to_str().unwrap()]);
    assert_eq!(out.trim(), format!("raycluster.ray.io/{name} created"));

    let list: Value = serde_json::from_str(&k.ok(&["get", "rayclusters", "-o", "json"])).unwrap();
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["kind"], "RayCluster");
    assert_eq!(items[0]["metadata"]["name"], name.as_str());
    assert_eq!(items[0]["metadata"]["namespace"], "default");
    assert_eq!(items[0]["metadata"]["generation"], 1);
    assert_eq!(items[0]["spec"]["rayVersion"], ray_version.as_str());

    // Human-readable get: a server-side Table with the CRD's printer columns.
    let table = k.ok(&["get", "rayclusters"]);
    let mut lines = table.lines();
    assert!(lines.next().unwrap().starts_with("NAME"), "{table}");
    assert!(lines.next().unwrap().starts_with(&name), "{table}");

    // Merge patch, then wait on the patched fields.
    let rc = format!("raycluster/{name}");
    let out = k.ok(&[
        "patch",
        "raycluster",
        &name,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"suspend":true},"metadata":{"labels":{"stage":"patched"}}}"#,
    ]);
    assert_eq!(out.trim(), format!("raycluster.ray.io/{name} patched"));
    for cond in [
        "jsonpath={.spec.suspend}=true",
        "jsonpath={.metadata.labels.stage}=patched",
    ] {
        let out = k.ok(&["wait", &format!("--for={cond}"), &rc, "--timeout=15s"]);
        assert_eq!(out.trim(), format!("raycluster.ray.io/{name} condition met"));
    }
    let generation = k.ok(&["get", &rc, "-o", "jsonpath={.metadata.generation}"]);
    assert_eq!(generation, "2", "the spec patch bumps generation");

    // Pods by label.
    let pods = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}-head\n  labels:\n    ray.io/cluster: {name}\n    ray.io/node-type: head\nspec:\n  containers:\n  - name: ray-head\n    image: rayproject/ray:{ray_version}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: unrelated\n  labels:\n    ray.io/cluster: other\nspec:\n  containers:\n  - name: c\n    image: busybox\n"
    );
    let pods_file = dir.join("pods.yaml");
    std::fs::write(&pods_file, pods).unwrap();
    let out = k.ok(&["create", "-f", pods_file.to_str().unwrap()]);
    assert_eq!(out.trim(), format!("pod/{name}-head created\npod/unrelated created"));
    let out = k.ok(&["get", "pods", "-l", &format!("ray.io/cluster={name}"), "-o", "name"]);
    assert_eq!(out, format!("pod/{name}-head\n"));

    // Delete.
    let out = k.ok(&["delete", "raycluster", &name, "--wait=true", "--timeout=15s"]);
    assert_eq!(out.trim(), format!("raycluster.ray.io \"{name}\" deleted"));
    assert_eq!(k.ok(&["get", "rayclusters", "-o", "name"]), "");

    // apply twice: create, then update with a change (a built-in kind and a custom resource).
    let cm_file = dir.join("cm.yaml");
    std::fs::write(
        &cm_file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: one\n",
    )
    .unwrap();
    assert_eq!(
        k.ok(&["apply", "-f", cm_file.to_str().unwrap()]).trim(),
        "configmap/applied created"
    );
    std::fs::write(
        &cm_file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: two\n",
    )
    .unwrap();
    assert_eq!(
        k.ok(&["apply", "-f", cm_file.to_str().unwrap()]).trim(),
        "configmap/applied configured"
    );
    assert_eq!(
        k.ok(&["get", "configmap", "applied", "-o", "jsonpath={.data.k}"]),
        "two"
    );

    let out = k.ok(&["apply", "-f", sample_path.to_str().unwrap()]);
    assert_eq!(out.trim(), format!("raycluster.ray.io/{name} created"));
    let changed = std::fs::read_to_string(&sample_path)
        .unwrap()
        .replace(&format!("rayVersion: \"{ray_version}\""), "rayVersion: \"9.9.9\"");
    assert!(
        changed.contains("rayVersion: \"9.9.9\""),
        "the sample's rayVersion line changed shape"
    );
    let changed_file = dir.join("raycluster-changed.yaml");
    std::fs::write(&changed_file, changed).unwrap();
    let out = k.ok(&["apply", "-f", changed_file.to_str().unwrap()]);
    assert_eq!(out.trim(), format!("raycluster.ray.io/{name} configured"));
    let out = k.ok(&["get", &rc, "-o", "jsonpath={.spec.rayVersion} {.metadata.generation}"]);
    assert_eq!(out, "9.9.9 2");
    let applied = k.ok(&["apply", "-f", changed_file.to_str().unwrap()]);
    assert_eq!(applied.trim(), format!("raycluster.ray.io/{name} unchanged"));

    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "took {:?}",
        started.elapsed()
    );
}
