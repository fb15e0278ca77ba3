//! Charts of simulated runs, written as SVG (for reports and diffs) and PNG (for quick looks).
//!
//! Plain data in, files out: the callers (the CLI and sweeps) turn traces into [`Series`],
//! [`TimelineRow`]s, heatmap cells or [`ParetoPoint`]s, so this module knows nothing of the
//! engine. Times are minutes of virtual time and money is dollars.
//!
//! Rendering needs no system library: plotters draws text with `ab_glyph` from the DejaVu font
//! embedded in the binary, so the same inputs give byte-identical files on every machine.
//! Each file is written beside its destination and renamed into place.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::output::write_atomic;
use crisp::CrispText;

/// Width of every PNG (and of the SVG canvas), in pixels: wide enough for a legend panel.
pub const WIDTH: u32 = 1200;
/// Height of every PNG (and of the SVG canvas), in pixels.
pub const HEIGHT: u32 = 700;

/// Width of the panel at the right that holds legends, so they never cover data.
const SIDE: u32 = 250;
/// The family name the embedded font is registered under (plotters' default family).
const FAMILY: &str = "sans-serif";

/// Why a chart could not be written; a chart is never half-written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The stem must name a file inside `dir`, not a path elsewhere.
    #[error("invalid file stem {0:?}: must be a non-empty file name without separators")]
    InvalidStem(String),
    /// The embedded font did not load; no text could be drawn.
    #[error("the embedded DejaVu font could not be registered")]
    Font,
    /// Heatmap cells must match the labels, or values would land in the wrong place.
    #[error("heatmap shape mismatch: {0}")]
    Shape(String),
    /// plotters failed while drawing.
    #[error("drawing failed: {0}")]
    Draw(String),
    /// The PNG encoder failed.
    #[error("PNG encoding failed: {0}")]
    Encode(String),
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where something happened on a line, so a reader sees when governance acted.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub t_min: f64,
    pub y: f64,
    pub kind: MarkerKind,
}

/// What a marker means; each kind has its own shape and legend entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// A budget warning was issued (drawn as a triangle above the point).
    Warning,
    /// The run was stopped (drawn as a cross on the point).
    Stop,
}

/// One labelled line (a profile, a run or an agent), with its markers.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub markers: Vec<Marker>,
}

/// What an agent was doing during a span; each kind has its own colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Model,
    Tool,
    Waiting,
}

/// One agent's lane in a timeline: spans are `(start_min, end_min, kind)`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineRow {
    pub agent: String,
    pub spans: Vec<(f64, f64, SpanKind)>,
}

/// One setting in a trade-off chart; frontier points are the ones worth choosing between.
#[derive(Debug, Clone, PartialEq)]
pub struct ParetoPoint {
    pub x: f64,
    pub y: f64,
    pub label: String,
    pub on_frontier: bool,
}

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

/// Shows where each agent's time went (model, tool, waiting), so idle children and serial
/// bottlenecks stand out; up to about 50 lanes stay legible.
pub fn agent_timeline(
    dir: &Path,
    stem: &str,
    title: &str,
    rows: &[TimelineRow],
) -> Result<Vec<PathBuf>, PlotError> {
    render(
        dir,
        stem,
        |root| draw_timeline(root, title, rows),
        |root| draw_timeline(root, title, rows),
    )
}

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
    };
    render(
        dir,
        stem,
        |root| draw_heatmap(root, &spec),
        |root| draw_heatmap(root, &spec),
    )
}

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

// ---------------------------------------------------------------------------------------------
// Rendering and output

/// Registers the embedded fonts once per process; plotters' `ab_glyph` backend has no fonts of
/// its own and never looks at the system's.
fn ensure_fonts() -> Result<(), PlotError> {
    static FONTS: OnceLock<bool> = OnceLock::new();
    let ok = FONTS.get_or_init(|| {
        let regular =
            plotters::style::register_font(FAMILY, FontStyle::Normal, dejavu::sans::regular());
        let bold = plotters::style::register_font(FAMILY, FontStyle::Bold, dejavu::sans::bold());
        regular.is_ok() && bold.is_ok()
    });
    if *ok { Ok(()) } else { Err(PlotError::Font) }
}

fn check_stem(stem: &str) -> Result<(), PlotError> {
    let bad = stem.is_empty()
        || stem == "."
        || stem == ".."
        || stem.contains(['/', '\\', '\0'])
        || Path::new(stem).is_absolute();
    if bad {
        Err(PlotError::InvalidStem(stem.to_string()))
    } else {
        Ok(())
    }
}

