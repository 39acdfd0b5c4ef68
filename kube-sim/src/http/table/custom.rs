//! Custom-resource columns from the CRD version's `additionalPrinterColumns`, as apiextensions-apiserver's
//! table convertor builds them: Name first, then the declared columns (or Age alone when none is declared).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age;
use super::columns::{AGE_DOC, NAME, Row, definition};
use super::jsonpath::{JsonPath, print_value};

/// One declared column with its parsed JSONPath.
#[derive(Debug, Clone)]
struct Column {
    name: String,
    ty: String,
    format: String,
    description: String,
    priority: i64,
    path: JsonPath,
}

/// The columns of one served version of a custom resource.
#[derive(Debug, Clone)]
pub struct CustomColumns {
    columns: Vec<Column>,
}

impl CustomColumns {
    /// The columns of `version` in `crd`. A version without printer columns gets kube's default Age column; an
    /// unparsable JSONPath ends the list there, as the upstream convertor falls back on error.
    pub fn from_crd(crd: &Value, version: &str) -> Self {
        let declared = crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"] == version)
            .and_then(|v| v["additionalPrinterColumns"].as_array())
            .filter(|cols| !cols.is_empty());
        let Some(declared) = declared else {
            return Self::age_only();
        };
        let mut columns = Vec::new();
        for c in declared {
            let path_text = c["jsonPath"].as_str().unwrap_or_default();
            let Ok(path) = JsonPath::parse(path_text) else {
                break;
            };
            let description = match c["description"].as_str().filter(|d| !d.is_empty()) {
                Some(d) => d.to_string(),
                None => format!("Custom resource definition column (in JSONPath format): {path_text}"),
            };
            columns.push(Column {
                name: c["name"].as_str().unwrap_or_default().to_string(),
                ty: c["type"].as_str().unwrap_or_default().to_string(),
                format: c["format"].as_str().unwrap_or_default().to_string(),
                description,
                priority: c["priority"].as_i64().unwrap_or_default(),
                path,
            });
        }
        Self { columns }
    }

    /// kube's default for a version that declares no printer columns: Age from `.metadata.creationTimestamp`.
    pub fn age_only() -> Self {
        let path = JsonPath::parse(".metadata.creationTimestamp").ok();
        Self {
            columns: path
                .map(|path| Column {
                    name: "Age".into(),
                    ty: "date".into(),
                    format: String::new(),
                    description: AGE_DOC.into(),
                    priority: 0,
                    path,
                })
                .into_iter()
                .collect(),
        }
    }

    /// The column definitions, Name first.
    pub fn definitions(&self) -> Vec<Value> {
        std::iter::once(NAME.to_json())
            .chain(
                self.columns
                    .iter()
                    .map(|c| definition(&c.name, &c.ty, &c.format, &c.description, c.priority)),
            )
            .collect()
    }

    /// One object's row: the first value each path selects, typed by the column (`null` when missing).
    pub fn row(&self, obj: &Value, now: Timestamp) -> Row {
        let mut cells = Vec::with_capacity(1 + self.columns.len());
        cells.push(super::format::name(obj));
        for c in &self.columns {
            let cell = match c.path.find(obj) {
                Ok(found) => match found.first() {
                    Some(v) if c.ty == "string" => json!(print_value(v)),
                    Some(v) => typed_cell(&c.ty, v, now),
                    None => Value::Null,
                },
                Err(_) => Value::Null,
            };
            cells.push(cell);
        }
        cells.into()
    }
}

/// `cellForJSONValue`: the value when it has the column's type (dates become ages), else `null`.
fn typed_cell(ty: &str, v: &Value, now: Timestamp) -> Value {
    match (ty, v) {
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(_)) => match age::parse(v) {
            Some(ts) => json!(age::since_timestamp(ts, now)),
            None => json!(age::INVALID),
        },
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn crd(columns: Value) -> Value {
        json!({"spec": {"versions": [{"name": "v1", "additionalPrinterColumns": columns}, {"name": "v1alpha1"}]}})
    }

    use crate::http::table::test_clock::now;

    #[test]
    fn crd_table_convertor_types_cells_by_column() {
        let cols = CustomColumns::from_crd(
            &crd(json!([
                {"name": "replicas", "type": "integer", "jsonPath": ".status.replicas"},
                {"name": "ratio", "type": "number", "jsonPath": ".status.ratio"},
                {"name": "ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                {"name": "suspend", "type": "boolean", "jsonPath": ".spec.suspend", "priority": 1},
                {"name": "started", "type": "date", "jsonPath": ".status.startTime"},
                {"name": "count", "type": "string", "jsonPath": ".status.replicas"},
                {"name": "wrong", "type": "integer", "jsonPath": ".status.phase"},
                {"name": "missing", "type": "string", "jsonPath": ".status.nothing"},
            ])),
            "v1",
        );
        let defs = cols.definitions();
        assert_eq!(defs[0]["name"], "Name");
        assert_eq!(defs[0]["format"], "name");
        assert_eq!(defs[4]["priority"], 1);
        assert_eq!(
            defs[1]["description"],
            "Custom resource definition column (in JSONPath format): .status.replicas"
        );
        let obj = json!({"metadata": {"name": "c"}, "spec": {"suspend": false},
            "status": {"replicas": 3.0, "ratio": 2, "phase": "Ready", "startTime": "2026-01-01T00:55:00Z",
                "conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(
            cols.row(&obj, now()).cells,
            [
                json!("c"),
                json!(3),
                json!(2.0),
                json!("True"),
                json!(false),
                json!("5m"),
                json!("3"),
                Value::Null,
                Value::Null
            ]
        );
        let bad_date = json!({"metadata": {"name": "c"}, "status": {"startTime": "yesterday"}});
        assert_eq!(cols.row(&bad_date, now()).cells[5], "<invalid>");
    }

    #[test]
    fn crd_table_convertor_defaults_to_age_when_no_columns() {
        let cols = CustomColumns::from_crd(&crd(json!([])), "v1alpha1");
        let defs = cols.definitions();
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[1]["name"], "Age");
        assert_eq!(defs[1]["type"], "date");
        let obj = json!({"metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(cols.row(&obj, now()).cells, [json!("c"), json!("60m")]);
    }

    #[test]
    fn crd_table_convertor_stops_at_an_unparsable_path() {
        let cols = CustomColumns::from_crd(
            &crd(json!([
                {"name": "a", "type": "string", "jsonPath": ".a"},
                {"name": "b", "type": "string", "jsonPath": ".b["},
                {"name": "c", "type": "string", "jsonPath": ".c"},
            ])),
            "v1",
        );
        assert_eq!(cols.definitions().len(), 2);
    }
}
