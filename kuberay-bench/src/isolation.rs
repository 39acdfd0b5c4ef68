//! `kuberay-bench isolation`: how much RayJobs on slow dashboards slow everything else down. Three phases, each
//! from a fresh kube-sim with the hollow Ray and a fresh operator (`--use-kubernetes-proxy`, default reconcile
//! concurrency 1): a quiet one, one where `slow_jobs` RayJobs whose dashboards hold every request for
//! `dashboard_delay` have just all become Running (their start-up traffic still under way), and one where
//! they have then been Running for `settle` (steady state: only their job-info queries and what those
//! answers cause). In each, `clusters` RayClusters and `healthy_jobs` RayJobs on healthy
//! dashboards are created together, and their create-to-ready (RayCluster `ready`) and create-to-Complete
//! (RayJob) times are reported as p50 / p99, side by side, with the rate of API requests the simulator served
//! meanwhile (nearly all the operator's: the bench reads progress from the simulator's store). The operator
//! runs at KubeRay's client rate limit (`--qps 100 --burst 200`) unless told otherwise. As in KubeRay, the
//! dashboard requests through the API server's proxy are counted in the request rate but not limited by it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kube::api::{Api, DynamicObject, PostParams};
use kube_sim::{Gvr, ListOptions, SimHandle};
use ray_sim::{DASHBOARD_DELAY_ANNOTATION, HollowRay, HollowRayOptions};
use serde::Serialize;
use serde_json::{Value, json};

use crate::experiment;
use crate::operator::Operator;
use crate::run::{self, NAMESPACE};

/// How often progress is sampled.
const POLL: Duration = Duration::from_millis(100);
/// The experiment number the measured clusters are labelled with (outside KubeRay's 1-3 and scale's 9).
const ISOLATION_EXPERIMENT: u8 = 10;
/// The Ray job of every RayJob here: long enough that slow RayJobs stay Running for the whole phase.
const SLOW_ENTRYPOINT: &str = "sleep 86400";

/// What one isolation run does.
#[derive(Clone, Debug)]
pub struct IsolationOptions {
    /// RayClusters measured per phase.
    pub clusters: usize,
    /// RayJobs on healthy dashboards measured per phase.
    pub healthy_jobs: usize,
    /// RayJobs on slow dashboards in the loaded phase.
    pub slow_jobs: usize,
    /// How long a slow dashboard holds each request.
    pub dashboard_delay: Duration,
    /// How long the slow RayJobs run after all are Running before the settled phase's measurement (zero: no
    /// settled phase).
    pub settle: Duration,
    /// The operator's `--qps`.
    pub qps: f64,
    /// The operator's `--burst`.
    pub burst: i64,
    /// Longest wait for one phase.
    pub timeout: Duration,
    /// The operator binary.
    pub operator: PathBuf,
    /// Logs and kubeconfigs.
    pub work_dir: PathBuf,
}

/// Percentiles of one set of durations, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// Nearest-rank percentiles of `secs` (all zero when empty).
pub fn percentiles(secs: &[f64]) -> Percentiles {
    let mut sorted = secs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        let n = sorted.len();
        if n == 0 {
            return 0.0;
        }
        let index = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        sorted[index]
    };
    Percentiles {
        p50: rank(0.50),
        p99: rank(0.99),
        max: rank(1.0),
    }
}

/// One phase's measurements.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseResult {
    /// `quiet` or the slow load.
    pub label: String,
    /// RayCluster create-to-ready.
    pub cluster_ready: Percentiles,
    /// Healthy RayJob create-to-Complete.
    pub job_complete: Percentiles,
    /// Seconds the slow RayJobs took to all be Running before the measurement (loaded phases).
    pub slow_running_secs: Option<f64>,
    /// Seconds the slow RayJobs then ran before the measurement (settled phase).
    pub settled_secs: Option<f64>,
    /// API requests per second the simulator served over the second half of the settling, when the slow
    /// RayJobs were all it served (settled phase).
    pub settled_requests_per_sec: Option<f64>,
    /// API requests per second the simulator served from the first create until all were done.
    pub api_requests_per_sec: f64,
    /// Those requests by shape, most frequent first (the [`TOP_REQUEST_SHAPES`] largest).
    pub request_shapes: Vec<RequestShare>,
}

