//! Fidelity tests of identity and authorization: HTTPS with the generated CA, bearer-token authentication
//! (401s), ServiceAccount tokens from the TokenRequest API, RBAC (403 messages, bindings, aggregation),
//! impersonation and the review APIs, each named after the kube-apiserver behaviour it mirrors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use kube::core::Status;
use kube_sim::auth::tokens::TokenSpec;
use kube_sim::{SimConfig, SimHandle};
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

async fn sim_with(insecure_http: bool) -> SimHandle {
    support::api_only_sim(SimConfig {
        insecure_http,
        ..SimConfig::default()
    })
    .await
}

async fn sim() -> SimHandle {
    sim_with(false).await
}

/// One request with `client`: the JSON answer or the Status error.
async fn call(client: &kube::Client, method: &str, path: &str, body: Option<Value>) -> Result<Value, Box<Status>> {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .unwrap();
    match client.request::<Value>(req).await {
        Ok(v) => Ok(v),
        Err(kube::Error::Api(s)) => Err(s),
        Err(e) => panic!("{method} {path}: {e}"),
    }
}

/// The `userInfo` of a `SelfSubjectReview` (`kubectl auth whoami`) by `client`.
async fn whoami(client: &kube::Client) -> Value {
    let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let review = call(client, "POST", path, Some(json!({}))).await.unwrap();
    review["status"]["userInfo"].clone()
}

/// A client with bearer `token` (no token at all for `None`).
async fn client_with(sim: &SimHandle, token: Option<&str>) -> kube::Client {
    let mut config = sim.client_config();
    config.auth_info = Default::default();
    if let Some(t) = token {
        config.auth_info.token = Some(t.to_owned().into());
    }
    kube::Client::try_from(config).unwrap()
}

/// Creates ServiceAccount `name` in `default` and a token for it through the TokenRequest API.
async fn service_account_token(sim: &SimHandle, name: &str) -> String {
    let admin = sim.client();
    call(
        &admin,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        Some(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})),
    )
    .await
    .unwrap();
    let tr = call(
        &admin,
        "POST",
        &format!("/api/v1/namespaces/default/serviceaccounts/{name}/token"),
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})),
    )
    .await
    .unwrap();
    assert_eq!(tr["kind"], "TokenRequest");
    assert_eq!(tr["spec"]["expirationSeconds"], 3600);
    tr["status"]["token"].as_str().unwrap().to_owned()
}

async fn apply(sim: &SimHandle, path: &str, obj: Value) {
    call(&sim.client(), "POST", path, Some(obj)).await.unwrap();
}

fn role_binding(name: &str, role_kind: &str, role: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "x", "namespace": "default"}]})
}

const ROLE_BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";

/// Role `name` in `default` with `rules`.
fn role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name}, "rules": rules})
}

/// Binds `role_kind/role` to ServiceAccount `x` (RoleBinding `name` in `default`) as `client`.
async fn bind_x(client: &kube::Client, name: &str, role_kind: &str, role: &str) -> Result<Value, Box<Status>> {
    let binding = role_binding(name, role_kind, role);
    call(client, "POST", ROLE_BINDINGS, Some(binding)).await
}

#[tokio::test]
async fn missing_garbled_and_expired_credentials_get_401_unauthorized() {
    let sim = sim().await;
    let sa = sim
        .store()
        .get(&kube_sim::Gvr::service_accounts(), Some("default"), "default")
        .unwrap();
    let expired = sim
        .auth()
        .issuer()
        .sign(&TokenSpec {
            namespace: "default".into(),
            service_account: "default".into(),
            service_account_uid: sa.uid().into(),
            audiences: Vec::new(),
            issued_at: SystemTime::now() - Duration::from_secs(7200),
            expiration: Duration::from_secs(3600),
            pod: None,
        })
        .unwrap();
    let good = service_account_token(&sim, "x").await;
    let mut tampered = good.clone();
    tampered.pop();
    tampered.push(if good.ends_with('A') { 'B' } else { 'A' });
    for token in [
        None,
        Some("garbage"),
        Some("a.b.c"),
        Some(expired.as_str()),
        Some(tampered.as_str()),
    ] {
        let client = client_with(&sim, token).await;
        let e = call(&client, "GET", "/api/v1/namespaces/default/pods", None)
            .await
            .unwrap_err();
        assert_eq!(
            (e.code, e.reason.as_str(), e.message.as_str()),
            (401, "Unauthorized", "Unauthorized"),
            "{token:?}"
        );
    }
    // The token of a ServiceAccount that is deleted stops working, as upstream's lookup of the account does.
    let client = client_with(&sim, Some(&good)).await;
    assert_eq!(
        call(&client, "GET", "/api", None)
            .await
            .map(|v| v["kind"].clone())
            .unwrap(),
        "APIVersions"
    );
    call(
        &sim.client(),
        "DELETE",
        "/api/v1/namespaces/default/serviceaccounts/x",
        None,
    )
    .await
    .unwrap();
    assert_eq!(call(&client, "GET", "/api", None).await.unwrap_err().code, 401);
}

