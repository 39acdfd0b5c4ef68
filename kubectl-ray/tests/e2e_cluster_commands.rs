//! End to end with the real kubectl: `kubectl ray` creates a Ray cluster on kube-sim (with the hollow Ray and
//! the real operator), lists it, its worker groups and nodes with KubeRay's columns, scales it, adds a worker
//! group, deletes it, and reports bad input with KubeRay's messages and exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use support::{Env, cells, header};

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_get_scale_add_group_and_delete_a_cluster() {
    let started = Instant::now();
    let env = Env::start("cluster").await;

    // Flags are checked before anything is sent.
    let err = env.fails(&["ray", "create", "cluster", "bad", "--worker-cpu", "lots"]);
    assert!(
        err.starts_with("Error: --worker-cpu is not a valid resource quantity: "),
        "{err}"
    );
    let err = env.fails(&["ray", "create", "cluster", "bad", "--head-memory", "-1Gi"]);
    assert_eq!(err, "Error: --head-memory cannot be negative\n");
    let err = env.fails(&["ray", "create", "cluster", "bad", "--autoscaler", "v3"]);
    assert_eq!(err, "Error: must be one of \"v1\" or \"v2\"\n");
    let err = env.fails(&["ray", "create", "cluster", "bad", "--worker-tpu", "4"]);
    assert!(
        err.starts_with("Error: cloud.google.com/gke-tpu-accelerator is not set in --worker-node-selectors."),
        "{err}"
    );
    let dry = env.ok(&[
        "ray",
        "create",
        "cluster",
        "preview",
        "--dry-run",
        "--ray-version",
        "2.46.0",
    ]);
    assert!(dry.contains("image: rayproject/ray:2.46.0"), "{dry}");
    assert!(dry.contains("name: ray-head"), "{dry}");

    // Create and wait until provisioned.
    let out = env.ok(&[
        "ray",
        "create",
        "cluster",
        "rc",
        "--head-cpu",
        "1",
        "--head-memory",
        "2Gi",
        "--worker-replicas",
        "2",
        "--worker-cpu",
        "1",
        "--worker-memory",
        "1Gi",
        "--wait",
        "--timeout",
        "60s",
    ]);
    assert_eq!(out, "Created Ray cluster: rc\nRay cluster rc is provisioned\n");
    let err = env.fails(&["ray", "create", "cluster", "rc"]);
    assert_eq!(err, "Error: the Ray cluster rc in namespace default already exists\n");

    // get cluster: KubeRay's columns, the status the operator wrote (`--wait` returns on the state or the
    // condition, whichever the table shows first; wait for both).
    let table = env
        .ok_eventually(&["ray", "get", "cluster"], WAIT, |t| {
            cells(t).get(1).is_some_and(|row| {
                row.get(3).map(String::as_str) == Some("2")
                    && row.get(8).map(String::as_str) == Some("RayClusterProvisioned")
            })
        })
        .await;
    assert_eq!(
        header(&table),
        "NAME NAMESPACE DESIRED WORKERS AVAILABLE WORKERS CPUS GPUS TPUS MEMORY CONDITION STATUS AGE"
    );
    assert_eq!(
        cells(&table)[1][..10],
        [
            "rc",
            "default",
            "2",
            "2",
            "3",
            "0",
            "0",
            "4Gi",
            "RayClusterProvisioned",
            "ready"
        ]
    );
    let by_name = env.ok(&["ray", "get", "cluster", "rc", "-A"]);
    assert_eq!(cells(&by_name)[1][0], "rc");

    // get nodes: one head, two workers.
    let nodes = env.ok(&["ray", "get", "nodes", "-c", "rc"]);
    assert_eq!(
        header(&nodes),
        "NAME CPUS GPUS TPUS MEMORY CLUSTER TYPE WORKER GROUP AGE"
    );
    let rows = cells(&nodes);
    assert_eq!(rows.len(), 4, "{nodes}");
    assert_eq!(
        rows.iter()
            .filter(|r| r.get(6).map(String::as_str) == Some("head"))
            .count(),
        1
    );
    assert!(
        rows.iter()
            .filter(|r| r.get(6).map(String::as_str) == Some("worker"))
            .all(|r| r[1] == "1" && r[4] == "1Gi" && r[7] == "default-group")
    );

    // scale, then the worker group shows the new count once the pods are ready.
    let out = env.ok(&[
        "ray",
        "scale",
        "cluster",
        "rc",
        "-w",
        "default-group",
        "--replicas",
        "3",
    ]);
    assert_eq!(
        out,
        "Updated worker group default-group in Ray cluster rc in namespace default (Scaled Replicas: 2 to 3)\n"
    );
    let out = env.ok(&["ray", "scale", "cluster", "rc", "-w", "default-group", "-r", "3"]);
    assert!(
        out.ends_with("already matches the requested configuration. Skipping.\n"),
        "{out}"
    );
    let groups = env
        .ok_eventually(&["ray", "get", "workergroup", "-c", "rc"], WAIT, |t| {
            t.contains(" 3/3 ")
        })
        .await;
    assert_eq!(header(&groups), "NAME MIN MAX REPLICAS CPUS GPUS TPUS MEMORY CLUSTER");
    assert_eq!(
        cells(&groups)[1],
        ["default-group", "0", "2147483647", "3/3", "3", "0", "0", "3Gi", "rc"]
    );

    // Add a worker group.
    let out = env.ok(&[
        "ray",
        "create",
        "workergroup",
        "small",
        "-c",
        "rc",
        "--worker-cpu",
        "500m",
        "--worker-memory",
        "1Gi",
    ]);
    assert_eq!(out, "Updated Ray cluster default/rc with new worker group\n");
    let groups = env
        .ok_eventually(&["ray", "get", "workergroups", "small", "-A"], WAIT, |t| {
            t.contains(" 1/1 ")
        })
        .await;
    assert_eq!(
        cells(&groups)[1],
        ["default", "small", "1", "10", "1/1", "500m", "0", "0", "1Gi", "rc"]
    );

    // Errors for what does not exist, with exit code 1.
    assert_eq!(
        env.fails(&["ray", "get", "cluster", "nope"]),
        "Error: Ray cluster nope not found in namespace default\n"
    );
    assert_eq!(
        env.fails(&["ray", "get", "workergroup", "nope", "-c", "rc"]),
        "Error: Ray worker group nope not found in namespace default in Ray cluster rc\n"
    );
    assert_eq!(
        env.fails(&["ray", "get", "node", "nope", "-A"]),
        "Error: Ray node nope not found in any namespace in any Ray cluster\n"
    );
    assert_eq!(
        env.fails(&["ray", "scale", "cluster", "rc", "-w", "nope", "-r", "1"]),
        "Error: worker group nope not found in Ray cluster rc in namespace default. Available worker groups: \
         default-group, small\n"
    );
    assert_eq!(
        env.fails(&["ray", "scale", "cluster", "rc", "-w", "small", "-r", "11"]),
        "Error: cannot set --replicas (11) greater than --max-replicas (10)\n"
    );
    let err = env.fails(&["ray", "scale", "cluster", "missing", "-w", "g", "-r", "1"]);
    assert!(
        err.starts_with("Error: failed to scale worker group g in Ray cluster missing in namespace default: "),
        "{err}"
    );
    assert_eq!(
        env.fails(&["ray", "create", "workergroup", "g"]),
        "Error: required flag(s) \"ray-cluster\" not set\n"
    );
    assert_eq!(
        env.fails(&["ray", "get", "token", "rc"]),
        "Error: RayCluster default/rc was not configured to use authentication tokens\n"
    );

    // Deleting asks first.
    let out = env.kubectl_with_input(&["ray", "delete", "rc"], "no\n");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Are you sure you want to delete the following resources?\n- raycluster/rc\n(y/yes/n/no) Canceled deletion.\n"
    );
    assert_eq!(
        env.ok(&["ray", "delete", "RayCluster/rc", "-y"]),
        "Deleted raycluster rc\n"
    );
    env.ok_eventually(&["ray", "get", "cluster"], WAIT, str::is_empty).await;
    eprintln!("cluster flow took {:.1} s", started.elapsed().as_secs_f64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_help_and_version() {
    let env = Env::start("usage").await;
    let err = env.fails(&["ray", "scale", "cluster", "rc", "--bogus"]);
    assert_eq!(
        err,
        "Error: unknown flag: --bogus\nSee 'kubectl ray scale cluster -h' for help and examples\n"
    );
    let err = env.fails(&["ray", "delete"]);
    assert_eq!(
        err,
        "Error: accepts a minimum of 1 arg, received 0\nSee 'kubectl ray delete -h' for help and examples\n"
    );
    let err = env.fails(&["ray", "delete", "pod/x", "-y"]);
    assert_eq!(
        err,
        "Error: unsupported resource type: pod\nSee 'kubectl ray delete -h' for help and examples\n"
    );
    let err = env.fails(&["ray", "session", "a", "b"]);
    assert_eq!(
        err,
        "Error: accepts 1 arg, received 2\nSee 'kubectl ray session -h' for help and examples\n"
    );
    let err = env.fails(&["ray", "scale", "cluster", "rc", "-w", "g"]);
    assert_eq!(
        err,
        "Error: must specify at least one of --replicas, --min-replicas, or --max-replicas (non-negative integers)\n"
    );
    let err = env.fails(&["ray", "log", "rc", "--link", "aws"]);
    assert_eq!(err, "Error: unsupported link type \"aws\", only \"gke\" is supported\n");
    let err = env.fails(&["ray", "log", "rc", "--out-dir", "/nonexistent-kubectl-ray-dir"]);
    assert!(
        err.ends_with("Error: Path is not a directory. Please input a directory and try again\n"),
        "{err}"
    );
    let err = env.fails(&["ray", "log", "rc"]);
    assert_eq!(err, "Error: No Ray nodes found for resource rc\n");
    assert!(!env.dir.join("rc").exists(), "the directory it created is removed");

    // Groups without a subcommand print help; stray words are named. Both exit 0.
    let help = env.ok(&["ray", "get"]);
    assert!(help.contains("cluster") && help.contains("workergroup"), "{help}");
    assert_eq!(env.ok(&["ray", "get", "pods"]), "unknown command(s) \"pods\"\n");

    // No operator Deployment in kube-sim: a warning on stdout, exit 0.
    let version = env.ok(&["ray", "version"]);
    assert!(
        version.starts_with("kubectl ray plugin version: development\n"),
        "{version}"
    );
    assert!(
        version.contains("warning: KubeRay operator installation cannot be found: ")
            && version.ends_with("Did you install it with the name \"kuberay-operator\"?\n"),
        "{version}"
    );
}

/// A config file for `create cluster --file`: two worker groups, the first unnamed.
const CLUSTER_FILE: &str = "\
name: from-file
labels:
  app: ray
head:
  cpu: 1
  memory: 2Gi
worker-groups:
- replicas: 2
  cpu: 500m
  memory: 1Gi
- name: big
  replicas: 1
  cpu: 1
  memory: 2Gi
  ray-start-params:
    num-cpus: \"1\"
";

/// The same cluster in namespace `team-a`, with a service account and a Cloud Storage bucket.
const GCSFUSE_FILE: &str = "\
namespace: team-a
service-account: ray-sa
gke:
  gcsfuse:
    bucket-name: my-bucket
    mount-path: /mnt/cluster_storage
    disable-metrics: true
    resources:
      cpu: 250m
      memory: 256Mi
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_cluster_from_a_config_file() {
    let env = Env::start("file").await;
    let write = |name: &str, text: &str| {
        std::fs::write(env.dir.join(name), text).unwrap();
        name.to_string()
    };
    let file = write("cluster.yaml", CLUSTER_FILE);

    // --dry-run prints the RayCluster: the file over the defaults, unnamed group `default-group`.
    let dry = env.ok(&["ray", "create", "cluster", "from-file", "--file", &file, "--dry-run"]);
    let printed: serde_json::Value = serde_saphyr::from_str(&dry).unwrap();
    assert_eq!(printed["metadata"]["name"], "from-file");
    assert_eq!(printed["metadata"]["namespace"], "default");
    assert_eq!(printed["metadata"]["labels"], serde_json::json!({"app": "ray"}));
    let spec = &printed["spec"];
    assert_eq!(spec["rayVersion"], "2.52.0");
    let head = &spec["headGroupSpec"]["template"]["spec"]["containers"][0];
    assert_eq!(head["image"], "rayproject/ray:2.52.0");
    assert_eq!(
        head["resources"]["requests"],
        serde_json::json!({"cpu": "1", "memory": "2Gi"})
    );
    let groups: Vec<_> = spec["workerGroupSpecs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["groupName"].as_str().unwrap(), g["replicas"].as_i64().unwrap()))
        .collect();
    assert_eq!(groups, [("default-group", 2), ("big", 1)]);
    assert_eq!(
        spec["workerGroupSpecs"][1]["rayStartParams"],
        serde_json::json!({"num-cpus": "1"})
    );

    // The file's namespace is used unless -n names another; GKE's bucket becomes a CSI volume in every pod.
    let gcs = write("gcsfuse.yaml", GCSFUSE_FILE);
    let dry = env.ok(&["ray", "create", "cluster", "data", "--file", &gcs, "--dry-run"]);
    let printed: serde_json::Value = serde_saphyr::from_str(&dry).unwrap();
    assert_eq!(printed["metadata"]["namespace"], "team-a");
    for template in [
        &printed["spec"]["headGroupSpec"]["template"],
        &printed["spec"]["workerGroupSpecs"][0]["template"],
    ] {
        assert_eq!(template["spec"]["serviceAccountName"], "ray-sa");
        assert_eq!(
            template["spec"]["volumes"],
            serde_json::json!([{"name": "cluster-storage", "csi": {"driver": "gcsfuse.csi.storage.gke.io",
                "volumeAttributes": {"bucketName": "my-bucket", "disableMetrics": "true"}}}])
        );
        assert_eq!(
            template["spec"]["containers"][0]["volumeMounts"],
            serde_json::json!([{"name": "cluster-storage", "mountPath": "/mnt/cluster_storage"}])
        );
        assert_eq!(
            template["metadata"]["annotations"],
            serde_json::json!({"gke-gcsfuse/cpu-request": "250m", "gke-gcsfuse/memory-limit": "256Mi",
                "gke-gcsfuse/memory-request": "256Mi"})
        );
    }
    let same = env.ok(&[
        "ray",
        "create",
        "cluster",
        "data",
        "--file",
        &gcs,
        "--dry-run",
        "-n",
        "team-a",
    ]);
    assert!(same.contains("namespace: team-a"), "{same}");
    assert_eq!(
        env.fails(&["ray", "create", "cluster", "data", "--file", &gcs, "-n", "team-b"]),
        "Error: the namespace in the config file \"team-a\" does not match the namespace \"team-b\". You must pass \
         --namespace=team-a to perform this operation\n"
    );

    // Only the connection, dry-run, wait and timeout flags combine with --file.
    assert_eq!(
        env.fails(&[
            "ray",
            "create",
            "cluster",
            "from-file",
            "--file",
            &file,
            "--worker-replicas",
            "3",
            "--labels",
            "a=b",
            "--wait",
        ]),
        "Error: the following flags are incompatible with --file: [labels worker-replicas]\n"
    );
    assert_eq!(
        env.fails(&["ray", "create", "cluster", "other", "--file", &file]),
        "Error: the cluster name in the config file \"from-file\" does not match the cluster name \"other\". You \
         must use the same name to perform this operation\n"
    );
    assert_eq!(
        env.fails(&["ray", "create", "cluster", "x", "--file", "missing.yaml"]),
        "Error: failed to parse config file: config file missing.yaml does not exist\n"
    );
    let unknown = write("unknown.yaml", "head:\n  cpus: 2\n");
    let err = env.fails(&["ray", "create", "cluster", "x", "--file", &unknown]);
    assert!(
        err.starts_with("Error: failed to parse config file: failed to parse YAML: ") && err.contains("cpus"),
        "{err}"
    );
    let bad = write("bad.yaml", "worker-groups:\n- cpu: lots\n");
    let err = env.fails(&["ray", "create", "cluster", "x", "--file", &bad]);
    assert!(
        err.starts_with(
            "Error: failed to validate config file: cpu (worker group 0) is not a valid resource quantity: "
        ),
        "{err}"
    );
    let no_bucket = write("no-bucket.yaml", "gke:\n  gcsfuse:\n    mount-path: /data\n");
    assert_eq!(
        env.fails(&["ray", "create", "cluster", "x", "--file", &no_bucket]),
        "Error: failed to validate config file: .gcsfuse.bucket-name is required\n"
    );

    // A real create: the operator brings up both groups.
    let out = env.ok(&[
        "ray",
        "create",
        "cluster",
        "from-file",
        "--file",
        &file,
        "--wait",
        "--timeout",
        "60s",
    ]);
    assert_eq!(
        out,
        "Created Ray cluster: from-file\nRay cluster from-file is provisioned\n"
    );
    let groups = env
        .ok_eventually(&["ray", "get", "workergroups", "-c", "from-file"], WAIT, |t| {
            t.contains(" 2/2 ") && t.contains(" 1/1 ")
        })
        .await;
    let rows = cells(&groups);
    assert_eq!(rows[1..].len(), 2, "{groups}");
    assert!(
        rows.contains(
            &["big", "0", "2147483647", "1/1", "1", "0", "0", "2Gi", "from-file"]
                .map(String::from)
                .to_vec()
        ),
        "{groups}"
    );
    assert!(
        rows.contains(
            &[
                "default-group",
                "0",
                "2147483647",
                "2/2",
                "1",
                "0",
                "0",
                "2Gi",
                "from-file"
            ]
            .map(String::from)
            .to_vec()
        ),
        "{groups}"
    );
    assert_eq!(
        env.fails(&["ray", "create", "cluster", "from-file", "--file", &file]),
        "Error: the Ray cluster from-file in namespace default already exists\n"
    );
}
