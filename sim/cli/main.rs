//! The `loopsim` command: argument parsing and wiring only.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use loopsim_engine::config::EngineConfig;
use loopsim_engine::guard::GuardSession;
use loopsim_engine::profile::ProfileName;

/// Deterministic simulation and benchmarking of LLM agent-loop governance.
#[derive(Parser)]
#[command(name = "loopsim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the guardrail controller over JSON lines on stdin (docs/guard-protocol.md).
    Guard {
        /// Engine profile: article-2026-06, hermes-0.19.0, hermes-v0.21.5, hermes-main.
        #[arg(long, default_value = "hermes-main")]
        profile: ProfileName,
        /// A Hermes config.yaml (its agent, tool_loop_guardrails and delegation sections).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The platform the agent runs on (cli, telegram, cron, ...): unattended ones hard-stop.
        #[arg(long)]
        platform: Option<String>,
    },
}

/// Exit code for bad input or usage.
const BAD_INPUT: u8 = 2;

fn load_config(
    profile: ProfileName,
    config: Option<&PathBuf>,
    platform: Option<&str>,
) -> Result<EngineConfig> {
    let Some(path) = config else {
        return Ok(EngineConfig::new(profile, platform));
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read the config file", path.display()))?;
    let cfg = EngineConfig::from_yaml(profile, platform, &text, &path.display().to_string())?;
    for note in &cfg.notes {
        eprintln!(
            "loopsim: {}:{}: `{}`: {} (Hermes does the same)",
            path.display(),
            note.line,
            note.key,
            note.message
        );
    }
    Ok(cfg)
}

fn guard(profile: ProfileName, config: Option<&PathBuf>, platform: Option<&str>) -> Result<()> {
    let cfg = load_config(profile, config, platform)?;
    let mut session = GuardSession::new(&cfg);
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut buf = Vec::with_capacity(256);
    for line in stdin.split(b'\n') {
        let line = line.context("reading stdin")?;
        buf.clear();
        let handled = session.handle_line(&line, &mut buf);
        out.write_all(&buf)?;
        if let Err(e) = handled {
            out.flush()?;
            return Err(anyhow::Error::new(e).context("stdin"));
        }
    }
    out.flush()?;
    Ok(())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { BAD_INPUT } else { 0 });
        }
    };
    let result = match &cli.command {
        Command::Guard {
            profile,
            config,
            platform,
        } => guard(*profile, config.as_ref(), platform.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loopsim: error: {e:#}");
            ExitCode::from(BAD_INPUT)
        }
    }
}
