//! Charts of simulated runs, written as SVG (for reports and diffs) and PNG (for quick looks).
//!
//! Plain data in, files out: the callers (the CLI and sweeps) turn traces into [`Series`],
//! [`TimelineRow`]s, [`BudgetLine`]s, heatmap cells or [`ParetoPoint`]s, so this module knows
//! nothing of the engine. Times are minutes of virtual time and money is dollars; a
//! [`TimeAxis`] can draw long idle stretches as narrow, labelled breaks.
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

use crate::output::write_atomic;
use axis::*;
use crisp::CrispText;
use style::*;

mod axis;
mod budget;
mod crisp;
mod heatmap;
mod lines;
mod pareto;
mod style;
#[cfg(test)]
mod tests;
mod timeline;

pub use axis::{IdleBreak, TimeAxis};
pub use budget::{BudgetLine, budget_used_over_time};
pub use heatmap::{heatmap, heatmap_row};
pub use lines::{budget_over_time, cost_over_time, cost_over_time_on};
pub use pareto::pareto;
pub use timeline::{agent_timeline, agent_timeline_on};

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
    /// Run labels must match the runs, and their slugs must name distinct files.
    #[error("run labels: {0}")]
    Labels(String),
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