/// How many request shapes a phase reports.
const TOP_REQUEST_SHAPES: usize = 8;

/// The requests of one shape in a phase.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RequestShare {
    /// Verb and resource, as [`request_shape`] names them (`PATCH rayjobs/status`, `GET services/proxy`).
    pub shape: String,
    /// Requests of this shape.
    pub count: usize,
    /// Per second over the phase.
    pub per_sec: f64,
}

/// A request's verb and resource with the namespace and names left out: `LIST pods`, `WATCH rayjobs`,
/// `PATCH rayclusters/status`, `GET services/proxy`. Reading one object is `GET`, a collection `LIST`;
/// deleting a collection is `DELETECOLLECTION`.
pub fn request_shape(method: &str, path: &str, query: &str) -> String {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let rest = match segments.as_slice() {
        ["api", _, rest @ ..] | ["apis", _, _, rest @ ..] => rest,
        _ => return format!("{method} {path}"),
    };
    let rest = match rest {
        // A namespace's own subresources, not a resource inside it.
        ["namespaces", _, "status" | "finalize"] => rest,
        ["namespaces", _namespace, inner @ ..] if !inner.is_empty() => inner,
        other => other,
    };
    let Some(resource) = rest.first() else {
        return format!("{method} {path}");
    };
    let watch = query.split('&').any(|p| p == "watch=true" || p == "watch=1");
    let verb = match (method, rest.len()) {
        ("GET", _) if watch => "WATCH",
        ("GET", 1) => "LIST",
        ("DELETE", 1) => "DELETECOLLECTION",
        _ => method,
    };
    match rest.get(2) {
        Some(sub) => format!("{verb} {resource}/{sub}"),
        None => format!("{verb} {resource}"),
    }
}

/// The [`TOP_REQUEST_SHAPES`] most frequent shapes of `requests` (ties by name), rated over `secs`.
fn request_shares<'a>(requests: impl Iterator<Item = (&'a str, &'a str, &'a str)>, secs: f64) -> Vec<RequestShare> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (method, path, query) in requests {
        *counts.entry(request_shape(method, path, query)).or_default() += 1;
    }
    let mut shares: Vec<RequestShare> = counts
        .into_iter()
        .map(|(shape, count)| RequestShare {
            per_sec: count as f64 / secs.max(f64::EPSILON),
            shape,
            count,
        })
        .collect();
    shares.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.shape.cmp(&b.shape)));
    shares.truncate(TOP_REQUEST_SHAPES);
    shares
}

/// A whole isolation run.
#[derive(Clone, Debug, Serialize)]
pub struct IsolationResult {
    /// RayClusters measured per phase.
    pub clusters: usize,
    /// Healthy RayJobs measured per phase.
    pub healthy_jobs: usize,
    /// Slow RayJobs in the loaded phase.
    pub slow_jobs: usize,
    /// Their dashboards' delay, seconds.
    pub dashboard_delay_secs: f64,
    /// How long they ran after all were Running before the settled phase's measurement, seconds.
    pub settle_secs: f64,
    /// The operator's `--qps`.
    pub qps: f64,
    /// The operator's `--burst`.
    pub burst: i64,
    /// Without, then with the slow RayJobs.
    pub phases: Vec<PhaseResult>,
}

/// Runs the quiet phase, then the loaded one, then (unless `settle` is zero) the settled one.
pub async fn run(options: &IsolationOptions) -> anyhow::Result<IsolationResult> {
    eprintln!(
        "kuberay-bench isolation: {} RayClusters + {} RayJobs, without and with {} RayJobs on {:?} dashboards",
        options.clusters, options.healthy_jobs, options.slow_jobs, options.dashboard_delay
    );
    let mut phases = vec![
        phase(options, 0, Duration::ZERO).await?,
        phase(options, options.slow_jobs, Duration::ZERO).await?,
    ];
    if options.slow_jobs > 0 && !options.settle.is_zero() {
        phases.push(phase(options, options.slow_jobs, options.settle).await?);
    }
    Ok(IsolationResult {
        clusters: options.clusters,
        healthy_jobs: options.healthy_jobs,
        slow_jobs: options.slow_jobs,
        dashboard_delay_secs: options.dashboard_delay.as_secs_f64(),
        settle_secs: options.settle.as_secs_f64(),
        qps: options.qps,
        burst: options.burst,
        phases,
    })
}

