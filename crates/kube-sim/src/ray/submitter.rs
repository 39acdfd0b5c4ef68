//! The part of a RayJob submitter pod the hollow kubelet cannot play: its `ray job submit` and
//! `ray job logs --follow`.
//!
//! A pod is a submitter when one of its containers runs `ray job submit`, either as argv
//! (`["ray", "job", "submit", ...]`) or inside a shell string (KubeRay's `/bin/bash -ce -- "<script>"`, spec
//! §1.8). [`parse_pod`] reads the `--address`, `--submission-id` and the other flags and the entrypoint after
//! `--`. While the pod runs, the hook:
//! 1. keeps it running while the address does not lead to a live hollow head (the script's wait loop on
//!    `/api/gcs_healthz`);
//! 2. submits the job to that head unless a job with that submission id exists (the script's
//!    `if ! ray job status ...; then ray job submit ...; fi`);
//! 3. keeps it running until the job is terminal, then exits 0 (`SUCCEEDED` or `STOPPED`) or 1 (`FAILED`),
//!    as `ray job logs --follow` / a waiting `ray job submit` would.
//!
//! Addresses of the form `http://<svc>.<ns>.svc.<domain>:<port>` (or `<svc>.<ns>...`, or a bare `<svc>` in the
//! pod's namespace) are resolved through the Service's selector to its cluster's head; loopback addresses
//! (SidecarMode) are not handled, and Ray's own pods (labelled `ray.io/node-type`) are left alone.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use serde_json::Value;

use super::head::{HollowRayHead, JobStatus, JobSubmitRequest};
use super::manager::{NODE_TYPE_LABEL, Shared};
use crate::agents::{PodExit, PodExitHook};
use crate::kinds::Gvr;

/// What a submitter pod's `ray job submit` asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubmitterCommand {
    /// `--address` (else env `RAY_DASHBOARD_ADDRESS` / `RAY_ADDRESS`).
    pub address: String,
    /// `--submission-id` (else env `RAY_JOB_SUBMISSION_ID`).
    pub submission_id: Option<String>,
    /// The job request the CLI would send (`entrypoint` is the text after `--`).
    pub request: JobSubmitRequest,
}

/// One shell word: its unquoted text, its byte span in the script, and whether it is an unquoted `;`.
#[derive(Debug, Clone, PartialEq)]
struct Word {
    text: String,
    start: usize,
    end: usize,
    separator: bool,
}

/// Splits a shell script into words (bash quoting rules for `'…'`, `"…"` and `\`; `;` is its own word).
fn shell_words(s: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start: Option<usize> = None;
    let mut chars = s.char_indices().peekable();
    let flush = |cur: &mut String, start: &mut Option<usize>, end: usize, out: &mut Vec<Word>| {
        if let Some(st) = start.take() {
            out.push(Word {
                text: std::mem::take(cur),
                start: st,
                end,
                separator: false,
            });
        }
    };
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => flush(&mut cur, &mut start, i, &mut out),
            ';' => {
                flush(&mut cur, &mut start, i, &mut out);
                out.push(Word {
                    text: ";".into(),
                    start: i,
                    end: i + 1,
                    separator: true,
                });
            }
            '\'' => {
                start.get_or_insert(i);
                for (_, c) in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                start.get_or_insert(i);
                while let Some((_, c)) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some(&(_, n)) if matches!(n, '$' | '`' | '"' | '\\' | '\n') => {
                                cur.push(n);
                                chars.next();
                            }
                            _ => cur.push('\\'),
                        },
                        c => cur.push(c),
                    }
                }
            }
            '\\' => {
                start.get_or_insert(i);
                if let Some((_, n)) = chars.next() {
                    cur.push(n);
                }
            }
            c => {
                start.get_or_insert(i);
                cur.push(c);
            }
        }
    }
    flush(&mut cur, &mut start, s.len(), &mut out);
    out
}

