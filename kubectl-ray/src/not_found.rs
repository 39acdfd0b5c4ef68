//! The "not found" message of `get workergroup` and `get node`: what was looked for, then where.

/// `<what> not found in namespace <ns>` (or `in any namespace`), then ` in Ray cluster <c>` (or
/// ` in any Ray cluster`).
pub fn not_found_message(what: &str, namespace: Option<&str>, ray_cluster: Option<&str>) -> String {
    let namespace = match namespace {
        Some(ns) => format!(" in namespace {ns}"),
        None => " in any namespace".to_string(),
    };
    let cluster = match ray_cluster {
        Some(c) => format!(" in Ray cluster {c}"),
        None => " in any Ray cluster".to_string(),
    };
    format!("{what} not found{namespace}{cluster}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_scope_searched() {
        assert_eq!(
            not_found_message("Ray worker group g", Some("default"), Some("c")),
            "Ray worker group g not found in namespace default in Ray cluster c"
        );
        assert_eq!(
            not_found_message("Ray node n", None, None),
            "Ray node n not found in any namespace in any Ray cluster"
        );
    }
}
