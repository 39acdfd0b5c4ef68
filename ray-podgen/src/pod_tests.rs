//! KubeRay's golden cases for head and worker pods, each test named after KubeRay's case number (P16...).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use proptest::prelude::*;
use ray_api::RayCluster;

use crate::config::PodGenConfig;
use crate::containers::env;
use crate::pod::{PodGenerator, WorkerReplica, merge_labels};
use crate::test_fixtures::*;

fn head(cluster: &RayCluster, config: &PodGenConfig) -> Pod {
    PodGenerator::new(cluster, config).head_pod().unwrap()
}

fn worker(cluster: &RayCluster, config: &PodGenConfig) -> Pod {
    PodGenerator::new(cluster, config)
        .worker_pod(0, &WorkerReplica::single(0))
        .unwrap()
}

fn head_spec_mut(cluster: &mut RayCluster) -> &mut k8s_openapi::api::core::v1::PodSpec {
    cluster.spec.head_group_spec.template.spec.as_mut().unwrap()
}

fn worker_spec_mut(cluster: &mut RayCluster) -> &mut k8s_openapi::api::core::v1::PodSpec {
    cluster.spec.worker_group_specs.as_mut().unwrap()[0]
        .template
        .spec
        .as_mut()
        .unwrap()
}

fn set_annotation(cluster: &mut RayCluster, key: &str, value: &str) {
    cluster
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_owned(), value.to_owned());
}

fn volume_names(pod: &Pod) -> Vec<&str> {
    pod.spec
        .as_ref()
        .unwrap()
        .volumes
        .iter()
        .flatten()
        .map(|v| v.name.as_str())
        .collect()
}

fn mounts(container: &Container) -> Vec<(&str, &str)> {
    container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.name.as_str(), m.mount_path.as_str()))
        .collect()
}

const C_HEAD_ARGS: &str = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0  --memory=1073741824  --metrics-export-port=8080  --num-cpus=1 ";

