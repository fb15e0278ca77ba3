//! Per-setting figures of a sweep, aggregated as rows stream by: waste of loop runs, false
//! stops of healthy ones, savings against the baseline, the Pareto frontier and a
//! recommendation.

use serde::{Deserialize, Serialize};

use crate::metrics::{RunMetrics, round};

/// Aggregated figures of one setting (and profile).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    pub setting: String,
    pub profile: String,
    pub loop_runs: u64,
    pub waste_usd_mean: f64,
    pub waste_usd_p50: f64,
    pub waste_usd_p95: f64,
    pub waste_calls_mean: f64,
    pub waste_calls_p50: f64,
    pub waste_calls_p95: f64,
    pub waste_min_mean: f64,
    pub waste_min_p50: f64,
    pub waste_min_p95: f64,
    /// Share of loop runs no guardrail ever stopped.
    pub never_stopped: f64,
    pub healthy_runs: u64,
    /// Share of healthy runs that were stopped.
    pub false_stop_rate: f64,
    /// Mean dollars saved per loop run against the baseline (the scenarios as written).
    pub saved_usd_mean: f64,
    pub pareto: bool,
}

/// Nearest-rank percentile of sorted values.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    (
        round(mean, 6),
        round(pct(&v, 50.0), 6),
        round(pct(&v, 95.0), 6),
    )
}

/// The profile column when each scenario runs under its own profile.
pub const OWN_PROFILES: &str = "(each scenario's)";

/// The label of loop scenarios in rows.
const LOOP: &str = "loop";

#[derive(Default)]
struct Acc {
    waste_usd: Vec<f64>,
    waste_calls: Vec<f64>,
    waste_min: Vec<f64>,
    loops_stopped: u64,
    healthy: u64,
    healthy_stopped: u64,
    saved: Vec<f64>,
}

/// Baseline waste by scenario, profile and seed (looked up by `&str`, without allocating).
type Baselines = std::collections::BTreeMap<
    String,
    std::collections::BTreeMap<String, std::collections::BTreeMap<u64, f64>>,
>;

/// Aggregates rows as they stream by, keeping a few numbers per run, not the rows. It runs
/// on the sweep's one serial path, so a push allocates only for new keys and baselines.
pub struct Aggregator {
    by_profile: bool,
    keys: Vec<(String, String)>,
    accs: Vec<Acc>,
    /// Baseline waste per (scenario, profile, seed): baseline jobs come first.
    baseline: Baselines,
}

impl Aggregator {
    /// Per setting, and per profile too when `by_profile` (the sweep named profiles).
    pub fn new(by_profile: bool) -> Self {
        Aggregator {
            by_profile,
            keys: Vec::new(),
            accs: Vec::new(),
            baseline: Baselines::new(),
        }
    }

    pub fn push(&mut self, r: &RunMetrics) {
        let profile = if self.by_profile {
            r.profile.as_str()
        } else {
            OWN_PROFILES
        };
        // Rows come setting by setting, so the key is almost always the last one.
        let i = match self
            .keys
            .iter()
            .rposition(|(s, p)| *s == r.setting && p == profile)
        {
            Some(i) => i,
            None => {
                self.keys.push((r.setting.clone(), profile.to_string()));
                self.accs.push(Acc::default());
                self.accs.len() - 1
            }
        };
        if r.setting.is_empty() {
            self.baseline
                .entry(r.scenario.clone())
                .or_default()
                .entry(r.profile.clone())
                .or_default()
                .insert(r.seed, r.waste_usd);
        }
        let base = self
            .baseline
            .get(r.scenario.as_str())
            .and_then(|m| m.get(r.profile.as_str()))
            .and_then(|m| m.get(&r.seed))
            .copied();
        let a = &mut self.accs[i];
        if r.label == LOOP {
            a.waste_usd.push(r.waste_usd);
            a.waste_calls.push(r.waste_calls as f64);
            a.waste_min.push(r.waste_min);
            a.loops_stopped += u64::from(r.stopped());
            if let Some(b) = base {
                a.saved.push(b - r.waste_usd);
            }
        } else {
            a.healthy += 1;
            a.healthy_stopped += u64::from(r.stopped());
        }
    }

    /// The aggregates in first-seen order, with the Pareto-optimal ones marked.
    pub fn finish(self) -> Vec<Aggregate> {
        let share = |n: u64, of: usize| {
            if of == 0 {
                0.0
            } else {
                round(n as f64 / of as f64, 6)
            }
        };
        let mut out: Vec<Aggregate> = self
            .keys
            .into_iter()
            .zip(self.accs)
            .map(|((setting, profile), a)| {
                let loops = a.waste_usd.len();
                let (wu, wu50, wu95) = stats(a.waste_usd);
                let (wc, wc50, wc95) = stats(a.waste_calls);
                let (wm, wm50, wm95) = stats(a.waste_min);
                Aggregate {
                    setting,
                    profile,
                    loop_runs: loops as u64,
                    waste_usd_mean: wu,
                    waste_usd_p50: wu50,
                    waste_usd_p95: wu95,
                    waste_calls_mean: wc,
                    waste_calls_p50: wc50,
                    waste_calls_p95: wc95,
                    waste_min_mean: wm,
                    waste_min_p50: wm50,
                    waste_min_p95: wm95,
                    never_stopped: share(loops as u64 - a.loops_stopped, loops),
                    healthy_runs: a.healthy,
                    false_stop_rate: share(a.healthy_stopped, a.healthy as usize),
                    saved_usd_mean: if a.saved.is_empty() {
                        0.0
                    } else {
                        round(a.saved.iter().sum::<f64>() / a.saved.len() as f64, 6)
                    },
                    pareto: false,
                }
            })
            .collect();
        mark_pareto(&mut out);
        out
    }
}

