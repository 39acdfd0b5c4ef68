//! The generic mapping between a protobuf message and the JSON Go's `encoding/json` writes for the same
//! object, driven by the message descriptors and the [`registry`](super::registry) shapes.
//!
//! Go's protobuf marshaller writes every non-pointer field, empty or not, and a pointer field only when it
//! is set; its JSON marshaller leaves out empty `omitempty` fields and writes `null` for an empty slice or
//! map without `omitempty`. Reading a message therefore keeps a set field unless it is an empty scalar of an
//! optional property, and writes empty repeated fields of required properties as `null`. Nested messages
//! (Go structs) are always written once present, as Go does (`"status": {}`).

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use protobuf::MessageDyn;
use protobuf::reflect::{
    FieldDescriptor, MessageDescriptor, ReflectValueBox, ReflectValueRef, RuntimeFieldType, RuntimeType,
};
use serde_json::{Map, Value};

use super::ProtoError;
use super::registry::registry;
use super::special::{self, Special};

/// The JSON object of `message`.
pub(super) fn to_json(message: &dyn MessageDyn) -> Result<Value, ProtoError> {
    let descriptor = message.descriptor_dyn();
    if let Some(special) = Special::of(&descriptor) {
        return special::to_json(special, message, &to_json);
    }
    let shape = registry().shape(descriptor.full_name());
    let mut out = Map::new();
    for field in descriptor.fields() {
        let name = shape.json_name(field.name());
        let required = shape.is_required(name);
        let value = match field.runtime_field_type() {
            RuntimeFieldType::Singular(_) if shape.is_inlined(field.name()) => {
                if let Some(ReflectValueRef::Message(m)) = field.get_singular(message)
                    && let Value::Object(fields) = to_json(&*m)?
                {
                    out.extend(fields);
                }
                continue;
            }
            RuntimeFieldType::Singular(_) => match field.get_singular(message) {
                None => continue,
                Some(ReflectValueRef::Message(m)) => to_json(&*m)?,
                Some(scalar) if !required && is_zero(&scalar) => continue,
                Some(scalar) => scalar_to_json(&scalar)?,
            },
            RuntimeFieldType::Repeated(_) => {
                let repeated = field.get_repeated(message);
                if repeated.is_empty() {
                    if required {
                        out.insert(name.to_string(), Value::Null);
                    }
                    continue;
                }
                Value::Array(
                    (0..repeated.len())
                        .map(|i| element_to_json(&repeated.get(i)))
                        .collect::<Result<_, _>>()?,
                )
            }
            RuntimeFieldType::Map(..) => {
                let map = field.get_map(message);
                if map.is_empty() {
                    if required {
                        out.insert(name.to_string(), Value::Null);
                    }
                    continue;
                }
                // Go writes map keys sorted.
                let mut sorted = BTreeMap::new();
                for (k, v) in &map {
                    let key = match k {
                        ReflectValueRef::String(s) => s.to_string(),
                        other => scalar_to_json(&other)?.to_string(),
                    };
                    sorted.insert(key, element_to_json(&v)?);
                }
                Value::Object(sorted.into_iter().collect())
            }
        };
        out.insert(name.to_string(), value);
    }
    Ok(Value::Object(out))
}

fn element_to_json(value: &ReflectValueRef<'_>) -> Result<Value, ProtoError> {
    match value {
        ReflectValueRef::Message(m) => to_json(&**m),
        scalar => scalar_to_json(scalar),
    }
}

fn is_zero(value: &ReflectValueRef<'_>) -> bool {
    match value {
        ReflectValueRef::U32(v) => *v == 0,
        ReflectValueRef::U64(v) => *v == 0,
        ReflectValueRef::I32(v) => *v == 0,
        ReflectValueRef::I64(v) => *v == 0,
        ReflectValueRef::F32(v) => *v == 0.0,
        ReflectValueRef::F64(v) => *v == 0.0,
        ReflectValueRef::Bool(v) => !*v,
        ReflectValueRef::String(v) => v.is_empty(),
        ReflectValueRef::Bytes(v) => v.is_empty(),
        ReflectValueRef::Enum(_, v) => *v == 0,
        ReflectValueRef::Message(_) => false,
    }
}

