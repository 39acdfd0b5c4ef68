//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) for built-in kinds: request bodies are
//! read into the JSON the JSON path stores, and responses (objects, lists, `Status` errors, watch events)
//! are written as protobuf when the client prefers it. Custom resources have no protobuf form, as
//! upstream: a protobuf body for one is refused with 415 and a protobuf-only `Accept` with 406.
//!
//! The messages are upstream's (`kube-sim/proto/`, compiled by `build.rs`), read and written through
//! `rust-protobuf`'s dynamic messages; one generic mapping (`codec`) turns any message into Go's JSON and
//! back.
//!
//! Without the crate's `protobuf` feature only the negotiation is here, and it treats every kind as a
//! custom resource: JSON and YAML only.

#[cfg(feature = "protobuf")]
mod codec;
#[cfg(feature = "protobuf")]
pub mod envelope;
#[cfg(feature = "protobuf")]
mod registry;
#[cfg(feature = "protobuf")]
mod special;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::error::ApiError;
#[cfg(feature = "protobuf")]
use envelope::{Envelope, EnvelopeError};

/// Whether this build reads and writes protobuf (the `protobuf` feature).
const SERVES_PROTOBUF: bool = cfg!(feature = "protobuf");

/// The protobuf media type.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// The content type of a protobuf watch stream.
pub const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The body media types kube-apiserver reads for built-in kinds, in the order it names them.
const BUILTIN_BODY_TYPES: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";
/// The body media types kube-apiserver reads for custom resources.
const CUSTOM_BODY_TYPES: &str = "application/json, application/yaml";
/// The scheme kube-apiserver names when a kind is not registered.
const SCHEME: &str = "pkg/api/legacyscheme/scheme.go:30";

/// Why a message could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// A value does not fit its field.
    #[error("{0}")]
    Value(String),
    /// The descriptors lack something the mapping needs.
    #[error("{0}")]
    Schema(String),
    /// The bytes are not the message.
    #[error("{0}")]
    Wire(String),
    /// No built-in kind with a protobuf form has this `apiVersion` and `kind`.
    #[error("no kind {kind:?} is registered for version {api_version:?} in scheme {SCHEME:?}")]
    NotRegistered {
        /// The `apiVersion`.
        api_version: String,
        /// The `kind`.
        kind: String,
    },
    /// kube-sim was built without its `protobuf` feature.
    #[error("kube-sim was built without its protobuf feature")]
    NotBuilt,
}

impl ProtoError {
    /// The error with the JSON property `property` prefixed to its path.
    #[cfg(feature = "protobuf")]
    fn within(self, property: &str) -> Self {
        match self {
            ProtoError::Value(m) => ProtoError::Value(format!("{property}: {m}")),
            other => other,
        }
    }
}

/// The kind a request body is read as: the endpoint's.
#[derive(Debug, Clone, Copy)]
pub struct BodyTarget<'a> {
    /// The endpoint's `apiVersion` (`v1`, `apps/v1`).
    pub api_version: &'a str,
    /// The endpoint's kind (`Pod`, or `DeleteOptions` for a delete body).
    pub kind: &'a str,
    /// Whether the kind is a custom resource (no protobuf).
    pub custom: bool,
}

/// A media type without its parameters, lowercased (`application/json; charset=utf-8` -> `application/json`).
fn essence(media_type: &str) -> String {
    media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Whether `content_type` is the protobuf media type.
pub fn is_protobuf(content_type: &str) -> bool {
    essence(content_type) == PROTOBUF
}

/// Reads a request body by its `Content-Type`: JSON (also when none is given), YAML, or protobuf for a
/// built-in kind. Anything else is 415 `UnsupportedMediaType`; a protobuf body that cannot be read is 400
/// `BadRequest`, worded as kube-apiserver words it.
pub fn decode_body(content_type: &str, body: &[u8], target: BodyTarget<'_>) -> Result<Value, ApiError> {
    match essence(content_type).as_str() {
        "" | "application/json" => {
            if body.is_empty() {
                return Ok(Value::Object(Map::new()));
            }
            serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("unable to decode the request body: {e}")))
        }
        "application/yaml" => serde_saphyr::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("unable to decode the request body: {e}"))),
        #[cfg(feature = "protobuf")]
        PROTOBUF if !target.custom => decode_protobuf(body, target),
        _ => Err(unsupported_media_type(target.custom || !SERVES_PROTOBUF)),
    }
}

/// kube-apiserver's 415 for a body it cannot read.
fn unsupported_media_type(custom: bool) -> ApiError {
    let accepted = if custom { CUSTOM_BODY_TYPES } else { BUILTIN_BODY_TYPES };
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!("the body of the request was in an unknown format - accepted media types include: {accepted}"),
    )
}

/// The version part of an `apiVersion` (`apps/v1` -> `v1`).
#[cfg(feature = "protobuf")]
fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or(api_version)
}

