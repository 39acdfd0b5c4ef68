#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::*;

/// The four KubeRay CRD files.
const KUBERAY_CRDS: &[&str] = &[
    "ray.io_rayclusters.yaml",
    "ray.io_rayjobs.yaml",
    "ray.io_rayservices.yaml",
    "ray.io_raycronjobs.yaml",
];

fn crd(file: &str) -> Value {
    serde_saphyr::from_str(&kuberay_reference::crd_text(file)).unwrap()
}

/// Every KubeRay CRD version, compiled once for all tests: `(kind, version)` → validator.
fn validators() -> &'static HashMap<(String, String), CrdValidator> {
    static ALL: OnceLock<HashMap<(String, String), CrdValidator>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = HashMap::new();
        for file in KUBERAY_CRDS {
            let c = crd(file);
            let kind = c["spec"]["names"]["kind"].as_str().unwrap().to_string();
            for v in c["spec"]["versions"].as_array().unwrap() {
                let compiled = CrdValidator::compile(&v["schema"]["openAPIV3Schema"]).unwrap();
                all.insert((kind.clone(), v["name"].as_str().unwrap().to_string()), compiled);
            }
        }
        all
    })
}

/// The compiled validator of `kind` at `version`.
fn validator(kind: &str, version: &str) -> &'static CrdValidator {
    &validators()[&(kind.to_string(), version.to_string())]
}

fn count_rules(node: &Node) -> usize {
    node.rules.len()
        + node
            .properties
            .values()
            .chain(node.additional_properties.as_deref())
            .chain(node.items.as_deref())
            .map(count_rules)
            .sum::<usize>()
}

#[test]
fn every_kuberay_crd_version_compiles_with_all_its_cel_rules() {
    let rules: usize = validators().values().map(|v| count_rules(&v.root)).sum();
    assert_eq!(validators().len(), 7, "v1 of four kinds, v1alpha1 of three");
    let in_files: usize = KUBERAY_CRDS
        .iter()
        .map(|f| {
            kuberay_reference::crd_text(f)
                .lines()
                .filter(|l| l.trim_start().trim_start_matches("- ").starts_with("rule: "))
                .count()
        })
        .sum();
    assert_eq!(rules, in_files, "every rule in the CRD files is compiled");
    assert_eq!(rules, 26);
}

fn sample_resources() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for path in kuberay_reference::sample_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        for d in docs {
            if d["apiVersion"].as_str().is_some_and(|a| a.starts_with("ray.io/")) {
                out.push((path.file_name().unwrap().to_string_lossy().into_owned(), d));
            }
        }
    }
    out
}

