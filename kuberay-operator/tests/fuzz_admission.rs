//! Fuzz: mutated KubeRay samples through the admission webhook (`ray_reconcile::admission::review`), as
//! CREATE requests. Every answer is an AdmissionReview echoing the request's uid, allowed or denied with a
//! message and an HTTP code; nothing panics. A document our own decoding cannot read is always denied. The
//! seed is printed; `KUBERAY_FUZZ_SEED=<n>` replays a run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use crate::common;
use common::fuzz::{self, Mutant, Rng, Scope, Verdict};
use ray_api::validation::ValidationOptions;
use ray_reconcile::admission::{WebhookKind, review};
use serde_json::{Value, json};

/// Documents per run.
const DOCUMENTS: usize = 600;
const UID: &str = "705ab4f5-6393-11e8-b7cc-42010a800002";

fn request(mutant: &Mutant) -> Vec<u8> {
    let resource = format!("{}s", mutant.kind.to_lowercase());
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": UID,
            "kind": {"group": "ray.io", "version": "v1", "kind": mutant.kind},
            "resource": {"group": "ray.io", "version": "v1", "resource": resource},
            "name": mutant.doc["metadata"]["name"].as_str().unwrap_or_default(),
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "fuzz"},
            "object": mutant.doc,
            "dryRun": false,
        },
    });
    serde_json::to_vec(&body).unwrap()
}

fn webhook(kind: &str) -> WebhookKind {
    match kind {
        "RayCluster" => WebhookKind::Cluster,
        "RayJob" => WebhookKind::Job,
        _ => WebhookKind::Service,
    }
}

/// The problem with the webhook's answer to `mutant`, if any; `Ok(allowed)` otherwise.
fn check(mutant: &Mutant, answer: &Value) -> Result<bool, String> {
    let response = &answer["response"];
    let Some(allowed) = response["allowed"].as_bool() else {
        return Err(format!("no `allowed` in {answer}"));
    };
    let code = response["status"]["code"].as_u64().unwrap_or_default();
    if allowed {
        if response["uid"] != UID {
            return Err(format!("allowed without echoing the uid: {answer}"));
        }
        if let Verdict::Undecodable(path) = fuzz::classify(&mutant.kind, &mutant.doc, &ValidationOptions::default()) {
            return Err(format!("allowed a document that does not decode ({path})"));
        }
        return Ok(true);
    }
    let message = response["status"]["message"].as_str().unwrap_or_default();
    if message.trim().is_empty() || !matches!(code, 400 | 422) {
        return Err(format!("denied without a message or with code {code}: {answer}"));
    }
    Ok(false)
}

#[test]
fn mutated_samples_are_allowed_or_denied_never_panic() {
    let started = Instant::now();
    let seed = fuzz::seed("fuzz_admission");
    let mutants = fuzz::mutants(&fuzz::samples(), DOCUMENTS, Scope::Document, &mut Rng::new(seed));
    let (mut allowed, mut denied) = (0, 0);
    let mut failures = Vec::new();
    for (i, mutant) in mutants.iter().enumerate() {
        let body = request(mutant);
        let kind = webhook(&mutant.kind);
        let answer = std::panic::catch_unwind(|| review(kind, Some("application/json"), &body));
        let outcome = match answer {
            Err(_) => Err("the webhook panicked".to_owned()),
            Ok(answer) => check(mutant, &serde_json::to_value(answer).unwrap()),
        };
        match outcome {
            Ok(true) => allowed += 1,
            Ok(false) => denied += 1,
            Err(problem) => failures.push(format!("#{i} {}: {}", mutant.describe(), fuzz::clip(&problem, 600))),
        }
    }
    println!(
        "fuzz_admission: {DOCUMENTS} documents in {:.1} s: {allowed} allowed, {denied} denied, {} failures",
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    fuzz::assert_no_failures(seed, &failures);
}
