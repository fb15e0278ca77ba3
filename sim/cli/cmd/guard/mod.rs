//! `loopsim guard`: the guardrail controller over JSON lines (docs/guard-protocol.md).
//!
//! Three threads in a pipeline: one reads stdin in chunks of whole lines and checks each to be
//! UTF-8 ([`chunks`]), this one answers, and one writes the answers ([`answers`]). Where a
//! second core is free, reading and writing cost the answering thread little more than the
//! hand-overs.

mod answers;
mod chunks;

use std::path::Path;

use anyhow::{Result, bail};
use loopsim_engine::config::EngineConfig;
use loopsim_engine::guard_protocol::GuardSession;
use loopsim_engine::profile::ProfileName;

use crate::inputs;
use crate::out::warn;
use answers::Answers;
use chunks::{Chunks, Msg};

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

pub fn run(profile: ProfileName, config: Option<&Path>, platform: Option<&str>) -> Result<()> {
    let cfg = load_config(profile, config, platform)?;
    let mut session = GuardSession::new(&cfg);
    let chunks = Chunks::spawn(std::io::stdin())?;
    let mut answers = Answers::spawn()?;
    let mut buf = answers.block();
    let answered = answer_all(&mut session, &chunks, &mut answers, &mut buf);
    // The answers given go out whole, also before a bad line (a write error comes first).
    answers.finish(buf)?;
    answered
}

/// Answers every line the reader hands over, until the input ends or a line is refused.
fn answer_all(
    session: &mut GuardSession,
    chunks: &Chunks,
    answers: &mut Answers,
    buf: &mut Vec<u8>,
) -> Result<()> {
    let mut lines = 0usize;
    loop {
        // Answers go out in blocks, and whenever the input has nothing more to read yet, so
        // a stream is fast and a coprocess is never left waiting.
        let msg = match chunks.ready() {
            Some(msg) => msg,
            None => {
                answers.flush(buf)?;
                chunks.wait()
            }
        };
        match msg {
            Msg::Lines(chunk) => {
                for line in chunk.lines() {
                    lines += 1;
                    session
                        .handle(line, buf)
                        .map_err(|e| anyhow::Error::new(e).context("stdin"))?;
                    if buf.len() >= answers::BLOCK {
                        answers.send(buf)?;
                    }
                }
                chunks.recycle(chunk);
            }
            Msg::TooLong => bail!(
                "stdin: line {}: longer than {} MiB",
                lines + 1,
                chunks::MAX_LINE >> 20
            ),
            Msg::Failed(e) => return Err(anyhow::Error::new(e).context("reading stdin")),
            Msg::End => return Ok(()),
        }
    }
}
