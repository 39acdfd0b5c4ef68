//! The Helm chart (`helm-chart/kuberay-operator`) and the plain manifests, checked with the real helm 4 and
//! the Kubernetes 1.32 schemas: `helm lint --strict`; `helm template` of the defaults and of one value set
//! per feature, every object validated in strict mode by PyPI's kubernetes-validate; the RBAC equal to what
//! the operator says it uses (`kuberay-operator rbac`) and within KubeRay's ClusterRole; KubeRay's values
//! accepted with the same defaults; bad values refused with the schema's message; and the generated files
//! (CRDs, RBAC rules template, README, `deploy/kuberay-operator.yaml`) up to date.
//!
//! helm comes from `scripts/install-tools.sh`, kubernetes-validate and PyYAML from
//! `scripts/install-kubernetes-validate.sh` (a venv under `target/`), both installed on first use; a failed
//! install fails the tests. After changing the chart or the operator's RBAC table, run
//! `scripts/regenerate-chart.sh`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::common;

const RELEASE: &str = "kuberay-operator";
const NAMESPACE: &str = "ray-system";
const REGENERATE: &str = "run scripts/regenerate-chart.sh";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn chart_dir() -> PathBuf {
    repo_root().join("helm-chart/kuberay-operator")
}

/// Runs one of our install scripts (once per test process) and returns the directory it prints.
fn installed(script: &str, cell: &'static OnceLock<PathBuf>) -> &'static Path {
    cell.get_or_init(|| common::installed_dir(script, "what the chart tests need"))
}

fn helm() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    installed("install-tools.sh", &DIR).join("helm")
}

fn venv_bin() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    installed("install-kubernetes-validate.sh", &DIR)
}

fn run(program: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", program.display()))
}

fn stdout_ok(program: &Path, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "{} {args:?} failed:\n{}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn operator(args: &[&str]) -> String {
    stdout_ok(Path::new(env!("CARGO_BIN_EXE_kuberay-operator")), args)
}

fn documents(text: &str) -> Vec<Value> {
    let mut docs: Vec<Value> = ray_api::yaml::from_yaml_documents(text).unwrap();
    docs.retain(|d| !d.is_null());
    docs
}

