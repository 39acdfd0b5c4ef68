//! Empty on purpose: this crate exists for the dependency features its `Cargo.toml` enables, so that
//! kuberay-operator and kuberay-bench share one build of every common dependency.
