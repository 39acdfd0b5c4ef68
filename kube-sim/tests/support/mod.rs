//! Helpers shared by kube-sim's integration tests. Each test binary includes this module and uses only part of
//! it.
#![allow(dead_code)]

pub mod procs;

use std::time::Duration;

use kube::Api;
use serde_json::Value;

/// A simulator serving the API only (no hollow agents), started from `config`.
pub async fn api_only_sim(config: kube_sim::SimConfig) -> kube_sim::SimHandle {
    kube_sim::SimServer::start(kube_sim::SimConfig {
        agents: kube_sim::AgentConfig {
            enabled: false,
            ..kube_sim::AgentConfig::default()
        },
        ..config
    })
    .await
    .unwrap()
}

/// Upper bound for any single wait in these tests.
pub const WAIT: Duration = Duration::from_secs(20);

/// Polls `get(name)` until `pred` holds (bounded by [`WAIT`]); returns the object's JSON.
pub async fn wait_for<K>(api: &Api<K>, name: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let fut = async {
        loop {
            if let Ok(o) = api.get(name).await {
                let v = serde_json::to_value(&o).unwrap();
                if pred(&v) {
                    return v;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    match tokio::time::timeout(WAIT, fut).await {
        Ok(v) => v,
        Err(_) => panic!(
            "timed out waiting for {name}: {what}; last: {:?}",
            api.get(name).await.ok()
        ),
    }
}