/// Parses `ray job submit` out of words; `script` is the text the words came from (for the raw entrypoint).
fn parse_words(words: &[Word], script: Option<&str>) -> Option<SubmitterCommand> {
    let at = words
        .windows(3)
        .position(|w| w[0].text == "ray" && w[1].text == "job" && w[2].text == "submit")?;
    let mut cmd = SubmitterCommand::default();
    let mut i = at + 3;
    let mut entry_start = None;
    while i < words.len() {
        let w = &words[i];
        if w.separator {
            break;
        }
        if w.text == "--" {
            entry_start = Some(i + 1);
            break;
        }
        let (flag, inline) = match w.text.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (w.text.clone(), None),
        };
        let takes_value = !matches!(
            flag.as_str(),
            "--no-wait" | "--verify" | "--no-verify" | "-v" | "--verbose"
        );
        if !flag.starts_with('-') {
            entry_start = Some(i);
            break;
        }
        let value = if inline.is_some() || !takes_value {
            inline
        } else {
            i += 1;
            words.get(i).map(|w| w.text.clone())
        };
        let v = value.unwrap_or_default();
        let r = &mut cmd.request;
        match flag.as_str() {
            "--address" => cmd.address = v,
            "--submission-id" | "--job-id" => cmd.submission_id = Some(v),
            "--runtime-env-json" => r.runtime_env = serde_json::from_str(&v).ok(),
            "--metadata-json" => r.metadata = serde_json::from_str(&v).ok(),
            "--entrypoint-num-cpus" => r.entrypoint_num_cpus = v.parse().ok(),
            "--entrypoint-num-gpus" => r.entrypoint_num_gpus = v.parse().ok(),
            "--entrypoint-memory" => r.entrypoint_memory = v.parse().ok(),
            "--entrypoint-resources" => r.entrypoint_resources = serde_json::from_str(&v).ok(),
            _ => {}
        }
        i += 1;
    }
    let start = entry_start?;
    // The entrypoint is pasted unquoted; it ends at the `;` before `fi ; ray job logs` (status-check form),
    // else at the script's last `;`, else at the end.
    let rest = &words[start..];
    let end = rest
        .windows(3)
        .position(|w| w[0].separator && w[1].text == "fi" && w[2].separator)
        .or_else(|| {
            script
                .is_some()
                .then(|| rest.iter().rposition(|w| w.separator))
                .flatten()
        })
        .unwrap_or(rest.len());
    let entry = &rest[..end];
    cmd.request.entrypoint = match (script, entry.first(), entry.last()) {
        (Some(s), Some(first), Some(last)) => s[first.start..last.end].trim().to_string(),
        _ => entry.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "),
    };
    cmd.request.submission_id = cmd.submission_id.clone();
    Some(cmd)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Reads a submitter pod's `ray job submit`, if any of its containers runs one.
pub fn parse_pod(pod: &Value) -> Option<SubmitterCommand> {
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        let argv: Vec<String> = strings(&c["command"]).into_iter().chain(strings(&c["args"])).collect();
        if !argv.iter().any(|a| a.contains("submit")) || !argv.iter().any(|a| a.contains("ray")) {
            continue;
        }
        let as_words: Vec<Word> = argv
            .iter()
            .map(|a| Word {
                text: a.clone(),
                start: 0,
                end: 0,
                separator: a == ";",
            })
            .collect();
        let parsed = parse_words(&as_words, None).or_else(|| {
            argv.iter()
                .filter(|a| a.contains("ray job submit"))
                .find_map(|script| parse_words(&shell_words(script), Some(script)))
        });
        let Some(mut cmd) = parsed else { continue };
        let env: BTreeMap<String, String> = c["env"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| Some((e["name"].as_str()?.to_string(), e["value"].as_str()?.to_string())))
            .collect();
        if cmd.address.is_empty() {
            cmd.address = env
                .get("RAY_DASHBOARD_ADDRESS")
                .or_else(|| env.get("RAY_ADDRESS"))
                .cloned()
                .unwrap_or_default();
        }
        if cmd.submission_id.is_none() {
            cmd.submission_id = env.get("RAY_JOB_SUBMISSION_ID").cloned();
            cmd.request.submission_id = cmd.submission_id.clone();
        }
        return Some(cmd);
    }
    None
}

