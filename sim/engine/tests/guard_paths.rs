//! The guard's two ways of reading a request, against each other: calls read without a tree
//! (the fast path) must answer exactly as the tree path does, line for line, on requests in
//! every shape: both openings, members in any order, duplicate keys, escapes, odd arguments
//! and results, wrong types, and broken lines (same error, same line).

mod common;

use common::jsongen::{self, mutate};
use loopsim_engine::config::EngineConfig;
use loopsim_engine::guard::GuardSession;
use loopsim_engine::profile::ProfileName;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

const TOOLS: &[&str] = &[
    "\"read_file\"",
    "\"terminal\"",
    "\"execute_code\"",
    "\"web_search\"",
    "\"delegate_task\"",
    "\"write_file\"",
    "\"memory\"",
    "\"re\\u0061d_file\"",
    "\"t\\ud800\"",
    "\"é\"",
    "3",
];

const RESULTS: &[&str] = &[
    "\"{\\\"ok\\\": true, \\\"n\\\": 1}\"",
    "\"{\\\"exit_code\\\": 1, \\\"output\\\": \\\"x\\\"}\"",
    "\"Error: boom\"",
    "\"{\\\"duration_seconds\\\": 0.5, \\\"kernel\\\": {\\\"execution_count\\\": 3}, \\\"out\\\": 1}\"",
    "\"{\\\"bytes_written\\\": 3}\"",
    "\"{\\\"success\\\": false, \\\"error\\\": \\\"would exceed the limit\\\"}\"",
    "\"{\\\"b\\\": 1, \\\"a\\\": [1.0, 1e400, -0]}\"",
    "\"\\ud800\"",
    "null",
    "7",
];

fn request(rng: &mut ChaCha8Rng, last: &mut (&'static str, String)) -> Vec<u8> {
    let op = match rng.random_range(0..100) {
        0..35 => "\"before\"",
        35..82 => "\"after\"",
        82..88 => "\"reset\"",
        88..91 => "\"spawn\"",
        91..97 => "\"b\\u0065fore\"",
        _ => "1",
    };
    // An after usually repeats its before's call, byte for byte, and a loop repeats calls.
    let repeat = rng.random_bool(0.6) && !last.1.is_empty();
    let tool = if repeat {
        last.0
    } else {
        TOOLS[rng.random_range(0..TOOLS.len())]
    };
    let args = if repeat {
        last.1.clone()
    } else {
        let mut s = String::new();
        if rng.random_bool(0.7) {
            s.push_str("{\"k\": ");
            jsongen::value(rng, 1, &mut s);
            s.push('}');
        } else {
            jsongen::value(rng, 1, &mut s);
        }
        s
    };
    *last = (tool, args.clone());
    let mut members: Vec<String> = vec![format!("\"op\":{op}"), format!("\"tool\":{tool}")];
    if rng.random_bool(0.95) {
        members.push(format!("\"args\":{args}"));
    }
    if rng.random_bool(0.9) {
        members.push(format!(
            "\"result\":{}",
            RESULTS[rng.random_range(0..RESULTS.len())]
        ));
    }
    match rng.random_range(0..5) {
        0 => members.push("\"failed\":true".into()),
        1 => members.push("\"failed\":false".into()),
        2 => members.push("\"failed\":null".into()),
        3 => members.push("\"failed\":\"yes\"".into()),
        _ => {}
    }
    if rng.random_bool(0.2) {
        members.push(
            [
                "\"tool_call_id\":\"c1\"",
                "\"tool_call_id\":5",
                "\"count\":3",
                "\"extra\":[1,{}]",
            ][rng.random_range(0..4)]
            .into(),
        );
    }
    if rng.random_bool(0.1) {
        members.push(format!("\"op\":{op}"));
    }
    if rng.random_bool(0.3) {
        let k = rng.random_range(0..members.len());
        let j = rng.random_range(0..members.len());
        members.swap(k, j);
    }
    let sep = if rng.random_bool(0.8) { "," } else { ", " };
    let mut line = format!("{{{}}}", members.join(sep)).into_bytes();
    if rng.random_bool(0.1) {
        mutate(rng, &mut line);
    }
    line
}

fn answers(mut s: GuardSession, lines: &[Vec<u8>]) -> Vec<Result<Vec<u8>, String>> {
    lines
        .iter()
        .map(|l| {
            let mut out = Vec::new();
            s.handle_line(l, &mut out)
                .map(|()| out)
                .map_err(|e| e.to_string())
        })
        .collect()
}

#[test]
fn fast_path_answers_as_the_tree_path() {
    for (profile, platform) in [
        (ProfileName::Hermes0_19_0, None),
        (ProfileName::HermesMain, Some("telegram")),
        (ProfileName::HermesMain, None),
    ] {
        let cfg = EngineConfig::new(profile, platform);
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let mut last = ("", String::new());
        let lines: Vec<Vec<u8>> = (0..40_000).map(|_| request(&mut rng, &mut last)).collect();
        let fast = answers(GuardSession::new(&cfg), &lines);
        let tree = answers(GuardSession::new(&cfg).tree_only(), &lines);
        let (mut ok, mut errors, mut warned) = (0, 0, 0);
        for ((line, f), t) in lines.iter().zip(&fast).zip(&tree) {
            assert_eq!(f, t, "{profile:?}: {}", String::from_utf8_lossy(line));
            match f {
                Ok(out) => {
                    ok += 1;
                    warned += usize::from(
                        out.starts_with(b"{\"action\":\"warn\"")
                            || out.starts_with(b"{\"action\":\"block\""),
                    );
                }
                Err(_) => errors += 1,
            }
        }
        // Both sides of every branch are reached: answers, refusals and errors.
        assert!(
            ok > 20_000 && errors > 3_000 && warned > 300,
            "{profile:?}: {ok} {errors} {warned}"
        );
    }
}
