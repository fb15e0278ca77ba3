//! What regression checks found and how it reads: each checked run ([`Case`]), the coverage
//! rows, the text and JUnit reports, exact baselines of what each run cost
//! (`--save-baseline`), and the gate that fails a change that makes a run worse than its
//! baseline (`loopsim gate`). `loopsim-runner` makes the runs.

use std::fmt::Write as _;

use loopsim_world::verdict::Verdict;
use serde::Serialize;

use crate::metrics::RunMetrics;

mod gate;
pub use gate::{Baseline, Change, Diff, Entry, change_counts, failure_reason, gate, gate_report};

/// One scenario x seed x profile, checked.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub scenario: String,
    pub path: String,
    /// SHA-256 of the scenario file: baselines name scenarios by content.
    pub scenario_hash: String,
    pub seed: u64,
    pub profile: String,
    pub verdicts: Vec<Verdict>,
    pub metrics: RunMetrics,
    pub rerun: String,
    /// The coverage marks the run reached.
    #[serde(skip)]
    pub coverage: loopsim_world::coverage::Coverage,
}

impl Case {
    /// No expectation failed.
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.pass)
    }

    /// The scenario states nothing to check (a loop scenario without `[expect]`).
    pub fn unchecked(&self) -> bool {
        self.verdicts.is_empty()
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

/// One coverage mark over a check's runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoverageRow {
    pub mark: String,
    /// Runs that reached it, and how often in all.
    pub runs: usize,
    pub hits: u64,
    /// Scenarios whose `[expect] covers` claims it.
    pub claimed_by: Vec<String>,
}

/// The coverage rows as a Markdown table, then a count.
pub fn coverage_table(rows: &[CoverageRow], runs: usize, unmet: &[String]) -> String {
    let mut o = String::from("| mark | runs | hits | claimed by |\n| --- | --- | --- | --- |\n");
    for r in rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            r.mark,
            r.runs,
            r.hits,
            r.claimed_by.join(", ")
        );
    }
    for u in unmet {
        let _ = writeln!(o, "UNMET {u}");
    }
    let _ = writeln!(
        o,
        "coverage: {} of {} marks reached by {runs} runs; {} claimed by a scenario, {} of them unreached",
        rows.iter().filter(|r| r.runs > 0).count(),
        rows.len(),
        rows.iter().filter(|r| !r.claimed_by.is_empty()).count(),
        unmet.len()
    );
    o
}

/// One line per expectation: pass or FAIL, expected vs actual, and how to rerun a failure.
pub fn text_report(cases: &[Case]) -> String {
    let mut o = String::new();
    for c in cases {
        if c.unchecked() {
            let _ = writeln!(
                o,
                "none {} seed {} {}: no expectations (its [expect] states none to check, and it is not labelled healthy)",
                c.scenario, c.seed, c.profile
            );
        }
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
    let unchecked = cases.iter().filter(|c| c.unchecked()).count();
    let _ = write!(
        o,
        "{} passed, {} failed",
        cases.len() - failed - unchecked,
        failed
    );
    if unchecked > 0 {
        let _ = write!(o, ", {unchecked} without expectations");
    }
    o.push('\n');
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
    let skipped = cases.iter().filter(|c| c.unchecked()).count();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites name=\"loopsim check\" tests=\"{}\" failures=\"{failures}\">",
        cases.len()
    );
    let _ = writeln!(
        o,
        "  <testsuite name=\"scenarios\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">",
        cases.len()
    );
    for c in cases {
        let name = xml_escape(&format!("{} seed {} {}", c.scenario, c.seed, c.profile));
        let class = xml_escape(&c.path);
        let fails: Vec<&Verdict> = c.verdicts.iter().filter(|v| !v.pass).collect();
        if c.unchecked() {
            let _ = writeln!(
                o,
                "    <testcase classname=\"{class}\" name=\"{name}\"><skipped message=\"no expectations\"/></testcase>"
            );
            continue;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(cost: f64, calls: u64, stop: &str) -> Entry {
        Entry {
            scenario: "s".into(),
            path: "p".into(),
            scenario_hash: "h".into(),
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
            version: 2,
            config: None,
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
            scenario_hash: String::new(),
            seed: 1,
            profile: "hermes-main".into(),
            verdicts: vec![Verdict {
                key: "exit_reason".into(),
                expected: "x & y".into(),
                actual: "z".into(),
                pass,
            }],
            metrics: RunMetrics::default(),
            rerun: "loopsim run scenarios/a.toml --seed 1".into(),
            coverage: Default::default(),
        };
        let xml = junit_xml(&[case(true), case(false)]);
        assert!(xml.contains("tests=\"2\" failures=\"1\""));
        assert!(xml.contains("name=\"a&lt;b seed 1 hermes-main\""));
        assert!(xml.contains("message=\"exit_reason: expected x &amp; y, got z\""));
        assert_eq!(xml.matches("<testcase ").count(), 2);
        assert_eq!(xml.matches("<failure ").count(), 1);
    }

    #[test]
    fn any_change_says_what_changed() {
        let b = base(entry(1.0, 10, "x"));
        let better = gate(&b, &base(entry(0.5, 8, "x")), 0.05, true);
        assert!(better.iter().all(|d| d.fails && d.change == Change::Better));
        assert_eq!(
            failure_reason(&better).unwrap(),
            "2 failing metrics (2 better)",
            "improvements are not called worse"
        );
        let mut edited = entry(1.0, 10, "x");
        edited.scenario_hash = "other".into();
        let moved = gate(&b, &base(edited), 0.05, false);
        assert_eq!(
            (moved[0].metric, moved[0].change, moved[0].fails),
            ("scenario", Change::Moved, false)
        );
        assert_eq!(failure_reason(&moved), None);
    }
}
