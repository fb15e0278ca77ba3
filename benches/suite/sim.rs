//! The simulator: one whole run of the 84-minute incident (parent and 10 children), without a
//! trace (as a sweep runs it) and with its trace hashed. Target: under 1 ms per run.

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, run};
use loopsim_world::trace::TraceWriter;

use crate::support::{root, timed};

pub const INCIDENT: &str = "sim/incident_run";
pub const INCIDENT_TRACED: &str = "sim/incident_run_hashed_trace";

pub fn incident() -> Scenario {
    Scenario::load(&root().join("scenarios/execute-code-spin-wait.toml"))
        .expect("the incident scenario")
}

/// Events the incident run handles (for events per second).
pub fn incident_events(sc: &Scenario) -> u64 {
    run(sc, &RunOptions::default(), TraceWriter::hash_only())
        .expect("runs")
        .events
}

pub fn benches(c: &mut Criterion) {
    let sc = incident();
    let events = incident_events(&sc);
    let mut g = c.benchmark_group("sim");
    g.throughput(Throughput::Elements(events));
    // What a sweep does: summaries only, no trace.
    g.bench_function("incident_run", |b| {
        b.iter_custom(|iters| {
            timed(INCIDENT, iters, || {
                black_box(run(&sc, &RunOptions::default(), TraceWriter::off()).expect("runs"));
            })
        })
    });
    // With every trace line serialised and hashed (determinism checks, replay).
    g.bench_function("incident_run_hashed_trace", |b| {
        b.iter_custom(|iters| {
            timed(INCIDENT_TRACED, iters, || {
                black_box(
                    run(&sc, &RunOptions::default(), TraceWriter::hash_only()).expect("runs"),
                );
            })
        })
    });
    g.finish();
}
