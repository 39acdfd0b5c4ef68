//! Fuzz: mutated KubeRay samples through `kuberay-operator render --keep-going`, a batch of files per
//! process. Every document is either rendered or refused with an `error: <file>: ...` line naming it; a
//! document our own decoding cannot read is always refused; the binary never crashes (a crashing batch
//! is replayed one document per process to name the culprit). The seed is printed;
//! `KUBERAY_FUZZ_SEED=<n>` replays a run, `KUBERAY_FUZZ_RENDER_DOCUMENTS=<n>` changes its length.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use crate::common;
use common::fuzz::{self, Mutant, Rng, Scope, Verdict};
use ray_api::validation::ValidationOptions;
use serde_json::Value;

/// Documents per run by default.
const DOCUMENTS: usize = 300;
/// Documents per `render` process: each process spends a few seconds of CPU on the CRD schemas in a
/// debug build before it reads any input, so documents are batched.
const BATCH: usize = 50;
/// Concurrent `render` processes.
const WORKERS: usize = 2;

/// The number of documents of this run.
fn documents() -> usize {
    std::env::var("KUBERAY_FUZZ_RENDER_DOCUMENTS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(DOCUMENTS)
}

/// Runs `render --keep-going` over `files`.
fn render_files(files: &[PathBuf]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kuberay-operator"));
    command.args(["render", "--keep-going"]);
    for file in files {
        command.arg("-f").arg(file);
    }
    // The operator's switches come from the environment; the test must not inherit a developer's.
    let switch = |k: &str| k.starts_with("ENABLE_") || k == "CLUSTER_DOMAIN" || k == "USE_INGRESS_ON_OPENSHIFT";
    for (key, _) in std::env::vars().filter(|(k, _)| switch(k)) {
        command.env_remove(key);
    }
    command.stdin(Stdio::null()).output().unwrap()
}

/// The refusal message `render` printed for `file`, if any.
fn refusal<'a>(stderr: &'a str, file: &Path) -> Option<&'a str> {
    let prefix = format!("error: {}: ", file.display());
    stderr.lines().find_map(|l| l.strip_prefix(prefix.as_str()))
}

/// The problems with `render`'s answer to a batch: (index into the batch, problem).
fn check_batch(batch: &[(&Mutant, PathBuf)], output: &Output) -> Vec<(usize, String)> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let any_refused = batch.iter().any(|(_, file)| refusal(&stderr, file).is_some());
    let expected_exit = if any_refused { 2 } else { 0 };
    if output.status.code() != Some(expected_exit) {
        return vec![(
            usize::MAX,
            format!(
                "exit {:?}, expected {expected_exit}; stderr: {stderr}",
                output.status.code()
            ),
        )];
    }
    match serde_json::from_slice::<Value>(&output.stdout) {
        Ok(list) if list["kind"] == "List" && list["items"].is_array() => {}
        _ => return vec![(usize::MAX, format!("no v1/List on stdout; stderr: {stderr}"))],
    }
    let mut problems = Vec::new();
    for (i, (mutant, file)) in batch.iter().enumerate() {
        let verdict = fuzz::classify(&mutant.kind, &mutant.doc, &ValidationOptions::default());
        match (refusal(&stderr, file), verdict) {
            (Some(message), _) if message.trim().is_empty() => problems.push((i, "an empty refusal".to_owned())),
            (None, Verdict::Undecodable(path)) => {
                problems.push((i, format!("rendered a document that does not decode ({path})")))
            }
            _ => {}
        }
    }
    problems
}

#[test]
fn mutated_samples_render_or_are_refused_never_crash() {
    let started = Instant::now();
    let seed = fuzz::seed("fuzz_render");
    let count = documents();
    let mutants = fuzz::mutants(&fuzz::samples(), count, Scope::Document, &mut Rng::new(seed));
    let dir = std::env::temp_dir().join(format!("kuberay-fuzz-render-{}-{seed}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<(&Mutant, PathBuf)> = mutants
        .iter()
        .enumerate()
        .map(|(i, mutant)| {
            let file = dir.join(format!("{i:04}.json"));
            std::fs::write(&file, serde_json::to_string(&mutant.doc).unwrap()).unwrap();
            (mutant, file)
        })
        .collect();
    let batches: Vec<&[(&Mutant, PathBuf)]> = files.chunks(BATCH).collect();
    let next = Mutex::new(0_usize);
    let failures = Mutex::new(Vec::new());
    let refused = Mutex::new(0_usize);
    let describe = |batch: &[(&Mutant, PathBuf)], i: usize, problem: &str| {
        let (mutant, file) = &batch[i];
        format!(
            "{}: {}: {}",
            file.display(),
            mutant.describe(),
            fuzz::clip(problem, 600)
        )
    };
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                loop {
                    let b = {
                        let mut next = next.lock().unwrap();
                        *next += 1;
                        *next - 1
                    };
                    let Some(batch) = batches.get(b) else { break };
                    let paths: Vec<PathBuf> = batch.iter().map(|(_, f)| f.clone()).collect();
                    let output = render_files(&paths);
                    let problems = check_batch(batch, &output);
                    let whole_batch_failed = problems.iter().any(|(i, _)| *i == usize::MAX);
                    if whole_batch_failed {
                        // Replay one document per process to name the documents at fault.
                        for (i, entry) in batch.iter().enumerate() {
                            let single = std::slice::from_ref(entry);
                            for (_, problem) in check_batch(single, &render_files(std::slice::from_ref(&entry.1))) {
                                failures.lock().unwrap().push(describe(batch, i, &problem));
                            }
                        }
                        if failures.lock().unwrap().is_empty() {
                            failures
                                .lock()
                                .unwrap()
                                .push(format!("batch {b} failed as a whole only: {problems:?}"));
                        }
                        continue;
                    }
                    for (i, problem) in problems {
                        failures.lock().unwrap().push(describe(batch, i, &problem));
                    }
                    let stderr = String::from_utf8_lossy(&output.stderr);
                    *refused.lock().unwrap() += batch.iter().filter(|(_, f)| refusal(&stderr, f).is_some()).count();
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    let failures = failures.into_inner().unwrap();
    let refused = refused.into_inner().unwrap();
    println!(
        "fuzz_render: {count} documents in {} processes, {:.1} s: {} rendered, {refused} refused, {} failures",
        batches.len(),
        started.elapsed().as_secs_f64(),
        count - refused,
        failures.len()
    );
    assert!(
        count == 0 || refused > 0,
        "no document was refused: the mutations did nothing"
    );
    fuzz::assert_no_failures(seed, &failures);
}