#[test]
fn golden_p16_head_pod_env_labels_volumes() {
    let config = PodGenConfig {
        default_container_envs: vec![env("TEST_DEFAULT_ENV_NAME", "TEST_ENV_VALUE")],
        ..PodGenConfig::default()
    };
    let pod = head(&cluster_c(), &config);
    let ray = ray_container(&pod);
    assert_eq!(
        env_names(ray),
        [
            "TEST_ENV_NAME",
            "TEST_DEFAULT_ENV_NAME",
            "RAY_CLUSTER_NAME",
            "RAY_CLUSTER_NAMESPACE",
            "RAY_CLOUD_INSTANCE_ID",
            "RAY_NODE_TYPE_NAME",
            "KUBERAY_GEN_RAY_START_CMD",
            "RAY_PORT",
            "RAY_ADDRESS",
            "RAY_USAGE_STATS_KUBERAY_IN_USE",
            "RAY_USAGE_STATS_EXTRA_TAGS",
            "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE",
        ]
    );
    assert_eq!(env_value(ray, "RAY_ADDRESS"), Some("127.0.0.1:6379"));
    assert_eq!(env_value(ray, "RAY_PORT"), Some("6379"));
    assert_eq!(env_value(ray, "RAY_USAGE_STATS_KUBERAY_IN_USE"), Some("1"));
    assert_eq!(env_value(ray, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"), Some("1"));
    assert_eq!(
        env_value(ray, "RAY_USAGE_STATS_EXTRA_TAGS"),
        Some("kuberay_version=nightly;kuberay_crd=RayCluster")
    );
    assert_eq!(
        field_path(ray, "RAY_CLUSTER_NAME"),
        Some("metadata.labels['ray.io/cluster']")
    );
    assert_eq!(field_path(ray, "RAY_CLUSTER_NAMESPACE"), Some("metadata.namespace"));
    assert_eq!(field_path(ray, "RAY_CLOUD_INSTANCE_ID"), Some("metadata.name"));
    assert_eq!(
        field_path(ray, "RAY_NODE_TYPE_NAME"),
        Some("metadata.labels['ray.io/group']")
    );
    assert!(
        env_value(ray, "KUBERAY_GEN_RAY_START_CMD")
            .unwrap()
            .contains("ray start")
    );
    assert_eq!(env_value(ray, "TEST_DEFAULT_ENV_NAME"), Some("TEST_ENV_VALUE"));
    assert_eq!(label(&pod, "ray.io/cluster"), Some("raycluster-sample"));
    assert_eq!(label(&pod, "ray.io/node-type"), Some("head"));
    assert_eq!(label(&pod, "ray.io/group"), Some("headgroup"));
    let volumes = pod.spec.as_ref().unwrap().volumes.as_ref().unwrap();
    assert_eq!(volumes.len(), 1);
    let empty_dir = volumes[0].empty_dir.as_ref().unwrap();
    assert_eq!(volumes[0].name, "shared-mem");
    assert_eq!(empty_dir.medium.as_deref(), Some("Memory"));
    assert_eq!(empty_dir.size_limit.as_ref().unwrap().0, "1Gi");
    assert_eq!(mounts(ray), [("shared-mem", "/dev/shm")]);
    assert_eq!(pod.metadata.generate_name.as_deref(), Some("raycluster-sample-head-"));
    assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
}

#[test]
fn golden_p17_head_args_and_command() {
    let pod = head(&cluster_c(), &PodGenConfig::default());
    let ray = ray_container(&pod);
    assert_eq!(args0(ray), C_HEAD_ARGS);
    assert_eq!(ray.command.as_deref().unwrap(), ["/bin/bash", "-c", "--"]);
}

#[test]
fn golden_p19_ulimit_env_kept_and_not_expanded() {
    let mut cluster = cluster_c();
    head_spec_mut(&mut cluster).containers[0]
        .env
        .as_mut()
        .unwrap()
        .push(env("RAY_START_ULIMIT_OPEN_FILES", "1048576"));
    let pod = head(&cluster, &PodGenConfig::default());
    let ray = ray_container(&pod);
    assert_eq!(args0(ray), C_HEAD_ARGS);
    let tokens: Vec<&str> = env_value(ray, "KUBERAY_GEN_RAY_START_CMD")
        .unwrap()
        .split_whitespace()
        .collect();
    for token in [
        "--head",
        "--block",
        "--dashboard-agent-listen-port=52365",
        "--memory=1073741824",
        "--num-cpus=1",
        "--metrics-export-port=8080",
        "--dashboard-host=0.0.0.0",
    ] {
        assert!(tokens.contains(&token), "{token}");
    }
    assert_eq!(env_value(ray, "RAY_START_ULIMIT_OPEN_FILES"), Some("1048576"));
}

#[test]
fn golden_p20_cpu_from_requests() {
    let mut cluster = cluster_c();
    let resources = serde_json::json!({"requests": {"cpu": "2"}, "limits": {"memory": "1Gi"}});
    head_spec_mut(&mut cluster).containers[0].resources = Some(serde_json::from_value(resources).unwrap());
    let worker_resources =
        serde_json::json!({"requests": {"cpu": "2"}, "limits": {"memory": "1Gi", "nvidia.com/gpu": "3"}});
    worker_spec_mut(&mut cluster).containers[0].resources = Some(serde_json::from_value(worker_resources).unwrap());
    let config = PodGenConfig::default();
    let head_cmd = env_value(ray_container(&head(&cluster, &config)), "KUBERAY_GEN_RAY_START_CMD")
        .unwrap()
        .to_owned();
    assert!(head_cmd.contains(" --num-cpus=2 "), "{head_cmd}");
    let worker_pod = worker(&cluster, &config);
    let worker_cmd = env_value(ray_container(&worker_pod), "KUBERAY_GEN_RAY_START_CMD").unwrap();
    assert_eq!(
        worker_cmd,
        "ray start  --address=raycluster-sample-head-svc.default.svc.cluster.local:6379  --block  --dashboard-agent-listen-port=52365  --memory=1073741824  --metrics-export-port=8080  --num-cpus=2  --num-gpus=3  --port=6379 "
    );
}

#[test]
fn golden_p22_overwrite_container_cmd() {
    let mut cluster = cluster_c();
    set_annotation(&mut cluster, "ray.io/overwrite-container-cmd", "true");
    {
        let head = &mut head_spec_mut(&mut cluster).containers[0];
        head.command = Some(vec!["I am head".into()]);
        head.args = Some(vec!["I am head again".into()]);
    }
    {
        let worker = &mut worker_spec_mut(&mut cluster).containers[0];
        worker.command = Some(vec!["I am worker".into()]);
        worker.args = Some(vec!["I am worker again".into()]);
    }
    let config = PodGenConfig::default();
    let head_pod = head(&cluster, &config);
    assert_eq!(ray_container(&head_pod).command.as_deref().unwrap(), ["I am head"]);
    assert_eq!(ray_container(&head_pod).args.as_deref().unwrap(), ["I am head again"]);
    assert_eq!(annotation(&head_pod, "ray.io/overwrite-container-cmd"), Some("true"));
    let worker_pod = worker(&cluster, &config);
    assert_eq!(ray_container(&worker_pod).command.as_deref().unwrap(), ["I am worker"]);
    assert_eq!(
        ray_container(&worker_pod).args.as_deref().unwrap(),
        ["I am worker again"]
    );
    // The generated command is still published.
    assert!(
        env_value(ray_container(&worker_pod), "KUBERAY_GEN_RAY_START_CMD")
            .unwrap()
            .starts_with("ray start ")
    );
}

#[test]
fn user_command_is_prefixed() {
    let mut cluster = cluster_c();
    let head_container = &mut head_spec_mut(&mut cluster).containers[0];
    head_container.command = Some(vec!["python".into()]);
    head_container.args = Some(vec!["/opt/code.py".into()]);
    let pod = head(&cluster, &PodGenConfig::default());
    assert!(
        args0(ray_container(&pod)).starts_with(
            " python  /opt/code.py  && ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start --head "
        )
    );
}

fn autoscaling(cluster: &mut RayCluster) {
    cluster.spec.enable_in_tree_autoscaling = Some(true);
}

#[test]
fn golden_p23_autoscaler_defaults() {
    let mut cluster = cluster_c();
    autoscaling(&mut cluster);
    let pod = head(&cluster, &PodGenConfig::default());
    let spec = pod.spec.as_ref().unwrap();
    let ray = ray_container(&pod);
    assert!(args0(ray).contains(" --no-monitor "));
    assert_eq!(volume_names(&pod), ["shared-mem", "ray-logs"]);
    let logs = spec.volumes.as_ref().unwrap()[1].empty_dir.as_ref().unwrap();
    assert_eq!(logs.medium, None);
    assert_eq!(logs.size_limit, None);
    assert_eq!(mounts(ray), [("shared-mem", "/dev/shm"), ("ray-logs", "/tmp/ray")]);
    assert_eq!(spec.containers.len(), 2);
    let autoscaler = &spec.containers[1];
    assert_eq!(autoscaler.name, "autoscaler");
    assert_eq!(autoscaler.image.as_deref(), Some("repo/image:custom"));
    assert_eq!(autoscaler.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert_eq!(
        env_names(autoscaler),
        [
            "RAY_CLUSTER_NAME",
            "RAY_CLUSTER_NAMESPACE",
            "RAY_HEAD_POD_NAME",
            "KUBERAY_CRD_VER",
            "KUBERAY_GEN_AUTOSCALER_START_CMD"
        ]
    );
    assert_eq!(field_path(autoscaler, "RAY_HEAD_POD_NAME"), Some("metadata.name"));
    assert_eq!(env_value(autoscaler, "KUBERAY_CRD_VER"), Some("v1"));
    assert_eq!(autoscaler.command.as_deref().unwrap(), ["/bin/bash", "-c", "--"]);
    assert_eq!(
        autoscaler.args.as_deref().unwrap(),
        ["ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"]
    );
    let resources = autoscaler.resources.as_ref().unwrap();
    for list in [resources.limits.as_ref().unwrap(), resources.requests.as_ref().unwrap()] {
        assert_eq!(list["cpu"].0, "500m");
        assert_eq!(list["memory"].0, "512Mi");
    }
    assert_eq!(mounts(autoscaler), [("ray-logs", "/tmp/ray")]);
    assert_eq!(spec.service_account_name.as_deref(), Some("raycluster-sample"));
    assert_eq!(spec.restart_policy, None);
}

#[test]
fn golden_p25_autoscaler_options() {
    let mut cluster = cluster_c();
    autoscaling(&mut cluster);
    cluster.spec.autoscaler_options = Some(
        serde_json::from_value(serde_json::json!({
            "image": "custom-autoscaler-xxx",
            "imagePullPolicy": "IfNotPresent",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            "env": [{"name": "fooEnv", "value": "fooValue"}],
            "envFrom": [{"prefix": "Pre"}],
            "volumeMounts": [
                {"name": "ca-tls", "mountPath": "/etc/ca/tls", "readOnly": true},
                {"name": "ray-tls", "mountPath": "/etc/ray/tls"}
            ],
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"]},
                "runAsNonRoot": true,
                "seccompProfile": {"type": "RuntimeDefault"}
            },
            "upscalingMode": "Aggressive",
            "idleTimeoutSeconds": 100
        }))
        .unwrap(),
    );
    let pod = head(&cluster, &PodGenConfig::default());
    let autoscaler = container(&pod, "autoscaler");
    let options = cluster.spec.autoscaler_options.as_ref().unwrap();
    assert_eq!(autoscaler.image.as_deref(), Some("custom-autoscaler-xxx"));
    assert_eq!(autoscaler.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert_eq!(autoscaler.resources, options.resources);
    assert_eq!(autoscaler.security_context, options.security_context);
    assert_eq!(
        env_names(autoscaler),
        [
            "RAY_CLUSTER_NAME",
            "RAY_CLUSTER_NAMESPACE",
            "RAY_HEAD_POD_NAME",
            "KUBERAY_CRD_VER",
            "KUBERAY_GEN_AUTOSCALER_START_CMD",
            "fooEnv"
        ]
    );
    assert_eq!(autoscaler.env_from, options.env_from);
    assert_eq!(
        mounts(autoscaler),
        [
            ("ca-tls", "/etc/ca/tls"),
            ("ray-tls", "/etc/ray/tls"),
            ("ray-logs", "/tmp/ray")
        ]
    );
    // upscalingMode / idleTimeoutSeconds change nothing: same pod as without them.
    let mut without = cluster.clone();
    if let Some(o) = without.spec.autoscaler_options.as_mut() {
        o.upscaling_mode = None;
        o.idle_timeout_seconds = None;
    }
    let other = head(&without, &PodGenConfig::default());
    assert_eq!(other.spec, pod.spec);
}

#[test]
fn golden_p26_autoscaler_command_args_env_overrides() {
    let mut cluster = cluster_c();
    autoscaling(&mut cluster);
    cluster.spec.autoscaler_options = Some(
        serde_json::from_value(serde_json::json!({
            "command": ["/bin/bash", "-lc", "--"],
            "args": ["ulimit -n 65536; $KUBERAY_GEN_AUTOSCALER_START_CMD"],
            "env": [{"name": "AUTOSCALER_UPDATE_INTERVAL_S", "value": "10"}]
        }))
        .unwrap(),
    );
    let pod = head(&cluster, &PodGenConfig::default());
    let autoscaler = container(&pod, "autoscaler");
    assert_eq!(autoscaler.command.as_deref().unwrap(), ["/bin/bash", "-lc", "--"]);
    assert_eq!(
        autoscaler.args.as_deref().unwrap(),
        ["ulimit -n 65536; $KUBERAY_GEN_AUTOSCALER_START_CMD"]
    );
    assert_eq!(env_value(autoscaler, "AUTOSCALER_UPDATE_INTERVAL_S"), Some("10"));
    assert_eq!(
        env_value(autoscaler, "KUBERAY_GEN_AUTOSCALER_START_CMD"),
        Some("ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)")
    );
}

#[test]
fn golden_p28_worker_restart_policy() {
    let config = PodGenConfig::default();
    let policy = |autoscale: bool, version: Option<&str>, user: Option<&str>| {
        let mut cluster = cluster_c();
        if autoscale {
            autoscaling(&mut cluster);
        }
        if let Some(v) = version {
            cluster.spec.autoscaler_options =
                Some(serde_json::from_value(serde_json::json!({ "version": v })).unwrap());
        }
        worker_spec_mut(&mut cluster).restart_policy = user.map(str::to_owned);
        worker(&cluster, &config).spec.unwrap().restart_policy
    };
    assert_eq!(policy(false, None, None), None);
    assert_eq!(policy(true, Some("v1"), None), None);
    assert_eq!(policy(true, Some("v1"), Some("Always")).as_deref(), Some("Always"));
    assert_eq!(policy(true, Some("v2"), None).as_deref(), Some("Never"));
    assert_eq!(policy(true, None, None), None);
}

#[test]
fn golden_p29_autoscaler_version_env() {
    for (version, value) in [("v2", "true"), ("v1", "false")] {
        let mut cluster = cluster_c();
        autoscaling(&mut cluster);
        cluster.spec.autoscaler_options =
            Some(serde_json::from_value(serde_json::json!({ "version": version })).unwrap());
        let pod = head(&cluster, &PodGenConfig::default());
        let names = env_names(ray_container(&pod));
        assert_eq!(&names[..2], ["TEST_ENV_NAME", "RAY_enable_autoscaler_v2"]);
        assert_eq!(env_value(ray_container(&pod), "RAY_enable_autoscaler_v2"), Some(value));
        let restart = pod.spec.as_ref().unwrap().restart_policy.as_deref();
        assert_eq!(restart, (version == "v2").then_some("Never"));
    }
    // Without version: no switch.
    let mut cluster = cluster_c();
    autoscaling(&mut cluster);
    let pod = head(&cluster, &PodGenConfig::default());
    assert!(env_value(ray_container(&pod), "RAY_enable_autoscaler_v2").is_none());
}

#[test]
fn golden_p31_login_shell() {
    let mut cluster = cluster_c();
    autoscaling(&mut cluster);
    let config = PodGenConfig {
        login_shell: true,
        ..PodGenConfig::default()
    };
    let head_pod = head(&cluster, &config);
    let login = ["/bin/bash", "-cl", "--"];
    assert_eq!(ray_container(&head_pod).command.as_deref().unwrap(), login);
    assert_eq!(container(&head_pod, "autoscaler").command.as_deref().unwrap(), login);
    let worker_pod = worker(&cluster, &config);
    assert_eq!(ray_container(&worker_pod).command.as_deref().unwrap(), login);
    let init = &worker_pod.spec.as_ref().unwrap().init_containers.as_ref().unwrap()[0];
    assert_eq!(init.name, "wait-gcs-ready");
    assert_eq!(init.command.as_deref().unwrap(), login);
}

fn rayservice_cluster() -> RayCluster {
    let mut cluster = cluster_c();
    cluster
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert("ray.io/originated-from-crd".into(), "RayService".into());
    cluster
}

#[test]
fn golden_p32_rayservice_serve_labels() {
    let cluster = rayservice_cluster();
    let config = PodGenConfig::default();
    assert_eq!(label(&head(&cluster, &config), "ray.io/serve"), Some("false"));
    assert_eq!(label(&worker(&cluster, &config), "ray.io/serve"), Some("true"));
    let head_pod = head(&cluster, &config);
    let ray = ray_container(&head_pod);
    assert_eq!(
        env_value(ray, "RAY_USAGE_STATS_EXTRA_TAGS"),
        Some("kuberay_version=nightly;kuberay_crd=RayService")
    );
    assert_eq!(env_value(ray, "RAY_timeout_ms_task_wait_for_death_info"), Some("0"));
    assert_eq!(env_value(ray, "RAY_gcs_server_request_timeout_seconds"), Some("5"));
    assert_eq!(env_value(ray, "RAY_SERVE_KV_TIMEOUT_S"), Some("5"));
}

#[test]
fn golden_p34_multi_host_labels() {
    let mut cluster = cluster_c();
    cluster.spec.worker_group_specs.as_mut().unwrap()[0].num_of_hosts = Some(4);
    let config = PodGenConfig::default();
    let template = PodGenerator::new(&cluster, &config).worker_template(0).unwrap();
    let pod = template.pod(&WorkerReplica {
        replica_index: 0,
        replica_name: Some("R"),
        host_index: 2,
    });
    assert_eq!(label(&pod, "ray.io/worker-group-replica-name"), Some("R"));
    assert_eq!(label(&pod, "ray.io/worker-group-replica-index"), Some("0"));
    assert_eq!(label(&pod, "ray.io/replica-host-index"), Some("2"));
    // Single-host groups only get the index; the gate off gives none.
    let single = worker(&cluster_c(), &config);
    assert_eq!(label(&single, "ray.io/worker-group-replica-index"), Some("0"));
    assert_eq!(label(&single, "ray.io/worker-group-replica-name"), None);
    let mut gates_off = PodGenConfig::default();
    gates_off.feature_gates.ray_multi_host_indexing = false;
    assert_eq!(
        label(&worker(&cluster, &gates_off), "ray.io/worker-group-replica-index"),
        None
    );
}

#[test]
fn golden_p35_metrics_port() {
    let config = PodGenConfig::default();
    let ports = |pod: &Pod| -> Vec<(String, i32)> {
        ray_container(pod)
            .ports
            .iter()
            .flatten()
            .map(|p| (p.name.clone().unwrap_or_default(), p.container_port))
            .collect()
    };
    let cluster = cluster_c();
    assert_eq!(ports(&head(&cluster, &config)), [("metrics".to_owned(), 8080)]);
    assert_eq!(ports(&worker(&cluster, &config)), [("metrics".to_owned(), 8080)]);
    let mut custom = cluster_c();
    let port = serde_json::from_value(serde_json::json!({"name": "metrics", "containerPort": 8081})).unwrap();
    head_spec_mut(&mut custom).containers[0].ports = Some(vec![port]);
    let port = serde_json::from_value(serde_json::json!({"name": "metrics", "containerPort": 8081})).unwrap();
    worker_spec_mut(&mut custom).containers[0].ports = Some(vec![port]);
    assert_eq!(ports(&head(&custom, &config)), [("metrics".to_owned(), 8081)]);
    assert_eq!(ports(&worker(&custom, &config)), [("metrics".to_owned(), 8081)]);
}

#[test]
fn golden_p37_injection_switches_applied() {
    let cluster = cluster_c();
    let off = PodGenConfig {
        init_container_injection: false,
        probes_injection: false,
        ..PodGenConfig::default()
    };
    let pod = worker(&cluster, &off);
    assert!(pod.spec.as_ref().unwrap().init_containers.is_none());
    assert!(ray_container(&pod).liveness_probe.is_none());
    assert!(ray_container(&pod).readiness_probe.is_none());
    let on = worker(&cluster, &PodGenConfig::default());
    assert_eq!(on.spec.as_ref().unwrap().init_containers.as_ref().unwrap().len(), 1);
    assert!(ray_container(&on).liveness_probe.is_some());
}

#[test]
fn golden_p38_k8s_token_auth() {
    let mut cluster = cluster_c();
    cluster.spec.auth_options =
        Some(serde_json::from_value(serde_json::json!({"mode": "token", "enableK8sTokenAuth": true})).unwrap());
    let config = PodGenConfig::default();
    let head_pod = head(&cluster, &config);
    let ray = ray_container(&head_pod);
    assert_eq!(env_value(ray, "RAY_AUTH_MODE"), Some("token"));
    assert_eq!(env_value(ray, "RAY_ENABLE_K8S_TOKEN_AUTH"), Some("true"));
    let token_mount = ray
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.name == "ray-token")
        .unwrap();
    assert_eq!(token_mount.mount_path, "/var/run/secrets/ray.io/serviceaccount");
    assert_eq!(token_mount.read_only, Some(true));
    let volume = head_pod
        .spec
        .as_ref()
        .unwrap()
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "ray-token")
        .unwrap();
    let projection = &volume.projected.as_ref().unwrap().sources.as_ref().unwrap()[0];
    assert_eq!(projection.service_account_token.as_ref().unwrap().path, "token");
    let worker_pod = worker(&cluster, &config);
    let init = &worker_pod.spec.as_ref().unwrap().init_containers.as_ref().unwrap()[0];
    let init_mount = init
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.name == "ray-token")
        .unwrap();
    assert_eq!(init_mount.read_only, Some(true));

    for flag in [Some(false), None] {
        let mut cluster = cluster_c();
        let mut options = serde_json::json!({"mode": "token"});
        if let Some(f) = flag {
            options["enableK8sTokenAuth"] = serde_json::json!(f);
        }
        cluster.spec.auth_options = Some(serde_json::from_value(options).unwrap());
        let pod = head(&cluster, &config);
        let ray = ray_container(&pod);
        assert!(env_value(ray, "RAY_ENABLE_K8S_TOKEN_AUTH").is_none());
        let token = env_var(ray, "RAY_AUTH_TOKEN")
            .unwrap()
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap();
        assert_eq!(token.name, "raycluster-sample");
        assert_eq!(token.key, "auth_token");
    }
}

