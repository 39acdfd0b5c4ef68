//! `kubectl-ray`: KubeRay's `kubectl ray` plugin. kubectl runs it as `kubectl ray ...` when the binary is on
//! PATH. Parses the command line, connects as kubectl would and hands over to the command's module; a failure
//! prints `Error: <message>` on stderr and exits 1. See `docs/kubectl-ray.md`.

mod age;
mod cli;
mod cluster_spec;
mod config_file;
mod config_file_shape;
mod create_cluster;
mod create_workergroup;
mod delete;
mod error;
mod gcsfuse;
mod get_cluster;
mod get_node;
mod get_token;
mod get_workergroup;
mod job_submit;
mod kube_context;
mod log;
mod not_found;
mod port_forward;
mod quantity_flags;
mod resource_ref;
mod resources;
mod scale;
mod session;
mod table;
mod usage;
mod version;

use std::process::ExitCode;

use crate::cli::{Cli, Command, CreateCommand, GetCommand, JobCommand, ScaleCommand};
use crate::error::Result;
use crate::kube_context::KubeContext;

fn main() -> ExitCode {
    let cli = match Cli::parse_args() {
        Ok(cli) => cli,
        Err(e) => return usage::report_parse_error(&e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("Error: unable to start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the chosen command.
async fn dispatch(cli: Cli) -> Result<()> {
    let Some(command) = cli.command else {
        return usage::print_help(&[]);
    };
    match command {
        Command::Version => {
            version::run(&cli.kube).await;
            Ok(())
        }
        Command::Get(get) => {
            let Some(command) = get.command else {
                return usage::help_or_stray(&["get"], &get.stray);
            };
            let ctx = KubeContext::connect(&cli.kube).await?;
            match command {
                GetCommand::Cluster(a) => get_cluster::run(&ctx, &a.names, a.all_namespaces).await,
                GetCommand::Workergroup(a) => {
                    get_workergroup::run(&ctx, &a.names, a.ray_cluster.as_deref(), a.all_namespaces).await
                }
                GetCommand::Node(a) => get_node::run(&ctx, &a.names, a.ray_cluster.as_deref(), a.all_namespaces).await,
                GetCommand::Token(a) => get_token::run(&ctx, &a.names).await,
            }
        }
        Command::Create(create) => {
            let Some(command) = create.command else {
                return usage::help_or_stray(&["create"], &create.stray);
            };
            match command {
                CreateCommand::Cluster(a) => {
                    // The flags are checked before connecting, so `--dry-run` needs no cluster.
                    let ctx = KubeContext::connect(&cli.kube).await?;
                    create_cluster::run(&ctx, &a, cli.kube.namespace.as_deref()).await
                }
                CreateCommand::Workergroup(a) => {
                    let ctx = KubeContext::connect(&cli.kube).await?;
                    create_workergroup::run(&ctx, &a).await
                }
            }
        }
        Command::Delete(a) => {
            let ctx = KubeContext::connect(&cli.kube).await?;
            delete::run(&ctx, &a.targets, a.yes).await
        }
        Command::Scale(scale) => {
            let Some(ScaleCommand::Cluster(a)) = scale.command else {
                return usage::help_or_stray(&["scale"], &scale.stray);
            };
            let ctx = KubeContext::connect(&cli.kube).await?;
            scale::run(&ctx, &a).await
        }
        Command::Job(job) => {
            let Some(JobCommand::Submit(a)) = job.command else {
                return usage::help_or_stray(&["job"], &job.stray);
            };
            job_submit::run(&cli.kube, &a).await
        }
        Command::Session(a) => {
            let ctx = KubeContext::connect(&cli.kube).await?;
            session::run(&ctx, &a.targets, a.verbose).await
        }
        Command::Log(a) => {
            let ctx = KubeContext::connect(&cli.kube).await?;
            log::run(&ctx, &a).await
        }
    }
}
