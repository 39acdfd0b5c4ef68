//! String and numeric constants shared by every KubeRay controller: label keys, annotation keys,
//! finalizers, default ports and port names, `managedBy` values, operator environment variable
//! names and naming limits (KubeRay `utils/constant.go`, `common/association.go`, `common/pod.go`).
//!
//! One source of truth: other crates import these instead of repeating the literals.
//! Append new constants at the end; never rename or reorder existing ones.

// ---------------------------------------------------------------------------------------------
// Labels
// ---------------------------------------------------------------------------------------------

/// Label carrying the owning RayCluster's name (also the cluster-selector key of RayJob/RayService).
pub const RAY_CLUSTER_LABEL: &str = "ray.io/cluster";
/// Label carrying the Ray node type of a pod (`head`, `worker`, `redis-cleanup`).
pub const RAY_NODE_TYPE_LABEL: &str = "ray.io/node-type";
/// Label carrying the pod's group name (`headgroup` for the head).
pub const RAY_NODE_GROUP_LABEL: &str = "ray.io/group";
/// Label marking a pod as a Ray node (value [`RAY_IS_RAY_NODE_VALUE`]).
pub const RAY_IS_RAY_NODE_LABEL: &str = "ray.io/is-ray-node";
/// Value of [`RAY_IS_RAY_NODE_LABEL`].
pub const RAY_IS_RAY_NODE_VALUE: &str = "yes";
/// Label carrying `<cluster>-head` / `<cluster>-worker` (checked to 63 chars).
pub const RAY_ID_LABEL: &str = "ray.io/identifier";
/// Kubernetes recommended app-name label.
pub const KUBERNETES_APPLICATION_NAME_LABEL: &str = "app.kubernetes.io/name";
/// Value of [`KUBERNETES_APPLICATION_NAME_LABEL`] on every KubeRay-created object.
pub const APPLICATION_NAME: &str = "kuberay";
/// Kubernetes recommended created-by label.
pub const KUBERNETES_CREATED_BY_LABEL: &str = "app.kubernetes.io/created-by";
/// Value of [`KUBERNETES_CREATED_BY_LABEL`]: the operator's component name.
pub const COMPONENT_NAME: &str = "kuberay-operator";
/// Label with the worker-group replica index (gate `RayMultiHostIndexing`).
pub const RAY_WORKER_REPLICA_INDEX_LABEL: &str = "ray.io/worker-group-replica-index";
/// Label with the worker-group replica name `<group>-<5 random>` (multi-host groups).
pub const RAY_WORKER_REPLICA_NAME_LABEL: &str = "ray.io/worker-group-replica-name";
/// Label with the host index `0..numOfHosts-1` inside a multi-host replica.
pub const RAY_HOST_INDEX_LABEL: &str = "ray.io/replica-host-index";
/// Label naming the CRD kind a RayCluster originated from (`RayCluster`, `RayJob`, `RayService`).
pub const RAY_ORIGINATED_FROM_CRD_LABEL: &str = "ray.io/originated-from-crd";
/// Label naming the custom resource a RayCluster originated from.
pub const RAY_ORIGINATED_FROM_CR_NAME_LABEL: &str = "ray.io/originated-from-cr-name";
/// Label on the headless worker service, value = cluster name.
pub const RAY_CLUSTER_HEADLESS_SERVICE_LABEL: &str = "ray.io/headless-worker-svc";
/// Label telling whether a pod serves Serve traffic (`"true"` / `"false"`).
pub const RAY_CLUSTER_SERVING_SERVICE_LABEL: &str = "ray.io/serve";
/// Label on a RayJob's cluster naming the job submission mode.
pub const RAY_JOB_SUBMISSION_MODE_LABEL: &str = "ray.io/job-submission-mode";

// ---------------------------------------------------------------------------------------------
// Label values
// ---------------------------------------------------------------------------------------------

