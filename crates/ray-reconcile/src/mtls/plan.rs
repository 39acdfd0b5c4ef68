//! The pure part of the mTLS controller: what a pass does with a cluster ([`decide`]), the
//! cert-manager objects a cluster needs ([`desired_objects`]), whether an existing object must be
//! updated ([`needs_update`]) and whether a Certificate is issued ([`certificate_ready`]).

use std::collections::{BTreeMap, BTreeSet};

use ray_api::RayCluster;
use ray_api::constants::{
    APPLICATION_NAME, COMPONENT_NAME, KUBERNETES_APPLICATION_NAME_LABEL, KUBERNETES_CREATED_BY_LABEL, RAY_CLUSTER_LABEL,
};
use ray_podgen::cluster::{cluster_name, cluster_namespace, head_service_name};
use ray_podgen::names::{headless_service_name, tls_secret_name};
use serde_json::{Value, json};

use super::names::*;

/// What one pass does with a RayCluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing (TLS off, or being deleted without our finalizer).
    Ignore,
    /// Being deleted: delete these Secrets, then drop the finalizer.
    Cleanup {
        /// Secrets cert-manager wrote for the cluster.
        secrets: Vec<String>,
    },
    /// Add the finalizer first (the next pass does the PKI).
    AddFinalizer,
    /// Create or update the PKI and report readiness.
    Reconcile,
}

/// `Reconcile`'s branches, in KubeRay's order: deletion first (TLS may have been switched off before
/// the delete), then the TLS switch, then the finalizer.
pub fn decide(cluster: &RayCluster) -> Decision {
    if cluster.metadata.deletion_timestamp.is_some() {
        if !super::has_mtls_finalizer(cluster) {
            return Decision::Ignore;
        }
        return Decision::Cleanup {
            secrets: generated_secrets(cluster),
        };
    }
    if !super::tls_requested(cluster) {
        return Decision::Ignore;
    }
    if !super::has_mtls_finalizer(cluster) {
        return Decision::AddFinalizer;
    }
    Decision::Reconcile
}

