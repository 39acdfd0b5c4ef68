//! Unit-test fixtures shared by the RayCluster controller's modules.

use ray_api::RayCluster;

/// The shape of KubeRay's `ray-cluster.sample.yaml`: a head with the GCS, dashboard and serve
/// ports, and one worker group; `extra_spec` is appended to the spec (indented by two spaces).
pub(crate) fn cluster(extra_spec: &str) -> RayCluster {
    let yaml = format!(
        r#"
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: demo, namespace: ns, uid: u-1}}
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
          resources: {{requests: {{cpu: "1", memory: 2Gi}}}}
          ports:
          - {{containerPort: 6379, name: gcs-server}}
          - {{containerPort: 8265, name: dashboard}}
          - {{containerPort: 8000, name: serve}}
  workerGroupSpecs:
  - groupName: small
    replicas: 1
    minReplicas: 1
    maxReplicas: 5
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.52.0
          resources: {{requests: {{cpu: "1", memory: 1Gi}}}}
{extra_spec}"#
    );
    let docs: Vec<RayCluster> = ray_api::yaml::from_yaml_documents(&yaml).unwrap();
    docs.into_iter().next().unwrap()
}