#[test]
fn golden_p46_merge_labels() {
    let a = BTreeMap::from([("a".to_owned(), "1".to_owned())]);
    let b = BTreeMap::from([("b".to_owned(), "2".to_owned())]);
    assert_eq!(merge_labels(Some(&a), Some(&b)).len(), 2);
    let template = BTreeMap::from([
        ("accelerator-type".to_owned(), "GPU".to_owned()),
        ("market-type".to_owned(), "spot".to_owned()),
    ]);
    let group = BTreeMap::from([("accelerator-type".to_owned(), "TPU-V6E".to_owned())]);
    assert_eq!(
        merge_labels(Some(&template), Some(&group)),
        BTreeMap::from([
            ("accelerator-type".to_owned(), "TPU-V6E".to_owned()),
            ("market-type".to_owned(), "spot".to_owned())
        ])
    );
    assert!(merge_labels(None, None).is_empty());
}

#[test]
fn golden_p47_user_probes_untouched() {
    let mut cluster = cluster_c();
    let probe: k8s_openapi::api::core::v1::Probe =
        serde_json::from_value(serde_json::json!({"httpGet": {"path": "/custom", "port": 8000}})).unwrap();
    head_spec_mut(&mut cluster).containers[0].liveness_probe = Some(probe.clone());
    head_spec_mut(&mut cluster).containers[0].readiness_probe = Some(probe.clone());
    let pod = head(&cluster, &PodGenConfig::default());
    assert_eq!(ray_container(&pod).liveness_probe.as_ref(), Some(&probe));
    assert_eq!(ray_container(&pod).readiness_probe.as_ref(), Some(&probe));
}

