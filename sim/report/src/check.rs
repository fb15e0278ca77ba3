//! Regression checks: every scenario's expectations over its seeds and profiles
//! (`loopsim check`), exact baselines of what each run cost (`--save-baseline`), and the gate
//! that fails a change that makes a run worse than its baseline (`loopsim gate`).

use std::fmt::Write as _;

use loopsim_engine::profile::ProfileName;
use loopsim_world::expect::{self, Verdict};
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, run};
use loopsim_world::trace::TraceWriter;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::metrics::RunMetrics;

/// One scenario x seed x profile, checked.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub scenario: String,
    pub path: String,
    pub seed: u64,
    pub profile: String,
    pub verdicts: Vec<Verdict>,
    pub metrics: RunMetrics,
    pub rerun: String,
}

impl Case {
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.pass)
    }
}

/// A run that could not be made (the scenario's config is invalid under a listed profile).
#[derive(Debug, thiserror::Error)]
#[error("{path}: seed {seed}, profile {profile}: {message}")]
pub struct CheckError {
    pub path: String,
    pub seed: u64,
    pub profile: String,
    pub message: String,
}

/// What to run for a scenario: its `[expect] seeds` and `profiles`, or its own.
fn matrix(sc: &Scenario) -> Vec<(u64, ProfileName)> {
    let seeds = if sc.file.expect.seeds.is_empty() {
        vec![sc.file.seed]
    } else {
        sc.file.expect.seeds.clone()
    };
    let profiles: Vec<ProfileName> = if sc.file.expect.profiles.is_empty() {
        vec![sc.profile]
    } else {
        sc.file
            .expect
            .profiles
            .iter()
            .filter_map(|p| p.get_ref().parse().ok())
            .collect()
    };
    profiles
        .iter()
        .flat_map(|p| seeds.iter().map(move |s| (*s, *p)))
        .collect()
}

/// Runs every case (in parallel; results in a fixed order: scenario, profile, seed).
pub fn run_checks(scenarios: &[Scenario]) -> Result<Vec<Case>, CheckError> {
    let jobs: Vec<(&Scenario, u64, ProfileName)> = scenarios
        .iter()
        .flat_map(|sc| matrix(sc).into_iter().map(move |(s, p)| (sc, s, p)))
        .collect();
    jobs.par_iter()
        .map(|&(sc, seed, profile)| {
            let opts = RunOptions {
                seed: Some(seed),
                // The scenario's own profile is the scenario as written (for an imported
                // session, its recorded decisions).
                profile: (profile != sc.profile).then_some(profile),
                ..RunOptions::default()
            };
            let summary = run(sc, &opts, TraceWriter::hash_only()).map_err(|e| CheckError {
                path: sc.path.clone(),
                seed,
                profile: profile.to_string(),
                message: e.to_string(),
            })?;
            let mut rerun = format!("loopsim run {} --seed {seed}", sc.path);
            if profile != sc.profile {
                rerun += &format!(" --profile {profile}");
            }
            Ok(Case {
                scenario: sc.file.name.clone(),
                path: sc.path.clone(),
                seed,
                profile: profile.to_string(),
                verdicts: expect::check(&sc.file.expect, &summary),
                metrics: RunMetrics::from_summary(&summary, ""),
                rerun,
            })
        })
        .collect()
}

/// One line per expectation: pass or FAIL, expected vs actual, and how to rerun a failure.
pub fn text_report(cases: &[Case]) -> String {
    let mut o = String::new();
    for c in cases {
        for v in &c.verdicts {
            let _ = write!(
                o,
                "{} {} seed {} {}: {}: expected {}, got {}",
                if v.pass { "pass" } else { "FAIL" },
                c.scenario,
                c.seed,
                c.profile,
                v.key,
                v.expected,
                v.actual
            );
            if !v.pass {
                let _ = write!(o, " (rerun: {})", c.rerun);
            }
            o.push('\n');
        }
    }
    let failed = cases.iter().filter(|c| !c.passed()).count();
    let _ = writeln!(o, "{} passed, {} failed", cases.len() - failed, failed);
    o
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// JUnit XML: one test case per scenario x seed x profile.
pub fn junit_xml(cases: &[Case]) -> String {
    let failures = cases.iter().filter(|c| !c.passed()).count();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites name=\"loopsim check\" tests=\"{}\" failures=\"{failures}\">",
        cases.len()
    );
    let _ = writeln!(
        o,
        "  <testsuite name=\"scenarios\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">",
        cases.len()
    );
    for c in cases {
        let name = xml_escape(&format!("{} seed {} {}", c.scenario, c.seed, c.profile));
        let class = xml_escape(&c.path);
        let fails: Vec<&Verdict> = c.verdicts.iter().filter(|v| !v.pass).collect();
        if fails.is_empty() {
            let _ = writeln!(o, "    <testcase classname=\"{class}\" name=\"{name}\"/>");
            continue;
        }
        let _ = writeln!(o, "    <testcase classname=\"{class}\" name=\"{name}\">");
        for v in fails {
            let msg = xml_escape(&format!(
                "{}: expected {}, got {}",
                v.key, v.expected, v.actual
            ));
            let _ = writeln!(
                o,
                "      <failure message=\"{msg}\" type=\"expectation\">rerun: {}</failure>",
                xml_escape(&c.rerun)
            );
        }
        let _ = writeln!(o, "    </testcase>");
    }
    o.push_str("  </testsuite>\n</testsuites>\n");
    o
}

