//! The real `kubectl` against `kube-sim serve`: CRDs, the KubeRay sample, get/patch/wait/delete/apply.
//!
//! Skipped (with a loud message) only when `kubectl` is not on PATH.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

use support::{Client, Server, fresh_dir, kubectl_available, start_server};

fn reference(rel: &str) -> PathBuf {
    let p = kuberay_reference::kuberay_dir().join(rel);
    assert!(p.exists(), "missing reference file {}", p.display());
    p
}

/// `kube-sim serve` with its kubeconfig in a fresh private directory, and a kubectl for it.
fn serve_in_private_dir() -> (Server, Client) {
    let dir = fresh_dir("kubectl");
    let (server, kubeconfig) = start_server(&dir);
    let kubectl = Client {
        program: "kubectl".into(),
        extra_args: vec!["--request-timeout=20s".into()],
        dir,
        kubeconfig,
    };
    (server, kubectl)
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
    // Applying the same file again: the server defaulted fields inside lists (a container port's
    // `protocol: TCP`), and a JSON merge patch replaces whole lists, so kubectl sends the containers again
    // and says "configured", as against kube-apiserver; the stored object does not change.
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

/// What the server assigns on each create, and what differs between two objects made from the same
/// generator under another name or in another namespace.
fn comparable(mut object: Value) -> Value {
    let meta = object["metadata"].as_object_mut().unwrap();
    for field in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "namespace",
        "name",
        "generation",
    ] {
        meta.remove(field);
    }
    if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
        labels.remove("kubernetes.io/metadata.name");
    }
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        // Allocated per Service.
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    if kind == "Job" {
        // The hollow Job controller writes status (and pod-template labels) as it runs each Job.
        object.as_object_mut().unwrap().remove("status");
        object["spec"].as_object_mut().unwrap().remove("selector");
        object["spec"]["template"]["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("labels");
        object["metadata"].as_object_mut().unwrap().remove("labels");
    }
    object
}

