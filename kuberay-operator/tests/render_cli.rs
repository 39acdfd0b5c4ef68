//! `kuberay-operator render` as a user runs it: the binary, real KubeRay sample files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn samples_dir() -> PathBuf {
    kuberay_reference::samples_dir()
}

fn render(args: &[&str], stdin: Option<&str>) -> std::process::Output {
    render_with_env(args, stdin, &[])
}

/// `render` with extra environment variables `env` set.
fn render_with_env(args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kuberay-operator"));
    command.arg("render").args(args);
    // The operator's switches come from the environment; the tests must not inherit a developer's.
    let switch = |k: &str| k.starts_with("ENABLE_") || k == "CLUSTER_DOMAIN" || k == "USE_INGRESS_ON_OPENSHIFT";
    for (key, _) in std::env::vars().filter(|(k, _)| switch(k)) {
        command.env_remove(key);
    }
    command.envs(env.iter().copied());
    match stdin {
        None => command.output().unwrap(),
        Some(text) => {
            use std::io::Write;
            let mut child = command
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
            child.wait_with_output().unwrap()
        }
    }
}

fn items(output: &std::process::Output) -> Vec<Value> {
    assert!(
        output.status.success(),
        "render failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    list["items"].as_array().unwrap().clone()
}

fn names(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| {
            let meta = &i["metadata"];
            let name = meta["name"]
                .as_str()
                .or(meta["generateName"].as_str())
                .unwrap_or_default();
            format!("{}/{}", i["kind"].as_str().unwrap_or_default(), name)
        })
        .collect()
}

#[test]
fn sample_cluster_renders_services_head_and_one_worker_in_creation_order() {
    let file = samples_dir().join("ray-cluster.sample.yaml");
    let out = render(&["-f", file.to_str().unwrap()], None);
    let items = items(&out);
    assert_eq!(
        names(&items),
        [
            "Service/raycluster-kuberay-head-svc",
            "Pod/raycluster-kuberay-head-",
            "Pod/raycluster-kuberay-workergroup-worker-"
        ]
    );
    let worker = &items[2];
    assert_eq!(worker["metadata"]["labels"]["ray.io/worker-group-replica-index"], "0");
    // Same input, same bytes.
    assert_eq!(render(&["-f", file.to_str().unwrap()], None).stdout, out.stdout);
}

/// `ray-cluster.sample.yaml` with `headGroupSpec.enableIngress: true` and one annotation.
fn sample_with_ingress() -> String {
    let text = std::fs::read_to_string(samples_dir().join("ray-cluster.sample.yaml")).unwrap();
    let text = text.replacen("  headGroupSpec:\n", "  headGroupSpec:\n    enableIngress: true\n", 1);
    text.replacen(
        "metadata:\n",
        "metadata:\n  annotations:\n    example.com/team: ray\n",
        1,
    )
}

#[test]
fn enable_ingress_renders_an_ingress_or_with_openshift_a_route() {
    let text = sample_with_ingress();
    let plain = items(&render(&["-f", "-"], Some(&text)));
    assert_eq!(
        names(&plain)[..2],
        [
            "Ingress/raycluster-kuberay-head-ingress",
            "Service/raycluster-kuberay-head-svc"
        ]
    );

    let openshift = items(&render(&["--openshift", "-f", "-"], Some(&text)));
    assert_eq!(
        names(&openshift)[..2],
        [
            "Route/raycluster-kuberay-head-route",
            "Service/raycluster-kuberay-head-svc"
        ]
    );
    assert!(openshift.iter().all(|i| i["kind"] != "Ingress"));
    let route = &openshift[0];
    assert_eq!(route["apiVersion"], "route.openshift.io/v1");
    assert_eq!(route["metadata"]["annotations"]["example.com/team"], "ray");
    assert_eq!(route["metadata"]["labels"]["ray.io/cluster"], "raycluster-kuberay");
    assert_eq!(
        route["spec"],
        serde_json::json!({
            "to": {"kind": "Service", "name": "raycluster-kuberay-head-svc", "weight": 100},
            "port": {"targetPort": 8265},
            "wildcardPolicy": "None"
        })
    );

    // USE_INGRESS_ON_OPENSHIFT=true keeps the Ingress, as on the operator.
    let output = render_with_env(
        &["--openshift", "-f", "-"],
        Some(&text),
        &[("USE_INGRESS_ON_OPENSHIFT", "true")],
    );
    assert_eq!(names(&items(&output))[0], "Ingress/raycluster-kuberay-head-ingress");
}