/// A head-only RayJob named `name` running [`SLOW_ENTRYPOINT`] (or a quick job when `slow_ms` is `None`),
/// its dashboard holding requests `slow_ms` milliseconds.
fn rayjob(name: &str, slow_ms: Option<u128>) -> Value {
    let mut cluster = experiment::raycluster(name, NAMESPACE, ISOLATION_EXPERIMENT, 0);
    cluster["spec"]["workerGroupSpecs"] = json!([]);
    let annotations = match slow_ms {
        Some(ms) => json!({DASHBOARD_DELAY_ANNOTATION: ms.to_string()}),
        None => json!({}),
    };
    json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations},
        "spec": {
            "entrypoint": if slow_ms.is_some() { SLOW_ENTRYPOINT } else { "python ok.py" },
            "rayClusterSpec": cluster["spec"].clone(),
        },
    })
}

/// `field` of every object of `gvr`, by name, read from the simulator's store (no API traffic).
fn status_fields(sim: &SimHandle, gvr: &Gvr, field: &str) -> anyhow::Result<HashMap<String, String>> {
    let listed = sim
        .store()
        .list(gvr, Some(NAMESPACE), &ListOptions::default())
        .map_err(|e| anyhow::anyhow!("listing {}: {e}", gvr.resource))?;
    Ok(listed
        .items
        .iter()
        .map(|o| {
            let value = o.value()["status"][field].as_str().unwrap_or_default().to_owned();
            (o.name().to_owned(), value)
        })
        .collect())
}

async fn create(api: &Api<DynamicObject>, value: Value) -> anyhow::Result<()> {
    let object: DynamicObject = ray_reconcile::decode::decode_value(&value)?;
    api.create(&PostParams::default(), &object).await?;
    Ok(())
}

