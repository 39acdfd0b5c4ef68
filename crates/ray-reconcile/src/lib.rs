//! The RayCluster, RayJob and RayService controllers: a pure plan (desired + observed state to
//! actions + status) and an executor that carries the actions out through kube-runtime.
