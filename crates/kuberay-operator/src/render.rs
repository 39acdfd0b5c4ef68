//! `kuberay-operator render`: the objects the operator would create on an empty cluster.

/// Arguments of `render`.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {}

/// Renders the inputs.
pub fn run(_args: RenderArgs) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
