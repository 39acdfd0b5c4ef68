//! The pure part of the mTLS controller: whether a pass acts on a cluster ([`decide`]), the
//! cert-manager objects a cluster needs ([`desired_objects`]), whether an existing object must be
//! updated ([`needs_update`]) and whether a Certificate is issued ([`certificate_ready`]).

use std::collections::{BTreeMap, BTreeSet};

use ray_api::RayCluster;
use ray_api::constants::{
    APPLICATION_NAME, COMPONENT_NAME, KUBERAY_CONTROLLER, KUBERNETES_APPLICATION_NAME_LABEL,
    KUBERNETES_CREATED_BY_LABEL, RAY_CLUSTER_LABEL,
};
use ray_podgen::cluster::{cluster_name, cluster_namespace, head_service_name};
use ray_podgen::names::{fqdn, tls_secret_name};
use serde_json::{Value, json};

use super::names::*;

/// What one pass does with a RayCluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing: being deleted (garbage collection removes the PKI), managed by another controller, or
    /// TLS off.
    Ignore,
    /// Create or update the PKI and report readiness.
    Reconcile,
}

/// `Reconcile`'s early returns, in KubeRay's order.
pub fn decide(cluster: &RayCluster) -> Decision {
    let external = cluster
        .spec
        .managed_by
        .as_deref()
        .is_some_and(|m| m != KUBERAY_CONTROLLER);
    if cluster.metadata.deletion_timestamp.is_some() || external || !super::tls_requested(cluster) {
        return Decision::Ignore;
    }
    Decision::Reconcile
}

/// The pod IPs the leaf certificates carry: live (not terminating, not finished) head and worker pods
/// with an IP.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodIps {
    /// IPs of the head pods.
    pub head: Vec<String>,
    /// IPs of the worker pods.
    pub worker: Vec<String>,
}

/// The two cert-manager kinds the controller manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertManagerKind {
    /// `Issuer`.
    Issuer,
    /// `Certificate`.
    Certificate,
}

impl CertManagerKind {
    /// The kind name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Issuer => ISSUER_KIND,
            Self::Certificate => CERTIFICATE_KIND,
        }
    }
}

/// What happens to an existing object that differs from the desired one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// Never updated once created (issuers and the CA: their spec is fixed by name and UID).
    CreateOnly,
    /// Updated when the labels differ or the DNS names / IP addresses differ as sets (leaf
    /// certificates: the IP list follows the pods, its order does not matter).
    SanSets,
}

/// Which leaf certificate an object is (for the `MTLSCertificatesUpdated` note).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaf {
    /// The head certificate.
    Head,
    /// The worker certificate.
    Worker,
}

impl Leaf {
    /// `head` / `worker`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Head => "head",
            Self::Worker => "worker",
        }
    }
}

/// One cert-manager object the cluster needs.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredObject {
    /// Kind.
    pub kind: CertManagerKind,
    /// Name (in the cluster's namespace).
    pub name: String,
    /// What the step is called in `Failed to reconcile mTLS <step>: <error>`.
    pub step: &'static str,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// `spec`.
    pub spec: Value,
    /// How to compare with an existing object.
    pub comparison: Comparison,
    /// Set for the head and worker certificates.
    pub leaf: Option<Leaf>,
}

/// `tlsResourceLabels`.
pub fn resource_labels(cluster: &str, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            KUBERNETES_APPLICATION_NAME_LABEL.to_owned(),
            APPLICATION_NAME.to_owned(),
        ),
        (KUBERNETES_CREATED_BY_LABEL.to_owned(), COMPONENT_NAME.to_owned()),
        (COMPONENT_LABEL.to_owned(), component.to_owned()),
        (RAY_CLUSTER_LABEL.to_owned(), cluster.to_owned()),
    ])
}

fn issuer_ref(name: String) -> Value {
    json!({"name": name, "kind": ISSUER_KIND, "group": CERT_MANAGER_GROUP})
}

