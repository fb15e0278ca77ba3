//! `after_call` + the stall guards per call on each guard stream's calls, against raw SHA-256
//! of the same canonical argument bytes and result bytes measured beside it, warm and cold:
//!
//! - warm: the stream's own results, repeats included (a looping agent's, which the result-hash
//!   cache remembers);
//! - cold: every result made distinct (an object gains a `"_call"` member, other text a
//!   suffix), so every result is printed canonically and hashed.
//!
//! One criterion iteration is one pass over the stream's first [`CALLS`] calls with a fresh
//! controller (rules NEWEST, hard stops on), resets at the stream's turn boundaries.
//!
//! Beside raw SHA-256 the rounds also time what Hermes's definition of the two hashes asks of
//! every new call: the arguments printed canonically from their tree and the result parsed and
//! printed canonically, each then hashed ([`Signature::new`] and [`hash::result_hash`], no
//! cache). Cold `after_call` against that shows what the controller adds to the hashing it
//! cannot skip.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, SamplingMode, Throughput};
use loopsim_engine::guardrails::{CallFacts, Controller, GuardrailRules};
use loopsim_engine::hash::{self, Signature};
use loopsim_engine::json::{self, Value};
use sha2::{Digest, Sha256};

use crate::support::{Ctx, Ratios, best_ns, median, per_iter_ns, timed};

/// Calls per pass, per stream.
pub const CALLS: usize = 10_000;

/// Bench names: `(stream, [after warm, sha warm, after cold, sha cold])`.
const NAMES: &[(&str, [&str; 4])] = &[
    (
        "conformance",
        [
            "engine_streams/conformance/after_call_warm",
            "engine_streams/conformance/sha256_warm",
            "engine_streams/conformance/after_call_cold",
            "engine_streams/conformance/sha256_cold",
        ],
    ),
    (
        "engine-sequence",
        [
            "engine_streams/engine-sequence/after_call_warm",
            "engine_streams/engine-sequence/sha256_warm",
            "engine_streams/engine-sequence/after_call_cold",
            "engine_streams/engine-sequence/sha256_cold",
        ],
    ),
    (
        "short-results",
        [
            "engine_streams/short-results/after_call_warm",
            "engine_streams/short-results/sha256_warm",
            "engine_streams/short-results/after_call_cold",
            "engine_streams/short-results/sha256_cold",
        ],
    ),
    (
        "imported-sessions",
        [
            "engine_streams/imported-sessions/after_call_warm",
            "engine_streams/imported-sessions/sha256_warm",
            "engine_streams/imported-sessions/after_call_cold",
            "engine_streams/imported-sessions/sha256_cold",
        ],
    ),
];

/// One `after` request of a stream, ready for the engine.
struct Call {
    tool: String,
    args: Value,
    args_canon: Vec<u8>,
    result: Option<Vec<u8>>,
    failed: Option<bool>,
}

enum Item {
    Reset,
    Call(Call),
}

/// A stream's first [`CALLS`] `after` requests (and its resets).
fn load(path: &Path) -> Result<Vec<Item>, String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut items = Vec::new();
    let mut calls = 0;
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v = json::parse_strict(line).map_err(|e| format!("{}: {e}", path.display()))?;
        match v.get("op").and_then(Value::as_str_bytes) {
            Some(b"reset") => items.push(Item::Reset),
            Some(b"after") => {
                let tool = v.get("tool").and_then(Value::as_str_bytes).unwrap_or(b"");
                let args = v.get("args").cloned().unwrap_or(Value::Null);
                items.push(Item::Call(Call {
                    tool: String::from_utf8_lossy(tool).into_owned(),
                    args_canon: if args.is_object() {
                        json::canonical(&args)
                    } else {
                        b"{}".to_vec()
                    },
                    args,
                    result: v
                        .get("result")
                        .and_then(|r| r.as_str_bytes().map(<[u8]>::to_vec)),
                    failed: match v.get("failed") {
                        Some(Value::Bool(b)) => Some(*b),
                        _ => None,
                    },
                }));
                calls += 1;
                if calls == CALLS {
                    break;
                }
            }
            _ => {}
        }
    }
    Ok(items)
}

