//! `loopsim explore`: many seeds of each scenario with the simulator's invariants checked
//! after every event; every seed that breaks one is printed with its rerun line, and with
//! `--shrink` reduced to a smaller scenario written next to the original.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use loopsim_report::output::Outputs;
use loopsim_runner::explore::{self, ExploreOptions, Problem, shrink};

use crate::args::Format;
use crate::inputs;
use crate::out::{CheckFailed, emit, say, say_raw};

pub struct Args<'a> {
    pub paths: &'a [PathBuf],
    pub seeds: &'a std::ops::Range<u64>,
    pub expectations: bool,
    pub faults: bool,
    pub shrink: bool,
    pub config: Option<&'a Path>,
    pub profile: Option<loopsim_engine::profile::ProfileName>,
    pub suite: Option<&'a Path>,
    pub format: Format,
}

pub fn run(a: Args<'_>) -> Result<()> {
    let seeds = a.seeds.clone();
    let scenarios = inputs::scenarios(a.paths, a.suite)?;
    let opts = ExploreOptions {
        expectations: a.expectations,
        faults: a.faults,
        config: inputs::user_config(a.config)?,
        wrong_port: inputs::wrong_port()?,
        profile: a.profile,
    };
    let found = explore::explore(&scenarios, seeds, &opts)?;
    let mut shrunk = Vec::new();
    if a.shrink {
        // The first finding of each scenario: later ones are usually the same bug.
        let mut outputs = Outputs::new();
        for sc in &scenarios {
            let Some(f) = found.findings.iter().find(|f| f.path == sc.path) else {
                continue;
            };
            let s = shrink::shrink(sc, f, &opts)?;
            let dest = shrunk_path(&sc.path, s.seed);
            outputs
                .write(&dest, s.text.as_bytes())
                .with_context(|| format!("{}: cannot write", dest.display()))?;
            let rerun = explore::rerun_command(&dest.display().to_string(), s.seed, &opts);
            shrunk.push(serde_json::json!({
                "from": sc.path,
                "path": dest.display().to_string(),
                "seed": s.seed,
                "size_before": s.size_before,
                "size_after": s.size_after,
                "runs": s.runs,
                "problem": s.finding.problem,
                "rerun": rerun,
            }));
        }
        outputs.commit().context("writing the shrunk scenarios")?;
    }
    match a.format {
        Format::Json => emit!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "runs": found.runs,
                "findings": found.findings,
                "left_out": found.left_out,
                "shrunk": shrunk,
            }))?
        ),
        Format::Text => {
            say_raw!("{}", explore::text_report(&found));
            for s in &shrunk {
                say!(
                    "shrunk {} (size {} -> {}, {} runs) to {}: rerun: {}",
                    s["from"].as_str().unwrap_or_default(),
                    s["size_before"],
                    s["size_after"],
                    s["runs"],
                    s["path"].as_str().unwrap_or_default(),
                    s["rerun"].as_str().unwrap_or_default()
                );
            }
        }
    }
    let broken = found
        .findings
        .iter()
        .filter(|f| matches!(f.problem, Problem::Invariant(_)))
        .count();
    if found.findings.is_empty() {
        return Ok(());
    }
    Err(CheckFailed(format!(
        "explore: {} of {} runs broke an invariant, {} failed expectations",
        broken,
        found.runs,
        found.findings.len() - broken
    ))
    .into())
}

/// `DIR/STEM.shrunk-seedN.toml` beside the scenario.
fn shrunk_path(path: &str, seed: u64) -> PathBuf {
    let p = Path::new(path);
    let stem = p
        .file_stem()
        .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    p.with_file_name(format!("{stem}.shrunk-seed{seed}.toml"))
}
