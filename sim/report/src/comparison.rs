//! The cross-runtime comparison (`loopsim compare`): the same workloads under several runtimes'
//! governance, each at its defaults. Per loop, where each runtime stops it (call, minutes,
//! dollars) or that it never does; per healthy scenario, whether a runtime stops it anyway (a
//! false stop) and the setting that avoids it.

use std::fmt::Write as _;

use serde::Serialize;

use loopsim_engine::turn::ExitReason;

use crate::metrics::RunMetrics;

/// How one run under one profile ended, as the comparison sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The runtime's governance ended the run: its cap, a halt, or a block that the loop
    /// could not get past.
    Stopped {
        /// The decision code or exit reason that stopped it.
        by: String,
        call: u64,
        minutes: f64,
        cost_usd: f64,
        /// For a healthy run stopped by the cap: the setting that lets it finish.
        #[serde(skip_serializing_if = "Option::is_none")]
        avoid_with: Option<String>,
    },
    /// Nothing of the runtime stopped it: it ended by itself (an answer, the user's stop).
    NotStopped {
        exit_reason: String,
        calls: u64,
        minutes: f64,
        cost_usd: f64,
    },
    /// The scenario uses a mechanism the runtime does not have.
    NotExpressible { why: String },
}

/// One scenario's runs, one per profile in the comparison's order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub scenario: String,
    /// `loop` or `healthy`.
    pub label: String,
    pub cells: Vec<Outcome>,
}

/// The whole comparison, as `summary.json` holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub profiles: Vec<String>,
    pub rows: Vec<Row>,
    pub rerun: String,
}

/// Whether the governance stopped the run: a halt, another runtime's raised limit in any
/// turn (the run's first stop), or a cap that ended its last turn.
pub fn stopped_by(m: &RunMetrics) -> Option<String> {
    let exit = m.exit_reason.as_str();
    let raised = ExitReason::parse(&m.stop_code).is_some_and(|r| r.is_runtime_limit());
    if raised || (exit == "guardrail_halt" && !m.stop_code.is_empty()) {
        return Some(m.stop_code.clone());
    }
    match ExitReason::parse(exit) {
        Some(ExitReason::MaxIterationsReached { .. } | ExitReason::GuardrailHalt) => {
            Some(exit.to_string())
        }
        _ => None,
    }
}

/// `N` of `max_iterations_reached(N/M)`.
fn capped_at(exit: &str) -> Option<u64> {
    exit.strip_prefix("max_iterations_reached(")?
        .split('/')
        .next()?
        .parse()
        .ok()
}

impl Outcome {
    /// The outcome of a finished run.
    pub fn of(m: &RunMetrics) -> Outcome {
        match stopped_by(m) {
            Some(by) => Outcome::Stopped {
                // A halt stops at its decision; a cap at its last budgeted call (Hermes's
                // summary call after it is not one).
                call: if by == m.stop_code {
                    m.stop_call.unwrap_or(m.parent_calls)
                } else {
                    capped_at(&by).unwrap_or(m.parent_calls)
                },
                minutes: if by == m.stop_code {
                    m.stop_min.unwrap_or(m.duration_min)
                } else {
                    m.duration_min
                },
                by,
                cost_usd: m.cost_usd,
                avoid_with: None,
            },
            None => Outcome::NotStopped {
                exit_reason: m.exit_reason.clone(),
                calls: m.calls,
                minutes: m.duration_min,
                cost_usd: m.cost_usd,
            },
        }
    }

    fn cell(&self) -> String {
        match self {
            Outcome::Stopped {
                by,
                call,
                minutes,
                cost_usd,
                avoid_with,
            } => {
                let mut s =
                    format!("stops at call {call} ({minutes:.1} min, ${cost_usd:.2}): `{by}`");
                if let Some(a) = avoid_with {
                    let _ = write!(s, "; **false stop**, `{a}` lets it finish");
                }
                s
            }
            Outcome::NotStopped {
                exit_reason,
                calls,
                minutes,
                cost_usd,
            } => format!(
                "never stops: {calls} calls, {minutes:.1} min, ${cost_usd:.2} (ends `{exit_reason}`)"
            ),
            Outcome::NotExpressible { why } => format!("not expressible: {why}"),
        }
    }
}

