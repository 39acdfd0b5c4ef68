//! A seeded mutator of KubeRay's sample RayClusters, RayJobs and RayServices, shared by the fuzz tests
//! (`render`, the admission webhook, the live operator). Each mutated document is a sample with one to
//! three of: a value of the wrong type, an out-of-range number, a huge string, a deleted field, an invalid
//! enum value, a renamed or duplicated worker group.
//!
//! The seed is printed by [`seed`]; `KUBERAY_FUZZ_SEED=<n>` replays a run.

use std::path::Path;

use ray_api::validation::{ValidationOptions, validate_ray_cluster, validate_ray_job, validate_ray_service};
use ray_api::{RayCluster, RayJob, RayService};
use serde_json::{Map, Value, json};

/// The environment variable that fixes the seed (to replay a failure).
pub const SEED_VAR: &str = "KUBERAY_FUZZ_SEED";

/// The kinds the mutator works on.
pub const KINDS: &[&str] = &["RayCluster", "RayJob", "RayService"];

/// The seed CI runs with. A fixed default keeps CI deterministic (a landing run never fails on a seed no one
/// chose); `KUBERAY_FUZZ_SEED` explores other seeds or replays one.
pub const DEFAULT_SEED: u64 = 0x6b75_6265_7261_7921;

/// The run's seed: `KUBERAY_FUZZ_SEED` if set, else [`DEFAULT_SEED`]; printed with how to replay.
pub fn seed(test: &str) -> u64 {
    let seed = match std::env::var(SEED_VAR) {
        Ok(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{SEED_VAR}={text:?}: {e}")),
        Err(_) => DEFAULT_SEED,
    };
    println!("{test}: fuzz seed {seed} (replay with {SEED_VAR}={seed})");
    seed
}

/// SplitMix64: a small deterministic generator, so a seed replays the same documents everywhere.
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// One element of `items` (non-empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// One sample document of a kind the mutator works on.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The sample file's name.
    pub file: String,
    /// `RayCluster`, `RayJob` or `RayService`.
    pub kind: String,
    /// The document as JSON.
    pub doc: Value,
}

/// Every RayCluster / RayJob / RayService document of every KubeRay sample file.
pub fn samples() -> Vec<Sample> {
    let mut samples = Vec::new();
    for path in kuberay_reference::sample_files() {
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        let Some(docs) = documents(&path) else { continue };
        for doc in docs {
            let Some(kind) = doc["kind"].as_str().filter(|k| KINDS.contains(k)) else {
                continue;
            };
            samples.push(Sample {
                file: file.clone(),
                kind: kind.to_owned(),
                doc,
            });
        }
    }
    assert!(!samples.is_empty(), "no RayCluster/RayJob/RayService samples found");
    samples
}

fn documents(path: &Path) -> Option<Vec<Value>> {
    let text = std::fs::read_to_string(path).ok()?;
    ray_api::yaml::from_yaml_documents(&text).ok()
}

/// A mutated sample and what was done to it.
#[derive(Clone, Debug)]
pub struct Mutant {
    /// The sample file it came from.
    pub file: String,
    /// Its kind.
    pub kind: String,
    /// The mutated document.
    pub doc: Value,
    /// The mutations applied, for failure messages (`op at /json/pointer`).
    pub mutations: Vec<String>,
}

impl Mutant {
    /// A one-line description for failure messages.
    pub fn describe(&self) -> String {
        format!("{} {}: {}", self.file, self.kind, self.mutations.join("; "))
    }
}

/// What the operator must do with a document, judged by our own decoding and validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It does not fit our types: an `UndecodableObject` event naming this field path.
    Undecodable(String),
    /// It decodes, but KubeRay's validation rejects it with this message.
    Invalid(String),
    /// It decodes but names another controller in `spec.managedBy`: the operator leaves it alone, silently.
    NotManaged,
    /// It decodes and validates: reconciled like any other.
    Valid,
}

