//! The pod `log` subresource (`GET /api/v1/namespaces/{ns}/pods/{name}/log`): the container's buffered log with
//! `container`, `previous`, `tailLines`, `sinceSeconds`/`sinceTime`, `timestamps`, `limitBytes` and `follow`
//! (streams until the container stops or the client leaves), and the errors kube-apiserver and the kubelet
//! give for ambiguous containers, pods not started yet and missing previous runs.

use bytes::Bytes;
use http::{HeaderValue, Response, header};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use serde_json::Value;

use super::Body;
use crate::error::{ApiError, FieldError, Target};
use crate::logs::{LogLine, PodLogs};
use crate::store::StoredObject;

/// Reader options of one request (upstream's `PodLogOptions`).
#[derive(Debug, Default, Clone, PartialEq)]
struct LogOptions {
    container: Option<String>,
    follow: bool,
    previous: bool,
    timestamps: bool,
    tail_lines: Option<i64>,
    since_seconds: Option<i64>,
    since_time: Option<jiff::Timestamp>,
    limit_bytes: Option<i64>,
}

fn parse_int(name: &str, v: &str) -> Result<i64, ApiError> {
    v.parse()
        .map_err(|_| ApiError::bad_request(format!("{name}: strconv.ParseInt: parsing {v:?}: invalid syntax")))
}

pub(super) fn parse_bool(name: &str, v: &str) -> Result<bool, ApiError> {
    match v {
        "true" | "1" | "True" | "TRUE" | "t" | "T" => Ok(true),
        "false" | "0" | "False" | "FALSE" | "f" | "F" | "" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "{name}: strconv.ParseBool: parsing {v:?}: invalid syntax"
        ))),
    }
}

fn invalid(field: &str, value: i64, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: field.into(),
        message: format!("Invalid value: {value}: {detail}"),
    }
}

impl LogOptions {
    fn parse(pod: &str, get: &dyn Fn(&str) -> Option<String>) -> Result<Self, ApiError> {
        let flag = |k: &str| get(k).map_or(Ok(false), |v| parse_bool(k, &v));
        let int = |k: &str| get(k).map(|v| parse_int(k, &v)).transpose();
        let opts = Self {
            container: get("container").filter(|c| !c.is_empty()),
            follow: flag("follow")?,
            previous: flag("previous")?,
            timestamps: flag("timestamps")?,
            tail_lines: int("tailLines")?,
            since_seconds: int("sinceSeconds")?,
            since_time: get("sinceTime")
                .map(|t| {
                    t.parse()
                        .map_err(|_| ApiError::bad_request(format!("sinceTime: invalid time {t:?}")))
                })
                .transpose()?,
            limit_bytes: int("limitBytes")?,
        };
        let mut causes = Vec::new();
        if let Some(n) = opts.tail_lines.filter(|n| *n < 0) {
            causes.push(invalid("tailLines", n, "must be greater than or equal to 0"));
        }
        if let Some(n) = opts.limit_bytes.filter(|n| *n < 1) {
            causes.push(invalid("limitBytes", n, "must be greater than 0"));
        }
        if opts.since_seconds.is_some() && opts.since_time.is_some() {
            causes.push(FieldError::forbidden(
                "",
                "at most one of sinceTime or sinceSeconds may be specified",
            ));
        } else if let Some(n) = opts.since_seconds.filter(|n| *n < 1) {
            causes.push(invalid("sinceSeconds", n, "must be greater than 0"));
        }
        if causes.is_empty() {
            Ok(opts)
        } else {
            let target = Target {
                group: "",
                plural: "pods",
                kind: "PodLogOptions",
                name: pod,
            };
            Err(ApiError::invalid(target, &causes))
        }
    }

    /// Whether a line passes the `sinceSeconds`/`sinceTime` filter.
    fn keeps(&self, line: &LogLine) -> bool {
        let since = match (self.since_seconds, self.since_time) {
            (Some(s), _) => jiff::Timestamp::now()
                .checked_sub(jiff::SignedDuration::from_secs(s))
                .ok(),
            (None, t) => t,
        };
        since.is_none_or(|s| line.at >= s)
    }