impl Comparison {
    /// `summary.md`: one table for the loops, one for the healthy runs.
    pub fn markdown(&self) -> String {
        let mut md = String::from("# The same workloads under each runtime's governance\n\n");
        let _ = writeln!(
            md,
            "Each scenario as written (its platform, and its `[config]`, which is in the keys of \
             its own runtime: under another runtime, that runtime's defaults apply). A stop is \
             the governance's: a cap, a limit's exception or a halt; an answer or the user's stop \
             is the loop's own end. Rerun: `{}`\n",
            self.rerun
        );
        for (label, title) in [
            ("loop", "Loops: where each runtime stops them"),
            ("healthy", "Healthy runs: which a runtime stops anyway"),
        ] {
            let rows: Vec<&Row> = self.rows.iter().filter(|r| r.label == label).collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(md, "## {title}\n");
            let _ = writeln!(md, "| scenario | {} |", self.profiles.join(" | "));
            let _ = writeln!(md, "| --- |{}", " --- |".repeat(self.profiles.len()));
            for r in rows {
                let cells: Vec<String> = r.cells.iter().map(Outcome::cell).collect();
                let _ = writeln!(md, "| `{}` | {} |", r.scenario, cells.join(" | "));
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md, "## Totals\n");
        let _ = writeln!(
            md,
            "| profile | loops stopped | healthy runs stopped | not expressible |"
        );
        let _ = writeln!(md, "| --- | --- | --- | --- |");
        for (k, p) in self.profiles.iter().enumerate() {
            let count = |label: &str, want: fn(&Outcome) -> bool| {
                let of: Vec<&Row> = self.rows.iter().filter(|r| r.label == label).collect();
                let n = of.iter().filter(|r| want(&r.cells[k])).count();
                let expressible = of
                    .iter()
                    .filter(|r| !matches!(r.cells[k], Outcome::NotExpressible { .. }))
                    .count();
                format!("{n} of {expressible}")
            };
            let stopped = |o: &Outcome| matches!(o, Outcome::Stopped { .. });
            let absent = self
                .rows
                .iter()
                .filter(|r| matches!(r.cells[k], Outcome::NotExpressible { .. }))
                .count();
            let _ = writeln!(
                md,
                "| {p} | {} | {} | {absent} |",
                count("loop", stopped),
                count("healthy", stopped)
            );
        }
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(exit: &str, stop: &str, calls: u64) -> RunMetrics {
        RunMetrics {
            exit_reason: exit.into(),
            stop_code: stop.into(),
            stop_call: (!stop.is_empty()).then_some(5),
            calls,
            parent_calls: calls,
            duration_min: 2.0,
            cost_usd: 0.5,
            ..RunMetrics::default()
        }
    }

    #[test]
    fn a_limit_or_a_halt_is_a_stop_and_an_answer_is_not() {
        assert_eq!(
            stopped_by(&m(
                "raised(MaxTurnsExceeded)",
                "raised(MaxTurnsExceeded)",
                10
            ))
            .as_deref(),
            Some("raised(MaxTurnsExceeded)")
        );
        assert_eq!(
            stopped_by(&m("guardrail_halt", "identical_call_streak_halt", 5)).as_deref(),
            Some("identical_call_streak_halt")
        );
        // A block the loop got past, then an answer: not the governance's stop.
        assert_eq!(
            stopped_by(&m(
                "text_response(finish_reason=stop)",
                "repeated_exact_failure_block",
                9
            )),
            None
        );
        assert_eq!(stopped_by(&m("interrupted_by_user", "", 74)), None);
        // A raise in an earlier turn is the run's stop, whatever its last turn did.
        assert_eq!(
            stopped_by(&m(
                "text_response(finish_reason=stop)",
                "raised(MaxTurnsExceeded)",
                15
            ))
            .as_deref(),
            Some("raised(MaxTurnsExceeded)")
        );
        let c = Comparison {
            profiles: vec!["a".into(), "b".into()],
            rows: vec![Row {
                scenario: "healthy-x".into(),
                label: "healthy".into(),
                cells: vec![
                    Outcome::of(&m("text_response(finish_reason=stop)", "", 41)),
                    Outcome::Stopped {
                        by: "raised(MaxTurnsExceeded)".into(),
                        call: 10,
                        minutes: 1.0,
                        cost_usd: 0.1,
                        avoid_with: Some("max_turns: 41".into()),
                    },
                ],
            }],
            rerun: "loopsim compare".into(),
        };
        let md = c.markdown();
        assert!(
            md.contains("**false stop**, `max_turns: 41` lets it finish"),
            "{md}"
        );
        assert!(md.contains("| b | 0 of 0 | 1 of 1 | 0 |"), "{md}");
    }
}
