//! The `/etc/resolv.conf` and `/etc/hosts` a pod's containers see, as the kubelet writes them.

use std::net::{IpAddr, Ipv4Addr};

use super::CLUSTER_DOMAIN;
use crate::sandbox::PodIdentity;

/// `resolv.conf` of a `dnsPolicy: ClusterFirst` pod in `namespace` with the cluster DNS at `nameserver`.
pub fn resolv_conf(namespace: &str, nameserver: Ipv4Addr) -> String {
    format!(
        "search {namespace}.svc.{CLUSTER_DOMAIN} svc.{CLUSTER_DOMAIN} {CLUSTER_DOMAIN}\nnameserver {nameserver}\noptions ndots:5\n"
    )
}

/// The kubelet-managed `hosts` file of a pod with IP `ip`: loopback and IPv6 names, then the pod's own name
/// (its FQDN first when it has a subdomain).
pub fn etc_hosts(pod: &PodIdentity, ip: IpAddr) -> String {
    let own = match &pod.subdomain {
        Some(sub) if !sub.is_empty() => format!(
            "{ip}\t{host}.{sub}.{ns}.svc.{CLUSTER_DOMAIN}\t{host}\n",
            host = pod.hostname,
            ns = pod.namespace
        ),
        _ => format!("{ip}\t{}\n", pod.hostname),
    };
    format!(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n\
         fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n{own}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(subdomain: Option<&str>) -> PodIdentity {
        PodIdentity {
            uid: "u".into(),
            namespace: "ray".into(),
            name: "head-0".into(),
            hostname: "head-0".into(),
            subdomain: subdomain.map(str::to_string),
            host_network: false,
        }
    }

    #[test]
    fn resolv_conf_as_kubelet_writes_it() {
        assert_eq!(
            resolv_conf("ray", Ipv4Addr::new(10, 250, 0, 1)),
            "search ray.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.250.0.1\noptions ndots:5\n"
        );
    }

    #[test]
    fn hosts_name_the_pod() {
        let ip = IpAddr::V4(Ipv4Addr::new(10, 250, 0, 7));
        assert!(etc_hosts(&pod(None), ip).ends_with("fe00::2\tip6-allrouters\n10.250.0.7\thead-0\n"));
        assert!(etc_hosts(&pod(Some("svc")), ip).ends_with("10.250.0.7\thead-0.svc.ray.svc.cluster.local\thead-0\n"));
    }
}
