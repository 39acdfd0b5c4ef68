//! `kuberay-bench`: the operator's memory and scale benchmark on kube-sim.

fn main() -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
