//! `kubectl ray job submit [-f FILE] ... -- ENTRYPOINT`: creates an interactive-mode RayJob (generated from the
//! flags, or read from a file), waits for its Ray cluster, reaches the dashboard (a port-forward unless
//! `--address` is given), runs `ray job submit` against it and follows the RayJob to a terminal status.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use ray_api::{ClusterState, JobStatus, JobSubmissionMode, RayCluster, RayJob, RayJobSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cli::{JobSubmitArgs, KubeFlags, merged};
use crate::cluster_spec::{
    ClusterShape, DEFAULT_GROUP_NAME, ExtraResourceFlags, WorkerGroupShape, effective_image, node_resources,
};
use crate::create_cluster::{FIELD_MANAGER, to_yaml};
use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;
use crate::port_forward;

/// The prefix of generated submission IDs.
const SUBMISSION_ID_PREFIX: &str = "raysubmit_";
/// The characters of generated submission IDs (Ray's: no look-alikes).
const SUBMISSION_ID_ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ123456789";
/// Random characters after the prefix.
const SUBMISSION_ID_LENGTH: usize = 16;
/// How often the RayJob and its cluster are looked at.
const POLL: Duration = Duration::from_secs(2);
/// How long the cluster may take to become ready.
const CLUSTER_READY_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the port-forward may take to answer.
const PORT_FORWARD_TIMEOUT: Duration = Duration::from_secs(60);
/// The local and remote dashboard port.
const DASHBOARD_PORT: u16 = 8265;
/// The RayCluster condition `job submit` waits for (besides state `ready`).
const READY_CONDITION: &str = "Ready";

/// A generated submission ID from a `0..1` random source.
pub fn generate_submission_id(mut random: impl FnMut() -> usize) -> String {
    let mut id = String::from(SUBMISSION_ID_PREFIX);
    for _ in 0..SUBMISSION_ID_LENGTH {
        id.push(char::from(
            SUBMISSION_ID_ALPHABET[random() % SUBMISSION_ID_ALPHABET.len()],
        ));
    }
    id
}

/// What the checks settle before anything is created.
#[derive(Debug, Clone)]
pub struct Submission {
    /// The RayJob to create (named, with its spec).
    pub job: RayJob,
    /// Whether it came from `-f` (created) or the flags (applied server-side).
    pub from_file: bool,
    /// The entrypoint (the words after `--` joined by spaces).
    pub entrypoint: String,
    /// The working directory.
    pub working_dir: String,
    /// The runtime env JSON passed on to `ray job submit`.
    pub runtime_env_json: String,
}

/// Reads the runtime env file; its `working_dir`, if any.
fn runtime_env_working_dir(path: &str) -> Result<Option<String>> {
    let meta = std::fs::metadata(path).map_err(|e| failed!("Runtime Env file does not exist. Failed with: {e}"))?;
    if !meta.is_file() {
        return Err(failed!("Filename given is not a regular file. Failed with: <nil>"));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| failed!("Runtime Env file does not exist. Failed with: {e}"))?;
    let value: serde_json::Value =
        ray_api::yaml::from_yaml_str(&text).map_err(|e| failed!("failed to read the runtime env file: {e}"))?;
    Ok(value.get("working_dir").and_then(|v| v.as_str()).map(str::to_string))
}

/// The checks of `job submit` (before connecting), and the RayJob they describe.
pub fn prepare(args: &JobSubmitArgs, namespace: &str) -> Result<Submission> {
    if args.entrypoint.is_empty() {
        return Err(PluginError::usage(
            "job submit",
            "the entrypoint is missing: give it after `--`",
        ));
    }
    let entrypoint = args.entrypoint.join(" ");
    let mut working_dir = args.working_dir.clone();
    if !args.runtime_env.is_empty()
        && let Some(dir) = runtime_env_working_dir(&args.runtime_env)?
        && working_dir.is_empty()
    {
        working_dir = dir;
    }
    if args.ttl_seconds_after_finished.is_some_and(|t| t < 0) {
        return Err(failed!(
            "--ttl-seconds-after-finished must be greater than or equal to 0"
        ));
    }
    let mut runtime_env_json = args.runtime_env_json.clone();
    let (job, from_file) = match &args.filename {
        Some(path) => {
            let job = read_job_file(path)?;
            let job = check_file_job(job, args, &mut runtime_env_json)?;
            (job, true)
        }
        None => {
            if args.name.is_empty() {
                return Err(failed!(
                    "Must set either yaml file (--filename) or set Ray job name (--name)"
                ));
            }
            (generated_job(args, namespace, &entrypoint)?, false)
        }
    };
    if working_dir.is_empty() {
        return Err(failed!(
            "working directory is required, use --working-dir or set with runtime env"
        ));
    }
    if args.address.as_deref() == Some("") {
        return Err(failed!("--address was provided but is empty"));
    }
    Ok(Submission {
        job,
        from_file,
        entrypoint,
        working_dir,
        runtime_env_json,
    })
}

