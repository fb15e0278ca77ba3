//! Heatmaps of a metric over a grid of settings.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::*;

/// Compares a metric over a grid of two settings (e.g. `warn_after` x `hard_stop_after`), so a
/// sweep's sweet spot can be read off; `None` cells were not run and are drawn grey.
///
/// `cells[yi][xi]` belongs to `xs[xi]` and `ys[yi]`; `ys[0]` is the bottom row. With `percent`
/// the values are fractions (0.25 is printed "25%"), otherwise they are printed with 2 decimals.
#[allow(clippy::too_many_arguments)]
pub fn heatmap(
    dir: &Path,
    stem: &str,
    title: &str,
    x_label: &str,
    xs: &[String],
    y_label: &str,
    ys: &[String],
    cells: &[Vec<Option<f64>>],
    value_label: &str,
    percent: bool,
) -> Result<Vec<PathBuf>, PlotError> {
    if cells.len() != ys.len() {
        return Err(PlotError::Shape(format!(
            "{} rows of cells for {} y labels",
            cells.len(),
            ys.len()
        )));
    }
    if let Some((yi, row)) = cells.iter().enumerate().find(|(_, r)| r.len() != xs.len()) {
        return Err(PlotError::Shape(format!(
            "row {yi} has {} cells for {} x labels",
            row.len(),
            xs.len()
        )));
    }
    let spec = HeatSpec {
        title,
        x_label,
        xs,
        y_label,
        ys,
        cells,
        value_label,
        percent,
        one_row: false,
    };
    render(
        dir,
        stem,
        |root| draw_heatmap(root, &spec),
        |root| draw_heatmap(root, &spec),
    )
}

/// The same comparison over one setting (a sweep with one swept key): a single row of cells
/// with no y axis, `cells[xi]` belonging to `xs[xi]`.
#[allow(clippy::too_many_arguments)]
pub fn heatmap_row(
    dir: &Path,
    stem: &str,
    title: &str,
    x_label: &str,
    xs: &[String],
    cells: &[Option<f64>],
    value_label: &str,
    percent: bool,
) -> Result<Vec<PathBuf>, PlotError> {
    if cells.len() != xs.len() {
        return Err(PlotError::Shape(format!(
            "{} cells for {} x labels",
            cells.len(),
            xs.len()
        )));
    }
    let ys = [String::new()];
    let rows = [cells.to_vec()];
    let spec = HeatSpec {
        title,
        x_label,
        xs,
        y_label: "",
        ys: &ys,
        cells: &rows,
        value_label,
        percent,
        one_row: true,
    };
    render(
        dir,
        stem,
        |root| draw_heatmap(root, &spec),
        |root| draw_heatmap(root, &spec),
    )
}

pub(super) struct HeatSpec<'a> {
    title: &'a str,
    x_label: &'a str,
    xs: &'a [String],
    y_label: &'a str,
    ys: &'a [String],
    cells: &'a [Vec<Option<f64>>],
    value_label: &'a str,
    percent: bool,
    /// One unnamed row: no y axis, and a band of moderate height rather than the whole panel.
    one_row: bool,
}

impl HeatSpec<'_> {
    #[cfg(test)]
    pub(super) fn for_test(percent: bool) -> HeatSpec<'static> {
        HeatSpec {
            title: "",
            x_label: "",
            xs: &[],
            y_label: "",
            ys: &[],
            cells: &[],
            value_label: "",
            percent,
            one_row: false,
        }
    }

    fn fmt(&self, v: f64) -> String {
        if self.percent {
            format!("{:.0}%", v * 100.0 + 0.0)
        } else {
            format!("{:.2}", v + 0.0)
        }
    }

    /// A colour-bar tick: as many decimals as the tick step needs, so labels never repeat.
    pub(super) fn fmt_tick(&self, v: f64, step: f64) -> String {
        let (v, step, unit) = if self.percent {
            (v * 100.0, step * 100.0, "%")
        } else {
            (v, step, "")
        };
        format!("{:.*}{unit}", decimals_for(step), v + 0.0)
    }
}

/// The fewest decimals (up to 6) that print multiples of `step` exactly.
fn decimals_for(step: f64) -> usize {
    (0..6)
        .find(|&d| {
            let scaled = step * 10f64.powi(d as i32);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.abs().max(1.0)
        })
        .unwrap_or(6)
}

