//! The operator's end-to-end and command tests, one test binary: each module is one area (the real operator
//! binary against an in-process kube-sim, its `render` command, the chart). One binary compiles the shared
//! helpers and links kube-sim and every dependency once instead of once per area. The tests that must not
//! share the machine with another test are binaries of their own (`[[test]]` in Cargo.toml): API faults and
//! kill -9 (`e2e_faults`), extreme values, the RayCluster fuzzing, slow dashboards (`e2e_rayjob_isolation`),
//! RBAC (each of its tests runs an operator, one at a time), the in-cluster install (process pods) and real
//! Ray.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod e2e_autoscaler;
mod e2e_kubectl_samples;
mod e2e_mtls;
mod e2e_networkpolicy;
mod e2e_openshift;
mod e2e_raycluster;
mod e2e_raycluster_more;
mod e2e_raycronjob;
mod e2e_rayjob;
mod e2e_rayservice;
mod e2e_rayservice_incremental;
mod e2e_undecodable;
mod e2e_upgrade;
mod e2e_webhook;
mod fuzz_admission;
mod fuzz_render;
mod helm_chart;
mod render_cli;
