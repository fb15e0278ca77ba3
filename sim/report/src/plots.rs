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
    Ok(files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect())
}

/// Heatmaps of waste and false stops over the first two swept keys, and the Pareto frontier.
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
    let ys: Vec<String> = y.map_or(vec!["-".to_string()], |y| y.values.clone());
    let profile = aggs
        .iter()
        .find(|a| !a.setting.is_empty())
        .map(|a| a.profile.clone())
        .unwrap_or_default();
    // Mean over any further axes, for the first profile.
    let cell = |xv: &str, yv: &str, f: &dyn Fn(&Aggregate) -> f64| -> Option<f64> {
        let hits: Vec<f64> = aggs
            .iter()
            .filter(|a| a.profile == profile && !a.setting.is_empty())
            .filter(|a| {
                let parts: Vec<&str> = a.setting.split(';').collect();
                parts.contains(&format!("{}={xv}", x.key).as_str())
                    && y.is_none_or(|y| parts.contains(&format!("{}={yv}", y.key).as_str()))
            })
            .map(f)
            .collect();
        (!hits.is_empty()).then(|| hits.iter().sum::<f64>() / hits.len() as f64)
    };
    let grid = |f: &dyn Fn(&Aggregate) -> f64| -> Vec<Vec<Option<f64>>> {
        ys.iter()
            .map(|yv| x.values.iter().map(|xv| cell(xv, yv, f)).collect())
            .collect()
    };
    let y_label = y.map_or("-", |y| y.key.as_str());
    files.extend(plot::heatmap(
        dir,
        "heatmap-waste",
        "wasted dollars per loop run (mean)",
        &x.key,
        &x.values,
        y_label,
        &ys,
        &grid(&|a| a.waste_usd_mean),
        "$ wasted",
        false,
    )?);
    files.extend(plot::heatmap(
        dir,
        "heatmap-false-stops",
        "healthy runs stopped",
        &x.key,
        &x.values,
        y_label,
        &ys,
        &grid(&|a| a.false_stop_rate),
        "false stops",
        true,
    )?);
    // Settings that tie on both axes share one label: "first (+N tied)".
    let mut points: Vec<ParetoPoint> = Vec::new();
    for a in aggs {
        let (x, y) = (a.false_stop_rate * 100.0, a.saved_usd_mean);
        let tied = points
            .iter()
            .filter(|p| p.x == x && p.y == y && p.on_frontier == a.pareto)
            .count();
        if tied > 0 {
            if let Some(first) = points
                .iter_mut()
                .find(|p| p.x == x && p.y == y && p.on_frontier == a.pareto)
            {
                let base = first.label.split(" (+").next().unwrap_or("").to_string();
                first.label = format!("{base} (+{tied} tied)");
            }
            continue;
        }
        points.push(ParetoPoint {
            x,
            y,
            label: short_setting(&a.setting),
            on_frontier: a.pareto,
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
        &points,
    )?);
    Ok(files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect())
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