/// `(namespace, service)` an address names: `[http(s)://]<svc>[.<ns>[.svc.<domain>]][:<port>][/...]`.
/// `None` for loopback and IP addresses.
pub fn address_service(address: &str, pod_namespace: &str) -> Option<(String, String)> {
    let rest = address
        .strip_prefix("http://")
        .or_else(|| address.strip_prefix("https://"))
        .unwrap_or(address);
    let host_port = rest.split('/').next()?;
    let host = host_port.split(':').next()?;
    if host.is_empty() || host == "localhost" || host.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    let mut labels = host.split('.');
    let svc = labels.next()?.to_string();
    let ns = labels.next().unwrap_or(pod_namespace).to_string();
    Some((ns, svc))
}

/// What the hook remembers about a submitter pod (by uid).
#[derive(Debug, Clone)]
struct Tracked {
    cmd: Option<SubmitterCommand>,
    /// The head it submitted to and the submission id.
    submitted: Option<(Weak<HollowRayHead>, String)>,
}

/// The [`PodExitHook`] for submitter pods, registered by [`super::HollowRay::attach`].
#[derive(Debug)]
pub struct SubmitterHook {
    shared: Weak<Shared>,
    pods: Mutex<HashMap<String, Tracked>>,
}

impl SubmitterHook {
    pub(super) fn new(shared: Weak<Shared>) -> Self {
        Self {
            shared,
            pods: Mutex::new(HashMap::new()),
        }
    }

    fn resolve(&self, shared: &Shared, cmd: &SubmitterCommand, pod_ns: &str) -> Option<Arc<HollowRayHead>> {
        let (ns, svc) = address_service(&cmd.address, pod_ns)?;
        let service = shared.store.get(&Gvr::services(), Some(&ns), &svc).ok()?;
        shared.head_for_service(&ns, &service.value)
    }
}

fn looks_like_submitter(pod: &Value) -> bool {
    pod["spec"]["containers"].as_array().into_iter().flatten().any(|c| {
        let words = || {
            [&c["command"], &c["args"]]
                .into_iter()
                .filter_map(Value::as_array)
                .flatten()
                .filter_map(Value::as_str)
        };
        words().any(|s| s.contains("submit")) && words().any(|s| s.contains("ray"))
    })
}