#[test]
fn crd_accepts_every_kuberay_sample() {
    let samples = sample_resources();
    assert!(
        samples.len() >= 85,
        "only {} KubeRay resources in the samples",
        samples.len()
    );
    let mut failures = Vec::new();
    for (file, mut doc) in samples {
        let kind = doc["kind"].as_str().unwrap().to_string();
        let version = doc["apiVersion"]
            .as_str()
            .unwrap()
            .trim_start_matches("ray.io/")
            .to_string();
        let errs = validator(&kind, &version).admit(&mut doc, None);
        if !errs.is_empty() {
            failures.push(format!("{file} ({kind}): {errs:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

fn raycluster() -> Value {
    json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}}},
            "workerGroupSpecs": [{"groupName": "g", "replicas": 1, "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "w", "image": "ray"}]}}}]
        }
    })
}

fn rendered(errs: &[FieldError]) -> Vec<String> {
    errs.iter()
        .map(|e| format!("{} | {}: {}", e.reason, e.field, e.message))
        .collect()
}

#[test]
fn crd_type_integer_rejects_string() {
    let mut rc = raycluster();
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = json!("string");
    let errs = validator("RayCluster", "v1").admit(&mut rc, None);
    assert_eq!(
        rendered(&errs)[0],
        "FieldValueTypeInvalid | spec.workerGroupSpecs[0].replicas: Invalid value: \"string\": spec.workerGroupSpecs[0].replicas in body must be of type integer: \"string\""
    );
}

#[test]
fn crd_type_object_rejects_huge_number() {
    let mut rc = raycluster();
    rc["spec"]["headGroupSpec"]["template"] = json!(1e308);
    let errs = validator("RayCluster", "v1").admit(&mut rc, None);
    assert_eq!(
        rendered(&errs),
        [
            "FieldValueTypeInvalid | spec.headGroupSpec.template: Invalid value: \"number\": spec.headGroupSpec.template in body must be of type object: \"number\"",
            "FieldValueInvalid | <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
}

#[test]
fn crd_int32_format_rejects_overflow() {
    let mut rc = raycluster();
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = json!(3_000_000_000_i64);
    let errs = validator("RayCluster", "v1").admit(&mut rc, None);
    assert_eq!(
        rendered(&errs),
        [
            "FieldValueInvalid | <nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in spec.workerGroupSpecs[0].replicas"
        ]
    );
}

#[test]
fn crd_int32_format_rejects_fraction_as_float64() {
    let mut rc = raycluster();
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = json!(1.5);
    let errs = validator("RayCluster", "v1").admit(&mut rc, None);
    assert_eq!(
        rendered(&errs)[0],
        "FieldValueTypeInvalid | spec.workerGroupSpecs[0].replicas: Invalid value: \"float64\": spec.workerGroupSpecs[0].replicas in body must be of type int32: \"float64\""
    );
}

#[test]
fn crd_required_field_missing() {
    let mut rc = raycluster();
    rc["spec"]["workerGroupSpecs"][0]
        .as_object_mut()
        .unwrap()
        .remove("groupName");
    let errs = validator("RayCluster", "v1").admit(&mut rc, None);
    assert_eq!(
        rendered(&errs)[0],
        "FieldValueRequired | spec.workerGroupSpecs[0].groupName: Required value"
    );
}

#[test]
fn crd_enum_rejects_unsupported_value() {
    let mut rc = raycluster();
    rc["spec"]["autoscalerOptions"] = json!({"upscalingMode": "Bogus"});
    let errs = validator("RayCluster", "v1").admit(&mut rc, None);
    assert!(
        rendered(&errs).iter().any(|e| e.starts_with(
            "FieldValueNotSupported | spec.autoscalerOptions.upscalingMode: Unsupported value: \"Bogus\": supported values: \"Default\", \"Aggressive\", \"Conservative\""
        )),
        "{errs:?}"
    );
}

#[test]
fn crd_cel_rule_message_reported_at_node() {
    let mut rc = raycluster();
    rc["spec"]["managedBy"] = json!("someone-else");
    let errs = validator("RayCluster", "v1").admit(&mut rc, None);
    assert_eq!(
        rendered(&errs),
        [
            "FieldValueInvalid | spec.managedBy: Invalid value: \"string\": the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'"
        ]
    );
}

#[test]
fn crd_cel_transition_rule_checks_old_self_on_update_only() {
    let v = validator("RayCluster", "v1");
    let mut old = raycluster();
    old["spec"]["managedBy"] = json!("ray.io/kuberay-operator");
    assert!(v.admit(&mut old, None).is_empty());
    let mut new = old.clone();
    new["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    assert_eq!(
        rendered(&v.admit(&mut new, Some(&old))),
        ["FieldValueInvalid | spec.managedBy: Invalid value: \"string\": the managedBy field is immutable"]
    );
}

#[test]
fn crd_unknown_fields_reported_and_pruned() {
    let v = validator("RayCluster", "v1");
    let mut rc = raycluster();
    rc["spec"]["foo"] = json!(1);
    rc["spec"]["workerGroupSpecs"][0]["bar"] = json!("x");
    rc["metadata"]["baz"] = json!(true);
    assert_eq!(
        v.unknown_fields(&rc),
        ["metadata.baz", "spec.foo", "spec.workerGroupSpecs[0].bar"]
    );
    assert!(v.admit(&mut rc, None).is_empty());
    assert!(rc["spec"].get("foo").is_none());
    assert!(rc["spec"]["workerGroupSpecs"][0].get("bar").is_none());
    assert!(rc["metadata"].get("baz").is_none());
}

#[test]
fn crd_defaults_applied_to_absent_fields() {
    let v = validator("RayCluster", "v1");
    let mut rc = raycluster();
    assert!(v.admit(&mut rc, None).is_empty());
    // `numOfHosts` defaults to 1 on worker groups, `protocol` to TCP on container ports.
    assert_eq!(rc["spec"]["workerGroupSpecs"][0]["numOfHosts"], json!(1));
}

#[test]
fn crd_unchanged_invalid_values_ratchet_on_update() {
    let v = validator("RayCluster", "v1");
    let mut old = raycluster();
    old["spec"]["workerGroupSpecs"][0]["replicas"] = json!("garbage");
    // As stored: defaulted.
    v.apply_defaults(&mut old);
    let mut new = old.clone();
    new["status"] = json!({"state": "ready"});
    assert!(v.admit(&mut new, Some(&old)).is_empty());
}

#[test]
fn crd_list_map_keys_reject_duplicates() {
    let mut rc = raycluster();
    rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"] = json!([
        {"name": "a", "image": "x", "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 80}]}
    ]);
    let errs = validator("RayCluster", "v1").admit(&mut rc, None);
    assert_eq!(
        rendered(&errs),
        [
            "FieldValueDuplicate | spec.headGroupSpec.template.spec.containers[0].ports[1]: Duplicate value: map[string]interface {}{\"containerPort\":80, \"protocol\":\"TCP\"}"
        ]
    );
}

/// A small CRD schema exercising the keywords KubeRay's CRDs do not use.
fn synthetic() -> CrdValidator {
    CrdValidator::compile(&json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
                    "ratio": {"type": "number", "minimum": 0, "exclusiveMaximum": true, "maximum": 1},
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "maxItems": 3},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 2},
                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "maybe": {"type": "string", "nullable": true},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "workers": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}},
                        "x-kubernetes-validations": [
                            {"rule": "self.all(w, w.size > 0)", "message": "sizes must be positive"},
                            {"rule": "size(self) <= 2", "messageExpression": "'at most 2 workers, got ' + string(size(self))"}
                        ]
                    },
                    "image": {"type": "string", "x-kubernetes-validations": [
                        {"rule": "self.startsWith('ray') && self.contains(':')", "reason": "FieldValueForbidden", "message": "not a ray image"}
                    ]},
                    "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}
                },
                "x-kubernetes-validations": [
                    {"rule": "!has(self.image) || has(self.name)", "fieldPath": ".name", "reason": "FieldValueRequired", "message": "name is required with an image"}
                ]
            }
        }
    }))
    .unwrap()
}

