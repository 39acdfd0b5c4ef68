//! ServiceAccount tokens: JWTs signed by the server (ES256), minted by the TokenRequest API
//! (`POST .../serviceaccounts/{name}/token`, `kubectl create token`) and for pods' projected volumes
//! ([`pod_projected_token`]), and validated on every request as kube-apiserver does: signature, issuer,
//! expiry and not-before (with go-jose's one-minute leeway), audience, and that the ServiceAccount (and the
//! pod a token is bound to) still exists with the uid the token names.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};

use super::{AuthError, UserInfo};
use crate::error::{ApiError, FieldError, Target};
use crate::kinds::Gvr;
use crate::store::Store;

/// The issuer (`iss`) of every token, and the audience the API server accepts (kubeadm's
/// `--service-account-issuer`, which `--api-audiences` defaults to).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// Lifetime of a TokenRequest that names none (`kubectl create token` without `--duration`).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a TokenRequest may ask for.
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// Clock skew tolerated on `exp` and `nbf` (go-jose's default leeway, which kube-apiserver uses).
pub const LEEWAY_SECONDS: i64 = 60;
/// The JWT `alg` of the tokens.
const ALGORITHM: &str = "ES256";
/// The private claim holding the Kubernetes binding.
const KUBERNETES_CLAIM: &str = "kubernetes.io";

/// Why a bearer token was refused (logged; the client only sees 401).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    /// Not three base64url segments of JSON.
    #[error("malformed token")]
    Malformed,
    /// The signature does not verify with the server's key.
    #[error("invalid signature")]
    Signature,
    /// Another issuer.
    #[error("token issuer is not {ISSUER}")]
    Issuer,
    /// Past `exp` (plus leeway).
    #[error("token has expired")]
    Expired,
    /// Before `nbf` (minus leeway).
    #[error("token is not valid yet")]
    NotYetValid,
    /// No audience the API server accepts.
    #[error("token audiences do not include {ISSUER}")]
    Audience,
    /// The ServiceAccount is gone or was recreated.
    #[error("service account {0} is no longer valid")]
    ServiceAccount(String),
    /// The pod the token is bound to is gone or was recreated.
    #[error("pod {0} is no longer valid")]
    Pod(String),
}

/// What a token is minted for.
#[derive(Debug, Clone)]
pub struct TokenSpec {
    /// Namespace of the ServiceAccount.
    pub namespace: String,
    /// Name of the ServiceAccount.
    pub service_account: String,
    /// Its uid.
    pub service_account_uid: String,
    /// Audiences (`aud`); empty means the API server's.
    pub audiences: Vec<String>,
    /// Issue time (`iat`, `nbf`).
    pub issued_at: SystemTime,
    /// Lifetime (`exp` = `iat` + this).
    pub expiration: Duration,
    /// The pod the token is bound to: `(name, uid)`.
    pub pod: Option<(String, String)>,
}

/// The server's token signing key.
pub struct TokenIssuer {
    key: EcdsaKeyPair,
    key_id: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssuer").field("key_id", &self.key_id).finish()
    }
}

fn unix_seconds(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

fn rfc3339(unix: i64) -> String {
    jiff::Timestamp::from_second(unix)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

impl TokenIssuer {
    /// Generates a fresh P-256 signing key.
    pub fn new() -> Result<Self, AuthError> {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).map_err(|_| AuthError::SigningKey)?;
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| AuthError::SigningKey)?;
        let digest = ring::digest::digest(&ring::digest::SHA256, key.public_key().as_ref());
        let key_id = URL_SAFE_NO_PAD.encode(digest.as_ref());
        Ok(Self { key, key_id, rng })
    }

    /// Signs a token for `spec` (claims as kube-apiserver writes them).
    pub fn sign(&self, spec: &TokenSpec) -> Result<String, ApiError> {
        let iat = unix_seconds(spec.issued_at);
        let exp = iat.saturating_add(i64::try_from(spec.expiration.as_secs()).unwrap_or(i64::MAX));
        let audiences = if spec.audiences.is_empty() {
            vec![ISSUER.to_owned()]
        } else {
            spec.audiences.clone()
        };
        let mut binding = json!({
            "namespace": spec.namespace,
            "serviceaccount": {"name": spec.service_account, "uid": spec.service_account_uid},
        });
        if let Some((name, uid)) = &spec.pod {
            binding["pod"] = json!({"name": name, "uid": uid});
        }
        let claims = json!({
            "aud": audiences,
            "exp": exp,
            "iat": iat,
            "iss": ISSUER,
            "jti": format!("{:032x}", fastrand::u128(..)),
            KUBERNETES_CLAIM: binding,
            "nbf": iat,
            "sub": super::service_account_user(&spec.namespace, &spec.service_account),
        });
        let header = json!({"alg": ALGORITHM, "kid": self.key_id});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .key
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| ApiError::internal("signing the token failed"))?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }

    /// Verifies a token's signature and time window at `now`; returns its claims.
    pub fn verify(&self, token: &str, now: SystemTime) -> Result<Value, TokenError> {
        let mut parts = token.split('.');
        let (Some(header), Some(claims), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).map_err(|_| TokenError::Malformed);
        let header: Value = serde_json::from_slice(&decode(header)?).map_err(|_| TokenError::Malformed)?;
        if header["alg"] != ALGORITHM {
            return Err(TokenError::Signature);
        }
        let signing_input_len = token.len() - signature.len() - 1;
        ring::signature::UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, self.key.public_key().as_ref())
            .verify(&token.as_bytes()[..signing_input_len], &decode(signature)?)
            .map_err(|_| TokenError::Signature)?;
        let claims: Value = serde_json::from_slice(&decode(claims)?).map_err(|_| TokenError::Malformed)?;
        if claims["iss"] != ISSUER {
            return Err(TokenError::Issuer);
        }
        let now = unix_seconds(now);
        let exp = claims["exp"].as_i64().ok_or(TokenError::Malformed)?;
        if now > exp.saturating_add(LEEWAY_SECONDS) {
            return Err(TokenError::Expired);
        }
        if claims["nbf"]
            .as_i64()
            .is_some_and(|nbf| now < nbf.saturating_sub(LEEWAY_SECONDS))
        {
            return Err(TokenError::NotYetValid);
        }
        let audiences = match &claims["aud"] {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !audiences.contains(&ISSUER) {
            return Err(TokenError::Audience);
        }
        Ok(claims)
    }
}

