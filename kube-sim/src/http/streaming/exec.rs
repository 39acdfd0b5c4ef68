//! `pods/{name}/exec`: validates the request as kube-apiserver and the kubelet do, starts the command through
//! the configured [`ContainerExecutor`], answers `101` and relays the command's stdio over the WebSocket
//! channel protocol until it exits.

use futures::StreamExt;
use http::{Response, header};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use super::channel::{self, CLOSE, ERROR, RESIZE, STDERR, STDIN, STDOUT};
use super::upgrade::{self, UpgradeKind, WebSocket};
use super::{StreamRequest, query_flag, query_values, require_host};
use crate::error::ApiError;
use crate::http::Body;
use crate::sandbox::{ExecInput, ExecOutput, ExecProcess, ExecRequest, SandboxError};
use crate::store::StoredObject;

/// Subprotocols served, most capable first.
const PROTOCOLS: &[&str] = &[channel::V5, channel::V4];
/// Read size of the command's output pipes.
const CHUNK: usize = 32 * 1024;

/// What the client asked to run.
#[derive(Debug)]
struct ExecOptions {
    command: Vec<String>,
    container: String,
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
}

fn parse_options(pod: &StoredObject, query: &str) -> Result<ExecOptions, ApiError> {
    let command = query_values(query, "command");
    let asked = query_values(query, "container").pop().filter(|c| !c.is_empty());
    let container = crate::http::logs::pick_container(pod, asked.as_deref())?;
    let options = ExecOptions {
        command,
        container,
        stdin: query_flag(query, "stdin")?,
        stdout: query_flag(query, "stdout")?,
        stderr: query_flag(query, "stderr")?,
        tty: query_flag(query, "tty")?,
    };
    if options.command.is_empty() {
        return Err(ApiError::bad_request("you must specify at least 1 command"));
    }
    if !(options.stdin || options.stdout || options.stderr) {
        return Err(ApiError::bad_request(
            "you must specify at least one of stdin, stdout, stderr",
        ));
    }
    Ok(options)
}

/// The container must be running: completed pods and containers without a running state cannot exec.
fn require_running(pod: &StoredObject, container: &str) -> Result<(), ApiError> {
    let value = pod.value();
    let phase = value["status"]["phase"].as_str().unwrap_or("Pending");
    if matches!(phase, "Succeeded" | "Failed") {
        return Err(ApiError::bad_request(format!(
            "cannot exec into a container in a completed pod; current phase is {phase}"
        )));
    }
    let running = [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .flat_map(|list| value["status"][*list].as_array().into_iter().flatten())
    .any(|s| s["name"] == container && s["state"]["running"].is_object());
    if !running {
        return Err(ApiError::bad_request(format!(
            "container {container} is not running in pod {} (phase {phase})",
            pod.name()
        )));
    }
    Ok(())
}

/// Maps an executor failure to the API error the client sees.
fn executor_error(pod: &StoredObject, e: SandboxError) -> ApiError {
    match e {
        SandboxError::NotFound(why) | SandboxError::Unsupported(why) => {
            ApiError::bad_request(format!("unable to exec into pod {}: {why}", pod.name()))
        }
        SandboxError::Io { .. } => ApiError::internal(format!("unable to exec into pod {}: {e}", pod.name())),
    }
}

/// Validates, starts the command and upgrades; the session runs on its own task.
pub(super) fn serve(request: StreamRequest) -> Result<Response<Body>, ApiError> {
    let pod = &request.pod;
    let options = parse_options(pod, &request.query)?;
    require_host(pod)?;
    require_running(pod, &options.container)?;
    let executor = request.state.container_executor();
    let hollow = || {
        ApiError::bad_request(format!(
            "unable to exec into pod {}: it runs hollow (kube-sim has no container runtime for it)",
            pod.name()
        ))
    };
    let protocol = match upgrade::requested(&request.headers) {
        Some(UpgradeKind::WebSocket) => {
            upgrade::choose(&request.headers, header::SEC_WEBSOCKET_PROTOCOL.as_str(), PROTOCOLS)
                .ok_or_else(|| upgrade::no_common_protocol(PROTOCOLS))?
        }
        Some(UpgradeKind::Spdy) => {
            // kubectl falls back to SPDY when the WebSocket upgrade fails: name the first failure's cause.
            if !executor.is_some_and(|e| e.runs_pod(pod.uid())) {
                return Err(hollow());
            }
            return Err(ApiError::bad_request(
                "kube-sim serves exec over WebSockets only (v5.channel.k8s.io, v4.channel.k8s.io), not SPDY",
            ));
        }
        None => return Err(upgrade::upgrade_required()),
    };
    let Some(executor) = executor else {
        return Err(hollow());
    };
    let exec = ExecRequest {
        namespace: pod.namespace().unwrap_or_default().to_string(),
        pod: pod.name().to_string(),
        container: options.container.clone(),
        command: options.command.clone(),
        tty: options.tty,
        stdin: options.stdin,
    };
    let process = executor.exec(&exec).map_err(|e| executor_error(pod, e))?;
    let response = upgrade::accept_websocket(&request.headers, protocol)?;
    let upgrade = request.upgrade.ok_or_else(upgrade::upgrade_required)?;
    let span = tracing::debug_span!("exec", pod = %pod.name(), container = %options.container);
    tokio::spawn(tracing::Instrument::instrument(
        async move {
            if let Some(ws) = upgrade::websocket(upgrade).await {
                run(ws, process, options).await;
            }
        },
        span,
    ));
    Ok(response)
}

/// Relays one exec session until the command exits (then sends its status and closes) or the client leaves
/// (then drops the command's pipes).
async fn run(ws: WebSocket, process: ExecProcess, options: ExecOptions) {
    let (sink, source) = ws.split();
    let (tx, writer) = upgrade::spawn_writer(sink);
    let ExecProcess {
        stdin,
        stdout,
        stderr,
        exit,
    } = process;
    let mut pumps = vec![tokio::spawn(pump(stdout, STDOUT, options.stdout, tx.clone()))];
    if let Some(stderr) = stderr {
        pumps.push(tokio::spawn(pump(stderr, STDERR, options.stderr, tx.clone())));
    }
    let aborts: Vec<_> = pumps.iter().map(tokio::task::JoinHandle::abort_handle).collect();
    let mut reader = tokio::spawn(read_client(source, stdin));
    let finished = async {
        for p in pumps {
            let _ = p.await;
        }
        exit.await.ok()
    };
    tokio::select! {
        code = finished => {
            let status = channel::exit_status(code, &options.command);
            let _ = tx.send(channel::message(ERROR, &serde_json::to_vec(&status).unwrap_or_default())).await;
            drop(tx);
            let _ = writer.await;
            reader.abort();
        }
        _ = &mut reader => {
            tracing::debug!("exec client left before the command ended");
            aborts.iter().for_each(tokio::task::AbortHandle::abort);
            writer.abort();
        }
    }
}

/// Copies one output pipe to `channel` (or discards it when the client did not ask for the stream).
async fn pump(mut out: ExecOutput, channel: u8, wanted: bool, tx: mpsc::Sender<Message>) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match out.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) if wanted => {
                if tx.send(channel::message(channel, &buf[..n])).await.is_err() {
                    return;
                }
            }
            Ok(_) => {}
        }
    }
}

