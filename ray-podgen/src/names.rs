//! Name helpers: pod name prefixes, KubeRay's `CheckName` / `CheckLabel` truncation rules and the
//! names of every object KubeRay derives from a cluster (docs/podgen.md#names).

use std::borrow::Cow;

use ray_api::constants::{DEFAULT_CLUSTER_DOMAIN, HEADLESS_SERVICE_SUFFIX};

/// Longest prefix kept by [`pod_name`] (the API server appends 5 random characters to `generateName`).
pub const MAX_POD_NAME_PREFIX_LENGTH: usize = 50;
/// Longest result of [`check_name`].
pub const MAX_CHECK_NAME_LENGTH: usize = 50;
/// Longest Kubernetes label value, the limit of [`check_label`].
pub const MAX_LABEL_LENGTH: usize = 63;
/// Budget of an OpenShift route name before the namespace length is subtracted ([`check_route_name`]).
pub const ROUTE_NAME_BUDGET: usize = 51;
/// Suffix of the head service name.
pub const HEAD_SERVICE_SUFFIX: &str = "head-svc";
/// Suffix of the serve service name.
pub const SERVE_SERVICE_SUFFIX: &str = "serve-svc";
/// Suffix of a RayService's incremental-upgrade Gateway (`<rs>-gateway`).
pub const GATEWAY_SUFFIX: &str = "gateway";
/// Suffix of a RayService's incremental-upgrade HTTPRoute (`<rs>-httproute`).
pub const HTTP_ROUTE_SUFFIX: &str = "httproute";
/// Suffix of the dashboard ingress name.
pub const INGRESS_SUFFIX: &str = "head-ingress";
/// Suffix of the OpenShift route name.
pub const ROUTE_SUFFIX: &str = "head-route";
/// Suffix of the operator-managed GCS storage PVC.
pub const GCS_PVC_SUFFIX: &str = "gcs-pvc";
/// Suffix of the GCS FT Redis cleanup Job name.
pub const REDIS_CLEANUP_SUFFIX: &str = "redis-cleanup";

/// Go's `unicode.IsPunct` applied to one byte widened to a rune (Latin-1): Unicode category P.
///
/// Not `u8::is_ascii_punctuation`, which also accepts the symbols `$ + < = > ^ ` | ~`.
pub fn is_go_punct(byte: u8) -> bool {
    matches!(
        byte,
        b'!' | b'"'
            | b'#'
            | b'%'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b','
            | b'-'
            | b'.'
            | b'/'
            | b':'
            | b';'
            | b'?'
            | b'@'
            | b'['
            | b'\\'
            | b']'
            | b'_'
            | b'{'
            | b'}'
            // Latin-1 punctuation: ¡ § « ¶ · » ¿
            | 0xA1
            | 0xA7
            | 0xAB
            | 0xB6
            | 0xB7
            | 0xBB
            | 0xBF
    )
}

