//! Line charts (cost, budget).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::*;

/// Shows how fast each profile burns money and when warnings and stops happened, so the cost
/// of a runaway loop and the saving of a stop are visible at a glance. Time runs at one scale;
/// see [`cost_over_time_on`] for an axis with idle stretches compressed.
pub fn cost_over_time(
    dir: &Path,
    stem: &str,
    title: &str,
    series: &[Series],
) -> Result<Vec<PathBuf>, PlotError> {
    cost_over_time_on(dir, stem, title, series, &linear_for(series))
}

/// [`cost_over_time`] on a given time axis (e.g. one with a two-day idle gap drawn as a break).
/// Points are joined by straight lines: give a step's both corners for a staircase.
pub fn cost_over_time_on(
    dir: &Path,
    stem: &str,
    title: &str,
    series: &[Series],
    axis: &TimeAxis,
) -> Result<Vec<PathBuf>, PlotError> {
    let spec = LineSpec {
        title,
        y_desc: "cumulative cost ($)",
        series,
        y_fmt: fmt_dollars,
        axis,
    };
    render(
        dir,
        stem,
        |root| draw_lines(root, &spec),
        |root| draw_lines(root, &spec),
    )
}

/// Shows how parent and children use up their iteration budgets, so a reader sees who ran out
/// first and whether a warning came early enough.
pub fn budget_over_time(
    dir: &Path,
    stem: &str,
    title: &str,
    series: &[Series],
) -> Result<Vec<PathBuf>, PlotError> {
    let axis = linear_for(series);
    let spec = LineSpec {
        title,
        y_desc: "iterations remaining",
        series,
        y_fmt: fmt_plain,
        axis: &axis,
    };
    render(
        dir,
        stem,
        |root| draw_lines(root, &spec),
        |root| draw_lines(root, &spec),
    )
}

pub(super) struct LineSpec<'a> {
    title: &'a str,
    y_desc: &'a str,
    series: &'a [Series],
    y_fmt: fn(f64) -> String,
    axis: &'a TimeAxis,
}

/// One scale from 0 to the latest point or marker.
fn linear_for(series: &[Series]) -> TimeAxis {
    let end = series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.0)
                .chain(s.markers.iter().map(|m| m.t_min))
        })
        .filter(|t| t.is_finite())
        .fold(0.0, f64::max);
    TimeAxis::linear(end)
}

pub(super) fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &LineSpec<'_>,
) -> Result<(), PlotError> {
    let (plot, side) = frame(root, spec.title)?;
    let lines: Vec<Vec<(f64, f64)>> = spec
        .series
        .iter()
        .map(|s| s.points.iter().copied().filter(|p| finite(*p)).collect())
        .collect();
    let drawn = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
        pts.iter()
            .map(|&(t, y)| (spec.axis.to_drawn(t), y))
            .collect()
    };
    let markers = || {
        spec.series
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.markers.iter().map(move |m| (i, m)))
            .filter(|(_, m)| finite((m.t_min, m.y)))
    };
    let y = range_of(
        lines
            .iter()
            .flatten()
            .map(|p| p.1)
            .chain(markers().map(|(_, m)| m.y)),
        true,
        0.08,
    );
    let mut chart = time_chart(&plot, spec.axis, y, spec.y_desc, spec.y_fmt)?;
    let at = |t: f64, y: f64| (spec.axis.to_drawn(t), y);
    for (i, pts) in lines.iter().enumerate() {
        let c = series_color(i);
        let pts = drawn(pts);
        if pts.len() == 1 {
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))
                .map_err(draw_err)?;
        } else {
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(draw_err)?;
        }
    }
    // Stops first, then warnings: a warning stands above its point, clear of a stop's cross,
    // and is never drawn over when both fall at the same place.
    let area = chart.plotting_area();
    for kind in [MarkerKind::Stop, MarkerKind::Warning] {
        for (i, m) in markers().filter(|(_, m)| m.kind == kind) {
            match kind {
                MarkerKind::Warning => draw_warning(area, at(m.t_min, m.y), series_color(i))?,
                MarkerKind::Stop => draw_stop(area, at(m.t_min, m.y), series_color(i))?,
            }
        }
    }
    if lines.iter().all(|l| l.is_empty()) && markers().next().is_none() {
        draw_no_data(&plot)?;
    }

    let mut entries: Vec<LegendEntry> = spec
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| LegendEntry {
            label: s.label.clone(),
            swatch: Swatch::Line(series_color(i)),
        })
        .collect();
    if markers().any(|(_, m)| m.kind == MarkerKind::Warning) {
        entries.push(LegendEntry {
            label: "warning issued".into(),
            swatch: Swatch::Triangle(INK),
        });
    }
    if markers().any(|(_, m)| m.kind == MarkerKind::Stop) {
        entries.push(LegendEntry {
            label: "stopped".into(),
            swatch: Swatch::Cross(INK),
        });
    }
    draw_legend(&side, "legend", &entries)
}
