//! `kuberay-operator render`: the objects the operator would create for the given resources on an
//! empty cluster, in creation order, as one `v1/List`.
//!
//! Input is read strictly (an unknown field is an error naming its path) and validated with
//! KubeRay's rules; switches come from the same places as the operator's: `ENABLE_*` / `CLUSTER_DOMAIN` /
//! `USE_INGRESS_ON_OPENSHIFT` in the environment, `--feature-gates`, `--batch-scheduler`. What the operator
//! discovers from the API server is a flag instead: `--openshift`.

mod cluster;
mod input;
mod job;
mod service;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use ray_api::constants::USE_INGRESS_ON_OPENSHIFT;
use ray_gang::scheduler::BatchScheduler;
use ray_gang::selection::{SchedulerConfig, select_scheduler};
use ray_podgen::random::SeededSuffix;
use ray_podgen::{FeatureGates, PodGenConfig};
use serde_json::Value;

pub use input::InputError;

/// Output formats of `render`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// One JSON document.
    #[default]
    Json,
    /// One YAML document.
    Yaml,
}

/// Arguments of `render`.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// A YAML file of RayCluster / RayJob / RayService documents (`-` for stdin); repeatable.
    #[arg(short = 'f', long = "filename", required_unless_present = "webhook_config")]
    files: Vec<String>,
    /// Print the ValidatingWebhookConfiguration of the operator's webhooks (`ENABLE_WEBHOOKS=true`) instead.
    #[arg(long = "webhook-config", conflicts_with = "files")]
    webhook_config: bool,
    /// With --webhook-config: reach the webhooks at this base URL (`https://host:port`) instead of a Service.
    #[arg(long = "webhook-url", requires = "webhook_config")]
    webhook_url: Option<String>,
    /// With --webhook-config: namespace of the webhook Service.
    #[arg(long = "webhook-service-namespace", requires = "webhook_config", default_value = crate::webhook::config::DEFAULT_SERVICE_NAMESPACE)]
    webhook_service_namespace: String,
    /// With --webhook-config: name of the webhook Service.
    #[arg(long = "webhook-service-name", requires = "webhook_config", default_value = crate::webhook::config::DEFAULT_SERVICE_NAME)]
    webhook_service_name: String,
    /// With --webhook-config: a PEM file of the CA that signed the webhook server's certificate (`caBundle`).
    #[arg(long = "webhook-ca-bundle", requires = "webhook_config")]
    webhook_ca_bundle: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Json)]
    output: OutputFormat,
    /// The batch scheduler the operator would run with (`volcano`, `yunikorn`, `scheduler-plugins`, `kai-scheduler`).
    #[arg(long = "batch-scheduler", default_value = "")]
    batch_scheduler: String,
    /// Feature gates, as on the operator (`RayMultiHostIndexing=false,...`).
    #[arg(long = "feature-gates", default_value = "")]
    feature_gates: String,
    /// Seed of the random name suffixes (RayJob / RayService clusters, multi-host replicas).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Go on past an invalid document: refuse each one on stderr, render the others, and exit 2 if any
    /// was refused.
    #[arg(long = "keep-going")]
    keep_going: bool,
    /// Render as the operator would on OpenShift: `enableIngress` gives a Route instead of an Ingress
    /// (unless `USE_INGRESS_ON_OPENSHIFT=true` in the environment, as for the operator).
    #[arg(long)]
    openshift: bool,
}

/// Everything a rendering needs besides the input documents.
pub struct RenderSettings {
    /// Pod generation switches.
    pub podgen: PodGenConfig,
    /// The batch scheduler.
    pub scheduler: BatchScheduler,
    /// Random name suffixes.
    pub suffixes: SeededSuffix,
    /// Remarks for stderr about what was not rendered and why.
    pub notes: Vec<String>,
    /// `enableIngress` renders an OpenShift Route instead of an Ingress (`--openshift`).
    pub use_openshift_route: bool,
}

