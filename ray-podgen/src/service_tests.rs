//! KubeRay's golden cases for services and the ingress, each test named after KubeRay's case number (P64...).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ContainerPort, Service, ServicePort};
use ray_api::RayCluster;

use crate::config::PodGenConfig;
use crate::error::PodGenError;
use crate::ingress::build_ingress;
use crate::service::{
    ServeServiceOwner, build_head_service, build_headless_service, build_serve_service, build_service_for_head_pod,
    is_serving_port, service_ports,
};
use crate::test_fixtures::*;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn service_yaml(yaml: &str) -> Service {
    serde_saphyr::from_str(yaml).unwrap()
}

fn selector(service: &Service) -> &BTreeMap<String, String> {
    service.spec.as_ref().unwrap().selector.as_ref().unwrap()
}

fn labels(service: &Service) -> &BTreeMap<String, String> {
    service.metadata.labels.as_ref().unwrap()
}

fn ports(service: &Service) -> &[ServicePort] {
    service.spec.as_ref().unwrap().ports.as_deref().unwrap()
}

fn port_pairs(service: &Service) -> Vec<(&str, i32)> {
    ports(service)
        .iter()
        .map(|p| (p.name.as_deref().unwrap(), p.port))
        .collect()
}

fn set_head_ports(cluster: &mut RayCluster, ports: &[(&str, i32)]) {
    let container = &mut cluster.spec.head_group_spec.template.spec.as_mut().unwrap().containers[0];
    container.ports = Some(
        ports
            .iter()
            .map(|(name, port)| ContainerPort {
                name: Some((*name).to_owned()),
                container_port: *port,
                ..ContainerPort::default()
            })
            .collect(),
    );
}

fn rayservice_owner<'a>(custom: Option<&'a Service>, service_type: Option<&'a str>) -> ServeServiceOwner<'a> {
    ServeServiceOwner::RayService {
        name: "rayservice-sample",
        namespace: "default",
        custom,
        service_type,
    }
}

fn s_head_service_annotations() -> BTreeMap<String, String> {
    map(&[
        ("HeadServiceAnnotationKey1", "HeadServiceAnnotationValue1"),
        ("HeadServiceAnnotationKey2", "HeadServiceAnnotationValue2"),
    ])
}

#[test]
fn golden_p64_head_service_selector_app_protocol_and_headless() {
    let service = build_head_service(&cluster_s(), &PodGenConfig::default()).unwrap();
    let selector = selector(&service);
    assert_eq!(selector["ray.io/cluster"], "raycluster-sample");
    assert_eq!(selector["ray.io/node-type"], "head");
    assert_eq!(selector["app.kubernetes.io/name"], "kuberay");
    assert!(!ports(&service).is_empty());
    for port in ports(&service) {
        assert_eq!(port.app_protocol.as_deref(), Some("tcp"), "{port:?}");
    }
    let spec = service.spec.as_ref().unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    // A generated head service lists its ports sorted by name.
    assert_eq!(
        port_pairs(&service),
        vec![
            ("dashboard", 8265),
            ("gcs-server", 6379),
            ("metrics", 8080),
            ("serve", 8000)
        ]
    );
}

#[test]
fn golden_p65_default_service_ports() {
    let mut cluster = cluster_s();
    set_head_ports(&mut cluster, &[]);
    assert_eq!(
        service_ports(&cluster),
        BTreeMap::from([
            ("client".to_owned(), 10001),
            ("gcs-server".to_owned(), 6379),
            ("dashboard".to_owned(), 8265),
            ("metrics".to_owned(), 8080),
            ("serve".to_owned(), 8000),
        ])
    );
    let service = build_head_service(&cluster, &PodGenConfig::default()).unwrap();
    assert_eq!(
        port_pairs(&service),
        vec![
            ("client", 10001),
            ("dashboard", 8265),
            ("gcs-server", 6379),
            ("metrics", 8080),
            ("serve", 8000)
        ]
    );

    set_head_ports(&mut cluster, &[("random", 1234)]);
    assert_eq!(
        service_ports(&cluster),
        BTreeMap::from([("random".to_owned(), 1234), ("metrics".to_owned(), 8080)])
    );
}

