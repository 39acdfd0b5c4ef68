//! The command line: kubectl's connection flags, then one subcommand per KubeRay plugin command, with
//! KubeRay's flag names, short forms and defaults. Argument counts are checked by the commands themselves,
//! so that their messages are KubeRay's. Quantity flags take a value that starts with `-` as pflag does, so
//! `--head-memory -1Gi` is reported as negative rather than as an unknown flag.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

/// KubeRay's default Ray version for generated clusters.
pub const DEFAULT_RAY_VERSION: &str = "2.52.0";
/// The repository of KubeRay's default Ray image (`<repo>:<ray version>`).
pub const RAY_IMAGE_REPOSITORY: &str = "rayproject/ray";
/// KubeRay's default Ray image for generated clusters.
pub const DEFAULT_RAY_IMAGE: &str = "rayproject/ray:2.52.0";
/// The generated head's CPUs when neither a flag nor the config file says otherwise.
pub const DEFAULT_HEAD_CPU: &str = "2";
/// The generated head's memory when neither a flag nor the config file says otherwise.
pub const DEFAULT_HEAD_MEMORY: &str = "4Gi";
/// Each generated worker's CPUs.
pub const DEFAULT_WORKER_CPU: &str = "2";
/// Each generated worker's memory.
pub const DEFAULT_WORKER_MEMORY: &str = "4Gi";
/// The generated worker group's replicas.
pub const DEFAULT_WORKER_REPLICAS: i32 = 1;

/// `kubectl ray`: the whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl ray",
    bin_name = "kubectl ray",
    about = "kubectl plugin for Ray clusters, jobs and services managed by KubeRay",
    disable_version_flag = true
)]
pub struct Cli {
    /// kubectl's connection flags.
    #[command(flatten)]
    pub kube: KubeFlags,
    /// The command; none prints help.
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// Parses the process arguments; for `create cluster` also records which flags were given (pflag's
    /// "changed" flags), which `--file` must not be combined with.
    pub fn parse_args() -> Result<Cli, clap::Error> {
        let command = Cli::command();
        let matches = command.clone().try_get_matches()?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        if let Some(Command::Create(create)) = &mut cli.command
            && let Some(CreateCommand::Cluster(args)) = &mut create.command
            && let Some(cluster) = command
                .find_subcommand("create")
                .and_then(|c| c.find_subcommand("cluster"))
            && let Some(given) = matches
                .subcommand_matches("create")
                .and_then(|m| m.subcommand_matches("cluster"))
        {
            args.flags_given = flags_given(given, command.get_arguments().chain(cluster.get_arguments()));
        }
        Ok(cli)
    }
}

/// The sorted long names of the flags among `arguments` that `matches` took from the command line.
fn flags_given<'a>(matches: &ArgMatches, arguments: impl Iterator<Item = &'a Arg>) -> Vec<String> {
    let long_names: BTreeMap<&str, &str> = arguments
        .filter_map(|arg| arg.get_long().map(|long| (arg.get_id().as_str(), long)))
        .collect();
    let mut given: Vec<String> = matches
        .ids()
        .filter_map(|id| long_names.get(id.as_str()).map(|long| (id, *long)))
        .filter(|(id, _)| matches.value_source(id.as_str()) == Some(ValueSource::CommandLine))
        .map(|(_, long)| long.to_string())
        .collect();
    given.sort();
    given.dedup();
    given
}

/// The kubectl flags that choose the kubeconfig, context, cluster, user and namespace.
#[derive(Debug, Clone, Default, Args)]
pub struct KubeFlags {
    /// Path to the kubeconfig file to use for CLI requests.
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The name of the kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// The name of the kubeconfig cluster to use.
    #[arg(long = "cluster", global = true, value_name = "CLUSTER")]
    pub kube_cluster: Option<String>,
    /// The name of the kubeconfig user to use.
    #[arg(long, global = true)]
    pub user: Option<String>,
    /// If present, the namespace scope for this CLI request.
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
}

/// The plugin's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Display one or many Ray resources.
    #[command(visible_alias = "list")]
    Get(GetArgs),
    /// Create Ray resources.
    Create(CreateArgs),
    /// Delete Ray resources.
    Delete(DeleteArgs),
    /// Scale a Ray resource.
    Scale(ScaleArgs),
    /// Ray job commands.
    Job(JobArgs),
    /// Forward local ports to the Ray resources.
    Session(SessionArgs),
    /// Get Ray cluster logs.
    #[command(visible_alias = "logs")]
    Log(LogArgs),
    /// Print the plugin and KubeRay operator versions.
    Version,
}

