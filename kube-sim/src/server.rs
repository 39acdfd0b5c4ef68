//! Starting and controlling a simulator: [`SimServer::start`] returns a [`SimHandle`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use crate::config::{AgentConfig, SimConfig};
use crate::faults::FaultConfig;
use crate::http::proxy::{ProxyBackend, ProxyTarget};
use crate::http::{HttpState, RequestLogEntry};
use crate::kinds::Gvr;
use crate::store::{Store, StoreConfig};

/// Errors starting a simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Binding or file I/O failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Building the kube client failed.
    #[error("kube client: {0}")]
    Kube(#[from] kube::Error),
    /// The kubeconfig the server wrote could not be loaded into a client.
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// The serving certificate or the token signing key could not be generated.
    #[error("credentials: {0}")]
    Auth(#[from] crate::auth::AuthError),
    /// The pod network could not be set up.
    #[error("{0}")]
    Network(#[from] crate::network::NetworkError),
    /// A CRD manifest could not be loaded.
    #[error("CRD manifest {path}: {why}")]
    Crd {
        /// The file.
        path: String,
        /// What went wrong.
        why: String,
    },
}

/// Entry point for starting simulators.
#[derive(Debug)]
pub struct SimServer;

/// A running simulator. Dropping it stops the server, its agents and its controllers.
pub struct SimHandle {
    addr: SocketAddr,
    store: Store,
    http: Arc<HttpState>,
    client: kube::Client,
    client_config: kube::Config,
    kubeconfig: String,
    agent_config: AgentConfig,
    tasks: Vec<JoinHandle<()>>,
    process_runtime: Option<Arc<crate::runtime::ProcessRuntime>>,
    pod_network: crate::network::PodNetwork,
}

impl std::fmt::Debug for SimHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimHandle").field("addr", &self.addr).finish()
    }
}

/// Renders a kubeconfig for the simulator at `server` (`https://...` with the CA `ca_pem`, or `http://...`)
/// authenticating as `user` with bearer `token` (context `kube-sim`, namespace `default`).
pub fn render_kubeconfig(server: &str, ca_pem: Option<&str>, user: &str, token: &str) -> String {
    use base64::Engine as _;
    let ca = ca_pem
        .map(|pem| {
            let data = base64::engine::general_purpose::STANDARD.encode(pem);
            format!("    certificate-authority-data: {data}\n")
        })
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-sim\n  cluster:\n    server: \"{server}\"\n{ca}contexts:\n- name: kube-sim\n  context:\n    cluster: kube-sim\n    user: {user:?}\n    namespace: default\ncurrent-context: kube-sim\nusers:\n- name: {user:?}\n  user:\n    token: {token:?}\n"
    )
}

/// A kube client (and its config) from a kubeconfig's YAML.
async fn client_from_kubeconfig(yaml: &str) -> Result<(kube::Config, kube::Client), SimError> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(yaml)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default()).await?;
    let client = kube::Client::try_from(config.clone())?;
    Ok((config, client))
}

/// Loads the CRDs of a YAML file (multi-document) into the store; existing CRDs are kept.
pub fn load_crd_file(store: &Store, path: &Path) -> Result<usize, SimError> {
    let err = |why: String| SimError::Crd {
        path: path.display().to_string(),
        why,
    };
    let text = std::fs::read_to_string(path)?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| err(e.to_string()))?;
    let mut n = 0;
    for doc in docs.into_iter().filter(|d| d["kind"] == "CustomResourceDefinition") {
        match store.create(&Gvr::crds(), None, doc) {
            Ok(_) => n += 1,
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(err(e.to_string())),
        }
    }
    Ok(n)
}