#[test]
fn golden_p67_selector_takes_passed_app_name_label() {
    let labels = map(&[("app.kubernetes.io/name", "testname")]);
    let service = build_service_for_head_pod(&cluster_s(), &labels, BTreeMap::new(), &PodGenConfig::default()).unwrap();
    let selector = selector(&service);
    assert_eq!(selector["app.kubernetes.io/name"], "testname");
    assert_eq!(selector.len(), 5);
}

#[test]
fn golden_p68_passed_annotations_become_service_annotations() {
    let annotations = map(&[("key1", "testvalue1"), ("key2", "testvalue2")]);
    let service = build_service_for_head_pod(
        &cluster_s(),
        &BTreeMap::new(),
        annotations.clone(),
        &PodGenConfig::default(),
    )
    .unwrap();
    assert_eq!(service.metadata.annotations.as_ref(), Some(&annotations));
}

#[test]
fn golden_p70_user_head_service_is_merged() {
    let mut cluster = cluster_s();
    cluster.spec.head_group_spec.head_service = Some(ray_api::Embedded::new(service_yaml(
        r#"
metadata:
  name: user-custom-name
  namespace: user-custom-namespace
  labels:
    userLabelKey: userLabelValue
    ray.io/cluster: userClusterName
  annotations:
    userAnnotationKey: userAnnotationValue
    HeadServiceAnnotationKey1: user_override
spec:
  ports:
  - name: userPort
    port: 12345
  - name: client
    port: 98765
  selector:
    userSelectorKey: userSelectorValue
    ray.io/cluster: userSelectorClusterName
  type: LoadBalancer
  clusterIP: ""
"#,
    )));
    let template_labels = map(&[("ray.io/cluster", "userTemplateClusterName")]);
    let service = build_service_for_head_pod(
        &cluster,
        &template_labels,
        s_head_service_annotations(),
        &PodGenConfig::default(),
    )
    .unwrap();
    let spec = service.spec.as_ref().unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some(""));
    assert_eq!(spec.publish_not_ready_addresses, None);

    let selector = selector(&service);
    assert_eq!(selector.len(), 5);
    assert_eq!(selector["ray.io/cluster"], "userTemplateClusterName");
    for key in [
        "ray.io/cluster",
        "ray.io/node-type",
        "ray.io/identifier",
        "app.kubernetes.io/name",
        "app.kubernetes.io/created-by",
    ] {
        assert!(selector.contains_key(key), "{key}");
    }
    assert!(!selector.contains_key("userSelectorKey"));

    let mut expected_labels = selector.clone();
    expected_labels.insert("userLabelKey".to_owned(), "userLabelValue".to_owned());
    assert_eq!(labels(&service), &expected_labels);

    let annotations = service.metadata.annotations.as_ref().unwrap();
    assert_eq!(annotations["HeadServiceAnnotationKey1"], "HeadServiceAnnotationValue1");
    assert_eq!(annotations["HeadServiceAnnotationKey2"], "HeadServiceAnnotationValue2");
    assert_eq!(annotations["userAnnotationKey"], "userAnnotationValue");

    // User ports first, untouched; then the generated ones (sorted by name, appProtocol tcp).
    assert_eq!(
        port_pairs(&service),
        vec![
            ("userPort", 12345),
            ("client", 98765),
            ("dashboard", 8265),
            ("gcs-server", 6379),
            ("metrics", 8080),
            ("serve", 8000)
        ]
    );
    assert_eq!(ports(&service)[0].app_protocol, None);
    assert!(
        ports(&service)[2..]
            .iter()
            .all(|p| p.app_protocol.as_deref() == Some("tcp"))
    );
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(service.metadata.name.as_deref(), Some("user-custom-name"));
    assert_eq!(service.metadata.namespace.as_deref(), Some("default"));
}

#[test]
fn golden_p71_user_head_service_with_empty_metadata() {
    let mut cluster = cluster_s();
    cluster.spec.head_group_spec.head_service = Some(ray_api::Embedded::new(Service::default()));
    let service = build_service_for_head_pod(
        &cluster,
        &BTreeMap::new(),
        s_head_service_annotations(),
        &PodGenConfig::default(),
    )
    .unwrap();
    assert_eq!(service.metadata.name.as_deref(), Some("raycluster-sample-head-svc"));
    assert_eq!(service.metadata.namespace.as_deref(), Some("default"));
}