fn admitted(spec: Value) -> (Value, Vec<String>) {
    let mut obj = json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "x"}, "spec": spec});
    let errs = synthetic().admit(&mut obj, None);
    (obj, rendered(&errs))
}

#[test]
fn crd_string_constraints_report_upstream_messages() {
    assert_eq!(
        admitted(json!({"name": "toolong"})).1,
        [
            "FieldValueTooLong | spec.name: Too long: may not be more than 5 bytes",
            "FieldValueInvalid | <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
    assert_eq!(
        admitted(json!({"name": "a"})).1,
        ["FieldValueInvalid | spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"]
    );
    assert_eq!(
        admitted(json!({"name": "AB"})).1,
        ["FieldValueInvalid | spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"]
    );
}

#[test]
fn crd_number_bounds_and_exclusive_maximum() {
    assert_eq!(
        admitted(json!({"ratio": 1})).1,
        ["FieldValueInvalid | spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"]
    );
    assert_eq!(
        admitted(json!({"ratio": -0.5})).1,
        [
            "FieldValueInvalid | spec.ratio: Invalid value: -0.5: spec.ratio in body should be greater than or equal to 0"
        ]
    );
    assert!(admitted(json!({"ratio": 0.5})).1.is_empty());
}

#[test]
fn crd_list_set_and_max_items() {
    assert_eq!(
        admitted(json!({"tags": ["a", "b", "a"]})).1,
        ["FieldValueDuplicate | spec.tags[2]: Duplicate value: \"a\""]
    );
    assert_eq!(
        admitted(json!({"tags": ["a", "b", "c", "d"]})).1,
        [
            "FieldValueTooMany | spec.tags: Too many: 4: must have at most 3 items",
            "FieldValueInvalid | <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
}

#[test]
fn crd_map_max_properties_and_value_type() {
    assert_eq!(
        admitted(json!({"labels": {"a": "1", "b": "2", "c": "3"}})).1,
        [
            "FieldValueTooMany | spec.labels: Too many: 3: must have at most 2 items",
            "FieldValueInvalid | <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
    assert_eq!(
        admitted(json!({"labels": {"a": 1}})).1[0],
        "FieldValueTypeInvalid | spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\""
    );
}

#[test]
fn crd_int_or_string_accepts_both_and_rejects_bool() {
    assert!(admitted(json!({"port": 8080})).1.is_empty());
    assert!(admitted(json!({"port": "http"})).1.is_empty());
    assert_eq!(
        admitted(json!({"port": true})).1,
        [
            "FieldValueTypeInvalid | spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
            "FieldValueInvalid | <nil>: Invalid value: \"\": \"spec.port\" must validate at least one schema (anyOf)",
            "FieldValueTypeInvalid | spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer: \"boolean\"",
            "FieldValueInvalid | <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
}

#[test]
fn crd_nullable_keeps_null_and_non_nullable_null_is_dropped() {
    let (obj, errs) = admitted(json!({"maybe": null, "name": null}));
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(obj["spec"], json!({"maybe": null}));
}

#[test]
fn crd_preserve_unknown_fields_keeps_everything_below() {
    let v = synthetic();
    let spec = json!({"free": {"anything": {"deep": [1, 2]}}, "gone": 1});
    let obj = json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "x"}, "spec": spec});
    assert_eq!(v.unknown_fields(&obj), ["spec.gone"]);
    let (obj, errs) = admitted(spec);
    assert!(errs.is_empty());
    assert_eq!(obj["spec"], json!({"free": {"anything": {"deep": [1, 2]}}}));
}

#[test]
fn crd_embedded_resource_keeps_type_and_object_meta() {
    let (obj, errs) = admitted(json!({"embedded": {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "bogus": 1}, "spec": {"x": 1}, "status": {}}}));
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        obj["spec"]["embedded"],
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}})
    );
    assert_eq!(
        admitted(json!({"embedded": {"spec": {}}})).1,
        [
            "FieldValueRequired | spec.embedded.apiVersion: Required value: must not be empty",
            "FieldValueRequired | spec.embedded.kind: Required value: must not be empty",
            "FieldValueInvalid | <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
}

#[test]
fn crd_cel_all_size_and_message_expression() {
    assert_eq!(
        admitted(json!({"workers": [{"name": "a", "size": 1}, {"name": "b", "size": 0}, {"name": "c", "size": 2}]})).1,
        [
            "FieldValueInvalid | spec.workers: Invalid value: \"array\": sizes must be positive",
            "FieldValueInvalid | spec.workers: Invalid value: \"array\": at most 2 workers, got 3",
        ]
    );
    assert!(admitted(json!({"workers": [{"name": "a", "size": 1}]})).1.is_empty());
}

#[test]
fn crd_cel_reason_and_field_path() {
    assert_eq!(
        admitted(json!({"image": "busybox", "name": "ab"})).1,
        ["FieldValueForbidden | spec.image: Forbidden: not a ray image"]
    );
    assert_eq!(
        admitted(json!({"image": "ray:2.46"})).1,
        ["FieldValueRequired | spec.name: Required value: name is required with an image"]
    );
}