fn draw_err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// Draws the same chart on both backends (the closures are one generic function instantiated
/// twice) and writes `<stem>.svg` and `<stem>.png`.
fn render<S, B>(dir: &Path, stem: &str, svg_draw: S, png_draw: B) -> Result<Vec<PathBuf>, PlotError>
where
    S: FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), PlotError>,
    B: FnOnce(&DrawingArea<CrispText<'_>, Shift>) -> Result<(), PlotError>,
{
    check_stem(stem)?;
    ensure_fonts()?;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        svg_draw(&root)?;
        root.present().map_err(draw_err)?;
    }

    let mut rgb = vec![0u8; WIDTH as usize * HEIGHT as usize * 3];
    {
        let root =
            CrispText(BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT))).into_drawing_area();
        png_draw(&root)?;
        root.present().map_err(draw_err)?;
    }
    let mut png = Vec::new();
    {
        use image::ImageEncoder;
        image::codecs::png::PngEncoder::new(&mut png)
            .write_image(&rgb, WIDTH, HEIGHT, image::ColorType::Rgb8)
            .map_err(|e| PlotError::Encode(e.to_string()))?;
    }

    let svg_path = dir.join(format!("{stem}.svg"));
    let png_path = dir.join(format!("{stem}.png"));
    for (path, bytes) in [(&svg_path, svg.as_bytes()), (&png_path, png.as_slice())] {
        write_atomic(path, bytes).map_err(|source| PlotError::Io {
            path: path.clone(),
            source,
        })?;
    }
    Ok(vec![svg_path, png_path])
}

/// Text for the PNGs, see [`CrispText`].
mod crisp {
    use std::sync::OnceLock;

    use ab_glyph::{Font, FontRef, ScaleFont};
    use plotters::prelude::{BitMapBackend, DrawingBackend};
    use plotters_backend::text_anchor::{HPos, VPos};
    use plotters_backend::{
        BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind, FontStyle,
    };

