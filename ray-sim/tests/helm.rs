//! The real helm 4 (and kubectl 1.32 and 1.35) against `kube-sim serve`, as on any cluster: an ordinary chart
//! installed with `--wait`, listed, upgraded, rolled back and uninstalled with OpenAPI validation on; releases
//! stored in label-selected Secrets; the served OpenAPI schemas read by `kubectl explain`.
//!
//! helm and kubectl 1.35 are installed on first use by `scripts/install-tools.sh` (see `tools`); kubectl 1.32 is
//! the one on PATH.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use support::{Client, Server, fresh_dir, kubectl_available, start_server, tools};

/// A private directory and a running `kube-sim serve` whose kubeconfig is in it.
struct Cluster {
    dir: PathBuf,
    kubeconfig: PathBuf,
    _server: Server,
}

impl Cluster {
    fn start(name: &str) -> Self {
        let dir = fresh_dir(name);
        let (server, kubeconfig) = start_server(&dir);
        Self {
            dir,
            kubeconfig,
            _server: server,
        }
    }

    fn client(&self, program: &Path) -> Client {
        Client {
            program: program.to_path_buf(),
            extra_args: Vec::new(),
            dir: self.dir.clone(),
            kubeconfig: self.kubeconfig.clone(),
        }
    }

    fn run(&self, program: &Path, args: &[&str]) -> Output {
        self.client(program).run(args)
    }

    fn ok(&self, program: &Path, args: &[&str]) -> String {
        self.client(program).ok(args)
    }

    fn helm(&self, args: &[&str]) -> String {
        self.ok(&tools::helm(), args)
    }

    fn kubectl(&self, args: &[&str]) -> String {
        self.ok(&tools::kubectl_1_35(), args)
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.kubectl(args)).unwrap()
    }
}

/// An ordinary chart made of kinds every cluster serves: configuration, identity, RBAC, a Service and a Job.
const CHART: &[(&str, &str)] = &[
    (
        "Chart.yaml",
        "apiVersion: v2\nname: plain\ndescription: an ordinary chart\ntype: application\nversion: 0.1.0\nappVersion: \"1.0\"\n",
    ),
    ("values.yaml", "greeting: hello\nport: 8080\n"),
    (
        "templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\n  labels:\n    app.kubernetes.io/instance: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
    ),
    (
        "templates/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-secret\ntype: Opaque\nstringData:\n  password: s3cr3t\n",
    ),
    (
        "templates/serviceaccount.yaml",
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}-sa\n",
    ),
    (
        "templates/rbac.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {{ .Release.Name }}-reader\nrules:\n- apiGroups: [\"\"]\n  resources: [\"configmaps\"]\n  verbs: [\"get\", \"list\"]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {{ .Release.Name }}-reader\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {{ .Release.Name }}-reader\nsubjects:\n- kind: ServiceAccount\n  name: {{ .Release.Name }}-sa\n  namespace: {{ .Release.Namespace }}\n",
    ),
    (
        "templates/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-svc\nspec:\n  selector:\n    app.kubernetes.io/instance: {{ .Release.Name }}\n  ports:\n  - name: http\n    port: {{ .Values.port }}\n    targetPort: 8080\n",
    ),
    (
        "templates/job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate-{{ .Release.Revision }}\nspec:\n  backoffLimit: 1\n  template:\n    spec:\n      serviceAccountName: {{ .Release.Name }}-sa\n      restartPolicy: Never\n      containers:\n      - name: migrate\n        image: busybox:1.36\n        command: [\"sh\", \"-c\", \"echo migrated\"]\n",
    ),
];

fn write_chart(dir: &Path) -> PathBuf {
    let chart = dir.join("plain");
    for (path, text) in CHART {
        let file = chart.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    chart
}

/// The value of `KEY: value` in helm's release summary.
fn summary_field<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(": ")))
        .unwrap_or_else(|| panic!("no {key} in:\n{out}"))
}

