//! KubeRay's validation rules as pure functions (KubeRay `controllers/ray/utils/validation.go`); the rules
//! and their order are described in `docs/validation.md`.
//!
//! - RayCluster: [`validate_ray_cluster_metadata`], [`validate_ray_cluster_spec`],
//!   [`validate_ray_cluster_upgrade_options`], [`validate_ray_cluster_status`].
//! - RayJob: [`validate_ray_job_metadata`], [`validate_ray_job_spec`], [`validate_ray_job_status`].
//! - RayService: [`validate_ray_service_metadata`], [`validate_ray_service_spec`], including the incremental
//!   upgrade options.
//! - The validating admission webhooks: [`webhook_validate_ray_cluster`], [`webhook_validate_ray_job`],
//!   [`webhook_validate_ray_service`].
//!
//! Every function runs KubeRay's checks in KubeRay's order and returns the first failure. The
//! error carries KubeRay's exact message ([`ValidationError::message`], what the controllers put in
//! events and status) and the JSON path of the offending field ([`ValidationError::field`]).
//!
//! Nothing here reads the environment: the feature gates KubeRay consults are fields of
//! [`ValidationOptions`].

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvVar};

mod raycluster;
mod rayjob;
mod rayservice;
pub mod rolling_update;
mod webhook;

pub use raycluster::{
    validate_ray_cluster, validate_ray_cluster_metadata, validate_ray_cluster_spec, validate_ray_cluster_status,
    validate_ray_cluster_upgrade_options,
};
pub use rayjob::{validate_ray_job, validate_ray_job_metadata, validate_ray_job_spec, validate_ray_job_status};
pub use rayservice::{validate_ray_service, validate_ray_service_metadata, validate_ray_service_spec};
pub use webhook::{
    FIELD_VALUE_INVALID, InvalidField, WebhookRejection, webhook_validate_ray_cluster, webhook_validate_ray_job,
    webhook_validate_ray_service,
};

/// A failed KubeRay validation rule.
///
/// `Display` prints `{field}: {message}`; use [`ValidationError::message`] to emit KubeRay's text
/// verbatim (events, `status.message`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ValidationError {
    /// JSON path of the offending field, e.g. `spec.workerGroupSpecs[1].minReplicas`,
    /// `metadata.name`, `metadata.annotations[ray.io/ft-enabled]`.
    pub field: String,
    /// KubeRay's exact message.
    pub message: String,
}

impl ValidationError {
    /// Builds an error at `field` with KubeRay's `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }

    /// KubeRay's message, verbatim.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// JSON path of the offending field.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The same error with `prefix` put in front of the message (KubeRay's `fmt.Errorf("...: %w")`).
    fn wrap(self, prefix: &str) -> Self {
        Self {
            field: self.field,
            message: format!("{prefix}{}", self.message),
        }
    }
}

/// Result of a validation function.
pub type ValidationResult = Result<(), ValidationError>;

/// The operator settings KubeRay's validation reads (all feature gates). `Default` = KubeRay
/// v1.7.0's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationOptions {
    /// Gate `RayJobDeletionPolicy` (default on): allows `deletionStrategy` on RayJobs and
    /// suspended worker groups.
    pub ray_job_deletion_policy: bool,
    /// Gate `GCSFaultToleranceEmbeddedStorage` (default off): allows the `rocksdb` GCS FT backend.
    pub gcs_fault_tolerance_embedded_storage: bool,
    /// Gate `RayClusterHistoryServer` (default off): allows `historyServerOptions`.
    pub ray_cluster_history_server: bool,
    /// Gate `RayClusterNetworkPolicy` (default off): allows `networkPolicy`.
    pub ray_cluster_network_policy: bool,
    /// Gate `RayClusterMTLS` (default off): allows `tlsOptions`.
    pub ray_cluster_mtls: bool,
    /// Gate `RayServiceIncrementalUpgrade` (default on): `NewClusterWithIncrementalUpgrade`
    /// RayServices get their `clusterUpgradeOptions` checked.
    pub ray_service_incremental_upgrade: bool,
}

