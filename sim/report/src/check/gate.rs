//! Baselines and the gate: the exact figures of every run, saved (`--save-baseline`), and the
//! comparison that fails a change that makes a run worse (`loopsim gate`).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Case;

/// The exact figures of one run, as a baseline keeps them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub scenario: String,
    /// Where the scenario was when the baseline was saved (for people; gates find scenarios
    /// by name and check them by hash).
    pub path: String,
    #[serde(default)]
    pub scenario_hash: String,
    pub seed: u64,
    pub profile: String,
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub duration_min: f64,
    pub stop_code: String,
    pub stop_call: Option<u64>,
    pub first_warning_call: Option<u64>,
}

/// A saved baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub format: String,
    pub version: u32,
    /// The config.yaml the runs were made with: its name and SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<(String, String)>,
    pub entries: Vec<Entry>,
}

impl Baseline {
    pub const FORMAT: &'static str = "loopsim-baseline";

    pub fn from_cases(cases: &[Case], config: Option<(String, String)>) -> Baseline {
        let entries = cases
            .iter()
            .map(|c| Entry {
                scenario: c.scenario.clone(),
                path: c.path.clone(),
                scenario_hash: c.scenario_hash.clone(),
                seed: c.seed,
                profile: c.profile.clone(),
                calls: c.metrics.calls,
                input_tokens: c.metrics.input_tokens,
                output_tokens: c.metrics.output_tokens,
                cost_usd: c.metrics.cost_usd,
                duration_min: c.metrics.duration_min,
                stop_code: c.metrics.stop_code.clone(),
                stop_call: c.metrics.stop_call,
                first_warning_call: c.metrics.first_warning_call,
            })
            .collect();
        Baseline {
            format: Self::FORMAT.into(),
            version: 2,
            config,
            entries,
        }
    }

    /// The scenario names the baseline's runs use, each once, in order.
    pub fn scenario_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for e in &self.entries {
            if !out.contains(&e.scenario.as_str()) {
                out.push(&e.scenario);
            }
        }
        out
    }

    /// Bencher Metric Format: `{"scenario/seed/profile": {"cost_usd": {"value": x}, ...}}`.
    pub fn bmf(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for e in &self.entries {
            out.insert(
                format!("{}/seed-{}/{}", e.scenario, e.seed, e.profile),
                serde_json::json!({
                    "calls": { "value": e.calls },
                    "input_tokens": { "value": e.input_tokens },
                    "cost_usd": { "value": e.cost_usd },
                    "virtual_minutes": { "value": e.duration_min },
                }),
            );
        }
        serde_json::Value::Object(out)
    }
}

/// How one metric moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Worse by more than the tolerance (or changed at all, with `--fail-on-any-change`).
    Worse,
    Better,
    /// Changed within the tolerance.
    Within,
    /// The run stops or warns somewhere else (a behaviour change, always reported).
    Moved,
}

/// One changed metric of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diff {
    pub run: String,
    pub metric: &'static str,
    pub baseline: String,
    pub current: String,
    pub change: Change,
    /// Whether this diff fails the gate.
    pub fails: bool,
}

