//! `kubectl ray get token NAME`: the auth token of a Ray cluster that uses token authentication, printed
//! as stored (no newline).

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use ray_api::{AuthMode, RayCluster};
use ray_podgen::env_names::RAY_AUTH_TOKEN_SECRET_KEY;

use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;

/// Runs the command.
pub async fn run(ctx: &KubeContext, names: &[String]) -> Result<()> {
    let [name] = names else {
        return Err(PluginError::usage(
            "get token",
            format!("accepts 1 arg(s), received {}", names.len()),
        ));
    };
    let ns = &ctx.namespace;
    let clusters: Api<RayCluster> = Api::namespaced(ctx.client.clone(), ns);
    let cluster = clusters
        .get(name)
        .await
        .map_err(|e| failed!("failed to get RayCluster {ns}/{name}: {e}"))?;
    let mode = cluster.spec.auth_options.as_ref().and_then(|a| a.mode.as_ref());
    if mode != Some(&AuthMode::Token) {
        return Err(failed!(
            "RayCluster {ns}/{name} was not configured to use authentication tokens"
        ));
    }
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), ns);
    let secret = secrets
        .get(name)
        .await
        .map_err(|e| failed!("failed to get secret {ns}/{name}: {e}"))?;
    let token = secret
        .data
        .as_ref()
        .and_then(|d| d.get(RAY_AUTH_TOKEN_SECRET_KEY))
        .ok_or_else(|| failed!("secret {ns}/{name} does not have an auth_token"))?;
    use std::io::Write;
    std::io::stdout()
        .write_all(&token.0)
        .map_err(|e| failed!("writing the token: {e}"))?;
    Ok(())
}