impl Default for ValidationOptions {
    fn default() -> Self {
        Self {
            ray_job_deletion_policy: true,
            gcs_fault_tolerance_embedded_storage: false,
            ray_cluster_history_server: false,
            ray_cluster_network_policy: false,
            ray_cluster_mtls: false,
            ray_service_incremental_upgrade: true,
        }
    }
}

impl ValidationOptions {
    /// Every gate on (what KubeRay's alpha samples ask the operator to run with).
    pub fn all_enabled() -> Self {
        Self {
            ray_job_deletion_policy: true,
            gcs_fault_tolerance_embedded_storage: true,
            ray_cluster_history_server: true,
            ray_cluster_network_policy: true,
            ray_cluster_mtls: true,
            ray_service_incremental_upgrade: true,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by the kinds
// ---------------------------------------------------------------------------------------------

/// `EnvVarByName`: the first env var called `name`.
fn env_by_name<'a>(env: Option<&'a [EnvVar]>, name: &str) -> Option<&'a EnvVar> {
    env.unwrap_or_default().iter().find(|e| e.name == name)
}

/// `EnvVarExists`.
fn env_exists(env: Option<&[EnvVar]>, name: &str) -> bool {
    env_by_name(env, name).is_some()
}

/// The env of a container.
fn container_env(container: &Container) -> Option<&[EnvVar]> {
    container.env.as_deref()
}

/// Value of a map entry, `""` when absent (Go's map zero value).
fn map_value<'a>(map: Option<&'a BTreeMap<String, String>>, key: &str) -> &'a str {
    map.and_then(|m| m.get(key)).map(String::as_str).unwrap_or_default()
}

/// `metadata.name` check shared by the three kinds: length, then DNS-1035.
fn validate_name(name: &str, max: usize, kind: &str, prefix: &str) -> ValidationResult {
    if name.len() > max {
        return Err(ValidationError::new(
            "metadata.name",
            format!("{prefix}{kind} name should be no more than {max} characters"),
        ));
    }
    let errs = k8s::is_dns1035_label(name);
    if !errs.is_empty() {
        return Err(ValidationError::new(
            "metadata.name",
            format!(
                "{prefix}{kind} name should be a valid DNS1035 label: {}",
                k8s::go_list(&errs)
            ),
        ));
    }
    Ok(())
}

mod k8s {
    //! The Kubernetes and Go helpers KubeRay's validation relies on, with their exact messages:
    //! `k8s.io/apimachinery/pkg/util/validation` (name and label syntax), `util/version.ParseGeneric`,
    //! `%v` of a string slice and `%q`. Go durations and `strconv.Atoi` come from `kube_compat`.

    const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
    const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
    const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
    const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
    const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
    const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
    const QUALIFIED_NAME_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    const LABEL_MAX_LENGTH: usize = 63;
    const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

