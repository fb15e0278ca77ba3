//! Sweeps: runs per second on 1 and 2 threads (target: at least 1.8x from 1 to 2), and peak
//! memory of long sweeps that stream their rows (target: flat from 10,000 to 100,000 runs).

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use loopsim_report::metrics;
use loopsim_report::sweep::{Aggregator, Axis, Plan, SweepSpec, run_jobs};
use loopsim_world::scenario::Scenario;

use crate::support::{root, timed};

pub const ONE: &str = "sweep/runs_1_thread";
pub const TWO: &str = "sweep/runs_2_threads";
/// Seeds per setting and scenario in the throughput bench (a sweep usually has dozens).
pub const SEEDS: u64 = 256;

/// Small scenarios (a few dozen events each) and a two-axis grid.
pub fn setup(seeds: u64) -> (SweepSpec, Vec<Scenario>, Plan) {
    let names = [
        "read-only-no-progress",
        "two-call-cycle",
        "healthy-repeated-check",
        "poller-exempt",
        "repeated-identical-failure",
    ];
    let scenarios: Vec<Scenario> = names
        .iter()
        .map(|n| Scenario::load(&root().join(format!("scenarios/{n}.toml"))).expect("scenario"))
        .collect();
    let spec = SweepSpec {
        scenarios: scenarios
            .iter()
            .map(|s| (s.path.clone(), s.content_hash.hex()))
            .collect(),
        profiles: vec!["hermes-main".into()],
        platform: Some("cron".into()),
        config: None,
        axes: vec![
            Axis::parse("tool_loop_guardrails.hard_stop_after.idempotent_no_progress=2..=6")
                .unwrap(),
            Axis::parse("tool_loop_guardrails.warn_after.idempotent_no_progress=1..=2").unwrap(),
        ],
        seeds: (0, seeds),
        baseline: vec![],
    };
    let plan = spec.plan().expect("plan");
    (spec, scenarios, plan)
}

/// Runs every job as `loopsim sweep` does: CSV lines (counted, then dropped) and the
/// aggregator.
pub fn stream(spec: &SweepSpec, scenarios: &[Scenario], plan: &Plan) -> usize {
    let mut agg = Aggregator::new(true);
    let mut bytes = 0;
    run_jobs(
        spec,
        plan,
        scenarios,
        0..plan.len(),
        &|| {},
        &metrics::csv_line,
        &mut |row, line| {
            bytes += line.len();
            agg.push(&row);
            Ok(())
        },
    )
    .expect("sweep runs");
    black_box(agg.finish());
    bytes
}

fn pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .expect("thread pool")
}

pub fn benches(c: &mut Criterion) {
    let (spec, scenarios, plan) = setup(SEEDS);
    let mut g = c.benchmark_group("sweep");
    g.throughput(Throughput::Elements(plan.len()));
    g.sample_size(10);
    for (name, label, threads) in [("runs_1_thread", ONE, 1), ("runs_2_threads", TWO, 2)] {
        let p = pool(threads);
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                timed(label, iters, || {
                    black_box(p.install(|| stream(&spec, &scenarios, &plan)));
                })
            })
        });
    }
    g.finish();
}

/// A `/proc/self/status` figure (`VmHWM`, `VmRSS`), in KiB; Linux only.
fn status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Starts the peak (VmHWM) over from the memory in use now (Linux: `clear_refs` 5), so a
/// measurement is not the high-water mark of whatever ran before it.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// How far a sweep of about `runs` runs takes the resident memory above what was in use
/// when it started (its peak minus the memory before it), in KiB; and its number of runs.
pub fn growth(runs: u64) -> (usize, Option<u64>) {
    let per_seed = setup(1).2.len();
    let (spec, scenarios, plan) = setup(runs.div_ceil(per_seed));
    reset_peak();
    let before = status_kib("VmRSS:");
    stream(&spec, &scenarios, &plan);
    let peak = status_kib("VmHWM:");
    (
        plan.len() as usize,
        before.zip(peak).map(|(b, p)| p.saturating_sub(b)),
    )
}
