//! Where a Hermes compaction cuts a conversation: the engine's
//! [`loopsim_engine::turn::compaction_plan::plan`] against Hermes 0.19.0's own `ContextCompressor`
//! (`tests/conformance/compaction_driver.py`) on thousands of generated conversations.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{Venv, python_or_skip, root};
use loopsim_engine::turn::compaction_plan::{Message, Plan, Role, SUMMARY_FRAME_TOKENS, plan};
use loopsim_engine::turn::compression::Compression;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

/// A conversation as agents make them: a task, rounds of calls and results, now and then a
/// reply with text, a new user message or (after a compaction) an earlier summary.
fn conversation(rng: &mut ChaCha8Rng, made: u32) -> Vec<Message> {
    let big = |rng: &mut ChaCha8Rng| match rng.random_range(0..4) {
        0 => rng.random_range(20..60),
        1 => rng.random_range(60..600),
        2 => rng.random_range(600..4_000),
        _ => rng.random_range(4_000..12_000),
    };
    let mut m = vec![Message::user(big(rng))];
    let rounds = rng.random_range(0..30);
    let summary_at = (made > 0).then(|| rng.random_range(0..=rounds));
    for r in 0..rounds {
        if summary_at == Some(r) {
            let t = rng.random_range(600..4_000);
            m.push(if rng.random_bool(0.5) {
                Message::summary(t)
            } else {
                Message {
                    role: Role::Summary { assistant: true },
                    ..Message::summary(t)
                }
            });
        }
        match rng.random_range(0..10) {
            0 => m.push(Message::text(big(rng))),
            1 => m.push(Message::user(big(rng))),
            _ => {
                m.push(Message::calls(rng.random_range(40..400)));
                for _ in 0..rng.random_range(1..4) {
                    let t = big(rng);
                    m.push(Message::tool(t).with_note(note(t)));
                }
            }
        }
    }
    m
}

/// The note Hermes prunes the driver's results to: they are `read_file` results with no
/// readable path, of `4 * (tokens - 10)` characters.
fn note(tokens: u64) -> u64 {
    let chars = 4 * (tokens - 10);
    let mut digits = chars.to_string();
    let mut i = digits.len();
    while i > 3 {
        i -= 3;
        digits.insert(i, ',');
    }
    let text = format!("[read_file] read ? from line 1 ({digits} chars)");
    text.len() as u64 / 4 + 10
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::User => "user",
        Role::Assistant { calls: true, .. } => "calls",
        Role::Assistant { .. } => "text",
        Role::Tool => "tool",
        Role::Summary { assistant: false } => "summary",
        Role::Summary { assistant: true } => "asummary",
    }
}