#[test]
fn golden_p73_headless_worker_service() {
    let mut cluster = cluster_s();
    cluster.metadata.name = Some("raycluster-sample-svc".to_owned());
    let service = build_headless_service(&cluster);
    assert_eq!(
        selector(&service),
        &map(&[
            ("ray.io/cluster", "raycluster-sample-svc"),
            ("ray.io/node-type", "worker")
        ])
    );
    assert_eq!(
        labels(&service),
        &map(&[("ray.io/headless-worker-svc", "raycluster-sample-svc")])
    );
    let spec = service.spec.as_ref().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    assert!(spec.ports.as_ref().is_none_or(Vec::is_empty));
    assert_eq!(service.metadata.name.as_deref(), Some("raycluster-sample-svc-headless"));
    assert_eq!(service.metadata.namespace.as_deref(), Some("default"));
}

#[test]
fn golden_p74_rayservice_serve_service() {
    let service = build_serve_service(&cluster_s(), rayservice_owner(None, Some("ClusterIP"))).unwrap();
    assert_eq!(selector(&service)["ray.io/cluster"], "raycluster-sample");
    assert_eq!(selector(&service)["ray.io/serve"], "true");
    assert_eq!(labels(&service)["ray.io/originated-from-cr-name"], "rayservice-sample");
    assert_eq!(labels(&service)["ray.io/originated-from-crd"], "RayService");
    let spec = service.spec.as_ref().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.cluster_ip, None);
    assert_eq!(port_pairs(&service), vec![("serve", 8000)]);
    assert_eq!(ports(&service)[0].app_protocol, None);
    assert_eq!(service.metadata.name.as_deref(), Some("rayservice-sample-serve-svc"));
    assert_eq!(service.metadata.namespace.as_deref(), Some("default"));
}

#[test]
fn golden_p76_serve_service_without_serving_port_is_an_error() {
    let mut cluster = cluster_s();
    set_head_ports(&mut cluster, &[("gcs-server", 6379)]);
    let err = build_serve_service(&cluster, rayservice_owner(None, Some("ClusterIP"))).unwrap_err();
    assert!(matches!(err, PodGenError::NoServePort), "{err:?}");
    assert!(
        err.to_string().starts_with("Please specify a port named 'serve'"),
        "{err}"
    );
}

fn user_serve_service(ports_yaml: &str) -> Service {
    service_yaml(&format!(
        r#"
metadata:
  name: user-custom-name
  namespace: user-custom-namespace
  labels:
    userLabelKey: userLabelValue
  annotations:
    userAnnotationKey: userAnnotationValue
spec:
  ports:
{ports_yaml}
  selector:
    userSelectorKey: userSelectorValue
  type: LoadBalancer
"#
    ))
}