/// Reads a RayJob file.
fn read_job_file(path: &Path) -> Result<RayJob> {
    let text = std::fs::read_to_string(path).map_err(|e| failed!("Ray Job file does not exist. Failed with: {e}"))?;
    ray_api::yaml::from_yaml_str(&text).map_err(|e| failed!("Failed to decode RayJob Yaml: {e}"))
}

/// The checks of a RayJob from `-f`, with the flags applied to it.
fn check_file_job(mut job: RayJob, args: &JobSubmitArgs, runtime_env_json: &mut String) -> Result<RayJob> {
    if job.spec.submission_mode != Some(JobSubmissionMode::InteractiveMode) {
        return Err(failed!(
            "Submission mode of the Ray Job must be set to 'InteractiveMode'"
        ));
    }
    if job.spec.backoff_limit.is_some_and(|b| b > 0) {
        return Err(failed!("BackoffLimit is incompatible with InteractiveMode"));
    }
    if args.runtime_env.is_empty()
        && args.runtime_env_json.is_empty()
        && let Some(yaml) = job.spec.runtime_env_yaml.as_deref().filter(|y| !y.is_empty())
    {
        let value: serde_json::Value =
            ray_api::yaml::from_yaml_str(yaml).map_err(|e| failed!("failed to read runtimeEnvYAML: {e}"))?;
        *runtime_env_json = value.to_string();
    }
    if let Some(ttl) = args.ttl_seconds_after_finished {
        job.spec.ttl_seconds_after_finished = Some(ttl);
        job.spec.shutdown_after_job_finishes = Some(true);
    }
    if let Some(ttl) = job.spec.ttl_seconds_after_finished {
        if ttl < 0 {
            return Err(failed!("ttlSecondsAfterFinished must be greater than or equal to 0"));
        }
        if !job.spec.shutdown_after_job_finishes.unwrap_or(false) {
            return Err(failed!(
                "ttlSecondsAfterFinished is only supported when shutdownAfterJobFinishes is set to true"
            ));
        }
    }
    Ok(job)
}

/// The RayJob generated from the flags.
fn generated_job(args: &JobSubmitArgs, namespace: &str, entrypoint: &str) -> Result<RayJob> {
    let s = &args.shape;
    let (head, worker) = node_resources(s, ExtraResourceFlags::default())?;
    let shape = ClusterShape {
        ray_version: s.ray_version.clone(),
        image: effective_image(&s.image, &s.ray_version),
        head,
        head_ray_start_params: BTreeMap::new(),
        head_node_selector: merged(&s.head_node_selectors),
        worker_groups: vec![WorkerGroupShape {
            name: DEFAULT_GROUP_NAME.to_string(),
            replicas: s.worker_replicas,
            num_of_hosts: Some(1),
            resources: worker,
            ray_start_params: BTreeMap::new(),
            node_selector: merged(&s.worker_node_selectors),
        }],
        autoscaler: None,
        service_account: None,
        gcsfuse: None,
    };
    Ok(RayJob {
        metadata: ObjectMeta {
            name: Some(args.name.clone()),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        },
        spec: RayJobSpec {
            submission_mode: Some(JobSubmissionMode::InteractiveMode),
            entrypoint: Some(entrypoint.to_string()),
            ttl_seconds_after_finished: args.ttl_seconds_after_finished,
            shutdown_after_job_finishes: args.ttl_seconds_after_finished.map(|_| true),
            ray_cluster_spec: Some(shape.spec()),
            ..Default::default()
        },
        status: None,
    })
}

