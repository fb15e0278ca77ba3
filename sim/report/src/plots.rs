//! Which charts a run or a sweep gets, built from run summaries and sweep aggregates.

use std::path::Path;

use loopsim_engine::budget::UNLIMITED;
use loopsim_world::sim::{RunSummary, SpanKind};

use crate::chart::{
    self, BudgetLine, Marker, MarkerKind, ParetoPoint, PlotError, Series, TimeAxis, TimelineRow,
};
use crate::sweep::{Aggregate, SweepSpec};

fn min(us: u64) -> f64 {
    us as f64 / 60e6
}

/// What a run is called in its charts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLabel {
    /// For people: the cost chart's legend entry and the run's timeline and budget titles.
    pub label: String,
    /// For file names: a run after the first gets `timeline-<slug>` and `budget-<slug>`.
    pub slug: String,
}

/// The labels [`run_plots`] uses: `recorded` for a recorded session, else `<profile> <platform>`;
/// slugs are the labels made file-name safe, with `-2`, `-3` .. appended to repeats.
pub fn default_labels(runs: &[RunSummary]) -> Vec<RunLabel> {
    let mut used: Vec<String> = Vec::new();
    runs.iter()
        .map(|s| {
            let label = if s.recorded {
                "recorded".to_string()
            } else {
                match s.platform.as_deref() {
                    Some(p) if !p.is_empty() => format!("{} {p}", s.profile),
                    _ => s.profile.to_string(),
                }
            };
            let base = slug(&label);
            let slug = (1..)
                .map(|n| {
                    if n == 1 {
                        base.clone()
                    } else {
                        format!("{base}-{n}")
                    }
                })
                .find(|c| !used.contains(c))
                .unwrap_or_default();
            used.push(slug.clone());
            RunLabel { label, slug }
        })
        .collect()
}

/// Letters, digits, `.`, `_` and `-` kept; any other run of characters becomes one `-`.
pub fn slug(label: &str) -> String {
    let mut out = String::new();
    for c in label.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').trim_start_matches('.');
    if out.is_empty() {
        "run".into()
    } else {
        out.to_string()
    }
}

/// Cost over time (one line per run), and each run's timeline and budgets, with
/// [`default_labels`].
pub fn run_plots(dir: &Path, runs: &[RunSummary]) -> Result<Vec<String>, PlotError> {
    run_plots_labeled(dir, runs, &default_labels(runs))
}

/// Cost over time (one line per run, `labels[i].label` in the legend; not drawn when a price is
/// unknown), then for each run its timeline and budget: `timeline` and `budget` for the first,
/// `timeline-<slug>` and `budget-<slug>` for the others. Returns the file names written, in
/// that order (SVG before PNG). Long idle stretches are drawn as breaks on every time axis.
pub fn run_plots_labeled(
    dir: &Path,
    runs: &[RunSummary],
    labels: &[RunLabel],
) -> Result<Vec<String>, PlotError> {
    check_labels(runs, labels)?;
    let Some(first) = runs.first() else {
        return Ok(vec![]);
    };
    let mut files = Vec::new();
    // Without a price there is no cost to draw (it would show a flat $0).
    if !runs.iter().any(|s| s.price_unknown) {
        let lines: Vec<Series> = runs
            .iter()
            .zip(labels)
            .map(|(s, l)| total_cost_series(s, l.label.clone()))
            .collect();
        let busy: Vec<(f64, f64)> = runs.iter().flat_map(busy_spans).collect();
        let end = runs.iter().map(|s| min(s.duration_us)).fold(0.0, f64::max);
        files.extend(chart::cost_over_time_on(
            dir,
            "cost",
            &format!("{}: cumulative cost", first.scenario),
            &lines,
            &TimeAxis::compress_idle(&busy, end),
        )?);
    }
    for (i, (run, label)) in runs.iter().zip(labels).enumerate() {
        let suffix = if i == 0 {
            String::new()
        } else {
            format!("-{}", label.slug)
        };
        let axis = TimeAxis::compress_idle(&busy_spans(run), min(run.duration_us));
        let name = run_name(run, &label.label);
        files.extend(chart::agent_timeline_on(
            dir,
            &format!("timeline{suffix}"),
            &format!("{}: what each agent was doing ({name})", run.scenario),
            &timeline_rows(run),
            &axis,
        )?);
        files.extend(chart::budget_used_over_time(
            dir,
            &format!("budget{suffix}"),
            &format!("{}: iterations used per turn ({name})", run.scenario),
            &budget_lines(run),
            &axis,
        )?);
    }
    Ok(file_names(&files))
}