    fn render(&self, line: &LogLine, out: &mut Vec<u8>) {
        if self.timestamps {
            out.extend_from_slice(format!("{:.9} ", line.at).as_bytes());
        }
        out.extend_from_slice(line.text.as_bytes());
        out.push(b'\n');
    }
}

fn names(pod: &Value, list: &str) -> Vec<String> {
    pod["spec"][list]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}

/// kube-apiserver's container choice: the only container, else the one named (and it must exist).
pub(super) fn pick_container(pod: &StoredObject, asked: Option<&str>) -> Result<String, ApiError> {
    let (containers, inits) = (names(&pod.value(), "containers"), names(&pod.value(), "initContainers"));
    let ephemeral = names(&pod.value(), "ephemeralContainers");
    let name = pod.name();
    match asked {
        Some(c) if containers.iter().chain(&inits).chain(&ephemeral).any(|n| n == c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None if containers.len() == 1 => Ok(containers[0].clone()),
        None if containers.is_empty() => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {name}"
        ))),
        None => {
            let mut msg = format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            );
            if !inits.is_empty() {
                msg.push_str(&format!(" or one of the init containers: [{}]", inits.join(" ")));
            }
            Err(ApiError::bad_request(msg))
        }
    }
}

fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .flat_map(|list| pod["status"][*list].as_array().into_iter().flatten())
    .find(|s| s["name"] == container)
}

/// The kubelet's check that a container has a log to read (`validateContainerLogStatus`).
fn check_status(pod: &StoredObject, container: &str, previous: bool) -> Result<(), ApiError> {
    let name = pod.name();
    let value = pod.value();
    let Some(status) = container_status(&value, container) else {
        // The kubelet has not reported the container yet: it is being created.
        return Err(ApiError::bad_request(format!(
            "container {container:?} in pod {name:?} is waiting to start: ContainerCreating"
        )));
    };
    let (state, last) = (&status["state"], &status["lastState"]);
    if previous {
        return if last["terminated"].is_object() {
            Ok(())
        } else {
            Err(ApiError::bad_request(format!(
                "previous terminated container {container:?} in pod {name:?} not found"
            )))
        };
    }
    if state["running"].is_object() || state["terminated"].is_object() || last["terminated"].is_object() {
        return Ok(());
    }
    let why = match state["waiting"]["reason"].as_str() {
        Some("ErrImagePull") => "image can't be pulled".to_string(),
        Some("ImagePullBackOff") => "trying and failing to pull image".to_string(),
        Some(reason) => reason.to_string(),
        None => {
            return Err(ApiError::bad_request(format!(
                "container {container:?} in pod {name:?} is waiting to start - no logs yet"
            )));
        }
    };
    Err(ApiError::bad_request(format!(
        "container {container:?} in pod {name:?} is waiting to start: {why}"
    )))
}

