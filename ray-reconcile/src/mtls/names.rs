//! Names, labels, event reasons and intervals of the mTLS path (KubeRay `utils/constant.go`).

use std::time::Duration;

/// API group and version of cert-manager's kinds.
pub const CERT_MANAGER_API_VERSION: &str = "cert-manager.io/v1";
/// cert-manager's API group.
pub const CERT_MANAGER_GROUP: &str = "cert-manager.io";
/// Kind of cert-manager's namespaced issuer.
pub const ISSUER_KIND: &str = "Issuer";
/// Kind of cert-manager's certificate.
pub const CERTIFICATE_KIND: &str = "Certificate";

/// Prefix of the self-signed Issuer (`<prefix>-<cluster>`).
pub const SELF_SIGNED_ISSUER_PREFIX: &str = "ray-selfsigned-issuer";
/// Prefix of the CA Certificate.
pub const CA_CERTIFICATE_PREFIX: &str = "ray-ca-certificate";
/// Prefix of the CA Issuer.
pub const CA_ISSUER_PREFIX: &str = "ray-ca-issuer";
/// Prefix of the head leaf Certificate.
pub const HEAD_CERT_PREFIX: &str = "ray-head-cert";
/// Prefix of the worker leaf Certificate.
pub const WORKER_CERT_PREFIX: &str = "ray-worker-cert";
/// Middle part of the CA Secret name (`<cluster>-ca-secret-<uid>`).
pub const CA_SECRET_PREFIX: &str = "ca-secret";

/// Label naming the PKI piece (`app.kubernetes.io/component`).
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
/// Component of the self-signed Issuer.
pub const COMPONENT_SELF_SIGNED_ISSUER: &str = "selfsigned-issuer";
/// Component of the CA Certificate.
pub const COMPONENT_CA_CERTIFICATE: &str = "ca-certificate";
/// Component of the CA Issuer.
pub const COMPONENT_CA_ISSUER: &str = "ca-issuer";
/// Component of the head Certificate.
pub const COMPONENT_HEAD_CERTIFICATE: &str = "head-certificate";
/// Component of the worker Certificate.
pub const COMPONENT_WORKER_CERTIFICATE: &str = "worker-certificate";

/// Common name of the CA (`ray-ca-<cluster>`).
pub const CA_COMMON_NAME_PREFIX: &str = "ray-ca";
/// RSA key size of the CA.
pub const CA_KEY_SIZE: u32 = 4096;
/// CA validity (3650 days).
pub const CA_DURATION: &str = "87600h0m0s";
/// CA renewal ahead of expiry (30 days).
pub const CA_RENEW_BEFORE: &str = "720h0m0s";
/// Leaf validity (90 days).
pub const LEAF_DURATION: &str = "2160h0m0s";
/// Leaf renewal ahead of expiry (15 days).
pub const LEAF_RENEW_BEFORE: &str = "360h0m0s";
/// Key usages of the CA.
pub const CA_USAGES: [&str; 2] = ["cert sign", "crl sign"];
/// Key usages of the leaf certificates.
pub const LEAF_USAGES: [&str; 4] = ["digital signature", "key encipherment", "server auth", "client auth"];
/// Always an IP SAN of both leaf certificates.
pub const LOOPBACK_IP: &str = "127.0.0.1";
/// The DNS SAN every leaf certificate carries.
pub const LOCALHOST: &str = "localhost";
/// An expiry closer than this gets a warning event (Ray does not reload certificates).
pub const EXPIRY_WARNING: Duration = Duration::from_secs(24 * 3600);

/// Requeue after a failure or while certificates are being issued.
pub const DEFAULT_REQUEUE: Duration = Duration::from_secs(30);
/// Requeue of a cluster whose PKI is ready (periodic check).
pub const PERIODIC_CHECK: Duration = Duration::from_secs(60);

/// Keys a TLS Secret must hold before pods may mount it.
pub const TLS_SECRET_KEYS: [&str; 3] = ["tls.crt", "tls.key", "ca.crt"];

/// Event reasons of the mTLS controller.
pub mod reason {
    /// The CA, head and worker certificates are issued.
    pub const MTLS_PKI_READY: &str = "MTLSPKIReady";
    /// cert-manager has not issued the leaf certificates yet.
    pub const MTLS_CERTS_NOT_READY: &str = "MTLSCertsNotReady";
    /// Creating or updating a PKI object failed.
    pub const MTLS_FAILED_TO_RECONCILE: &str = "MTLSFailedToReconcile";
    /// A leaf certificate's SANs were updated.
    pub const MTLS_CERTIFICATES_UPDATED: &str = "MTLSCertificatesUpdated";
    /// A certificate expires within a day.
    pub const MTLS_CERTIFICATE_EXPIRING_SOON: &str = "MTLSCertificateExpiringSoon";
}

/// `<prefix>-<cluster>`.
pub fn prefixed(prefix: &str, cluster: &str) -> String {
    format!("{prefix}-{cluster}")
}

/// The head (`head == true`) or worker leaf Certificate name.
pub fn leaf_certificate_name(cluster: &str, head: bool) -> String {
    prefixed(if head { HEAD_CERT_PREFIX } else { WORKER_CERT_PREFIX }, cluster)
}

/// The CA Secret (`GetCASecretName`: `<cluster>-ca-secret-<uid>`; unique per cluster incarnation so a
/// re-created cluster never trusts its predecessor's CA).
pub fn ca_secret_name(cluster: &str, uid: &str) -> String {
    format!("{cluster}-{CA_SECRET_PREFIX}-{uid}")
}
