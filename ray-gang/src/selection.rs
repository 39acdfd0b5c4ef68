//! Choosing the operator's one batch scheduler from its flags: startup validation ([`validate_config`]) and
//! factory selection ([`select_scheduler`]). See docs/gang-scheduling.md#one-scheduler-per-operator.

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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(enable: bool, name: &str) -> SchedulerConfig {
        SchedulerConfig {
            enable_batch_scheduler: enable,
            batch_scheduler: name.to_owned(),
            kubernetes_was_gate: false,
        }
    }

    #[test]
    fn golden_g22_factory_picks_the_named_plugin() {
        // `enable` false and unset are the same value here.
        assert_eq!(
            select_scheduler(&config(false, "yunikorn")),
            Ok(BatchScheduler::YuniKorn)
        );
        assert_eq!(select_scheduler(&config(false, "volcano")), Ok(BatchScheduler::Volcano));
        assert_eq!(
            select_scheduler(&config(false, "kai-scheduler")),
            Ok(BatchScheduler::Kai)
        );
        assert_eq!(
            select_scheduler(&SchedulerConfig::default()),
            Ok(BatchScheduler::Default)
        );
        assert_eq!(
            select_scheduler(&config(false, "scheduler-plugins")),
            Ok(BatchScheduler::SchedulerPlugins)
        );
        assert_eq!(BatchScheduler::YuniKorn.plugin_name(), "yunikorn");
        assert_eq!(BatchScheduler::Kai.plugin_name(), "kai-scheduler");
        assert_eq!(BatchScheduler::Volcano.plugin_name(), "volcano");
        assert_eq!(BatchScheduler::Default.plugin_name(), "default");
    }

    #[test]
    fn golden_g23_enable_flag_overrides_with_volcano() {
        for name in ["yunikorn", "volcano", ""] {
            assert_eq!(
                select_scheduler(&config(true, name)),
                Ok(BatchScheduler::Volcano),
                "{name:?}"
            );
        }
    }

    #[test]
    fn factory_rejects_unknown_names_with_its_own_text() {
        let err = select_scheduler(&config(false, "unknown-scheduler-name")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the scheduler is not supported, name=unknown-scheduler-name"
        );
        let err = select_scheduler(&config(false, "default")).unwrap_err();
        assert_eq!(err.to_string(), "the scheduler is not supported, name=default");
    }

    #[test]
    fn golden_g25_validation_accepts() {
        assert_eq!(validate_config(&config(true, "")), Ok(()));
        for name in ["yunikorn", "volcano", "scheduler-plugins", "kai-scheduler"] {
            assert_eq!(validate_config(&config(false, name)), Ok(()), "{name}");
        }
        assert_eq!(validate_config(&SchedulerConfig::default()), Ok(()));
    }

    #[test]
    fn golden_g26_validation_rejects() {
        for name in ["default", "unknown-scheduler-name", "kubernetes-was-v1alpha2"] {
            let err = validate_config(&config(false, name)).unwrap_err();
            assert_eq!(err.to_string(), format!("scheduler is not supported, name={name}"));
        }
        let err = validate_config(&config(true, "volcano")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "both feature flags enable-batch-scheduler (deprecated) and batch-scheduler are set. Please use \
             batch-scheduler only"
        );
    }

    #[test]
    fn kubernetes_was_gate() {
        let gate = |enable: bool, name: &str| SchedulerConfig {
            kubernetes_was_gate: true,
            ..config(enable, name)
        };
        assert_eq!(validate_config(&gate(false, "")), Ok(()));
        for (enable, name) in [(true, ""), (false, "volcano"), (true, "yunikorn")] {
            assert_eq!(
                validate_config(&gate(enable, name)).unwrap_err().to_string(),
                "the KubernetesWAS feature gate cannot be combined with --batch-scheduler or --enable-batch-scheduler"
            );
        }
        assert_eq!(
            select_scheduler(&gate(false, "")),
            Err(SelectionError::KubernetesWasUnimplemented)
        );
    }
}
