//! In-process engine benches on the call sequence of `seq.rs`. One criterion iteration is one
//! pass over the whole sequence (a fresh controller, resets at turn boundaries); throughput is
//! reported per call.

use std::hint::black_box;

use criterion::{Criterion, SamplingMode, Throughput};
use loopsim_engine::guardrails::{Action, CallFacts, Controller, GuardrailConfig, GuardrailRules};
use loopsim_engine::hash::{self, ResultHashing};
use loopsim_engine::json;
use sha2::{Digest, Sha256};

use crate::seq::{Item, Sequence};
use crate::support::timed;

pub const AFTER_CALL: &str = "engine/after_call_plus_stall";
pub const RAW_SHA256: &str = "engine/raw_sha256";
pub const V0_19: &str = "engine/v0_19_before_after";
pub const PART_ARGS: &str = "engine_parts/args_hash";
pub const PART_RESULT: &str = "engine_parts/result_hash";
pub const PART_PARSE: &str = "engine_parts/result_parse";

/// Hermes's defaults with hard stops on (the stop paths are exercised).
pub fn config() -> GuardrailConfig {
    GuardrailConfig {
        hard_stop_enabled: true,
        ..GuardrailConfig::default()
    }
}

/// Target 1: `after_call_facts` + `observe_call` on fresh facts, profile rules NEWEST.
fn pass_after_call_plus_stall(seq: &Sequence) {
    let rules = GuardrailRules::NEWEST;
    let mut c = Controller::new(config(), rules);
    for item in &seq.items {
        match item {
            Item::Reset => c.reset_for_turn(),
            Item::Call(call) => {
                let facts = CallFacts::new(&call.tool, &call.args, Some(&call.result), &rules);
                let d = c.after_call_facts(&facts, call.failed);
                let o = c.observe_call(&facts, call.failed);
                black_box((d, o));
            }
        }
    }
}

/// The floor: SHA-256 of the canonical argument bytes and of the result bytes.
fn pass_raw_sha256(seq: &Sequence) {
    for call in seq.calls() {
        black_box(Sha256::digest(black_box(&call.args_canon)));
        black_box(Sha256::digest(black_box(&call.result)));
    }
}

/// Target 2: what Hermes 0.19.0 does per call, `before_call` + `after_call`.
fn pass_v0_19(seq: &Sequence, mut tally: Option<&mut [u32; 4]>) {
    let mut c = Controller::new(config(), GuardrailRules::V0_19);
    for item in &seq.items {
        match item {
            Item::Reset => c.reset_for_turn(),
            Item::Call(call) => {
                let b = c.before_call(&call.tool, &call.args);
                // The signature is computed once per call and reused, as the simulator does.
                let facts =
                    CallFacts::with_signature(b.signature.clone(), Some(&call.result), c.rules());
                let a = c.after_call_facts(&facts, call.failed);
                if let Some(t) = tally.as_deref_mut() {
                    t[action_index(b.action)] += 1;
                    t[action_index(a.action)] += 1;
                }
                black_box((b, a));
            }
        }
    }
}

fn action_index(a: Action) -> usize {
    match a {
        Action::Allow => 0,
        Action::Warn => 1,
        Action::Block => 2,
        Action::Halt => 3,
    }
}

/// Decisions of the 0.19.0 pass as `allow=N warn=N block=N halt=N` (compared with Python's).
pub fn v0_19_tally(seq: &Sequence) -> String {
    let mut t = [0u32; 4];
    pass_v0_19(seq, Some(&mut t));
    format!("allow={} warn={} block={} halt={}", t[0], t[1], t[2], t[3])
}

pub fn benches(c: &mut Criterion, seq: &Sequence) {
    let n = seq.len_calls() as u64;
    let mut g = c.benchmark_group("engine");
    // A pass takes milliseconds: flat sampling keeps 100 samples within the default 5 s.
    g.throughput(Throughput::Elements(n))
        .sampling_mode(SamplingMode::Flat);
    g.bench_function("after_call_plus_stall", |b| {
        b.iter_custom(|iters| timed(AFTER_CALL, iters, || pass_after_call_plus_stall(seq)))
    });
    g.bench_function("raw_sha256", |b| {
        b.iter_custom(|iters| timed(RAW_SHA256, iters, || pass_raw_sha256(seq)))
    });
    g.bench_function("v0_19_before_after", |b| {
        b.iter_custom(|iters| timed(V0_19, iters, || pass_v0_19(seq, None)))
    });
    g.finish();

    // Where the time of target 1 goes: the two hashes it computes, and the result parse.
    let mut g = c.benchmark_group("engine_parts");
    g.throughput(Throughput::Elements(n))
        .sampling_mode(SamplingMode::Flat);
    g.bench_function("args_hash", |b| {
        b.iter_custom(|iters| {
            timed(PART_ARGS, iters, || {
                for call in seq.calls() {
                    black_box(hash::args_hash(black_box(&call.args)));
                }
            })
        })
    });
    g.bench_function("result_hash", |b| {
        b.iter_custom(|iters| {
            timed(PART_RESULT, iters, || {
                for call in seq.calls() {
                    black_box(hash::result_hash(
                        Some(black_box(&call.result)),
                        &call.tool,
                        ResultHashing::StripExecuteCodeVolatile,
                    ));
                }
            })
        })
    });
    g.bench_function("result_parse", |b| {
        b.iter_custom(|iters| {
            timed(PART_PARSE, iters, || {
                for call in seq.calls() {
                    let _ = black_box(json::parse(black_box(&call.result)));
                }
            })
        })
    });
    g.finish();
}