#[tokio::test]
async fn rbac_forbidden_messages_name_user_verb_resource_group_and_scope() {
    let sim = sim().await;
    let sa = client_with(&sim, Some(&service_account_token(&sim, "x").await)).await;
    let user = "system:serviceaccount:default:x";
    let cases = [
        (
            "/api/v1/namespaces/default/pods",
            format!(
                r#"pods is forbidden: User "{user}" cannot list resource "pods" in API group "" in the namespace "default""#
            ),
        ),
        (
            "/api/v1/nodes",
            format!(
                r#"nodes is forbidden: User "{user}" cannot list resource "nodes" in API group "" at the cluster scope"#
            ),
        ),
        (
            "/api/v1/namespaces/default/pods/p/log",
            format!(
                r#"pods "p" is forbidden: User "{user}" cannot get resource "pods/log" in API group "" in the namespace "default""#
            ),
        ),
        (
            "/apis/batch/v1/namespaces/ns1/jobs/j",
            format!(
                r#"jobs.batch "j" is forbidden: User "{user}" cannot get resource "jobs" in API group "batch" in the namespace "ns1""#
            ),
        ),
        (
            "/sim/v1/metrics",
            format!(r#"forbidden: User "{user}" cannot get path "/sim/v1/metrics""#),
        ),
    ];
    for (path, message) in cases {
        let e = call(&sa, "GET", path, None).await.unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"), "{path}");
        assert_eq!(e.message, message, "{path}");
    }
    // Discovery, version and health are every authenticated user's (system:discovery,
    // system:public-info-viewer).
    for path in ["/api", "/apis", "/version", "/api/v1", "/openapi/v3"] {
        assert!(call(&sa, "GET", path, None).await.is_ok(), "{path}");
    }
    let health = http::Request::get("/healthz").body(Vec::new()).unwrap();
    assert_eq!(sa.request_text(health).await.unwrap(), "ok");
}

#[tokio::test]
async fn role_binding_grants_the_role_in_its_namespace_only() {
    let sim = sim().await;
    let sa = client_with(&sim, Some(&service_account_token(&sim, "x").await)).await;
    apply(
        &sim,
        ROLES,
        role(
            "pod-reader",
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]),
        ),
    )
    .await;
    let pods = "/api/v1/namespaces/default/pods";
    assert_eq!(call(&sa, "GET", pods, None).await.unwrap_err().code, 403);
    bind_x(&sim.client(), "read-pods", "Role", "pod-reader").await.unwrap();
    assert_eq!(call(&sa, "GET", pods, None).await.unwrap()["kind"], "PodList");
    assert_eq!(
        call(&sa, "GET", "/api/v1/namespaces/kube-system/pods", None)
            .await
            .unwrap_err()
            .code,
        403
    );
    assert_eq!(
        call(&sa, "GET", "/api/v1/pods", None).await.unwrap_err().code,
        403,
        "cluster scope"
    );
    let e = call(&sa, "POST", pods, Some(json!({"metadata": {"name": "p"}})))
        .await
        .unwrap_err();
    assert_eq!(e.code, 403, "the role does not grant create");
}

