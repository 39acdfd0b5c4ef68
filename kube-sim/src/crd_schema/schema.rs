//! A CRD version's `openAPIV3Schema` compiled once into a tree of [`Node`]s: the structural schema the
//! pruner, the defaulter, the validator and the CEL rules walk.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::cel::CompiledRule;

/// The JSON type a schema node declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonType {
    /// `object`.
    Object,
    /// `array`.
    Array,
    /// `string`.
    String,
    /// `integer`.
    Integer,
    /// `number`.
    Number,
    /// `boolean`.
    Boolean,
}

impl JsonType {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "object" => Self::Object,
            "array" => Self::Array,
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            _ => return None,
        })
    }

    /// The OpenAPI name (`integer`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Object => "object",
            Self::Array => "array",
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
        }
    }
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListType {
    /// `atomic` (the default).
    #[default]
    Atomic,
    /// `set`: items are unique scalars.
    Set,
    /// `map`: items are objects unique by `x-kubernetes-list-map-keys`.
    Map,
}

/// A `pattern`: the source (upstream prints it) and its regex, compiled on first use (a CRD carries hundreds
/// of patterns, most of which no object ever exercises).
#[derive(Debug)]
pub struct Pattern {
    /// The pattern as written in the CRD.
    pub source: String,
    regex: OnceLock<Option<Regex>>,
}

impl Pattern {
    /// Whether `s` matches; a pattern that does not compile matches everything (logged once).
    pub fn is_match(&self, s: &str) -> bool {
        let regex = self.regex.get_or_init(|| match Regex::new(&self.source) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(pattern = %self.source, error = %e, "CRD pattern not enforced");
                None
            }
        });
        regex.as_ref().is_none_or(|r| r.is_match(s))
    }
}

/// One schema node with everything validation, pruning and defaulting need.
#[derive(Debug, Default)]
pub struct Node {
    /// Declared `type` (none: any value).
    pub json_type: Option<JsonType>,
    /// `x-kubernetes-int-or-string`: the type is `integer` or `string`.
    pub int_or_string: bool,
    /// `format` (formats upstream strips from strings are dropped).
    pub format: Option<String>,
    /// `nullable`.
    pub nullable: bool,
    /// `enum`.
    pub enum_values: Vec<Value>,
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `exclusiveMaximum`.
    pub exclusive_maximum: bool,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `exclusiveMinimum`.
    pub exclusive_minimum: bool,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `maxLength`.
    pub max_length: Option<i64>,
    /// `minLength`.
    pub min_length: Option<i64>,
    /// `pattern`.
    pub pattern: Option<Pattern>,
    /// `maxItems`.
    pub max_items: Option<i64>,
    /// `minItems`.
    pub min_items: Option<i64>,
    /// `uniqueItems`.
    pub unique_items: bool,
    /// `maxProperties`.
    pub max_properties: Option<i64>,
    /// `minProperties`.
    pub min_properties: Option<i64>,
    /// `required`.
    pub required: Vec<String>,
    /// `properties`, sorted by name so errors come out in a stable order.
    pub properties: BTreeMap<String, Node>,
    /// `additionalProperties` as a schema (a map).
    pub additional_properties: Option<Box<Node>>,
    /// `additionalProperties: true` (keep every key, no schema).
    pub additional_properties_any: bool,
    /// `items`.
    pub items: Option<Box<Node>>,
    /// `anyOf` value validations.
    pub any_of: Vec<Node>,
    /// `allOf` value validations.
    pub all_of: Vec<Node>,
    /// `oneOf` value validations.
    pub one_of: Vec<Node>,
    /// `not` value validation.
    pub not: Option<Box<Node>>,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded_resource: bool,
    /// `x-kubernetes-list-type`.
    pub list_type: ListType,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `default`.
    pub default: Option<Value>,
    /// `x-kubernetes-validations`, compiled.
    pub rules: Vec<CompiledRule>,
    /// Whether this node or any below it carries CEL rules (lets the evaluator skip rule-free subtrees).
    pub has_rules_below: bool,
    /// Whether this node or any below it carries a default.
    pub has_defaults_below: bool,
    /// Whether this node or any below it is an `x-kubernetes-embedded-resource`.
    pub has_embedded_below: bool,
}

/// String formats upstream validates; any other format on a string is stripped (ignored).
const SUPPORTED_STRING_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

/// Why a schema could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// An `x-kubernetes-validations` rule that does not compile.
    #[error("{path}: rule {rule:?} does not compile: {reason}")]
    Rule {
        /// Where in the schema.
        path: String,
        /// The rule.
        rule: String,
        /// The compiler's message.
        reason: String,
    },
}

fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

