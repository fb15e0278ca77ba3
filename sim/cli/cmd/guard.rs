//! `loopsim guard`: the guardrail controller over JSON lines (docs/guard-protocol.md).

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};
use loopsim_engine::config::EngineConfig;
use loopsim_engine::guard::{GuardSession, Line};
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
const MAX_LINE: usize = 64 << 20;

fn io(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        BrokenPipe.into()
    } else {
        anyhow::Error::new(e).context("writing stdout")
    }
}

/// Lines read in large chunks and handed out in place: no copy per line, and at most
/// [`MAX_LINE`] bytes (plus a chunk) held, so a stream without newlines cannot fill memory.
/// Each chunk's whole lines are checked to be UTF-8 at once and handed out as text; where
/// that check fails, or for a last line without its newline, lines go out as bytes and the
/// session checks each (and names the bad one).
struct Lines<R> {
    input: R,
    data: Vec<u8>,
    start: usize,
    end: usize,
    /// `data[..checked]` ends with a newline and is UTF-8 from `start` on.
    checked: usize,
    eof: bool,
}

impl<R: Read> Lines<R> {
    const CHUNK: usize = 1 << 18;

    fn new(input: R) -> Self {
        Lines {
            input,
            data: vec![0; Self::CHUNK],
            start: 0,
            end: 0,
            checked: 0,
            eof: false,
        }
    }

    /// The next line without its newline; `Ok(None)` at the end; an error for a line longer
    /// than [`MAX_LINE`] (`n` is its number). `idle` runs before every read that may wait:
    /// a client that sends one request and waits for its answer gets it then.
    fn next(&mut self, n: usize, idle: &mut dyn FnMut() -> Result<()>) -> Result<Option<Line<'_>>> {
        loop {
            let pending = &self.data[self.start..self.end];
            if let Some(at) = memchr::memchr(b'\n', pending) {
                let line = self.start..self.start + at;
                self.start += at + 1;
                return Ok(Some(if self.start <= self.checked {
                    // SAFETY: `data[line.start..checked]` was found to be UTF-8 in one piece
                    // (`check_whole_lines`), and a line ends before a newline, which no
                    // multi-byte sequence contains: the line is UTF-8 too.
                    Line::Text(unsafe { std::str::from_utf8_unchecked(&self.data[line]) })
                } else {
                    Line::Bytes(&self.data[line])
                }));
            }
            if pending.len() > MAX_LINE {
                bail!("stdin: line {n}: longer than {} MiB", MAX_LINE >> 20);
            }
            if self.eof {
                if pending.is_empty() {
                    return Ok(None);
                }
                let line = self.start..self.end;
                self.start = self.end;
                return Ok(Some(Line::Bytes(&self.data[line])));
            }
            // No whole line is left: whatever was checked has been handed out.
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            self.checked = 0;
            if self.data.len() - self.end < Self::CHUNK / 2 {
                let len = (self.data.len() * 2).min(MAX_LINE + Self::CHUNK + 1);
                self.data.resize(len.max(self.end + Self::CHUNK / 2), 0);
            }
            idle()?;
            let read = loop {
                match self.input.read(&mut self.data[self.end..]) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    r => break r.context("reading stdin")?,
                }
            };
            self.end += read;
            self.eof = read == 0;
            self.check_whole_lines();
        }
    }

    /// Checks the whole lines not yet checked in one pass.
    fn check_whole_lines(&mut self) {
        let from = self.checked.max(self.start);
        if let Some(last) = memchr::memrchr(b'\n', &self.data[from..self.end]) {
            let to = from + last + 1;
            if std::str::from_utf8(&self.data[from..to]).is_ok() {
                self.checked = to;
            }
        }
    }
}

/// Writes out the answers held in `buf` (emptied even when the write fails, so nothing is
/// written twice) and flushes.
fn drain(out: &mut impl Write, buf: &mut Vec<u8>) -> Result<()> {
    let written = out.write_all(buf);
    buf.clear();
    written.map_err(io)?;
    out.flush().map_err(io)
}

pub fn run(profile: ProfileName, config: Option<&Path>, platform: Option<&str>) -> Result<()> {
    let cfg = load_config(profile, config, platform)?;
    let mut session = GuardSession::new(&cfg);
    let mut lines = Lines::new(std::io::stdin().lock());
    let mut out = std::io::stdout().lock();
    let mut buf = Vec::with_capacity(1 << 17);
    for n in 1.. {
        // Answers go out in blocks of 64 KiB, and whenever the input has nothing more to
        // read yet, so a stream is fast and a coprocess is never left waiting.
        let line = match lines.next(n, &mut || drain(&mut out, &mut buf)) {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                drain(&mut out, &mut buf)?;
                return Err(e);
            }
        };
        let handled = session.handle(line, &mut buf);
        if let Err(e) = handled {
            drain(&mut out, &mut buf)?;
            return Err(anyhow::Error::new(e).context("stdin"));
        }
        if buf.len() >= 1 << 16 {
            let written = out.write_all(&buf);
            buf.clear();
            written.map_err(io)?;
        }
    }
    drain(&mut out, &mut buf)
}