/// Authenticates a ServiceAccount token: [`TokenIssuer::verify`], then the ServiceAccount (and bound pod)
/// must still exist with the uids the token names.
pub fn authenticate(issuer: &TokenIssuer, store: &Store, token: &str, now: SystemTime) -> Result<UserInfo, TokenError> {
    let claims = issuer.verify(token, now)?;
    let binding = &claims[KUBERNETES_CLAIM];
    let ns = binding["namespace"].as_str().ok_or(TokenError::Malformed)?;
    let name = binding["serviceaccount"]["name"]
        .as_str()
        .ok_or(TokenError::Malformed)?;
    let uid = binding["serviceaccount"]["uid"].as_str().unwrap_or_default();
    let gone = || TokenError::ServiceAccount(format!("{ns}/{name}"));
    let sa = store
        .get(&Gvr::service_accounts(), Some(ns), name)
        .map_err(|_| gone())?;
    if sa.uid() != uid || sa.value()["metadata"]["deletionTimestamp"].is_string() {
        return Err(gone());
    }
    let mut user = UserInfo::service_account(ns, name, uid);
    if let Some(jti) = claims["jti"].as_str() {
        user.extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            vec![format!("JTI={jti}")],
        );
    }
    if let Some(pod) = binding["pod"]["name"].as_str() {
        let pod_uid = binding["pod"]["uid"].as_str().unwrap_or_default();
        let pod_gone = || TokenError::Pod(format!("{ns}/{pod}"));
        let stored = store.get(&Gvr::pods(), Some(ns), pod).map_err(|_| pod_gone())?;
        if stored.uid() != pod_uid || stored.value()["metadata"]["deletionTimestamp"].is_string() {
            return Err(pod_gone());
        }
        user.extra
            .insert("authentication.kubernetes.io/pod-name".into(), vec![pod.to_owned()]);
        user.extra
            .insert("authentication.kubernetes.io/pod-uid".into(), vec![pod_uid.to_owned()]);
    }
    Ok(user)
}

