//! Kubernetes-exact quantity arithmetic (parse, add, multiply, canonical printing).
