//! `summary.md`: the run report a person reads, with its plots.

use std::fmt::Write as _;

use loopsim_world::sim::RunSummary;
use loopsim_world::verdict::Verdict;

use crate::metrics::RunMetrics;
use crate::terminal::usd;

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// One run of a report: what it is called there, its summary and its metrics.
pub struct ReportRun {
    /// `as written`, `recorded`, `hermes-main telegram`, `config team.yaml`, ...
    pub label: String,
    pub summary: RunSummary,
    pub metrics: RunMetrics,
}

/// One run (or the same scenario and seed under other engines) as Markdown.
pub fn run_report(
    runs: &[ReportRun],
    verdicts: &[Verdict],
    plots: &[String],
    rerun: &str,
) -> String {
    let mut o = String::new();
    let first = &runs[0].summary;
    let _ = writeln!(o, "# {}\n", first.scenario);
    let _ = writeln!(o, "Seed {} | rerun: `{rerun}`\n", first.seed);
    if let Some(n) = &first.source_note {
        let _ = writeln!(o, "{n}\n");
    }
    let unknown = runs.iter().any(|r| r.summary.price_unknown);
    let _ = writeln!(o, "## Outcome\n");
    let _ = writeln!(
        o,
        "| run | profile | platform | exit | calls | input tokens | output tokens | cost | minutes | first warning or notice | stop | waste (after the loop began) |"
    );
    let _ = writeln!(
        o,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for r in runs {
        let m = &r.metrics;
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} calls, {}, {:.1} min |",
            r.label,
            m.profile,
            if m.platform.is_empty() {
                "-"
            } else {
                &m.platform
            },
            m.exit_reason,
            m.calls,
            m.input_tokens,
            m.output_tokens,
            usd(m.cost_usd, unknown),
            m.duration_min,
            m.first_warning_call.map_or("-".into(), |c| format!(
                "call {c} ({:.1} min)",
                m.first_warning_min.unwrap_or(0.0)
            )),
            if m.stopped() {
                format!(
                    "{} at call {} ({:.1} min)",
                    m.stop_code,
                    opt(m.stop_call),
                    m.stop_min.unwrap_or(0.0)
                )
            } else {
                "-".into()
            },
            m.waste_calls,
            usd(m.waste_usd, unknown),
            m.waste_min
        );
    }
    if runs.len() > 1 {
        let base = &runs[0].metrics;
        let _ = writeln!(
            o,
            "\n## What each run would have saved (against {})\n",
            runs[0].label
        );
        let _ = writeln!(
            o,
            "| run | calls saved | input tokens saved | dollars saved | minutes saved |"
        );
        let _ = writeln!(o, "| --- | --- | --- | --- | --- |");
        for r in &runs[1..] {
            let m = &r.metrics;
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {:.1} |",
                r.label,
                base.calls as i64 - m.calls as i64,
                base.input_tokens as i64 - m.input_tokens as i64,
                usd(base.cost_usd - m.cost_usd, unknown),
                base.duration_min - m.duration_min
            );
        }
    }
    settings_table(&mut o, runs);
    for r in runs {
        agents_table(&mut o, r, unknown);
    }
    if !verdicts.is_empty() {
        let _ = writeln!(o, "\n## Expectations\n");
        let _ = writeln!(o, "| expectation | expected | actual | result |");
        let _ = writeln!(o, "| --- | --- | --- | --- |");
        for v in verdicts {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                v.key,
                v.expected,
                v.actual,
                if v.pass { "pass" } else { "FAIL" }
            );
        }
    }
    if !plots.is_empty() {
        let _ = writeln!(o, "\n## Plots\n");
        for p in plots.iter().filter(|p| p.ends_with(".png")) {
            let _ = writeln!(o, "![{p}]({p})\n");
        }
    }
    o
}

/// The engine settings each run used, side by side.
fn settings_table(o: &mut String, runs: &[ReportRun]) {
    let all: Vec<Vec<(String, String)>> = runs
        .iter()
        .map(|r| r.summary.settings.as_ref().map_or(vec![], |s| s.lines()))
        .collect();
    // Every setting any run has, in the order they first appear: a run without one (no
    // config file, no window set) shows `-` in its row, not another setting's value.
    let mut rows: Vec<&str> = Vec::new();
    for (name, _) in all.iter().flatten() {
        if !rows.contains(&name.as_str()) {
            rows.push(name);
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n## Settings\n");
    let _ = writeln!(
        o,
        "| setting | {} |",
        runs.iter()
            .map(|r| r.label.as_str())
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(o, "| --- |{}", " --- |".repeat(runs.len()));
    for name in rows {
        let cells: Vec<&str> = all
            .iter()
            .map(|l| {
                l.iter()
                    .find(|(n, _)| n == name)
                    .map_or("-", |(_, v)| v.as_str())
            })
            .collect();
        let _ = writeln!(o, "| {name} | {} |", cells.join(" | "));
    }
}

fn agents_table(o: &mut String, r: &ReportRun, unknown: bool) {
    let first = &r.summary;
    let _ = writeln!(o, "\n## Agents ({})\n", r.label);
    let _ = writeln!(
        o,
        "| agent | status | calls | input tokens | cache reads | output tokens | model latency | tool time | waiting | cost | budget used | exits |"
    );
    let _ = writeln!(
        o,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for a in &first.agents {
        let u = &a.usage;
        let _ = writeln!(
            o,
            "| {} | {:?} | {} | {} | {} | {} | {:.1} s | {:.1} s | {:.1} s | {} | {} | {} |",
            a.name,
            a.status,
            u.model_calls,
            u.input_tokens,
            u.cache_read_tokens,
            u.output_tokens,
            u.model_latency_us as f64 / 1e6,
            u.tool_time_us as f64 / 1e6,
            a.wait_us as f64 / 1e6,
            usd(u.cost_usd(), unknown),
            a.budget_used,
            a.exit_reasons.join(", ")
        );
    }
    if let Some(line) = crate::terminal::provider_errors(first) {
        let _ = writeln!(o, "\n{line}");
    }
}