/// The exact figures of one run, as a baseline keeps them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub scenario: String,
    pub path: String,
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
    pub entries: Vec<Entry>,
}

impl Baseline {
    pub const FORMAT: &'static str = "loopsim-baseline";

    pub fn from_cases(cases: &[Case]) -> Baseline {
        let entries = cases
            .iter()
            .map(|c| Entry {
                scenario: c.scenario.clone(),
                path: c.path.clone(),
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
            version: 1,
            entries,
        }
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
        "gate: {runs} runs, {} changed metrics, {failed} failing",
        diffs.len()
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(cost: f64, calls: u64, stop: &str) -> Entry {
        Entry {
            scenario: "s".into(),
            path: "p".into(),
            seed: 1,
            profile: "hermes-main".into(),
            calls,
            input_tokens: 100,
            output_tokens: 10,
            cost_usd: cost,
            duration_min: 1.0,
            stop_code: stop.into(),
            stop_call: (!stop.is_empty()).then_some(5),
            first_warning_call: None,
        }
    }

    fn base(e: Entry) -> Baseline {
        Baseline {
            format: Baseline::FORMAT.into(),
            version: 1,
            entries: vec![e],
        }
    }

    #[test]
    fn tolerance_and_moves() {
        let b = base(entry(1.0, 10, "x"));
        assert!(gate(&b, &b, 0.05, false).is_empty());
        let small = gate(&b, &base(entry(1.04, 10, "x")), 0.05, false);
        assert_eq!((small[0].change, small[0].fails), (Change::Within, false));
        let big = gate(&b, &base(entry(1.06, 10, "x")), 0.05, false);
        assert_eq!(
            (big[0].metric, big[0].change, big[0].fails),
            ("cost_usd", Change::Worse, true)
        );
        let better = gate(&b, &base(entry(0.5, 8, "x")), 0.05, false);
        assert!(
            better
                .iter()
                .all(|d| d.change == Change::Better && !d.fails)
        );
        let moved = gate(&b, &base(entry(1.0, 10, "")), 0.05, false);
        assert_eq!(
            (moved[0].metric, moved[0].change, moved[0].fails),
            ("stop", Change::Moved, false)
        );
        assert!(
            gate(&b, &base(entry(1.0, 10, "")), 0.05, true)[0].fails,
            "any change fails when asked"
        );
        let gone = gate(
            &b,
            &Baseline {
                entries: vec![],
                ..b.clone()
            },
            0.05,
            false,
        );
        assert!(gone[0].fails);
    }

    #[test]
    fn junit_escapes_and_counts() {
        let case = |pass: bool| Case {
            scenario: "a<b".into(),
            path: "scenarios/a.toml".into(),
            seed: 1,
            profile: "hermes-main".into(),
            verdicts: vec![Verdict {
                key: "exit_reason",
                expected: "x & y".into(),
                actual: "z".into(),
                pass,
            }],
            metrics: RunMetrics::default(),
            rerun: "loopsim run scenarios/a.toml --seed 1".into(),
        };
        let xml = junit_xml(&[case(true), case(false)]);
        assert!(xml.contains("tests=\"2\" failures=\"1\""));
        assert!(xml.contains("name=\"a&lt;b seed 1 hermes-main\""));
        assert!(xml.contains("message=\"exit_reason: expected x &amp; y, got z\""));
        assert_eq!(xml.matches("<testcase ").count(), 2);
        assert_eq!(xml.matches("<failure ").count(), 1);
    }
}
