//! Traces: JSON lines. Line 1 is a header (format, versions, scenario and its hash, seed,
//! profile, config hash), then one event per line in virtual-time order, then a footer with
//! the summary and the SHA-256 of every byte above it.
//!
//! The writer hashes as it goes and keeps nothing unless asked, so a sweep that does not keep
//! traces still gets each run's trace hash in constant memory.

use std::io::Write;

use serde::Serialize;
use sha2::{Digest, Sha256};

mod event;
pub use event::{Event, EventKind};

pub const FORMAT: &str = "loopsim-trace";
/// Version 2 embeds the scenario (and any config file) in the header, so a trace replays
/// anywhere; version 1 traces name the scenario by path.
pub const VERSION: u32 = 2;

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    pub loopsim: String,
    pub scenario: String,
    pub scenario_path: String,
    pub scenario_hash: String,
    pub seed: u64,
    pub profile: String,
    pub platform: Option<String>,
    pub config_hash: String,
    pub schedule: String,
    /// `recorded` when the guardrail decisions were a recorded session's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The user's config.yaml laid over the scenario's `[config]`: its name and text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_text: Option<String>,
    /// The scenario file's text (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_text: Option<String>,
    /// `seeded` when the seed also drew provider faults (`--seeded-faults`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<String>,
}

/// Writes trace lines, hashing them, optionally into a writer.
pub struct TraceWriter {
    hasher: Sha256,
    out: Option<Box<dyn Write>>,
    lines: u64,
    error: Option<std::io::Error>,
    enabled: bool,
}

impl TraceWriter {
    /// No trace at all, not even its hash: the cheapest run (sweeps that keep only
    /// summaries). The summary's `trace_hash` is empty.
    pub fn off() -> Self {
        TraceWriter {
            enabled: false,
            ..Self::hash_only()
        }
    }

    /// Whether events are recorded (callers skip building them otherwise).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// A trace that is only hashed.
    pub fn hash_only() -> Self {
        TraceWriter {
            hasher: Sha256::new(),
            out: None,
            lines: 0,
            error: None,
            enabled: true,
        }
    }

    /// A trace written to `out` as well.
    pub fn to_writer(out: Box<dyn Write>) -> Self {
        TraceWriter {
            out: Some(out),
            ..Self::hash_only()
        }
    }

    pub fn line<T: Serialize>(&mut self, value: &T) {
        if !self.enabled {
            return;
        }
        let mut bytes = serde_json::to_vec(value).expect("trace values serialise");
        bytes.push(b'\n');
        self.hasher.update(&bytes);
        self.lines += 1;
        if let Some(out) = &mut self.out
            && self.error.is_none()
            && let Err(e) = out.write_all(&bytes)
        {
            self.error = Some(e);
        }
    }