fn float(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

impl Node {
    /// Compiles a schema object; `path` names the node in error messages.
    pub fn compile(schema: &Value, path: &str) -> Result<Self, SchemaError> {
        let mut node = Node {
            json_type: schema.get("type").and_then(Value::as_str).and_then(JsonType::parse),
            int_or_string: flag(schema, "x-kubernetes-int-or-string"),
            nullable: flag(schema, "nullable"),
            enum_values: schema
                .get("enum")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            maximum: float(schema, "maximum"),
            exclusive_maximum: flag(schema, "exclusiveMaximum"),
            minimum: float(schema, "minimum"),
            exclusive_minimum: flag(schema, "exclusiveMinimum"),
            multiple_of: float(schema, "multipleOf"),
            max_length: int(schema, "maxLength"),
            min_length: int(schema, "minLength"),
            max_items: int(schema, "maxItems"),
            min_items: int(schema, "minItems"),
            unique_items: flag(schema, "uniqueItems"),
            max_properties: int(schema, "maxProperties"),
            min_properties: int(schema, "minProperties"),
            required: schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
            preserve_unknown_fields: flag(schema, "x-kubernetes-preserve-unknown-fields"),
            embedded_resource: flag(schema, "x-kubernetes-embedded-resource"),
            list_type: match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => ListType::Set,
                Some("map") => ListType::Map,
                _ => ListType::Atomic,
            },
            list_map_keys: schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
            default: schema.get("default").cloned(),
            ..Node::default()
        };
        node.format = schema
            .get("format")
            .and_then(Value::as_str)
            .filter(|f| !f.is_empty())
            .filter(|f| {
                node.json_type != Some(JsonType::String)
                    || SUPPORTED_STRING_FORMATS.contains(&f.replace('-', "").as_str())
            })
            .map(str::to_string);
        if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
            node.pattern = Some(Pattern {
                source: p.to_string(),
                regex: OnceLock::new(),
            });
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                node.properties
                    .insert(k.clone(), Node::compile(v, &format!("{path}.properties[{k}]"))?);
            }
        }
        match schema.get("additionalProperties") {
            Some(Value::Bool(b)) => node.additional_properties_any = *b,
            Some(v @ Value::Object(_)) => {
                node.additional_properties = Some(Box::new(Node::compile(v, &format!("{path}.additionalProperties"))?));
            }
            _ => {}
        }
        if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
            node.items = Some(Box::new(Node::compile(items, &format!("{path}.items"))?));
        }
        for (key, list) in [
            ("anyOf", &mut node.any_of),
            ("allOf", &mut node.all_of),
            ("oneOf", &mut node.one_of),
        ] {
            if let Some(arr) = schema.get(key).and_then(Value::as_array) {
                for (i, s) in arr.iter().enumerate() {
                    list.push(Node::compile(s, &format!("{path}.{key}[{i}]"))?);
                }
            }
        }
        if let Some(n) = schema.get("not").filter(|n| n.is_object()) {
            node.not = Some(Box::new(Node::compile(n, &format!("{path}.not"))?));
        }
        if let Some(rules) = schema.get("x-kubernetes-validations").and_then(Value::as_array) {
            for (i, r) in rules.iter().enumerate() {
                node.rules.push(CompiledRule::compile(
                    r,
                    &format!("{path}.x-kubernetes-validations[{i}]"),
                )?);
            }
        }
        let children = node
            .properties
            .values()
            .chain(node.additional_properties.as_deref())
            .chain(node.items.as_deref());
        let (mut rules_below, mut defaults_below, mut embedded_below) =
            (!node.rules.is_empty(), false, node.embedded_resource);
        for c in children {
            rules_below |= c.has_rules_below;
            defaults_below |= c.has_defaults_below || c.default.is_some();
            embedded_below |= c.has_embedded_below;
        }
        node.has_rules_below = rules_below;
        node.has_defaults_below = defaults_below;
        node.has_embedded_below = embedded_below;
        Ok(node)
    }

    /// The type name upstream reports for this node (`integer`, `integer,string` for int-or-string, `""`).
    pub fn type_names(&self) -> String {
        if self.int_or_string {
            "integer,string".to_string()
        } else {
            self.json_type.map(JsonType::name).unwrap_or_default().to_string()
        }
    }

    /// Whether the declared type admits values of `t`.
    pub fn type_contains(&self, t: JsonType) -> bool {
        if self.int_or_string {
            return matches!(t, JsonType::Integer | JsonType::String);
        }
        self.json_type == Some(t)
    }

    /// The schema of a child value: a declared property, else the map's value schema.
    pub fn child(&self, key: &str) -> Option<&Node> {
        self.properties.get(key).or(self.additional_properties.as_deref())
    }
}
