//! The trade-off chart.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::*;

/// Shows the trade-off between stopping good runs by mistake and money saved, so a default can
/// be picked from the frontier rather than from one number.
pub fn pareto(
    dir: &Path,
    stem: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    points: &[ParetoPoint],
) -> Result<Vec<PathBuf>, PlotError> {
    let spec = ParetoSpec {
        title,
        x_label,
        y_label,
        points,
    };
    render(
        dir,
        stem,
        |root| draw_pareto(root, &spec),
        |root| draw_pareto(root, &spec),
    )
}

pub(super) struct ParetoSpec<'a> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    points: &'a [ParetoPoint],
}

pub(super) const FRONTIER: RGBColor = RGBColor(214, 39, 40);
pub(super) const DOMINATED: RGBColor = RGBColor(120, 150, 190);

pub(super) fn draw_pareto<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &ParetoSpec<'_>,
) -> Result<(), PlotError> {
    let (plot, side) = frame(root, spec.title)?;
    let pts: Vec<&ParetoPoint> = spec.points.iter().filter(|p| finite((p.x, p.y))).collect();
    let x = range_of(pts.iter().map(|p| p.x), true, 0.15);
    let y = range_of(pts.iter().map(|p| p.y), true, 0.12);
    let mut chart = ChartBuilder::on(&plot)
        .margin(18)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(x, y)
        .map_err(draw_err)?;
    let fmt = |v: &f64| fmt_plain(*v);
    chart
        .configure_mesh()
        .x_desc(spec.x_label)
        .y_desc(spec.y_label)
        .label_style(text(15).color(&INK))
        .axis_desc_style(text(17).color(&INK))
        .bold_line_style(GRID_BOLD)
        .light_line_style(GRID_LIGHT)
        .max_light_lines(1)
        .x_label_formatter(&fmt)
        .y_label_formatter(&fmt)
        .draw()
        .map_err(draw_err)?;

    chart
        .draw_series(
            pts.iter()
                .filter(|p| !p.on_frontier)
                .map(|p| Circle::new((p.x, p.y), 5, DOMINATED.filled())),
        )
        .map_err(draw_err)?;
    let mut frontier: Vec<&ParetoPoint> = pts.iter().copied().filter(|p| p.on_frontier).collect();
    frontier.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
    chart
        .draw_series(LineSeries::new(
            frontier.iter().map(|p| (p.x, p.y)),
            FRONTIER.stroke_width(2),
        ))
        .map_err(draw_err)?;
    // Nothing lies up and to the left of a frontier point (that point would dominate it), so
    // labels go there unless the plot's left edge is too close.
    let left_edge = chart.plotting_area().get_base_pixel().0;
    for p in &frontier {
        chart
            .draw_series([
                Circle::new((p.x, p.y), 7, FRONTIER.filled()),
                Circle::new((p.x, p.y), 7, INK.stroke_width(1)),
            ])
            .map_err(draw_err)?;
        let label = truncate(&p.label, 36);
        let style = text(14).color(&INK);
        let label_w = plot
            .estimate_text_size(&label, &style)
            .map_or(0, |(w, _)| w as i32);
        let room = chart.backend_coord(&(p.x, p.y)).0 - left_edge;
        let (offset, anchor) = if room >= label_w + 14 {
            ((-10, -14), HPos::Right)
        } else {
            ((10, -14), HPos::Left)
        };
        chart
            .draw_series([EmptyElement::at((p.x, p.y))
                + Text::new(label, offset, style.pos(Pos::new(anchor, VPos::Center)))])
            .map_err(draw_err)?;
    }
    if pts.is_empty() {
        draw_no_data(&plot)?;
    }
    let entries = [
        LegendEntry {
            label: "setting".into(),
            swatch: Swatch::Dot(DOMINATED),
        },
        LegendEntry {
            label: "Pareto frontier".into(),
            swatch: Swatch::LineDot(FRONTIER),
        },
    ];
    draw_legend(&side, "legend", &entries)
}