/// Names of the release Secrets helm keeps for `release`, found by its `owner=helm` label selector.
fn release_secrets(c: &Cluster, release: &str) -> Vec<String> {
    let out = c.kubectl(&[
        "get",
        "secrets",
        "-l",
        &format!("owner=helm,name={release}"),
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    out.split_whitespace().map(str::to_string).collect()
}

#[test]
fn helm_install_upgrade_rollback_uninstall_like_on_kube_apiserver() {
    let c = Cluster::start("helm");
    let chart = write_chart(&c.dir);
    let chart = chart.to_str().unwrap();

    // Install: every object created, the Job completed (--wait), OpenAPI validation on (helm's default).
    let out = c.helm(&["install", "r1", chart, "--wait", "--timeout", "120s"]);
    assert_eq!(summary_field(&out, "NAME"), "r1");
    assert_eq!(summary_field(&out, "NAMESPACE"), "default");
    assert_eq!(summary_field(&out, "STATUS"), "deployed");
    assert_eq!(summary_field(&out, "REVISION"), "1");
    let cm = c.json(&["get", "configmap", "r1-config", "-o", "json"]);
    assert_eq!(cm["data"]["greeting"], "hello");
    assert_eq!(cm["metadata"]["annotations"]["meta.helm.sh/release-name"], "r1");
    for object in [
        "secret/r1-secret",
        "serviceaccount/r1-sa",
        "role.rbac.authorization.k8s.io/r1-reader",
        "rolebinding.rbac.authorization.k8s.io/r1-reader",
        "service/r1-svc",
        "job.batch/r1-migrate-1",
    ] {
        assert_eq!(c.kubectl(&["get", object, "-o", "name"]).trim(), object);
    }
    let job = c.json(&["get", "job", "r1-migrate-1", "-o", "json"]);
    assert_eq!(job["status"]["succeeded"], 1);
    assert_eq!(release_secrets(&c, "r1"), ["sh.helm.release.v1.r1.v1"]);
    let secret = c.json(&["get", "secret", "sh.helm.release.v1.r1.v1", "-o", "json"]);
    assert_eq!(secret["type"], "helm.sh/release.v1");
    assert_eq!(secret["metadata"]["labels"]["status"], "deployed");

    // list and status.
    let list = c.helm(&["list"]);
    let header: Vec<&str> = list.lines().next().unwrap().split('\t').map(str::trim).collect();
    assert_eq!(
        header,
        [
            "NAME",
            "NAMESPACE",
            "REVISION",
            "UPDATED",
            "STATUS",
            "CHART",
            "APP VERSION"
        ]
    );
    let listed: Value = serde_json::from_str(&c.helm(&["list", "-o", "json"])).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["name"], "r1");
    assert_eq!(listed[0]["revision"], "1");
    assert_eq!(listed[0]["status"], "deployed");
    assert_eq!(listed[0]["chart"], "plain-0.1.0");
    assert_eq!(listed[0]["app_version"], "1.0");
    let status = c.helm(&["status", "r1"]);
    assert_eq!(summary_field(&status, "STATUS"), "deployed");

    // Upgrade with a changed value.
    let out = c.helm(&[
        "upgrade",
        "r1",
        chart,
        "--set",
        "greeting=bonjour",
        "--wait",
        "--timeout",
        "120s",
    ]);
    assert_eq!(summary_field(&out, "STATUS"), "deployed");
    assert_eq!(summary_field(&out, "REVISION"), "2");
    let cm = c.json(&["get", "configmap", "r1-config", "-o", "json"]);
    assert_eq!(cm["data"]["greeting"], "bonjour");
    let history: Value = serde_json::from_str(&c.helm(&["history", "r1", "-o", "json"])).unwrap();
    let states: Vec<(i64, &str)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["revision"].as_i64().unwrap(), h["status"].as_str().unwrap()))
        .collect();
    assert_eq!(states, [(1, "superseded"), (2, "deployed")]);
    let table = c.helm(&["history", "r1"]);
    let header: Vec<&str> = table.lines().next().unwrap().split('\t').map(str::trim).collect();
    assert_eq!(
        header,
        ["REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION", "DESCRIPTION"]
    );

    // Rollback to revision 1: a third revision with the first values.
    let out = c.helm(&["rollback", "r1", "1", "--wait", "--timeout", "120s"]);
    assert_eq!(out.trim(), "Rollback was a success! Happy Helming!");
    let cm = c.json(&["get", "configmap", "r1-config", "-o", "json"]);
    assert_eq!(cm["data"]["greeting"], "hello");
    let mut secrets = release_secrets(&c, "r1");
    secrets.sort();
    assert_eq!(
        secrets,
        [
            "sh.helm.release.v1.r1.v1",
            "sh.helm.release.v1.r1.v2",
            "sh.helm.release.v1.r1.v3"
        ]
    );
    let deployed = c.kubectl(&[
        "get",
        "secrets",
        "-l",
        "owner=helm,status=deployed",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    assert_eq!(deployed.trim(), "sh.helm.release.v1.r1.v3");

    // Uninstall: the chart's objects and the release Secrets are gone.
    let out = c.helm(&["uninstall", "r1", "--wait", "--timeout", "120s"]);
    assert_eq!(out.trim(), "release \"r1\" uninstalled");
    for object in [
        "configmap/r1-config",
        "secret/r1-secret",
        "service/r1-svc",
        "serviceaccount/r1-sa",
    ] {
        let out = c.run(&tools::kubectl_1_35(), &["get", object]);
        assert!(!out.status.success());
        let (kind, name) = object.split_once('/').unwrap();
        let plural = match kind {
            "configmap" => "configmaps",
            "secret" => "secrets",
            "service" => "services",
            _ => "serviceaccounts",
        };
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim(),
            format!("Error from server (NotFound): {plural} \"{name}\" not found")
        );
    }
    assert!(release_secrets(&c, "r1").is_empty());
    assert_eq!(c.helm(&["list", "-q"]).trim(), "");

    // A chart with a field its kind does not have: helm's server-side apply is refused as kube-apiserver
    // refuses it, and the release is recorded as failed.
    let typo = c.dir.join("plain/templates/typo.yaml");
    std::fs::write(
        &typo,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-typo\ndataa:\n  a: b\n",
    )
    .unwrap();
    let out = c.run(&tools::helm(), &["install", "r2", chart, "--wait", "--timeout", "120s"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: INSTALLATION FAILED: failed to create typed patch object (default/r2-typo; /v1, Kind=ConfigMap): \
         .dataa: field not declared in schema\n"
    );
    let listed: Value = serde_json::from_str(&c.helm(&["list", "--failed", "-o", "json"])).unwrap();
    assert_eq!(listed[0]["name"], "r2");
    assert_eq!(listed[0]["status"], "failed");
}

/// kubectl 1.32 from PATH, if there is one (the 1.35 of `tools` is always there).
fn kubectl_on_path() -> Option<PathBuf> {
    kubectl_available().then(|| PathBuf::from("kubectl"))
}

#[test]
fn kubectl_explain_reads_the_openapi_v3_schemas_of_builtin_and_custom_kinds() {
    let c = Cluster::start("explain");
    let crd = kuberay_reference::kuberay_dir().join("crds/ray.io_rayclusters.yaml");
    c.kubectl(&["create", "-f", crd.to_str().unwrap()]);
    let mut clients = vec![tools::kubectl_1_35()];
    match kubectl_on_path() {
        Some(k) => clients.push(k),
        None => eprintln!("\n\n!!!!! kubectl_explain: no `kubectl` on PATH, checking kubectl 1.35 only !!!!!\n\n"),
    }
    for kubectl in &clients {
        assert_eq!(
            c.ok(kubectl, &["explain", "configmap.data"]),
            "KIND:       ConfigMap\nVERSION:    v1\n\nFIELD: data <map[string]string>\n\n\nDESCRIPTION:\n    \
             Data contains the configuration data. Each key must consist of alphanumeric\n    \
             characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use\n    \
             the BinaryData field. The keys stored in Data must not overlap with the keys\n    \
             in the BinaryData field, this is enforced during validation process.\n    \n\n"
        );
        let pod = c.ok(kubectl, &["explain", "pod.spec"]);
        assert!(
            pod.starts_with("KIND:       Pod\nVERSION:    v1\n\nFIELD: spec <PodSpec>\n"),
            "{pod}"
        );
        assert!(pod.contains("  containers\t<[]Container> -required-\n"), "{pod}");
        assert_eq!(
            c.ok(kubectl, &["explain", "raycluster.spec.suspend"]),
            "GROUP:      ray.io\nKIND:       RayCluster\nVERSION:    v1\n\nFIELD: suspend <boolean>\n\n\nDESCRIPTION:\n    <empty>\n\n"
        );
    }
}

#[test]
fn kubectl_validate_reports_unknown_fields_like_kube_apiserver_strict_field_validation() {
    let c = Cluster::start("validate");
    let manifest = c.dir.join("typo.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: typo\ndataa:\n  a: b\n",
    )
    .unwrap();
    let manifest = manifest.to_str().unwrap();
    let mut clients = vec![tools::kubectl_1_35()];
    match kubectl_on_path() {
        Some(k) => clients.push(k),
        None => eprintln!("\n\n!!!!! kubectl_validate: no `kubectl` on PATH, checking kubectl 1.35 only !!!!!\n\n"),
    }
    for kubectl in &clients {
        // --validate=strict (the default, and what `--validate=true` means): the server refuses the field.
        for validate in [None, Some("--validate=true")] {
            let mut args = vec!["apply", "-f", manifest];
            args.extend(validate);
            let out = c.run(kubectl, &args);
            assert!(!out.status.success());
            assert_eq!(
                String::from_utf8_lossy(&out.stderr),
                format!(
                    "Error from server (BadRequest): error when creating \"{manifest}\": ConfigMap in version \"v1\" \
                     cannot be handled as a ConfigMap: strict decoding error: unknown field \"dataa\"\n"
                )
            );
        }
        // Server-side apply is strict whatever --validate says, with structured-merge-diff's message.
        for validate in ["--validate=strict", "--validate=false"] {
            let out = c.run(kubectl, &["apply", "--server-side", validate, "-f", manifest]);
            assert!(!out.status.success());
            assert_eq!(
                String::from_utf8_lossy(&out.stderr),
                "Error from server: failed to create typed patch object (default/typo; /v1, Kind=ConfigMap): \
                 .dataa: field not declared in schema\n"
            );
        }
        let none = c.run(kubectl, &["get", "configmap", "typo"]);
        assert!(!none.status.success(), "nothing stored");

        // --validate=warn: created without the field, with kube-apiserver's warning.
        let out = c.run(kubectl, &["apply", "-f", manifest, "--validate=warn"]);
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "configmap/typo created\n");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "Warning: unknown field \"dataa\"\n"
        );
        let cm = c.json(&["get", "configmap", "typo", "-o", "json"]);
        assert_eq!(cm.get("dataa"), None);
        c.kubectl(&["delete", "configmap", "typo"]);

        // --validate=false: dropped silently.
        assert_eq!(
            c.ok(kubectl, &["create", "-f", manifest, "--validate=false"]),
            "configmap/typo created\n"
        );
        c.kubectl(&["delete", "configmap", "typo"]);
    }
}
