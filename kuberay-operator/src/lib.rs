//! The code of the `kuberay-operator` binary: runs the Ray controllers; `crd` prints the CRDs; `render` shows
//! what would be created; `rbac` prints the permissions it uses; `manifests` prints the plain install
//! manifests.
//!
//! It is a library only so that it compiles once, inside `cargo build --release -p kuberay-bench` (which
//! depends on it for that reason alone), leaving the shipped build (`scripts/build-operator`) only the binary's
//! one-line crate to compile and link (docs/benchmarks.md, "Build time of a first result"). Its one public item
//! is [`main`]; controllers that reuse our code depend on `ray-reconcile` and the other library crates instead.

mod code_pages;
mod config_file;
mod crd;
mod discovery;
mod flags;
mod manifests;
mod ratelimit;
mod rbac;
// A rejected document ends the command, so its error's size (file, kind, name, field, message) is
// not worth boxing.
#[allow(clippy::result_large_err)]
mod render;
mod run;
mod webhook;

use std::process::ExitCode;

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
    /// Print the RBAC the operator needs for the given flags (or the Helm chart's rules template).
    Rbac(rbac::RbacArgs),
    /// Print the plain install manifests (the CRDs and the Helm chart's default render) for `kubectl apply`.
    Manifests(manifests::ManifestsArgs),
}

/// Runs the operator (or one of its subcommands) with the process's command line: the binary's `main`.
pub fn main() -> anyhow::Result<ExitCode> {
    // KubeRay's flags are Go-style (`-name value`); only the subcommands go through clap.
    let args: Vec<String> = std::env::args().collect();
    let subcommand = args.get(1).is_some_and(|a| {
        matches!(
            a.as_str(),
            "crd" | "render" | "rbac" | "manifests" | "help" | "--version" | "-V"
        )
    });
    if !subcommand {
        return run::main(args.into_iter().skip(1).collect());
    }
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Crd) => crd::run().map(|()| ExitCode::SUCCESS),
        Some(Command::Render(args)) => render::run(args),
        Some(Command::Rbac(args)) => rbac::run(&args).map(|()| ExitCode::SUCCESS),
        Some(Command::Manifests(args)) => manifests::run(&args).map(|()| ExitCode::SUCCESS),
        None => run::main(Vec::new()),
    }
}
