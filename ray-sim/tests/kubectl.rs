//! The real `kubectl` against `kube-sim serve`: CRDs, the KubeRay sample, get/patch/wait/delete/apply.
//!
//! Skipped (with a loud message) only when `kubectl` is not on PATH.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn reference(rel: &str) -> PathBuf {
    let p = kuberay_reference::kuberay_dir().join(rel);
    assert!(p.exists(), "missing reference file {}", p.display());
    p
}

/// Kills the simulator when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Kubectl {
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Kubectl {
    fn run(&self, args: &[&str]) -> Output {
        let out = Command::new("kubectl")
            .args(args)
            .arg("--request-timeout=20s")
            .env("KUBECONFIG", &self.kubeconfig)
            // A private HOME keeps kubectl's discovery/OpenAPI cache out of the user's.
            .env("HOME", &self.dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        eprintln!(
            "$ kubectl {}\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs kubectl, asserts success and an empty stderr, returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "kubectl {args:?} failed: {stderr}");
        assert!(stderr.trim().is_empty(), "kubectl {args:?} wrote to stderr: {stderr}");
        String::from_utf8(out.stdout).unwrap()
    }
}

fn kubectl_available() -> bool {
    match Command::new("kubectl").args(["version", "--client"]).output() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("running kubectl: {e}"),
    }
}

fn start_server(dir: &Path) -> (Server, PathBuf) {
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["serve", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    // The server prints its URL once the kubeconfig is written.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("kube-sim did not start within 30 s");
    assert!(url.starts_with("http://127.0.0.1:"), "unexpected first line {url:?}");
    assert!(kubeconfig.exists());
    (server, kubeconfig)
}

#[test]
fn kubectl_against_kube_sim_serve() {
    if !kubectl_available() {
        eprintln!("\n\n!!!!! SKIPPING kubectl_against_kube_sim_serve: `kubectl` is not on PATH !!!!!\n\n");
        return;
    }
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!(
        "kube-sim-kubectl-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (_server, kubeconfig) = start_server(&dir);
    let k = Kubectl {
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
    // Applying the same file again: the server defaulted fields inside lists (a container port's
    // `protocol: TCP`), and a JSON merge patch replaces whole lists, so kubectl sends the containers again
    // and says "configured", as against kube-apiserver; the stored object does not change.
    let applied = k.ok(&["apply", "-f", changed_file.to_str().unwrap()]);
    assert_eq!(applied.trim(), format!("raycluster.ray.io/{name} configured"));
    let out = k.ok(&["get", &rc, "-o", "jsonpath={.spec.rayVersion} {.metadata.generation}"]);
    assert_eq!(out, "9.9.9 2", "a no-op apply does not bump generation");

    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "took {:?}",
        started.elapsed()
    );
}

/// `kubectl apply` of invalid KubeRay resources prints kube-apiserver's errors and stores nothing; unknown
/// fields are refused under kubectl's default `--validate=strict`, warned about under `warn` and pruned.
#[test]
fn kubectl_apply_invalid_custom_resource_prints_upstream_error() {
    if !kubectl_available() {
        eprintln!(
            "\n\n!!!!! SKIPPING kubectl_apply_invalid_custom_resource_prints_upstream_error: `kubectl` is not on PATH !!!!!\n\n"
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!(
        "kube-sim-kubectl-invalid-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (_server, kubeconfig) = start_server(&dir);
    let k = Kubectl {
        dir: dir.clone(),
        kubeconfig,
    };
    let crd = reference("crds/ray.io_rayclusters.yaml");
    k.ok(&["create", "-f", crd.to_str().unwrap()]);

    let write = |file: &str, spec_extra: &str, replicas: &str| -> String {
        let path = dir.join(file);
        std::fs::write(
            &path,
            format!(
                "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: bad\nspec:\n{spec_extra}  headGroupSpec:\n    rayStartParams: {{}}\n    template:\n      spec:\n        containers:\n        - name: ray-head\n          image: rayproject/ray:2.46.0\n  workerGroupSpecs:\n  - groupName: small\n    replicas: {replicas}\n    rayStartParams: {{}}\n    template:\n      spec:\n        containers:\n        - name: ray-worker\n          image: rayproject/ray:2.46.0\n"
            ),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    let failed = |args: &[&str]| -> String {
        let out = k.run(args);
        assert!(!out.status.success(), "kubectl {args:?} succeeded");
        String::from_utf8(out.stderr).unwrap()
    };

    // A string where an integer belongs (the CRD has CEL rules, so upstream adds that they were skipped);
    // kubectl 1.32 lists several causes one per line.
    let bad_type = write("bad-type.yaml", "", "\"many\"");
    assert_eq!(
        failed(&["apply", "-f", &bad_type]),
        "The RayCluster \"bad\" is invalid: \n* spec.workerGroupSpecs[0].replicas: Invalid value: \"string\": spec.workerGroupSpecs[0].replicas in body must be of type integer: \"string\"\n* <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation\n"
    );
    // A CEL rule violated.
    let bad_rule = write("bad-rule.yaml", "  managedBy: someone\n", "1");
    assert_eq!(
        failed(&["apply", "-f", &bad_rule]),
        "The RayCluster \"bad\" is invalid: spec.managedBy: Invalid value: \"string\": the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'\n"
    );
    // An unknown field under kubectl's default --validate=strict.
    let unknown = write("unknown.yaml", "  foo: bar\n", "1");
    assert_eq!(
        failed(&["apply", "-f", &unknown]),
        format!(
            "Error from server (BadRequest): error when creating \"{unknown}\": RayCluster in version \"v1\" cannot be handled as a RayCluster: strict decoding error: unknown field \"spec.foo\"\n"
        )
    );
    assert_eq!(k.ok(&["get", "rayclusters", "-o", "name"]), "", "nothing stored");

    // --validate=warn: stored without the field, with kubectl's warning.
    let out = k.run(&["apply", "--validate=warn", "-f", &unknown]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "raycluster.ray.io/bad created\n");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Warning: unknown field \"spec.foo\"\n"
    );
    assert_eq!(k.ok(&["get", "raycluster", "bad", "-o", "jsonpath={.spec.foo}"]), "");
    // Defaults are visible on read.
    assert_eq!(
        k.ok(&[
            "get",
            "raycluster",
            "bad",
            "-o",
            "jsonpath={.spec.workerGroupSpecs[0].numOfHosts}"
        ]),
        "1"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
