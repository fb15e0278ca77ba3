//! The iteration-budget chart: how many iterations each agent has used in its turn, against its
//! cap, with agents of one family (the children of one delegation) in shades of one colour.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::*;

/// One agent's line in a budget chart.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetLine {
    pub agent: String,
    /// Agents of one family (e.g. `worker#1` .. `worker#10`) share a colour, in shades from dark
    /// (the first) to light (the last), and one legend entry.
    pub family: String,
    /// `(t_min, iterations used)`, joined by straight lines: give a step's both corners for a
    /// staircase, and a last point at the run's end to carry the line there.
    pub points: Vec<(f64, f64)>,
    /// The most iterations a turn may use; `None` for an unlimited budget.
    pub cap: Option<f64>,
}

/// Shows how many iterations each agent has used in its turn against its cap (a dashed line),
/// so a reader sees who ran out first; unlimited agents have no cap line. The first line
/// (the parent) is drawn bold and on top.
pub fn budget_used_over_time(
    dir: &Path,
    stem: &str,
    title: &str,
    lines: &[BudgetLine],
    axis: &TimeAxis,
) -> Result<Vec<PathBuf>, PlotError> {
    let spec = BudgetSpec { title, lines, axis };
    render(
        dir,
        stem,
        |root| draw_budget(root, &spec),
        |root| draw_budget(root, &spec),
    )
}

struct BudgetSpec<'a> {
    title: &'a str,
    lines: &'a [BudgetLine],
    axis: &'a TimeAxis,
}

/// Agents sharing a family name, in the order the families first appear.
struct Family<'a> {
    name: &'a str,
    members: Vec<usize>,
    base: RGBColor,
}

fn families(lines: &[BudgetLine]) -> Vec<Family<'_>> {
    let mut out: Vec<Family<'_>> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match out.iter_mut().find(|f| f.name == l.family) {
            Some(f) => f.members.push(i),
            None => {
                let base = series_color(out.len());
                out.push(Family {
                    name: &l.family,
                    members: vec![i],
                    base,
                })
            }
        }
    }
    out
}

