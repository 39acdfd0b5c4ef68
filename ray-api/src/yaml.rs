//! Reading YAML the way Kubernetes does.
//!
//! `kubectl` and the API server read YAML 1.1, where `defaultMode: 0777` is the octal number 511 and
//! `yes` / `no` are booleans. serde-saphyr defaults to YAML 1.2, so every place that reads a user's
//! manifest goes through these helpers to see the same values a cluster would store.

use serde::de::DeserializeOwned;

/// The serde-saphyr options that match Kubernetes' YAML 1.1 reading (legacy octal numbers).
pub fn kubernetes_yaml_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.legacy_octal_numbers = true;
    options
}

/// Parses one YAML document as Kubernetes would.
pub fn from_yaml_str<T: DeserializeOwned>(text: &str) -> Result<T, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, kubernetes_yaml_options())
}

/// Parses every document of a YAML stream (`---`-separated) as Kubernetes would.
pub fn from_yaml_documents<T: DeserializeOwned>(text: &str) -> Result<Vec<T>, serde_saphyr::Error> {
    serde_saphyr::from_multiple_with_options(text, kubernetes_yaml_options())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_zero_integers_are_octal_as_in_kubernetes() {
        let value: serde_json::Value = from_yaml_str("defaultMode: 0777\nplain: 10").unwrap_or_default();
        assert_eq!(value["defaultMode"], 511);
        assert_eq!(value["plain"], 10);
    }

    #[test]
    fn documents_are_read_in_order() {
        let docs: Vec<serde_json::Value> = from_yaml_documents("a: 1\n---\nb: 2\n").unwrap_or_default();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1]["b"], 2);
    }
}
