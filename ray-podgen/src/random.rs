//! Injected randomness: the 5-character suffixes of generated names (`<rayjob>-xxxxx`, multi-host
//! replica names), drawn from Kubernetes' `rand.String` alphabet.

use ray_api::constants::{RANDOM_SUFFIX_ALPHABET, RANDOM_SUFFIX_LENGTH};

/// A source of random name suffixes.
pub trait SuffixSource {
    /// The next 5-character suffix.
    fn next_suffix(&mut self) -> String;
}

/// Deterministic suffixes from a 64-bit seed (SplitMix64): the same seed gives the same names.
#[derive(Clone, Debug)]
pub struct SeededSuffix {
    state: u64,
}

impl SeededSuffix {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl SuffixSource for SeededSuffix {
    fn next_suffix(&mut self) -> String {
        let alphabet = RANDOM_SUFFIX_ALPHABET.as_bytes();
        (0..RANDOM_SUFFIX_LENGTH)
            .map(|_| {
                let index = (self.next_u64() % alphabet.len() as u64) as usize;
                char::from(alphabet[index])
            })
            .collect()
    }
}

/// `<prefix>-<suffix>`: a RayJob/RayService cluster name or a multi-host replica name.
pub fn suffixed_name(prefix: &str, source: &mut dyn SuffixSource) -> String {
    format!("{prefix}-{}", source.next_suffix())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_deterministic_and_in_alphabet() {
        let a: Vec<String> = {
            let mut s = SeededSuffix::new(7);
            (0..10).map(|_| s.next_suffix()).collect()
        };
        let b: Vec<String> = {
            let mut s = SeededSuffix::new(7);
            (0..10).map(|_| s.next_suffix()).collect()
        };
        assert_eq!(a, b);
        for suffix in &a {
            assert_eq!(suffix.len(), 5);
            assert!(suffix.chars().all(|c| RANDOM_SUFFIX_ALPHABET.contains(c)));
        }
        assert_ne!(a[0], a[1]);
        assert_ne!(SeededSuffix::new(8).next_suffix(), a[0]);
    }
}
