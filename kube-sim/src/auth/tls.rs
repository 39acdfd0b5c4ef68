//! The serving CA and certificate generated at start, and TLS on accepted connections.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::server::TlsStream;

use super::AuthError;

/// The names and addresses of the serving certificate: kube-apiserver's in-cluster names and loopback.
pub const SERVING_NAMES: [&str; 7] = [
    "127.0.0.1",
    "::1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// Common name of the generated CA (kubeadm's).
const CA_COMMON_NAME: &str = "kubernetes";
/// Common name of the serving certificate (kubeadm's).
const SERVING_COMMON_NAME: &str = "kube-apiserver";

/// What Go's HTTP server (and so kube-apiserver) answers a plain-http request on its TLS port.
pub const PLAIN_HTTP_ON_TLS_PORT: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// The first byte of a TLS record carrying a handshake.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// The generated CA and the acceptor serving its certificate.
pub struct TlsMaterial {
    ca_pem: String,
    ca_der: Vec<u8>,
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial").finish_non_exhaustive()
    }
}

impl TlsMaterial {
    /// Generates a CA and a serving certificate for [`SERVING_NAMES`] and `extra_names` signed by it.
    pub fn generate(extra_names: &[String]) -> Result<Self, AuthError> {
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, CA_COMMON_NAME);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
        let key = KeyPair::generate()?;
        let mut names = SERVING_NAMES.map(str::to_owned).to_vec();
        names.extend(extra_names.iter().cloned());
        let mut params = CertificateParams::new(names)?;
        params.distinguished_name.push(DnType::CommonName, SERVING_COMMON_NAME);
        let cert = params.signed_by(&key, &ca)?;
        let chain = vec![cert.der().clone(), ca.der().clone()];
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key_der)?;
        // The server speaks HTTP/1.1 only; clients offering h2 fall back to it.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            ca_pem: ca.pem(),
            ca_der: CertificateDer::as_ref(ca.der()).to_vec(),
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// The CA certificate (PEM), as the kubeconfig's `certificate-authority-data` carries it.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA certificate (DER).
    pub fn ca_der(&self) -> &[u8] {
        &self.ca_der
    }

    /// Completes the TLS handshake of an accepted connection. A client speaking plain http gets Go's
    /// `400 Bad Request` line and the connection is closed; a failed handshake is dropped.
    pub async fn accept(&self, mut stream: TcpStream) -> Option<TlsStream<TcpStream>> {
        let mut first = [0u8; 1];
        let peeked = stream.peek(&mut first).await.ok()?;
        if peeked == 0 {
            return None;
        }
        if first[0] != TLS_HANDSHAKE_RECORD {
            let _ = stream.write_all(PLAIN_HTTP_ON_TLS_PORT).await;
            let _ = stream.shutdown().await;
            return None;
        }
        match self.acceptor.accept(stream).await {
            Ok(tls) => Some(tls),
            Err(e) => {
                tracing::debug!(error = %e, "TLS handshake failed");
                None
            }
        }
    }
}
