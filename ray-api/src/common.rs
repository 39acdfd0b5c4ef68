//! Small types shared by several kinds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A JSON number kept exactly as the user wrote it (integer or decimal), used for KubeRay's
/// `float32` fields such as `entrypointNumCpus`.
///
/// Why not `f32`: serialising an `f32` turns `1` into `1.0`, so reading and writing an object
/// would change it. This keeps the original form and still offers the value as a float.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct JsonNumber(pub serde_json::Number);

impl JsonNumber {
    /// The value as a 64-bit float (what KubeRay's `float32` fields hold, widened).
    pub fn as_f64(&self) -> f64 {
        self.0.as_f64().unwrap_or(0.0)
    }

    /// The value as KubeRay's `float32`.
    pub fn as_f32(&self) -> f32 {
        self.as_f64() as f32
    }
}

impl From<f64> for JsonNumber {
    fn from(value: f64) -> Self {
        JsonNumber(serde_json::Number::from_f64(value).unwrap_or_else(|| serde_json::Number::from(0)))
    }
}

impl From<i64> for JsonNumber {
    fn from(value: i64) -> Self {
        JsonNumber(serde_json::Number::from(value))
    }
}

/// A Kubernetes object embedded in a spec (`headGroupSpec.headService`, `RayService.spec.serveService`).
///
/// k8s-openapi's resource types always write `apiVersion` and `kind`, but users usually leave them out of an
/// embedded object; this wrapper remembers whether they were written so that reading and writing a
/// RayCluster neither adds nor loses a field. It dereferences to the object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Embedded<T> {
    /// The object.
    pub object: T,
    /// Whether the input carried `apiVersion` / `kind` (they are written back only then).
    pub type_meta_written: bool,
}

/// The keys k8s-openapi adds to every resource it serialises.
const TYPE_META_KEYS: [&str; 2] = ["apiVersion", "kind"];

impl<T> Embedded<T> {
    /// Wraps an object built in code; it serialises without `apiVersion` / `kind`.
    pub fn new(object: T) -> Self {
        Self {
            object,
            type_meta_written: false,
        }
    }
}

impl<T> From<T> for Embedded<T> {
    fn from(object: T) -> Self {
        Self::new(object)
    }
}

impl<T> std::ops::Deref for Embedded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.object
    }
}

impl<T> std::ops::DerefMut for Embedded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.object
    }
}

impl<T: Serialize> Serialize for Embedded<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut value = serde_json::to_value(&self.object).map_err(serde::ser::Error::custom)?;
        if !self.type_meta_written
            && let Some(map) = value.as_object_mut()
        {
            for key in TYPE_META_KEYS {
                map.remove(key);
            }
        }
        value.serialize(serializer)
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Embedded<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        let type_meta_written = TYPE_META_KEYS.iter().any(|key| value.get(key).is_some());
        let object = T::deserialize(value).map_err(serde::de::Error::custom)?;
        Ok(Self {
            object,
            type_meta_written,
        })
    }
}

impl<T: JsonSchema> JsonSchema for Embedded<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}
