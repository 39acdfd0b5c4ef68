//! Identity and authorization, as kube-apiserver does them: HTTPS with a CA generated at start ([`tls`]),
//! bearer-token authentication (static tokens such as the kubeconfig's admin token, and ServiceAccount tokens
//! signed by the server, [`tokens`]), impersonation ([`impersonate`]), RBAC enforced on every request
//! ([`rbac`], with the bootstrap roles and the ClusterRole aggregation controller of [`bootstrap`], and
//! escalation prevention on RBAC writes in [`escalation`]) and the review APIs `kubectl auth can-i|whoami` use ([`review`]).

pub mod attributes;
pub mod bootstrap;
pub mod escalation;
pub mod impersonate;
pub mod rbac;
pub mod review;
pub mod tls;
pub mod tokens;
mod wire;

use std::collections::{BTreeMap, HashMap};

use http::{HeaderMap, header};
use parking_lot::RwLock;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::store::Store;

/// The group every authenticated user belongs to.
pub const GROUP_AUTHENTICATED: &str = "system:authenticated";
/// The group whose members may do anything (kube-apiserver's privileged group).
pub const GROUP_MASTERS: &str = "system:masters";
/// The group of every ServiceAccount.
pub const GROUP_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
/// The user name of the kubeconfig's admin identity (as kubeadm's `admin.conf`).
pub const ADMIN_USER: &str = "kubernetes-admin";
/// The prefix of ServiceAccount user names: `system:serviceaccount:<namespace>:<name>`.
pub const SERVICE_ACCOUNT_USER_PREFIX: &str = "system:serviceaccount:";

/// An authenticated identity: what kube-apiserver's `user.Info` carries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// User name (`kubernetes-admin`, `system:serviceaccount:default:x`).
    pub name: String,
    /// Unique id (a ServiceAccount's uid; empty for static users).
    pub uid: String,
    /// Groups, `system:authenticated` included.
    pub groups: Vec<String>,
    /// Extra attributes (impersonation's `Impersonate-Extra-*`, a ServiceAccount token's pod).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with `groups`, plus `system:authenticated` when missing.
    pub fn new(name: &str, groups: &[&str]) -> Self {
        let mut groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
        if !groups.iter().any(|g| g == GROUP_AUTHENTICATED) {
            groups.push(GROUP_AUTHENTICATED.to_owned());
        }
        Self {
            name: name.to_owned(),
            groups,
            ..Self::default()
        }
    }

    /// The identity of ServiceAccount `namespace/name`, with upstream's three groups.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        Self {
            name: service_account_user(namespace, name),
            uid: uid.to_owned(),
            groups: service_account_groups(namespace),
            extra: BTreeMap::new(),
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// `(namespace, name)` when this is a ServiceAccount user.
    pub fn service_account_name(&self) -> Option<(&str, &str)> {
        self.name.strip_prefix(SERVICE_ACCOUNT_USER_PREFIX)?.split_once(':')
    }

    /// The `authentication.k8s.io/v1` `UserInfo` JSON (`username`, `uid`, `groups`, `extra`).
    pub fn to_json(&self) -> Value {
        let mut v = json!({"username": self.name, "groups": self.groups});
        if !self.uid.is_empty() {
            v["uid"] = json!(self.uid);
        }
        if !self.extra.is_empty() {
            v["extra"] = json!(self.extra);
        }
        v
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_USER_PREFIX}{namespace}:{name}")
}

/// The groups of a ServiceAccount of `namespace`.
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        GROUP_SERVICE_ACCOUNTS.to_owned(),
        format!("{GROUP_SERVICE_ACCOUNTS}:{namespace}"),
        GROUP_AUTHENTICATED.to_owned(),
    ]
}

/// Errors preparing the server's credentials at start.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The CA or the serving certificate could not be generated.
    #[error("generating the serving certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// The TLS server configuration was refused.
    #[error("TLS configuration: {0}")]
    Tls(#[from] tokio_rustls::rustls::Error),
    /// The ServiceAccount token signing key could not be generated.
    #[error("generating the ServiceAccount token signing key")]
    SigningKey,
}

/// 401 `Unauthorized`, as kube-apiserver answers a request without valid credentials.
pub fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// The server's credentials and authenticators.
pub struct Auth {
    tls: Option<tls::TlsMaterial>,
    issuer: tokens::TokenIssuer,
    static_tokens: RwLock<HashMap<String, UserInfo>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth").field("https", &self.tls.is_some()).finish()
    }
}

impl Auth {
    /// Generates the serving CA and certificate (unless `https` is false) and the token signing key; the
    /// admin token `admin_token` authenticates as [`ADMIN_USER`] in [`GROUP_MASTERS`]. `extra_names` are
    /// added to the certificate's [`tls::SERVING_NAMES`] (such as the `kubernetes` Service's ClusterIP).
    pub fn new(https: bool, admin_token: &str, extra_names: &[String]) -> Result<Self, AuthError> {
        let tls = if https {
            Some(tls::TlsMaterial::generate(extra_names)?)
        } else {
            None
        };
        let auth = Self {
            tls,
            issuer: tokens::TokenIssuer::new()?,
            static_tokens: RwLock::new(HashMap::new()),
        };
        auth.add_static_token(admin_token, UserInfo::new(ADMIN_USER, &[GROUP_MASTERS]));
        Ok(auth)
    }

    /// The TLS material, `None` when serving plain http.
    pub fn tls(&self) -> Option<&tls::TlsMaterial> {
        self.tls.as_ref()
    }

    /// The ServiceAccount token issuer.
    pub fn issuer(&self) -> &tokens::TokenIssuer {
        &self.issuer
    }

    /// Registers a static bearer token (kube-apiserver's `--token-auth-file`).
    pub fn add_static_token(&self, token: &str, user: UserInfo) {
        self.static_tokens.write().insert(token.to_owned(), user);
    }

    /// Registers a fresh static token (128 bits from the system's CSPRNG, hex) for `user` and returns it.
    pub fn mint_static_token(&self, user: UserInfo) -> String {
        use ring::rand::SecureRandom as _;
        let mut bytes = [0u8; 16];
        if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
            fastrand::fill(&mut bytes);
        }
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        self.add_static_token(&token, user);
        token
    }

    /// Authenticates a request from its `Authorization: Bearer` header: a static token, else a
    /// ServiceAccount token. No or bad credentials answer 401 (anonymous requests are not enabled).
    pub fn authenticate(&self, store: &Store, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
        let token = bearer_token(headers).ok_or_else(unauthorized)?;
        if let Some(user) = self.static_tokens.read().get(token) {
            return Ok(user.clone());
        }
        tokens::authenticate(&self.issuer, store, token, std::time::SystemTime::now()).map_err(|e| {
            tracing::debug!(error = %e, "rejected a bearer token");
            unauthorized()
        })
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme is case-insensitive, as upstream).
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive_and_needs_a_token() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, "bearer abc".parse().unwrap());
        assert_eq!(bearer_token(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, "Bearer ".parse().unwrap());
        assert_eq!(bearer_token(&h), None);
        h.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer_token(&h), None);
    }

    #[test]
    fn service_account_users_carry_upstream_groups() {
        let u = UserInfo::service_account("ns1", "x", "uid-1");
        assert_eq!(u.name, "system:serviceaccount:ns1:x");
        assert_eq!(
            u.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns1",
                "system:authenticated"
            ]
        );
        assert_eq!(u.service_account_name(), Some(("ns1", "x")));
    }
}
