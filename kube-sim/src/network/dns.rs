//! The cluster DNS: a small authoritative server for `cluster.local` on the bridge gateway (UDP and TCP
//! port 53), answering from the [`ClusterView`] as kube-dns does. Names outside the cluster domain get
//! NXDOMAIN: there is no upstream resolver.
//!
//! | Name | Answer |
//! |---|---|
//! | `<svc>.<ns>.svc.cluster.local` | A: the ClusterIP; for a headless Service the ready endpoints' IPs |
//! | `<hostname>.<svc>.<ns>.svc.cluster.local` | A: the endpoint of a headless Service with that hostname |
//! | `<a-b-c-d>.<ns>.pod.cluster.local` | A: `a.b.c.d` |
//! | `_<port>._<proto>.<svc>.<ns>.svc.cluster.local` | SRV per named port (per ready endpoint if headless) |

use std::net::{Ipv4Addr, SocketAddr};

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::rdata::{A, SRV};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, UdpSocket};

use super::CLUSTER_DOMAIN;
pub use super::view::SharedView;
use super::view::{ClusterView, ServiceEntry};

/// TTL of every answer, in seconds (CoreDNS's default for cluster records).
const TTL: u32 = 5;
/// The DNS port.
pub const DNS_PORT: u16 = 53;
/// Largest UDP message handled.
const MAX_UDP: usize = 4096;

/// What a name resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Found {
    /// No such name.
    Missing,
    /// A records (possibly none: the name exists but has no ready address).
    Addresses(Vec<Ipv4Addr>),
    /// SRV records: (target, port) with the target's address for the additional section.
    Services(Vec<(String, u16, Option<Ipv4Addr>)>),
}

/// Parses a pod-style dashed address `a-b-c-d`.
fn dashed_ip(label: &str) -> Option<Ipv4Addr> {
    label.replace('-', ".").parse().ok().filter(|_| label.contains('-'))
}

fn dashed(ip: Ipv4Addr) -> String {
    ip.to_string().replace('.', "-")
}

/// Resolves a lowercase name without its trailing dot.
fn resolve(view: &ClusterView, name: &str) -> Found {
    let Some(rest) = name.strip_suffix(CLUSTER_DOMAIN).and_then(|r| r.strip_suffix('.')) else {
        return Found::Missing;
    };
    let labels: Vec<&str> = rest.split('.').collect();
    let service = |ns: &str, svc: &str| view.get(&(ns.to_string(), svc.to_string()));
    match labels.as_slice() {
        [ip, _ns, "pod"] => dashed_ip(ip).map_or(Found::Missing, |ip| Found::Addresses(vec![ip])),
        [svc, ns, "svc"] => match service(ns, svc) {
            Some(entry) => Found::Addresses(service_addresses(entry)),
            None => Found::Missing,
        },
        [port, proto, svc, ns, "svc"] if port.starts_with('_') && proto.starts_with('_') => match service(ns, svc) {
            Some(entry) => srv(
                entry,
                &port[1..],
                &proto[1..],
                &format!("{svc}.{ns}.svc.{CLUSTER_DOMAIN}"),
            ),
            None => Found::Missing,
        },
        [host, svc, ns, "svc"] => {
            let Some(entry) = service(ns, svc).filter(|e| e.headless) else {
                return Found::Missing;
            };
            let ips: Vec<Ipv4Addr> = entry
                .endpoints
                .iter()
                .filter(|e| e.hostname.as_deref() == Some(host) || dashed_ip(host) == Some(e.ip))
                .map(|e| e.ip)
                .collect();
            if ips.is_empty() {
                Found::Missing
            } else {
                Found::Addresses(ips)
            }
        }
        _ => Found::Missing,
    }
}

fn service_addresses(entry: &ServiceEntry) -> Vec<Ipv4Addr> {
    match entry.cluster_ip {
        Some(ip) => vec![ip],
        None => {
            let mut ips: Vec<Ipv4Addr> = entry.endpoints.iter().filter(|e| e.ready).map(|e| e.ip).collect();
            ips.dedup();
            ips
        }
    }
}