/// The same calls with every result distinct.
fn cold(items: &[Item]) -> Vec<Item> {
    let mut n = 0u64;
    items
        .iter()
        .map(|i| match i {
            Item::Reset => Item::Reset,
            Item::Call(c) => {
                n += 1;
                let result = c.result.as_ref().map(|r| match r.strip_prefix(b"{") {
                    Some(rest) if json::parse(r).is_ok_and(|v| v.is_object()) => {
                        let sep = if rest.trim_ascii_start().starts_with(b"}") {
                            ""
                        } else {
                            ", "
                        };
                        let mut out = format!("{{\"_call\": {n}{sep}").into_bytes();
                        out.extend_from_slice(rest);
                        out
                    }
                    _ => {
                        let mut out = r.clone();
                        out.extend_from_slice(format!(" #{n}").as_bytes());
                        out
                    }
                });
                Item::Call(Call {
                    tool: c.tool.clone(),
                    args: c.args.clone(),
                    args_canon: c.args_canon.clone(),
                    result,
                    failed: c.failed,
                })
            }
        })
        .collect()
}

fn pass_after_call(items: &[Item]) {
    let rules = GuardrailRules::NEWEST;
    let mut c = Controller::new(crate::engine::config(), rules);
    for item in items {
        match item {
            Item::Reset => c.reset_for_turn(),
            Item::Call(call) => {
                let result = call.result.as_deref();
                let facts = CallFacts::new(&call.tool, &call.args, result, &rules);
                let failed = call
                    .failed
                    .unwrap_or_else(|| c.classify(&call.tool, result));
                let d = c.after_call_facts(&facts, failed);
                let o = c.observe_call(&facts, failed);
                black_box((d, o));
            }
        }
    }
}

/// The hashes alone, as Hermes defines them: canonical print and SHA-256 of the arguments and
/// of the result, computed afresh for every call.
fn pass_print_and_hash(items: &[Item]) {
    let hashing = GuardrailRules::NEWEST.result_hashing;
    for item in items {
        if let Item::Call(call) = item {
            black_box(Signature::new(&call.tool, black_box(&call.args)));
            black_box(hash::result_hash(
                black_box(call.result.as_deref()),
                &call.tool,
                hashing,
            ));
        }
    }
}

fn pass_sha256(items: &[Item]) {
    for item in items {
        if let Item::Call(call) = item {
            black_box(Sha256::digest(black_box(&call.args_canon)));
            black_box(Sha256::digest(black_box(
                call.result.as_deref().unwrap_or(b""),
            )));
        }
    }
}

/// One stream's calls, warm and cold, with its bench names and its rounds once measured.
struct Loaded1 {
    name: &'static str,
    names: [&'static str; 4],
    calls: usize,
    warm: Vec<Item>,
    cold: Vec<Item>,
    rounds: Option<Rounds>,
}

/// ns per call of each round, in the order `[after warm, sha warm, after cold, sha cold]`,
/// then printing and hashing the cold calls.
struct Rounds([Vec<f64>; 5]);

/// The streams' calls (streams that cannot be had are left out).
pub struct Loaded(Vec<Loaded1>);

pub fn load_all(ctx: &Ctx, seq: &crate::seq::Sequence) -> Loaded {
    let paths: Vec<(&str, std::path::PathBuf)> = match crate::streams::streams(ctx, seq) {
        Ok(s) => s.into_iter().map(|s| (s.name, s.path)).collect(),
        Err(e) => {
            println!("engine streams: skipped: {e}");
            Vec::new()
        }
    };
    let mut out = Vec::new();
    for (name, path) in paths {
        let Some((name, names)) = NAMES.iter().find(|(n, _)| *n == name) else {
            continue;
        };
        match load(&path) {
            Ok(warm) => {
                let cold = cold(&warm);
                out.push(Loaded1 {
                    name,
                    names: *names,
                    calls: warm.iter().filter(|i| matches!(i, Item::Call(_))).count(),
                    warm,
                    cold,
                    rounds: None,
                });
            }
            Err(e) => println!("engine streams: {name}: skipped: {e}"),
        }
    }
    Loaded(out)
}

pub fn benches(c: &mut Criterion, loaded: &Loaded) {
    let mut g = c.benchmark_group("engine_streams");
    g.sampling_mode(SamplingMode::Flat);
    for Loaded1 {
        name,
        names,
        calls,
        warm,
        cold,
        ..
    } in &loaded.0
    {
        g.throughput(Throughput::Elements(*calls as u64));
        for (k, items) in [(0, warm), (2, cold)] {
            let variant = if k == 0 { "warm" } else { "cold" };
            g.bench_function(format!("{name}/after_call_{variant}"), |b| {
                b.iter_custom(|iters| timed(names[k], iters, || pass_after_call(items)))
            });
            g.bench_function(format!("{name}/sha256_{variant}"), |b| {
                b.iter_custom(|iters| timed(names[k + 1], iters, || pass_sha256(items)))
            });
        }
    }
    g.finish();
}

impl Loaded {
    /// Lets the calls go once measured (the rows need only their number): later benches
    /// measure memory.
    pub fn forget_calls(&mut self) {
        for l in &mut self.0 {
            l.warm = Vec::new();
            l.cold = Vec::new();
        }
    }