impl RenderSettings {
    /// Builds the settings from the flags and an environment snapshot.
    pub fn new(
        env: &BTreeMap<String, String>,
        feature_gates: &str,
        batch_scheduler: &str,
        seed: u64,
    ) -> anyhow::Result<Self> {
        let mut podgen = PodGenConfig::from_env_map(env);
        podgen.feature_gates = FeatureGates::parse(feature_gates).context("--feature-gates")?;
        let scheduler = select_scheduler(&SchedulerConfig {
            enable_batch_scheduler: false,
            batch_scheduler: batch_scheduler.to_owned(),
            kubernetes_was_gate: podgen.feature_gates.kubernetes_was,
        })
        .context("--batch-scheduler")?;
        Ok(Self {
            podgen,
            scheduler,
            suffixes: SeededSuffix::new(seed),
            notes: Vec::new(),
            use_openshift_route: false,
        })
    }
}

/// What a rendering produced: the objects of the documents that rendered and the refusals.
#[derive(Debug, Default)]
pub struct Rendered {
    /// The objects, in creation order.
    pub items: Vec<Value>,
    /// Why documents were refused, in input order; without `keep_going` at most one, and `items` is
    /// then incomplete.
    pub refused: Vec<InputError>,
}

/// Renders every document of every named input. Without `keep_going` the first invalid document ends
/// the rendering; with it, each invalid document is refused on its own and the others still render.
pub fn render_sources(
    sources: &[(String, String)],
    settings: &mut RenderSettings,
    skipped: &mut Vec<String>,
    keep_going: bool,
) -> Rendered {
    let mut rendered = Rendered::default();
    let options = settings.podgen.feature_gates.validation_options();
    for (name, text) in sources {
        let documents = match input::read_documents(name, text, &options, &mut settings.suffixes) {
            Ok(documents) => documents,
            Err(e) => {
                rendered.refused.push(e);
                if keep_going {
                    continue;
                }
                return rendered;
            }
        };
        for document in documents {
            match document.and_then(|document| render_document(document, settings, skipped, name)) {
                Ok(items) => rendered.items.extend(items),
                Err(e) => {
                    rendered.refused.push(e);
                    if !keep_going {
                        return rendered;
                    }
                }
            }
        }
    }
    rendered
}

/// The objects of one valid document (none for a kind `render` skips, which it notes in `skipped`).
fn render_document(
    document: input::Document,
    settings: &mut RenderSettings,
    skipped: &mut Vec<String>,
    source: &str,
) -> Result<Vec<Value>, InputError> {
    match document {
        input::Document::Cluster { origin, cluster } => cluster::render_cluster(&origin, &cluster, settings),
        input::Document::Job { origin, job } => job::render_job(&origin, &job, settings),
        input::Document::Service { origin, service } => service::render_service(&origin, &service, settings),
        input::Document::Skipped { index, kind } => {
            skipped.push(format!("{source}: document {index}: skipping kind {kind:?}"));
            Ok(Vec::new())
        }
    }
}