impl PodExitHook for SubmitterHook {
    fn decide(&self, pod: &Value) -> Option<PodExit> {
        let shared = self.shared.upgrade()?;
        if pod["metadata"]["labels"][NODE_TYPE_LABEL].is_string() || !looks_like_submitter(pod) {
            return None;
        }
        let uid = pod["metadata"]["uid"].as_str()?.to_string();
        let pod_ns = pod["metadata"]["namespace"].as_str().unwrap_or("default");
        let mut pods = self.pods.lock();
        let tracked = pods.entry(uid.clone()).or_insert_with(|| Tracked {
            cmd: parse_pod(pod),
            submitted: None,
        });
        let cmd = tracked.cmd.clone()?;
        let (head, id) = match &tracked.submitted {
            Some((head, id)) => match head.upgrade() {
                Some(h) => (h, id.clone()),
                // The head went away with its pod: the CLI's connection fails.
                None => {
                    pods.remove(&uid);
                    return Some(PodExit::Exit(1));
                }
            },
            None => {
                let Some(head) = self.resolve(&shared, &cmd, pod_ns) else {
                    // The dashboard is not reachable yet: the script waits on /api/gcs_healthz.
                    return Some(PodExit::KeepRunning);
                };
                let exists = cmd.submission_id.as_deref().and_then(|id| head.job(id)).is_some();
                let id = if exists {
                    cmd.submission_id.clone().unwrap_or_default()
                } else {
                    match head.submit_job(cmd.request.clone()) {
                        Ok(r) => r.submission_id,
                        Err(e) => {
                            tracing::debug!(pod = %uid, error = %e, "hollow ray: submitter's job submit failed");
                            pods.remove(&uid);
                            return Some(PodExit::Exit(1));
                        }
                    }
                };
                tracked.submitted = Some((Arc::downgrade(&head), id.clone()));
                (head, id)
            }
        };
        let exit = match head.job(&id).map(|j| j.status) {
            None => Some(1),
            Some(JobStatus::Succeeded | JobStatus::Stopped) => Some(0),
            Some(JobStatus::Failed) => Some(1),
            Some(JobStatus::Pending | JobStatus::Running) => None,
        };
        match exit {
            Some(code) => {
                pods.remove(&uid);
                Some(PodExit::Exit(code))
            }
            None => Some(PodExit::KeepRunning),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    const SCRIPT: &str = r#"until python -c "import urllib.request; r=urllib.request.urlopen('http://rc-head-svc.ns1.svc.cluster.local:8265/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)" >/dev/null 2>&1 ; do echo "Waiting for Ray Dashboard GCS to become healthy at http://rc-head-svc.ns1.svc.cluster.local:8265 ..." ; sleep 2 ; done ; if ! ray job status --address http://rc-head-svc.ns1.svc.cluster.local:8265 job-1 >/dev/null 2>&1 ; then ray job submit --address http://rc-head-svc.ns1.svc.cluster.local:8265 --no-wait --runtime-env-json "{\"pip\":[\"requests==2.26.0\"]}" --metadata-json "{\"owner\":\"me\"}" --submission-id job-1 --entrypoint-num-cpus 1.000000 --entrypoint-resources "{\"custom\":1}" -- python -c "print(1); exit(3)" ; echo done ; fi ; ray job logs --address http://rc-head-svc.ns1.svc.cluster.local:8265 --follow job-1"#;

    #[test]
    fn parses_kuberay_script() {
        let pod = json!({"spec": {"containers": [{"command": ["/bin/bash", "-ce", "--"], "args": [SCRIPT]}]}});
        let cmd = parse_pod(&pod).unwrap();
        assert_eq!(cmd.address, "http://rc-head-svc.ns1.svc.cluster.local:8265");
        assert_eq!(cmd.submission_id.as_deref(), Some("job-1"));
        assert_eq!(cmd.request.entrypoint, r#"python -c "print(1); exit(3)" ; echo done"#);
        assert_eq!(cmd.request.runtime_env, Some(json!({"pip": ["requests==2.26.0"]})));
        assert_eq!(cmd.request.metadata.unwrap()["owner"], "me");
        assert_eq!(cmd.request.entrypoint_num_cpus, Some(1.0));
        assert_eq!(cmd.request.entrypoint_resources.unwrap()["custom"], 1.0);
        assert_eq!(super::super::head::entrypoint_exit_code(&cmd.request.entrypoint), 3);
        assert_eq!(
            address_service(&cmd.address, "x"),
            Some(("ns1".to_string(), "rc-head-svc".to_string()))
        );
    }

    #[test]
    fn parses_argv_and_env() {
        let pod = json!({"spec": {"containers": [{
            "command": ["ray", "job", "submit", "--address=http://svc:8265", "--", "python", "x.py"],
            "env": [{"name": "RAY_JOB_SUBMISSION_ID", "value": "abc"}],
        }]}});
        let cmd = parse_pod(&pod).unwrap();
        assert_eq!(cmd.address, "http://svc:8265");
        assert_eq!(cmd.submission_id.as_deref(), Some("abc"));
        assert_eq!(cmd.request.entrypoint, "python x.py");
        assert_eq!(
            address_service("http://svc:8265", "d"),
            Some(("d".into(), "svc".into()))
        );
        assert_eq!(address_service("http://127.0.0.1:8265", "d"), None);
    }
}
