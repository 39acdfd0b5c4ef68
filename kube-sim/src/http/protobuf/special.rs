//! The apimachinery types whose JSON is not their protobuf message: `resource.Quantity`,
//! `intstr.IntOrString`, `metav1.Time`/`MicroTime`/`Duration`/`FieldsV1`, `runtime.RawExtension`, the
//! apiextensions `JSON` and `JSONSchemaPropsOr*` unions, and the named string slices (`ExtraValue`,
//! `Verbs`) that protobuf wraps in an `items` message. Each is written as Go's `MarshalJSON` writes it.

use jiff::Timestamp;
use protobuf::MessageDyn;
use protobuf::reflect::{MessageDescriptor, ReflectValueBox, ReflectValueRef, RuntimeFieldType, RuntimeType};
use serde_json::Value;

use super::ProtoError;

/// A type with its own JSON form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Special {
    /// `resource.Quantity`: the quantity string.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `metav1.Time`: RFC 3339 in UTC to the second, `null` when zero.
    Time,
    /// `metav1.MicroTime`: RFC 3339 in UTC to the microsecond, `null` when zero.
    MicroTime,
    /// `metav1.Duration`: Go's duration text (`1m30s`).
    Duration,
    /// `metav1.FieldsV1`, `runtime.RawExtension`, apiextensions `JSON`: JSON carried as bytes.
    RawJson,
    /// `JSONSchemaPropsOrArray`: a schema or an array of schemas.
    SchemaOrArray,
    /// `JSONSchemaPropsOrBool`: a schema or a boolean.
    SchemaOrBool,
    /// `JSONSchemaPropsOrStringArray`: a schema or an array of strings.
    SchemaOrStringArray,
    /// A message whose only field is `repeated string items`: a JSON array of strings.
    StringList,
}

impl Special {
    /// The special type `message` is, if any.
    pub(super) fn of(message: &MessageDescriptor) -> Option<Special> {
        let special = match message.full_name() {
            "apimachinery.pkg.api.resource.Quantity" => Special::Quantity,
            "apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
            "apimachinery.pkg.apis.meta.v1.Time" => Special::Time,
            "apimachinery.pkg.apis.meta.v1.MicroTime" => Special::MicroTime,
            "apimachinery.pkg.apis.meta.v1.Duration" => Special::Duration,
            "apimachinery.pkg.apis.meta.v1.FieldsV1"
            | "apimachinery.pkg.runtime.RawExtension"
            | "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON" => Special::RawJson,
            "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray" => Special::SchemaOrArray,
            "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool" => Special::SchemaOrBool,
            "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray" => {
                Special::SchemaOrStringArray
            }
            _ if is_string_list(message) => Special::StringList,
            _ => return None,
        };
        Some(special)
    }
}

fn is_string_list(message: &MessageDescriptor) -> bool {
    let mut fields = message.fields();
    match (fields.next(), fields.next()) {
        (Some(only), None) => {
            only.name() == "items"
                && matches!(
                    only.runtime_field_type(),
                    RuntimeFieldType::Repeated(RuntimeType::String)
                )
        }
        _ => false,
    }
}

/// Reads the singular field `name` of `message`, when it is set.
fn get<'a>(message: &'a dyn MessageDyn, name: &str) -> Option<ReflectValueRef<'a>> {
    let field = message.descriptor_dyn().field_by_name(name)?;
    field.get_singular(message)
}

/// Sets the singular field `name` of `message`.
fn set(message: &mut dyn MessageDyn, name: &str, value: ReflectValueBox) -> Result<(), ProtoError> {
    let field = message
        .descriptor_dyn()
        .field_by_name(name)
        .ok_or_else(|| ProtoError::Schema(format!("{} has no field {name}", message.descriptor_dyn().full_name())))?;
    field.set_singular_field(message, value);
    Ok(())
}

fn i64_of(value: Option<ReflectValueRef<'_>>) -> Option<i64> {
    match value? {
        ReflectValueRef::I64(v) => Some(v),
        ReflectValueRef::I32(v) => Some(i64::from(v)),
        _ => None,
    }
}

fn bytes_of<'a>(value: Option<ReflectValueRef<'a>>) -> &'a [u8] {
    match value {
        Some(ReflectValueRef::Bytes(b)) => b,
        _ => &[],
    }
}

