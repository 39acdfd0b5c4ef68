//! `kubectl ray scale cluster NAME -w GROUP [-r N] [--min-replicas N] [--max-replicas N]`: changes a worker
//! group's replicas and bounds, checking them against each other before and after merging with the group's
//! current values. -1 means "leave unchanged".

use kube::Api;
use kube::api::PostParams;
use ray_api::RayCluster;

use crate::cli::ScaleClusterArgs;
use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;

/// The requested values (`None` = unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requested {
    /// `--replicas`.
    pub replicas: Option<i32>,
    /// `--min-replicas`.
    pub min: Option<i32>,
    /// `--max-replicas`.
    pub max: Option<i32>,
}

/// The flags' checks before the cluster is read (steps 2 to 5).
pub fn check_flags(args: &ScaleClusterArgs) -> Result<Requested> {
    if args.replicas == -1 && args.min_replicas == -1 && args.max_replicas == -1 {
        return Err(failed!(
            "must specify at least one of --replicas, --min-replicas, or --max-replicas (non-negative integers)"
        ));
    }
    for (flag, value) in [
        ("--replicas", args.replicas),
        ("--min-replicas", args.min_replicas),
        ("--max-replicas", args.max_replicas),
    ] {
        if value < -1 {
            return Err(failed!("{flag} must be a non-negative integer"));
        }
    }
    let set = |v: i32| (v >= 0).then_some(v);
    let req = Requested {
        replicas: set(args.replicas),
        min: set(args.min_replicas),
        max: set(args.max_replicas),
    };
    if let (Some(min), Some(max)) = (req.min, req.max)
        && min > max
    {
        return Err(failed!(
            "--min-replicas ({min}) cannot be greater than --max-replicas ({max})"
        ));
    }
    if let Some(r) = req.replicas {
        if let Some(min) = req.min
            && r < min
        {
            return Err(failed!("--replicas ({r}) cannot be less than --min-replicas ({min})"));
        }
        if let Some(max) = req.max
            && r > max
        {
            return Err(failed!(
                "--replicas ({r}) cannot be greater than --max-replicas ({max})"
            ));
        }
    }
    Ok(req)
}

/// A group's replicas, min and max (unset: 0, 0, 2147483647).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupScale {
    /// `replicas`.
    pub replicas: i32,
    /// `minReplicas`.
    pub min: i32,
    /// `maxReplicas`.
    pub max: i32,
}

/// Merges the request into the current values and checks the result (step 8).
pub fn merge(current: GroupScale, req: Requested) -> Result<GroupScale> {
    let new = GroupScale {
        replicas: req.replicas.unwrap_or(current.replicas),
        min: req.min.unwrap_or(current.min),
        max: req.max.unwrap_or(current.max),
    };
    if new.min > new.max {
        return Err(failed!(
            "cannot set --min-replicas ({}) greater than --max-replicas ({})",
            new.min,
            new.max
        ));
    }
    if new.replicas < new.min {
        return Err(failed!(
            "cannot set --replicas ({}) less than --min-replicas ({})",
            new.replicas,
            new.min
        ));
    }
    if new.replicas > new.max {
        return Err(failed!(
            "cannot set --replicas ({}) greater than --max-replicas ({})",
            new.replicas,
            new.max
        ));
    }
    Ok(new)
}

