//! Target 3: the whole `loopsim guard --profile hermes-0.19.0` process on a 200,000-line
//! stream from `tests/conformance/gen_sequences.py --seed 7 --lines 200000 --no-spawn`
//! (written once to `target/loopsim-bench/`, not committed), against
//! `tests/conformance/hermes_driver.py` on the same stream.
//!
//! The binary is the one cargo builds for this bench (`CARGO_BIN_EXE_loopsim`, bench profile
//! = release settings), or `$LOOPSIM_BIN`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};

use crate::support::{Ctx, record, root};

pub const LOOPSIM: &str = "process/loopsim_guard_0_19";
pub const LINES: u64 = 200_000;
const SEED: u32 = 7;

pub fn loopsim_bin() -> PathBuf {
    std::env::var_os("LOOPSIM_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_loopsim")))
}

/// A Python able to run gen_sequences.py (stdlib only).
fn generator_python(ctx: &Ctx) -> PathBuf {
    ctx.python
        .clone()
        .unwrap_or_else(|| PathBuf::from("python3"))
}

pub fn stream_path(ctx: &Ctx) -> PathBuf {
    ctx.out_dir
        .join(format!("guard-seed{SEED}-{LINES}-nospawn.jsonl"))
}

/// Generates the stream if it is not there yet.
pub fn ensure_stream(ctx: &Ctx) -> Result<PathBuf, String> {
    let path = stream_path(ctx);
    if path.exists() {
        return Ok(path);
    }
    std::fs::create_dir_all(&ctx.out_dir).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("tmp");
    let py = generator_python(ctx);
    let status = Command::new(&py)
        .arg(root().join("tests/conformance/gen_sequences.py"))
        .args([
            "--seed",
            &SEED.to_string(),
            "--lines",
            &LINES.to_string(),
            "--no-spawn",
        ])
        .stdout(File::create(&tmp).map_err(|e| e.to_string())?)
        .status()
        .map_err(|e| format!("{}: {e}", py.display()))?;
    if !status.success() {
        return Err(format!("gen_sequences.py failed: {status}"));
    }
    std::fs::rename(&tmp, &path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Runs one process with the stream on stdin and stdout to `out`; returns its wall time.
pub fn run_once(cmd: &mut Command, stream: &Path, out: &Path) -> Result<Duration, String> {
    let stdin = File::open(stream).map_err(|e| format!("{}: {e}", stream.display()))?;
    let stdout = File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let start = Instant::now();
    let res = cmd
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    let elapsed = start.elapsed();
    if !res.status.success() {
        return Err(format!(
            "{:?} exited with {}: {}",
            cmd.get_program(),
            res.status,
            String::from_utf8_lossy(&res.stderr).trim()
        ));
    }
    Ok(elapsed)
}

pub fn loopsim_out(ctx: &Ctx) -> PathBuf {
    ctx.out_dir.join("loopsim-guard.out.jsonl")
}

pub fn benches(c: &mut Criterion, ctx: &Ctx) {
    if !ctx.measuring {
        // `cargo test --benches` / `--list`: do not spawn 200,000-line runs.
        return;
    }
    let bin = loopsim_bin();
    if !bin.exists() {
        println!("process: skipped: no loopsim binary at {}", bin.display());
        return;
    }
    let stream: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let mut g = c.benchmark_group("process");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Elements(LINES));
    g.bench_function("loopsim_guard_0_19", |b| {
        b.iter_custom(|iters| {
            let stream = match stream.get_or_init(|| ensure_stream(ctx)) {
                Ok(p) => p,
                Err(e) => panic!("cannot generate the guard stream: {e}"),
            };
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut cmd = Command::new(&bin);
                cmd.args(["guard", "--profile", "hermes-0.19.0"]);
                let d =
                    run_once(&mut cmd, stream, &loopsim_out(ctx)).unwrap_or_else(|e| panic!("{e}"));
                record(LOOPSIM, 1, d);
                total += d;
            }
            total
        })
    });
    g.finish();
}

/// Times `hermes_driver.py` on the stream: best of `runs`. Also says whether its answers are
/// byte-identical to loopsim's.
pub fn python_process(ctx: &Ctx, runs: usize) -> Result<(Duration, bool), String> {
    let py = ctx
        .python
        .as_ref()
        .ok_or_else(|| ctx.python_missing.clone())?;
    let stream = ensure_stream(ctx)?;
    let out = ctx.out_dir.join("hermes-driver.out.jsonl");
    let mut best = Duration::MAX;
    for _ in 0..runs.max(1) {
        let mut cmd = Command::new(py);
        cmd.arg(root().join("tests/conformance/hermes_driver.py"));
        best = best.min(run_once(&mut cmd, &stream, &out)?);
    }
    let same = std::fs::read(&out).ok() == std::fs::read(loopsim_out(ctx)).ok();
    Ok((best, same))
}