/// [`RAY_NODE_TYPE_LABEL`] value for head pods.
pub const NODE_TYPE_HEAD: &str = "head";
/// [`RAY_NODE_TYPE_LABEL`] value for worker pods.
pub const NODE_TYPE_WORKER: &str = "worker";
/// [`RAY_NODE_TYPE_LABEL`] value for the GCS FT Redis cleanup Job's pod.
pub const NODE_TYPE_REDIS_CLEANUP: &str = "redis-cleanup";
/// [`RAY_NODE_GROUP_LABEL`] value for the head pod.
pub const HEAD_GROUP_NAME: &str = "headgroup";
/// [`RAY_ORIGINATED_FROM_CRD_LABEL`] value for RayCluster.
pub const CRD_KIND_RAY_CLUSTER: &str = "RayCluster";
/// [`RAY_ORIGINATED_FROM_CRD_LABEL`] value for RayJob.
pub const CRD_KIND_RAY_JOB: &str = "RayJob";
/// [`RAY_ORIGINATED_FROM_CRD_LABEL`] value for RayService.
pub const CRD_KIND_RAY_SERVICE: &str = "RayService";
/// Kind of the RayCronJob resource (owner of the RayJobs it creates).
pub const CRD_KIND_RAY_CRON_JOB: &str = "RayCronJob";
/// Label on each RayJob a RayCronJob creates: the RayCronJob's name.
pub const RAY_CRON_JOB_NAME_LABEL: &str = "ray.io/cronjob-name";
/// Annotation on each RayJob a RayCronJob creates: the tick it was created for (UTC, RFC 3339).
pub const RAY_CRON_JOB_SCHEDULED_TIMESTAMP_ANNOTATION: &str = "ray.io/cronjob-scheduled-timestamp";

// ---------------------------------------------------------------------------------------------
// Annotations
// ---------------------------------------------------------------------------------------------

/// Annotation enabling GCS fault tolerance (legacy; case-insensitive `"true"`).
pub const RAY_FT_ENABLED_ANNOTATION: &str = "ray.io/ft-enabled";
/// Annotation with the external storage namespace for GCS FT.
pub const RAY_EXTERNAL_STORAGE_NS_ANNOTATION: &str = "ray.io/external-storage-namespace";
/// Annotation with the GCS FT Redis cleanup deletion timeout (integer seconds).
pub const RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION: &str = "ray.io/gcs-ft-deletion-timeout";
/// Annotation asking for a serve service (`"true"`).
pub const ENABLE_SERVE_SERVICE_ANNOTATION: &str = "ray.io/enable-serve-service";
/// Value of [`ENABLE_SERVE_SERVICE_ANNOTATION`] that enables it.
pub const ENABLE_SERVE_SERVICE_TRUE: &str = "true";
/// Annotation disabling head pod recreation after provisioning (`"true"`).
pub const DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION: &str = "ray.io/disable-provisioned-head-restart";
/// Head pod annotation with the hash used by the `Recreate` upgrade strategy.
pub const UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION: &str = "ray.io/upgrade-strategy-recreate-hash";
/// Worker pod annotation with the hash of its group's spec, stamped only under `upgradeStrategy.type:
/// RollingUpdate` (beyond KubeRay): a pod whose value differs from the group's current hash is outdated.
pub const WORKER_TEMPLATE_HASH_ANNOTATION: &str = "ray.io/worker-template-hash";
/// Annotation with the KubeRay version that created the object.
pub const KUBERAY_VERSION_ANNOTATION: &str = "ray.io/kuberay-version";
/// Annotation with the cluster spec hash ignoring replicas and workersToDelete.
pub const HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_ANNOTATION: &str =
    "ray.io/hash-without-replicas-and-workers-to-delete";
/// Annotation with the number of worker groups of a cluster.
pub const NUM_WORKER_GROUPS_ANNOTATION: &str = "ray.io/num-worker-groups";
/// RayService annotation with the cluster initializing timeout.
pub const RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION: &str = "ray.io/initializing-timeout";

// ---------------------------------------------------------------------------------------------
// Finalizers
// ---------------------------------------------------------------------------------------------