fn exec_command(probe: Option<&k8s_openapi::api::core::v1::Probe>) -> String {
    probe.unwrap().exec.as_ref().unwrap().command.as_ref().unwrap()[2].clone()
}

#[test]
fn golden_p49_rayservice_head_probes() {
    let pod = head(&rayservice_cluster(), &PodGenConfig::default());
    let ray = ray_container(&pod);
    for probe in [ray.liveness_probe.as_ref(), ray.readiness_probe.as_ref()] {
        assert!(!exec_command(probe).contains("-/healthz"));
        assert_eq!(probe.unwrap().timeout_seconds, Some(5));
    }
    assert_eq!(
        exec_command(ray.readiness_probe.as_ref()),
        "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success && wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"
    );
    assert_eq!(ray.readiness_probe.as_ref().unwrap().failure_threshold, Some(10));
    assert_eq!(ray.liveness_probe.as_ref().unwrap().failure_threshold, Some(120));
    assert_eq!(ray.liveness_probe.as_ref().unwrap().initial_delay_seconds, Some(30));
}

#[test]
fn golden_p50_probe_ports_from_params() {
    let mut cluster = cluster_c();
    cluster.spec.head_group_spec.ray_start_params = Some(BTreeMap::from([
        ("dashboard-agent-listen-port".to_owned(), "8266".to_owned()),
        ("dashboard-port".to_owned(), "8365".to_owned()),
    ]));
    let pod = head(&cluster, &PodGenConfig::default());
    let ray = ray_container(&pod);
    for probe in [ray.liveness_probe.as_ref(), ray.readiness_probe.as_ref()] {
        let command = exec_command(probe);
        assert!(command.contains(":8266") && command.contains(":8365"), "{command}");
    }
}

