//! Spec hashes KubeRay stores in annotations: SHA-1 over the JSON of a RayCluster spec with the
//! scaling-only fields blanked, encoded base32 "extended hex" (upper case, no padding, 32 chars).
//!
//! The JSON is serde's encoding of our `RayClusterSpec` (Go field order, unset fields omitted),
//! which follows Go's encoding closely; the value is meant to be compared with hashes this
//! implementation produced, so treat it as opaque.

use ray_api::{RayClusterSpec, WorkerGroupSpec};

/// SHA-1 (FIPS 180-1) of `data`. Small and local: only used for change-detection hashes.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0];
    let bit_len = (data.len() as u64).wrapping_mul(8);
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&bit_len.to_be_bytes());
    for chunk in message.chunks_exact(64) {
        let mut w = [0u32; 80];
        for (i, word) in chunk.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, word) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let temp = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*word);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = temp;
        }
        for (slot, value) in h.iter_mut().zip([a, b, c, d, e]) {
            *slot = slot.wrapping_add(value);
        }
    }
    let mut out = [0u8; 20];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// RFC 4648 base32 with the extended-hex alphabet, without padding.
pub fn base32_hex(data: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHIJKLMNOPQRSTUV";
    let mut out = String::with_capacity(data.len().div_ceil(5) * 8);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for byte in data {
        buffer = (buffer << 8) | u32::from(*byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

/// Clears what scaling and Kueue change, and defaults what the operator defaults before hashing (an unset
/// `rayStartParams` equals `{}`).
fn blank_scaling_fields(spec: &mut RayClusterSpec) {
    spec.upgrade_strategy = None;
    spec.head_group_spec.ray_start_params.get_or_insert_default();
    if let Some(pod_spec) = spec.head_group_spec.template.spec.as_mut() {
        pod_spec.tolerations = None;
        pod_spec.scheduling_gates = None;
    }
    for group in spec.worker_group_specs.iter_mut().flatten() {
        blank_group_scaling_fields(group);
    }
}

fn blank_group_scaling_fields(group: &mut WorkerGroupSpec) {
    group.ray_start_params.get_or_insert_default();
    group.replicas = None;
    group.min_replicas = None;
    group.max_replicas = None;
    // `workersToDelete` is all a scale strategy holds; an emptied one equals an absent one.
    group.scale_strategy = None;
    if let Some(pod_spec) = group.template.spec.as_mut() {
        pod_spec.tolerations = None;
        pod_spec.scheduling_gates = None;
    }
}

fn hash_json<T: serde::Serialize>(value: &T) -> String {
    // Serialising a plain data struct cannot fail; an empty input still hashes deterministically.
    let json = serde_json::to_vec(value).unwrap_or_default();
    base32_hex(&sha1(&json))
}

fn hash_spec(spec: &RayClusterSpec) -> String {
    hash_json(spec)
}

/// `ray.io/worker-template-hash` of a worker pod (rolling upgrades): the group's spec without what scaling
/// changes (replicas, min/max, workersToDelete, tolerations, scheduling gates), its `suspend` and its
/// autoscaler idle timeout, none of which needs a new pod.
pub fn worker_group_hash(group: &WorkerGroupSpec) -> String {
    let mut group = group.clone();
    blank_group_scaling_fields(&mut group);
    group.suspend = None;
    group.idle_timeout_seconds = None;
    hash_json(&group)
}

/// `ray.io/upgrade-strategy-recreate-hash` of a head pod: replicas, min/max, workersToDelete,
/// tolerations, scheduling gates and `upgradeStrategy` do not count.
pub fn recreate_hash(spec: &RayClusterSpec) -> String {
    let mut spec = spec.clone();
    blank_scaling_fields(&mut spec);
    hash_spec(&spec)
}

/// `ray.io/hash-without-replicas-and-workers-to-delete` of a RayService's cluster: as
/// [`recreate_hash`], and `suspend` does not count either.
pub fn rayservice_cluster_hash(spec: &RayClusterSpec) -> String {
    let mut spec = spec.clone();
    blank_scaling_fields(&mut spec);
    spec.suspend = None;
    hash_spec(&spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha1_known_vectors() {
        assert_eq!(hex(&sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(hex(&sha1(b"abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
        let long = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(hex(&sha1(long)), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    }

    #[test]
    fn base32_hex_known_vectors() {
        // RFC 4648 test vectors (padding removed).
        assert_eq!(base32_hex(b"f"), "CO");
        assert_eq!(base32_hex(b"foobar"), "CPNMUOJ1E8");
        assert_eq!(base32_hex(&[0u8; 20]).len(), 32);
    }

    #[test]
    fn hash_ignores_replicas() {
        let a = RayClusterSpec {
            worker_group_specs: Some(vec![ray_api::WorkerGroupSpec {
                group_name: "g".into(),
                replicas: Some(1),
                ..Default::default()
            }]),
            ..Default::default()
        };
        let mut b = a.clone();
        if let Some(groups) = b.worker_group_specs.as_mut() {
            groups[0].replicas = Some(5);
        }
        assert_eq!(recreate_hash(&a), recreate_hash(&b));
        assert_eq!(recreate_hash(&a).len(), 32);
        b.ray_version = Some("2.9.0".into());
        assert_ne!(recreate_hash(&a), recreate_hash(&b));
    }

    /// An unset `rayStartParams` hashes as `{}` (the operator's default), so writing `{}` recreates nothing.
    #[test]
    fn unset_ray_start_params_hash_as_empty() {
        let mut a = RayClusterSpec {
            worker_group_specs: Some(vec![WorkerGroupSpec::default()]),
            ..Default::default()
        };
        let mut b = a.clone();
        b.head_group_spec.ray_start_params = Some(Default::default());
        assert_eq!(recreate_hash(&a), recreate_hash(&b));
        if let Some(groups) = a.worker_group_specs.as_mut() {
            groups[0].ray_start_params = Some(Default::default());
        }
        assert_eq!(recreate_hash(&a), recreate_hash(&b));
        b.head_group_spec.ray_start_params = Some([("num-cpus".to_owned(), "0".to_owned())].into());
        assert_ne!(recreate_hash(&a), recreate_hash(&b));
    }

    #[test]
    fn worker_group_hash_follows_the_template_not_scaling() {
        let group = WorkerGroupSpec {
            group_name: "g".into(),
            replicas: Some(3),
            ..Default::default()
        };
        let mut scaled = group.clone();
        scaled.replicas = Some(30);
        scaled.max_replicas = Some(40);
        scaled.suspend = Some(true);
        scaled.scale_strategy = Some(ray_api::ScaleStrategy {
            workers_to_delete: Some(vec!["w-1".into()]),
        });
        assert_eq!(worker_group_hash(&group), worker_group_hash(&scaled));
        let mut edited = group.clone();
        edited.template.metadata = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            labels: Some([("a".to_owned(), "b".to_owned())].into()),
            ..Default::default()
        });
        assert_ne!(worker_group_hash(&group), worker_group_hash(&edited));
    }
}