/// RayCluster finalizer guarding the GCS FT Redis cleanup.
pub const GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER: &str = "ray.io/gcs-ft-redis-cleanup-finalizer";
/// RayJob finalizer.
pub const RAY_JOB_STOP_JOB_FINALIZER: &str = "ray.io/rayjob-finalizer";
/// RayService finalizer.
pub const RAY_SERVICE_FINALIZER: &str = "ray.io/rayservice-finalizer";

// ---------------------------------------------------------------------------------------------
// managedBy
// ---------------------------------------------------------------------------------------------

/// `spec.managedBy` value meaning this operator reconciles the object.
pub const KUBERAY_CONTROLLER: &str = "ray.io/kuberay-operator";
/// `spec.managedBy` value meaning MultiKueue manages the object.
pub const MULTIKUEUE_CONTROLLER: &str = "kueue.x-k8s.io/multikueue";

// ---------------------------------------------------------------------------------------------
// Ports and port names
// ---------------------------------------------------------------------------------------------

/// Default GCS server port (also the default head `port` param).
pub const DEFAULT_GCS_SERVER_PORT: i32 = 6379;
/// Default dashboard port.
pub const DEFAULT_DASHBOARD_PORT: i32 = 8265;
/// Default Ray client port.
pub const DEFAULT_CLIENT_PORT: i32 = 10001;
/// Default metrics export port.
pub const DEFAULT_METRICS_PORT: i32 = 8080;
/// Default Ray Serve port.
pub const DEFAULT_SERVING_PORT: i32 = 8000;
/// Default dashboard agent listen port.
pub const DEFAULT_DASHBOARD_AGENT_LISTEN_PORT: i32 = 52365;
/// Port name of the GCS server.
pub const GCS_SERVER_PORT_NAME: &str = "gcs-server";
/// Port name of the dashboard.
pub const DASHBOARD_PORT_NAME: &str = "dashboard";
/// Port name of the Ray client server.
pub const CLIENT_PORT_NAME: &str = "client";
/// Port name of the metrics endpoint.
pub const METRICS_PORT_NAME: &str = "metrics";
/// Port name of Ray Serve.
pub const SERVING_PORT_NAME: &str = "serve";
/// `appProtocol` of the generated service ports.
pub const DEFAULT_SERVICE_APP_PROTOCOL: &str = "tcp";

// ---------------------------------------------------------------------------------------------
// Containers, volumes, misc pod constants
// ---------------------------------------------------------------------------------------------

/// Index of the Ray container in head/worker pod templates.
pub const RAY_CONTAINER_INDEX: usize = 0;
/// Suffix of the headless worker service name.
pub const HEADLESS_SERVICE_SUFFIX: &str = "headless";
/// Name of the `/dev/shm` volume.
pub const SHARED_MEMORY_VOLUME_NAME: &str = "shared-mem";
/// Mount path of the shared memory volume.
pub const SHARED_MEMORY_VOLUME_MOUNT_PATH: &str = "/dev/shm";
/// Name of the Ray log volume.
pub const RAY_LOG_VOLUME_NAME: &str = "ray-logs";
/// Mount path of the Ray log volume.
pub const RAY_LOG_VOLUME_MOUNT_PATH: &str = "/tmp/ray";
/// Name of the autoscaler sidecar container.
pub const AUTOSCALER_CONTAINER_NAME: &str = "autoscaler";
/// Name of the history-server collector sidecar container.
pub const RAY_HISTORY_COLLECTOR_CONTAINER_NAME: &str = "ray-history-collector";
/// Name of the init container waiting for the GCS.
pub const WAIT_GCS_READY_INIT_CONTAINER_NAME: &str = "wait-gcs-ready";
/// Name of the TLS init container waiting for the IP SAN.
pub const WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME: &str = "wait-for-tls-ip-san";
/// Name of the RayJob submitter container.
pub const SUBMITTER_CONTAINER_NAME: &str = "ray-job-submitter";
/// `rayStartParams` key for the plasma directory.
pub const PLASMA_DIRECTORY_PARAM: &str = "plasma-directory";
/// Loopback address used in head-local addresses.
pub const LOCAL_HOST: &str = "127.0.0.1";
/// The KubeRay version string of the studied snapshot (`KUBERAY_VERSION`).
pub const KUBERAY_VERSION: &str = "nightly";
/// Default cluster DNS domain (`CLUSTER_DOMAIN` unset or empty).
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";
/// Serve application name used when an application has an empty name.
pub const DEFAULT_SERVE_APP_NAME: &str = "default";