/// The parenthesised list of what changed, or `None` when nothing did.
pub fn changes(old: GroupScale, new: GroupScale) -> Option<String> {
    let mut parts = Vec::new();
    if old.min != new.min {
        parts.push(format!("Scaled minReplicas: {} to {}", old.min, new.min));
    }
    if old.max != new.max {
        parts.push(format!("Scaled maxReplicas: {} to {}", old.max, new.max));
    }
    if old.replicas != new.replicas {
        parts.push(format!("Scaled Replicas: {} to {}", old.replicas, new.replicas));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Runs the command.
pub async fn run(ctx: &KubeContext, args: &ScaleClusterArgs) -> Result<()> {
    let [cluster_name] = args.names.as_slice() else {
        return Err(PluginError::usage(
            "scale cluster",
            format!("accepts 1 arg(s), received {}", args.names.len()),
        ));
    };
    let Some(group_name) = args.worker_group.as_deref().filter(|g| !g.is_empty()) else {
        return Err(failed!("must specify -w/--worker-group"));
    };
    let req = check_flags(args)?;
    let ns = &ctx.namespace;
    let api: Api<RayCluster> = Api::namespaced(ctx.client.clone(), ns);
    let mut cluster = api.get(cluster_name).await.map_err(|e| {
        failed!("failed to scale worker group {group_name} in Ray cluster {cluster_name} in namespace {ns}: {e}")
    })?;
    let groups = cluster.spec.worker_group_specs.get_or_insert_with(Vec::new);
    let names: Vec<String> = groups.iter().map(|g| g.group_name.clone()).collect();
    let Some(group) = groups.iter_mut().find(|g| g.group_name == group_name) else {
        return Err(failed!(
            "worker group {group_name} not found in Ray cluster {cluster_name} in namespace {ns}. Available worker \
             groups: {}",
            names.join(", ")
        ));
    };
    let old = GroupScale {
        replicas: group.replicas.unwrap_or(0),
        min: group.min_replicas.unwrap_or(0),
        max: group.max_replicas.unwrap_or(i32::MAX),
    };
    let new = merge(old, req)?;
    let Some(changed) = changes(old, new) else {
        println!(
            "Worker group {group_name} in Ray cluster {cluster_name} in namespace {ns} already matches the requested \
             configuration. Skipping."
        );
        return Ok(());
    };
    group.replicas = Some(new.replicas);
    group.min_replicas = Some(new.min);
    group.max_replicas = Some(new.max);
    api.replace(cluster_name, &PostParams::default(), &cluster)
        .await
        .map_err(|e| {
            failed!("failed to update worker group {group_name} in Ray cluster {cluster_name} in namespace {ns}: {e}")
        })?;
    println!("Updated worker group {group_name} in Ray cluster {cluster_name} in namespace {ns} ({changed})");
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn args(r: i32, min: i32, max: i32) -> ScaleClusterArgs {
        ScaleClusterArgs {
            names: vec!["c".into()],
            worker_group: Some("g".into()),
            replicas: r,
            min_replicas: min,
            max_replicas: max,
        }
    }

    fn message(r: Result<impl std::fmt::Debug>) -> String {
        r.err().unwrap().to_string()
    }

    #[test]
    fn flag_checks_run_in_order() {
        assert!(message(check_flags(&args(-1, -1, -1))).starts_with("must specify at least one of"));
        assert_eq!(
            message(check_flags(&args(-2, -1, -1))),
            "--replicas must be a non-negative integer"
        );
        assert_eq!(
            message(check_flags(&args(-1, 5, 2))),
            "--min-replicas (5) cannot be greater than --max-replicas (2)"
        );
        assert_eq!(
            message(check_flags(&args(1, 2, -1))),
            "--replicas (1) cannot be less than --min-replicas (2)"
        );
        assert_eq!(
            message(check_flags(&args(9, -1, 3))),
            "--replicas (9) cannot be greater than --max-replicas (3)"
        );
    }

    #[test]
    fn merged_values_are_rechecked_and_changes_listed() {
        let current = GroupScale {
            replicas: 1,
            min: 0,
            max: 2,
        };
        let req = check_flags(&args(5, -1, -1)).unwrap();
        assert_eq!(
            message(merge(current, req)),
            "cannot set --replicas (5) greater than --max-replicas (2)"
        );
        let req = check_flags(&args(3, -1, 4)).unwrap();
        let new = merge(current, req).unwrap();
        assert_eq!(
            changes(current, new).unwrap(),
            "Scaled maxReplicas: 2 to 4, Scaled Replicas: 1 to 3"
        );
        assert_eq!(changes(current, current), None);
    }
}
