//! `loopsim init`: a commented scenario to start from.

use std::path::Path;

use anyhow::{Result, bail};
use loopsim_report::output::Outputs;

use crate::out::say;

/// The scenario `init` writes (it loads and its expectations hold: tested).
pub const TEMPLATE: &str = include_str!("../init-scenario.toml");

pub fn run(path: &Path, force: bool) -> Result<()> {
    if path.exists() && !force {
        bail!(
            "{}: already exists (give --force to replace it)",
            path.display()
        );
    }
    let mut out = Outputs::new();
    out.write(path, TEMPLATE.as_bytes())
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", path.display()))?;
    out.commit()
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", path.display()))?;
    say!(
        "wrote {}: edit it, then `loopsim validate {0}` and `loopsim run {0}`",
        path.display()
    );
    Ok(())
}
