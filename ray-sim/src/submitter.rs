//! The part of a RayJob submitter pod the hollow kubelet cannot play: its `ray job submit` and
//! `ray job logs --follow`.
//!
//! A pod is a submitter when one of its containers runs `ray job submit`, either as argv
//! (`["ray", "job", "submit", ...]`) or inside a shell string (the `/bin/bash -ce -- "<script>"` KubeRay's
//! RayJob controller gives a K8sJobMode submitter). [`parse_pod`] reads the `--address`, `--submission-id` and
//! the other flags and the entrypoint after `--`. While the pod runs, the hook:
//! 1. keeps it running while the address does not lead to a live hollow head (the script's wait loop on
//!    `/api/gcs_healthz`);
//! 2. submits the job to that head unless a job with that submission id exists (the script's
//!    `if ! ray job status ...; then ray job submit ...; fi`);
//! 3. keeps it running until the job is terminal, then exits as the CLI would: a waiting `ray job submit`
//!    exits 1 when the job `FAILED` and 0 otherwise; `ray job submit --no-wait` followed by
//!    `ray job logs --follow` (KubeRay's K8sJobMode script) exits 0 whatever the terminal status, because
//!    `ray job logs` does not report the job's failure (KubeRay #3216); `--no-wait` alone exits 0 at once.
//!
//! Addresses of the form `http://<svc>.<ns>.svc.<domain>:<port>` (or `<svc>.<ns>...`, or a bare `<svc>` in the
//! pod's namespace) are resolved through the Service's selector to its cluster's head; Ray's own pods (labelled
//! `ray.io/node-type`) are left alone by the hook. SidecarMode submitters — a container of the head pod that
//! submits to the loopback address — are played instead by a task [`crate::HollowRay::attach`] spawns,
//! container by container.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use crate::head::{HollowRayHead, JobStatus, JobSubmitRequest};
use crate::manager::{CLUSTER_LABEL, NODE_TYPE_LABEL, Shared};
use kube_sim::agents::{PodExit, PodExitHook};
use kube_sim::kinds::Gvr;
use kube_sim::select::{LabelRequirement, LabelSelector};
use kube_sim::store::{ListOptions, PatchKind};

/// What a submitter pod's `ray job submit` asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubmitterCommand {
    /// `--address` (else env `RAY_DASHBOARD_ADDRESS` / `RAY_ADDRESS`).
    pub address: String,
    /// `--submission-id` (else env `RAY_JOB_SUBMISSION_ID`).
    pub submission_id: Option<String>,
    /// The job request the CLI would send (`entrypoint` is the text after `--`).
    pub request: JobSubmitRequest,
    /// `--no-wait`: `ray job submit` returns once the job is submitted.
    pub no_wait: bool,
    /// The script follows the job with `ray job logs --follow` (exit 0 once the job is terminal).
    pub follows_logs: bool,
}

impl SubmitterCommand {
    /// The pod's exit code once the job reached `status`, or `None` while the pod keeps running.
    pub fn exit_code(&self, status: Option<JobStatus>) -> Option<i32> {
        match status {
            None => Some(1),
            Some(_) if self.no_wait && !self.follows_logs => Some(0),
            Some(JobStatus::Pending | JobStatus::Running) => None,
            Some(JobStatus::Failed) if !self.no_wait => Some(1),
            Some(_) => Some(0),
        }
    }
}

