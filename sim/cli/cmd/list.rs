//! `loopsim list`: the scenarios, one line each.

use std::path::Path;

use anyhow::Result;

use crate::args::Format;
use crate::inputs;
use crate::out::{emit, say};

pub fn run(dir: Option<&Path>, format: Format) -> Result<()> {
    let scenarios = inputs::suite(dir)?;
    let first_sentence = |d: &str| {
        let text = d.split_whitespace().collect::<Vec<_>>().join(" ");
        text.split_inclusive(". ")
            .next()
            .unwrap_or("")
            .trim_end()
            .to_string()
    };
    if format == Format::Json {
        let rows: Vec<serde_json::Value> = scenarios
            .iter()
            .map(|sc| {
                serde_json::json!({
                    "name": sc.file.name,
                    "label": sc.file.label,
                    "profile": sc.profile.as_str(),
                    "platform": sc.file.platform,
                    "path": sc.path,
                    "summary": first_sentence(&sc.file.description),
                })
            })
            .collect();
        emit!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    for sc in &scenarios {
        say!(
            "{:<40} {:<8} {:<16} {}",
            sc.file.name,
            sc.file.label.to_string(),
            sc.profile.to_string(),
            first_sentence(&sc.file.description)
        );
    }
    Ok(())
}
