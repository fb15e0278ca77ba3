//! A run report's files (trace, plots, summary.json, runs.csv, summary.md), staged into a
//! command's [`Outputs`] so they appear together or not at all.

use std::path::Path;

use anyhow::{Context, Result};
use loopsim_report::markdown::ReportRun;
use loopsim_report::metrics;
use loopsim_report::output::Outputs;
use loopsim_report::plots;
use loopsim_world::expect::Verdict;
use loopsim_world::sim::RunSummary;

/// What a staged report holds.
pub struct Staged {
    pub json: Vec<u8>,
    pub plots: Vec<String>,
}

/// A file-name-safe form of a run label.
pub fn slug(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let mut out = String::new();
    for part in s.split('-').filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(part);
    }
    out
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
) -> Result<Staged> {
    let ctx = || format!("{}: cannot write", dir.display());
    out.write(&dir.join("trace.jsonl"), trace_bytes)
        .with_context(ctx)?;
    let staging = out.staging_dir(dir).with_context(ctx)?;
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
    plots::run_plots_labeled(&staging, &summaries, &labels).with_context(ctx)?;
    let plot_files = out.adopt(&staging, dir).with_context(ctx)?;
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
    }))?;
    out.write(&dir.join("summary.json"), &json)
        .with_context(ctx)?;
    let rows: Vec<_> = lean.iter().map(|r| r.metrics.clone()).collect();
    out.write(&dir.join("runs.csv"), &metrics::to_csv(&rows)?)
        .with_context(ctx)?;
    let md = loopsim_report::markdown::run_report(&lean, verdicts, &plot_files, rerun);
    out.write(&dir.join("summary.md"), md.as_bytes())
        .with_context(ctx)?;
    Ok(Staged {
        json,
        plots: plot_files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("hermes-main telegram"), "hermes-main-telegram");
        assert_eq!(
            slug("config ../team/My Config.yaml"),
            "config-..-team-my-config.yaml"
        );
        assert_eq!(slug("as written"), "as-written");
    }
}