#[test]
fn golden_p52_rayservice_worker_readiness() {
    let mut cluster = rayservice_cluster();
    cluster.spec.worker_group_specs.as_mut().unwrap()[0].ray_start_params = Some(BTreeMap::from([(
        "dashboard-agent-listen-port".to_owned(),
        "8500".to_owned(),
    )]));
    let port = serde_json::from_value(serde_json::json!({"name": "serve", "containerPort": 8000})).unwrap();
    worker_spec_mut(&mut cluster).containers[0].ports = Some(vec![port]);
    let pod = worker(&cluster, &PodGenConfig::default());
    let readiness = ray_container(&pod).readiness_probe.as_ref();
    let command = exec_command(readiness);
    assert!(command.contains(":8500") && command.contains("-/healthz"), "{command}");
    assert!(command.ends_with("wget --tries 1 -T 10 -q -O- http://localhost:8000/-/healthz | grep success"));
    assert_eq!(readiness.unwrap().failure_threshold, Some(1));
    assert_eq!(readiness.unwrap().timeout_seconds, Some(2));
    assert!(!exec_command(ray_container(&pod).liveness_probe.as_ref()).contains("-/healthz"));
}

#[test]
fn golden_p53_invalid_probe_ports_fall_back() {
    let mut cluster = cluster_c();
    cluster.spec.head_group_spec.ray_start_params = Some(BTreeMap::from([
        ("dashboard-agent-listen-port".to_owned(), "invalid-port".to_owned()),
        ("dashboard-port".to_owned(), "not-a-number".to_owned()),
    ]));
    let pod = head(&cluster, &PodGenConfig::default());
    let command = exec_command(ray_container(&pod).liveness_probe.as_ref());
    assert!(command.contains(":52365") && command.contains(":8265"), "{command}");
}

