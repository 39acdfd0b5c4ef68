//! Macros for KubeRay's string enums.
//!
//! Two flavours, matching what KubeRay's CRD does for the field:
//! - [`closed_string_enum!`]: the CRD lists the allowed values (`enum:`), so the API server
//!   rejects anything else; the Rust enum is exhaustive and its schema carries the same `enum`.
//! - [`open_string_enum!`]: the CRD field is a plain `string` (KubeRay checks the value in code
//!   or only ever writes known values); unknown text is kept in an `Unknown(String)` variant so
//!   that reading never fails and the value round-trips unchanged.

/// Declares an exhaustive string enum whose JSON values are exactly the given strings.
macro_rules! closed_string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize, schemars::JsonSchema,
        )]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $value)] $variant ),+
        }

        impl $name {
            /// Every value, in KubeRay's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The JSON string of this value.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $( $name::$variant => $value ),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// Declares a string enum with known values plus `Unknown(String)` for any other text.
macro_rules! open_string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value KubeRay does not define, kept verbatim.
            Unknown(String),
        }

        impl $name {
            /// Every known value, in KubeRay's order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// The JSON string of this value.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $value, )+
                    $name::Unknown(other) => other.as_str(),
                }
            }

            /// Parses a JSON string; unknown text becomes `Unknown`.
            pub fn from_str_value(value: &str) -> Self {
                match value {
                    $( $value => $name::$variant, )+
                    other => $name::Unknown(other.to_string()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                $name::from_str_value(value)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
                Ok($name::from_str_value(&text))
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string" })
            }
        }
    };
}

pub(crate) use closed_string_enum;
pub(crate) use open_string_enum;