/// Reads the client's messages: stdin data, v5 stdin close, resize (ignored: the executor has no terminal
/// to resize). Returns when the client closes the connection.
async fn read_client(mut source: futures::stream::SplitStream<WebSocket>, mut stdin: Option<ExecInput>) {
    while let Some(Ok(message)) = source.next().await {
        let data = match message {
            Message::Binary(data) => data,
            Message::Close(_) => return,
            _ => continue,
        };
        match data.first() {
            Some(&STDIN) => {
                if let Some(input) = stdin.as_mut()
                    && input.write_all(&data[1..]).await.is_err()
                {
                    stdin = None;
                }
            }
            Some(&CLOSE) if data.get(1) == Some(&STDIN) => {
                if let Some(mut input) = stdin.take() {
                    let _ = input.shutdown().await;
                }
            }
            Some(&RESIZE) => tracing::trace!("terminal resize ignored"),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(status: serde_json::Value) -> std::sync::Arc<StoredObject> {
        let value = json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"nodeName": "n", "containers": [{"name": "main"}, {"name": "side"}]},
            "status": status,
        });
        StoredObject::new(value, 1)
    }

    #[test]
    fn options_follow_the_apiserver_rules() {
        let p = pod(json!({}));
        let err = parse_options(&p, "command=ls&stdout=true").unwrap_err();
        assert!(
            err.message.contains("a container name must be specified for pod p"),
            "{}",
            err.message
        );
        let err = parse_options(&p, "command=ls&stdout=true&container=nope").unwrap_err();
        assert_eq!(err.message, "container nope is not valid for pod p");
        let err = parse_options(&p, "stdout=true&container=main").unwrap_err();
        assert_eq!(err.message, "you must specify at least 1 command");
        let err = parse_options(&p, "command=ls&container=main").unwrap_err();
        assert_eq!(err.code, 400);
        let ok = parse_options(&p, "command=sh&command=-c&command=exit+3&stdin=1&container=side").unwrap();
        assert_eq!(ok.command, ["sh", "-c", "exit 3"]);
        assert!(ok.stdin && !ok.tty);
    }

    #[test]
    fn only_running_containers_exec() {
        let done = pod(json!({"phase": "Succeeded"}));
        let err = require_running(&done, "main").unwrap_err();
        assert_eq!(
            err.message,
            "cannot exec into a container in a completed pod; current phase is Succeeded"
        );
        let waiting =
            pod(json!({"phase": "Pending", "containerStatuses": [{"name": "main", "state": {"waiting": {}}}]}));
        assert!(
            require_running(&waiting, "main")
                .unwrap_err()
                .message
                .contains("is not running")
        );
        let running =
            pod(json!({"phase": "Running", "containerStatuses": [{"name": "main", "state": {"running": {}}}]}));
        assert!(require_running(&running, "main").is_ok());
    }
}
