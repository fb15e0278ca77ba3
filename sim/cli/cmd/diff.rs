//! `loopsim diff`: one scenario under two engines, trace against trace.

use std::path::Path;

use anyhow::{Result, bail};

use crate::args::{EngineArgs, EngineName, Format};
use crate::inputs;
use crate::out::{CheckFailed, emit, say};
use crate::run_to_memory;
use loopsim_world::trace;

pub fn run(
    path: &Path,
    engines: &[EngineName],
    args: &EngineArgs,
    seed: Option<u64>,
    format: Format,
) -> Result<()> {
    let names: Vec<EngineName> = if engines.is_empty() {
        vec![EngineName::Builtin, EngineName::HermesPython(None)]
    } else {
        engines.to_vec()
    };
    if names.len() != 2 {
        bail!("diff compares two engines: give --engine twice (or neither)");
    }
    let sc = inputs::scenario(path)?;
    inputs::check_platform(args.platform.as_deref())?;
    let base = inputs::run_options(args)?;
    let profile = args.profile.unwrap_or(sc.profile);
    inputs::config_warnings(
        &[(&sc, profile)],
        args.platform.as_deref(),
        base.config.as_deref(),
    )?;
    let mut traces = Vec::new();
    for n in &names {
        let choice = inputs::engine_choice(n)?;
        inputs::check_engine_profile(&choice, profile)?;
        let mut opts = base.clone();
        opts.seed = seed;
        opts.engine = choice;
        traces.push(run_to_memory(&sc, &opts)?);
    }
    let lines = traces[0].1.iter().filter(|&&b| b == b'\n').count();
    let difference = trace::first_difference(&traces[0].1, &traces[1].1);
    if format == Format::Json {
        emit!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "scenario": sc.file.name,
                "seed": traces[0].0.seed,
                "engines": names.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "identical": difference.is_none(),
                "lines": lines,
                "first_difference": difference.as_ref().map(|(line, a, b)| serde_json::json!({
                    "line": line, "a": a, "b": b,
                })),
            }))?
        );
    }
    match difference {
        None => {
            let calls = traces[0]
                .1
                .split(|&b| b == b'\n')
                .filter(|l| l.windows(11).any(|w| w == b"\"tool_call\""))
                .count();
            if format == Format::Text {
                say!(
                    "identical: {} and {} give the same {lines} trace lines ({}, seed {}, {calls} tool calls through both engines)",
                    names[0],
                    names[1],
                    sc.file.name,
                    traces[0].0.seed,
                );
            }
            Ok(())
        }
        Some((line, a, b)) => Err(CheckFailed(format!(
            "engines diverge at trace line {line}\n  {}: {a}\n  {}: {b}",
            names[0], names[1]
        ))
        .into()),
    }
}