/// The Secrets the auto-generated PKI writes: CA, head, worker.
pub fn generated_secrets(cluster: &RayCluster) -> Vec<String> {
    let name = cluster_name(cluster);
    vec![
        ca_secret_name(name, cluster.metadata.uid.as_deref().unwrap_or_default()),
        tls_secret_name(name, true),
        tls_secret_name(name, false),
    ]
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

/// How an existing object is compared with the desired one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// Labels and the whole spec must be equal (issuers, CA).
    WholeSpec,
    /// Labels equal, DNS names and IP addresses equal as sets (leaf certificates: the IP list
    /// changes with the pods, its order does not matter).
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

/// A service's short, namespace and fully qualified DNS names.
fn service_names(service: &str, namespace: &str) -> [String; 3] {
    [
        service.to_owned(),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.{SAN_CLUSTER_DOMAIN}"),
    ]
}

/// Head certificate DNS SANs: the head service names and `localhost`, sorted and unique.
pub fn head_dns_names(cluster: &RayCluster) -> Vec<String> {
    let mut names: BTreeSet<String> = service_names(&head_service_name(cluster), cluster_namespace(cluster)).into();
    names.insert(LOCALHOST.to_owned());
    names.into_iter().collect()
}

/// Worker certificate DNS SANs: the headless service, `localhost`, every group's `<cluster>-<group>`
/// names and the wildcards for per-pod names, sorted and unique.
pub fn worker_dns_names(cluster: &RayCluster) -> Vec<String> {
    let (name, namespace) = (cluster_name(cluster), cluster_namespace(cluster));
    let headless = headless_service_name(name);
    let mut names: BTreeSet<String> = service_names(&headless, namespace).into();
    names.insert(LOCALHOST.to_owned());
    for group in cluster.spec.worker_group_specs.iter().flatten() {
        names.extend(service_names(&format!("{name}-{}", group.group_name), namespace));
    }
    names.insert(format!("*.{headless}.{namespace}.svc"));
    names.insert(format!("*.{headless}.{namespace}.svc.{SAN_CLUSTER_DOMAIN}"));
    names.insert(format!("*-worker-*.{namespace}.svc"));
    names.insert(format!("*-worker-*.{namespace}.svc.{SAN_CLUSTER_DOMAIN}"));
    names.into_iter().collect()
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
/// worker Certificates. `pod_ips` are the IPs of the cluster's pods (any order, empties ignored).
pub fn desired_objects<'a>(cluster: &RayCluster, pod_ips: impl IntoIterator<Item = &'a str>) -> Vec<DesiredObject> {
    let name = cluster_name(cluster);
    let uid = cluster.metadata.uid.as_deref().unwrap_or_default();
    let self_signed = prefixed(SELF_SIGNED_ISSUER_PREFIX, name);
    let ca_issuer = prefixed(CA_ISSUER_PREFIX, name);
    let ca_secret = ca_secret_name(name, uid);
    let ips = normalize_ips(pod_ips);
    vec![
        DesiredObject {
            kind: CertManagerKind::Issuer,
            name: self_signed.clone(),
            step: "self-signed issuer",
            labels: resource_labels(name, COMPONENT_SELF_SIGNED_ISSUER),
            spec: json!({"selfSigned": {}}),
            comparison: Comparison::WholeSpec,
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
            comparison: Comparison::WholeSpec,
            leaf: None,
        },
        DesiredObject {
            kind: CertManagerKind::Issuer,
            name: ca_issuer.clone(),
            step: "CA issuer",
            labels: resource_labels(name, COMPONENT_CA_ISSUER),
            spec: json!({"ca": {"secretName": ca_secret}}),
            comparison: Comparison::WholeSpec,
            leaf: None,
        },
        DesiredObject {
            kind: CertManagerKind::Certificate,
            name: leaf_certificate_name(name, true),
            step: "head certificate",
            labels: resource_labels(name, COMPONENT_HEAD_CERTIFICATE),
            spec: leaf_spec(
                tls_secret_name(name, true),
                head_dns_names(cluster),
                &ips,
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
            spec: leaf_spec(tls_secret_name(name, false), worker_dns_names(cluster), &ips, ca_issuer),
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
    if labels != &desired.labels {
        return true;
    }
    match desired.comparison {
        Comparison::WholeSpec => spec != &desired.spec,
        Comparison::SanSets => ["dnsNames", "ipAddresses"]
            .iter()
            .any(|field| string_set(spec, field) != string_set(&desired.spec, field)),
    }
}

fn ready_condition(certificate: &Value) -> Option<&Value> {
    certificate
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
}

/// `isCertificateReady`: the `Ready` condition is `True`.
pub fn certificate_ready(certificate: &Value) -> bool {
    ready_condition(certificate)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

/// Ready for the spec as it is now: `Ready=True` and the condition's `observedGeneration` (when
/// cert-manager reports one) equals `metadata.generation`, so a certificate whose SANs were just
/// changed counts as not ready until it is re-issued.
pub fn certificate_ready_at_generation(certificate: &Value) -> bool {
    let Some(condition) = ready_condition(certificate) else {
        return false;
    };
    let ready = condition.get("status").and_then(Value::as_str) == Some("True");
    let observed = condition.get("observedGeneration").and_then(Value::as_i64);
    let generation = certificate.pointer("/metadata/generation").and_then(Value::as_i64);
    ready
        && match (observed, generation) {
            (Some(observed), Some(generation)) => observed == generation,
            _ => true,
        }
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

    #[test]
    fn decide_follows_kuberay_order() {
        let mut c = cluster();
        assert_eq!(decide(&c), Decision::AddFinalizer);
        c.metadata.finalizers = Some(vec![MTLS_CLEANUP_FINALIZER.to_owned()]);
        assert_eq!(decide(&c), Decision::Reconcile);
        c.spec.tls_options = None;
        assert_eq!(decide(&c), Decision::Ignore);
        c.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        // TLS switched off before the delete: the finalizer still gets its cleanup.
        assert_eq!(
            decide(&c),
            Decision::Cleanup {
                secrets: vec![
                    "tls-ca-secret-u-1".to_owned(),
                    "ray-head-secret-tls".to_owned(),
                    "ray-worker-secret-tls".to_owned()
                ]
            }
        );
        c.metadata.finalizers = None;
        assert_eq!(decide(&c), Decision::Ignore);
    }

    #[test]
    fn pki_objects_names_and_specs() {
        let objects = desired_objects(&cluster(), ["10.0.0.9", "", "10.0.0.2", "10.0.0.9"]);
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
        assert_eq!(head["ipAddresses"], json!(["10.0.0.2", "10.0.0.9", "127.0.0.1"]));
        assert_eq!(
            head["dnsNames"],
            json!([
                "localhost",
                "tls-head-svc",
                "tls-head-svc.ns.svc",
                "tls-head-svc.ns.svc.cluster.local"
            ])
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
        assert_eq!(
            worker["dnsNames"],
            json!([
                "*-worker-*.ns.svc",
                "*-worker-*.ns.svc.cluster.local",
                "*.tls-headless.ns.svc",
                "*.tls-headless.ns.svc.cluster.local",
                "localhost",
                "tls-headless",
                "tls-headless.ns.svc",
                "tls-headless.ns.svc.cluster.local",
                "tls-small",
                "tls-small.ns.svc",
                "tls-small.ns.svc.cluster.local"
            ])
        );
        assert_eq!(objects[4].labels[COMPONENT_LABEL], "worker-certificate");
        assert_eq!(objects[0].labels[RAY_CLUSTER_LABEL], "tls");
        assert_eq!(objects[0].labels[KUBERNETES_CREATED_BY_LABEL], "kuberay-operator");
    }

    #[test]
    fn leaf_update_compares_sans_as_sets() {
        let objects = desired_objects(&cluster(), ["10.0.0.2"]);
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
        // Issuers compare the whole spec.
        let issuer = &objects[0];
        assert!(!needs_update(issuer, &issuer.labels, &json!({"selfSigned": {}})));
        assert!(needs_update(
            issuer,
            &issuer.labels,
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
        assert!(certificate_ready(&cert("True", 1)));
        assert!(!certificate_ready_at_generation(&cert("True", 1)));
        assert!(certificate_ready_at_generation(&cert("True", 2)));
        assert!(!certificate_ready_at_generation(&cert("False", 2)));
        assert!(!certificate_ready(&json!({"status": {}})));
    }

    #[test]
    fn ips_are_normalized() {
        assert_eq!(normalize_ips([]), ["127.0.0.1"]);
        assert_eq!(normalize_ips(["127.0.0.1", "10.1.0.1"]), ["10.1.0.1", "127.0.0.1"]);
        assert_eq!(go_list(&normalize_ips(["10.1.0.1"])), "[10.1.0.1 127.0.0.1]");
    }
}
