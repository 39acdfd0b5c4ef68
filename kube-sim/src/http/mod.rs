//! The HTTP front end: the Kubernetes URL grammar, verbs, `Status` errors, metadata-only responses,
//! discovery, the service proxy and fault injection.

pub mod discovery;
mod field_validation;
mod logs;
mod openapi;
pub mod protobuf;
pub mod proxy;
pub mod scale;
mod streaming;
mod table;
mod watch;

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::auth::attributes::RequestAttributes;
use crate::auth::review::{self, ReviewRequest};
use crate::auth::{Auth, UserInfo};
use crate::error::ApiError;
use crate::faults::{FaultConfig, FaultState, WRITE_VERBS};
use crate::kinds::{Gvr, ResourceInfo};
use crate::patch::PatchKind;
use crate::sandbox::ContainerExecutor;
use crate::select::LabelSelector;
use crate::store::{DeleteOptions, ListOptions, ListResult, Store, StoredObject};
use crate::webhooks::{self, AdmissionInput, Attributes, Operation};
use proxy::{ProxyRegistry, ProxyRequest};

/// Response body type of the server.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// The `Accept` marker of metadata-only requests.
const PARTIAL_METADATA_MARKER: &str = "as=PartialObjectMetadata";
/// Content type of every Kubernetes API response.
const JSON: &str = "application/json";

/// One logged HTTP request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestLogEntry {
    /// HTTP method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Raw query string.
    pub query: String,
    /// `Accept` header.
    pub accept: String,
    /// `Content-Type` header.
    pub content_type: String,
    /// Response status.
    pub status: u16,
}

/// Request counters for `/sim/v1/metrics`.
#[derive(Debug, Default)]
pub struct Counters {
    /// Requests served.
    pub requests: AtomicU64,
    /// Error responses (4xx/5xx).
    pub errors: AtomicU64,
    /// Watch events sent.
    pub watch_events: AtomicU64,
    /// Watch streams currently open.
    pub open_watches: AtomicU64,
    /// In-stream 410 errors sent.
    pub expired_watches: AtomicU64,
    /// Errors sent by fault injection, by HTTP status code (genuine 409s and 500s are not counted).
    pub injected_faults: Mutex<BTreeMap<u16, u64>>,
    /// Write requests (create, update, patch, delete, deletecollection) received, by (client, plural
    /// resource), counted once authorized, whatever their outcome. The client is the authenticated user name
    /// (give each process its own identity, [`crate::SimHandle::kubeconfig_for`], to tell them apart); a
    /// subresource is counted under `resource/subresource` (`rayclusters/status`).
    pub writes_by_client: Mutex<BTreeMap<(String, String), u64>>,
    /// Of those writes, the ones the store refused (a 409 `Conflict` for a stale `resourceVersion`, a 404,
    /// a 422), by (client, resource, HTTP status code). Injected faults are counted in `injected_faults`
    /// instead.
    pub write_refusals_by_client: Mutex<BTreeMap<(String, String, u16), u64>>,
}

/// Shared state of the HTTP layer.
pub struct HttpState {
    /// The object store.
    pub store: Store,
    /// Fault injection state.
    pub faults: Mutex<FaultState>,
    /// Service proxy backends.
    pub proxies: ProxyRegistry,
    /// Bumped to sever every open watch; the payload says whether to send an in-stream 410 first.
    pub sever: tokio::sync::watch::Sender<(u64, bool)>,
    /// Request log (when enabled).
    pub log: Mutex<Vec<RequestLogEntry>>,
    /// Whether to log requests.
    pub log_enabled: bool,
    /// Periodic bookmark interval.
    pub bookmark_interval: Mutex<Duration>,
    /// Cap on watch duration.
    pub max_watch_timeout: Mutex<Duration>,
    /// Metrics counters.
    pub counters: Counters,
    /// The listening address (for discovery).
    pub addr: std::net::SocketAddr,
    /// Container logs, for the pod `log` subresource.
    pub pod_logs: crate::logs::PodLogs,
    /// The OpenAPI documents of the served kinds.
    openapi: openapi::OpenApiCache,
    /// Credentials and authenticators (authentication, impersonation and RBAC run on every request).
    pub auth: Arc<Auth>,
    /// Runs `exec` commands in containers of real (process) pods; `None` while every pod is hollow.
    container_executor: parking_lot::RwLock<Option<Arc<dyn ContainerExecutor>>>,
}

impl std::fmt::Debug for HttpState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpState").field("addr", &self.addr).finish()
    }
}

impl HttpState {
    /// Creates the HTTP state.
    pub fn new(store: Store, config: &crate::SimConfig, addr: std::net::SocketAddr, auth: Arc<Auth>) -> Self {
        Self {
            store,
            faults: Mutex::new(FaultState::new(config.faults.clone())),
            proxies: ProxyRegistry::default(),
            sever: tokio::sync::watch::channel((0, false)).0,
            log: Mutex::new(Vec::new()),
            log_enabled: config.request_log,
            bookmark_interval: Mutex::new(config.bookmark_interval),
            max_watch_timeout: Mutex::new(config.max_watch_timeout),
            counters: Counters::default(),
            addr,
            pod_logs: config.agents.pod_logs.clone(),
            openapi: openapi::OpenApiCache::default(),
            auth,
            container_executor: parking_lot::RwLock::new(None),
        }
    }

