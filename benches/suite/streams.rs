//! The guard process on several request streams, each against Hermes 0.19.0's driver on the
//! same stream and against the floor measured in the same run: reading the stream's bytes and
//! SHA-256 of every call's canonical argument bytes and result bytes (what any controller must
//! do at least). Streams (200,000 lines each, written once to `target/loopsim-bench/`):
//!
//! - `conformance`: `tests/conformance/gen_sequences.py --seed 7` (odd arguments and results:
//!   unicode, floats, big integers, non-object arguments, failure-looking results);
//! - `engine-sequence`: the engine benches' calls (`seq.rs`: 77 B of arguments, 1,225 B of
//!   result on average), repeated;
//! - `short-results`: the same calls with results of under 40 bytes;
//! - `imported-sessions`: real Hermes sessions written through Hermes's own session store and
//!   read back by the importer (`session_stream.rs`).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use loopsim_engine::json;
use sha2::{Digest, Sha256};

use crate::process::{self, LINES, loopsim_bin, run_once};
use crate::seq::Sequence;
use crate::support::{Ctx, Ratios, median, root};

/// A stream: its name, what it is, and where it is written.
pub struct Stream {
    pub name: &'static str,
    pub what: &'static str,
    pub path: PathBuf,
}

pub fn streams(ctx: &Ctx, seq: &Sequence) -> Result<Vec<Stream>, String> {
    let conformance = process::ensure_stream(ctx)?;
    let engine = ctx
        .out_dir
        .join(format!("guard-engine-sequence-{LINES}.jsonl"));
    let short = ctx
        .out_dir
        .join(format!("guard-short-results-{LINES}.jsonl"));
    for (path, short_results) in [(&engine, false), (&short, true)] {
        if !path.exists() {
            write_stream(seq, path, short_results)
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(vec![
        Stream {
            name: "conformance",
            what: "the conformance generator's (odd arguments and results)",
            path: conformance,
        },
        Stream {
            name: "engine-sequence",
            what: "the engine benches' calls (1,225 B results)",
            path: engine,
        },
        Stream {
            name: "short-results",
            what: "the same calls with results under 40 B",
            path: short,
        },
        Stream {
            name: "imported-sessions",
            what: "real Hermes sessions read back by the importer",
            path: crate::session_stream::ensure_session_stream(ctx, LINES)?,
        },
    ])
}

/// The sequence as guard requests, repeated to exactly [`LINES`] lines.
fn write_stream(seq: &Sequence, path: &Path, short_results: bool) -> std::io::Result<()> {
    let out = seq.guard_lines(short_results, LINES as usize);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, out)?;
    std::fs::rename(tmp, path)
}

/// The bytes the floor hashes: each `after` line's canonical arguments and its result.
fn floor_inputs(path: &Path) -> Result<Vec<Vec<u8>>, String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v = json::parse_strict(line).map_err(|e| format!("{}: {e}", path.display()))?;
        if v.get("op").and_then(|o| o.as_str_bytes()) != Some(b"after") {
            continue;
        }
        let args = v.get("args").map(json::canonical).unwrap_or_default();
        out.push(args);
        if let Some(r) = v.get("result").and_then(|r| r.as_str_bytes()) {
            out.push(r.to_vec());
        }
    }
    Ok(out)
}

/// The floor's time: read the stream, hash the bytes; best of `runs`.
fn floor(path: &Path, inputs: &[Vec<u8>], runs: usize) -> Result<Duration, String> {
    let mut best = Duration::MAX;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        black_box(&bytes);
        for b in inputs {
            black_box(Sha256::digest(black_box(b)));
        }
        best = best.min(start.elapsed());
    }
    Ok(best)
}

/// Hermes's controller in-process on a stream: ns per request (`benches/python_guard_stream.py`).
fn python_in_process(py: &Path, stream: &Path, reps: usize) -> Result<f64, String> {
    let out = Command::new(py)
        .arg(root().join("benches/python_guard_stream.py"))
        .arg(stream)
        .args(["--reps", &reps.max(1).to_string()])
        .output()
        .map_err(|e| format!("{}: {e}", py.display()))?;
    if !out.status.success() {
        return Err(format!(
            "python_guard_stream.py failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse::<f64>()
        .map_err(|e| format!("python_guard_stream.py printed no number: {e}"))
}

/// One row per stream: loopsim's whole process per request, Hermes's controller in-process
/// per request, and the floor per request (best of two passes each), measured back to back
/// in each of `rounds` rounds
/// (the ratios are taken within a round, then their median and range reported: this
/// machine's speed drifts between rounds by more than the effects). The driver's answers on
/// the same stream must be loopsim's, byte for byte.
pub fn rows(ctx: &Ctx, seq: &Sequence, rounds: usize) -> Result<Vec<String>, String> {
    let py = ctx
        .python
        .as_ref()
        .ok_or_else(|| ctx.python_missing.clone())?;
    let bin = loopsim_bin();
    let lines = LINES as f64;
    let mut rows = Vec::new();
    for s in streams(ctx, seq)? {
        let ours_out = ctx.out_dir.join(format!("{}.loopsim.out", s.name));
        let theirs_out = ctx.out_dir.join(format!("{}.hermes.out", s.name));
        let mut cmd = Command::new(py);
        cmd.arg(root().join("tests/conformance/hermes_driver.py"));
        run_once(&mut cmd, &s.path, &theirs_out)?;
        let inputs = floor_inputs(&s.path)?;
        let (mut ours, mut python, mut floors) = (vec![], vec![], vec![]);
        for _ in 0..rounds.max(1) {
            // Best of two each: the first pass of a process meets a cold cache.
            let mut best = Duration::MAX;
            for _ in 0..2 {
                let mut cmd = Command::new(&bin);
                cmd.args(["guard", "--profile", "hermes-0.19.0"]);
                best = best.min(run_once(&mut cmd, &s.path, &ours_out)?);
            }
            ours.push(best.as_nanos() as f64 / lines);
            floors.push(floor(&s.path, &inputs, 2)?.as_nanos() as f64 / lines);
            python.push(python_in_process(py, &s.path, 2)?);
        }
        let same = std::fs::read(&ours_out).ok() == std::fs::read(&theirs_out).ok();
        let faster = Ratios::of(&python, &ours);
        let of_floor = Ratios::of(&ours, &floors);
        rows.push(format!(
            "| `loopsim guard` process per request, stream `{}` ({}; {}k lines), vs Hermes 0.19.0's controller in-process, and vs the floor (read + SHA-256); {} rounds{} | {:.2} us | {:.2} us / {:.2} us | {} faster / {} the floor | >= 20x / <= 3x |",
            s.name,
            s.what,
            LINES / 1000,
            ours.len(),
            if same { "" } else { " (ANSWERS DIFFER)" },
            median(&ours) / 1e3,
            median(&python) / 1e3,
            median(&floors) / 1e3,
            faster,
            of_floor,
        ));
    }
    Ok(rows)
}
