//! The operator's command-line flags, parsed the way Go's `flag` package parses KubeRay's
//! (`-name`, `--name`, `-name=value`, `--name value`; booleans take a value only with `=`), so the
//! arguments KubeRay's Helm chart passes work unchanged.

use std::fmt;

use kube_compat::go_strconv;

/// Every flag the operator accepts, with KubeRay's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Flags {
    /// `--metrics-addr`: where `/metrics` is served.
    pub metrics_addr: String,
    /// `--health-probe-bind-address`: where `/healthz` and `/readyz` are served.
    pub probe_addr: String,
    /// `--enable-leader-election`.
    pub enable_leader_election: bool,
    /// `--leader-election-namespace` (empty: the pod's namespace).
    pub leader_election_namespace: String,
    /// `--reconcile-concurrency`.
    pub reconcile_concurrency: i64,
    /// `--watch-namespace`: comma-separated namespaces, empty = all.
    pub watch_namespace: String,
    /// `--forced-cluster-upgrade` (deprecated, no effect).
    pub forced_cluster_upgrade: bool,
    /// `--log-file-path`.
    pub log_file_path: String,
    /// `--log-file-encoder`.
    pub log_file_encoder: String,
    /// `--log-stdout-encoder`.
    pub log_stdout_encoder: String,
    /// `--enable-batch-scheduler` (deprecated alias of `--batch-scheduler=volcano`).
    pub enable_batch_scheduler: bool,
    /// `--batch-scheduler`.
    pub batch_scheduler: String,
    /// `--config`: path of a `config.ray.io/v1alpha1` `Configuration`.
    pub config: String,
    /// `--use-kubernetes-proxy`.
    pub use_kubernetes_proxy: bool,
    /// `--feature-gates`: `Name=bool,...`.
    pub feature_gates: String,
    /// `--enable-metrics`: the `kuberay_*` custom-resource metrics.
    pub enable_metrics: bool,
    /// `--qps`: client-side request rate (0 = client-go's default 5, negative = unlimited).
    pub qps: f64,
    /// `--burst`: client-side burst.
    pub burst: i64,
    /// `--zap-log-level` (`debug`, `info`, `error` or a number).
    pub zap_log_level: String,
    /// `--zap-devel`.
    pub zap_devel: bool,
    /// `--zap-encoder` (overridden by `--log-stdout-encoder`, as in KubeRay).
    pub zap_encoder: String,
    /// `--zap-stacktrace-level` (accepted, no effect).
    pub zap_stacktrace_level: String,
    /// `--zap-time-encoding` (accepted, no effect).
    pub zap_time_encoding: String,
    /// `--webhook-port`: port of the validating webhook server (with `ENABLE_WEBHOOKS=true`); KubeRay has no
    /// flag and uses controller-runtime's 9443.
    pub webhook_port: i64,
    /// `--webhook-cert-dir`: directory with the webhook server's `tls.crt` and `tls.key`; KubeRay has no
    /// flag and uses controller-runtime's `/tmp/k8s-webhook-server/serving-certs`.
    pub webhook_cert_dir: String,
    /// `--max-unscheduled-worker-pods`: stop creating a RayCluster's workers while this many of them wait
    /// for a node (0: no limit, as KubeRay; ignored with a batch scheduler); not a KubeRay flag.
    pub max_unscheduled_worker_pods: i64,
    /// `--runtime-worker-threads`: tokio worker threads; 0 runs every task on the main thread (a
    /// current-thread runtime); not a KubeRay flag.
    pub runtime_worker_threads: i64,
    /// `--release-startup-code`: unmap the executable's startup-only code pages once the operator settled
    /// (`crate::code_pages`); not a KubeRay flag.
    pub release_startup_code: bool,
    /// `--max-requests-in-flight`: most API requests the operator has in flight at once (0: no limit);
    /// not a KubeRay flag.
    pub max_requests_in_flight: i64,
}

/// Default of `--max-requests-in-flight`. Each request in flight beyond the connections already open opens
/// one more, which the client keeps with its buffers. 32 is one reconcile's window of pod creates, and twice
/// the 16 concurrent creators that keep kuberay-bench's simulated API server busy (docs/benchmarks.md,
/// "Operator scale").
pub const DEFAULT_MAX_REQUESTS_IN_FLIGHT: i64 = 32;

