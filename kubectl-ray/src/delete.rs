//! `kubectl ray delete ARG... [-y]`: deletes Ray clusters, jobs and services, after asking unless `-y`.

use std::io::BufRead;

use kube::Api;
use kube::api::DeleteParams;
use ray_api::{RayCluster, RayJob, RayService};

use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;
use crate::resource_ref::{RayKind, ResourceRef, TypeCase, parse};

/// What the answer to the prompt means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// `y` / `yes`.
    Proceed,
    /// `n` / `no`.
    Cancel,
    /// Anything else (the text, trimmed).
    Unknown(String),
}

/// Reads the prompt's answer.
pub fn read_answer(line: &str) -> Answer {
    match line.trim().to_lowercase().as_str() {
        "y" | "yes" => Answer::Proceed,
        "n" | "no" => Answer::Cancel,
        _ => Answer::Unknown(line.trim().to_string()),
    }
}

/// The confirmation prompt for `targets`.
pub fn prompt(targets: &[ResourceRef]) -> String {
    let mut text = String::from("Are you sure you want to delete the following resources?");
    for t in targets {
        text.push_str(&format!("\n- {}/{}", t.kind, t.name));
    }
    text.push_str("\n(y/yes/n/no) ");
    text
}

/// Runs the command.
pub async fn run(ctx: &KubeContext, args: &[String], yes: bool) -> Result<()> {
    if args.is_empty() {
        return Err(PluginError::usage("delete", "accepts a minimum of 1 arg, received 0"));
    }
    let targets = args
        .iter()
        .map(|a| parse(a, TypeCase::Insensitive))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| PluginError::usage("delete", e.to_string()))?;
    if !yes {
        print!("{}", prompt(&targets));
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| failed!("reading the answer: {e}"))?;
        match read_answer(&line) {
            Answer::Proceed => {}
            Answer::Cancel => {
                println!("Canceled deletion.");
                return Ok(());
            }
            Answer::Unknown(text) => {
                println!("Unknown input {text}");
                return Ok(());
            }
        }
    }
    for target in &targets {
        delete_one(ctx, target).await?;
        println!("Deleted {} {}", target.kind, target.name);
    }
    Ok(())
}

/// Deletes one object.
async fn delete_one(ctx: &KubeContext, target: &ResourceRef) -> Result<()> {
    let params = DeleteParams::default();
    let client = ctx.client.clone();
    let ns = &ctx.namespace;
    let result = match target.kind {
        RayKind::Cluster => Api::<RayCluster>::namespaced(client, ns)
            .delete(&target.name, &params)
            .await
            .map(|_| ()),
        RayKind::Job => Api::<RayJob>::namespaced(client, ns)
            .delete(&target.name, &params)
            .await
            .map(|_| ()),
        RayKind::Service => Api::<RayService>::namespaced(client, ns)
            .delete(&target.name, &params)
            .await
            .map(|_| ()),
    };
    result.map_err(|e| failed!("failed to delete {}/{}: {e}", target.kind, target.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_lists_each_target_and_answers_are_read_case_insensitively() {
        let targets = [
            ResourceRef {
                kind: RayKind::Cluster,
                name: "a".into(),
            },
            ResourceRef {
                kind: RayKind::Job,
                name: "b".into(),
            },
        ];
        assert_eq!(
            prompt(&targets),
            "Are you sure you want to delete the following resources?\n- raycluster/a\n- rayjob/b\n(y/yes/n/no) "
        );
        assert_eq!(read_answer("YES\n"), Answer::Proceed);
        assert_eq!(read_answer("n\n"), Answer::Cancel);
        assert_eq!(read_answer("maybe\n"), Answer::Unknown("maybe".into()));
    }
}
