//! Run context (mode, paths, Python) and the timings each bench records for the summary.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The repository root (this package's manifest directory).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub struct Ctx {
    /// `cargo bench` measuring (not `--test`, `--list` or `--profile-time`).
    pub measuring: bool,
    pub quick: bool,
    /// Where generated inputs and outputs go: `$CARGO_TARGET_DIR/loopsim-bench`.
    pub out_dir: PathBuf,
    /// The Python with hermes-agent 0.19.0, if any.
    pub python: Option<PathBuf>,
    /// Why there is no Python.
    pub python_missing: String,
}

impl Ctx {
    pub fn from_env() -> Ctx {
        let args: Vec<String> = std::env::args().collect();
        let has = |flag: &str| args.iter().any(|a| a == flag);
        let measuring = has("--bench")
            && !has("--test")
            && !has("--list")
            && !args.iter().any(|a| a.starts_with("--profile-time"));
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target"));
        let (python, python_missing) = match std::env::var_os("LOOPSIM_PYTHON") {
            Some(p) => (Some(PathBuf::from(p)), String::new()),
            None => {
                let venv = root().join("target/hermes-venv/bin/python");
                if venv.exists() {
                    (Some(venv), String::new())
                } else {
                    (
                        None,
                        format!(
                            "no Python with hermes-agent 0.19.0 (set LOOPSIM_PYTHON, or create {})",
                            venv.display()
                        ),
                    )
                }
            }
        };
        Ctx {
            measuring,
            quick: has("--quick"),
            out_dir: target.join("loopsim-bench"),
            python,
            python_missing,
        }
    }
}

static SAMPLES: Mutex<Vec<(&'static str, u64, Duration)>> = Mutex::new(Vec::new());

/// Times `iters` runs of `f`, records the sample under `name` and returns the total.
pub fn timed(name: &'static str, iters: u64, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    let d = start.elapsed();
    record(name, iters, d);
    d
}

pub fn record(name: &'static str, iters: u64, d: Duration) {
    SAMPLES.lock().unwrap().push((name, iters, d));
}

/// The shortest of `passes` runs of `f`, in ns: a round's figure, the first pass of which
/// may meet caches the other side of the round left cold.
pub fn best_ns(passes: usize, f: &dyn Fn()) -> f64 {
    (0..passes.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// Per-round ratios `a[i] / b[i]`, sorted: printed as their median and range.
pub struct Ratios(pub Vec<f64>);

impl Ratios {
    pub fn of(a: &[f64], b: &[f64]) -> Ratios {
        let mut v: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
        v.sort_by(f64::total_cmp);
        Ratios(v)
    }

    pub fn median(&self) -> f64 {
        median_sorted(&self.0)
    }
}

impl std::fmt::Display for Ratios {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = &self.0;
        let p = f.precision().unwrap_or(1);
        write!(
            f,
            "{:.p$}x (rounds {:.p$}x to {:.p$}x)",
            self.median(),
            v[0],
            v[v.len() - 1]
        )
    }
}

/// The median of non-empty values.
pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

/// The median of sorted, non-empty values.
pub fn median_sorted(v: &[f64]) -> f64 {
    if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    }
}

/// Median and minimum time per iteration, in ns, over the samples recorded for `name`.
pub fn per_iter_ns(name: &str) -> Option<(f64, f64)> {
    let samples = SAMPLES.lock().unwrap();
    let mut v: Vec<f64> = samples
        .iter()
        .filter(|(n, iters, _)| *n == name && *iters > 0)
        .map(|(_, iters, d)| d.as_nanos() as f64 / *iters as f64)
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let median = median_sorted(&v);
    Some((median, v[0]))
}
