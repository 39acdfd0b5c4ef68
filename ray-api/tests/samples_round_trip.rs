//! Every `ray.io/v1` document among KubeRay's samples parses into our types, and serialising it
//! back gives JSON equal to the document's own JSON: nothing lost, nothing added.
//!
//! One narrow exception (see docs/architecture.md, "Quantity round-trip"): k8s-openapi's
//! `Quantity` is a string newtype, so a YAML number such as `cpu: 1` comes back as the string
//! `"1"`. At positions whose schema is `x-kubernetes-int-or-string` (Quantity and IntOrString;
//! IntOrString keeps numbers as numbers, so in practice only Quantity) a JSON number and the
//! string with exactly its decimal text are treated as equal. Nowhere else.
//!
//! And one rule of the API server: a `null` written at a position whose schema is not `nullable`
//! is dropped before the object is stored (`metadata:` with nothing under it), so its absence in
//! our output is not a loss.

mod common;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use common::{child_schema, is_int_or_string, is_nullable, item_schema, our_crd, root_schema, sample_docs};

/// Compares `input` (the user's document) with `output` (our serialisation), collecting
/// differences as `path: what`.
fn compare(input: &Value, output: &Value, schema: Option<&Value>, path: &str, diffs: &mut Vec<String>) {
    match (input, output) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                let child = schema.and_then(|s| child_schema(s, key));
                match b.get(key) {
                    // The API server drops a null at a position that is not `nullable` before storing the
                    // object, so a null the user wrote there is not data we could lose.
                    None if value.is_null() && !child.is_some_and(is_nullable) => {}
                    None => diffs.push(format!("{child_path}: lost")),
                    Some(out) => compare(value, out, child, &child_path, diffs),
                }
            }
            for key in b.keys().filter(|k| !a.contains_key(*k)) {
                diffs.push(format!("{path}.{key}: added"));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                diffs.push(format!("{path}: length {} became {}", a.len(), b.len()));
                return;
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                compare(x, y, schema.and_then(item_schema), &format!("{path}[{i}]"), diffs);
            }
        }
        (Value::Number(n), Value::String(s)) if schema.is_some_and(is_int_or_string) && n.to_string() == *s => {}
        _ if input == output => {}
        _ => diffs.push(format!("{path}: {input} became {output}")),
    }
}

fn round_trip<K: DeserializeOwned + Serialize>(doc: &Value, kind: &str) -> Result<Vec<String>, String> {
    // The strict reader must accept every sample too: KubeRay's own samples name no unknown field.
    ray_api::strict::from_value_strict::<K>(doc.clone()).map_err(|e| format!("strict parse: {e}"))?;
    let typed: K = serde_json::from_value(doc.clone()).map_err(|e| format!("parse error: {e}"))?;
    let back = serde_json::to_value(&typed).map_err(|e| format!("serialise error: {e}"))?;
    let crd = our_crd(kind);
    let mut diffs = Vec::new();
    compare(doc, &back, Some(root_schema(crd)), "", &mut diffs);
    Ok(diffs)
}

#[test]
fn every_ray_sample_document_round_trips_unchanged() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for doc in sample_docs() {
        if doc.value.get("apiVersion").and_then(Value::as_str) != Some("ray.io/v1") {
            continue;
        }
        let kind = doc
            .value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let result = match kind.as_str() {
            "RayCluster" => round_trip::<ray_api::RayCluster>(&doc.value, &kind),
            "RayJob" => round_trip::<ray_api::RayJob>(&doc.value, &kind),
            "RayService" => round_trip::<ray_api::RayService>(&doc.value, &kind),
            "RayCronJob" => round_trip::<ray_api::RayCronJob>(&doc.value, &kind),
            other => Err(format!("unexpected ray.io/v1 kind {other:?}")),
        };
        checked += 1;
        match result {
            Ok(diffs) if diffs.is_empty() => {}
            Ok(diffs) => failures.push(format!(
                "{}#{} ({kind}):\n    {}",
                doc.file,
                doc.index,
                diffs.join("\n    ")
            )),
            Err(e) => failures.push(format!("{}#{} ({kind}): {e}", doc.file, doc.index)),
        }
    }
    println!(
        "round-tripped {} of {checked} ray.io/v1 sample documents",
        checked - failures.len()
    );
    assert!(checked > 0, "no ray.io/v1 documents found");
    assert!(
        failures.is_empty(),
        "{} documents changed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn quantity_exception_applies_only_at_int_or_string_positions() {
    // A number becoming a string elsewhere (e.g. a rayStartParams value) must still be reported.
    let schema = serde_json::json!({"type": "object", "properties": {
        "q": {"x-kubernetes-int-or-string": true},
        "s": {"type": "string"}
    }});
    let input = serde_json::json!({"q": 1, "s": 1});
    let output = serde_json::json!({"q": "1", "s": "1"});
    let mut diffs = Vec::new();
    compare(&input, &output, Some(&schema), "", &mut diffs);
    assert_eq!(diffs, vec!["s: 1 became \"1\"".to_string()]);
    // An integer written as a float is a difference even at a Quantity position.
    let mut diffs = Vec::new();
    compare(
        &serde_json::json!({"q": 1}),
        &serde_json::json!({"q": "1.0"}),
        Some(&schema),
        "",
        &mut diffs,
    );
    assert_eq!(diffs.len(), 1);
}