fn text_body(bytes: Vec<u8>) -> Response<Body> {
    let mut resp = Response::new(
        Full::new(Bytes::from(bytes))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

/// Serves `GET .../pods/{name}/log` for `pod`; `query` reads a query parameter.
pub(super) fn serve(
    logs: &PodLogs,
    pod: &StoredObject,
    query: &dyn Fn(&str) -> Option<String>,
) -> Result<Response<Body>, ApiError> {
    let opts = LogOptions::parse(pod.name(), query)?;
    let container = pick_container(pod, opts.container.as_deref())?;
    if pod.value()["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
        // Not scheduled: no kubelet to ask, so kube-apiserver answers an empty log.
        return Ok(text_body(Vec::new()));
    }
    check_status(pod, &container, opts.previous)?;
    let snapshot = logs
        .read(pod.uid(), &container, opts.previous)
        .unwrap_or(crate::logs::LogSnapshot {
            lines: Vec::new(),
            running: false,
        });
    let mut lines: Vec<&LogLine> = snapshot.lines.iter().filter(|l| opts.keeps(l)).collect();
    if let Some(tail) = opts.tail_lines {
        let skip = lines.len().saturating_sub(tail.max(0) as usize);
        lines.drain(..skip);
    }
    let mut out = Vec::new();
    for l in &lines {
        opts.render(l, &mut out);
    }
    let limit = opts.limit_bytes.map(|n| n.max(0) as usize);
    if let Some(limit) = limit {
        out.truncate(limit);
    }
    if !(opts.follow && snapshot.running && !opts.previous) || limit.is_some_and(|l| out.len() >= l) {
        return Ok(text_body(out));
    }
    let last_seq = snapshot.lines.last().map_or(0, |l| l.seq);
    Ok(follow(
        logs.clone(),
        pod.uid().to_string(),
        container,
        opts,
        out,
        last_seq,
        limit,
    ))
}

/// Streams `first`, then every new line of the container until it stops, its pod goes, the byte limit is
/// reached or the client leaves.
fn follow(
    logs: PodLogs,
    uid: String,
    container: String,
    opts: LogOptions,
    first: Vec<u8>,
    mut last_seq: u64,
    limit: Option<usize>,
) -> Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    let mut changed = logs.subscribe();
    tokio::spawn(async move {
        let mut sent = first.len();
        if !first.is_empty() && tx.send(Bytes::from(first)).await.is_err() {
            return;
        }
        loop {
            let Some(snap) = logs.read(&uid, &container, false) else {
                return;
            };
            let mut out = Vec::new();
            let seen = last_seq;
            for l in snap.lines.iter().filter(|l| l.seq > seen) {
                opts.render(l, &mut out);
                last_seq = l.seq;
            }
            if let Some(limit) = limit {
                out.truncate(limit.saturating_sub(sent));
            }
            sent += out.len();
            if !out.is_empty() && tx.send(Bytes::from(out)).await.is_err() {
                return;
            }
            if !snap.running || limit.is_some_and(|l| sent >= l) {
                return;
            }
            tokio::select! {
                r = changed.changed() => if r.is_err() { return },
                _ = tx.closed() => return,
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(Frame::data(b)), rx))
    });
    let mut resp = Response::new(BodyExt::boxed_unsync(StreamBody::new(futures::StreamExt::boxed(
        stream,
    ))));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: Value, status: Value) -> std::sync::Arc<StoredObject> {
        StoredObject::new(
            json!({"metadata": {"name": "p", "uid": "u"}, "spec": spec, "status": status}),
            1,
        )
    }

    #[test]
    fn ambiguous_container_lists_the_choices_as_upstream() {
        let p = pod(
            json!({"containers": [{"name": "a"}, {"name": "b"}], "initContainers": [{"name": "i"}]}),
            json!({}),
        );
        let e = pick_container(&p, None).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]"
        );
        assert_eq!(
            pick_container(&p, Some("x")).unwrap_err().message,
            "container x is not valid for pod p"
        );
        assert_eq!(pick_container(&p, Some("i")).unwrap(), "i");
    }

    #[test]
    fn pending_and_missing_previous_errors_match_the_kubelet() {
        let p = pod(json!({"containers": [{"name": "c"}]}), json!({"phase": "Pending"}));
        assert_eq!(
            check_status(&p, "c", false).unwrap_err().message,
            r#"container "c" in pod "p" is waiting to start: ContainerCreating"#
        );
        let pulling = pod(
            json!({"containers": [{"name": "c"}]}),
            json!({"containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "ImagePullBackOff"}}, "lastState": {}}]}),
        );
        assert_eq!(
            check_status(&pulling, "c", false).unwrap_err().message,
            r#"container "c" in pod "p" is waiting to start: trying and failing to pull image"#
        );
        let running = pod(
            json!({"containers": [{"name": "c"}]}),
            json!({"containerStatuses": [{"name": "c", "state": {"running": {}}, "lastState": {}}]}),
        );
        assert!(check_status(&running, "c", false).is_ok());
        assert_eq!(
            check_status(&running, "c", true).unwrap_err().message,
            r#"previous terminated container "c" in pod "p" not found"#
        );
    }

    #[test]
    fn invalid_options_are_rejected_like_pod_log_options_validation() {
        let q = |k: &str| match k {
            "tailLines" => Some("-1".to_string()),
            _ => None,
        };
        let e = LogOptions::parse("p", &q).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "PodLogOptions \"p\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"
        );
    }
}