impl SimServer {
    /// Binds `config.listen`, loads CRDs, starts the garbage collector, the agents and the HTTP server.
    pub async fn start(config: SimConfig) -> Result<SimHandle, SimError> {
        let listener = TcpListener::bind(config.listen).await?;
        let addr = listener.local_addr()?;
        let mut pod_network = crate::network::PodNetwork::prepare(&config.pod_network)?;
        let mut store_config = StoreConfig::from(&config);
        store_config.service_cidr = pod_network.service_block();
        let store = Store::new(store_config);
        for ns in &config.extra_namespaces {
            if let Err(e) = store.create_namespace(ns)
                && e.code != 409
            {
                return Err(SimError::Io(std::io::Error::other(e.to_string())));
            }
        }
        for f in &config.crd_files {
            load_crd_file(&store, f)?;
        }
        crate::auth::bootstrap::install(&store);
        let extra_names: Vec<String> = pod_network
            .kubernetes_service_ip()
            .iter()
            .map(|ip| ip.to_string())
            .collect();
        let auth = Arc::new(crate::auth::Auth::new(
            !config.insecure_http,
            &config.token,
            &extra_names,
        )?);
        pod_network.start(&store, addr)?;
        let http = Arc::new(HttpState::new(store.clone(), &config, addr, auth.clone()));
        let mut tasks = vec![tokio::spawn(store.clone().run_controllers())];
        tasks.push(tokio::spawn(crate::auth::bootstrap::run_aggregation(store.clone())));
        tasks.push(tokio::spawn(accept_loop(listener, http.clone())));
        tasks.push(tokio::spawn(watch_dropper(http.clone())));
        let process_runtime = match &config.agents.process_runtime {
            Some(rc) if config.agents.enabled && config.agents.kubelet => {
                let ctx = crate::runtime::RuntimeContext {
                    store: store.clone(),
                    auth: auth.clone(),
                    api: addr,
                    pod_logs: config.agents.pod_logs.clone(),
                };
                let mut rc = rc.clone();
                // Bridge mode gives process pods their own network; otherwise they keep the configured one.
                if pod_network.bridge().is_some() {
                    rc.networking = pod_network.networking();
                }
                let rt = crate::runtime::ProcessRuntime::start(rc, ctx)
                    .map_err(|e| SimError::Io(std::io::Error::other(e.to_string())))?;
                Some(rt)
            }
            _ => None,
        };
        if config.agents.enabled {
            tasks.extend(crate::agents::spawn(&store, &config.agents, process_runtime.clone()));
        }
        // `kubectl exec` and port-forward reach process pods through the runtime.
        if let Some(rt) = &process_runtime {
            http.set_container_executor(crate::runtime::ProcessRuntime::executor(rt));
        }
        let url = server_url(addr, auth.tls().is_some());
        let kubeconfig = render_kubeconfig(
            &url,
            auth.tls().map(|t| t.ca_pem()),
            crate::auth::ADMIN_USER,
            &config.token,
        );
        let (client_config, client) = client_from_kubeconfig(&kubeconfig).await?;
        Ok(SimHandle {
            addr,
            store,
            http,
            client,
            client_config,
            kubeconfig,
            agent_config: config.agents.clone(),
            tasks,
            process_runtime,
            pod_network,
        })
    }
}

/// How often the watch dropper re-reads the fault config while no `watch-drop` is configured.
const WATCH_DROP_IDLE_POLL: Duration = Duration::from_millis(100);

/// Severs every watch each `watch-drop` interval of the *current* fault config, so faults set at runtime
/// ([`SimHandle::set_faults`], `POST /sim/v1/faults`) drop watches too.
async fn watch_dropper(http: Arc<HttpState>) {
    loop {
        let every = http.faults.lock().config().watch_drop;
        match every {
            Some(every) => {
                tokio::time::sleep(every).await;
                if http.faults.lock().config().watch_drop.is_some() {
                    http.sever_watches(false);
                }
            }
            None => tokio::time::sleep(WATCH_DROP_IDLE_POLL).await,
        }
    }
}

/// `https://{addr}` (or `http://` without TLS); IPv6 addresses bracketed.
fn server_url(addr: SocketAddr, https: bool) -> String {
    format!("{}://{addr}", if https { "https" } else { "http" })
}