fn scratch_dir(tag: &str) -> PathBuf {
    let dir = repo_root()
        .join("target/tmp")
        .join(format!("helm-chart-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `helm template` of the chart with `values` (YAML) in `namespace`.
fn template(values: &str, namespace: &str, extra: &[&str]) -> Output {
    let dir = scratch_dir("values");
    let file = dir.join(format!("values-{:x}.yaml", fxhash(values)));
    std::fs::write(&file, values).unwrap();
    let chart = chart_dir();
    let mut args = vec![
        "template",
        RELEASE,
        chart.to_str().unwrap(),
        "--namespace",
        namespace,
        "-f",
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&helm(), &args)
}

fn fxhash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn render(values: &str) -> (String, Vec<Value>) {
    let out = template(values, NAMESPACE, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "helm template with\n{values}\nfailed:\n{stderr}");
    let text = String::from_utf8(out.stdout).unwrap();
    let docs = documents(&text);
    (text, docs)
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    docs.iter().find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
}

fn container_args(docs: &[Value]) -> Vec<String> {
    let deployment = find(docs, "Deployment", RELEASE).expect("the Deployment");
    deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

/// The ClusterRole and leader election Role `kuberay-operator rbac` prints for `flags`.
fn operator_rbac(flags: &[&str]) -> (Value, Value) {
    let mut args = vec!["rbac"];
    args.extend_from_slice(flags);
    let docs = documents(&operator(&args));
    (docs[0]["rules"].clone(), docs[1]["rules"].clone())
}

/// One value set of the chart: the values, the arguments the operator must get, the `rbac` flags whose
/// rules the chart must grant, and what else to check in the render.
struct ValueSet {
    name: &'static str,
    values: &'static str,
    args: &'static [&'static str],
    rbac_flags: &'static [&'static str],
    check: fn(&[Value]),
}

fn no_check(_: &[Value]) {}

fn value_sets() -> Vec<ValueSet> {
    vec![
        ValueSet {
            name: "defaults",
            values: "{}",
            args: &[
                "--enable-leader-election=true",
                "--reconcile-concurrency=1",
                "--qps=100",
                "--burst=200",
                "--enable-metrics=true",
                "--log-stdout-encoder=json",
                "--log-file-encoder=json",
            ],
            rbac_flags: &[],
            check: |docs| {
                let deployment = find(docs, "Deployment", RELEASE).unwrap();
                let container = &deployment["spec"]["template"]["spec"]["containers"][0];
                assert_eq!(container["command"], json!(["/manager"]));
                assert_eq!(
                    container["securityContext"],
                    json!({"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                           "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": true,
                           "seccompProfile": {"type": "RuntimeDefault"}})
                );
                assert!(find(docs, "ClusterRoleBinding", RELEASE).is_some());
                assert!(find(docs, "Service", RELEASE).is_some());
                assert!(find(docs, "ServiceAccount", RELEASE).is_some());
                for kind in ["rayjob", "rayservice", "raycronjob"] {
                    for role in ["editor", "viewer"] {
                        let name = format!("{RELEASE}-{kind}-{role}");
                        assert!(find(docs, "ClusterRole", &name).is_some(), "{name}");
                    }
                }
            },
        },
        ValueSet {
            name: "leader election off, two replicas, tuned client",
            values: "leaderElectionEnabled: false\nreplicas: 2\nreconcileConcurrency: 4\n\
                     kubeClient: {qps: 50.5, burst: 20}\n",
            args: &[
                "--enable-leader-election=false",
                "--reconcile-concurrency=4",
                "--qps=50.5",
                "--burst=20",
            ],
            rbac_flags: &[],
            check: |docs| assert_eq!(find(docs, "Deployment", RELEASE).unwrap()["spec"]["replicas"], 2),
        },
        ValueSet {
            name: "feature gates: mTLS on, incremental upgrade off",
            values: "featureGates:\n- {name: RayClusterMTLS, enabled: true}\n\
                     - {name: RayServiceIncrementalUpgrade, enabled: false}\n",
            args: &["--feature-gates=RayClusterMTLS=true,RayServiceIncrementalUpgrade=false"],
            rbac_flags: &["--feature-gates=RayClusterMTLS=true,RayServiceIncrementalUpgrade=false"],
            check: no_check,
        },
        ValueSet {
            name: "watchNamespace, cluster-wide RBAC",
            values: "watchNamespace: [n1, n2]\n",
            args: &["--watch-namespace", "n1,n2"],
            rbac_flags: &[],
            check: no_check,
        },
        ValueSet {
            name: "singleNamespaceInstall",
            values: "singleNamespaceInstall: true\n",
            args: &["--watch-namespace", NAMESPACE],
            rbac_flags: &[],
            check: |docs| {
                assert!(
                    docs.iter()
                        .all(|d| d["kind"] != "ClusterRole" && d["kind"] != "ClusterRoleBinding")
                );
                let role = find(docs, "Role", RELEASE).unwrap();
                assert_eq!(role["metadata"]["namespace"], NAMESPACE);
                assert!(find(docs, "RoleBinding", RELEASE).is_some());
            },
        },
        ValueSet {
            name: "singleNamespaceInstall with watchNamespace",
            values: "singleNamespaceInstall: true\nwatchNamespace: [n1, n2]\n",
            args: &["--watch-namespace", "n1,n2"],
            rbac_flags: &[],
            check: |docs| {
                let namespaces: Vec<&Value> = docs
                    .iter()
                    .filter(|d| d["kind"] == "Role" && d["metadata"]["name"] == RELEASE)
                    .map(|d| &d["metadata"]["namespace"])
                    .collect();
                assert_eq!(namespaces, [&json!("n1"), &json!("n2")]);
                let bindings = docs.iter().filter(|d| d["kind"] == "RoleBinding").count();
                assert_eq!(bindings, 3, "two operator RoleBindings and the leader election one");
            },
        },
        ValueSet {
            name: "singleNamespaceInstall without namespaced RBAC",
            values: "singleNamespaceInstall: true\ncrNamespacedRbacEnable: false\n",
            args: &["--watch-namespace", NAMESPACE],
            rbac_flags: &[],
            check: |docs| {
                assert!(find(docs, "Role", RELEASE).is_none());
                assert!(find(docs, "Role", &format!("{RELEASE}-leader-election")).is_some());
            },
        },
        ValueSet {
            name: "volcano by name",
            values: "batchScheduler: {name: volcano}\n",
            args: &["--batch-scheduler=volcano"],
            rbac_flags: &["--batch-scheduler=volcano"],
            check: no_check,
        },
        ValueSet {
            name: "volcano by the deprecated switch",
            values: "batchScheduler: {enabled: true}\n",
            args: &["--enable-batch-scheduler"],
            rbac_flags: &["--enable-batch-scheduler"],
            check: no_check,
        },
        ValueSet {
            name: "scheduler-plugins",
            values: "batchScheduler: {name: scheduler-plugins}\n",
            args: &["--batch-scheduler=scheduler-plugins"],
            rbac_flags: &["--batch-scheduler=scheduler-plugins"],
            check: no_check,
        },
        ValueSet {
            name: "yunikorn",
            values: "batchScheduler: {name: yunikorn}\n",
            args: &["--batch-scheduler=yunikorn"],
            rbac_flags: &["--batch-scheduler=yunikorn"],
            check: no_check,
        },
        ValueSet {
            name: "log file and console encoders",
            values: "logging: {stdoutEncoder: console, fileEncoder: console, baseDir: /var/log/kuberay, \
                     fileName: operator.log, sizeLimit: 500Mi}\n",
            args: &[
                "--log-file-path=/var/log/kuberay/operator.log",
                "--log-file-encoder=console",
                "--log-stdout-encoder=console",
            ],
            rbac_flags: &[],
            check: |docs| {
                let pod = &find(docs, "Deployment", RELEASE).unwrap()["spec"]["template"]["spec"];
                assert_eq!(
                    pod["volumes"][0],
                    json!({"name": "kuberay-logs", "emptyDir": {"sizeLimit": "500Mi"}})
                );
                assert_eq!(pod["containers"][0]["volumeMounts"][0]["mountPath"], "/var/log/kuberay");
            },
        },
        ValueSet {
            name: "Kubernetes proxy",
            values: "useKubernetesProxy: true\n",
            args: &["--use-kubernetes-proxy=true"],
            rbac_flags: &["--use-kubernetes-proxy"],
            check: no_check,
        },
        ValueSet {
            name: "ServiceMonitor, custom-resource metrics off",
            values: "metrics: {enabled: false, serviceMonitor: {enabled: true, interval: 15s, \
                     additionalLabels: {release: prometheus}, namespace: monitoring}}\nservice: {type: NodePort, port: 9090}\n",
            args: &["--enable-metrics=false"],
            rbac_flags: &[],
            check: |docs| {
                let monitor = find(docs, "ServiceMonitor", RELEASE).unwrap();
                assert_eq!(monitor["metadata"]["namespace"], "monitoring");
                assert_eq!(monitor["metadata"]["labels"]["release"], "prometheus");
                assert_eq!(monitor["spec"]["endpoints"][0]["interval"], "15s");
                let service = find(docs, "Service", RELEASE).unwrap();
                assert_eq!(service["spec"]["ports"][0]["port"], 9090);
                assert_eq!(
                    monitor["spec"]["endpoints"][0]["port"],
                    service["spec"]["ports"][0]["name"]
                );
            },
        },
        ValueSet {
            name: "configuration file",
            values: "configuration:\n  enabled: true\n  defaultPodLabels: {team: ml}\n  \
                     defaultContainerEnvs: [{name: RAY_enable_open_telemetry, value: \"true\"}]\n  \
                     headSidecarContainers: [{name: fluentbit, image: fluent/fluent-bit:1.9}]\n\
                     batchScheduler: {name: yunikorn}\nwatchNamespace: [n1]\n",
            args: &["--config=/etc/kuberay/config.yaml"],
            rbac_flags: &["--batch-scheduler=yunikorn"],
            check: |docs| {
                let args = container_args(docs);
                assert!(
                    args.iter()
                        .all(|a| !a.starts_with("--qps") && !a.starts_with("--watch-namespace"))
                );
                let config = find(docs, "ConfigMap", &format!("{RELEASE}-config")).unwrap();
                let file: Value =
                    ray_api::yaml::from_yaml_documents::<Value>(config["data"]["config.yaml"].as_str().unwrap())
                        .unwrap()
                        .remove(0);
                assert_eq!(file["kind"], "Configuration");
                assert_eq!(file["batchScheduler"], "yunikorn");
                assert_eq!(file["watchNamespace"], "n1");
                assert_eq!(file["qps"], 100);
                assert_eq!(file["defaultPodLabels"], json!({"team": "ml"}));
                assert_eq!(file["headSidecarContainers"][0]["name"], "fluentbit");
            },
        },
        ValueSet {
            name: "webhooks with cert-manager",
            values: "webhook: {enabled: true}\n",
            args: &["--webhook-port=9443"],
            rbac_flags: &[],
            check: |docs| check_webhook(docs, true),
        },
        ValueSet {
            name: "webhooks with a given certificate",
            values: "webhook: {enabled: true, port: 10250, secretName: my-cert, caBundle: aGVsbG8=, \
                     certManager: {enabled: false}}\n",
            args: &["--webhook-port=10250"],
            rbac_flags: &[],
            check: |docs| check_webhook(docs, false),
        },
        ValueSet {
            name: "no RBAC, existing ServiceAccount",
            values: "rbacEnable: false\nserviceAccount: {create: false, name: my-operator}\n",
            args: &[],
            rbac_flags: &[],
            check: |docs| {
                let rbac = docs
                    .iter()
                    .filter(|d| d["apiVersion"] == "rbac.authorization.k8s.io/v1")
                    .count();
                assert_eq!(rbac, 0);
                assert!(docs.iter().all(|d| d["kind"] != "ServiceAccount"));
                let pod = &find(docs, "Deployment", RELEASE).unwrap()["spec"]["template"]["spec"];
                assert_eq!(pod["serviceAccountName"], "my-operator");
            },
        },
        ValueSet {
            name: "pod placement, env, image and extra arguments",
            values: "image: {repository: registry.example.com/kuberay-operator, tag: v9, pullPolicy: Always}\n\
                     imagePullSecrets: [{name: regcred}]\nnodeSelector: {kubernetes.io/os: linux}\n\
                     tolerations: [{key: dedicated, operator: Equal, value: ray, effect: NoSchedule}]\n\
                     affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: \
                     [{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]}]}}}\n\
                     priorityClassName: system-cluster-critical\nlabels: {team: ml}\nannotations: {owner: me}\n\
                     podSecurityContext: {runAsUser: 65532, fsGroup: 65532}\n\
                     env: [{name: ENABLE_INIT_CONTAINER_INJECTION, value: \"false\"}]\n\
                     resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 256Mi}}\n\
                     extraArgs: [--max-unscheduled-worker-pods=100]\noperatorCommand: /usr/bin/manager\n",
            args: &["--max-unscheduled-worker-pods=100"],
            rbac_flags: &[],
            check: |docs| {
                let template = &find(docs, "Deployment", RELEASE).unwrap()["spec"]["template"];
                let pod = &template["spec"];
                let container = &pod["containers"][0];
                assert_eq!(container["image"], "registry.example.com/kuberay-operator:v9");
                assert_eq!(container["command"], json!(["/usr/bin/manager"]));
                assert_eq!(container["env"][0]["name"], "ENABLE_INIT_CONTAINER_INJECTION");
                assert_eq!(pod["priorityClassName"], "system-cluster-critical");
                assert_eq!(pod["imagePullSecrets"][0]["name"], "regcred");
                assert_eq!(template["metadata"]["labels"]["team"], "ml");
                assert_eq!(template["metadata"]["annotations"]["owner"], "me");
            },
        },
    ]
}

fn check_webhook(docs: &[Value], cert_manager: bool) {
    let service = format!("{RELEASE}-webhook");
    let configuration = docs
        .iter()
        .find(|d| d["kind"] == "ValidatingWebhookConfiguration")
        .unwrap();
    // The webhooks are the operator's own (`render --webhook-config`), through the chart's Service.
    let expected = documents(&operator(&[
        "render",
        "--webhook-config",
        "-o",
        "yaml",
        "--webhook-service-name",
        &service,
        "--webhook-service-namespace",
        NAMESPACE,
    ]));
    let mut rendered = configuration["webhooks"].clone();
    for webhook in rendered.as_array_mut().unwrap() {
        webhook["clientConfig"].as_object_mut().unwrap().remove("caBundle");
    }
    assert_eq!(rendered, expected[0]["webhooks"]);
    let pod = &find(docs, "Deployment", RELEASE).unwrap()["spec"]["template"]["spec"];
    let env = &pod["containers"][0]["env"];
    assert!(
        env.as_array()
            .unwrap()
            .contains(&json!({"name": "ENABLE_WEBHOOKS", "value": "true"}))
    );
    assert!(find(docs, "Service", &service).is_some());
    assert_eq!(
        find(docs, "Certificate", &format!("{RELEASE}-webhook-cert")).is_some(),
        cert_manager
    );
    if !cert_manager {
        assert_eq!(configuration["webhooks"][0]["clientConfig"]["caBundle"], "aGVsbG8=");
        assert_eq!(pod["volumes"][0]["secret"]["secretName"], "my-cert");
    }
}

/// Kinds that are not part of Kubernetes (so have no 1.32 schema) which the chart may render.
const CUSTOM_KINDS: &[&str] = &["ServiceMonitor", "Issuer", "Certificate"];

#[test]
fn every_value_set_renders_what_it_asks_and_validates_against_kubernetes_1_32() {
    let dir = scratch_dir("validate");
    let mut files = Vec::new();
    let sets = value_sets();
    assert!(sets.len() >= 11, "the defaults and at least ten value sets");
    for (i, set) in sets.iter().enumerate() {
        let (text, docs) = render(set.values);
        let args = container_args(&docs);
        for arg in set.args {
            assert!(
                args.contains(&(*arg).to_owned()),
                "{}: {arg} missing from {args:?}",
                set.name
            );
        }
        (set.check)(&docs);
        check_rbac_matches_operator(set, &docs);
        let file = dir.join(format!("set-{i:02}.yaml"));
        std::fs::write(&file, text).unwrap();
        files.push(file);
    }
    let validator = venv_bin().join("kubernetes-validate");
    let mut args = vec!["--strict", "--kubernetes-version", "1.32", "--quiet"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let out = run(&validator, &args);
    let report = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let unexpected: Vec<&str> = report
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| {
            !CUSTOM_KINDS
                .iter()
                .any(|k| l.starts_with("WARN") && l.contains(&format!("schema for kind {k} ")))
        })
        .collect();
    assert!(
        out.status.success() && unexpected.is_empty(),
        "kubernetes-validate --strict (1.32) refused a render (set-NN.yaml is value set NN):\n{report}"
    );
}

/// The chart's operator rules equal `kuberay-operator rbac` for the set's flags, and so do the leader
/// election rules.
fn check_rbac_matches_operator(set: &ValueSet, docs: &[Value]) {
    let (rules, leader_rules) = operator_rbac(set.rbac_flags);
    for doc in docs.iter().filter(|d| d["metadata"]["name"] == RELEASE) {
        if doc["kind"] == "ClusterRole" || doc["kind"] == "Role" {
            assert_eq!(doc["rules"], rules, "{}: {} rules", set.name, doc["kind"]);
        }
    }
    if let Some(role) = find(docs, "Role", &format!("{RELEASE}-leader-election")) {
        assert_eq!(role["rules"], leader_rules, "{}: leader election rules", set.name);
    }
}

/// (group, resource, verb) triples a list of PolicyRules grants.
fn grants(rules: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    };
    for rule in rules.as_array().unwrap() {
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                for verb in strings(&rule["verbs"]) {
                    out.insert((group.clone(), resource.clone(), verb));
                }
            }
        }
    }
    out
}

