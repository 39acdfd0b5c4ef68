//! End to end with real Ray, one test binary: the operator binary against kube-sim's process pods running the
//! pinned Ray venv (`scripts/install-ray.sh`, installed on first use) on a bridge pod network.
//!
//! - `real_ray_jobs`: RayJobs in K8sJobMode and HTTPMode, a retry, a deadline, and a RayService's in-place
//!   update and zero-downtime upgrade.
//! - `real_ray_sample`: KubeRay's sample RayCluster becomes a real two-node Ray cluster.
//! - `real_ray_scaling_and_ft`: Ray's autoscaler scales a worker group 0 -> 3 -> 0, and a GCS-FT head recovers
//!   its job history from Redis.
//!
//! Each test starts its own kube-sim (its own pod network slot and cgroups) and operator, and checks what it
//! leaves behind by its own pods' cgroups (and that no Ray process runs outside every run's pods), so the tests
//! run side by side: much of their time is waiting (probes, idle timeouts, grace periods), not CPU. At most two
//! run at once whatever the CPU count (`REAL_RAY_RUNS`). The harness starts tests in name order, so the longest
//! (`real_ray_jobs`) starts first.
//!
//! Needs root (network and mount namespaces, cgroups), PyPI and the Debian archive on first use; without them
//! the tests fail, they never skip.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod real_ray_jobs;
mod real_ray_sample;
mod real_ray_scaling_and_ft;