fn mix(a: RGBColor, b: RGBColor, t: f64) -> RGBColor {
    let m = |p: u8, q: u8| (f64::from(p) + (f64::from(q) - f64::from(p)) * t).round() as u8;
    RGBColor(m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

/// Shade `j` of `n` of a family's colour: from a dark to a light version of it.
pub(super) fn shade(base: RGBColor, j: usize, n: usize) -> RGBColor {
    if n <= 1 {
        return base;
    }
    let dark = mix(base, BLACK, 0.5);
    let light = mix(base, WHITE, 0.6);
    mix(dark, light, j as f64 / (n - 1) as f64)
}

/// Each line's colour and width: a family's own colour for a lone agent, its shades for many;
/// the first line bold.
fn styles(lines: &[BudgetLine], fams: &[Family<'_>]) -> Vec<(RGBColor, u32)> {
    let mut out = vec![(INK, 2); lines.len()];
    for f in fams {
        for (j, &i) in f.members.iter().enumerate() {
            out[i] = (
                shade(f.base, j, f.members.len()),
                if i == 0 { 3 } else { 2 },
            );
        }
    }
    out
}

const CAP_GREY: RGBColor = RGBColor(110, 110, 110);

/// The distinct caps, highest first, each with the families that have it.
fn caps<'a>(lines: &[BudgetLine], fams: &'a [Family<'a>]) -> Vec<(f64, Vec<&'a Family<'a>>)> {
    let mut values: Vec<f64> = lines
        .iter()
        .filter_map(|l| l.cap)
        .filter(|c| c.is_finite())
        .collect();
    values.sort_by(|a, b| b.total_cmp(a));
    values.dedup();
    values
        .into_iter()
        .map(|v| {
            let with: Vec<&Family<'_>> = fams
                .iter()
                .filter(|f| f.members.iter().any(|&i| lines[i].cap == Some(v)))
                .collect();
            (v, with)
        })
        .collect()
}

/// "worker (10)" for a family of many, the agent's name for one.
fn family_name(f: &Family<'_>, lines: &[BudgetLine]) -> String {
    match f.members.as_slice() {
        [only] => lines[*only].agent.clone(),
        many => format!("{} ({})", f.name, many.len()),
    }
}

fn draw_budget<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &BudgetSpec<'_>,
) -> Result<(), PlotError> {
    let (plot, side) = frame(root, spec.title)?;
    let lines: Vec<Vec<(f64, f64)>> = spec
        .lines
        .iter()
        .map(|l| {
            l.points
                .iter()
                .copied()
                .filter(|p| finite(*p))
                .map(|(t, v)| (spec.axis.to_drawn(t), v))
                .collect()
        })
        .collect();
    let fams = families(spec.lines);
    let styles = styles(spec.lines, &fams);
    let caps = caps(spec.lines, &fams);
    let y = range_of(
        lines
            .iter()
            .flatten()
            .map(|p| p.1)
            .chain(caps.iter().map(|c| c.0)),
        true,
        0.08,
    );
    let mut chart = time_chart(
        &plot,
        spec.axis,
        y,
        "iterations used (this turn)",
        fmt_plain,
    )?;
    let x_end = chart.x_range().end;
    for (cap, with) in &caps {
        let color = match with.as_slice() {
            [one] => one.base,
            _ => CAP_GREY,
        };
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, *cap), (x_end, *cap)],
                9,
                6,
                color.stroke_width(2),
            ))
            .map_err(draw_err)?;
        let names: Vec<String> = with.iter().map(|f| family_name(f, spec.lines)).collect();
        let label = truncate(
            &format!("cap {}: {}", fmt_plain(*cap), names.join(", ")),
            60,
        );
        let style = text(14)
            .color(&color)
            .pos(Pos::new(HPos::Left, VPos::Bottom));
        chart
            .draw_series([EmptyElement::at((0.0, *cap)) + Text::new(label, (6, -4), style)])
            .map_err(draw_err)?;
    }
    // Last first, so the parent's bold line lies on top.
    for (i, pts) in lines.iter().enumerate().rev() {
        let (c, w) = styles[i];
        if pts.len() == 1 {
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))
                .map_err(draw_err)?;
        } else {
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(w)))
                .map_err(draw_err)?;
        }
    }
    if lines.iter().all(|l| l.is_empty()) {
        draw_no_data(&plot)?;
    }
    draw_legend(
        &side,
        "legend",
        &legend(spec.lines, &fams, &styles, !caps.is_empty()),
    )
}

fn legend(
    lines: &[BudgetLine],
    fams: &[Family<'_>],
    styles: &[(RGBColor, u32)],
    any_cap: bool,
) -> Vec<LegendEntry> {
    let mut entries = Vec::new();
    for f in fams {
        let uncapped = f.members.iter().all(|&i| lines[i].cap.is_none());
        let mut label = family_name(f, lines);
        if uncapped {
            label.push_str(" (no cap)");
        }
        match f.members.as_slice() {
            [only] => entries.push(LegendEntry {
                label,
                swatch: Swatch::Wide(styles[*only].0, styles[*only].1),
            }),
            many => {
                entries.push(LegendEntry {
                    label,
                    swatch: Swatch::Ramp(many.iter().map(|&i| styles[i].0).collect()),
                });
                let short = |i: usize| {
                    let name = &lines[i].agent;
                    name.strip_prefix(f.name)
                        .filter(|s| !s.is_empty())
                        .unwrap_or(name)
                        .to_string()
                };
                entries.push(LegendEntry {
                    label: format!(
                        "{} dark … {} light",
                        short(many[0]),
                        short(many[many.len() - 1])
                    ),
                    swatch: Swatch::Blank,
                });
            }
        }
    }
    if any_cap {
        entries.push(LegendEntry {
            label: "cap per turn".into(),
            swatch: Swatch::Dashed(CAP_GREY),
        });
    }
    entries
}
