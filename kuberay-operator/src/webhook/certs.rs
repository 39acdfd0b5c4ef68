//! The webhook server's certificate: `tls.crt` and `tls.key` from the cert directory, read at start-up
//! (a missing or unreadable file is an error naming it) and read again when either file changes, as
//! controller-runtime's certwatcher does, so a rotated Secret (cert-manager) is picked up without a restart.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use anyhow::{Context as _, anyhow};
use ray_api::constants::{WEBHOOK_CERT_FILE, WEBHOOK_KEY_FILE};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tracing::{info, warn};

/// What identifies one version of a file: its modification time and length.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// The loaded certificate and the file versions it came from.
#[derive(Debug)]
struct Loaded {
    stamps: (Stamp, Stamp),
    key: Arc<CertifiedKey>,
}

/// The serving certificate, re-read when `tls.crt` or `tls.key` changes.
#[derive(Debug)]
pub struct ServingCertificate {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    loaded: Mutex<Loaded>,
}

impl ServingCertificate {
    /// Reads `<cert_dir>/tls.crt` and `<cert_dir>/tls.key`; an error names the file that is missing or bad.
    pub fn load(cert_dir: &Path, provider: Arc<CryptoProvider>) -> anyhow::Result<Self> {
        let cert_path = cert_dir.join(WEBHOOK_CERT_FILE);
        let key_path = cert_dir.join(WEBHOOK_KEY_FILE);
        let stamps = (stamp(&cert_path), stamp(&key_path));
        let key = Arc::new(read_pair(&cert_path, &key_path, &provider)?);
        Ok(Self {
            cert_path,
            key_path,
            provider,
            loaded: Mutex::new(Loaded { stamps, key }),
        })
    }

    /// The certificate to serve: re-read first if either file changed since the last read. A pair that no
    /// longer reads (half-written during a rotation) keeps the previous one in service.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let mut loaded = self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let stamps = (stamp(&self.cert_path), stamp(&self.key_path));
        if stamps != loaded.stamps {
            match read_pair(&self.cert_path, &self.key_path, &self.provider) {
                Ok(key) => {
                    info!(cert = %self.cert_path.display(), "webhook certificate reloaded");
                    *loaded = Loaded {
                        stamps,
                        key: Arc::new(key),
                    };
                }
                Err(e) => warn!(
                    error = format!("{e:#}"),
                    "webhook certificate changed but cannot be read; keeping the previous one"
                ),
            }
        }
        Arc::clone(&loaded.key)
    }
}

impl ResolvesServerCert for ServingCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| {
        format!(
            "ENABLE_WEBHOOKS=true but the webhook server cannot read {} (set --webhook-cert-dir or mount the serving certificate there)",
            path.display()
        )
    })
}

/// The PEM chain and key as a rustls certificate, checked to belong together.
fn read_pair(cert_path: &Path, key_path: &Path, provider: &CryptoProvider) -> anyhow::Result<CertifiedKey> {
    let cert_pem = read(cert_path)?;
    let key_pem = read(key_path)?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| {
            format!(
                "webhook certificate {}: not a PEM certificate chain",
                cert_path.display()
            )
        })?;
    if certs.is_empty() {
        return Err(anyhow!(
            "webhook certificate {}: no CERTIFICATE block in the file",
            cert_path.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .with_context(|| format!("webhook key {}: not a PEM private key", key_path.display()))?;
    CertifiedKey::from_der(certs, key, provider).with_context(|| {
        format!(
            "webhook certificate {} and key {} do not form a usable pair",
            cert_path.display(),
            key_path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_rustls::rustls::crypto::ring;

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(ring::default_provider())
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kuberay-webhook-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Writes a fresh self-signed pair for `localhost`; returns the certificate's DER.
    fn write_pair(dir: &Path) -> Vec<u8> {
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        std::fs::write(dir.join("tls.crt"), generated.cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), generated.signing_key.serialize_pem()).unwrap();
        generated.cert.der().to_vec()
    }

    #[test]
    fn a_missing_certificate_is_named_in_the_error() {
        let dir = std::env::temp_dir().join(format!("kuberay-webhook-missing-{}", std::process::id()));
        let err = ServingCertificate::load(&dir, provider()).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains(&dir.join("tls.crt").display().to_string()), "{text}");
        assert!(text.contains("ENABLE_WEBHOOKS=true"), "{text}");
    }

    #[test]
    fn a_file_without_pem_blocks_is_rejected() {
        let dir = temp_dir("garbage");
        std::fs::write(dir.join("tls.crt"), "not a certificate").unwrap();
        std::fs::write(dir.join("tls.key"), "not a key").unwrap();
        let text = format!("{:#}", ServingCertificate::load(&dir, provider()).unwrap_err());
        assert!(text.contains("tls.crt"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_rotated_pair_is_served_and_a_broken_one_is_not() {
        let dir = temp_dir("rotate");
        let first = write_pair(&dir);
        let serving = ServingCertificate::load(&dir, provider()).unwrap();
        assert_eq!(serving.current().cert[0].as_ref(), first.as_slice());
        let second = write_pair(&dir);
        assert_ne!(first, second);
        assert_eq!(serving.current().cert[0].as_ref(), second.as_slice());
        std::fs::write(dir.join("tls.crt"), "half-written").unwrap();
        assert_eq!(
            serving.current().cert[0].as_ref(),
            second.as_slice(),
            "the previous pair stays in service"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
