//! Helpers shared by kube-sim's integration tests.

use std::time::Duration;

use kube::Api;
use serde_json::Value;

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
