//! Kubernetes and Go compatibility primitives: the few places where matching KubeRay's output byte
//! for byte means reproducing how the Kubernetes API machinery or Go's standard library reads and
//! writes values, rather than what Rust's standard library does.
//!
//! * [`quantity`]: resource quantities (`500m`, `1.5Gi`) parsed, summed and printed as Kubernetes does.
//! * [`go_duration`]: Go duration text (`1h30m`, `1.5s`) read as `time.ParseDuration` and printed as
//!   `Duration.String()`.
//! * [`go_json`]: JSON written as Go's `encoding/json` writes it (sorted map keys, HTML-safe strings,
//!   Go's float format).
//! * [`go_strconv`]: Go's `strconv` parsing of booleans and integers, and its quoting.
//! * [`human_duration`]: ages printed as apimachinery's `duration.HumanDuration` (`3m20s`, `2d3h`).
//!
//! Pure: no I/O, no environment, no clock. Both the operator's crates and the simulated API server
//! depend on it, which is why it depends on no KubeRay crate.
//!
//! ```
//! use kube_compat::{go_duration, go_json, quantity::Qty};
//!
//! let total = Qty::parse("4Gi")?.add(&Qty::parse("200Mi")?);
//! assert_eq!(total.to_string(), "4296Mi");
//!
//! let timeout = go_duration::parse("1h30m")?;
//! assert_eq!(go_duration::format_secs(timeout), "1h30m0s");
//!
//! let json: serde_json::Value = serde_json::json!({"b": 0.5, "a": "<x>"});
//! assert_eq!(go_json::to_string_sorted(&json), r#"{"a":"\u003cx\u003e","b":0.5}"#);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod go_duration;
pub mod go_json;
pub mod go_strconv;
pub mod human_duration;
pub mod quantity;
