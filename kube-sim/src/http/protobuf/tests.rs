#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::registry::registry;
use super::*;

/// Bytes from hex.
fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

const CORE: BodyTarget<'static> = BodyTarget {
    api_version: "v1",
    kind: "Namespace",
    custom: false,
};

/// What kubectl 1.33 sends for `kubectl create namespace foo`, `secret generic s1 --from-literal=k=v`,
/// `role r1 --verb=get --resource=pods` and `job j1 --image=busybox`, and what the same commands print with
/// `--dry-run=client -o json` (the JSON they would send on the JSON path).
const KUBECTL_BODIES: &[(&str, &str, &str)] = &[
    (
        "namespace",
        "6b3873000a0f0a02763112094e616d657370616365121b0a130a03666f6f12001a0022002a0032003800420012001a020a001a002200",
        r#"{"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "foo", "creationTimestamp": null}, "spec": {}, "status": {}}"#,
    ),
    (
        "secret",
        "6b3873000a0c0a0276311206536563726574121e0a120a02733112001a0022002a0032003800420012060a016b1201761a001a002200",
        r#"{"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s1", "creationTimestamp": null}, "data": {"k": "dg=="}}"#,
    ),
    (
        "role",
        "6b3873000a240a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311204526f6c6512230a120a02723112001a0022002a00320038004200120d0a0367657412001a04706f64731a002200",
        r#"{"kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1", "metadata": {"name": "r1", "creationTimestamp": null}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}"#,
    ),
    (
        "job",
        "6b3873000a0f0a0862617463682f763112034a6f62127a0a120a026a3112001a0022002a00320038004200125a32580a100a0012001a0022002a00320038004200124412210a026a31120762757379626f782a0042006a007200800100880100900100a201001a054e65766572320042004a0052005800600068008201008a01009a0100c201001a082000280030003a001a002200",
        r#"{"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "j1", "creationTimestamp": null}, "spec": {"template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": [{"name": "j1", "image": "busybox", "resources": {}}], "restartPolicy": "Never"}}}, "status": {}}"#,
    ),
];

#[test]
fn kubectl_generator_bodies_read_as_the_json_kubectl_would_send() {
    for (what, body, json) in KUBECTL_BODIES {
        let expected: Value = serde_json::from_str(json).unwrap();
        let target = BodyTarget {
            api_version: expected["apiVersion"].as_str().unwrap(),
            kind: expected["kind"].as_str().unwrap(),
            custom: false,
        };
        let got = decode_body(PROTOBUF, &hex(body), target).unwrap();
        assert_eq!(got, expected, "{what}");
    }
}

#[test]
fn written_messages_read_back_unchanged() {
    for (what, _, json) in KUBECTL_BODIES {
        // An unset time is left out on the wire (Go writes it as an empty message and reads it as null).
        let json = json.replace(
            r#""creationTimestamp": null"#,
            r#""creationTimestamp": "2024-01-02T03:04:05Z""#,
        );
        let object: Value = serde_json::from_str(&json).unwrap();
        let envelope = encode_object(&object).unwrap();
        let target = BodyTarget {
            api_version: object["apiVersion"].as_str().unwrap(),
            kind: object["kind"].as_str().unwrap(),
            custom: false,
        };
        assert_eq!(decode_body(PROTOBUF, &envelope, target).unwrap(), object, "{what}");
    }
}

/// A JSON value of every field of `descriptor`, none of them empty, as Go would write it; a message type
/// already on the path is not entered again (`JSONSchemaProps` nests itself).
fn sample(descriptor: &protobuf::reflect::MessageDescriptor, path: &mut Vec<String>) -> Value {
    use protobuf::reflect::{RuntimeFieldType, RuntimeType};
    use special::Special;
    if let Some(special) = Special::of(descriptor) {
        return match special {
            Special::Quantity => json!("1500m"),
            Special::IntOrString => json!("http"),
            Special::Time => json!("2024-01-02T03:04:05Z"),
            Special::MicroTime => json!("2024-01-02T03:04:05.123456Z"),
            Special::Duration => json!("1m30s"),
            Special::RawJson => json!({"a": [1, "b"]}),
            Special::SchemaOrArray => json!([{"type": "string"}]),
            Special::SchemaOrStringArray | Special::StringList => json!(["x"]),
            Special::SchemaOrBool => json!(false),
        };
    }
    if path.iter().any(|p| p == descriptor.full_name()) {
        return json!({});
    }
    path.push(descriptor.full_name().to_string());
    let shape = registry().shape(descriptor.full_name());
    let element = |ty: &RuntimeType, path: &mut Vec<String>| match ty {
        RuntimeType::Message(m) => sample(m, path),
        RuntimeType::String => json!("text"),
        RuntimeType::VecU8 => json!("Ynl0ZXM="),
        RuntimeType::Bool => json!(true),
        RuntimeType::F32 | RuntimeType::F64 => json!(0.5),
        _ => json!(7),
    };
    let mut out = serde_json::Map::new();
    for field in descriptor.fields() {
        let value = match field.runtime_field_type() {
            RuntimeFieldType::Singular(ty) if shape.is_inlined(field.name()) => {
                if let Value::Object(fields) = element(&ty, path) {
                    out.extend(fields);
                }
                continue;
            }
            RuntimeFieldType::Singular(ty) => element(&ty, path),
            RuntimeFieldType::Repeated(ty) => json!([element(&ty, path)]),
            RuntimeFieldType::Map(_, ty) => json!({"key": element(&ty, path)}),
        };
        out.insert(shape.json_name(field.name()).to_string(), value);
    }
    path.pop();
    Value::Object(out)
}