/// Whether `ray job logs ... --follow` (or `-f`) appears among the words.
fn follows_logs(words: &[Word]) -> bool {
    words.windows(3).enumerate().any(|(i, w)| {
        w[0].text == "ray"
            && w[1].text == "job"
            && w[2].text == "logs"
            && words[i + 3..]
                .iter()
                .take_while(|w| !w.separator)
                .any(|w| w.text == "--follow" || w.text == "-f")
    })
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
        if flag == "--no-wait" {
            cmd.no_wait = true;
        }
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
    cmd.follows_logs = follows_logs(words);
    Some(cmd)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Reads a submitter pod's `ray job submit`, if any of its containers runs one.
pub fn parse_pod(pod: &Value) -> Option<SubmitterCommand> {
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(parse_container)
}

/// Reads one container's `ray job submit`, if it runs one.
pub fn parse_container(c: &Value) -> Option<SubmitterCommand> {
    let argv: Vec<String> = strings(&c["command"]).into_iter().chain(strings(&c["args"])).collect();
    if !argv.iter().any(|a| a.contains("submit")) || !argv.iter().any(|a| a.contains("ray")) {
        return None;
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
    let mut cmd = parse_words(&as_words, None).or_else(|| {
        argv.iter()
            .filter(|a| a.contains("ray job submit"))
            .find_map(|script| parse_words(&shell_words(script), Some(script)))
    })?;
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
    Some(cmd)
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

/// The [`PodExitHook`] for submitter pods, registered by [`crate::HollowRay::attach`].
#[derive(Debug)]
pub struct SubmitterHook {
    shared: Weak<Shared>,
    pods: Mutex<HashMap<String, Tracked>>,
}

impl SubmitterHook {
    pub(crate) fn new(shared: Weak<Shared>) -> Self {
        Self {
            shared,
            pods: Mutex::new(HashMap::new()),
        }
    }

    fn resolve(&self, shared: &Shared, cmd: &SubmitterCommand, pod_ns: &str) -> Option<Arc<HollowRayHead>> {
        let (ns, svc) = address_service(&cmd.address, pod_ns)?;
        let service = shared.store.get(&Gvr::services(), Some(&ns), &svc).ok()?;
        shared.head_for_service(&ns, &service.value())
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
        match cmd.exit_code(head.job(&id).map(|j| j.status)) {
            Some(code) => {
                pods.remove(&uid);
                Some(PodExit::Exit(code))
            }
            None => Some(PodExit::KeepRunning),
        }
    }
}

/// How often the SidecarMode submitters are looked at.
pub const SIDECAR_POLL: Duration = Duration::from_millis(200);

/// A SidecarMode submitter container being played: the job it submitted.
#[derive(Debug, Clone)]
struct Sidecar {
    cmd: SubmitterCommand,
    job_id: String,
}

/// Plays the SidecarMode submitter: a container of a Running head pod (KubeRay's `ray-job-submitter`) whose
/// `ray job submit` addresses the head itself (`127.0.0.1` / `localhost`). It submits the job to the pod's
/// head (unless the submission id exists), and once the job is terminal marks that container — only that
/// one; the head pod keeps running — `terminated` with the CLI's exit code (a waiting `ray job submit`
/// exits 1 when the job failed). Runs until the [`crate::HollowRay`] is dropped.
pub(crate) async fn run_sidecars(shared: Weak<Shared>) {
    let mut playing: HashMap<(String, String), Sidecar> = HashMap::new();
    loop {
        tokio::time::sleep(SIDECAR_POLL).await;
        let Some(shared) = shared.upgrade() else { return };
        drive_sidecars(&shared, &mut playing);
    }
}

/// The loopback-addressed submitter containers of a head pod: `(container name, command)`.
fn sidecar_containers(pod: &Value) -> Vec<(String, SubmitterCommand)> {
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let cmd = parse_container(c)?;
            let loopback = address_service(&cmd.address, namespace).is_none();
            Some((c["name"].as_str()?.to_string(), cmd)).filter(|_| loopback)
        })
        .collect()
}

fn drive_sidecars(shared: &Shared, playing: &mut HashMap<(String, String), Sidecar>) {
    let opts = ListOptions {
        label_selector: LabelSelector(vec![LabelRequirement::Equal(NODE_TYPE_LABEL.into(), "head".into())]),
        ..ListOptions::default()
    };
    let Ok(pods) = shared.store.list(&Gvr::pods(), None, &opts) else {
        return;
    };
    let mut live = std::collections::HashSet::new();
    for pod in &pods.items {
        let v = &pod.value();
        if v["status"]["phase"] != "Running" || !v["metadata"]["deletionTimestamp"].is_null() {
            continue;
        }
        let namespace = pod.namespace().unwrap_or_default();
        let Some(cluster) = v["metadata"]["labels"][CLUSTER_LABEL].as_str() else {
            continue;
        };
        let Some(head) = shared.head(namespace, cluster) else {
            continue;
        };
        for (container, cmd) in sidecar_containers(v) {
            let key = (pod.uid().to_string(), container.clone());
            live.insert(key.clone());
            let terminated = v["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["name"] == container.as_str() && s["state"]["terminated"].is_object());
            if terminated {
                continue;
            }
            let sidecar = match playing.get(&key) {
                Some(s) => s.clone(),
                None => {
                    let existing = cmd.submission_id.clone().filter(|id| head.job(id).is_some());
                    let job_id = match existing {
                        Some(id) => id,
                        None => match head.submit_job(cmd.request.clone()) {
                            Ok(r) => r.submission_id,
                            Err(e) => {
                                tracing::debug!(pod = pod.name(), error = %e, "hollow ray: sidecar submit failed");
                                mark_terminated(shared, pod, &container, 1);
                                continue;
                            }
                        },
                    };
                    let s = Sidecar { cmd, job_id };
                    playing.insert(key.clone(), s.clone());
                    s
                }
            };
            if let Some(code) = sidecar.cmd.exit_code(head.job(&sidecar.job_id).map(|j| j.status)) {
                mark_terminated(shared, pod, &container, code);
            }
        }
    }
    playing.retain(|k, _| live.contains(k));
}

/// Writes `container` of `pod` as terminated with `code` (the other containers keep their status).
fn mark_terminated(shared: &Shared, pod: &kube_sim::store::StoredObject, container: &str, code: i32) {
    let now = kube_sim::store::now_rfc3339();
    let mut statuses: Vec<Value> = pod.value()["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let Some(status) = statuses.iter_mut().find(|s| s["name"] == container) else {
        return;
    };
    let started_at = status["state"]["running"]["startedAt"].clone();
    status["state"] = serde_json::json!({"terminated": {
        "exitCode": code,
        "reason": if code == 0 { "Completed" } else { "Error" },
        "startedAt": started_at,
        "finishedAt": now,
        "containerID": status["containerID"].clone(),
    }});
    status["ready"] = Value::Bool(false);
    status["started"] = Value::Bool(false);
    let patch = serde_json::json!({"status": {"containerStatuses": statuses}});
    if let Err(e) = shared.store.patch(
        &Gvr::pods(),
        pod.namespace(),
        pod.name(),
        &PatchKind::Merge,
        &patch,
        Some("status"),
    ) {
        tracing::debug!(pod = pod.name(), error = %e, "hollow ray: sidecar status write failed");
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
        assert_eq!(cmd.request.metadata.as_ref().unwrap()["owner"], "me");
        assert_eq!(cmd.request.entrypoint_num_cpus, Some(1.0));
        assert_eq!(cmd.request.entrypoint_resources.as_ref().unwrap()["custom"], 1.0);
        assert_eq!(crate::head::entrypoint_exit_code(&cmd.request.entrypoint), 3);
        assert!(cmd.no_wait && cmd.follows_logs);
        // `ray job logs --follow` exits 0 even when the job failed; only an unknown job is an error.
        assert_eq!(cmd.exit_code(Some(JobStatus::Failed)), Some(0));
        assert_eq!(cmd.exit_code(Some(JobStatus::Succeeded)), Some(0));
        assert_eq!(cmd.exit_code(Some(JobStatus::Running)), None);
        assert_eq!(cmd.exit_code(None), Some(1));
        assert_eq!(
            address_service(&cmd.address, "x"),
            Some(("ns1".to_string(), "rc-head-svc".to_string()))
        );
    }

    /// SidecarMode: only a head-pod container that submits to the loopback address is a sidecar submitter,
    /// and its waiting `ray job submit` reports a failed job with exit code 1.
    #[test]
    fn finds_loopback_sidecar_containers() {
        let sidecar = r#"until python -c "import urllib.request; r=urllib.request.urlopen('http://localhost:8265/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)" >/dev/null 2>&1 ; do echo "Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ..." ; sleep 2 ; done ; ray job submit --address http://127.0.0.1:8265 --submission-id job-2 -- python x.py ;"#;
        let pod = json!({
            "metadata": {"namespace": "ns1"},
            "spec": {"containers": [
                {"name": "ray-head", "command": ["/bin/bash", "-c", "--"], "args": ["ray start --head --block"]},
                {"name": "ray-job-submitter", "command": ["/bin/bash", "-ce", "--"], "args": [sidecar]},
                {"name": "remote", "command": ["ray", "job", "submit", "--address", "http://svc:8265", "--", "x"]},
            ]},
        });
        let found = sidecar_containers(&pod);
        assert_eq!(found.len(), 1, "{found:?}");
        let (name, cmd) = &found[0];
        assert_eq!(name, "ray-job-submitter");
        assert_eq!(cmd.submission_id.as_deref(), Some("job-2"));
        assert_eq!(cmd.request.entrypoint, "python x.py");
        assert!(!cmd.no_wait && !cmd.follows_logs);
        assert_eq!(cmd.exit_code(Some(JobStatus::Failed)), Some(1));
        assert_eq!(cmd.exit_code(Some(JobStatus::Succeeded)), Some(0));
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
        // A waiting `ray job submit` reports the job's failure.
        assert!(!cmd.no_wait && !cmd.follows_logs);
        assert_eq!(cmd.exit_code(Some(JobStatus::Failed)), Some(1));
        assert_eq!(cmd.exit_code(Some(JobStatus::Stopped)), Some(0));
        assert_eq!(cmd.exit_code(Some(JobStatus::Pending)), None);
        assert_eq!(
            address_service("http://svc:8265", "d"),
            Some(("d".into(), "svc".into()))
        );
        assert_eq!(address_service("http://127.0.0.1:8265", "d"), None);
    }
}
