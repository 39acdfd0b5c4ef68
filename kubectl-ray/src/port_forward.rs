//! Port-forwarding to a Service as `kubectl port-forward service/<svc> P:P` does it: the Service's selector
//! picks a running pod, each service port is mapped to its target port (named ports looked up in the pod's
//! containers), and every local connection gets its own stream through the API server (kube's
//! `Api::portforward`).

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Api;
use kube::api::ListParams;
use tokio::net::TcpListener;

use crate::error::{Result, failed};
use crate::kube_context::KubeContext;

/// A running pod behind a service and the pod ports that local ports lead to.
#[derive(Debug, Clone)]
pub struct ForwardTarget {
    /// The pod.
    pub pod: String,
    /// `(local port, pod port)` pairs.
    pub ports: Vec<(u16, u16)>,
}

/// Resolves `service` and its `ports` (service port numbers, forwarded to the same local numbers) to a pod.
pub async fn resolve(ctx: &KubeContext, service: &str, ports: &[u16]) -> Result<ForwardTarget> {
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let svc = services
        .get(service)
        .await
        .map_err(|e| failed!("unable to get service {service}: {e}"))?;
    let spec = svc.spec.unwrap_or_default();
    let selector = spec
        .selector
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    if selector.is_empty() {
        return Err(failed!("service {service} has no selector"));
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let listed = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| failed!("unable to list the pods of service {service}: {e}"))?;
    let pod = listed
        .items
        .into_iter()
        .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .ok_or_else(|| failed!("no running pod found for service {service}"))?;
    let service_ports = spec.ports.unwrap_or_default();
    let mut mapped = Vec::new();
    for &port in ports {
        let target = service_ports
            .iter()
            .find(|p| p.port == i32::from(port))
            .map(|p| p.target_port.clone().unwrap_or(IntOrString::Int(p.port)));
        let pod_port = match target {
            Some(IntOrString::Int(n)) => u16::try_from(n).ok(),
            Some(IntOrString::String(name)) => named_port(&pod, &name),
            None => Some(port),
        }
        .ok_or_else(|| failed!("service {service} has no usable target for port {port}"))?;
        mapped.push((port, pod_port));
    }
    Ok(ForwardTarget {
        pod: pod.metadata.name.unwrap_or_default(),
        ports: mapped,
    })
}

/// The number of the container port called `name`.
fn named_port(pod: &Pod, name: &str) -> Option<u16> {
    pod.spec
        .as_ref()?
        .containers
        .iter()
        .flat_map(|c| c.ports.iter().flatten())
        .find(|p| p.name.as_deref() == Some(name))
        .and_then(|p| u16::try_from(p.container_port).ok())
}

/// Listens on every local port of `target` and forwards connections until one listener fails.
pub async fn serve(ctx: &KubeContext, target: &ForwardTarget) -> Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for &(local, remote) in &target.ports {
        let listener = TcpListener::bind(("127.0.0.1", local))
            .await
            .map_err(|e| failed!("unable to listen on port {local}: {e}"))?;
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let pod = target.pod.clone();
        tasks.spawn(async move {
            loop {
                let (mut conn, _) = listener
                    .accept()
                    .await
                    .map_err(|e| format!("accepting on port {local}: {e}"))?;
                let pods = pods.clone();
                let pod = pod.clone();
                tokio::spawn(async move {
                    let Ok(mut forwarder) = pods.portforward(&pod, &[remote]).await else {
                        return;
                    };
                    if let Some(mut upstream) = forwarder.take_stream(remote) {
                        let _ = tokio::io::copy_bidirectional(&mut conn, &mut upstream).await;
                    }
                    forwarder.abort();
                });
            }
            #[allow(unreachable_code)]
            Ok::<(), String>(())
        });
    }
    match tasks.join_next().await {
        Some(Ok(Err(e))) => Err(failed!("{e}")),
        Some(Err(e)) => Err(failed!("{e}")),
        _ => Ok(()),
    }
}
