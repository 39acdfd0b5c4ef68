//! Fuzz: mutated KubeRay samples through `kuberay-operator render -f -`. Every document either renders
//! (exit 0, a `v1/List`) or is refused (exit 2, `error: -: ...` naming the document); the binary never
//! crashes. A document our own decoding cannot read is always refused. The seed is printed;
//! `KUBERAY_FUZZ_SEED=<n>` replays a run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Instant;

mod common;
use common::fuzz::{self, Mutant, Rng, Scope, Verdict};
use ray_api::validation::ValidationOptions;
use serde_json::Value;

/// Documents per run by default. Each `render` process spends about 4 s of CPU in a debug build setting up
/// the CRD schemas before it reads its one document, so CI runs few; set
/// `KUBERAY_FUZZ_RENDER_DOCUMENTS` for a longer run.
const DOCUMENTS: usize = 16;
/// Concurrent `render` processes.
const WORKERS: usize = 2;

/// The number of documents of this run.
fn documents() -> usize {
    std::env::var("KUBERAY_FUZZ_RENDER_DOCUMENTS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(DOCUMENTS)
}

fn render_stdin(text: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kuberay-operator"));
    command.args(["render", "-f", "-"]);
    // The operator's switches come from the environment; the test must not inherit a developer's.
    let switch = |k: &str| k.starts_with("ENABLE_") || k == "CLUSTER_DOMAIN" || k == "USE_INGRESS_ON_OPENSHIFT";
    for (key, _) in std::env::vars().filter(|(k, _)| switch(k)) {
        command.env_remove(key);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The binary may refuse before reading everything; a broken pipe then is not a failure.
    let _ = child.stdin.take().unwrap().write_all(text.as_bytes());
    child.wait_with_output().unwrap()
}

/// The problem with `render`'s answer to `mutant`, if any.
fn check(mutant: &Mutant, output: &Output) -> Option<String> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let verdict = fuzz::classify(&mutant.kind, &mutant.doc, &ValidationOptions::default());
    match output.status.code() {
        Some(0) => {
            if let Verdict::Undecodable(path) = verdict {
                return Some(format!("rendered a document that does not decode ({path})"));
            }
            match serde_json::from_slice::<Value>(&output.stdout) {
                Ok(list) if list["kind"] == "List" && list["items"].is_array() => None,
                _ => Some(format!("exit 0 without a v1/List on stdout; stderr: {stderr}")),
            }
        }
        Some(2) => {
            let message = stderr.lines().find_map(|l| l.strip_prefix("error: -: "));
            match message {
                Some(m) if !m.trim().is_empty() && output.stdout.is_empty() => None,
                _ => Some(format!("exit 2 without an `error: -: ...` message; stderr: {stderr}")),
            }
        }
        other => Some(format!("exit {other:?} (crash?); stderr: {stderr}")),
    }
}

#[test]
fn mutated_samples_render_or_are_refused_never_crash() {
    let started = Instant::now();
    let seed = fuzz::seed("fuzz_render");
    let count = documents();
    let mutants = fuzz::mutants(&fuzz::samples(), count, Scope::Document, &mut Rng::new(seed));
    let next = Mutex::new(0_usize);
    let failures = Mutex::new(Vec::new());
    let outcomes = Mutex::new([0_usize; 2]);
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                loop {
                    let i = {
                        let mut next = next.lock().unwrap();
                        *next += 1;
                        *next - 1
                    };
                    let Some(mutant) = mutants.get(i) else { break };
                    let output = render_stdin(&serde_json::to_string(&mutant.doc).unwrap());
                    match check(mutant, &output) {
                        Some(problem) => failures.lock().unwrap().push(format!(
                            "#{i} {}: {}",
                            mutant.describe(),
                            fuzz::clip(&problem, 600)
                        )),
                        None => outcomes.lock().unwrap()[usize::from(output.status.code() == Some(2))] += 1,
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let [rendered, refused] = outcomes.into_inner().unwrap();
    println!(
        "fuzz_render: {count} documents in {:.1} s: {rendered} rendered, {refused} refused, {} failures",
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    fuzz::assert_no_failures(seed, &failures);
}
