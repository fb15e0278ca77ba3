//! Shared drawing helpers: text styles, colours, frames, ranges, legends and markers.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::*;

pub(super) fn text(size: impl Into<f64>) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size.into()).into_font())
}

pub(super) fn bold(size: impl Into<f64>) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size.into()).into_font().style(FontStyle::Bold))
}

/// Line colours: Tableau 10 first (distinguishable, colour-blind friendlier), then Palette99.
pub(super) fn series_color(i: usize) -> RGBColor {
    const TABLEAU: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    match TABLEAU.get(i) {
        Some(&(r, g, b)) => RGBColor(r, g, b),
        None => {
            let (r, g, b) = Palette99::pick(i - TABLEAU.len()).rgb();
            RGBColor(r, g, b)
        }
    }
}

pub(super) const GRID_BOLD: RGBColor = RGBColor(210, 210, 210);
pub(super) const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);
pub(super) const INK: RGBColor = RGBColor(40, 40, 40);
pub(super) const NOT_RUN: RGBColor = RGBColor(205, 205, 205);

/// Clears the canvas, draws the title and splits off the legend panel at the right.
#[allow(clippy::type_complexity)]
pub(super) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<(DrawingArea<DB, Shift>, DrawingArea<DB, Shift>), PlotError> {
    root.fill(&WHITE).map_err(draw_err)?;
    let body = root.titled(title, bold(24).color(&INK)).map_err(draw_err)?;
    let width = body.dim_in_pixel().0;
    Ok(body.split_horizontally(width.saturating_sub(SIDE)))
}

/// A range covering `vals`, padded at the top (and at the bottom when negative) so lines and
/// markers don't touch the frame; never empty, so plotters never divides by zero.
pub(super) fn range_of(
    vals: impl Iterator<Item = f64>,
    include_zero: bool,
    pad: f64,
) -> Range<f64> {
    let (mut lo, mut hi) = vals
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return 0.0..1.0;
    }
    if include_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi - lo < 1e-9 {
        if include_zero && lo == 0.0 {
            hi = lo + 1.0;
        } else {
            let half = (lo.abs() * 0.1).max(0.5);
            lo -= half;
            hi += half;
        }
    }
    let span = hi - lo;
    hi += span * pad;
    if lo < 0.0 {
        lo -= span * pad;
    }
    lo..hi
}

pub(super) fn finite(p: (f64, f64)) -> bool {
    p.0.is_finite() && p.1.is_finite()
}

pub(super) fn fmt_dollars(v: f64) -> String {
    format!("${}", fmt_plain(v))
}

/// Tick labels: integers without decimals, others with up to four decimals, trailing zeros
/// trimmed, so small steps (cents of a cent) stay distinguishable.
pub(super) fn fmt_plain(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        return format!("{:.0}", v.round() + 0.0);
    }
    let s = format!("{:.4}", v + 0.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}

pub(super) fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max_chars.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

pub(super) fn draw_no_data<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
) -> Result<(), PlotError> {
    let (w, h) = area.dim_in_pixel();
    let style = text(26)
        .color(&RGBColor(150, 150, 150))
        .pos(Pos::new(HPos::Center, VPos::Center));
    area.draw(&Text::new("no data", (w as i32 / 2, h as i32 / 2), style))
        .map_err(draw_err)
}

/// A categorical axis of `n` bands of width 1 (band `i` spans `i..i+1`) with one tick at each
/// band's centre, so lanes and heatmap cells get exactly one label each.
pub(super) struct Bands(pub(super) usize);

impl Ranged for Bands {
    type ValueType = f64;
    // Labels always come from a formatter; this only satisfies the mesh's bounds.
    type FormatOption = DefaultFormatting;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let f = value / self.0.max(1) as f64;
        limit.0 + (f64::from(limit.1 - limit.0) * f).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // No light lines; `y_labels(0)` asks for no ticks at all (a one-row heatmap).
        if hint.weight().allow_light_points() || hint.max_num_points() == 0 {
            return Vec::new();
        }
        (0..self.0).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.0.max(1) as f64
    }
}

/// What a legend entry looks like.
pub(super) enum Swatch {
    Line(RGBColor),
    LineDot(RGBColor),
    Triangle(RGBColor),
    Cross(RGBColor),
    Rect(RGBColor),
    Dot(RGBColor),
    /// A line of a given width.
    Wide(RGBColor, u32),
    /// A dashed line (a limit).
    Dashed(RGBColor),
    /// Short lines in each shade of a family, darkest first.
    Ramp(Vec<RGBColor>),
    /// No swatch: the label continues the entry above.
    Blank,
}

pub(super) struct LegendEntry {
    pub(super) label: String,
    pub(super) swatch: Swatch,
}

pub(super) const LEGEND_ROW: i32 = 24;

