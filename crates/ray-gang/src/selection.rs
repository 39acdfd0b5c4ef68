//! Choosing the operator's one batch scheduler from its flags (gang.md §5): startup validation
//! ([`validate_config`]) and factory selection ([`select_scheduler`]).

use crate::constants::{KAI_PLUGIN, SCHEDULER_PLUGINS_PLUGIN, VOLCANO_PLUGIN, YUNIKORN_PLUGIN};
use crate::error::SelectionError;
use crate::scheduler::BatchScheduler;

/// The operator settings that pick the batch scheduler (flags, or the `Configuration` file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// `--enable-batch-scheduler` (deprecated; means Volcano).
    pub enable_batch_scheduler: bool,
    /// `--batch-scheduler` (empty when unset).
    pub batch_scheduler: String,
    /// Whether the `KubernetesWAS` feature gate is on.
    pub kubernetes_was_gate: bool,
}

/// Names accepted by `--batch-scheduler`.
pub const SUPPORTED_SCHEDULERS: [&str; 4] = [VOLCANO_PLUGIN, YUNIKORN_PLUGIN, SCHEDULER_PLUGINS_PLUGIN, KAI_PLUGIN];

/// Startup validation (`ValidateBatchSchedulerConfig`); an error makes the operator exit.
pub fn validate_config(config: &SchedulerConfig) -> Result<(), SelectionError> {
    let name = config.batch_scheduler.as_str();
    if config.kubernetes_was_gate {
        return if config.enable_batch_scheduler || !name.is_empty() {
            Err(SelectionError::WasGateCombined)
        } else {
            Ok(())
        };
    }
    if config.enable_batch_scheduler && !name.is_empty() {
        return Err(SelectionError::BothFlags);
    }
    if name.is_empty() || SUPPORTED_SCHEDULERS.contains(&name) {
        Ok(())
    } else {
        Err(SelectionError::Unsupported { name: name.to_owned() })
    }
}

/// Factory selection (`getSchedulerFactory`): a non-empty name picks its plugin (unknown names are
/// an error), an empty name the no-op [`BatchScheduler::Default`]; then `enable_batch_scheduler`
/// overrides the choice with Volcano, whatever it was.
///
/// The `KubernetesWAS` gate selects KubeRay's alpha workload-aware plugin, which this crate does
/// not implement: [`SelectionError::KubernetesWasUnimplemented`].
pub fn select_scheduler(config: &SchedulerConfig) -> Result<BatchScheduler, SelectionError> {
    if config.kubernetes_was_gate {
        return Err(SelectionError::KubernetesWasUnimplemented);
    }
    let chosen = match config.batch_scheduler.as_str() {
        "" => BatchScheduler::Default,
        VOLCANO_PLUGIN => BatchScheduler::Volcano,
        YUNIKORN_PLUGIN => BatchScheduler::YuniKorn,
        KAI_PLUGIN => BatchScheduler::Kai,
        SCHEDULER_PLUGINS_PLUGIN => BatchScheduler::SchedulerPlugins,
        other => return Err(SelectionError::FactoryUnsupported { name: other.to_owned() }),
    };
    Ok(if config.enable_batch_scheduler {
        BatchScheduler::Volcano
    } else {
        chosen
    })
}
