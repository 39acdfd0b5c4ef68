//! `kuberay-operator`: runs the Ray controllers; `crd` prints the CRDs; `render` shows what would be created.

mod crd;
mod render;

use clap::{Parser, Subcommand};

/// Command line of the operator binary.
#[derive(Debug, Parser)]
#[command(name = "kuberay-operator", version, about = "The KubeRay operator, in Rust")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// Subcommands; with none, the operator runs its controllers.
#[derive(Debug, Subcommand)]
enum Command {
    /// Print the RayCluster, RayJob, RayService and RayCronJob CRDs as one YAML stream.
    Crd,
    /// Print the objects the operator would create for the given resources.
    Render(render::RenderArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Crd) => crd::run(),
        Some(Command::Render(args)) => render::run(args),
        None => anyhow::bail!("running the controllers is not implemented yet"),
    }
}
