//! The simulator: one whole run of the 84-minute incident (parent and 10 children), without a
//! trace (as a sweep runs it) and with its trace hashed. Target: under 1 ms per run.

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use loopsim_engine::guardrails::Action;
use loopsim_world::guard_log::{GuardCall, GuardLog};
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, run};
use loopsim_world::trace::TraceWriter;

use crate::support::{best_ns, root, timed};

pub const INCIDENT: &str = "sim/incident_run";
pub const INCIDENT_TRACED: &str = "sim/incident_run_hashed_trace";
pub const INCIDENT_ENGINE: &str = "sim/incident_engine_only";

/// The calls the incident run makes to its agents' engines, in order.
pub fn incident_guard_calls(sc: &Scenario) -> Vec<GuardCall> {
    let log: GuardLog = Default::default();
    let opts = RunOptions {
        guard_log: Some(log.clone()),
        ..RunOptions::default()
    };
    run(sc, &opts, TraceWriter::off()).expect("runs");
    log.lock().expect("log").clone()
}

/// The engine alone on a run's calls: a fresh controller per agent, every call answered.
/// Returns the decisions that were not `allow` (so the work cannot be optimised away).
pub fn replay(calls: &[GuardCall]) -> u32 {
    let mut flagged = 0;
    loopsim_world::guard_log::replay(calls, |d, o| {
        flagged +=
            u32::from(d.action != Action::Allow) + u32::from(o.is_some_and(|o| o.kind.is_some()));
    });
    flagged
}

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
    // The engine's share: the same run's engine calls, answered by the engine alone.
    let calls = incident_guard_calls(&sc);
    g.bench_function("incident_engine_only", |b| {
        b.iter_custom(|iters| {
            timed(INCIDENT_ENGINE, iters, || {
                black_box(replay(black_box(&calls)));
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

/// The engine bridge's cost per guardrail decision, beside the built-in engine's: the
/// incident scenario under hermes-0.19.0 with each engine (best of `runs`, process start
/// included for the bridge). Returns (builtin ns, bridge ns) per decision.
pub fn bridge_cost(python: &std::path::Path, runs: usize) -> Result<(f64, f64), String> {
    use loopsim_world::engine_bridge::EngineChoice;
    let sc = incident();
    let profile = Some(loopsim_engine::profile::ProfileName::Hermes0_19_0);
    let time = |engine: EngineChoice| -> Result<(f64, u64), String> {
        let mut best = f64::INFINITY;
        let mut calls = 0;
        for _ in 0..runs {
            let opts = RunOptions {
                profile,
                engine: engine.clone(),
                ..RunOptions::default()
            };
            let t = std::time::Instant::now();
            let s = run(&sc, &opts, TraceWriter::off()).map_err(|e| e.to_string())?;
            best = best.min(t.elapsed().as_nanos() as f64);
            // Every tool call goes through before_call and after_call; resets are extra.
            calls = s.agents.iter().map(|a| a.usage.model_calls).sum::<u64>();
        }
        Ok((best, calls))
    };
    let (builtin, calls) = time(EngineChoice::Builtin)?;
    let adapter = root().join("bridges/hermes/adapter.py");
    let (bridge, _) = time(EngineChoice::HermesPython {
        python: python.to_path_buf(),
        adapter,
    })?;
    let decisions = (calls * 2).max(1) as f64;
    Ok((builtin / decisions, bridge / decisions))
}

/// Per-round times (ns per run) of the incident run and of its engine calls replayed.
pub struct Rounds {
    pub run_ns: Vec<f64>,
    pub engine_ns: Vec<f64>,
}

/// The incident run and the engine alone on its calls, back to back in each of `n` rounds
/// (the first of the two alternating; each the best of two batches of [`BATCH`]), so each
/// round's ratio sees one speed of this drifting machine.
pub fn interleaved(n: usize) -> Rounds {
    const BATCH: u32 = 25;
    let sc = incident();
    let calls = incident_guard_calls(&sc);
    let time = |f: &dyn Fn()| {
        best_ns(2, &|| {
            for _ in 0..BATCH {
                f();
            }
        }) / f64::from(BATCH)
    };
    let run_once = || {
        black_box(run(&sc, &RunOptions::default(), TraceWriter::off()).expect("runs"));
    };
    let engine_once = || {
        black_box(replay(black_box(&calls)));
    };
    let (mut run_ns, mut engine_ns) = (vec![], vec![]);
    for round in 0..n.max(1) {
        if round % 2 == 0 {
            run_ns.push(time(&run_once));
            engine_ns.push(time(&engine_once));
        } else {
            engine_ns.push(time(&engine_once));
            run_ns.push(time(&run_once));
        }
    }
    Rounds { run_ns, engine_ns }
}
