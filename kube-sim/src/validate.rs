//! Name and metadata validation with the API server's rules and messages.

use serde_json::Value;

use crate::error::FieldError;
use crate::kinds::NameRule;

/// Maximum length of a DNS-1123 subdomain.
const SUBDOMAIN_MAX: usize = 253;
/// Maximum length of a DNS label and of a label name or value.
const LABEL_MAX: usize = 63;
/// Maximum total size of annotations.
const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= LABEL_MAX
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Whether `s` is a DNS-1123 subdomain.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= SUBDOMAIN_MAX
        && s.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

fn is_dns1035(s: &str) -> bool {
    is_dns_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

/// Validates an object name under `rule`; `Err` carries the detail message.
pub fn validate_name(name: &str, rule: NameRule) -> Result<(), String> {
    match rule {
        NameRule::Subdomain if !is_dns_subdomain(name) => {
            if name.len() > SUBDOMAIN_MAX {
                Err(format!("must be no more than {SUBDOMAIN_MAX} characters"))
            } else {
                Err(SUBDOMAIN_MSG.to_string())
            }
        }
        NameRule::Label if !is_dns_label(name) => {
            if name.len() > LABEL_MAX {
                Err(format!("must be no more than {LABEL_MAX} characters"))
            } else {
                Err(LABEL_MSG.to_string())
            }
        }
        NameRule::Dns1035 if !is_dns1035(name) => Err(DNS1035_MSG.to_string()),
        NameRule::PathSegment if name == "." || name == ".." || name.contains('/') || name.contains('%') => {
            Err("may not be '.' or '..' and may not contain '/' or '%'".to_string())
        }
        _ => Ok(()),
    }
}

fn is_qualified_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= LABEL_MAX
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// Whether `key` is a qualified name (`[prefix/]name`), as label and annotation keys and finalizers must be.
pub fn is_qualified_name(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_qualified_part(name),
        None => is_qualified_part(key),
    }
}

/// Whether `v` is a valid label value.
pub fn is_label_value(v: &str) -> bool {
    v.is_empty() || is_qualified_part(v)
}

/// Validates labels, annotations, ownerReferences and finalizers of `metadata`.
pub fn validate_metadata(meta: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if !is_qualified_name(k) {
                errs.push(FieldError::invalid("metadata.labels", k, QUALIFIED_MSG));
            }
            match v.as_str() {
                Some(s) if is_label_value(s) => {}
                Some(s) => errs.push(FieldError::invalid("metadata.labels", s, LABEL_VALUE_MSG)),
                None => errs.push(FieldError::invalid(
                    "metadata.labels",
                    &v.to_string(),
                    "must be a string",
                )),
            }
        }
    }
    if let Some(ann) = meta.get("annotations").and_then(Value::as_object) {
        let mut total = 0;
        for (k, v) in ann {
            if !is_qualified_name(k) {
                errs.push(FieldError::invalid("metadata.annotations", k, QUALIFIED_MSG));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > ANNOTATIONS_MAX_BYTES {
            errs.push(FieldError {
                reason: "FieldValueTooLong",
                field: "metadata.annotations".into(),
                message: format!("Too long: must have at most {ANNOTATIONS_MAX_BYTES} bytes"),
            });
        }
    }
    if let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) {
        let mut controllers = 0;
        for (i, r) in refs.iter().enumerate() {
            for field in ["apiVersion", "kind", "name", "uid"] {
                if r[field].as_str().unwrap_or_default().is_empty() {
                    errs.push(FieldError::invalid(
                        format!("metadata.ownerReferences[{i}].{field}"),
                        "",
                        &format!("{field} must not be empty"),
                    ));
                }
            }
            if r["controller"].as_bool() == Some(true) {
                controllers += 1;
            }
        }
        if controllers > 1 {
            errs.push(FieldError::invalid(
                "metadata.ownerReferences",
                "",
                "Only one reference can have Controller set to true",
            ));
        }
    }
    if let Some(fins) = meta.get("finalizers").and_then(Value::as_array) {
        for (i, f) in fins.iter().enumerate() {
            let s = f.as_str().unwrap_or_default();
            if !is_qualified_name(s) {
                errs.push(FieldError::invalid(
                    format!("metadata.finalizers[{i}]"),
                    s,
                    QUALIFIED_MSG,
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_their_rules() {
        assert!(validate_name("a.b-c", NameRule::Subdomain).is_ok());
        assert!(validate_name("Bad_Name", NameRule::Subdomain).is_err());
        assert!(validate_name("1svc", NameRule::Dns1035).is_err());
        assert!(validate_name("svc1", NameRule::Dns1035).is_ok());
        assert!(validate_name("a.b", NameRule::Label).is_err());
        assert!(validate_name("system:aggregate", NameRule::PathSegment).is_ok());
        assert!(validate_name("a/b", NameRule::PathSegment).is_err());
    }

    #[test]
    fn qualified_names() {
        assert!(is_qualified_name("ray.io/cluster"));
        assert!(is_qualified_name("app"));
        assert!(!is_qualified_name("-app"));
        assert!(!is_qualified_name("Ray.IO/x"));
        assert!(is_label_value(""));
        assert!(!is_label_value("a b"));
    }
}
