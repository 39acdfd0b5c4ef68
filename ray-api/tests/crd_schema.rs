//! Our generated CRDs against KubeRay's: every property path under `spec` and `status` exists in ours
//! with the same type, and our schemas are structural (what the API server requires of a CRD).

mod common;

use std::collections::BTreeMap;

use serde_json::Value;

use common::{kuberay_crd, our_crd, root_schema};

/// Deliberate differences from KubeRay's schema, as `(kind, path, reason)`. At most ten.
const ALLOWED_DIFFERENCES: &[(&str, &str, &str)] = &[];

/// The type of a schema node as the parity check compares it.
fn node_type(schema: &Value) -> String {
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return "int-or-string".into();
    }
    schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("<none>")
        .to_string()
}

/// Collects `path -> type` for every node under `schema`; array items are `path[]`, map values `path{}`.
fn collect_paths(schema: &Value, path: &str, out: &mut BTreeMap<String, String>) {
    out.insert(path.to_string(), node_type(schema));
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (key, child) in props {
            collect_paths(child, &format!("{path}.{key}"), out);
        }
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        collect_paths(items, &format!("{path}[]"), out);
    }
    if let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        collect_paths(values, &format!("{path}{{}}"), out);
    }
}

fn paths_of(crd: &Value, top: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(node) = root_schema(crd).get("properties").and_then(|p| p.get(top)) {
        collect_paths(node, top, &mut out);
    }
    out
}

#[test]
fn every_kuberay_schema_path_exists_in_ours_with_the_same_type() {
    assert!(
        ALLOWED_DIFFERENCES.len() <= 10,
        "the allow-list may hold at most 10 entries"
    );
    let mut problems = Vec::new();
    let mut compared = 0;
    for kind in ["RayCluster", "RayJob", "RayService", "RayCronJob"] {
        let theirs = kuberay_crd(kind);
        let ours = our_crd(kind);
        for top in ["spec", "status"] {
            let their_paths = paths_of(&theirs, top);
            let our_paths = paths_of(ours, top);
            assert!(!their_paths.is_empty(), "{kind}: KubeRay's CRD has no {top}");
            for (path, their_type) in &their_paths {
                compared += 1;
                let allowed = ALLOWED_DIFFERENCES.iter().any(|(k, p, _)| *k == kind && p == path);
                match our_paths.get(path) {
                    _ if allowed => {}
                    None => problems.push(format!("{kind} {path}: missing (KubeRay: {their_type})")),
                    Some(our_type) if our_type != their_type => {
                        problems.push(format!("{kind} {path}: type {our_type}, KubeRay {their_type}"))
                    }
                    Some(_) => {}
                }
            }
        }
    }
    println!(
        "schema parity: compared {compared} KubeRay paths; {} differences",
        problems.len()
    );
    for problem in &problems {
        println!("  {problem}");
    }
    for (kind, path, reason) in ALLOWED_DIFFERENCES {
        println!("  allowed: {kind} {path}: {reason}");
    }
    assert!(problems.is_empty(), "schema differences:\n{}", problems.join("\n"));
}

/// Checks the structural-schema rules the API server enforces on a CRD; returns the violations.
fn structural_violations(schema: &Value, path: &str, in_junction: bool, out: &mut Vec<String>) {
    let Some(node) = schema.as_object() else {
        out.push(format!("{path}: not an object"));
        return;
    };
    if node.contains_key("$ref") {
        out.push(format!("{path}: $ref"));
    }
    let int_or_string = node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    let preserve = node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if in_junction {
        // Inside anyOf/allOf/oneOf/not only value validations are allowed.
        for key in ["type", "additionalProperties", "description", "default", "nullable"] {
            if node.contains_key(key) {
                out.push(format!("{path}: `{key}` inside a logical junction"));
            }
        }
    } else if !node.contains_key("type") && !int_or_string && !preserve {
        out.push(format!("{path}: no type"));
    }
    for junction in ["anyOf", "allOf", "oneOf"] {
        if let Some(list) = node.get(junction).and_then(Value::as_array) {
            for (i, branch) in list.iter().enumerate() {
                structural_violations(branch, &format!("{path}.{junction}[{i}]"), true, out);
            }
        }
    }
    if let Some(not) = node.get("not") {
        structural_violations(not, &format!("{path}.not"), true, out);
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (key, child) in props {
            structural_violations(child, &format!("{path}.{key}"), in_junction, out);
        }
    }
    if let Some(items) = node.get("items") {
        structural_violations(items, &format!("{path}[]"), in_junction, out);
    }
    if let Some(values) = node.get("additionalProperties").filter(|a| a.is_object()) {
        structural_violations(values, &format!("{path}{{}}"), in_junction, out);
    }
}

#[test]
fn generated_crds_are_structural() {
    for kind in ["RayCluster", "RayJob", "RayService", "RayCronJob"] {
        let mut violations = Vec::new();
        structural_violations(root_schema(our_crd(kind)), kind, false, &mut violations);
        assert!(
            violations.is_empty(),
            "{kind} is not structural:\n{}",
            violations.join("\n")
        );
    }
}

#[test]
fn structural_check_catches_ref_missing_type_and_typed_any_of() {
    let bad = serde_json::json!({
        "type": "object",
        "properties": {
            "a": {"$ref": "#/definitions/X", "type": "object"},
            "b": {"properties": {}},
            "c": {"type": "string", "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "q": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}]}
        }
    });
    let mut violations = Vec::new();
    structural_violations(&bad, "x", false, &mut violations);
    assert_eq!(
        violations,
        [
            "x.a: $ref",
            "x.b: no type",
            "x.c.anyOf[0]: `type` inside a logical junction",
            "x.c.anyOf[1]: `type` inside a logical junction",
            "x.q.anyOf[0]: `type` inside a logical junction",
        ]
    );
}

#[test]
fn printer_columns_and_short_names_match_kuberay() {
    for kind in ["RayCluster", "RayJob", "RayService", "RayCronJob"] {
        let theirs = kuberay_crd(kind);
        let ours = our_crd(kind);
        assert_eq!(ours["spec"]["names"], theirs["spec"]["names"], "{kind} names");
        assert_eq!(ours["spec"]["scope"], theirs["spec"]["scope"], "{kind} scope");
        let columns = |crd: &Value| crd["spec"]["versions"][0]["additionalPrinterColumns"].clone();
        assert_eq!(columns(ours), columns(&theirs), "{kind} printer columns");
        let subresources = |crd: &Value| crd["spec"]["versions"][0]["subresources"].clone();
        assert_eq!(subresources(ours), subresources(&theirs), "{kind} subresources");
    }
}