fn dynamic_api(sim: &SimHandle, kind: &str, plural: &str) -> Api<DynamicObject> {
    let resource = kube::api::ApiResource {
        group: "ray.io".into(),
        version: "v1".into(),
        api_version: "ray.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    Api::namespaced_with(sim.client(), NAMESPACE, &resource)
}

/// A status field value objects of one resource are waited for.
struct Goal {
    gvr: Gvr,
    field: &'static str,
    want: &'static str,
}

/// The RayJob goal `jobDeploymentStatus == want`.
fn deployment(want: &'static str) -> Goal {
    Goal {
        gvr: Gvr::new("ray.io", "v1", "rayjobs"),
        field: "jobDeploymentStatus",
        want,
    }
}

/// Polls until every name of `names` reached `goal`; the seconds since `started` at which each did.
async fn wait_each(
    sim: &SimHandle,
    operator: &mut Operator,
    goal: &Goal,
    names: &[String],
    started: Instant,
    timeout: Duration,
) -> anyhow::Result<Vec<f64>> {
    let Goal { gvr, field, want } = goal;
    let mut done: HashMap<String, f64> = HashMap::new();
    while done.len() < names.len() {
        operator.check_alive()?;
        let fields = status_fields(sim, gvr, field)?;
        let elapsed = started.elapsed().as_secs_f64();
        for name in names {
            if fields.get(name).map(String::as_str) == Some(*want) {
                done.entry(name.clone()).or_insert(elapsed);
            }
        }
        if started.elapsed() > timeout {
            bail!(
                "{} of {} {} reached {field} {want} within {timeout:?}",
                done.len(),
                names.len(),
                gvr.resource
            );
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(done.into_values().collect())
}

/// One phase: `slow_jobs` slow RayJobs (none: quiet) Running for `settle` before the measured objects are
/// created.
async fn phase(options: &IsolationOptions, slow_jobs: usize, settle: Duration) -> anyhow::Result<PhaseResult> {
    let label = match (slow_jobs, settle.is_zero()) {
        (0, _) => "quiet".to_owned(),
        (_, true) => format!(
            "{slow_jobs} RayJobs on {:?} dashboards, just Running",
            options.dashboard_delay
        ),
        (_, false) => format!(
            "{slow_jobs} RayJobs on {:?} dashboards, Running for {:?}",
            options.dashboard_delay, settle
        ),
    };
    let mut sim = kube_sim::SimServer::start(kube_sim::SimConfig {
        // Counted, not kept for long: the log is cleared before the measurement.
        request_log: true,
        ..kube_sim::SimConfig::default()
    })
    .await
    .map_err(|e| anyhow::anyhow!("starting kube-sim: {e}"))?;
    let ray = HollowRay::attach(&sim, HollowRayOptions::default());
    run::install_crds(&sim.client()).await?;
    let kubeconfig = options
        .work_dir
        .join(format!("kubeconfig-isolation-{slow_jobs}-{}s", settle.as_secs()));
    sim.write_kubeconfig(&kubeconfig)
        .with_context(|| format!("writing {}", kubeconfig.display()))?;
    let mut operator = Operator::spawn(
        &options.operator,
        &kubeconfig,
        &options.work_dir,
        &format!("isolation-{slow_jobs}-{}s", settle.as_secs()),
        &[
            "--use-kubernetes-proxy".to_owned(),
            "--qps".to_owned(),
            options.qps.to_string(),
            "--burst".to_owned(),
            options.burst.to_string(),
        ],
    )?;
    operator.wait_ready(Duration::from_secs(60)).await?;
    let (rayjobs, rayclusters) = (
        dynamic_api(&sim, "RayJob", "rayjobs"),
        dynamic_api(&sim, "RayCluster", "rayclusters"),
    );

    let slow: Vec<String> = (0..slow_jobs).map(|i| format!("slow-{i:03}")).collect();
    let slow_started = Instant::now();
    for name in &slow {
        create(&rayjobs, rayjob(name, Some(options.dashboard_delay.as_millis()))).await?;
    }
    let slow_running_secs = if slow.is_empty() {
        None
    } else {
        let each = wait_each(
            &sim,
            &mut operator,
            &deployment("Running"),
            &slow,
            slow_started,
            options.timeout,
        )
        .await?;
        Some(each.into_iter().fold(0.0, f64::max))
    };
    let settled_requests_per_sec = if settle.is_zero() {
        None
    } else {
        // The second half: by default two whole job-info cycles (3 s requeue + 5 s dashboard), so that each
        // slow RayJob is counted as often as its cycle makes it ask, whatever its phase in the cycle.
        let window = settle / 2;
        tokio::time::sleep(settle - window).await;
        sim.clear_request_log();
        tokio::time::sleep(window).await;
        Some(sim.request_log().len() as f64 / window.as_secs_f64())
    };

    let clusters: Vec<String> = (0..options.clusters).map(|i| format!("measured-{i:03}")).collect();
    let jobs: Vec<String> = (0..options.healthy_jobs).map(|i| format!("healthy-{i:03}")).collect();
    sim.clear_request_log();
    let started = Instant::now();
    for name in &clusters {
        create(
            &rayclusters,
            experiment::raycluster(name, NAMESPACE, ISOLATION_EXPERIMENT, 1),
        )
        .await?;
    }
    for name in &jobs {
        create(&rayjobs, rayjob(name, None)).await?;
    }
    let cluster_ready = wait_each(
        &sim,
        &mut operator,
        &Goal {
            gvr: Gvr::new("ray.io", "v1", "rayclusters"),
            field: "state",
            want: "ready",
        },
        &clusters,
        started,
        options.timeout,
    )
    .await?;
    let job_complete = wait_each(
        &sim,
        &mut operator,
        &deployment("Complete"),
        &jobs,
        started,
        options.timeout,
    )
    .await?;
    let elapsed = started.elapsed().as_secs_f64();
    let log = sim.request_log();
    let result = PhaseResult {
        label,
        cluster_ready: percentiles(&cluster_ready),
        job_complete: percentiles(&job_complete),
        slow_running_secs,
        settled_secs: (!settle.is_zero()).then_some(settle.as_secs_f64()),
        settled_requests_per_sec,
        api_requests_per_sec: log.len() as f64 / elapsed,
        request_shapes: request_shares(
            log.iter()
                .map(|r| (r.method.as_str(), r.path.as_str(), r.query.as_str())),
            elapsed,
        ),
    };
    if let Some(rate) = result.settled_requests_per_sec {
        eprintln!("{}: the slow RayJobs alone: {rate:.1} API requests/s", result.label);
    }
    eprintln!(
        "{}: RayCluster ready p50 {:.2} s p99 {:.2} s; RayJob Complete p50 {:.2} s p99 {:.2} s; {:.0} API requests/s",
        result.label,
        result.cluster_ready.p50,
        result.cluster_ready.p99,
        result.job_complete.p50,
        result.job_complete.p99,
        result.api_requests_per_sec
    );
    operator.stop().await;
    ray.detach(&sim);
    sim.shutdown();
    Ok(result)
}

/// The Markdown table of a run.
pub fn markdown(result: &IsolationResult) -> String {
    let mut out = format!(
        "## Isolation: {} RayClusters + {} RayJobs, without and with {} RayJobs on {:.0} s dashboards (reconcile concurrency 1, {})\n\n\
         | phase | RayCluster ready p50 (s) | p99 (s) | RayJob Complete p50 (s) | p99 (s) | slow RayJobs all Running (s) | their requests/s before | API requests/s |\n\
         |---|---|---|---|---|---|---|---|\n",
        result.clusters,
        result.healthy_jobs,
        result.slow_jobs,
        result.dashboard_delay_secs,
        client_rate(result.qps, result.burst)
    );
    for phase in &result.phases {
        out.push_str(&format!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {:.0} |\n",
            phase.label,
            phase.cluster_ready.p50,
            phase.cluster_ready.p99,
            phase.job_complete.p50,
            phase.job_complete.p99,
            phase.slow_running_secs.map_or("-".to_owned(), |s| format!("{s:.1}")),
            phase
                .settled_requests_per_sec
                .map_or("-".to_owned(), |r| format!("{r:.1}")),
            phase.api_requests_per_sec,
        ));
    }
    for phase in &result.phases {
        out.push_str(&format!(
            "\n### API requests by shape, {}\n\n| request | count | per second |\n|---|---|---|\n",
            phase.label
        ));
        for share in &phase.request_shapes {
            out.push_str(&format!(
                "| {} | {} | {:.1} |\n",
                share.shape, share.count, share.per_sec
            ));
        }
    }
    out
}

/// The client rate limit as the table names it.
fn client_rate(qps: f64, burst: i64) -> String {
    if qps < 0.0 {
        "unlimited client rate".to_owned()
    } else {
        format!("client rate {qps} / burst {burst}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase_result(label: &str, slow_running: Option<f64>, settled: Option<(f64, f64)>) -> PhaseResult {
        PhaseResult {
            label: label.to_owned(),
            cluster_ready: Percentiles {
                p50: 0.5,
                p99: 1.0,
                max: 1.0,
            },
            job_complete: Percentiles {
                p50: 4.0,
                p99: 5.0,
                max: 5.0,
            },
            slow_running_secs: slow_running,
            settled_secs: settled.map(|(secs, _)| secs),
            settled_requests_per_sec: settled.map(|(_, rate)| rate),
            api_requests_per_sec: 80.0,
            request_shapes: Vec::new(),
        }
    }

    #[test]
    fn the_table_gives_the_slow_rayjobs_own_rate_only_for_the_settled_phase() {
        let result = IsolationResult {
            clusters: 20,
            healthy_jobs: 10,
            slow_jobs: 100,
            dashboard_delay_secs: 5.0,
            settle_secs: 20.0,
            qps: 100.0,
            burst: 200,
            phases: vec![
                phase_result("quiet", None, None),
                phase_result("loaded", Some(15.0), None),
                phase_result("settled", Some(16.0), Some((32.0, 12.4))),
            ],
        };
        let table = markdown(&result);
        assert!(
            table.contains("| quiet | 0.50 | 1.00 | 4.00 | 5.00 | - | - | 80 |"),
            "{table}"
        );
        assert!(
            table.contains("| loaded | 0.50 | 1.00 | 4.00 | 5.00 | 15.0 | - | 80 |"),
            "{table}"
        );
        assert!(
            table.contains("| settled | 0.50 | 1.00 | 4.00 | 5.00 | 16.0 | 12.4 | 80 |"),
            "{table}"
        );
    }

    #[test]
    fn nearest_rank_percentiles() {
        let secs: Vec<f64> = (1..=100).map(f64::from).collect();
        let p = percentiles(&secs);
        assert_eq!((p.p50, p.p99, p.max), (50.0, 99.0, 100.0));
        assert_eq!(percentiles(&[]), Percentiles::default());
        assert_eq!(percentiles(&[3.0, 1.0]).p50, 1.0);
    }

    #[test]
    fn request_shapes_drop_namespaces_and_names() {
        let cases = [
            ("GET", "/api/v1/namespaces/default/pods", "", "LIST pods"),
            ("GET", "/api/v1/pods", "watch=true&resourceVersion=1", "WATCH pods"),
            ("GET", "/api/v1/namespaces/default/pods/p-1", "", "GET pods"),
            ("POST", "/api/v1/namespaces/default/pods", "", "POST pods"),
            (
                "PATCH",
                "/apis/ray.io/v1/namespaces/ns/rayclusters/c/status",
                "",
                "PATCH rayclusters/status",
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/services/c-head-svc:8265/proxy/api/jobs/raysubmit_1",
                "",
                "GET services/proxy",
            ),
            ("GET", "/api/v1/namespaces/ns", "", "GET namespaces"),
            ("PUT", "/api/v1/namespaces/ns/finalize", "", "PUT namespaces/finalize"),
            (
                "DELETE",
                "/api/v1/namespaces/ns/pods",
                "labelSelector=a",
                "DELETECOLLECTION pods",
            ),
            ("DELETE", "/api/v1/namespaces/ns/pods/p", "", "DELETE pods"),
            ("GET", "/apis/batch/v1/jobs", "watch=1", "WATCH jobs"),
            ("GET", "/version", "", "GET /version"),
        ];
        for (method, path, query, want) in cases {
            assert_eq!(request_shape(method, path, query), want, "{method} {path}?{query}");
        }
    }

    #[test]
    fn request_shares_rank_by_count_and_rate_over_the_phase() {
        let log = [
            ("GET", "/api/v1/namespaces/a/pods/x", ""),
            ("GET", "/api/v1/namespaces/b/pods/y", ""),
            ("POST", "/api/v1/namespaces/a/pods", ""),
        ];
        let shares: Vec<(String, usize, f64)> = request_shares(log.into_iter(), 2.0)
            .into_iter()
            .map(|s| (s.shape, s.count, s.per_sec))
            .collect();
        assert_eq!(shares, vec![("GET pods".into(), 2, 1.0), ("POST pods".into(), 1, 0.5)]);
    }

    #[test]
    fn slow_rayjobs_carry_the_delay_annotation() {
        let slow: ray_api::RayJob = serde_json::from_value(rayjob("slow-000", Some(5000))).unwrap();
        assert_eq!(slow.metadata.annotations.unwrap()[DASHBOARD_DELAY_ANNOTATION], "5000");
        assert_eq!(slow.spec.entrypoint.as_deref(), Some(SLOW_ENTRYPOINT));
        let healthy: ray_api::RayJob = serde_json::from_value(rayjob("healthy-000", None)).unwrap();
        assert!(healthy.metadata.annotations.unwrap_or_default().is_empty());
    }
}
