//! End to end, the real operator binary against an in-process kube-sim: the mTLS path (gate
//! `RayClusterMTLS`). With cert-manager's CRDs installed (kube-sim's hollow cert-manager issues the
//! Certificates) the operator builds the PKI, holds pods until the certificates are issued, injects
//! TLS into the pods and follows the pod IPs; without cert-manager or without the gate the cluster is
//! rejected with KubeRay's events.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Client, ResourceExt};
use ray_api::RayCluster;
use serde_json::{Value, json};

use crate::common;
use common::{Operator, SimEnv, free_port, node_type};

const NS: &str = "default";
const CLUSTER: &str = "raycluster-mtls";
const WAIT: Duration = Duration::from_secs(60);
const GATE_ON: &str = "--feature-gates=RayClusterMTLS=true";

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    common::wait_for(what, WAIT, Duration::from_millis(100), check).await
}

/// cert-manager's namespaced `cert-manager.io/v1` kinds as CRDs (open schema, status subresource).
fn cert_manager_crds() -> Vec<Value> {
    [("issuers", "Issuer"), ("certificates", "Certificate")]
        .into_iter()
        .map(|(plural, kind)| {
            json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": format!("{plural}.cert-manager.io")},
                "spec": {
                    "group": "cert-manager.io", "scope": "Namespaced",
                    "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind,
                        "listKind": format!("{kind}List")},
                    "versions": [{
                        "name": "v1", "served": true, "storage": true,
                        "subresources": {"status": {}},
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
                    }]
                }
            })
        })
        .collect()
}

fn cert_manager_resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("cert-manager.io", "v1", kind))
}

struct Env {
    _sim: kube_sim::SimHandle,
    client: Client,
    operator: Operator,
    dir: PathBuf,
    kubeconfig: PathBuf,
    flags: Vec<String>,
}

impl Env {
    /// kube-sim (hollow cert-manager `on` or off), cert-manager's CRDs when `crds`, then the operator.
    async fn start(tag: &str, cert_manager_agent: bool, crds: bool, flags: &[&str]) -> Env {
        let mut config = kube_sim::SimConfig::default();
        config.agents.cert_manager = cert_manager_agent;
        let SimEnv {
            sim,
            client,
            dir,
            kubeconfig,
        } = SimEnv::start(tag, config).await;
        if crds {
            // Before the operator starts: it discovers cert-manager.io/v1 once.
            common::install_extra_crds(&client, &cert_manager_crds()).await;
        }
        let operator = Operator::start(&dir, &kubeconfig, NS, free_port(), free_port(), flags);
        Env {
            _sim: sim,
            client,
            operator,
            dir,
            kubeconfig,
            flags: flags.iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    /// Stops the operator (SIGTERM) and starts a fresh one with the same flags.
    fn restart_operator(&mut self) {
        assert!(self.operator.terminate().success());
        let flags: Vec<&str> = self.flags.iter().map(String::as_str).collect();
        self.operator = Operator::start(&self.dir, &self.kubeconfig, NS, free_port(), free_port(), &flags);
    }

    fn clusters(&self) -> Api<RayCluster> {
        Api::namespaced(self.client.clone(), NS)
    }

    fn dynamic(&self, kind: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), NS, &cert_manager_resource(kind))
    }

    fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.client.clone(), NS)
    }

    async fn create_sample(&self) -> RayCluster {
        let mut cluster: RayCluster = common::sample_document("ray-cluster.mtls.yaml", "RayCluster");
        cluster.metadata.namespace = Some(NS.into());
        self.clusters().create(&PostParams::default(), &cluster).await.unwrap()
    }

    async fn pods(&self) -> Vec<Pod> {
        common::live_cluster_pods(&self.client, NS, CLUSTER).await
    }

    async fn event(&self, reason: &str) -> Option<Event> {
        Api::<Event>::namespaced(self.client.clone(), NS)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(CLUSTER)
            })
    }

    /// Waits a while and checks that the cluster still has no pods.
    async fn assert_no_pods_for(&self, period: Duration) {
        let deadline = tokio::time::Instant::now() + period;
        while tokio::time::Instant::now() < deadline {
            assert!(self.pods().await.is_empty(), "pods were created");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn finish(self) {
        let dir = self.dir.clone();
        drop(self);
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn controller_uid(object: &DynamicObject) -> Option<String> {
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true) && o.kind == "RayCluster")
        .map(|o| o.uid.clone())
}

fn ip_addresses(certificate: &DynamicObject) -> Vec<String> {
    certificate.data["spec"]["ipAddresses"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn pod_ip(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .filter(|ip| !ip.is_empty())
}

fn assert_tls_pod(pod: &Pod) {
    let spec = pod.spec.as_ref().unwrap();
    let secret = if node_type(pod) == "head" {
        "ray-head-secret-raycluster-mtls"
    } else {
        "ray-worker-secret-raycluster-mtls"
    };
    let volume = spec.volumes.iter().flatten().find(|v| v.name == "ray-tls").unwrap();
    assert_eq!(
        volume.secret.as_ref().and_then(|s| s.secret_name.as_deref()),
        Some(secret)
    );
    let inits = spec.init_containers.as_deref().unwrap();
    assert_eq!(inits[0].name, "wait-for-tls-ip-san");
    let ray = &spec.containers[0];
    let use_tls = ray.env.iter().flatten().find(|e| e.name == "RAY_USE_TLS").unwrap();
    assert_eq!(use_tls.value.as_deref(), Some("1"));
    assert!(
        ray.volume_mounts
            .iter()
            .flatten()
            .any(|m| m.name == "ray-tls" && m.mount_path == "/etc/ray/tls")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_cluster_gets_its_pki_tls_pods_and_ip_sans() {
    let mut env = Env::start("mtls", true, true, &[GATE_ON]).await;
    let cluster = env.create_sample().await;
    let uid = cluster.uid().unwrap();

    // The PKI, owned by the cluster.
    for (kind, name) in [
        ("Issuer", "ray-selfsigned-issuer-raycluster-mtls"),
        ("Issuer", "ray-ca-issuer-raycluster-mtls"),
        ("Certificate", "ray-ca-certificate-raycluster-mtls"),
        ("Certificate", "ray-head-cert-raycluster-mtls"),
        ("Certificate", "ray-worker-cert-raycluster-mtls"),
    ] {
        let api = env.dynamic(kind);
        let object = wait_for(&format!("{kind} {name}"), || async { api.get_opt(name).await.unwrap() }).await;
        assert_eq!(controller_uid(&object).as_deref(), Some(uid.as_str()), "{name} owner");
        assert_eq!(object.labels()["ray.io/cluster"], CLUSTER);
    }
    let ca = env
        .dynamic("Certificate")
        .get("ray-ca-certificate-raycluster-mtls")
        .await
        .unwrap();
    assert_eq!(ca.data["spec"]["isCA"], true);
    assert_eq!(
        ca.data["spec"]["secretName"],
        format!("raycluster-mtls-ca-secret-{uid}")
    );

    // Pods come with TLS and the cluster gets ready.
    let pods = wait_for("1 head + 1 running worker", || async {
        let pods = env.pods().await;
        common::one_head_and_running_workers(&pods, 1).then_some(pods)
    })
    .await;
    for pod in &pods {
        assert_tls_pod(pod);
    }
    wait_for("state ready", || async {
        let status = env.clusters().get(CLUSTER).await.unwrap().status;
        (serde_json::to_value(status).unwrap()["state"] == "ready").then_some(())
    })
    .await;

    // The leaf certificates follow the pod IPs (head IPs in the head certificate, worker IPs in the
    // worker certificate) and cert-manager re-issues them.
    for (role, certificate) in [
        ("head", "ray-head-cert-raycluster-mtls"),
        ("worker", "ray-worker-cert-raycluster-mtls"),
    ] {
        let ip = wait_for(&format!("{role} pod IP"), || async {
            env.pods().await.iter().find(|p| node_type(p) == role).and_then(pod_ip)
        })
        .await;
        let api = env.dynamic("Certificate");
        wait_for(&format!("{certificate} carries {ip}"), || async {
            let cert = api.get(certificate).await.unwrap();
            let ips = ip_addresses(&cert);
            let issued = cert.data["status"]["conditions"][0]["observedGeneration"]
                == json!(cert.metadata.generation.unwrap_or_default());
            (ips.contains(&ip) && ips.contains(&"127.0.0.1".to_owned()) && issued).then_some(())
        })
        .await;
    }

    // cert-manager's Secrets, owned by their Certificates.
    for (secret, certificate) in [
        ("ray-head-secret-raycluster-mtls", "ray-head-cert-raycluster-mtls"),
        ("ray-worker-secret-raycluster-mtls", "ray-worker-cert-raycluster-mtls"),
    ] {
        let secrets = env.secrets();
        let s = wait_for(&format!("{secret} owned by {certificate}"), || async {
            let s = secrets.get_opt(secret).await.unwrap()?;
            s.owner_references()
                .iter()
                .any(|o| o.kind == "Certificate" && o.name == certificate)
                .then_some(s)
        })
        .await;
        let data = s.data.unwrap();
        for key in ["tls.crt", "tls.key", "ca.crt"] {
            assert!(data.contains_key(key), "{secret} lacks {key}");
        }
    }
    // Events go out a moment after what they report, so wait for one of the two.
    wait_for("MTLSPKIReady or MTLSCertsNotReady event", || async {
        match env.event("MTLSPKIReady").await {
            Some(event) => Some(event),
            None => env.event("MTLSCertsNotReady").await,
        }
    })
    .await;

    // A restarted operator keeps the IP SANs of the running pods (it plans only from a listed pod index).
    let head_cert = env
        .dynamic("Certificate")
        .get("ray-head-cert-raycluster-mtls")
        .await
        .unwrap();
    env.restart_operator();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = env
        .dynamic("Certificate")
        .get("ray-head-cert-raycluster-mtls")
        .await
        .unwrap();
    assert_eq!(
        after.metadata.generation, head_cert.metadata.generation,
        "head certificate rewritten"
    );
    assert_eq!(ip_addresses(&after), ip_addresses(&head_cert));

    // Deleting the cluster takes the PKI and the Secrets with it (garbage collection).
    env.clusters().delete(CLUSTER, &DeleteParams::default()).await.unwrap();
    let clusters = env.clusters();
    wait_for("cluster gone", || common::gone(&clusters, CLUSTER)).await;
    let secrets = env.secrets();
    for secret in [
        "ray-head-secret-raycluster-mtls".to_owned(),
        "ray-worker-secret-raycluster-mtls".to_owned(),
        format!("raycluster-mtls-ca-secret-{uid}"),
    ] {
        wait_for(&format!("{secret} gone"), || common::gone(&secrets, &secret)).await;
    }
    wait_for("certificates gone", || async {
        let left = env.dynamic("Certificate").list(&ListParams::default()).await.unwrap();
        left.items.is_empty().then_some(())
    })
    .await;
    env.finish();
}

/// With the hollow cert-manager off the test issues the certificates itself: no pod appears before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_pods_wait_for_issued_certificates() {
    let env = Env::start("mtls-wait", false, true, &[GATE_ON]).await;
    env.create_sample().await;
    let certificates = env.dynamic("Certificate");
    for name in ["ray-head-cert-raycluster-mtls", "ray-worker-cert-raycluster-mtls"] {
        wait_for(name, || async { certificates.get_opt(name).await.unwrap() }).await;
    }
    env.assert_no_pods_for(Duration::from_secs(2)).await;

    // Issue both: Secrets first (still no pods: the certificates are not Ready), then the status.
    for secret in ["ray-head-secret-raycluster-mtls", "ray-worker-secret-raycluster-mtls"] {
        let secret: Secret = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": secret, "namespace": NS},
            "data": {"tls.crt": "Y3J0", "tls.key": "a2V5", "ca.crt": "Y2E="}
        }))
        .unwrap();
        env.secrets().create(&PostParams::default(), &secret).await.unwrap();
    }
    env.assert_no_pods_for(Duration::from_secs(1)).await;
    for name in ["ray-head-cert-raycluster-mtls", "ray-worker-cert-raycluster-mtls"] {
        let cert = certificates.get(name).await.unwrap();
        let status = json!({"status": {"conditions": [{
            "type": "Ready", "status": "True", "reason": "Ready",
            "observedGeneration": cert.metadata.generation.unwrap_or(1)
        }]}});
        certificates
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
    }
    let pods = wait_for("head pod after the certificates were issued", || async {
        let pods = env.pods().await;
        pods.iter().any(|p| node_type(p) == "head").then_some(pods)
    })
    .await;
    for pod in &pods {
        assert_tls_pod(pod);
    }
    env.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_without_cert_manager_is_an_invalid_spec() {
    let env = Env::start("mtls-no-cm", true, false, &[GATE_ON]).await;
    env.create_sample().await;
    let event = wait_for("InvalidRayClusterSpec event", || env.event("InvalidRayClusterSpec")).await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.note.as_deref(),
        Some(
            "The RayCluster spec is invalid default/raycluster-mtls: tlsOptions requires cert-manager, but cert-manager is not installed"
        )
    );
    env.assert_no_pods_for(Duration::from_secs(1)).await;
    env.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_options_without_the_gate_is_an_invalid_spec() {
    let env = Env::start("mtls-no-gate", true, true, &[]).await;
    env.create_sample().await;
    let event = wait_for("InvalidRayClusterSpec event", || env.event("InvalidRayClusterSpec")).await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.note.as_deref(),
        Some(
            "The RayCluster spec is invalid default/raycluster-mtls: spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled"
        )
    );
    env.assert_no_pods_for(Duration::from_secs(1)).await;
    // Gate off: no PKI either.
    let issuers = env.dynamic("Issuer").list(&ListParams::default()).await.unwrap();
    assert!(issuers.items.is_empty());
    env.finish();
}