/// The `v1/List` wrapping the rendered objects.
pub fn as_list(items: Vec<Value>) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// Runs `render`: exit code 0 on success, 2 on invalid input (messages on stderr; nothing on stdout
/// unless `--keep-going`, which prints the documents that did render).
pub fn run(args: RenderArgs) -> anyhow::Result<ExitCode> {
    if args.webhook_config {
        return print_webhook_config(&args);
    }
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let mut settings = RenderSettings::new(&env, &args.feature_gates, &args.batch_scheduler, args.seed)?;
    settings.use_openshift_route = ray_reconcile::config::use_openshift_route(
        args.openshift,
        env.get(USE_INGRESS_ON_OPENSHIFT).map(String::as_str),
    );
    let mut sources = Vec::new();
    for file in &args.files {
        let text = if file == "-" {
            std::io::read_to_string(std::io::stdin()).context("reading stdin")?
        } else {
            std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?
        };
        sources.push((file.clone(), text));
    }
    let mut skipped = Vec::new();
    let rendered = render_sources(&sources, &mut settings, &mut skipped, args.keep_going);
    for line in skipped.iter().chain(&settings.notes) {
        eprintln!("{line}");
    }
    for refusal in &rendered.refused {
        eprintln!("error: {refusal}");
    }
    if rendered.refused.is_empty() || args.keep_going {
        print(&as_list(rendered.items), args.output)?;
    }
    Ok(if rendered.refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// `render --webhook-config`: KubeRay's ValidatingWebhookConfiguration for a Service or a URL.
fn print_webhook_config(args: &RenderArgs) -> anyhow::Result<ExitCode> {
    use crate::webhook::config::{WebhookEndpoint, validating_webhook_configuration};
    let endpoint = match &args.webhook_url {
        Some(url) => WebhookEndpoint::Url(url.clone()),
        None => WebhookEndpoint::Service {
            namespace: args.webhook_service_namespace.clone(),
            name: args.webhook_service_name.clone(),
        },
    };
    let ca = match &args.webhook_ca_bundle {
        Some(path) => Some(std::fs::read(path).with_context(|| format!("reading --webhook-ca-bundle {path}"))?),
        None => None,
    };
    print(&validating_webhook_configuration(&endpoint, ca.as_deref()), args.output)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `value` to stdout in `format` (a closed pipe is not an error).
fn print(value: &Value, format: OutputFormat) -> anyhow::Result<()> {
    let text = match format {
        OutputFormat::Json => serde_json::to_string_pretty(value)? + "\n",
        OutputFormat::Yaml => serde_saphyr::to_string(value).context("writing YAML")?,
    };
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sample file KubeRay ships, rendered as a user would with the operator's defaults. A
    /// document either renders or is refused with KubeRay's own validation message; the refusals
    /// are printed and listed in docs/podgen.md.
    #[test]
    fn every_kuberay_sample_renders_or_fails_with_kuberays_message() {
        let files = kuberay_reference::sample_files();
        let (mut rendered, mut refused, mut objects) = (0, Vec::new(), 0);
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let mut settings = RenderSettings::new(&BTreeMap::new(), "", "", 0).unwrap();
            let result = render_sources(&[(name.clone(), text)], &mut settings, &mut Vec::new(), false);
            match result.refused.first() {
                None => {
                    rendered += 1;
                    objects += result.items.len();
                }
                Some(e @ InputError::Invalid { .. }) => refused.push(e.to_string()),
                Some(other) => panic!("{name}: not a validation refusal: {other}"),
            }
        }
        println!(
            "{} sample files: {rendered} rendered ({objects} objects), {} refused by validation",
            files.len(),
            refused.len()
        );
        for line in &refused {
            println!("  refused: {line}");
        }
        assert!(files.len() > 80, "expected KubeRay's ~94 sample files");
        // Only alpha-gated samples may be refused (they say so in their comments).
        assert!(refused.len() <= 10, "{} refusals", refused.len());
    }

    /// `--keep-going`: an invalid document in the middle is refused on its own, naming its index, and the
    /// documents around it still render; without it the rendering stops at the refusal.
    #[test]
    fn keep_going_refuses_only_the_invalid_document() {
        let sample = kuberay_reference::sample_text("ray-cluster.sample.yaml");
        let broken = sample.replace("rayStartParams: {}", "rayStartParams: 7");
        assert_ne!(broken, sample, "the sample changed; pick another field to break");
        let text = format!("{sample}\n---\n{broken}\n---\n{sample}");
        let sources = [("three.yaml".to_owned(), text)];
        let mut settings = RenderSettings::new(&BTreeMap::new(), "", "", 0).unwrap();
        let all = render_sources(&sources, &mut settings, &mut Vec::new(), true);
        assert_eq!(all.refused.len(), 1, "{:?}", all.refused);
        let message = all.refused[0].to_string();
        assert!(message.starts_with("three.yaml: document 1 (RayCluster)"), "{message}");
        let mut settings = RenderSettings::new(&BTreeMap::new(), "", "", 0).unwrap();
        let first_only = render_sources(&sources, &mut settings, &mut Vec::new(), false);
        assert_eq!(first_only.refused.len(), 1);
        assert_eq!(all.items.len(), 2 * first_only.items.len());
        assert!(!first_only.items.is_empty());
    }
}