/// Round tick values inside `lo..=hi` for the colour bar (3 to 7 of them) and their step: the
/// smallest of 1, 2, 2.5 or 5 times a power of ten that is at least a sixth of the range.
pub(super) fn bar_ticks(lo: f64, hi: f64) -> (Vec<f64>, f64) {
    let span = hi - lo;
    if !(span.is_finite() && span > 1e-12) {
        return (vec![lo], 1.0);
    }
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag);
    let eps = step * 1e-6;
    let first = ((lo - eps) / step).ceil() as i64;
    let last = ((hi + eps) / step).floor() as i64;
    let ticks = (first..=last).map(|k| k as f64 * step).collect();
    (ticks, step)
}

/// Viridis, sampled at five stops and interpolated: perceptually even and readable in grey.
pub(super) fn colormap(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let pos = t * (STOPS.len() - 1) as f64;
    let i = (pos.floor() as usize).min(STOPS.len() - 2);
    let f = pos - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Black text on light cells, white on dark ones.
pub(super) fn ink_on(c: RGBColor) -> RGBColor {
    let lum = 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
    if lum > 140.0 { BLACK } else { WHITE }
}

/// The height of the area a one-row heatmap is drawn in (title excluded), in pixels.
const ONE_ROW_HEIGHT: u32 = 300;

pub(super) fn draw_heatmap<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &HeatSpec<'_>,
) -> Result<(), PlotError> {
    let (plot, side) = frame(root, spec.title)?;
    let (nx, ny) = (spec.xs.len(), spec.ys.len());
    let values = || {
        spec.cells
            .iter()
            .flatten()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
    };
    let (vmin, vmax) = values().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let has_values = vmin <= vmax;
    let norm = |v: f64| {
        if vmax - vmin < 1e-12 {
            0.5
        } else {
            (v - vmin) / (vmax - vmin)
        }
    };

    let label_style = text(15).color(&INK);
    let xs: Vec<String> = spec.xs.iter().map(|s| truncate(s, 14)).collect();
    let ys: Vec<String> = spec.ys.iter().map(|s| truncate(s, 18)).collect();
    let y_label_w = ys
        .iter()
        .filter_map(|s| plot.estimate_text_size(s, &label_style).ok())
        .map(|(w, _)| w)
        .max()
        .unwrap_or(0);
    // One row: a band about as tall as a row of a small grid, right under the title.
    let area = if spec.one_row {
        plot.split_vertically(ONE_ROW_HEIGHT).0
    } else {
        plot.clone()
    };
    let mut chart = ChartBuilder::on(&area)
        .margin(18)
        .x_label_area_size(60)
        .y_label_area_size(if spec.one_row { 20 } else { y_label_w + 50 })
        .build_cartesian_2d(Bands(nx), Bands(ny))
        .map_err(draw_err)?;
    let pick = |labels: &[String], v: f64| {
        labels
            .get(v.floor().max(0.0) as usize)
            .cloned()
            .unwrap_or_default()
    };
    let x_fmt = |v: &f64| pick(&xs, *v);
    let y_fmt = |v: &f64| pick(&ys, *v);
    let mut mesh = chart.configure_mesh();
    mesh.disable_mesh()
        .x_desc(spec.x_label)
        .label_style(label_style.clone())
        .axis_desc_style(text(17).color(&INK))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt);
    if spec.one_row {
        mesh.y_labels(0);
    } else {
        mesh.y_desc(spec.y_label);
    }
    mesh.draw().map_err(draw_err)?;

    let (pw, ph) = chart.plotting_area().dim_in_pixel();
    let cell_w = f64::from(pw) / nx.max(1) as f64;
    let cell_h = f64::from(ph) / ny.max(1) as f64;
    for (yi, row) in spec.cells.iter().enumerate() {
        for (xi, cell) in row.iter().enumerate() {
            let (x0, y0) = (xi as f64, yi as f64);
            let value = cell.filter(|v| v.is_finite());
            let fill = value.map_or(NOT_RUN, |v| colormap(norm(v)));
            let rect = [(x0, y0), (x0 + 1.0, y0 + 1.0)];
            chart
                .draw_series([
                    Rectangle::new(rect, fill.filled()),
                    Rectangle::new(rect, WHITE.stroke_width(2)),
                ])
                .map_err(draw_err)?;
            let label = value.map_or_else(|| "not run".to_string(), |v| spec.fmt(v));
            let by_width = cell_w * 0.85 / (label.chars().count() as f64 * 0.62);
            let size = (cell_h * 0.4).min(by_width).min(20.0);
            if size >= 7.0 {
                let ink = ink_on(fill);
                let style = text(size)
                    .color(&ink)
                    .pos(Pos::new(HPos::Center, VPos::Center));
                chart
                    .draw_series([Text::new(label, (x0 + 0.5, y0 + 0.5), style)])
                    .map_err(draw_err)?;
            }
        }
    }
    if nx == 0 || ny == 0 || !has_values {
        draw_no_data(&plot)?;
    }

    let any_none = spec
        .cells
        .iter()
        .flatten()
        .any(|c| !c.is_some_and(f64::is_finite));
    draw_color_bar(&side, spec, has_values.then_some((vmin, vmax)), any_none)
}

