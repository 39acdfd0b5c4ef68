//! Fixtures of KubeRay's pod-generation golden cases: cluster C (the `instance` of KubeRay's `pod_test.go`) and
//! cluster S (`instanceWithWrongSvc` of its `service_test.go`).

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod};
use ray_api::RayCluster;

pub fn from_yaml(yaml: &str) -> RayCluster {
    serde_saphyr::from_str(yaml).unwrap()
}

pub const CLUSTER_C: &str = r#"
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster-sample
  namespace: default
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: repo/image:custom
          env:
          - name: TEST_ENV_NAME
            value: TEST_ENV_VALUE
          resources:
            requests: {cpu: "1", memory: 1Gi}
            limits: {cpu: "1", memory: 1Gi}
  workerGroupSpecs:
  - groupName: small-group
    replicas: 3
    minReplicas: 0
    maxReplicas: 10000
    rayStartParams:
      port: "6379"
    template:
      spec:
        containers:
        - name: ray-worker
          image: repo/image:custom
          env:
          - name: TEST_ENV_NAME
            value: TEST_ENV_VALUE
          resources:
            limits: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "3"}
"#;

pub fn cluster_c() -> RayCluster {
    from_yaml(CLUSTER_C)
}

pub fn ray_container(pod: &Pod) -> &Container {
    &pod.spec.as_ref().unwrap().containers[0]
}

pub fn container<'a>(pod: &'a Pod, name: &str) -> &'a Container {
    pod.spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .find(|c| c.name == name)
        .unwrap()
}

pub fn env_names(container: &Container) -> Vec<&str> {
    container.env.iter().flatten().map(|e| e.name.as_str()).collect()
}

pub fn env_var<'a>(container: &'a Container, name: &str) -> Option<&'a EnvVar> {
    container.env.iter().flatten().find(|e| e.name == name)
}

pub fn env_value<'a>(container: &'a Container, name: &str) -> Option<&'a str> {
    env_var(container, name).and_then(|e| e.value.as_deref())
}

pub fn field_path<'a>(container: &'a Container, name: &str) -> Option<&'a str> {
    env_var(container, name)
        .and_then(|e| e.value_from.as_ref())
        .and_then(|v| v.field_ref.as_ref())
        .map(|f| f.field_path.as_str())
}

pub fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

pub fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

pub fn args0(container: &Container) -> &str {
    &container.args.as_ref().unwrap()[0]
}

/// Fixture S (`service_test` `instanceWithWrongSvc`).
pub const CLUSTER_S: &str = r#"
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster-sample
  namespace: default
spec:
  headServiceAnnotations:
    HeadServiceAnnotationKey1: HeadServiceAnnotationValue1
    HeadServiceAnnotationKey2: HeadServiceAnnotationValue2
  headGroupSpec:
    rayStartParams:
      port: "6379"
      object-manager-port: "12345"
      node-manager-port: "12346"
      object-store-memory: "100000000"
      num-cpus: "1"
    template:
      metadata:
        labels:
          groupName: headgroup
      spec:
        containers:
        - name: ray-head
          image: rayproject/autoscaler
          command: ["python"]
          args: ["/opt/code.py"]
          ports:
          - name: gcs-server
            containerPort: 6379
          - name: dashboard
            containerPort: 8265
          - name: serve
            containerPort: 8000
"#;

pub fn cluster_s() -> RayCluster {
    from_yaml(CLUSTER_S)
}
