//! The protobuf envelope of every object kube-apiserver reads or writes: the magic `k8s\0` followed by a
//! `runtime.Unknown` that names the object's `apiVersion`/`kind` and carries its message in `raw`; and the
//! length-prefixed frames of a protobuf watch.

use protobuf::MessageDyn;
use protobuf::reflect::{MessageDescriptor, ReflectValueBox, ReflectValueRef};

use super::registry::message_in;

/// The proto package of `runtime.Unknown`.
const RUNTIME: &str = "apimachinery.pkg.runtime";

/// The four bytes every protobuf object starts with.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// Why a body is not an envelope, worded as kube-apiserver's protobuf serializer words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// No bytes at all.
    #[error("empty data")]
    EmptyData,
    /// The magic prefix is missing.
    #[error("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")]
    NotMarked,
    /// Only the magic prefix.
    #[error("empty body")]
    EmptyBody,
    /// The bytes after the prefix are not a `runtime.Unknown`.
    #[error("{0}")]
    Malformed(String),
}

/// A decoded envelope.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Envelope {
    /// `typeMeta.apiVersion` (may be empty).
    pub api_version: String,
    /// `typeMeta.kind` (may be empty).
    pub kind: String,
    /// The object's message.
    pub raw: Vec<u8>,
    /// `contentEncoding` (empty: none).
    pub content_encoding: String,
    /// `contentType` (empty: protobuf).
    pub content_type: String,
}

/// A string or bytes field of `message` (empty when unset).
fn field_bytes<'a>(message: &'a dyn MessageDyn, name: &str) -> &'a [u8] {
    match message
        .descriptor_dyn()
        .field_by_name(name)
        .and_then(|f| f.get_singular(message))
    {
        Some(ReflectValueRef::String(s)) => s.as_bytes(),
        Some(ReflectValueRef::Bytes(b)) => b,
        _ => &[],
    }
}

fn field_string(message: &dyn MessageDyn, name: &str) -> String {
    String::from_utf8_lossy(field_bytes(message, name)).into_owned()
}

fn set(message: &mut dyn MessageDyn, name: &str, value: ReflectValueBox) {
    if let Some(field) = message.descriptor_dyn().field_by_name(name) {
        field.set_singular_field(message, value);
    }
}

fn unknown() -> Result<MessageDescriptor, EnvelopeError> {
    message_in(RUNTIME, "Unknown").ok_or_else(|| EnvelopeError::Malformed("no runtime.Unknown message".into()))
}

impl Envelope {
    /// Reads an envelope from a request body.
    pub fn decode(body: &[u8]) -> Result<Self, EnvelopeError> {
        if body.is_empty() {
            return Err(EnvelopeError::EmptyData);
        }
        let Some(rest) = body.strip_prefix(&MAGIC) else {
            return Err(EnvelopeError::NotMarked);
        };
        if rest.is_empty() {
            return Err(EnvelopeError::EmptyBody);
        }
        let descriptor = unknown()?;
        let unknown = descriptor
            .parse_from_bytes(rest)
            .map_err(|e| EnvelopeError::Malformed(e.to_string()))?;
        let (api_version, kind) = match descriptor.field_by_name("typeMeta") {
            Some(f) if f.has_field(&*unknown) => {
                let type_meta = f.get_message(&*unknown);
                (
                    field_string(&*type_meta, "apiVersion"),
                    field_string(&*type_meta, "kind"),
                )
            }
            _ => (String::new(), String::new()),
        };
        Ok(Self {
            api_version,
            kind,
            raw: field_bytes(&*unknown, "raw").to_vec(),
            content_encoding: field_string(&*unknown, "contentEncoding"),
            content_type: field_string(&*unknown, "contentType"),
        })
    }

    /// The envelope's bytes, magic included. Like Go's marshaller, empty `contentEncoding` and
    /// `contentType` are written.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        let Ok(descriptor) = unknown() else {
            return out;
        };
        let mut unknown = descriptor.new_instance();
        if let Some(f) = descriptor.field_by_name("typeMeta") {
            let type_meta = f.mut_message(&mut *unknown);
            set(
                type_meta,
                "apiVersion",
                ReflectValueBox::String(self.api_version.clone()),
            );
            set(type_meta, "kind", ReflectValueBox::String(self.kind.clone()));
        }
        set(&mut *unknown, "raw", ReflectValueBox::Bytes(self.raw.clone()));
        set(
            &mut *unknown,
            "contentEncoding",
            ReflectValueBox::String(self.content_encoding.clone()),
        );
        set(
            &mut *unknown,
            "contentType",
            ReflectValueBox::String(self.content_type.clone()),
        );
        // Writing a complete message to a Vec cannot fail.
        out.extend(unknown.write_to_bytes_dyn().unwrap_or_default());
        out
    }
}

/// One frame of a protobuf watch stream: the message's length as 4 big-endian bytes, then the message.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(4 + message.len());
    out.extend(len.to_be_bytes());
    out.extend(message);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// The bytes kubectl 1.33 sends for `kubectl create namespace foo`.
    const KUBECTL_NAMESPACE: &[u8] = b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09Namespace\x12\x1b\x0a\x13\x0a\x03foo\x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x12\x00\x1a\x02\x0a\x00\x1a\x00\x22\x00";

    #[test]
    fn reads_kubectls_envelope() {
        let e = Envelope::decode(KUBECTL_NAMESPACE).unwrap();
        assert_eq!((e.api_version.as_str(), e.kind.as_str()), ("v1", "Namespace"));
        assert_eq!(e.raw.len(), 0x1b);
        assert_eq!((e.content_encoding.as_str(), e.content_type.as_str()), ("", ""));
    }

    #[test]
    fn writes_what_it_reads() {
        let e = Envelope::decode(KUBECTL_NAMESPACE).unwrap();
        assert_eq!(e.encode(), KUBECTL_NAMESPACE);
    }

    #[test]
    fn bodies_that_are_not_envelopes_are_named_as_kube_apiserver_names_them() {
        assert_eq!(Envelope::decode(b""), Err(EnvelopeError::EmptyData));
        assert_eq!(Envelope::decode(b"k8s\0"), Err(EnvelopeError::EmptyBody));
        assert_eq!(Envelope::decode(b"{\"kind\":\"Pod\"}"), Err(EnvelopeError::NotMarked));
        assert_eq!(
            EnvelopeError::NotMarked.to_string(),
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        );
        assert!(matches!(
            Envelope::decode(b"k8s\0\x0a\xff\xff\xff"),
            Err(EnvelopeError::Malformed(_))
        ));
        assert!(matches!(
            Envelope::decode(b"k8s\0\x0f"),
            Err(EnvelopeError::Malformed(_))
        ));
    }

    #[test]
    fn frames_are_length_prefixed_big_endian() {
        assert_eq!(frame(b"abc"), b"\0\0\0\x03abc");
    }
}
