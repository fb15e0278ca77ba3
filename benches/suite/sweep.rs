//! Sweeps: runs per second on 1 and 2 threads (target: at least 1.9x from 1 to 2,
//! beside the machine's own ceiling: two independent halves at once), and peak
//! memory of long sweeps that stream their rows (target: flat from 10,000 to 100,000 runs).

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use loopsim_report::metrics;
use loopsim_report::sweep::{Aggregator, Axis, SweepSpec};
use loopsim_runner::sweep::{Plan, run_jobs};
use loopsim_world::scenario::Scenario;

use crate::support::{Ratios, median, root, timed};

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
    let plan = loopsim_runner::sweep::plan(&spec).expect("plan");
    (spec, scenarios, plan)
}

/// Runs every job as `loopsim sweep` does: CSV lines (counted, then dropped) and the
/// aggregator.
pub fn stream(spec: &SweepSpec, scenarios: &[Scenario], plan: &Plan) -> usize {
    stream_jobs(spec, scenarios, plan, 0..plan.len())
}

/// [`stream`] over these jobs only (ascending).
fn stream_jobs(
    spec: &SweepSpec,
    scenarios: &[Scenario],
    plan: &Plan,
    jobs: impl Iterator<Item = u64>,
) -> usize {
    let mut agg = Aggregator::new(true);
    let mut bytes = 0;
    run_jobs(
        spec,
        plan,
        scenarios,
        jobs,
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

/// Medians (ns per sweep) and per-round ratios of [`interleaved`].
pub struct Rounds {
    pub runs: u64,
    pub one_ns: f64,
    pub two_ns: f64,
    pub halves_ns: f64,
    pub two_vs_one: Ratios,
    pub ceiling_vs_one: Ratios,
    pub two_vs_ceiling: Ratios,
}

/// Runs the sweep on one thread, on two, and as two independent halves, back to back, `n`
/// times; each round gives its own ratios, so a drift of the machine's speed between rounds
/// does not enter them.
pub fn interleaved(n: usize) -> Rounds {
    let (spec, scenarios, plan) = setup(SEEDS);
    let (one, two, halves) = (pool(1), pool(2), [pool(1), pool(1)]);
    let time = |f: &dyn Fn()| {
        let t = std::time::Instant::now();
        f();
        t.elapsed().as_nanos() as f64
    };
    let (mut t1, mut t2, mut th) = (vec![], vec![], vec![]);
    for round in 0..n {
        // Each round starts with another of the three, so no order is built in.
        for k in 0..3 {
            match (round + k) % 3 {
                0 => t1.push(time(&|| {
                    black_box(one.install(|| stream(&spec, &scenarios, &plan)));
                })),
                1 => t2.push(time(&|| {
                    black_box(two.install(|| stream(&spec, &scenarios, &plan)));
                })),
                _ => th.push(time(&|| {
                    black_box(two_halves(&halves, &spec, &scenarios, &plan));
                })),
            }
        }
    }
    Rounds {
        runs: plan.len(),
        one_ns: median(&t1),
        two_ns: median(&t2),
        halves_ns: median(&th),
        two_vs_one: Ratios::of(&t1, &t2),
        ceiling_vs_one: Ratios::of(&t1, &th),
        two_vs_ceiling: Ratios::of(&th, &t2),
    }
}

/// The machine's own ceiling for two threads: the jobs in two halves (every other job, as
/// `--shard 1/2` and `2/2` take them, so both get the same mix), each on its own one-thread
/// pool at the same time, sharing nothing but the inputs.
fn two_halves(
    pools: &[rayon::ThreadPool; 2],
    spec: &SweepSpec,
    scenarios: &[Scenario],
    plan: &Plan,
) -> usize {
    let n = plan.len();
    std::thread::scope(|s| {
        let first =
            s.spawn(|| pools[0].install(|| stream_jobs(spec, scenarios, plan, (0..n).step_by(2))));
        let second = pools[1].install(|| stream_jobs(spec, scenarios, plan, (1..n).step_by(2)));
        first.join().expect("first half") + second
    })
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