    /// The bitmap backend with text drawn by us: plotters 0.3.7's `ab_glyph` path places each glyph
    /// at a whole pixel and drops its left side bearing, so "rn" reads as "m". Everything else
    /// (and the text layout boxes, so anchoring matches the SVG) is the bitmap backend's.
    pub(super) struct CrispText<'a>(pub(super) BitMapBackend<'a>);

    type BitmapError = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

    fn glyph_font(style: FontStyle) -> Option<&'static FontRef<'static>> {
        static REGULAR: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
        static BOLD: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
        let (cell, bytes) = match style {
            FontStyle::Bold => (&BOLD, dejavu::sans::bold()),
            _ => (&REGULAR, dejavu::sans::regular()),
        };
        cell.get_or_init(|| FontRef::try_from_slice(bytes).ok())
            .as_ref()
    }

    impl DrawingBackend for CrispText<'_> {
        type ErrorType = BitmapError;

        fn get_size(&self) -> (u32, u32) {
            self.0.get_size()
        }
        fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<BitmapError>> {
            self.0.ensure_prepared()
        }
        fn present(&mut self) -> Result<(), DrawingErrorKind<BitmapError>> {
            self.0.present()
        }
        fn draw_pixel(
            &mut self,
            point: BackendCoord,
            color: BackendColor,
        ) -> Result<(), DrawingErrorKind<BitmapError>> {
            self.0.draw_pixel(point, color)
        }
        fn draw_line<S: BackendStyle>(
            &mut self,
            from: BackendCoord,
            to: BackendCoord,
            style: &S,
        ) -> Result<(), DrawingErrorKind<BitmapError>> {
            self.0.draw_line(from, to, style)
        }
        fn draw_rect<S: BackendStyle>(
            &mut self,
            upper_left: BackendCoord,
            bottom_right: BackendCoord,
            style: &S,
            fill: bool,
        ) -> Result<(), DrawingErrorKind<BitmapError>> {
            self.0.draw_rect(upper_left, bottom_right, style, fill)
        }
        fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
            &mut self,
            path: I,
            style: &S,
        ) -> Result<(), DrawingErrorKind<BitmapError>> {
            self.0.draw_path(path, style)
        }
        fn draw_circle<S: BackendStyle>(
            &mut self,
            center: BackendCoord,
            radius: u32,
            style: &S,
            fill: bool,
        ) -> Result<(), DrawingErrorKind<BitmapError>> {
            self.0.draw_circle(center, radius, style, fill)
        }
        fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
            &mut self,
            vert: I,
            style: &S,
        ) -> Result<(), DrawingErrorKind<BitmapError>> {
            self.0.fill_polygon(vert, style)
        }
        fn blit_bitmap(
            &mut self,
            pos: BackendCoord,
            (iw, ih): (u32, u32),
            src: &[u8],
        ) -> Result<(), DrawingErrorKind<BitmapError>> {
            self.0.blit_bitmap(pos, (iw, ih), src)
        }

        /// Same anchoring and rotation as plotters' default, with glyphs at their true (sub-pixel)
        /// pen positions; the baseline sits where plotters puts it (half the size below the top).
        fn draw_text<TStyle: BackendTextStyle>(
            &mut self,
            text: &str,
            style: &TStyle,
            pos: BackendCoord,
        ) -> Result<(), DrawingErrorKind<BitmapError>> {
            let color = style.color();
            if color.alpha == 0.0 {
                return Ok(());
            }
            let Some(font) = glyph_font(style.style()) else {
                return self.0.draw_text(text, style, pos);
            };
            let ((min_x, min_y), (max_x, max_y)) = style
                .layout_box(text)
                .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
            let (width, height) = (max_x - min_x, max_y - min_y);
            let dx = match style.anchor().h_pos {
                HPos::Left => 0,
                HPos::Right => -width,
                HPos::Center => -width / 2,
            };
            let dy = match style.anchor().v_pos {
                VPos::Top => 0,
                VPos::Center => -height / 2,
                VPos::Bottom => -height,
            };
            let trans = style.transform();
            let (w, h) = self.get_size();
            let size = style.size() as f32;
            let scaled = font.as_scaled(size);
            let mut pen = 0f32;
            let mut prev = None;
            let mut coverage = Vec::new();
            for c in text.chars() {
                let id = scaled.glyph_id(c);
                if let Some(p) = prev {
                    pen += scaled.kern(p, id);
                }
                prev = Some(id);
                let glyph = id.with_scale_and_position(size, ab_glyph::point(pen, 0.0));
                pen += scaled.h_advance(id);
                let Some(outline) = font.outline_glyph(glyph) else {
                    continue;
                };
                let bounds = outline.px_bounds();
                let (ox, oy) = (bounds.min.x as i32, (size / 2.0 + bounds.min.y) as i32);
                coverage.clear();
                outline.draw(|x, y, a| coverage.push((x as i32 + ox, y as i32 + oy, a)));
                for &(x, y, a) in &coverage {
                    let (x, y) = trans.transform(x + dx - min_x, y + dy - min_y);
                    let (x, y) = (pos.0 + x, pos.1 + y);
                    if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 && a > 0.0 {
                        self.0.draw_pixel((x, y), color.mix(f64::from(a)))?;
                    }
                }
            }
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shared drawing helpers

fn text(size: impl Into<f64>) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size.into()).into_font())
}

fn bold(size: impl Into<f64>) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size.into()).into_font().style(FontStyle::Bold))
}

/// Line colours: Tableau 10 first (distinguishable, colour-blind friendlier), then Palette99.
fn series_color(i: usize) -> RGBColor {
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

const GRID_BOLD: RGBColor = RGBColor(210, 210, 210);
const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);
const INK: RGBColor = RGBColor(40, 40, 40);
const NOT_RUN: RGBColor = RGBColor(205, 205, 205);

/// Clears the canvas, draws the title and splits off the legend panel at the right.
#[allow(clippy::type_complexity)]
fn frame<DB: DrawingBackend>(
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
fn range_of(vals: impl Iterator<Item = f64>, include_zero: bool, pad: f64) -> Range<f64> {
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

fn finite(p: (f64, f64)) -> bool {
    p.0.is_finite() && p.1.is_finite()
}

fn fmt_dollars(v: f64) -> String {
    format!("${}", fmt_plain(v))
}

/// Tick labels: integers without decimals, others with up to four decimals, trailing zeros
/// trimmed, so small steps (cents of a cent) stay distinguishable.
fn fmt_plain(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        return format!("{:.0}", v.round() + 0.0);
    }
    let s = format!("{:.4}", v + 0.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}

fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max_chars.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn draw_no_data<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
    let (w, h) = area.dim_in_pixel();
    let style = text(26)
        .color(&RGBColor(150, 150, 150))
        .pos(Pos::new(HPos::Center, VPos::Center));
    area.draw(&Text::new("no data", (w as i32 / 2, h as i32 / 2), style))
        .map_err(draw_err)
}

/// A categorical axis of `n` bands of width 1 (band `i` spans `i..i+1`) with one tick at each
/// band's centre, so lanes and heatmap cells get exactly one label each.
struct Bands(usize);

impl Ranged for Bands {
    type ValueType = f64;
    // Labels always come from a formatter; this only satisfies the mesh's bounds.
    type FormatOption = DefaultFormatting;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let f = value / self.0.max(1) as f64;
        limit.0 + (f64::from(limit.1 - limit.0) * f).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            return Vec::new();
        }
        (0..self.0).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.0.max(1) as f64
    }
}

