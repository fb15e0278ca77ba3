//! Checking a run against its scenario's `[expect]` block.

use serde::Serialize;

use crate::scenario::{Expect, Figures};
use crate::sim::RunSummary;

/// One expectation's verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub key: String,
    pub expected: String,
    pub actual: String,
    pub pass: bool,
}

/// Every expectation the block states, in a fixed order.
pub fn check(expect: &Expect, s: &RunSummary) -> Vec<Verdict> {
    let mut out = Vec::new();
    let mut push = |key: &str, expected: String, actual: String, pass| {
        out.push(Verdict {
            key: key.to_string(),
            expected,
            actual,
            pass,
        })
    };
    let parent = &s.agents[0];
    if let Some(want) = &expect.exit_reason {
        push(
            "exit_reason",
            want.clone(),
            s.parent_exit_reason.to_string(),
            s.parent_exit_reason == want.as_str(),
        );
    }
    let stops: Vec<String> = s
        .agents
        .iter()
        .filter_map(|a| a.stop.as_ref().map(|st| format!("{}: {}", a.name, st.code)))
        .collect();
    if let Some(want) = expect.no_hard_stop {
        let none = stops.is_empty();
        push(
            "no_hard_stop",
            want.to_string(),
            if none {
                "no stop".into()
            } else {
                stops.join(", ")
            },
            none == want,
        );
    }
    if let Some(code) = &expect.stop_code {
        let hit = s
            .agents
            .iter()
            .any(|a| a.stop.as_ref().is_some_and(|st| &st.code == code));
        push(
            "stop_code",
            code.clone(),
            if stops.is_empty() {
                "no stop".into()
            } else {
                stops.join(", ")
            },
            hit,
        );
    }
    if let Some(n) = expect.first_warning_before_call {
        let actual = parent.first_warning_call;
        push(
            "first_warning_before_call",
            format!("<= {n}"),
            actual.map_or("no warning".into(), |c| format!("call {c}")),
            actual.is_some_and(|c| c <= n),
        );
    }
    if let Some(n) = expect.first_warning_call {
        let actual = parent.first_warning_call;
        push(
            "first_warning_call",
            format!("call {n}"),
            actual.map_or("no warning".into(), |c| format!("call {c}")),
            actual == Some(n),
        );
    }
    if let Some(n) = expect.stop_call {
        let actual = parent.stop.as_ref();
        push(
            "stop_call",
            format!("parent stopped at call {n}"),
            actual.map_or("no parent stop".into(), |st| {
                format!("{} at call {}", st.code, st.call)
            }),
            actual.is_some_and(|st| st.call == n),
        );
    }
    let calls = parent.usage.model_calls;
    if let Some(min) = expect.parent_calls_min {
        push(
            "parent_calls_min",
            format!(">= {min}"),
            calls.to_string(),
            calls >= min,
        );
    }
    if let Some(max) = expect.parent_calls_max {
        push(
            "parent_calls_max",
            format!("<= {max}"),
            calls.to_string(),
            calls <= max,
        );
    }
    if let Some(n) = expect.spawned_children {
        let got = s.agents.len() as u64 - 1;
        push("spawned_children", n.to_string(), got.to_string(), got == n);
    }
    for (key, want, status) in [
        (
            "timed_out_children",
            expect.timed_out_children,
            crate::sim::Status::TimedOut,
        ),
        (
            "crashed_children",
            expect.crashed_children,
            crate::sim::Status::Crashed,
        ),
    ] {
        if let Some(n) = want {
            let got = s.agents.iter().filter(|a| a.status == status).count() as u64;
            push(key, n.to_string(), got.to_string(), got == n);
        }
    }
    if let Some(max) = expect.max_cost_usd {
        let cost = s.total.cost_usd();
        push(
            "max_cost_usd",
            format!("<= {max:.2}"),
            format!("{cost:.2}"),
            cost <= max,
        );
    }
    for name in &expect.covers {
        // Validated on load: every name is a mark.
        if let Some(m) = crate::coverage::Mark::parse(name) {
            let n = s.coverage.get(m);
            push(
                &format!("covers.{name}"),
                "reached".into(),
                format!("{n} times"),
                n > 0,
            );
        }
    }
    if let Some(f) = &expect.figures {
        figures(f, s, &mut out);
    }
    out
}

/// Each reported figure against the run's, within the block's tolerance.
fn figures(f: &Figures, s: &RunSummary, out: &mut Vec<Verdict>) {
    let tol = f.tolerance.unwrap_or(Figures::DEFAULT_TOLERANCE);
    let mut near = |key: String, reported: f64, actual: f64| {
        let pass = (actual - reported).abs() <= tol * reported.abs();
        out.push(Verdict {
            key,
            expected: format!("{} (within {}%)", shown(reported), shown(tol * 100.0)),
            actual: shown(actual),
            pass,
        });
    };
    let t = &s.total;
    let all = |field: fn(&crate::model::Usage) -> u64| field(t) as f64;
    let child_calls: u64 = s.agents[1..].iter().map(|a| a.usage.model_calls).sum();
    let warnings: u64 = s.agents.iter().map(|a| a.warnings as u64).sum();
    let stubs: u64 = s.agents.iter().map(|a| a.stubs).sum();
    let rows: [(&str, Option<f64>, f64); 12] = [
        (
            "parent_calls",
            f.parent_calls,
            s.agents[0].usage.model_calls as f64,
        ),
        ("calls", f.calls, all(|u| u.model_calls)),
        ("child_calls", f.child_calls, child_calls as f64),
        ("minutes", f.minutes, s.duration_us as f64 / 60e6),
        ("input_tokens", f.input_tokens, all(|u| u.input_tokens)),
        (
            "cache_read_tokens",
            f.cache_read_tokens,
            all(|u| u.cache_read_tokens),
        ),
        (
            "fresh_input_tokens",
            f.fresh_input_tokens,
            all(|u| u.input_tokens - u.cache_read_tokens),
        ),
        ("output_tokens", f.output_tokens, all(|u| u.output_tokens)),
        ("cost_usd", f.cost_usd, t.cost_usd()),
        ("children", f.children, (s.agents.len() - 1) as f64),
        ("warnings", f.warnings, warnings as f64),
        ("stubs", f.stubs, stubs as f64),
    ];
    for (key, reported, actual) in rows {
        if let Some(r) = reported {
            near(format!("figures.{key}"), r, actual);
        }
    }
    for (tool, reported) in &f.tool_calls {
        let n: u64 = s
            .agents
            .iter()
            .map(|a| a.tool_calls.get(tool).copied().unwrap_or(0))
            .sum();
        near(format!("figures.tool_calls.{tool}"), *reported, n as f64);
    }
}

/// A figure as a person writes it: no trailing zeros.
fn shown(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