fn scalar_to_json(value: &ReflectValueRef<'_>) -> Result<Value, ProtoError> {
    Ok(match value {
        ReflectValueRef::U32(v) => Value::from(*v),
        ReflectValueRef::U64(v) => Value::from(*v),
        ReflectValueRef::I32(v) => Value::from(*v),
        ReflectValueRef::I64(v) => Value::from(*v),
        ReflectValueRef::F32(v) => Value::from(f64::from(*v)),
        ReflectValueRef::F64(v) => Value::from(*v),
        ReflectValueRef::Bool(v) => Value::Bool(*v),
        ReflectValueRef::String(v) => Value::String(v.to_string()),
        ReflectValueRef::Bytes(v) => Value::String(BASE64.encode(v)),
        ReflectValueRef::Enum(_, v) => Value::from(*v),
        ReflectValueRef::Message(m) => to_json(&**m)?,
    })
}

/// The message `descriptor` holding the JSON object `value`. Properties the message does not have are
/// left out, as Go's decoder drops fields its struct lacks; `null` is an unset field.
pub(super) fn from_json(descriptor: &MessageDescriptor, value: &Value) -> Result<Box<dyn MessageDyn>, ProtoError> {
    if let Some(special) = Special::of(descriptor) {
        return special::from_json(special, descriptor, value, &from_json);
    }
    let Value::Object(object) = value else {
        return Err(ProtoError::Value(format!(
            "expected an object for {}, found {value}",
            descriptor.name()
        )));
    };
    let shape = registry().shape(descriptor.full_name());
    let mut message = descriptor.new_instance();
    for field in descriptor.fields().filter(|f| shape.is_inlined(f.name())) {
        // An embedded struct takes its fields from the parent object.
        if let RuntimeFieldType::Singular(RuntimeType::Message(inner)) = field.runtime_field_type()
            && inner
                .fields()
                .any(|f| object.get(f.name()).is_some_and(|v| !v.is_null()))
        {
            field.set_singular_field(&mut *message, ReflectValueBox::Message(from_json(&inner, value)?));
        }
    }
    for (property, value) in object {
        if value.is_null() {
            continue;
        }
        let Some(field) = descriptor.field_by_name(shape.proto_name(property)) else {
            continue;
        };
        set_field(&mut *message, &field, value).map_err(|e| e.within(property))?;
    }
    Ok(message)
}

fn set_field(message: &mut dyn MessageDyn, field: &FieldDescriptor, value: &Value) -> Result<(), ProtoError> {
    match field.runtime_field_type() {
        RuntimeFieldType::Singular(ty) => field.set_singular_field(message, value_box(&ty, value)?),
        RuntimeFieldType::Repeated(ty) => {
            let Value::Array(items) = value else {
                return Err(ProtoError::Value(format!("expected an array, found {value}")));
            };
            for item in items {
                let element = value_box(&ty, item)?;
                field.mut_repeated(message).push(element);
            }
        }
        RuntimeFieldType::Map(key_type, value_type) => {
            let Value::Object(entries) = value else {
                return Err(ProtoError::Value(format!("expected an object, found {value}")));
            };
            for (k, v) in entries {
                let key = value_box(&key_type, &Value::String(k.clone()))?;
                let element = value_box(&value_type, v)?;
                field.mut_map(message).insert(key, element);
            }
        }
    }
    Ok(())
}

fn value_box(ty: &RuntimeType, value: &Value) -> Result<ReflectValueBox, ProtoError> {
    let wrong = || ProtoError::Value(format!("{value} is not a valid {ty}"));
    let int = || value.as_i64().ok_or_else(wrong);
    Ok(match ty {
        RuntimeType::I32 => ReflectValueBox::I32(i32::try_from(int()?).map_err(|_| wrong())?),
        RuntimeType::I64 => ReflectValueBox::I64(int()?),
        RuntimeType::U32 => ReflectValueBox::U32(u32::try_from(int()?).map_err(|_| wrong())?),
        RuntimeType::U64 => ReflectValueBox::U64(value.as_u64().ok_or_else(wrong)?),
        RuntimeType::F32 => ReflectValueBox::F32(value.as_f64().ok_or_else(wrong)? as f32),
        RuntimeType::F64 => ReflectValueBox::F64(value.as_f64().ok_or_else(wrong)?),
        RuntimeType::Bool => ReflectValueBox::Bool(value.as_bool().ok_or_else(wrong)?),
        RuntimeType::String => ReflectValueBox::String(value.as_str().ok_or_else(wrong)?.to_string()),
        RuntimeType::VecU8 => {
            ReflectValueBox::Bytes(BASE64.decode(value.as_str().ok_or_else(wrong)?).map_err(|_| wrong())?)
        }
        RuntimeType::Enum(e) => ReflectValueBox::Enum(e.clone(), i32::try_from(int()?).map_err(|_| wrong())?),
        RuntimeType::Message(m) => ReflectValueBox::Message(from_json(m, value)?),
    })
}
