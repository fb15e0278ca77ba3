//! Checking a run against its scenario's `[expect]` block.

use serde::Serialize;

use crate::scenario::Expect;
use crate::sim::RunSummary;

/// One expectation's verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub key: &'static str,
    pub expected: String,
    pub actual: String,
    pub pass: bool,
}

/// Every expectation the block states, in a fixed order.
pub fn check(expect: &Expect, s: &RunSummary) -> Vec<Verdict> {
    let mut out = Vec::new();
    let mut push = |key, expected: String, actual: String, pass| {
        out.push(Verdict {
            key,
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
            s.parent_exit_reason.clone(),
            &s.parent_exit_reason == want,
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
    if let Some(n) = expect.timed_out_children {
        let got = s
            .agents
            .iter()
            .filter(|a| a.status == crate::sim::Status::TimedOut)
            .count() as u64;
        push(
            "timed_out_children",
            n.to_string(),
            got.to_string(),
            got == n,
        );
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
    out
}