/// Default of `--runtime-worker-threads`: one thread. The operator waits on the API server far more than it
/// computes, and every worker thread adds a stack and a glibc malloc arena to its resident memory
/// (docs/benchmarks.md); reconciles still run concurrently, as async tasks.
pub const DEFAULT_RUNTIME_WORKER_THREADS: i64 = 0;

impl Default for Flags {
    fn default() -> Self {
        Self {
            metrics_addr: ":8080".into(),
            probe_addr: ":8082".into(),
            enable_leader_election: true,
            leader_election_namespace: String::new(),
            reconcile_concurrency: 1,
            watch_namespace: String::new(),
            forced_cluster_upgrade: false,
            log_file_path: String::new(),
            log_file_encoder: "json".into(),
            log_stdout_encoder: "json".into(),
            enable_batch_scheduler: false,
            batch_scheduler: String::new(),
            config: String::new(),
            use_kubernetes_proxy: false,
            feature_gates: String::new(),
            enable_metrics: false,
            qps: 100.0,
            burst: 200,
            zap_log_level: String::new(),
            zap_devel: false,
            zap_encoder: String::new(),
            zap_stacktrace_level: String::new(),
            zap_time_encoding: String::new(),
            webhook_port: i64::from(ray_api::constants::DEFAULT_WEBHOOK_PORT),
            webhook_cert_dir: ray_api::constants::DEFAULT_WEBHOOK_CERT_DIR.into(),
            max_unscheduled_worker_pods: i64::try_from(ray_reconcile::config::DEFAULT_MAX_UNSCHEDULED_WORKERS)
                .unwrap_or(i64::MAX),
            runtime_worker_threads: DEFAULT_RUNTIME_WORKER_THREADS,
            release_startup_code: true,
            max_requests_in_flight: DEFAULT_MAX_REQUESTS_IN_FLIGHT,
        }
    }
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed {
    /// Run the operator with these flags.
    Run(Box<Flags>),
    /// `-h` / `-help` / `--help`: print [`usage`] and exit 0.
    Help,
}

/// A command line Go's `flag` package would reject, with its wording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlagError {
    /// A flag that is not defined.
    Unknown(String),
    /// A non-boolean flag without a value.
    MissingValue(String),
    /// A value that does not parse as the flag's type.
    InvalidValue {
        /// The flag name.
        flag: String,
        /// The rejected value.
        value: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A positional argument (KubeRay's operator takes none).
    UnexpectedArgument(String),
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown(name) => write!(f, "flag provided but not defined: -{name}"),
            Self::MissingValue(name) => write!(f, "flag needs an argument: -{name}"),
            Self::InvalidValue { flag, value, reason } => {
                write!(f, "invalid value {value:?} for flag -{flag}: {reason}")
            }
            Self::UnexpectedArgument(arg) => write!(f, "unexpected argument {arg:?}: the operator takes only flags"),
        }
    }
}

impl std::error::Error for FlagError {}

/// Most `--runtime-worker-threads` accepted (a typo's guard, not a tuning limit).
const MAX_RUNTIME_WORKER_THREADS: i64 = 1024;

/// The kind of value a flag takes.
#[derive(Clone, Copy)]
enum Kind {
    Bool,
    Int,
    Float,
    Str,
}