/// Marks the Pareto-optimal settings: no other saves at least as much with at most as many
/// false stops and is strictly better in one of the two.
pub fn mark_pareto(aggs: &mut [Aggregate]) {
    let points: Vec<(f64, f64)> = aggs
        .iter()
        .map(|a| (a.saved_usd_mean, a.false_stop_rate))
        .collect();
    for a in aggs.iter_mut() {
        a.pareto = !points.iter().any(|&(saved, fs)| {
            saved >= a.saved_usd_mean
                && fs <= a.false_stop_rate
                && (saved > a.saved_usd_mean || fs < a.false_stop_rate)
        });
    }
}

/// Aggregates rows already in memory (see [`Aggregator`]).
pub fn aggregate(rows: &[RunMetrics], by_profile: bool) -> Vec<Aggregate> {
    let mut a = Aggregator::new(by_profile);
    rows.iter().for_each(|r| a.push(r));
    a.finish()
}

/// The recommended setting and why: among Pareto-optimal settings, the one that saves most
/// without false stops; if every one stops healthy work, the one with the fewest false stops.
pub fn recommend(aggs: &[Aggregate]) -> Option<(&Aggregate, String)> {
    let frontier: Vec<&Aggregate> = aggs.iter().filter(|a| a.pareto).collect();
    let clean: Vec<&&Aggregate> = frontier
        .iter()
        .filter(|a| a.false_stop_rate == 0.0)
        .collect();
    if let Some(best) = clean.iter().max_by(|a, b| {
        a.saved_usd_mean
            .total_cmp(&b.saved_usd_mean)
            .then_with(|| b.setting.cmp(&a.setting))
    }) {
        let why = format!(
            "it saves the most (${:.2} per loop run on average; loops never stopped: {:.0}%) without stopping any healthy run",
            best.saved_usd_mean,
            best.never_stopped * 100.0
        );
        return Some((best, why));
    }
    let least = frontier.iter().min_by(|a, b| {
        a.false_stop_rate
            .total_cmp(&b.false_stop_rate)
            .then_with(|| b.saved_usd_mean.total_cmp(&a.saved_usd_mean))
    })?;
    let why = format!(
        "every Pareto-optimal setting stops some healthy work; this one stops the fewest ({:.0}%) and saves ${:.2} per loop run",
        least.false_stop_rate * 100.0,
        least.saved_usd_mean
    );
    Some((least, why))
}