#[test]
fn every_field_of_every_kind_round_trips() {
    let mut kinds: Vec<_> = registry().kinds().cloned().collect();
    kinds.sort();
    assert!(kinds.len() > 80, "{} kinds", kinds.len());
    for (api_version, kind) in kinds {
        let descriptor = registry().message(&api_version, &kind).unwrap();
        let mut object = serde_json::Map::new();
        object.insert("kind".into(), json!(kind));
        object.insert("apiVersion".into(), json!(api_version));
        if let Value::Object(fields) = sample(descriptor, &mut Vec::new()) {
            object.extend(fields);
        }
        let object = Value::Object(object);
        let envelope = encode_object(&object).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let target = BodyTarget {
            api_version: &api_version,
            kind: &kind,
            custom: false,
        };
        let back = decode_body(PROTOBUF, &envelope, target).unwrap_or_else(|e| panic!("{kind}: {e:?}"));
        assert_eq!(back, object, "{api_version} {kind}");
    }
}

#[test]
fn json_names_that_differ_from_the_proto_field_names() {
    let object = json!({
        "kind": "CustomResourceDefinition",
        "apiVersion": "apiextensions.k8s.io/v1",
        "metadata": {"name": "things.example.com", "creationTimestamp": "2024-01-02T03:04:05Z"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "$ref": "#/x",
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-int-or-string": true,
                "default": {"a": 1},
                "enum": ["a", 2],
                "additionalProperties": false,
                "items": {"type": "string"},
                "dependencies": {"a": ["b"]},
                "properties": {"spec": {"type": "object", "additionalProperties": {"type": "integer"}}}
            }}}]},
        "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}
    });
    let target = BodyTarget {
        api_version: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        custom: false,
    };
    let back = decode_body(PROTOBUF, &encode_object(&object).unwrap(), target).unwrap();
    assert_eq!(back, object);
}

#[test]
fn embedded_structs_are_flattened_into_their_parent() {
    let object = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}, "spec": {
        "volumes": [{"name": "v", "configMap": {"name": "cm"}}],
        "containers": [{"name": "c", "readinessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 5}}]}});
    let (_, _, raw) = message_from_object(&object).unwrap();
    assert_eq!(object_from_message("v1", "Pod", &raw).unwrap(), object);
}

#[test]
fn empty_scalars_are_kept_only_where_go_writes_them() {
    // ServicePort.port has no omitempty (an OpenAPI required property); protocol and nodePort have, as have
    // the ObjectMeta strings and numbers Go's protobuf always writes.
    let object = json!({"kind": "Service", "apiVersion": "v1",
        "metadata": {"name": "s", "namespace": "", "generation": 0},
        "spec": {"ports": [{"port": 0, "protocol": "", "nodePort": 0}], "publishNotReadyAddresses": false}});
    let target = BodyTarget {
        api_version: "v1",
        kind: "Service",
        custom: false,
    };
    let back = decode_body(PROTOBUF, &encode_object(&object).unwrap(), target).unwrap();
    assert_eq!(
        back,
        json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 0}]}})
    );
}

#[test]
fn secret_data_is_base64_in_json_and_bytes_on_the_wire() {
    let object = json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"},
        "data": {"bin": "AAEC/w==", "empty": ""}, "type": "Opaque"});
    let (_, _, raw) = message_from_object(&object).unwrap();
    // The map entry carries the four raw bytes, not their base64 text.
    assert!(raw.windows(4).any(|w| w == [0, 1, 2, 255]));
    assert_eq!(object_from_message("v1", "Secret", &raw).unwrap(), object);
}

#[test]
fn status_errors_and_watch_events_have_protobuf_forms() {
    let status = crate::error::ApiError::new(404, "NotFound", "pods \"x\" not found").to_status();
    let envelope = encode_object(&status).unwrap();
    let decoded = Envelope::decode(&envelope).unwrap();
    assert_eq!((decoded.api_version.as_str(), decoded.kind.as_str()), ("v1", "Status"));
    assert_eq!(
        object_from_message("v1", "Status", &decoded.raw).unwrap()["message"],
        "pods \"x\" not found"
    );

    let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "resourceVersion": "5"}});
    let frame = encode_watch_event("ADDED", &pod).unwrap();
    let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
    assert_eq!(len, frame.len() - 4);
    // The event's object is the object's own envelope, carried as bytes.
    assert_eq!(decode_watch_event(&frame[4..]).unwrap(), ("ADDED".to_string(), pod));
}