/// The colour scale in the side panel: the gradient with labelled ticks, and grey for "not run".
pub(super) fn draw_color_bar<DB: DrawingBackend>(
    side: &DrawingArea<DB, Shift>,
    spec: &HeatSpec<'_>,
    range: Option<(f64, f64)>,
    any_none: bool,
) -> Result<(), PlotError> {
    let (_, h) = side.dim_in_pixel();
    let left = Pos::new(HPos::Left, VPos::Center);
    side.draw(&Text::new(
        truncate(spec.value_label, 26),
        (12, 40),
        bold(16).color(&INK).pos(left),
    ))
    .map_err(draw_err)?;
    let (x0, x1) = (20, 50);
    let top = 70;
    let bottom = (h as i32 - 110).max(top + 40);
    if let Some((vmin, vmax)) = range {
        // All cells alike: one flat colour (the one the cells have), not a scale.
        let flat = vmax - vmin < 1e-12;
        const STEPS: i32 = 100;
        for k in 0..STEPS {
            let ya = top + (bottom - top) * k / STEPS;
            let yb = top + (bottom - top) * (k + 1) / STEPS;
            let t = if flat {
                0.5
            } else {
                1.0 - (f64::from(k) + 0.5) / f64::from(STEPS)
            };
            side.draw(&Rectangle::new([(x0, ya), (x1, yb)], colormap(t).filled()))
                .map_err(draw_err)?;
        }
        side.draw(&Rectangle::new(
            [(x0, top), (x1, bottom)],
            INK.stroke_width(1),
        ))
        .map_err(draw_err)?;
        for (y, label) in bar_labels(spec, vmin, vmax, top, bottom) {
            side.draw(&PathElement::new(
                vec![(x1, y), (x1 + 6, y)],
                INK.stroke_width(1),
            ))
            .map_err(draw_err)?;
            side.draw(&Text::new(
                label,
                (x1 + 10, y),
                text(14).color(&INK).pos(left),
            ))
            .map_err(draw_err)?;
        }
    }
    if any_none {
        let y = bottom + 40;
        draw_swatch(side, &Swatch::Rect(NOT_RUN), 12, y)?;
        side.draw(&Text::new(
            "not run",
            (50, y),
            text(15).color(&INK).pos(left),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}

/// Where the colour bar's ticks go (pixel row) and what they say: round values between the
/// extremes, or the one value all cells share.
fn bar_labels(
    spec: &HeatSpec<'_>,
    vmin: f64,
    vmax: f64,
    top: i32,
    bottom: i32,
) -> Vec<(i32, String)> {
    if vmax - vmin < 1e-12 {
        return vec![(
            (top + bottom) / 2,
            format!("{} (all cells)", spec.fmt(vmin)),
        )];
    }
    let (ticks, step) = bar_ticks(vmin, vmax);
    ticks
        .into_iter()
        .map(|v| {
            let t = (v - vmin) / (vmax - vmin);
            let y = bottom - (f64::from(bottom - top) * t).round() as i32;
            (y, spec.fmt_tick(v, step))
        })
        .collect()
}
