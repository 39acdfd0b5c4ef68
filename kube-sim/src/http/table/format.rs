//! Cell formatting shared by the printers: label sets, label selectors, container lists, counts.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age;

/// The cell for an absent value in most printers.
pub const NONE: &str = "<none>";

/// The object's name, the first cell of most rows.
pub fn name(obj: &Value) -> Value {
    obj["metadata"]["name"].clone()
}

/// The object's age at `now`, the Age cell.
pub fn created(obj: &Value, now: Timestamp) -> Value {
    json!(age::since(&obj["metadata"]["creationTimestamp"], now))
}

/// A string field, or `default` when absent or empty.
pub fn str_or<'a>(v: &'a Value, default: &'a str) -> &'a str {
    v.as_str().filter(|s| !s.is_empty()).unwrap_or(default)
}

/// An integer field (0 when absent).
pub fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_default()
}

/// The number of entries of a map or list field (0 when absent).
pub fn len(v: &Value) -> i64 {
    match v {
        Value::Object(m) => m.len() as i64,
        Value::Array(a) => a.len() as i64,
        _ => 0,
    }
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key, `<none>` when empty.
pub fn format_labels(map: &Value) -> String {
    let pairs: BTreeMap<&str, &str> = map
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    if pairs.is_empty() {
        return NONE.into();
    }
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `metav1.LabelSelectorAsSelector(s).String()`: requirements sorted by key; `Err` for an unknown operator.
pub fn selector_string(selector: &Value) -> Result<String, ()> {
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = selector["matchLabels"].as_object() {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for e in selector["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        values.dedup();
        let text = match e["operator"].as_str() {
            Some("In") => format!("{key} in ({})", values.join(",")),
            Some("NotIn") => format!("{key} notin ({})", values.join(",")),
            Some("Exists") => key.to_string(),
            Some("DoesNotExist") => format!("!{key}"),
            _ => return Err(()),
        };
        reqs.push((key.to_string(), text));
    }
    // A stable sort by key, as the labels package's ByKey.
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(reqs.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(","))
}

/// `metav1.FormatLabelSelector`: the selector string, `<none>` when it selects everything, `<error>` when
/// invalid.
pub fn format_label_selector(selector: &Value) -> String {
    match selector_string(selector) {
        Ok(s) if s.is_empty() => NONE.into(),
        Ok(s) => s,
        Err(()) => "<error>".into(),
    }
}

/// `layoutContainerCells`: container names and images, each comma-joined.
pub fn layout_containers(containers: &Value) -> (String, String) {
    let list = containers.as_array().map(Vec::as_slice).unwrap_or_default();
    let names: Vec<&str> = list.iter().map(|c| c["name"].as_str().unwrap_or_default()).collect();
    let images: Vec<&str> = list.iter().map(|c| c["image"].as_str().unwrap_or_default()).collect();
    (names.join(","), images.join(","))
}

/// `listWithMoreString`: the first entries, `+ N more...` for the rest, `<unset>` when there are none.
pub fn list_with_more(list: &[String], count: usize, max: usize) -> String {
    let ret = list.join(",");
    if count > max {
        return format!("{ret} + {} more...", count - max);
    }
    if ret.is_empty() { "<unset>".into() } else { ret }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_and_selectors_format_as_apimachinery() {
        assert_eq!(format_labels(&json!({"b": "2", "a": "1"})), "a=1,b=2");
        assert_eq!(format_labels(&Value::Null), "<none>");
        let sel = json!({"matchLabels": {"app": "x"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]},
            {"key": "env", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "NotIn", "values": ["z"]},
            {"key": "has", "operator": "Exists"},
        ]});
        assert_eq!(
            format_label_selector(&sel),
            "app=x,!env,has,tier in (a,b),zone notin (z)"
        );
        assert_eq!(format_label_selector(&json!({})), "<none>");
        assert_eq!(
            format_label_selector(&json!({"matchExpressions": [{"key": "k", "operator": "Bogus"}]})),
            "<error>"
        );
    }

    #[test]
    fn containers_lay_out_on_one_line() {
        let c = json!([{"name": "a", "image": "i1"}, {"name": "b", "image": "i2"}]);
        assert_eq!(layout_containers(&c), ("a,b".into(), "i1,i2".into()));
    }
}