/// `normalizeIPs`: non-empty, de-duplicated, `127.0.0.1` added, sorted.
pub fn normalize_ips<'a>(pod_ips: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut set: BTreeSet<&str> = pod_ips.into_iter().filter(|ip| !ip.is_empty()).collect();
    set.insert(LOOPBACK_IP);
    set.into_iter().map(str::to_owned).collect()
}

/// Head certificate DNS SANs: `localhost` and the head service FQDN, sorted and unique.
pub fn head_dns_names(cluster: &RayCluster, cluster_domain: &str) -> Vec<String> {
    let service = fqdn(&head_service_name(cluster), cluster_namespace(cluster), cluster_domain);
    let names: BTreeSet<String> = [LOCALHOST.to_owned(), service].into();
    names.into_iter().collect()
}

/// Worker certificate DNS SANs: `localhost` only (GCS reaches workers by pod IP).
pub fn worker_dns_names() -> Vec<String> {
    vec![LOCALHOST.to_owned()]
}

fn leaf_spec(secret: String, dns_names: Vec<String>, ip_addresses: &[String], ca_issuer: String) -> Value {
    json!({
        "secretName": secret,
        "duration": LEAF_DURATION,
        "renewBefore": LEAF_RENEW_BEFORE,
        "dnsNames": dns_names,
        "ipAddresses": ip_addresses,
        "usages": LEAF_USAGES,
        "issuerRef": issuer_ref(ca_issuer),
    })
}

/// The PKI of `cluster`, in creation order: self-signed Issuer, CA Certificate, CA Issuer, head and
/// worker Certificates. `cluster_domain` is the operator's `CLUSTER_DOMAIN` (empty: `cluster.local`).
pub fn desired_objects(cluster: &RayCluster, ips: &PodIps, cluster_domain: &str) -> Vec<DesiredObject> {
    let name = cluster_name(cluster);
    let uid = cluster.metadata.uid.as_deref().unwrap_or_default();
    let self_signed = prefixed(SELF_SIGNED_ISSUER_PREFIX, name);
    let ca_issuer = prefixed(CA_ISSUER_PREFIX, name);
    let ca_secret = ca_secret_name(name, uid);
    let head_ips = normalize_ips(ips.head.iter().map(String::as_str));
    let worker_ips = normalize_ips(ips.worker.iter().map(String::as_str));
    vec![
        DesiredObject {
            kind: CertManagerKind::Issuer,
            name: self_signed.clone(),
            step: "self-signed issuer",
            labels: resource_labels(name, COMPONENT_SELF_SIGNED_ISSUER),
            spec: json!({"selfSigned": {}}),
            comparison: Comparison::CreateOnly,
            leaf: None,
        },
        DesiredObject {
            kind: CertManagerKind::Certificate,
            name: prefixed(CA_CERTIFICATE_PREFIX, name),
            step: "CA certificate",
            labels: resource_labels(name, COMPONENT_CA_CERTIFICATE),
            spec: json!({
                "secretName": ca_secret,
                "isCA": true,
                "commonName": prefixed(CA_COMMON_NAME_PREFIX, name),
                "privateKey": {"algorithm": "RSA", "size": CA_KEY_SIZE},
                "duration": CA_DURATION,
                "renewBefore": CA_RENEW_BEFORE,
                "usages": CA_USAGES,
                "issuerRef": issuer_ref(self_signed),
            }),
            comparison: Comparison::CreateOnly,
            leaf: None,
        },
        DesiredObject {
            kind: CertManagerKind::Issuer,
            name: ca_issuer.clone(),
            step: "CA issuer",
            labels: resource_labels(name, COMPONENT_CA_ISSUER),
            spec: json!({"ca": {"secretName": ca_secret}}),
            comparison: Comparison::CreateOnly,
            leaf: None,
        },
        DesiredObject {
            kind: CertManagerKind::Certificate,
            name: leaf_certificate_name(name, true),
            step: "head certificate",
            labels: resource_labels(name, COMPONENT_HEAD_CERTIFICATE),
            spec: leaf_spec(
                tls_secret_name(name, true),
                head_dns_names(cluster, cluster_domain),
                &head_ips,
                ca_issuer.clone(),
            ),
            comparison: Comparison::SanSets,
            leaf: Some(Leaf::Head),
        },
        DesiredObject {
            kind: CertManagerKind::Certificate,
            name: leaf_certificate_name(name, false),
            step: "worker certificate",
            labels: resource_labels(name, COMPONENT_WORKER_CERTIFICATE),
            spec: leaf_spec(tls_secret_name(name, false), worker_dns_names(), &worker_ips, ca_issuer),
            comparison: Comparison::SanSets,
            leaf: Some(Leaf::Worker),
        },
    ]
}

