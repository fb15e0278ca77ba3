//! Traces: JSON lines. Line 1 is a header (format, versions, scenario and its hash, seed,
//! profile, config hash), then one event per line in virtual-time order, then a footer with
//! the summary and the SHA-256 of every byte above it.
//!
//! The writer hashes as it goes and keeps nothing unless asked, so a sweep that does not keep
//! traces still gets each run's trace hash in constant memory.

use std::io::Write;

use serde::Serialize;
use sha2::{Digest, Sha256};

pub const FORMAT: &str = "loopsim-trace";
pub const VERSION: u32 = 1;

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
}

/// One thing that happened. Fields not relevant to a kind are left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Event {
    pub t_us: u64,
    pub agent: String,
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_used: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
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
#[error("{file}:{line}: {message}")]
pub struct TraceError {
    pub file: String,
    pub line: usize,
    pub message: String,
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
    if h.version != VERSION {
        return Err(err(format!(
            "trace format version {} is not supported (this loopsim reads {VERSION})",
            h.version
        )));
    }
    Ok(h)
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
