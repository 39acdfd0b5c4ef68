//! Volcano PodGroup for a cluster with 100 worker groups.

use criterion::{Criterion, criterion_group, criterion_main};

fn podgroup(c: &mut Criterion) {
    c.bench_function("placeholder", |b| b.iter(|| 1 + 1));
}

criterion_group!(benches, podgroup);
criterion_main!(benches);