#[test]
fn autoscaler_sample_gets_rbac_and_the_sidecar() {
    let file = samples_dir().join("ray-cluster.autoscaler.yaml");
    let items = items(&render(&["-f", file.to_str().unwrap()], None));
    let kinds: Vec<String> = names(&items);
    assert_eq!(
        &kinds[..3],
        [
            "ServiceAccount/raycluster-autoscaler",
            "Role/raycluster-autoscaler",
            "RoleBinding/raycluster-autoscaler"
        ]
    );
    let head = items.iter().find(|i| i["kind"] == "Pod").unwrap();
    let containers: Vec<&str> = head["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(containers, ["ray-head", "autoscaler"]);
}

#[test]
fn mtls_sample_renders_tls_pods_with_the_gate() {
    let file = samples_dir().join("ray-cluster.mtls.yaml");
    let items = items(&render(
        &["-f", file.to_str().unwrap(), "--feature-gates=RayClusterMTLS=true"],
        None,
    ));
    let pods: Vec<&Value> = items.iter().filter(|i| i["kind"] == "Pod").collect();
    assert_eq!(pods.len(), 2);
    for (pod, secret) in pods
        .iter()
        .zip(["ray-head-secret-raycluster-mtls", "ray-worker-secret-raycluster-mtls"])
    {
        let spec = &pod["spec"];
        assert_eq!(spec["initContainers"][0]["name"], "wait-for-tls-ip-san");
        let volume = spec["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "ray-tls")
            .unwrap();
        assert_eq!(volume["secret"]["secretName"], secret);
        let env = spec["containers"][0]["env"].as_array().unwrap();
        assert!(env.iter().any(|e| e["name"] == "RAY_USE_TLS" && e["value"] == "1"));
    }
}

#[test]
fn volcano_sample_gets_its_pod_group_and_pod_annotations() {
    let file = samples_dir().join("ray-cluster.volcano-scheduler-queue.yaml");
    let out = render(&["--batch-scheduler", "volcano", "-f", file.to_str().unwrap()], None);
    let items = items(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("skipping kind \"Queue\""), "stderr: {stderr}");
    let pod_group = items.iter().find(|i| i["kind"] == "PodGroup").expect("a PodGroup");
    assert_eq!(pod_group["apiVersion"], "scheduling.volcano.sh/v1beta1");
    assert_eq!(pod_group["metadata"]["name"], "ray-test-cluster-0-pg");
    assert_eq!(pod_group["spec"]["minMember"], 3);
    assert_eq!(pod_group["spec"]["queue"], "kuberay-test-queue");
    assert_eq!(pod_group["spec"]["minResources"]["cpu"], "3");
    assert_eq!(pod_group["spec"]["minResources"]["memory"], "4Gi");
    for pod in items.iter().filter(|i| i["kind"] == "Pod") {
        assert_eq!(pod["spec"]["schedulerName"], "volcano");
        assert_eq!(
            pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
            "ray-test-cluster-0-pg"
        );
    }
}

#[test]
fn invalid_input_exits_2_with_file_document_field_and_kuberay_message() {
    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n\
        apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: bad}\nspec:\n  headGroupSpec:\n    template:\n      spec:\n        containers: [{name: ray-head, image: rayproject/ray}]\n  workerGroupSpecs:\n  - groupName: small\n    replicas: 3\n    minReplicas: 5\n    maxReplicas: 2\n    template:\n      spec:\n        containers: [{name: w, image: rayproject/ray}]\n";
    let out = render(&["-f", "-"], Some(doc));
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing on stdout");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("-: document 1 (RayCluster bad): spec.workerGroupSpecs[0]"),
        "stderr: {stderr}"
    );
    assert!(stderr.contains("minReplicas"), "stderr: {stderr}");
}

#[test]
fn unknown_field_exits_2_naming_its_path() {
    let doc = "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: typo}\nspec:\n  headGroupSpec:\n    template:\n      spec:\n        containers: [{name: ray-head, image: rayproject/ray}]\n  workerGroupSpecs:\n  - groupName: small\n    replica: 3\n    template:\n      spec:\n        containers: [{name: w, image: rayproject/ray}]\n";
    let out = render(&["-f", "-"], Some(doc));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("spec.workerGroupSpecs[0].replica: unknown field"),
        "stderr: {stderr}"
    );
}

#[test]
fn webhook_config_prints_kuberays_validating_webhook_configuration() {
    let out = render(
        &[
            "--webhook-config",
            "--webhook-service-namespace",
            "ray-system",
            "-o",
            "yaml",
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let docs: Vec<Value> = ray_api::yaml::from_yaml_documents(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let config = &docs[0];
    assert_eq!(config["kind"], "ValidatingWebhookConfiguration");
    let webhooks = config["webhooks"].as_array().unwrap();
    let summary: Vec<(&str, &str, &str, &str)> = webhooks
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap(),
                w["clientConfig"]["service"]["namespace"].as_str().unwrap(),
                w["clientConfig"]["service"]["path"].as_str().unwrap(),
                w["rules"][0]["resources"][0].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "vraycluster.kb.io",
                "ray-system",
                "/validate-ray-io-v1-raycluster",
                "rayclusters"
            ),
            ("vrayjob.kb.io", "ray-system", "/validate-ray-io-v1-rayjob", "rayjobs"),
            (
                "vrayservice.kb.io",
                "ray-system",
                "/validate-ray-io-v1-rayservice",
                "rayservices"
            ),
        ]
    );
    assert!(webhooks.iter().all(|w| w["clientConfig"].get("caBundle").is_none()));
    // Files and --webhook-config do not mix.
    let out = render(&["--webhook-config", "-f", "x.yaml"], None);
    assert_eq!(out.status.code(), Some(2));
}