/// `get`: a resource kind, or help.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct GetArgs {
    /// What to get.
    #[command(subcommand)]
    pub command: Option<GetCommand>,
    /// Words that name no resource kind.
    pub stray: Vec<String>,
}

/// The kinds `get` shows.
#[derive(Debug, Subcommand)]
pub enum GetCommand {
    /// Get Ray clusters.
    #[command(visible_alias = "clusters")]
    Cluster(GetClusterArgs),
    /// Get Ray worker groups.
    #[command(visible_alias = "workergroups")]
    Workergroup(GetGroupArgs),
    /// Get Ray nodes.
    #[command(visible_alias = "nodes")]
    Node(GetGroupArgs),
    /// Get the auth token of a Ray cluster.
    Token(NameArgs),
}

/// `get cluster [NAME]`.
#[derive(Debug, Args)]
pub struct GetClusterArgs {
    /// The Ray cluster (at most one).
    pub names: Vec<String>,
    /// List the resources across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

/// `get workergroup [G]` and `get node [N]`.
#[derive(Debug, Args)]
pub struct GetGroupArgs {
    /// The worker group or node (at most one).
    pub names: Vec<String>,
    /// The Ray cluster to look in.
    #[arg(short = 'c', long)]
    pub ray_cluster: Option<String>,
    /// List the resources across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

/// A command taking positional names (their count checked by the command).
#[derive(Debug, Args)]
pub struct NameArgs {
    /// The names.
    pub names: Vec<String>,
}

/// `create`: a resource kind, or help.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CreateArgs {
    /// What to create.
    #[command(subcommand)]
    pub command: Option<CreateCommand>,
    /// Words that name no resource kind.
    pub stray: Vec<String>,
}

/// The kinds `create` makes.
#[derive(Debug, Subcommand)]
pub enum CreateCommand {
    /// Create a Ray cluster.
    Cluster(Box<CreateClusterArgs>),
    /// Add a worker group to a Ray cluster.
    Workergroup(Box<CreateWorkerGroupArgs>),
}

/// A `k=v,k2=v2` flag (repeatable), as pflag's string-to-string flags.
pub fn parse_key_values(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut map = BTreeMap::new();
    if text.is_empty() {
        return Ok(map);
    }
    for pair in text.split(',') {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair} must be formatted as key=value"))?;
        map.insert(key.to_string(), value.to_string());
    }
    Ok(map)
}

/// Merges repeated key-value flags into one map (later values win).
pub fn merged(maps: &[BTreeMap<String, String>]) -> BTreeMap<String, String> {
    maps.iter().flat_map(|m| m.clone()).collect()
}

/// The head and worker shape flags shared by `create cluster` and `job submit`.
#[derive(Debug, Clone, Args)]
pub struct ClusterShapeFlags {
    /// Ray version to use.
    #[arg(long, default_value = DEFAULT_RAY_VERSION)]
    pub ray_version: String,
    /// Container image to use.
    #[arg(long, default_value = DEFAULT_RAY_IMAGE)]
    pub image: String,
    /// Number of CPUs in the Ray head.
    #[arg(long, default_value = DEFAULT_HEAD_CPU, allow_hyphen_values = true)]
    pub head_cpu: String,
    /// Amount of memory in the Ray head.
    #[arg(long, default_value = DEFAULT_HEAD_MEMORY, allow_hyphen_values = true)]
    pub head_memory: String,
    /// Number of GPUs in the Ray head.
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    pub head_gpu: String,
    /// Node selectors of the Ray head (`k=v,...`).
    #[arg(long, value_parser = parse_key_values)]
    pub head_node_selectors: Vec<BTreeMap<String, String>>,
    /// Desired number of worker replicas.
    #[arg(long, default_value_t = DEFAULT_WORKER_REPLICAS)]
    pub worker_replicas: i32,
    /// Number of CPUs in each Ray worker.
    #[arg(long, default_value = DEFAULT_WORKER_CPU, allow_hyphen_values = true)]
    pub worker_cpu: String,
    /// Amount of memory in each Ray worker.
    #[arg(long, default_value = DEFAULT_WORKER_MEMORY, allow_hyphen_values = true)]
    pub worker_memory: String,
    /// Number of GPUs in each Ray worker.
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    pub worker_gpu: String,
    /// Node selectors of the Ray workers (`k=v,...`).
    #[arg(long, value_parser = parse_key_values)]
    pub worker_node_selectors: Vec<BTreeMap<String, String>>,
}