    /// Measures each stream in `n` rounds: in a round, `after_call` and SHA-256 run back to back
    /// on the warm calls, then on the cold ones, then the cold calls' printing and hashing
    /// (best of two passes each, the first of the five rotating), so each round's ratios see
    /// one speed of this drifting machine. Only for streams whose criterion benches ran (a
    /// filter may have skipped them).
    pub fn measure_rounds(&mut self, n: usize) {
        for l in &mut self.0 {
            if per_iter_ns(l.names[0]).is_none() {
                continue;
            }
            let calls = l.calls as f64;
            let mut r: [Vec<f64>; 5] = Default::default();
            for round in 0..n.max(1) {
                for k in 0..5 {
                    let which = (round + k) % 5;
                    let items = if which < 2 { &l.warm } else { &l.cold };
                    let ns = match which {
                        4 => best_ns(2, &|| pass_print_and_hash(items)),
                        _ if which % 2 == 0 => best_ns(2, &|| pass_after_call(items)),
                        _ => best_ns(2, &|| pass_sha256(items)),
                    };
                    r[which].push(ns / calls);
                }
            }
            l.rounds = Some(Rounds(r));
        }
    }
}

/// One row per stream measured: ns per call warm and cold (medians over the rounds), and the
/// ratios to SHA-256 (the median of each round's, with their range); without rounds,
/// criterion's medians.
pub fn rows(loaded: &Loaded) -> Vec<String> {
    let mut rows = Vec::new();
    for Loaded1 {
        name,
        names,
        calls,
        rounds,
        ..
    } in &loaded.0
    {
        if let Some(Rounds([aw, sw, ac, sc, ph])) = rounds {
            rows.push(format!(
                "| `after_call` + stall guards per call (NEWEST, hard stops) vs raw SHA-256 of the same args and result bytes, stream `{name}`, warm / cold; {} rounds | {:.0} / {:.0} ns | {:.0} / {:.0} ns | warm {:.2} / cold {:.2} | <= 1.5x |",
                aw.len(),
                median(aw),
                median(ac),
                median(sw),
                median(sc),
                Ratios::of(aw, sw),
                Ratios::of(ac, sc),
            ));
            rows.push(format!(
                "| `after_call` + stall guards per call, cold, vs printing canonically and hashing the same args and results afresh (what Hermes's hash definition asks of each new call), stream `{name}`; {} rounds | {:.0} ns | {:.0} ns | {:.2} | (reference) |",
                ac.len(),
                median(ac),
                median(ph),
                Ratios::of(ac, ph),
            ));
            continue;
        }
        let calls = *calls as f64;
        let per = |n: &str| per_iter_ns(n).map(|(median, _)| median / calls);
        let (Some(aw), Some(sw), Some(ac), Some(sc)) =
            (per(names[0]), per(names[1]), per(names[2]), per(names[3]))
        else {
            continue;
        };
        rows.push(format!(
            "| `after_call` + stall guards per call (NEWEST, hard stops) vs raw SHA-256 of the same args and result bytes, stream `{name}`, warm / cold | {aw:.0} / {ac:.0} ns | {sw:.0} / {sc:.0} ns | {:.2}x / {:.2}x | <= 1.5x |",
            aw / sw,
            ac / sc
        ));
    }
    rows
}
