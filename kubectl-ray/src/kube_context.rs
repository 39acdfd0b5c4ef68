//! The connection to the cluster from kubectl's flags: the kubeconfig (`--kubeconfig`, else `$KUBECONFIG`, else
//! `~/.kube/config`), its context, cluster and user overrides, and the namespace (`-n`, else the context's,
//! else `default`).

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::cli::KubeFlags;
use crate::error::{Result, failed};

/// A client and the namespace the command works in.
#[derive(Clone)]
pub struct KubeContext {
    /// The API client.
    pub client: Client,
    /// The namespace: `-n`, else the context's, else `default`.
    pub namespace: String,
    /// The name of the kubeconfig context in use (for `session` and `log --link`).
    pub context_name: Option<String>,
}

impl KubeContext {
    /// Connects as kubectl would with these flags.
    pub async fn connect(flags: &KubeFlags) -> Result<Self> {
        let kubeconfig = match &flags.kubeconfig {
            Some(path) => Kubeconfig::read_from(path),
            None => Kubeconfig::read(),
        }
        .map_err(|e| failed!("unable to load kubeconfig: {e}"))?;
        let context_name = flags.context.clone().or_else(|| kubeconfig.current_context.clone());
        let options = KubeConfigOptions {
            context: flags.context.clone(),
            cluster: flags.kube_cluster.clone(),
            user: flags.user.clone(),
        };
        let config = Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| failed!("unable to load kubeconfig: {e}"))?;
        let namespace = flags
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let client = Client::try_from(config).map_err(|e| failed!("unable to create a Kubernetes client: {e}"))?;
        Ok(KubeContext {
            client,
            namespace,
            context_name,
        })
    }
}