    /// The hash of everything written so far.
    pub fn hash_so_far(&self) -> String {
        let h: [u8; 32] = self.hasher.clone().finalize().into();
        loopsim_engine::hash::Hash(h).hex()
    }

    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Flushes; reports the first write error. Returns the trace's hash (empty when off).
    pub fn finish(mut self) -> std::io::Result<String> {
        if !self.enabled {
            return Ok(String::new());
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(out) = &mut self.out {
            out.flush()?;
        }
        Ok(self.hash_so_far())
    }
}

/// An in-memory trace destination that can be read back after the run.
#[derive(Clone, Default)]
pub struct SharedBuf(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl SharedBuf {
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().expect("trace buffer").clone()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("trace buffer").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A trace file that cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", if *line == 0 { format!("{file}: {message}") } else { format!("{file}:{line}: {message}") })]
pub struct TraceError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// Larger traces are refused: a run is capped at 1,000,000 events, far below this.
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

/// Reads a trace file whole, refusing one larger than [`MAX_TRACE_BYTES`].
pub fn read_file(path: &std::path::Path) -> Result<Vec<u8>, TraceError> {
    let file = path.display().to_string();
    let err = |message: String| TraceError {
        file: file.clone(),
        line: 0,
        message,
    };
    crate::input::read_bounded(path, MAX_TRACE_BYTES, "traces").map_err(|e| err(e.to_string()))
}

/// Reads and checks a trace's header line.
pub fn read_header(bytes: &[u8], file: &str) -> Result<Header, TraceError> {
    let err = |message: String| TraceError {
        file: file.to_string(),
        line: 1,
        message,
    };
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let h: Header = serde_json::from_slice(first)
        .map_err(|e| err(format!("not a loopsim trace header: {e}")))?;
    if h.format != FORMAT {
        return Err(err(format!(
            "format is `{}`, expected `{FORMAT}`",
            h.format
        )));
    }
    if h.version != VERSION && h.version != 1 {
        return Err(err(format!(
            "trace format version {} is not supported (this loopsim reads 1 and {VERSION})",
            h.version
        )));
    }
    if h.version >= 2 && h.scenario_text.is_none() {
        return Err(err("the header has no scenario_text".into()));
    }
    if let Err(e) = h.profile.parse::<loopsim_engine::profile::ProfileName>() {
        return Err(err(format!("profile: {e}")));
    }
    let live = h.engine.as_deref().is_some_and(|e| e.starts_with("live:"));
    if live != (h.schedule == "live") {
        return Err(err(format!(
            "schedule: `{}` with engine `{}`: a live run's trace has schedule `live` and engine `live:RUNTIME`, and only it",
            h.schedule,
            h.engine.as_deref().unwrap_or("builtin")
        )));
    }
    if !matches!(h.schedule.as_str(), "fifo" | "shuffle" | "live") {
        return Err(err(format!(
            "schedule: `{}` is not fifo or shuffle",
            h.schedule
        )));
    }
    Ok(h)
}

/// Checks that a trace is whole and unedited: every line complete, an end line last, and the
/// end line's hash equal to the SHA-256 of every byte above it. Returns the header.
pub fn verify(bytes: &[u8], file: &str) -> Result<Header, TraceError> {
    let at = |line: usize, message: String| TraceError {
        file: file.to_string(),
        line,
        message,
    };
    if bytes.is_empty() {
        return Err(at(1, "empty file".into()));
    }
    let lines = bytes.iter().filter(|&&b| b == b'\n').count();
    if bytes.last() != Some(&b'\n') {
        return Err(at(
            lines + 1,
            format!(
                "truncated at line {}: the last line is incomplete",
                lines + 1
            ),
        ));
    }
    let header = read_header(bytes, file)?;
    let body = &bytes[..bytes.len() - 1];
    let last_start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    #[derive(serde::Deserialize)]
    struct End {
        kind: String,
        hash_above: String,
    }
    let end: Option<End> = serde_json::from_slice(&body[last_start..]).ok();
    let Some(end) = end.filter(|e| e.kind == "end") else {
        return Err(at(
            lines,
            format!("truncated at line {lines}: the trace has no end line"),
        ));
    };
    let h: [u8; 32] = Sha256::digest(&bytes[..last_start]).into();
    if loopsim_engine::hash::Hash(h).hex() != end.hash_above {
        return Err(at(
            lines,
            "hash mismatch: the lines above the end line are not the ones written (the trace was edited)".into(),
        ));
    }
    Ok(header)
}

/// The scenario a trace carries (version 2), parsed under the path it was run from so a
/// replay writes the same header, and checked against the hash the header recorded.
pub fn carried_scenario(
    h: &Header,
    file: &str,
) -> Result<Option<crate::scenario::Scenario>, TraceError> {
    let Some(text) = &h.scenario_text else {
        return Ok(None);
    };
    let err = |message: String| TraceError {
        file: file.to_string(),
        line: 1,
        message,
    };
    let sc = crate::scenario::Scenario::parse(text, &h.scenario_path)
        .map_err(|e| err(format!("the scenario it carries: {e}")))?;
    if sc.content_hash.hex() != h.scenario_hash {
        return Err(err(
            "scenario_hash: the scenario it carries is not the one it recorded (the header was edited)"
                .into(),
        ));
    }
    Ok(Some(sc))
}

/// The first line where two traces differ: (1-based line, recorded, new).
pub fn first_difference(recorded: &[u8], new: &[u8]) -> Option<(usize, String, String)> {
    let a: Vec<&[u8]> = recorded.split(|&b| b == b'\n').collect();
    let b: Vec<&[u8]> = new.split(|&b| b == b'\n').collect();
    (0..a.len().max(b.len()))
        .find(|&i| a.get(i) != b.get(i))
        .map(|i| {
            let show = |l: Option<&&[u8]>| {
                l.map_or("<end of trace>".to_string(), |l| {
                    String::from_utf8_lossy(l).into_owned()
                })
            };
            (i + 1, show(a.get(i)), show(b.get(i)))
        })
}
