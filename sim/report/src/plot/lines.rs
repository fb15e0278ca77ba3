//! Line charts (cost, budget).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::*;

/// Shows how fast each profile burns money and when warnings and stops happened, so the cost
/// of a runaway loop and the saving of a stop are visible at a glance.
pub fn cost_over_time(
    dir: &Path,
    stem: &str,
    title: &str,
    series: &[Series],
) -> Result<Vec<PathBuf>, PlotError> {
    let spec = LineSpec {
        title,
        y_desc: "cumulative cost ($)",
        series,
        y_fmt: fmt_dollars,
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
    let spec = LineSpec {
        title,
        y_desc: "iterations remaining",
        series,
        y_fmt: fmt_plain,
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
    let markers = || {
        spec.series
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.markers.iter().map(move |m| (i, m)))
            .filter(|(_, m)| finite((m.t_min, m.y)))
    };
    let x = range_of(
        lines
            .iter()
            .flatten()
            .map(|p| p.0)
            .chain(markers().map(|(_, m)| m.t_min)),
        true,
        0.02,
    );
    let y = range_of(
        lines
            .iter()
            .flatten()
            .map(|p| p.1)
            .chain(markers().map(|(_, m)| m.y)),
        true,
        0.08,
    );
    let mut chart = ChartBuilder::on(&plot)
        .margin(18)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(x, y)
        .map_err(draw_err)?;
    let x_fmt = |v: &f64| fmt_plain(*v);
    let y_fmt = |v: &f64| (spec.y_fmt)(*v);
    chart
        .configure_mesh()
        .x_desc("virtual time (min)")
        .y_desc(spec.y_desc)
        .label_style(text(15).color(&INK))
        .axis_desc_style(text(17).color(&INK))
        .bold_line_style(GRID_BOLD)
        .light_line_style(GRID_LIGHT)
        .max_light_lines(1)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(draw_err)?;

    for (i, pts) in lines.iter().enumerate() {
        let c = series_color(i);
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
    let area = chart.plotting_area();
    for (i, m) in markers() {
        match m.kind {
            MarkerKind::Warning => draw_warning(area, (m.t_min, m.y), series_color(i))?,
            MarkerKind::Stop => draw_stop(area, (m.t_min, m.y), series_color(i))?,
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