fn srv(entry: &ServiceEntry, port: &str, proto: &str, fqdn: &str) -> Found {
    let Some(p) = entry
        .ports
        .iter()
        .find(|p| !p.name.is_empty() && p.name == port && p.protocol.eq_ignore_ascii_case(proto))
    else {
        return Found::Missing;
    };
    if !entry.headless {
        return Found::Services(vec![(fqdn.to_string(), p.port, entry.cluster_ip)]);
    }
    Found::Services(
        entry
            .endpoints
            .iter()
            .filter(|e| e.ready)
            .filter_map(|e| {
                let host = e.hostname.clone().unwrap_or_else(|| dashed(e.ip));
                Some((format!("{host}.{fqdn}"), *e.ports.get(&p.name)?, Some(e.ip)))
            })
            .collect(),
    )
}

fn a_record(name: Name, ip: Ipv4Addr) -> Record {
    Record::from_rdata(name, TTL, RData::A(A(ip)))
}

/// The response to a DNS request message, `None` when the request cannot be parsed at all.
pub fn answer(view: &ClusterView, request: &[u8]) -> Option<Vec<u8>> {
    let req = Message::from_vec(request).ok()?;
    let mut resp = Message::response(req.metadata.id, req.metadata.op_code);
    resp.metadata.authoritative = true;
    resp.metadata.recursion_desired = req.metadata.recursion_desired;
    resp.add_queries(req.queries.clone());
    let Some(query) = req.queries.first() else {
        resp.metadata.response_code = ResponseCode::FormErr;
        return resp.to_vec().ok();
    };
    let qname = query.name().clone();
    let text = qname.to_lowercase().to_ascii();
    let found = resolve(view, text.trim_end_matches('.'));
    match (found, query.query_type()) {
        (Found::Missing, _) => resp.metadata.response_code = ResponseCode::NXDomain,
        (Found::Addresses(ips), RecordType::A | RecordType::ANY) => {
            for ip in ips {
                resp.add_answer(a_record(qname.clone(), ip));
            }
        }
        (Found::Services(targets), RecordType::SRV | RecordType::ANY) => {
            for (target, port, ip) in targets {
                let Ok(target_name) = Name::from_ascii(format!("{target}.")) else {
                    continue;
                };
                resp.add_answer(Record::from_rdata(
                    qname.clone(),
                    TTL,
                    RData::SRV(SRV::new(0, 100, port, target_name.clone())),
                ));
                if let Some(ip) = ip {
                    resp.add_additional(a_record(target_name, ip));
                }
            }
        }
        // The name exists but has no records of the asked type: an empty NOERROR answer.
        _ => {}
    }
    resp.to_vec().ok()
}

/// Serves DNS on UDP and TCP `addr` until the returned tasks are aborted.
pub fn serve(addr: SocketAddr, view: SharedView) -> std::io::Result<Vec<tokio::task::JoinHandle<()>>> {
    let udp = std::net::UdpSocket::bind(addr)?;
    udp.set_nonblocking(true)?;
    let udp = UdpSocket::from_std(udp)?;
    let tcp = std::net::TcpListener::bind(addr)?;
    tcp.set_nonblocking(true)?;
    let tcp = TcpListener::from_std(tcp)?;
    Ok(vec![
        tokio::spawn(serve_udp(udp, view.clone())),
        tokio::spawn(serve_tcp(tcp, view)),
    ])
}

async fn serve_udp(socket: UdpSocket, view: SharedView) {
    let mut buf = vec![0u8; MAX_UDP];
    loop {
        let Ok((n, peer)) = socket.recv_from(&mut buf).await else {
            continue;
        };
        let current = view.read().clone();
        if let Some(out) = answer(&current, &buf[..n]) {
            let _ = socket.send_to(&out, peer).await;
        }
    }
}