/// Draws a legend in the side panel: a heading, then one row per entry. Entries that do not
/// fit are summarised as "… and N more" rather than drawn over each other.
pub(super) fn draw_legend<DB: DrawingBackend>(
    side: &DrawingArea<DB, Shift>,
    heading: &str,
    entries: &[LegendEntry],
) -> Result<(), PlotError> {
    if entries.is_empty() {
        return Ok(());
    }
    let (_, h) = side.dim_in_pixel();
    let x = 12;
    let mut y = 40;
    let left = Pos::new(HPos::Left, VPos::Center);
    side.draw(&Text::new(
        heading.to_string(),
        (x, y),
        bold(16).color(&INK).pos(left),
    ))
    .map_err(draw_err)?;
    y += LEGEND_ROW + 4;
    let fit = ((h as i32 - y - 20) / LEGEND_ROW).max(1) as usize;
    let shown = if entries.len() > fit {
        fit - 1
    } else {
        entries.len()
    };
    for e in &entries[..shown] {
        draw_swatch(side, &e.swatch, x, y)?;
        side.draw(&Text::new(
            truncate(&e.label, 24),
            (x + 38, y),
            text(15).color(&INK).pos(left),
        ))
        .map_err(draw_err)?;
        y += LEGEND_ROW;
    }
    if shown < entries.len() {
        let more = format!("… and {} more", entries.len() - shown);
        side.draw(&Text::new(
            more,
            (x + 38, y),
            text(15).color(&INK).pos(left),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}

pub(super) fn draw_swatch<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    swatch: &Swatch,
    x: i32,
    y: i32,
) -> Result<(), PlotError> {
    let cx = x + 15;
    match *swatch {
        Swatch::Line(c) => area
            .draw(&PathElement::new(
                vec![(x, y), (x + 30, y)],
                c.stroke_width(3),
            ))
            .map_err(draw_err),
        Swatch::LineDot(c) => {
            area.draw(&PathElement::new(
                vec![(x, y), (x + 30, y)],
                c.stroke_width(2),
            ))
            .map_err(draw_err)?;
            area.draw(&Circle::new((cx, y), 6, c.filled()))
                .map_err(draw_err)?;
            area.draw(&Circle::new((cx, y), 6, BLACK.stroke_width(1)))
                .map_err(draw_err)
        }
        Swatch::Triangle(c) => warning_triangle(area, (cx, y + WARN_BASE + WARN_HEIGHT / 2), c),
        Swatch::Cross(c) => draw_stop(area, (cx, y), c),
        Swatch::Rect(c) => {
            area.draw(&Rectangle::new(
                [(x + 2, y - 8), (x + 28, y + 8)],
                c.filled(),
            ))
            .map_err(draw_err)?;
            area.draw(&Rectangle::new(
                [(x + 2, y - 8), (x + 28, y + 8)],
                INK.stroke_width(1),
            ))
            .map_err(draw_err)
        }
        Swatch::Dot(c) => area
            .draw(&Circle::new((cx, y), 5, c.filled()))
            .map_err(draw_err),
        Swatch::Wide(c, w) => area
            .draw(&PathElement::new(
                vec![(x, y), (x + 30, y)],
                c.stroke_width(w),
            ))
            .map_err(draw_err),
        Swatch::Dashed(c) => {
            for k in 0..3 {
                area.draw(&PathElement::new(
                    vec![(x + 12 * k, y), (x + 12 * k + 7, y)],
                    c.stroke_width(2),
                ))
                .map_err(draw_err)?;
            }
            Ok(())
        }
        Swatch::Ramp(ref shades) => {
            let n = shades.len().max(1) as i32;
            for (k, c) in shades.iter().enumerate() {
                let k = k as i32;
                let (a, b) = (x + 30 * k / n, x + 30 * (k + 1) / n);
                area.draw(&Rectangle::new([(a, y - 6), (b, y + 6)], c.filled()))
                    .map_err(draw_err)?;
            }
            Ok(())
        }
        Swatch::Blank => Ok(()),
    }
}

/// Half the length of a stop's cross arm (its outline), in pixels.
const STOP_ARM: i32 = 8;
/// How far a stop's cross reaches from its anchor, outline (5 px wide) included, in pixels.
const STOP_REACH: i32 = STOP_ARM + 3;
/// How far above its anchor a warning's triangle starts (its base), in pixels: clear of a stop's
/// cross at the same place, joined to the anchor by a thin stem.
pub(super) const WARN_BASE: i32 = 15;
/// The height of a warning's triangle, in pixels.
pub(super) const WARN_HEIGHT: i32 = 14;
// A warning and a stop at one place: the triangle stays clear of the cross.
const _: () = assert!(WARN_BASE > STOP_REACH);

/// A warning: a filled triangle on a short stem above its anchor, so a stop at the same place
/// (a cross on the anchor, drawn first) leaves it whole.
pub(super) fn draw_warning<DB, CT>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    c: RGBColor,
) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone,
{
    let stem = vec![(0, -3), (0, -WARN_BASE)];
    area.draw(&(EmptyElement::at(at.clone()) + PathElement::new(stem, INK.stroke_width(1))))
        .map_err(draw_err)?;
    warning_triangle(area, at, c)
}

/// A warning's triangle alone (the legend's swatch).
fn warning_triangle<DB, CT>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    c: RGBColor,
) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone,
{
    let tri = vec![
        (0, -WARN_BASE - WARN_HEIGHT),
        (-8, -WARN_BASE),
        (8, -WARN_BASE),
    ];
    let mut outline = tri.clone();
    outline.push(tri[0]);
    area.draw(&(EmptyElement::at(at.clone()) + Polygon::new(tri, c.filled())))
        .map_err(draw_err)?;
    area.draw(&(EmptyElement::at(at) + PathElement::new(outline, INK.stroke_width(1))))
        .map_err(draw_err)
}

/// A stop: a thick cross centred on its anchor, outlined in dark ink so it shows on its own line.
pub(super) fn draw_stop<DB, CT>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    c: RGBColor,
) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone,
{
    for (arm, style) in [
        (STOP_ARM, INK.stroke_width(5)),
        (STOP_ARM - 1, c.stroke_width(3)),
    ] {
        area.draw(
            &(EmptyElement::at(at.clone())
                + PathElement::new(vec![(-arm, -arm), (arm, arm)], style)
                + PathElement::new(vec![(-arm, arm), (arm, -arm)], style)),
        )
        .map_err(draw_err)?;
    }
    Ok(())
}
