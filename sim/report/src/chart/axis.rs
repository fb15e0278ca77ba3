//! The time axis shared by the cost, budget and timeline charts: long idle stretches (a user
//! coming back two days later) are drawn as narrow, labelled breaks so the active parts stay
//! readable, while every tick still names the real virtual time at its place.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::*;

/// A gap is compressed when it is longer than this many minutes...
const MIN_IDLE_MIN: f64 = 10.0;
/// ...and longer than this share of the active time (the time outside gaps of 10 minutes+).
const IDLE_SHARE: f64 = 0.2;
/// The drawn width of one break, as a share of the drawn active time.
const BREAK_SHARE: f64 = 0.03;

/// A stretch of virtual time with nothing going on, drawn as a narrow break.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleBreak {
    /// Where the idle stretch starts and ends, in real minutes.
    pub from_min: f64,
    pub to_min: f64,
}

/// One piece of the axis: real minutes `from..to` drawn from `at` at one drawn unit per
/// minute (a segment) or squeezed into `width` drawn units (a break).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Piece {
    from: f64,
    to: f64,
    at: f64,
    width: f64,
    idle: bool,
}

/// How a chart lays out virtual time (minutes): at one scale, except that long idle gaps are
/// squeezed into narrow breaks. Build it with [`TimeAxis::compress_idle`] or
/// [`TimeAxis::linear`]; the same busy spans always give the same axis.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeAxis {
    pieces: Vec<Piece>,
}

impl TimeAxis {
    /// One scale from 0 to `end_min`: no breaks.
    pub fn linear(end_min: f64) -> TimeAxis {
        let end = if end_min.is_finite() {
            end_min.max(0.0)
        } else {
            0.0
        };
        TimeAxis {
            pieces: vec![Piece {
                from: 0.0,
                to: end,
                at: 0.0,
                width: end,
                idle: false,
            }],
        }
    }

    /// An axis from 0 to `end_min` (or the last busy minute, if later) on which every gap
    /// between the `busy` spans `(start_min, end_min)` that is longer than both 10 minutes and
    /// 20% of the active time (the time outside the gaps of 10 minutes or more) becomes a break
    /// 3% as wide as the drawn active time. Non-finite spans are ignored.
    pub fn compress_idle(busy: &[(f64, f64)], end_min: f64) -> TimeAxis {
        let spans = merged(busy);
        let end = spans
            .last()
            .map_or(0.0, |s| s.1)
            .max(if end_min.is_finite() { end_min } else { 0.0 });
        if spans.is_empty() {
            return TimeAxis::linear(end);
        }
        let mut gaps = Vec::new();
        let mut t = 0.0;
        for &(a, b) in &spans {
            if a > t {
                gaps.push((t, a));
            }
            t = t.max(b);
        }
        if end > t {
            gaps.push((t, end));
        }
        let long: f64 = gaps
            .iter()
            .map(|g| g.1 - g.0)
            .filter(|&d| d >= MIN_IDLE_MIN)
            .sum();
        let threshold = MIN_IDLE_MIN.max(IDLE_SHARE * (end - long));
        let idle: Vec<(f64, f64)> = gaps.into_iter().filter(|g| g.1 - g.0 > threshold).collect();
        let drawn_active = end - idle.iter().map(|g| g.1 - g.0).sum::<f64>();
        let width = if drawn_active > 0.0 {
            drawn_active * BREAK_SHARE
        } else {
            1.0
        };
        let mut pieces = Vec::new();
        let (mut t, mut at) = (0.0, 0.0);
        for (a, b) in idle {
            if a > t {
                pieces.push(Piece {
                    from: t,
                    to: a,
                    at,
                    width: a - t,
                    idle: false,
                });
                at += a - t;
            }
            pieces.push(Piece {
                from: a,
                to: b,
                at,
                width,
                idle: true,
            });
            at += width;
            t = b;
        }
        if end > t || pieces.is_empty() {
            pieces.push(Piece {
                from: t,
                to: end,
                at,
                width: end - t,
                idle: false,
            });
        }
        TimeAxis { pieces }
    }

    /// The idle stretches drawn as breaks, in time order.
    pub fn breaks(&self) -> Vec<IdleBreak> {
        self.pieces
            .iter()
            .filter(|p| p.idle)
            .map(|p| IdleBreak {
                from_min: p.from,
                to_min: p.to,
            })
            .collect()
    }