#[test]
fn golden_p77_user_serve_service() {
    let user = user_serve_service("  - name: serve\n    port: 12345\n  - name: client\n    port: 98765\n");
    let service = build_serve_service(&cluster_s(), rayservice_owner(Some(&user), Some("ClusterIP"))).unwrap();
    assert_eq!(
        service.metadata.annotations.as_ref(),
        Some(&map(&[("userAnnotationKey", "userAnnotationValue")]))
    );
    assert_eq!(
        selector(&service),
        &map(&[("ray.io/cluster", "raycluster-sample"), ("ray.io/serve", "true")])
    );
    assert_eq!(port_pairs(&service), vec![("serve", 12345)]);
    assert_eq!(service.spec.as_ref().unwrap().type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(service.metadata.name.as_deref(), Some("user-custom-name"));
    assert_eq!(service.metadata.namespace.as_deref(), Some("default"));
}

#[test]
fn golden_p79_user_serve_ports_not_detected_are_dropped() {
    let user = user_serve_service("  - name: serve\n    port: 8000\n  - name: serve-grpc\n    port: 9000\n");
    let service = build_serve_service(&cluster_s(), rayservice_owner(Some(&user), None)).unwrap();
    assert_eq!(port_pairs(&service), vec![("serve", 8000)]);
}

#[test]
fn golden_p80_user_serve_port_app_protocol_is_kept() {
    let mut cluster = cluster_s();
    set_head_ports(&mut cluster, &[("serve", 8000), ("serve-grpc", 9000)]);
    let user = user_serve_service("  - name: serve-grpc\n    port: 9000\n    appProtocol: kubernetes.io/h2c\n");
    let service = build_serve_service(&cluster, rayservice_owner(Some(&user), None)).unwrap();
    let by_name: BTreeMap<&str, &ServicePort> = ports(&service)
        .iter()
        .map(|p| (p.name.as_deref().unwrap(), p))
        .collect();
    assert_eq!(by_name.len(), 2);
    assert_eq!(by_name["serve"].port, 8000);
    assert_eq!(by_name["serve"].app_protocol, None);
    assert_eq!(by_name["serve-grpc"].app_protocol.as_deref(), Some("kubernetes.io/h2c"));
}

#[test]
fn golden_p82_is_serving_port() {
    for name in ["serve", "serve-grpc", "serve-http"] {
        assert!(is_serving_port(name), "{name}");
    }
    for name in ["server", "dashboard", "gcs-server", "metrics", ""] {
        assert!(!is_serving_port(name), "{name}");
    }
}

#[test]
fn golden_p83_rayservice_serve_service_name() {
    let cluster = cluster_s();
    let service = build_serve_service(&cluster, rayservice_owner(None, None)).unwrap();
    assert_eq!(
        (service.metadata.name.as_deref(), service.metadata.namespace.as_deref()),
        (Some("rayservice-sample-serve-svc"), Some("default"))
    );
    let user = service_yaml("metadata:\n  name: user-custom-name\n");
    let service = build_serve_service(&cluster, rayservice_owner(Some(&user), None)).unwrap();
    assert_eq!(
        (service.metadata.name.as_deref(), service.metadata.namespace.as_deref()),
        (Some("user-custom-name"), Some("default"))
    );
}

#[test]
fn golden_p85_ingress_class_from_annotation() {
    let mut cluster = cluster_s();
    cluster.metadata.annotations = Some(map(&[("kubernetes.io/ingress.class", "nginx")]));
    let ingress = build_ingress(&cluster);
    let labels = ingress.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["ray.io/cluster"], "raycluster-sample");
    assert!(
        !ingress
            .metadata
            .annotations
            .iter()
            .flatten()
            .any(|(k, _)| k == "kubernetes.io/ingress.class")
    );
    let spec = ingress.spec.as_ref().unwrap();
    assert_eq!(spec.ingress_class_name.as_deref(), Some("nginx"));
    let rules = spec.rules.as_ref().unwrap();
    assert_eq!(rules.len(), 1);
    let paths = &rules[0].http.as_ref().unwrap().paths;
    assert_eq!(paths.len(), 1);
    let backend = paths[0].backend.service.as_ref().unwrap();
    assert_eq!(backend.name, "raycluster-sample-head-svc");
    assert_eq!(backend.port.as_ref().unwrap().number, Some(8265));
    assert_eq!(paths[0].path.as_deref(), Some("/"));
    assert_eq!(paths[0].path_type, "Prefix");

    cluster.metadata.annotations = None;
    let ingress = build_ingress(&cluster);
    assert_eq!(ingress.spec.as_ref().unwrap().ingress_class_name, None);
    assert_eq!(ingress.spec.as_ref().unwrap().rules.as_ref().unwrap().len(), 1);
}

#[test]
fn golden_p86_ingress_options() {
    let mut cluster = cluster_s();
    cluster.spec.head_group_spec.ingress_options = Some(
        serde_saphyr::from_str(
            r#"
host: ray.example.com
path: /dashboard
pathType: Prefix
tls:
- hosts: [ray.example.com]
  secretName: ray-tls
"#,
        )
        .unwrap(),
    );
    let ingress = build_ingress(&cluster);
    let spec = ingress.spec.as_ref().unwrap();
    let rule = &spec.rules.as_ref().unwrap()[0];
    assert_eq!(rule.host.as_deref(), Some("ray.example.com"));
    let path = &rule.http.as_ref().unwrap().paths[0];
    assert_eq!(path.path.as_deref(), Some("/dashboard"));
    assert_eq!(path.path_type, "Prefix");
    let tls = spec.tls.as_ref().unwrap();
    assert_eq!(tls.len(), 1);
    assert_eq!(tls[0].hosts.as_deref(), Some(&["ray.example.com".to_owned()][..]));
    assert_eq!(tls[0].secret_name.as_deref(), Some("ray-tls"));
}
