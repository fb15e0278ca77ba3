//! Which charts a run or a sweep gets, built from run summaries and sweep aggregates.

use std::path::Path;

use loopsim_engine::budget::UNLIMITED;
use loopsim_world::sim::{RunSummary, SpanKind};

use crate::plot::{self, Marker, MarkerKind, ParetoPoint, PlotError, Series, TimelineRow};
use crate::sweep::{Aggregate, SweepSpec};

fn min(us: u64) -> f64 {
    us as f64 / 60e6
}

/// The run's total cost over time (all agents), with the parent's warnings and the first stop.
fn total_cost_series(s: &RunSummary, label: String) -> Series {
    let mut deltas: Vec<(u64, usize, u64)> = Vec::new();
    for (i, a) in s.agents.iter().enumerate() {
        let Some(series) = &a.series else { continue };
        let mut prev = 0;
        for &(t, cum) in &series.cost {
            deltas.push((t, i, cum - prev));
            prev = cum;
        }
    }
    deltas.sort();
    let mut total = 0u64;
    let mut points = vec![(0.0, 0.0)];
    for (t, _, d) in deltas {
        total += d;
        points.push((min(t), total as f64 / 1e6));
    }
    let at = |t: u64| -> f64 {
        let tm = min(t);
        points
            .iter()
            .take_while(|p| p.0 <= tm)
            .last()
            .map_or(0.0, |p| p.1)
    };
    let mut markers = Vec::new();
    if let Some(series) = &s.agents[0].series {
        if let Some(&t) = series.warnings_us.first() {
            markers.push(Marker {
                t_min: min(t),
                y: at(t),
                kind: MarkerKind::Warning,
            });
        }
    }
    if let Some(t) = s
        .agents
        .iter()
        .filter_map(|a| a.stop.as_ref().map(|st| st.t_us))
        .min()
    {
        markers.push(Marker {
            t_min: min(t),
            y: at(t),
            kind: MarkerKind::Stop,
        });
    }
    Series {
        label,
        points,
        markers,
    }
}

/// Cost over time (one line per run), the agents' timeline and their budgets, for the first run.
pub fn run_plots(dir: &Path, runs: &[RunSummary]) -> Result<Vec<String>, PlotError> {
    let first = &runs[0];
    let mut files = Vec::new();
    let lines: Vec<Series> = runs
        .iter()
        .map(|s| {
            total_cost_series(
                s,
                format!(
                    "{} {}",
                    if s.recorded { "recorded" } else { &s.profile },
                    s.platform.as_deref().unwrap_or("")
                ),
            )
        })
        .collect();
    // Without a price there is no cost to draw (it would show a flat $0).
    if !runs.iter().any(|s| s.price_unknown) {
        files.extend(plot::cost_over_time(
            dir,
            "cost",
            &format!("{}: cumulative cost", first.scenario),
            &lines,
        )?);
    }
    let rows: Vec<TimelineRow> = first
        .agents
        .iter()
        .filter_map(|a| {
            let series = a.series.as_ref()?;
            let spans = series
                .spans
                .iter()
                .map(|&(a, b, k)| {
                    let kind = match k {
                        SpanKind::Model => plot::SpanKind::Model,
                        SpanKind::Tool => plot::SpanKind::Tool,
                        SpanKind::Waiting => plot::SpanKind::Waiting,
                    };
                    (min(a), min(b), kind)
                })
                .collect();
            Some(TimelineRow {
                agent: a.name.clone(),
                spans,
            })
        })
        .collect();
    files.extend(plot::agent_timeline(
        dir,
        "timeline",
        &format!(
            "{}: what each agent was doing ({})",
            first.scenario, first.profile
        ),
        &rows,
    )?);
    let unlimited: Vec<&str> = first
        .agents
        .iter()
        .filter(|a| a.budget_max >= UNLIMITED)
        .map(|a| a.name.as_str())
        .collect();
    let budgets: Vec<Series> = first
        .agents
        .iter()
        .filter(|a| a.budget_max < UNLIMITED)
        .filter_map(|a| {
            let series = a.series.as_ref()?;
            let points = series
                .budget_used
                .iter()
                .map(|&(t, used)| (min(t), a.budget_max.saturating_sub(used) as f64))
                .collect();
            Some(Series {
                label: a.name.clone(),
                points,
                markers: vec![],
            })
        })
        .collect();
    let title = if unlimited.is_empty() {
        format!("{}: iteration budget remaining", first.scenario)
    } else {
        format!(
            "{}: iteration budget remaining (unlimited: {})",
            first.scenario,
            unlimited.join(", ")
        )
    };
    files.extend(plot::budget_over_time(dir, "budget", &title, &budgets)?);
    Ok(file_names(&files))
}

