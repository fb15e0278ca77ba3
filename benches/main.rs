//! loopsim benches (the targets in README.md, section Performance), side by side in one run:
//!
//! 1. `engine/after_call_plus_stall` vs `engine/raw_sha256` (target: at most 2x);
//!    `engine_streams/*`: the same on every guard stream's calls, warm and cold
//!    (`stream_calls.rs`, target: at most 1.5x);
//! 2. `engine/v0_19_before_after` vs Hermes 0.19.0's Python controller in-process
//!    (`benches/python_controller.py`, target: at least 20x faster);
//! 3. `process/loopsim_guard_0_19` vs `tests/conformance/hermes_driver.py` on the same
//!    200,000-line stream (target: at least 10x faster), and on every stream of
//!    `streams.rs` against the driver and the floor (read + SHA-256) measured beside it;
//! 4. `sim/incident_run`: the whole 84-minute incident scenario (target: under 1 ms), and
//!    per event against the engine's decisions on the same calls (target: at most 3x);
//! 5. `sweep/runs_1_thread` vs `sweep/runs_2_threads` (target: at least 1.9x; beside it the
//!    machine's own ceiling, two independent halves at once), and the peak
//!    memory of a 100,000-run sweep against a 10,000-run one (target: flat).
//!
//! The ratios that decide a target are measured again after criterion, in rounds: the two
//! sides back to back within each round, the ratio taken per round, the median and range
//! printed (`LOOPSIM_BENCH_CALL_ROUNDS`, `LOOPSIM_BENCH_SIM_ROUNDS`,
//! `LOOPSIM_BENCH_STREAM_ROUNDS` set their number), since this shared machine's speed drifts
//! between criterion's groups by more than the effects.
//!
//! `cargo bench --bench loopsim` (add `-- --quick` for a fast run). Python:
//! `$LOOPSIM_PYTHON`, else `target/hermes-venv/bin/python`; without it the Python sides print
//! `skipped: ...`. Inputs and outputs go to `target/loopsim-bench/`. The Python sides run after
//! criterion has finished, and only for the benches that ran (a filter skips them).
//!
//! The modules live in `benches/suite/` because cargo would take any `benches/*.rs` for a
//! bench target of its own.

#[path = "suite/engine.rs"]
mod engine;
#[path = "suite/process.rs"]
mod process;
#[path = "suite/seq.rs"]
mod seq;
#[path = "suite/session_stream.rs"]
mod session_stream;
#[path = "suite/sim.rs"]
mod sim;
#[path = "suite/stream_calls.rs"]
mod stream_calls;
#[path = "suite/streams.rs"]
mod streams;
#[path = "suite/support.rs"]
mod support;
#[path = "suite/sweep.rs"]
mod sweep;

use std::process::Command;

/// The same allocator as the `loopsim` binary, so in-process figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::Criterion;

use support::{Ctx, per_iter_ns, root};

fn main() {
    let ctx = Ctx::from_env();
    let seq = seq::Sequence::generate();
    let mut c = Criterion::default().configure_from_args();
    engine::benches(&mut c, &seq);
    let mut stream_calls = stream_calls::load_all(&ctx, &seq);
    stream_calls::benches(&mut c, &stream_calls);
    if ctx.measuring {
        stream_calls.measure_rounds(rounds(&ctx, "LOOPSIM_BENCH_CALL_ROUNDS", 9));
    }
    stream_calls.forget_calls();
    process::benches(&mut c, &ctx);
    sim::benches(&mut c);
    sweep::benches(&mut c);
    c.final_summary();
    if ctx.measuring {
        summary(&ctx, &seq, &stream_calls);
    }
}

/// Rounds of an interleaved measurement: `$var`, else `default` (3 with `--quick`).
fn rounds(ctx: &Ctx, var: &str, default: usize) -> usize {
    count_from_env(var, if ctx.quick { 3 } else { default })
}

/// A positive count from `$var`, else `default`; a value that is not one stops the bench
/// (exit 2) instead of being ignored.
fn count_from_env(var: &str, default: usize) -> usize {
    match std::env::var(var) {
        Err(std::env::VarError::NotPresent) => default,
        Ok(s) => match s.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("loopsim bench: {var}={s:?}: expected a positive whole number");
                std::process::exit(2);
            }
        },
        Err(e) => {
            eprintln!("loopsim bench: {var}: {e}");
            std::process::exit(2);
        }
    }
}