    /// Where real minute `t` is drawn (inside a break: proportionally across it; past the end:
    /// at one unit per minute).
    pub fn to_drawn(&self, t: f64) -> f64 {
        let p = self
            .pieces
            .iter()
            .find(|p| t < p.to)
            .or(self.pieces.last())
            .copied()
            .unwrap_or(Piece {
                from: 0.0,
                to: 0.0,
                at: 0.0,
                width: 0.0,
                idle: false,
            });
        if p.idle {
            let f = ((t - p.from) / (p.to - p.from)).clamp(0.0, 1.0);
            p.at + f * p.width
        } else {
            p.at + (t - p.from)
        }
    }

    /// The drawn length of the whole axis.
    pub fn drawn_end(&self) -> f64 {
        self.pieces.last().map_or(0.0, |p| p.at + p.width)
    }

    /// The real end of the axis, in minutes.
    pub fn end_min(&self) -> f64 {
        self.pieces.last().map_or(0.0, |p| p.to)
    }

    /// How tick labels are written, chosen by the axis's real length.
    fn unit(&self) -> Unit {
        let end = self.end_min();
        if end < 180.0 {
            Unit::Minutes
        } else if end < 1440.0 {
            Unit::Hours
        } else {
            Unit::Days
        }
    }

    /// The axis description for the chart.
    pub(super) fn desc(&self) -> &'static str {
        match self.unit() {
            Unit::Minutes => "virtual time (min)",
            Unit::Hours => "virtual time (h:mm)",
            Unit::Days => "virtual time (days, h:mm)",
        }
    }

    /// Ticks at round real times inside the drawn pieces, as `(drawn position, label)`: about
    /// nine over the axis, at least one in every piece long enough for a whole step, never two
    /// closer than a label's width.
    pub(super) fn ticks(&self) -> Vec<(f64, String)> {
        let unit = self.unit();
        let total = self.drawn_end();
        if total <= 0.0 {
            return vec![(0.0, unit.fmt(0.0))];
        }
        let steps = unit.steps();
        let step = steps
            .iter()
            .copied()
            .find(|s| total / s <= 9.0)
            .unwrap_or(steps[steps.len() - 1]);
        let mut candidates: Vec<f64> = Vec::new();
        for p in self.pieces.iter().filter(|p| !p.idle) {
            // A short piece after a break gets a finer step rather than no tick at all.
            let inside = steps
                .iter()
                .rev()
                .filter(|s| **s <= step)
                .map(|&s| multiples(p.from, p.to, s))
                .find(|m| !m.is_empty())
                .unwrap_or_default();
            candidates.extend(inside);
        }
        let min_gap = total * unit.label_share();
        let mut out: Vec<(f64, String)> = Vec::new();
        for t in candidates {
            let d = self.to_drawn(t);
            if out.last().is_none_or(|(last, _)| d - last >= min_gap) {
                out.push((d, unit.fmt(t)));
            }
        }
        out
    }
}

/// The busy spans sorted and merged, non-finite ones dropped and negative times clipped to 0.
fn merged(busy: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = busy
        .iter()
        .filter(|s| s.0.is_finite() && s.1.is_finite())
        .map(|&(a, b)| (a.min(b).max(0.0), a.max(b).max(0.0)))
        .collect();
    v.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1)));
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The multiples of `step` in `from..=to`.
fn multiples(from: f64, to: f64, step: f64) -> Vec<f64> {
    let eps = step * 1e-9;
    let first = ((from - eps) / step).ceil() as i64;
    let last = ((to + eps) / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Minutes,
    Hours,
    Days,
}

impl Unit {
    /// Tick steps in minutes, finest first.
    fn steps(self) -> &'static [f64] {
        match self {
            Unit::Minutes => &[0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0],
            Unit::Hours | Unit::Days => &[
                1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 180.0, 360.0, 720.0, 1440.0, 2880.0,
                7200.0, 14400.0,
            ],
        }
    }

    /// The least distance between two ticks, as a share of the axis (wider labels need more).
    fn label_share(self) -> f64 {
        match self {
            Unit::Minutes => 0.05,
            Unit::Hours => 0.06,
            Unit::Days => 0.1,
        }
    }

    fn fmt(self, t: f64) -> String {
        let whole = t.round().max(0.0) as u64;
        match self {
            Unit::Minutes => fmt_plain(t),
            Unit::Hours => format!("{}:{:02}", whole / 60, whole % 60),
            Unit::Days => format!(
                "{}d {:02}:{:02}",
                whole / 1440,
                whole % 1440 / 60,
                whole % 60
            ),
        }
    }
}

/// How long a break's idle stretch was: "2.0 d idle", "3.5 h idle", "45 min idle".
pub(super) fn idle_label(minutes: f64) -> String {
    if minutes >= 1440.0 {
        format!("{:.1} d idle", minutes / 1440.0)
    } else if minutes >= 60.0 {
        format!("{:.1} h idle", minutes / 60.0)
    } else {
        format!("{:.0} min idle", minutes)
    }
}