// ---------------------------------------------------------------------------------------------
// Naming limits
// ---------------------------------------------------------------------------------------------

/// Maximum RayCluster name length: 63 − len(`-serve-svc`).
pub const MAX_RAY_CLUSTER_NAME_LENGTH: usize = 53;
/// Maximum RayJob name length: 53 − 6 (for `-xxxxx`).
pub const MAX_RAY_JOB_NAME_LENGTH: usize = 47;
/// Maximum RayService name length: 53 − 6 (for `-xxxxx`).
pub const MAX_RAY_SERVICE_NAME_LENGTH: usize = 47;
/// Maximum RayCronJob name length: the RayJob limit minus a `-` and the 10 digits of a tick's minute number.
pub const MAX_RAY_CRON_JOB_NAME_LENGTH: usize = MAX_RAY_JOB_NAME_LENGTH - 11;
/// Length of the random suffix appended to generated names.
pub const RANDOM_SUFFIX_LENGTH: usize = 5;
/// Alphabet of random name suffixes (Kubernetes `rand.String`).
pub const RANDOM_SUFFIX_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

// ---------------------------------------------------------------------------------------------
// Timing defaults
// ---------------------------------------------------------------------------------------------

/// Default requeue after a reconcile that needs another pass, in seconds.
pub const DEFAULT_REQUEUE_SECONDS: u64 = 2;
/// Default unconditional RayCluster requeue, in seconds.
pub const RAYCLUSTER_DEFAULT_REQUEUE_SECONDS: u64 = 300;
/// Timeout of create expectations, in seconds.
pub const EXPECTATIONS_TIMEOUT_SECONDS: u64 = 30;
/// Default GCS FT Redis cleanup deletion timeout, in seconds.
pub const RAYCLUSTER_GCS_FT_DELETION_TIMEOUT_DEFAULT_SECONDS: u64 = 300;
/// Default RayJob deployment-status transition grace period, in seconds.
pub const RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS_DEFAULT: u64 = 300;
/// Default RayJob status check timeout, in seconds.
pub const RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS_DEFAULT: u64 = 300;

// ---------------------------------------------------------------------------------------------
// Operator environment variable names (read by the binary only; pure crates take values as input)
// ---------------------------------------------------------------------------------------------

/// Env var: unconditional RayCluster requeue seconds (the variable name really ends in `_ENV`).
pub const RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV: &str = "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV";
/// Env var: `"true"` enables random surplus-pod deletion with autoscaling on.
pub const ENABLE_RANDOM_POD_DELETE: &str = "ENABLE_RANDOM_POD_DELETE";
/// Env var: not `"false"` enables the GCS FT Redis cleanup finalizer/Job.
pub const ENABLE_GCS_FT_REDIS_CLEANUP: &str = "ENABLE_GCS_FT_REDIS_CLEANUP";
/// Env var: `"true"` gives head pods a fixed name instead of `generateName`.
pub const ENABLE_DETERMINISTIC_HEAD_POD_NAME: &str = "ENABLE_DETERMINISTIC_HEAD_POD_NAME";
/// Env var: `"true"` makes the head service a ClusterIP instead of headless.
pub const ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE: &str = "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE";
/// Env var: `"true"` makes generated bash commands use a login shell (`-cl`).
pub const ENABLE_LOGIN_SHELL: &str = "ENABLE_LOGIN_SHELL";
/// Env var: cluster DNS domain.
pub const CLUSTER_DOMAIN_ENV: &str = "CLUSTER_DOMAIN";
/// Env var: `"true"` registers the validating webhooks.
pub const ENABLE_WEBHOOKS: &str = "ENABLE_WEBHOOKS";
/// Env var: delete the RayJob CR after the job finishes (flag mode).
pub const DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: &str = "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES";
/// Env var: on OpenShift, use an Ingress instead of a Route.
pub const USE_INGRESS_ON_OPENSHIFT: &str = "USE_INGRESS_ON_OPENSHIFT";
/// Env var: `"false"` disables the `wait-gcs-ready` init container injection.
pub const ENABLE_INIT_CONTAINER_INJECTION: &str = "ENABLE_INIT_CONTAINER_INJECTION";
/// Env var: `"false"` disables liveness/readiness probe injection.
pub const ENABLE_PROBES_INJECTION: &str = "ENABLE_PROBES_INJECTION";
/// Env var: RayJob deployment-status transition grace period in seconds.
pub const RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS: &str =
    "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS";