#[test]
fn undecodable_bodies_get_kube_apiservers_bad_request() {
    let garbage = decode_body(PROTOBUF, b"garbage bytes!", CORE).unwrap_err();
    assert_eq!((garbage.code, garbage.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        garbage.message,
        "the object provided is unrecognized (must be of type Namespace): provided data does not appear to be a \
         protobuf message, expected prefix [107 56 115 0] (6761726261676520627974657321)"
    );
    let empty = decode_body(PROTOBUF, b"", CORE).unwrap_err();
    assert_eq!(
        empty.message,
        "the object provided is unrecognized (must be of type Namespace): empty data (<empty>)"
    );
    let only_magic = decode_body(PROTOBUF, b"k8s\0", CORE).unwrap_err();
    assert_eq!(
        only_magic.message,
        "the object provided is unrecognized (must be of type Namespace): empty body (6b387300)"
    );
    let malformed = decode_body(PROTOBUF, b"k8s\0\x0a\x05\x0a\x09ab", CORE).unwrap_err();
    assert!(
        malformed
            .message
            .starts_with("the object provided is unrecognized (must be of type Namespace): "),
        "{}",
        malformed.message
    );
    let unknown_kind = Envelope {
        api_version: "v1".into(),
        kind: "Gadget".into(),
        raw: vec![],
        ..Envelope::default()
    }
    .encode();
    assert_eq!(
        decode_body(PROTOBUF, &unknown_kind, CORE).unwrap_err().message,
        "Gadget in version \"v1\" cannot be handled as a Namespace: no kind \"Gadget\" is registered for version \
         \"v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\""
    );
    let bad_raw = Envelope {
        api_version: "v1".into(),
        kind: "Namespace".into(),
        raw: vec![0x0a, 0x05, 0x0a],
        ..Envelope::default()
    }
    .encode();
    let e = decode_body(PROTOBUF, &bad_raw, CORE).unwrap_err();
    assert!(
        e.message
            .starts_with("Namespace in version \"v1\" cannot be handled as a Namespace: "),
        "{}",
        e.message
    );
}

#[test]
fn a_missing_type_meta_is_the_endpoints_kind() {
    let raw = hex("0a050a03666f6f");
    let body = Envelope {
        raw,
        ..Envelope::default()
    }
    .encode();
    assert_eq!(
        decode_body(PROTOBUF, &body, CORE).unwrap(),
        json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "foo"}})
    );
}

#[test]
fn unsupported_content_types_get_415_with_the_accepted_media_types() {
    for content_type in ["application/cbor", "text/plain", "application/xml"] {
        let e = decode_body(content_type, b"x", CORE).unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (415, "UnsupportedMediaType"));
        assert_eq!(
            e.message,
            "the body of the request was in an unknown format - accepted media types include: application/json, \
             application/yaml, application/vnd.kubernetes.protobuf"
        );
    }
    let custom = BodyTarget {
        api_version: "ray.io/v1",
        kind: "RayCluster",
        custom: true,
    };
    let e = decode_body(PROTOBUF, b"k8s\0", custom).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            415,
            "the body of the request was in an unknown format - accepted media types include: application/json, \
             application/yaml"
        )
    );
}

#[test]
fn json_and_yaml_bodies_are_read_by_content_type() {
    assert_eq!(
        decode_body("application/json; charset=utf-8", br#"{"a":1}"#, CORE).unwrap(),
        json!({"a": 1})
    );
    assert_eq!(decode_body("", b"", CORE).unwrap(), json!({}));
    assert_eq!(
        decode_body("application/yaml", b"a: 1\nb: [x]\n", CORE).unwrap(),
        json!({"a": 1, "b": ["x"]})
    );
}

#[test]
fn accept_negotiation_follows_the_clients_preference() {
    let kubectl = "application/vnd.kubernetes.protobuf,application/json";
    assert_eq!(negotiate(kubectl, false).unwrap(), Output::Protobuf);
    assert_eq!(negotiate(kubectl, true).unwrap(), Output::Json);
    assert_eq!(
        negotiate("application/json, application/vnd.kubernetes.protobuf", false).unwrap(),
        Output::Json
    );
    assert_eq!(
        negotiate("application/json;q=0.5, application/vnd.kubernetes.protobuf", false).unwrap(),
        Output::Protobuf
    );
    assert_eq!(negotiate("", false).unwrap(), Output::Json);
    assert_eq!(negotiate("*/*", false).unwrap(), Output::Json);
    assert_eq!(
        negotiate(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
            false
        )
        .unwrap(),
        Output::Protobuf
    );
    assert_eq!(
        negotiate("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", false).unwrap(),
        Output::Json
    );
    let e = negotiate("application/vnd.kubernetes.protobuf", true).unwrap_err();
    assert_eq!(
        (e.code, e.reason.as_str(), e.message.as_str()),
        (
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml"
        )
    );
}
