//! End to end: the operator with `ENABLE_WEBHOOKS=true` serves KubeRay's validating webhooks over TLS (a
//! self-signed CA made with rcgen), kube-sim sends RayCluster/RayJob/RayService writes to them through a
//! ValidatingWebhookConfiguration (from `kuberay-operator render --webhook-config`), and the client sees
//! KubeRay's rejections — through kube and through the real `kubectl`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use ray_api::constants::{
    RAY_CLUSTER_WEBHOOK_NAME, RAY_CLUSTER_WEBHOOK_PATH, RAY_JOB_WEBHOOK_NAME, RAY_JOB_WEBHOOK_PATH,
    RAY_SERVICE_WEBHOOK_NAME, RAY_SERVICE_WEBHOOK_PATH, VALIDATING_WEBHOOK_CONFIGURATION_NAME,
};
use ray_api::{RayCluster, RayJob};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use serde_json::{Value, json};

use crate::common;
use common::{Operator, SimEnv, free_port};

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(60);

/// A CA and a serving certificate for `localhost` / `127.0.0.1` signed by it: (CA PEM, cert PEM, key PEM).
fn serving_certificate() -> (String, String, String) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kuberay e2e webhook CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

/// KubeRay's ValidatingWebhookConfiguration with `clientConfig.url`s on `127.0.0.1:port` instead of the
/// in-cluster Service, as `kuberay-operator render --webhook-config` prints it.
fn webhook_configuration(port: u16, ca_file: &Path) -> DynamicObject {
    let out = Command::new(common::operator_binary())
        .args(["render", "--webhook-config", "--webhook-url"])
        .arg(format!("https://127.0.0.1:{port}"))
        .arg("--webhook-ca-bundle")
        .arg(ca_file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    let webhooks = config["webhooks"].as_array().unwrap();
    let expected = [
        (RAY_CLUSTER_WEBHOOK_NAME, RAY_CLUSTER_WEBHOOK_PATH),
        (RAY_JOB_WEBHOOK_NAME, RAY_JOB_WEBHOOK_PATH),
        (RAY_SERVICE_WEBHOOK_NAME, RAY_SERVICE_WEBHOOK_PATH),
    ];
    assert_eq!(webhooks.len(), expected.len());
    for (webhook, (name, path)) in webhooks.iter().zip(expected) {
        assert_eq!(webhook["name"], name);
        assert_eq!(
            webhook["clientConfig"]["url"],
            format!("https://127.0.0.1:{port}{path}")
        );
    }
    assert_eq!(config["metadata"]["name"], VALIDATING_WEBHOOK_CONFIGURATION_NAME);
    serde_json::from_value(config).unwrap()
}

/// kube-sim, the operator with its webhooks on a free port, and the configuration pointing at them.
struct WebhookEnv {
    env: SimEnv,
    operator: Operator,
}

async fn start(tag: &str) -> WebhookEnv {
    let env = SimEnv::start(tag, kube_sim::SimConfig::default()).await;
    let (ca_pem, cert_pem, key_pem) = serving_certificate();
    let cert_dir = env.dir.join("serving-certs");
    std::fs::create_dir_all(&cert_dir).unwrap();
    std::fs::write(cert_dir.join("tls.crt"), cert_pem).unwrap();
    std::fs::write(cert_dir.join("tls.key"), key_pem).unwrap();
    let ca_file = env.dir.join("ca.crt");
    std::fs::write(&ca_file, ca_pem).unwrap();
    let port = free_port();
    let operator = Operator::start_with_env(
        &env.dir,
        &env.kubeconfig,
        NS,
        free_port(),
        free_port(),
        &[
            "--webhook-port",
            &port.to_string(),
            "--webhook-cert-dir",
            cert_dir.to_str().unwrap(),
        ],
        &[("ENABLE_WEBHOOKS", "true")],
    );
    common::wait_for("the webhook server", WAIT, Duration::from_millis(100), || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    let configs = ApiResource {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "admissionregistration.k8s.io/v1".into(),
        kind: "ValidatingWebhookConfiguration".into(),
        plural: "validatingwebhookconfigurations".into(),
    };
    Api::<DynamicObject>::all_with(env.client.clone(), &configs)
        .create(&PostParams::default(), &webhook_configuration(port, &ca_file))
        .await
        .unwrap();
    WebhookEnv { env, operator }
}

fn sample_cluster() -> RayCluster {
    common::sample_document("ray-cluster.sample.yaml", "RayCluster")
}

/// The sample with its one worker group twice (same name).
fn duplicate_groups(name: &str) -> RayCluster {
    let mut cluster = sample_cluster();
    cluster.metadata.name = Some(name.to_owned());
    let groups = cluster.spec.worker_group_specs.as_mut().unwrap();
    groups.push(groups[0].clone());
    cluster
}

fn rejection(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(status) => *status,
        other => panic!("expected the API server to reject the request, got {other}"),
    }
}

fn duplicate_message(name: &str) -> String {
    format!(
        r#"admission webhook "vraycluster.kb.io" denied the request: RayCluster.ray.io "{name}" is invalid: spec.workerGroupSpecs[1]: Invalid value: {{"groupName":"workergroup"}}: worker group names must be unique"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p65_webhooks_reject_invalid_objects_and_admit_valid_ones() {
    let WebhookEnv {
        env,
        operator: _operator,
    } = start("webhook").await;
    let clusters: Api<RayCluster> = Api::namespaced(env.client.clone(), NS);

    // Duplicate worker group names: rejected at create, with KubeRay's NewInvalid relayed by the API server.
    let status = rejection(
        clusters
            .create(&PostParams::default(), &duplicate_groups("raycluster-dup"))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
    assert_eq!(status.message, duplicate_message("raycluster-dup"));
    let details = status.details.unwrap();
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("ray.io", "RayCluster")
    );
    assert_eq!(details.causes[0].field, "spec.workerGroupSpecs[1]");
    assert!(clusters.get_opt("raycluster-dup").await.unwrap().is_none());

    // A 54-character name (rule 6.1).
    let long = format!("raycluster-{}", "a".repeat(43));
    assert_eq!(long.len(), 54);
    let mut cluster = sample_cluster();
    cluster.metadata.name = Some(long.clone());
    let status = rejection(clusters.create(&PostParams::default(), &cluster).await.unwrap_err());
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        format!(
            r#"admission webhook "vraycluster.kb.io" denied the request: RayCluster.ray.io "{long}" is invalid: metadata.name: Invalid value: "{long}": RayCluster name should be no more than 53 characters"#
        )
    );

    // The sample is admitted and reconciled: its head pod appears.
    clusters
        .create(&PostParams::default(), &sample_cluster())
        .await
        .unwrap();
    common::wait_for("the sample's head pod", WAIT, Duration::from_millis(100), || async {
        let pods = common::live_cluster_pods(&env.client, NS, "raycluster-kuberay").await;
        pods.iter().any(|p| common::node_type(p) == "head").then_some(())
    })
    .await;

    // An update that introduces a duplicate is rejected; the stored spec keeps one group.
    let groups = clusters
        .get("raycluster-kuberay")
        .await
        .unwrap()
        .spec
        .worker_group_specs
        .unwrap();
    let twice = serde_json::to_value([groups[0].clone(), groups[0].clone()]).unwrap();
    let status = rejection(
        clusters
            .patch(
                "raycluster-kuberay",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"workerGroupSpecs": twice}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(status.message, duplicate_message("raycluster-kuberay"));
    let stored = clusters.get("raycluster-kuberay").await.unwrap();
    assert_eq!(stored.spec.worker_group_specs.unwrap().len(), 1);
    // A valid update still goes through (status writes of the operator are not sent to the webhook at all).
    clusters
        .patch(
            "raycluster-kuberay",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "ml"}}})),
        )
        .await
        .unwrap();

    // RayJob: a 48-character name.
    let jobs: Api<RayJob> = Api::namespaced(env.client.clone(), NS);
    let mut job: RayJob = common::sample_document("ray-job.sample.yaml", "RayJob");
    let name = format!("rayjob-{}", "j".repeat(41));
    assert_eq!(name.len(), 48);
    job.metadata.name = Some(name.clone());
    let status = rejection(jobs.create(&PostParams::default(), &job).await.unwrap_err());
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        format!(
            r#"admission webhook "vrayjob.kb.io" denied the request: RayJob.ray.io "{name}" is invalid: metadata.name: Invalid value: "{name}": The RayJob metadata is invalid: RayJob name should be no more than 47 characters"#
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_certificate_stops_the_operator() {
    let env = SimEnv::start("webhook-nocert", kube_sim::SimConfig::default()).await;
    let missing = env.dir.join("no-such-dir");
    let mut operator = Operator::start_with_env(
        &env.dir,
        &env.kubeconfig,
        NS,
        free_port(),
        free_port(),
        &[
            "--webhook-port",
            &free_port().to_string(),
            "--webhook-cert-dir",
            missing.to_str().unwrap(),
        ],
        &[("ENABLE_WEBHOOKS", "true")],
    );
    let status = operator.wait_exit(WAIT);
    assert!(!status.success(), "{status:?}");
    let log = std::fs::read_to_string(&operator.log).unwrap();
    let path = missing.join("tls.crt");
    assert!(log.contains(&path.display().to_string()), "{log}");
}

/// `kubectl apply -f <file>` with kube-sim's kubeconfig; (success, stdout + stderr).
fn kubectl_apply(dir: &Path, kubeconfig: &Path, file: &Path) -> Option<(bool, String)> {
    let out = match Command::new("kubectl")
        .args(["apply", "-f"])
        .arg(file)
        .arg("--request-timeout=20s")
        .env("KUBECONFIG", kubeconfig)
        // A private HOME keeps kubectl's discovery cache out of the user's.
        .env("HOME", dir)
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("running kubectl: {e}"),
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("$ kubectl apply -f {}\n{text}", file.display());
    Some((out.status.success(), text))
}

fn write_yaml(dir: &Path, file: &str, value: &Value) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_is_rejected_by_the_webhook() {
    let WebhookEnv {
        env,
        operator: _operator,
    } = start("webhook-kubectl").await;
    let bad = write_yaml(
        &env.dir,
        "raycluster-dup.yaml",
        &serde_json::to_value(duplicate_groups("raycluster-dup")).unwrap(),
    );
    let Some((ok, text)) = kubectl_apply(&env.dir, &env.kubeconfig, &bad) else {
        eprintln!("SKIPPED: kubectl is not on PATH; the same rejection is checked through kube above");
        return;
    };
    assert!(!ok);
    // kubectl prints a 422 with field causes from the Status details (as it does for a real API server
    // relaying a webhook's NewInvalid), not the "admission webhook ... denied" message.
    assert_eq!(
        text.trim(),
        r#"The RayCluster "raycluster-dup" is invalid: spec.workerGroupSpecs[1]: Invalid value: {"groupName":"workergroup"}: worker group names must be unique"#
    );
    let good = write_yaml(
        &env.dir,
        "raycluster.yaml",
        &serde_json::to_value(sample_cluster()).unwrap(),
    );
    let (ok, text) = kubectl_apply(&env.dir, &env.kubeconfig, &good).unwrap();
    assert!(ok, "{text}");
    assert_eq!(text.trim(), "raycluster.ray.io/raycluster-kuberay created");
    assert_client_sees_it(&env.client).await;
}

async fn assert_client_sees_it(client: &Client) {
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    assert!(clusters.get_opt("raycluster-kuberay").await.unwrap().is_some());
}