/// Env var: RayJob status check timeout in seconds.
pub const RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS: &str = "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS";
/// Env var: enable zero-downtime RayService upgrades.
pub const ENABLE_ZERO_DOWNTIME: &str = "ENABLE_ZERO_DOWNTIME";

// ---------------------------------------------------------------------------------------------
// Validation (KubeRay `utils/validation.go`): env vars, volumes and condition types it inspects
// ---------------------------------------------------------------------------------------------

/// RayCluster condition type: pods are being deleted for suspension.
pub const RAY_CLUSTER_SUSPENDING_CONDITION: &str = "RayClusterSuspending";
/// RayCluster condition type: the cluster is suspended.
pub const RAY_CLUSTER_SUSPENDED_CONDITION: &str = "RayClusterSuspended";
/// Head env var switching the Ray autoscaler to v2 (`"1"` / `"true"`).
pub const RAY_ENABLE_AUTOSCALER_V2_ENV: &str = "RAY_enable_autoscaler_v2";
/// Head env var with the Redis address (implicitly enables GCS FT).
pub const RAY_REDIS_ADDRESS_ENV: &str = "RAY_REDIS_ADDRESS";
/// Head env var with the Redis password.
pub const REDIS_PASSWORD_ENV: &str = "REDIS_PASSWORD";
/// Head env var with the Redis user name.
pub const REDIS_USERNAME_ENV: &str = "REDIS_USERNAME";
/// Autoscaler env var carrying the generated start command (KubeRay-managed).
pub const KUBERAY_GEN_AUTOSCALER_START_CMD_ENV: &str = "KUBERAY_GEN_AUTOSCALER_START_CMD";
/// Head env var selecting the embedded GCS storage (KubeRay-managed with the RocksDB backend).
pub const RAY_GCS_STORAGE_ENV: &str = "RAY_gcs_storage";
/// Head env var with the embedded GCS storage path (KubeRay-managed with the RocksDB backend).
pub const RAY_GCS_STORAGE_PATH_ENV: &str = "RAY_gcs_storage_path";
/// Volume name of the embedded GCS storage.
pub const GCS_STORAGE_VOLUME_NAME: &str = "gcs-storage";
/// Mount path of the embedded GCS storage.
pub const GCS_STORAGE_MOUNT_PATH: &str = "/data/gcs";
/// Env var enabling Ray TLS (KubeRay-managed with `tlsOptions`).
pub const RAY_USE_TLS_ENV: &str = "RAY_USE_TLS";
/// Env var with the Ray TLS server certificate path.
pub const RAY_TLS_SERVER_CERT_ENV: &str = "RAY_TLS_SERVER_CERT";
/// Env var with the Ray TLS server key path.
pub const RAY_TLS_SERVER_KEY_ENV: &str = "RAY_TLS_SERVER_KEY";
/// Env var with the Ray TLS CA certificate path.
pub const RAY_TLS_CA_CERT_ENV: &str = "RAY_TLS_CA_CERT";
/// Volume name of the Ray TLS certificates.
pub const RAY_TLS_VOLUME_NAME: &str = "ray-tls";
/// Mount path of the Ray TLS certificates.
pub const RAY_TLS_CERT_MOUNT_PATH: &str = "/etc/ray/tls";
/// History collector env var: pod IP (KubeRay-managed).
pub const COLLECTOR_POD_IP_ENV: &str = "POD_IP";
/// History collector env var: fully qualified Ray IP (KubeRay-managed).
pub const COLLECTOR_FQ_RAY_IP_ENV: &str = "FQ_RAY_IP";
/// History collector env var: cluster name (KubeRay-managed).
pub const COLLECTOR_RAY_CLUSTER_NAME_ENV: &str = "RAY_CLUSTER_NAME";
/// History collector env var: cluster namespace (KubeRay-managed).
pub const COLLECTOR_RAY_CLUSTER_NAMESPACE_ENV: &str = "RAY_CLUSTER_NAMESPACE";
/// History collector env var: node role (KubeRay-managed).
pub const COLLECTOR_RAY_ROLE_ENV: &str = "RAY_ROLE";
/// History collector env var: owner kind (KubeRay-managed).
pub const COLLECTOR_OWNER_KIND_ENV: &str = "OWNER_KIND";
/// History collector env var: owner name (KubeRay-managed).
pub const COLLECTOR_OWNER_NAME_ENV: &str = "OWNER_NAME";
/// History collector env var: events port (KubeRay-managed).
pub const COLLECTOR_EVENTS_PORT_ENV: &str = "EVENTS_PORT";
/// History collector env var: storage backend (`GCS`, `S3`, `AZUREBLOB`, `ALIYUNOSS`).
pub const COLLECTOR_STORAGE_BACKEND_ENV: &str = "STORAGE_BACKEND";
/// History collector env var: GCS bucket.
pub const COLLECTOR_GCS_BUCKET_ENV: &str = "GCS_BUCKET";
/// History collector env var: S3 region.
pub const COLLECTOR_S3_REGION_ENV: &str = "S3_REGION";
/// History collector env var: Azure auth mode.
pub const COLLECTOR_AZURE_STORAGE_AUTH_MODE_ENV: &str = "AZURE_STORAGE_AUTH_MODE";
/// History collector env var: Azure connection string.
pub const COLLECTOR_AZURE_STORAGE_CONNECTION_STRING_ENV: &str = "AZURE_STORAGE_CONNECTION_STRING";
/// History collector env var: Azure account URL.
pub const COLLECTOR_AZURE_STORAGE_ACCOUNT_URL_ENV: &str = "AZURE_STORAGE_ACCOUNT_URL";
/// History collector env var: Aliyun OSS bucket.
pub const COLLECTOR_ALIYUN_BUCKET_ENV: &str = "ALIYUN_BUCKET";
/// History collector env var: Aliyun OSS endpoint.
pub const COLLECTOR_ALIYUN_ENDPOINT_ENV: &str = "ALIYUN_ENDPOINT";
/// History collector env var: Aliyun OSS region.
pub const COLLECTOR_ALIYUN_REGION_ENV: &str = "ALIYUN_REGION";

