//! Help and command-line errors as the plugin shows them: a command group without a subcommand prints its
//! help, stray words print `unknown command(s) "..."` (both exit 0), and a bad flag is a usage error
//! (`Error: ...`, a pointer to the help, exit 1).

use std::process::ExitCode;

use clap::CommandFactory;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::cli::Cli;
use crate::error::{PluginError, Result, failed};

/// Prints the help of the command at `path` (`[]` is the root).
pub fn print_help(path: &[&str]) -> Result<()> {
    let mut command = Cli::command();
    command.build();
    let mut current = &mut command;
    for word in path {
        current = current
            .find_subcommand_mut(word)
            .ok_or_else(|| failed!("no command {word}"))?;
    }
    current.print_help().map_err(|e| failed!("unable to print help: {e}"))?;
    Ok(())
}

/// A command group run without a subcommand: its help, or the stray words.
pub fn help_or_stray(path: &[&str], stray: &[String]) -> Result<()> {
    if stray.is_empty() {
        return print_help(path);
    }
    println!("unknown command(s) \"{}\"", stray.join(" "));
    Ok(())
}

/// Reports a command-line parse error; the exit code to use.
pub fn report_parse_error(error: &clap::Error) -> ExitCode {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            ExitCode::SUCCESS
        }
        _ => {
            let usage = PluginError::Usage {
                message: describe(error),
                command: command_path(),
            };
            eprintln!("Error: {usage}");
            ExitCode::FAILURE
        }
    }
}

/// The failing command's words (`kubectl ray create cluster`), from the process arguments.
fn command_path() -> String {
    let mut path = vec!["kubectl ray".to_string()];
    let mut command = Cli::command();
    command.build();
    let mut current = &command;
    for arg in std::env::args().skip(1) {
        if arg.starts_with('-') {
            continue;
        }
        match current.find_subcommand(&arg) {
            Some(sub) => {
                path.push(sub.get_name().to_string());
                current = sub;
            }
            None => break,
        }
    }
    path.join(" ")
}

/// The message of a parse error in cobra's words where they are known.
fn describe(error: &clap::Error) -> String {
    let context = |kind: ContextKind| match error.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => Some(v.join(", ")),
        _ => None,
    };
    match error.kind() {
        ErrorKind::UnknownArgument => match context(ContextKind::InvalidArg) {
            Some(arg) if arg.starts_with("--") => format!("unknown flag: {}", arg.split('=').next().unwrap_or(&arg)),
            Some(arg) if arg.starts_with('-') => format!(
                "unknown shorthand flag: '{}' in {arg}",
                arg.chars().nth(1).unwrap_or('-')
            ),
            Some(arg) => format!("unknown command \"{arg}\""),
            None => first_line(error),
        },
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            match (context(ContextKind::InvalidValue), context(ContextKind::InvalidArg)) {
                (Some(value), Some(flag)) => {
                    let flag = flag.split_whitespace().next().unwrap_or(&flag).to_string();
                    format!(
                        "invalid argument \"{value}\" for \"{flag}\" flag: {}",
                        first_line(error)
                    )
                }
                _ => first_line(error),
            }
        }
        _ => first_line(error),
    }
}

/// clap's message without its `error: ` prefix and tips.
fn first_line(error: &clap::Error) -> String {
    let text = error
        .kind()
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string());
    text.lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::cli::{Command, GetCommand};
    use clap::Parser;

    fn parse(args: &[&str]) -> std::result::Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("kubectl-ray").chain(args.iter().copied()))
    }

    #[test]
    fn kubectl_flags_are_global_and_get_has_plural_aliases() {
        let cli = parse(&["get", "nodes", "-c", "rc", "-n", "ns", "--context", "ctx"]).unwrap();
        assert_eq!(cli.kube.namespace.as_deref(), Some("ns"));
        assert_eq!(cli.kube.context.as_deref(), Some("ctx"));
        match cli.command {
            Some(Command::Get(get)) => match get.command {
                Some(GetCommand::Node(a)) => assert_eq!(a.ray_cluster.as_deref(), Some("rc")),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn stray_words_after_a_group_are_kept_for_the_message() {
        let cli = parse(&["get", "pods"]).unwrap();
        match cli.command {
            Some(Command::Get(get)) => assert_eq!(get.stray, ["pods"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_flags_and_bad_numbers_read_as_cobra_errors() {
        let e = parse(&["scale", "cluster", "c", "--bogus"]).unwrap_err();
        assert_eq!(describe(&e), "unknown flag: --bogus");
        let e = parse(&["scale", "cluster", "c", "--replicas", "x"]).unwrap_err();
        assert!(
            describe(&e).starts_with("invalid argument \"x\" for \"--replicas"),
            "{}",
            describe(&e)
        );
    }

    #[test]
    fn the_job_entrypoint_is_everything_after_the_double_dash() {
        let cli = parse(&["job", "submit", "--name", "j", "--", "python", "-c", "print(1)"]).unwrap();
        match cli.command {
            Some(Command::Job(job)) => match job.command {
                Some(crate::cli::JobCommand::Submit(a)) => {
                    assert_eq!(a.entrypoint, ["python", "-c", "print(1)"]);
                    assert_eq!(a.name, "j");
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }
}