/// The `ray job submit` arguments after `ray`.
pub fn ray_submit_args(
    args: &JobSubmitArgs,
    sub: &Submission,
    address: &str,
    submission_id: &str,
) -> Result<Vec<String>> {
    let mut out: Vec<String> = ["job", "submit", "--address", address].map(String::from).to_vec();
    let num = |v: f64| (v > 0.0).then(|| format!("{v:.6}"));
    let memory = (args.entrypoint_memory > 0).then(|| args.entrypoint_memory.to_string());
    let valued: [(&str, Option<String>); 8] = [
        ("--runtime-env", Some(args.runtime_env.clone())),
        ("--runtime-env-json", Some(sub.runtime_env_json.clone())),
        ("--submission-id", Some(submission_id.to_string())),
        ("--entrypoint-num-cpus", num(args.entrypoint_num_cpus)),
        ("--entrypoint-num-gpus", num(args.entrypoint_num_gpus)),
        ("--entrypoint-memory", memory),
        ("--entrypoint-resource", Some(args.entrypoint_resources.clone())),
        ("--metadata-json", Some(args.metadata_json.clone())),
    ];
    push_set(&mut out, &valued);
    if args.no_wait {
        out.push("--no-wait".into());
    }
    push_set(
        &mut out,
        &[
            ("--headers", Some(args.headers.clone())),
            ("--verify", Some(args.verify.clone())),
            ("--log-style", Some(args.log_style.clone())),
            ("--log-color", Some(args.log_color.clone())),
        ],
    );
    if args.verbose {
        out.push("--verbose".into());
    }
    out.extend(["--working-dir".to_string(), sub.working_dir.clone(), "--".to_string()]);
    let words =
        shlex::split(&sub.entrypoint).ok_or_else(|| failed!("unable to split the entrypoint {:?}", sub.entrypoint))?;
    out.extend(words);
    Ok(out)
}

/// Appends `flag value` for each flag with a non-empty value.
fn push_set(out: &mut Vec<String>, flags: &[(&str, Option<String>)]) {
    for (flag, value) in flags {
        if let Some(value) = value.as_ref().filter(|v| !v.is_empty()) {
            out.push((*flag).to_string());
            out.push(value.clone());
        }
    }
}

/// Runs the command.
pub async fn run(flags: &KubeFlags, args: &JobSubmitArgs) -> Result<()> {
    let namespace_hint = flags.namespace.clone().unwrap_or_default();
    let mut sub = prepare(args, &namespace_hint)?;
    let ctx = KubeContext::connect(flags).await?;
    sub.job.metadata.namespace = Some(ctx.namespace.clone());
    let submission_id = if args.submission_id.is_empty() {
        let id = generate_submission_id(|| fastrand::usize(..));
        println!("Generated submission ID for Ray job: {id}");
        id
    } else {
        args.submission_id.clone()
    };
    sub.job.spec.job_id = Some(submission_id.clone());
    let name = sub.job.metadata.name.clone().unwrap_or_default();
    let jobs: Api<RayJob> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    if sub.from_file {
        jobs.create(&PostParams::default(), &sub.job)
            .await
            .map_err(|e| failed!("Error when creating RayJob CR: {e}"))?;
    } else if args.dry_run {
        print!("{}", to_yaml(&sub.job)?);
        return Ok(());
    } else {
        jobs.patch(&name, &PatchParams::apply(FIELD_MANAGER), &Patch::Apply(&sub.job))
            .await
            .map_err(|e| failed!("Failed to apply generated YAML: {e}"))?;
    }
    println!("Submitted RayJob {name}.");
    let cluster_name = wait_cluster_name(&jobs, &name).await;
    let clusters: Api<RayCluster> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let cluster = match wait_cluster_ready(&clusters, &cluster_name).await {
        Some(cluster) => cluster,
        None => {
            let _ = jobs.delete(&name, &DeleteParams::default()).await;
            return Err(failed!("Timed out waiting for cluster"));
        }
    };
    let address = match &args.address {
        Some(address) => address.clone(),
        None => {
            let service = cluster
                .status
                .and_then(|s| s.head)
                .and_then(|h| h.service_name)
                .ok_or_else(|| failed!("Ray cluster {cluster_name} has no head service"))?;
            start_dashboard_forward(&ctx, &service).await?;
            format!("http://localhost:{DASHBOARD_PORT}")
        }
    };
    let ray_args = ray_submit_args(args, &sub, &address, &submission_id)?;
    let status = tokio::process::Command::new("ray")
        .args(&ray_args)
        .status()
        .await
        .map_err(|e| failed!("Error occurred with Ray job submit: {e}"))?;
    if !status.success() {
        return Err(failed!("Error occurred with Ray job submit: {status}"));
    }
    if args.no_wait {
        println!("Ray job submitted with ID {submission_id}");
        return Ok(());
    }
    follow_job(&jobs, &name, &submission_id).await
}