/// kube-apiserver's summary of a body it could not recognize: hex of the first 30 bytes.
#[cfg(feature = "protobuf")]
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    if body.is_empty() {
        return "<empty>".into();
    }
    let shown = &body[..body.len().min(MAX)];
    let text: String = if shown[0] == b'{' {
        String::from_utf8_lossy(shown).into_owned()
    } else {
        shown.iter().map(|b| format!("{b:02x}")).collect()
    };
    if body.len() > MAX { format!("{text} ...") } else { text }
}

#[cfg(feature = "protobuf")]
fn decode_protobuf(body: &[u8], target: BodyTarget<'_>) -> Result<Value, ApiError> {
    let envelope = Envelope::decode(body).map_err(|e: EnvelopeError| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): {e} ({})",
            target.kind,
            summarize(body)
        ))
    })?;
    // A missing kind or version is the endpoint's, as kube-apiserver's decoder defaults it.
    let kind = if envelope.kind.is_empty() {
        target.kind
    } else {
        &envelope.kind
    };
    let api_version = if envelope.api_version.is_empty() {
        target.api_version
    } else {
        &envelope.api_version
    };
    let cannot_handle = |e: ProtoError| {
        ApiError::bad_request(format!(
            "{kind} in version {:?} cannot be handled as a {}: {e}",
            version_of(api_version),
            target.kind
        ))
    };
    object_from_message(api_version, kind, &envelope.raw).map_err(cannot_handle)
}

/// The JSON of the object of `kind` in `api_version` whose message is `raw`, with `kind` and `apiVersion`
/// first as Go writes them.
#[cfg(feature = "protobuf")]
pub fn object_from_message(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, ProtoError> {
    let descriptor = registry::registry()
        .message(api_version, kind)
        .ok_or_else(|| ProtoError::NotRegistered {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        })?;
    let message = descriptor
        .parse_from_bytes(raw)
        .map_err(|e| ProtoError::Wire(e.to_string()))?;
    let mut out = Map::new();
    out.insert("kind".into(), Value::String(kind.to_string()));
    out.insert("apiVersion".into(), Value::String(api_version.to_string()));
    if let Value::Object(fields) = codec::to_json(&*message)? {
        out.extend(fields);
    }
    Ok(Value::Object(out))
}

/// The message of the JSON object `object` (its `kind` and `apiVersion` pick the message, and are left
/// out of it, as protobuf carries them in the envelope).
#[cfg(feature = "protobuf")]
pub fn message_from_object(object: &Value) -> Result<(String, String, Vec<u8>), ProtoError> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default().to_string();
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    let descriptor = registry::registry()
        .message(&api_version, &kind)
        .ok_or_else(|| ProtoError::NotRegistered {
            api_version: api_version.clone(),
            kind: kind.clone(),
        })?;
    let message = codec::from_json(descriptor, object)?;
    let raw = message
        .write_to_bytes_dyn()
        .map_err(|e| ProtoError::Wire(e.to_string()))?;
    Ok((api_version, kind, raw))
}

/// The protobuf envelope of the JSON object `object`.
#[cfg(feature = "protobuf")]
pub fn encode_object(object: &Value) -> Result<Bytes, ProtoError> {
    let (api_version, kind, raw) = message_from_object(object)?;
    Ok(Bytes::from(
        Envelope {
            api_version,
            kind,
            raw,
            ..Envelope::default()
        }
        .encode(),
    ))
}

/// One frame of a protobuf watch: a `metav1.WatchEvent` whose `object.raw` is the object's envelope.
#[cfg(feature = "protobuf")]
pub fn encode_watch_event(event_type: &str, object: &Value) -> Result<Bytes, ProtoError> {
    let envelope = encode_object(object)?;
    let event = serde_json::json!({"type": event_type, "object": {}});
    let descriptor = registry::registry()
        .meta_message("WatchEvent")
        .ok_or_else(|| ProtoError::Schema("no WatchEvent message".into()))?;
    let mut message = codec::from_json(descriptor, &event)?;
    let object_field = descriptor
        .field_by_name("object")
        .ok_or_else(|| ProtoError::Schema("WatchEvent has no object".into()))?;
    let object_message = object_field.mut_message(&mut *message);
    let raw_field = object_message
        .descriptor_dyn()
        .field_by_name("raw")
        .ok_or_else(|| ProtoError::Schema("RawExtension has no raw".into()))?;
    raw_field.set_singular_field(
        object_message,
        protobuf::reflect::ReflectValueBox::Bytes(envelope.to_vec()),
    );
    let bytes = message
        .write_to_bytes_dyn()
        .map_err(|e| ProtoError::Wire(e.to_string()))?;
    Ok(Bytes::from(envelope::frame(&bytes)))
}