/// `create cluster NAME`.
#[derive(Debug, Clone, Args)]
pub struct CreateClusterArgs {
    /// The cluster's name.
    pub names: Vec<String>,
    /// Labels of the RayCluster (`k=v,...`).
    #[arg(long, value_parser = parse_key_values)]
    pub labels: Vec<BTreeMap<String, String>>,
    /// Annotations of the RayCluster (`k=v,...`).
    #[arg(long, value_parser = parse_key_values)]
    pub annotations: Vec<BTreeMap<String, String>>,
    /// Head and worker shape.
    #[command(flatten)]
    pub shape: ClusterShapeFlags,
    /// Ephemeral storage of the Ray head.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub head_ephemeral_storage: String,
    /// `ray start` parameters of the Ray head (`k=v,...`).
    #[arg(long, value_parser = parse_key_values)]
    pub head_ray_start_params: Vec<BTreeMap<String, String>>,
    /// Number of TPUs in each Ray worker.
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    pub worker_tpu: String,
    /// Ephemeral storage of each Ray worker.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub worker_ephemeral_storage: String,
    /// `ray start` parameters of the Ray workers (`k=v,...`).
    #[arg(long, value_parser = parse_key_values)]
    pub worker_ray_start_params: Vec<BTreeMap<String, String>>,
    /// Number of hosts per worker replica (multi-host TPU slices).
    #[arg(long, default_value_t = 1)]
    pub num_of_hosts: i32,
    /// Enable the Ray autoscaler: `v1` or `v2`.
    #[arg(long)]
    pub autoscaler: Option<String>,
    /// A YAML file describing the cluster (see docs/kubectl-ray.md); combines only with `--context`, `-n`,
    /// `--dry-run`, `--wait` and `--timeout`.
    // A string rather than a path, so that `--file=""` means no file, as with pflag.
    #[arg(long)]
    pub file: Option<String>,
    /// Print the generated YAML instead of creating the cluster.
    #[arg(long)]
    pub dry_run: bool,
    /// Wait until the cluster is provisioned.
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits (a Go duration).
    #[arg(long, default_value = "5m")]
    pub timeout: String,
    /// The long names of the flags given on the command line (kubectl's connection flags included), sorted;
    /// filled by [`Cli::parse_args`] for the `--file` check.
    #[arg(skip)]
    pub flags_given: Vec<String>,
}

/// `create workergroup NAME -c CLUSTER`.
#[derive(Debug, Args)]
pub struct CreateWorkerGroupArgs {
    /// The worker group's name.
    pub names: Vec<String>,
    /// The Ray cluster to add the group to.
    #[arg(short = 'c', long)]
    pub ray_cluster: Option<String>,
    /// Ray version to use.
    #[arg(long, default_value = DEFAULT_RAY_VERSION)]
    pub ray_version: String,
    /// Container image to use.
    #[arg(long, default_value = DEFAULT_RAY_IMAGE)]
    pub image: String,
    /// Desired number of worker replicas.
    #[arg(long, default_value_t = 1)]
    pub worker_replicas: i32,
    /// Number of hosts per worker replica.
    #[arg(long, default_value_t = 1)]
    pub num_of_hosts: i32,
    /// Minimum number of worker replicas.
    #[arg(long, default_value_t = 1)]
    pub worker_min_replicas: i32,
    /// Maximum number of worker replicas.
    #[arg(long, default_value_t = 10)]
    pub worker_max_replicas: i32,
    /// Number of CPUs in each Ray worker.
    #[arg(long, default_value = "2", allow_hyphen_values = true)]
    pub worker_cpu: String,
    /// Number of GPUs in each Ray worker.
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    pub worker_gpu: String,
    /// Number of TPUs in each Ray worker.
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    pub worker_tpu: String,
    /// Amount of memory in each Ray worker.
    #[arg(long, default_value = "4Gi", allow_hyphen_values = true)]
    pub worker_memory: String,
    /// `ray start` parameters of the workers (`k=v,...`).
    #[arg(long, value_parser = parse_key_values)]
    pub worker_ray_start_params: Vec<BTreeMap<String, String>>,
    /// Node selectors of the workers (`k=v,...`).
    #[arg(long, value_parser = parse_key_values)]
    pub worker_node_selectors: Vec<BTreeMap<String, String>>,
}

/// `delete ARG...`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// `NAME` (a Ray cluster) or `TYPE/NAME`.
    pub targets: Vec<String>,
    /// Delete without asking.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// `scale`: a resource kind, or help.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ScaleArgs {
    /// What to scale.
    #[command(subcommand)]
    pub command: Option<ScaleCommand>,
    /// Words that name no resource kind.
    pub stray: Vec<String>,
}

