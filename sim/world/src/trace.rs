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
}

impl TraceWriter {
    /// A trace that is only hashed.
    pub fn hash_only() -> Self {
        TraceWriter {
            hasher: Sha256::new(),
            out: None,
            lines: 0,
            error: None,
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

    /// Flushes; reports the first write error.
    pub fn finish(mut self) -> std::io::Result<String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(out) = &mut self.out {
            out.flush()?;
        }
        Ok(self.hash_so_far())
    }
}