/// As many labels as runs, and distinct non-empty slugs for the runs after the first.
fn check_labels(runs: &[RunSummary], labels: &[RunLabel]) -> Result<(), PlotError> {
    if labels.len() != runs.len() {
        return Err(PlotError::Labels(format!(
            "{} labels for {} runs",
            labels.len(),
            runs.len()
        )));
    }
    let slugs: Vec<&str> = labels.iter().skip(1).map(|l| l.slug.as_str()).collect();
    for (i, s) in slugs.iter().enumerate() {
        if s.is_empty() {
            return Err(PlotError::Labels(format!(
                "run {} has an empty slug",
                i + 1
            )));
        }
        if slugs[..i].contains(s) {
            return Err(PlotError::Labels(format!("slug {s:?} is used twice")));
        }
    }
    Ok(())
}

/// How the run is named in its chart titles; a recorded run says it is the recorded session.
fn run_name(run: &RunSummary, label: &str) -> String {
    match (run.recorded, label) {
        (true, "recorded") => "the recorded session".into(),
        (true, _) => format!("{label}, the recorded session"),
        (false, _) => label.to_string(),
    }
}

/// Every agent's model, tool and waiting spans, in minutes.
fn busy_spans(run: &RunSummary) -> Vec<(f64, f64)> {
    run.agents
        .iter()
        .filter_map(|a| a.series.as_ref())
        .flat_map(|s| s.spans.iter().map(|&(a, b, _)| (min(a), min(b))))
        .collect()
}

