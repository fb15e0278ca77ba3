//! Instruction counts of the hot paths, measured by Callgrind through gungraun: stable on a
//! noisy machine, so CI can gate on them. `benches/check_instructions.py` compares the counts
//! with the limits committed in `benches/instructions.json` (more than 5% above fails).
//!
//! Run: `cargo bench --bench instructions -- --save-summary=json` (needs valgrind and the
//! `gungraun-runner` of the same version as the gungraun crate; `.ci/run` installs it).

use std::hint::black_box;
use std::path::PathBuf;

use gungraun::{library_benchmark, library_benchmark_group, main};
use loopsim_engine::config::EngineConfig;
use loopsim_engine::guard_protocol::GuardSession;
use loopsim_engine::guardrails::{CallFacts, Controller, GuardrailConfig, GuardrailRules};
use loopsim_engine::json::{self, Value};
use loopsim_engine::profile::ProfileName;
use loopsim_report::sweep::{Aggregator, Axis, SweepSpec};
use loopsim_runner::sweep::run_jobs;
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, run};
use loopsim_world::trace::TraceWriter;

#[path = "suite/seq.rs"]
#[allow(dead_code)]
mod seq;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// 200 calls: read_file and execute_code results of about 1 KB, some repeated, some failing.
fn calls() -> Vec<(&'static str, Value, String, bool)> {
    (0..200u32)
        .map(|i| {
            let tool = if i % 3 == 0 { "execute_code" } else { "read_file" };
            let args = json::parse(format!(r#"{{"path": "src/f{}.rs", "line": {}}}"#, i % 7, i % 5).as_bytes()).unwrap();
            let result = format!(
                r#"{{"content": "{}", "duration_seconds": 0.{i}, "kernel": {{"execution_count": {i}}}}}"#,
                "x".repeat(900 + (i % 4) as usize)
            );
            (tool, args, result, i % 11 == 0)
        })
        .collect()
}

#[library_benchmark]
#[bench::two_hundred_calls(setup = calls)]
fn after_call_plus_stall(calls: Vec<(&'static str, Value, String, bool)>) -> u32 {
    let cfg = GuardrailConfig {
        hard_stop_enabled: true,
        ..GuardrailConfig::default()
    };
    let mut c = Controller::new(cfg, GuardrailRules::NEWEST);
    let mut warned = 0;
    for (tool, args, result, failed) in &calls {
        let facts = CallFacts::new(tool, args, Some(result.as_bytes()), c.rules());
        let d = c.after_call_facts(&facts, *failed);
        let o = c.observe_call(&facts, *failed);
        warned += u32::from(d.count > 0) + u32::from(o.kind.is_some());
    }
    black_box(warned)
}

/// 1,000 request lines of each guard stream the speed table measures: the engine sequence's
/// calls (with their results, or with short ones) built here, and committed excerpts of the
/// conformance generator's stream and of the stream built from real Hermes sessions
/// (`benches/streams/`, the first 1,000 lines of the full streams).
fn stream(name: &str) -> Vec<u8> {
    match name {
        "engine-sequence" => seq::Sequence::generate()
            .guard_lines(false, 1000)
            .into_bytes(),
        "short-results" => seq::Sequence::generate()
            .guard_lines(true, 1000)
            .into_bytes(),
        file => std::fs::read(root().join(format!("benches/streams/{file}-1000.jsonl"))).unwrap(),
    }
}

// `loopsim guard`'s work on a stream, in process: every line read and answered.
#[library_benchmark]
#[bench::conformance(setup = stream, args = ("conformance"))]
#[bench::engine_sequence(setup = stream, args = ("engine-sequence"))]
#[bench::short_results(setup = stream, args = ("short-results"))]
#[bench::imported_sessions(setup = stream, args = ("imported-sessions"))]
fn guard_stream(lines: Vec<u8>) -> usize {
    let mut s = GuardSession::new(&EngineConfig::new(ProfileName::Hermes0_19_0, None));
    let mut out = Vec::with_capacity(1 << 16);
    for line in lines.split(|b| *b == b'\n') {
        s.handle_line(line, &mut out).unwrap();
    }
    black_box(out.len())
}

fn incident() -> Scenario {
    Scenario::load(&root().join("scenarios/execute-code-spin-wait.toml")).unwrap()
}

#[library_benchmark]
#[bench::seed_1(setup = incident)]
fn incident_run(sc: Scenario) -> u64 {
    black_box(
        run(&sc, &RunOptions::default(), TraceWriter::off())
            .unwrap()
            .events,
    )
}

fn sweep_step() -> (SweepSpec, Vec<Scenario>) {
    let scenarios =
        vec![Scenario::load(&root().join("scenarios/read-only-no-progress.toml")).unwrap()];
    let spec = SweepSpec {
        scenarios: scenarios
            .iter()
            .map(|s| (s.path.clone(), s.content_hash.hex()))
            .collect(),
        profiles: vec![],
        platform: None,
        config: None,
        axes: vec![
            Axis::parse("tool_loop_guardrails.hard_stop_after.idempotent_no_progress=2..=5")
                .unwrap(),
        ],
        seeds: (0, 8),
        baseline: vec![],
    };
    (spec, scenarios)
}

// One sweep step: 40 runs (5 settings x 8 seeds), rows aggregated.
#[library_benchmark]
#[bench::forty_runs(setup = sweep_step)]
fn sweep_forty_runs((spec, scenarios): (SweepSpec, Vec<Scenario>)) -> usize {
    // One pool thread, and it is this one: Callgrind counts the thread the bench runs on.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .use_current_thread()
        .build()
        .unwrap();
    pool.install(|| sweep(&spec, &scenarios))
}

fn sweep(spec: &SweepSpec, scenarios: &[Scenario]) -> usize {
    let plan = loopsim_runner::sweep::plan(spec).unwrap();
    let mut agg = Aggregator::new(false);
    run_jobs(
        spec,
        &plan,
        scenarios,
        0..plan.len(),
        &|| {},
        &|_| Vec::new(),
        &mut |row, _| {
            agg.push(&row);
            Ok(())
        },
    )
    .unwrap();
    black_box(agg.finish().len())
}

library_benchmark_group!(name = engine; benchmarks = after_call_plus_stall, guard_stream);
library_benchmark_group!(name = simulator; benchmarks = incident_run, sweep_forty_runs);

main!(library_benchmark_groups = engine, simulator);
