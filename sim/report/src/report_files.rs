//! A run report's files (trace, plots, summary.json, runs.csv, summary.md), staged into a
//! command's [`Outputs`] so they appear together or not at all.

use std::path::Path;

use loopsim_world::sim::RunSummary;
use loopsim_world::verdict::Verdict;

use crate::markdown::ReportRun;
use crate::metrics;
use crate::output::Outputs;
use crate::plots::{self, slug};

/// A report that could not be staged: which folder, and why.
#[derive(Debug, thiserror::Error)]
#[error("{dir}: cannot write: {message}")]
pub struct StageError {
    pub dir: String,
    pub message: String,
}

/// What a staged report holds.
pub struct Staged {
    pub json: Vec<u8>,
    pub plots: Vec<String>,
}

/// Stages a run's report in `dir`: runs[0] is the run the report is about, the others are
/// compared with it (other engines or configs, or a what-if beside the recorded run).
pub fn stage(
    out: &mut Outputs,
    dir: &Path,
    runs: &[ReportRun],
    verdicts: &[Verdict],
    rerun: &str,
    trace_bytes: &[u8],
) -> Result<Staged, StageError> {
    let fail = |e: &dyn std::fmt::Display| StageError {
        dir: dir.display().to_string(),
        message: e.to_string(),
    };
    out.write(&dir.join("trace.jsonl"), trace_bytes)
        .map_err(|e| fail(&e))?;
    let staging = out.staging_dir(dir).map_err(|e| fail(&e))?;
    let summaries: Vec<RunSummary> = runs.iter().map(|r| r.summary.clone()).collect();
    let mut labels: Vec<plots::RunLabel> = Vec::new();
    for r in runs {
        let base = slug(&r.label);
        let mut s = base.clone();
        let mut n = 1;
        while labels.iter().any(|l| l.slug == s) {
            n += 1;
            s = format!("{base}-{n}");
        }
        labels.push(plots::RunLabel {
            label: r.label.clone(),
            slug: s,
        });
    }
    plots::run_plots_labeled(&staging, &summaries, &labels).map_err(|e| fail(&e))?;
    let plot_files = out.adopt(&staging, dir).map_err(|e| fail(&e))?;
    // Plots an earlier report in this folder drew for runs this one does not have.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let ours = ["cost.", "timeline", "budget"]
                .iter()
                .any(|p| name.starts_with(p))
                && (name.ends_with(".png") || name.ends_with(".svg"));
            if ours && !plot_files.contains(&name) {
                out.remove_on_commit(&e.path());
            }
        }
    }
    let lean: Vec<ReportRun> = runs
        .iter()
        .map(|r| {
            let mut s = r.summary.clone();
            s.agents.iter_mut().for_each(|a| a.series = None);
            ReportRun {
                label: r.label.clone(),
                summary: s,
                metrics: r.metrics.clone(),
            }
        })
        .collect();
    let json = serde_json::to_vec_pretty(&serde_json::json!({
        "label": &lean[0].label,
        "summary": &lean[0].summary,
        "expectations": &verdicts,
        "compared": lean[1..].iter().map(|r| serde_json::json!({
            "label": &r.label,
            "summary": &r.summary,
        })).collect::<Vec<_>>(),
        "metrics": lean.iter().map(|r| &r.metrics).collect::<Vec<_>>(),
        "rerun": rerun,
    }))
    .map_err(|e| fail(&e))?;
    out.write(&dir.join("summary.json"), &json)
        .map_err(|e| fail(&e))?;
    let rows: Vec<_> = lean.iter().map(|r| r.metrics.clone()).collect();
    let csv = metrics::to_csv(&rows).map_err(|e| fail(&e))?;
    out.write(&dir.join("runs.csv"), &csv)
        .map_err(|e| fail(&e))?;
    let md = crate::markdown::run_report(&lean, verdicts, &plot_files, rerun);
    out.write(&dir.join("summary.md"), md.as_bytes())
        .map_err(|e| fail(&e))?;
    Ok(Staged {
        json,
        plots: plot_files,
    })
}