/// Compares current runs with a baseline. `max_increase` is a fraction (0.05 for 5%).
/// A run missing from either side is a failure; a stop or first warning that moved is
/// reported and fails only with `any_change`.
pub fn gate(
    baseline: &Baseline,
    current: &Baseline,
    max_increase: f64,
    any_change: bool,
) -> Vec<Diff> {
    let key = |e: &Entry| format!("{} seed {} {}", e.scenario, e.seed, e.profile);
    let mut out = Vec::new();
    let short = |h: &str| h.get(..12).unwrap_or(h).to_string();
    if baseline.config != current.config {
        let show = |c: &Option<(String, String)>| {
            c.as_ref()
                .map_or("none".into(), |(f, h)| format!("{f} ({})", short(h)))
        };
        out.push(Diff {
            run: "all runs".into(),
            metric: "config",
            baseline: show(&baseline.config),
            current: show(&current.config),
            change: Change::Moved,
            fails: any_change,
        });
    }
    let mut changed_scenarios: Vec<&str> = Vec::new();
    for b in &baseline.entries {
        let Some(c) = current.entries.iter().find(|c| key(c) == key(b)) else {
            out.push(Diff {
                run: key(b),
                metric: "run",
                baseline: "present".into(),
                current: "missing".into(),
                change: Change::Worse,
                fails: true,
            });
            continue;
        };
        if !b.scenario_hash.is_empty()
            && b.scenario_hash != c.scenario_hash
            && !changed_scenarios.contains(&b.scenario.as_str())
        {
            changed_scenarios.push(&b.scenario);
            out.push(Diff {
                run: format!("{} (all runs)", b.scenario),
                metric: "scenario",
                baseline: short(&b.scenario_hash),
                current: short(&c.scenario_hash),
                change: Change::Moved,
                fails: any_change,
            });
        }
        let numeric: [(&'static str, f64, f64); 5] = [
            ("calls", b.calls as f64, c.calls as f64),
            ("input_tokens", b.input_tokens as f64, c.input_tokens as f64),
            (
                "output_tokens",
                b.output_tokens as f64,
                c.output_tokens as f64,
            ),
            ("cost_usd", b.cost_usd, c.cost_usd),
            ("virtual_minutes", b.duration_min, c.duration_min),
        ];
        for (metric, old, new) in numeric {
            if old == new {
                continue;
            }
            let limit = old.abs() * max_increase;
            let change = if new < old {
                Change::Better
            } else if new - old > limit {
                Change::Worse
            } else {
                Change::Within
            };
            let fails = change == Change::Worse || any_change;
            out.push(Diff {
                run: key(b),
                metric,
                baseline: format!("{old}"),
                current: format!("{new}"),
                change,
                fails,
            });
        }
        let stop = |e: &Entry| {
            if e.stop_code.is_empty() {
                "none".to_string()
            } else {
                format!("{} at call {}", e.stop_code, e.stop_call.unwrap_or(0))
            }
        };
        let warn = |e: &Entry| {
            e.first_warning_call
                .map_or("none".to_string(), |c| format!("call {c}"))
        };
        for (metric, old, new) in [
            ("stop", stop(b), stop(c)),
            ("first_warning", warn(b), warn(c)),
        ] {
            if old != new {
                out.push(Diff {
                    run: key(b),
                    metric,
                    baseline: old,
                    current: new,
                    change: Change::Moved,
                    fails: any_change,
                });
            }
        }
    }
    for c in &current.entries {
        if !baseline.entries.iter().any(|b| key(b) == key(c)) {
            out.push(Diff {
                run: key(c),
                metric: "run",
                baseline: "missing".into(),
                current: "present".into(),
                change: Change::Moved,
                fails: any_change,
            });
        }
    }
    out
}

/// The gate's table.
pub fn gate_report(diffs: &[Diff], runs: usize) -> String {
    let mut o = String::new();
    if diffs.is_empty() {
        let _ = writeln!(o, "gate: {runs} runs, every metric equal to its baseline");
        return o;
    }
    let _ = writeln!(o, "| run | metric | baseline | now | change | fails |");
    let _ = writeln!(o, "| --- | --- | --- | --- | --- | --- |");
    for d in diffs {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {:?} | {} |",
            d.run,
            d.metric,
            d.baseline,
            d.current,
            d.change,
            if d.fails { "FAIL" } else { "" }
        );
    }
    let failed = diffs.iter().filter(|d| d.fails).count();
    let _ = writeln!(
        o,
        "gate: {runs} runs, {} changed metrics ({}), {failed} failing",
        diffs.len(),
        change_counts(diffs)
    );
    o
}

/// `2 worse, 3 better, 1 moved` (only the kinds present).
pub fn change_counts(diffs: &[Diff]) -> String {
    let n = |c: Change| diffs.iter().filter(|d| d.change == c).count();
    [
        (n(Change::Worse), "worse"),
        (n(Change::Within), "within the tolerance"),
        (n(Change::Better), "better"),
        (n(Change::Moved), "moved"),
    ]
    .iter()
    .filter(|(k, _)| *k > 0)
    .map(|(k, w)| format!("{k} {w}"))
    .collect::<Vec<_>>()
    .join(", ")
}

/// Why the gate fails: the failing diffs by kind (all of them when any change fails).
pub fn failure_reason(diffs: &[Diff]) -> Option<String> {
    let failing: Vec<Diff> = diffs.iter().filter(|d| d.fails).cloned().collect();
    if failing.is_empty() {
        return None;
    }
    Some(format!(
        "{} failing metrics ({})",
        failing.len(),
        change_counts(&failing)
    ))
}