/// Formats Unix `seconds` (+`nanos`) as Go formats a `metav1.Time` (`micro` false) or `MicroTime`.
pub(super) fn format_time(seconds: i64, nanos: i32, micro: bool) -> Result<String, ProtoError> {
    let nanos = if micro { nanos } else { 0 };
    let ts = Timestamp::new(seconds, nanos).map_err(|e| ProtoError::Value(format!("time out of range: {e}")))?;
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(ts.strftime(format).to_string())
}

/// Parses an RFC 3339 time into Unix seconds and nanoseconds.
pub(super) fn parse_time(text: &str) -> Result<(i64, i32), ProtoError> {
    let ts: Timestamp = text
        .parse()
        .map_err(|e| ProtoError::Value(format!("parsing time {text:?}: {e}")))?;
    Ok((ts.as_second(), ts.subsec_nanosecond()))
}

/// The JSON of `message`, a special type.
pub(super) fn to_json(
    special: Special,
    message: &dyn MessageDyn,
    schema: &dyn Fn(&dyn MessageDyn) -> Result<Value, ProtoError>,
) -> Result<Value, ProtoError> {
    Ok(match special {
        Special::Quantity => match get(message, "string") {
            Some(ReflectValueRef::String(s)) => Value::String(s.to_string()),
            _ => Value::String("0".into()),
        },
        Special::IntOrString => match i64_of(get(message, "type")) {
            Some(1) => match get(message, "strVal") {
                Some(ReflectValueRef::String(s)) => Value::String(s.to_string()),
                _ => Value::String(String::new()),
            },
            _ => Value::from(i64_of(get(message, "intVal")).unwrap_or(0)),
        },
        Special::Time | Special::MicroTime => match i64_of(get(message, "seconds")) {
            None => Value::Null,
            Some(seconds) => {
                let nanos = i64_of(get(message, "nanos")).unwrap_or(0);
                let nanos =
                    i32::try_from(nanos).map_err(|_| ProtoError::Value(format!("nanos {nanos} out of range")))?;
                Value::String(format_time(seconds, nanos, special == Special::MicroTime)?)
            }
        },
        Special::Duration => Value::String(kube_compat::go_duration::format_nanos(
            i64_of(get(message, "duration")).unwrap_or(0),
        )),
        Special::RawJson => {
            let field = if message.descriptor_dyn().field_by_name("Raw").is_some() {
                "Raw"
            } else {
                "raw"
            };
            let raw = bytes_of(get(message, field));
            if raw.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(raw).map_err(|e| ProtoError::Value(format!("embedded JSON: {e}")))?
            }
        }
        Special::SchemaOrArray => {
            let many = map_repeated(message, "jSONSchemas", &|v| match v {
                ReflectValueRef::Message(m) => schema(&*m),
                _ => Ok(Value::Null),
            })?;
            if many.is_empty() {
                optional_schema(message, schema)?
            } else {
                Value::Array(many)
            }
        }
        Special::SchemaOrBool => match get(message, "schema") {
            Some(ReflectValueRef::Message(m)) => schema(&*m)?,
            _ => Value::Bool(matches!(get(message, "allows"), Some(ReflectValueRef::Bool(true)))),
        },
        Special::SchemaOrStringArray => {
            let strings = map_repeated(message, "property", &string_value)?;
            if strings.is_empty() {
                optional_schema(message, schema)?
            } else {
                Value::Array(strings)
            }
        }
        Special::StringList => Value::Array(map_repeated(message, "items", &string_value)?),
    })
}

fn string_value(value: ReflectValueRef<'_>) -> Result<Value, ProtoError> {
    match value {
        ReflectValueRef::String(s) => Ok(Value::String(s.to_string())),
        other => Err(ProtoError::Value(format!("expected a string, found {other:?}"))),
    }
}

fn optional_schema(
    message: &dyn MessageDyn,
    schema: &dyn Fn(&dyn MessageDyn) -> Result<Value, ProtoError>,
) -> Result<Value, ProtoError> {
    match get(message, "schema") {
        Some(ReflectValueRef::Message(m)) => schema(&*m),
        _ => Ok(Value::Null),
    }
}