/// Reads one protobuf watch event (a frame without its length prefix): its type and its object.
#[cfg(feature = "protobuf")]
pub fn decode_watch_event(message: &[u8]) -> Result<(String, Value), ProtoError> {
    use protobuf::reflect::ReflectValueRef;
    let descriptor = registry::registry()
        .meta_message("WatchEvent")
        .ok_or_else(|| ProtoError::Schema("no WatchEvent message".into()))?;
    let event = descriptor
        .parse_from_bytes(message)
        .map_err(|e| ProtoError::Wire(e.to_string()))?;
    let field = |m: &dyn protobuf::MessageDyn, name: &str| {
        m.descriptor_dyn()
            .field_by_name(name)
            .ok_or_else(|| ProtoError::Schema(format!("no field {name}")))
    };
    let event_type = match field(&*event, "type")?.get_singular(&*event) {
        Some(ReflectValueRef::String(s)) => s.to_string(),
        _ => String::new(),
    };
    let object = field(&*event, "object")?.get_message(&*event);
    let raw = match field(&*object, "raw")?.get_singular(&*object) {
        Some(ReflectValueRef::Bytes(b)) => b.to_vec(),
        _ => Vec::new(),
    };
    let envelope = Envelope::decode(&raw).map_err(|e| ProtoError::Wire(e.to_string()))?;
    let object = object_from_message(&envelope.api_version, &envelope.kind, &envelope.raw)?;
    Ok((event_type, object))
}

/// Without the `protobuf` feature nothing is written as protobuf ([`negotiate`] never chooses it).
#[cfg(not(feature = "protobuf"))]
pub fn encode_object(_object: &Value) -> Result<Bytes, ProtoError> {
    Err(ProtoError::NotBuilt)
}

/// Without the `protobuf` feature nothing is written as protobuf ([`negotiate`] never chooses it).
#[cfg(not(feature = "protobuf"))]
pub fn encode_watch_event(_event_type: &str, _object: &Value) -> Result<Bytes, ProtoError> {
    Err(ProtoError::NotBuilt)
}

/// What an `Accept` header asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// JSON (also for `*/*`, YAML and anything kube-sim does not know).
    Json,
    /// Protobuf.
    Protobuf,
}

/// The response format for `accept`, for a built-in kind (`custom` false) or a custom resource. The
/// client's media ranges are tried by quality, then in order; protobuf is chosen only for a built-in kind
/// and not for server-side tables. A protobuf-only `Accept` for a custom resource is 406 `NotAcceptable`.
/// Without the `protobuf` feature every kind is negotiated as a custom resource.
pub fn negotiate(accept: &str, custom: bool) -> Result<Output, ApiError> {
    let custom = custom || !SERVES_PROTOBUF;
    let mut ranges: Vec<(f32, String, bool)> = accept
        .split(',')
        .filter(|r| !r.trim().is_empty())
        .map(|range| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let mut q = 1.0;
            let mut table = false;
            for p in parts {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                match k.trim() {
                    "q" => q = v.trim().parse().unwrap_or(1.0),
                    "as" => table = v.trim() == "Table",
                    _ => {}
                }
            }
            (q, media, table)
        })
        .collect();
    if ranges.is_empty() {
        return Ok(Output::Json);
    }
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut asked_only_protobuf = true;
    for (q, media, table) in &ranges {
        if *q <= 0.0 {
            continue;
        }
        if media == PROTOBUF {
            // Metadata-only answers have a protobuf form; tables do not.
            if !custom && !*table {
                return Ok(Output::Protobuf);
            }
            continue;
        }
        asked_only_protobuf = false;
        if matches!(
            media.as_str(),
            "application/json" | "application/yaml" | "*/*" | "application/*"
        ) {
            return Ok(Output::Json);
        }
    }
    if asked_only_protobuf && custom {
        return Err(ApiError::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: {CUSTOM_BODY_TYPES}"),
        ));
    }
    Ok(Output::Json)
}

#[cfg(all(test, feature = "protobuf"))]
mod tests;

#[cfg(all(test, not(feature = "protobuf")))]
mod without_the_feature {
    use super::*;

    #[test]
    fn built_in_kinds_are_served_as_custom_resources_are() {
        let pod = BodyTarget {
            api_version: "v1",
            kind: "Pod",
            custom: false,
        };
        // JSON whenever the client takes it, 406 when it takes protobuf alone.
        let either = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(negotiate(either, false).unwrap(), Output::Json);
        assert_eq!(negotiate(PROTOBUF, false).unwrap_err().code, 406);
        // A protobuf body is 415, naming only the types this build reads.
        let refused = decode_body(PROTOBUF, b"k8s\0", pod).unwrap_err();
        assert_eq!(refused.code, 415);
        assert!(refused.message.ends_with(CUSTOM_BODY_TYPES), "{}", refused.message);
        assert_eq!(decode_body("application/json", br#"{"a":1}"#, pod).unwrap()["a"], 1);
        assert_eq!(encode_object(&serde_json::json!({})).unwrap_err(), ProtoError::NotBuilt);
    }
}