/// A numeric x axis whose ticks are the [`TimeAxis`]'s (drawn positions), with no light lines.
pub(super) struct DrawnTime {
    pub(super) range: Range<f64>,
    pub(super) ticks: Vec<f64>,
}

impl Ranged for DrawnTime {
    type ValueType = f64;
    // Labels always come from a formatter; this only satisfies the mesh's bounds.
    type FormatOption = DefaultFormatting;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let f = if span > 0.0 {
            (value - self.range.start) / span
        } else {
            0.0
        };
        limit.0 + (f64::from(limit.1 - limit.0) * f).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            return Vec::new();
        }
        self.ticks.clone()
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// The x axis of a time chart: its drawn range (padded right by `pad`) and ticks.
pub(super) fn x_axis(axis: &TimeAxis, pad: f64) -> (DrawnTime, Vec<(f64, String)>) {
    let end = axis.drawn_end();
    let end = if end > 0.0 { end * (1.0 + pad) } else { 1.0 };
    let ticks = axis.ticks();
    let drawn = DrawnTime {
        range: 0.0..end,
        ticks: ticks.iter().map(|t| t.0).collect(),
    };
    (drawn, ticks)
}

/// The label of the tick at drawn position `v`.
pub(super) fn tick_label(ticks: &[(f64, String)], v: f64) -> String {
    ticks
        .iter()
        .find(|t| (t.0 - v).abs() < 1e-9)
        .map(|t| t.1.clone())
        .unwrap_or_default()
}

const BREAK_FILL: RGBColor = RGBColor(232, 232, 232);
const BREAK_EDGE: RGBColor = RGBColor(160, 160, 160);

/// Draws each break across the plotting area: a grey band with thin edges, a broken-axis slash
/// at each edge where it meets the x axis, and the idle time written up the band.
pub(super) fn draw_breaks<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &TimeAxis,
    x_range: &Range<f64>,
) -> Result<(), PlotError> {
    let (w, h) = area.dim_in_pixel();
    let px = |d: f64| {
        let f = (d - x_range.start) / (x_range.end - x_range.start);
        (f64::from(w) * f).round() as i32
    };
    let h = h as i32;
    for b in axis.breaks() {
        let (a, z) = (px(axis.to_drawn(b.from_min)), px(axis.to_drawn(b.to_min)));
        let z = z.max(a + 6);
        area.draw(&Rectangle::new([(a, 0), (z, h)], BREAK_FILL.filled()))
            .map_err(draw_err)?;
        for x in [a, z] {
            area.draw(&PathElement::new(
                vec![(x, 0), (x, h)],
                BREAK_EDGE.stroke_width(1),
            ))
            .map_err(draw_err)?;
            area.draw(&PathElement::new(
                vec![(x - 5, h - 2), (x + 5, h - 16)],
                INK.stroke_width(2),
            ))
            .map_err(draw_err)?;
        }
        let label = idle_label(b.to_min - b.from_min);
        let style = text(14)
            .color(&INK)
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Center, VPos::Center));
        area.draw(&Text::new(label, ((a + z) / 2, h / 2), style))
            .map_err(draw_err)?;
    }
    Ok(())
}

/// A chart of some value over time on `axis`: the mesh drawn (time ticks from the axis, `y`
/// from plotters) and the axis's breaks shaded, ready for lines and markers in drawn time.
pub(super) fn time_chart<'a, DB: DrawingBackend>(
    plot: &'a DrawingArea<DB, Shift>,
    axis: &TimeAxis,
    y: Range<f64>,
    y_desc: &str,
    y_fmt: fn(f64) -> String,
) -> Result<TimeChart<'a, DB>, PlotError> {
    let (x, ticks) = x_axis(axis, 0.02);
    let x_range = x.range.clone();
    let mut chart = ChartBuilder::on(plot)
        .margin(18)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(x, y)
        .map_err(draw_err)?;
    let x_fmt = |v: &f64| tick_label(&ticks, *v);
    let y_fmt = |v: &f64| y_fmt(*v);
    chart
        .configure_mesh()
        .x_desc(axis.desc())
        .y_desc(y_desc)
        .label_style(text(15).color(&INK))
        .axis_desc_style(text(17).color(&INK))
        .bold_line_style(GRID_BOLD)
        .light_line_style(GRID_LIGHT)
        .max_light_lines(1)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(draw_err)?;
    draw_breaks(&chart.plotting_area().strip_coord_spec(), axis, &x_range)?;
    Ok(chart)
}

/// A chart of a value over drawn time.
pub(super) type TimeChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<DrawnTime, plotters::coord::types::RangedCoordf64>>;