/// The kinds `scale` changes.
#[derive(Debug, Subcommand)]
pub enum ScaleCommand {
    /// Scale a worker group of a Ray cluster.
    Cluster(ScaleClusterArgs),
}

/// `scale cluster NAME -w GROUP`.
#[derive(Debug, Args)]
pub struct ScaleClusterArgs {
    /// The Ray cluster.
    pub names: Vec<String>,
    /// The worker group to scale.
    #[arg(short = 'w', long)]
    pub worker_group: Option<String>,
    /// Desired number of replicas (-1: unchanged).
    #[arg(short = 'r', long, default_value_t = -1, allow_negative_numbers = true)]
    pub replicas: i32,
    /// Minimum number of replicas (-1: unchanged).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub min_replicas: i32,
    /// Maximum number of replicas (-1: unchanged).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub max_replicas: i32,
}

/// `job`: a subcommand, or help.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct JobArgs {
    /// The job command.
    #[command(subcommand)]
    pub command: Option<JobCommand>,
    /// Words that name no job command.
    pub stray: Vec<String>,
}

/// The job commands.
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Submit a Ray job to a new RayJob's cluster.
    Submit(Box<JobSubmitArgs>),
}

/// `job submit [-f FILE] ... -- ENTRYPOINT`.
#[derive(Debug, Clone, Args)]
pub struct JobSubmitArgs {
    /// A RayJob YAML file (its submissionMode must be InteractiveMode).
    #[arg(short = 'f', long)]
    pub filename: Option<PathBuf>,
    /// Name of the generated RayJob (without `-f`).
    #[arg(long, default_value = "")]
    pub name: String,
    /// Ray dashboard address to submit to (default: a port-forward to the head service).
    #[arg(long)]
    pub address: Option<String>,
    /// Submission ID of the Ray job (default: generated).
    #[arg(long, default_value = "")]
    pub submission_id: String,
    /// A runtime-env YAML file.
    #[arg(long, default_value = "")]
    pub runtime_env: String,
    /// Directory with the job's files.
    #[arg(long, default_value = "")]
    pub working_dir: String,
    /// Print the generated RayJob instead of submitting.
    #[arg(long)]
    pub dry_run: bool,
    /// Headers for `ray job submit` (JSON).
    #[arg(long, default_value = "")]
    pub headers: String,
    /// Runtime env as JSON.
    #[arg(long, default_value = "")]
    pub runtime_env_json: String,
    /// TLS verification for `ray job submit`.
    #[arg(long, default_value = "")]
    pub verify: String,
    /// Entrypoint resources (JSON).
    #[arg(long, default_value = "")]
    pub entrypoint_resources: String,
    /// Job metadata (JSON).
    #[arg(long, default_value = "")]
    pub metadata_json: String,
    /// `ray job submit --log-style`.
    #[arg(long, default_value = "")]
    pub log_style: String,
    /// `ray job submit --log-color`.
    #[arg(long, default_value = "")]
    pub log_color: String,
    /// CPUs reserved for the entrypoint.
    #[arg(long, default_value_t = 0.0)]
    pub entrypoint_num_cpus: f64,
    /// GPUs reserved for the entrypoint.
    #[arg(long, default_value_t = 0.0)]
    pub entrypoint_num_gpus: f64,
    /// Memory reserved for the entrypoint (bytes).
    #[arg(long, default_value_t = 0)]
    pub entrypoint_memory: i64,
    /// Do not wait for the job to finish.
    #[arg(long)]
    pub no_wait: bool,
    /// `ray job submit --verbose`.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Shape of the generated cluster.
    #[command(flatten)]
    pub shape: ClusterShapeFlags,
    /// Seconds to keep the cluster after the job finished (sets shutdownAfterJobFinishes).
    #[arg(long, allow_negative_numbers = true)]
    pub ttl_seconds_after_finished: Option<i32>,
    /// The entrypoint, after `--`.
    #[arg(last = true)]
    pub entrypoint: Vec<String>,
}

/// `session ARG`.
#[derive(Debug, Args)]
pub struct SessionArgs {
    /// `NAME` (a Ray cluster) or `TYPE/NAME`.
    pub targets: Vec<String>,
    /// Print the port-forward commands it runs.
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

/// `log ARG`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// `NAME` (a Ray cluster) or `TYPE/NAME`.
    pub targets: Vec<String>,
    /// Directory to download the logs into (default `./<name>`).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Which nodes: `all`, `head` or `worker`.
    #[arg(long, default_value = "all")]
    pub node_type: String,
    /// Print a link to the logs in a cloud console instead (`gke`).
    #[arg(long)]
    pub link: Option<String>,
}
