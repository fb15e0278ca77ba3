//! The guard's two ways of reading a request, against each other: calls read without a tree
//! (the fast path) must answer exactly as the tree path does, line for line, on requests in
//! every shape: both openings, members in any order, duplicate keys, escapes, odd arguments
//! and results (long ones again and again, as the fast path remembers them), wrong types, and
//! broken lines (same error, same line).

mod common;

use common::jsongen::{self, mutate};
use loopsim_engine::config::EngineConfig;
use loopsim_engine::guard_protocol::GuardSession;
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

/// Results of 128 bytes and more, which the fast path remembers as written: texts that agree
/// for their first 128 bytes and differ later, one text written two ways, execute_code's
/// volatile fields after a long head, and failures for the classifier.
fn long_results() -> Vec<String> {
    let pad = "x".repeat(150);
    let esc = format!("\\u0078{}", &pad[1..]);
    [
        format!("\"{{\\\"output\\\": \\\"{pad}\\\", \\\"exit_code\\\": 0}}\""),
        format!("\"{{\\\"output\\\": \\\"{pad}\\\", \\\"exit_code\\\": 1}}\""),
        format!("\"{{\\\"output\\\": \\\"{esc}\\\", \\\"exit_code\\\": 0}}\""),
        format!("\"{{\\\"a\\\": \\\"{pad}\\\", \\\"duration_seconds\\\": 0.1, \\\"kernel\\\": {{\\\"execution_count\\\": 1}}}}\""),
        format!("\"{{\\\"a\\\": \\\"{pad}\\\", \\\"duration_seconds\\\": 0.2, \\\"kernel\\\": {{\\\"execution_count\\\": 2}}}}\""),
        format!("\"Error: {pad}\""),
        format!("\"{pad} failed\""),
    ]
    .into()
}

fn request(rng: &mut ChaCha8Rng, last: &mut (&'static str, String), long: &[String]) -> Vec<u8> {
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
    } else if rng.random_bool(0.02) {
        // Past what the fast path keeps of arguments between lines.
        format!("{{\"big\": \"{}\", \"n\": 1.50}}", "y".repeat(5000))
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
        let result = match rng.random_range(0..RESULTS.len() + long.len()) {
            n if n < RESULTS.len() => RESULTS[n],
            n => &long[n - RESULTS.len()],
        };
        members.push(format!("\"result\":{result}"));
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

/// The same, with every line that is UTF-8 handed over as checked text (as `loopsim guard`
/// does a chunk at a time).
fn answers_as_text(mut s: GuardSession, lines: &[Vec<u8>]) -> Vec<Result<Vec<u8>, String>> {
    lines
        .iter()
        .map(|l| {
            let mut out = Vec::new();
            match std::str::from_utf8(l) {
                Ok(text) => s.handle_text(text, &mut out),
                Err(_) => s.handle_line(l, &mut out),
            }
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
        let long = long_results();
        let lines: Vec<Vec<u8>> = (0..40_000)
            .map(|_| request(&mut rng, &mut last, &long))
            .collect();
        let fast = answers(GuardSession::new(&cfg), &lines);
        let tree = answers(GuardSession::new(&cfg).tree_only(), &lines);
        let text = answers_as_text(GuardSession::new(&cfg), &lines);
        assert!(
            text == fast,
            "{profile:?}: checked text answered differently"
        );
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

/// A remembered result's hash belongs to the tool it was computed for: execute_code drops its
/// volatile fields before hashing, another tool does not. Two texts that differ only there
/// hash alike for execute_code and differently for `terminal`, so a hash carried over from one
/// tool to the other would make three `terminal` calls an identical streak. (The texts differ
/// in their first bytes, so each is remembered in a slot of its own.)
#[test]
fn a_remembered_result_is_hashed_for_each_tool_on_its_own() {
    let pad = "x".repeat(150);
    let text = |d: u32| {
        format!(
            "\"{{\\\"duration_seconds\\\": 0.{d}, \\\"kernel\\\": {{\\\"execution_count\\\": {d}}}, \\\"a\\\": \\\"{pad}\\\"}}\""
        )
    };
    let line = |tool: &str, d: u32| {
        format!(
            "{{\"op\":\"after\",\"tool\":\"{tool}\",\"args\":{{\"k\":1}},\"result\":{},\"failed\":false}}",
            text(d)
        )
        .into_bytes()
    };
    let lines = [
        line("execute_code", 1),
        line("execute_code", 2),
        line("terminal", 1),
        line("terminal", 2),
        line("terminal", 1),
    ];
    let cfg = EngineConfig::new(ProfileName::HermesMain, None);
    let text = |a: Vec<Result<Vec<u8>, String>>| -> Vec<String> {
        a.into_iter()
            .map(|r| String::from_utf8(r.unwrap()).unwrap())
            .collect()
    };
    let fast = text(answers(GuardSession::new(&cfg), &lines));
    let tree = text(answers(GuardSession::new(&cfg).tree_only(), &lines));
    assert_eq!(fast, tree);
    let out = |n: usize| &fast[n];
    // execute_code's two texts are one result: the second call is a streak of 2, no notice yet;
    // terminal's are two results, so its third call is no streak at all.
    assert!(out(1).contains("\"observe\":{\"kind\":null"), "{}", out(1));
    assert!(out(4).contains("\"observe\":{\"kind\":null"), "{}", out(4));
    assert!(out(4).contains("\"count\":0"), "{}", out(4));
}