    /// Sets the runtime that `exec` starts commands with and port-forwarding asks which pods really run.
    pub fn set_container_executor(&self, executor: Arc<dyn ContainerExecutor>) {
        *self.container_executor.write() = Some(executor);
    }

    /// The runtime set by [`HttpState::set_container_executor`].
    pub fn container_executor(&self) -> Option<Arc<dyn ContainerExecutor>> {
        self.container_executor.read().clone()
    }

    /// Replaces the fault configuration.
    pub fn set_faults(&self, config: FaultConfig) {
        *self.faults.lock() = FaultState::new(config);
    }

    /// Closes every open watch stream (optionally after an in-stream 410 `Expired`).
    pub fn sever_watches(&self, expire: bool) {
        self.sever.send_modify(|(n, e)| {
            *n += 1;
            *e = expire;
        });
    }
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// A JSON response.
pub fn json_response(code: u16, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    r
}

fn value_response(code: u16, v: &Value) -> Response<Body> {
    json_response(code, serde_json::to_vec(v).unwrap_or_default())
}

/// A `Status` error response.
pub fn error_response(e: &ApiError) -> Response<Body> {
    let mut r = value_response(e.code, &e.to_status());
    if let Some(secs) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

fn text_response(code: u16, text: &'static str) -> Response<Body> {
    let mut r = Response::new(full(text));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Parsed query parameters (`?&a=b`, bare `?` and `+` spaces accepted).
#[derive(Debug, Default)]
pub struct Query(HashMap<String, String>);

impl Query {
    fn parse(q: &str) -> Self {
        Self(
            form_urlencoded::parse(q.as_bytes())
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    /// The parameters as a query string (in no particular order).
    fn encode(&self) -> String {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(self.0.iter())
            .finish()
    }

    fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1"))
    }
}

/// A request resolved against the URL grammar.
#[derive(Debug, Clone)]
struct Route {
    gvr: Gvr,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
    /// Path after the subresource (service proxy).
    rest: String,
}

/// Parses `/api/v1/...` and `/apis/{g}/{v}/...` resource paths. `Ok(None)` for discovery paths.
fn parse_route(segs: &[&str]) -> Result<Option<Route>, ApiError> {
    let (group, version, rest) = match segs {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Ok(None),
    };
    if rest.is_empty() {
        return Ok(None);
    }
    let mk = |plural: &str, ns: Option<&str>, name: Option<&str>, sub: Option<&str>, tail: &[&str]| Route {
        gvr: Gvr::new(group, version, plural),
        namespace: ns.map(str::to_string),
        name: name.map(str::to_string),
        subresource: sub.map(str::to_string),
        rest: if tail.is_empty() {
            String::new()
        } else {
            format!("/{}", tail.join("/"))
        },
    };
    let route = match rest {
        ["namespaces", ns, sub @ ("status" | "finalize")] => mk("namespaces", None, Some(ns), Some(sub), &[]),
        ["namespaces", ns, plural] => mk(plural, Some(ns), None, None, &[]),
        ["namespaces", ns, plural, name] => mk(plural, Some(ns), Some(name), None, &[]),
        ["namespaces", ns, plural, name, sub, tail @ ..] => mk(plural, Some(ns), Some(name), Some(sub), tail),
        [plural] => mk(plural, None, None, None, &[]),
        [plural, name] => mk(plural, None, Some(name), None, &[]),
        [plural, name, sub, tail @ ..] => mk(plural, None, Some(name), Some(sub), tail),
        [] => return Ok(None),
    };
    Ok(Some(route))
}

/// Gives the path after a subresource (what a proxy forwards) back the trailing slash that splitting the
/// request path into segments dropped: kube-apiserver forwards `…/proxy/api/serve/applications/` with it, and
/// servers such as Ray's dashboard answer 404 without it.
fn keep_trailing_slash(mut route: Route, path: &str) -> Route {
    if path.ends_with('/') && !route.rest.is_empty() && !route.rest.ends_with('/') {
        route.rest.push('/');
    }
    route
}

/// The verb name used by fault rules and metrics.
fn verb_of(method: &Method, route: &Route, q: &Query) -> &'static str {
    match (method.as_str(), route.name.is_some()) {
        ("GET", false) if q.flag("watch") => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", false) => "deletecollection",
        ("DELETE", true) => "delete",
        _ => "other",
    }
}

/// Serves one HTTP request.
pub async fn handle(
    state: Arc<HttpState>,
    mut req: Request<hyper::body::Incoming>,
) -> Result<Response<Body>, Infallible> {
    let upgrade = req
        .headers()
        .contains_key(header::UPGRADE)
        .then(|| hyper::upgrade::on(&mut req));
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query_str = req.uri().query().unwrap_or_default().to_string();
    let header_str = |h: header::HeaderName| {
        req.headers()
            .get(h)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let accept = header_str(header::ACCEPT);
    let content_type = header_str(header::CONTENT_TYPE);
    let headers = req.headers().clone();
    state.counters.requests.fetch_add(1, Ordering::Relaxed);
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let mut ctx = Ctx {
        state: state.clone(),
        method: method.clone(),
        accept: accept.clone(),
        content_type: content_type.clone(),
        headers,
        body,
        user: UserInfo::default(),
        upgrade: Mutex::new(upgrade),
        query: query_str.clone(),
    };
    let resp = match ctx.authorize(&path, &query_str) {
        Ok(user) => {
            ctx.user = user;
            ctx.dispatch(&path, &query_str).await
        }
        Err(e) => error_response(&e),
    };
    let status = resp.status().as_u16();
    if status >= 400 {
        state.counters.errors.fetch_add(1, Ordering::Relaxed);
    }
    if state.log_enabled {
        state.log.lock().push(RequestLogEntry {
            method: method.to_string(),
            path,
            query: query_str,
            accept,
            content_type,
            status,
        });
    }
    Ok(resp)
}

struct Ctx {
    state: Arc<HttpState>,
    method: Method,
    accept: String,
    content_type: String,
    headers: http::HeaderMap,
    body: Bytes,
    /// The user the request acts as (after impersonation).
    user: UserInfo,
    /// The connection after a `101` answer (requests with an `Upgrade` header).
    upgrade: Mutex<Option<hyper::upgrade::OnUpgrade>>,
    /// The raw query string (for parameters that repeat).
    query: String,
}

/// The authorizer's view of a resource request: the verb of [`verb_of`] on the route's resource (a
/// namespace request is in the namespace it names, as upstream).
fn resource_attributes(verb: &str, route: &Route) -> RequestAttributes {
    let name = route.name.clone().unwrap_or_default();
    let namespace = match &route.namespace {
        Some(ns) => ns.clone(),
        None if route.gvr.group.is_empty() && route.gvr.resource == "namespaces" => name.clone(),
        None => String::new(),
    };
    RequestAttributes {
        verb: verb.to_owned(),
        resource_request: true,
        path: String::new(),
        namespace,
        api_group: route.gvr.group.clone(),
        api_version: route.gvr.version.clone(),
        resource: route.gvr.resource.clone(),
        subresource: route.subresource.clone().unwrap_or_default(),
        name,
    }
}

impl Ctx {
    /// Authenticates the request, applies impersonation and authorizes it with RBAC: the acting user, or
    /// kube-apiserver's 401 / 403.
    fn authorize(&self, path: &str, query: &str) -> Result<UserInfo, ApiError> {
        let requester = self.state.auth.authenticate(self.store(), &self.headers)?;
        let user = crate::auth::impersonate::acting_user(self.store(), requester, &self.headers)?;
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let attrs = match parse_route(&segs) {
            Ok(Some(route)) => resource_attributes(verb_of(&self.method, &route, &Query::parse(query)), &route),
            _ => RequestAttributes::non_resource(&self.method.as_str().to_lowercase(), path),
        };
        let decision = crate::auth::rbac::authorize(self.store(), &user, &attrs);
        if !decision.allowed {
            return Err(attrs.forbidden(&user, &decision.reason));
        }
        // A WebSocket upgrade of a streaming pod subresource is a GET but runs a command or opens ports, so
        // kube-apiserver also requires `create`, the verb of the SPDY (POST) form.
        if attrs.verb == "get"
            && attrs.resource == "pods"
            && attrs.api_group.is_empty()
            && streaming::is_streaming(&attrs.subresource)
        {
            let create = RequestAttributes {
                verb: "create".into(),
                ..attrs
            };
            let decision = crate::auth::rbac::authorize(self.store(), &user, &create);
            if !decision.allowed {
                return Err(create.forbidden(&user, &decision.reason));
            }
        }
        Ok(user)
    }

    fn store(&self) -> &Store {
        &self.state.store
    }

    fn metadata_only(&self) -> bool {
        self.accept.contains(PARTIAL_METADATA_MARKER)
    }

    async fn dispatch(&self, path: &str, query: &str) -> Response<Body> {
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        if let Some(r) = discovery::serve(&self.state, &self.method, &segs, &self.accept) {
            return r;
        }
        match segs.as_slice() {
            ["healthz" | "livez" | "readyz", ..] => return text_response(200, "ok"),
            ["openapi", rest @ ..] if self.method == Method::GET => {
                return openapi::serve(&self.state, rest, &self.accept);
            }
            ["sim", "v1", rest @ ..] => return self.sim_control(rest),
            _ => {}
        }
        let route = match parse_route(&segs) {
            Ok(Some(r)) => keep_trailing_slash(r, path),
            Ok(None) => return error_response(&ApiError::no_route()),
            Err(e) => return error_response(&e),
        };
        let review = ReviewRequest {
            group: &route.gvr.group,
            resource: &route.gvr.resource,
            namespace: route.namespace.as_deref(),
            name: route.name.as_deref(),
            subresource: route.subresource.as_deref(),
            content_type: &self.content_type,
            body: &self.body,
        };
        if review.is_review() {
            if self.method != Method::POST {
                return error_response(&ApiError::method_not_allowed());
            }
            return match review::serve(&self.state.auth, self.store(), &self.user, &review) {
                Ok(v) => value_response(201, &v),
                Err(e) => error_response(&e),
            };
        }
        let q = Query::parse(query);
        let verb = verb_of(&self.method, &route, &q);
        let write_key = WRITE_VERBS.contains(&verb).then(|| {
            let resource = match route.subresource.as_deref() {
                Some(sub) => format!("{}/{sub}", route.gvr.resource),
                None => route.gvr.resource.clone(),
            };
            (self.user.name.clone(), resource)
        });
        if let Some(key) = &write_key {
            *self
                .state
                .counters
                .writes_by_client
                .lock()
                .entry(key.clone())
                .or_default() += 1;
        }
        let (latency, injected) = {
            let mut f = self.state.faults.lock();
            (f.config().latency, f.decide(verb, &route.gvr.resource))
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if let Some(e) = injected {
            *self.state.counters.injected_faults.lock().entry(e.code).or_default() += 1;
            return error_response(&e);
        }
        let custom = self.store().resource(&route.gvr).is_some_and(|i| i.custom);
        match self.resource(route, &q, verb).await {
            Ok(r) => r,
            Err(e) => {
                if let Some((client, resource)) = write_key {
                    *self
                        .state
                        .counters
                        .write_refusals_by_client
                        .lock()
                        .entry((client, resource, e.code))
                        .or_default() += 1;
                }
                self.error_response(&e, custom)
            }
        }
    }

    fn sim_control(&self, rest: &[&str]) -> Response<Body> {
        match (self.method.as_str(), rest) {
            ("GET", ["metrics"]) => {
                let c = &self.state.counters;
                value_response(
                    200,
                    &json!({
                        "resourceVersion": self.store().current_rv(),
                        "requests": c.requests.load(Ordering::Relaxed),
                        "errors": c.errors.load(Ordering::Relaxed),
                        "watchEvents": c.watch_events.load(Ordering::Relaxed),
                        "openWatches": c.open_watches.load(Ordering::Relaxed),
                        "expiredWatches": c.expired_watches.load(Ordering::Relaxed),
                        "injectedFaults": c.injected_faults.lock().iter()
                            .map(|(code, n)| (code.to_string(), json!(n)))
                            .collect::<serde_json::Map<String, Value>>(),
                        "writeRefusals": c.write_refusals_by_client.lock().iter()
                            .map(|((client, resource, code), n)| {
                                json!({"client": client, "resource": resource, "code": code, "count": n})
                            })
                            .collect::<Vec<Value>>(),
                        "objects": self.store().object_counts(),
                    }),
                )
            }
            ("POST", ["compact"]) => {
                self.store().compact();
                value_response(200, &json!({"resourceVersion": self.store().current_rv()}))
            }
            ("POST", ["sever-watches"]) => {
                self.state.sever_watches(false);
                value_response(200, &json!({}))
            }
            ("POST", ["faults"]) => match std::str::from_utf8(&self.body)
                .map_err(|e| e.to_string())
                .and_then(|s| FaultConfig::parse(s).map_err(|e| e.to_string()))
            {
                Ok(cfg) => {
                    self.state.set_faults(cfg);
                    value_response(200, &json!({}))
                }
                Err(e) => error_response(&ApiError::bad_request(e)),
            },
            _ => error_response(&ApiError::no_route()),
        }
    }

    /// Reads the request body (JSON, YAML or protobuf, by `Content-Type`) as an object of `info`'s kind.
    fn parse_body(&self, info: &ResourceInfo) -> Result<Value, ApiError> {
        let api_version = info.gvr.api_version();
        self.parse_body_as(&api_version, &info.kind, info.custom)
    }

    /// Reads the request body as an object of `api_version` / `kind` (e.g. a `scale` subresource's
    /// `autoscaling/v1` `Scale`).
    fn parse_body_as(&self, api_version: &str, kind: &str, custom: bool) -> Result<Value, ApiError> {
        let target = protobuf::BodyTarget {
            api_version,
            kind,
            custom,
        };
        protobuf::decode_body(&self.content_type, &self.body, target)
    }

    /// Whether the client prefers protobuf for a built-in kind.
    fn prefers_protobuf(&self) -> bool {
        protobuf::negotiate(&self.accept, false).ok() == Some(protobuf::Output::Protobuf)
    }

    /// `value` as protobuf when the client prefers it and its kind has a protobuf form.
    fn protobuf_response(&self, code: u16, value: &Value) -> Option<Response<Body>> {
        if !self.prefers_protobuf() {
            return None;
        }
        let bytes = protobuf::encode_object(value)
            .map_err(|e| tracing::debug!(error = %e, "answering in JSON: no protobuf form"))
            .ok()?;
        let mut r = Response::new(full(bytes));
        *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(protobuf::PROTOBUF));
        Some(r)
    }

    /// A `Status` error, as protobuf when the client prefers it for a built-in kind.
    fn error_response(&self, e: &ApiError, custom: bool) -> Response<Body> {
        let mut r = error_response(e);
        if !custom && let Some(p) = self.protobuf_response(e.code, &e.to_status()) {
            let headers = std::mem::take(r.headers_mut());
            r = p;
            if let Some(retry) = headers.get(header::RETRY_AFTER) {
                r.headers_mut().insert(header::RETRY_AFTER, retry.clone());
            }
        }
        r
    }

    /// The Table this GET asks for (`Accept: ...;as=Table`), if any; the plain path pays one substring test.
    fn table_writer(&self, info: &ResourceInfo, q: &Query) -> Result<Option<table::TableWriter>, ApiError> {
        if !self.accept.contains("as=Table") {
            return Ok(None);
        }
        let Some(version) = table::negotiate(&self.accept)? else {
            return Ok(None);
        };
        let request = table::TableRequest {
            version,
            include: table::IncludeObject::parse(q.get("includeObject"))?,
        };
        Ok(Some(table::TableWriter::new(self.store(), info, request)))
    }

    fn object_response(&self, code: u16, obj: &StoredObject) -> Response<Body> {
        if self.metadata_only() {
            let meta = obj.partial_metadata();
            self.protobuf_response(code, &meta)
                .unwrap_or_else(|| value_response(code, &meta))
        } else if self.prefers_protobuf()
            && let Some(response) = self.protobuf_response(code, &obj.value())
        {
            response
        } else {
            // Decoded above only for a protobuf client: a JSON client gets the stored bytes as they are.
            json_response(code, obj.json.clone())
        }
    }

    /// A list, as protobuf when the client prefers it for a built-in kind.
    fn list_response(&self, info: &ResourceInfo, res: &ListResult) -> Response<Body> {
        if !info.custom && self.prefers_protobuf() {
            let mut list: Value = serde_json::from_slice(&self.list_body(
                info,
                &ListResult {
                    items: Vec::new(),
                    resource_version: res.resource_version,
                    continue_token: res.continue_token.clone(),
                    remaining: res.remaining,
                },
            ))
            .unwrap_or_default();
            list["items"] = Value::Array(
                res.items
                    .iter()
                    .map(|i| {
                        if self.metadata_only() {
                            i.partial_metadata()
                        } else {
                            i.value()
                        }
                    })
                    .collect(),
            );
            if let Some(r) = self.protobuf_response(200, &list) {
                return r;
            }
        }
        json_response(200, self.list_body(info, res))
    }

    async fn resource(&self, route: Route, q: &Query, verb: &str) -> Result<Response<Body>, ApiError> {
        let info = self.store().resource(&route.gvr).ok_or_else(ApiError::no_route)?;
        if route.namespace.is_some() && !info.namespaced {
            return Err(ApiError::no_route());
        }
        let ns = route.namespace.as_deref();
        if info.namespaced && route.name.is_some() && ns.is_none() {
            return Err(ApiError::no_route());
        }
        // Custom resources have no protobuf form (no kind has without the `protobuf` feature): a client that
        // accepts nothing else gets 406. For a built-in kind with the feature this never fails.
        protobuf::negotiate(&self.accept, info.custom)?;
        let gvr = &route.gvr;
        match route.subresource.as_deref() {
            None => {}
            Some("status") if info.status_subresource => {}
            Some("scale") if info.scale_subresource && !info.custom => return self.scale(&info, &route, q, verb),
            Some("proxy") if info.gvr.resource == "services" => return self.proxy(&route, q).await,
            Some("proxy") if info.gvr.resource == "pods" => return self.pod_proxy(&route, q).await,
            Some("log") if info.gvr.resource == "pods" && verb == "get" => {
                let name = route.name.as_deref().unwrap_or_default();
                let pod = self.store().get(gvr, ns, name)?;
                return logs::serve(&self.state.pod_logs, &pod, &|k| q.get(k).map(str::to_string));
            }
            Some(sub)
                if info.gvr.resource == "pods" && streaming::is_streaming(sub) && matches!(verb, "get" | "create") =>
            {
                let name = route.name.as_deref().unwrap_or_default();
                let request = streaming::StreamRequest {
                    state: self.state.clone(),
                    pod: self.store().get(gvr, ns, name)?,
                    headers: self.headers.clone(),
                    query: self.query.clone(),
                    upgrade: self.upgrade.lock().take(),
                };
                return streaming::serve(sub, request).await;
            }
            Some("finalize") if info.gvr.resource == "namespaces" && verb == "update" => {
                let mut body = self.parse_body(&info)?;
                let name = route.name.clone().unwrap_or_default();
                let cur = self.store().get(gvr, None, &name)?;
                let mut merged = cur.value();
                merged["spec"]["finalizers"] = body["spec"]["finalizers"].take();
                let obj = self.store().update(gvr, None, merged, None)?;
                return Ok(self.object_response(200, &obj));
            }
            Some(_) => return Err(ApiError::no_route()),
        }
        let sub = route.subresource.as_deref();
        let watch_protobuf = protobuf::negotiate(&self.accept, info.custom).ok() == Some(protobuf::Output::Protobuf);
        match (verb, route.name.as_deref()) {
            ("list", None) => self.list(&info, ns, q),
            ("watch", None) => {
                let table = self.table_writer(&info, q)?;
                watch::serve(
                    self.state.clone(),
                    info,
                    route.namespace.clone(),
                    q,
                    self.metadata_only(),
                    table,
                    watch_protobuf,
                )
            }
            ("create", None) => {
                let mut obj = self.parse_body(&info)?;
                let warnings = field_validation::check_object(self.store(), &info, q.get("fieldValidation"), &mut obj)?;
                self.admit(&info, &route, verb, Some(&obj), None).await?;
                let created = self.store().create(gvr, ns, obj)?;
                let mut resp = self.object_response(201, &created);
                field_validation::add_warnings(&mut resp, &warnings);
                Ok(resp)
            }
            ("deletecollection", None) => {
                let opts = self.delete_options(q)?;
                let list = self.list_options(&info, q)?;
                let results = self.store().delete_collection(gvr, ns, &list, &opts)?;
                let items: Vec<_> = results.into_iter().map(|r| r.object).collect();
                let res = ListResult {
                    items,
                    resource_version: self.store().current_rv(),
                    continue_token: None,
                    remaining: None,
                };
                Ok(self.list_response(&info, &res))
            }
            ("get", Some(name)) => {
                let object = self.store().get(gvr, ns, name)?;
                if let Some(t) = self.table_writer(&info, q)? {
                    return Ok(value_response(200, &t.object(&object)));
                }
                Ok(self.object_response(200, &object))
            }
            ("update", Some(name)) => {
                let mut obj = self.parse_body(&info)?;
                match obj["metadata"]["name"].as_str() {
                    Some(n) if n != name => {
                        return Err(ApiError::bad_request(
                            "the name of the object does not match the name on the URL",
                        ));
                    }
                    Some(_) => {}
                    None => {
                        if !obj["metadata"].is_object() {
                            obj["metadata"] = json!({});
                        }
                        obj["metadata"]["name"] = json!(name);
                    }
                }
                let warnings = field_validation::check_object(self.store(), &info, q.get("fieldValidation"), &mut obj)?;
                self.admit(&info, &route, verb, Some(&obj), None).await?;
                let (o, created) = self
                    .store()
                    .update_or_create_as(gvr, ns, obj, sub, q.get("fieldManager"))?;
                let mut resp = self.object_response(if created { 201 } else { 200 }, &o);
                field_validation::add_warnings(&mut resp, &warnings);
                Ok(resp)
            }
            ("patch", Some(name)) => {
                let (kind, mut body) = self.patch_body(q)?;
                let warnings = field_validation::check_patch(
                    self.store(),
                    &info,
                    q.get("fieldValidation"),
                    &kind,
                    (ns, name),
                    &mut body,
                    || self.store().get(gvr, ns, name).ok().map(|o| o.value()),
                )?;
                self.admit(&info, &route, verb, Some(&body), Some(&kind)).await?;
                let (o, created) =
                    self.store()
                        .patch_or_create_as(gvr, ns, name, &kind, &body, sub, q.get("fieldManager"))?;
                let mut resp = self.object_response(if created { 201 } else { 200 }, &o);
                field_validation::add_warnings(&mut resp, &warnings);
                Ok(resp)
            }
            ("delete", Some(name)) => {
                let opts = self.delete_options(q)?;
                self.admit(&info, &route, verb, None, None).await?;
                let out = self.store().delete(gvr, ns, name, &opts)?;
                let mut resp = if out.finished && !info.return_deleted_object {
                    let mut details = serde_json::Map::new();
                    details.insert("name".into(), json!(name));
                    if !info.gvr.group.is_empty() {
                        details.insert("group".into(), json!(info.gvr.group));
                    }
                    details.insert("kind".into(), json!(info.gvr.resource));
                    details.insert("uid".into(), json!(out.object.uid()));
                    value_response(
                        200,
                        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
                    )
                } else {
                    self.object_response(200, &out.object)
                };
                if let Some(w) = out.warning
                    && let Ok(v) = HeaderValue::from_str(&format!("299 - \"{w}\""))
                {
                    resp.headers_mut().insert(header::WARNING, v);
                }
                Ok(resp)
            }
            _ => Err(ApiError::method_not_allowed()),
        }
    }

    /// The patch kind (from `Content-Type`) and the decoded patch document of a `PATCH` request.
    fn patch_body(&self, q: &Query) -> Result<(PatchKind, Value), ApiError> {
        let mut kind = PatchKind::from_content_type(&self.content_type).ok_or_else(|| {
            ApiError::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml ({})", self.content_type))
        })?;
        let body = match &mut kind {
            PatchKind::Apply { field_manager, force } => {
                *field_manager = q.get("fieldManager").map(str::to_string);
                *force = q.flag("force");
                crate::patch::parse_apply_body(&self.body)?
            }
            _ => serde_json::from_slice(&self.body)
                .map_err(|e| ApiError::bad_request(format!("unable to decode the patch: {e}")))?,
        };
        Ok((kind, body))
    }

    /// Serves the `scale` subresource of a built-in workload.
    fn scale(&self, info: &ResourceInfo, route: &Route, q: &Query, verb: &str) -> Result<Response<Body>, ApiError> {
        let (store, ns) = (self.store(), route.namespace.as_deref());
        let name = route.name.as_deref().ok_or_else(ApiError::method_not_allowed)?;
        let scale = match verb {
            "get" => scale::get(store, info, ns, name)?,
            "update" => scale::update(
                store,
                info,
                ns,
                name,
                &self.parse_body_as("autoscaling/v1", "Scale", false)?,
            )?,
            "patch" => {
                let (kind, body) = self.patch_body(q)?;
                scale::patch(store, info, ns, name, &kind, &body)?
            }
            _ => return Err(ApiError::method_not_allowed()),
        };
        Ok(value_response(200, &scale))
    }

    /// Sends a write of one object to the validating webhooks whose rules match it (nothing to do, and
    /// nothing computed, when none does). `body` is the request body: the object for create and update, the
    /// patch for patch. A request the store will reject anyway (missing object, unreadable patch) is left to
    /// the store. Writes of roles and bindings are first checked for RBAC escalation.
    async fn admit(
        &self,
        info: &ResourceInfo,
        route: &Route,
        verb: &str,
        body: Option<&Value>,
        patch: Option<&PatchKind>,
    ) -> Result<(), ApiError> {
        let rbac_guarded = verb != "delete" && crate::auth::escalation::guards(&info.gvr.group, &info.gvr.resource);
        let configured = webhooks::configured_webhooks(self.store());
        if configured.is_empty() && !rbac_guarded {
            return Ok(());
        }
        let ns = route.namespace.as_deref();
        let subresource = route.subresource.as_deref();
        let old = route
            .name
            .as_deref()
            .and_then(|name| self.store().get(&info.gvr, ns, name).ok());
        let operation = match (verb, &old) {
            ("create", _) => Operation::Create,
            ("delete", _) => Operation::Delete,
            (_, None) => Operation::Create,
            (_, Some(_)) => Operation::Update,
        };
        let attrs = Attributes {
            gvr: &info.gvr,
            subresource,
            operation,
            namespaced: info.namespaced,
        };
        let hooks = webhooks::select(configured, &attrs);
        if hooks.is_empty() && !rbac_guarded {
            return Ok(());
        }
        let mut object = match (verb, patch, &old) {
            ("delete", _, None) => return Ok(()),
            ("delete", _, Some(_)) => None,
            ("update", _, None) if !info.create_on_update => return Ok(()),
            ("patch", Some(PatchKind::Apply { .. }), None) => body.cloned(),
            ("patch", _, None) => return Ok(()),
            ("patch", Some(kind), Some(old)) => {
                let mut doc = old.value();
                let patched = match kind {
                    PatchKind::Merge => {
                        crate::patch::merge_patch(&mut doc, body.unwrap_or(&Value::Null));
                        Ok(())
                    }
                    PatchKind::Json => crate::patch::json_patch(&mut doc, body.unwrap_or(&Value::Null)),
                    PatchKind::Strategic => crate::patch::strategic_merge(&mut doc, body.unwrap_or(&Value::Null)),
                    PatchKind::Apply { .. } if info.strategic_merge => {
                        crate::patch::strategic_merge(&mut doc, body.unwrap_or(&Value::Null))
                    }
                    PatchKind::Apply { .. } => {
                        crate::patch::merge_patch(&mut doc, body.unwrap_or(&Value::Null));
                        Ok(())
                    }
                };
                if patched.is_err() {
                    return Ok(());
                }
                Some(doc)
            }
            _ => body.cloned(),
        };
        if let Some(obj) = object.as_mut().and_then(Value::as_object_mut) {
            obj.entry("apiVersion").or_insert_with(|| json!(info.gvr.api_version()));
            obj.entry("kind").or_insert_with(|| json!(info.kind));
            if let (Some(ns), Some(meta)) = (ns, obj.get_mut("metadata").and_then(Value::as_object_mut)) {
                meta.entry("namespace").or_insert_with(|| json!(ns));
            }
        }
        if rbac_guarded && let Some(obj) = &object {
            let ns = ns.unwrap_or_default();
            crate::auth::escalation::confirm(self.store(), &self.user, &info.gvr.resource, ns, obj)?;
        }
        if hooks.is_empty() {
            return Ok(());
        }
        let name = route
            .name
            .clone()
            .or_else(|| {
                object
                    .as_ref()
                    .and_then(|o| o["metadata"]["name"].as_str().map(str::to_owned))
            })
            .unwrap_or_default();
        let old_value = old.as_ref().map(|o| o.value());
        let input = AdmissionInput {
            info,
            subresource,
            operation,
            namespace: ns,
            name: &name,
            object: object.as_ref(),
            old_object: old_value.as_ref(),
            username: &self.user.name,
        };
        webhooks::admit(&hooks, &input).await
    }

    fn delete_options(&self, q: &Query) -> Result<DeleteOptions, ApiError> {
        let body = if self.body.is_empty() {
            json!({})
        } else {
            let target = protobuf::BodyTarget {
                api_version: "meta.k8s.io/v1",
                kind: "DeleteOptions",
                custom: false,
            };
            protobuf::decode_body(&self.content_type, &self.body, target)?
        };
        let mut opts = DeleteOptions::from_json(&body)?;
        if let Some(p) = q.get("propagationPolicy") {
            opts.propagation = Some(crate::store::Propagation::parse(p)?);
        }
        if let Some(g) = q.get("gracePeriodSeconds").and_then(|g| g.parse().ok()) {
            opts.grace_period_seconds = Some(g);
        }
        Ok(opts)
    }

    fn list_options(&self, info: &ResourceInfo, q: &Query) -> Result<ListOptions, ApiError> {
        let _ = info;
        Ok(ListOptions {
            label_selector: LabelSelector::parse(q.get("labelSelector").unwrap_or_default())?,
            field_selector: q.get("fieldSelector").map(str::to_string),
            limit: q.get("limit").and_then(|l| l.parse().ok()),
            continue_token: q.get("continue").map(str::to_string),
        })
    }

    fn list(&self, info: &ResourceInfo, ns: Option<&str>, q: &Query) -> Result<Response<Body>, ApiError> {
        let opts = self.list_options(info, q)?;
        let res = self.store().list(&info.gvr, ns, &opts)?;
        if let Some(t) = self.table_writer(info, q)? {
            return Ok(value_response(200, &t.list(&res)));
        }
        Ok(self.list_response(info, &res))
    }

    /// Streams a list body from pre-serialized items.
    fn list_body(&self, info: &ResourceInfo, res: &ListResult) -> Bytes {
        let meta_only = self.metadata_only();
        let (kind, api_version) = if meta_only {
            ("PartialObjectMetadataList".to_string(), "meta.k8s.io/v1".to_string())
        } else {
            (info.list_kind(), info.gvr.api_version())
        };
        let mut meta = serde_json::Map::new();
        meta.insert("resourceVersion".into(), json!(res.resource_version.to_string()));
        if let Some(c) = &res.continue_token {
            meta.insert("continue".into(), json!(c));
        }
        if let Some(r) = res.remaining {
            meta.insert("remainingItemCount".into(), json!(r));
        }
        let head = json!({"kind": kind, "apiVersion": api_version, "metadata": meta});
        let mut out = BytesMut::with_capacity(256 + res.items.iter().map(|i| i.json.len() + 1).sum::<usize>());
        let head_bytes = serde_json::to_vec(&head).unwrap_or_default();
        // Drop the closing brace and append the items array.
        out.put_slice(&head_bytes[..head_bytes.len().saturating_sub(1)]);
        out.put_slice(b",\"items\":[");
        for (i, item) in res.items.iter().enumerate() {
            if i > 0 {
                out.put_u8(b',');
            }
            if meta_only {
                out.put_slice(&serde_json::to_vec(&item.partial_metadata()).unwrap_or_default());
            } else {
                out.put_slice(&item.json);
            }
        }
        out.put_slice(b"]}");
        out.freeze()
    }

    /// The service proxy: an in-process backend when one claims the Service, else the Service's endpoint
    /// over HTTP.
    async fn proxy(&self, route: &Route, q: &Query) -> Result<Response<Body>, ApiError> {
        let ns = route.namespace.clone().unwrap_or_default();
        let raw = route.name.clone().unwrap_or_default();
        let (svc, port) = match raw.split_once(':') {
            Some((s, p)) => (s.to_string(), p.to_string()),
            None => (raw.clone(), String::new()),
        };
        let obj = self.store().get(&Gvr::services(), Some(&ns), &svc)?;
        let backend = self.state.proxies.find(&ns, &svc, &obj.value());
        let req = ProxyRequest {
            method: self.method.clone(),
            namespace: ns,
            service: svc,
            port,
            path: if route.rest.is_empty() {
                "/".into()
            } else {
                route.rest.clone()
            },
            query: q.encode(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            service_object: Arc::new(obj.value()),
        };
        let Some(backend) = backend else {
            let target = proxy::service_endpoint(self.store(), &req.namespace, &obj.value(), &req.port)?;
            return Ok(proxy::forward_http(target, &req).await?.map(full));
        };
        let started = Instant::now();
        let resp = backend.handle(req).await;
        tracing::trace!(elapsed = ?started.elapsed(), "proxied request");
        let mut r = Response::new(full(resp.body));
        *r.status_mut() = resp.status;
        if let Ok(v) = HeaderValue::from_str(&resp.content_type) {
            r.headers_mut().insert(header::CONTENT_TYPE, v);
        }
        Ok(r)
    }

    /// The pod proxy (`pods/{name}[:{port}]/proxy/{path}`): the pod's IP and port over HTTP.
    async fn pod_proxy(&self, route: &Route, q: &Query) -> Result<Response<Body>, ApiError> {
        let ns = route.namespace.clone().unwrap_or_default();
        let raw = route.name.clone().unwrap_or_default();
        let (name, port) = raw.split_once(':').unwrap_or((raw.as_str(), ""));
        let pod = self.store().get(&Gvr::pods(), Some(&ns), name)?;
        let target = proxy::pod_endpoint(&pod.value(), port)?;
        let req = ProxyRequest {
            method: self.method.clone(),
            namespace: ns,
            service: String::new(),
            port: port.to_string(),
            path: if route.rest.is_empty() {
                "/".into()
            } else {
                route.rest.clone()
            },
            query: q.encode(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            service_object: Arc::new(serde_json::Value::Null),
        };
        Ok(proxy::forward_http(target, &req).await?.map(full))
    }
}

#[cfg(test)]
mod route_tests {
    use super::*;

    fn route_of(path: &str) -> Route {
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        keep_trailing_slash(parse_route(&segs).unwrap().unwrap(), path)
    }

    #[test]
    fn a_proxied_path_keeps_its_trailing_slash() {
        let route = route_of("/api/v1/namespaces/default/services/head-svc:dashboard/proxy/api/serve/applications/");
        assert_eq!(route.subresource.as_deref(), Some("proxy"));
        assert_eq!(route.rest, "/api/serve/applications/");
        let route = route_of("/api/v1/namespaces/default/pods/p:8000/proxy/-/healthz");
        assert_eq!(route.rest, "/-/healthz");
        // Nothing after `proxy`: the proxies forward `/` (rest stays empty).
        assert_eq!(route_of("/api/v1/namespaces/default/services/s:80/proxy/").rest, "");
        assert_eq!(route_of("/api/v1/namespaces/default/pods/").rest, "");
    }
}