/// One number of a sweep setting, for a heatmap.
type Metric = fn(&Aggregate) -> f64;

/// Heatmaps of waste and false stops over the first two swept keys (one key: a single row),
/// and the Pareto frontier.
pub fn sweep_plots(
    dir: &Path,
    spec: &SweepSpec,
    aggs: &[Aggregate],
) -> Result<Vec<String>, PlotError> {
    let mut files = Vec::new();
    let Some(x) = spec.axes.first() else {
        return Ok(vec![]);
    };
    let y = spec.axes.get(1);
    let profile = aggs
        .iter()
        .find(|a| !a.setting.is_empty())
        .map(|a| a.profile.clone())
        .unwrap_or_default();
    // Mean over any further axes, for the first profile.
    let cell = |xv: &str, yv: Option<&str>, f: &dyn Fn(&Aggregate) -> f64| -> Option<f64> {
        let hits: Vec<f64> = aggs
            .iter()
            .filter(|a| a.profile == profile && !a.setting.is_empty())
            .filter(|a| {
                let parts: Vec<&str> = a.setting.split(';').collect();
                let has = |key: &str, v: &str| parts.contains(&format!("{key}={v}").as_str());
                has(&x.key, xv) && y.zip(yv).is_none_or(|(y, yv)| has(&y.key, yv))
            })
            .map(f)
            .collect();
        (!hits.is_empty()).then(|| hits.iter().sum::<f64>() / hits.len() as f64)
    };
    let charts: [(&str, &str, &str, bool, Metric); 2] = [
        (
            "heatmap-waste",
            "wasted dollars per loop run (mean)",
            "$ wasted",
            false,
            |a| a.waste_usd_mean,
        ),
        (
            "heatmap-false-stops",
            "healthy runs stopped",
            "false stops",
            true,
            |a| a.false_stop_rate,
        ),
    ];
    for (stem, title, value_label, percent, f) in charts {
        let row = |yv: Option<&str>| -> Vec<Option<f64>> {
            x.values.iter().map(|xv| cell(xv, yv, &f)).collect()
        };
        files.extend(match y {
            Some(y) => plot::heatmap(
                dir,
                stem,
                title,
                &x.key,
                &x.values,
                &y.key,
                &y.values,
                &y.values.iter().map(|yv| row(Some(yv))).collect::<Vec<_>>(),
                value_label,
                percent,
            )?,
            None => plot::heatmap_row(
                dir,
                stem,
                title,
                &x.key,
                &x.values,
                &row(None),
                value_label,
                percent,
            )?,
        });
    }
    files.extend(plot::pareto(
        dir,
        "pareto",
        &format!(
            "cost saved vs false stops (points: {})",
            short_keys(&spec.axes.iter().map(|a| a.key.as_str()).collect::<Vec<_>>()).join(" / ")
        ),
        "healthy runs stopped (%)",
        "saved per loop run ($)",
        &pareto_points(aggs),
    )?);
    Ok(file_names(&files))
}

/// One point per distinct (false stops, saving, frontier) place, in the order the settings come,
/// labelled with the first setting there and how many others share it: `2 / 1 (+2 tied)`.
fn pareto_points(aggs: &[Aggregate]) -> Vec<ParetoPoint> {
    let mut groups: Vec<(ParetoPoint, usize)> = Vec::new();
    for a in aggs {
        let (x, y) = (a.false_stop_rate * 100.0, a.saved_usd_mean);
        match groups
            .iter_mut()
            .find(|(p, _)| p.x == x && p.y == y && p.on_frontier == a.pareto)
        {
            Some((_, others)) => *others += 1,
            None => groups.push((
                ParetoPoint {
                    x,
                    y,
                    label: short_setting(&a.setting),
                    on_frontier: a.pareto,
                },
                0,
            )),
        }
    }
    groups
        .into_iter()
        .map(|(mut p, others)| {
            if others > 0 {
                p.label = format!("{} (+{others} tied)", p.label);
            }
            p
        })
        .collect()
}

fn file_names(paths: &[std::path::PathBuf]) -> Vec<String> {
    paths
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect()
}