fn bytes_to_string(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// KubeRay's `PodName`: the `generateName` (or fixed name) of a head / worker pod.
///
/// Keeps the first 50 bytes of `prefix`, appends `-<node_type>`, lower-cases, and appends `-` when
/// the API server is to generate the name.
pub fn pod_name(prefix: &str, node_type: &str, generate_name: bool) -> String {
    let bytes = prefix.as_bytes();
    let kept = if bytes.len() > MAX_POD_NAME_PREFIX_LENGTH {
        Cow::Owned(bytes_to_string(&bytes[..MAX_POD_NAME_PREFIX_LENGTH]))
    } else {
        Cow::Borrowed(prefix)
    };
    let mut name = String::with_capacity(kept.len() + node_type.len() + 2);
    name.push_str(&kept);
    name.push('-');
    name.push_str(node_type);
    let mut name = name.to_lowercase();
    if generate_name {
        name.push('-');
    }
    name
}

/// Replaces the first byte by `r` when `rule` says so (KubeRay's first-character fix-ups).
fn replace_first_if(mut bytes: Vec<u8>, rule: impl Fn(u8) -> bool) -> Vec<u8> {
    if let Some(first) = bytes.first_mut()
        && rule(*first)
    {
        *first = b'r';
    }
    bytes
}

/// KubeRay's `CheckName`: keeps the LAST 50 bytes, then a leading digit and then a leading
/// punctuation byte become `r`. (Go panics on an empty string; this returns it unchanged.)
pub fn check_name(name: &str) -> String {
    let bytes = name.as_bytes();
    if bytes.len() <= MAX_CHECK_NAME_LENGTH && bytes.first().is_none_or(|b| !b.is_ascii_digit() && !is_go_punct(*b)) {
        return name.to_owned();
    }
    let start = bytes.len().saturating_sub(MAX_CHECK_NAME_LENGTH);
    let kept = replace_first_if(bytes[start..].to_vec(), |b| b.is_ascii_digit());
    let kept = replace_first_if(kept, is_go_punct);
    bytes_to_string(&kept)
}

/// KubeRay's `CheckLabel`: keeps the LAST 63 bytes, then a leading punctuation byte becomes `r`.
pub fn check_label(label: &str) -> String {
    let bytes = label.as_bytes();
    if bytes.len() <= MAX_LABEL_LENGTH && bytes.first().is_none_or(|b| !is_go_punct(*b)) {
        return label.to_owned();
    }
    let start = bytes.len().saturating_sub(MAX_LABEL_LENGTH);
    bytes_to_string(&replace_first_if(bytes[start..].to_vec(), is_go_punct))
}

/// KubeRay's `CheckRouteName`: keeps the FIRST `51 - len(namespace)` bytes, then [`check_name`].
pub fn check_route_name(name: &str, namespace: &str) -> String {
    let max = ROUTE_NAME_BUDGET.saturating_sub(namespace.len());
    let bytes = name.as_bytes();
    if bytes.len() > max {
        check_name(&bytes_to_string(&bytes[..max]))
    } else {
        check_name(name)
    }
}

/// `<cluster>-<node type>`, the `ray.io/identifier` base (`GenerateIdentifier`).
pub fn identifier(cluster: &str, node_type: &str) -> String {
    format!("{cluster}-{node_type}")
}

/// `<owner>-head-svc`, the default head service name.
pub fn default_head_service_name(owner: &str) -> String {
    format!("{owner}-{HEAD_SERVICE_SUFFIX}")
}

/// `<name>-serve-svc` (`GenerateServeServiceName`).
pub fn serve_service_name(name: &str) -> String {
    format!("{name}-{SERVE_SERVICE_SUFFIX}")
}

/// `<rayservice>-gateway`, the Gateway of an incremental upgrade.
pub fn gateway_name(service: &str) -> String {
    format!("{service}-{GATEWAY_SUFFIX}")
}

/// `<rayservice>-httproute`, the HTTPRoute of an incremental upgrade.
pub fn http_route_name(service: &str) -> String {
    format!("{service}-{HTTP_ROUTE_SUFFIX}")
}

/// `<name>-serve` (`GenerateServeServiceLabel`), the `ray.io/serve` label value of serve services.
pub fn serve_service_label(name: &str) -> String {
    format!("{name}-serve")
}

/// `<cluster>-headless`, the headless worker service name.
pub fn headless_service_name(cluster: &str) -> String {
    format!("{cluster}-{HEADLESS_SERVICE_SUFFIX}")
}

/// `<cluster>-head-ingress` (before [`check_name`]).
pub fn ingress_name(cluster: &str) -> String {
    format!("{cluster}-{INGRESS_SUFFIX}")
}

/// `<cluster>-head-route`.
pub fn route_name(cluster: &str) -> String {
    format!("{cluster}-{ROUTE_SUFFIX}")
}

/// `<cluster>-gcs-pvc`, the operator-managed GCS storage claim name.
pub fn default_gcs_pvc_name(cluster: &str) -> String {
    format!("{cluster}-{GCS_PVC_SUFFIX}")
}

/// `CheckLabel(<cluster>-redis-cleanup)`, the Redis cleanup Job name.
pub fn redis_cleanup_job_name(cluster: &str) -> String {
    check_label(&format!("{cluster}-{REDIS_CLEANUP_SUFFIX}"))
}

/// The cluster DNS domain: the configured value, or `cluster.local` when empty.
pub fn cluster_domain(configured: &str) -> &str {
    if configured.is_empty() {
        DEFAULT_CLUSTER_DOMAIN
    } else {
        configured
    }
}

/// `<service>.<namespace>.svc.<domain>` (`GenerateFQDNServiceName`).
pub fn fqdn(service: &str, namespace: &str, domain: &str) -> String {
    format!("{service}.{namespace}.svc.{}", cluster_domain(domain))
}

/// The first DNS label of an FQDN (`ExtractRayIPFromFQDN`).
pub fn ray_ip_from_fqdn(fqdn: &str) -> &str {
    fqdn.split('.').next().unwrap_or(fqdn)
}

/// `ray-head-secret-<cluster>` / `ray-worker-secret-<cluster>` (`GetTLSSecretName`).
pub fn tls_secret_name(cluster: &str, head: bool) -> String {
    if head {
        format!("ray-head-secret-{cluster}")
    } else {
        format!("ray-worker-secret-{cluster}")
    }
}

/// Whether `name` is a DNS-1123 label (lower-case alphanumerics and `-`, alphanumeric ends, ≤ 63).
pub fn is_dns1123_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_LABEL_LENGTH
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_p2_worker_pod_name() {
        assert_eq!(
            pod_name("ray-cluster-group-name-01", "worker", true),
            "ray-cluster-group-name-01-worker-"
        );
    }

    #[test]
    fn golden_p4_head_pod_name() {
        assert_eq!(pod_name("ray-cluster-01", "head", false), "ray-cluster-01-head");
        assert_eq!(pod_name("ray-cluster-01", "head", true), "ray-cluster-01-head-");
    }

    #[test]
    fn golden_p5_long_head_pod_name() {
        let long = "ray-cluster-0000000000000000000000011111111122222233333333333333";
        assert_eq!(long.len(), 64);
        assert_eq!(
            pod_name(long, "head", false),
            "ray-cluster-00000000000000000000000111111111222222-head"
        );
        assert_eq!(
            pod_name(long, "head", true),
            "ray-cluster-00000000000000000000000111111111222222-head-"
        );
    }

    #[test]
    fn golden_p7_check_name_punctuation() {
        assert_eq!(
            check_name("--------566666--------444433-----------222222----------4444"),
            "r6666--------444433-----------222222----------4444"
        );
        assert_eq!(
            check_name("72fbcc7e-a661-4b18e-ca41-e903-fc3ae634b18e-lazer090scholar-director-s"),
            "rca41-e903-fc3ae634b18e-lazer090scholar-director-s"
        );
    }

    #[test]
    fn golden_p8_check_name_short_and_long() {
        assert_eq!(check_name("acceptable-name-head-12345"), "acceptable-name-head-12345");
        assert_eq!(check_name(&"a".repeat(200)), "a".repeat(50));
    }

    #[test]
    fn golden_p13_gcs_pvc_default_name() {
        assert_eq!(default_gcs_pvc_name("my-cluster"), "my-cluster-gcs-pvc");
    }

    #[test]
    fn check_label_keeps_tail_and_fixes_punctuation() {
        let long = format!("-{}", "b".repeat(70));
        let got = check_label(&long);
        assert_eq!(got.len(), 63);
        assert_eq!(got, "b".repeat(63));
        assert_eq!(check_label("_abc"), "rabc");
        assert_eq!(check_label("1abc"), "1abc");
    }

    #[test]
    fn go_punct_excludes_symbols() {
        for b in [b'$', b'+', b'<', b'=', b'>', b'^', b'`', b'|', b'~'] {
            assert!(!is_go_punct(b), "{}", b as char);
        }
        for b in [b'!', b'-', b'_', b'.', b'@', b'{'] {
            assert!(is_go_punct(b), "{}", b as char);
        }
    }

    #[test]
    fn route_name_respects_namespace_budget() {
        let name = route_name(&"c".repeat(40));
        assert_eq!(check_route_name(&name, "namespace-x"), "c".repeat(40));
    }

    #[test]
    fn fqdn_uses_default_domain() {
        assert_eq!(fqdn("a-head-svc", "ns", ""), "a-head-svc.ns.svc.cluster.local");
        assert_eq!(fqdn("a-head-svc", "ns", "abc.com"), "a-head-svc.ns.svc.abc.com");
        assert_eq!(ray_ip_from_fqdn("a-head-svc.ns.svc.abc.com"), "a-head-svc");
    }

    fn dns1035() -> impl Strategy<Value = String> {
        "[a-z]([-a-z0-9]{0,51}[a-z0-9])?"
    }

    proptest! {
        #[test]
        fn worker_and_head_pod_names_are_valid_after_server_suffix(cluster in dns1035(), group in "[a-z0-9]([-a-z0-9]{0,60}[a-z0-9])?") {
            prop_assume!(cluster.len() <= 53);
            for generated in [pod_name(&format!("{cluster}-{group}"), "worker", true), pod_name(&cluster, "head", true)] {
                // The API server appends 5 characters from the k8s random alphabet.
                let full = format!("{generated}b2x9z");
                prop_assert!(full.len() <= 63, "{full}");
                prop_assert!(is_dns1123_label(&full), "{full}");
            }
            let fixed = pod_name(&cluster, "head", false);
            prop_assert!(is_dns1123_label(&fixed), "{fixed}");
        }

        #[test]
        fn check_name_and_label_bounds(s in "[-a-z0-9_.]{1,120}") {
            prop_assert!(check_name(&s).len() <= 50);
            prop_assert!(check_label(&s).len() <= 63);
            let first = check_name(&s).as_bytes()[0];
            prop_assert!(!first.is_ascii_digit() && !is_go_punct(first));
        }

        /// End to end through the generators: any valid cluster name (DNS-1035, at most 53) and
        /// group name (DNS-1123 label) give pod names that stay valid after the API server's
        /// 5-character `generateName` suffix, and valid service / ingress names.
        #[test]
        fn generated_objects_have_valid_names(
            cluster_name in dns1035(),
            group in "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
            suffix in "[bcdfghjklmnpqrstvwxz2456789]{5}",
            deterministic_head in any::<bool>(),
        ) {
            let mut cluster = crate::test_fixtures::cluster_s();
            cluster.metadata.name = Some(cluster_name.clone());
            let mut workers = crate::test_fixtures::cluster_c().spec.worker_group_specs.unwrap();
            workers[0].group_name = group;
            workers[0].num_of_hosts = Some(2);
            cluster.spec.worker_group_specs = Some(workers);
            let config = crate::PodGenConfig { deterministic_head_pod_name: deterministic_head, ..crate::PodGenConfig::default() };
            let generator = crate::PodGenerator::new(&cluster, &config);
            let head = generator.head_pod().unwrap();
            let worker = generator.worker_pod(0, &crate::WorkerReplica::single(0)).unwrap();
            let head_name = match (&head.metadata.name, &head.metadata.generate_name) {
                (Some(name), None) if deterministic_head => name.clone(),
                (None, Some(prefix)) if !deterministic_head => format!("{prefix}{suffix}"),
                other => panic!("head naming: {other:?}"),
            };
            prop_assert!(worker.metadata.name.is_none());
            let worker_name = format!("{}{suffix}", worker.metadata.generate_name.clone().unwrap());
            let mut names = vec![head_name, worker_name];
            let services = [
                crate::service::build_head_service(&cluster, &config).unwrap(),
                crate::service::build_serve_service(&cluster, crate::service::ServeServiceOwner::RayCluster).unwrap(),
                crate::service::build_headless_service(&cluster),
            ];
            names.extend(services.iter().map(|s| s.metadata.name.clone().unwrap()));
            names.push(crate::ingress::build_ingress(&cluster).metadata.name.unwrap());
            for name in names {
                prop_assert!(name.len() <= 63, "{name}");
                prop_assert!(is_dns1123_label(&name), "{name}");
            }
        }

        #[test]
        fn derived_names_fit_63(cluster in dns1035()) {
            prop_assume!(cluster.len() <= 53);
            for name in [serve_service_name(&cluster), default_head_service_name(&cluster), headless_service_name(&cluster),
                         check_name(&ingress_name(&cluster)), redis_cleanup_job_name(&cluster)] {
                prop_assert!(name.len() <= 63, "{name}");
                prop_assert!(is_dns1123_label(&name), "{name}");
            }
        }
    }
}