fn string_set(spec: &Value, field: &str) -> BTreeSet<String> {
    spec.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Whether an existing object (its labels and `spec`) must be updated to `desired`.
pub fn needs_update(desired: &DesiredObject, labels: &BTreeMap<String, String>, spec: &Value) -> bool {
    match desired.comparison {
        Comparison::CreateOnly => false,
        Comparison::SanSets => {
            labels != &desired.labels
                || ["dnsNames", "ipAddresses"]
                    .iter()
                    .any(|field| string_set(spec, field) != string_set(&desired.spec, field))
        }
    }
}

fn ready_condition(certificate: &Value) -> Option<&Value> {
    certificate
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
}

/// `isCertificateReady`: `Ready=True` observed at the Certificate's current generation, so a certificate
/// whose SANs were just changed counts as not ready until cert-manager re-issued it.
pub fn certificate_ready(certificate: &Value) -> bool {
    let Some(condition) = ready_condition(certificate) else {
        return false;
    };
    let observed = condition.get("observedGeneration").and_then(Value::as_i64).unwrap_or(0);
    let generation = certificate
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    condition.get("status").and_then(Value::as_str) == Some("True") && observed == generation
}

/// The `%v` rendering of a Go string slice (`[a b]`), as KubeRay's event notes show IP lists.
pub fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> RayCluster {
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "tls", "namespace": "ns", "uid": "u-1"},
            "spec": {
                "tlsOptions": {"enabled": true},
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head"}]}}},
                "workerGroupSpecs": [{"groupName": "small", "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "w"}]}}}]
            }
        }))
        .unwrap()
    }

    fn ips(head: &[&str], worker: &[&str]) -> PodIps {
        PodIps {
            head: head.iter().map(|s| (*s).to_owned()).collect(),
            worker: worker.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn decide_skips_deleted_external_and_plain_clusters() {
        let mut c = cluster();
        assert_eq!(decide(&c), Decision::Reconcile);
        c.spec.managed_by = Some("example.com/other".to_owned());
        assert_eq!(decide(&c), Decision::Ignore);
        c.spec.managed_by = Some(KUBERAY_CONTROLLER.to_owned());
        assert_eq!(decide(&c), Decision::Reconcile);
        c.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        assert_eq!(decide(&c), Decision::Ignore);
        let mut c = cluster();
        c.spec.tls_options = None;
        assert_eq!(decide(&c), Decision::Ignore);
    }

    #[test]
    fn pki_objects_names_and_specs() {
        let objects = desired_objects(&cluster(), &ips(&["10.0.0.9"], &["10.0.0.9", "", "10.0.0.2"]), "");
        let names: Vec<&str> = objects.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ray-selfsigned-issuer-tls",
                "ray-ca-certificate-tls",
                "ray-ca-issuer-tls",
                "ray-head-cert-tls",
                "ray-worker-cert-tls"
            ]
        );
        let ca = &objects[1].spec;
        assert_eq!(ca["isCA"], true);
        assert_eq!(ca["commonName"], "ray-ca-tls");
        assert_eq!(ca["privateKey"], json!({"algorithm": "RSA", "size": 4096}));
        assert_eq!(ca["secretName"], "tls-ca-secret-u-1");
        assert_eq!(ca["duration"], "87600h0m0s");
        assert_eq!(ca["renewBefore"], "720h0m0s");
        assert_eq!(ca["usages"], json!(["cert sign", "crl sign"]));
        assert_eq!(ca["issuerRef"]["name"], "ray-selfsigned-issuer-tls");
        assert_eq!(objects[2].spec, json!({"ca": {"secretName": "tls-ca-secret-u-1"}}));
        let head = &objects[3].spec;
        assert_eq!(head["secretName"], "ray-head-secret-tls");
        assert_eq!(head["ipAddresses"], json!(["10.0.0.9", "127.0.0.1"]));
        assert_eq!(
            head["dnsNames"],
            json!(["localhost", "tls-head-svc.ns.svc.cluster.local"])
        );
        assert_eq!(head["duration"], "2160h0m0s");
        assert_eq!(head["renewBefore"], "360h0m0s");
        assert_eq!(
            head["usages"],
            json!(["digital signature", "key encipherment", "server auth", "client auth"])
        );
        assert_eq!(
            head["issuerRef"],
            json!({"name": "ray-ca-issuer-tls", "kind": "Issuer", "group": "cert-manager.io"})
        );
        let worker = &objects[4].spec;
        assert_eq!(worker["secretName"], "ray-worker-secret-tls");
        assert_eq!(worker["dnsNames"], json!(["localhost"]));
        assert_eq!(worker["ipAddresses"], json!(["10.0.0.2", "10.0.0.9", "127.0.0.1"]));
        assert_eq!(objects[4].labels[COMPONENT_LABEL], "worker-certificate");
        assert_eq!(objects[0].labels[RAY_CLUSTER_LABEL], "tls");
        assert_eq!(objects[0].labels[KUBERNETES_CREATED_BY_LABEL], "kuberay-operator");
        assert_eq!(objects[0].labels[KUBERNETES_APPLICATION_NAME_LABEL], "kuberay");
        // CLUSTER_DOMAIN reaches the head FQDN.
        let custom = desired_objects(&cluster(), &PodIps::default(), "example.org");
        assert_eq!(custom[3].spec["dnsNames"][1], "tls-head-svc.ns.svc.example.org");
    }

    #[test]
    fn leaf_update_compares_sans_as_sets() {
        let objects = desired_objects(&cluster(), &ips(&["10.0.0.2"], &[]), "");
        let head = &objects[3];
        let mut spec = head.spec.clone();
        spec["ipAddresses"] = json!(["127.0.0.1", "10.0.0.2"]);
        spec["dnsNames"].as_array_mut().unwrap().reverse();
        assert!(!needs_update(head, &head.labels, &spec));
        spec["ipAddresses"] = json!(["127.0.0.1"]);
        assert!(needs_update(head, &head.labels, &spec));
        let mut labels = head.labels.clone();
        labels.remove(COMPONENT_LABEL);
        assert!(needs_update(head, &labels, &head.spec));
        // Issuers and the CA are never updated.
        let issuer = &objects[0];
        assert!(!needs_update(
            issuer,
            &BTreeMap::new(),
            &json!({"ca": {"secretName": "x"}})
        ));
    }

    #[test]
    fn readiness_needs_ready_true_at_the_current_generation() {
        let cert = |status: &str, observed: i64| {
            json!({"metadata": {"generation": 2}, "status": {"conditions": [
                {"type": "Issuing", "status": "False"},
                {"type": "Ready", "status": status, "observedGeneration": observed}
            ]}})
        };
        assert!(!certificate_ready(&cert("True", 1)));
        assert!(certificate_ready(&cert("True", 2)));
        assert!(!certificate_ready(&cert("False", 2)));
        assert!(!certificate_ready(
            &json!({"metadata": {"generation": 1}, "status": {}})
        ));
        // No observedGeneration reads as 0, never the current generation.
        let unobserved = json!({"metadata": {"generation": 1},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(!certificate_ready(&unobserved));
    }

    #[test]
    fn ips_are_normalized() {
        assert_eq!(normalize_ips([]), ["127.0.0.1"]);
        assert_eq!(normalize_ips(["127.0.0.1", "10.1.0.1"]), ["10.1.0.1", "127.0.0.1"]);
        assert_eq!(go_list(&normalize_ips(["10.1.0.1"])), "[10.1.0.1 127.0.0.1]");
    }
}
