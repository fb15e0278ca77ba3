//! `loopsim validate`: load and check inputs without running anything.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use loopsim_engine::profile::ProfileName;
use loopsim_world::scenario::Scenario;
use loopsim_world::trace;
use loopsim_world::user_config::{Diagnostic, UserConfig};

use crate::args::Format;
use crate::inputs;
use crate::out::{emit, say};

/// What one file turned out to be.
#[derive(serde::Serialize)]
struct Checked {
    file: String,
    kind: &'static str,
    /// What it holds, when it is valid.
    about: Option<String>,
    error: Option<String>,
    warnings: Vec<String>,
}

fn scenario(path: &Path) -> Checked {
    let file = path.display().to_string();
    match Scenario::load(path) {
        Ok(sc) => Checked {
            file,
            kind: "scenario",
            about: Some(format!(
                "scenario `{}` ({}, {})",
                sc.file.name, sc.file.label, sc.profile
            )),
            error: None,
            warnings: sc.warnings.iter().map(|w| w.to_string()).collect(),
        },
        Err(e) => Checked {
            file,
            kind: "scenario",
            about: None,
            error: Some(e.to_string()),
            warnings: vec![],
        },
    }
}

fn config(path: &Path, profile: Option<ProfileName>) -> Checked {
    let file = path.display().to_string();
    // A config.yaml is Hermes's unless --profile names another runtime's profile.
    let profiles: Vec<ProfileName> = profile.map_or_else(
        || {
            ProfileName::ALL
                .into_iter()
                .filter(|p| p.runtime() == loopsim_engine::profile::Runtime::Hermes)
                .collect()
        },
        |p| vec![p],
    );
    let checked = UserConfig::load(path)
        .map_err(|e| e.to_string())
        .and_then(|u| {
            let mut all: Vec<(Diagnostic, ProfileName)> = Vec::new();
            for p in &profiles {
                let (_, warnings) = u.diagnostics(*p, None).map_err(|e| e.to_string())?;
                all.extend(warnings.into_iter().map(|w| (w, *p)));
            }
            // In file order; a warning every profile gives is listed once, others name theirs.
            all.sort();
            let mut lines: Vec<String> = Vec::new();
            for (w, _) in &all {
                let under: Vec<&str> = all
                    .iter()
                    .filter(|(x, _)| x == w)
                    .map(|(_, q)| q.as_str())
                    .collect();
                let line = if under.len() == profiles.len() {
                    w.to_string()
                } else {
                    format!("{w} (under {})", under.join(", "))
                };
                if !lines.contains(&line) {
                    lines.push(line);
                }
            }
            Ok(lines)
        });
    match checked {
        Ok(warnings) => Checked {
            file,
            kind: "config",
            about: Some(format!(
                "Hermes config, checked under {}",
                profiles
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            error: None,
            warnings,
        },
        Err(e) => Checked {
            file,
            kind: "config",
            about: None,
            error: Some(e),
            warnings: vec![],
        },
    }
}

fn trace_file(path: &Path) -> Checked {
    let file = path.display().to_string();
    let checked = trace::read_file(path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| {
            let h = trace::verify(&bytes, &file).map_err(|e| e.to_string())?;
            trace::carried_scenario(&h, &file).map_err(|e| e.to_string())?;
            let lines = bytes.iter().filter(|&&b| b == b'\n').count();
            Ok(format!(
                "trace of `{}` seed {} under {}, {lines} lines, whole and unedited",
                h.scenario, h.seed, h.profile
            ))
        });
    match checked {
        Ok(about) => Checked {
            file,
            kind: "trace",
            about: Some(about),
            error: None,
            warnings: vec![],
        },
        Err(e) => Checked {
            file,
            kind: "trace",
            about: None,
            error: Some(e),
            warnings: vec![],
        },
    }
}

pub fn run(files: &[PathBuf], profile: Option<ProfileName>, format: Format) -> Result<()> {
    let mut all: Vec<PathBuf> = Vec::new();
    for f in files {
        if f.is_dir() {
            all.extend(inputs::scenario_paths(f)?);
        } else {
            all.push(f.clone());
        }
    }
    let results: Vec<Checked> = all
        .iter()
        .map(|p| match p.extension().and_then(|e| e.to_str()) {
            Some("toml") => scenario(p),
            Some("yaml" | "yml") => config(p, profile),
            Some("jsonl") => trace_file(p),
            _ => Checked {
                file: p.display().to_string(),
                kind: "unknown",
                about: None,
                error: Some(format!(
                    "{}: not a .toml scenario, a .yaml config or a .jsonl trace",
                    p.display()
                )),
                warnings: vec![],
            },
        })
        .collect();
    match format {
        Format::Json => emit!("{}", serde_json::to_string_pretty(&results)?),
        Format::Text => {
            for r in &results {
                match (&r.about, &r.error) {
                    (_, Some(e)) => say!("invalid {}", e),
                    (Some(a), None) => say!("ok {}: {a}", r.file),
                    (None, None) => {}
                }
                for w in &r.warnings {
                    say!("  warning: {w}");
                }
            }
        }
    }
    let bad = results.iter().filter(|r| r.error.is_some()).count();
    if bad > 0 {
        bail!("{bad} of {} files are invalid", results.len());
    }
    Ok(())
}
