//! `loopsim guard`: the guardrail controller over JSON lines (docs/guard-protocol.md).

use std::io::{BufRead, BufWriter, Read, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};
use loopsim_engine::config::EngineConfig;
use loopsim_engine::guard::GuardSession;
use loopsim_engine::profile::ProfileName;

use crate::inputs;
use crate::out::{BrokenPipe, warn};

fn load_config(
    profile: ProfileName,
    config: Option<&Path>,
    platform: Option<&str>,
) -> Result<EngineConfig> {
    inputs::check_platform(platform)?;
    let Some(user) = inputs::user_config(config)? else {
        return Ok(EngineConfig::new(profile, platform));
    };
    let (cfg, warnings) = user.diagnostics(profile, platform)?;
    for w in warnings {
        warn(w);
    }
    Ok(cfg)
}

/// The longest request line `guard` reads.
const MAX_LINE: u64 = 64 << 20;

fn io(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        BrokenPipe.into()
    } else {
        anyhow::Error::new(e).context("writing stdout")
    }
}

pub fn run(profile: ProfileName, config: Option<&Path>, platform: Option<&str>) -> Result<()> {
    let cfg = load_config(profile, config, platform)?;
    let mut session = GuardSession::new(&cfg);
    let mut stdin = std::io::stdin().lock();
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut buf = Vec::with_capacity(256);
    let mut line = Vec::with_capacity(256);
    for n in 1.. {
        line.clear();
        // One line at most MAX_LINE bytes: a stream without newlines cannot fill memory.
        let read = (&mut stdin)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)
            .context("reading stdin")?;
        if read == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        } else if line.len() as u64 > MAX_LINE {
            out.flush().map_err(io)?;
            bail!("stdin: line {n}: longer than {} MiB", MAX_LINE >> 20);
        }
        buf.clear();
        let handled = session.handle_line(&line, &mut buf);
        out.write_all(&buf).map_err(io)?;
        if let Err(e) = handled {
            out.flush().map_err(io)?;
            return Err(anyhow::Error::new(e).context("stdin"));
        }
    }
    out.flush().map_err(io)?;
    Ok(())
}