/// What a legend entry looks like.
enum Swatch {
    Line(RGBColor),
    LineDot(RGBColor),
    Triangle(RGBColor),
    Cross(RGBColor),
    Rect(RGBColor),
    Dot(RGBColor),
}

struct LegendEntry {
    label: String,
    swatch: Swatch,
}

const LEGEND_ROW: i32 = 24;

/// Draws a legend in the side panel: a heading, then one row per entry. Entries that do not
/// fit are summarised as "… and N more" rather than drawn over each other.
fn draw_legend<DB: DrawingBackend>(
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

fn draw_swatch<DB: DrawingBackend>(
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
        Swatch::Triangle(c) => draw_warning(area, (cx, y + 13), c),
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
    }
}

/// A warning: a filled triangle standing just above its anchor, so it doesn't hide a stop
/// drawn a few pixels away.
fn draw_warning<DB, CT>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    c: RGBColor,
) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone,
{
    let tri = vec![(0, -24), (-8, -10), (8, -10)];
    let mut outline = tri.clone();
    outline.push(tri[0]);
    area.draw(&(EmptyElement::at(at.clone()) + Polygon::new(tri, c.filled())))
        .map_err(draw_err)?;
    area.draw(&(EmptyElement::at(at) + PathElement::new(outline, INK.stroke_width(1))))
        .map_err(draw_err)
}

/// A stop: a thick cross centred on its anchor, outlined in dark ink so it shows on its own line.
fn draw_stop<DB, CT>(area: &DrawingArea<DB, CT>, at: CT::From, c: RGBColor) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone,
{
    for (arm, style) in [(8, INK.stroke_width(5)), (7, c.stroke_width(3))] {
        area.draw(
            &(EmptyElement::at(at.clone())
                + PathElement::new(vec![(-arm, -arm), (arm, arm)], style)
                + PathElement::new(vec![(-arm, arm), (arm, -arm)], style)),
        )
        .map_err(draw_err)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Line charts (cost, budget)

struct LineSpec<'a> {
    title: &'a str,
    y_desc: &'a str,
    series: &'a [Series],
    y_fmt: fn(f64) -> String,
}

fn draw_lines<DB: DrawingBackend>(
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

// ---------------------------------------------------------------------------------------------
// Timeline

fn span_color(kind: SpanKind) -> RGBColor {
    match kind {
        SpanKind::Model => RGBColor(31, 119, 180),
        SpanKind::Tool => RGBColor(255, 127, 14),
        SpanKind::Waiting => RGBColor(185, 185, 185),
    }
}

fn draw_timeline<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    rows: &[TimelineRow],
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
                .map(move |&(a, b, k)| (lane, a.min(b), a.max(b), k))
        })
        .collect();
    let x = range_of(spans.iter().flat_map(|s| [s.1, s.2]), true, 0.01);
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
        .build_cartesian_2d(x.clone(), Bands(n))
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
    let x_fmt = |v: &f64| fmt_plain(*v);
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
        .x_desc("virtual time (min)")
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

// ---------------------------------------------------------------------------------------------
// Heatmap

struct HeatSpec<'a> {
    title: &'a str,
    x_label: &'a str,
    xs: &'a [String],
    y_label: &'a str,
    ys: &'a [String],
    cells: &'a [Vec<Option<f64>>],
    value_label: &'a str,
    percent: bool,
}

impl HeatSpec<'_> {
    fn fmt(&self, v: f64) -> String {
        if self.percent {
            format!("{:.0}%", v * 100.0 + 0.0)
        } else {
            format!("{:.2}", v + 0.0)
        }
    }
}