/// A setting's values only, `2 / 1`, in axis order (the chart title names the keys).
fn short_setting(setting: &str) -> String {
    if setting.is_empty() {
        return "baseline".into();
    }
    setting
        .split(';')
        .map(|kv| kv.split_once('=').map_or(kv, |(_, v)| v))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// What tells the keys apart: the segments left after the ones all keys share at the start
/// and at the end (a single key: its last segment).
fn short_keys(keys: &[&str]) -> Vec<String> {
    let split: Vec<Vec<&str>> = keys.iter().map(|k| k.split('.').collect()).collect();
    if split.len() < 2 {
        return split
            .iter()
            .map(|p| p.last().copied().unwrap_or("").to_string())
            .collect();
    }
    let shortest = split.iter().map(Vec::len).min().unwrap_or(0);
    let head = (0..shortest)
        .take_while(|&i| split.iter().all(|p| p[i] == split[0][i]))
        .count();
    let tail = (0..shortest - head)
        .take_while(|&i| {
            split
                .iter()
                .all(|p| p[p.len() - 1 - i] == split[0][split[0].len() - 1 - i])
        })
        .count();
    split
        .iter()
        .zip(keys)
        .map(|(p, k)| {
            let middle = &p[head..p.len() - tail];
            if middle.is_empty() {
                k.to_string()
            } else {
                middle.join(".")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Axis;

    /// A fresh directory per test, removed by the test when it passes.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("loopsim-plots-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The text of every `<text>` element of an SVG.
    fn svg_texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = &t[t.find('>')? + 1..];
                Some(body[..body.find("</text>")?].trim().to_string())
            })
            .collect()
    }

    fn agg(setting: &str, false_stops: f64, saved: f64, pareto: bool) -> Aggregate {
        Aggregate {
            setting: setting.into(),
            profile: "p".into(),
            loop_runs: 1,
            waste_usd_mean: saved / 10.0,
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
            pareto,
        }
    }

    #[test]
    fn pareto_ties_count_every_other_setting_at_the_point() {
        let aggs = [
            agg("", 0.0, 0.0, false),
            agg("k=2;w=1", 0.25, 0.04, true),
            agg("k=2;w=2", 0.25, 0.04, true),
            agg("k=4;w=1", 0.0, 0.02, true),
            agg("k=2;w=3", 0.25, 0.04, true),
            agg("k=4;w=2", 0.0, 0.02, true),
            agg("k=2;w=4", 0.25, 0.04, true),
            agg("k=6;w=1", 0.0, 0.01, false),
        ];
        let labels: Vec<(String, bool)> = pareto_points(&aggs)
            .into_iter()
            .map(|p| (p.label, p.on_frontier))
            .collect();
        assert_eq!(
            labels,
            [
                ("baseline".to_string(), false),
                ("2 / 1 (+3 tied)".to_string(), true),
                ("4 / 1 (+1 tied)".to_string(), true),
                ("6 / 1".to_string(), false),
            ]
        );
    }

    #[test]
    fn one_key_sweep_draws_one_row_without_a_y_axis() {
        let dir = scratch("one-key");
        let spec = SweepSpec {
            scenarios: vec![],
            profiles: vec![],
            platform: None,
            axes: vec![Axis {
                key: "tool_loop_guardrails.hard_stop_after.idempotent_no_progress".into(),
                values: ["2", "3", "4", "5", "6"].map(String::from).to_vec(),
            }],
            seeds: (0, 4),
        };
        let mut aggs = vec![agg("", 0.0, 0.0, false)];
        for (i, v) in spec.axes[0].values.iter().enumerate() {
            let saved = 0.0301 + 0.0074 * i as f64;
            aggs.push(agg(
                &format!("{}={v}", spec.axes[0].key),
                0.0,
                saved,
                i == 0,
            ));
        }
        let files = sweep_plots(&dir, &spec, &aggs).unwrap();
        assert_eq!(
            files,
            [
                "heatmap-waste.svg",
                "heatmap-waste.png",
                "heatmap-false-stops.svg",
                "heatmap-false-stops.png",
                "pareto.svg",
                "pareto.png"
            ]
        );
        for (stem, value_label) in [
            ("heatmap-waste", "$ wasted"),
            ("heatmap-false-stops", "false stops"),
        ] {
            let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap();
            let texts = svg_texts(&svg);
            assert!(
                !texts.iter().any(|t| t == "-"),
                "{stem}: a stray '-': {texts:?}"
            );
            let once = texts.iter().filter(|t| *t == value_label).count();
            assert_eq!(
                once, 1,
                "{stem}: the colour bar is labelled once: {texts:?}"
            );
            // The colour bar is drawn last: its heading, then its tick labels.
            let at = texts.iter().position(|t| t == value_label).unwrap();
            let mut ticks: Vec<&String> = texts[at + 1..].iter().collect();
            let n = ticks.len();
            assert!(n >= 1, "{stem}: no colour-bar tick: {texts:?}");
            ticks.sort();
            ticks.dedup();
            assert_eq!(ticks.len(), n, "{stem}: a repeated label: {texts:?}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
