//! `kubectl ray session ARG`: forwards the Ray dashboard (8265), the interactive client (10001, Ray clusters)
//! and Ray Serve (8000, Ray services) from localhost to the head service, retrying every 3 seconds when the
//! forwarding breaks.

use std::time::Duration;

use kube::Api;
use ray_api::constants::{DEFAULT_CLIENT_PORT, DEFAULT_DASHBOARD_PORT, DEFAULT_SERVING_PORT};
use ray_api::{RayCluster, RayJob, RayService};

use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;
use crate::port_forward;
use crate::resource_ref::{RayKind, ResourceRef, TypeCase, parse};

/// The pause before forwarding again after a failure.
const RETRY_DELAY: Duration = Duration::from_secs(3);

/// The local (= service) ports for a kind, with what each serves.
pub fn ports_for(kind: RayKind) -> Vec<(&'static str, u16)> {
    let port = |p: i32| u16::try_from(p).unwrap_or_default();
    let mut ports = vec![("Ray Dashboard", port(DEFAULT_DASHBOARD_PORT))];
    match kind {
        RayKind::Cluster => ports.push(("Ray Interactive Client", port(DEFAULT_CLIENT_PORT))),
        RayKind::Service => ports.push(("Ray Serve", port(DEFAULT_SERVING_PORT))),
        RayKind::Job => {}
    }
    ports
}

/// The head service of the target, from its status.
pub async fn head_service(ctx: &KubeContext, target: &ResourceRef) -> Result<String> {
    let client = ctx.client.clone();
    let ns = &ctx.namespace;
    let name = &target.name;
    let not_found = |e: kube::Error| failed!("unable to find {} {name}: {e}", target.kind.kind());
    let service = match target.kind {
        RayKind::Cluster => {
            let c = Api::<RayCluster>::namespaced(client, ns)
                .get(name)
                .await
                .map_err(not_found)?;
            c.status.and_then(|s| s.head).and_then(|h| h.service_name)
        }
        RayKind::Job => {
            let j = Api::<RayJob>::namespaced(client, ns)
                .get(name)
                .await
                .map_err(not_found)?;
            j.status
                .and_then(|s| s.ray_cluster_status)
                .and_then(|s| s.head)
                .and_then(|h| h.service_name)
        }
        RayKind::Service => {
            let s = Api::<RayService>::namespaced(client, ns)
                .get(name)
                .await
                .map_err(not_found)?;
            s.status
                .and_then(|s| s.active_service_status)
                .and_then(|s| s.ray_cluster_status)
                .and_then(|s| s.head)
                .and_then(|h| h.service_name)
        }
    };
    service.ok_or_else(|| failed!("{} {name} has no head service yet", target.kind.kind()))
}

/// Runs the command until interrupted.
pub async fn run(ctx: &KubeContext, args: &[String], verbose: bool) -> Result<()> {
    let [arg] = args else {
        return Err(PluginError::usage(
            "session",
            format!("accepts 1 arg, received {}", args.len()),
        ));
    };
    let target = parse(arg, TypeCase::Sensitive).map_err(|e| PluginError::usage("session", e.to_string()))?;
    let service = head_service(ctx, &target).await?;
    let ports = ports_for(target.kind);
    println!("Forwarding ports to service {service}");
    for (what, port) in &ports {
        println!("{what}: http://localhost:{port}");
    }
    let numbers: Vec<u16> = ports.iter().map(|(_, p)| *p).collect();
    loop {
        if verbose {
            let pairs: Vec<String> = numbers.iter().map(|p| format!("{p}:{p}")).collect();
            println!(
                "Running: port-forward -n {} service/{service} {}",
                ctx.namespace,
                pairs.join(" ")
            );
        }
        let result = match port_forward::resolve(ctx, &service, &numbers).await {
            Ok(target) => port_forward::serve(ctx, &target).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => return Ok(()),
            Err(e) => {
                eprintln!("failed to port-forward: {e}. Retrying in 3s ...");
                tokio::time::sleep(RETRY_DELAY).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_forwards_the_dashboard_and_its_own_port() {
        assert_eq!(
            ports_for(RayKind::Cluster),
            [("Ray Dashboard", 8265), ("Ray Interactive Client", 10001)]
        );
        assert_eq!(ports_for(RayKind::Job), [("Ray Dashboard", 8265)]);
        assert_eq!(
            ports_for(RayKind::Service),
            [("Ray Dashboard", 8265), ("Ray Serve", 8000)]
        );
    }
}
