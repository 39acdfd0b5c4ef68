//! A kubectl session against a fresh `kube-sim serve`, for the end-to-end tests of kube-sim's own APIs
//! (workloads, logs). Included by those tests next to `support` (`#[path = "support/session.rs"] mod session;`).

use crate::support::{Client, Server, fresh_dir, kubectl_available, start_server};

/// Starts a server and the installed kubectl for it, or `None` (with a loud message) when kubectl is missing.
pub fn kubectl_session(tag: &str) -> Option<(Server, Client)> {
    if !kubectl_available() {
        eprintln!("\n\n!!!!! SKIPPING {tag}: `kubectl` is not on PATH !!!!!\n\n");
        return None;
    }
    let dir = fresh_dir(tag);
    let (server, kubeconfig) = start_server(&dir);
    let client = Client {
        program: "kubectl".into(),
        extra_args: vec!["--request-timeout=20s".into()],
        dir,
        kubeconfig,
    };
    Some((server, client))
}

/// Writes `text` to `name` in the session's directory and returns the path, for `kubectl apply -f`.
pub fn write_file(client: &Client, name: &str, text: &str) -> String {
    let path = client.dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}