/// Runs the driver over JSON lines.
fn driver(py: &std::path::Path, input: Vec<u8>) -> Vec<Value> {
    let mut child = Command::new(py)
        .arg("tests/conformance/compaction_driver.py")
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn messages_json(msgs: &[Message]) -> Vec<Value> {
    msgs.iter()
        .map(|m| json!({"role": role_name(m.role), "tokens": m.tokens}))
        .collect()
}

/// Two compactions agree: the same messages, each of the same role and size, but for the
/// summary's size, which Hermes takes from another estimate of what it replaces (its
/// messages printed whole, keys and all): within 1% there.
fn agrees(engine: &Value, hermes: &Value) -> bool {
    let close = |a: &Value, b: &Value| match (a.as_u64(), b.as_u64()) {
        (Some(a), Some(b)) => a.abs_diff(b) <= 2 + b / 100,
        _ => a == b,
    };
    let (e, h) = (engine["messages"].as_array(), hermes["messages"].as_array());
    let (Some(e), Some(h)) = (e, h) else {
        return false;
    };
    close(&engine["summary"], &hermes["summary"])
        && e.len() == h.len()
        && e.iter().zip(h).all(|(a, b)| {
            a[0] == b[0]
                && if a[0].as_str().is_some_and(|r| r.ends_with("summary")) {
                    close(&a[1], &b[1])
                } else {
                    a[1] == b[1]
                }
        })
}

/// The whole compaction: what the conversation holds after it, message by message, and the
/// summary's size, for Hermes's default settings in four windows.
#[test]
fn live_hermes_0_19_0_compacts_conversations_as_the_engine_does() {
    let Some(py) = python_or_skip(Venv::HermesLive, "the compaction conformance test") else {
        return;
    };
    let rules = Compression::default();
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let mut cases = Vec::new();
    let mut input = Vec::new();
    for _ in 0..2_000 {
        let made = rng.random_range(0..3);
        let window = [64_000, 130_000, 200_000, 1_000_000][rng.random_range(0..4)];
        let msgs = conversation(&mut rng, made);
        let line = json!({"messages": messages_json(&msgs), "made": made, "window": window});
        writeln!(input, "{line}").unwrap();
        cases.push((msgs, made, window));
    }
    let answers = driver(&py, input);
    assert_eq!(answers.len(), cases.len());
    let (mut merged, mut put_back, mut compacted) = (0, 0, 0);
    for (i, ((msgs, made, window), want)) in cases.iter().zip(&answers).enumerate() {
        let got = match rules.compact(*window, msgs, *made) {
            None => {
                json!({"messages": messages_json(msgs).iter().map(|m| json!([m["role"], m["tokens"]])).collect::<Vec<_>>(), "summary": null})
            }
            Some(c) => {
                compacted += 1;
                let summaries = c
                    .messages
                    .iter()
                    .filter(|m| matches!(m.role, Role::Summary { .. }))
                    .count();
                merged += usize::from(
                    !c.messages
                        .iter()
                        .any(|m| m.tokens == c.summary + SUMMARY_FRAME_TOKENS),
                );
                put_back += usize::from(
                    c.messages.first().is_some_and(|m| m.role == Role::User)
                        && summaries > 0
                        && *made > 0,
                );
                json!({
                    "messages": c.messages.iter().map(|m| json!([role_name(m.role), m.tokens])).collect::<Vec<_>>(),
                    "summary": c.summary,
                })
            }
        };
        assert!(
            agrees(&got, want),
            "case {i}: made {made}, window {window}, {msgs:?}\nengine {got}\nhermes {want}"
        );
    }
    assert!(
        compacted > 1_000 && merged > 20 && put_back > 100,
        "{compacted} compacted, {merged} merged into the tail, {put_back} with the task put back"
    );
}

#[test]
fn live_hermes_0_19_0_cuts_conversations_where_the_engine_does() {
    let Some(py) = python_or_skip(Venv::HermesLive, "the compaction conformance test") else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let mut cases = Vec::new();
    let mut input = Vec::new();
    for _ in 0..3_000 {
        let made = rng.random_range(0..3);
        let budget = [2_000, 10_880, 20_000, 40_000][rng.random_range(0..4)];
        let msgs = conversation(&mut rng, made);
        let line = json!({
            "messages": msgs.iter().map(|m| json!({"role": role_name(m.role), "tokens": m.tokens})).collect::<Vec<_>>(),
            "made": made,
            "tail_budget": budget,
        });
        writeln!(input, "{line}").unwrap();
        cases.push((msgs, made, budget));
    }
    let answers = driver(&py, input);
    assert_eq!(answers.len(), cases.len());
    let (mut nothing, mut pruned) = (0, 0);
    for (i, ((msgs, made, budget), want)) in cases.iter().zip(&answers).enumerate() {
        let got = match plan(msgs, *made, *budget) {
            Plan::Nothing => {
                nothing += 1;
                json!({"plan": "nothing"})
            }
            Plan::Summarise {
                pruned: p,
                start,
                end,
            } => {
                let changed: Vec<usize> = (0..msgs.len())
                    .filter(|&j| p[j].tokens != msgs[j].tokens)
                    .collect();
                pruned += usize::from(!changed.is_empty());
                json!({"start": start, "end": end, "pruned": changed})
            }
        };
        assert_eq!(
            &got, want,
            "case {i}: made {made}, tail budget {budget}, {msgs:?}"
        );
    }
    // The generated cases reach every branch that matters: nothing to do, and pruning.
    assert!(
        nothing > 100 && pruned > 300,
        "{nothing} left alone, {pruned} pruned"
    );
}
