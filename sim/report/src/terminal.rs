//! The run summary a person reads on stdout.

use std::fmt::Write as _;

use loopsim_world::model::Usage;
use loopsim_world::sim::RunSummary;
use loopsim_world::verdict::Verdict;

fn mins(us: u64) -> String {
    format!("{:.1} min", us as f64 / 60e6)
}

/// Dollars, or "unknown" when a model's price is not known.
pub fn usd(x: f64, unknown: bool) -> String {
    if unknown {
        "unknown".into()
    } else {
        format!("${x:.2}")
    }
}

/// The agents' failed model attempts and the time they waited to retry, one clause each
/// (`None` when no attempt failed): a run's cost in time that no call's figures show.
pub fn provider_errors(s: &RunSummary) -> Option<String> {
    let parts: Vec<String> = s
        .agents
        .iter()
        .filter(|a| a.usage.provider_errors > 0)
        .map(|a| {
            format!(
                "{} {} failed attempt{}, {:.1} s waiting to retry",
                a.name,
                a.usage.provider_errors,
                if a.usage.provider_errors == 1 {
                    ""
                } else {
                    "s"
                },
                a.usage.retry_wait_us as f64 / 1e6
            )
        })
        .collect();
    (!parts.is_empty()).then(|| format!("provider errors: {}", parts.join("; ")))
}

fn usage_row(name: &str, u: &Usage, unknown: bool) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {:.1} s | {} | {} |",
        u.model_calls,
        u.input_tokens,
        u.cache_read_tokens,
        u.output_tokens,
        u.model_latency_us as f64 / 1e6,
        u.approval_calls,
        usd(u.cost_usd(), unknown)
    )
}

/// A Markdown-ish text summary: outcome, per-agent usage, guardrail events, expectations.
pub fn render(s: &RunSummary, verdicts: &[Verdict], rerun: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "scenario {} | profile {} | platform {} | seed {}",
        s.scenario,
        s.profile,
        s.platform.as_deref().unwrap_or("-"),
        s.seed
    );
    if s.recorded {
        let _ = writeln!(o, "guardrail decisions: the recorded session's own");
    }
    if let Some(n) = &s.source_note {
        let _ = writeln!(o, "{n}");
    }
    let _ = writeln!(
        o,
        "parent exit: {} after {} (virtual)",
        s.parent_exit_reason,
        mins(s.duration_us)
    );
    if s.hit_horizon {
        let _ = writeln!(
            o,
            "the run reached its horizon ([report] horizon_s, default 24 h, or 1,000,000 events) before it ended: every figure stops there"
        );
    }
    if let Some(st) = &s.settings {
        for (k, v) in st.lines() {
            match k.as_str() {
                "hard stops" => {
                    let _ = writeln!(o, "hard stops are {v}");
                }
                "warn after" | "hard stop after" | "config file" | "parent cap"
                | "other limits" | "context window" | "compression"
                    if k != "parent cap" || st.runtime.is_some() =>
                {
                    let _ = writeln!(o, "{k}: {v}");
                }
                _ => {}
            }
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "| agent | calls | input tokens | cache reads | output tokens | model latency | approvals | cost |"
    );
    let _ = writeln!(o, "| --- | --- | --- | --- | --- | --- | --- | --- |");
    let children: Vec<_> = s.agents.iter().skip(1).collect();
    let _ = writeln!(
        o,
        "{}",
        usage_row("parent", &s.agents[0].usage, s.price_unknown)
    );
    if !children.is_empty() {
        let mut u = Usage::default();
        for c in &children {
            u.add(&c.usage);
        }
        let _ = writeln!(
            o,
            "{}",
            usage_row(&format!("{} children", children.len()), &u, s.price_unknown)
        );
    }
    let _ = writeln!(o, "{}", usage_row("total", &s.total, s.price_unknown));
    if let Some(w) = &s.agents[0].window {
        let _ = writeln!(
            o,
            "{}",
            usage_row("parent, report window", w, s.price_unknown)
        );
    }
    if let Some(w) = &s.agents[0].after_loop_began {
        let _ = writeln!(
            o,
            "{}",
            usage_row("parent, after the loop began", w, s.price_unknown)
        );
    }
    let _ = writeln!(o);
    for a in &s.agents {
        let warn = match (a.first_warning_call, a.first_warning_us) {
            (Some(c), Some(t)) => format!(" (the first at call {c}, {})", mins(t)),
            _ => String::new(),
        };
        let stop = a.stop.as_ref().map_or("no stop".into(), |st| {
            format!(
                "stopped at call {} ({}) by {}",
                st.call,
                mins(st.t_us),
                st.code
            )
        });
        if a.name == "parent" || a.stop.is_some() || a.warnings + a.notices > 0 {
            let _ = writeln!(
                o,
                "{}: {} warnings and {} notices{warn}; {stop}; budget {}/{}; exits {}",
                a.name,
                a.warnings,
                a.notices,
                a.budget_used,
                if a.budget_max >= loopsim_engine::budget::UNLIMITED {
                    "unlimited".to_string()
                } else {
                    a.budget_max.to_string()
                },
                a.exit_reasons.join(", ")
            );
        }
    }
    if s.agents.len() > 1 {
        let budgets: Vec<String> = s
            .agents
            .iter()
            .map(|a| format!("{} {}", a.name, a.budget_used))
            .collect();
        let _ = writeln!(o, "budget used at the end: {}", budgets.join(", "));
        if let Some(line) = children_cut_short(s) {
            let _ = writeln!(o, "{line}");
        }
    }
    if let Some(line) = provider_errors(s) {
        let _ = writeln!(o, "{line}");
    }
    if !verdicts.is_empty() {
        let _ = writeln!(o);
        for v in verdicts {
            let _ = writeln!(
                o,
                "expect {}: {} (expected {}, got {})",
                v.key,
                if v.pass { "pass" } else { "FAIL" },
                v.expected,
                v.actual
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "trace {} | rerun: {rerun}", s.trace_hash);
    o
}

/// The children that did not end their turn themselves: cut off by their timeout, or whose
/// own code raised (each with the model calls it had begun).
fn children_cut_short(s: &RunSummary) -> Option<String> {
    use loopsim_world::sim::Status;
    let mut parts = Vec::new();
    for (status, what) in [
        (Status::TimedOut, "timed out"),
        (Status::Crashed, "crashed"),
    ] {
        let names: Vec<String> = s
            .agents
            .iter()
            .filter(|a| a.status == status)
            .map(|a| format!("{} after {} model calls", a.name, a.usage.model_calls))
            .collect();
        if !names.is_empty() {
            parts.push(format!("{what}: {}", names.join(", ")));
        }
    }
    (!parts.is_empty()).then(|| format!("children cut short: {}", parts.join("; ")))
}