/// Classifies `doc` of `kind` the way the controllers will: decode, then validate with `options`.
pub fn classify(kind: &str, doc: &Value, options: &ValidationOptions) -> Verdict {
    use ray_api::constants::KUBERAY_CONTROLLER;
    use ray_reconcile::decode::decode_value;
    let managed = |by: Option<&String>| by.is_none_or(|m| m == KUBERAY_CONTROLLER);
    let result = match kind {
        "RayCluster" => decode_value::<RayCluster>(doc)
            .map(|c| managed(c.spec.managed_by.as_ref()).then(|| validate_ray_cluster(&c, options))),
        "RayJob" => decode_value::<RayJob>(doc)
            .map(|j| managed(j.spec.managed_by.as_ref()).then(|| validate_ray_job(&j, options))),
        "RayService" => decode_value::<RayService>(doc)
            .map(|s| managed(s.spec.managed_by.as_ref()).then(|| validate_ray_service(&s, options))),
        other => panic!("classify: unexpected kind {other}"),
    };
    match result {
        Err(e) => Verdict::Undecodable(e.path),
        Ok(None) => Verdict::NotManaged,
        Ok(Some(Err(e))) => Verdict::Invalid(e.message),
        Ok(Some(Ok(()))) => Verdict::Valid,
    }
}

/// Whether a mutation may touch `metadata` (the live test names its objects itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Anything but `apiVersion` and `kind`.
    Document,
    /// Only `spec`.
    Spec,
}

/// `count` mutants, cycling through `samples`, each with one to three mutations drawn from `rng`.
pub fn mutants(samples: &[Sample], count: usize, scope: Scope, rng: &mut Rng) -> Vec<Mutant> {
    (0..count)
        .map(|i| {
            let sample = &samples[i % samples.len()];
            let mut doc = sample.doc.clone();
            let rounds = 1 + rng.below(3);
            let mutations = (0..rounds).filter_map(|_| mutate(&mut doc, scope, rng)).collect();
            Mutant {
                file: sample.file.clone(),
                kind: sample.kind.clone(),
                doc,
                mutations,
            }
        })
        .collect()
}

/// Applies one random mutation to `doc`; returns what it did, or `None` if the chosen one found no place.
pub fn mutate(doc: &mut Value, scope: Scope, rng: &mut Rng) -> Option<String> {
    match rng.below(10) {
        0..=3 => replace_any(doc, scope, rng),
        4 => delete_any(doc, scope, rng),
        5 => out_of_range(doc, rng),
        6 => invalid_enum(doc, scope, rng),
        7 => huge_string(doc, scope, rng),
        8 => group_names(doc, rng),
        _ => delete_required(doc, scope, rng),
    }
}

