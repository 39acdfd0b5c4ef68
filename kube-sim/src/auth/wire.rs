//! The protobuf request bodies kubectl sends to the authentication and authorization endpoints
//! (`kubectl create token`, `auth can-i`, `auth can-i --list`, `auth whoami` post
//! `application/vnd.kubernetes.protobuf`), read into their JSON form.
//!
//! A stopgap: these bodies carry a handful of scalar fields, so a minimal reader of the protobuf wire format
//! serves them until the server decodes protobuf for every built-in kind; then that decoder replaces this.

use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// The media type of Kubernetes protobuf bodies.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// The envelope magic before the serialized `runtime.Unknown`.
const MAGIC: &[u8] = b"k8s\0";

/// One protobuf field value (fixed-width fields are skipped: none of these messages has one we read).
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = buf.split_first()?;
        *buf = rest;
        out |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(out);
        }
    }
    None
}

/// The fields of one message, in order; `None` when the bytes are not a protobuf message.
fn fields(mut buf: &[u8]) -> Option<Vec<(u64, Wire<'_>)>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let value = match key & 7 {
            0 => Wire::Varint(varint(&mut buf)?),
            2 => {
                let len = usize::try_from(varint(&mut buf)?).ok()?;
                let (bytes, rest) = (buf.get(..len)?, buf.get(len..)?);
                buf = rest;
                Wire::Bytes(bytes)
            }
            1 => {
                buf = buf.get(8..)?;
                continue;
            }
            5 => {
                buf = buf.get(4..)?;
                continue;
            }
            _ => return None,
        };
        out.push((key >> 3, value));
    }
    Some(out)
}

/// A message's string fields by number, as JSON under the given names (repeated fields become arrays
/// when `repeated` names them).
fn strings(msg: &[u8], names: &[(u64, &str)], repeated: &[u64]) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    for (n, w) in fields(msg)? {
        let (Some((_, name)), Wire::Bytes(b)) = (names.iter().find(|(k, _)| *k == n), w) else {
            continue;
        };
        let s = json!(String::from_utf8_lossy(b));
        if repeated.contains(&n) {
            if let Some(list) = out.entry(*name).or_insert_with(|| json!([])).as_array_mut() {
                list.push(s);
            }
        } else {
            out.insert((*name).to_owned(), s);
        }
    }
    Some(out)
}

fn sub_message(msg: &[u8], field: u64) -> Option<Option<&[u8]>> {
    Some(fields(msg)?.into_iter().find_map(|(n, w)| match w {
        Wire::Bytes(b) if n == field => Some(b),
        _ => None,
    }))
}

const RESOURCE_ATTRIBUTES: &[(u64, &str)] = &[
    (1, "namespace"),
    (2, "verb"),
    (3, "group"),
    (4, "version"),
    (5, "resource"),
    (6, "subresource"),
    (7, "name"),
];
const NON_RESOURCE_ATTRIBUTES: &[(u64, &str)] = &[(1, "path"), (2, "verb")];

/// The `spec` of an access review (`resourceAttributes` = 1, `nonResourceAttributes` = 2, and for
/// SubjectAccessReview `user` = 3, `groups` = 4, `uid` = 6).
fn access_review_spec(spec: &[u8]) -> Option<Value> {
    let mut out = strings(spec, &[(3, "user"), (4, "groups"), (6, "uid")], &[4])?;
    if let Some(ra) = sub_message(spec, 1)? {
        out.insert(
            "resourceAttributes".into(),
            Value::Object(strings(ra, RESOURCE_ATTRIBUTES, &[])?),
        );
    }
    if let Some(nra) = sub_message(spec, 2)? {
        out.insert(
            "nonResourceAttributes".into(),
            Value::Object(strings(nra, NON_RESOURCE_ATTRIBUTES, &[])?),
        );
    }
    Some(Value::Object(out))
}

/// `TokenRequestSpec`: `audiences` = 1, `boundObjectRef` = 3, `expirationSeconds` = 4.
fn token_request_spec(spec: &[u8]) -> Option<Value> {
    let mut out = strings(spec, &[(1, "audiences")], &[1])?;
    for (n, w) in fields(spec)? {
        match (n, w) {
            (4, Wire::Varint(v)) => {
                out.insert("expirationSeconds".into(), json!(i64::try_from(v).unwrap_or(i64::MAX)));
            }
            (3, Wire::Bytes(b)) => {
                let bound = strings(b, &[(1, "kind"), (2, "apiVersion"), (3, "name"), (4, "uid")], &[])?;
                out.insert("boundObjectRef".into(), Value::Object(bound));
            }
            _ => {}
        }
    }
    Some(Value::Object(out))
}

/// Reads a protobuf request body for `resource` into its JSON form (400 when it is not one).
pub fn decode(resource: &str, body: &[u8]) -> Result<Value, ApiError> {
    let undecodable = || ApiError::bad_request(format!("unable to decode the protobuf {resource} request body"));
    let unknown = body.strip_prefix(MAGIC).ok_or_else(undecodable)?;
    let raw = sub_message(unknown, 2).flatten().ok_or_else(undecodable)?;
    let spec = sub_message(raw, 2).ok_or_else(undecodable)?.unwrap_or_default();
    let spec = match resource {
        "selfsubjectaccessreviews" | "subjectaccessreviews" | "localsubjectaccessreviews" => access_review_spec(spec),
        "selfsubjectrulesreviews" => strings(spec, &[(1, "namespace")], &[]).map(Value::Object),
        "tokenreviews" => strings(spec, &[(1, "token"), (2, "audiences")], &[2]).map(Value::Object),
        "serviceaccounts" => token_request_spec(spec),
        _ => Some(json!({})),
    };
    Ok(json!({"spec": spec.ok_or_else(undecodable)?}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn reads_the_self_subject_access_review_kubectl_sends() {
        // `kubectl auth can-i list pods` (kubectl 1.32), captured.
        let body = b"k8s\x00\n2\n\x17authorization.k8s.io/v1\x12\x17SelfSubjectAccessReview\x12=\n\x10\n\x00\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x1f\n\x1d\n\x07default\x12\x04list\x1a\x00\"\x00*\x04pods2\x00:\x00\x1a\x08\x08\x00\x12\x00\x1a\x00 \x00\x1a\x00\"\x00";
        let v = decode("selfsubjectaccessreviews", body).unwrap();
        assert_eq!(v["spec"]["resourceAttributes"]["namespace"], "default");
        assert_eq!(v["spec"]["resourceAttributes"]["verb"], "list");
        assert_eq!(v["spec"]["resourceAttributes"]["resource"], "pods");
        assert_eq!(v["spec"]["resourceAttributes"]["group"], "");
    }

    #[test]
    fn reads_the_token_request_kubectl_sends_and_refuses_garbage() {
        // `kubectl create token x` (kubectl 1.32), captured.
        let body = b"k8s\x00\n(\n\x18authentication.k8s.io/v1\x12\x0cTokenRequest\x12\x1a\n\x10\n\x00\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x00\x1a\x04\n\x00\x12\x00\x1a\x00\"\x00";
        assert_eq!(decode("serviceaccounts", body).unwrap(), json!({"spec": {}}));
        assert_eq!(decode("serviceaccounts", b"k8s\x00\xff\xff").unwrap_err().code, 400);
        assert_eq!(decode("serviceaccounts", b"{}").unwrap_err().code, 400);
    }
}
