//! The WebSocket channel protocol (`v4.channel.k8s.io`, `v5.channel.k8s.io`): every binary message starts
//! with a channel byte. Exec uses stdin 0, stdout 1, stderr 2, error 3 (one `Status` JSON when the command
//! ends), resize 4 and, in v5, close 255 (the client's stdin ended).

use bytes::Bytes;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// Version 5: v4 plus the close channel.
pub(super) const V5: &str = "v5.channel.k8s.io";
/// Version 4: the error channel carries a `Status` JSON.
pub(super) const V4: &str = "v4.channel.k8s.io";
/// Client to server: the command's stdin.
pub(super) const STDIN: u8 = 0;
/// Server to client: the command's stdout.
pub(super) const STDOUT: u8 = 1;
/// Server to client: the command's stderr.
pub(super) const STDERR: u8 = 2;
/// Server to client: how the command ended.
pub(super) const ERROR: u8 = 3;
/// Client to server: terminal size changes (JSON `{"Width":..,"Height":..}`).
pub(super) const RESIZE: u8 = 4;
/// Client to server (v5): the channel named by the payload's byte is closed.
pub(super) const CLOSE: u8 = 255;

/// A binary message on `channel`.
pub(super) fn message(channel: u8, data: &[u8]) -> Message {
    let mut out = Vec::with_capacity(data.len() + 1);
    out.push(channel);
    out.extend_from_slice(data);
    Message::Binary(Bytes::from(out))
}

/// The `Status` the error channel carries once the command exited with `code` (`None`: its exit code was
/// lost). A non-zero code is `NonZeroExitCode` with an `ExitCode` cause, from which clients take their own
/// exit code.
pub(super) fn exit_status(code: Option<i32>, command: &[String]) -> Value {
    match code {
        Some(0) => json!({"metadata": {}, "status": "Success"}),
        Some(code) => {
            let code = code.rem_euclid(256);
            json!({
                "metadata": {},
                "status": "Failure",
                "message": format!(
                    "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
                    command.join(" ")
                ),
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
            })
        }
        None => json!({
            "metadata": {},
            "status": "Failure",
            "message": format!("error executing command [{}]: the process ended without an exit code", command.join(" ")),
            "reason": "InternalError",
            "code": 500,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_become_statuses_clients_understand() {
        assert_eq!(exit_status(Some(0), &[])["status"], "Success");
        let failed = exit_status(Some(3), &["sh".into(), "-c".into(), "exit 3".into()]);
        assert_eq!(failed["reason"], "NonZeroExitCode");
        assert_eq!(
            failed["details"]["causes"][0],
            json!({"reason": "ExitCode", "message": "3"})
        );
        assert!(failed["message"].as_str().unwrap().contains("[sh -c exit 3]"));
        assert_eq!(exit_status(None, &[])["reason"], "InternalError");
    }

    #[test]
    fn messages_start_with_their_channel() {
        assert_eq!(message(STDERR, b"x").into_data().as_ref(), &[2, b'x']);
    }
}
