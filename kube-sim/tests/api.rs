//! kube-sim's integration tests against its HTTP API, one test binary: each module is one area (API
//! fidelity, auth, CRD validation, events, streaming, webhooks, the tables kubectl prints). One binary links
//! kube-sim and its dependencies once instead of once per area. The tests that run real processes in
//! namespaces (`process_pods`, `pod_network`) are binaries of their own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod crd_validation;
mod events;
mod fidelity_agents;
mod fidelity_api;
mod fidelity_api2;
mod fidelity_auth;
mod fidelity_logs;
mod fidelity_protobuf;
mod fidelity_workloads;
mod kubectl_tables;
mod openapi;
mod streaming;
mod webhooks;
