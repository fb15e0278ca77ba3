//! Exploration: many seeds of each scenario with the simulator's invariants checked after
//! every event, reporting every seed that breaks one (with the event where it broke) or that
//! fails the scenario's expectations, each with the command that reruns it
//! (`loopsim explore`). [`shrink`] reduces a failing run to a smaller scenario.
//!
//! ```
//! use loopsim_runner::explore::{ExploreOptions, explore};
//! use loopsim_world::scenario::Scenario;
//!
//! let sc = Scenario::parse(
//!     r#"name = "tiny"
//! description = "one search, then an answer"
//! provenance = "doc example"
//! profile = "hermes-main"
//! [models.m]
//! latency_s = { lognormal = [2.0, 0.3] }
//! output_tokens = 50
//! [tools.web_search]
//! latency_s = 1
//! result = '{"hits": ["{counter}"]}'
//! [agents.parent]
//! model = "m"
//! script = [{ calls = [{ tool = "web_search", args = { q = "x" } }] }, { answer = "done" }]
//! "#,
//!     "tiny.toml",
//! )
//! .unwrap();
//! let found = explore(std::slice::from_ref(&sc), 0..20, &ExploreOptions::default()).unwrap();
//! assert_eq!(found.runs, 20);
//! assert!(found.findings.is_empty());
//! ```

use std::ops::Range;
use std::sync::Arc;

use loopsim_engine::profile::ProfileName;
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{InvariantChecks, RunError, RunOptions, Violation, WrongPort, run};
use loopsim_world::trace::TraceWriter;
use loopsim_world::user_config::UserConfig;
use loopsim_world::verdict::Verdict;
use rayon::prelude::*;
use serde::Serialize;

use loopsim_report::shell::quote;

pub mod shrink;

/// How to explore.
#[derive(Clone, Debug, Default)]
pub struct ExploreOptions {
    /// Also report seeds whose run fails the scenario's `[expect]` block (its own profile).
    pub expectations: bool,
    /// Each seed also draws provider faults for models without their own
    /// ([`loopsim_world::faults::seeded_sites`]).
    pub faults: bool,
    /// A user's config.yaml laid over every scenario.
    pub config: Option<Arc<UserConfig>>,
    /// A deliberately wrong port (the tests' `LOOPSIM_TEST_WRONG_PORT`).
    pub wrong_port: Option<WrongPort>,
    /// Every scenario under this profile instead of its own (one the profile cannot express
    /// is left out, with its reason); expectations then come from `[expect.under.PROFILE]`.
    pub profile: Option<ProfileName>,
}

/// What went wrong in one seed's run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Problem {
    /// An invariant broke at an event.
    Invariant(Violation),
    /// The run ended, and some of the scenario's expectations failed.
    Expectations { failed: Vec<Verdict> },
}

/// One seed that broke something.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub scenario: String,
    pub path: String,
    pub seed: u64,
    pub profile: String,
    pub problem: Problem,
    /// The command that reruns this seed and shows the problem.
    pub rerun: String,
}

/// The result of an exploration: how many runs it made and what it found, in a fixed order
/// (scenario, then seed) whatever the thread count.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Exploration {
    pub runs: u64,
    pub findings: Vec<Finding>,
    /// Scenarios `--profile` cannot express, each with why: not run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
}

/// A scenario the explored profile cannot express.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeftOut {
    pub path: String,
    pub reason: String,
}

/// A run that could not be made at all (a scenario that does not run under its profile).
#[derive(Debug, thiserror::Error)]
#[error("{path}: seed {seed}: {message}")]
pub struct ExploreError {
    pub path: String,
    pub seed: u64,
    pub message: String,
}

/// Runs in flight at once: results are kept per block, so memory stays flat for any range.
const BLOCK: u64 = 4096;

/// Explores `seeds` of every scenario (in parallel, in blocks; findings in a fixed order).
pub fn explore(
    scenarios: &[Scenario],
    seeds: Range<u64>,
    opts: &ExploreOptions,
) -> Result<Exploration, ExploreError> {
    let per = seeds.end - seeds.start;
    let mut out = Exploration::default();
    for sc in scenarios {
        if let Some(reason) = opts.profile.and_then(|p| sc.unsupported_under(p)) {
            out.left_out.push(LeftOut {
                path: sc.path.clone(),
                reason,
            });
            continue;
        }
        let mut start = 0;
        while start < per {
            let end = (start + BLOCK).min(per);
            let block: Vec<Result<Option<Finding>, ExploreError>> = (start..end)
                .into_par_iter()
                .map(|i| explore_one(sc, seeds.start + i, opts))
                .collect();
            for r in block {
                if let Some(f) = r? {
                    out.findings.push(f);
                }
            }
            out.runs += end - start;
            start = end;
        }
    }
    Ok(out)
}

