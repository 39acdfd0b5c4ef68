//! Checks of the resource-quantity flags (`--head-cpu 2`, `--worker-memory 4Gi`): each must parse as a Kubernetes
//! quantity and must not be negative; an empty value means "not set".

use ray_api::quantity::Qty;

use crate::error::{PluginError, Result};

/// Parses the value of `flag`; `None` when it is empty.
pub fn check_quantity(flag: &str, value: &str) -> Result<Option<Qty>> {
    if value.is_empty() {
        return Ok(None);
    }
    let qty =
        Qty::parse(value).map_err(|e| PluginError::Failed(format!("{flag} is not a valid resource quantity: {e}")))?;
    if qty.as_nanos() < 0 {
        return Err(PluginError::Failed(format!("{flag} cannot be negative")));
    }
    Ok(Some(qty))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_and_negative_quantities_name_the_flag() {
        assert!(check_quantity("--head-cpu", "2").is_ok_and(|q| q.is_some()));
        assert!(check_quantity("--head-ephemeral-storage", "").is_ok_and(|q| q.is_none()));
        let bad = check_quantity("--worker-memory", "lots").err().map(|e| e.to_string());
        assert!(
            bad.as_deref()
                .is_some_and(|m| m.starts_with("--worker-memory is not a valid resource quantity: ")),
            "{bad:?}"
        );
        let negative = check_quantity("--worker-cpu", "-1").err().map(|e| e.to_string());
        assert_eq!(negative.as_deref(), Some("--worker-cpu cannot be negative"));
    }
}