/// Every JSON pointer in `doc` that a mutation of `scope` may touch.
fn pointers(doc: &Value, scope: Scope) -> Vec<String> {
    fn walk(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                    out.push(here.clone());
                    walk(child, here, out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    let here = format!("{at}/{i}");
                    out.push(here.clone());
                    walk(child, here, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, String::new(), &mut out);
    out.retain(|p| match scope {
        Scope::Spec => p.starts_with("/spec"),
        Scope::Document => p != "/apiVersion" && p != "/kind",
    });
    out
}

/// A value of a type (or size) no field expects everywhere.
fn wrong_value(rng: &mut Rng) -> Value {
    match rng.below(14) {
        0 => json!("fuzz"),
        1 => json!(1e308),
        2 => json!([]),
        3 => json!({}),
        4 => Value::Null,
        5 => json!(true),
        6 => json!(i64::MAX),
        7 => json!(u64::MAX),
        8 => json!(i64::MIN),
        9 => json!(-1),
        10 => json!(1.5),
        11 => json!("1Ei"),
        12 => json!([{"a": 1}, "b", 3]),
        _ => json!({"unexpected": {"nested": [null]}}),
    }
}

fn replace_any(doc: &mut Value, scope: Scope, rng: &mut Rng) -> Option<String> {
    let all = pointers(doc, scope);
    if all.is_empty() {
        return None;
    }
    let at = rng.pick(&all).clone();
    let value = wrong_value(rng);
    let described = format!("set {at} = {}", short(&value));
    *doc.pointer_mut(&at)? = value;
    Some(described)
}

fn delete_any(doc: &mut Value, scope: Scope, rng: &mut Rng) -> Option<String> {
    let all = pointers(doc, scope);
    if all.is_empty() {
        return None;
    }
    let at = rng.pick(&all).clone();
    remove(doc, &at).then(|| format!("delete {at}"))
}

/// Removes the value at `at` from its parent object or array.
fn remove(doc: &mut Value, at: &str) -> bool {
    let Some((parent, key)) = at.rsplit_once('/') else {
        return false;
    };
    let key = key.replace("~1", "/").replace("~0", "~");
    match doc.pointer_mut(parent) {
        Some(Value::Object(map)) => map.remove(&key).is_some(),
        Some(Value::Array(items)) => match key.parse::<usize>() {
            Ok(i) if i < items.len() => {
                items.remove(i);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// Pointers to the worker-group lists: a RayCluster's, a RayJob's cluster's, a RayService's cluster's.
fn worker_group_lists(doc: &Value) -> Vec<String> {
    [
        "/spec/workerGroupSpecs",
        "/spec/rayClusterSpec/workerGroupSpecs",
        "/spec/rayClusterConfig/workerGroupSpecs",
    ]
    .into_iter()
    .filter(|p| doc.pointer(p).is_some_and(Value::is_array))
    .map(str::to_owned)
    .collect()
}

/// The cluster spec inside a document, wherever its kind keeps it.
fn cluster_spec(doc: &Value) -> Option<String> {
    ["/spec/rayClusterSpec", "/spec/rayClusterConfig", "/spec/headGroupSpec"]
        .into_iter()
        .find(|p| doc.pointer(p).is_some())
        .map(|p| p.trim_end_matches("/headGroupSpec").to_owned())
}

fn out_of_range(doc: &mut Value, rng: &mut Rng) -> Option<String> {
    let lists = worker_group_lists(doc);
    if lists.is_empty() {
        return None;
    }
    let list = rng.pick(&lists).clone();
    let groups = doc.pointer(&list)?.as_array()?.len();
    if groups == 0 {
        return None;
    }
    let field = *rng.pick(&["replicas", "minReplicas", "maxReplicas", "numOfHosts"]);
    let value = match rng.below(6) {
        0 => json!(-5),
        1 => json!(i64::from(i32::MAX) + 1),
        2 => json!(i64::MAX),
        3 => json!(1e20),
        4 => json!(-9223372036854775808_i64),
        _ => json!(0),
    };
    let at = format!("{list}/{}", rng.below(groups));
    let described = format!("set {at}/{field} = {value}");
    doc.pointer_mut(&at)?.as_object_mut()?.insert(field.to_owned(), value);
    Some(described)
}

/// Fields KubeRay reads as enums, wherever they may sit in a document.
const ENUM_FIELDS: &[&str] = &[
    "submissionMode",
    "upgradeStrategy",
    "type",
    "restartPolicy",
    "imagePullPolicy",
    "serviceType",
    "mode",
    "deletionStrategy",
    "policy",
    "upscalingMode",
    "version",
    "authOptions",
];

fn invalid_enum(doc: &mut Value, scope: Scope, rng: &mut Rng) -> Option<String> {
    let candidates: Vec<String> = pointers(doc, scope)
        .into_iter()
        .filter(|p| ENUM_FIELDS.iter().any(|f| p.ends_with(&format!("/{f}"))))
        .collect();
    let value = json!(*rng.pick(&["Fuzz", "", "always", "NotAMode"]));
    let at = if candidates.is_empty() {
        // No enum in this sample: add one the controllers read.
        let spec = doc.pointer_mut("/spec")?.as_object_mut()?;
        let key = *rng.pick(&["submissionMode", "upgradeStrategy", "managedBy"]);
        spec.insert(key.to_owned(), value.clone());
        format!("/spec/{key}")
    } else {
        let at = rng.pick(&candidates).clone();
        *doc.pointer_mut(&at)? = value.clone();
        at
    };
    Some(format!("set {at} = {value}"))
}

fn huge_string(doc: &mut Value, scope: Scope, rng: &mut Rng) -> Option<String> {
    let strings: Vec<String> = pointers(doc, scope)
        .into_iter()
        .filter(|p| doc.pointer(p).is_some_and(Value::is_string))
        .collect();
    if strings.is_empty() {
        return None;
    }
    let at = rng.pick(&strings).clone();
    let length = *rng.pick(&[254, 4096, 100_000]);
    let fill = *rng.pick(&["x", "ü", "\u{0}", "-"]);
    *doc.pointer_mut(&at)? = Value::String(fill.repeat(length));
    Some(format!("set {at} = {fill:?} × {length}"))
}

fn group_names(doc: &mut Value, rng: &mut Rng) -> Option<String> {
    let lists = worker_group_lists(doc);
    if lists.is_empty() {
        return None;
    }
    let list = rng.pick(&lists).clone();
    let groups = doc.pointer_mut(&list)?.as_array_mut()?;
    let first = groups.first()?.clone();
    match rng.below(3) {
        0 => {
            groups.push(first);
            Some(format!("duplicate {list}/0"))
        }
        1 => {
            let name = *rng.pick(&["", "UPPER_case!", "head", "a.b", "-x"]);
            groups
                .first_mut()?
                .as_object_mut()?
                .insert("groupName".to_owned(), json!(name));
            Some(format!("rename {list}/0 to {name:?}"))
        }
        _ => {
            let mut copy = first;
            copy.as_object_mut()?.remove("groupName");
            groups.push(copy);
            Some(format!("add {list}/{} without a groupName", groups.len() - 1))
        }
    }
}

/// Fields a resource cannot do without, relative to the document or its cluster spec.
fn delete_required(doc: &mut Value, scope: Scope, rng: &mut Rng) -> Option<String> {
    let cluster = cluster_spec(doc).unwrap_or_else(|| "/spec".to_owned());
    let candidates = [
        "/spec".to_owned(),
        "/metadata/name".to_owned(),
        "/spec/entrypoint".to_owned(),
        cluster.clone(),
        format!("{cluster}/headGroupSpec"),
        format!("{cluster}/headGroupSpec/template"),
        format!("{cluster}/headGroupSpec/template/spec/containers"),
        format!("{cluster}/headGroupSpec/template/spec/containers/0/image"),
        format!("{cluster}/headGroupSpec/rayStartParams"),
        format!("{cluster}/workerGroupSpecs/0/groupName"),
        format!("{cluster}/workerGroupSpecs/0/template"),
        format!("{cluster}/workerGroupSpecs/0/template/spec/containers"),
    ];
    let present: Vec<&String> = candidates
        .iter()
        .filter(|p| doc.pointer(p).is_some() && (scope == Scope::Document || p.starts_with("/spec")))
        .collect();
    if present.is_empty() {
        return None;
    }
    let at = rng.pick(&present).to_string();
    if rng.below(2) == 0 {
        remove(doc, &at).then(|| format!("delete {at}"))
    } else {
        *doc.pointer_mut(&at)? = Value::Object(Map::new());
        Some(format!("empty {at}"))
    }
}

/// `value` shortened for a description.
fn short(value: &Value) -> String {
    clip(&value.to_string(), 40)
}

/// Fails the test with every failure and the seed that replays them, unless there are none.
pub fn assert_no_failures(seed: u64, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "seed {seed} ({} failures; replay with {SEED_VAR}={seed}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `text` cut to at most `max` characters (a failure message must stay readable next to huge strings).
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        format!("{}…", text.chars().take(max).collect::<String>())
    } else {
        text.to_owned()
    }
}
