//! Starting and controlling a simulator: [`SimServer::start`] returns a [`SimHandle`].

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
    kubeconfig: String,
    agent_config: AgentConfig,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for SimHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimHandle").field("addr", &self.addr).finish()
    }
}

/// Renders the kubeconfig for a simulator at `addr` (plain http, namespace `default`).
pub fn render_kubeconfig(addr: SocketAddr, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-sim\n  cluster:\n    server: \"http://{addr}\"\ncontexts:\n- name: kube-sim\n  context:\n    cluster: kube-sim\n    user: kube-sim\n    namespace: default\ncurrent-context: kube-sim\nusers:\n- name: kube-sim\n  user:\n    token: \"{token}\"\n"
    )
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
        let store = Store::new(StoreConfig::from(&config));
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
        let http = Arc::new(HttpState::new(store.clone(), &config, addr));
        let mut tasks = vec![tokio::spawn(store.clone().run_controllers())];
        tasks.push(tokio::spawn(accept_loop(listener, http.clone())));
        if let Some(every) = config.faults.watch_drop {
            tasks.push(tokio::spawn(watch_dropper(http.clone(), every)));
        }
        if config.agents.enabled {
            tasks.extend(crate::agents::spawn(&store, &config.agents));
        }
        let uri: http::Uri = format!("http://{addr}")
            .parse()
            .map_err(|e: http::uri::InvalidUri| SimError::Io(std::io::Error::other(e.to_string())))?;
        let mut kc = kube::Config::new(uri);
        kc.default_namespace = "default".into();
        let client = kube::Client::try_from(kc)?;
        Ok(SimHandle {
            addr,
            store,
            http,
            client,
            kubeconfig: render_kubeconfig(addr, &config.token),
            agent_config: config.agents.clone(),
            tasks,
        })
    }
}

async fn watch_dropper(http: Arc<HttpState>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        http.sever_watches(false);
    }
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
                    let svc = service_fn(move |req| crate::http::handle(state.clone(), req));
                    let _ = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), svc).await;
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

    /// `http://{addr}`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A `kube::Client` for this simulator (default namespace `default`).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
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

    /// Removes a proxy backend.
    pub fn unregister_proxy(&self, id: u64) {
        self.http.proxies.unregister(id);
    }

    /// Stops the server (also done on drop).
    pub fn shutdown(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}