#[tokio::test]
async fn binding_to_a_missing_role_grants_nothing_and_names_it() {
    let sim = sim().await;
    let sa = client_with(&sim, Some(&service_account_token(&sim, "x").await)).await;
    bind_x(&sim.client(), "dangling", "Role", "ghost").await.unwrap();
    let e = call(&sa, "GET", "/api/v1/namespaces/default/configmaps", None)
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        r#"configmaps is forbidden: User "system:serviceaccount:default:x" cannot list resource "configmaps" in API group "" in the namespace "default": RBAC: role.rbac.authorization.k8s.io "ghost" not found"#
    );
    apply(
        &sim,
        ROLES,
        role(
            "ghost",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
        ),
    )
    .await;
    assert!(
        call(&sa, "GET", "/api/v1/namespaces/default/configmaps", None)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn default_roles_aggregate_labelled_cluster_roles() {
    let sim = sim().await;
    let admin = sim.client();
    let view = call(
        &admin,
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/view",
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        view["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"],
        json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"})
    );
    assert!(
        view["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resources"].as_array().unwrap().contains(&json!("pods/log")))
    );
    apply(
        &sim,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "raycluster-viewer", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "list"]}]}),
    )
    .await;
    let sa = client_with(&sim, Some(&service_account_token(&sim, "x").await)).await;
    bind_x(&sim.client(), "x-admin", "ClusterRole", "admin").await.unwrap();
    // admin aggregates edit, which aggregates view, which aggregates the new role.
    let ssar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "list", "group": "ray.io", "resource": "rayclusters"}}});
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let r = call(
            &sa,
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            Some(ssar.clone()),
        )
        .await
        .unwrap();
        if r["status"]["allowed"] == true {
            assert_eq!(
                r["status"]["reason"],
                r#"RBAC: allowed by RoleBinding "x-admin/default" of ClusterRole "admin" to ServiceAccount "x/default""#
            );
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "admin never aggregated the new rule: {r}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    let sim = sim().await;
    let token = service_account_token(&sim, "x").await;
    let mut config = sim.client_config();
    config.auth_info = Default::default();
    config.auth_info.token = Some(token.into());
    config.auth_info.impersonate = Some("bob".into());
    let sa_as_bob = kube::Client::try_from(config).unwrap();
    let e = call(&sa_as_bob, "GET", "/api", None).await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            403,
            r#"users "bob" is forbidden: User "system:serviceaccount:default:x" cannot impersonate resource "users" in API group "" at the cluster scope"#
        )
    );
    // The admin may impersonate anyone; the request then runs as that user, with its groups.
    let mut config = sim.client_config();
    config.auth_info.impersonate = Some("system:serviceaccount:default:x".into());
    let admin_as_sa = kube::Client::try_from(config).unwrap();
    let who = whoami(&admin_as_sa).await;
    assert_eq!(
        who,
        json!({"username": "system:serviceaccount:default:x",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]})
    );
    assert_eq!(
        call(&admin_as_sa, "GET", "/api/v1/namespaces/default/pods", None)
            .await
            .unwrap_err()
            .code,
        403
    );
}

#[tokio::test]
async fn whoami_and_access_reviews_answer_for_the_caller() {
    let sim = sim().await;
    let admin = sim.client();
    let who = whoami(&admin).await;
    assert_eq!(
        who,
        json!({"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]})
    );
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "system:serviceaccount:default:x", "groups": ["system:authenticated"],
            "resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}}});
    let r = call(
        &admin,
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        Some(sar),
    )
    .await
    .unwrap();
    assert_eq!(r["status"], json!({"allowed": false}));
    let rules = call(
        &admin,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        Some(json!({"spec": {"namespace": "default"}})),
    )
    .await
    .unwrap();
    assert!(
        rules["status"]["resourceRules"]
            .as_array()
            .unwrap()
            .contains(&json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})),
        "{rules}"
    );
    // A ServiceAccount may review itself (system:basic-user) but not others.
    let sa = client_with(&sim, Some(&service_account_token(&sim, "x").await)).await;
    let e = call(
        &sa,
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        Some(json!({"spec": {"user": "a", "nonResourceAttributes": {"path": "/", "verb": "get"}}})),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, 403);
}

#[tokio::test]
async fn token_request_refuses_durations_under_ten_minutes() {
    let sim = sim().await;
    let e = call(
        &sim.client(),
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/default/token",
        Some(json!({"spec": {"expirationSeconds": 60}})),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            422,
            r#"TokenRequest.authentication.k8s.io "default" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"#
        )
    );
    let e = call(
        &sim.client(),
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/nobody/token",
        Some(json!({"spec": {}})),
    )
    .await
    .unwrap_err();
    assert_eq!(e.message, r#"serviceaccounts "nobody" not found"#);
}

#[tokio::test]
async fn pod_projected_token_authenticates_as_the_pod_service_account_until_the_pod_is_gone() {
    let sim = sim().await;
    apply(
        &sim,
        "/api/v1/namespaces/default/pods",
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    )
    .await;
    let token = sim
        .pod_projected_token("default", "p", &[], Duration::from_secs(3600))
        .unwrap();
    let client = client_with(&sim, Some(&token)).await;
    let who = whoami(&client).await;
    assert_eq!(who["username"], "system:serviceaccount:default:default");
    assert_eq!(who["extra"]["authentication.kubernetes.io/pod-name"], json!(["p"]));
    call(
        &sim.client(),
        "DELETE",
        "/api/v1/namespaces/default/pods/p?gracePeriodSeconds=0",
        None,
    )
    .await
    .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while call(&client, "GET", "/api", None).await.is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pod-bound token outlived its pod"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(call(&client, "GET", "/api", None).await.unwrap_err().code, 401);
}

fn tls_client(ca: Option<&[u8]>) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    if let Some(der) = ca {
        roots.add(CertificateDer::from(der.to_vec())).unwrap();
    }
    let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