/// `aggregate.csv`: one row per setting (and profile), the setting's value of every swept key
/// in a column of its own after the `setting` label (empty for the baseline).
pub fn to_csv(keys: &[&str], aggs: &[Aggregate]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = vec!["setting".into()];
    header.extend(keys.iter().map(|k| k.to_string()));
    header.extend(
        [
            "profile",
            "loop_runs",
            "waste_usd_mean",
            "waste_usd_p50",
            "waste_usd_p95",
            "waste_calls_mean",
            "waste_calls_p50",
            "waste_calls_p95",
            "waste_min_mean",
            "waste_min_p50",
            "waste_min_p95",
            "never_stopped",
            "healthy_runs",
            "false_stop_rate",
            "saved_usd_mean",
            "pareto",
        ]
        .map(String::from),
    );
    w.write_record(&header)?;
    for a in aggs {
        let mut row: Vec<String> = vec![a.setting.clone()];
        for k in keys {
            let value = a
                .setting
                .split(';')
                .filter_map(|kv| kv.split_once('='))
                .find(|(key, _)| key == k)
                .map_or(String::new(), |(_, v)| v.to_string());
            row.push(value);
        }
        row.push(a.profile.clone());
        row.push(a.loop_runs.to_string());
        for f in [
            a.waste_usd_mean,
            a.waste_usd_p50,
            a.waste_usd_p95,
            a.waste_calls_mean,
            a.waste_calls_p50,
            a.waste_calls_p95,
            a.waste_min_mean,
            a.waste_min_p50,
            a.waste_min_p95,
            a.never_stopped,
        ] {
            row.push(format!("{f:?}"));
        }
        row.push(a.healthy_runs.to_string());
        row.push(format!("{:?}", a.false_stop_rate));
        row.push(format!("{:?}", a.saved_usd_mean));
        row.push(a.pareto.to_string());
        w.write_record(&row)?;
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RunMetrics;

    fn agg(setting: &str, saved: f64, false_stops: f64) -> Aggregate {
        Aggregate {
            setting: setting.into(),
            profile: "p".into(),
            loop_runs: 1,
            waste_usd_mean: 0.0,
            waste_usd_p50: 0.0,
            waste_usd_p95: 0.0,
            waste_calls_mean: 0.0,
            waste_calls_p50: 0.0,
            waste_calls_p95: 0.0,
            waste_min_mean: 0.0,
            waste_min_p50: 0.0,
            waste_min_p95: 0.0,
            never_stopped: 0.0,
            healthy_runs: 1,
            false_stop_rate: false_stops,
            saved_usd_mean: saved,
            pareto: false,
        }
    }

    fn frontier(aggs: &[Aggregate]) -> Vec<Aggregate> {
        let mut v = aggs.to_vec();
        mark_pareto(&mut v);
        v
    }

    #[test]
    fn pareto_and_recommendation() {
        let aggs = frontier(&[
            agg("", 0.0, 0.0),
            agg("a", 5.0, 0.0),
            agg("b", 4.0, 0.0),
            agg("c", 9.0, 0.5),
            agg("d", 8.0, 0.6),
        ]);
        let on: Vec<&str> = aggs
            .iter()
            .filter(|a| a.pareto)
            .map(|a| a.setting.as_str())
            .collect();
        assert_eq!(
            on,
            ["a", "c"],
            "b is dominated by a, d by c, the baseline by a"
        );
        let (best, why) = recommend(&aggs).unwrap();
        assert_eq!(best.setting, "a");
        assert!(why.contains("without stopping any healthy run"));
        let dirty = frontier(&[agg("x", 3.0, 0.2), agg("y", 6.0, 0.4)]);
        let (best, why) = recommend(&dirty).unwrap();
        assert_eq!(best.setting, "x", "fewest false stops when none is clean");
        assert!(why.contains("stops the fewest (20%)"), "{why}");
    }

    #[test]
    fn aggregator_matches_the_definitions() {
        let row = |setting: &str, label: &str, seed: u64, waste: f64, stopped: bool| {
            let mut r: RunMetrics = serde_json::from_value(serde_json::json!({
                "job": 0, "scenario": format!("{label}-s"), "label": label, "scenario_hash": "", "config_hash": "",
                "setting": setting, "profile": "p", "platform": "", "seed": seed, "exit_reason": "",
                "duration_min": 0.0, "calls": 0, "parent_calls": 0, "input_tokens": 0, "cache_read_tokens": 0,
                "output_tokens": 0, "approval_calls": 0, "cost_usd": 0.0, "model_latency_s": 0.0, "tool_time_s": 0.0,
                "wait_s": 0.0, "warnings": 0, "first_warning_call": null, "first_warning_min": null,
                "stop_code": if stopped { "x" } else { "" }, "stop_call": null, "stop_min": null,
                "waste_calls": 0, "waste_input_tokens": 0, "waste_usd": waste, "waste_min": 0.0,
                "hit_horizon": false, "trace_hash": ""
            }))
            .unwrap();
            r.waste_usd = waste;
            r
        };
        let rows = vec![
            row("", "loop", 0, 10.0, false),
            row("", "loop", 1, 20.0, false),
            row("", "healthy", 0, 0.0, false),
            row("k=1", "loop", 0, 1.0, true),
            row("k=1", "loop", 1, 3.0, true),
            row("k=1", "healthy", 0, 0.0, true),
        ];
        let a = aggregate(&rows, true);
        assert_eq!(a.len(), 2);
        assert_eq!(
            (a[0].waste_usd_mean, a[0].never_stopped, a[0].saved_usd_mean),
            (15.0, 1.0, 0.0)
        );
        assert_eq!(
            (a[1].waste_usd_mean, a[1].waste_usd_p50, a[1].waste_usd_p95),
            (2.0, 1.0, 3.0)
        );
        assert_eq!((a[1].never_stopped, a[1].false_stop_rate), (0.0, 1.0));
        assert_eq!(a[1].saved_usd_mean, 13.0, "((10-1) + (20-3)) / 2");
        assert!(
            a[0].pareto && a[1].pareto,
            "no false stops vs more savings: both optimal"
        );
    }

    #[test]
    fn aggregate_csv_has_a_column_per_key() {
        let csv = to_csv(
            &["a.x", "a.y"],
            &[agg("", 0.0, 0.0), agg("a.x=2;a.y=true", 1.0, 0.0)],
        )
        .unwrap();
        let text = String::from_utf8(csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("setting,a.x,a.y,profile,"),
            "{}",
            lines[0]
        );
        assert!(lines[1].starts_with(",,,p,"), "{}", lines[1]);
        assert!(
            lines[2].starts_with("a.x=2;a.y=true,2,true,p,"),
            "{}",
            lines[2]
        );
    }
}
