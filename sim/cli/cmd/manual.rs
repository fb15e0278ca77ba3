//! `loopsim completions` and `loopsim man`: generated from the command-line definitions.

use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;
use loopsim_report::output::Outputs;

use crate::args::Cli;
use crate::out::say;

pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "loopsim", &mut buf);
    crate::out::data(format_args!("{}", String::from_utf8_lossy(&buf)))
}

pub fn man(dir: &Path) -> Result<()> {
    let cmd = Cli::command();
    let mut out = Outputs::new();
    let mut pages = Vec::new();
    let mut render = |name: String, c: clap::Command| -> Result<()> {
        let mut buf = Vec::new();
        clap_mangen::Man::new(c).render(&mut buf)?;
        let file = dir.join(format!("{name}.1"));
        out.write(&file, &buf)
            .with_context(|| format!("{}: cannot write", file.display()))?;
        pages.push(file);
        Ok(())
    };
    render("loopsim".into(), cmd.clone())?;
    for sub in cmd.get_subcommands() {
        let name = format!("loopsim-{}", sub.get_name());
        render(name.clone(), sub.clone().name(name))?;
    }
    out.commit()
        .with_context(|| format!("{}: cannot write", dir.display()))?;
    say!("wrote {} manual pages to {}", pages.len(), dir.display());
    Ok(())
}