#[test]
fn unified_http_probe_for_new_ray() {
    let mut cluster = rayservice_cluster();
    cluster.spec.ray_version = Some("2.53.0".into());
    let head_pod = head(&cluster, &PodGenConfig::default());
    let http = ray_container(&head_pod)
        .liveness_probe
        .as_ref()
        .unwrap()
        .http_get
        .as_ref()
        .unwrap();
    assert_eq!(http.path.as_deref(), Some("/api/healthz"));
    assert!(ray_container(&head_pod).liveness_probe.as_ref().unwrap().exec.is_none());
    // RayService worker readiness keeps the wget form plus the serve check.
    let worker_pod = worker(&cluster, &PodGenConfig::default());
    let readiness = ray_container(&worker_pod).readiness_probe.as_ref().unwrap();
    assert!(readiness.http_get.is_none());
    assert!(exec_command(Some(readiness)).contains("local_raylet_healthz"));
}

#[test]
fn golden_p55_annotation_ft_head() {
    let config = PodGenConfig::default();
    for value in ["true", "false"] {
        let mut cluster = cluster_c();
        set_annotation(&mut cluster, "ray.io/ft-enabled", value);
        let pod = head(&cluster, &config);
        assert_eq!(annotation(&pod, "ray.io/ft-enabled"), Some(value));
        assert!(env_var(ray_container(&pod), "RAY_gcs_rpc_server_reconnect_timeout_s").is_none());
    }
    let mut cluster = cluster_c();
    set_annotation(&mut cluster, "ray.io/ft-enabled", "true");
    set_annotation(&mut cluster, "ray.io/external-storage-namespace", "test-ns");
    let pod = head(&cluster, &config);
    assert_eq!(annotation(&pod, "ray.io/external-storage-namespace"), Some("test-ns"));
    assert_eq!(
        env_value(ray_container(&pod), "RAY_external_storage_namespace"),
        Some("test-ns")
    );

    let mut with_env = cluster.clone();
    head_spec_mut(&mut with_env).containers[0]
        .env
        .as_mut()
        .unwrap()
        .push(env("REDIS_PASSWORD", "test-password"));
    let pod = head(&with_env, &config);
    assert_eq!(
        env_names(ray_container(&pod))
            .iter()
            .filter(|n| **n == "REDIS_PASSWORD")
            .count(),
        1
    );
    assert_eq!(env_value(ray_container(&pod), "REDIS_PASSWORD"), Some("test-password"));

    let mut with_param = cluster.clone();
    with_param.spec.head_group_spec.ray_start_params = Some(BTreeMap::from([(
        "redis-password".to_owned(),
        "test-password".to_owned(),
    )]));
    let pod = head(&with_param, &config);
    assert_eq!(env_value(ray_container(&pod), "REDIS_PASSWORD"), Some("test-password"));
}

#[test]
fn golden_p56_worker_ft() {
    let config = PodGenConfig::default();
    let mut by_annotation = cluster_c();
    set_annotation(&mut by_annotation, "ray.io/ft-enabled", "true");
    let mut by_options = cluster_c();
    by_options.spec.gcs_fault_tolerance_options = Some(
        serde_json::from_value(serde_json::json!({"redisAddress": "redis:6379", "redisPassword": {"value": "p"}}))
            .unwrap(),
    );
    for cluster in [by_annotation, by_options] {
        let pod = worker(&cluster, &config);
        let ray = ray_container(&pod);
        assert_eq!(env_value(ray, "RAY_gcs_rpc_server_reconnect_timeout_s"), Some("600"));
        assert_eq!(annotation(&pod, "ray.io/ft-enabled"), None);
        assert_eq!(annotation(&pod, "ray.io/external-storage-namespace"), None);
        for absent in ["RAY_external_storage_namespace", "RAY_REDIS_ADDRESS", "REDIS_PASSWORD"] {
            assert!(env_var(ray, absent).is_none(), "{absent}");
        }
    }
}

#[test]
fn redis_options_on_head() {
    let mut cluster = cluster_c();
    cluster.metadata.uid = Some("uid-1".into());
    cluster.spec.gcs_fault_tolerance_options = Some(
        serde_json::from_value(serde_json::json!({
            "redisAddress": "redis:6379",
            "redisUsername": {"value": "user"},
            "redisPassword": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
        }))
        .unwrap(),
    );
    let pod = head(&cluster, &PodGenConfig::default());
    let ray = ray_container(&pod);
    assert_eq!(annotation(&pod, "ray.io/external-storage-namespace"), Some("uid-1"));
    assert_eq!(
        &env_names(ray)[..5],
        [
            "TEST_ENV_NAME",
            "RAY_external_storage_namespace",
            "RAY_REDIS_ADDRESS",
            "REDIS_USERNAME",
            "REDIS_PASSWORD"
        ]
    );
    let cmd = env_value(ray, "KUBERAY_GEN_RAY_START_CMD").unwrap();
    assert!(
        cmd.contains(" --redis-password=$REDIS_PASSWORD ") && cmd.contains(" --redis-username=$REDIS_USERNAME "),
        "{cmd}"
    );
}