/// Mints the token a pod's projected `serviceAccountToken` volume holds: bound to the pod, for its
/// ServiceAccount (`spec.serviceAccountName`, `default` when unset), valid for `expiration`.
pub fn pod_projected_token(
    issuer: &TokenIssuer,
    store: &Store,
    namespace: &str,
    pod: &str,
    audiences: &[String],
    expiration: Duration,
) -> Result<String, ApiError> {
    let pod = store.get(&Gvr::pods(), Some(namespace), pod)?;
    let pod_value = pod.value();
    let sa_name = pod_value["spec"]["serviceAccountName"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or("default");
    let sa = store.get(&Gvr::service_accounts(), Some(namespace), sa_name)?;
    issuer.sign(&TokenSpec {
        namespace: namespace.to_owned(),
        service_account: sa_name.to_owned(),
        service_account_uid: sa.uid().to_owned(),
        audiences: audiences.to_vec(),
        issued_at: SystemTime::now(),
        expiration,
        pod: Some((pod.name().to_owned(), pod.uid().to_owned())),
    })
}

/// Serves a TokenRequest (`authentication.k8s.io/v1`) for ServiceAccount `namespace/name`: the request
/// echoed with `status.token` and `status.expirationTimestamp`.
pub fn token_request(
    issuer: &TokenIssuer,
    store: &Store,
    namespace: &str,
    name: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let sa = store.get(&Gvr::service_accounts(), Some(namespace), name)?;
    let spec = &body["spec"];
    let expiration = spec["expirationSeconds"].as_i64().unwrap_or(DEFAULT_EXPIRATION_SECONDS);
    let target = Target {
        group: "authentication.k8s.io",
        plural: "tokenrequests",
        kind: "TokenRequest",
        name,
    };
    if expiration < MIN_EXPIRATION_SECONDS {
        return Err(ApiError::invalid(
            target,
            &[FieldError {
                reason: "FieldValueInvalid",
                field: "spec.expirationSeconds".into(),
                message: format!("Invalid value: {expiration}: may not specify a duration less than 10 minutes"),
            }],
        ));
    }
    let audiences: Vec<String> = spec["audiences"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let bound = &spec["boundObjectRef"];
    let pod = match bound["kind"].as_str() {
        None | Some("") => None,
        Some("Pod") => {
            let pod_name = bound["name"].as_str().unwrap_or_default();
            let pod = store.get(&Gvr::pods(), Some(namespace), pod_name)?;
            if let Some(uid) = bound["uid"].as_str().filter(|u| !u.is_empty())
                && uid != pod.uid()
            {
                return Err(ApiError::conflict_msg(
                    Target {
                        group: "",
                        plural: "pods",
                        kind: "Pod",
                        name: pod_name,
                    },
                    &format!(
                        "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
                    ),
                ));
            }
            Some((pod.name().to_owned(), pod.uid().to_owned()))
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of kind {other:?}: kube-sim binds tokens to pods only"
            )));
        }
    };
    let issued_at = SystemTime::now();
    let seconds = u64::try_from(expiration).unwrap_or_default();
    let token = issuer.sign(&TokenSpec {
        namespace: namespace.to_owned(),
        service_account: name.to_owned(),
        service_account_uid: sa.uid().to_owned(),
        audiences: audiences.clone(),
        issued_at,
        expiration: Duration::from_secs(seconds),
        pod,
    })?;
    let audiences = if audiences.is_empty() {
        vec![ISSUER.to_owned()]
    } else {
        audiences
    };
    let mut out_spec = json!({"audiences": audiences, "expirationSeconds": expiration, "boundObjectRef": null});
    if bound.is_object() {
        out_spec["boundObjectRef"] = bound.clone();
    }
    Ok(json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": null},
        "spec": out_spec,
        "status": {
            "token": token,
            "expirationTimestamp": rfc3339(unix_seconds(issued_at).saturating_add(expiration)),
        },
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn spec(issued_at: SystemTime, audiences: &[&str]) -> TokenSpec {
        TokenSpec {
            namespace: "default".into(),
            service_account: "x".into(),
            service_account_uid: "uid-x".into(),
            audiences: audiences.iter().map(|a| (*a).to_owned()).collect(),
            issued_at,
            expiration: Duration::from_secs(3600),
            pod: None,
        }
    }

    #[test]
    fn token_carries_upstream_claims_and_verifies() {
        let issuer = TokenIssuer::new().unwrap();
        let token = issuer.sign(&spec(SystemTime::now(), &[])).unwrap();
        let claims = issuer.verify(&token, SystemTime::now()).unwrap();
        assert_eq!(claims["sub"], "system:serviceaccount:default:x");
        assert_eq!(claims["aud"], json!([ISSUER]));
        assert_eq!(claims["kubernetes.io"]["serviceaccount"]["uid"], "uid-x");
        assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 3600);
    }

    #[test]
    fn expired_garbled_foreign_and_wrong_audience_tokens_are_refused() {
        let issuer = TokenIssuer::new().unwrap();
        let now = SystemTime::now();
        let old = issuer.sign(&spec(now - Duration::from_secs(3600 + 61), &[])).unwrap();
        assert_eq!(issuer.verify(&old, now), Err(TokenError::Expired));
        let within_leeway = issuer.sign(&spec(now - Duration::from_secs(3600 + 30), &[])).unwrap();
        assert!(issuer.verify(&within_leeway, now).is_ok());
        let other_aud = issuer.sign(&spec(now, &["vault"])).unwrap();
        assert_eq!(issuer.verify(&other_aud, now), Err(TokenError::Audience));
        let foreign = TokenIssuer::new().unwrap().sign(&spec(now, &[])).unwrap();
        assert_eq!(issuer.verify(&foreign, now), Err(TokenError::Signature));
        assert_eq!(issuer.verify("not-a-jwt", now), Err(TokenError::Malformed));
        let good = issuer.sign(&spec(now, &[])).unwrap();
        let mut tampered = good.clone();
        tampered.insert(good.find('.').unwrap() + 3, 'A');
        assert!(issuer.verify(&tampered, now).is_err());
    }
}
