//! The two ways a command fails, as KubeRay's plugin reports them: a usage error (the message, then a pointer
//! to the command's help) or a plain failure. Both print `Error: ...` on stderr and exit 1.

/// A failed command.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The command line was wrong: printed with `See '<command> -h' for help and examples`.
    #[error("{message}\nSee '{command} -h' for help and examples")]
    Usage {
        /// What was wrong.
        message: String,
        /// The command path to point at, e.g. `kubectl ray delete`.
        command: String,
    },
    /// The command ran and failed.
    #[error("{0}")]
    Failed(String),
}

/// A command's result.
pub type Result<T> = std::result::Result<T, PluginError>;

impl PluginError {
    /// A usage error of `command` (the words after `kubectl ray`, e.g. `delete`).
    pub fn usage(command: &str, message: impl Into<String>) -> Self {
        PluginError::Usage {
            message: message.into(),
            command: format!("kubectl ray {command}"),
        }
    }
}

/// Builds a [`PluginError::Failed`] from a format string.
macro_rules! failed {
    ($($arg:tt)*) => {
        $crate::error::PluginError::Failed(format!($($arg)*))
    };
}
pub(crate) use failed;