/// The run's total cost over time (all agents) as a staircase (a call's cost lands when it
/// ends), with the parent's first warning and the first stop.
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
    let mut i = 0;
    while i < deltas.len() {
        // All the costs landing at one instant make one step.
        let t = deltas[i].0;
        let before = total;
        while i < deltas.len() && deltas[i].0 == t {
            total += deltas[i].2;
            i += 1;
        }
        if total != before {
            points.push((min(t), before as f64 / 1e6));
            points.push((min(t), total as f64 / 1e6));
        }
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
    if let Some(series) = s.agents.first().and_then(|a| a.series.as_ref()) {
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

fn timeline_rows(run: &RunSummary) -> Vec<TimelineRow> {
    run.agents
        .iter()
        .filter_map(|a| {
            let series = a.series.as_ref()?;
            let spans = series
                .spans
                .iter()
                .map(|&(a, b, k)| {
                    let kind = match k {
                        SpanKind::Model => chart::SpanKind::Model,
                        SpanKind::Tool => chart::SpanKind::Tool,
                        SpanKind::Waiting => chart::SpanKind::Waiting,
                    };
                    (min(a), min(b), kind)
                })
                .collect();
            Some(TimelineRow {
                agent: a.name.clone(),
                spans,
            })
        })
        .collect()
}

/// Each agent's iterations used as a staircase held flat to the end of the run, its cap (none
/// when unlimited), and its family: the name before `#` (`worker#3` is a `worker`).
fn budget_lines(run: &RunSummary) -> Vec<BudgetLine> {
    let end = min(run.duration_us);
    run.agents
        .iter()
        .filter_map(|a| {
            let series = a.series.as_ref()?;
            // Several changes at one instant: only where they end up shows.
            let mut last_at: Vec<(u64, u64)> = Vec::new();
            for &(t, used) in &series.budget_used {
                match last_at.last_mut() {
                    Some(l) if l.0 == t => l.1 = used,
                    _ => last_at.push((t, used)),
                }
            }
            let mut points: Vec<(f64, f64)> = Vec::new();
            for (t, used) in last_at {
                let (t, used) = (min(t), used as f64);
                if let Some(&(_, prev)) = points.last() {
                    if prev == used {
                        continue;
                    }
                    points.push((t, prev));
                }
                points.push((t, used));
            }
            if let Some(&(t, last)) = points.last() {
                if end > t {
                    points.push((end, last));
                }
            }
            Some(BudgetLine {
                agent: a.name.clone(),
                family: a.name.split('#').next().unwrap_or(&a.name).to_string(),
                points,
                cap: (a.budget_max < UNLIMITED).then_some(a.budget_max as f64),
            })
        })
        .collect()
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
    // One pair of heatmaps per profile the sweep ran (a mean over any further axes).
    let mut profiles: Vec<&str> = Vec::new();
    for a in aggs.iter().filter(|a| !a.setting.is_empty()) {
        if !profiles.contains(&a.profile.as_str()) {
            profiles.push(&a.profile);
        }
    }
    for profile in &profiles {
        let cell = |xv: &str, yv: Option<&str>, f: &dyn Fn(&Aggregate) -> f64| -> Option<f64> {
            let hits: Vec<f64> = aggs
                .iter()
                .filter(|a| a.profile == *profile && !a.setting.is_empty())
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
            // With several profiles each gets its own files, named and titled by it.
            let (stem, title) = if profiles.len() > 1 {
                (
                    format!("{stem}-{}", slug(profile)),
                    format!("{title} ({profile})"),
                )
            } else {
                (stem.to_string(), title.to_string())
            };
            let row = |yv: Option<&str>| -> Vec<Option<f64>> {
                x.values.iter().map(|xv| cell(xv, yv, &f)).collect()
            };
            files.extend(match y {
                Some(y) => chart::heatmap(
                    dir,
                    &stem,
                    &title,
                    &x.key,
                    &x.values,
                    &y.key,
                    &y.values,
                    &y.values.iter().map(|yv| row(Some(yv))).collect::<Vec<_>>(),
                    value_label,
                    percent,
                )?,
                None => chart::heatmap_row(
                    dir,
                    &stem,
                    &title,
                    &x.key,
                    &x.values,
                    &row(None),
                    value_label,
                    percent,
                )?,
            });
        }
    }
    files.extend(chart::pareto(
        dir,
        "pareto",
        &format!(
            "cost saved vs false stops (points: {})",
            short_keys(&spec.axes.iter().map(|a| a.key.as_str()).collect::<Vec<_>>()).join(" / ")
        ),
        "healthy runs stopped (%)",
        "saved per loop run ($)",
        &pareto_points(aggs, profiles.len() > 1),
    )?);
    Ok(file_names(&files))
}

/// One point per distinct (false stops, saving, frontier) place, in the order the settings come,
/// labelled with the first setting there and how many others share it: `2 / 1 (+2 tied)`.
/// With several profiles a label names the profile too (`hermes-main: 2 / 1`).
fn pareto_points(aggs: &[Aggregate], name_profiles: bool) -> Vec<ParetoPoint> {
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
                    label: if name_profiles {
                        format!("{}: {}", a.profile, short_setting(&a.setting))
                    } else {
                        short_setting(&a.setting)
                    },
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
    use loopsim_world::sim::{AgentSeries, AgentSummary, Status, Stop};

    const MIN: u64 = 60_000_000;

    fn agent(name: &str, budget_max: u64, series: AgentSeries) -> AgentSummary {
        AgentSummary {
            name: name.into(),
            status: Status::Done,
            turns: 1,
            exit_reasons: vec![],
            budget_used: series.budget_used.last().map_or(0, |b| b.1),
            budget_max,
            warnings: 0,
            notices: 0,
            first_warning_call: None,
            first_warning_us: None,
            stop: None,
            summary_calls: 0,
            usage: Default::default(),
            window: None,
            after_loop_began: None,
            wait_us: 0,
            last_activity_us: 0,
            series: Some(series),
            tool_calls: Default::default(),
            stubs: 0,
            compressions: Default::default(),
        }
    }

    fn run(profile: &str, platform: Option<&str>, agents: Vec<AgentSummary>) -> RunSummary {
        RunSummary {
            scenario: "sc".into(),
            scenario_hash: String::new(),
            label: Default::default(),
            config_hash: String::new(),
            settings: None,
            seed: 0,
            profile: profile.parse().expect("a profile"),
            platform: platform.map(String::from),
            duration_us: 84 * MIN,
            parent_exit_reason: loopsim_engine::turn::ExitReason::Unknown,
            agents,
            total: Default::default(),
            loop_began_us: None,
            events: 0,
            hit_horizon: false,
            trace_hash: String::new(),
            price_unknown: false,
            recorded: false,
            source_note: None,
            coverage: Default::default(),
        }
    }

    /// One agent working from `from` to `to` minutes: a model call a minute, each using an
    /// iteration and costing a dollar.
    fn busy(from: u64, to: u64) -> AgentSeries {
        let mut s = AgentSeries::default();
        s.budget_used.push((from * MIN, 0));
        for (k, m) in (from..to).enumerate() {
            s.spans.push((
                m * MIN,
                m * MIN + MIN / 2,
                loopsim_world::sim::SpanKind::Model,
            ));
            s.budget_used.push((m * MIN, k as u64 + 1));
            s.cost.push((m * MIN + MIN / 2, (k as u64 + 1) * 1_000_000));
        }
        s
    }

    /// A parent (unlimited) and three workers (capped at 50) over 84 minutes.
    fn incident(profile: &str, platform: Option<&str>) -> RunSummary {
        let mut agents = vec![agent("parent", UNLIMITED, busy(0, 84))];
        for c in 1..=3 {
            agents.push(agent(&format!("worker#{c}"), 50, busy(20, 30 + c)));
        }
        run(profile, platform, agents)
    }

    #[test]
    fn budget_lines_hold_flat_to_the_end_and_unlimited_ones_still_have_data() {
        let lines = budget_lines(&incident("hermes-main", None));
        assert_eq!(lines.len(), 4);
        let parent = &lines[0];
        assert_eq!(parent.cap, None, "unlimited: no cap");
        // The turn opens at 0 and its first call comes at once: one point, 1 used.
        assert_eq!(parent.points.first(), Some(&(0.0, 1.0)));
        assert_eq!(parent.points.last(), Some(&(84.0, 84.0)));
        let w = &lines[1];
        assert_eq!((w.family.as_str(), w.cap), ("worker", Some(50.0)));
        // A staircase: 1 from minute 20, 2 from minute 21...
        assert_eq!(&w.points[..3], &[(20.0, 1.0), (21.0, 1.0), (21.0, 2.0)]);
        // ... and held at 11 from minute 30 to the run's end at 84, not stopping at 30.
        assert_eq!(w.points.last(), Some(&(84.0, 11.0)));
        assert_eq!(w.points[w.points.len() - 2], (30.0, 11.0));
    }

    #[test]
    fn cost_is_a_staircase_with_its_markers_on_it() {
        let s = AgentSeries {
            cost: vec![(MIN, 1_000_000), (2 * MIN, 3_000_000)],
            warnings_us: vec![MIN],
            ..Default::default()
        };
        let mut a = agent("parent", 90, s);
        a.stop = Some(Stop {
            call: 2,
            t_us: MIN,
            code: "x".into(),
        });
        let series = total_cost_series(&run("hermes-main", None, vec![a]), "p".into());
        assert_eq!(
            series.points,
            [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (2.0, 1.0), (2.0, 3.0)]
        );
        let at: Vec<(f64, f64)> = series.markers.iter().map(|m| (m.t_min, m.y)).collect();
        assert_eq!(
            at,
            [(1.0, 1.0), (1.0, 1.0)],
            "a warning and a stop at one place"
        );
    }

    #[test]
    fn default_labels_are_file_safe_and_unique() {
        let mut rec = run("hermes-main", Some("cli"), vec![]);
        rec.recorded = true;
        let runs = [
            rec,
            run("hermes-main", Some("telegram"), vec![]),
            run("hermes-main", Some("telegram"), vec![]),
            run("hermes-0.19.0", Some("a/b"), vec![]),
            run("hermes-0.19.0", None, vec![]),
        ];
        let labels: Vec<(String, String)> = default_labels(&runs)
            .into_iter()
            .map(|l| (l.label, l.slug))
            .collect();
        let want = [
            ("recorded", "recorded"),
            ("hermes-main telegram", "hermes-main-telegram"),
            ("hermes-main telegram", "hermes-main-telegram-2"),
            ("hermes-0.19.0 a/b", "hermes-0.19.0-a-b"),
            ("hermes-0.19.0", "hermes-0.19.0"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()));
        assert_eq!(labels, want);
        assert_eq!(slug("  ..!!"), "run");
    }

    #[test]
    fn labeled_run_plots_write_one_timeline_and_budget_per_run() {
        let dir = scratch("labeled");
        let mut recorded = incident("hermes-main", Some("cli"));
        recorded.recorded = true;
        let runs = [
            recorded,
            incident("hermes-main", Some("telegram")),
            incident("article-2026-06", None),
        ];
        let label = |l: &str, s: &str| RunLabel {
            label: l.into(),
            slug: s.into(),
        };
        let labels = [
            label("as recorded", "rec"),
            label("main on telegram", "main"),
            label("the article", "article"),
        ];
        let files = run_plots_labeled(&dir, &runs, &labels).unwrap();
        let want: Vec<String> = [
            "cost",
            "timeline",
            "budget",
            "timeline-main",
            "budget-main",
            "timeline-article",
            "budget-article",
        ]
        .iter()
        .flat_map(|s| [format!("{s}.svg"), format!("{s}.png")])
        .collect();
        assert_eq!(files, want);
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut sorted = want.clone();
        sorted.sort();
        assert_eq!(on_disk, sorted, "nothing else written into the directory");
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let cost = svg_texts(&read("cost.svg"));
        for l in &labels {
            assert!(cost.contains(&l.label), "{} in the cost legend", l.label);
        }
        assert!(read("timeline.svg").contains("(as recorded, the recorded session)"));
        assert!(read("budget-main.svg").contains("iterations used per turn (main on telegram)"));
        assert!(read("budget-article.svg").contains("cap 50: worker (3)"));
        // The same input draws the same bytes.
        let again = scratch("labeled-again");
        run_plots_labeled(&again, &runs, &labels).unwrap();
        for f in &want {
            assert!(
                std::fs::read(dir.join(f)).unwrap() == std::fs::read(again.join(f)).unwrap(),
                "{f} differs between two renders"
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
        std::fs::remove_dir_all(again).unwrap();
    }

    #[test]
    fn run_labels_must_match_the_runs() {
        let dir = scratch("bad-labels");
        let runs = [
            incident("hermes-main", None),
            incident("hermes-0.19.0", None),
        ];
        let l = |s: &str| RunLabel {
            label: s.into(),
            slug: s.into(),
        };
        let err = run_plots_labeled(&dir, &runs, &[l("a")]);
        assert!(matches!(err, Err(PlotError::Labels(_))), "{err:?}");
        let three = [
            incident("hermes-main", None),
            incident("hermes-0.19.0", None),
            incident("hermes-v0.21.5", None),
        ];
        let err = run_plots_labeled(&dir, &three, &[l("a"), l("b"), l("b")]);
        assert!(matches!(err, Err(PlotError::Labels(_))), "{err:?}");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "nothing written"
        );
        assert_eq!(run_plots(&dir, &[]).unwrap(), Vec::<String>::new());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_two_day_idle_gap_does_not_stretch_the_timeline() {
        let dir = scratch("two-day");
        let mut parent = busy(0, 5);
        let later = busy(2880, 2885);
        parent.spans.extend(later.spans);
        parent.budget_used.extend(later.budget_used);
        let mut r = run(
            "hermes-main",
            None,
            vec![agent("parent", UNLIMITED, parent)],
        );
        r.duration_us = 2885 * MIN;
        let axis = TimeAxis::compress_idle(&busy_spans(&r), min(r.duration_us));
        assert_eq!(axis.breaks().len(), 1);
        assert!(
            axis.drawn_end() < 11.0,
            "drawn {} minutes wide",
            axis.drawn_end()
        );
        run_plots(&dir, &[r]).unwrap();
        for f in ["timeline.svg", "budget.svg", "cost.svg"] {
            let svg = std::fs::read_to_string(dir.join(f)).unwrap();
            assert!(svg.contains("2.0 d idle"), "{f} marks the break");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

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
        let labels: Vec<(String, bool)> = pareto_points(&aggs, false)
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
            config: None,
            axes: vec![
                Axis::parse("tool_loop_guardrails.hard_stop_after.idempotent_no_progress=2..=6")
                    .unwrap(),
            ],
            seeds: (0, 4),
            baseline: vec![],
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
