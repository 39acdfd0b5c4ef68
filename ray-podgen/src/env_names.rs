//! Environment variable names and fixed values KubeRay injects into generated containers
//! (docs/podgen.md: the environment variables, GCS fault tolerance and RayJob sections). Names that validation
//! or other crates also read are defined once in `ray_api::constants` and aliased here.

/// FQDN of the head service (workers and init containers).
pub const FQ_RAY_IP: &str = ray_api::constants::COLLECTOR_FQ_RAY_IP_ENV;
/// First DNS label of [`FQ_RAY_IP`] (deprecated, kept for compatibility).
pub const RAY_IP: &str = "RAY_IP";
/// Cluster name, from the pod's `ray.io/cluster` label.
pub const RAY_CLUSTER_NAME: &str = ray_api::constants::COLLECTOR_RAY_CLUSTER_NAME_ENV;
/// Namespace of the pod.
pub const RAY_CLUSTER_NAMESPACE: &str = ray_api::constants::COLLECTOR_RAY_CLUSTER_NAMESPACE_ENV;
/// Pod name (autoscaler v2 instance id).
pub const RAY_CLOUD_INSTANCE_ID: &str = "RAY_CLOUD_INSTANCE_ID";
/// Group name, from the pod's `ray.io/group` label.
pub const RAY_NODE_TYPE_NAME: &str = "RAY_NODE_TYPE_NAME";
/// The generated `ray start` command.
pub const KUBERAY_GEN_RAY_START_CMD: &str = "KUBERAY_GEN_RAY_START_CMD";
/// The head port.
pub const RAY_PORT: &str = "RAY_PORT";
/// RayService SLA tuning: task death info wait.
pub const RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO: &str = "RAY_timeout_ms_task_wait_for_death_info";
/// RayService SLA tuning: GCS request timeout.
pub const RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS: &str = "RAY_gcs_server_request_timeout_seconds";
/// RayService SLA tuning: Serve KV timeout.
pub const RAY_SERVE_KV_TIMEOUT_S: &str = "RAY_SERVE_KV_TIMEOUT_S";
/// Address for `ray.init()` inside the cluster.
pub const RAY_ADDRESS: &str = "RAY_ADDRESS";
/// Usage stats marker.
pub const RAY_USAGE_STATS_KUBERAY_IN_USE: &str = "RAY_USAGE_STATS_KUBERAY_IN_USE";
/// Usage stats tags (head only).
pub const RAY_USAGE_STATS_EXTRA_TAGS: &str = "RAY_USAGE_STATS_EXTRA_TAGS";
/// Enables disk usage in the dashboard.
pub const RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE: &str = "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE";
/// Referenced (never injected) by the generated `ulimit` command.
pub const RAY_START_ULIMIT_OPEN_FILES: &str = "RAY_START_ULIMIT_OPEN_FILES";
/// Autoscaler v2 switch on the head Ray container.
pub const RAY_ENABLE_AUTOSCALER_V2: &str = ray_api::constants::RAY_ENABLE_AUTOSCALER_V2_ENV;
/// Autoscaler sidecar: head pod name.
pub const RAY_HEAD_POD_NAME: &str = "RAY_HEAD_POD_NAME";
/// Autoscaler sidecar: CRD version.
pub const KUBERAY_CRD_VER: &str = "KUBERAY_CRD_VER";
/// Autoscaler sidecar: the generated start command.
pub const KUBERAY_GEN_AUTOSCALER_START_CMD: &str = ray_api::constants::KUBERAY_GEN_AUTOSCALER_START_CMD_ENV;
/// GCS FT (worker): GCS reconnect timeout.
pub const RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S: &str = "RAY_gcs_rpc_server_reconnect_timeout_s";
/// Value of [`RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S`].
pub const DEFAULT_WORKER_GCS_RECONNECT_TIMEOUT_S: &str = "600";
/// GCS FT (Redis): storage namespace.
pub const RAY_EXTERNAL_STORAGE_NS: &str = "RAY_external_storage_namespace";
/// GCS FT (Redis): address.
pub const RAY_REDIS_ADDRESS: &str = ray_api::constants::RAY_REDIS_ADDRESS_ENV;
/// GCS FT (Redis): user name.
pub const REDIS_USERNAME: &str = ray_api::constants::REDIS_USERNAME_ENV;
/// GCS FT (Redis): password.
pub const REDIS_PASSWORD: &str = ray_api::constants::REDIS_PASSWORD_ENV;
/// GCS FT (embedded): storage backend.
pub const RAY_GCS_STORAGE: &str = ray_api::constants::RAY_GCS_STORAGE_ENV;
/// GCS FT (embedded): storage path.
pub const RAY_GCS_STORAGE_PATH: &str = ray_api::constants::RAY_GCS_STORAGE_PATH_ENV;
/// Value of [`RAY_GCS_STORAGE`] for the embedded backend.
pub const GCS_STORAGE_ROCKSDB: &str = "rocksdb";
/// Mount path of the embedded GCS storage.
pub const GCS_STORAGE_MOUNT_PATH: &str = ray_api::constants::GCS_STORAGE_MOUNT_PATH;
/// Volume name of the embedded GCS storage.
pub const GCS_STORAGE_VOLUME_NAME: &str = ray_api::constants::GCS_STORAGE_VOLUME_NAME;
/// Token auth: mode.
pub const RAY_AUTH_MODE: &str = "RAY_AUTH_MODE";
/// Token auth: Kubernetes service-account token switch.
pub const RAY_ENABLE_K8S_TOKEN_AUTH: &str = "RAY_ENABLE_K8S_TOKEN_AUTH";
/// Token auth: the token.
pub const RAY_AUTH_TOKEN: &str = "RAY_AUTH_TOKEN";
/// Secret key of the auth token.
pub const RAY_AUTH_TOKEN_SECRET_KEY: &str = "auth_token";
/// Volume of the projected service-account token.
pub const RAY_TOKEN_VOLUME_NAME: &str = "ray-token";
/// Mount path of [`RAY_TOKEN_VOLUME_NAME`].
pub const RAY_TOKEN_MOUNT_PATH: &str = "/var/run/secrets/ray.io/serviceaccount";
/// Redis cleanup Job: connect retries.
pub const RAY_REDIS_DB_CONNECT_RETRIES: &str = "RAY_redis_db_connect_retries";
/// Redis cleanup Job: wait between retries.
pub const RAY_REDIS_DB_CONNECT_WAIT_MILLISECONDS: &str = "RAY_redis_db_connect_wait_milliseconds";
/// Submitter: unbuffered Python output.
pub const PYTHONUNBUFFERED: &str = "PYTHONUNBUFFERED";
/// Submitter: dashboard address.
pub const RAY_DASHBOARD_ADDRESS: &str = "RAY_DASHBOARD_ADDRESS";
/// Submitter: job submission id.
pub const RAY_JOB_SUBMISSION_ID: &str = "RAY_JOB_SUBMISSION_ID";