async fn accept_loop(listener: TcpListener, http: Arc<HttpState>) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let state = http.clone();
                conns.spawn(async move {
                    let auth = state.auth.clone();
                    let svc = service_fn(move |req| crate::http::handle(state.clone(), req));
                    let mut conn = http1::Builder::new();
                    conn.keep_alive(true);
                    match auth.tls() {
                        Some(tls) => {
                            if let Some(stream) = tls.accept(stream).await {
                                let _ = conn.serve_connection(TokioIo::new(stream), svc).with_upgrades().await;
                            }
                        }
                        None => {
                            let _ = conn.serve_connection(TokioIo::new(stream), svc).with_upgrades().await;
                        }
                    }
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

impl SimHandle {
    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://{addr}` (`http://{addr}` with [`SimConfig::insecure_http`]).
    pub fn url(&self) -> String {
        server_url(self.addr, self.http.auth.tls().is_some())
    }

    /// The serving CA (PEM), `None` when serving plain http.
    pub fn ca_pem(&self) -> Option<&str> {
        self.http.auth.tls().map(|t| t.ca_pem())
    }

    /// A `kube::Client` for this simulator as the admin identity (default namespace `default`).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The `kube::Config` behind [`SimHandle::client`] (trusting the CA, with the admin token), to build
    /// clients with other settings.
    pub fn client_config(&self) -> kube::Config {
        self.client_config.clone()
    }

    /// A kubeconfig authenticating as `user` in `groups` (plus `system:authenticated`) with a fresh static
    /// token, as a `--token-auth-file` entry would. Give each process its own identity to tell their
    /// requests apart ([`SimHandle::writes_by_client`]); `&["system:masters"]` makes an all-powerful one.
    pub fn kubeconfig_for(&self, user: &str, groups: &[&str]) -> String {
        let token = self
            .http
            .auth
            .mint_static_token(crate::auth::UserInfo::new(user, groups));
        render_kubeconfig(&self.url(), self.ca_pem(), user, &token)
    }

    /// A `kube::Client` authenticating as `user` in `groups` (see [`SimHandle::kubeconfig_for`]).
    pub async fn client_for(&self, user: &str, groups: &[&str]) -> Result<kube::Client, SimError> {
        Ok(client_from_kubeconfig(&self.kubeconfig_for(user, groups)).await?.1)
    }

    /// A kubeconfig authenticating with bearer `token` (a ServiceAccount token, or any token to see 401s).
    pub fn kubeconfig_with_token(&self, user: &str, token: &str) -> String {
        render_kubeconfig(&self.url(), self.ca_pem(), user, token)
    }

    /// Mints the ServiceAccount token of pod `namespace/pod`'s projected volume (bound to the pod, for its
    /// ServiceAccount); see [`crate::auth::tokens::pod_projected_token`].
    pub fn pod_projected_token(
        &self,
        namespace: &str,
        pod: &str,
        audiences: &[String],
        expiration: Duration,
    ) -> Result<String, crate::ApiError> {
        crate::auth::tokens::pod_projected_token(
            self.http.auth.issuer(),
            &self.store,
            namespace,
            pod,
            audiences,
            expiration,
        )
    }

    /// The server's credentials (token issuer, static tokens).
    pub fn auth(&self) -> &crate::auth::Auth {
        &self.http.auth
    }

    /// The kubeconfig YAML pointing at this simulator.
    pub fn kubeconfig(&self) -> &str {
        &self.kubeconfig
    }

    /// Writes the kubeconfig to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, &self.kubeconfig)
    }

    /// Direct store access (no HTTP, no fault injection; same validation and events as HTTP writes).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The agent settings this simulator was started with.
    pub fn agent_config(&self) -> &AgentConfig {
        &self.agent_config
    }

    /// Replaces the fault-injection configuration at runtime.
    pub fn set_faults(&self, faults: FaultConfig) {
        self.http.set_faults(faults);
    }

    /// Closes every open watch stream (clients re-watch from their last RV).
    pub fn sever_watches(&self) {
        self.http.sever_watches(false);
    }

    /// Sends an in-stream 410 `Expired` on every open watch and closes them (clients relist).
    pub fn expire_watches(&self) {
        self.http.sever_watches(true);
    }

    /// Answers the next watch request with an in-stream 410.
    pub fn expire_next_watch(&self) {
        let mut f = self.http.faults.lock();
        let mut cfg = f.config().clone();
        cfg.expire_next_watch = true;
        *f = crate::faults::FaultState::new(cfg);
    }

    /// Raises the watch-history floor to now (see [`Store::compact`]).
    pub fn compact(&self) {
        self.store.compact();
    }

    /// Sets the periodic bookmark interval for new watches.
    pub fn set_bookmark_interval(&self, every: Duration) {
        *self.http.bookmark_interval.lock() = every;
    }

    /// Caps the lifetime of new watches.
    pub fn set_max_watch_timeout(&self, cap: Duration) {
        *self.http.max_watch_timeout.lock() = cap;
    }

    /// Errors sent by fault injection so far, by HTTP status code.
    pub fn injected_faults(&self) -> BTreeMap<u16, u64> {
        self.http.counters.injected_faults.lock().clone()
    }

    /// Write requests received so far by (client, plural resource); see
    /// [`crate::http::Counters::writes_by_client`] for how a client is identified.
    pub fn writes_by_client(&self) -> BTreeMap<(String, String), u64> {
        self.http.counters.writes_by_client.lock().clone()
    }

    /// Write requests refused so far by (client, plural resource, HTTP status code); see
    /// [`crate::http::Counters::write_refusals_by_client`].
    pub fn write_refusals_by_client(&self) -> BTreeMap<(String, String, u16), u64> {
        self.http.counters.write_refusals_by_client.lock().clone()
    }

    /// Requests served so far (every client, every verb, watches included).
    pub fn requests_served(&self) -> u64 {
        self.http.counters.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Watch events sent so far, over all watch streams.
    pub fn watch_events_sent(&self) -> u64 {
        self.http
            .counters
            .watch_events
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// In-stream 410 `Expired` errors sent on watches so far.
    pub fn expired_watches(&self) -> u64 {
        self.http
            .counters
            .expired_watches
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A copy of the request log.
    pub fn request_log(&self) -> Vec<RequestLogEntry> {
        self.http.log.lock().clone()
    }

    /// Clears the request log.
    pub fn clear_request_log(&self) {
        self.http.log.lock().clear();
    }

    /// Registers an in-process backend for the service proxy; returns an id for [`SimHandle::unregister_proxy`].
    pub fn register_proxy(&self, target: ProxyTarget, backend: Arc<dyn ProxyBackend>) -> u64 {
        self.http.proxies.register(target, backend)
    }

    /// Sets the container runtime `kubectl exec` runs commands with, and that port-forwarding asks which
    /// pods really run (see [`crate::sandbox::ContainerExecutor`]). Without one every pod is hollow: exec
    /// fails with a clear error and port-forwarding reaches only in-process Service backends.
    pub fn set_container_executor(&self, executor: Arc<dyn crate::sandbox::ContainerExecutor>) {
        self.http.set_container_executor(executor);
    }

    /// Removes a proxy backend.
    pub fn unregister_proxy(&self, id: u64) {
        self.http.proxies.unregister(id);
    }

    /// The process runtime, when `AgentConfig::process_runtime` enabled it.
    pub fn process_runtime(&self) -> Option<&Arc<crate::runtime::ProcessRuntime>> {
        self.process_runtime.as_ref()
    }

    /// The `kubectl exec` backend of the process runtime, when it is enabled.
    pub fn process_executor(&self) -> Option<Arc<dyn crate::sandbox::ContainerExecutor>> {
        self.process_runtime
            .as_ref()
            .map(crate::runtime::ProcessRuntime::executor)
    }

    /// The pod network: what the kubelet's process runtime attaches pods with, the bridge and the DNS
    /// address in bridge mode.
    pub fn pod_network(&self) -> &crate::network::PodNetwork {
        &self.pod_network
    }

    /// Stops the server (also done on drop): aborts the tasks, kills every process pod and removes their
    /// sandboxes, then removes the pod network.
    pub fn shutdown(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
        if let Some(rt) = self.process_runtime.take() {
            rt.shutdown();
        }
        self.pod_network.teardown();
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt as _;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams, WatchEvent, WatchParams};

    async fn sim() -> SimHandle {
        let agents = AgentConfig {
            enabled: false,
            ..AgentConfig::default()
        };
        SimServer::start(SimConfig {
            agents,
            ..SimConfig::default()
        })
        .await
        .unwrap()
    }

    /// A client with its own identity, as a separate operator process would be.
    async fn client_as(sim: &SimHandle, user: &str) -> kube::Client {
        sim.client_for(user, &[crate::auth::GROUP_MASTERS]).await.unwrap()
    }

    fn config_map(name: &str) -> ConfigMap {
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap()
    }

    #[tokio::test]
    async fn counts_injected_faults_and_writes_per_client() {
        let sim = sim().await;
        sim.set_faults(FaultConfig::parse("error=1x:500@create/configmaps").unwrap());
        let a: Api<ConfigMap> = Api::default_namespaced(client_as(&sim, "client-a").await);
        let b: Api<ConfigMap> = Api::default_namespaced(client_as(&sim, "client-b").await);
        let pp = PostParams::default();
        assert!(a.create(&pp, &config_map("x")).await.is_err(), "the injected 500");
        a.create(&pp, &config_map("x")).await.unwrap();
        b.create(&pp, &config_map("y")).await.unwrap();
        b.get("y").await.unwrap();
        assert_eq!(sim.injected_faults(), BTreeMap::from([(500, 1)]));
        let writes = |client: &str| (client.to_owned(), "configmaps".to_owned());
        assert_eq!(
            sim.writes_by_client(),
            BTreeMap::from([(writes("client-a"), 2), (writes("client-b"), 1)]),
            "failed writes count, reads do not"
        );
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client_as(&sim, "client-b").await);
        namespaces
            .patch_status(
                "default",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(serde_json::json!({"status": {}})),
            )
            .await
            .unwrap();
        assert_eq!(
            sim.writes_by_client()
                .get(&("client-b".to_owned(), "namespaces/status".to_owned())),
            Some(&1),
            "a subresource is counted apart from its resource"
        );
        assert!(sim.requests_served() >= 5, "every request is counted");
        assert!(
            sim.write_refusals_by_client().is_empty(),
            "the injected 500 is not a refusal"
        );
        b.create(&pp, &config_map("y")).await.unwrap_err();
        assert_eq!(
            sim.write_refusals_by_client(),
            BTreeMap::from([(("client-b".to_owned(), "configmaps".to_owned(), 409), 1)]),
            "a create of a taken name is refused with 409"
        );
        let read = namespaces
            .get("default")
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
        let relabel = serde_json::json!({"metadata": {"labels": {"changed": "yes"}}});
        namespaces
            .patch(
                "default",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(relabel),
            )
            .await
            .unwrap();
        let stale = serde_json::json!({"metadata": {"resourceVersion": read}, "status": {}});
        namespaces
            .patch_status(
                "default",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(stale),
            )
            .await
            .unwrap_err();
        assert_eq!(
            sim.write_refusals_by_client()
                .get(&("client-b".to_owned(), "namespaces/status".to_owned(), 409)),
            Some(&1),
            "a status patch from a stale resourceVersion is refused with 409, under the subresource"
        );
    }

    /// A watch of `api` from its current version: it sends only what happens from now on.
    async fn watch_from_now<K>(api: &Api<K>) -> futures::stream::BoxStream<'static, kube::Result<WatchEvent<K>>>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    {
        let now = api
            .list(&Default::default())
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
        api.watch(&WatchParams::default().timeout(60), &now)
            .await
            .unwrap()
            .boxed()
    }

    #[tokio::test]
    async fn watch_lag_delivers_a_resources_events_late_and_not_others() {
        let sim = sim().await;
        sim.set_faults(FaultConfig::parse("watch-lag=400ms/configmaps").unwrap());
        let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
        let mut events = watch_from_now(&api).await;
        let started = std::time::Instant::now();
        for name in ["a", "b", "c"] {
            api.create(&PostParams::default(), &config_map(name)).await.unwrap();
        }
        assert!(api.get("c").await.is_ok(), "requests see the latest state at once");
        for name in ["a", "b", "c"] {
            let event = events.next().await.unwrap().unwrap();
            assert!(matches!(event, WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some(name)));
        }
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(400), "the events came after {waited:?}");
        assert!(
            waited < Duration::from_millis(1200),
            "three events lagged {waited:?}: each should lag 400 ms from its write, not queue behind the others"
        );

        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(sim.client());
        let mut namespace_events = watch_from_now(&namespaces).await;
        let started = std::time::Instant::now();
        let namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "lag-free"}})).unwrap();
        namespaces.create(&PostParams::default(), &namespace).await.unwrap();
        let event = namespace_events.next().await.unwrap().unwrap();
        assert!(matches!(event, WatchEvent::Added(ns) if ns.metadata.name.as_deref() == Some("lag-free")));
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "another resource's watch is not held back"
        );
    }

    #[tokio::test]
    async fn watch_drop_set_at_runtime_severs_watches() {
        let sim = sim().await;
        sim.set_faults(FaultConfig::parse("watch-drop=200ms").unwrap());
        let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
        let mut events = api
            .watch(&WatchParams::default().timeout(60), "0")
            .await
            .unwrap()
            .boxed();
        let drained = tokio::time::timeout(Duration::from_secs(10), async {
            while events.next().await.is_some() {}
        })
        .await;
        assert!(drained.is_ok(), "the watch outlived the runtime watch-drop interval");
    }
}