#[test]
fn golden_p58_embedded_ft() {
    for (claim, sub_path, pvc) in [
        (None, None, "test-cluster-gcs-pvc"),
        (Some("my-pvc"), Some("clusters/foo"), "my-pvc"),
    ] {
        let mut cluster = cluster_c();
        cluster.metadata.name = Some("test-cluster".into());
        let mut storage = serde_json::json!({});
        if let Some(c) = claim {
            storage["claimName"] = serde_json::json!(c);
        }
        if let Some(s) = sub_path {
            storage["subPath"] = serde_json::json!(s);
        }
        cluster.spec.gcs_fault_tolerance_options =
            Some(serde_json::from_value(serde_json::json!({"backend": "rocksdb", "storage": storage})).unwrap());
        let pod = head(&cluster, &PodGenConfig::default());
        let ray = ray_container(&pod);
        assert_eq!(env_value(ray, "RAY_gcs_storage"), Some("rocksdb"));
        assert_eq!(env_value(ray, "RAY_gcs_storage_path"), Some("/data/gcs"));
        for absent in ["RAY_REDIS_ADDRESS", "REDIS_PASSWORD", "RAY_external_storage_namespace"] {
            assert!(env_var(ray, absent).is_none());
        }
        assert_eq!(annotation(&pod, "ray.io/external-storage-namespace"), None);
        let storage_mounts: Vec<_> = ray
            .volume_mounts
            .iter()
            .flatten()
            .filter(|m| m.name == "gcs-storage")
            .collect();
        assert_eq!(storage_mounts.len(), 1);
        assert_eq!(storage_mounts[0].mount_path, "/data/gcs");
        assert_eq!(storage_mounts[0].sub_path.as_deref(), sub_path);
        let volumes: Vec<_> = pod
            .spec
            .as_ref()
            .unwrap()
            .volumes
            .iter()
            .flatten()
            .filter(|v| v.name == "gcs-storage")
            .collect();
        assert_eq!(volumes.len(), 1);
        assert_eq!(volumes[0].persistent_volume_claim.as_ref().unwrap().claim_name, pvc);
        assert_eq!(
            crate::gcs_ft::build_gcs_storage_pvc(&cluster).is_some(),
            claim.is_none()
        );
    }
}

#[test]
fn golden_p88_default_pod_labels_and_annotations() {
    let mut cluster = cluster_c();
    {
        let (spec, who) = (&mut cluster.spec.head_group_spec.template, "head");
        let meta = spec.metadata.get_or_insert_with(Default::default);
        meta.annotations = Some(BTreeMap::from([
            ("shared-annotation".to_owned(), who.to_owned()),
            ("user-annotation".to_owned(), format!("{who}-only")),
        ]));
        meta.labels = Some(BTreeMap::from([
            ("shared-label".to_owned(), who.to_owned()),
            ("user-label".to_owned(), format!("{who}-only")),
        ]));
    }
    {
        let meta = cluster.spec.worker_group_specs.as_mut().unwrap()[0]
            .template
            .metadata
            .get_or_insert_with(Default::default);
        meta.annotations = Some(BTreeMap::from([
            ("shared-annotation".to_owned(), "worker".to_owned()),
            ("user-annotation".to_owned(), "worker-only".to_owned()),
        ]));
        meta.labels = Some(BTreeMap::from([
            ("shared-label".to_owned(), "worker".to_owned()),
            ("user-label".to_owned(), "worker-only".to_owned()),
        ]));
    }
    let config = PodGenConfig {
        default_pod_annotations: BTreeMap::from([
            ("monitoring.example.com/scrape".to_owned(), "true".to_owned()),
            ("shared-annotation".to_owned(), "default".to_owned()),
        ]),
        default_pod_labels: BTreeMap::from([
            ("fleet".to_owned(), "managed".to_owned()),
            ("shared-label".to_owned(), "default".to_owned()),
        ]),
        ..PodGenConfig::default()
    };
    for (pod, who) in [(head(&cluster, &config), "head"), (worker(&cluster, &config), "worker")] {
        assert_eq!(annotation(&pod, "monitoring.example.com/scrape"), Some("true"));
        assert_eq!(annotation(&pod, "shared-annotation"), Some(who));
        assert_eq!(
            annotation(&pod, "user-annotation"),
            Some(format!("{who}-only").as_str())
        );
        assert_eq!(label(&pod, "fleet"), Some("managed"));
        assert_eq!(label(&pod, "shared-label"), Some(who));
        assert_eq!(label(&pod, "user-label"), Some(format!("{who}-only").as_str()));
    }
    let plain = head(&cluster, &PodGenConfig::default());
    assert_eq!(label(&plain, "fleet"), None);
    assert_eq!(annotation(&plain, "monitoring.example.com/scrape"), None);
}

#[test]
fn golden_p89_app_name_override() {
    let mut cluster = cluster_c();
    cluster.spec.head_group_spec.template.metadata = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        labels: Some(BTreeMap::from([(
            "app.kubernetes.io/name".to_owned(),
            "myapp".to_owned(),
        )])),
        ..Default::default()
    });
    let config = PodGenConfig::default();
    let pod = head(&cluster, &config);
    assert_eq!(label(&pod, "app.kubernetes.io/name"), Some("myapp"));
    let service = crate::service::build_head_service(&cluster, &config).unwrap();
    assert_eq!(
        service.spec.unwrap().selector.unwrap()["app.kubernetes.io/name"],
        "myapp"
    );
}

#[test]
fn worker_pod_shape() {
    let pod = worker(&cluster_c(), &PodGenConfig::default());
    assert_eq!(
        pod.metadata.generate_name.as_deref(),
        Some("raycluster-sample-small-group-worker-")
    );
    assert_eq!(pod.metadata.name, None);
    assert_eq!(pod.metadata.annotations, None);
    assert_eq!(label(&pod, "ray.io/identifier"), Some("raycluster-sample-worker"));
    let ray = ray_container(&pod);
    assert_eq!(
        env_names(ray),
        [
            "TEST_ENV_NAME",
            "FQ_RAY_IP",
            "RAY_IP",
            "RAY_CLUSTER_NAME",
            "RAY_CLUSTER_NAMESPACE",
            "RAY_CLOUD_INSTANCE_ID",
            "RAY_NODE_TYPE_NAME",
            "KUBERAY_GEN_RAY_START_CMD",
            "RAY_PORT",
            "RAY_ADDRESS",
            "RAY_USAGE_STATS_KUBERAY_IN_USE",
            "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE",
        ]
    );
    assert_eq!(
        env_value(ray, "RAY_ADDRESS"),
        Some("raycluster-sample-head-svc.default.svc.cluster.local:6379")
    );
    assert_eq!(env_value(ray, "RAY_IP"), Some("raycluster-sample-head-svc"));
    let init = &pod.spec.as_ref().unwrap().init_containers.as_ref().unwrap()[0];
    assert_eq!(env_names(init), ["TEST_ENV_NAME", "FQ_RAY_IP", "RAY_IP"]);
    let script = args0(init);
    assert!(
        script.starts_with(
            "\n\t\t\t\t\tSECONDS=0\n\t\t\t\t\twhile true; do\n\t\t\t\t\t\tif (( SECONDS <= 120 )); then\n"
        )
    );
    assert!(script.contains(
        "\t\t\t\t\t\t\tif ray health-check --address raycluster-sample-head-svc.default.svc.cluster.local:6379 > /dev/null 2>&1; then\n"
    ));
    assert!(script.ends_with("\t\t\t\t\t\tsleep 5\n\t\t\t\t\tdone\n\t\t\t\t"));
    let resources = init.resources.as_ref().unwrap();
    assert_eq!(resources.limits.as_ref().unwrap()["cpu"].0, "200m");
    assert_eq!(resources.requests.as_ref().unwrap()["memory"].0, "256Mi");
    let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.controller), ("RayCluster", Some(true)));
}