/// Flag table: name, kind, help text.
const FLAGS: &[(&str, Kind, &str)] = &[
    ("metrics-addr", Kind::Str, "The address the metric endpoint binds to."),
    (
        "health-probe-bind-address",
        Kind::Str,
        "The address the probe endpoint binds to.",
    ),
    (
        "enable-leader-election",
        Kind::Bool,
        "Enable leader election for controller manager (Lease ray-operator-leader).",
    ),
    (
        "leader-election-namespace",
        Kind::Str,
        "Namespace of the leader election Lease (default: the pod's namespace).",
    ),
    (
        "reconcile-concurrency",
        Kind::Int,
        "Max concurrency of reconciles per controller.",
    ),
    (
        "watch-namespace",
        Kind::Str,
        "Comma-separated namespaces to watch; empty watches all namespaces.",
    ),
    ("forced-cluster-upgrade", Kind::Bool, "Deprecated; has no effect."),
    ("log-file-path", Kind::Str, "Also write JSON/console logs to this file."),
    (
        "log-file-encoder",
        Kind::Str,
        "Encoder of the log file: json or console.",
    ),
    (
        "log-stdout-encoder",
        Kind::Str,
        "Encoder of stdout logs: json or console.",
    ),
    (
        "enable-batch-scheduler",
        Kind::Bool,
        "Deprecated: use --batch-scheduler=volcano.",
    ),
    (
        "batch-scheduler",
        Kind::Str,
        "Batch scheduler: volcano, yunikorn, scheduler-plugins or kai-scheduler.",
    ),
    (
        "config",
        Kind::Str,
        "Path to a config.ray.io/v1alpha1 Configuration file; when set the flags above are ignored.",
    ),
    (
        "use-kubernetes-proxy",
        Kind::Bool,
        "Reach Ray dashboards through the Kubernetes API server proxy.",
    ),
    ("feature-gates", Kind::Str, "Comma-separated Name=bool feature gates."),
    (
        "enable-metrics",
        Kind::Bool,
        "Emit the kuberay_* custom resource metrics.",
    ),
    (
        "qps",
        Kind::Float,
        "Client-side QPS towards the API server (negative = unlimited).",
    ),
    ("burst", Kind::Int, "Client-side burst towards the API server."),
    (
        "zap-log-level",
        Kind::Str,
        "Log level: debug, info, error or an integer.",
    ),
    (
        "zap-devel",
        Kind::Bool,
        "Development logging (console encoder, debug level).",
    ),
    ("zap-encoder", Kind::Str, "Log encoder: json or console."),
    (
        "zap-stacktrace-level",
        Kind::Str,
        "Accepted for compatibility; no effect.",
    ),
    ("zap-time-encoding", Kind::Str, "Accepted for compatibility; no effect."),
    (
        "webhook-port",
        Kind::Int,
        "Port of the validating webhook server (ENABLE_WEBHOOKS=true); not a KubeRay flag.",
    ),
    (
        "webhook-cert-dir",
        Kind::Str,
        "Directory with the webhook server's tls.crt and tls.key; not a KubeRay flag.",
    ),
    (
        "max-unscheduled-worker-pods",
        Kind::Int,
        "Stop creating a RayCluster's worker Pods while this many wait for a node (0: no limit; ignored with a \
         batch scheduler); not a KubeRay flag.",
    ),
    (
        "runtime-worker-threads",
        Kind::Int,
        "Async runtime worker threads (0: run everything on the main thread); not a KubeRay flag.",
    ),
    (
        "max-requests-in-flight",
        Kind::Int,
        "Most API server requests in flight at once, each holding a connection (0: no limit); not a KubeRay \
         flag.",
    ),
    (
        "release-startup-code",
        Kind::Bool,
        "Unmap the code only startup ran, 3 s after the operator is ready (default true); not a KubeRay flag.",
    ),
];

/// The usage text printed for `-h`.
pub fn usage() -> String {
    let mut text = String::from("Usage of kuberay-operator:\n");
    for (name, kind, help) in FLAGS {
        let arg = match kind {
            Kind::Bool => "",
            Kind::Int => " int",
            Kind::Float => " float",
            Kind::Str => " string",
        };
        text.push_str(&format!("  --{name}{arg}\n    \t{help}\n"));
    }
    text.push_str("Subcommands: `kuberay-operator crd`, `kuberay-operator render ...`.\n");
    text
}

/// Parse the arguments after the program name.
pub fn parse<I, S>(args: I) -> Result<Parsed, FlagError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let args: Vec<String> = args.into_iter().map(|s| s.as_ref().to_owned()).collect();
    let mut flags = Flags::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            if let Some(rest) = args.get(i) {
                return Err(FlagError::UnexpectedArgument(rest.clone()));
            }
            break;
        }
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            return Err(FlagError::UnexpectedArgument(arg.clone()));
        };
        if body.is_empty() || body.starts_with('-') || body.starts_with('=') {
            return Err(FlagError::InvalidValue {
                flag: body.into(),
                value: arg.clone(),
                reason: "bad flag syntax",
            });
        }
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (body, None),
        };
        if name == "h" || name == "help" {
            return Ok(Parsed::Help);
        }
        let Some((_, kind, _)) = FLAGS.iter().find(|(n, _, _)| *n == name) else {
            return Err(FlagError::Unknown(name.into()));
        };
        let value = match (kind, inline) {
            (_, Some(v)) => v,
            (Kind::Bool, None) => "true".into(),
            (_, None) => match args.get(i) {
                Some(v) => {
                    i += 1;
                    v.clone()
                }
                None => return Err(FlagError::MissingValue(name.into())),
            },
        };
        set(&mut flags, name, *kind, &value)?;
    }
    Ok(Parsed::Run(Box::new(flags)))
}