/// kubectl sends its generators' objects as protobuf (`kubectl create namespace|configmap|...`): each is
/// created, and `kubectl get -o json` shows what the same object sent as JSON (`--dry-run=client -o json`
/// then `kubectl create -f`) stores.
#[test]
fn kubectl_create_generators_send_protobuf_and_store_what_json_would() {
    if !kubectl_available() {
        eprintln!(
            "\n\n!!!!! SKIPPING kubectl_create_generators_send_protobuf_and_store_what_json_would: `kubectl` is not on PATH !!!!!\n\n"
        );
        return;
    }
    let (_server, k) = serve_in_private_dir();
    assert_eq!(k.ok(&["create", "namespace", "pb"]), "namespace/pb created\n");
    assert_eq!(k.ok(&["create", "namespace", "js"]), "namespace/js created\n");
    // (resource shown by `create`, namespaced, generator arguments after `kubectl create`; NAME marks the name)
    let generators: &[(&str, bool, &[&str])] = &[
        ("namespace", false, &["namespace", "NAME"]),
        (
            "configmap",
            true,
            &["configmap", "NAME", "--from-literal=a=b", "--from-literal=empty="],
        ),
        (
            "secret",
            true,
            &["secret", "generic", "NAME", "--from-literal=k=v", "--type=Opaque"],
        ),
        ("serviceaccount", true, &["serviceaccount", "NAME"]),
        (
            "role.rbac.authorization.k8s.io",
            true,
            &["role", "NAME", "--verb=get,list", "--resource=pods,services"],
        ),
        (
            "rolebinding.rbac.authorization.k8s.io",
            true,
            &["rolebinding", "NAME", "--role=r", "--user=u", "--serviceaccount=pb:sa"],
        ),
        (
            "clusterrole.rbac.authorization.k8s.io",
            false,
            &["clusterrole", "NAME", "--verb=get", "--resource=pods"],
        ),
        (
            "clusterrolebinding.rbac.authorization.k8s.io",
            false,
            &["clusterrolebinding", "NAME", "--clusterrole=view", "--group=g"],
        ),
        (
            "service",
            true,
            &["service", "clusterip", "NAME", "--tcp=80:8080", "--tcp=443:https"],
        ),
        (
            "job.batch",
            true,
            &["job", "NAME", "--image=busybox", "--", "sleep", "1"],
        ),
        (
            "ingress.networking.k8s.io",
            true,
            &["ingress", "NAME", "--rule=a.example.com/path*=svc:80"],
        ),
        (
            "resourcequota",
            true,
            &["quota", "NAME", "--hard=pods=2,requests.cpu=500m,requests.memory=1Gi"],
        ),
        (
            "priorityclass.scheduling.k8s.io",
            false,
            &["priorityclass", "NAME", "--value=10", "--description=d"],
        ),
        (
            "poddisruptionbudget.policy",
            true,
            &["poddisruptionbudget", "NAME", "--selector=a=b", "--min-available=50%"],
        ),
    ];
    for (resource, namespaced, args) in generators {
        // Namespaced objects keep their name in two namespaces; cluster-scoped ones get a second name.
        let (pb, js) = if *namespaced {
            (("g1", "pb"), ("g1", "js"))
        } else {
            (("g1", ""), ("g1-json", ""))
        };
        // Flags go first: a generator's arguments may end with `-- command`.
        let create = |(name, namespace): (&str, &str), extra: &[&str]| -> Vec<String> {
            let mut out = vec!["create".to_string()];
            if !namespace.is_empty() {
                out.extend(["-n".to_string(), namespace.to_string()]);
            }
            out.extend(extra.iter().map(|e| e.to_string()));
            out.extend(args.iter().map(|a| if *a == "NAME" { name } else { a }.to_string()));
            out
        };
        let created = k.ok_args(&create(pb, &[]));
        assert_eq!(created, format!("{resource}/{} created\n", pb.0));
        let json = k.ok_args(&create(js, &["--dry-run=client", "-o", "json"]));
        let file = k.dir.join(format!("{}.json", args[0]));
        std::fs::write(&file, json).unwrap();
        let mut create_file = vec!["create".to_string(), "-f".into(), file.to_str().unwrap().into()];
        if *namespaced {
            create_file.extend(["-n".to_string(), js.1.to_string()]);
        }
        k.ok_args(&create_file);
        let get = |(name, namespace): (&str, &str)| -> Value {
            let mut get = vec![
                "get".to_string(),
                resource.to_string(),
                name.to_string(),
                "-o".into(),
                "json".into(),
            ];
            if !namespace.is_empty() {
                get.extend(["-n".to_string(), namespace.to_string()]);
            }
            serde_json::from_str(&k.ok_args(&get)).unwrap()
        };
        assert_eq!(comparable(get(pb)), comparable(get(js)), "{resource}");
    }
    let secret: Value = serde_json::from_str(&k.ok(&["get", "secret", "g1", "-n", "pb", "-o", "json"])).unwrap();
    assert_eq!(secret["data"], serde_json::json!({"k": "dg=="}));
    assert_eq!(secret["type"], "Opaque");
    let _ = std::fs::remove_dir_all(&k.dir);
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
    let dir = fresh_dir("kubectl-invalid");
    let (_server, kubeconfig) = start_server(&dir);
    let k = Client {
        program: "kubectl".into(),
        extra_args: vec!["--request-timeout=20s".into()],
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

/// `kubectl` as a ServiceAccount: `create token`, 403 until a RoleBinding, `auth can-i [--as] [--list]`,
/// `auth whoami`, 401 for a bad token.
#[test]
fn kubectl_identity_and_rbac_against_kube_sim_serve() {
    if !kubectl_available() {
        eprintln!(
            "\n\n!!!!! SKIPPING kubectl_identity_and_rbac_against_kube_sim_serve: `kubectl` is not on PATH !!!!!\n\n"
        );
        return;
    }
    let dir = fresh_dir("kubectl-auth");
    let (_server, kubeconfig) = start_server(&dir);
    let kubectl = |kubeconfig: PathBuf| Client {
        program: "kubectl".into(),
        extra_args: vec!["--request-timeout=20s".into()],
        dir: dir.clone(),
        kubeconfig,
    };
    let admin = kubectl(kubeconfig.clone());
    assert_eq!(
        admin.ok(&["auth", "whoami"]),
        "ATTRIBUTE   VALUE\nUsername    kubernetes-admin\nGroups      [system:masters system:authenticated]\n"
    );
    // `kubectl create serviceaccount|role|rolebinding` post protobuf bodies; apply posts JSON.
    assert_eq!(
        admin.apply_manifest(
            "sa.yaml",
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ci\n"
        ),
        "serviceaccount/ci created\n"
    );
    let token = admin.ok(&["create", "token", "ci", "--duration=10m"]);
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");

    // A kubeconfig of its own with that token.
    let ci_kubeconfig = dir.join("kubeconfig-ci");
    std::fs::copy(&kubeconfig, &ci_kubeconfig).unwrap();
    let ci = kubectl(ci_kubeconfig);
    ci.ok(&["config", "set-credentials", "ci", &format!("--token={token}")]);
    ci.ok(&["config", "set-context", "--current", "--user=ci"]);
    let uid = admin.ok(&["get", "serviceaccount", "ci", "-o", "jsonpath={.metadata.uid}"]);
    let whoami = ci.ok(&["auth", "whoami"]);
    let lines: Vec<&str> = whoami.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "ATTRIBUTE                                           VALUE",
            "Username                                            system:serviceaccount:default:ci",
            &format!("UID                                                 {uid}"),
            "Groups                                              [system:serviceaccounts system:serviceaccounts:default system:authenticated]",
        ],
        "{whoami}"
    );
    assert!(
        lines[4].starts_with("Extra: authentication.kubernetes.io/credential-id   [JTI="),
        "{whoami}"
    );
    let denied = ci.run(&["get", "pods"]);
    assert!(!denied.status.success());
    assert_eq!(
        String::from_utf8_lossy(&denied.stderr).trim(),
        r#"Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:default:ci" cannot list resource "pods" in API group "" in the namespace "default""#
    );
    // `auth can-i` answers "no" with exit code 1.
    let no = admin.run(&["auth", "can-i", "list", "pods", "--as=system:serviceaccount:default:ci"]);
    assert_eq!(
        (no.status.code(), String::from_utf8_lossy(&no.stdout).as_ref()),
        (Some(1), "no\n")
    );

    let rbac = admin.apply_manifest(
        "rbac.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: pod-reader\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get, list, watch]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: ci-reads-pods\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: pod-reader\nsubjects:\n- kind: ServiceAccount\n  name: ci\n  namespace: default\n",
    );
    assert_eq!(
        rbac,
        "role.rbac.authorization.k8s.io/pod-reader created\nrolebinding.rbac.authorization.k8s.io/ci-reads-pods created\n"
    );
    let allowed = ci.run(&["get", "pods"]);
    assert!(allowed.status.success());
    assert_eq!(
        String::from_utf8_lossy(&allowed.stderr).trim(),
        "No resources found in default namespace."
    );
    assert_eq!(
        admin.ok(&["auth", "can-i", "list", "pods", "--as=system:serviceaccount:default:ci"]),
        "yes\n"
    );
    let no = admin.run(&[
        "auth",
        "can-i",
        "delete",
        "pods",
        "--as=system:serviceaccount:default:ci",
    ]);
    assert_eq!(
        (no.status.code(), String::from_utf8_lossy(&no.stdout).as_ref()),
        (Some(1), "no\n")
    );
    assert_eq!(ci.ok(&["auth", "can-i", "watch", "pods"]), "yes\n");
    // The ServiceAccount may not impersonate.
    let impersonate = ci.run(&["auth", "can-i", "list", "pods", "--as=bob"]);
    assert!(!impersonate.status.success());
    assert_eq!(
        String::from_utf8_lossy(&impersonate.stderr).trim(),
        r#"Error from server (Forbidden): users "bob" is forbidden: User "system:serviceaccount:default:ci" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    let list = ci.ok(&["auth", "can-i", "--list"]);
    let mut rows = list.lines();
    assert_eq!(
        rows.next().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    );
    assert!(
        list.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["pods", "[]", "[]", "[get", "list", "watch]"]),
        "{list}"
    );

    // A token the server never issued.
    ci.ok(&["config", "set-credentials", "ci", "--token=not-a-token"]);
    let unauthorized = ci.run(&["get", "pods"]);
    assert!(!unauthorized.status.success());
    assert_eq!(
        String::from_utf8_lossy(&unauthorized.stderr).trim(),
        "error: You must be logged in to the server (Unauthorized)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
