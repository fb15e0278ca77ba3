//! The agents' timeline.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::*;

/// Shows where each agent's time went (model, tool, waiting), so idle children and serial
/// bottlenecks stand out; up to about 50 lanes stay legible. Long stretches with no span in
/// any lane are drawn as narrow labelled breaks ([`TimeAxis::compress_idle`]).
pub fn agent_timeline(
    dir: &Path,
    stem: &str,
    title: &str,
    rows: &[TimelineRow],
) -> Result<Vec<PathBuf>, PlotError> {
    let busy: Vec<(f64, f64)> = rows
        .iter()
        .flat_map(|r| r.spans.iter().map(|s| (s.0, s.1)))
        .collect();
    let axis = TimeAxis::compress_idle(&busy, 0.0);
    agent_timeline_on(dir, stem, title, rows, &axis)
}

/// [`agent_timeline`] on a given time axis (e.g. the one the run's other charts use).
pub fn agent_timeline_on(
    dir: &Path,
    stem: &str,
    title: &str,
    rows: &[TimelineRow],
    axis: &TimeAxis,
) -> Result<Vec<PathBuf>, PlotError> {
    render(
        dir,
        stem,
        |root| draw_timeline(root, title, rows, axis),
        |root| draw_timeline(root, title, rows, axis),
    )
}

pub(super) fn span_color(kind: SpanKind) -> RGBColor {
    match kind {
        SpanKind::Model => RGBColor(31, 119, 180),
        SpanKind::Tool => RGBColor(255, 127, 14),
        SpanKind::Waiting => RGBColor(185, 185, 185),
    }
}

pub(super) fn draw_timeline<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    rows: &[TimelineRow],
    axis: &TimeAxis,
) -> Result<(), PlotError> {
    let (plot, side) = frame(root, title)?;
    let n = rows.len();
    // Row 0 (usually the parent) is the top lane.
    let spans: Vec<(f64, f64, f64, SpanKind)> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            let lane = (n - 1 - i) as f64;
            r.spans
                .iter()
                .filter(|s| finite((s.0, s.1)))
                .map(move |&(a, b, k)| (lane, axis.to_drawn(a.min(b)), axis.to_drawn(a.max(b)), k))
        })
        .collect();
    let (x_axis, ticks) = x_axis(axis, 0.01);
    let x = x_axis.range.clone();
    let lanes = n.max(1) as f64;
    let plot_h = f64::from(plot.dim_in_pixel().1) - 2.0 * 18.0 - 60.0;
    let label_size = (plot_h / lanes * 0.75).clamp(8.0, 15.0);
    let names: Vec<String> = rows.iter().map(|r| truncate(&r.agent, 22)).collect();
    let label_w = names
        .iter()
        .filter_map(|s| plot.estimate_text_size(s, &text(label_size)).ok())
        .map(|(w, _)| w)
        .max()
        .unwrap_or(0);
    let mut chart = ChartBuilder::on(&plot)
        .margin(18)
        .x_label_area_size(60)
        .y_label_area_size(label_w + 50)
        .build_cartesian_2d(x_axis, Bands(n))
        .map_err(draw_err)?;
    chart
        .draw_series((0..n).filter(|l| l % 2 == 1).map(|l| {
            let l = l as f64;
            Rectangle::new(
                [(x.start, l), (x.end, l + 1.0)],
                RGBColor(244, 244, 244).filled(),
            )
        }))
        .map_err(draw_err)?;
    let x_fmt = |v: &f64| tick_label(&ticks, *v);
    let y_fmt = |v: &f64| {
        let lane = v.floor().max(0.0) as usize;
        n.checked_sub(lane + 1)
            .and_then(|i| names.get(i))
            .cloned()
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(axis.desc())
        .y_desc("agent")
        .label_style(text(15).color(&INK))
        .y_label_style(text(label_size).color(&INK))
        .axis_desc_style(text(17).color(&INK))
        .bold_line_style(GRID_BOLD)
        .light_line_style(GRID_LIGHT)
        .max_light_lines(1)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(draw_err)?;
    draw_breaks(&chart.plotting_area().strip_coord_spec(), axis, &x)?;
    chart
        .draw_series(spans.iter().map(|&(lane, a, b, k)| {
            Rectangle::new([(a, lane + 0.2), (b, lane + 0.8)], span_color(k).filled())
        }))
        .map_err(draw_err)?;
    if spans.is_empty() {
        draw_no_data(&plot)?;
    }
    let entries = [
        (SpanKind::Model, "model call"),
        (SpanKind::Tool, "tool call"),
        (SpanKind::Waiting, "waiting"),
    ]
    .map(|(k, label)| LegendEntry {
        label: label.into(),
        swatch: Swatch::Rect(span_color(k)),
    });
    draw_legend(&side, "activity", &entries)
}
