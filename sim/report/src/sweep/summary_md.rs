//! The sweep's Markdown summary.

use std::fmt::Write as _;

use super::SweepSpec;
use super::aggregate::{Aggregate, recommend};

/// The sweep's Markdown summary.
pub fn summary_md(spec: &SweepSpec, runs: usize, aggs: &[Aggregate], plots: &[String]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Sweep\n");
    let _ = writeln!(
        o,
        "{} runs: {} settings (the baseline first) x {} scenarios x {} profiles x seeds {}..{}.\n",
        runs,
        spec.settings().len(),
        spec.scenarios.len(),
        spec.profiles.len().max(1),
        spec.seeds.0,
        spec.seeds.1
    );
    for a in &spec.axes {
        let _ = writeln!(o, "- `{}`: {}", a.key, a.values.join(", "));
    }
    if let Some((file, hash)) = &spec.config {
        let _ = writeln!(
            o,
            "- every scenario with `{file}` laid over its config (sha256 {})",
            hash.get(..12).unwrap_or(hash)
        );
    }
    let _ = writeln!(o, "\nRerun: `{}`", spec.command());
    if !spec.baseline.is_empty() {
        let _ = writeln!(o, "\nThe baseline's settings:\n");
        for b in &spec.baseline {
            let _ = writeln!(o, "- {b}");
        }
    }
    let _ = writeln!(
        o,
        "\nThe baseline is every scenario as written. Waste is what the parent spent after its loop began; savings are against the baseline.\n"
    );
    let _ = writeln!(
        o,
        "| setting | profile | loop runs | waste $ mean / p50 / p95 | waste calls mean / p95 | waste min mean / p95 | loops never stopped | healthy runs | false stops | saved $ / loop run | Pareto |"
    );
    let _ = writeln!(
        o,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for a in aggs {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:.2} / {:.2} / {:.2} | {:.1} / {:.0} | {:.1} / {:.1} | {:.0}% | {} | {:.0}% | {:.2} | {} |",
            if a.setting.is_empty() {
                "(baseline)"
            } else {
                &a.setting
            },
            a.profile,
            a.loop_runs,
            a.waste_usd_mean,
            a.waste_usd_p50,
            a.waste_usd_p95,
            a.waste_calls_mean,
            a.waste_calls_p95,
            a.waste_min_mean,
            a.waste_min_p95,
            a.never_stopped * 100.0,
            a.healthy_runs,
            a.false_stop_rate * 100.0,
            a.saved_usd_mean,
            if a.pareto { "yes" } else { "" }
        );
    }
    if let Some((best, why)) = recommend(aggs) {
        let _ = writeln!(
            o,
            "\n**Recommended:** `{}` ({}): {why}.",
            if best.setting.is_empty() {
                "(baseline)"
            } else {
                &best.setting
            },
            best.profile
        );
    }
    for p in plots.iter().filter(|p| p.ends_with(".png")) {
        let _ = writeln!(o, "\n![{p}]({p})");
    }
    o
}