/// Viridis, sampled at five stops and interpolated: perceptually even and readable in grey.
fn colormap(t: f64) -> RGBColor {
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
fn ink_on(c: RGBColor) -> RGBColor {
    let lum = 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
    if lum > 140.0 { BLACK } else { WHITE }
}

fn draw_heatmap<DB: DrawingBackend>(
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
    let mut chart = ChartBuilder::on(&plot)
        .margin(18)
        .x_label_area_size(60)
        .y_label_area_size(y_label_w + 50)
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
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(spec.x_label)
        .y_desc(spec.y_label)
        .label_style(label_style.clone())
        .axis_desc_style(text(17).color(&INK))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(draw_err)?;

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
fn draw_color_bar<DB: DrawingBackend>(
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
        const STEPS: i32 = 100;
        for k in 0..STEPS {
            let ya = top + (bottom - top) * k / STEPS;
            let yb = top + (bottom - top) * (k + 1) / STEPS;
            let t = 1.0 - (f64::from(k) + 0.5) / f64::from(STEPS);
            side.draw(&Rectangle::new([(x0, ya), (x1, yb)], colormap(t).filled()))
                .map_err(draw_err)?;
        }
        side.draw(&Rectangle::new(
            [(x0, top), (x1, bottom)],
            INK.stroke_width(1),
        ))
        .map_err(draw_err)?;
        let ticks: &[f64] = if vmax - vmin < 1e-12 {
            &[0.5]
        } else {
            &[0.0, 0.25, 0.5, 0.75, 1.0]
        };
        for &t in ticks {
            let y = bottom - (f64::from(bottom - top) * t).round() as i32;
            let v = if vmax - vmin < 1e-12 {
                vmin
            } else {
                vmin + t * (vmax - vmin)
            };
            side.draw(&PathElement::new(
                vec![(x1, y), (x1 + 6, y)],
                INK.stroke_width(1),
            ))
            .map_err(draw_err)?;
            side.draw(&Text::new(
                spec.fmt(v),
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

// ---------------------------------------------------------------------------------------------
// Pareto

struct ParetoSpec<'a> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    points: &'a [ParetoPoint],
}

const FRONTIER: RGBColor = RGBColor(214, 39, 40);
const DOMINATED: RGBColor = RGBColor(120, 150, 190);

fn draw_pareto<DB: DrawingBackend>(
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory per test, removed by the test when it passes.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("loopsim-plot-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// Checks both files of one chart: a valid SVG naming the title, a PNG of the right size
    /// that is not one flat colour, and no temporary left behind.
    fn check_outputs(dir: &Path, stem: &str, title: &str, paths: &[PathBuf]) {
        assert_eq!(
            paths,
            [
                dir.join(format!("{stem}.svg")),
                dir.join(format!("{stem}.png"))
            ]
        );
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        assert!(
            svg.starts_with("<svg") || svg.starts_with("<?xml"),
            "{svg:.60}"
        );
        assert!(svg.contains(title), "the SVG names its title");
        assert!(svg.trim_end().ends_with("</svg>"));
        let png = image::load_from_memory(&std::fs::read(&paths[1]).unwrap())
            .unwrap()
            .to_rgb8();
        assert_eq!(png.dimensions(), (WIDTH, HEIGHT));
        let first = *png.get_pixel(0, 0);
        assert!(
            png.pixels().any(|p| *p != first),
            "the PNG is not one flat colour"
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "temporaries left: {leftovers:?}");
    }

    fn read_both(paths: &[PathBuf]) -> (Vec<u8>, Vec<u8>) {
        (
            std::fs::read(&paths[0]).unwrap(),
            std::fs::read(&paths[1]).unwrap(),
        )
    }

    /// Cumulative cost of an ungoverned and a governed run over 84 minutes; the governed one is
    /// warned at minute 23 and stopped at 23.5 (its children finish the work).
    fn sample_cost() -> Vec<Series> {
        let ungoverned = (0..=84)
            .map(|m| {
                let t = f64::from(m);
                (t, 18.0 * (t / 84.0).powf(1.3))
            })
            .collect();
        let mut governed: Vec<(f64, f64)> = (0..=23)
            .map(|m| {
                let t = f64::from(m);
                (t, 5.4 * (t / 23.5).powf(1.2))
            })
            .collect();
        governed.push((23.5, 5.4));
        governed.extend((24..=84).map(|m| {
            let t = f64::from(m);
            (t, 5.4 + 1.6 * (t - 23.5) / 60.5)
        }));
        let at = |t: f64| 5.4 * (t / 23.5).powf(1.2);
        vec![
            Series {
                label: "no governance".into(),
                points: ungoverned,
                markers: vec![],
            },
            Series {
                label: "hermes-default".into(),
                points: governed,
                markers: vec![
                    Marker {
                        t_min: 23.0,
                        y: at(23.0),
                        kind: MarkerKind::Warning,
                    },
                    Marker {
                        t_min: 23.5,
                        y: 5.4,
                        kind: MarkerKind::Stop,
                    },
                ],
            },
        ]
    }

    fn sample_budget() -> Vec<Series> {
        let mut out = vec![Series {
            label: "parent".into(),
            points: (0..=24)
                .map(|m| (f64::from(m), f64::from(90 - 3 * m).max(18.0)))
                .collect(),
            markers: vec![
                Marker {
                    t_min: 20.0,
                    y: 30.0,
                    kind: MarkerKind::Warning,
                },
                Marker {
                    t_min: 24.0,
                    y: 18.0,
                    kind: MarkerKind::Stop,
                },
            ],
        }];
        for c in 0..3u32 {
            let start = 5 + 6 * c;
            out.push(Series {
                label: format!("child-{}", c + 1),
                points: (start..=84)
                    .map(|m| (f64::from(m), (50.0 - f64::from(m - start) * 0.8).max(0.0)))
                    .collect(),
                markers: vec![],
            });
        }
        out
    }

    /// A small deterministic generator so the sample timeline looks irregular.
    fn lcg(state: &mut u64) -> f64 {
        *state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    fn sample_timeline(agents: usize) -> Vec<TimelineRow> {
        let mut seed = 7u64;
        (0..agents)
            .map(|a| {
                let mut t = if a == 0 {
                    0.0
                } else {
                    2.0 + 3.0 * lcg(&mut seed)
                };
                let end = if a == 0 {
                    84.0
                } else {
                    40.0 + 44.0 * lcg(&mut seed)
                };
                let mut spans = Vec::new();
                while t < end {
                    let r = lcg(&mut seed);
                    let kind = if r < 0.45 {
                        SpanKind::Model
                    } else if r < 0.8 {
                        SpanKind::Tool
                    } else {
                        SpanKind::Waiting
                    };
                    let d = 0.5 + 3.0 * lcg(&mut seed);
                    spans.push((t, (t + d).min(end), kind));
                    t += d + 0.2;
                }
                TimelineRow {
                    agent: if a == 0 {
                        "parent".into()
                    } else {
                        format!("child-{a:02}")
                    },
                    spans,
                }
            })
            .collect()
    }

    /// A 7x7 sweep of warn_after x hard_stop_after; cells where the hard stop would come before
    /// the warning were not run.
    fn sample_grid() -> (Vec<String>, Vec<String>, Vec<Vec<Option<f64>>>) {
        let steps = [10, 20, 30, 40, 50, 60, 70];
        let xs = steps.iter().map(|s| s.to_string()).collect();
        let ys = steps.iter().map(|s| s.to_string()).collect();
        let cells = steps
            .iter()
            .map(|&stop| {
                steps
                    .iter()
                    .map(|&warn| {
                        (stop >= warn).then(|| {
                            let f = f64::from(stop);
                            (0.45 * (-f / 25.0).exp() + f64::from(warn) / 900.0).min(1.0)
                        })
                    })
                    .collect()
            })
            .collect();
        (xs, ys, cells)
    }

    fn sample_pareto() -> Vec<ParetoPoint> {
        let raw = [
            (0.0, 2.1, "warn 70 / stop 90", true),
            (1.5, 6.8, "warn 50 / stop 70", true),
            (2.0, 4.9, "warn 60 / stop 70", false),
            (3.5, 9.6, "warn 40 / stop 60", true),
            (4.0, 7.2, "warn 30 / stop 70", false),
            (6.0, 11.0, "warn 30 / stop 50", true),
            (7.5, 9.9, "warn 20 / stop 60", false),
            (9.0, 12.1, "warn 20 / stop 40", true),
            (12.0, 11.5, "warn 10 / stop 40", false),
            (15.0, 12.4, "warn 10 / stop 30", true),
        ];
        raw.iter()
            .map(|&(x, y, label, on_frontier)| ParetoPoint {
                x,
                y,
                label: label.into(),
                on_frontier,
            })
            .collect()
    }

    fn heatmap_sample(dir: &Path, stem: &str, title: &str) -> Result<Vec<PathBuf>, PlotError> {
        let (xs, ys, cells) = sample_grid();
        heatmap(
            dir,
            stem,
            title,
            "warn_after (iterations)",
            &xs,
            "hard_stop_after (iterations)",
            &ys,
            &cells,
            "false-stop rate",
            true,
        )
    }

    #[test]
    fn cost_over_time_writes_svg_and_png() {
        let dir = scratch("cost");
        let title = "Cumulative cost by profile";
        let paths = cost_over_time(&dir, "cost", title, &sample_cost()).unwrap();
        check_outputs(&dir, "cost", title, &paths);
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        for text in [
            "virtual time (min)",
            "cumulative cost ($)",
            "no governance",
            "stopped",
        ] {
            assert!(svg.contains(text), "SVG lacks {text:?}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn budget_over_time_writes_svg_and_png() {
        let dir = scratch("budget");
        let title = "Iteration budget by agent";
        let paths = budget_over_time(&dir, "budget", title, &sample_budget()).unwrap();
        check_outputs(&dir, "budget", title, &paths);
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        assert!(svg.contains("iterations remaining"));
        assert!(svg.contains("child-3"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn agent_timeline_writes_svg_and_png_for_1_to_50_lanes() {
        let dir = scratch("timeline");
        for n in [1, 11, 50] {
            let title = format!("Agent activity ({n} agents)");
            let stem = format!("timeline-{n}");
            let paths = agent_timeline(&dir, &stem, &title, &sample_timeline(n)).unwrap();
            check_outputs(&dir, &stem, &title, &paths);
            let svg = std::fs::read_to_string(&paths[0]).unwrap();
            assert!(svg.contains("model call") && svg.contains("waiting"));
            assert!(svg.contains("parent"));
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn heatmap_writes_svg_and_png_with_values_and_grey_cells() {
        let dir = scratch("heatmap");
        let title = "False-stop rate by warn/stop setting";
        let paths = heatmap_sample(&dir, "heat", title).unwrap();
        check_outputs(&dir, "heat", title, &paths);
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        assert!(svg.contains("not run"));
        assert!(svg.contains("31%"), "cell values printed as percentages");
        assert!(svg.contains("warn_after (iterations)"));

        let xs = vec!["a".to_string(), "b".to_string()];
        let ys = vec!["low".to_string()];
        let cells = vec![vec![Some(1.25), None]];
        let paths = heatmap(
            &dir,
            "dollars",
            "Savings",
            "x",
            &xs,
            "y",
            &ys,
            &cells,
            "saved ($)",
            false,
        )
        .unwrap();
        check_outputs(&dir, "dollars", "Savings", &paths);
        assert!(std::fs::read_to_string(&paths[0]).unwrap().contains("1.25"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn heatmap_rejects_cells_that_do_not_match_labels() {
        let dir = scratch("heat-shape");
        let xs = vec!["a".to_string(), "b".to_string()];
        let ys = vec!["y".to_string()];
        let err = heatmap(
            &dir,
            "h",
            "t",
            "x",
            &xs,
            "y",
            &ys,
            &[vec![None]],
            "v",
            false,
        );
        assert!(matches!(err, Err(PlotError::Shape(_))), "{err:?}");
        let err = heatmap(&dir, "h", "t", "x", &xs, "y", &ys, &[], "v", false);
        assert!(matches!(err, Err(PlotError::Shape(_))), "{err:?}");
        assert!(!dir.join("h.svg").exists());
    }

    #[test]
    fn pareto_writes_svg_and_png_with_frontier_labels() {
        let dir = scratch("pareto");
        let title = "Savings against false stops";
        let paths = pareto(
            &dir,
            "pareto",
            title,
            "false-stop rate (%)",
            "dollars saved ($)",
            &sample_pareto(),
        )
        .unwrap();
        check_outputs(&dir, "pareto", title, &paths);
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        assert!(
            svg.contains("warn 40 / stop 60"),
            "frontier points are labelled"
        );
        assert!(!svg.contains("warn 60 / stop 70"), "other points are not");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn same_inputs_give_byte_identical_files() {
        let dir = scratch("determinism");
        type Render = Box<dyn Fn(&Path) -> Result<Vec<PathBuf>, PlotError>>;
        let charts: Vec<Render> = vec![
            Box::new(|d| cost_over_time(d, "c", "cost", &sample_cost())),
            Box::new(|d| budget_over_time(d, "b", "budget", &sample_budget())),
            Box::new(|d| agent_timeline(d, "t", "timeline", &sample_timeline(11))),
            Box::new(|d| heatmap_sample(d, "h", "heat")),
            Box::new(|d| pareto(d, "p", "pareto", "x (%)", "y ($)", &sample_pareto())),
        ];
        for chart in &charts {
            let first = read_both(&chart(&dir.join("one")).unwrap());
            let second = read_both(&chart(&dir.join("two")).unwrap());
            assert!(first == second, "a chart differs between two renders");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn empty_and_degenerate_inputs_still_draw() {
        let dir = scratch("empty");
        let empty_series = Series {
            label: "nothing yet".into(),
            points: vec![],
            markers: vec![],
        };
        let one_point = Series {
            label: "one point".into(),
            points: vec![(3.0, 2.0), (f64::NAN, 1.0)],
            markers: vec![Marker {
                t_min: f64::INFINITY,
                y: 1.0,
                kind: MarkerKind::Stop,
            }],
        };
        let empty_row = TimelineRow {
            agent: "idle".into(),
            spans: vec![],
        };
        let results = [
            ("c0", cost_over_time(&dir, "c0", "empty cost", &[])),
            (
                "c1",
                cost_over_time(&dir, "c1", "empty line", &[empty_series]),
            ),
            (
                "c2",
                cost_over_time(&dir, "c2", "one point", std::slice::from_ref(&one_point)),
            ),
            ("b0", budget_over_time(&dir, "b0", "empty budget", &[])),
            (
                "b1",
                budget_over_time(&dir, "b1", "flat budget", &[one_point]),
            ),
            ("t0", agent_timeline(&dir, "t0", "no agents", &[])),
            ("t1", agent_timeline(&dir, "t1", "idle agent", &[empty_row])),
            (
                "h0",
                heatmap(&dir, "h0", "empty heat", "x", &[], "y", &[], &[], "v", true),
            ),
            (
                "h1",
                heatmap(
                    &dir,
                    "h1",
                    "all not run",
                    "x",
                    &["1".into()],
                    "y",
                    &["1".into()],
                    &[vec![None]],
                    "v",
                    false,
                ),
            ),
            ("p0", pareto(&dir, "p0", "empty pareto", "x", "y", &[])),
        ];
        for (stem, result) in results {
            let paths = result.unwrap_or_else(|e| panic!("{stem}: {e}"));
            assert_eq!(paths.len(), 2);
            let png = image::open(&paths[1]).unwrap();
            assert_eq!((png.width(), png.height()), (WIDTH, HEIGHT));
        }
        let svg = std::fs::read_to_string(dir.join("c0.svg")).unwrap();
        assert!(svg.contains("no data"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_stems_are_refused() {
        let dir = scratch("stems");
        for stem in ["", ".", "..", "a/b", "../up", "/abs"] {
            let err = cost_over_time(&dir, stem, "t", &[]);
            assert!(
                matches!(err, Err(PlotError::InvalidStem(_))),
                "{stem:?}: {err:?}"
            );
        }
        assert!(!dir.exists(), "nothing written for a bad stem");
    }

    /// Renders one sample of each chart for a person to look at: into `$LOOPSIM_PLOT_SAMPLES`
    /// when set (e.g. `/tmp/plots`), else into a scratch directory that is removed.
    #[test]
    fn render_samples() {
        let keep = std::env::var_os("LOOPSIM_PLOT_SAMPLES").map(PathBuf::from);
        let dir = keep.clone().unwrap_or_else(|| scratch("samples"));
        let mut written = Vec::new();
        written.extend(
            cost_over_time(
                &dir,
                "cost_over_time",
                "Cumulative cost: one task, two profiles",
                &sample_cost(),
            )
            .unwrap(),
        );
        written.extend(
            budget_over_time(
                &dir,
                "budget_over_time",
                "Iteration budget: parent and children",
                &sample_budget(),
            )
            .unwrap(),
        );
        written.extend(
            agent_timeline(
                &dir,
                "agent_timeline",
                "Agent activity: parent and 10 children",
                &sample_timeline(11),
            )
            .unwrap(),
        );
        written.extend(
            agent_timeline(
                &dir,
                "agent_timeline_50",
                "Agent activity: 50 agents",
                &sample_timeline(50),
            )
            .unwrap(),
        );
        written.extend(
            heatmap_sample(&dir, "heatmap", "False-stop rate by warn/stop setting").unwrap(),
        );
        written.extend(
            pareto(
                &dir,
                "pareto",
                "Dollars saved against false stops (10 settings)",
                "false-stop rate (%)",
                "dollars saved ($)",
                &sample_pareto(),
            )
            .unwrap(),
        );
        assert_eq!(written.len(), 12);
        assert!(written.iter().all(|p| p.exists()));
        if keep.is_none() {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