#[tokio::test]
async fn tls_handshake_verifies_against_the_kubeconfig_ca_for_every_serving_name() {
    let sim = sim().await;
    assert!(sim.url().starts_with("https://127.0.0.1:"));
    assert!(sim.kubeconfig().contains("certificate-authority-data: "));
    let ca_der = sim.auth().tls().unwrap().ca_der().to_vec();
    for name in kube_sim::auth::tls::SERVING_NAMES {
        let stream = TcpStream::connect(sim.addr()).await.unwrap();
        let server_name = ServerName::try_from(name.to_owned()).unwrap();
        let tls = tls_client(Some(&ca_der)).connect(server_name, stream).await;
        assert!(tls.is_ok(), "{name}: {:?}", tls.err());
    }
    let stream = TcpStream::connect(sim.addr()).await.unwrap();
    let untrusted = tls_client(None)
        .connect(ServerName::try_from("localhost").unwrap(), stream)
        .await;
    assert!(untrusted.is_err(), "a client without the CA must not trust the server");
}

#[tokio::test]
async fn plain_http_request_on_the_tls_port_gets_go_400() {
    let sim = sim().await;
    let mut stream = TcpStream::connect(sim.addr()).await.unwrap();
    stream.write_all(b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    assert_eq!(
        String::from_utf8(answer).unwrap(),
        "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    );
}

#[tokio::test]
async fn insecure_http_serves_plain_http_still_authenticated() {
    let sim = sim_with(true).await;
    assert!(sim.url().starts_with("http://127.0.0.1:"));
    assert!(!sim.kubeconfig().contains("certificate-authority-data"));
    assert_eq!(
        call(&sim.client(), "GET", "/api/v1/namespaces", None).await.unwrap()["kind"],
        "NamespaceList"
    );
    let anonymous = client_with(&sim, None).await;
    assert_eq!(
        call(&anonymous, "GET", "/api/v1/namespaces", None)
            .await
            .unwrap_err()
            .code,
        401
    );
}

/// A ServiceAccount `x` allowed to create roles and role bindings and to get pods in `default`.
async fn rbac_writer(sim: &SimHandle) -> kube::Client {
    let token = service_account_token(sim, "x").await;
    apply(
        sim,
        ROLES,
        role("rbac-writer", json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create"]},
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])),
    )
    .await;
    bind_x(&sim.client(), "x-writes-rbac", "Role", "rbac-writer")
        .await
        .unwrap();
    client_with(sim, Some(&token)).await
}

#[tokio::test]
async fn creating_a_role_with_rights_not_held_is_forbidden_as_escalation() {
    let sim = sim().await;
    let sa = rbac_writer(&sim).await;
    let roles = ROLES;
    let pod_role = |name: &str, verbs: Value| {
        role(
            name,
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": verbs}]),
        )
    };
    call(&sa, "POST", roles, Some(pod_role("held", json!(["get"]))))
        .await
        .expect("rights the user holds may be granted");
    let e = call(
        &sa,
        "POST",
        roles,
        Some(pod_role("too-much", json!(["get", "delete", "list"]))),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (e.code, e.reason.as_str(), e.message.as_str()),
        (
            403,
            "Forbidden",
            "roles.rbac.authorization.k8s.io \"too-much\" is forbidden: user \"system:serviceaccount:default:x\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:default\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"list\"]}"
        )
    );
    assert!(
        call(&sim.client(), "GET", &format!("{roles}/too-much"), None)
            .await
            .is_err(),
        "nothing stored"
    );
}

#[tokio::test]
async fn binding_a_role_needs_its_rights_or_the_bind_verb() {
    let sim = sim().await;
    let sa = rbac_writer(&sim).await;
    let e = bind_x(&sa, "x-edit", "ClusterRole", "edit").await.unwrap_err();
    assert_eq!(e.code, 403);
    assert!(
        e.message.starts_with("rolebindings.rbac.authorization.k8s.io \"x-edit\" is forbidden: user \"system:serviceaccount:default:x\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:default\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"bindings\"], Verbs:[\"get\" \"list\" \"watch\"]}\n"),
        "{}",
        e.message
    );
    let e = bind_x(&sa, "x-ghost", "Role", "ghost").await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (404, r#"role.rbac.authorization.k8s.io "ghost" not found"#)
    );
    // Rights the user holds may be bound; so may any role it has `bind` on.
    bind_x(&sa, "x-writer-again", "Role", "rbac-writer").await.unwrap();
    apply(
        &sim,
        ROLES,
        role("binder", json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["edit"]}])),
    )
    .await;
    bind_x(&sim.client(), "x-binds-edit", "Role", "binder").await.unwrap();
    bind_x(&sa, "x-edit", "ClusterRole", "edit").await.unwrap();
}