// ---------------------------------------------------------------------------------------------
// RayJob submitter (KubeRay `common/job.go`, `rayjob_controller.go`)
// ---------------------------------------------------------------------------------------------

/// `backoffLimit` of the submitter Job when `spec.submitterConfig.backoffLimit` is unset.
pub const DEFAULT_SUBMITTER_JOB_BACKOFF_LIMIT: i32 = 2;
/// CPU request of KubeRay's default submitter container.
pub const DEFAULT_SUBMITTER_CONTAINER_CPU_REQUEST: &str = "500m";
/// Memory request of KubeRay's default submitter container.
pub const DEFAULT_SUBMITTER_CONTAINER_MEMORY_REQUEST: &str = "200Mi";
/// CPU limit of KubeRay's default submitter container.
pub const DEFAULT_SUBMITTER_CONTAINER_CPU_LIMIT: &str = "1";
/// Memory limit of KubeRay's default submitter container.
pub const DEFAULT_SUBMITTER_CONTAINER_MEMORY_LIMIT: &str = "1Gi";
/// Oldest Ray version whose `ray job submit` accepts `--metadata-json`.
pub const MIN_RAY_VERSION_FOR_JOB_METADATA: &str = "2.6.0";

// `ray start` parameters and resource names that both the pod generator and the replica math read.