async fn serve_tcp(listener: TcpListener, view: SharedView) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((mut stream, _)) = accepted else { continue };
                let view = view.clone();
                conns.spawn(async move {
                    // Each message is prefixed by its length (two bytes, big-endian).
                    loop {
                        let Ok(len) = stream.read_u16().await else { return };
                        let mut msg = vec![0u8; usize::from(len)];
                        if stream.read_exact(&mut msg).await.is_err() {
                            return;
                        }
                        let current = view.read().clone();
                        let Some(out) = answer(&current, &msg) else { return };
                        let Ok(out_len) = u16::try_from(out.len()) else { return };
                        if stream.write_u16(out_len).await.is_err() || stream.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::network::view::{Endpoint, ServicePort};

    fn view() -> ClusterView {
        let port = |name: &str, port| ServicePort {
            name: name.into(),
            port,
            protocol: "TCP".into(),
        };
        let ep = |ip: [u8; 4], ready, hostname: Option<&str>| Endpoint {
            ip: Ipv4Addr::from(ip),
            ready,
            hostname: hostname.map(str::to_string),
            ports: BTreeMap::from([("gcs".to_string(), 6379)]),
        };
        let mut v = ClusterView::new();
        v.insert(
            ("ray".into(), "head".into()),
            ServiceEntry {
                cluster_ip: Some(Ipv4Addr::new(10, 96, 0, 5)),
                headless: false,
                ports: vec![port("gcs", 6379)],
                endpoints: vec![ep([10, 250, 0, 2], true, None)],
            },
        );
        v.insert(
            ("ray".into(), "workers".into()),
            ServiceEntry {
                cluster_ip: None,
                headless: true,
                ports: vec![port("gcs", 6379)],
                endpoints: vec![
                    ep([10, 250, 0, 3], true, Some("w0")),
                    ep([10, 250, 0, 4], false, Some("w1")),
                ],
            },
        );
        v
    }

    #[test]
    fn resolves_every_name_form() {
        let v = view();
        let a = |ips: &[[u8; 4]]| Found::Addresses(ips.iter().map(|ip| Ipv4Addr::from(*ip)).collect());
        assert_eq!(resolve(&v, "head.ray.svc.cluster.local"), a(&[[10, 96, 0, 5]]));
        assert_eq!(resolve(&v, "workers.ray.svc.cluster.local"), a(&[[10, 250, 0, 3]]));
        assert_eq!(resolve(&v, "w1.workers.ray.svc.cluster.local"), a(&[[10, 250, 0, 4]]));
        assert_eq!(
            resolve(&v, "10-250-0-3.workers.ray.svc.cluster.local"),
            a(&[[10, 250, 0, 3]])
        );
        assert_eq!(resolve(&v, "10-1-2-3.ray.pod.cluster.local"), a(&[[10, 1, 2, 3]]));
        assert_eq!(
            resolve(&v, "w0.head.ray.svc.cluster.local"),
            Found::Missing,
            "not headless"
        );
        assert_eq!(resolve(&v, "nope.ray.svc.cluster.local"), Found::Missing);
        assert_eq!(resolve(&v, "example.com"), Found::Missing);
        assert_eq!(
            resolve(&v, "_gcs._tcp.head.ray.svc.cluster.local"),
            Found::Services(vec![(
                "head.ray.svc.cluster.local".into(),
                6379,
                Some(Ipv4Addr::new(10, 96, 0, 5))
            )])
        );
        assert_eq!(
            resolve(&v, "_gcs._tcp.workers.ray.svc.cluster.local"),
            Found::Services(vec![(
                "w0.workers.ray.svc.cluster.local".into(),
                6379,
                Some(Ipv4Addr::new(10, 250, 0, 3))
            )])
        );
        assert_eq!(resolve(&v, "_http._tcp.head.ray.svc.cluster.local"), Found::Missing);
    }

    #[test]
    fn answers_on_the_wire() {
        let mut q = Message::query();
        q.add_query(hickory_proto::op::Query::query(
            Name::from_ascii("HEAD.ray.svc.cluster.local.").unwrap(),
            RecordType::A,
        ));
        let out = Message::from_vec(&answer(&view(), &q.to_vec().unwrap()).unwrap()).unwrap();
        assert_eq!(out.metadata.id, q.metadata.id);
        assert_eq!(out.metadata.response_code, ResponseCode::NoError);
        assert_eq!(out.answers.len(), 1);
        let mut q = Message::query();
        q.add_query(hickory_proto::op::Query::query(
            Name::from_ascii("nope.ray.svc.cluster.local.").unwrap(),
            RecordType::A,
        ));
        let out = Message::from_vec(&answer(&view(), &q.to_vec().unwrap()).unwrap()).unwrap();
        assert_eq!(out.metadata.response_code, ResponseCode::NXDomain);
    }
}