fn set(flags: &mut Flags, name: &str, kind: Kind, value: &str) -> Result<(), FlagError> {
    let invalid = |reason| FlagError::InvalidValue {
        flag: name.into(),
        value: value.into(),
        reason,
    };
    match kind {
        Kind::Bool => {
            let v = go_strconv::parse_bool(value).map_err(|_| invalid("parse error"))?;
            match name {
                "enable-leader-election" => flags.enable_leader_election = v,
                "forced-cluster-upgrade" => flags.forced_cluster_upgrade = v,
                "enable-batch-scheduler" => flags.enable_batch_scheduler = v,
                "use-kubernetes-proxy" => flags.use_kubernetes_proxy = v,
                "enable-metrics" => flags.enable_metrics = v,
                "release-startup-code" => flags.release_startup_code = v,
                _ => flags.zap_devel = v,
            }
        }
        Kind::Int => {
            let v = go_strconv::parse_int(value).map_err(|_| invalid("parse error"))?;
            match name {
                "reconcile-concurrency" => flags.reconcile_concurrency = v,
                "max-unscheduled-worker-pods" => {
                    if v < 0 {
                        return Err(invalid("must not be negative"));
                    }
                    flags.max_unscheduled_worker_pods = v;
                }
                "runtime-worker-threads" => {
                    if !(0..=MAX_RUNTIME_WORKER_THREADS).contains(&v) {
                        return Err(invalid("must be between 0 and 1024"));
                    }
                    flags.runtime_worker_threads = v;
                }
                "max-requests-in-flight" => {
                    if v < 0 {
                        return Err(invalid("must not be negative"));
                    }
                    flags.max_requests_in_flight = v;
                }
                "webhook-port" => {
                    if !(1..=i64::from(u16::MAX)).contains(&v) {
                        return Err(invalid("port out of range"));
                    }
                    flags.webhook_port = v;
                }
                _ => flags.burst = v,
            }
        }
        Kind::Float => {
            flags.qps = go_strconv::parse_float(value).map_err(|_| invalid("parse error"))?;
        }
        Kind::Str => {
            let v = value.to_owned();
            match name {
                "metrics-addr" => flags.metrics_addr = v,
                "health-probe-bind-address" => flags.probe_addr = v,
                "leader-election-namespace" => flags.leader_election_namespace = v,
                "watch-namespace" => flags.watch_namespace = v,
                "log-file-path" => flags.log_file_path = v,
                "log-file-encoder" => flags.log_file_encoder = v,
                "log-stdout-encoder" => flags.log_stdout_encoder = v,
                "batch-scheduler" => flags.batch_scheduler = v,
                "config" => flags.config = v,
                "feature-gates" => flags.feature_gates = v,
                "zap-log-level" => flags.zap_log_level = v,
                "zap-encoder" => flags.zap_encoder = v,
                "zap-stacktrace-level" => flags.zap_stacktrace_level = v,
                "webhook-cert-dir" => flags.webhook_cert_dir = v,
                _ => flags.zap_time_encoding = v,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Flags {
        match parse(args).unwrap() {
            Parsed::Run(f) => *f,
            Parsed::Help => panic!("help"),
        }
    }

    #[test]
    fn defaults_match_kuberay() {
        let f = run(&[]);
        assert_eq!(f.metrics_addr, ":8080");
        assert_eq!(f.probe_addr, ":8082");
        assert!(f.enable_leader_election);
        assert_eq!(f.reconcile_concurrency, 1);
        assert_eq!(f.qps, 100.0);
        assert_eq!(f.burst, 200);
        assert_eq!(f.log_stdout_encoder, "json");
        assert!(!f.enable_metrics);
    }

    #[test]
    fn go_forms_are_accepted() {
        let f = run(&[
            "--enable-leader-election=false",
            "--qps=50",
            "--enable-metrics",
            "-burst",
            "7",
            "-reconcile-concurrency=0x10",
            "--watch-namespace",
            "a,b",
            "-feature-gates=RayClusterStatusConditions=true",
        ]);
        assert!(!f.enable_leader_election);
        assert_eq!(f.qps, 50.0);
        assert!(f.enable_metrics);
        assert_eq!(f.burst, 7);
        assert_eq!(f.reconcile_concurrency, 16);
        assert_eq!(f.watch_namespace, "a,b");
        assert_eq!(f.feature_gates, "RayClusterStatusConditions=true");
    }

    #[test]
    fn release_startup_code_is_on_unless_turned_off() {
        assert!(run(&[]).release_startup_code);
        assert!(!run(&["--release-startup-code=false"]).release_startup_code);
        assert!(run(&["-release-startup-code"]).release_startup_code);
    }

    #[test]
    fn max_requests_in_flight_defaults_to_32_and_is_not_negative() {
        assert_eq!(run(&[]).max_requests_in_flight, 32);
        assert_eq!(run(&["--max-requests-in-flight=0"]).max_requests_in_flight, 0);
        assert_eq!(run(&["-max-requests-in-flight", "64"]).max_requests_in_flight, 64);
        assert_eq!(
            parse(["--max-requests-in-flight=-1"]).unwrap_err().to_string(),
            "invalid value \"-1\" for flag -max-requests-in-flight: must not be negative"
        );
    }

    #[test]
    fn runtime_worker_threads_are_bounded() {
        assert_eq!(run(&[]).runtime_worker_threads, DEFAULT_RUNTIME_WORKER_THREADS);
        assert_eq!(run(&["--runtime-worker-threads=2"]).runtime_worker_threads, 2);
        assert_eq!(run(&["--runtime-worker-threads", "0"]).runtime_worker_threads, 0);
        for bad in ["-1", "1025"] {
            let parsed = parse([format!("--runtime-worker-threads={bad}")]);
            assert!(
                matches!(parsed, Err(FlagError::InvalidValue { .. })),
                "{bad}: {parsed:?}"
            );
        }
    }

    #[test]
    fn helm_chart_arguments_parse() {
        let f = run(&[
            "--feature-gates=RayClusterStatusConditions=true,RayJobDeletionPolicy=true",
            "--enable-metrics=true",
            "--enable-leader-election=true",
            "--reconcile-concurrency=1",
            "--qps=100.0",
            "--burst=200",
            "--log-stdout-encoder=json",
            "--log-file-encoder=json",
        ]);
        assert_eq!(f.qps, 100.0);
        assert!(f.enable_metrics);
    }

    #[test]
    fn bool_values_follow_strconv_parse_bool() {
        assert!(!run(&["--enable-metrics=F"]).enable_metrics);
        assert!(run(&["--enable-metrics=1"]).enable_metrics);
        let err = parse(["--enable-metrics=yes"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value \"yes\" for flag -enable-metrics: parse error"
        );
    }

    #[test]
    fn bad_values_and_unknown_flags_are_errors() {
        assert_eq!(
            parse(["--qps=fast"]).unwrap_err().to_string(),
            "invalid value \"fast\" for flag -qps: parse error"
        );
        assert_eq!(parse(["--nope"]).unwrap_err(), FlagError::Unknown("nope".into()));
        assert_eq!(parse(["--burst"]).unwrap_err(), FlagError::MissingValue("burst".into()));
        assert!(matches!(
            parse(["stray"]).unwrap_err(),
            FlagError::UnexpectedArgument(_)
        ));
        assert!(parse(["--burst=1_0"]).is_err());
        assert_eq!(run(&["--burst=0x1_0"]).burst, 16);
        assert_eq!(run(&["--burst=010"]).burst, 8);
    }

    #[test]
    fn webhook_flags_default_to_controller_runtime_and_check_the_port() {
        let f = run(&[]);
        assert_eq!(f.webhook_port, 9443);
        assert_eq!(f.webhook_cert_dir, "/tmp/k8s-webhook-server/serving-certs");
        let f = run(&["--webhook-port=10250", "--webhook-cert-dir", "/certs"]);
        assert_eq!(f.webhook_port, 10250);
        assert_eq!(f.webhook_cert_dir, "/certs");
        assert_eq!(
            parse(["--webhook-port=70000"]).unwrap_err().to_string(),
            "invalid value \"70000\" for flag -webhook-port: port out of range"
        );
        assert!(parse(["--webhook-port=0"]).is_err());
    }

    #[test]
    fn help_is_recognised() {
        assert_eq!(parse(["-h"]).unwrap(), Parsed::Help);
        assert_eq!(parse(["--help"]).unwrap(), Parsed::Help);
        assert!(usage().contains("--enable-leader-election"));
    }
}