/// `rayStartParams` key for the node's CPUs.
pub const RAY_START_PARAM_NUM_CPUS: &str = "num-cpus";
/// `rayStartParams` key for the node's memory (bytes).
pub const RAY_START_PARAM_MEMORY: &str = "memory";
/// `rayStartParams` key for the node's GPUs.
pub const RAY_START_PARAM_NUM_GPUS: &str = "num-gpus";
/// `rayStartParams` key for custom Ray resources (a JSON map).
pub const RAY_START_PARAM_RESOURCES: &str = "resources";
/// Container resource name of AWS Neuron cores.
pub const NEURON_CORE_CONTAINER_RESOURCE: &str = "aws.amazon.com/neuroncore";
/// Ray resource name Neuron cores are advertised as.
pub const NEURON_CORE_RAY_RESOURCE: &str = "neuron_cores";
/// Container resource name of Google TPUs.
pub const TPU_CONTAINER_RESOURCE: &str = "google.com/tpu";
/// Ray resource name TPUs are advertised as.
pub const TPU_RAY_RESOURCE: &str = "TPU";

// Validating admission webhooks (`ENABLE_WEBHOOKS=true`; KubeRay `pkg/webhooks/v1`,
// `config/webhook/manifests.yaml`).

/// API group of KubeRay's resources (the group of `RayCluster.ray.io` in webhook errors).
pub const RAY_API_GROUP: &str = "ray.io";
/// URL path of the RayCluster validating webhook.
pub const RAY_CLUSTER_WEBHOOK_PATH: &str = "/validate-ray-io-v1-raycluster";
/// URL path of the RayJob validating webhook.
pub const RAY_JOB_WEBHOOK_PATH: &str = "/validate-ray-io-v1-rayjob";
/// URL path of the RayService validating webhook.
pub const RAY_SERVICE_WEBHOOK_PATH: &str = "/validate-ray-io-v1-rayservice";
/// Name of the RayCluster webhook in the ValidatingWebhookConfiguration.
pub const RAY_CLUSTER_WEBHOOK_NAME: &str = "vraycluster.kb.io";
/// Name of the RayJob webhook in the ValidatingWebhookConfiguration.
pub const RAY_JOB_WEBHOOK_NAME: &str = "vrayjob.kb.io";
/// Name of the RayService webhook in the ValidatingWebhookConfiguration.
pub const RAY_SERVICE_WEBHOOK_NAME: &str = "vrayservice.kb.io";
/// Name of KubeRay's ValidatingWebhookConfiguration.
pub const VALIDATING_WEBHOOK_CONFIGURATION_NAME: &str = "validating-webhook-configuration";
/// Port of the webhook server (controller-runtime's default).
pub const DEFAULT_WEBHOOK_PORT: u16 = 9443;
/// Directory holding the webhook server's `tls.crt` and `tls.key` (controller-runtime's default).
pub const DEFAULT_WEBHOOK_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
/// File name of the webhook server's certificate chain (PEM) in the cert directory.
pub const WEBHOOK_CERT_FILE: &str = "tls.crt";
/// File name of the webhook server's private key (PEM) in the cert directory.
pub const WEBHOOK_KEY_FILE: &str = "tls.key";
/// The webhooks' message for a repeated worker group name.
pub const WORKER_GROUP_NAMES_MUST_BE_UNIQUE: &str = "worker group names must be unique";