/// The run options explore uses for a seed: invariants always checked, no trace kept.
pub fn run_options(seed: u64, opts: &ExploreOptions) -> RunOptions {
    RunOptions {
        seed: Some(seed),
        profile: opts.profile,
        config: opts.config.clone(),
        wrong_port: opts.wrong_port,
        invariants: InvariantChecks::Always,
        seeded_faults: opts.faults,
        ..RunOptions::default()
    }
}

/// One seed of one scenario: what it broke, if anything.
pub fn explore_one(
    sc: &Scenario,
    seed: u64,
    opts: &ExploreOptions,
) -> Result<Option<Finding>, ExploreError> {
    let ro = run_options(seed, opts);
    let problem = match run(sc, &ro, TraceWriter::hash_only()) {
        Ok(summary) => {
            if !opts.expectations {
                return Ok(None);
            }
            // The scenario's own block, or under another profile the block for it (none: no
            // expectations to fail).
            let Some(block) = crate::check::block_for(sc, opts.profile, None) else {
                return Ok(None);
            };
            let failed: Vec<Verdict> = crate::check::block_verdicts(sc, block, &summary)
                .into_iter()
                .filter(|v| !v.pass)
                .collect();
            if failed.is_empty() {
                return Ok(None);
            }
            Problem::Expectations { failed }
        }
        Err(RunError::Invariant(v)) => Problem::Invariant(*v),
        Err(e) => {
            return Err(ExploreError {
                path: sc.path.clone(),
                seed,
                message: e.to_string(),
            });
        }
    };
    Ok(Some(Finding {
        scenario: sc.file.name.clone(),
        path: sc.path.clone(),
        seed,
        profile: opts.profile.unwrap_or(sc.profile).to_string(),
        rerun: rerun_command(&sc.path, seed, opts),
        problem,
    }))
}

/// `loopsim run` with the seed, the config and the wrong port's variable, invariants on.
pub fn rerun_command(path: &str, seed: u64, opts: &ExploreOptions) -> String {
    let mut cmd = String::new();
    if let Some(w) = opts.wrong_port {
        cmd += &format!("LOOPSIM_TEST_WRONG_PORT={} ", w.as_str());
    }
    cmd += &format!(
        "loopsim run {} --seed {seed} --check-invariants",
        quote(path)
    );
    if let Some(p) = opts.profile {
        cmd += &format!(" --profile {p}");
    }
    if opts.faults {
        cmd += " --seeded-faults";
    }
    if let Some(c) = &opts.config {
        cmd += &format!(" --config {}", quote(&c.file));
    }
    cmd
}

/// One line per finding, then the count.
pub fn text_report(e: &Exploration) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    for f in &e.findings {
        let what = match &f.problem {
            Problem::Invariant(v) => v.to_string(),
            Problem::Expectations { failed } => {
                let parts: Vec<String> = failed
                    .iter()
                    .map(|v| format!("{}: expected {}, got {}", v.key, v.expected, v.actual))
                    .collect();
                format!("expectations failed: {}", parts.join("; "))
            }
        };
        let _ = writeln!(
            o,
            "FAIL {} seed {} {}: {what} (rerun: {})",
            f.scenario, f.seed, f.profile, f.rerun
        );
    }
    let broken = e
        .findings
        .iter()
        .filter(|f| matches!(f.problem, Problem::Invariant(_)))
        .count();
    for l in &e.left_out {
        let _ = writeln!(o, "left out: {}", l.reason);
    }
    let _ = writeln!(
        o,
        "{} runs: {broken} broke an invariant, {} failed expectations{}",
        e.runs,
        e.findings.len() - broken,
        match e.left_out.len() {
            0 => String::new(),
            n => format!("; {n} scenarios left out (not expressible under the profile)"),
        }
    );
    o
}