#[test]
fn deterministic_head_name_and_annotations() {
    let config = PodGenConfig {
        deterministic_head_pod_name: true,
        ..PodGenConfig::default()
    };
    let pod = head(&cluster_c(), &config);
    assert_eq!(pod.metadata.name.as_deref(), Some("raycluster-sample-head"));
    assert_eq!(pod.metadata.generate_name, None);
    assert_eq!(annotation(&pod, "ray.io/kuberay-version"), Some("nightly"));
    assert_eq!(
        annotation(&pod, "ray.io/upgrade-strategy-recreate-hash").map(str::len),
        Some(32)
    );
    assert_eq!(annotation(&pod, "ray.io/ft-enabled"), Some("false"));
}

#[test]
fn plasma_directory_skips_shm() {
    let mut cluster = cluster_c();
    cluster.spec.head_group_spec.ray_start_params =
        Some(BTreeMap::from([("plasma-directory".to_owned(), "/tmp".to_owned())]));
    let pod = head(&cluster, &PodGenConfig::default());
    assert!(pod.spec.as_ref().unwrap().volumes.is_none());
}

#[test]
fn missing_container_is_an_error() {
    let mut cluster = cluster_c();
    head_spec_mut(&mut cluster).containers.clear();
    assert!(
        PodGenerator::new(&cluster, &PodGenConfig::default())
            .head_pod()
            .is_err()
    );
    assert!(
        PodGenerator::new(&cluster_c(), &PodGenConfig::default())
            .worker_template(3)
            .is_err()
    );
}

proptest! {
    #[test]
    fn generation_is_deterministic(
        name in "[a-z]([-a-z0-9]{0,40}[a-z0-9])?",
        group in "[a-z][-a-z0-9]{0,20}",
        cpu in 1u32..64,
        autoscale in any::<bool>(),
        replica in 0u32..100,
    ) {
        let mut cluster = cluster_c();
        cluster.metadata.name = Some(name);
        cluster.spec.enable_in_tree_autoscaling = Some(autoscale);
        let groups = cluster.spec.worker_group_specs.as_mut().unwrap();
        groups[0].group_name = group;
        groups[0].resources = Some(BTreeMap::from([("CPU".to_owned(), cpu.to_string()), ("Custom".to_owned(), "0.5".to_owned())]));
        let config = PodGenConfig::default();
        let render = || {
            let generator = PodGenerator::new(&cluster, &config);
            let head = serde_json::to_string(&generator.head_pod().unwrap()).unwrap();
            let worker = serde_json::to_string(&generator.worker_pod(0, &WorkerReplica::single(replica)).unwrap()).unwrap();
            (head, worker)
        };
        let first = render();
        prop_assert_eq!(&first, &render());
        let expected_cpus = format!("--num-cpus={cpu} ");
        prop_assert!(first.1.contains(&expected_cpus));
        let expected_resources = r#"--resources='{\"Custom\":0.5}'"#;
        prop_assert!(first.1.contains(expected_resources));
    }
}

proptest! {
    /// The same spec parsed twice (independent values) renders byte-identical head and worker
    /// pods, whatever the operator switches, and stamping from the worker template is the same as
    /// building the worker pod from scratch.
    #[test]
    fn independent_copies_render_identically(
        name in "[a-z]([-a-z0-9]{0,40}[a-z0-9])?",
        ft in any::<bool>(),
        autoscale in any::<bool>(),
        hosts in 1i32..4,
        multi_host in any::<bool>(),
        login_shell in any::<bool>(),
        deterministic_head in any::<bool>(),
        replica in 0u32..50,
        host in 0u32..4,
    ) {
        let build = || {
            let mut cluster = cluster_c();
            cluster.metadata.name = Some(name.clone());
            if ft {
                set_annotation(&mut cluster, "ray.io/ft-enabled", "true");
            }
            cluster.spec.enable_in_tree_autoscaling = Some(autoscale);
            cluster.spec.worker_group_specs.as_mut().unwrap()[0].num_of_hosts = Some(hosts);
            cluster
        };
        let (first, second) = (build(), build());
        let mut config = PodGenConfig { login_shell, deterministic_head_pod_name: deterministic_head, ..PodGenConfig::default() };
        config.feature_gates.ray_multi_host_indexing = multi_host;
        let replica = WorkerReplica { replica_index: replica, replica_name: Some("small-group-abcde"), host_index: host };
        let render = |cluster: &RayCluster| {
            let generator = PodGenerator::new(cluster, &config);
            let head = serde_json::to_vec(&generator.head_pod().unwrap()).unwrap();
            let worker = serde_json::to_vec(&generator.worker_pod(0, &replica).unwrap()).unwrap();
            let stamped = serde_json::to_vec(&generator.worker_template(0).unwrap().pod(&replica)).unwrap();
            (head, worker, stamped)
        };
        let (a, b) = (render(&first), render(&second));
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(&a.1, &a.2);
    }
}