/// Maps each element of the repeated field `name` of `message`.
fn map_repeated(
    message: &dyn MessageDyn,
    name: &str,
    each: &dyn Fn(ReflectValueRef<'_>) -> Result<Value, ProtoError>,
) -> Result<Vec<Value>, ProtoError> {
    let Some(field) = message.descriptor_dyn().field_by_name(name) else {
        return Ok(Vec::new());
    };
    let repeated = field.get_repeated(message);
    (0..repeated.len()).map(|i| each(repeated.get(i))).collect()
}

/// Builds a `JSONSchemaProps` message of the given descriptor from its JSON object.
pub(super) type SchemaFromJson = dyn Fn(&MessageDescriptor, &Value) -> Result<Box<dyn MessageDyn>, ProtoError>;

/// Builds the special-type message `descriptor` from its JSON `value`; `schema` builds a
/// `JSONSchemaProps` message from a JSON object.
pub(super) fn from_json(
    special: Special,
    descriptor: &MessageDescriptor,
    value: &Value,
    schema: &SchemaFromJson,
) -> Result<Box<dyn MessageDyn>, ProtoError> {
    let mut message = descriptor.new_instance();
    let m = &mut *message;
    let wrong = || ProtoError::Value(format!("{value} is not a valid {}", descriptor.name()));
    match (special, value) {
        (Special::Quantity, Value::String(s)) => set(m, "string", ReflectValueBox::String(s.clone()))?,
        (Special::Quantity, Value::Number(n)) => set(m, "string", ReflectValueBox::String(n.to_string()))?,
        (Special::IntOrString, Value::Number(n)) => {
            let int = n.as_i64().and_then(|i| i32::try_from(i).ok()).ok_or_else(wrong)?;
            set(m, "type", ReflectValueBox::I64(0))?;
            set(m, "intVal", ReflectValueBox::I32(int))?;
        }
        (Special::IntOrString, Value::String(s)) => {
            set(m, "type", ReflectValueBox::I64(1))?;
            set(m, "strVal", ReflectValueBox::String(s.clone()))?;
        }
        (Special::Time | Special::MicroTime, Value::String(s)) => {
            let (seconds, nanos) = parse_time(s)?;
            set(m, "seconds", ReflectValueBox::I64(seconds))?;
            let nanos = if special == Special::MicroTime {
                (nanos / 1000) * 1000
            } else {
                0
            };
            set(m, "nanos", ReflectValueBox::I32(nanos))?;
        }
        (Special::Duration, Value::String(s)) => {
            let nanos = kube_compat::go_duration::parse_nanos(s).map_err(|e| ProtoError::Value(e.to_string()))?;
            set(m, "duration", ReflectValueBox::I64(nanos))?;
        }
        (Special::RawJson, _) => {
            let field = if descriptor.field_by_name("Raw").is_some() {
                "Raw"
            } else {
                "raw"
            };
            let raw = serde_json::to_vec(value).map_err(|e| ProtoError::Value(e.to_string()))?;
            set(m, field, ReflectValueBox::Bytes(raw))?;
        }
        (Special::SchemaOrArray, Value::Array(items)) => {
            let field = descriptor.field_by_name("jSONSchemas").ok_or_else(wrong)?;
            let schema_type = schema_descriptor(descriptor)?;
            for item in items {
                field
                    .mut_repeated(m)
                    .push(ReflectValueBox::Message(schema(&schema_type, item)?));
            }
        }
        (Special::SchemaOrBool, Value::Bool(b)) => set(m, "allows", ReflectValueBox::Bool(*b))?,
        (Special::SchemaOrBool, Value::Object(_)) => {
            set(m, "allows", ReflectValueBox::Bool(true))?;
            set(
                m,
                "schema",
                ReflectValueBox::Message(schema(&schema_descriptor(descriptor)?, value)?),
            )?;
        }
        (Special::SchemaOrStringArray | Special::StringList, Value::Array(items)) => {
            let name = if special == Special::StringList {
                "items"
            } else {
                "property"
            };
            let field = descriptor.field_by_name(name).ok_or_else(wrong)?;
            for item in items {
                let text = item.as_str().ok_or_else(wrong)?;
                field.mut_repeated(m).push(ReflectValueBox::String(text.to_string()));
            }
        }
        (Special::SchemaOrArray | Special::SchemaOrStringArray, Value::Object(_)) => {
            set(
                m,
                "schema",
                ReflectValueBox::Message(schema(&schema_descriptor(descriptor)?, value)?),
            )?;
        }
        _ => return Err(wrong()),
    }
    Ok(message)
}

/// The `JSONSchemaProps` message a `JSONSchemaPropsOr*` union carries.
fn schema_descriptor(union: &MessageDescriptor) -> Result<MessageDescriptor, ProtoError> {
    match union.field_by_name("schema").map(|f| f.runtime_field_type()) {
        Some(RuntimeFieldType::Singular(RuntimeType::Message(m))) => Ok(m),
        _ => Err(ProtoError::Schema(format!("{} has no schema field", union.full_name()))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use serde_json::json;

    use super::super::{BodyTarget, PROTOBUF, decode_body, encode_object, object_from_message};
    use super::*;

    /// `object` written as protobuf and read back.
    fn round_trip(object: &Value) -> Value {
        let target = BodyTarget {
            api_version: object["apiVersion"].as_str().unwrap(),
            kind: object["kind"].as_str().unwrap(),
            custom: false,
        };
        decode_body(PROTOBUF, &encode_object(object).unwrap(), target).unwrap()
    }

    #[test]
    fn times_are_rfc3339_in_utc_to_the_second_or_microsecond() {
        assert_eq!(
            format_time(1_704_164_645, 123_456_789, false).unwrap(),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            format_time(1_704_164_645, 123_456_789, true).unwrap(),
            "2024-01-02T03:04:05.123456Z"
        );
        assert_eq!(format_time(0, 0, false).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(parse_time("2024-01-02T04:04:05+01:00").unwrap(), (1_704_164_645, 0));
        assert!(parse_time("yesterday").is_err());
        // Go writes an unset (zero) time as an empty message and reads it back as null.
        let event = json!({"kind": "Event", "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": "e", "creationTimestamp": "2024-01-02T03:04:05Z"},
            "eventTime": "2024-01-02T03:04:05.500000Z", "deprecatedFirstTimestamp": "2024-01-02T03:04:06Z"});
        assert_eq!(round_trip(&event), event);
        let (_, _, raw) = crate::http::protobuf::message_from_object(&json!({"kind": "Namespace",
            "apiVersion": "v1", "metadata": {"name": "n"}}))
        .unwrap();
        // metadata { name: "n", creationTimestamp: <empty> } as kubectl writes it.
        let mut with_zero_time = raw.clone();
        with_zero_time[1] += 2;
        with_zero_time.extend([0x42, 0x00]);
        assert_eq!(
            object_from_message("v1", "Namespace", &with_zero_time).unwrap()["metadata"],
            json!({"name": "n", "creationTimestamp": null})
        );
    }

    #[test]
    fn quantities_int_or_strings_and_durations_keep_their_go_text() {
        let quota = json!({"kind": "ResourceQuota", "apiVersion": "v1", "metadata": {"name": "q"},
            "spec": {"hard": {"cpu": "500m", "memory": "1Gi", "pods": "2"}}});
        assert_eq!(round_trip(&quota), quota);
        // A number where a quantity belongs is written as its text.
        let numeric = json!({"kind": "ResourceQuota", "apiVersion": "v1", "metadata": {"name": "q"},
            "spec": {"hard": {"pods": 2}}});
        assert_eq!(round_trip(&numeric)["spec"]["hard"]["pods"], "2");
        let service = json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": "https"}]}});
        assert_eq!(round_trip(&service), service);
        let pdb = json!({"kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": "p"},
            "spec": {"minAvailable": "50%"}});
        assert_eq!(round_trip(&pdb), pdb);
        assert_eq!(kube_compat::go_duration::format_nanos(90_000_000_000), "1m30s");
    }

    #[test]
    fn embedded_json_and_unions_are_written_as_their_go_marshal_json() {
        let revision = json!({"kind": "ControllerRevision", "apiVersion": "apps/v1",
            "metadata": {"name": "r", "managedFields": [{"manager": "m", "operation": "Update",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]},
            "data": {"spec": {"replicas": 3}}, "revision": 2});
        assert_eq!(round_trip(&revision), revision);
        let review = json!({"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": "t"}, "spec": {"token": "x"},
            "status": {"authenticated": true, "user": {"username": "u", "extra": {"scopes": ["a", "b"]}}}});
        assert_eq!(round_trip(&review), review);
        let schema = |props: Value| {
            json!({"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
                "metadata": {"name": "t.x.io"}, "spec": {"group": "x.io", "scope": "Cluster",
                "names": {"plural": "t", "kind": "T"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": props}}]}})
        };
        for props in [
            json!({"type": "object", "additionalProperties": true}),
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "array", "items": {"type": "string"}}),
            json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}),
            json!({"type": "object", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}),
            json!({"type": "string", "default": "x", "enum": ["x", "y"], "example": {"any": [1]}}),
        ] {
            assert_eq!(round_trip(&schema(props.clone())), schema(props));
        }
    }

    #[test]
    fn secret_bytes_are_base64() {
        let secret = json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"},
            "data": {"k": "dg==", "bin": "AP8="}, "type": "Opaque"});
        assert_eq!(round_trip(&secret), secret);
    }
}
