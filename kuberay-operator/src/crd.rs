//! `kuberay-operator crd`: the four CRDs as one YAML stream, for `kubectl apply -f -`.

use std::io::Write;

use anyhow::Context;

/// Renders the RayCluster, RayJob, RayService and RayCronJob CRDs as one `---`-separated YAML stream.
/// The output depends only on the types, so it is byte-identical on every run.
pub fn render_crds() -> anyhow::Result<String> {
    let mut out = String::new();
    for crd in ray_api::crds::all_crds() {
        // Through a JSON value (which keeps the fields' order), so that YAML is written for one type only.
        let value = serde_json::to_value(&crd).context("serialising a CRD")?;
        let yaml = serde_saphyr::to_string(&value).context("serialising a CRD to YAML")?;
        out.push_str("---\n");
        out.push_str(&yaml);
        if !yaml.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// Prints the CRDs on stdout.
pub fn run() -> anyhow::Result<()> {
    let text = render_crds()?;
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`crd | head`) is not an error worth a message.
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing the CRDs to stdout"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_stream_is_four_documents_that_read_back_as_the_generated_crds() {
        let text = render_crds().unwrap();
        let docs: Vec<serde_json::Value> = ray_api::yaml::from_yaml_documents(&text).unwrap();
        let expected: Vec<serde_json::Value> = ray_api::crds::all_crds()
            .iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect();
        assert_eq!(docs, expected);
        let kinds: Vec<&str> = docs
            .iter()
            .map(|d| d["spec"]["names"]["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["RayCluster", "RayJob", "RayService", "RayCronJob"]);
    }

    #[test]
    fn crd_stream_is_byte_identical_across_runs() {
        assert_eq!(render_crds().unwrap(), render_crds().unwrap());
    }
}