/// Polls until the RayJob names its cluster (no time limit, as KubeRay's plugin).
async fn wait_cluster_name(jobs: &Api<RayJob>, name: &str) -> String {
    loop {
        if let Ok(job) = jobs.get(name).await
            && let Some(cluster) = job.status.and_then(|s| s.ray_cluster_name).filter(|c| !c.is_empty())
        {
            return cluster;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Polls until the cluster is ready; `None` after two minutes.
async fn wait_cluster_ready(clusters: &Api<RayCluster>, name: &str) -> Option<RayCluster> {
    let started = tokio::time::Instant::now();
    while started.elapsed() < CLUSTER_READY_TIMEOUT {
        if let Ok(cluster) = clusters.get(name).await {
            let status = cluster.status.as_ref();
            let ready = status.is_some_and(|s| {
                s.state == Some(ClusterState::Ready)
                    || s.conditions
                        .iter()
                        .flatten()
                        .any(|c| c.type_ == READY_CONDITION && c.status == "True")
            });
            if ready {
                return Some(cluster);
            }
        }
        println!("Cluster is not ready");
        tokio::time::sleep(POLL).await;
    }
    None
}

/// Forwards the dashboard port in the background and waits until it answers with a 2xx.
async fn start_dashboard_forward(ctx: &KubeContext, service: &str) -> Result<()> {
    let target = port_forward::resolve(ctx, service, &[DASHBOARD_PORT]).await?;
    let forward_ctx = ctx.clone();
    tokio::spawn(async move {
        let _ = port_forward::serve(&forward_ctx, &target).await;
    });
    let started = tokio::time::Instant::now();
    while started.elapsed() < PORT_FORWARD_TIMEOUT {
        if dashboard_answers().await {
            return Ok(());
        }
        tokio::time::sleep(POLL).await;
    }
    Err(failed!("Timed out waiting for port forwarding"))
}

/// Whether `GET http://localhost:8265/` answers with a 2xx status.
async fn dashboard_answers() -> bool {
    let Ok(mut conn) = tokio::net::TcpStream::connect(("127.0.0.1", DASHBOARD_PORT)).await else {
        return false;
    };
    let request = "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if conn.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    if conn.read_exact(&mut head).await.is_err() {
        return false;
    }
    // "HTTP/1.x 2.."
    head.get(9) == Some(&b'2')
}

/// Watches the RayJob, printing each status, until it is terminal or the watch ends.
async fn follow_job(jobs: &Api<RayJob>, name: &str, submission_id: &str) -> Result<()> {
    let params = WatchParams::default().fields(&format!("metadata.name={name}"));
    let stream = jobs
        .watch(&params, "0")
        .await
        .map_err(|e| failed!("unable to watch RayJob {name}: {e}"))?;
    let mut stream = stream.boxed();
    let mut last: Option<JobStatus> = None;
    while let Ok(Some(event)) = stream.try_next().await {
        let job = match event {
            WatchEvent::Added(job) | WatchEvent::Modified(job) => job,
            _ => continue,
        };
        let Some(status) = job.status.as_ref() else {
            continue;
        };
        let Some(job_status) = status.job_status.clone().filter(|s| *s != JobStatus::New) else {
            continue;
        };
        if last.as_ref() != Some(&job_status) {
            let job_id = status
                .job_id
                .clone()
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| "unknown".into());
            println!("Current status: {job_status} (RayJob: {name}, JobID: {job_id})");
            last = Some(job_status.clone());
        }
        match job_status {
            JobStatus::Succeeded | JobStatus::Stopped => {
                println!("Job {submission_id} finished with status {job_status}.");
                return Ok(());
            }
            JobStatus::Failed => {
                return Err(match status.message.as_deref().filter(|m| !m.is_empty()) {
                    Some(message) => failed!("job {submission_id} failed: {message}"),
                    None => failed!("job {submission_id} failed with status FAILED"),
                });
            }
            _ => {}
        }
    }
    eprintln!("rayjob {name} watch ended without a clear terminal state");
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn submit_args(args: &[&str]) -> JobSubmitArgs {
        let cli =
            Cli::try_parse_from(["kubectl-ray", "job", "submit"].into_iter().chain(args.iter().copied())).unwrap();
        match cli.command {
            Some(crate::cli::Command::Job(job)) => match job.command {
                Some(crate::cli::JobCommand::Submit(a)) => *a,
                _ => panic!("not submit"),
            },
            _ => panic!("not job"),
        }
    }

    #[test]
    fn submission_ids_use_rays_alphabet() {
        let mut n = 0;
        let id = generate_submission_id(|| {
            n += 1;
            n
        });
        assert_eq!(id, "raysubmit_bcdefghijkmnpqrs");
        assert_eq!(id.len(), SUBMISSION_ID_PREFIX.len() + SUBMISSION_ID_LENGTH);
    }

    #[test]
    fn checks_name_what_is_missing() {
        let msg = |a: &[&str]| prepare(&submit_args(a), "ns").err().unwrap().to_string();
        assert_eq!(
            msg(&["--working-dir", ".", "--", "python", "x.py"]),
            "Must set either yaml file (--filename) or set Ray job name (--name)"
        );
        assert_eq!(
            msg(&["--name", "j", "--", "python", "x.py"]),
            "working directory is required, use --working-dir or set with runtime env"
        );
        assert_eq!(
            msg(&[
                "--name",
                "j",
                "--working-dir",
                ".",
                "--ttl-seconds-after-finished",
                "-1",
                "--",
                "x"
            ]),
            "--ttl-seconds-after-finished must be greater than or equal to 0"
        );
        assert_eq!(
            msg(&["--name", "j", "--working-dir", ".", "--address", "", "--", "x"]),
            "--address was provided but is empty"
        );
        assert_eq!(
            msg(&["--name", "j", "--working-dir", ".", "--head-cpu", "two", "--", "x"])
                .split(':')
                .next()
                .unwrap(),
            "--head-cpu is not a valid resource quantity"
        );
    }

    #[test]
    fn the_generated_job_is_interactive_with_the_entrypoint_and_ttl() {
        let sub = prepare(
            &submit_args(&[
                "--name",
                "j",
                "--working-dir",
                "/w",
                "--ttl-seconds-after-finished",
                "10",
                "--",
                "python",
                "a b.py",
            ]),
            "ns",
        )
        .unwrap();
        assert_eq!(sub.job.spec.submission_mode, Some(JobSubmissionMode::InteractiveMode));
        assert_eq!(sub.job.spec.entrypoint.as_deref(), Some("python a b.py"));
        assert_eq!(sub.job.spec.shutdown_after_job_finishes, Some(true));
        let groups = sub
            .job
            .spec
            .ray_cluster_spec
            .as_ref()
            .unwrap()
            .worker_group_specs
            .as_ref()
            .unwrap();
        assert_eq!(groups[0].group_name, "default-group");
    }

    #[test]
    fn ray_job_submit_gets_the_flags_in_order_then_the_split_entrypoint() {
        let args = submit_args(&[
            "--name",
            "j",
            "--working-dir",
            "/w",
            "--entrypoint-num-cpus",
            "1.5",
            "--no-wait",
            "--verify",
            "False",
            "--entrypoint-resources",
            "{\"a\":1}",
            "--",
            "python",
            "-c",
            "'print(1)'",
        ]);
        let sub = prepare(&args, "ns").unwrap();
        let argv = ray_submit_args(&args, &sub, "http://h:8265", "raysubmit_x").unwrap();
        assert_eq!(
            argv,
            [
                "job",
                "submit",
                "--address",
                "http://h:8265",
                "--submission-id",
                "raysubmit_x",
                "--entrypoint-num-cpus",
                "1.500000",
                "--entrypoint-resource",
                "{\"a\":1}",
                "--no-wait",
                "--verify",
                "False",
                "--working-dir",
                "/w",
                "--",
                "python",
                "-c",
                "print(1)",
            ]
        );
    }
}