/// KubeRay's ClusterRole, plus the PodGroup rules KubeRay's chart adds for Volcano and scheduler-plugins.
fn kuberay_grants() -> BTreeSet<(String, String, String)> {
    let path = kuberay_reference::helm_dir().join("operator-clusterrole.yaml");
    let role = documents(&std::fs::read_to_string(&path).unwrap()).remove(0);
    let mut all = grants(&role["rules"]);
    let chart_extras = json!([
        {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"],
         "verbs": ["create", "delete", "get", "list", "update", "watch"]},
        {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"],
         "verbs": ["create", "get", "list", "watch"]},
    ]);
    all.extend(grants(&chart_extras));
    all
}

#[test]
fn operator_rbac_stays_within_kuberays_clusterrole() {
    let kuberay = kuberay_grants();
    let everything = [
        "--feature-gates=RayClusterMTLS=true,RayServiceIncrementalUpgrade=true",
        "--use-kubernetes-proxy",
    ];
    for scheduler in ["--batch-scheduler=volcano", "--batch-scheduler=scheduler-plugins"] {
        let mut flags = everything.to_vec();
        flags.push(scheduler);
        let (rules, leader_rules) = operator_rbac(&flags);
        let extra: Vec<_> = grants(&rules).difference(&kuberay).cloned().collect();
        assert!(extra.is_empty(), "granted beyond KubeRay's ClusterRole: {extra:?}");
        // Leader election has its own Role in KubeRay too (kubebuilder's: every verb on leases).
        for (group, resource, verb) in grants(&leader_rules) {
            assert_eq!(
                (group.as_str(), resource.as_str()),
                ("coordination.k8s.io", "leases"),
                "{verb}"
            );
        }
    }
    // The user-facing editor and viewer roles grant nothing KubeRay's operator role lacks either.
    let (_, docs) = render("{}");
    for role in docs.iter().filter(|d| {
        d["kind"] == "ClusterRole"
            && d["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("-editor") || n.ends_with("-viewer"))
    }) {
        let extra: Vec<_> = grants(&role["rules"]).difference(&kuberay).cloned().collect();
        assert!(extra.is_empty(), "{}: {extra:?}", role["metadata"]["name"]);
    }
}

#[test]
fn optional_features_add_rules_only_when_enabled() {
    let (base, _) = operator_rbac(&["--feature-gates=RayServiceIncrementalUpgrade=false"]);
    let base_groups: BTreeSet<String> = grants(&base).into_iter().map(|(g, _, _)| g).collect();
    for group in [
        "scheduling.volcano.sh",
        "scheduling.x-k8s.io",
        "cert-manager.io",
        "gateway.networking.k8s.io",
    ] {
        assert!(!base_groups.contains(group), "{group} granted with its feature off");
    }
    assert!(!grants(&base).iter().any(|(_, r, _)| r.ends_with("/proxy")));
}

#[test]
fn helm_lint_strict_passes() {
    let chart = chart_dir();
    let out = stdout_ok(&helm(), &["lint", "--strict", chart.to_str().unwrap()]);
    assert!(out.contains("0 chart(s) failed"), "{out}");
}

#[test]
fn unknown_keys_and_wrong_types_fail_with_the_schemas_message() {
    for (values, message) in [
        ("replica: 2\n", "additional properties 'replica' not allowed"),
        ("replicas: two\n", "got string, want integer"),
        ("kubeClient: {qps: fast}\n", "got string, want number"),
        ("batchScheduler: {name: slurm}\n", "value must be one of"),
        ("logging: {stdoutEncoder: text}\n", "value must be one of"),
        ("featureGates: [{name: RayCronJob}]\n", "missing property 'enabled'"),
        ("leaderElectionEnabled: \"yes\"\n", "got string, want boolean"),
    ] {
        let out = template(values, NAMESPACE, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{values} was accepted");
        assert!(
            stderr.contains("values don't meet the specifications of the schema") && stderr.contains(message),
            "{values}: {stderr}"
        );
    }
}

/// Every key of KubeRay v1.7.0's values.yaml is ours with the same default, except the image, which is
/// this operator's.
#[test]
fn kuberays_values_keep_their_defaults() {
    // serde-saphyr gives up on KubeRay's long runs of commented-out keys; comments carry no values.
    let kuberay_text: String = std::fs::read_to_string(kuberay_reference::helm_dir().join("values.yaml"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let kuberay = documents(&kuberay_text).remove(0);
    let ours = documents(&std::fs::read_to_string(chart_dir().join("values.yaml")).unwrap()).remove(0);
    fn compare(path: &str, theirs: &Value, ours: &Value, mismatches: &mut Vec<String>) {
        if matches!(path, ".image.repository" | ".image.tag") {
            return;
        }
        match (theirs, ours) {
            (Value::Object(t), Value::Object(o)) if !t.is_empty() => {
                for (key, value) in t {
                    match o.get(key) {
                        Some(mine) => compare(&format!("{path}.{key}"), value, mine, mismatches),
                        None => mismatches.push(format!("{path}.{key}: missing")),
                    }
                }
            }
            _ if theirs == ours => {}
            _ => mismatches.push(format!("{path}: KubeRay {theirs}, ours {ours}")),
        }
    }
    let mut mismatches = Vec::new();
    compare("", &kuberay, &ours, &mut mismatches);
    // `resources.requests` is commented out in KubeRay's values, as its limits are ours.
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    // The keys KubeRay documents but leaves unset are accepted.
    let (_, docs) = render("useKubernetesProxy: false\nwatchNamespace: [a]\n");
    assert!(container_args(&docs).contains(&"--use-kubernetes-proxy=false".to_owned()));
}

#[test]
fn chart_version_is_the_operators() {
    let chart = documents(&std::fs::read_to_string(chart_dir().join("Chart.yaml")).unwrap()).remove(0);
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(chart["appVersion"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn chart_crds_are_the_crd_subcommands_output() {
    let output = operator(&["crd"]);
    let mut expected: Vec<String> = output.split("---\n").skip(1).map(|d| format!("---\n{d}")).collect();
    expected.sort();
    let mut files: Vec<String> = std::fs::read_dir(chart_dir().join("crds"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "one file per CRD");
    assert!(
        files == expected,
        "helm-chart/kuberay-operator/crds/ differs from `kuberay-operator crd`: {REGENERATE}"
    );
}

#[test]
fn chart_rbac_rules_template_is_generated() {
    let file = std::fs::read_to_string(chart_dir().join("templates/_rbac_rules.tpl")).unwrap();
    assert!(
        file == operator(&["rbac", "--helm-template"]),
        "templates/_rbac_rules.tpl differs from `kuberay-operator rbac --helm-template`: {REGENERATE}"
    );
}

#[test]
fn chart_readme_is_generated_from_values() {
    let python = venv_bin().join("python");
    let script = repo_root().join("scripts/chart-readme.py");
    let chart = chart_dir();
    let generated = stdout_ok(&python, &[script.to_str().unwrap(), chart.to_str().unwrap()]);
    let file = std::fs::read_to_string(chart.join("README.md")).unwrap();
    assert!(
        file == generated,
        "helm-chart/kuberay-operator/README.md is out of date: {REGENERATE}"
    );
    for key in [
        "`replicas`",
        "`batchScheduler.name`",
        "`watchNamespace`",
        "`webhook.enabled`",
    ] {
        assert!(file.contains(key), "{key} missing from the README's values table");
    }
}

#[test]
fn manifests_equal_the_charts_default_render() {
    let chart = chart_dir();
    let chart = chart.to_str().unwrap();
    // The checked-in render is `helm template` of the defaults, byte for byte.
    let default_render = stdout_ok(&helm(), &["template", RELEASE, chart, "--namespace", "default"]);
    let file = std::fs::read_to_string(repo_root().join("deploy/kuberay-operator.yaml")).unwrap();
    assert!(
        file == default_render,
        "deploy/kuberay-operator.yaml is out of date: {REGENERATE}"
    );
    // `manifests --namespace` is what helm renders for that namespace, CRDs included.
    let helm_docs = documents(&stdout_ok(
        &helm(),
        &["template", RELEASE, chart, "--namespace", NAMESPACE, "--include-crds"],
    ));
    let manifests = documents(&operator(&["manifests", "--namespace", NAMESPACE]));
    let key = |d: &Value| format!("{}/{}/{}", d["kind"], d["metadata"]["namespace"], d["metadata"]["name"]);
    let mut helm_docs = helm_docs;
    let mut manifests = manifests;
    helm_docs.sort_by_key(key);
    manifests.sort_by_key(key);
    assert_eq!(manifests.len(), helm_docs.len());
    for (mine, theirs) in manifests.iter().zip(&helm_docs) {
        assert!(mine == theirs, "{} differs from helm's render", key(mine));
    }
}

/// `helm` against `kubeconfig` with `args`; its output, or a panic with helm's message.
fn helm_on(kubeconfig: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--kubeconfig", kubeconfig.to_str().unwrap()];
    all.extend_from_slice(args);
    run(&helm(), &all)
}

fn helm_ok_on(kubeconfig: &Path, args: &[&str]) -> String {
    let out = helm_on(kubeconfig, args);
    assert!(
        out.status.success(),
        "helm {args:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// helm installs, upgrades and uninstalls the chart on kube-sim as on a cluster: the API server accepts every
/// object (OpenAPI validation, RBAC's escalation check on the ClusterRole it creates), bad values are refused by
/// `helm install`, an upgrade changes the operator's arguments, and uninstalling leaves only the CRDs. The
/// operator pods stay hollow here (no process runtime).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_installs_upgrades_and_uninstalls_the_chart_on_kube_sim() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::Api;

    let sim = kube_sim::SimServer::start(kube_sim::SimConfig::default())
        .await
        .unwrap();
    let dir = scratch_dir("install");
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let chart = chart_dir();
    let chart = chart.to_str().unwrap();
    let install = [
        "install",
        RELEASE,
        chart,
        "--namespace",
        NAMESPACE,
        "--create-namespace",
    ];

    let mut bad = install.to_vec();
    bad.extend(["--set", "replica=2"]);
    let refused = helm_on(&kubeconfig, &bad);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("additional properties 'replica' not allowed"),
        "{stderr}"
    );

    helm_ok_on(&kubeconfig, &install);
    let client = sim.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let args = |d: &Deployment| {
        d.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0]
            .args
            .clone()
    };
    let installed = deployments.get(RELEASE).await.unwrap();
    assert!(
        args(&installed)
            .unwrap()
            .contains(&"--reconcile-concurrency=1".to_owned())
    );
    let role = Api::<ClusterRole>::all(client.clone()).get(RELEASE).await.unwrap();
    assert_eq!(serde_json::to_value(role.rules).unwrap(), operator_rbac(&[]).0);
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let ray_crds = || async {
        crds.list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|c| c.spec.group == "ray.io")
            .count()
    };
    assert_eq!(ray_crds().await, 4);

    helm_ok_on(
        &kubeconfig,
        &[
            "upgrade",
            RELEASE,
            chart,
            "--namespace",
            NAMESPACE,
            "--set",
            "reconcileConcurrency=3",
        ],
    );
    let upgraded = deployments.get(RELEASE).await.unwrap();
    assert!(
        args(&upgraded)
            .unwrap()
            .contains(&"--reconcile-concurrency=3".to_owned())
    );
    assert!(
        upgraded.metadata.generation > installed.metadata.generation,
        "a new pod template rolls the pods"
    );

    helm_ok_on(&kubeconfig, &["uninstall", RELEASE, "--namespace", NAMESPACE, "--wait"]);
    assert!(deployments.get_opt(RELEASE).await.unwrap().is_none());
    assert!(
        Api::<ClusterRole>::all(client.clone())
            .get_opt(RELEASE)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(ray_crds().await, 4, "helm leaves the CRDs");
}
