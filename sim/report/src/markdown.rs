//! `summary.md`: the run report a person reads, with its plots.

use std::fmt::Write as _;

use loopsim_world::expect::Verdict;
use loopsim_world::sim::RunSummary;

use crate::metrics::RunMetrics;
use crate::summary::usd;

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// One run (or several profiles of one scenario) as Markdown.
pub fn run_report(
    runs: &[(RunSummary, RunMetrics)],
    verdicts: &[Verdict],
    plots: &[String],
    rerun: &str,
) -> String {
    let mut o = String::new();
    let (first, _) = &runs[0];
    let _ = writeln!(o, "# {}\n", first.scenario);
    let _ = writeln!(o, "Seed {} | rerun: `{rerun}`\n", first.seed);
    if let Some(n) = &first.source_note {
        let _ = writeln!(o, "{n}\n");
    }
    let unknown = runs.iter().any(|(s, _)| s.price_unknown);
    let _ = writeln!(o, "## Outcome\n");
    let _ = writeln!(
        o,
        "| profile | platform | exit | calls | input tokens | output tokens | cost | minutes | first warning | stop | waste (after the loop began) |"
    );
    let _ = writeln!(
        o,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for (_, m) in runs {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} calls, {}, {:.1} min |",
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
        let base = &runs[0].1;
        let _ = writeln!(
            o,
            "\n## What each engine would have saved (against {})\n",
            base.profile
        );
        let _ = writeln!(
            o,
            "| profile | calls saved | input tokens saved | dollars saved | minutes saved |"
        );
        let _ = writeln!(o, "| --- | --- | --- | --- | --- |");
        for (_, m) in &runs[1..] {
            let _ = writeln!(
                o,
                "| {} {} | {} | {} | {} | {:.1} |",
                m.profile,
                m.platform,
                base.calls as i64 - m.calls as i64,
                base.input_tokens as i64 - m.input_tokens as i64,
                usd(base.cost_usd - m.cost_usd, unknown),
                base.duration_min - m.duration_min
            );
        }
    }
    let _ = writeln!(o, "\n## Agents ({})\n", first.profile);
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
