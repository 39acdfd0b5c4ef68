//! The bridge pod network end to end, as root: two "pods" attached through `BridgeNetworking` with real
//! processes (`python3 -m http.server`) in their network namespaces; pod↔pod, host→pod, ClusterIPs from pods
//! and from the host, the `kubernetes` Service with the serving CA, the cluster DNS (every name form,
//! NXDOMAIN, UDP and TCP, and the pod's own `resolv.conf` search path), EndpointSlices and Endpoints through
//! readiness changes, the API server's service and pod proxy through `kubectl get --raw`, and nothing left
//! behind after detach, after the server is dropped, and after an instance is killed.
//!
//! Nothing here skips: without root, network namespaces or the tools, the tests fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use kube_sim::network::{PodNetworkConfig, PodNetworkMode, state};
use kube_sim::sandbox::{PodIdentity, PodNet};
use kube_sim::{AgentConfig, DeleteOptions, Gvr, PatchKind, SimConfig, SimHandle, SimServer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, Command};

/// Port the test pods serve HTTP on.
const HTTP_PORT: u16 = 8080;

async fn bridge_sim() -> SimHandle {
    SimServer::start(SimConfig {
        pod_network: PodNetworkConfig {
            mode: PodNetworkMode::Bridge,
            ..PodNetworkConfig::default()
        },
        // Only the EndpointSlice controller: the test plays kubelet for its two pods.
        agents: AgentConfig {
            scheduler: false,
            kubelet: false,
            job_controller: false,
            workload_controllers: false,
            volcano: false,
            cert_manager: false,
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    })
    .await
    .expect("kube-sim with a bridge pod network (needs root and network namespaces)")
}

/// Runs a command to completion; returns (success, stdout, stderr).
async fn run(program: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap_or_else(|e| panic!("running {program}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `curl` (from the pod's namespace when `netns` is given); returns the body.
async fn curl(netns: Option<&Path>, extra: &[&str], url: &str) -> String {
    let mut args: Vec<String> = Vec::new();
    let program = match netns {
        Some(ns) => {
            args.push(format!("--net={}", ns.display()));
            args.push("curl".into());
            "nsenter"
        }
        None => "curl",
    };
    args.extend(["-sS", "--fail", "--max-time", "5"].map(str::to_string));
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(url.to_string());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, out, err) = run(program, &refs).await;
    assert!(ok, "curl {url} from {netns:?} failed: {err}");
    out
}

/// Polls `curl` until it answers (bounded).
async fn curl_eventually(netns: Option<&Path>, url: &str) -> String {
    let deadline = tokio::time::Instant::now() + support::WAIT;
    loop {
        let mut args: Vec<String> = Vec::new();
        if let Some(ns) = netns {
            args.push(format!("--net={}", ns.display()));
            args.push("curl".into());
        }
        args.extend(["-sS", "--fail", "--max-time", "2", url].map(str::to_string));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out, err) = run(if netns.is_some() { "nsenter" } else { "curl" }, &refs).await;
        if ok {
            return out;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{url} from {netns:?} never answered: {err}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A test pod: its object in the store, its network and the web server in its namespace.
struct TestPod {
    net: PodNet,
    server: Child,
    _docroot: PathBuf,
}

impl TestPod {
    fn netns(&self) -> &Path {
        self.net.netns.as_deref().expect("an isolated pod has a namespace")
    }

    fn ip(&self) -> String {
        self.net.ip.to_string()
    }
}

/// Creates pod `name` (labels `app=web`, a named container port `http`), attaches it to the pod network,
/// starts a web server answering `name` in its namespace, and reports it Running and Ready.
async fn start_pod(sim: &SimHandle, name: &str, subdomain: Option<&str>) -> TestPod {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"hostname": name, "subdomain": subdomain,
                 "containers": [{"name": "web", "image": "python", "ports": [{"name": "http", "containerPort": HTTP_PORT}]}]},
    });
    let created = sim.store().create(&Gvr::pods(), Some("default"), pod).unwrap();
    let identity = PodIdentity {
        uid: created.uid().to_string(),
        namespace: "default".into(),
        name: name.into(),
        hostname: name.into(),
        subdomain: subdomain.map(str::to_string),
        host_network: false,
    };
    let networking = sim.pod_network().networking();
    let net = networking.attach(&identity).expect("attaching a pod to the bridge");
    assert_eq!(networking.attach(&identity).unwrap(), net, "attach is idempotent");
    let docroot = std::env::temp_dir().join(format!("kube-sim-netpod-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&docroot).unwrap();
    std::fs::write(docroot.join("index.html"), name).unwrap();
    let server = Command::new("nsenter")
        .arg(format!("--net={}", net.netns.as_ref().unwrap().display()))
        .args([
            "python3",
            "-m",
            "http.server",
            &HTTP_PORT.to_string(),
            "--bind",
            "0.0.0.0",
        ])
        .current_dir(&docroot)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("starting python3 -m http.server in the pod's namespace");
    let pod = TestPod {
        net,
        server,
        _docroot: docroot,
    };
    assert_eq!(
        curl_eventually(Some(pod.netns()), &format!("http://127.0.0.1:{HTTP_PORT}/")).await,
        name
    );
    set_ready(sim, name, Some(&pod.ip()), true);
    pod
}

/// Writes the status a kubelet would: Running with `ip`, Ready `ready`.
fn set_ready(sim: &SimHandle, name: &str, ip: Option<&str>, ready: bool) {
    let status = if ready { "True" } else { "False" };
    let mut patch = json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": status}, {"type": "ContainersReady", "status": status}]}});
    if let Some(ip) = ip {
        patch["status"]["podIP"] = json!(ip);
        patch["status"]["podIPs"] = json!([{"ip": ip}]);
    }
    sim.store()
        .patch(
            &Gvr::pods(),
            Some("default"),
            name,
            &PatchKind::Merge,
            &patch,
            Some("status"),
        )
        .unwrap();
}

fn create_service(sim: &SimHandle, spec: Value, name: &str) -> Value {
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec});
    sim.store()
        .create(&Gvr::services(), Some("default"), svc)
        .unwrap()
        .value()
        .clone()
}

/// Polls the Service's EndpointSlice (and Endpoints) until `pred` holds on the slice's endpoints.
async fn wait_slice(sim: &SimHandle, svc: &str, what: &str, pred: impl Fn(&[Value]) -> bool) -> (Value, Value) {
    let deadline = tokio::time::Instant::now() + support::WAIT;
    let selector = format!("kubernetes.io/service-name={svc}");
    loop {
        let slices = sim
            .store()
            .list(
                &Gvr::new("discovery.k8s.io", "v1", "endpointslices"),
                Some("default"),
                &kube_sim::ListOptions::labels(&selector).unwrap(),
            )
            .unwrap();
        if let [slice] = slices.items.as_slice() {
            let eps = slice.value()["endpoints"].as_array().cloned().unwrap_or_default();
            // The controller writes the slice before the Endpoints object: poll until both exist.
            let endpoints = sim.store().get(&Gvr::core("endpoints"), Some("default"), svc);
            if pred(&eps)
                && let Ok(endpoints) = endpoints
            {
                return (slice.value(), endpoints.value());
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "EndpointSlice of {svc}: {what}; last {slices:?}",
            slices = slices.items.iter().map(|s| s.value()).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn endpoint<'a>(eps: &'a [Value], ip: &str) -> Option<&'a Value> {
    eps.iter().find(|e| e["addresses"][0] == ip)
}

/// Asks the cluster DNS at `server` over UDP (or TCP); returns the response code and the answers as text.
async fn dns(server: Ipv4Addr, name: &str, ty: RecordType, tcp: bool) -> (ResponseCode, Vec<String>) {
    let mut q = Message::query();
    q.metadata.recursion_desired = true;
    q.add_query(Query::query(Name::from_ascii(name).unwrap(), ty));
    let wire = q.to_vec().unwrap();
    let addr = SocketAddr::from((server, 53));
    let reply = if tcp {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_u16(u16::try_from(wire.len()).unwrap()).await.unwrap();
        s.write_all(&wire).await.unwrap();
        let len = s.read_u16().await.unwrap();
        let mut buf = vec![0; usize::from(len)];
        s.read_exact(&mut buf).await.unwrap();
        buf
    } else {
        let sock = tokio::net::UdpSocket::bind("0.0.0.0:0").await.unwrap();
        sock.send_to(&wire, addr).await.unwrap();
        let mut buf = vec![0; 4096];
        let (n, _) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
            .await
            .expect("DNS answer")
            .unwrap();
        buf.truncate(n);
        buf
    };
    let m = Message::from_vec(&reply).unwrap();
    assert_eq!(m.metadata.id, q.metadata.id);
    let mut answers: Vec<String> = m
        .answers
        .iter()
        .map(|r| match &r.data {
            RData::A(a) => a.0.to_string(),
            RData::SRV(s) => format!("{} {}", s.target, s.port),
            other => format!("{other:?}"),
        })
        .collect();
    answers.sort();
    (m.metadata.response_code, answers)
}

/// What the pod network has on the host: interfaces with the instance's prefix, and mounts and files
/// under its state directory.
fn host_traces(prefix: &str, state_dir: &Path) -> (Vec<String>, Vec<String>, bool) {
    let mut links: Vec<String> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|l| l.starts_with(prefix))
        .collect();
    links.sort();
    let dir = state_dir.display().to_string();
    let mounts: Vec<String> = std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.split(' ').nth(1).is_some_and(|m| m.starts_with(&dir)))
        .map(str::to_string)
        .collect();
    (links, mounts, state_dir.exists())
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("kubectl")
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .args(args)
        .output()
        .expect("kubectl on PATH");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl {args:?} failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_services_dns_and_endpoints_over_the_bridge() {
    let sim = bridge_sim().await;
    let network = sim.pod_network();
    let bridge = network.bridge().expect("bridge mode").clone();
    let gateway = network.dns_ip().unwrap();
    let k8s_ip = network.kubernetes_service_ip().unwrap().to_string();
    let prefix = bridge.bridge().trim_end_matches("br").to_string();
    let state_dir = bridge.state_dir();

    let a = start_pod(&sim, "a", None).await;
    let mut b = start_pod(&sim, "b", Some("peers")).await;
    assert!(bridge.pod_block().contains(a.ip().parse().unwrap()));
    assert_ne!(a.ip(), b.ip());
    let resolv = a.net.resolv_conf.clone().unwrap();
    assert_eq!(
        resolv,
        format!(
            "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver {gateway}\noptions ndots:5\n"
        )
    );
    assert!(
        b.net
            .etc_hosts
            .as_ref()
            .unwrap()
            .ends_with(&format!("{}\tb.peers.default.svc.cluster.local\tb\n", b.ip()))
    );

    // Pod to pod, host to pod.
    assert_eq!(
        curl(Some(a.netns()), &[], &format!("http://{}:{HTTP_PORT}/", b.ip())).await,
        "b"
    );
    assert_eq!(
        curl(Some(b.netns()), &[], &format!("http://{}:{HTTP_PORT}/", a.ip())).await,
        "a"
    );
    assert_eq!(curl(None, &[], &format!("http://{}:{HTTP_PORT}/", a.ip())).await, "a");

    // A ClusterIP Service on a named target port, and a headless one for pod b's subdomain.
    let web = create_service(
        &sim,
        json!({"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}),
        "web",
    );
    let web_ip = web["spec"]["clusterIP"].as_str().unwrap().to_string();
    assert!(bridge.pod_block() != network.service_block());
    assert!(network.service_block().contains(web_ip.parse().unwrap()));
    create_service(
        &sim,
        json!({"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": HTTP_PORT}]}),
        "peers",
    );
    let (slice, endpoints) = wait_slice(&sim, "web", "both pods ready", |eps| {
        eps.len() == 2 && eps.iter().all(|e| e["conditions"]["ready"] == true)
    })
    .await;
    assert_eq!(
        slice["ports"],
        json!([{"name": "http", "port": HTTP_PORT, "protocol": "TCP"}])
    );
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(
        endpoint(slice["endpoints"].as_array().unwrap(), &a.ip()).unwrap()["targetRef"]["name"],
        "a"
    );
    assert_eq!(endpoints["subsets"][0]["addresses"].as_array().unwrap().len(), 2);
    assert_eq!(
        endpoints["subsets"][0]["ports"],
        json!([{"name": "http", "port": HTTP_PORT, "protocol": "TCP"}])
    );
    let (peers, _) = wait_slice(&sim, "peers", "both pods", |eps| eps.len() == 2).await;
    assert_eq!(
        endpoint(peers["endpoints"].as_array().unwrap(), &b.ip()).unwrap()["hostname"],
        "b"
    );
    assert!(
        endpoint(peers["endpoints"].as_array().unwrap(), &a.ip())
            .unwrap()
            .get("hostname")
            .is_none()
    );

    // The ClusterIP from the host and from a pod (both pods answer in turn).
    let url = format!("http://{web_ip}:80/");
    let from_host = curl_eventually(None, &url).await;
    assert!(from_host == "a" || from_host == "b");
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..4 {
        seen.insert(curl(Some(a.netns()), &[], &url).await);
    }
    assert_eq!(
        seen,
        ["a".to_string(), "b".to_string()].into(),
        "requests spread over both endpoints"
    );

    // The kubernetes Service from a pod, verified against the serving CA under every in-cluster name.
    let ca = std::env::temp_dir().join(format!("kube-sim-net-ca-{}.pem", std::process::id()));
    std::fs::write(&ca, sim.ca_pem().unwrap()).unwrap();
    let ca_arg = ca.display().to_string();
    let bearer = format!("Authorization: Bearer {}", SimConfig::default().token);
    for host in [
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ] {
        let resolve = format!("{host}:443:{k8s_ip}");
        let version = curl(
            Some(a.netns()),
            &["--cacert", &ca_arg, "-H", &bearer, "--resolve", &resolve],
            &format!("https://{host}/version"),
        )
        .await;
        assert!(version.contains("gitVersion"), "{host}: {version}");
    }
    let by_ip = curl(
        Some(a.netns()),
        &["--cacert", &ca_arg, "-H", &bearer],
        &format!("https://{k8s_ip}/version"),
    )
    .await;
    assert!(by_ip.contains("gitVersion"));

    // Cluster DNS: every name form, over UDP and TCP, and NXDOMAIN.
    let ok = |ips: &[&str]| {
        (
            ResponseCode::NoError,
            ips.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    };
    let mut both = [a.ip(), b.ip()];
    both.sort();
    let both: Vec<&str> = both.iter().map(String::as_str).collect();
    assert_eq!(
        dns(gateway, "web.default.svc.cluster.local.", RecordType::A, false).await,
        ok(&[&web_ip])
    );
    assert_eq!(
        dns(gateway, "web.default.svc.cluster.local.", RecordType::A, true).await,
        ok(&[&web_ip])
    );
    assert_eq!(
        dns(gateway, "kubernetes.default.svc.cluster.local.", RecordType::A, false).await,
        ok(&[&k8s_ip])
    );
    // The DNS follows the store a moment behind: wait for the headless Service's endpoints.
    wait_dns(gateway, "peers.default.svc.cluster.local.", &both).await;
    assert_eq!(
        dns(gateway, "b.peers.default.svc.cluster.local.", RecordType::A, false).await,
        ok(&[&b.ip()])
    );
    let dashed = a.ip().replace('.', "-");
    assert_eq!(
        dns(
            gateway,
            &format!("{dashed}.default.pod.cluster.local."),
            RecordType::A,
            false
        )
        .await,
        ok(&[&a.ip()])
    );
    assert_eq!(
        dns(
            gateway,
            "_http._tcp.web.default.svc.cluster.local.",
            RecordType::SRV,
            false
        )
        .await,
        ok(&["web.default.svc.cluster.local. 80"])
    );
    assert_eq!(
        dns(gateway, "web.default.svc.cluster.local.", RecordType::AAAA, false).await,
        ok(&[])
    );
    for missing in [
        "nope.default.svc.cluster.local.",
        "a.web.default.svc.cluster.local.",
        "example.com.",
    ] {
        assert_eq!(
            dns(gateway, missing, RecordType::A, false).await.0,
            ResponseCode::NXDomain,
            "{missing}"
        );
    }
    // A pod resolving a short name through its own resolv.conf (search path and nameserver).
    let resolv_file = std::env::temp_dir().join(format!("kube-sim-net-resolv-{}", std::process::id()));
    std::fs::write(&resolv_file, &resolv).unwrap();
    let script = format!(
        "mount --bind {} /etc/resolv.conf && getent ahostsv4 web | head -n1",
        resolv_file.display()
    );
    let (ran, out, err) = run(
        "nsenter",
        &[
            &format!("--net={}", a.netns().display()),
            "unshare",
            "--mount",
            "sh",
            "-c",
            &script,
        ],
    )
    .await;
    assert!(ran, "getent in the pod: {err}");
    assert!(out.starts_with(&web_ip), "web resolved to {out:?}, want {web_ip}");

    // The API server's service and pod proxy reach the real endpoints.
    let kubeconfig = std::env::temp_dir().join(format!("kube-sim-net-kubeconfig-{}", std::process::id()));
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let via_proxy = kubectl(
        &kubeconfig,
        &["get", "--raw", "/api/v1/namespaces/default/services/web:80/proxy/"],
    );
    assert!(via_proxy == "a" || via_proxy == "b", "{via_proxy}");
    let via_name = kubectl(
        &kubeconfig,
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/services/web:http/proxy/index.html",
        ],
    );
    assert!(via_name == "a" || via_name == "b", "{via_name}");
    assert_eq!(
        kubectl(
            &kubeconfig,
            &["get", "--raw", "/api/v1/namespaces/default/pods/b:8080/proxy/"]
        ),
        "b"
    );
    assert_eq!(
        kubectl(
            &kubeconfig,
            &["get", "--raw", "/api/v1/namespaces/default/pods/a:http/proxy/"]
        ),
        "a"
    );

    // Readiness changes: b not ready, then a terminating.
    set_ready(&sim, "b", None, false);
    let (slice, endpoints) = wait_slice(&sim, "web", "b not ready", |eps| {
        endpoint(eps, &b.ip()).is_some_and(|e| e["conditions"]["ready"] == false)
    })
    .await;
    let eb = endpoint(slice["endpoints"].as_array().unwrap(), &b.ip()).unwrap();
    assert_eq!(
        eb["conditions"],
        json!({"ready": false, "serving": false, "terminating": false})
    );
    assert_eq!(endpoints["subsets"][0]["notReadyAddresses"][0]["ip"], b.ip());
    assert_eq!(endpoints["subsets"][0]["addresses"].as_array().unwrap().len(), 1);
    wait_dns(gateway, "peers.default.svc.cluster.local.", &[&a.ip()]).await;
    // The proxy, like the DNS, follows the store a moment behind, and the two Services' slices are separate
    // commits: one answer from the ready endpoint does not show the other is gone (the proxy spreads
    // connections), so wait until it answers several times in a row, then only it may.
    wait_only_answer(Some(b.netns()), &url, "a").await;
    for _ in 0..4 {
        assert_eq!(
            curl(Some(b.netns()), &[], &url).await,
            "a",
            "only the ready endpoint gets traffic"
        );
    }
    // A finalizer holds the deleted pod (unbound pods are otherwise removed at once).
    let finalizers = |f: Value| json!({"metadata": {"finalizers": f}});
    let patch_a = |body: Value| {
        sim.store()
            .patch(&Gvr::pods(), Some("default"), "a", &PatchKind::Merge, &body, None)
            .unwrap()
    };
    patch_a(finalizers(json!(["test.kube-sim.io/hold"])));
    sim.store()
        .delete(&Gvr::pods(), Some("default"), "a", &DeleteOptions::default())
        .unwrap();
    let (slice, endpoints) = wait_slice(&sim, "web", "a terminating", |eps| {
        endpoint(eps, &a.ip()).is_some_and(|e| e["conditions"]["terminating"] == true)
    })
    .await;
    let ea = endpoint(slice["endpoints"].as_array().unwrap(), &a.ip()).unwrap();
    assert_eq!(
        ea["conditions"],
        json!({"ready": false, "serving": true, "terminating": true})
    );
    assert_eq!(
        endpoints["subsets"][0]["notReadyAddresses"].as_array().unwrap().len(),
        1,
        "terminating pods leave Endpoints"
    );
    assert!(endpoints["subsets"][0].get("addresses").is_none());
    patch_a(finalizers(Value::Null));
    wait_slice(&sim, "web", "a gone", |eps| eps.len() == 1).await;

    // Detach removes the pod's namespace file, its mount and its veth.
    let networking = network.networking();
    let a_netns = a.netns().to_path_buf();
    let uid_links_before = host_traces(&prefix, &state_dir).0.len();
    drop(a);
    let a_uid = a_netns.file_name().unwrap().to_string_lossy().into_owned();
    networking.detach(&a_uid);
    networking.detach(&a_uid);
    let (links, mounts, _) = host_traces(&prefix, &state_dir);
    assert_eq!(links.len(), uid_links_before - 1, "a's veth is gone: {links:?}");
    assert!(!a_netns.exists());
    assert!(mounts.iter().all(|m| !m.contains(&a_uid)), "{mounts:?}");

    // Dropping the server removes the bridge, every pod network, the state directory and the listeners.
    b.server.kill().await.unwrap();
    drop(networking);
    drop(sim);
    let (links, mounts, dir_exists) = host_traces(&prefix, &state_dir);
    assert!(links.is_empty(), "interfaces left: {links:?}");
    assert!(mounts.is_empty(), "mounts left: {mounts:?}");
    assert!(!dir_exists, "state directory left: {}", state_dir.display());
    let addrs = run("ip", &["-o", "addr"]).await.1;
    assert!(
        !addrs.contains(&format!(" {k8s_ip}/32")),
        "the kubernetes ClusterIP is still on the host"
    );
    for f in [ca, resolv_file, kubeconfig] {
        let _ = std::fs::remove_file(f);
    }
}

/// How many answers in a row [`wait_only_answer`] waits for: enough that a proxy still spreading
/// connections over an endpoint that left would have sent one there.
const ANSWERS_IN_A_ROW: usize = 8;

/// Polls `url` from `netns` (bounded by the tests' wait) until it answers only `want`, several times in a row.
async fn wait_only_answer(netns: Option<&Path>, url: &str, want: &str) {
    let deadline = tokio::time::Instant::now() + support::WAIT;
    let mut in_a_row = 0;
    while in_a_row < ANSWERS_IN_A_ROW {
        let got = curl(netns, &[], url).await;
        if got == want {
            in_a_row += 1;
            continue;
        }
        in_a_row = 0;
        assert!(
            tokio::time::Instant::now() < deadline,
            "{url}: {got:?}, want only {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_dns(server: Ipv4Addr, name: &str, want: &[&str]) {
    let deadline = tokio::time::Instant::now() + support::WAIT;
    loop {
        let (code, got) = dns(server, name, RecordType::A, false).await;
        if code == ResponseCode::NoError && got == want {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{name}: {got:?}, want {want:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_sweeps_what_a_killed_instance_left() {
    let root = PodNetworkConfig::default().state_dir;
    // A slot as a SIGKILLed instance leaves it: owner dead, a bridge, a veth and a bound namespace file.
    let slot = state::claim(&root, 1024).expect("claiming a pod network slot");
    let prefix = state::link_prefix(slot.index);
    let (bridge, veth) = (format!("{prefix}br"), format!("{prefix}0"));
    let netns = slot.netns_dir().join("killed-pod");
    kube_sim::network::host::create_netns(&netns).unwrap();
    kube_sim::network::host::ip_batch(&format!(
        "link add {bridge} type bridge\nlink add {veth} type veth peer name {veth}p\nlink set {veth}p netns {}\n",
        netns.display()
    ))
    .unwrap();
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    std::fs::write(slot.dir.join("owner"), format!("{dead_pid} 1")).unwrap();
    let (links, mounts, _) = host_traces(&prefix, &slot.dir);
    assert_eq!(links, [veth.clone(), bridge.clone()]);
    assert_eq!(mounts.len(), 1);

    // The next instance sweeps it on start (and may well reuse the slot).
    let sim = bridge_sim().await;
    assert!(!netns.exists(), "the killed instance's namespace file is gone");
    assert!(!kube_sim::network::host::is_mounted(&netns));
    let still: Vec<String> = kube_sim::network::host::link_names()
        .into_iter()
        .filter(|l| *l == veth || (*l == bridge && sim.pod_network().bridge().unwrap().bridge() != bridge))
        .collect();
    assert!(still.is_empty(), "left over: {still:?}");
    drop(sim);
}

/// A process pod on the bridge cannot reach the host's loopback, so its `KUBERNETES_SERVICE_HOST` / `_PORT`
/// name the `kubernetes` Service, as in a cluster; an in-cluster client there verifies the serving certificate
/// with the pod's `ca.crt` and authenticates with its projected token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_pods_on_the_bridge_reach_the_api_through_the_kubernetes_service() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, LogParams, PostParams};
    use kube_sim::runtime::{ImageMapping, RuntimeConfig};

    let mut runtime = RuntimeConfig::new(vec![ImageMapping::parse("busybox=/usr", false).unwrap()]);
    runtime.state_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pod-network-runtime-state");
    let sim = SimServer::start(SimConfig {
        pod_network: PodNetworkConfig {
            mode: PodNetworkMode::Bridge,
            ..PodNetworkConfig::default()
        },
        agents: AgentConfig {
            process_runtime: Some(runtime),
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    })
    .await
    .expect("kube-sim with process pods on a bridge pod network (needs root)");
    let k8s_ip = sim.pod_network().kubernetes_service_ip().unwrap();
    let sa = "/var/run/secrets/kubernetes.io/serviceaccount";
    let script = format!(
        "echo api=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT; \
         curl -sS --max-time 10 --cacert {sa}/ca.crt -H \"Authorization: Bearer $(cat {sa}/token)\" \
         https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api/v1/namespaces/default/secrets"
    );
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "in-cluster"},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "busybox:1.36", "command": ["/bin/sh", "-c", script]}]}}))
    .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    pods.create(&PostParams::default(), &pod).await.unwrap();
    support::wait_for(&pods, "in-cluster", "Succeeded", |v| {
        v["status"]["phase"] == "Succeeded"
    })
    .await;
    let out = pods.logs("in-cluster", &LogParams::default()).await.unwrap();
    assert!(out.contains(&format!("api={k8s_ip}:443")), "{out}");
    assert!(
        out.contains("system:serviceaccount:default:default") && out.contains("Forbidden"),
        "the API server answered the pod's token (authenticated, then refused by RBAC): {out}"
    );
}