/// Hermes's controller in-process on the same calls: (ns per call, its decision tally).
fn python_in_process(ctx: &Ctx, seq: &seq::Sequence) -> Result<(f64, String), String> {
    let py = ctx
        .python
        .as_ref()
        .ok_or_else(|| ctx.python_missing.clone())?;
    let calls = ctx.out_dir.join("calls.jsonl");
    seq.write_jsonl(&calls)
        .map_err(|e| format!("{}: {e}", calls.display()))?;
    let reps = if ctx.quick { "5" } else { "30" };
    let out = Command::new(py)
        .arg(root().join("benches/python_controller.py"))
        .arg(&calls)
        .args(["--reps", reps])
        .output()
        .map_err(|e| format!("{}: {e}", py.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "python_controller.py failed ({}): {}",
            out.status,
            stderr.trim()
        ));
    }
    let ns = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse::<f64>()
        .map_err(|e| format!("python_controller.py printed no number: {e}"))?;
    let tally = stderr
        .lines()
        .find_map(|l| l.strip_prefix("actions: "))
        .unwrap_or("")
        .to_string();
    Ok((ns, tally))
}

fn summary(ctx: &Ctx, seq: &seq::Sequence, stream_calls: &stream_calls::Loaded) {
    let n = seq.len_calls() as f64;
    let per_call = |name: &str| per_iter_ns(name).map(|(median, _)| median / n);
    let turns = 1 + seq
        .items
        .iter()
        .filter(|i| matches!(i, seq::Item::Reset))
        .count();
    println!("\n== loopsim: side by side ==");
    println!(
        "engine sequence: {} calls in {turns} turns, {:.0} B canonical args + {:.0} B result per call on average",
        seq.len_calls(),
        seq.args_bytes() as f64 / n,
        seq.result_bytes() as f64 / n
    );
    let mut rows: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();

    if let (Some(a), Some(r)) = (per_call(engine::AFTER_CALL), per_call(engine::RAW_SHA256)) {
        rows.push(format!(
            "| after_call + stall guards per call (NEWEST, hard stops) vs raw SHA-256 of args + result | {a:.0} ns | {r:.0} ns | {:.2}x | <= 2x |",
            a / r
        ));
    }
    rows.extend(stream_calls::rows(stream_calls));
    for (name, what) in [
        (engine::PART_ARGS, "args hash"),
        (engine::PART_PARSE, "result JSON parse"),
        (
            engine::PART_RESULT,
            "result hash (parse + canonical + SHA-256)",
        ),
    ] {
        if let Some(p) = per_call(name) {
            notes.push(format!("part: {what}: {p:.0} ns/call"));
        }
    }

    if let Some(v) = per_call(engine::V0_19) {
        match python_in_process(ctx, seq) {
            Ok((py, tally)) => {
                rows.push(format!(
                    "| before_call + after_call per call (0.19.0) vs Hermes 0.19.0 Python in-process | {v:.0} ns | {py:.0} ns | {:.1}x | >= 20x |",
                    py / v
                ));
                let ours = engine::v0_19_tally(seq);
                if tally == ours {
                    notes.push(format!("0.19.0 decisions match Python: {ours}"));
                } else {
                    notes.push(format!(
                        "WARNING: 0.19.0 decisions differ: loopsim {ours}, Python {tally}"
                    ));
                }
            }
            Err(e) => println!("python in-process: skipped: {e}"),
        }
    }

    if let Some((median, best)) = per_iter_ns(process::LOOPSIM) {
        let runs = count_from_env("LOOPSIM_BENCH_PY_RUNS", if ctx.quick { 1 } else { 3 });
        match process::python_process(ctx, runs) {
            Ok((py, same)) => {
                let py = py.as_nanos() as f64;
                rows.push(format!(
                    "| `loopsim guard --profile hermes-0.19.0`, {}k lines (median) vs hermes_driver.py (best of {runs}) | {:.3} s | {:.3} s | {:.1}x | >= 10x |",
                    process::LINES / 1000,
                    median / 1e9,
                    py / 1e9,
                    py / median
                ));
                notes.push(format!(
                    "loopsim process best {:.3} s; answers identical to the Python driver: {same}",
                    best / 1e9
                ));
            }
            Err(e) => println!("python process: skipped: {e}"),
        }
        // Rounds of the three measurements back to back, per stream.
        match streams::rows(ctx, seq, rounds(ctx, "LOOPSIM_BENCH_STREAM_ROUNDS", 7)) {
            Ok(r) => rows.extend(r),
            Err(e) => println!("guard streams: skipped: {e}"),
        }
    }

    if let Some((median, _)) = per_iter_ns(sim::INCIDENT) {
        let events = sim::incident_events(&sim::incident());
        rows.push(format!(
            "| whole incident scenario run (parent + 10 children, {events} events, no trace) | {:.3} ms | 1 ms | {:.2}x of budget | < 1 ms |",
            median / 1e6,
            median / 1e6
        ));
        notes.push(format!(
            "simulator: {:.1} M events per second",
            events as f64 / (median / 1e9) / 1e6
        ));
        match ctx.python.as_ref().ok_or_else(|| ctx.python_missing.clone()).and_then(|py| sim::bridge_cost(py, if ctx.quick { 1 } else { 3 })) {
            Ok((builtin, bridge)) => rows.push(format!(
                "| guardrail decision through the engine bridge (real Hermes 0.19.0 in Python, its start-up included) vs the built-in engine, incident under hermes-0.19.0 | {:.1} us | {:.2} us | {:.0}x | (for the README) |",
                bridge / 1e3,
                builtin / 1e3,
                bridge / builtin
            )),
            Err(e) => println!("engine bridge: skipped: {e}"),
        }
        if per_iter_ns(sim::INCIDENT_ENGINE).is_some() {
            let calls = sim::incident_guard_calls(&sim::incident());
            let answered = calls
                .iter()
                .filter(|c| {
                    matches!(
                        c,
                        loopsim_world::guard_log::GuardCall::Before { .. }
                            | loopsim_world::guard_log::GuardCall::After { .. }
                    )
                })
                .count();
            let r = sim::interleaved(rounds(ctx, "LOOPSIM_BENCH_SIM_ROUNDS", 15));
            let (run, engine_only) = (support::median(&r.run_ns), support::median(&r.engine_ns));
            // The target's measure: a simulated event's cost against one decision's; beside
            // it the stricter whole run against all its decisions.
            let per_event: Vec<f64> = r.run_ns.iter().map(|t| t / events as f64).collect();
            let per_call: Vec<f64> = r.engine_ns.iter().map(|t| t / answered as f64).collect();
            rows.push(format!(
                "| the simulator per event vs the engine per decision on the same calls (the incident run: {events} events; its {answered} before/after calls replayed through fresh controllers); {} rounds | {:.0} ns/event | {:.0} ns/call | {:.2} | <= 3x |",
                r.run_ns.len(),
                support::median(&per_event),
                support::median(&per_call),
                support::Ratios::of(&per_event, &per_call),
            ));
            rows.push(format!(
                "| the whole incident run vs the engine alone on all its calls | {:.3} ms | {:.3} ms | {:.2} | (stricter) |",
                run / 1e6,
                engine_only / 1e6,
                support::Ratios::of(&r.run_ns, &r.engine_ns),
            ));
        }
        if let Some((traced, _)) = per_iter_ns(sim::INCIDENT_TRACED) {
            notes.push(format!(
                "incident run with its trace serialised and hashed: {:.3} ms",
                traced / 1e6
            ));
        }
    }

    if per_iter_ns(sweep::ONE).is_some() {
        // Ratios per round of one, two and the halves back to back: this machine's speed
        // drifts by more than the effect between criterion's groups.
        let rounds = sweep::interleaved(if ctx.quick { 3 } else { 9 });
        let runs = rounds.runs as f64;
        let rate = |ns: f64| runs / (ns / 1e9);
        rows.push(format!(
            "| sweep throughput, 2 threads vs 1 ({} runs of small scenarios, rows streamed; {} rounds; rates from median times, ratios the median of each round's) | {:.0} runs/s | {:.0} runs/s | {:.2} | >= 1.9x |",
            rounds.runs,
            rounds.two_vs_one.0.len(),
            rate(rounds.two_ns),
            rate(rounds.one_ns),
            rounds.two_vs_one,
        ));
        rows.push(format!(
            "| the machine's ceiling: two independent halves at once (a one-thread pool each, nothing shared) vs 1 thread | {:.0} runs/s | {:.0} runs/s | {:.2} | (reference) |",
            rate(rounds.halves_ns),
            rate(rounds.one_ns),
            rounds.ceiling_vs_one,
        ));
        rows.push(format!(
            "| sweep on 2 threads vs that ceiling | {:.0} runs/s | {:.0} runs/s | {:.2} | >= 0.95x |",
            rate(rounds.two_ns),
            rate(rounds.halves_ns),
            rounds.two_vs_ceiling,
        ));
        // Memory: a short sweep first, then a ten times longer one; streamed rows keep it flat.
        let (small, large) = if ctx.quick {
            (3_000, 30_000)
        } else {
            (10_000, 100_000)
        };
        let (n1, m1) = sweep::growth(small);
        let (n2, m2) = sweep::growth(large);
        if let (Some(m1), Some(m2)) = (m1, m2) {
            // Growth, not the peak: the peak also holds what earlier benches left resident.
            rows.push(format!(
                "| memory a sweep adds (its peak above the memory in use before it), {n2} runs vs {n1} runs | {:.1} MiB | {:.1} MiB | {:+.1} MiB | flat |",
                m2 as f64 / 1024.0,
                m1 as f64 / 1024.0,
                (m2 as f64 - m1 as f64) / 1024.0
            ));
        }
    }

    if rows.is_empty() {
        return;
    }
    println!("| what | loopsim | reference | ratio | target |");
    println!("| --- | --- | --- | --- | --- |");
    for r in rows {
        println!("{r}");
    }
    for n in notes {
        println!("- {n}");
    }
}