    /// `validation.RegexError`.
    fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
        if examples.is_empty() {
            return format!("{msg} (regex used for validation is '{fmt}')");
        }
        let mut out = format!("{msg} (e.g. ");
        for (i, example) in examples.iter().enumerate() {
            if i > 0 {
                out.push_str(" or ");
            }
            out.push('\'');
            out.push_str(example);
            out.push_str("', ");
        }
        out.push_str("regex used for validation is '");
        out.push_str(fmt);
        out.push_str("')");
        out
    }

    /// `validation.MaxLenError`.
    fn max_len_error(n: usize) -> String {
        format!("must be no more than {n} characters")
    }

    fn is_lower_alnum(b: u8) -> bool {
        b.is_ascii_lowercase() || b.is_ascii_digit()
    }

    /// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` anchored.
    fn matches_dns1123_label(s: &str) -> bool {
        let b = s.as_bytes();
        !b.is_empty()
            && is_lower_alnum(b[0])
            && b.iter().all(|c| is_lower_alnum(*c) || *c == b'-')
            && b.last().is_some_and(|c| is_lower_alnum(*c))
    }

    /// DNS-1123 subdomain regex anchored.
    fn matches_dns1123_subdomain(s: &str) -> bool {
        s.split('.').all(matches_dns1123_label)
    }

    /// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` anchored.
    fn matches_qualified_name(s: &str) -> bool {
        let b = s.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b.last().is_some_and(|c| c.is_ascii_alphanumeric())
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    }

    /// `validation.IsDNS1035Label`.
    pub(super) fn is_dns1035_label(s: &str) -> Vec<String> {
        let mut errs = Vec::new();
        if s.len() > LABEL_MAX_LENGTH {
            errs.push(max_len_error(LABEL_MAX_LENGTH));
        }
        let b = s.as_bytes();
        let ok = !b.is_empty()
            && b[0].is_ascii_lowercase()
            && b.iter().all(|c| is_lower_alnum(*c) || *c == b'-')
            && b.last().is_some_and(|c| is_lower_alnum(*c));
        if !ok {
            errs.push(regex_error(
                DNS1035_LABEL_ERR_MSG,
                DNS1035_LABEL_FMT,
                &["my-name", "abc-123"],
            ));
        }
        errs
    }

    /// `validation.IsDNS1123Label`.
    pub(super) fn is_dns1123_label(s: &str) -> Vec<String> {
        let mut errs = Vec::new();
        if s.len() > LABEL_MAX_LENGTH {
            errs.push(max_len_error(LABEL_MAX_LENGTH));
        }
        if !matches_dns1123_label(s) {
            if matches_dns1123_subdomain(s) {
                errs.push("must not contain dots".to_owned());
            } else {
                errs.push(regex_error(
                    DNS1123_LABEL_ERR_MSG,
                    DNS1123_LABEL_FMT,
                    &["my-name", "123-abc"],
                ));
            }
        }
        errs
    }

    /// `validation.IsDNS1123Subdomain`.
    fn is_dns1123_subdomain(s: &str) -> Vec<String> {
        let mut errs = Vec::new();
        if s.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
            errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
        }
        if !matches_dns1123_subdomain(s) {
            let fmt = format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*");
            errs.push(regex_error(DNS1123_SUBDOMAIN_ERR_MSG, &fmt, &["example.com"]));
        }
        errs
    }

    /// `validation.IsQualifiedName` (label keys).
    pub(super) fn is_qualified_name(value: &str) -> Vec<String> {
        let mut errs = Vec::new();
        let parts: Vec<&str> = value.split('/').collect();
        let name = match parts.as_slice() {
            [name] => *name,
            [prefix, name] => {
                if prefix.is_empty() {
                    errs.push("prefix part must be non-empty".to_owned());
                } else {
                    errs.extend(
                        is_dns1123_subdomain(prefix)
                            .into_iter()
                            .map(|m| format!("prefix part {m}")),
                    );
                }
                *name
            }
            _ => {
                errs.push(format!(
                    "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                    regex_error(
                        QUALIFIED_NAME_ERR_MSG,
                        QUALIFIED_NAME_FMT,
                        &["MyName", "my.name", "123-abc"]
                    )
                ));
                return errs;
            }
        };
        if name.is_empty() {
            errs.push("name part must be non-empty".to_owned());
        } else if name.len() > LABEL_MAX_LENGTH {
            errs.push(format!("name part {}", max_len_error(LABEL_MAX_LENGTH)));
        }
        if !matches_qualified_name(name) {
            errs.push(format!(
                "name part {}",
                regex_error(
                    QUALIFIED_NAME_ERR_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
        }
        errs
    }

    /// `validation.IsValidLabelValue`.
    pub(super) fn is_valid_label_value(value: &str) -> Vec<String> {
        let mut errs = Vec::new();
        if value.len() > LABEL_MAX_LENGTH {
            errs.push(max_len_error(LABEL_MAX_LENGTH));
        }
        if !(value.is_empty() || matches_qualified_name(value)) {
            let fmt = format!("({QUALIFIED_NAME_FMT})?");
            errs.push(regex_error(
                LABEL_VALUE_ERR_MSG,
                &fmt,
                &["MyValue", "my_value", "12345"],
            ));
        }
        errs
    }

    /// Go's `%v` of a `[]string`: `[a b c]`.
    pub(super) fn go_list(items: &[String]) -> String {
        format!("[{}]", items.join(" "))
    }

    /// The `%q` quoting of validation messages (ASCII escapes; other characters kept).
    pub(super) use kube_compat::go_strconv::quote_ascii_controls as go_quote;

    /// `version.ParseGeneric`: `v?N.N(.N)*` followed by anything; the numeric components.
    pub(super) fn parse_generic_version(s: &str) -> Result<Vec<u64>, String> {
        let trimmed = s.trim_start();
        let body = trimmed.strip_prefix('v').unwrap_or(trimmed);
        let numeric_len = body
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
            .map_or(body.len(), |(i, _)| i);
        // The numeric part is `[0-9]+(\.[0-9]+)*`: a trailing or doubled dot belongs to the "extra" part.
        let mut numbers = &body[..numeric_len];
        while let Some(pos) = numbers
            .find("..")
            .or_else(|| numbers.ends_with('.').then(|| numbers.len() - 1))
        {
            numbers = &numbers[..pos];
        }
        if numbers.is_empty() || !numbers.as_bytes()[0].is_ascii_digit() {
            return Err(format!("could not parse {} as version", go_quote(s)));
        }
        let components: Vec<&str> = numbers.split('.').collect();
        if components.len() < 2 {
            return Err(format!("illegal version string {}", go_quote(s)));
        }
        let mut out = Vec::with_capacity(components.len());
        for (i, comp) in components.iter().enumerate() {
            if i == 0 && comp.starts_with('0') && *comp != "0" {
                return Err(format!(
                    "illegal zero-prefixed version component {} in {}",
                    go_quote(comp),
                    go_quote(s)
                ));
            }
            let n = comp.parse::<u64>().map_err(|_| {
                format!(
                    "illegal non-numeric version component {} in {}: strconv.ParseUint: parsing {}: value out of range",
                    go_quote(comp),
                    go_quote(s),
                    go_quote(comp)
                )
            })?;
            out.push(n);
        }
        Ok(out)
    }

    /// `Version.LessThan` for generic versions (missing components count as 0).
    pub(super) fn version_less_than(a: &[u64], b: &[u64]) -> bool {
        let len = a.len().max(b.len());
        for i in 0..len {
            let x = a.get(i).copied().unwrap_or(0);
            let y = b.get(i).copied().unwrap_or(0);
            if x != y {
                return x < y;
            }
        }
        false
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn dns1035_message_matches_kubernetes() {
            assert_eq!(
                go_list(&is_dns1035_label("1111")),
                "[a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')]"
            );
            assert!(is_dns1035_label("raycluster-sample").is_empty());
            assert!(!is_dns1035_label("").is_empty());
            assert!(!is_dns1035_label("a-").is_empty());
        }

        #[test]
        fn qualified_names_and_label_values() {
            assert!(is_qualified_name("ray.io/accelerator-type").is_empty());
            assert!(is_qualified_name("zone").is_empty());
            assert_eq!(is_qualified_name("a/b/c").len(), 1);
            assert_eq!(
                is_qualified_name("/x"),
                vec!["prefix part must be non-empty".to_owned()]
            );
            assert!(is_valid_label_value("").is_empty());
            assert!(is_valid_label_value("A100_x.y").is_empty());
            assert_eq!(is_valid_label_value("-bad").len(), 1);
            assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots".to_owned()]);
        }

        #[test]
        fn generic_versions() {
            assert_eq!(parse_generic_version("2.52.0"), Ok(vec![2, 52, 0]));
            assert_eq!(parse_generic_version("v2.56"), Ok(vec![2, 56]));
            assert_eq!(parse_generic_version("2.56.0rc1"), Ok(vec![2, 56, 0]));
            assert!(parse_generic_version("2").is_err());
            assert!(parse_generic_version("nightly").is_err());
            assert!(version_less_than(&[2, 51, 9], &[2, 52, 0]));
            assert!(!version_less_than(&[2, 52], &[2, 52, 0]));
        }
    }
}
